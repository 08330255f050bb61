/*
 * Independent checker over seeded random inputs: builds random clusters
 * (NodePools with requirements, minValues, taints and cpu, memory and node
 * limits; DaemonSets; existing nodes, tainted or not, some of a NodePool,
 * with few pod slots and bound pods holding host ports; deployments with
 * selectors, tolerations, host ports and topology terms) from a plain
 * description, solves them, and re-verifies every placement against that
 * description with its own simple string logic — never the solver's
 * requirement algebra. Hard constraints only; preferences may be relaxed.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/solver.h"

#define CASES 8000
#define N_TYPES 40
#define MAX_POOLS 3
#define MAX_NODES 3
#define MAX_DEPLOYS 8
#define MAX_DAEMONSETS 3
/* Host ports deployments pick from: few, so that they collide. */
static const uint16_t host_ports[] = { 8080, 9090 };

static const char *const zones[] = { "test-zone-1", "test-zone-2", "test-zone-3" };

struct sel { /* key op values: the one node requirement a pod or pool has */
	const char *key;
	int op; /* 0 none, 1 In, 2 NotIn, 3 Gt, 4 Lt */
	const char *v[2];
	int n;
	char num[16]; /* storage for a Gt/Lt value */
};

struct spec_pool {
	char name[16];
	struct sel req[2];
	const char *team;     /* label team=... or NULL */
	const char *taint;    /* key of a NoSchedule taint or NULL */
	int64_t cpu_limit;    /* millicores, 0 none */
	int64_t mem_limit;    /* bytes, 0 none */
	int node_limit;       /* -1 none */
	int min_values;       /* instance-cpu Exists minValues N, 0 none */
	int32_t weight;
};

struct spec_node {
	char name[16];
	const char *zone, *team;
	const char *taint;    /* key of a NoSchedule taint or NULL */
	int pool;             /* NodePool it belongs to, -1 none */
	int64_t cpu, mem, pods;
};

struct spec_ds { /* a DaemonSet: runs on a pool it tolerates and selects */
	int64_t cpu, mem;
	const char *tolerate; /* taint key or NULL */
	const char *team;     /* nodeSelector team=... or NULL */
};

enum term { T_NONE, T_ZONE_SPREAD, T_HOST_SPREAD, T_HOST_ANTI, T_ZONE_AFFINITY, T_ZONE_ANTI };

struct spec_deploy {
	char app[16];
	int replicas;
	int64_t cpu, mem;
	struct sel sel;
	const char *tolerate; /* taint key or NULL */
	enum term term;
	int skew;
	uint16_t port;
	int bound_node;       /* -1 pending, else replicas bound to that node */
};

struct spec {
	struct spec_pool pools[MAX_POOLS];
	int n_pools;
	struct spec_node nodes[MAX_NODES];
	int n_nodes;
	struct spec_deploy dep[MAX_DEPLOYS];
	int n_dep;
	struct spec_ds ds[MAX_DAEMONSETS];
	int n_ds;
};

static uint64_t rs;
static uint32_t rnd(uint32_t n)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (uint32_t)(rs % n);
}

static const char *itoa_static(int v)
{
	static char buf[64][16];
	static int k;
	k = (k + 1) % 64;
	snprintf(buf[k], sizeof(buf[k]), "%d", v);
	return buf[k];
}

static void random_sel(struct sel *s, bool pool)
{
	memset(s, 0, sizeof(*s));
	switch (rnd(pool ? 5 : 6)) {
	case 0:
		s->key = "topology.kubernetes.io/zone";
		s->op = 1 + rnd(2);
		s->v[s->n++] = zones[rnd(3)];
		if (rnd(2))
			s->v[s->n++] = zones[rnd(3)];
		break;
	case 1:
		s->key = "karpenter.sh/capacity-type";
		s->op = 1;
		s->v[s->n++] = rnd(2) ? "spot" : "on-demand";
		break;
	case 2:
		s->key = "karpenter.k8s.aws/instance-cpu";
		s->op = 3 + rnd(2);
		snprintf(s->num, sizeof(s->num), "%d", 1 + (int)rnd(N_TYPES));
		s->v[s->n++] = s->num;
		break;
	case 5:
		s->key = "team";
		s->op = 1;
		s->v[s->n++] = rnd(2) ? "a" : "b";
		break;
	default:
		break;
	}
}

static void random_spec(struct spec *sp)
{
	memset(sp, 0, sizeof(*sp));
	sp->n_pools = 1 + (int)rnd(MAX_POOLS);
	for (int i = 0; i < sp->n_pools; i++) {
		struct spec_pool *p = &sp->pools[i];
		snprintf(p->name, sizeof(p->name), "pool%d", i);
		random_sel(&p->req[0], true);
		random_sel(&p->req[1], true);
		p->team = rnd(3) == 0 ? "a" : rnd(2) ? "b" : NULL;
		p->taint = rnd(4) == 0 ? "dedicated" : NULL;
		p->cpu_limit = rnd(3) == 0 ? (int64_t)(1 + rnd(64)) * 1000 : 0;
		p->mem_limit = rnd(4) == 0 ? (int64_t)(1 + rnd(128)) << 30 : 0;
		p->node_limit = rnd(4) == 0 ? (int)rnd(4) : -1;
		p->min_values = rnd(5) == 0 ? 1 + (int)rnd(5) : 0;
		p->weight = (int32_t)rnd(3);
	}
	sp->n_nodes = (int)rnd(MAX_NODES + 1);
	for (int i = 0; i < sp->n_nodes; i++) {
		struct spec_node *n = &sp->nodes[i];
		snprintf(n->name, sizeof(n->name), "node%d", i);
		n->zone = zones[rnd(3)];
		n->team = rnd(2) ? "a" : NULL;
		n->taint = rnd(3) == 0 ? "dedicated" : NULL;
		n->pool = rnd(3) == 0 ? (int)rnd((uint32_t)sp->n_pools) : -1;
		n->cpu = (int64_t)(1 + rnd(16)) * 1000;
		n->mem = (int64_t)(1 + rnd(32)) << 30;
		n->pods = 1 + (int)rnd(rnd(2) ? 4 : 110);
	}
	sp->n_ds = (int)rnd(MAX_DAEMONSETS + 1);
	for (int i = 0; i < sp->n_ds; i++) {
		struct spec_ds *d = &sp->ds[i];
		d->cpu = (int64_t)(1 + rnd(5)) * 100;
		d->mem = (int64_t)(1 + rnd(8)) << 26;
		d->tolerate = rnd(2) ? "dedicated" : NULL;
		d->team = rnd(3) == 0 ? (rnd(2) ? "a" : "b") : NULL;
	}
	sp->n_dep = 1 + (int)rnd(MAX_DEPLOYS);
	for (int i = 0; i < sp->n_dep; i++) {
		struct spec_deploy *d = &sp->dep[i];
		snprintf(d->app, sizeof(d->app), "app%d", i);
		d->replicas = 1 + (int)rnd(8);
		d->cpu = (int64_t)(1 + rnd(40)) * 100;
		d->mem = (int64_t)(1 + rnd(64)) << 26;
		random_sel(&d->sel, false);
		d->tolerate = rnd(3) == 0 ? "dedicated" : NULL;
		d->term = (enum term)rnd(6);
		d->skew = 1 + (int)rnd(2);
		d->port = rnd(4) == 0 ? host_ports[rnd(ARRAY_SIZE(host_ports))] : 0;
		d->bound_node = sp->n_nodes && rnd(5) == 0 ? (int)rnd((uint32_t)sp->n_nodes) : -1;
		if (d->bound_node >= 0) {
			d->replicas = 1;
			d->term = T_NONE;
		}
	}
}

/* ---- building the cluster (through the public model API) ---- */

static uint32_t S(struct cluster *c, const char *s)
{
	return cluster_intern(c, s);
}

static void add_sel(struct cluster *c, struct requirements *r, const struct sel *s)
{
	static const enum req_op ops[] = { 0, REQ_IN, REQ_NOT_IN, REQ_GT, REQ_LT };
	uint32_t v[2];
	if (!s->op)
		return;
	for (int i = 0; i < s->n; i++)
		v[i] = S(c, s->v[i]);
	cr_assert_eq(requirements_add(r, &c->st, S(c, s->key), ops[s->op], v, (size_t)s->n, 0), 0);
}

static struct label *labels2(struct cluster *c, const char *k1, const char *v1, const char *k2,
			     const char *v2, uint32_t *n)
{
	struct label *l = arena_alloc(&c->arena, 2 * sizeof(*l));
	*n = 0;
	if (k1 && v1)
		l[(*n)++] = (struct label){ S(c, k1), S(c, v1) };
	if (k2 && v2)
		l[(*n)++] = (struct label){ S(c, k2), S(c, v2) };
	labels_sort(l, *n);
	return l;
}

static void add_term(struct cluster *c, struct pod *p, const struct spec_deploy *d)
{
	static const struct { enum topo_kind k; const char *key; } m[] = {
		[T_ZONE_SPREAD] = { TOPO_SPREAD, "topology.kubernetes.io/zone" },
		[T_HOST_SPREAD] = { TOPO_SPREAD, "kubernetes.io/hostname" },
		[T_HOST_ANTI] = { TOPO_ANTI_AFFINITY, "kubernetes.io/hostname" },
		[T_ZONE_AFFINITY] = { TOPO_AFFINITY, "topology.kubernetes.io/zone" },
		[T_ZONE_ANTI] = { TOPO_ANTI_AFFINITY, "topology.kubernetes.io/zone" },
	};
	struct topo_group g = { .kind = m[d->term].k, .key = S(c, m[d->term].key), .max_skew = d->skew };
	uint32_t ns = S(c, "default"), v = S(c, d->app);
	g.namespaces = arena_memdup(&c->arena, &ns, sizeof(ns));
	g.n_namespaces = 1;
	cr_assert_eq(requirements_add(&g.selector, &c->st, S(c, "app"), REQ_IN, &v, 1, 0), 0);
	int id = cluster_group(c, &g);
	cr_assert_geq(id, 0);
	p->topo = arena_alloc(&c->arena, sizeof(*p->topo));
	p->topo[0] = (struct pod_topo){ (uint32_t)id, false, 0 };
	p->n_topo = 1;
}

static struct cluster *build(const struct spec *sp)
{
	struct cluster *c;
	cr_assert_eq(cluster_new(&c), 0);
	cr_assert_eq(catalog_add_fake_types(&c->cat, N_TYPES), 0);
	cr_assert_eq(catalog_finalize(&c->cat), 0);
	for (int i = 0; i < sp->n_pools; i++) {
		const struct spec_pool *sp_p = &sp->pools[i];
		struct nodepool *np = cluster_add_nodepool(c);
		np->name = S(c, sp_p->name);
		np->weight = sp_p->weight;
		cr_assert_eq(requirements_add(&np->reqs, &c->st, K_NODEPOOL, REQ_IN, &np->name, 1, 0), 0);
		add_sel(c, &np->reqs, &sp_p->req[0]);
		add_sel(c, &np->reqs, &sp_p->req[1]);
		if (sp_p->team) {
			uint32_t v = S(c, sp_p->team);
			cr_assert_eq(requirements_add(&np->reqs, &c->st, S(c, "team"), REQ_IN, &v, 1, 0), 0);
		}
		if (sp_p->taint) {
			np->taints = arena_alloc(&c->arena, sizeof(*np->taints));
			np->taints[0] = (struct taint){ S(c, sp_p->taint), STR_NONE, TAINT_NO_SCHEDULE };
			np->n_taints = 1;
		}
		if (sp_p->cpu_limit)
			np->limits.v[RES_CPU] = sp_p->cpu_limit;
		if (sp_p->mem_limit)
			np->limits.v[RES_MEMORY] = sp_p->mem_limit;
		if (sp_p->node_limit >= 0)
			np->node_limit = sp_p->node_limit;
		if (sp_p->min_values)
			cr_assert_eq(requirements_add(&np->reqs, &c->st, K_INSTANCE_CPU, REQ_EXISTS, NULL, 0,
						      (uint32_t)sp_p->min_values), 0);
	}
	for (int i = 0; i < sp->n_nodes; i++) {
		const struct spec_node *sn = &sp->nodes[i];
		struct node *n = cluster_add_node(c);
		struct label *l = arena_alloc(&c->arena, 3 * sizeof(*l));
		n->name = S(c, sn->name);
		n->labels = l;
		l[n->n_labels++] = (struct label){ K_ZONE, S(c, sn->zone) };
		if (sn->team)
			l[n->n_labels++] = (struct label){ S(c, "team"), S(c, sn->team) };
		if (sn->pool >= 0)
			l[n->n_labels++] = (struct label){ K_NODEPOOL, S(c, sp->pools[sn->pool].name) };
		labels_sort(l, n->n_labels);
		if (sn->taint) {
			n->taints = arena_alloc(&c->arena, sizeof(*n->taints));
			n->taints[0] = (struct taint){ S(c, sn->taint), STR_NONE, TAINT_NO_SCHEDULE };
			n->n_taints = 1;
		}
		n->allocatable.v[RES_CPU] = sn->cpu;
		n->allocatable.v[RES_MEMORY] = sn->mem;
		n->allocatable.v[RES_PODS] = sn->pods;
		n->capacity = n->allocatable;
	}
	for (int i = 0; i < sp->n_ds; i++) {
		const struct spec_ds *d = &sp->ds[i];
		struct pod *p = cluster_add_daemonset(c);
		p->ns = S(c, "kube-system");
		p->name = S(c, itoa_static(9000 + i));
		p->req.v[RES_CPU] = d->cpu;
		p->req.v[RES_MEMORY] = d->mem;
		p->req.v[RES_PODS] = 1;
		if (d->tolerate) {
			p->tols = arena_alloc(&c->arena, sizeof(*p->tols));
			p->tols[0] = (struct toleration){ S(c, d->tolerate), STR_NONE, true, -1 };
			p->n_tols = 1;
		}
		if (d->team) {
			uint32_t v = S(c, d->team);
			cr_assert_eq(requirements_add(&p->reqs, &c->st, S(c, "team"), REQ_IN, &v, 1, 0), 0);
		}
	}
	for (int i = 0; i < sp->n_dep; i++) {
		const struct spec_deploy *d = &sp->dep[i];
		for (int r = 0; r < d->replicas; r++) {
			struct pod *p = cluster_add_pod(c);
			p->ns = S(c, "default");
			p->name = S(c, itoa_static(i * 100 + r));
			p->labels = labels2(c, "app", d->app, NULL, NULL, &p->n_labels);
			p->req.v[RES_CPU] = d->cpu;
			p->req.v[RES_MEMORY] = d->mem;
			p->req.v[RES_PODS] = 1;
			add_sel(c, &p->reqs, &d->sel);
			if (d->tolerate) {
				p->tols = arena_alloc(&c->arena, sizeof(*p->tols));
				p->tols[0] = (struct toleration){ S(c, d->tolerate), STR_NONE, true, -1 };
				p->n_tols = 1;
			}
			if (d->port) {
				p->host_ports = arena_memdup(&c->arena, &d->port, sizeof(d->port));
				p->n_host_ports = 1;
			}
			if (d->term != T_NONE)
				add_term(c, p, d);
			if (d->bound_node >= 0)
				p->node = S(c, sp->nodes[d->bound_node].name);
		}
	}
	cluster_assign_nodepools(c);
	cluster_compute_daemon_overhead(c);
	return c;
}

/* ---- the checker: plain strings and integers ---- */

struct place {
	const char *zones[3];
	int n_zones;
	const char *cts[2];
	int n_cts;
	const char *team;  /* node label team */
	const char *pool;  /* NULL: not ours */
	int64_t type_cpu;  /* instance-cpu label (claims); 0 for nodes */
};

static bool one_value_ok(const struct sel *s, const char *val)
{
	bool in = false;
	for (int i = 0; i < s->n; i++)
		in |= val && !strcmp(val, s->v[i]);
	switch (s->op) {
	case 1:
		return in;
	case 2:
		return !in;
	case 3:
		return val && atoll(val) > atoll(s->v[0]);
	case 4:
		return val && atoll(val) < atoll(s->v[0]);
	}
	return true;
}

/* Every way the place may turn out (each zone, each capacity type) must satisfy s. */
static bool sel_ok(const struct sel *s, const struct place *pl)
{
	if (!s->op)
		return true;
	if (!strcmp(s->key, "topology.kubernetes.io/zone")) {
		for (int i = 0; i < pl->n_zones; i++)
			if (!one_value_ok(s, pl->zones[i]))
				return false;
		return pl->n_zones > 0 || one_value_ok(s, NULL);
	}
	if (!strcmp(s->key, "karpenter.sh/capacity-type")) {
		for (int i = 0; i < pl->n_cts; i++)
			if (!one_value_ok(s, pl->cts[i]))
				return false;
		return pl->n_cts > 0 || one_value_ok(s, NULL);
	}
	if (!strcmp(s->key, "karpenter.k8s.aws/instance-cpu"))
		return one_value_ok(s, pl->type_cpu ? itoa_static((int)pl->type_cpu) : NULL);
	if (!strcmp(s->key, "team"))
		return one_value_ok(s, pl->team);
	return false;
}

static int64_t type_cpu_label(const struct cluster *c, uint32_t t)
{
	const struct instance_type *it = &c->cat.types[t];
	return atoll(strtab_str(&c->st, labels_get(it->labels, it->n_labels, K_INSTANCE_CPU)));
}

static bool type_has_offering(const struct cluster *c, uint32_t t, const char *zone, const char *ct)
{
	const struct instance_type *it = &c->cat.types[t];
	for (uint32_t o = 0; o < it->n_offerings; o++)
		if (it->offerings[o].available &&
		    !strcmp(strtab_str(&c->st, c->cat.zones[it->offerings[o].zone]), zone) &&
		    !strcmp(it->offerings[o].capacity_type == CT_SPOT ? "spot" : "on-demand", ct))
			return true;
	return false;
}

static const struct spec_deploy *dep_of(const struct spec *sp, const struct cluster *c, uint32_t p)
{
	return &sp->dep[atoi(strtab_str(&c->st, c->pods[p].name)) / 100];
}

static void dump_sel(const struct sel *s)
{
	if (s->op)
		fprintf(stderr, " %s op%d %s %s", s->key, s->op, s->v[0], s->n > 1 ? s->v[1] : "");
}

/* CHECKER_DUMP=seed prints that case (to debug a failure). */
static void dump(uint64_t seed, const struct spec *sp)
{
	const char *want = getenv("CHECKER_DUMP");
	if (!want || strtoull(want, NULL, 10) != seed)
		return;
	for (int i = 0; i < sp->n_pools; i++) {
		fprintf(stderr, "pool %s w%d team=%s taint=%s limit cpu=%lld mem=%lld nodes=%d minValues=%d:",
			sp->pools[i].name, sp->pools[i].weight, sp->pools[i].team ? sp->pools[i].team : "-",
			sp->pools[i].taint ? sp->pools[i].taint : "-", (long long)sp->pools[i].cpu_limit,
			(long long)sp->pools[i].mem_limit, sp->pools[i].node_limit, sp->pools[i].min_values);
		dump_sel(&sp->pools[i].req[0]);
		dump_sel(&sp->pools[i].req[1]);
		fprintf(stderr, "\n");
	}
	for (int i = 0; i < sp->n_nodes; i++)
		fprintf(stderr, "node %s %s team=%s taint=%s pool=%d cpu=%lld mem=%lld pods=%lld\n",
			sp->nodes[i].name, sp->nodes[i].zone, sp->nodes[i].team ? sp->nodes[i].team : "-",
			sp->nodes[i].taint ? sp->nodes[i].taint : "-", sp->nodes[i].pool,
			(long long)sp->nodes[i].cpu, (long long)sp->nodes[i].mem, (long long)sp->nodes[i].pods);
	for (int i = 0; i < sp->n_ds; i++)
		fprintf(stderr, "daemonset cpu=%lld mem=%lld tol=%s team=%s\n", (long long)sp->ds[i].cpu,
			(long long)sp->ds[i].mem, sp->ds[i].tolerate ? sp->ds[i].tolerate : "-",
			sp->ds[i].team ? sp->ds[i].team : "-");
	for (int i = 0; i < sp->n_dep; i++) {
		fprintf(stderr, "dep %s x%d cpu=%lld mem=%lld term=%d skew=%d bound=%d tol=%s port=%u:",
			sp->dep[i].app, sp->dep[i].replicas, (long long)sp->dep[i].cpu,
			(long long)sp->dep[i].mem, sp->dep[i].term, sp->dep[i].skew, sp->dep[i].bound_node,
			sp->dep[i].tolerate ? sp->dep[i].tolerate : "-", sp->dep[i].port);
		dump_sel(&sp->dep[i].sel);
		fprintf(stderr, "\n");
	}
}

/* Does DaemonSet d run on nodes of pool p? It must tolerate the pool's
 * taint, and a team selector needs the pool to carry that team label. */
static bool ds_runs_on(const struct spec_ds *d, const struct spec_pool *p)
{
	if (p->taint && !(d->tolerate && !strcmp(d->tolerate, p->taint)))
		return false;
	return !d->team || (p->team && !strcmp(p->team, d->team));
}

/* No host port twice on one place, unless only bound pods hold it (the
 * input's doing, not the solver's). */
static void check_ports(const struct spec *sp, const struct cluster *c, const struct sched_result *res,
			uint32_t nb, uint64_t seed)
{
	for (uint32_t b = 0; b < nb; b++)
		for (size_t k = 0; k < ARRAY_SIZE(host_ports); k++) {
			int holders = 0, placed = 0;
			for (uint32_t p = 0; p < c->n_pods; p++) {
				const struct spec_deploy *d = dep_of(sp, c, p);
				if (res->pod_bin[p] != (int32_t)b || d->port != host_ports[k])
					continue;
				holders++;
				placed += d->bound_node < 0;
			}
			cr_assert(holders <= 1 || !placed, "seed %llu: host port %u taken %d times on bin %u",
				  (unsigned long long)seed, host_ports[k], holders, b);
		}
}

static void check_case(uint64_t seed)
{
	struct spec sp;
	struct sched_result *res;
	rs = seed * 2654435761ULL + 1;
	random_spec(&sp);
	dump(seed, &sp);
	struct cluster *c = build(&sp);
	int sr = sched_solve(c, &res);
	cr_assert_eq(sr, 0, "seed %llu: solve returned %d", (unsigned long long)seed, sr);

	uint32_t nb = c->n_nodes + res->n_claims;
	struct place *pl = calloc(nb, sizeof(*pl));
	int64_t *cpu = calloc(nb, sizeof(int64_t)), *mem = calloc(nb, sizeof(int64_t));
	int *seen = calloc(nb, sizeof(int)); /* pods placed by this solve, per bin */
	for (uint32_t n = 0; n < c->n_nodes; n++) {
		pl[n].zones[pl[n].n_zones++] = sp.nodes[n].zone;
		pl[n].team = sp.nodes[n].team;
	}
	/* Claims: every type and offering listed must be a valid launch. */
	int64_t reserved[MAX_POOLS] = { 0 }, reserved_mem[MAX_POOLS] = { 0 }, claims[MAX_POOLS] = { 0 };
	for (uint32_t k = 0; k < res->n_claims; k++) {
		const struct sched_claim *cl = &res->claims[k];
		struct place *p = &pl[c->n_nodes + k];
		const struct spec_pool *pool = &sp.pools[cl->nodepool];
		cr_assert(cl->n_types > 0 && cl->n_types <= 60, "seed %llu", (unsigned long long)seed);
		p->pool = pool->name;
		p->team = pool->team;
		for (int z = 0; z < 3; z++)
			if (cl->zones >> z & 1)
				p->zones[p->n_zones++] = strtab_str(&c->st, c->cat.zones[z]);
		if (cl->capacity_types & 1)
			p->cts[p->n_cts++] = "spot";
		if (cl->capacity_types & 2)
			p->cts[p->n_cts++] = "on-demand";
		cr_assert(p->n_zones && p->n_cts);
		int64_t max_cpu = 0, max_mem = 0, min_type_cpu = INT64_MAX, max_type_cpu = 0;
		for (uint32_t i = 0; i < cl->n_types; i++) {
			uint32_t t = cl->types[i];
			bool any = false;
			for (int z = 0; z < p->n_zones; z++)
				for (int q = 0; q < p->n_cts; q++)
					any |= type_has_offering(c, t, p->zones[z], p->cts[q]);
			cr_assert(any, "seed %llu: type without offering", (unsigned long long)seed);
			max_cpu = MAX(max_cpu, c->cat.types[t].capacity.v[RES_CPU]);
			max_mem = MAX(max_mem, c->cat.types[t].capacity.v[RES_MEMORY]);
			min_type_cpu = MIN(min_type_cpu, type_cpu_label(c, t));
			max_type_cpu = MAX(max_type_cpu, type_cpu_label(c, t));
			/* The type satisfies the pool's own requirements. */
			struct place one = *p;
			one.type_cpu = type_cpu_label(c, t);
			cr_assert(sel_ok(&pool->req[0], &one) && sel_ok(&pool->req[1], &one),
				  "seed %llu: type outside the pool's requirements", (unsigned long long)seed);
		}
		reserved[cl->nodepool] += max_cpu;
		reserved_mem[cl->nodepool] += max_mem;
		claims[cl->nodepool]++;
		/* minValues: that many distinct instance-cpu values (one per fake type). */
		cr_assert_geq((int)cl->n_types, pool->min_values, "seed %llu: minValues %d, %u types",
			      (unsigned long long)seed, pool->min_values, cl->n_types);
		/* Pods and the pool's DaemonSets fit every listed type. */
		int64_t ds_cpu = 0, ds_mem = 0, ds_pods = 0;
		for (int d = 0; d < sp.n_ds; d++)
			if (ds_runs_on(&sp.ds[d], pool)) {
				ds_cpu += sp.ds[d].cpu;
				ds_mem += sp.ds[d].mem;
				ds_pods++;
			}
		p->type_cpu = min_type_cpu;
		for (uint32_t i = 0; i < cl->n_types; i++) {
			const struct resources *a = &c->cat.types[cl->types[i]].allocatable;
			int64_t sc = ds_cpu, sm = ds_mem;
			for (uint32_t j = 0; j < cl->n_pods; j++) {
				sc += c->pods[cl->pods[j]].req.v[RES_CPU];
				sm += c->pods[cl->pods[j]].req.v[RES_MEMORY];
			}
			cr_assert(sc <= a->v[RES_CPU] && sm <= a->v[RES_MEMORY] &&
				  (int64_t)cl->n_pods + ds_pods <= a->v[RES_PODS],
				  "seed %llu: pods and DaemonSets exceed a listed type", (unsigned long long)seed);
		}
		(void)max_type_cpu;
	}
	/* Limits: what the pool's nodes have plus the largest type of each
	 * claim, whenever the pool got a claim at all. */
	for (int i = 0; i < sp.n_pools; i++) {
		int64_t cpu_in_use = 0, mem_in_use = 0, nodes_in_use = 0;
		for (int n = 0; n < sp.n_nodes; n++)
			if (sp.nodes[n].pool == i) {
				cpu_in_use += sp.nodes[n].cpu;
				mem_in_use += sp.nodes[n].mem;
				nodes_in_use++;
			}
		if (!claims[i])
			continue;
		if (sp.pools[i].cpu_limit)
			cr_assert_leq(cpu_in_use + reserved[i], sp.pools[i].cpu_limit, "seed %llu: cpu limit",
				      (unsigned long long)seed);
		if (sp.pools[i].mem_limit)
			cr_assert_leq(mem_in_use + reserved_mem[i], sp.pools[i].mem_limit,
				      "seed %llu: memory limit", (unsigned long long)seed);
		if (sp.pools[i].node_limit >= 0)
			cr_assert_leq(nodes_in_use + claims[i], sp.pools[i].node_limit, "seed %llu: node limit",
				      (unsigned long long)seed);
	}
	/* Every pod: placed once, on a place satisfying it. */
	for (uint32_t p = 0; p < c->n_pods; p++) {
		const struct spec_deploy *d = dep_of(&sp, c, p);
		int32_t b = res->pod_bin[p];
		if (d->bound_node >= 0) {
			cr_assert_eq(b, d->bound_node);
		} else if (b < 0)
			continue;
		cr_assert_lt((uint32_t)b, nb);
		cpu[b] += c->pods[p].req.v[RES_CPU];
		mem[b] += c->pods[p].req.v[RES_MEMORY];
		if (d->bound_node >= 0)
			continue;
		seen[b]++;
		struct place one = pl[b];
		cr_assert(sel_ok(&d->sel, &one), "seed %llu: pod %u selector", (unsigned long long)seed, p);
		if ((uint32_t)b < c->n_nodes) {
			const char *taint = sp.nodes[b].taint;
			cr_assert(!taint || (d->tolerate && !strcmp(d->tolerate, taint)),
				  "seed %llu: pod %u on a node whose taint it does not tolerate",
				  (unsigned long long)seed, p);
		}
		if ((uint32_t)b >= c->n_nodes) {
			/* Upper end of the type range too, for Gt/Lt on instance-cpu. */
			const struct sched_claim *cl = &res->claims[(uint32_t)b - c->n_nodes];
			for (uint32_t i = 0; i < cl->n_types; i++) {
				one.type_cpu = type_cpu_label(c, cl->types[i]);
				cr_assert(sel_ok(&d->sel, &one), "seed %llu: pod %u type %lld vs %s %d %s (pool %s)",
					  (unsigned long long)seed, p, (long long)one.type_cpu, d->sel.key, d->sel.op,
					  d->sel.v[0], sp.pools[cl->nodepool].name);
			}
			const struct spec_pool *pool = &sp.pools[cl->nodepool];
			cr_assert(!pool->taint || (d->tolerate && !strcmp(d->tolerate, pool->taint)),
				  "seed %llu: taint", (unsigned long long)seed);
		}
	}
	for (uint32_t n = 0; n < c->n_nodes; n++) {
		int64_t pods = 0;
		for (uint32_t p = 0; p < c->n_pods; p++)
			pods += res->pod_bin[p] == (int32_t)n;
		cr_assert(!seen[n] || (cpu[n] <= sp.nodes[n].cpu && mem[n] <= sp.nodes[n].mem &&
				       pods <= sp.nodes[n].pods),
			  "seed %llu: node %u overcommitted", (unsigned long long)seed, n);
	}
	check_ports(&sp, c, res, nb, seed);
	/* Topology, per deployment (all its pods carry the term and the label). */
	for (int i = 0; i < sp.n_dep; i++) {
		const struct spec_deploy *d = &sp.dep[i];
		int per_bin[64] = { 0 }, per_zone[3] = { 0 };
		for (uint32_t p = 0; p < c->n_pods; p++) {
			int32_t b = res->pod_bin[p];
			if (b < 0 || dep_of(&sp, c, p) != d)
				continue;
			cr_assert_lt(b, 64);
			per_bin[b]++;
			if (d->term == T_ZONE_SPREAD || d->term == T_ZONE_AFFINITY || d->term == T_ZONE_ANTI) {
				cr_assert_eq(pl[b].n_zones, 1, "seed %llu: zonal pod on an unpinned claim",
					     (unsigned long long)seed);
				for (int z = 0; z < 3; z++)
					per_zone[z] += !strcmp(pl[b].zones[0], zones[z]);
			}
		}
		for (uint32_t b = 0; b < nb && b < 64; b++) {
			if (d->term == T_HOST_ANTI)
				cr_assert_leq(per_bin[b], 1, "seed %llu: anti-affinity", (unsigned long long)seed);
			if (d->term == T_HOST_SPREAD)
				cr_assert_leq(per_bin[b], d->skew, "seed %llu: hostname spread", (unsigned long long)seed);
		}
		if (d->term == T_ZONE_ANTI)
			for (int z = 0; z < 3; z++)
				cr_assert_leq(per_zone[z], 1, "seed %llu: zonal anti-affinity", (unsigned long long)seed);
		if (d->term == T_ZONE_AFFINITY)
			cr_assert_leq((per_zone[0] > 0) + (per_zone[1] > 0) + (per_zone[2] > 0), 1,
				      "seed %llu: zonal affinity", (unsigned long long)seed);
		if (d->term == T_ZONE_SPREAD) {
			/* Domains: zones the pod's own selection allows where some pool
			 * can launch (spot is offered in zones 1-2 only) or a node is. */
			int lo = 1 << 30, hi = 0;
			for (int z = 0; z < 3; z++) {
				struct place zp = { .zones = { zones[z] }, .n_zones = 1 };
				bool allowed = strcmp(d->sel.key ? d->sel.key : "", "topology.kubernetes.io/zone") ||
					       sel_ok(&d->sel, &zp);
				bool reachable = false;
				for (int q = 0; q < sp.n_pools; q++) {
					bool zone_ok = true, spot = true, od = true;
					for (int k = 0; k < 2; k++) {
						const struct sel *ps = &sp.pools[q].req[k];
						if (!ps->op)
							continue;
						if (!strcmp(ps->key, "topology.kubernetes.io/zone"))
							zone_ok &= one_value_ok(ps, zones[z]);
						if (!strcmp(ps->key, "karpenter.sh/capacity-type")) {
							spot &= one_value_ok(ps, "spot");
							od &= one_value_ok(ps, "on-demand");
						}
					}
					bool any_type = false; /* instance-cpu bounds may exclude all */
					for (int t = 1; t <= N_TYPES; t++) {
						bool ok = true;
						for (int k = 0; k < 2; k++)
							if (sp.pools[q].req[k].op &&
							    !strcmp(sp.pools[q].req[k].key, "karpenter.k8s.aws/instance-cpu"))
								ok &= one_value_ok(&sp.pools[q].req[k], itoa_static(t));
						any_type |= ok;
					}
					reachable |= any_type && zone_ok && (od || (spot && z < 2));
				}
				for (int n = 0; n < sp.n_nodes; n++)
					reachable |= !strcmp(sp.nodes[n].zone, zones[z]);
				if (!allowed || !reachable)
					continue;
				lo = MIN(lo, per_zone[z]);
				hi = MAX(hi, per_zone[z]);
			}
			cr_assert_leq(hi - lo, d->skew, "seed %llu: zonal skew %d-%d", (unsigned long long)seed, hi, lo);
		}
	}
	for (uint32_t u = 0; u < res->n_unschedulable; u++) {
		cr_assert_eq(res->pod_bin[res->unschedulable[u].pod], -1);
		cr_assert(res->unschedulable[u].reason && *res->unschedulable[u].reason);
	}
	free(pl);
	free(cpu);
	free(mem);
	free(seen);
	sched_result_free(res);
	cluster_free(c);
}

Test(checker, thousands_of_random_plans_satisfy_every_hard_constraint, .timeout = 120)
{
	for (uint64_t seed = 1; seed <= CASES; seed++)
		check_case(seed);
}

Test(checker, unconstrained_small_pods_are_always_placed)
{
	for (uint64_t seed = 1; seed <= 200; seed++) {
		struct spec sp;
		struct sched_result *res;
		rs = seed;
		random_spec(&sp);
		sp.n_pools = 1;
		memset(&sp.pools[0], 0, sizeof(sp.pools[0]));
		snprintf(sp.pools[0].name, sizeof(sp.pools[0].name), "free");
		sp.pools[0].node_limit = -1;
		for (int i = 0; i < sp.n_dep; i++) {
			memset(&sp.dep[i].sel, 0, sizeof(sp.dep[i].sel));
			sp.dep[i].term = T_NONE;
			sp.dep[i].bound_node = -1;
		}
		struct cluster *c = build(&sp);
		cr_assert_eq(sched_solve(c, &res), 0);
		cr_assert_eq(res->n_unschedulable, 0, "seed %llu: %s", (unsigned long long)seed,
			     res->n_unschedulable ? res->unschedulable[0].reason : "");
		sched_result_free(res);
		cluster_free(c);
	}
}
