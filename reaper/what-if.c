/*
 * kanna-reaper --what-if's decisions (what-if.h): the reaper's disruption
 * methods over a loaded cluster dump, in its order — emptiness, expiration,
 * drift, consolidation — each taking its nodes away before the next looks
 * and within the NodePools' budgets per reason (model/budget.h). The rules
 * are the daemon's (disruption.c, consolidation.c), minus what a dump
 * cannot tell: EC2's view of an instance is unknown (no subnet or security
 * group drift), no node is disrupting already, no pod is nominated.
 * consolidateAfter counts from each NodeClaim's last pod event as a
 * restarted daemon reads it (pod-events.h: status.lastPodEventTime, moved
 * on to a pod bound since; without it, now). Consolidation's candidates are candidate.c's and its
 * search consolidation-search.c's, as the daemon's. Pure: reads its
 * arguments, writes the report.
 * Cleanup style: explicit frees, one exit path per function.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"
#include "model/budget.h"
#include "reaper/candidate.h"
#include "reaper/consolidation.h"
#include "reaper/drift.h"
#include "reaper/pod-events.h"
#include "reaper/reaper.h"
#include "reaper/what-if.h"

/* Budgets, per reason, of one NodePool (-1 in allowed: malformed). */
enum { WI_R_EMPTY, WI_R_EXPIRED, WI_R_DRIFTED, WI_R_UNDERUTILIZED, _WI_R_MAX };
static const char *const reason_name[_WI_R_MAX] = { "Empty", "Expired", "Drifted", "Underutilized" };

struct wi_pool {
	const struct proto_nodepool *np;
	uint32_t total, taken, allowed[_WI_R_MAX];
	bool invalid;
	struct min_savings min_savings;
};

/* A launched NodeClaim of a NodePool with its Ready Node in the model. */
struct wi_node {
	const struct proto_nodeclaim *nc;
	const struct proto_node *node;
	uint32_t idx, pool; /* model node, index into pools */
	unsigned pods;      /* that would have to move */
	uint64_t idle_usec; /* since its last pod event (pod-events.h) */
	bool gone;          /* a method took it */
};

struct wi {
	struct cluster *c;
	const struct state_store *store;
	int64_t now_ms;
	bool spot_to_spot;
	uint32_t max_split;
	struct wi_pool *pools;
	uint32_t n_pools;
	struct wi_node *nodes;
	uint32_t n_nodes;
	uint32_t *removed; /* model node indexes taken so far */
	uint32_t n_removed;
	struct wi_report *rep;
};

const char *wi_method_name(enum wi_method m)
{
	static const char *const names[_WI_METHOD_MAX] = { "emptiness", "expiration", "drift",
							   "consolidation" };
	return m < _WI_METHOD_MAX ? names[m] : "?";
}

static int block(struct wi *w, enum wi_method m, const struct wi_node *n, const char *why)
{
	struct wi_blocked *b = realloc(w->rep->blocked, (w->rep->n_blocked + 1) * sizeof(*b));

	if (!b)
		return -ENOMEM;
	w->rep->blocked = b;
	b += w->rep->n_blocked;
	b->method = m;
	b->node = strdup(n->node->name);
	b->why = strdup(why);
	if (!b->node || !b->why) {
		free(b->node);
		free(b->why);
		return -ENOMEM;
	}
	w->rep->n_blocked++;
	return 0;
}

/* Room left for reason in n's pool (budgets count every disruption). */
static uint32_t room(const struct wi *w, const struct wi_node *n, int reason)
{
	const struct wi_pool *p = &w->pools[n->pool];

	return p->invalid || p->allowed[reason] <= p->taken ? 0 : p->allowed[reason] - p->taken;
}

static int budget_block(struct wi *w, enum wi_method m, const struct wi_node *n, int reason)
{
	char why[256];

	snprintf(why, sizeof(why), "no allowed disruptions due to the budgets of nodepool \"%s\" "
		 "(reason %s)%s", w->pools[n->pool].np->name, reason_name[reason],
		 w->pools[n->pool].invalid ? ": a budget is malformed" : "");
	return block(w, m, n, why);
}

/* Records a decision over nodes (wi_node indexes) and what replaces them. */
static int decide(struct wi *w, enum wi_method m, const char *detail, const uint32_t *nodes,
		  uint32_t k, const struct sched_result *res)
{
	struct wi_report *rep = w->rep;
	struct wi_decision *d = realloc(rep->decisions, (rep->n_decisions + 1) * sizeof(*d));
	uint32_t *more = realloc(w->removed, (w->n_removed + k + 1) * sizeof(*more));

	if (more)
		w->removed = more;
	if (d)
		rep->decisions = d;
	if (!d || !more)
		return -ENOMEM;
	d += rep->n_decisions++;
	*d = (struct wi_decision){ .method = m, .detail = detail };
	if (!(d->nodes = calloc(k + 1, sizeof(*d->nodes))))
		return -ENOMEM;
	for (uint32_t i = 0; i < k; i++) {
		struct wi_node *n = &w->nodes[nodes[i]];
		double price = cluster_node_price(w->c, n->idx);
		if (!(d->nodes[d->n_nodes] = strdup(n->node->name)))
			return -ENOMEM;
		d->n_nodes++;
		d->before += price > 0 ? price : 0;
		n->gone = true;
		w->pools[n->pool].taken++;
		/* Replaced: its pods are the replacement's, nothing new lands
		 * there (tainted). Deleted: its pods look again with each next
		 * question (also_removed). */
		if (res && res->n_claims)
			w->c->nodes[n->idx].unschedulable = true;
		else
			w->removed[w->n_removed++] = n->idx;
	}
	if (!res || !res->n_claims)
		return 0;
	if (!(d->replacements = calloc(res->n_claims, sizeof(*d->replacements))))
		return -ENOMEM;
	for (uint32_t i = 0; i < res->n_claims; i++) {
		const struct sched_claim *cl = &res->claims[i];
		struct wi_replacement *x = &d->replacements[d->n_replacements++];
		x->price = cl->n_types ? catalog_type_price(&w->c->cat, cl->types[0], cl->zones,
							   cl->capacity_types)
				       : cl->price;
		for (uint32_t t = 0; t < cl->n_types; t++) {
			if (x->n_types == WI_MAX_TYPES_SHOWN) {
				x->n_more++;
				continue;
			}
			if (!(x->types[x->n_types] = strdup(
				      strtab_str(&w->c->st, w->c->cat.types[cl->types[t]].name))))
				return -ENOMEM;
			x->n_types++;
		}
		d->after += x->price > 0 ? x->price : 0;
	}
	return 0;
}

/* Expired or drifted n: where would its pods go (any number of new
 * NodeClaims, as the reaper's replacements)? A decision, or blocked. */
static int replace_one(struct wi *w, enum wi_method m, uint32_t i, const char *detail)
{
	struct wi_node *n = &w->nodes[i];
	uint32_t *remove = malloc((w->n_removed + 1) * sizeof(*remove));
	uint32_t *pod_node = malloc((w->c->n_pods + 1) * sizeof(*pod_node));
	struct what_if q = { .max_new_claims = UINT32_MAX, .max_new_price = -1 };
	struct what_if_result res = { .unplaced_pod = -1 };
	char why[512];
	int r = -ENOMEM;

	if (!remove || !pod_node)
		goto out;
	for (uint32_t p = 0; p < w->c->n_pods; p++)
		pod_node[p] = w->c->pods[p].node;
	if (w->n_removed)
		memcpy(remove, w->removed, w->n_removed * sizeof(*remove));
	remove[w->n_removed] = n->idx;
	q.remove = remove;
	q.n_remove = w->n_removed + 1;
	if ((r = what_if_solve(w->c, &q, &res)) < 0)
		goto out;
	if (!res.fits) {
		snprintf(why, sizeof(why), "not all pods would schedule, %s",
			 res.reason ?: "no place for them");
		r = block(w, m, n, why);
	} else {
		r = decide(w, m, detail, &i, 1, res.placement);
	}
out:
	what_if_result_done(&res);
	/* A what-if leaves its marks: put the model back (w->removed says
	 * what the next questions take away). */
	for (uint32_t p = 0; pod_node && p < w->c->n_pods; p++)
		w->c->pods[p].node = pod_node[p];
	for (uint32_t p = 0; p < w->c->n_nodes; p++)
		w->c->nodes[p].removed = false;
	free(remove);
	free(pod_node);
	return r;
}

static const struct proto_nodeclass *nodeclass_of(const struct wi *w, const struct wi_node *n)
{
	const char *name = n->nc->nodeclass ?: w->pools[n->pool].np->nodeclass_ref.name;
	const struct state_entry *e = name ? state_store_get(w->store, PROTO_OBJECT_NODECLASS, "",
							     name)
					   : NULL;

	return e ? e->obj.nodeclass : NULL;
}

/* Why disruption.c would take n (expired before empty before drifted, as
 * its candidate_reason()), or _WI_METHOD_MAX: it would not. */
static enum wi_method per_node_reason(const struct wi *w, const struct wi_node *n,
				      enum drift_reason *drift)
{
	const struct proto_nodepool *np = w->pools[n->pool].np;
	int64_t expire_s = n->nc->expire_after_s ?: np->expire_after_s;
	bool before_v1 = np->source_api != PROTO_API_V1;
	bool empties = np->consolidation_policy == PROTO_CONSOLIDATE_WHEN_EMPTY ||
		       (!before_v1 && (np->consolidation_policy ==
					       PROTO_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED ||
				       np->consolidation_policy == PROTO_CONSOLIDATE_BALANCED)) ||
		       (before_v1 && np->consolidation_policy == PROTO_CONSOLIDATE_WHEN_UNDERUTILIZED);

	if (n->nc->do_not_disrupt || n->node->do_not_disrupt)
		return _WI_METHOD_MAX; /* consolidation names it */
	if (expire_s > 0 && w->now_ms - n->nc->creation_time >= expire_s * 1000)
		return WI_EXPIRATION;
	/* v1beta1 WhenUnderutilized and v1alpha5 consolidation.enabled delete
	 * empty nodes at once, others once consolidateAfter has passed. */
	if (!n->pods && ((before_v1 && np->consolidation_policy == PROTO_CONSOLIDATE_WHEN_UNDERUTILIZED) ||
			 (empties && np->consolidate_after_s >= 0 &&
			  n->idle_usec >= (uint64_t)np->consolidate_after_s * 1000000)))
		return WI_EMPTINESS;
	*drift = drift_check(n->nc, np, nodeclass_of(w, n), NULL);
	return *drift != DRIFT_NONE ? WI_DRIFT : _WI_METHOD_MAX;
}

/* Emptiness, then expiration, then drift: each method's nodes go before
 * the next method's pods look for places. */
static int per_node_methods(struct wi *w)
{
	static const int reason_of[] = { [WI_EMPTINESS] = WI_R_EMPTY, [WI_EXPIRATION] = WI_R_EXPIRED,
					 [WI_DRIFT] = WI_R_DRIFTED };
	int r = 0;

	for (int m = WI_EMPTINESS; m <= WI_DRIFT; m++)
		for (uint32_t i = 0; i < w->n_nodes && r >= 0; i++) {
			struct wi_node *n = &w->nodes[i];
			enum drift_reason drift = DRIFT_NONE;
			const char *detail;

			if (n->gone || (int)per_node_reason(w, n, &drift) != m)
				continue;
			detail = m == WI_DRIFT ? drift_reason_name(drift) : "";
			/* v1 made expiry forceful: no budget holds it. */
			if (!room(w, n, reason_of[m]) &&
			    !(m == WI_EXPIRATION && w->pools[n->pool].np->source_api == PROTO_API_V1))
				r = budget_block(w, m, n, reason_of[m]);
			else
				r = n->pods ? replace_one(w, m, i, detail) : decide(w, m, detail, &i, 1, NULL);
		}
	return r;
}

/* One consolidation command, as a pass of the reaper would choose it. */
static int consolidate(struct wi *w)
{
	struct consolidation_candidate *v = calloc(w->n_nodes + 1, sizeof(*v));
	uint32_t *of = calloc(w->n_nodes + 1, sizeof(*of)), *budget = calloc(w->n_pools + 1, sizeof(*budget));
	uint32_t *taken = calloc(w->n_nodes + 1, sizeof(*taken));
	struct min_savings *ms = calloc(w->n_pools + 1, sizeof(*ms));
	struct consolidation_command cmd = { .res.unplaced_pod = -1 };
	struct candidate_pdbs pdbs = { 0 };
	char buf[512];
	uint32_t n = 0;
	int r = -ENOMEM;

	if (!v || !of || !budget || !taken || !ms || candidate_pdbs_collect(w->store, &pdbs) < 0)
		goto out;
	for (uint32_t p = 0; p < w->n_pools; p++) {
		budget[p] = room(w, &(struct wi_node){ .pool = p }, WI_R_UNDERUTILIZED);
		ms[p] = w->pools[p].min_savings;
	}
	r = 0;
	for (uint32_t i = 0; i < w->n_nodes && r >= 0; i++) {
		struct wi_node *x = &w->nodes[i];
		const char *why, *event;
		double cost = 0;

		int64_t after_s = candidate_consolidate_after_s(w->pools[x->pool].np);

		if (x->gone || !x->pods)
			continue;
		/* As the daemon's: not before consolidateAfter since its last pod
		 * event (the daemon tells nothing then; said here). */
		if (after_s >= 0 && x->idle_usec < (uint64_t)after_s * 1000000) {
			snprintf(buf, sizeof(buf), "consolidateAfter (%llds) has not passed since its last pod "
				 "event (%llus ago)", (long long)after_s,
				 (unsigned long long)(x->idle_usec / 1000000));
			r = block(w, WI_CONSOLIDATION, x, buf);
			continue;
		}
		if ((why = candidate_check(w->store, &pdbs, x->nc, w->pools[x->pool].np, x->node,
					   w->now_ms, &event, &cost, buf, sizeof(buf)))) {
			r = block(w, WI_CONSOLIDATION, x, why);
			continue;
		}
		v[n] = (struct consolidation_candidate){
			.node = x->idx, .pool = x->pool, .n_pods = x->pods, .cost = cost,
			.price = cluster_node_price(w->c, x->idx),
			.spot = x->nc->capacity_type == PROTO_CAPACITY_SPOT };
		of[n++] = i;
	}
	if (r < 0 || n == 0)
		goto out;
	consolidation_sort(v, n);
	for (uint32_t i = 0; i < n; i++) /* sorted: back to our nodes by model index */
		for (uint32_t j = 0; j < w->n_nodes; j++)
			if (w->nodes[j].idx == v[i].node)
				of[i] = j;
	struct consolidation_options o = { .also_removed = w->removed, .n_also_removed = w->n_removed,
					   .budget = budget, .n_pools = w->n_pools,
					   .min_savings = ms, .spot_to_spot = w->spot_to_spot,
					   .max_split = w->max_split };
	if ((r = consolidation_compute(w->c, v, n, &o, &cmd)) < 0)
		goto out;
	for (uint32_t i = 0; i < n && r >= 0; i++)
		if (cmd.why && cmd.why[i][0])
			r = block(w, WI_CONSOLIDATION, &w->nodes[of[i]], cmd.why[i]);
	if (r >= 0 && cmd.method != CONSOLIDATION_NONE) {
		for (uint32_t i = 0; i < cmd.n_candidates; i++)
			taken[i] = of[cmd.candidates[i]];
		r = decide(w, WI_CONSOLIDATION,
			   cmd.method == CONSOLIDATION_MULTI ? "multi-node" : "single-node", taken,
			   cmd.n_candidates, cmd.res.placement);
	}
out:
	consolidation_command_done(&cmd);
	candidate_pdbs_done(&pdbs);
	free(v);
	free(of);
	free(budget);
	free(taken);
	free(ms);
	return r;
}

static int node_cmp(const void *a, const void *b)
{
	return strcmp(((const struct wi_node *)a)->node->name, ((const struct wi_node *)b)->node->name);
}

static uint32_t pool_of(struct wi *w, const struct proto_nodepool *np)
{
	for (uint32_t p = 0; p < w->n_pools; p++)
		if (w->pools[p].np == np)
			return p;
	w->pools[w->n_pools] = (struct wi_pool){ .np = np };
	return w->n_pools++;
}

/* Time since nc's last pod event, as the daemon's first look at it
 * finds it (pod_event_observe(): its record, moved on to a pod bound
 * since; none: now), on a monotonic clock that reads now_ms. */
static uint64_t idle_usec(const struct wi *w, const struct proto_nodeclaim *nc)
{
	struct pod_event_clock clock = { 0 };
	struct pod_event_sight s = { .recorded_ms = nc->last_pod_event_time, .now_ms = w->now_ms,
				     .now_usec = (uint64_t)w->now_ms * 1000 };

	s.pods_hash = pod_events_pods_on(w->store, nc->node_name, &s.newest_bind_ms);
	(void)pod_event_observe(&clock, &s);
	return pod_event_age_usec(&clock, s.now_usec);
}

/* The NodePools' launched NodeClaims with a Ready Node in the model, and
 * the budgets of their pools now. */
static int gather(struct wi *w)
{
	struct hashmap index = { 0 };
	const struct state_entry *e;
	size_t it = 0;
	char err[512];
	int r = -ENOMEM;

	if (!(w->nodes = calloc(w->c->n_nodes + 1, sizeof(*w->nodes))) ||
	    !(w->pools = calloc(w->c->n_nodes + 1, sizeof(*w->pools))))
		goto out;
	if (candidate_node_index(w->c, &index) < 0)
		goto out;
	while ((e = state_store_next(w->store, &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;
		const struct state_entry *pe, *ne;
		const struct state_pod_set *set;
		struct wi_node *n;
		void *idx;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || !nc->nodepool || !nc->node_name ||
		    nc->deletion_time || !nc->provider_id || !*nc->provider_id ||
		    !(pe = state_store_get(w->store, PROTO_OBJECT_NODEPOOL, "", nc->nodepool)) ||
		    pe->obj.nodepool->status != PROTO_NODEPOOL_OK ||
		    !(ne = state_store_get(w->store, PROTO_OBJECT_NODE, "", nc->node_name)) ||
		    ne->obj.node->ready != PROTO_COND_TRUE || ne->obj.node->deletion_time ||
		    !(idx = hashmap_get(&index, nc->node_name)))
			continue;
		n = &w->nodes[w->n_nodes++];
		*n = (struct wi_node){ .nc = nc, .node = ne->obj.node, .idx = (uint32_t)(uintptr_t)idx - 1,
				       .pool = pool_of(w, pe->obj.nodepool) };
		w->pools[n->pool].total++;
		set = state_store_pods_on(w->store, nc->node_name);
		for (uint32_t i = 0; set && i < set->n; i++)
			n->pods += !drain_pod_stays(set->pods[i]) && !set->pods[i]->deletion_time;
		n->idle_usec = idle_usec(w, nc);
	}
	qsort(w->nodes, w->n_nodes, sizeof(*w->nodes), node_cmp); /* output order */
	for (uint32_t p = 0; p < w->n_pools; p++) {
		struct wi_pool *pl = &w->pools[p];
		(void)min_savings_parse(pl->np, &pl->min_savings, err, sizeof(err));
		for (int k = 0; k < _WI_R_MAX; k++)
			if (budget_allowed_disruptions(pl->np->budgets, pl->np->n_budgets, reason_name[k],
						       w->now_ms / 1000, pl->total, 0, &pl->allowed[k],
						       err, sizeof(err)) < 0)
				pl->invalid = true;
	}
	r = 0;
out:
	hashmap_done(&index);
	return r;
}

int wi_compute(struct cluster *c, const struct state_store *store, int64_t now_ms,
	       bool spot_to_spot, bool split, struct wi_report *ret)
{
	struct wi w = { .c = c, .store = store, .now_ms = now_ms, .spot_to_spot = spot_to_spot,
			.max_split = split ? CONSOLIDATION_MAX_SPLIT : 1, .rep = ret };
	int r;

	*ret = (struct wi_report){ 0 };
	if ((r = gather(&w)) >= 0 && (r = per_node_methods(&w)) >= 0)
		r = consolidate(&w);
	for (uint32_t i = 0; r >= 0 && i < w.n_nodes; i++) {
		double p = cluster_node_price(c, w.nodes[i].idx);
		ret->cluster_before += p > 0 ? p : 0;
	}
	ret->cluster_after = ret->cluster_before;
	for (uint32_t i = 0; r >= 0 && i < ret->n_decisions; i++)
		ret->cluster_after += ret->decisions[i].after - ret->decisions[i].before;
	free(w.nodes);
	free(w.pools);
	free(w.removed);
	if (r < 0)
		wi_report_done(ret);
	return r;
}

void wi_report_done(struct wi_report *r)
{
	for (uint32_t i = 0; i < r->n_decisions; i++) {
		struct wi_decision *d = &r->decisions[i];
		for (uint32_t k = 0; k < d->n_nodes; k++)
			free(d->nodes[k]);
		for (uint32_t k = 0; k < d->n_replacements; k++)
			for (uint32_t t = 0; t < d->replacements[k].n_types; t++)
				free(d->replacements[k].types[t]);
		free(d->nodes);
		free(d->replacements);
	}
	for (uint32_t i = 0; i < r->n_blocked; i++) {
		free(r->blocked[i].node);
		free(r->blocked[i].why);
	}
	free(r->decisions);
	free(r->blocked);
	*r = (struct wi_report){ 0 };
}
