/*
 * Exec credential plugins run by the event loop (common/kubeconfig-exec.c):
 * the credential cached until expiry, failures with their exit status, the
 * plugin's clean start (environment allow-list, no inherited fds, default
 * signals), and, through the Kubernetes client, a hanging plugin that
 * neither stalls /healthz nor outlives its deadline, and a failing plugin
 * re-run no more often than its backoff allows.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/health.h"
#include "common/kube-client.h"
#include "common/kubeconfig.h"
#include "common/loop.h"

static char dir[64];

static void setup(void)
{
	strcpy(dir, "/tmp/kanna-exec-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(kube_exec, .init = setup, .fini = teardown, .timeout = 60);

static void write_file(const char *name, const char *text, mode_t mode)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static char *read_whole(const char *name)
{
	char path[256], *buf = calloc(1, 65536);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (f) {
		size_t n = fread(buf, 1, 65535, f);
		buf[n] = '\0';
		fclose(f);
	}
	return buf;
}

static int count_lines(const char *name)
{
	char *text = read_whole(name);
	int n = 0;

	for (char *p = text; *p; p++)
		n += *p == '\n';
	free(text);
	return n;
}

/* The plugin is `sh -c SCRIPT` with KANNA_DIR in its kubeconfig env. */
static struct kube_config *load_with_plugin(const char *script)
{
	struct kube_config *cfg = NULL;
	char path[256], err[512], text[4096];

	write_file("plugin.sh", script, 0700);
	snprintf(text, sizeof(text),
		 "current-context: c\nclusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
		 "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
		 "users:\n- name: u\n  user:\n    exec:\n"
		 "      apiVersion: client.authentication.k8s.io/v1\n"
		 "      command: /bin/sh\n      args: ['%s/plugin.sh']\n"
		 "      env: [{name: KANNA_DIR, value: '%s'}, {name: AWS_PROFILE, value: from-kubeconfig}]\n",
		 dir, dir);
	write_file("config", text, 0600);
	snprintf(path, sizeof(path), "%s/config", dir);
	cr_assert_eq(kube_config_load(path, NULL, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_not_null(cfg->exec);
	return cfg;
}

#define CREDENTIAL(token, expiry)                                                   \
	"echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\"," \
	"\"status\":{\"token\":\"" token "\",\"expirationTimestamp\":\"" expiry "\"}}'\n"

static void on_run_done(void *userdata)
{
	loop_exit(userdata, 0);
}

/* Asks for the credential, running the loop while a run is under way. */
static int credential(struct kube_exec *x, struct loop *loop, char *err, size_t errlen)
{
	int r = kube_exec_credential(x, loop, on_run_done, loop, err, errlen);

	if (r != -EINPROGRESS)
		return r;
	cr_assert_geq(loop_run(loop), 0);
	return kube_exec_credential(x, loop, on_run_done, loop, err, errlen);
}

Test(kube_exec, the_token_is_used_and_cached_until_expiry)
{
	struct kube_config *cfg = load_with_plugin(
		"echo run >> \"$KANNA_DIR/runs\"\n"
		"case \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; *) exit 3;; esac\n"
		CREDENTIAL("demo-tok", "2999-01-01T00:00:00Z"));
	struct loop *loop;
	const char *tok;
	char err[512] = "";

	cr_assert_eq(loop_new(&loop, "test"), 0);
	cr_assert_eq(credential(cfg->exec, loop, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(kube_config_bearer_token(cfg, &tok, NULL, 0), 0);
	cr_assert_str_eq(tok, "demo-tok");
	cr_assert_eq(kube_exec_credential(cfg->exec, loop, on_run_done, loop, err, sizeof(err)), 0);
	cr_assert_eq(count_lines("runs"), 1, "the plugin ran again while its token was fresh");
	kube_config_free(cfg);
	loop_free(loop);
}

Test(kube_exec, a_failure_is_reported_with_its_exit_status)
{
	struct kube_config *cfg = load_with_plugin("exit 7\n");
	struct loop *loop;
	char err[512] = "";

	cr_assert_eq(loop_new(&loop, "test"), 0);
	cr_assert_lt(credential(cfg->exec, loop, err, sizeof(err)), 0);
	cr_assert(strstr(err, "exit status 7"), "%s", err);
	cr_assert(strstr(err, "next run in"), "%s", err);
	kube_config_free(cfg);
	loop_free(loop);
}

/*
 * The daemon's environment stays its own (only the allow-list and the
 * kubeconfig's env pass), no descriptor of ours leaks into the plugin, and
 * it starts with no blocked and no ignored signals, whatever the daemon
 * blocked (loop_new() blocks SIGTERM, SIGINT and SIGHUP, ignores SIGPIPE).
 */
Test(kube_exec, the_plugin_starts_clean)
{
	struct kube_config *cfg = load_with_plugin(
		"env > \"$KANNA_DIR/env\"\n"
		"ls /proc/self/fd > \"$KANNA_DIR/fds\"\n"
		"grep -E '^Sig(Blk|Ign):' /proc/self/status > \"$KANNA_DIR/signals\"\n"
		CREDENTIAL("t", "2999-01-01T00:00:00Z"));
	struct loop *loop;
	char err[512] = "", *env, *fds, *signals;
	int leaked = open("/dev/null", O_RDONLY); /* no O_CLOEXEC */
	unsigned long long ignored;

	cr_assert_geq(leaked, 3);
	setenv("KANNA_SECRET_SETTING", "daemon-only", 1);
	setenv("GITHUB_TOKEN", "not-for-plugins", 1);
	setenv("AWS_REGION", "eu-west-1", 1);
	setenv("LC_ALL", "C", 1);
	setenv("AWS_PROFILE", "from-the-daemon", 1);
	/* as a daemon might; loop_new() blocks SIGTERM, SIGINT, SIGHUP and
	 * ignores SIGPIPE */
	signal(SIGUSR1, SIG_IGN);
	cr_assert_eq(loop_new(&loop, "test"), 0);
	cr_assert_eq(credential(cfg->exec, loop, err, sizeof(err)), 0, "%s", err);
	env = read_whole("env");
	cr_assert(strstr(env, "PATH="), "%s", env);
	cr_assert(strstr(env, "AWS_REGION=eu-west-1\n"), "%s", env);
	cr_assert(strstr(env, "LC_ALL=C\n"), "%s", env);
	cr_assert(strstr(env, "KUBERNETES_EXEC_INFO="), "%s", env);
	cr_assert(strstr(env, "KANNA_DIR=/tmp/"), "%s", env);
	cr_assert(strstr(env, "AWS_PROFILE=from-kubeconfig\n"), "%s", env);
	cr_assert_null(strstr(env, "from-the-daemon"), "the kubeconfig's env must win: %s", env);
	cr_assert_null(strstr(env, "KANNA_SECRET_SETTING"), "%s", env);
	cr_assert_null(strstr(env, "GITHUB_TOKEN"), "%s", env);
	fds = read_whole("fds");
	/* ls sees 0-2 and the directory it reads (3) */
	cr_assert_str_eq(fds, "0\n1\n2\n3\n", "fds: %s", fds);
	signals = read_whole("signals");
	cr_assert(strstr(signals, "SigBlk:\t0000000000000000\n"), "%s", signals);
	cr_assert_not_null(strstr(signals, "SigIgn:\t"), "%s", signals);
	/* Signals 32 and 33 are glibc's own (thread cancellation, setxid):
	 * posix_spawn leaves them ignored on purpose. No other may be. */
	ignored = strtoull(strstr(signals, "SigIgn:\t") + 8, NULL, 16);
	cr_assert_eq(ignored & ~((1ULL << (32 - 1)) | (1ULL << (33 - 1))), 0, "%s", signals);
	free(env);
	free(fds);
	free(signals);
	close(leaked);
	kube_config_free(cfg);
	loop_free(loop);
}

/* ---- through the Kubernetes client ------------------------------------- */

struct probe {
	uint16_t port;
	atomic_bool stop;
	int answered, unhealthy;
	long last_status;
};

/* /healthz every 100 ms from another thread, as a kubelet would. */
static void *probe_main(void *userdata)
{
	struct probe *p = userdata;
	char url[64];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", p->port);
	while (!atomic_load(&p->stop)) {
		CURL *easy = curl_easy_init();
		long status = 0;

		curl_easy_setopt(easy, CURLOPT_URL, url);
		curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
		curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 2000L);
		if (curl_easy_perform(easy) == CURLE_OK)
			curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_cleanup(easy);
		p->answered++;
		p->last_status = status;
		if (status != 200)
			p->unhealthy++;
		usleep(100 * 1000);
	}
	return NULL;
}

struct outcome {
	struct loop *loop;
	long status;
	char error[512];
	uint64_t done_usec;
	int done;
};

static void on_response(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct outcome *o = userdata;

	(void)c;
	o->status = resp->status;
	snprintf(o->error, sizeof(o->error), "%s", resp->error ? resp->error : "");
	o->done_usec = clock_monotonic_usec();
	o->done++;
	loop_exit(o->loop, 0);
}

/*
 * The plugin hangs (its pid written first); /healthz, whose stall window
 * is one second, keeps answering 200 for the whole 2 s deadline because
 * the loop keeps turning; at the deadline the plugin is killed and the
 * request fails with the plugin's error.
 */
Test(kube_exec, a_hanging_plugin_does_not_stall_healthz_and_is_killed_at_its_deadline)
{
	struct kube_config *cfg = load_with_plugin("echo $$ > \"$KANNA_DIR/pid\"\nexec sleep 600\n");
	struct health_server *health;
	struct probe probe = { 0 };
	struct outcome out = { 0 };
	struct kube_client *c;
	pthread_t thread;
	uint64_t start;
	char *pid_text;
	pid_t pid;

	cfg->exec->timeout_usec = 2000000;
	cr_assert_eq(loop_new(&out.loop, "test"), 0);
	cr_assert_eq(health_server_new(NULL, HEALTH_PORT_DISABLED, HEALTH_PORT_EPHEMERAL, 1, &health), 0);
	cr_assert_eq(health_server_attach_loop(health, out.loop), 0);
	probe.port = health_server_health_port(health);
	cr_assert_eq(kube_client_new(&c, out.loop, cfg, NULL), 0);
	cr_assert_eq(pthread_create(&thread, NULL, probe_main, &probe), 0);
	start = clock_monotonic_usec();
	cr_assert_eq(kube_request(c, "GET", "/api/v1/pods", NULL, NULL, on_response, &out), 0);
	cr_assert_geq(loop_run(out.loop), 0);
	atomic_store(&probe.stop, true);
	pthread_join(thread, NULL);

	cr_assert_eq(out.done, 1);
	cr_assert_eq(out.status, 0);
	cr_assert(strstr(out.error, "no credential within 2 s, killed"), "%s", out.error);
	cr_assert_geq(out.done_usec - start, 1900000, "gave up after %llu us",
		      (unsigned long long)(out.done_usec - start));
	cr_assert_lt(out.done_usec - start, 5000000, "took %llu us",
		     (unsigned long long)(out.done_usec - start));
	cr_assert_geq(probe.answered, 10, "only %d probes answered", probe.answered);
	cr_assert_eq(probe.unhealthy, 0, "%d of %d probes not 200 (last %ld)", probe.unhealthy,
		     probe.answered, probe.last_status);
	pid_text = read_whole("pid");
	pid = (pid_t)atoi(pid_text);
	free(pid_text);
	cr_assert_gt(pid, 1);
	/* Killed at the deadline and reaped by the loop (or at the latest by
	 * kube_client_free): no such process any more, not even a zombie. */
	kube_client_free(c);
	cr_assert_eq(kill(pid, 0), -1, "plugin %d still exists", (int)pid);
	cr_assert_eq(errno, ESRCH);
	health_server_free(health);
	loop_free(out.loop);
}

struct hammer {
	struct kube_client *c;
	uint64_t until_usec;
	int sent, failed_at_once;
};

static void on_hammer_response(struct kube_client *c, const struct kube_response *resp,
			       void *userdata)
{
	struct hammer *h = userdata;

	(void)c;
	if (resp->status == 0 && resp->error && strstr(resp->error, "next run in"))
		h->failed_at_once++;
}

/* A request every 20 ms, as a busy controller would make. */
static int on_hammer_tick(struct loop *loop, void *userdata)
{
	struct hammer *h = userdata;

	if (clock_monotonic_usec() >= h->until_usec) {
		loop_exit(loop, 0);
		return 0;
	}
	h->sent++;
	kube_request(h->c, "GET", "/api/v1/pods", NULL, NULL, on_hammer_response, h);
	return loop_add_timer(loop, 20000, on_hammer_tick, h, NULL);
}

/*
 * Backoff 1 s, 2 s, 4 s…: in 3.5 s of requests every 20 ms the failing
 * plugin runs at 0 s, ~1 s and ~3 s — three times, not ~175.
 */
Test(kube_exec, a_failing_plugin_is_not_rerun_more_than_its_backoff_allows)
{
	struct kube_config *cfg = load_with_plugin("echo run >> \"$KANNA_DIR/runs\"\nexit 1\n");
	struct kube_exec *x = cfg->exec;
	struct hammer h = { 0 };
	struct loop *loop;
	int runs;

	cr_assert_eq(loop_new(&loop, "test"), 0);
	cr_assert_eq(kube_client_new(&h.c, loop, cfg,
				     &(struct kube_client_options){ .qps = 1000, .burst = 1000 }), 0);
	h.until_usec = clock_monotonic_usec() + 3500000;
	cr_assert_eq(loop_add_timer(loop, 0, on_hammer_tick, &h, NULL), 0);
	cr_assert_geq(loop_run(loop), 0);
	runs = count_lines("runs");
	cr_assert_gt(h.sent, 50, "only %d requests sent", h.sent);
	cr_assert_geq(runs, 2, "the plugin was not retried after its backoff");
	cr_assert_leq(runs, 3, "the plugin ran %d times for %d requests", runs, h.sent);
	cr_assert_eq(x->runs, (unsigned)runs);
	cr_assert_gt(h.failed_at_once, h.sent / 2, "%d of %d requests failed with the cached error",
		     h.failed_at_once, h.sent);
	kube_client_free(h.c);
	loop_free(loop);
}
