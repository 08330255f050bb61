/*
 * The ZeroMQ socket wrapper behind common/sock.h: runtime directory and
 * endpoint names, kanna's socket options, single-frame and multipart
 * send/recv, the per-process XPUB tap that copies every message while a
 * subscriber is attached (wire format at the top of sock.h), and the
 * notice that a peer connected (socket monitor) or subscribed (XPUB), on
 * which a layer above sends its greeting (it knows nothing of what that
 * is). Daemons call it from their loop; kanna-tap reads the tap. It must
 * never block on the tap and must cost one branch per message when nobody
 * is tapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/sock-guard.h"
#include "common/sock.h"

/* "recv " + socket name + " " + 20 digits: names are short identifiers. */
#define SOCK_TAP_HEADER_MAX 256
/* Subscription messages an XPUB hands us: 1 = subscribe, 0 = unsubscribe. */
#define SOCK_TAP_SUBSCRIBE 1
#define SOCK_TAP_UNSUBSCRIBE 0

struct sock_ctx {
	char *process;
	char *runtime_dir;
	struct loop *loop;
	void *zmq;
	void *tap;
	/* Socket modes and (daemons) the peer check: sock-guard.c. */
	struct sock_guard *guard;
	/* Distinct topics subscribed on the tap; > 0 means someone listens. */
	unsigned tap_subscriptions;
	uint64_t tap_copies;
};

struct sock {
	struct sock_ctx *ctx;
	void *zsock;
	char *name;
	bool watched;
	sock_readable_fn on_readable;
	void *userdata;
	/* sock_on_connect(): the callback and, but on an XPUB, the PAIR
	 * socket that reads the monitor's events. */
	sock_connect_fn on_connect;
	void *connect_userdata;
	void *monitor;
};

/* ---- runtime directory and endpoints ------------------------------------ */

int sock_runtime_dir(const char *override, char **ret)
{
	return sock_runtime_dir_shared(override, SOCK_NO_GROUP, ret);
}

/*
 * Creates dir with its group and mode, or finds it made. Daemons of one pod
 * start together under different uids: the directory appears under its
 * name only once it is what the others expect, made aside and renamed into
 * place (a plain mkdir() showed it to them before its group and mode were
 * set, and a daemon that opened it then was refused for good). Where the
 * filesystem cannot rename without replacing, the plain way.
 */
static int runtime_dir_create(const char *dir, gid_t group, mode_t mode)
{
	_cleanup_free_ char *tmp = NULL;
	int k;

	if (asprintf(&tmp, "%s.XXXXXX", dir) < 0)
		return -ENOMEM;
	if (access(dir, F_OK) == 0)
		return 0;
	if (!mkdtemp(tmp))
		goto plain;
	/* mkdtemp() makes it 0700; the mode is set after the group (chown()
	 * may clear the setgid bit). */
	if ((group != SOCK_NO_GROUP && chown(tmp, (uid_t)-1, group) < 0) || chmod(tmp, mode) < 0) {
		k = errno;
		(void)rmdir(tmp);
		return -k;
	}
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) == 0)
		return 0;
	k = errno;
	(void)rmdir(tmp);
	if (k == EEXIST) /* another daemon's won */
		return 0;
	if (k != EINVAL && k != ENOSYS)
		return -k;
plain:
	if (mkdir(dir, mode) == 0) {
		/* mkdir() honours the umask; the mode is part of the contract */
		if ((group != SOCK_NO_GROUP && chown(dir, (uid_t)-1, group) < 0) ||
		    chmod(dir, mode) < 0)
			return -errno;
	} else if (errno != EEXIST) {
		return -errno;
	}
	return 0;
}

int sock_runtime_dir_shared(const char *override, gid_t group, char **ret)
{
	mode_t mode = group == SOCK_NO_GROUP ? SOCK_RUNTIME_DIR_MODE : 02770;
	const char *env = getenv("RUNTIME_DIRECTORY");
	_cleanup_free_ char *dir = NULL;
	struct stat st;
	int r;

	if (override)
		dir = strdup(override);
	else if (env && *env)
		dir = strndup(env, strcspn(env, ":")); /* first of several */
	else
		dir = strdup(SOCK_RUNTIME_DIR_DEFAULT);
	if (!dir)
		return -ENOMEM;
	r = runtime_dir_create(dir, group, mode);
	if (r < 0)
		return r;
	if (stat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*ret = TAKE_PTR(dir);
	return 0;
}

static int sock_ipc_endpoint(const char *runtime_dir, const char *name,
			     const char *suffix, char **ret)
{
	struct sockaddr_un sun;
	char *endpoint;
	int n;

	n = asprintf(&endpoint, "ipc://%s/%s%s", runtime_dir, name, suffix);
	if (n < 0)
		return -ENOMEM;
	/* The path after "ipc://" must fit a Unix socket address. */
	if ((size_t)n - strlen("ipc://") >= sizeof(sun.sun_path)) {
		free(endpoint);
		return -ENAMETOOLONG;
	}
	*ret = endpoint;
	return 0;
}

int sock_endpoint(const char *runtime_dir, const char *name, char **ret)
{
	if (!name || !*name)
		return -EINVAL;
	if (strstr(name, "://")) {
		*ret = strdup(name);
		return *ret ? 0 : -ENOMEM;
	}
	if (strchr(name, '/'))
		return -EINVAL;
	return sock_ipc_endpoint(runtime_dir, name, ".sock", ret);
}

/* ---- the tap ------------------------------------------------------------- */

static int on_tap_subscription(void *zsock, void *userdata)
{
	struct sock_ctx *ctx = userdata;
	zmq_msg_t msg;
	const unsigned char *data;
	int r;

	zmq_msg_init(&msg);
	r = zmq_msg_recv(&msg, zsock, ZMQ_DONTWAIT);
	if (r < 0) {
		r = -errno;
		zmq_msg_close(&msg);
		return r == -EAGAIN ? 0 : r;
	}
	data = zmq_msg_data(&msg);
	if (zmq_msg_size(&msg) >= 1) {
		if (data[0] == SOCK_TAP_SUBSCRIBE)
			ctx->tap_subscriptions++;
		else if (data[0] == SOCK_TAP_UNSUBSCRIBE && ctx->tap_subscriptions > 0)
			ctx->tap_subscriptions--;
		log_debug("Tap subscriptions: %u", ctx->tap_subscriptions);
	}
	zmq_msg_close(&msg);
	return 0;
}

static int sock_tap_open(struct sock_ctx *ctx)
{
	_cleanup_free_ char *endpoint = NULL, *domain = NULL;
	int hwm = SOCK_TAP_HWM, linger = 0;
	int r;

	r = sock_ipc_endpoint(ctx->runtime_dir, ctx->process, ".tap", &endpoint);
	if (r < 0)
		return r;
	/* Operators (the tap group) may read the tap; they may not talk. */
	if (asprintf(&domain, "%s.tap", ctx->process) < 0)
		return -ENOMEM;
	if ((r = sock_guard_admit(ctx->guard, domain, SOCK_ROLE_OPERATORS)) < 0)
		return r;
	ctx->tap = zmq_socket(ctx->zmq, ZMQ_XPUB);
	if (!ctx->tap)
		return -errno;
	/* Copies are disposable: never keep them past close, never queue many. */
	if (zmq_setsockopt(ctx->tap, ZMQ_SNDHWM, &hwm, sizeof(hwm)) < 0 ||
	    zmq_setsockopt(ctx->tap, ZMQ_LINGER, &linger, sizeof(linger)) < 0)
		return -errno;
	if ((r = sock_guard_bind(ctx->guard, ctx->tap, domain, endpoint, true)) < 0)
		return r;
	return loop_add_zsock(ctx->loop, ctx->tap, on_tap_subscription, ctx);
}

/* Publishes header + frames; drops the copy rather than wait. */
static void sock_tap_copy(struct sock *s, const char *dir,
			  const struct iovec *frames, size_t n)
{
	char header[SOCK_TAP_HEADER_MAX];
	int len;

	len = snprintf(header, sizeof(header), "%s %s %llu", dir, s->name,
		       (unsigned long long)clock_realtime_usec());
	if (len < 0 || (size_t)len >= sizeof(header))
		return;
	if (zmq_send(s->ctx->tap, header, (size_t)len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
		return;
	s->ctx->tap_copies++;
	for (size_t i = 0; i < n; i++)
		(void)zmq_send(s->ctx->tap, frames[i].iov_base, frames[i].iov_len,
			       (i + 1 < n ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT);
}

/* ---- context ------------------------------------------------------------- */

int sock_ctx_new(struct sock_ctx **ret, struct loop *loop, const char *process,
		 const char *runtime_dir)
{
	return sock_ctx_new_with_access(ret, loop, process, runtime_dir, NULL);
}

int sock_ctx_new_with_access(struct sock_ctx **ret, struct loop *loop, const char *process,
			     const char *runtime_dir, const struct sock_access *access)
{
	_cleanup_(sock_ctx_freep) struct sock_ctx *ctx = NULL;
	int r;

	if (!process || !*process || strchr(process, '/'))
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->loop = loop;
	ctx->process = strdup(process);
	if (!ctx->process)
		return -ENOMEM;
	r = sock_runtime_dir(runtime_dir, &ctx->runtime_dir);
	if (r < 0)
		return r;
	ctx->zmq = zmq_ctx_new();
	if (!ctx->zmq)
		return -errno;
	/* Before any socket is bound: see sock_guard_new(). */
	r = sock_guard_new(&ctx->guard, ctx->zmq, loop, access);
	if (r < 0)
		return r;
	if (loop) {
		r = sock_tap_open(ctx);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(ctx);
	return 0;
}

struct sock_ctx *sock_ctx_free(struct sock_ctx *ctx)
{
	if (!ctx)
		return NULL;
	if (ctx->tap) {
		if (ctx->loop)
			(void)loop_remove_zsock(ctx->loop, ctx->tap);
		zmq_close(ctx->tap);
	}
	sock_guard_free(ctx->guard);
	if (ctx->zmq)
		zmq_ctx_term(ctx->zmq);
	free(ctx->runtime_dir);
	free(ctx->process);
	free(ctx);
	return NULL;
}

void *sock_ctx_zmq(struct sock_ctx *ctx)
{
	return ctx->zmq;
}

const char *sock_ctx_runtime_dir(const struct sock_ctx *ctx)
{
	return ctx->runtime_dir;
}

bool sock_ctx_tap_attached(const struct sock_ctx *ctx)
{
	return ctx->tap_subscriptions > 0;
}

uint64_t sock_ctx_tap_copies(const struct sock_ctx *ctx)
{
	return ctx->tap_copies;
}

uint64_t sock_ctx_peers_refused(const struct sock_ctx *ctx)
{
	return sock_guard_refused(ctx->guard);
}

/* ---- sockets --------------------------------------------------------------- */

static int sock_set_options(void *zsock)
{
	const int hwm = SOCK_HWM, linger = SOCK_LINGER_MSEC;
	const int ivl = SOCK_RECONNECT_IVL_MSEC, ivl_max = SOCK_RECONNECT_IVL_MAX_MSEC;
	const int64_t maxmsgsize = SOCK_MAXMSGSIZE;

	if (zmq_setsockopt(zsock, ZMQ_SNDHWM, &hwm, sizeof(hwm)) < 0 ||
	    zmq_setsockopt(zsock, ZMQ_RCVHWM, &hwm, sizeof(hwm)) < 0 ||
	    zmq_setsockopt(zsock, ZMQ_MAXMSGSIZE, &maxmsgsize, sizeof(maxmsgsize)) < 0 ||
	    zmq_setsockopt(zsock, ZMQ_LINGER, &linger, sizeof(linger)) < 0 ||
	    zmq_setsockopt(zsock, ZMQ_RECONNECT_IVL, &ivl, sizeof(ivl)) < 0 ||
	    zmq_setsockopt(zsock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof(ivl_max)) < 0)
		return -errno;
	return 0;
}

int sock_new(struct sock **ret, struct sock_ctx *ctx, int zmq_type,
	     const char *name)
{
	_cleanup_(sock_freep) struct sock *s = NULL;
	int r;

	if (!name || !*name || strchr(name, ' '))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ctx = ctx;
	s->name = strdup(name);
	if (!s->name)
		return -ENOMEM;
	s->zsock = zmq_socket(ctx->zmq, zmq_type);
	if (!s->zsock)
		return -errno;
	r = sock_set_options(s->zsock);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

static void sock_monitor_close(struct sock *s);

struct sock *sock_free(struct sock *s)
{
	if (!s)
		return NULL;
	if (s->watched)
		(void)sock_unwatch(s);
	sock_monitor_close(s);
	if (s->zsock)
		zmq_close(s->zsock);
	free(s->name);
	free(s);
	return NULL;
}

void *sock_zsock(struct sock *s)
{
	return s->zsock;
}

const char *sock_name(const struct sock *s)
{
	return s->name;
}

int sock_bind(struct sock *s, const char *endpoint)
{
	_cleanup_free_ char *url = NULL;
	int r;

	r = sock_endpoint(s->ctx->runtime_dir, endpoint, &url);
	if (r < 0)
		return r;
	return sock_guard_bind(s->ctx->guard, s->zsock, s->name, url, false);
}

int sock_admit(struct sock *s, const char *roles)
{
	return sock_guard_admit(s->ctx->guard, s->name, roles);
}

int sock_connect(struct sock *s, const char *endpoint)
{
	_cleanup_free_ char *url = NULL;
	int r;

	r = sock_endpoint(s->ctx->runtime_dir, endpoint, &url);
	if (r < 0)
		return r;
	return zmq_connect(s->zsock, url) < 0 ? -errno : 0;
}

int sock_subscribe(struct sock *s, const void *prefix, size_t size)
{
	return zmq_setsockopt(s->zsock, ZMQ_SUBSCRIBE, prefix, size) < 0 ? -errno : 0;
}

static int sock_on_readable(void *zsock, void *userdata)
{
	struct sock *s = userdata;

	return s->on_readable(s, s->userdata);
}

int sock_watch(struct sock *s, sock_readable_fn on_readable, void *userdata)
{
	int r;

	if (!s->ctx->loop || !on_readable)
		return -EINVAL;
	if (s->watched)
		return -EEXIST;
	s->on_readable = on_readable;
	s->userdata = userdata;
	r = loop_add_zsock(s->ctx->loop, s->zsock, sock_on_readable, s);
	if (r < 0)
		return r;
	s->watched = true;
	return 0;
}

int sock_unwatch(struct sock *s)
{
	if (!s->watched)
		return -ENOENT;
	s->watched = false;
	return loop_remove_zsock(s->ctx->loop, s->zsock);
}

/* ---- peers connecting ------------------------------------------------------- */

/* The first frame of a monitor event: uint16 event id, uint32 value. */
#define SOCK_MONITOR_EVENT_SIZE 6
/* "inproc://kanna-monitor-" + a pointer in hex: unique in the context. */
#define SOCK_MONITOR_ENDPOINT_MAX 64

/* Reads one whole message from zsock and returns the first byte of its
 * first frame (-1 when empty) in *first and its event id in *event. */
static int sock_recv_raw(void *zsock, int *first, uint16_t *event)
{
	zmq_msg_t frame;
	bool more = true;

	*first = -1;
	*event = 0;
	for (bool head = true; more; head = false) {
		zmq_msg_init(&frame);
		if (zmq_msg_recv(&frame, zsock, head ? ZMQ_DONTWAIT : 0) < 0) {
			int r = -errno;

			zmq_msg_close(&frame);
			return r;
		}
		if (head && zmq_msg_size(&frame) >= 1)
			*first = *(const unsigned char *)zmq_msg_data(&frame);
		if (head && zmq_msg_size(&frame) >= SOCK_MONITOR_EVENT_SIZE)
			memcpy(event, zmq_msg_data(&frame), sizeof(*event));
		more = zmq_msg_more(&frame);
		zmq_msg_close(&frame);
	}
	return 0;
}

/* XPUB: a subscription (1 + topic) or an unsubscription (0 + topic). */
static int on_subscription(struct sock *s, void *userdata)
{
	uint16_t event;
	int first, r;

	(void)userdata;
	r = sock_recv_raw(s->zsock, &first, &event);
	if (r < 0)
		return r == -EAGAIN ? 0 : r;
	if (first != SOCK_TAP_SUBSCRIBE)
		return 0;
	log_debug("A peer subscribed on %s", s->name);
	return s->on_connect(s, s->connect_userdata);
}

/* The monitor's PAIR: one event per message. */
static int on_monitor_event(void *zsock, void *userdata)
{
	struct sock *s = userdata;
	uint16_t event;
	int first, r;

	r = sock_recv_raw(zsock, &first, &event);
	if (r < 0)
		return r == -EAGAIN ? 0 : r;
	if (event != ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
		return 0;
	log_debug("A peer connected on %s", s->name);
	return s->on_connect(s, s->connect_userdata);
}

static int sock_monitor_open(struct sock *s)
{
	char endpoint[SOCK_MONITOR_ENDPOINT_MAX];
	int linger = 0, r;

	snprintf(endpoint, sizeof(endpoint), "inproc://kanna-monitor-%p", (void *)s);
	if (zmq_socket_monitor(s->zsock, endpoint, ZMQ_EVENT_HANDSHAKE_SUCCEEDED) < 0)
		return -errno;
	s->monitor = zmq_socket(s->ctx->zmq, ZMQ_PAIR);
	if (!s->monitor) {
		r = -errno;
		(void)zmq_socket_monitor(s->zsock, NULL, 0);
		return r;
	}
	/* Events are about this process's own sockets: none outlives them. */
	if (zmq_setsockopt(s->monitor, ZMQ_LINGER, &linger, sizeof(linger)) < 0 ||
	    zmq_connect(s->monitor, endpoint) < 0)
		return -errno;
	r = loop_add_zsock(s->ctx->loop, s->monitor, on_monitor_event, s);
	return r;
}

static void sock_monitor_close(struct sock *s)
{
	if (!s->monitor)
		return;
	(void)loop_remove_zsock(s->ctx->loop, s->monitor);
	(void)zmq_socket_monitor(s->zsock, NULL, 0);
	zmq_close(s->monitor);
	s->monitor = NULL;
}

int sock_on_connect(struct sock *s, sock_connect_fn on_connect, void *userdata)
{
	int type = 0, one = 1, r;
	size_t size = sizeof(type);

	if (!s->ctx->loop || !on_connect)
		return -EINVAL;
	if (s->on_connect)
		return -EEXIST;
	if (zmq_getsockopt(s->zsock, ZMQ_TYPE, &type, &size) < 0)
		return -errno;
	s->on_connect = on_connect;
	s->connect_userdata = userdata;
	if (type == ZMQ_XPUB) {
		if (zmq_setsockopt(s->zsock, ZMQ_XPUB_VERBOSE, &one, sizeof(one)) < 0)
			r = -errno;
		else
			r = sock_watch(s, on_subscription, NULL);
	} else {
		r = sock_monitor_open(s);
		if (r < 0)
			sock_monitor_close(s);
	}
	if (r < 0)
		s->on_connect = NULL;
	return r;
}

/* ---- messages ---------------------------------------------------------------- */

static void sock_after_send(struct sock *s)
{
	int r;

	if (!s->watched)
		return;
	r = loop_zsock_check(s->ctx->loop, s->zsock);
	if (r < 0)
		log_warn_errno(r, "Failed to re-check socket %s after a send: %m",
			       s->name);
}

int sock_send_frames(struct sock *s, const struct iovec *frames, size_t n,
		     int flags)
{
	if (n == 0 || (flags & ~ZMQ_DONTWAIT))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int more = i + 1 < n ? ZMQ_SNDMORE : 0;

		/* Once the first frame is queued ZeroMQ takes the rest. */
		if (zmq_send(s->zsock, frames[i].iov_base, frames[i].iov_len,
			     flags | more) < 0) {
			int r = -errno;

			sock_after_send(s);
			return r;
		}
	}
	if (_unlikely_(s->ctx->tap_subscriptions > 0))
		sock_tap_copy(s, "send", frames, n);
	sock_after_send(s);
	return 0;
}

int sock_send(struct sock *s, const void *data, size_t size, int flags)
{
	struct iovec frame = { .iov_base = (void *)data, .iov_len = size };

	return sock_send_frames(s, &frame, 1, flags);
}

void sock_msg_close(struct sock_msg *msg)
{
	for (size_t i = 0; i < msg->n_frames; i++)
		zmq_msg_close(&msg->frames[i]);
	msg->n_frames = 0;
}

/* Reads and discards the rest of a message that has too many frames. */
static void sock_recv_discard(void *zsock)
{
	zmq_msg_t frame;
	int more;

	do {
		zmq_msg_init(&frame);
		if (zmq_msg_recv(&frame, zsock, 0) < 0) {
			zmq_msg_close(&frame);
			return;
		}
		more = zmq_msg_more(&frame);
		zmq_msg_close(&frame);
	} while (more);
}

static void sock_tap_copy_msg(struct sock *s, struct sock_msg *msg)
{
	struct iovec frames[SOCK_MAX_FRAMES];

	for (size_t i = 0; i < msg->n_frames; i++)
		frames[i] = (struct iovec){ .iov_base = zmq_msg_data(&msg->frames[i]),
					    .iov_len = zmq_msg_size(&msg->frames[i]) };
	sock_tap_copy(s, "recv", frames, msg->n_frames);
}

int sock_recv(struct sock *s, struct sock_msg *msg, int flags)
{
	bool more = true;

	if (flags & ~ZMQ_DONTWAIT)
		return -EINVAL;
	msg->n_frames = 0;
	while (more) {
		zmq_msg_t *frame = &msg->frames[msg->n_frames];

		if (msg->n_frames == SOCK_MAX_FRAMES) {
			sock_recv_discard(s->zsock);
			sock_msg_close(msg);
			return -EMSGSIZE;
		}
		zmq_msg_init(frame);
		/* Later frames are already here: ZeroMQ delivers messages whole. */
		if (zmq_msg_recv(frame, s->zsock, msg->n_frames == 0 ? flags : 0) < 0) {
			int r = -errno;

			zmq_msg_close(frame);
			sock_msg_close(msg);
			return r;
		}
		msg->n_frames++;
		more = zmq_msg_more(frame);
	}
	if (_unlikely_(s->ctx->tap_subscriptions > 0))
		sock_tap_copy_msg(s, msg);
	return 0;
}

const void *sock_msg_data(struct sock_msg *msg, size_t frame)
{
	if (frame >= msg->n_frames)
		return NULL;
	return zmq_msg_data(&msg->frames[frame]);
}

size_t sock_msg_size(const struct sock_msg *msg, size_t frame)
{
	if (frame >= msg->n_frames)
		return 0;
	return zmq_msg_size(&msg->frames[frame]);
}

const void *sock_msg_body(struct sock_msg *msg, size_t *ret_size)
{
	if (msg->n_frames == 0) {
		*ret_size = 0;
		return NULL;
	}
	*ret_size = zmq_msg_size(&msg->frames[msg->n_frames - 1]);
	return zmq_msg_data(&msg->frames[msg->n_frames - 1]);
}
