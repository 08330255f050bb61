/*
 * sched_check_node(): the solver asked about one existing node instead of
 * the whole cluster. The launcher calls it just before it binds planned
 * pods, because between the plan and the bind the cluster moves on (the
 * default scheduler places pods, a binding fails and is retried later).
 * The same bins, shapes and predicates as sched_solve(), so a bind is
 * refused only for what a plan would have refused; but only the one node
 * is tried, no NodeClaim is opened, and preferences are dropped at once:
 * they steer a choice between nodes and there is no choice left here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "model/solver-internal.h"

/*
 * Pod pi on bin bi under each of its required node-affinity terms in turn
 * (they are ORed), soft terms dropped. 1 and committed when one term
 * fits, 0 with why filled when none does, < 0 on error.
 */
static int check_pod(struct solver *s, uint32_t bi, uint32_t pi, char *why, size_t size)
{
	const struct pod *p = &s->c->pods[pi];
	struct relax rx = { .node_pref = (uint16_t)p->n_prefs };
	int r;

	if (p->invalid) {
		snprintf(why, size, "%s", p->invalid);
		return 0;
	}
	for (uint32_t i = 0; i < p->n_topo; i++)
		rx.soft += p->topo[i].soft;
	for (;;) {
		struct requirements dyn = { 0 };
		const struct requirements *eff;
		struct shape *sh;

		if ((r = shape_get(s, pi, &rx, &sh)) < 0)
			return r;
		eff = &sh->reqs;
		r = 1;
		if (sh->dyn || sh->inv_anti) {
			r = topology_allowed(s, pi, sh, &dyn, why, size);
			if (r > 0)
				r = requirements_intersect(&dyn, &sh->reqs, s->st) < 0 ? -ENOMEM : 1;
			eff = &dyn;
		}
		if (r > 0)
			r = solver_node_accepts(s, bi, pi, sh, eff, why, size)
				    ? (solver_commit(s, bi, pi, sh, eff, NULL) < 0 ? -ENOMEM : 1)
				    : 0;
		requirements_free(&dyn);
		if (r != 0 || rx.term + 1u >= p->n_terms)
			return r;
		rx.term++;
	}
}

int sched_check_node(struct cluster *c, uint32_t node, const uint32_t *pods, uint32_t n,
		     struct sched_node_fit *ret)
{
	struct solver s;
	int r;

	if (node >= c->n_nodes)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (pods[i] >= c->n_pods || c->pods[pods[i]].node != STR_NONE)
			return -EINVAL;
	r = solver_setup(&s, c);
	/* add_nodes() gives node i bin i. */
	for (uint32_t i = 0; r >= 0 && i < n; i++) {
		ret[i].reason[0] = '\0';
		r = check_pod(&s, node, pods[i], ret[i].reason, sizeof(ret[i].reason));
		ret[i].fits = r > 0;
	}
	solver_done(&s);
	return r < 0 ? r : 0;
}
