/*
 * The solver: given a cluster model, decide which pending pods go on
 * existing nodes and which new NodeClaims to launch (first-fit decreasing),
 * with the reason for every pod that cannot be placed. Pure computation
 * over struct cluster; used by --simulate, the benchmark, later the daemon
 * and the reaper's consolidation.
 */
#ifndef KANNA_SCHEDULER_SOLVER_H
#define KANNA_SCHEDULER_SOLVER_H

#include <stdatomic.h>

#include "model/cluster.h"

struct sched_claim {
	uint32_t nodepool;
	struct requirements reqs; /* NodePool ∩ every pod's requirements */
	uint32_t *types;          /* catalog indexes, cheapest first, ≤ 60 */
	uint32_t n_types;
	uint64_t zones;           /* bitmask over catalog zones with an offering */
	unsigned capacity_types;  /* bitmask over CT_* */
	double price;             /* cheapest offering of types[0] */
	struct resources requests; /* pods + DaemonSet overhead */
	uint32_t *pods;           /* pod indexes */
	uint32_t n_pods;
};

struct sched_unschedulable {
	uint32_t pod;
	char *reason;
};

struct sched_result {
	struct sched_claim *claims;
	uint32_t n_claims;
	/* Per pod: -1 unplaced, < n_nodes an existing node, else n_nodes + claim. */
	int32_t *pod_bin;
	uint32_t n_nodes;
	struct sched_unschedulable *unschedulable;
	uint32_t n_unschedulable;
	/* The solve stopped at its deadline (or was cancelled): these pods were
	 * still waiting their turn. They are not unschedulable, only not tried;
	 * the caller offers them to the next solve. */
	bool stopped;
	uint32_t *deferred;
	uint32_t n_deferred;
};

/*
 * How a solve may run. Zeroed: no deadline, no limit (sched_solve()).
 * - deadline_usec (CLOCK_MONOTONIC): Karpenter cuts a Solve after a minute
 *   and launches what it has; here too, the pods not yet placed when the
 *   clock passes it come back as deferred.
 * - cancel: another thread sets it to stop the solve the same way (a
 *   daemon shutting down does not wait for a long solve).
 * - max_new_claims (with limit_new_claims): at most this many NodeClaims
 *   are opened; max_new_price (> 0): no NodeClaim whose cheapest fitting
 *   offering costs this much per hour or more — consolidation's question,
 *   "is there a cheaper way to hold these pods?".
 */
struct sched_options {
	uint64_t deadline_usec;
	const atomic_bool *cancel;
	bool limit_new_claims;
	uint32_t max_new_claims;
	double max_new_price;
};

int sched_solve(struct cluster *c, struct sched_result **ret);
int sched_solve_with(struct cluster *c, const struct sched_options *o, struct sched_result **ret);
void sched_result_free(struct sched_result *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct sched_result *, sched_result_free);

/* Why a pod does not fit a node: one sentence. */
#define SCHED_CHECK_REASON_MAX 384

struct sched_node_fit {
	bool fits;
	char reason[SCHED_CHECK_REASON_MAX]; /* when it does not */
};

/*
 * The what-if of one node (node-check.c), for the launcher just before it
 * binds: would the pending pods pods[0..n), bound to existing node `node`
 * one after another in this order, each fit there? With the solver's own
 * predicates: allocatable left after every pod bound there and the pods
 * accepted before it, host ports, taints, node selector and required node
 * affinity (any one term), required pod (anti-)affinity and topology
 * spread against the pods counted. Preferences never refuse. A pod that
 * fits counts for those after it; one that does not is left out.
 * Fills ret[0..n); returns 0 or a negative errno.
 */
int sched_check_node(struct cluster *c, uint32_t node, const uint32_t *pods, uint32_t n,
		     struct sched_node_fit *ret);

#endif
