/*
 * Why a node cannot be a consolidation candidate, and what evicting its
 * pods costs. One answer for the daemon (consolidation.c, once its
 * consolidateAfter clock has run) and for kanna-reaper --what-if
 * (what-if.c), so that they cannot disagree on a candidate or its place
 * in the order. Pure: reads the state store and its arguments, nothing
 * else (no clock, no reaper memory).
 *
 * Upstream: kubernetes-sigs/karpenter pkg/controllers/disruption/types.go
 * (NewCandidate: do-not-disrupt, PDBs), consolidation.go (ShouldDisrupt:
 * the policy), pkg/utils/disruption/disruption.go (EvictionCost,
 * ReschedulingCost, LifetimeRemaining).
 */
#ifndef KANNA_REAPER_CANDIDATE_H
#define KANNA_REAPER_CANDIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/hashmap.h"
#include "model/cluster.h"
#include "proto/proto.h"
#include "state/state-store.h"

/* EvictionCost's scales: the pod deletion cost / 2^27 (its int32 range
 * makes one pod worth about -15 to +17 pods), the priority / 2^25. */
#define CANDIDATE_DELETION_COST_SCALE 134217728.0
#define CANDIDATE_PRIORITY_COST_SCALE 33554432.0

/* consolidateAfter for np's non-empty nodes, in seconds (0: at once), or
 * -1 when np does not consolidate them: v1 WhenEmptyOrUnderutilized with
 * consolidateAfter, v1beta1 WhenUnderutilized and v1alpha5
 * consolidation.enabled (no delay) do; WhenEmpty, v1 WhenUnderutilized
 * (not a v1 policy) and consolidateAfter Never do not. */
int64_t candidate_consolidate_after_s(const struct proto_nodepool *np);

/* The launched (not in-flight) nodes of the model c by name, into the
 * empty index: the value is the node's index in c plus one. Candidates are
 * NodeClaims whose Node is one of them. 0 or -ENOMEM. */
int candidate_node_index(const struct cluster *c, struct hashmap *index);

/* Karpenter's EvictionCost of one pod: 1 + its pod deletion cost / 2^27
 * + its priority / 2^25, clamped to [-10, 10]. */
double candidate_eviction_cost(const struct proto_pod *p);

/* Karpenter's RescheduleDisruptionCost of a node, which the Balanced
 * policy scores moves by: 1 + the positive eviction costs of the pods that
 * would move (neither staying, as DaemonSet pods do, nor terminating). */
double candidate_reschedule_cost(const struct state_store *store, const char *node);

/*
 * The PDBs that allow no disruption now, collected once a pass: each
 * candidate's pods are checked against them, and walking the whole state
 * store for every pod made one pass at 1,000 nodes / 20,000 pods take
 * ~18 s (bench/reaper.sh).
 */
struct candidate_pdbs {
	const struct proto_pdb **v;
	size_t n;
};
int candidate_pdbs_collect(const struct state_store *store, struct candidate_pdbs *out);
void candidate_pdbs_done(struct candidate_pdbs *pdbs);

/*
 * Why node (NodeClaim nc's, of NodePool np) is no consolidation candidate
 * (pdbs: candidate_pdbs_collect()'s of the same store)
 * now, written into buf (len bytes) and returned, with *event the Event
 * reason to tell it by ("Unconsolidatable": the policy, or
 * "DisruptionBlocked": a do-not-disrupt annotation on the NodeClaim, the
 * Node or a pod, or a PDB allowing no disruption of a pod). NULL: it is a
 * candidate, and *cost its disruption cost (the eviction costs of the pods
 * that would move, times the lifetime left of nc at now_ms, Unix ms).
 */
const char *candidate_check(const struct state_store *store, const struct candidate_pdbs *pdbs,
			    const struct proto_nodeclaim *nc,
			    const struct proto_nodepool *np, const struct proto_node *node,
			    int64_t now_ms, const char **event, double *cost, char *buf, size_t len);

/*
 * The pending pods a what-if places first (what_if.pending_first): those
 * kanna would find capacity for now (state_pod_is_unschedulable), less
 * those a NodeClaim still speaks for (cluster_from_state counts them on
 * it). Karpenter's SimulateScheduling adds every pending pod the same way
 * (pkg/controllers/disruption/helpers.go, provisioner.GetPendingPods), so
 * that consolidation never counts on room a pending pod is about to take:
 * during a scale-out, or with the pods of an earlier command still
 * pending. *ret: malloc'd, pointers into the store, valid until it
 * changes; free() it.
 */
int candidate_pending_pods(const struct state_store *store, int64_t now_ms,
			   const struct proto_pod ***ret, size_t *n_ret);

#endif
