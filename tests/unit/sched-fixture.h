/* Builders for solver tests: a cluster on Karpenter's fake catalog (or the
 * shipped one), NodePools, pods and constraints in one line each. */
#ifndef KANNA_TESTS_SCHED_FIXTURE_H
#define KANNA_TESTS_SCHED_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "model/solver.h"

static inline uint32_t fx_s(struct cluster *c, const char *s)
{
	uint32_t id = cluster_intern(c, s);
	cr_assert_neq(id, STR_NONE);
	return id;
}

static inline struct cluster *fx_cluster(uint32_t fake_types)
{
	struct cluster *c;
	cr_assert_eq(cluster_new(&c), 0);
	cr_assert_eq(catalog_add_fake_types(&c->cat, fake_types), 0);
	cr_assert_eq(catalog_finalize(&c->cat), 0);
	return c;
}

static inline void fx_req(struct cluster *c, struct requirements *r, const char *key,
			  enum req_op op, const char *v1, const char *v2)
{
	uint32_t v[2];
	size_t n = 0;
	if (v1)
		v[n++] = fx_s(c, v1);
	if (v2)
		v[n++] = fx_s(c, v2);
	cr_assert_eq(requirements_add(r, &c->st, fx_s(c, key), op, v, n, 0), 0);
}

static inline struct nodepool *fx_nodepool(struct cluster *c, const char *name, int32_t weight)
{
	struct nodepool *np = cluster_add_nodepool(c);
	uint32_t id = fx_s(c, name);
	cr_assert(np);
	np->name = id;
	np->weight = weight;
	cr_assert_eq(requirements_add(&np->reqs, &c->st, K_NODEPOOL, REQ_IN, &id, 1, 0), 0);
	return np;
}

static inline struct pod *fx_pod(struct cluster *c, const char *name, int64_t cpu_m, int64_t mem_mi)
{
	struct pod *p = cluster_add_pod(c);
	cr_assert(p);
	p->ns = fx_s(c, "default");
	p->name = fx_s(c, name);
	p->req.v[RES_CPU] = cpu_m;
	p->req.v[RES_MEMORY] = mem_mi << 20;
	p->req.v[RES_PODS] = 1;
	return p;
}

static inline void fx_label(struct cluster *c, struct pod *p, const char *k, const char *v)
{
	struct label *l = arena_alloc(&c->arena, (p->n_labels + 1) * sizeof(*l));
	cr_assert(l);
	if (p->n_labels)
		memcpy(l, p->labels, p->n_labels * sizeof(*l));
	l[p->n_labels++] = (struct label){ fx_s(c, k), fx_s(c, v) };
	labels_sort(l, p->n_labels);
	p->labels = l;
}

/* A topology term selecting "k=v" pods of the default namespace. */
static inline void fx_topo(struct cluster *c, struct pod *p, enum topo_kind kind, const char *key,
			   const char *k, const char *v, int32_t max_skew, bool soft, int32_t weight)
{
	struct topo_group g = { .kind = kind, .key = fx_s(c, key), .max_skew = max_skew };
	struct pod_topo *t = arena_alloc(&c->arena, (p->n_topo + 1) * sizeof(*t));
	uint32_t *ns = arena_alloc(&c->arena, sizeof(*ns));
	cr_assert(t && ns);
	*ns = fx_s(c, "default");
	g.namespaces = ns;
	g.n_namespaces = 1;
	fx_req(c, &g.selector, k, REQ_IN, v, NULL);
	int id = cluster_group(c, &g);
	cr_assert_geq(id, 0);
	if (p->n_topo)
		memcpy(t, p->topo, p->n_topo * sizeof(*t));
	t[p->n_topo++] = (struct pod_topo){ (uint32_t)id, soft, weight };
	p->topo = t;
}

static inline const char *fx_str(struct cluster *c, uint32_t id)
{
	return strtab_str(&c->st, id);
}

#endif
