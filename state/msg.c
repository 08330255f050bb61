/*
 * Proto messages over kanna sockets (see msg.h). The encode buffer is
 * reused for every send, so steady-state sending does not allocate (one
 * grown past MSG_ENCODE_KEEP_MAX is dropped before the next).
 * Hellos: sent through common/sock.h's connect notifications, checked in
 * msg_dispatch() before the table.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "state/msg.h"

/* The encode buffer a send keeps for the next: steady-state messages fit. */
#define MSG_ENCODE_KEEP_MAX (256 * 1024)

_Static_assert(SOCK_MAXMSGSIZE == PROTO_MAX_FRAME_BYTES,
	       "sockets must take exactly the largest frame the codec makes");

int msg_io_init(struct msg_io *io, enum proto_process self, uint32_t shard)
{
	*io = (struct msg_io){ .self = self, .shard = shard };
	if (gethostname(io->instance, sizeof(io->instance) - 1) < 0)
		io->instance[0] = '\0';
	msgpack_sbuffer_init(&io->buf);
	io->decoder = proto_decoder_new();
	return io->decoder ? 0 : -ENOMEM;
}

void msg_io_done(struct msg_io *io)
{
	msgpack_sbuffer_destroy(&io->buf);
	proto_decoder_free(io->decoder);
	io->decoder = NULL;
}

int msg_encode(struct msg_io *io, struct proto_msg *msg)
{
	int r;

	msg->env.sender = (uint8_t)io->self;
	msg->env.sender_shard = io->shard;
	msg->env.send_time_ns = clock_realtime_ns();
	if (io->buf.alloc > MSG_ENCODE_KEEP_MAX) {
		/* The last message was a big one (a catalog, a snapshot batch):
		 * its buffer is not kept for the small ones that follow. */
		msgpack_sbuffer_destroy(&io->buf);
		msgpack_sbuffer_init(&io->buf);
	}
	msgpack_sbuffer_clear(&io->buf);
	r = proto_encode(msg, &io->buf, &io->last_error);
	io->encoded_type = msg->env.type;
	return r;
}

/* kanna_messages_total: one family in a process, whichever io counts. */
static struct metrics_counter *messages_total;

int msg_messages_metric_new(struct metrics_registry *reg)
{
	return metrics_counter_new(reg, &messages_total, "kanna_messages_total",
				   "Messages sent and received, by socket, type and direction "
				   "(sent, received; hellos included, drops not).",
				   "socket", "type", "direction", NULL);
}

static void count_message(const char *socket, enum proto_msg_type type, const char *direction)
{
	if (messages_total)
		(void)metrics_counter_add(messages_total, 1, socket, proto_type_name(type), direction,
					  NULL);
}

int msg_send_encoded(struct msg_io *io, struct sock *s, int flags)
{
	int r = sock_send(s, io->buf.data, io->buf.size, flags);

	if (r >= 0) {
		io->sent++;
		count_message(sock_name(s), io->encoded_type, "sent");
	}
	return r;
}

int msg_send(struct msg_io *io, struct sock *s, struct proto_msg *msg, int flags)
{
	int r = msg_encode(io, msg);

	return r < 0 ? r : msg_send_encoded(io, s, flags);
}

int msg_send_routed(struct msg_io *io, struct sock *s, const struct iovec *route, size_t n_route,
		    struct proto_msg *msg, int flags)
{
	struct iovec frames[SOCK_MAX_FRAMES];
	int r;

	if (n_route + 1 > SOCK_MAX_FRAMES)
		return -E2BIG;
	r = msg_encode(io, msg);
	if (r < 0)
		return r;
	memcpy(frames, route, n_route * sizeof(*route));
	frames[n_route] = (struct iovec){ io->buf.data, io->buf.size };
	r = sock_send_frames(s, frames, n_route + 1, flags);
	if (r >= 0) {
		io->sent++;
		count_message(sock_name(s), io->encoded_type, "sent");
	}
	return r;
}

/* ---- hello ------------------------------------------------------------------------ */

static void hello_init(struct msg_io *io, struct proto_msg *m)
{
	proto_hello_init(m, io->self, io->shard, io->n_shards, io->instance[0] ? io->instance : NULL,
			 (uint32_t)getpid());
}

int msg_send_hello(struct msg_io *io, struct sock *s, int flags)
{
	struct proto_msg m;

	hello_init(io, &m);
	return msg_send(io, s, &m, flags);
}

int msg_send_hello_routed(struct msg_io *io, struct sock *s, const struct iovec *route,
			  size_t n_route, int flags)
{
	struct proto_msg m;

	hello_init(io, &m);
	return msg_send_routed(io, s, route, n_route, &m, flags);
}

static int on_peer_connected(struct sock *s, void *userdata)
{
	int r = msg_send_hello(userdata, s, ZMQ_DONTWAIT);

	/* The queue towards the peer is full: it will hear from us anyway,
	 * and the envelope of every message says our version. */
	if (r == -EAGAIN)
		log_debug("Failed to greet a peer on %s: its queue is full", sock_name(s));
	else if (r < 0)
		log_warn_errno(r, "Failed to greet a peer on %s: %m", sock_name(s));
	return 0;
}

int msg_hello_on_connect(struct msg_io *io, struct sock *s, uint32_t n_shards)
{
	io->n_shards = n_shards;
	return sock_on_connect(s, on_peer_connected, io);
}

int msg_decode(struct msg_io *io, struct sock_msg *m, const struct proto_msg **ret)
{
	size_t size;
	const void *body = sock_msg_body(m, &size);
	int r;

	if (!body) {
		io->dropped++;
		io->last_error.code = PROTO_E_TRUNCATED;
		strcpy(io->last_error.text, "empty message");
		return -EBADMSG;
	}
	r = proto_decode(io->decoder, body, size, ret, &io->last_error);
	if (r < 0)
		io->dropped++;
	else
		io->received++;
	return r;
}

/* ---- dispatch by table ------------------------------------------------------------ */

/* Drops logged at most this often per socket; the rest are counted. */
#define MSG_DROP_LOG_USEC (1000ULL * 1000)

int msg_dropped_metric_new(struct metrics_registry *reg, struct metrics_counter **ret)
{
	return metrics_counter_new(reg, ret, "kanna_messages_dropped_total",
				   "Messages received and not handled, by socket and reason "
				   "(undecodable, version_mismatch, unexpected_type, unexpected_sender).",
				   "socket", "reason", NULL);
}

static void dropped(struct msg_dispatch *d, const char *reason, const char *fmt, ...)
	_printf_(3, 4);

static void dropped(struct msg_dispatch *d, const char *reason, const char *fmt, ...)
{
	uint64_t now = clock_monotonic_usec();
	char what[512];
	va_list ap;

	d->n_dropped++;
	if (d->dropped)
		(void)metrics_counter_add(d->dropped, 1, d->socket, reason, NULL);
	if (d->logged_at && now - d->logged_at < MSG_DROP_LOG_USEC) {
		d->unlogged++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (d->unlogged)
		log_warn("Dropped a message on %s: %s (and %u more since the last such line)", d->socket,
			 what, d->unlogged);
	else
		log_warn("Dropped a message on %s: %s", d->socket, what);
	d->logged_at = now;
	d->unlogged = 0;
}

/* The roles that may say hello on d, and the route for hellos, if any. */
static uint32_t hello_senders(const struct msg_dispatch *d, const struct msg_route **ret)
{
	uint32_t senders = 0;

	*ret = NULL;
	for (size_t i = 0; i < d->n_routes; i++) {
		if (d->routes[i].type == PROTO_MSG_HELLO) {
			*ret = &d->routes[i];
			return d->routes[i].senders ?: UINT32_MAX;
		}
		senders |= d->routes[i].senders ?: UINT32_MAX;
	}
	return senders;
}

static void refused(struct msg_dispatch *d, const struct proto_hello *h, const char *reason,
		    const char *fmt, ...) _printf_(4, 5);

static void refused(struct msg_dispatch *d, const struct proto_hello *h, const char *reason,
		    const char *fmt, ...)
{
	uint64_t now = clock_monotonic_usec();
	char why[512];
	va_list ap;

	d->n_dropped++;
	d->n_refused++;
	if (d->dropped)
		(void)metrics_counter_add(d->dropped, 1, d->socket, reason, NULL);
	if (d->n_refused == 1)
		ratelimit_init(&d->refusal_log, 1e6 / (double)MSG_REFUSAL_LOG_USEC, MSG_REFUSAL_LOG_BURST,
			       now);
	if (!ratelimit_try(&d->refusal_log, now)) {
		d->refusals_unlogged++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (d->refusals_unlogged)
		log_error("refusing peer %s pid %u on %s: %s (and %u more refused since the last such "
			  "line)", proto_process_name(h->role) ?: "(unknown role)", h->pid, d->socket,
			  why, d->refusals_unlogged);
	else
		log_error("refusing peer %s pid %u on %s: %s", proto_process_name(h->role) ?:
			  "(unknown role)", h->pid, d->socket, why);
	d->refusals_unlogged = 0;
}

/* A peer's hello, of any major: accepted (and its route run) or refused. */
static int on_hello(struct msg_dispatch *d, const struct proto_msg *m, void *userdata)
{
	const struct proto_hello *h = &m->body.hello;
	const struct msg_route *route;
	uint32_t senders = hello_senders(d, &route);
	enum proto_process want = h->role;
	struct proto_error err;
	bool again;

	if (!senders) {
		refused(d, h, "unexpected_sender", "nobody may send on this socket");
		return 0;
	}
	/* Not one of ours: proto_hello_verify() names the first that is. */
	if (h->role >= 32 || !(senders & MSG_FROM(h->role)))
		for (want = 0; want < 32 && !(senders & MSG_FROM(want)); want++)
			;
	/* The frame's major or the one the hello says: either differs, it is
	 * another release. */
	if (m->version_major != PROTO_VERSION_MAJOR || h->version_major != PROTO_VERSION_MAJOR) {
		bool frame = m->version_major != PROTO_VERSION_MAJOR;

		refused(d, h, "version_mismatch", "it speaks protocol %u.%u, this build %d.%d; run the "
			"same kanna release on every daemon", frame ? m->version_major : h->version_major,
			frame ? m->version_minor : h->version_minor, PROTO_VERSION_MAJOR,
			PROTO_VERSION_MINOR);
		return 0;
	}
	if (proto_hello_verify(m, want, d->n_shards, &err) < 0) {
		refused(d, h, "unexpected_sender", "%s", err.text);
		return 0;
	}
	again = d->n_hellos > 0 && d->peer_role == h->role && d->peer_pid == h->pid;
	d->n_hellos++;
	d->peer_role = h->role;
	d->peer_pid = h->pid;
	if (h->n_shards > 1)
		log_at(again ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO, 0, NULL, 0,
			 "peer %s %u/%u (pid %u, %s) connected on %s, protocol %u.%u",
			 proto_process_name(h->role), h->shard, h->n_shards, h->pid,
			 h->instance ?: "-", d->socket, h->version_major, h->version_minor);
	else
		log_at(again ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO, 0, NULL, 0,
			 "peer %s (pid %u, %s) connected on %s, protocol %u.%u",
			 proto_process_name(h->role), h->pid, h->instance ?: "-", d->socket,
			 h->version_major, h->version_minor);
	return route && route->handle ? route->handle(m, userdata) : 0;
}

/* The message handled (or dropped): its frame and decoded memory go. */
static void dispatched(struct msg_dispatch *d, struct sock_msg *msg)
{
	sock_msg_close(msg);
	proto_decoder_release(d->io->decoder);
}

int msg_dispatch(struct msg_dispatch *d, struct sock *sk, void *userdata)
{
	const struct proto_msg *m;
	const struct msg_route *route = NULL;
	struct sock_msg msg;
	int r = sock_recv(sk, &msg, ZMQ_DONTWAIT);

	if (r < 0)
		return r == -EAGAIN ? 0 : r;
	r = msg_decode(d->io, &msg, &m);
	if (r < 0 && d->io->last_error.code == PROTO_E_VERSION) {
		size_t size;
		const void *body = sock_msg_body(&msg, &size);
		struct proto_error err;

		/* Another release's daemon: refused whole, said plainly; by
		 * name if this is its hello. */
		if (proto_decode_hello(d->io->decoder, body, size, &m, &err) >= 0)
			(void)on_hello(d, m, userdata);
		else
			dropped(d, "version_mismatch", "a peer speaks another protocol: %s; run the "
				"same kanna release on every daemon", d->io->last_error.text);
		dispatched(d, &msg);
		return 0;
	}
	if (r < 0) {
		dropped(d, "undecodable", "%s", d->io->last_error.text);
		dispatched(d, &msg);
		return 0;
	}
	d->msg = &msg;
	count_message(d->socket, m->env.type, "received");
	if (m->env.type == PROTO_MSG_HELLO) {
		r = on_hello(d, m, userdata);
		d->msg = NULL;
		dispatched(d, &msg);
		return r;
	}
	for (size_t i = 0; i < d->n_routes && !route; i++)
		if (d->routes[i].type == m->env.type)
			route = &d->routes[i];
	if (!route) {
		dropped(d, "unexpected_type", "a %s message from %s, which this socket does not take",
			proto_type_name(m->env.type) ?: "?", proto_process_name(m->env.sender) ?: "?");
		r = 0;
	} else if (route->senders && (m->env.sender >= 32 || !(route->senders & MSG_FROM(m->env.sender)))) {
		dropped(d, "unexpected_sender", "a %s message from %s, which may not send it",
			proto_type_name(m->env.type) ?: "?", proto_process_name(m->env.sender) ?: "?");
		r = 0;
	} else {
		r = route->handle(m, userdata);
	}
	d->msg = NULL;
	dispatched(d, &msg);
	return r;
}
