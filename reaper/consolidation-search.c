/*
 * Consolidation's search (consolidation.h): Karpenter v1's multi-node and
 * single-node methods over a cluster model, with the solver's what-if
 * (model/what-if.h) as SimulateScheduling. Every what-if marks nodes
 * removed and pods pending; this file puts both back before the next one,
 * so that one model serves the whole search. Pure computation: called on
 * the reaper's worker thread (consolidation.c) and by unit tests.
 * Cleanup style: explicit frees, one exit path per function.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reaper/consolidation.h"

/* A saving equal to the minimum passes: prices are sums of doubles. */
#define MIN_SAVINGS_EPSILON 1e-9
/* EvictionCost's scale: priority / 2^25 (pkg/utils/disruption). */
#define PRIORITY_COST_SCALE 33554432.0

double consolidation_eviction_cost(int32_t priority)
{
	double cost = 1.0 + (double)priority / PRIORITY_COST_SCALE;

	return fmax(-EVICTION_COST_CLAMP, fmin(EVICTION_COST_CLAMP, cost));
}

double consolidation_lifetime_remaining(int64_t age_s, int64_t expire_after_s)
{
	if (expire_after_s <= 0)
		return 1.0;
	return fmax(0.0, fmin(1.0, (double)(expire_after_s - age_s) / (double)expire_after_s));
}

double consolidation_balanced_score(double savings, double disruption,
				    const struct consolidation_balanced *b)
{
	double savings_fraction, disruption_fraction;

	if (b->total_cost <= 0 || b->total_disruption <= 0 || savings <= 0)
		return 0;
	savings_fraction = savings / b->total_cost;
	disruption_fraction = disruption / b->total_disruption;
	return disruption_fraction > 0 ? savings_fraction / disruption_fraction : INFINITY;
}

/*
 * EvaluateBalancedMove: each Balanced pool among candidates idx[0..k)
 * scores the move on its own (its share of the savings, by its share of
 * the removed price, when several pools give nodes) and must approve it.
 * "" in why when every one does.
 */
static void balanced_rule(const struct consolidation_candidate *v, const uint32_t *idx, uint32_t k,
			  const struct consolidation_options *o, double removed, double savings,
			  char *why, size_t len)
{
	for (uint32_t i = 0; o->balanced && i < k && !*why; i++) {
		const struct consolidation_balanced *b = &o->balanced[v[idx[i]].pool];
		double pool_price = 0, disruption = 0, share = savings, score;
		bool seen = false, several = false;

		for (uint32_t j = 0; j < i; j++)
			seen = seen || v[idx[j]].pool == v[idx[i]].pool;
		if (!b->on || seen)
			continue;
		for (uint32_t j = 0; j < k; j++) {
			if (v[idx[j]].pool != v[idx[i]].pool) {
				several = true;
				continue;
			}
			pool_price += fmax(v[idx[j]].price, 0);
			disruption += v[idx[j]].reschedule_cost;
		}
		if (several && removed > 0)
			share = savings * pool_price / removed;
		score = consolidation_balanced_score(share, disruption, b);
		if (score < 1.0 / CONSOLIDATION_BALANCED_K)
			snprintf(why, len, "consolidation score %.3f below the Balanced threshold %.3f "
				 "(saving %.1f%% of its NodePool's cost for %.1f%% of its disruption cost)",
				 score, 1.0 / CONSOLIDATION_BALANCED_K,
				 b->total_cost > 0 ? 100 * share / b->total_cost : 0,
				 b->total_disruption > 0 ? 100 * disruption / b->total_disruption : 0);
	}
}

static int candidate_cmp(const void *a, const void *b)
{
	const struct consolidation_candidate *x = a, *y = b;

	if (x->cost != y->cost)
		return x->cost < y->cost ? -1 : 1;
	return (x->node > y->node) - (x->node < y->node);
}

void consolidation_sort(struct consolidation_candidate *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), candidate_cmp);
}

/* RemoveInstanceTypeOptionsByPrice: keeps the claim's types cheaper than
 * limit (cheapest first, as the solver ordered them). */
static void filter_by_price(const struct cluster *c, struct sched_claim *cl, double limit)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < cl->n_types; i++) {
		double p = catalog_type_price(&c->cat, cl->types[i], cl->zones, cl->capacity_types);
		if (p >= 0 && p < limit)
			cl->types[k++] = cl->types[i];
	}
	cl->n_types = k;
}

/* filterOutSameType: replacing several nodes by one of a type among them
 * must cost less than the cheapest such node, or deleting the others
 * would do (multinodeconsolidation.go). */
static void filter_out_same_type(const struct cluster *c, struct sched_claim *cl,
				 const struct consolidation_candidate *v, const uint32_t *idx, uint32_t k)
{
	double cap = INFINITY;

	for (uint32_t i = 0; i < cl->n_types; i++) {
		uint32_t name = c->cat.types[cl->types[i]].name;
		for (uint32_t j = 0; j < k; j++) {
			const struct node *n = &c->nodes[v[idx[j]].node];
			if (labels_get(n->labels, n->n_labels, K_INSTANCE_TYPE) == name &&
			    v[idx[j]].price > 0 && v[idx[j]].price < cap)
				cap = v[idx[j]].price;
		}
	}
	if (cap < INFINITY)
		filter_by_price(c, cl, cap);
}

/* The model as the search found it (every what-if puts it back): where
 * each pod is bound and which nodes are removed, taken once a search. */
static int snapshot(const struct cluster *c, struct consolidation_command *cmd)
{
	if (cmd->pod_node)
		return 0;
	cmd->pod_node = malloc((c->n_pods + 1) * sizeof(*cmd->pod_node));
	cmd->node_removed = malloc((c->n_nodes + 1) * sizeof(*cmd->node_removed));
	if (!cmd->pod_node || !cmd->node_removed) {
		free(cmd->pod_node);
		free(cmd->node_removed);
		cmd->pod_node = NULL;
		cmd->node_removed = NULL;
		return -ENOMEM;
	}
	for (uint32_t p = 0; p < c->n_pods; p++)
		cmd->pod_node[p] = c->pods[p].node;
	for (uint32_t i = 0; i < c->n_nodes; i++)
		cmd->node_removed[i] = c->nodes[i].removed;
	return 0;
}

/*
 * Runs one what-if over candidates idx[0..k) and puts the model back. A
 * what-if unbinds the pods of the nodes it removes and marks those nodes
 * (model/what-if.c), nothing else: putting back just those keeps a
 * single-node scan at O(moved pods) a question on top of the solve
 * (a copy of every pod's binding was ~6% of each, bench/reaper.sh).
 */
static int simulate(struct cluster *c, const struct consolidation_candidate *v, const uint32_t *idx,
		    uint32_t k, const struct consolidation_options *o, double price, uint32_t n_new,
		    struct consolidation_command *cmd, struct what_if_result *res)
{
	uint32_t n_remove = k + o->n_also_removed, *remove = malloc((n_remove + 1) * sizeof(*remove));
	struct what_if w = { .max_new_claims = price > 0 ? n_new : 0, .max_new_price = price > 0 ? price : -1,
			     .deadline_usec = o->deadline_usec, .cancel = o->cancel, .pending_first = true };
	int r = -ENOMEM;

	if (!remove || (r = snapshot(c, cmd)) < 0)
		goto out;
	for (uint32_t i = 0; i < k; i++)
		remove[i] = v[idx[i]].node;
	for (uint32_t i = 0; i < o->n_also_removed; i++)
		remove[k + i] = o->also_removed[i];
	w.remove = remove;
	w.n_remove = n_remove;
	r = what_if_solve(c, &w, res);
	if (r >= 0)
		for (uint32_t i = 0; i < res->n_moved; i++)
			c->pods[res->moved[i]].node = cmd->pod_node[res->moved[i]];
	else /* which pods moved is lost with the result */
		for (uint32_t p = 0; p < c->n_pods; p++)
			c->pods[p].node = cmd->pod_node[p];
	for (uint32_t i = 0; i < n_remove; i++)
		if (remove[i] < c->n_nodes)
			c->nodes[remove[i]].removed = cmd->node_removed[remove[i]];
out:
	free(remove);
	return r;
}

/* The minimum savings a replace of candidates idx[0..k) (price $/h in
 * all) must make: the highest of their pools' amounts and percentages. */
static double min_savings_of(const struct consolidation_candidate *v, const uint32_t *idx,
			     uint32_t k, const struct consolidation_options *o, double price)
{
	double t = 0;

	for (uint32_t i = 0; o->min_savings && i < k; i++) {
		const struct min_savings *m = &o->min_savings[v[idx[i]].pool];
		t = fmax(t, fmax(m->per_hour, m->percent / 100.0 * price));
	}
	return t;
}

/* Keeps the types that save at least min (kanna's minimum savings); "" in
 * why unless none does. */
static void min_savings_rule(const struct cluster *c, struct sched_claim *cl, double price,
			     double min, char *why, size_t len)
{
	double best = INFINITY;

	if (min <= 0)
		return;
	for (uint32_t i = 0; i < cl->n_types; i++)
		best = fmin(best, catalog_type_price(&c->cat, cl->types[i], cl->zones,
						     cl->capacity_types));
	if (price - best < min - MIN_SAVINGS_EPSILON) {
		snprintf(why, len, "replacement not cheaper enough (saving $%.4f/h below threshold "
			 "$%.4f/h)", price - best, min);
		return;
	}
	filter_by_price(c, cl, price - min + MIN_SAVINGS_EPSILON);
}

/* The spot and price rules of computeConsolidation over the one new
 * NodeClaim; "" in why when it stands. */
static void price_rules(const struct cluster *c, struct sched_claim *cl,
			const struct consolidation_candidate *v, const uint32_t *idx, uint32_t k,
			const struct consolidation_options *o, double price, char *why, size_t len)
{
	bool all_spot = true;

	for (uint32_t i = 0; i < k; i++)
		all_spot = all_spot && v[idx[i]].spot;
	if (all_spot && cl->capacity_types & 1u << CT_SPOT) {
		if (!o->spot_to_spot) {
			snprintf(why, len, "SpotToSpotConsolidation is disabled, can't replace a spot "
				 "node with a spot node");
			return;
		}
		cl->capacity_types = 1u << CT_SPOT;
	}
	filter_by_price(c, cl, price);
	if (k > 1)
		filter_out_same_type(c, cl, v, idx, k);
	if (cl->n_types == 0) {
		snprintf(why, len, "Can't replace with a cheaper node");
		return;
	}
	min_savings_rule(c, cl, price, min_savings_of(v, idx, k, o, price), why, len);
	if (*why)
		return;
	if (all_spot && k == 1) {
		if (cl->n_types < CONSOLIDATION_MIN_SPOT_TYPES) {
			snprintf(why, len, "SpotToSpotConsolidation requires %d cheaper instance type "
				 "options than the current candidate to consolidate, got %u",
				 CONSOLIDATION_MIN_SPOT_TYPES, cl->n_types);
			return;
		}
		cl->n_types = CONSOLIDATION_MIN_SPOT_TYPES;
	}
	/* On-demand to [on-demand, spot]: the types were judged at their spot
	 * price, so the replacement must be spot — should spot be short, the
	 * launch fails and the node stays, rather than a dearer on-demand node
	 * replacing it (computeConsolidation). */
	if (!all_spot && cl->capacity_types & 1u << CT_SPOT && cl->capacity_types & 1u << CT_ON_DEMAND)
		cl->capacity_types = 1u << CT_SPOT;
	cl->price = catalog_type_price(&c->cat, cl->types[0], cl->zones, cl->capacity_types);
}

/* 1→N (kanna's, beyond Karpenter): several new NodeClaims for one
 * on-demand candidate, together cheaper than it by the minimum savings;
 * each keeps the types within its share of the slack, so that whichever
 * the launcher picks, the total stays below. "" in why when it stands. */
static void split_rules(const struct cluster *c, struct sched_result *pl,
			const struct consolidation_candidate *v, const uint32_t *idx,
			const struct consolidation_options *o, double price, char *why, size_t len)
{
	double min = min_savings_of(v, idx, 1, o, price), sum = 0, slack;

	if (v[idx[0]].spot) {
		snprintf(why, len, "Can't replace a spot node with %u nodes", pl->n_claims);
		return;
	}
	for (uint32_t i = 0; i < pl->n_claims; i++) {
		struct sched_claim *cl = &pl->claims[i];
		if (cl->capacity_types & 1u << CT_SPOT && cl->capacity_types & 1u << CT_ON_DEMAND)
			cl->capacity_types = 1u << CT_SPOT; /* as price_rules() */
		cl->price = INFINITY;
		for (uint32_t t = 0; t < cl->n_types; t++) {
			double p = catalog_type_price(&c->cat, cl->types[t], cl->zones, cl->capacity_types);
			if (p >= 0 && p < cl->price)
				cl->price = p;
		}
		sum += cl->price;
	}
	slack = price - min - sum;
	if (!(slack > -MIN_SAVINGS_EPSILON)) {
		if (min > 0 && price - sum > 0)
			snprintf(why, len, "replacement not cheaper enough (saving $%.4f/h below "
				 "threshold $%.4f/h)", price - sum, min);
		else
			snprintf(why, len, "Can't replace with %u cheaper nodes", pl->n_claims);
		return;
	}
	for (uint32_t i = 0; i < pl->n_claims; i++)
		filter_by_price(c, &pl->claims[i],
				pl->claims[i].price + fmax(slack, 0) / pl->n_claims + MIN_SAVINGS_EPSILON);
}

/*
 * computeConsolidation over candidates idx[0..k): 1 with cmd filled (a
 * delete, or a replace by one cheaper NodeClaim), 0 with why when not.
 */
static int try_command(struct cluster *c, const struct consolidation_candidate *v,
		       const uint32_t *idx, uint32_t k, const struct consolidation_options *o,
		       struct consolidation_command *cmd, char *why, size_t len)
{
	struct what_if_result res = { .unplaced_pod = -1 };
	double price = 0;
	uint32_t n_new;
	int r;

	*why = '\0';
	for (uint32_t i = 0; i < k && price >= 0; i++)
		price = v[idx[i]].price > 0 ? price + v[idx[i]].price : -1; /* unknown: delete only */
	n_new = k == 1 && o->max_split > 1 ? o->max_split : 1;
	if ((r = simulate(c, v, idx, k, o, price, n_new, cmd, &res)) < 0)
		return r;
	cmd->stopped = res.stopped;
	if (res.stopped) {
		r = 0;
	} else if (!res.fits) {
		/* Karpenter's NonPendingPodSchedulingErrors: "ns/name => why". */
		if (res.unplaced_pod >= 0 && (uint64_t)res.unplaced_pod < c->n_pods)
			snprintf(why, len, "not all pods would schedule, %s/%s => %s",
				 strtab_str(&c->st, c->pods[res.unplaced_pod].ns),
				 strtab_str(&c->st, c->pods[res.unplaced_pod].name),
				 res.reason ?: "no place for it");
		else
			snprintf(why, len, "not all pods would schedule, %s",
				 res.reason ?: "no place for them");
		r = 0;
	} else if (res.placement->n_claims > n_new) {
		snprintf(why, len, "Can't remove without creating %u candidates",
			 res.placement->n_claims);
		r = 0;
	} else {
		if (res.placement->n_claims == 1)
			price_rules(c, &res.placement->claims[0], v, idx, k, o, price, why, len);
		else if (res.placement->n_claims > 1)
			split_rules(c, res.placement, v, idx, o, price, why, len);
		if (!*why) {
			double added = 0;

			for (uint32_t i = 0; i < res.placement->n_claims; i++)
				added += res.placement->claims[i].price;
			balanced_rule(v, idx, k, o, fmax(price, 0), fmax(price, 0) - added, why, len);
		}
		r = !*why;
	}
	if (r == 0) {
		what_if_result_done(&res);
		return 0;
	}
	what_if_result_done(&cmd->res);
	free(cmd->candidates);
	if (!(cmd->candidates = malloc(k * sizeof(*cmd->candidates)))) {
		what_if_result_done(&res);
		return -ENOMEM;
	}
	memcpy(cmd->candidates, idx, k * sizeof(*idx));
	cmd->n_candidates = k;
	cmd->removed_price = price > 0 ? price : 0;
	cmd->added_price = 0;
	for (uint32_t i = 0; i < res.placement->n_claims; i++)
		cmd->added_price += res.placement->claims[i].price;
	cmd->savings = cmd->removed_price - cmd->added_price;
	cmd->res = res;
	return 1;
}

/* firstNConsolidationOption: binary search for the largest prefix of the
 * candidates (those the budgets allow, at most CONSOLIDATION_MAX_MULTI)
 * that can go at once; never fewer than two (single-node finds those). */
static int multi_node(struct cluster *c, const struct consolidation_candidate *v, uint32_t n,
		      const struct consolidation_options *o, struct consolidation_command *cmd)
{
	uint32_t *budget = calloc(o->n_pools + 1, sizeof(*budget)), *idx = malloc((n + 1) * sizeof(*idx));
	uint32_t k = 0;
	char why[CONSOLIDATION_WHY_LEN];
	int r = -ENOMEM, lo = 1, hi;

	if (!budget || !idx)
		goto out;
	memcpy(budget, o->budget, o->n_pools * sizeof(*budget));
	for (uint32_t i = 0; i < n && k < CONSOLIDATION_MAX_MULTI; i++)
		if (budget[v[i].pool] > 0) {
			budget[v[i].pool]--;
			idx[k++] = i;
		}
	r = 0;
	for (hi = (int)k - 1; k >= 2 && lo <= hi && !cmd->stopped;) {
		int mid = (lo + hi) / 2, got = try_command(c, v, idx, (uint32_t)mid + 1, o, cmd, why,
							 sizeof(why));
		if (got < 0) {
			r = got;
			break;
		}
		if (got) {
			cmd->method = CONSOLIDATION_MULTI;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
out:
	free(budget);
	free(idx);
	return r;
}

/* Single-node: the first candidate (cheapest to disrupt) that can go;
 * empty ones are emptiness's, budget-held ones wait. */
static int single_node(struct cluster *c, const struct consolidation_candidate *v, uint32_t n,
		       const struct consolidation_options *o, struct consolidation_command *cmd)
{
	for (uint32_t i = 0; i < n && !cmd->stopped; i++) {
		int r;

		if (o->budget[v[i].pool] == 0) {
			snprintf(cmd->why[i], CONSOLIDATION_WHY_LEN, "no allowed disruptions due to "
				 "the budgets of its nodepool (reason Underutilized)");
			continue;
		}
		if (v[i].n_pods == 0)
			continue;
		r = try_command(c, v, &i, 1, o, cmd, cmd->why[i], CONSOLIDATION_WHY_LEN);
		if (r != 0) {
			if (r > 0)
				cmd->method = CONSOLIDATION_SINGLE;
			return r < 0 ? r : 0;
		}
	}
	return 0;
}

static int command_init(struct consolidation_command *cmd, uint32_t n)
{
	*cmd = (struct consolidation_command){ .res.unplaced_pod = -1 };
	return (cmd->why = calloc(n + 1, sizeof(*cmd->why))) ? 0 : -ENOMEM;
}

int consolidation_compute(struct cluster *c, const struct consolidation_candidate *v, uint32_t n,
			  const struct consolidation_options *o, struct consolidation_command *cmd)
{
	int r;

	if ((r = command_init(cmd, n)) < 0 || (r = multi_node(c, v, n, o, cmd)) < 0 ||
	    cmd->method != CONSOLIDATION_NONE)
		return r;
	return single_node(c, v, n, o, cmd);
}

int consolidation_compute_multi(struct cluster *c, const struct consolidation_candidate *v,
				uint32_t n, const struct consolidation_options *o,
				struct consolidation_command *cmd)
{
	int r = command_init(cmd, n);

	return r < 0 ? r : multi_node(c, v, n, o, cmd);
}

int consolidation_compute_single(struct cluster *c, const struct consolidation_candidate *v,
				 uint32_t n, const struct consolidation_options *o,
				 struct consolidation_command *cmd)
{
	int r = command_init(cmd, n);

	return r < 0 ? r : single_node(c, v, n, o, cmd);
}

int consolidation_validate(struct cluster *c, const struct consolidation_candidate *v, uint32_t n,
			   const struct consolidation_options *o, struct consolidation_command *cmd)
{
	uint32_t *idx = calloc(n + 1, sizeof(*idx));
	int r = -ENOMEM;

	*cmd = (struct consolidation_command){ .res.unplaced_pod = -1 };
	cmd->why = calloc(1, sizeof(*cmd->why));
	if (idx && cmd->why) {
		for (uint32_t i = 0; i < n; i++)
			idx[i] = i;
		r = try_command(c, v, idx, n, o, cmd, cmd->why[0], CONSOLIDATION_WHY_LEN);
		if (r > 0)
			cmd->method = n > 1 ? CONSOLIDATION_MULTI : CONSOLIDATION_SINGLE;
	}
	free(idx);
	return r < 0 ? r : 0;
}

void consolidation_command_done(struct consolidation_command *cmd)
{
	what_if_result_done(&cmd->res);
	free(cmd->candidates);
	free(cmd->why);
	free(cmd->pod_node);
	free(cmd->node_removed);
	*cmd = (struct consolidation_command){ .res.unplaced_pod = -1 };
}
