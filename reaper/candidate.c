/*
 * Why a node cannot be a consolidation candidate, and what evicting its
 * pods costs (candidate.h): the policy, do-not-disrupt on the NodeClaim,
 * the Node or a pod, a PDB that allows no disruption, then the disruption
 * cost Karpenter orders candidates by. Called by consolidation.c (the
 * daemon's pass) and what-if.c (--what-if); pure over the state store.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/match.h"
#include "proto/karpenter.h"
#include "reaper/candidate.h"
#include "reaper/consolidation.h"
#include "reaper/reaper.h"

int64_t candidate_consolidate_after_s(const struct proto_nodepool *np)
{
	if (np->consolidation_policy == PROTO_CONSOLIDATE_WHEN_UNDERUTILIZED)
		return np->source_api == PROTO_API_V1 ? -1 : 0;
	/* Balanced consolidates what WhenEmptyOrUnderutilized does, each
	 * move scored first (consolidation-search.c). */
	if ((np->consolidation_policy != PROTO_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED &&
	     np->consolidation_policy != PROTO_CONSOLIDATE_BALANCED) ||
	    np->consolidate_after_s < 0)
		return -1;
	return np->consolidate_after_s;
}

int candidate_node_index(const struct cluster *c, struct hashmap *index)
{
	for (uint32_t i = 0; i < c->n_nodes; i++)
		if (!c->nodes[i].in_flight &&
		    hashmap_put(index, strtab_str(&c->st, c->nodes[i].name), (void *)(uintptr_t)(i + 1),
				NULL) < 0)
			return -ENOMEM;
	return 0;
}

double candidate_eviction_cost(const struct proto_pod *p)
{
	double cost = 1.0 + p->deletion_cost / CANDIDATE_DELETION_COST_SCALE +
		      (double)proto_pod_template_of(p)->priority / CANDIDATE_PRIORITY_COST_SCALE;

	return fmax(-EVICTION_COST_CLAMP, fmin(EVICTION_COST_CLAMP, cost));
}

double candidate_reschedule_cost(const struct state_store *store, const char *node)
{
	const struct state_pod_set *set = state_store_pods_on(store, node);
	double cost = 1.0; /* PerNodeBaseDisruptionCost */

	for (uint32_t i = 0; set && i < set->n; i++)
		if (!drain_pod_stays(set->pods[i]) && !set->pods[i]->deletion_time)
			cost += fmax(0, candidate_eviction_cost(set->pods[i]));
	return cost;
}

/* The PDB that forbids evicting p now (disruptions allowed 0), or NULL. */
int candidate_pdbs_collect(const struct state_store *store, struct candidate_pdbs *out)
{
	const struct state_entry *e;
	size_t it = 0, n = 0;

	*out = (struct candidate_pdbs){ 0 };
	while ((e = state_store_next(store, &it)))
		if (e->obj.kind == PROTO_OBJECT_PDB && e->obj.pdb->disruptions_allowed <= 0)
			n++;
	out->v = calloc(n + 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	it = 0;
	while ((e = state_store_next(store, &it)) && out->n < n)
		if (e->obj.kind == PROTO_OBJECT_PDB && e->obj.pdb->disruptions_allowed <= 0)
			out->v[out->n++] = e->obj.pdb;
	return 0;
}

void candidate_pdbs_done(struct candidate_pdbs *pdbs)
{
	free(pdbs->v);
	*pdbs = (struct candidate_pdbs){ 0 };
}

static const struct proto_pdb *blocking_pdb(const struct candidate_pdbs *pdbs,
					    const struct proto_pod *p)
{
	const struct proto_pod_template *t = proto_pod_template_of(p);

	for (size_t i = 0; i < pdbs->n; i++) {
		const struct proto_pdb *b = pdbs->v[i];
		if (!streq(b->ns, p->ns))
			continue;
		/* policy/v1: an empty selector selects every pod of the namespace. */
		if ((!b->selector.n_match_labels && !b->selector.n_match_expressions) ||
		    label_selector_matches(&b->selector, t->labels, t->n_labels))
			return b;
	}
	return NULL;
}

const char *candidate_check(const struct state_store *store, const struct candidate_pdbs *pdbs,
			    const struct proto_nodeclaim *nc,
			    const struct proto_nodepool *np, const struct proto_node *node,
			    int64_t now_ms, const char **event, double *cost, char *buf, size_t len)
{
	const struct state_pod_set *set = state_store_pods_on(store, node->name);
	int64_t expire = nc->expire_after_s ?: np->expire_after_s;
	double sum = 0;

	*event = "Unconsolidatable";
	/* Upstream consolidation.go ShouldDisrupt: never a static pool's. */
	if (np->static_capacity) {
		snprintf(buf, len, "NodePool \"%s\" is static (spec.replicas): its nodes are not "
			 "consolidated", np->name);
		return buf;
	}
	if (candidate_consolidate_after_s(np) < 0) {
		snprintf(buf, len, "NodePool \"%s\" has non-empty consolidation disabled", np->name);
		return buf;
	}
	*event = "DisruptionBlocked";
	if (nc->do_not_disrupt || node->do_not_disrupt) {
		snprintf(buf, len, "Cannot disrupt NodeClaim: %s %s has the \"%s\" annotation",
			 nc->do_not_disrupt ? "nodeclaim" : "node",
			 nc->do_not_disrupt ? nc->name : node->name, KARPENTER_DO_NOT_DISRUPT_ANNOTATION);
		return buf;
	}
	for (uint32_t i = 0; set && i < set->n; i++) {
		const struct proto_pod *p = set->pods[i];
		const struct proto_pdb *b;

		if (drain_pod_stays(p) || p->deletion_time)
			continue;
		if (p->do_not_disrupt) {
			snprintf(buf, len, "Cannot disrupt NodeClaim: pod %s/%s has the \"%s\" "
				 "annotation", p->ns, p->name, KARPENTER_DO_NOT_DISRUPT_ANNOTATION);
			return buf;
		}
		if ((b = blocking_pdb(pdbs, p))) {
			snprintf(buf, len, "Cannot disrupt NodeClaim: pdb \"%s/%s\" prevents pod "
				 "evictions (pod %s/%s)", b->ns, b->name, p->ns, p->name);
			return buf;
		}
		sum += candidate_eviction_cost(p);
	}
	*event = NULL;
	*cost = sum * consolidation_lifetime_remaining((now_ms - nc->creation_time) / 1000, expire);
	return NULL;
}

int candidate_pending_pods(const struct state_store *store, int64_t now_ms,
			   const struct proto_pod ***ret, size_t *n_ret)
{
	struct hashmap planned = { 0 }; /* "ns/name" a NodeClaim speaks for */
	const struct proto_pod **pods = NULL;
	const struct state_entry *e;
	char key[STATE_KEY_MAX];
	size_t it = 0, n = 0, cap = 0;
	int r = 0;

	while (r >= 0 && (e = state_store_next(store, &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || !nc->n_planned_pods ||
		    !state_nodeclaim_holds_planned_pods(nc, now_ms))
			continue;
		for (uint32_t i = 0; i < nc->n_planned_pods && r >= 0; i++)
			r = hashmap_put(&planned, nc->planned_pods[i], (void *)1, NULL);
	}
	it = 0;
	while (r >= 0 && (e = state_store_next(store, &it))) {
		const struct proto_pod *p = e->obj.pod;

		if (e->obj.kind != PROTO_OBJECT_POD || !state_pod_is_unschedulable(p))
			continue;
		snprintf(key, sizeof(key), "%s/%s", p->ns, p->name);
		if (hashmap_get(&planned, key))
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 16;
			const struct proto_pod **bigger = realloc(pods, c * sizeof(*pods));

			if (!bigger) {
				r = -ENOMEM;
				break;
			}
			pods = bigger;
			cap = c;
		}
		pods[n++] = p;
	}
	hashmap_done(&planned);
	if (r < 0) {
		free(pods);
		return r;
	}
	*ret = pods;
	*n_ret = n;
	return 0;
}
