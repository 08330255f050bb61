/*
 * The watcher's side of cluster-state replication (ZeroMQ guide "Clone"):
 * the authoritative store, deltas on state.pub with gap-free sequence
 * numbers, snapshots on state.sync for replicas that start or lose a delta.
 *
 * Sequence numbers start at the watcher's start time in microseconds, so a
 * restarted watcher's first delta is far ahead of any replica's position:
 * replicas see a gap and take a fresh snapshot instead of ignoring the new
 * numbering as old news.
 */
#ifndef KANNA_WATCHER_PUBLISH_H
#define KANNA_WATCHER_PUBLISH_H

#include "state/endpoints.h"
#include "state/msg.h"
#include "state/state-store.h"

/* Snapshot items sent per loop turn, so probes and deltas are not starved. */
#define PUBLISH_SNAPSHOT_SLICE 2000
/* When every replica's queue is full, the next slice waits this long: a
 * replica takes ~2 us an item, so its 2,000-item queue (REPLICA_SYNC_RCVHWM)
 * drains in a few ms. */
#define PUBLISH_SNAPSHOT_WAIT_USEC 500
/* Snapshot items queued per replica on the watcher's side: with the
 * sockets' usual SOCK_HWM (100,000) a whole snapshot could sit encoded in
 * the queue of a replica that reads slower than the watcher sends (the
 * bench saw +7 MB); the walk over the store resumes when there is room. */
#define PUBLISH_SYNC_SNDHWM 2000
/* Heartbeats carry the latest seq so quiet replicas still notice gaps. */
#define PUBLISH_HEARTBEAT_USEC (1000ULL * 1000)
/* Snapshot requests held before the first complete list: one per replica
 * process (a few dozen); beyond this they are dropped and asked again. */
#define PUBLISH_MAX_HELD_REQUESTS 1024

struct publisher;

int publisher_new(struct publisher **ret, struct sock_ctx *ctx, struct loop *loop,
		  const char *pub_endpoint, const char *sync_endpoint);
struct publisher *publisher_free(struct publisher *p);
/* Counts the state.sync requests it drops (and the replicas' hellos it
 * refuses) in kanna_messages_dropped_total (msg_dropped_metric_new()). */
void publisher_count_drops(struct publisher *p, struct metrics_counter *dropped);

/*
 * Applies one change and, if it changed anything, publishes it: 1, 0 (no
 * change), or a negative errno with nothing changed (-EBADMSG/-EMSGSIZE: the
 * object cannot go on the wire, logged).
 */
int publisher_apply(struct publisher *p, enum proto_delta_op op, const struct proto_object *obj);
/* Deletes the object stored under key ("pod/default/web-1"), if any, as
 * publisher_apply() would: 1, 0 (absent), or a negative errno. */
int publisher_delete(struct publisher *p, const char *key);
/*
 * The store now holds the whole cluster (every collection's first LIST is
 * in): held snapshot requests are answered and deltas go out from here on.
 * Before this, replicas asking for a snapshot wait, so that none reports
 * itself synced with part of the cluster.
 */
int publisher_set_complete(struct publisher *p);
bool publisher_complete(const struct publisher *p);
struct state_store *publisher_store(struct publisher *p);
uint64_t publisher_seq(const struct publisher *p);

struct publisher_stats {
	uint64_t deltas, snapshots, snapshot_items, bad_requests;
};
void publisher_get_stats(const struct publisher *p, struct publisher_stats *ret);

#endif
