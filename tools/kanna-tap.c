/*
 * kanna-tap: prints the message flow of running kanna daemons as JSON
 * lines. It watches the runtime directory for tap sockets
 * (<runtime_dir>/<process>.tap, see common/sock.h), connects one SUB socket
 * to each (rescanning so that daemons started later are picked up), and
 * formats every copy with tools/tap-format.c. It only reads: it binds
 * nothing and never creates the runtime directory, and it uses raw ZeroMQ
 * sockets rather than common/sock.h's wrapper, which would give kanna-tap a
 * tap of its own. Cleanup style: _cleanup_ attributes.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zmq.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/sock.h"
#include "common/util.h"
#include "proto/proto.h"
#include "tools/tap-format.h"

/* How often the runtime directory is rescanned for new or vanished tap
 * sockets: a daemon that starts is followed within a second. */
#define TAP_RESCAN_USEC (1000ULL * 1000)
/* Frames read per message: the header plus sock.h's limit for the rest. */
#define TAP_MAX_FRAMES (1 + SOCK_MAX_FRAMES)
/* Copies queued in kanna-tap before ZeroMQ drops them (the daemon side
 * drops at SOCK_TAP_HWM too): a stalled terminal must not grow memory. */
#define TAP_RCVHWM 100000
/* Processes followed at once; far above kanna's handful of daemons. */
#define TAP_MAX_PEERS 256
#define TAP_SUFFIX ".tap"

struct tap_peer {
	struct tap *tap;
	char *process;
	void *zsock;
	bool seen; /* found by the current rescan */
};

struct tap {
	struct loop *loop;
	void *zctx;
	struct proto_decoder *decoder;
	char *runtime_dir;
	char **types; /* --type filters (point into argv) */
	size_t n_types;
	char **processes; /* --process filters */
	size_t n_processes;
	uint64_t count; /* --count; 0 = unlimited */
	unsigned format_flags; /* enum tap_format_flags: --show-user-data */
	uint64_t printed;
	struct tap_peer *peers[TAP_MAX_PEERS];
	size_t n_peers;
	bool announced_empty;
};

static bool list_contains(char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (streq(list[i], s))
			return true;
	return false;
}

static int tap_print(struct tap *tap, json_t *line)
{
	const char *type = json_string_value(json_object_get(line, "type"));

	if (tap->count > 0 && tap->printed >= tap->count)
		return 0; /* messages drained after the last wanted one */
	if (tap->n_types > 0 && !list_contains(tap->types, tap->n_types, type ? type : ""))
		return 0;
	if (json_dumpf(line, stdout, JSON_COMPACT) < 0 || fputc('\n', stdout) == EOF ||
	    fflush(stdout) == EOF) {
		if (errno == EPIPE) { /* the reader went away (| head): done */
			loop_exit(tap->loop, 0);
			return 0;
		}
		log_error_errno(errno ? errno : EIO, "Failed to write to stdout: %m");
		loop_exit(tap->loop, EXIT_FAILURE);
		return 0;
	}
	tap->printed++;
	if (tap->count > 0 && tap->printed >= tap->count)
		loop_exit(tap->loop, 0);
	return 0;
}

static void close_frames(zmq_msg_t *frames, size_t n)
{
	for (size_t i = 0; i < n; i++)
		zmq_msg_close(&frames[i]);
}

/* Receives one whole message (loop_add_zsock contract) and prints it. */
static int on_tap_readable(void *zsock, void *userdata)
{
	struct tap_peer *peer = userdata;
	zmq_msg_t frames[TAP_MAX_FRAMES];
	struct tap_frame views[TAP_MAX_FRAMES];
	size_t n = 0;
	bool more = true, too_many = false;
	int r = 0;

	while (more) {
		zmq_msg_t scratch, *part = n < TAP_MAX_FRAMES ? &frames[n] : &scratch;
		zmq_msg_init(part);
		if (zmq_msg_recv(part, zsock, ZMQ_DONTWAIT) < 0) {
			r = -zmq_errno();
			zmq_msg_close(part);
			close_frames(frames, n);
			return r == -EAGAIN ? 0 : log_error_errno(r, "Failed to receive from %s tap: %m",
								  peer->process);
		}
		more = zmq_msg_more(part);
		if (part == &scratch) {
			too_many = true;
			zmq_msg_close(part);
		} else
			n++;
	}
	if (too_many)
		log_warn("Dropped a tap message from %s with more than %d frames", peer->process,
			 TAP_MAX_FRAMES);
	else {
		json_t *line = NULL;
		for (size_t i = 0; i < n; i++)
			views[i] = (struct tap_frame){ zmq_msg_data(&frames[i]), zmq_msg_size(&frames[i]) };
		r = tap_message_to_json(peer->tap->decoder, peer->process, views, n, clock_realtime_usec(),
					peer->tap->format_flags, &line);
		if (r >= 0)
			r = tap_print(peer->tap, line);
		json_decref(line);
	}
	close_frames(frames, n);
	return r;
}

static void peer_free(struct tap_peer *peer)
{
	if (!peer)
		return;
	if (peer->zsock) {
		loop_remove_zsock(peer->tap->loop, peer->zsock);
		zmq_close(peer->zsock);
	}
	free(peer->process);
	free(peer);
}

static int zsock_setopt_int(void *zsock, int option, int value)
{
	return zmq_setsockopt(zsock, option, &value, sizeof(value)) < 0 ? -zmq_errno() : 0;
}

static int peer_connect(struct tap_peer *peer, const char *path)
{
	int64_t maxmsg = SOCK_MAXMSGSIZE;
	_cleanup_free_ char *endpoint = NULL;
	int r;

	if (asprintf(&endpoint, "ipc://%s", path) < 0)
		return -ENOMEM;
	peer->zsock = zmq_socket(peer->tap->zctx, ZMQ_SUB);
	if (!peer->zsock)
		return -zmq_errno();
	if ((r = zsock_setopt_int(peer->zsock, ZMQ_LINGER, 0)) < 0 ||
	    (r = zsock_setopt_int(peer->zsock, ZMQ_RCVHWM, TAP_RCVHWM)) < 0 ||
	    (r = zsock_setopt_int(peer->zsock, ZMQ_RECONNECT_IVL, SOCK_RECONNECT_IVL_MSEC)) < 0 ||
	    (r = zsock_setopt_int(peer->zsock, ZMQ_RECONNECT_IVL_MAX, SOCK_RECONNECT_IVL_MAX_MSEC)) < 0)
		return r;
	if (zmq_setsockopt(peer->zsock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg)) < 0 ||
	    zmq_setsockopt(peer->zsock, ZMQ_SUBSCRIBE, "", 0) < 0 ||
	    zmq_connect(peer->zsock, endpoint) < 0)
		return -zmq_errno();
	return loop_add_zsock(peer->tap->loop, peer->zsock, on_tap_readable, peer);
}

static struct tap_peer *tap_find_peer(struct tap *tap, const char *process)
{
	for (size_t i = 0; i < tap->n_peers; i++)
		if (streq(tap->peers[i]->process, process))
			return tap->peers[i];
	return NULL;
}

static int tap_add_peer(struct tap *tap, const char *process, const char *path)
{
	if (tap->n_peers == TAP_MAX_PEERS)
		return -E2BIG;
	struct tap_peer *peer = calloc(1, sizeof(*peer));
	if (!peer)
		return -ENOMEM;
	peer->tap = tap;
	peer->seen = true;
	peer->process = strdup(process);
	int r = peer->process ? peer_connect(peer, path) : -ENOMEM;
	if (r < 0) {
		peer_free(peer);
		return r;
	}
	tap->peers[tap->n_peers++] = peer;
	log_info("Following %s (%s)", process, path);
	return 0;
}

/* One directory entry: a tap socket of a process we follow? */
static int tap_consider(struct tap *tap, int dirfd, const char *name)
{
	size_t len = strlen(name), suffix = strlen(TAP_SUFFIX);
	_cleanup_free_ char *process = NULL, *path = NULL;
	struct stat st;

	if (len <= suffix || !streq(name + len - suffix, TAP_SUFFIX))
		return 0;
	if (fstatat(dirfd, name, &st, 0) < 0 || !S_ISSOCK(st.st_mode))
		return 0; /* vanished meanwhile, or not a socket */
	process = strndup(name, len - suffix);
	if (!process)
		return -ENOMEM;
	if (tap->n_processes > 0 && !list_contains(tap->processes, tap->n_processes, process))
		return 0;
	struct tap_peer *peer = tap_find_peer(tap, process);
	if (peer) {
		peer->seen = true;
		return 0;
	}
	if (asprintf(&path, "%s/%s", tap->runtime_dir, name) < 0)
		return -ENOMEM;
	int r = tap_add_peer(tap, process, path);
	if (r < 0)
		return log_warn_errno(r, "Failed to connect to the tap of %s: %m", process);
	return 0;
}

static int tap_rescan(struct tap *tap)
{
	DIR *dir = opendir(tap->runtime_dir);
	struct dirent *de;
	int r = 0;

	if (!dir)
		return -errno;
	for (size_t i = 0; i < tap->n_peers; i++)
		tap->peers[i]->seen = false;
	while (r >= 0 && (de = readdir(dir)))
		r = tap_consider(tap, dirfd(dir), de->d_name);
	closedir(dir);
	if (r < 0)
		return r;
	/* A vanished socket: its daemon stopped. Forget it; a restart
	 * creates the file again and the next rescan reconnects. */
	for (size_t i = 0; i < tap->n_peers;) {
		if (tap->peers[i]->seen) {
			i++;
			continue;
		}
		log_debug("Tap of %s is gone", tap->peers[i]->process);
		peer_free(tap->peers[i]);
		tap->peers[i] = tap->peers[--tap->n_peers];
	}
	if (tap->n_peers == 0 && !tap->announced_empty) {
		log_info("No tap sockets in %s yet; waiting for daemons", tap->runtime_dir);
		tap->announced_empty = true;
	}
	return 0;
}

static int on_rescan(struct loop *loop, void *userdata)
{
	int r = tap_rescan(userdata);
	if (r < 0)
		log_warn_errno(r, "Failed to scan the runtime directory: %m");
	return 0;
}

static void tap_free(struct tap *tap)
{
	for (size_t i = 0; i < tap->n_peers; i++)
		peer_free(tap->peers[i]);
	if (tap->zctx)
		zmq_ctx_term(tap->zctx);
	proto_decoder_free(tap->decoder);
	loop_free(tap->loop);
	free(tap->runtime_dir);
	free(tap->types);
	free(tap->processes);
}

static void help(void)
{
	printf("Usage: kanna-tap [OPTIONS]\n"
	       "Print the messages kanna daemons send and receive, one JSON object per line.\n\n"
	       "  -d, --runtime-dir=DIR  where the daemons' tap sockets are (default:\n"
	       "                         $KANNA_RUNTIME_DIR, $RUNTIME_DIRECTORY, else %s)\n"
	       "  -t, --type=TYPE        only messages of this type (repeatable; \"%s\"\n"
	       "                         selects messages that failed to decode)\n"
	       "  -p, --process=NAME     only this process (repeatable), e.g. kanna-watcher\n"
	       "  -n, --count=N          exit after printing N messages\n"
	       "      --show-user-data   print EC2NodeClass user data in clear (default:\n"
	       "                         its length and SHA-256 prefix only)\n"
	       "  -h, --help             show this help\n",
	       SOCK_RUNTIME_DIR_DEFAULT, TAP_TYPE_UNDECODABLE);
}

static int append(char ***list, size_t *n, char *value)
{
	char **a = realloc(*list, (*n + 1) * sizeof(char *));
	if (!a)
		return -ENOMEM;
	a[(*n)++] = value;
	*list = a;
	return 0;
}

/* As the daemons' runtime-dir key (doc/configuration.md): KANNA_RUNTIME_DIR,
 * else the first entry of $RUNTIME_DIRECTORY (systemd may list several,
 * colon-separated), else /run/kanna. Never created here. */
static int default_runtime_dir(char **ret)
{
	const char *env = getenv("KANNA_RUNTIME_DIR");
	if (env && *env)
		*ret = strdup(env);
	else if ((env = getenv("RUNTIME_DIRECTORY")) && *env)
		*ret = strndup(env, strcspn(env, ":"));
	else
		*ret = strdup(SOCK_RUNTIME_DIR_DEFAULT);
	return *ret ? 0 : -ENOMEM;
}

/* Returns 1 to run, 0 to exit successfully (--help), negative on error. */
static int parse_argv(struct tap *tap, int argc, char **argv)
{
	enum { ARG_SHOW_USER_DATA = 0x100 };
	static const struct option options[] = {
		{ "runtime-dir", required_argument, NULL, 'd' },
		{ "type", required_argument, NULL, 't' },
		{ "process", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'n' },
		{ "show-user-data", no_argument, NULL, ARG_SHOW_USER_DATA },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	char *end;
	int c, r = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:t:p:n:h", options, NULL)) >= 0) {
		switch (c) {
		case 'd':
			free(tap->runtime_dir);
			if (!(tap->runtime_dir = strdup(optarg)))
				return -ENOMEM;
			break;
		case 't':
			r = append(&tap->types, &tap->n_types, optarg);
			break;
		case 'p':
			r = append(&tap->processes, &tap->n_processes, optarg);
			break;
		case 'n':
			errno = 0;
			tap->count = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || tap->count == 0)
				return log_error_errno(EINVAL, "Failed to parse --count '%s': expected a positive integer",
						       optarg);
			break;
		case ARG_SHOW_USER_DATA:
			tap->format_flags |= TAP_SHOW_USER_DATA;
			break;
		case 'h':
			help();
			return 0;
		case ':':
			return log_error_errno(EINVAL, "Failed to parse arguments: %s needs a value",
					       argv[optind - 1]);
		default:
			return log_error_errno(EINVAL, "Failed to parse arguments: unknown option %s (see --help)",
					       argv[optind - 1]);
		}
		if (r < 0)
			return r;
	}
	if (optind < argc)
		return log_error_errno(EINVAL, "Failed to parse arguments: unexpected argument '%s' (see --help)",
				       argv[optind]);
	if (!tap->runtime_dir && default_runtime_dir(&tap->runtime_dir) < 0)
		return -ENOMEM;
	return 1;
}

static int run(struct tap *tap)
{
	struct stat st;
	int r;

	if (stat(tap->runtime_dir, &st) < 0)
		return log_error_errno(errno, "Failed to open runtime directory %s: %m", tap->runtime_dir);
	if (!S_ISDIR(st.st_mode))
		return log_error_errno(ENOTDIR, "Failed to open runtime directory %s: %m", tap->runtime_dir);
	r = loop_new(&tap->loop, "kanna-tap");
	if (r < 0)
		return log_error_errno(r, "Failed to create the event loop: %m");
	tap->decoder = proto_decoder_new();
	if (!tap->decoder)
		return log_error_errno(ENOMEM, "Failed to create the message decoder: %m");
	tap->zctx = zmq_ctx_new();
	if (!tap->zctx)
		return log_error_errno(zmq_errno(), "Failed to create the ZeroMQ context: %m");
	r = tap_rescan(tap);
	if (r < 0)
		return log_error_errno(r, "Failed to scan runtime directory %s: %m", tap->runtime_dir);
	r = loop_add_periodic(tap->loop, "rescan", TAP_RESCAN_USEC, on_rescan, tap);
	if (r < 0)
		return log_error_errno(r, "Failed to schedule rescans: %m");
	r = loop_run(tap->loop);
	if (r < 0)
		return log_error_errno(r, "Failed to run the event loop: %m");
	return r;
}

int main(int argc, char **argv)
{
	struct tap tap = {};
	int r;

	log_setup("kanna-tap", LOG_FORMAT_TEXT, LOG_LEVEL_INFO);
	/* A closed stdout (| head) shows up as EPIPE from fflush(). */
	signal(SIGPIPE, SIG_IGN);
	r = parse_argv(&tap, argc, argv);
	if (r > 0)
		r = run(&tap);
	tap_free(&tap);
	return r < 0 ? EXIT_FAILURE : r;
}
