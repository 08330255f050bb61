/*
 * Sending and receiving proto messages on kanna sockets: one encoder buffer
 * and one decoder per process, the envelope filled in (sender, shard, send
 * time, trace id) so handlers only set the type and body. Bad frames are
 * counted and described, never fatal (DESIGN §2.5).
 *
 * Every connection opens with a hello (STYLE 12, proto/README.md): the
 * sending side greets each peer as it connects (msg_hello_on_connect()),
 * and msg_dispatch() checks the hellos it receives, on every socket, before
 * any table lookup: a peer of another protocol major, of a role that may
 * not send on the socket or with another shard count is refused loudly.
 */
#ifndef KANNA_COMMON_MSG_H
#define KANNA_COMMON_MSG_H

#include <msgpack.h>

#include "common/metrics.h"
#include "common/ratelimit.h"
#include "common/sock.h"
#include "proto/proto.h"

/* Room for the hello's instance: gethostname(), as the Lease identity. */
#define MSG_INSTANCE_MAX 256

struct msg_io {
	enum proto_process self;
	uint32_t shard;
	uint32_t n_shards;              /* said in hellos (msg_hello_on_connect()) */
	char instance[MSG_INSTANCE_MAX]; /* said in hellos: this host's name */
	msgpack_sbuffer buf;
	struct proto_decoder *decoder;
	uint64_t sent, received, dropped;
	enum proto_msg_type encoded_type; /* of what io->buf holds */
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
 * Sends this process's hello (role io->self, io->shard of io->n_shards,
 * host name, pid) on s, or after routing frames (a ROUTER's answer).
 */
int msg_send_hello(struct msg_io *io, struct sock *s, int flags);
int msg_send_hello_routed(struct msg_io *io, struct sock *s, const struct iovec *route,
			  size_t n_route, int flags);
/*
 * Greets every peer of s with a hello as it connects, again after it
 * restarts (sock_on_connect(): on an XPUB, as it subscribes). Sets
 * io->n_shards. Call before sock_bind()/sock_connect(); io must outlive s.
 */
int msg_hello_on_connect(struct msg_io *io, struct sock *s, uint32_t n_shards);

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
 *
 * A hello is part of every socket's conversation and needs no route: it
 * is checked with proto_hello_verify() against the roles that may send
 * anything on the socket (the union of the routes' senders; a route for
 * PROTO_MSG_HELLO narrows that to its own, and its handler, if any, runs
 * for each hello accepted) and d->n_shards. Accepted: logged at info
 * "peer <role> (pid, instance) connected on <socket>, protocol X.Y" (at
 * debug when the same peer greets again). Refused: logged as an error
 * "refusing peer <role> pid N on <socket>: ..." (a burst of
 * MSG_REFUSAL_LOG_BURST, then one line every MSG_REFUSAL_LOG_USEC per
 * socket) and counted as a drop, version_mismatch for another major (its
 * hello is read whatever the major: proto_decode_hello()), else
 * unexpected_sender. Messages of another major are dropped whole anyway,
 * whether or not their sender said hello: the hello names the peer, the
 * envelope's version protects the decoder.
 */
/* Refusal lines: enough at once for each of a few peers restarting
 * together, then one a minute while a wrong peer keeps reconnecting. */
#define MSG_REFUSAL_LOG_BURST 5
#define MSG_REFUSAL_LOG_USEC (60ULL * 1000 * 1000)
#define MSG_FROM(p) (1u << (p))

struct msg_route {
	enum proto_msg_type type;
	uint32_t senders;
	/* Returns 0, or a negative errno that the loop reports. May be NULL
	 * on a PROTO_MSG_HELLO route only. */
	int (*handle)(const struct proto_msg *m, void *userdata);
};

struct msg_dispatch {
	const char *socket; /* the label: "pending", "results", "plans", "state" */
	const struct msg_route *routes;
	size_t n_routes;
	struct msg_io *io;
	struct metrics_counter *dropped; /* may be NULL (counted in io->dropped only) */
	uint32_t n_shards;               /* a peer's hello must say this many shards (0: any) */
	uint64_t logged_at;              /* CLOCK_MONOTONIC usec of the last drop logged */
	unsigned unlogged;
	uint64_t n_dropped;              /* every drop, whatever its reason */
	uint64_t n_hellos;               /* hellos accepted */
	uint64_t n_refused;              /* hellos refused */
	/* During a handler: the message's frames (a ROUTER's routing frames first). */
	struct sock_msg *msg;
	/* The refusal lines' budget (set up on the first refusal) and the
	 * last peer accepted, so that its hello again logs at debug only. */
	struct ratelimit refusal_log;
	unsigned refusals_unlogged;
	uint8_t peer_role;
	uint32_t peer_pid;
};

struct metrics_registry;
/* Registers kanna_messages_dropped_total{socket,reason} in reg. */
int msg_dropped_metric_new(struct metrics_registry *reg, struct metrics_counter **ret);
/*
 * Registers kanna_messages_total{socket,type,direction} in reg, the
 * process's registry, once: from then on every message any msg_io of the
 * process sends, and every message a msg_dispatch() takes, is counted;
 * reg must outlive the process's sockets (the daemon skeleton frees it
 * last).
 */
int msg_messages_metric_new(struct metrics_registry *reg);

/* Receives one message from sk and hands it to its route. Returns the
 * handler's result, 0 when nothing was waiting or the message was dropped,
 * or a negative errno from the socket. */
int msg_dispatch(struct msg_dispatch *d, struct sock *sk, void *userdata);

#endif
