/*
 * kanna-tap: prints the message flow of running kanna daemons, as JSON
 * lines, readable lines (tools/tap-text.c) or counts and rates
 * (tools/tap-summary.c), filtered by tools/tap-filter.c and configured
 * like the daemons (tools/tap-config.c). It watches the runtime directory
 * for tap sockets (<runtime_dir>/<process>.tap, see common/sock.h),
 * connects one SUB socket to each (rescanning so that daemons started
 * later are picked up), and formats every copy with tools/tap-format.c.
 * It only reads: it binds
 * nothing and never creates the runtime directory, and it uses raw ZeroMQ
 * sockets rather than common/sock.h's wrapper, which would give kanna-tap a
 * tap of its own. Cleanup style: _cleanup_ attributes.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/sock.h"
#include "common/util.h"
#include "proto/proto.h"
#include "tools/tap-config.h"
#include "tools/tap-format.h"
#include "tools/tap-summary.h"
#include "tools/tap-text.h"

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
	struct tap_config cfg;
	struct tap_options opts;
	const char *runtime_dir; /* cfg.common.runtime_dir */
	unsigned format_flags; /* enum tap_format_flags */
	bool text;             /* --output=text, or auto on a terminal */
	struct tap_summary summary; /* --summary */
	uint64_t printed;      /* messages shown (or counted by --summary) */
	bool warned_rows;      /* --summary ran out of rows once */
	struct tap_peer *peers[TAP_MAX_PEERS];
	size_t n_peers;
	bool announced_empty;
};

/* A failed write to stdout ends kanna-tap: successfully when the reader
 * went away (| head), with an error otherwise. */
static void tap_write_failed(struct tap *tap)
{
	if (errno == EPIPE) {
		loop_exit(tap->loop, 0);
		return;
	}
	log_error_errno(errno ? errno : EIO, "Failed to write to stdout: %m");
	loop_exit(tap->loop, EXIT_FAILURE);
}

static int tap_write_line(struct tap *tap, json_t *line)
{
	_cleanup_free_ char *text = NULL;

	if (!tap->text)
		return json_dumpf(line, stdout, JSON_COMPACT) < 0 || fputc('\n', stdout) == EOF ? -EIO : 0;
	int r = tap_format_text(line, &text);
	if (r < 0)
		return r;
	return fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF ? -EIO : 0;
}

/* Shows (or counts) one decoded message that passed the filters. */
static int tap_print(struct tap *tap, const char *process, json_t *line, uint64_t bytes)
{
	int r;

	if (tap->opts.count > 0 && tap->printed >= tap->opts.count)
		return 0; /* messages drained after the last wanted one */
	if (!tap_filter_match(&tap->opts.filter, process, line))
		return 0;
	if (tap->opts.summary) {
		r = tap_summary_add(&tap->summary, process,
				    json_string_value(json_object_get(line, "direction")),
				    json_string_value(json_object_get(line, "socket")),
				    json_string_value(json_object_get(line, "type")), bytes);
		if (r == -E2BIG && !tap->warned_rows) {
			tap->warned_rows = true; /* then only counted as dropped */
			log_warn("Dropped a tap message from %s: more than %d distinct sockets and types",
				 process, TAP_SUMMARY_MAX_ROWS);
		} else if (r < 0 && r != -E2BIG)
			return r;
	} else {
		r = tap_write_line(tap, line);
		if (r == -ENOMEM)
			return r;
		if (r < 0 || fflush(stdout) == EOF) {
			tap_write_failed(tap);
			return 0;
		}
	}
	tap->printed++;
	if (tap->opts.count > 0 && tap->printed >= tap->opts.count)
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
	if (too_many) {
		log_warn("Dropped a tap message from %s with more than %d frames", peer->process,
			 TAP_MAX_FRAMES);
		tap_summary_add_dropped(&peer->tap->summary, 1);
	} else {
		json_t *line = NULL;
		for (size_t i = 0; i < n; i++)
			views[i] = (struct tap_frame){ zmq_msg_data(&frames[i]), zmq_msg_size(&frames[i]) };
		r = tap_message_to_json(peer->tap->decoder, peer->process, views, n, clock_realtime_usec(),
					peer->tap->format_flags, &line);
		if (r >= 0) /* the payload, the last frame, is the message's size */
			r = tap_print(peer->tap, peer->process, line, n >= 2 ? views[n - 1].size : 0);
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
	if (!tap_patterns_match(&tap->opts.filter.processes, process))
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
	tap_summary_done(&tap->summary);
	tap_config_done(&tap->cfg, &tap->opts);
}

static int tap_print_summary(struct tap *tap, bool final)
{
	int r = tap_summary_print(&tap->summary, clock_monotonic_usec(), clock_realtime_usec(), final,
				  !tap->text, stdout);
	if (r == -ENOMEM)
		return log_error_errno(r, "Failed to print the summary: %m");
	if (r < 0 && !final)
		tap_write_failed(tap);
	return 0;
}

static int on_summary(struct loop *loop, void *userdata)
{
	return tap_print_summary(userdata, false);
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
	if (tap->opts.summary) {
		tap_summary_init(&tap->summary, clock_monotonic_usec());
		r = loop_add_periodic(tap->loop, "summary", tap->cfg.summary_interval_usec, on_summary, tap);
		if (r < 0)
			return log_error_errno(r, "Failed to schedule summaries: %m");
	}
	r = loop_run(tap->loop);
	if (r < 0)
		return log_error_errno(r, "Failed to run the event loop: %m");
	/* --count reached, SIGINT or SIGTERM: the totals (a closed stdout
	 * stopped it, or the write fails quietly). */
	if (tap->opts.summary && r == 0)
		tap_print_summary(tap, true);
	return r;
}

int main(int argc, char **argv)
{
	struct tap tap = {};
	int r;

	if (tap_config_handle_command_line(&tap.cfg, &tap.opts, argc, argv, &r)) {
		tap_config_done(&tap.cfg, &tap.opts);
		return r;
	}
	/* A closed stdout (| head) shows up as EPIPE from fflush(). */
	signal(SIGPIPE, SIG_IGN);
	tap.runtime_dir = tap.cfg.common.runtime_dir;
	if (tap.cfg.show_user_data)
		tap.format_flags |= TAP_SHOW_USER_DATA;
	if (tap.opts.summary && !tap_filter_has_fields(&tap.opts.filter))
		tap.format_flags |= TAP_TYPE_ONLY;
	tap.text = tap.cfg.output == TAP_OUTPUT_TEXT ||
		   (tap.cfg.output == TAP_OUTPUT_AUTO && isatty(STDOUT_FILENO));
	r = run(&tap);
	tap_free(&tap);
	return r < 0 ? EXIT_FAILURE : r;
}
