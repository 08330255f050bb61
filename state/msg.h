/*
 * Sending and receiving proto messages on kanna sockets: one encoder buffer
 * and one decoder per process, the envelope filled in (sender, shard, send
 * time, trace id) so handlers only set the type and body. Bad frames are
 * counted and described, never fatal (DESIGN §2.5).
 */
#ifndef KANNA_COMMON_MSG_H
#define KANNA_COMMON_MSG_H

#include <msgpack.h>

#include "common/metrics.h"
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

/*
 * Dispatch by table: for one socket, the message types it takes, who may
 * send each (a bit per enum proto_process; 0: anyone) and the handler.
 * Nothing is dropped silently: a message that cannot be decoded, of a type
 * the socket does not take, or from a sender that may not send it is
 * counted in kanna_messages_dropped_total{socket,reason} (reason:
 * undecodable; version_mismatch, a peer of another protocol major;
 * unexpected_type; unexpected_sender) and logged, at most one
 * line a second per socket with the count of those not logged.
 */
#define MSG_FROM(p) (1u << (p))

struct msg_route {
	enum proto_msg_type type;
	uint32_t senders;
	/* Returns 0, or a negative errno that the loop reports. */
	int (*handle)(const struct proto_msg *m, void *userdata);
};

struct msg_dispatch {
	const char *socket; /* the label: "pending", "results", "plans", "state" */
	const struct msg_route *routes;
	size_t n_routes;
	struct msg_io *io;
	struct metrics_counter *dropped; /* may be NULL (counted in io->dropped only) */
	uint64_t logged_at;              /* CLOCK_MONOTONIC usec of the last drop logged */
	unsigned unlogged;
	uint64_t n_dropped;              /* every drop, whatever its reason */
};

struct metrics_registry;
/* Registers kanna_messages_dropped_total{socket,reason} in reg. */
int msg_dropped_metric_new(struct metrics_registry *reg, struct metrics_counter **ret);

/* Receives one message from sk and hands it to its route. Returns the
 * handler's result, 0 when nothing was waiting or the message was dropped,
 * or a negative errno from the socket. */
int msg_dispatch(struct msg_dispatch *d, struct sock *sk, void *userdata);

#endif
