/*
 * Scheduler benchmark. "diverse N" and "generic N" reproduce Karpenter's
 * scheduling_benchmark_test.go on its fake catalog (400 types, one NodePool
 * without limits, empty cluster; the diverse mix is its makeDiversePods:
 * one sixth each generic, zonal spread, hostname spread, hostname pod
 * affinity, zonal pod affinity, hostname anti-affinity, remainder generic;
 * cpu from {100m,250m,500m,1,1.5}, memory from {100Mi..4Gi}, seeded).
 * "diverse5 N" is that mix without hostname pod affinity, one fifth each.
 * "real N" packs N plain pods of 50 deployments onto the shipped catalog
 * (every type × 3 zones × 2 capacity types); real-selector (half arm64,
 * half zone-pinned), real-spread (zonal spread per deployment), real-anti
 * (hostname anti-affinity per deployment) and real-gpu (1 GPU each) too.
 * "pref-sat N" / "pref-unsat N": generic pods each with a preferred node
 * affinity term that can / cannot be met (the latter relaxed per pod).
 * Prints one line per run:
 * shape pods ms_per_solve pods_per_s nodeclaims unschedulable peak_rss_kb
 * (the fastest of BENCH_REPEATS solves, default 5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "model/solver.h"

/* Solves per figure: the fastest of these is reported (noisy shared CPUs). */
#define BENCH_REPEATS 5
#define BENCH_SEED 42

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL); /* splitmix64 */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t rng_pick(uint32_t n)
{
	return (uint32_t)(rng_next() % n);
}

static void die(const char *what, int r)
{
	fprintf(stderr, "Failed to %s: %s\n", what, strerror(r < 0 ? -r : r));
	exit(1);
}

static uint32_t S(struct cluster *c, const char *s)
{
	uint32_t id = cluster_intern(c, s);
	if (id == STR_NONE)
		die("intern a string", -12);
	return id;
}

static const char *const label_values[] = { "a", "b", "c", "d", "e", "f", "g" };

static struct pod *random_pod(struct cluster *c, uint32_t i)
{
	static const int64_t cpu[] = { 100, 250, 500, 1000, 1500 };
	static const int64_t mem[] = { 100, 256, 512, 1024, 2048, 4096 };
	struct pod *p = cluster_add_pod(c);
	char name[32];

	if (!p)
		die("add a pod", -12);
	snprintf(name, sizeof(name), "pod-%u", i);
	p->ns = S(c, "default");
	p->name = S(c, name);
	p->req.v[RES_CPU] = cpu[rng_pick(5)];
	p->req.v[RES_MEMORY] = mem[rng_pick(6)] << 20;
	p->req.v[RES_PODS] = 1;
	return p;
}

static void set_label(struct cluster *c, struct pod *p, const char *k, const char *v)
{
	p->labels = arena_alloc(&c->arena, sizeof(*p->labels));
	if (!p->labels)
		die("allocate labels", -12);
	p->labels[0] = (struct label){ S(c, k), S(c, v) };
	p->n_labels = 1;
}

static void add_term(struct cluster *c, struct pod *p, enum topo_kind kind, uint32_t key,
		     const char *k, const char *v)
{
	struct topo_group g = { .kind = kind, .key = key, .max_skew = 1 };
	uint32_t ns = S(c, "default"), val = S(c, v);
	int id;

	g.namespaces = arena_memdup(&c->arena, &ns, sizeof(ns));
	g.n_namespaces = 1;
	if (requirements_add(&g.selector, &c->st, S(c, k), REQ_IN, &val, 1, 0) < 0)
		die("add a selector", -12);
	id = cluster_group(c, &g);
	if (id < 0)
		die("add a group", id);
	p->topo = arena_alloc(&c->arena, sizeof(*p->topo));
	p->topo[0] = (struct pod_topo){ (uint32_t)id, false, 0 };
	p->n_topo = 1;
}

enum kind { GENERIC, SPREAD_ZONE, SPREAD_HOST, AFFINITY_HOST, AFFINITY_ZONE, ANTI_HOST };

static void make_pods(struct cluster *c, uint32_t n, enum kind kind, uint32_t *next)
{
	for (uint32_t i = 0; i < n; i++) {
		struct pod *p = random_pod(c, (*next)++);
		switch (kind) {
		case GENERIC:
			set_label(c, p, "my-label", label_values[rng_pick(7)]);
			break;
		case SPREAD_ZONE:
		case SPREAD_HOST:
			set_label(c, p, "my-label", label_values[rng_pick(7)]);
			add_term(c, p, TOPO_SPREAD, kind == SPREAD_ZONE ? K_ZONE : K_HOSTNAME, "my-label",
				 label_values[rng_pick(7)]);
			break;
		case AFFINITY_HOST:
		case AFFINITY_ZONE:
			set_label(c, p, "my-affininity", label_values[rng_pick(7)]);
			add_term(c, p, TOPO_AFFINITY, kind == AFFINITY_ZONE ? K_ZONE : K_HOSTNAME,
				 "my-affininity", label_values[rng_pick(7)]);
			break;
		case ANTI_HOST:
			set_label(c, p, "app", "nginx");
			add_term(c, p, TOPO_ANTI_AFFINITY, K_HOSTNAME, "app", "nginx");
			break;
		}
	}
}

/* A preferred node affinity term on every pod: satisfiable (a zone) or not
 * (an instance type that does not exist), relaxed per pod in the latter. */
static void add_preference(struct cluster *c, struct pod *p, bool satisfiable)
{
	uint32_t v = S(c, satisfiable ? "test-zone-1" : "no-such-type");
	p->prefs = calloc(1, sizeof(*p->prefs));
	if (!p->prefs)
		die("allocate a preference", -12);
	p->prefs[0].weight = 1;
	p->n_prefs = 1;
	if (requirements_add(&p->prefs[0].reqs, &c->st, satisfiable ? K_ZONE : K_INSTANCE_TYPE, REQ_IN,
			     &v, 1, 0) < 0)
		die("add a preference", -12);
}

/* kinds: 0 generic only, 6 Karpenter's makeDiversePods, 5 the same mix
 * without hostname pod affinity (one fifth each). */
static struct cluster *karpenter_cluster(uint32_t n, int kinds)
{
	struct cluster *c;
	uint32_t next = 0, id;
	int r;

	if ((r = cluster_new(&c)) < 0 || (r = catalog_add_fake_types(&c->cat, 400)) < 0 ||
	    (r = catalog_finalize(&c->cat)) < 0)
		die("build the fake catalog", r);
	struct nodepool *np = cluster_add_nodepool(c);
	if (!np)
		die("add a nodepool", -12);
	np->name = id = S(c, "default");
	if (requirements_add(&np->reqs, &c->st, K_NODEPOOL, REQ_IN, &id, 1, 0) < 0)
		die("add a requirement", -12);
	rng_state = BENCH_SEED;
	if (!kinds) {
		make_pods(c, n, GENERIC, &next);
		return c;
	}
	make_pods(c, n / kinds, GENERIC, &next);
	make_pods(c, n / kinds, SPREAD_ZONE, &next);
	make_pods(c, n / kinds, SPREAD_HOST, &next);
	if (kinds == 6)
		make_pods(c, n / kinds, AFFINITY_HOST, &next);
	make_pods(c, n / kinds, AFFINITY_ZONE, &next);
	make_pods(c, n / kinds, ANTI_HOST, &next);
	make_pods(c, n - next, GENERIC, &next);
	return c;
}

enum real_kind { REAL_PLAIN, REAL_SELECTOR, REAL_SPREAD, REAL_ANTI, REAL_GPU };

static struct cluster *real_cluster(uint32_t n, enum real_kind kind)
{
	static const char *const zones[] = { "us-east-1a", "us-east-1b", "us-east-1c" };
	static const int64_t cpu[] = { 100, 250, 500, 1000, 2000, 4000 };
	static const int64_t mem[] = { 128, 256, 512, 1024, 2048, 4096, 8192 };
	struct cluster *c;
	char path[4096];
	uint32_t id;
	int r;

	catalog_default_path(path, sizeof(path));
	if ((r = cluster_new(&c)) < 0 ||
	    (r = catalog_load_tsv(&c->cat, path, "us-east-1", zones, 3)) < 0 ||
	    (r = catalog_finalize(&c->cat)) < 0)
		die("load the catalog", r);
	struct nodepool *np = cluster_add_nodepool(c);
	np->name = id = S(c, "default");
	if (requirements_add(&np->reqs, &c->st, K_NODEPOOL, REQ_IN, &id, 1, 0) < 0)
		die("add a requirement", -12);
	rng_state = BENCH_SEED;
	/* 50 deployments with one shape each, pods spread evenly. */
	int64_t dc[50], dm[50];
	for (int d = 0; d < 50; d++) {
		dc[d] = cpu[rng_pick(6)];
		dm[d] = mem[rng_pick(7)] << 20;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct pod *p = random_pod(c, i);
		char app[16];
		uint32_t v;
		p->req.v[RES_CPU] = dc[i % 50];
		p->req.v[RES_MEMORY] = dm[i % 50];
		snprintf(app, sizeof(app), "app-%u", i % 50);
		set_label(c, p, "app", app);
		switch (kind) {
		case REAL_PLAIN:
			break;
		case REAL_SELECTOR: /* half on arm64, half pinned to a zone */
			v = i % 2 ? V_ARM64 : S(c, zones[i % 3]);
			if (requirements_add(&p->reqs, &c->st, i % 2 ? K_ARCH : K_ZONE, REQ_IN, &v, 1, 0) < 0)
				die("add a requirement", -12);
			break;
		case REAL_SPREAD:
			add_term(c, p, TOPO_SPREAD, K_ZONE, "app", app);
			break;
		case REAL_ANTI:
			add_term(c, p, TOPO_ANTI_AFFINITY, K_HOSTNAME, "app", app);
			break;
		case REAL_GPU:
			p->req.v[RES_NVIDIA_GPU] = 1;
			break;
		}
	}
	return c;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	struct cluster *c;
	struct rusage ru;
	double best = 1e300;
	uint32_t n, claims = 0, unsched = 0;

	static const char *const real_kinds[] = { "real", "real-selector", "real-spread", "real-anti", "real-gpu" };
	int real = -1;

	for (int i = 0; argc == 3 && i < (int)ARRAY_SIZE(real_kinds); i++)
		if (streq(argv[1], real_kinds[i]))
			real = i;
	if (argc != 3 || (real < 0 && strcmp(argv[1], "diverse") && strcmp(argv[1], "diverse5") &&
			  strcmp(argv[1], "generic") &&
			  strcmp(argv[1], "pref-sat") && strcmp(argv[1], "pref-unsat"))) {
		fprintf(stderr, "usage: %s diverse|diverse5|generic|pref-sat|pref-unsat|real|real-selector|real-spread|real-anti|real-gpu PODS\n",
			argv[0]);
		return 2;
	}
	n = (uint32_t)strtoul(argv[2], NULL, 10);
	bool pref = !strncmp(argv[1], "pref-", 5);
	c = real >= 0 ? real_cluster(n, (enum real_kind)real)
		      : karpenter_cluster(n, streq(argv[1], "diverse") ? 6 : streq(argv[1], "diverse5") ? 5 : 0);
	for (uint32_t i = 0; pref && i < c->n_pods; i++)
		add_preference(c, &c->pods[i], streq(argv[1], "pref-sat"));
	int repeats = getenv("BENCH_REPEATS") ? atoi(getenv("BENCH_REPEATS")) : BENCH_REPEATS;
	for (int i = 0; i < (repeats > 0 ? repeats : 1); i++) {
		struct sched_result *res;
		double t0 = now_ms();
		int r = sched_solve(c, &res);
		double t = now_ms() - t0;
		if (r < 0)
			die("solve", r);
		best = t < best ? t : best;
		claims = res->n_claims;
		unsched = res->n_unschedulable;
		if (getenv("BENCH_REASONS"))
			for (uint32_t u = 0; u < res->n_unschedulable && u < 5; u++)
				fprintf(stderr, "%s\n", res->unschedulable[u].reason);
		sched_result_free(res);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("%s %u %.3f %.0f %u %u %ld\n", argv[1], n, best, n / (best / 1e3), claims, unsched,
	       ru.ru_maxrss);
	cluster_free(c);
	return 0;
}
