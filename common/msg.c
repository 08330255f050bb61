/*
 * Proto messages over kanna sockets (see msg.h). The encode buffer is
 * reused for every send, so steady-state sending does not allocate.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/msg.h"

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
