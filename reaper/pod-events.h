/*
 * The last pod event of a NodeClaim: when the set of pods on its Node last
 * changed (a pod bound, gone, or finished). Karpenter v1 keeps it in the
 * NodeClaim's status.lastPodEventTime (kubernetes-sigs/karpenter
 * pkg/controllers/nodeclaim/podevents/controller.go) and measures both
 * emptiness and consolidateAfter from it (pkg/utils/disruption/
 * disruption.go, pkg/controllers/nodeclaim/disruption/consolidation.go).
 * The reaper does the same, so that its clocks survive a restart:
 * disruption.c (emptiness) and consolidation.c (consolidateAfter) read
 * pod_event_age_usec(); disruption_pass() calls pod_events_pass() first.
 *
 * pod_event_observe() is the decision alone (pure, unit-tested): in
 * memory the time is monotonic (for intervals), on the NodeClaim wall
 * clock in whole seconds (RFC 3339, as metav1.Time writes it).
 */
#ifndef KANNA_REAPER_POD_EVENTS_H
#define KANNA_REAPER_POD_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

/* Karpenter's dedupeTimeout: the NodeClaim is written at most this often
 * (busy nodes change pods all the time). Karpenter drops an event inside
 * the window; here the latest one is written once the window is over, so
 * the record lags by at most this much. */
#define POD_EVENT_DEDUPE_MS 10000

struct pod_event_clock {
	bool seen;
	uint64_t pods_hash;  /* the pods counted when last looked at */
	uint64_t last_usec;  /* monotonic: the last pod event */
	int64_t last_ms;     /* the same, wall clock, whole seconds */
	int64_t written_ms;  /* what the NodeClaim holds (read or patched; 0: nothing) */
	int64_t sending_ms;  /* what the PATCH in flight writes */
	bool patch_sent;     /* a PATCH in flight */
};

/* What a pass sees of one NodeClaim and its Node. */
struct pod_event_sight {
	int64_t recorded_ms;    /* its status.lastPodEventTime (0: unset) */
	uint64_t pods_hash;     /* the pods counted on its Node */
	int64_t newest_bind_ms; /* the latest of their bind (else creation) times */
	bool nominated;         /* pods on their way to it: an event now,
				 * written once they stop coming (it is no
				 * candidate meanwhile, restarted or not) */
	int64_t now_ms;         /* wall clock */
	uint64_t now_usec;      /* monotonic */
};

/* Advances c by what s shows. True when the NodeClaim's lastPodEventTime
 * should be patched to c->last_ms now. On first sight the record is
 * trusted, moved on to the bind time of a pod bound after it (while no
 * reaper ran); without a record the event is now — never earlier than it
 * could have been. */
bool pod_event_observe(struct pod_event_clock *c, const struct pod_event_sight *s);
/* Time since the last pod event (monotonic; 0 before pod_event_observe()). */
uint64_t pod_event_age_usec(const struct pod_event_clock *c, uint64_t now_usec);

struct state_store;
/* The pods on a node that count (those a disruption would move: not
 * DaemonSet, mirror, finished or leaving), as one order-free hash, and the
 * latest time one of them was bound (else created): a sight's pods_hash
 * and newest_bind_ms, for the daemon's pass and --what-if alike. */
uint64_t pod_events_pods_on(const struct state_store *store, const char *node, int64_t *newest_bind_ms);

#endif
