/*
 * what_if_solve() (what-if.h): marks the nodes removed, turns the pods
 * they carry into pending pods (DaemonSet and mirror pods go with their
 * node), prices both sides and runs the ordinary solve under the what-if's
 * limits. Used by the reaper's consolidation; pure computation.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "model/what-if.h"

double cluster_node_price(const struct cluster *c, uint32_t node)
{
	const struct node *n = &c->nodes[node];
	uint32_t type = labels_get(n->labels, n->n_labels, K_INSTANCE_TYPE);
	uint32_t zone = labels_get(n->labels, n->n_labels, K_ZONE);
	uint32_t ct = labels_get(n->labels, n->n_labels, K_CAPACITY_TYPE);
	int z = zone == STR_NONE ? -1 : catalog_zone_find(&c->cat, zone);
	int cti = ct == V_SPOT ? CT_SPOT : ct == V_ON_DEMAND ? CT_ON_DEMAND : -1;

	if (type == STR_NONE || z < 0 || cti < 0)
		return -1;
	for (uint32_t t = 0; t < c->cat.n_types; t++) {
		const struct instance_type *it = &c->cat.types[t];
		if (it->name != type)
			continue;
		for (uint32_t o = 0; o < it->n_offerings; o++)
			if (it->offerings[o].zone == z && it->offerings[o].capacity_type == cti)
				return it->offerings[o].price;
		return -1;
	}
	return -1;
}

/* The names of the removed nodes, marked by string id, for matching their
 * pods in one pass (a scan of the nodes per pod was O(pods × nodes): most
 * of a consolidation what-if at 1,000 nodes, bench/reaper.sh). */
static bool *removed_names(const struct cluster *c)
{
	bool *gone = calloc(c->st.n + 1, sizeof(*gone));

	for (uint32_t i = 0; gone && i < c->n_nodes; i++)
		if (c->nodes[i].removed)
			gone[c->nodes[i].name] = true;
	return gone;
}

/* Why a pending pod sits out a what-if (pending_first): no room for it. */
static const char pending_elsewhere[] = "pending: no room on the remaining capacity, the scheduler's to plan";

/* w->pending_first: places the pending pods on what remains, nothing new,
 * and pins them there (pinned[0..*n): their indexes, to undo). */
static int pin_pending(struct cluster *c, const struct what_if *w, uint32_t *pinned, uint32_t *n,
		       bool *stopped)
{
	struct sched_options o = { .deadline_usec = w->deadline_usec, .cancel = w->cancel,
				   .limit_new_claims = true, .max_new_claims = 0 };
	struct sched_result *pre = NULL;
	bool any = false;
	int r;

	*n = 0;
	for (uint32_t p = 0; p < c->n_pods && !any; p++)
		any = c->pods[p].node == STR_NONE && !c->pods[p].invalid;
	if (!any)
		return 0;
	r = sched_solve_with(c, &o, &pre);
	if (r < 0)
		return r;
	*stopped = pre->stopped;
	for (uint32_t p = 0; p < c->n_pods && !*stopped; p++) {
		struct pod *pod = &c->pods[p];
		int32_t b = pre->pod_bin[p];

		if (pod->node != STR_NONE || (pod->invalid && pod->invalid != pending_elsewhere))
			continue;
		if (b >= 0 && (uint32_t)b < pre->n_nodes && (uint32_t)b < c->n_nodes)
			pod->node = c->nodes[b].name;
		else
			pod->invalid = pending_elsewhere;
		pinned[(*n)++] = p;
	}
	sched_result_free(pre);
	return 0;
}

static void unpin_pending(struct cluster *c, const uint32_t *pinned, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		c->pods[pinned[i]].node = STR_NONE;
		if (c->pods[pinned[i]].invalid == pending_elsewhere)
			c->pods[pinned[i]].invalid = NULL;
	}
}

int what_if_solve(struct cluster *c, const struct what_if *w, struct what_if_result *ret)
{
	struct sched_options o = { .deadline_usec = w->deadline_usec, .cancel = w->cancel,
				   .limit_new_claims = true, .max_new_claims = w->max_new_claims };
	struct what_if_result res = { .unplaced_pod = -1 };
	uint32_t *pinned = NULL, n_pinned = 0;
	bool *gone;
	int r;

	for (uint32_t i = 0; i < w->n_remove; i++) {
		if (w->remove[i] >= c->n_nodes)
			return -EINVAL;
		struct node *n = &c->nodes[w->remove[i]];
		double price = cluster_node_price(c, w->remove[i]);
		if (!n->removed && price > 0)
			res.removed_price += price;
		n->removed = true;
	}
	res.moved = malloc((c->n_pods ? c->n_pods : 1) * sizeof(*res.moved));
	pinned = w->pending_first ? malloc((c->n_pods ? c->n_pods : 1) * sizeof(*pinned)) : NULL;
	gone = removed_names(c);
	if (!res.moved || !gone || (w->pending_first && !pinned)) {
		free(res.moved);
		free(pinned);
		free(gone);
		return -ENOMEM;
	}
	if (w->pending_first && (r = pin_pending(c, w, pinned, &n_pinned, &res.stopped)) < 0) {
		free(res.moved);
		free(pinned);
		free(gone);
		return r;
	}
	for (uint32_t p = 0; p < c->n_pods; p++) {
		struct pod *pod = &c->pods[p];
		if (pod->node == STR_NONE || pod->dies_with_node || !gone[pod->node])
			continue;
		pod->node = STR_NONE;
		res.moved[res.n_moved++] = p;
	}
	free(gone);
	if (w->max_new_price < 0)
		o.max_new_price = 0; /* no cap */
	else if ((o.max_new_price = w->max_new_price ? w->max_new_price : res.removed_price) <= 0)
		o.max_new_claims = 0; /* nothing is cheaper than free */
	r = sched_solve_with(c, &o, &res.placement);
	unpin_pending(c, pinned, n_pinned);
	free(pinned);
	if (r < 0) {
		what_if_result_done(&res);
		return r;
	}
	res.stopped = res.stopped || res.placement->stopped;
	for (uint32_t i = 0; i < res.placement->n_claims; i++)
		res.added_price += res.placement->claims[i].price;
	res.cost_delta = res.added_price - res.removed_price;
	res.fits = !res.stopped;
	for (uint32_t i = 0; res.fits && i < res.n_moved; i++)
		if (res.placement->pod_bin[res.moved[i]] < 0) {
			res.fits = false;
			res.unplaced_pod = res.moved[i];
		}
	for (uint32_t i = 0; res.unplaced_pod >= 0 && i < res.placement->n_unschedulable; i++)
		if (res.placement->unschedulable[i].pod == res.unplaced_pod)
			res.reason = res.placement->unschedulable[i].reason;
	/* Several claims each under the cap may add up past it. */
	if (res.fits && w->max_new_price >= 0 && res.placement->n_claims &&
	    res.added_price >= o.max_new_price) {
		res.fits = false;
		res.reason = "the new nodeclaims together cost no less than the nodes removed";
	}
	*ret = res;
	return 0;
}

void what_if_result_done(struct what_if_result *r)
{
	sched_result_free(r->placement);
	free(r->moved);
	*r = (struct what_if_result){ .unplaced_pod = -1 };
}
