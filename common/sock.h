/*
 * ZeroMQ sockets the kanna way: endpoints live in one runtime directory,
 * every socket gets the same named limits (HWM, ZMQ_MAXMSGSIZE, linger,
 * reconnect backoff), and every message sent or received through this
 * wrapper is copied to the process's tap while someone listens.
 *
 * Runtime directory: the caller's override, else $RUNTIME_DIRECTORY (first
 * entry, as systemd's RuntimeDirectory= sets it), else /run/kanna; created
 * with mode 0750 if missing; a daemon refuses one others may write
 * (sock_runtime_dir_check()). Endpoint of socket name N: ipc://<dir>/N.sock.
 *
 * Tap wire format (kanna-tap reads this):
 *   every process binds one XPUB socket at ipc://<runtime_dir>/<process>.tap
 *   and, only while at least one subscriber is attached, publishes a copy of
 *   every message that passes through sock_send*() / sock_recv():
 *     frame 0:    ASCII "<dir> <socket-name> <unix-time-usec>", where dir is
 *                 "send" or "recv", socket-name the name given to sock_new()
 *                 and unix-time-usec CLOCK_REALTIME in microseconds (decimal)
 *                 e.g. "send pending.0 1763850123456789";
 *     frame 1..n: the message's frames, byte for byte. An ordinary
 *                 (single-frame) message therefore gives exactly 2 frames;
 *                 a ROUTER/DEALER message carries its routing frames first,
 *                 so the payload (the msgpack body) is always the LAST frame.
 *   Subscribers may filter by prefix of frame 0 ("send", "recv", or e.g.
 *   "recv state.pub"); subscribing to "" gets everything. The tap never
 *   blocks the daemon: when a reader is slow, copies are dropped at the
 *   XPUB's SOCK_TAP_HWM. With no subscriber attached a send/recv costs one
 *   branch more than a bare zmq_msg_send().
 */
#ifndef KANNA_COMMON_SOCK_H
#define KANNA_COMMON_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <zmq.h>

#include "common/loop.h"
#include "common/util.h"

#include <sys/types.h>

struct metrics_counter;
struct metrics_registry;

#define SOCK_RUNTIME_DIR_DEFAULT "/run/kanna"
/* Only the owning user and its group (the kanna daemons) reach the sockets. */
#define SOCK_RUNTIME_DIR_MODE 0750

/*
 * Send and receive high-water mark, in messages. Messages are hints that a
 * level-triggered receiver can lose (DESIGN §2.4), but a burst of pending
 * pods or state deltas for a few-thousand-node cluster must fit without
 * drops in normal operation: 100k small messages is a few tens of MB.
 */
#define SOCK_HWM 100000
/*
 * Largest message a socket accepts: the largest frame the codec may
 * produce, proto's PROTO_MAX_FRAME_BYTES (proto/ sits above common/:
 * state/msg.c asserts that they agree). A snapshot travels as one item per
 * message, so no message is bigger; a bigger one is a bug or an attack and
 * the peer is disconnected.
 */
#define SOCK_MAXMSGSIZE ((int64_t)16 * 1024 * 1024)
/*
 * How long zmq_close()/context shutdown may keep flushing queued messages:
 * long enough for a clean handover on SIGTERM, short enough that a stop
 * never hangs on a peer that is gone (everything is re-derived anyway).
 */
#define SOCK_LINGER_MSEC 1000
/*
 * Reconnect backoff towards a peer that is restarting: first retry fast
 * (systemd restarts a daemon within ~100 ms), then back off to at most 5 s
 * so a long outage does not spin.
 */
#define SOCK_RECONNECT_IVL_MSEC 100
#define SOCK_RECONNECT_IVL_MAX_MSEC 5000
/*
 * Tap copies queued per subscriber before the XPUB drops them: a slow
 * terminal must never make the daemon buffer (or block on) its history.
 */
#define SOCK_TAP_HWM 10000
/* Frames per message accepted by sock_recv(): routing frames + body. */
#define SOCK_MAX_FRAMES 8

/* One per process: ZeroMQ context, runtime directory and the tap. */
struct sock_ctx;

/*
 * Resolves (and creates, 0750) the runtime directory: `override` when not
 * NULL, else $RUNTIME_DIRECTORY, else SOCK_RUNTIME_DIR_DEFAULT.
 */
int sock_runtime_dir(const char *override, char **ret);
/*
 * The same, but a directory it creates is shared by the daemons' users:
 * group `group`, mode 02770 (0750 with SOCK_NO_GROUP). The first daemon of
 * a pod makes it inside the emptyDir the others share.
 */
int sock_runtime_dir_shared(const char *override, gid_t group, char **ret);
/* "ipc://<runtime_dir>/<name>.sock"; a name containing "://" is returned as is. */
int sock_endpoint(const char *runtime_dir, const char *name, char **ret);

/*
 * Creates the process's socket context. runtime_dir as for
 * sock_runtime_dir(). With a loop, binds the tap XPUB at
 * ipc://<runtime_dir>/<process>.tap and watches its subscriptions on the
 * loop; with loop == NULL there is no tap and sock_watch() is unavailable.
 * The loop must outlive the context. `process` must be unique within the
 * runtime directory (e.g. "scheduler-2"): a second bind takes the tap over.
 */
int sock_ctx_new(struct sock_ctx **ret, struct loop *loop, const char *process,
		 const char *runtime_dir);
/* Close every struct sock first: zmq_ctx_term() waits for all of them. */
struct sock_ctx *sock_ctx_free(struct sock_ctx *ctx);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct sock_ctx *, sock_ctx_free);
void *sock_ctx_zmq(struct sock_ctx *ctx);
const char *sock_ctx_runtime_dir(const struct sock_ctx *ctx);
/* True while at least one tap subscription is active. */
bool sock_ctx_tap_attached(const struct sock_ctx *ctx);
/* Messages copied to the tap so far (a metric; 0 while nobody listened). */
uint64_t sock_ctx_tap_copies(const struct sock_ctx *ctx);

/*
 * Who may reach the sockets a daemon binds (common/sock-guard.c; issue 19,
 * "daemons trust no peer"). Files: ipc sockets are made with an explicit
 * mode, not the umask: 0600, or 0660 with their group set to socket_group
 * (the tap: tap_group). Peers: every socket bound on ipc runs libzmq's ZAP
 * handshake (once per connection, nothing per message) against the peer's
 * SO_PEERCRED uid/gid: root and this daemon's own uid are admitted on every
 * socket; an identity (role, uid, gid) also on the sockets that name its role
 * in sock_admit(); members of tap_group on the tap (and sockets admitting
 * SOCK_ROLE_OPERATORS). Any other peer is refused, logged and counted.
 */
#define SOCK_MODE_OWNER 0600
#define SOCK_MODE_GROUP 0660
#define SOCK_NO_GROUP ((gid_t)-1)
/* The sock_admit() role of operators: members of the tap group. */
#define SOCK_ROLE_OPERATORS "operators"

struct sock_identity {
	char role[32];     /* "scheduler" */
	uid_t uid;
	gid_t gid;         /* SOCK_NO_GROUP: any */
};

struct sock_access {
	gid_t socket_group; /* SOCK_NO_GROUP: sockets 0600 */
	gid_t tap_group;    /* SOCK_NO_GROUP: the tap 0600 */
	const struct sock_identity *identities;
	size_t n_identities;
	/* kanna_socket_peers_refused_total{socket,reason}; may be NULL. */
	struct metrics_counter *refused;
};

/* Creates the counter a struct sock_access reports refusals to. */
int sock_refused_metric_new(struct metrics_registry *reg, struct metrics_counter **ret);
/* A user or group by name or number; -ENOENT if there is none. */
int sock_lookup_group(const char *name, gid_t *ret);
/*
 * Parses "ROLE=USER[:GROUP]" entries (ROLE one of watcher, scheduler,
 * launcher, reaper); on error -EINVAL or -ENOENT and err says which entry
 * and why. *ret is malloc'ed.
 */
int sock_identities_parse(char *const *entries, struct sock_identity **ret, size_t *ret_n,
			  char *err, size_t errlen);
/*
 * The runtime directory may hold only sockets this daemon trusts: owned by
 * euid, root or one of the daemons named in a->identities (whichever of a
 * pod's daemons created it), not writable by others, writable by its group
 * only when that group is a->socket_group. -EPERM with err saying path,
 * mode, owner and what was expected.
 */
int sock_runtime_dir_check(const char *dir, const struct sock_access *a, char *err, size_t errlen);

/*
 * As sock_ctx_new(), with the file modes and the peer check of `access`
 * (copied; daemons). The check runs on the loop, so every peer's handshake
 * waits for it: never block on a socket outside the loop. sock_ctx_new()
 * makes sockets 0600 and checks no peer (tests and tools block).
 */
int sock_ctx_new_with_access(struct sock_ctx **ret, struct loop *loop, const char *process,
			     const char *runtime_dir, const struct sock_access *access);
/* Peers refused so far. */
uint64_t sock_ctx_peers_refused(const struct sock_ctx *ctx);

/* One ZeroMQ socket with kanna's options. `name` appears in logs and the tap. */
struct sock;
int sock_new(struct sock **ret, struct sock_ctx *ctx, int zmq_type,
	     const char *name);
/* Stops watching and closes the ZeroMQ socket. */
struct sock *sock_free(struct sock *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct sock *, sock_free);
void *sock_zsock(struct sock *s);
const char *sock_name(const struct sock *s);

/* `endpoint` is a socket name (-> ipc://<runtime_dir>/<name>.sock) or a URL. */
int sock_bind(struct sock *s, const char *endpoint);
/*
 * The roles (comma-separated: "scheduler,reaper", SOCK_ROLE_OPERATORS)
 * whose identities this socket admits besides root and its own uid. Call
 * before sock_bind().
 */
int sock_admit(struct sock *s, const char *roles);
int sock_connect(struct sock *s, const char *endpoint);
/* SUB sockets: prefix filter ("" for everything). */
int sock_subscribe(struct sock *s, const void *prefix, size_t size);

/*
 * Watches the socket on the context's loop: on_readable is called once per
 * pending message and must call sock_recv() once (see loop_add_zsock()).
 */
typedef int (*sock_readable_fn)(struct sock *s, void *userdata);
int sock_watch(struct sock *s, sock_readable_fn on_readable, void *userdata);
int sock_unwatch(struct sock *s);

/*
 * Calls on_connect each time a peer becomes ready to receive what s sends,
 * so that a sender can open every connection with a greeting (STYLE 12):
 * - on an XPUB socket, each subscription a peer sends (the socket is made
 *   ZMQ_XPUB_VERBOSE, so every subscriber's "" counts, not only the
 *   first's): a message sent when the connection opens would be dropped
 *   before the subscription arrives. The socket is watched on the loop to
 *   read the subscription frames (do not sock_watch() it yourself);
 * - on any other socket, each ZeroMQ handshake completed with a peer, as a
 *   socket monitor reports it (ZMQ_EVENT_HANDSHAKE_SUCCEEDED, after
 *   ZMQ_EVENT_CONNECTED or ZMQ_EVENT_ACCEPTED: only then does the peer's
 *   pipe exist, so that a message sent from the callback reaches it),
 *   again after the peer restarts and the connection is made anew.
 * On a PUSH or DEALER socket with several peers, a message sent from the
 * callback goes to whichever peer is next, not necessarily the new one.
 * Call before sock_bind()/sock_connect() so the first connection is seen.
 * Needs the context's loop; -EEXIST when already set.
 */
typedef int (*sock_connect_fn)(struct sock *s, void *userdata);
int sock_on_connect(struct sock *s, sock_connect_fn on_connect, void *userdata);

/*
 * Sends one single-frame message / one multipart message (n frames).
 * flags: 0 or ZMQ_DONTWAIT. Returns 0, -EAGAIN when the HWM is reached with
 * ZMQ_DONTWAIT (or the socket type cannot send now), or another negative errno.
 */
int sock_send(struct sock *s, const void *data, size_t size, int flags);
int sock_send_frames(struct sock *s, const struct iovec *frames, size_t n,
		     int flags);

/* A received message: up to SOCK_MAX_FRAMES frames. */
struct sock_msg {
	zmq_msg_t frames[SOCK_MAX_FRAMES];
	size_t n_frames;
};
/*
 * Receives one whole message. flags: 0 or ZMQ_DONTWAIT (-EAGAIN when none).
 * A message with more than SOCK_MAX_FRAMES frames is consumed and dropped
 * with -EMSGSIZE. On success the caller calls sock_msg_close(msg).
 */
int sock_recv(struct sock *s, struct sock_msg *msg, int flags);
void sock_msg_close(struct sock_msg *msg);
const void *sock_msg_data(struct sock_msg *msg, size_t frame);
size_t sock_msg_size(const struct sock_msg *msg, size_t frame);
/* The body: the last frame. */
const void *sock_msg_body(struct sock_msg *msg, size_t *ret_size);

#endif
