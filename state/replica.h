/*
 * A local replica of cluster state for the scheduler, launcher and reaper
 * (the subscriber side of the ZeroMQ guide's "Clone" pattern): subscribe to
 * state.pub first, ask state.sync for a snapshot, buffer deltas meanwhile,
 * then apply the ones newer than the snapshot in order. A gap in sequence
 * numbers (a lost delta, or a restarted watcher) starts a new snapshot.
 * Consumers read the store and may watch changes through a callback.
 */
#ifndef KANNA_COMMON_REPLICA_H
#define KANNA_COMMON_REPLICA_H

#include "state/endpoints.h"
#include "state/msg.h"
#include "state/state-store.h"

/* Nothing of the snapshot arrived in this long: ask again (the watcher may
 * be restarting, or still listing the cluster: it holds requests until its
 * first list is complete). A snapshot still arriving is waited for. */
#define REPLICA_SNAPSHOT_TIMEOUT_USEC (5ULL * 1000 * 1000)
/* Snapshot items queued in this process before the watcher waits to send
 * more: a snapshot comes in one burst, and without this bound all of it
 * (100k objects, tens of MB) would sit in this socket's queue beside the
 * store being loaded. */
#define REPLICA_SYNC_RCVHWM 2000
/* Deltas held while a snapshot is in flight; beyond this, start over. */
#define REPLICA_MAX_BUFFERED 1000000

struct replica_handlers {
	/* A change was applied (after the replica is synced). old may be NULL
	 * (add) and now NULL (delete); both are valid only during the call. */
	void (*on_change)(enum proto_delta_op op, const struct proto_object *old,
			  const struct proto_object *now, void *userdata);
	/* The replica (re)loaded a snapshot and is consistent as of seq. */
	void (*on_synced)(uint64_t seq, void *userdata);
	void *userdata;
};

struct replica;

int replica_new(struct replica **ret, struct sock_ctx *ctx, struct loop *loop,
		enum proto_process self, const char *pub_endpoint, const char *sync_endpoint,
		const struct replica_handlers *h);
struct replica *replica_free(struct replica *r);
/* Counts the messages on state.pub it drops in kanna_messages_dropped_total
 * (msg_dropped_metric_new()); without one they are logged only. */
void replica_count_drops(struct replica *r, struct metrics_counter *dropped);
/* Registers kanna_replica_lag_seconds in reg and keeps it: how old the
 * watcher's last delta or in-step heartbeat was when applied here. */
int replica_lag_metric_new(struct replica *r, struct metrics_registry *reg);

bool replica_synced(const struct replica *r);
/* Monotonic time the replica last knew itself current: a snapshot loaded,
 * a delta applied, or a heartbeat of the watcher at its own sequence number
 * (every PUBLISH_HEARTBEAT_USEC, 1 s). 0 while not synced. A consumer that
 * acts on the absence of an object (the reaper's garbage collection) checks
 * it: with the watcher gone, the replica still looks synced but ages. */
uint64_t replica_current_usec(const struct replica *r);
const struct state_store *replica_store(const struct replica *r);

struct replica_stats {
	uint64_t deltas, snapshots, gaps, duplicates, bad_messages;
	uint64_t hellos; /* the watcher's, accepted: on state.pub and each state.sync */
};
void replica_get_stats(const struct replica *r, struct replica_stats *ret);

#endif
