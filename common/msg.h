/*
 * Sending and receiving proto messages on kanna sockets: one encoder buffer
 * and one decoder per process, the envelope filled in (sender, shard, send
 * time, trace id) so handlers only set the type and body. Bad frames are
 * counted and described, never fatal (DESIGN §2.5).
 */
#ifndef KANNA_COMMON_MSG_H
#define KANNA_COMMON_MSG_H

#include <msgpack.h>

#include "common/sock.h"
#include "proto/proto.h"

struct msg_io {
	enum proto_process self;
	uint32_t shard;
	msgpack_sbuffer buf;
	struct proto_decoder *decoder;
	uint64_t sent, received, dropped;
	struct proto_error last_error;
};

int msg_io_init(struct msg_io *io, enum proto_process self, uint32_t shard);
void msg_io_done(struct msg_io *io);

/* Fills msg->env (sender, shard, time) and sends it; flags as sock_send(). */
int msg_send(struct msg_io *io, struct sock *s, struct proto_msg *msg, int flags);
/*
 * The two halves of msg_send(), for a sender that must know a message can
 * go before it commits to it: msg_encode() fills msg->env and encodes into
 * io's buffer (-EBADMSG/-EMSGSIZE with io->last_error saying which field);
 * msg_send_encoded() sends that buffer.
 */
int msg_encode(struct msg_io *io, struct proto_msg *msg);
int msg_send_encoded(struct msg_io *io, struct sock *s, int flags);
/* The same, as the last frame after routing frames (ROUTER replies). */
int msg_send_routed(struct msg_io *io, struct sock *s, const struct iovec *route, size_t n_route,
		    struct proto_msg *msg, int flags);
/*
 * Decodes the body of a received message. The result lives until the next
 * msg_decode(). -EBADMSG/-EPROTONOSUPPORT with io->last_error describing it;
 * io->dropped counts them.
 */
int msg_decode(struct msg_io *io, struct sock_msg *m, const struct proto_msg **ret);

#endif
