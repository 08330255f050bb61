/*
 * The status the watcher writes on NodePools and v1alpha5 Provisioners
 * (DESIGN.md §2 rule 2: the watcher writes status conditions), as
 * Karpenter's nodepool controllers do:
 *  - validation (pkg/controllers/nodepool/validation): ValidationSucceeded,
 *    and kanna's DisruptionBudgetsValid, from the informer's decode;
 *  - readiness (nodepool/readiness): NodeClassReady from the referenced
 *    EC2NodeClass's Ready condition (NodeClassNotFound when it is gone),
 *    and the root condition Ready over ValidationSucceeded and
 *    NodeClassReady (operatorpkg's status.ConditionSet: Ready, or
 *    UnhealthyDependents "NodeClassReady=False");
 *  - counter (nodepool/counter): status.resources, the capacity of the
 *    pool's NodeClaims (their Node's once registered) summed, with cpu,
 *    memory, pods, ephemeral-storage and nodes always present, and
 *    status.nodes (the CRD's scale subresource reads it).
 * Each version gets only what its served CRD's status schema has: v1
 * NodePool everything; v1beta1 NodePool resources; v1alpha5 Provisioner
 * resources and conditions (ValidationSucceeded and Ready; its node class
 * has no Ready condition to follow).
 *
 * The informer reports what it sees (nodepool_status_observe); a periodic
 * flush (the watcher's "nodepool-status" job) recomputes from the watcher's
 * own replica and sends one merge patch per pool whose status differs,
 * never one per event: a storm of NodeClaim changes costs at most one
 * PATCH per pool per period.
 */
#ifndef KANNA_WATCHER_NODEPOOL_STATUS_H
#define KANNA_WATCHER_NODEPOOL_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/kube-client.h"
#include "proto/proto.h"
#include "state/state-store.h"

/* How often the watcher recomputes and writes NodePool status (Karpenter's
 * counter requeues every 5 s; conditions follow within this period). */
#define NODEPOOL_STATUS_PERIOD_USEC (2ULL * 1000 * 1000)
/* A write whose echo has not come back is sent again after this long. */
#define NODEPOOL_STATUS_RESEND_USEC (30ULL * 1000 * 1000)

/* A condition the informer decides (validation). */
struct nodepool_condition {
	const char *type;
	bool ok;
	const char *reason_ok, *reason_failed;
	const char *why; /* the message when not ok */
};

/* One pool's capacity, summed (status.resources). */
struct nodepool_usage {
	struct proto_resource res[PROTO_MAX_RESOURCES];
	uint32_t n_res;
	int64_t nodes;
};

struct nodepool_status;

int nodepool_status_new(struct nodepool_status **ret, struct kube_client *client,
			const struct state_store *store);
struct nodepool_status *nodepool_status_free(struct nodepool_status *s);

/*
 * A NodePool or Provisioner as the API has it now (obj, at collection
 * "/apis/karpenter.sh/v1/nodepools" of api), with the validation
 * conditions its decode gave. nodeclass: its nodeClassRef name, or NULL.
 * kind "NodeOverlay": a NodeOverlay, whose status is its conditions only
 * (want and the Ready over them; no resources, no NodeClassReady).
 */
int nodepool_status_observe(struct nodepool_status *s, const char *kind, const char *collection,
			    enum proto_api_version api, const json_t *obj, const char *nodeclass,
			    const struct nodepool_condition *want, size_t n_want);
void nodepool_status_forget(struct nodepool_status *s, const char *kind, const char *name);
/* Writes the status of every pool whose status differs (synced: the
 * replica holds the whole cluster; before, counts would be too low). */
void nodepool_status_flush(struct nodepool_status *s, bool synced, uint64_t now_usec);

/* ---- pure parts, for tests ---------------------------------------------------------- */

/* The usage of the pool named pool in store. */
int nodepool_usage_of(const struct state_store *store, const char *pool, struct nodepool_usage *ret);
/*
 * The status to merge-patch onto a pool of api, or NULL when observed
 * (its current status) already says so. want: the validation conditions
 * ([{type, status, reason, message}]); nodeclass_ready: the referenced
 * class's Ready (PROTO_COND_*; -1 when the class does not exist) and its
 * message; generation: metadata.generation; now: RFC 3339.
 */
json_t *nodepool_status_patch(enum proto_api_version api, const json_t *want, int nodeclass_ready,
			      const char *nodeclass_why, const struct nodepool_usage *usage,
			      const json_t *observed, int64_t generation, const char *now);
/* The same for a NodeOverlay: want's conditions and Ready, with
 * observedGeneration; NULL when observed already says so. */
json_t *nodeoverlay_status_patch(const json_t *want, const json_t *observed, int64_t generation,
				 const char *now);

#endif
