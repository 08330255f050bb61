/*
 * Proto messages over kanna sockets (see msg.h). The encode buffer is
 * reused for every send, so steady-state sending does not allocate.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "state/msg.h"

_Static_assert(SOCK_MAXMSGSIZE == PROTO_MAX_FRAME_BYTES,
	       "sockets must take exactly the largest frame the codec makes");

int msg_io_init(struct msg_io *io, enum proto_process self, uint32_t shard)
{
	*io = (struct msg_io){ .self = self, .shard = shard };
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
	msgpack_sbuffer_clear(&io->buf);
	r = proto_encode(msg, &io->buf, &io->last_error);
	return r;
}

int msg_send_encoded(struct msg_io *io, struct sock *s, int flags)
{
	int r = sock_send(s, io->buf.data, io->buf.size, flags);

	if (r >= 0)
		io->sent++;
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
	if (r >= 0)
		io->sent++;
	return r;
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
		/* Another release's daemon: refused whole, said plainly. */
		dropped(d, "version_mismatch", "a peer speaks another protocol: %s; run the same "
			"kanna release on every daemon", d->io->last_error.text);
		sock_msg_close(&msg);
		return 0;
	}
	if (r < 0) {
		dropped(d, "undecodable", "%s", d->io->last_error.text);
		sock_msg_close(&msg);
		return 0;
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
	sock_msg_close(&msg);
	return r;
}
