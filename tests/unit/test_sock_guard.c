/*
 * Who may reach a daemon's sockets (common/sock-guard.c): the runtime
 * directory check, peer-identities parsing, sockets made with an explicit
 * mode whatever the umask, and the ZAP check admitting our own uid and
 * (as root) refusing a stranger who can reach the file through its group.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/sock.h"

/* A stranger's uid and the group it shares with the socket (root only). */
#define STRANGER_UID 4242
#define SHARED_GID 65534
/* The most a test waits for a handshake (an ASan build on a loaded 2-core
 * machine took over 3 s); each ends as soon as what it waits for happens. */
#define WAIT_USEC (60ULL * 1000 * 1000)
/* How often a test that waits for a refusal looks for it. */
#define POLL_USEC (50ULL * 1000)

static char dir[] = "/tmp/kanna-test-sock-guard-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	log_setup("test-sock-guard", LOG_FORMAT_TEXT, LOG_LEVEL_WARN);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

TestSuite(sock_guard, .init = setup, .fini = teardown);

static int check_mode(mode_t mode, gid_t socket_group, char *err, size_t errlen)
{
	struct sock_access a = { .socket_group = socket_group, .tap_group = SOCK_NO_GROUP };

	cr_assert_eq(chmod(dir, mode), 0);
	return sock_runtime_dir_check(dir, &a, err, errlen);
}

Test(sock_guard, runtime_directory_others_may_write_is_refused_with_path_mode_and_owner)
{
	char err[512], want[256];

	cr_assert_eq(check_mode(0777, SOCK_NO_GROUP, err, sizeof(err)), -EPERM);
	snprintf(want, sizeof(want), "runtime directory %s has mode 0777, owner uid %u", dir,
		 (unsigned)geteuid());
	cr_assert(strstr(err, want), "%s", err);
	cr_assert_eq(check_mode(0700, SOCK_NO_GROUP, err, sizeof(err)), 0);
	cr_assert_eq(check_mode(0750, SOCK_NO_GROUP, err, sizeof(err)), 0);
}

Test(sock_guard, runtime_directory_writable_by_its_group_only_when_that_is_the_socket_group)
{
	struct stat st;
	char err[512];

	cr_assert_eq(stat(dir, &st), 0);
	cr_assert_eq(check_mode(0770, SOCK_NO_GROUP, err, sizeof(err)), -EPERM);
	cr_assert_eq(check_mode(0770, st.st_gid + 1, err, sizeof(err)), -EPERM);
	cr_assert_eq(check_mode(0770, st.st_gid, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(check_mode(0772, st.st_gid, err, sizeof(err)), -EPERM);
}

/* In a pod, one container per daemon, each its own uid: the first daemon
 * creates the directory, the others trust it because its owner is one of
 * the peer identities. */
Test(sock_guard, runtime_directory_owned_by_a_peer_daemon_is_trusted_by_the_others)
{
	struct sock_identity launcher = { .role = "launcher", .uid = 4242, .gid = SOCK_NO_GROUP };
	struct sock_access a = { .socket_group = SOCK_NO_GROUP, .tap_group = SOCK_NO_GROUP };
	char err[512];

	if (geteuid() != 0)
		cr_skip_test("chown to another uid needs root");
	cr_assert_eq(chmod(dir, 0750), 0);
	cr_assert_eq(chown(dir, 4242, (gid_t)-1), 0);
	cr_assert_eq(sock_runtime_dir_check(dir, &a, err, sizeof(err)), -EPERM,
		     "a stranger's directory is refused");
	cr_assert(strstr(err, "owner uid 4242"), "%s", err);
	a.identities = &launcher;
	a.n_identities = 1;
	cr_assert_eq(sock_runtime_dir_check(dir, &a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(chmod(dir, 0757), 0);
	cr_assert_eq(sock_runtime_dir_check(dir, &a, err, sizeof(err)), -EPERM,
		     "a peer's directory others may write is still refused");
}

static size_t entries_in(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

Test(sock_guard, runtime_directory_created_for_a_socket_group_is_shared_setgid_02770)
{
	char sub[512], *made = NULL, err[512];
	struct stat st;
	gid_t group = getegid();
	struct sock_access a = { .socket_group = group, .tap_group = SOCK_NO_GROUP };

	snprintf(sub, sizeof(sub), "%s/sockets", dir);
	cr_assert_eq(sock_runtime_dir_shared(sub, group, &made), 0);
	cr_assert_str_eq(made, sub);
	cr_assert_eq(stat(sub, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 02770, "mode %04o", (unsigned)(st.st_mode & 07777));
	cr_assert_eq(st.st_gid, group);
	cr_assert_eq(sock_runtime_dir_check(sub, &a, err, sizeof(err)), 0, "%s", err);
	free(made);
	/* Made aside and renamed into place: nothing else left beside it,
	 * and a second daemon finds it as it is. */
	cr_assert_eq(entries_in(dir), 1, "%zu entries in %s", entries_in(dir), dir);
	cr_assert_eq(sock_runtime_dir_shared(sub, group, &made), 0);
	cr_assert_eq(entries_in(dir), 1);
	free(made);
}

Test(sock_guard, peer_identities_name_a_known_role_and_an_existing_user)
{
	char *good[] = { "scheduler=0", "launcher=0:0", NULL };
	char *bad_role[] = { "tap=0", NULL }, *no_user[] = { "reaper=no-such-user-kanna", NULL };
	char *no_eq[] = { "scheduler", NULL };
	struct sock_identity *ids = NULL;
	size_t n = 0;
	char err[512];

	cr_assert_eq(sock_identities_parse(good, &ids, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(ids[0].role, "scheduler");
	cr_assert_eq(ids[0].gid, SOCK_NO_GROUP);
	cr_assert_eq(ids[1].gid, 0);
	free(ids);
	cr_assert_eq(sock_identities_parse(bad_role, &ids, &n, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "unknown role 'tap'"), "%s", err);
	cr_assert_eq(sock_identities_parse(no_user, &ids, &n, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "no such user"), "%s", err);
	cr_assert_eq(sock_identities_parse(no_eq, &ids, &n, err, sizeof(err)), -EINVAL);
}

Test(sock_guard, sockets_take_their_mode_not_the_umask)
{
	struct sock_ctx *ctx = NULL;
	struct sock *s = NULL;
	char path[256];
	struct stat st;
	mode_t old = umask(0);

	cr_assert_eq(sock_ctx_new(&ctx, NULL, "test", dir), 0);
	cr_assert_eq(sock_new(&s, ctx, ZMQ_PULL, "moded"), 0);
	cr_assert_eq(sock_bind(s, "moded"), 0);
	umask(old);
	snprintf(path, sizeof(path), "%s/moded.sock", dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, SOCK_MODE_OWNER, "mode %o", st.st_mode & 07777);
	sock_free(s);
	sock_ctx_free(ctx);
}

/* ---- the ZAP check, through a daemon's loop ----------------------------------- */

struct guarded {
	struct loop *loop;
	struct sock_ctx *ctx;
	struct sock *rx;
	unsigned received;
	uint64_t waited_usec;
};

static int on_message(struct sock *s, void *userdata)
{
	struct guarded *g = userdata;
	struct sock_msg msg;

	if (sock_recv(s, &msg, ZMQ_DONTWAIT) == 0) {
		sock_msg_close(&msg);
		g->received++;
		loop_exit(g->loop, 0);
	}
	return 0;
}

/* Every POLL_USEC: a refusal counted (or WAIT_USEC gone) ends the loop
 * with 2; a message ends it with 0 (on_message). */
static int on_poll(struct loop *loop, void *userdata)
{
	struct guarded *g = userdata;

	g->waited_usec += POLL_USEC;
	if (sock_ctx_peers_refused(g->ctx) > 0 || g->waited_usec >= WAIT_USEC)
		loop_exit(loop, 2);
	else if (loop_add_timer(loop, POLL_USEC, on_poll, g, NULL) < 0)
		loop_exit(loop, 3);
	return 0;
}

static void guarded_open(struct guarded *g, gid_t socket_group)
{
	struct sock_access a = { .socket_group = socket_group, .tap_group = SOCK_NO_GROUP };

	cr_assert_eq(loop_new(&g->loop, "test-sock-guard"), 0);
	cr_assert_eq(sock_ctx_new_with_access(&g->ctx, g->loop, "guarded", dir, &a), 0);
	cr_assert_eq(sock_new(&g->rx, g->ctx, ZMQ_PULL, "plans"), 0);
	cr_assert_eq(sock_admit(g->rx, "scheduler"), 0);
	cr_assert_eq(sock_bind(g->rx, "plans"), 0);
	cr_assert_eq(sock_watch(g->rx, on_message, g), 0);
	cr_assert_eq(loop_add_timer(g->loop, POLL_USEC, on_poll, g, NULL), 0);
}

static void guarded_close(struct guarded *g)
{
	sock_free(g->rx);
	sock_ctx_free(g->ctx);
	loop_free(g->loop);
}

/* Connects and sends one message from a context of our own; exits the child. */
static void knock(void)
{
	struct sock_ctx *ctx = NULL;
	struct sock *tx = NULL;

	if (sock_ctx_new(&ctx, NULL, "knock", dir) < 0 || sock_new(&tx, ctx, ZMQ_PUSH, "plans") < 0 ||
	    sock_connect(tx, "plans") < 0 || sock_send(tx, "plan", 4, ZMQ_DONTWAIT) < 0)
		_exit(1);
	usleep(WAIT_USEC);
	_exit(0);
}

/*
 * A knocking child, forked before this process has a ZeroMQ context (a
 * fork of a process with ZeroMQ's threads may copy an allocator lock
 * another thread holds: under ASan a third of such children never sent).
 * It waits for the go (a byte on the pipe, once the socket is bound),
 * optionally becomes the stranger, and knocks.
 */
static pid_t knocker(bool stranger, int *ret_go)
{
	int p[2];
	pid_t child;
	char go;

	cr_assert_eq(pipe(p), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		close(p[1]);
		if (read(p[0], &go, 1) != 1)
			_exit(1);
		if (stranger && (setgroups(0, NULL) < 0 || setgid(SHARED_GID) < 0 || setuid(STRANGER_UID) < 0))
			_exit(1);
		knock();
	}
	close(p[0]);
	*ret_go = p[1];
	return child;
}

static void knock_now(int go)
{
	cr_assert_eq(write(go, "k", 1), 1);
	close(go);
}

Test(sock_guard, our_own_uid_is_admitted)
{
	struct guarded g = { 0 };
	int go;
	pid_t child = knocker(false, &go);

	guarded_open(&g, SOCK_NO_GROUP);
	knock_now(go);
	cr_assert_eq(loop_run(g.loop), 0, "no message from our own uid");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	cr_assert_eq(g.received, 1);
	cr_assert_eq(sock_ctx_peers_refused(g.ctx), 0);
	guarded_close(&g);
}

Test(sock_guard, a_stranger_reaching_the_file_through_its_group_is_refused)
{
	struct guarded g = { 0 };
	pid_t child;
	int go;

	if (geteuid() != 0)
		cr_skip_test("needs root to connect as another uid");
	cr_assert_eq(chown(dir, 0, SHARED_GID), 0);
	cr_assert_eq(chmod(dir, 0750), 0);
	child = knocker(true, &go);
	guarded_open(&g, SHARED_GID);
	knock_now(go);
	cr_assert_eq(loop_run(g.loop), 2, "a stranger's message arrived");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	cr_assert_eq(g.received, 0);
	cr_assert_geq(sock_ctx_peers_refused(g.ctx), 1);
	guarded_close(&g);
}
