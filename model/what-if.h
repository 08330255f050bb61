/*
 * The solver's what-if, the question consolidation asks (Karpenter's
 * SimulateScheduling): take these nodes away — where would their pods go,
 * onto the nodes that remain and at most N new NodeClaims that together
 * cost less than the nodes removed, and what would it save? Same solver,
 * same predicates as the scheduler's, so a decision to consolidate can
 * never rest on a placement the scheduler would not make.
 *
 * It works on the cluster it is given (marks nodes removed, makes their
 * pods pending): build one model per question.
 */
#ifndef KANNA_MODEL_WHAT_IF_H
#define KANNA_MODEL_WHAT_IF_H

#include "model/solver.h"

struct what_if {
	const uint32_t *remove; /* node indexes */
	uint32_t n_remove;
	/* New NodeClaims allowed (Karpenter: 0 for delete, 1 for replace). */
	uint32_t max_new_claims;
	/* The new NodeClaims together must cost less per hour than this.
	 * 0: less than the nodes removed (a replacement must save money);
	 * < 0: no cap. */
	double max_new_price;
	uint64_t deadline_usec; /* CLOCK_MONOTONIC, 0: none (sched_options) */
	const atomic_bool *cancel;
	/*
	 * The cluster's pending pods (without a node before the what-if) go
	 * first, onto what remains and onto no new NodeClaim, and keep that
	 * room (or, placed nowhere, stay out of the question) while the
	 * removed nodes' pods look for theirs. Karpenter's SimulateScheduling
	 * solves every pending pod beside the candidates' (kubernetes-sigs/
	 * karpenter pkg/controllers/disruption/helpers.go), so that a
	 * consolidation never counts on room a pending pod is about to take;
	 * new capacity for them is the scheduler's to plan, so a replacement
	 * never carries them. The model is as before when the call returns.
	 */
	bool pending_first;
};

struct what_if_result {
	/* Every pod of the removed nodes has a place (pending pods of the
	 * cluster are placed too, first come, but need not all fit: they are
	 * not the removed nodes' to carry, as in Karpenter). */
	bool fits;
	bool stopped;                   /* deadline or cancel: nothing decided */
	struct sched_result *placement; /* every pod's bin; claims: the new NodeClaims */
	uint32_t *moved;                /* pods that were on the removed nodes */
	uint32_t n_moved;
	double removed_price, added_price; /* $/hour */
	double cost_delta;              /* added - removed: negative saves money */
	/* When !fits: the first moved pod left without a place, and why. */
	int64_t unplaced_pod;
	const char *reason;
};

int what_if_solve(struct cluster *c, const struct what_if *w, struct what_if_result *ret);
void what_if_result_done(struct what_if_result *r);

/*
 * What node costs per hour: the catalog's offering for its instance type,
 * zone and capacity type labels (available or not: it already runs), or
 * -1 when the catalog does not know it. A node of unknown price is worth
 * nothing to a what-if: it may be deleted, never replaced.
 */
double cluster_node_price(const struct cluster *c, uint32_t node);

#endif
