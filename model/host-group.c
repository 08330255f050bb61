/*
 * Hostname pod-affinity groups kept whole. A required pod affinity on
 * kubernetes.io/hostname whose pods the term itself selects (self-affinity:
 * "these pods run together") puts every pod of the group on the nodes its
 * first pod went to. Plain first-fit decreasing places the group's pods as
 * their sizes come up: by the time its small pods come, the nodes holding
 * the group are full of other pods, and they fail although one node could
 * hold the whole group (645 of 20,000 pods of the six-way benchmark mix,
 * bench/bench-scheduler.c "diverse"). So here, as a packing rule of our
 * own (Karpenter's queue is by size alone and its benchmark dropped this
 * kind in kubernetes-sigs/karpenter #1938): the pods of such a group are
 * placed one after the other at the turn of its largest pod, and the first
 * of them goes to a bin with room for the whole group, else to a new
 * NodeClaim. Nothing changes for a pod whose group already has a pod
 * placed: it goes where the term's matching pods are, as before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/solver-internal.h"

/* The pod's first required hostname pod-affinity group, or -1. */
static int32_t host_group_of(const struct solver *s, uint32_t pi)
{
	const struct pod *p = &s->c->pods[pi];

	for (uint32_t i = 0; i < p->n_topo; i++) {
		const struct topo_group *g = &s->c->groups[p->topo[i].group];
		if (!p->topo[i].soft && g->kind == TOPO_AFFINITY && g->key == K_HOSTNAME)
			return (int32_t)p->topo[i].group;
	}
	return -1;
}

static bool selects(const struct solver *s, uint32_t pi, uint32_t g)
{
	for (uint32_t i = 0; i < s->n_matched[pi]; i++)
		if (s->matched[pi][i] == g)
			return true;
	return false;
}

int host_groups_order(struct solver *s, uint32_t *order, uint32_t n)
{
	uint32_t n_groups = s->c->n_groups, k = 0;
	int32_t *of = NULL;
	uint32_t *head = NULL, *tail = NULL, *next = NULL, *out = NULL;
	bool any = false;
	int r = -ENOMEM;

	if (!n_groups || !n)
		return 0;
	of = malloc(n * sizeof(*of));
	if (!of)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		int32_t g = host_group_of(s, order[i]);
		of[i] = g;
		if (g < 0)
			continue;
		struct group_state *gs = &s->gs[g];
		resources_add(&gs->host_pending, &s->c->pods[order[i]].req, s->n_res);
		if (selects(s, order[i], (uint32_t)g))
			any = gs->host_self = true;
	}
	if (!any) {
		free(of);
		return 0;
	}
	/* Chains of positions per group (UINT32_MAX ends one), then one pass. */
	head = malloc(n_groups * sizeof(*head));
	tail = malloc(n_groups * sizeof(*tail));
	next = malloc(n * sizeof(*next));
	out = malloc(n * sizeof(*out));
	if (!head || !tail || !next || !out)
		goto out;
	memset(head, 0xff, n_groups * sizeof(*head));
	for (uint32_t i = 0; i < n; i++) {
		next[i] = UINT32_MAX;
		if (of[i] < 0 || !s->gs[of[i]].host_self)
			continue;
		if (head[of[i]] == UINT32_MAX)
			head[of[i]] = i;
		else
			next[tail[of[i]]] = i;
		tail[of[i]] = i;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (of[i] < 0 || !s->gs[of[i]].host_self) {
			out[k++] = order[i];
			continue;
		}
		if (head[of[i]] != i) /* emitted with its group's first */
			continue;
		for (uint32_t j = i; j != UINT32_MAX; j = next[j])
			out[k++] = order[j];
	}
	memcpy(order, out, n * sizeof(*order));
	r = 0;
out:
	free(of);
	free(head);
	free(tail);
	free(next);
	free(out);
	return r;
}

const struct resources *host_group_demand(const struct solver *s, uint32_t pi)
{
	int32_t g = host_group_of(s, pi);

	if (g < 0 || !s->gs[g].host_self || s->gs[g].total)
		return NULL;
	return &s->gs[g].host_pending;
}

bool host_group_room(const struct solver *s, uint32_t bi, const struct resources *demand)
{
	const struct bin *b = &s->bins[bi];
	const struct resources *have =
		b->node >= 0 ? &s->c->nodes[b->node].allocatable : &b->max_alloc;
	struct resources need = b->used;

	resources_add(&need, demand, s->n_res);
	return resources_fit(&need, have, s->n_res);
}

void host_group_placed(struct solver *s, uint32_t pi)
{
	int32_t g = host_group_of(s, pi);
	const struct pod *p = &s->c->pods[pi];

	if (g < 0 || !s->gs[g].host_self)
		return;
	for (uint32_t i = 0; i < s->n_res; i++)
		s->gs[g].host_pending.v[i] -= p->req.v[i];
}
