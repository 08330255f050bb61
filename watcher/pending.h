/*
 * Routing of pending pods to scheduler shards (DESIGN §1). A pod is pending
 * when the Kubernetes scheduler marked it PodScheduled=False/Unschedulable,
 * it is not bound, not terminating, not a DaemonSet's or a mirror pod, and
 * no in-flight NodeClaim already has it planned. Pods that constrain each
 * other form a group (same controller, or selected by one another's
 * affinity or topology-spread selectors); a group goes to shard
 * hash(group) mod N whole, so N schedulers never split a constraint.
 * Pending pods are announced again every period until they are bound:
 * level-triggered, a lost message delays a pod but never loses it.
 */
#ifndef KANNA_WATCHER_PENDING_H
#define KANNA_WATCHER_PENDING_H

#include "state/endpoints.h"
#include "state/msg.h"
#include "state/state-store.h"


struct pending_router;

/* Binds PUSH pending.<shard> for each shard; each scheduler that connects
 * is greeted with a hello from io (which must outlive the router). */
int pending_router_new(struct pending_router **ret, struct sock_ctx *ctx, struct msg_io *io,
		       unsigned n_shards);
struct pending_router *pending_router_free(struct pending_router *pr);


/*
 * The shard of every pending pod: out[i] for pods[i]. Exposed for tests.
 * Pods of one group always get the same shard.
 */
int pending_assign_shards(const struct proto_pod *const *pods, size_t n, unsigned n_shards,
			  unsigned *out);

/*
 * The pods to announce (exposed for tests): unschedulable pods (see
 * state_pod_is_unschedulable) minus those planned for a NodeClaim that
 * still speaks for them (state_nodeclaim_holds_planned_pods at now_ms,
 * wall clock). *ret points into s; free() the array.
 */
int pending_collect(const struct state_store *s, int64_t now_ms, const struct proto_pod ***ret,
		    size_t *n);

/*
 * Announces the pods of keys ("namespace/name") still unschedulable, at
 * once: with one shard, those alone (the scheduler's batch adds them to
 * what it holds); with more, every pending pod, as a group's shard
 * depends on the others pending (pending_assign_shards()).
 */
int pending_router_announce_now(struct pending_router *pr, struct msg_io *io,
				const struct state_store *s, char *const *keys, size_t n_keys,
				uint64_t state_seq, int64_t now_ms);

/* Computes the pending pods from the store and sends them to their shards. */
int pending_router_announce(struct pending_router *pr, struct msg_io *io,
			    const struct state_store *s, uint64_t state_seq, int64_t now_ms);

struct pending_stats {
	uint64_t announcements, pods_sent, send_failures;
	uint64_t last_pending;
};
void pending_router_get_stats(const struct pending_router *pr, struct pending_stats *ret);

#endif
