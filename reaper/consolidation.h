/*
 * Consolidation's search (consolidation-search.c), pure computation over a
 * cluster model: order the candidates by disruption cost, then find the
 * command Karpenter v1 would take — multi-node first (the largest prefix of
 * the candidates whose pods fit on the other nodes plus at most one new
 * NodeClaim cheaper than them), then single-node (the first candidate that
 * can be deleted, or replaced by one strictly cheaper NodeClaim), a replace
 * saving at least the NodePools' minimum savings (kanna's). It runs
 * on the reaper's worker thread (consolidation.c) and in unit tests; it
 * reads nothing but its arguments.
 *
 * Upstream: kubernetes-sigs/karpenter pkg/controllers/disruption/
 * consolidation.go (computeConsolidation, computeSpotToSpotConsolidation),
 * multinodeconsolidation.go (firstNConsolidationOption, filterOutSameType),
 * singlenodeconsolidation.go, and pkg/utils/disruption/disruption.go
 * (EvictionCost, LifetimeRemaining).
 */
#ifndef KANNA_REAPER_CONSOLIDATION_H
#define KANNA_REAPER_CONSOLIDATION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "model/budget.h"
#include "model/what-if.h"

/* Multi-node consolidation looks at no more than this many candidates at
 * once (Karpenter: "a maximum batch of 100 NodeClaims to save on
 * computation", multinodeconsolidation.go). */
#define CONSOLIDATION_MAX_MULTI 100
/* Spot-to-spot single-node consolidation needs this many instance types
 * cheaper than the candidate, and launches from the cheapest this many, so
 * that the launched type is among them and not consolidated again at once
 * (Karpenter's MinInstanceTypesForSpotToSpotConsolidation). */
#define CONSOLIDATION_MIN_SPOT_TYPES 15
/* A pod's eviction cost is clamped to this, either sign (EvictionCost). */
#define EVICTION_COST_CLAMP 10.0
/* The most new NodeClaims 1→N consolidation replaces one node with: more
 * would trade one node's cost for many launches and much churn. */
#define CONSOLIDATION_MAX_SPLIT 4
/* Room for why a candidate was not consolidated. */
#define CONSOLIDATION_WHY_LEN 256
/* consolidationPolicy Balanced (Karpenter core v1.14, kubernetes-sigs/
 * karpenter pkg/controllers/disruption/balanced.go, pkg/apis/v1/nodepool.go
 * BalancedK): a move of a Balanced pool's nodes goes only when
 * (savings / the pool's cost) / (its disruption cost / the pool's)
 * is at least 1/k — savings must justify the disruption. */
#define CONSOLIDATION_BALANCED_K 2

/* A pool's totals the Balanced score normalizes by (computeNodePoolTotals). */
struct consolidation_balanced {
	bool on;                 /* the pool's policy is Balanced */
	double total_cost;       /* $/hour of its nodes */
	double total_disruption; /* the sum of its nodes' reschedule costs */
};

struct consolidation_candidate {
	uint32_t node;   /* index into the cluster's nodes */
	uint32_t pool;   /* index into consolidation_options.budget */
	uint32_t n_pods; /* pods that would move */
	double cost;     /* disruption cost: sum of eviction costs × lifetime left */
	double price;    /* $/hour (cluster_node_price()), <= 0 unknown */
	/* Balanced: candidate_reschedule_cost() (no lifetime scaling). */
	double reschedule_cost;
	bool spot;
};

struct consolidation_options {
	/* Nodes being disrupted already: their pods need places too. */
	const uint32_t *also_removed;
	uint32_t n_also_removed;
	/* Per pool: how many more nodes reason Underutilized may take. */
	const uint32_t *budget;
	uint32_t n_pools;
	/* Per pool (NULL: none): no replace saves less than this; a command
	 * over several pools takes the highest of theirs. Deletes always go. */
	const struct min_savings *min_savings;
	/* Per pool (NULL: none Balanced): a command moving a Balanced pool's
	 * nodes goes only when its score reaches 1/CONSOLIDATION_BALANCED_K. */
	const struct consolidation_balanced *balanced;
	bool spot_to_spot; /* the SpotToSpotConsolidation feature gate */
	/* Single-node may replace one node by up to this many new NodeClaims
	 * that together cost less (1→N, kanna's; 0 or 1: Karpenter's one). */
	uint32_t max_split;
	uint64_t deadline_usec; /* CLOCK_MONOTONIC, 0: none */
	const atomic_bool *cancel;
};

enum consolidation_method {
	CONSOLIDATION_NONE,
	CONSOLIDATION_MULTI,
	CONSOLIDATION_SINGLE,
};

struct consolidation_command {
	enum consolidation_method method;
	uint32_t *candidates;   /* indexes into the candidate array */
	uint32_t n_candidates;
	/* The what-if that decided it: placement->claims is the replacement
	 * (0: delete, 1: replace), its types cheaper than the candidates. */
	struct what_if_result res;
	double removed_price, added_price, savings; /* $/hour */
	bool stopped;           /* deadline or cancel: nothing decided */
	/* Per candidate (same index as the array): why single-node did not
	 * take it, "" when it was not looked at or was taken. */
	char (*why)[CONSOLIDATION_WHY_LEN];
	/* The search's own: the model as it found it, put back after every
	 * what-if (per pod its node, per node its removed mark). */
	uint32_t *pod_node;
	bool *node_removed;
};

/* Karpenter's EvictionCost of a pod without a pod deletion cost: 1 +
 * priority / 2^25, in [-10, 10]. The candidates' costs come from
 * candidate_eviction_cost() (reaper/candidate.h), which adds the pod
 * deletion cost. */
double consolidation_eviction_cost(int32_t priority);
/* LifetimeRemaining: the fraction of expire_after_s left at age_s, in
 * [0, 1]; 1 when expire_after_s <= 0 (Never). */
double consolidation_lifetime_remaining(int64_t age_s, int64_t expire_after_s);
/* Karpenter's ScoreMove(): (savings / b->total_cost) / (disruption /
 * b->total_disruption); 0 when savings or a total is not positive,
 * infinite when the move disrupts nothing. */
double consolidation_balanced_score(double savings, double disruption,
				    const struct consolidation_balanced *b);
/* Orders candidates by disruption cost, cheapest first (stable on node). */
void consolidation_sort(struct consolidation_candidate *v, uint32_t n);

/* The command to take now (method NONE: none). c is restored after every
 * what-if; cmd must be released with consolidation_command_done(). */
int consolidation_compute(struct cluster *c, const struct consolidation_candidate *v, uint32_t n,
			  const struct consolidation_options *o, struct consolidation_command *cmd);
/* One method alone, as consolidation_compute() runs it (the benchmark
 * times each): multi-node's whole binary search, or single-node's scan. */
int consolidation_compute_multi(struct cluster *c, const struct consolidation_candidate *v,
				uint32_t n, const struct consolidation_options *o,
				struct consolidation_command *cmd);
int consolidation_compute_single(struct cluster *c, const struct consolidation_candidate *v,
				 uint32_t n, const struct consolidation_options *o,
				 struct consolidation_command *cmd);
/* Re-checks a command on a fresh model (validation): all n candidates
 * must still go together, deleted or replaced by one cheaper NodeClaim;
 * cmd->method is NONE (with why[0]) when they no longer can. */
int consolidation_validate(struct cluster *c, const struct consolidation_candidate *v, uint32_t n,
			   const struct consolidation_options *o, struct consolidation_command *cmd);
void consolidation_command_done(struct consolidation_command *cmd);

#endif
