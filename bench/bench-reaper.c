/*
 * Reaper benchmark (./quickstart bench reaper, bench/reaper.sh): one
 * consolidation pass over a cluster of NODES nodes carrying PODS pods on
 * the shipped EC2 catalog, on one core. The cluster is made as the
 * watcher's replica holds it — Kubernetes JSON through decode/ into a
 * state store — with four v1 NodePools (general c/m/r spot and on-demand,
 * compute c on-demand, memory r spot, arm c/m arm64), WhenEmptyOrUnderutilized,
 * consolidateAfter 30s, Karpenter's default budget of 10%; nodes of ten
 * families in five sizes (large to 8xlarge) in three zones, a DaemonSet pod
 * on each, deployment pods packed to a mix of utilisation (4% empty, 24% at
 * 10-45%, 72% at 65-95%), 2% of the busy nodes blocked by a do-not-disrupt
 * pod or a PDB. Timed:
 *  - model: cluster_from_state(), which the reaper runs every pass;
 *  - pass: wi_compute() (kanna-reaper --what-if, the reaper's methods in
 *    its order: emptiness, expiration, drift, then consolidation-search.c,
 *    single-node only when multi-node found nothing);
 *  - multi / single: each consolidation method alone over the same
 *    candidates (consolidation_compute_multi/_single), ordered by pods;
 *  - scan: single-node's worst case, every candidate tried, one what-if
 *    each (what a pass costs when no candidate can go);
 * best of BENCH_REPEATS (default 3; the scan once); BENCH_ONLY=pass|multi|
 * single|scan runs that part alone (profiling). Prints "figure value" lines.
 * Cleanup style: none needed (exits on failure); the model and store are
 * freed at the end so that sanitizers see no leak.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/arena.h"
#include "common/clock.h"
#include "common/hashmap.h"
#include "decode/decode.h"
#include "model/from-state.h"
#include "reaper/consolidation.h"
#include "reaper/what-if.h"

#define BENCH_REPEATS 3
#define BENCH_SEED 18
#define REGION "us-east-1"
/* The clock the cluster is judged at (2026-03-01T00:00:00Z): fixed, so
 * that ages, lifetimes and so candidate order repeat run to run. */
#define NOW_S 1772323200LL
/* Nodes are 1 h to 25 days old; expireAfter 720h expires none. */
#define MAX_AGE_S (25LL * 24 * 3600)
#define DEPLOYMENTS_PER_POOL 50
#define DAEMON_CPU_M 100
#define DAEMON_MEM_MI 128
/* Deployments drawn for each pod placed, the closest in size kept: more
 * draws, closer to the pod count asked for. */
#define FILL_DRAWS 8

static const char *const zones[] = { REGION "a", REGION "b", REGION "c" };

struct pool_def {
	const char *name;
	const char *categories[3], *arch, *capacity[2];
	const char *families[3];
	unsigned share;  /* percent of the nodes */
	int mib_per_cpu; /* deployments' memory per vCPU */
};

static const struct pool_def pools[] = {
	{ "general", { "c", "m", "r" }, "amd64", { "spot", "on-demand" }, { "m6i", "c6i", "r6i" }, 45, 4096 },
	{ "compute", { "c" }, "amd64", { "on-demand" }, { "c6i", "c7i", "c5" }, 20, 2048 },
	{ "memory", { "r" }, "amd64", { "spot" }, { "r6i", "r7i", "r5" }, 20, 8192 },
	{ "arm", { "c", "m" }, "arm64", { "spot", "on-demand" }, { "m7g", "c7g", "m6g" }, 15, 4096 },
};
#define N_POOLS (sizeof(pools) / sizeof(pools[0]))

static const char *const sizes[] = { "large", "xlarge", "2xlarge", "4xlarge", "8xlarge" };
static const unsigned size_weight[] = { 10, 25, 30, 25, 10 };

struct deployment {
	char name[32];
	int64_t cpu_m, mem_mi;
};

struct gen {
	struct state_store store;
	struct arena arena;
	struct decoder dec;
	struct cluster *cat; /* the catalog, for the nodes' types */
	struct deployment deps[N_POOLS][DEPLOYMENTS_PER_POOL];
	struct hashmap blocked; /* node names a do-not-disrupt pod or a PDB holds */
	uint32_t n_pods, n_daemon_pods, n_empty, n_blocked;
	uint64_t seq;
};

static uint64_t rng_state = BENCH_SEED;

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

static double rng_unit(void)
{
	return (double)(rng_next() >> 11) / (double)(1ULL << 53);
}

static void die(const char *what, int r)
{
	fprintf(stderr, "Failed to %s: %s\n", what, strerror(r < 0 ? -r : r));
	exit(1);
}

static double now_ms(void)
{
	return (double)clock_monotonic_usec() / 1e3;
}

static void timestamp(char *buf, size_t size, int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;

	gmtime_r(&tt, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Decodes obj as the watcher would and stores it; takes obj. */
static void add(struct gen *g, const char *kind, json_t *obj)
{
	struct proto_object o;
	int r;

	if (!obj)
		die("build an object", -ENOMEM);
	if ((r = decode_object(&g->dec, kind, obj, &o)) < 0) {
		fprintf(stderr, "%s\n", g->dec.error);
		die("decode a generated object", r);
	}
	if ((r = state_store_apply(&g->store, PROTO_DELTA_ADD, &o, ++g->seq)) < 0)
		die("store an object", r);
	arena_reset(&g->arena);
	json_decref(obj);
}

static json_t *strings(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static void add_nodepool(struct gen *g, const struct pool_def *p)
{
	json_t *reqs = json_pack(
		"[{s:s,s:s,s:o},{s:s,s:s,s:[s]},{s:s,s:s,s:o}]", "key",
		"karpenter.k8s.aws/instance-category", "operator", "In", "values",
		strings(p->categories, 3), "key", "kubernetes.io/arch", "operator", "In", "values",
		p->arch, "key", "karpenter.sh/capacity-type", "operator", "In", "values",
		strings(p->capacity, 2));

	add(g, "NodePool",
	    json_pack("{s:s,s:s,s:{s:s},s:{s:{s:{s:{s:s,s:s,s:s},s:s,s:o}},s:{s:s,s:s,s:[{s:s}]}}}",
		      "apiVersion", "karpenter.sh/v1", "kind", "NodePool", "metadata", "name", p->name,
		      "spec", "template", "spec", "nodeClassRef", "group", "karpenter.k8s.aws", "kind",
		      "EC2NodeClass", "name", "default", "expireAfter", "720h", "requirements", reqs,
		      "disruption", "consolidationPolicy", "WhenEmptyOrUnderutilized",
		      "consolidateAfter", "30s", "budgets", "nodes", "10%"));
}

static void add_daemonset(struct gen *g)
{
	add(g, "DaemonSet",
	    json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:{s:{s:{s:s}},s:{s:[{s:s,s:s,s:{s:{s:s,s:s}}}]}}}}",
		      "apiVersion", "apps/v1", "kind", "DaemonSet", "metadata", "name", "node-agent",
		      "namespace", "kube-system", "spec", "template", "metadata", "labels", "app",
		      "node-agent", "spec", "containers", "name", "agent", "image", "agent", "resources",
		      "requests", "cpu", "100m", "memory", "128Mi"));
}

/* Decides the deployments of each pool: one shape each. */
static void make_deployments(struct gen *g)
{
	static const int64_t cpu[] = { 50, 100, 100, 200, 250, 300, 400, 500, 750, 1000 };
	static const double mem_factor[] = { 0.25, 0.5, 1.0, 1.5 };

	for (size_t p = 0; p < N_POOLS; p++)
		for (int d = 0; d < DEPLOYMENTS_PER_POOL; d++) {
			struct deployment *x = &g->deps[p][d];
			snprintf(x->name, sizeof(x->name), "%s-app-%d", pools[p].name, d);
			x->cpu_m = cpu[rng_pick(ARRAY_SIZE(cpu))];
			x->mem_mi = (int64_t)((double)x->cpu_m * pools[p].mib_per_cpu / 1000.0 *
					      mem_factor[rng_pick(ARRAY_SIZE(mem_factor))]);
			x->mem_mi = x->mem_mi < 64 ? 64 : x->mem_mi;
		}
}

static void add_pod(struct gen *g, const char *node, const char *ns, const char *name,
		    const char *app, const char *owner_kind, const char *owner, const char *pool,
		    int64_t cpu_m, int64_t mem_mi, bool do_not_disrupt)
{
	char cpu[32], mem[32];
	json_t *pod;

	snprintf(cpu, sizeof(cpu), "%" PRId64 "m", cpu_m);
	snprintf(mem, sizeof(mem), "%" PRId64 "Mi", mem_mi);
	pod = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:[{s:s,s:s,s:s,s:s,s:b}]},"
			"s:{s:s,s:[{s:s,s:s,s:{s:{s:s,s:s}}}]},s:{s:s}}",
			"apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", ns,
			"labels", "app", app, "ownerReferences", "apiVersion", "apps/v1", "kind",
			owner_kind, "name", owner, "uid", owner, "controller", 1, "spec", "nodeName",
			node, "containers", "name", "app", "image", app, "resources", "requests", "cpu",
			cpu, "memory", mem, "status", "phase", "Running");
	if (pod && pool)
		json_object_set_new(json_object_get(pod, "spec"), "nodeSelector",
				    json_pack("{s:s}", "karpenter.sh/nodepool", pool));
	if (pod && do_not_disrupt)
		json_object_set_new(json_object_get(pod, "metadata"), "annotations",
				    json_pack("{s:s}", "karpenter.sh/do-not-disrupt", "true"));
	add(g, "Pod", pod);
}

static const struct instance_type *find_type(const struct catalog *cat, const char *name)
{
	for (uint32_t t = 0; t < cat->n_types; t++)
		if (streq(strtab_str(cat->st, cat->types[t].name), name))
			return &cat->types[t];
	return NULL;
}

static const struct instance_type *pick_type(struct gen *g, const struct pool_def *p)
{
	for (;;) {
		unsigned w = rng_pick(100), s = 0;
		char name[64];
		const struct instance_type *it;
		while (w >= size_weight[s])
			w -= size_weight[s++];
		snprintf(name, sizeof(name), "%s.%s", p->families[rng_pick(3)], sizes[s]);
		if ((it = find_type(&g->cat->cat, name)))
			return it;
	}
}

static json_t *resources_json(const struct resources *r)
{
	char cpu[32], mem[32], pods[32], eph[32];

	snprintf(cpu, sizeof(cpu), "%" PRId64 "m", r->v[RES_CPU]);
	snprintf(mem, sizeof(mem), "%" PRId64, r->v[RES_MEMORY]);
	snprintf(pods, sizeof(pods), "%" PRId64, r->v[RES_PODS]);
	snprintf(eph, sizeof(eph), "%" PRId64, r->v[RES_EPHEMERAL_STORAGE]);
	return json_pack("{s:s,s:s,s:s,s:s}", "cpu", cpu, "memory", mem, "pods", pods,
			 "ephemeral-storage", eph);
}

/* A NodeClaim and its Ready Node of type it in pool p; the Node's name. */
static void add_node(struct gen *g, uint32_t i, const struct pool_def *p,
		     const struct instance_type *it, char *node, size_t size)
{
	const struct strtab *st = g->cat->cat.st;
	const char *zone = zones[rng_pick(3)], *ct = p->capacity[p->capacity[1] ? rng_pick(2) : 0];
	const char *type = strtab_str(st, it->name);
	char claim[64], provider[96], created[32];
	json_t *labels, *claim_labels, *more;

	snprintf(node, size, "ip-10-%u-%u-%u.ec2.internal", i >> 16 & 255, i >> 8 & 255, i & 255);
	snprintf(claim, sizeof(claim), "%s-%05u", p->name, i);
	snprintf(provider, sizeof(provider), "aws:///%s/i-%017x", zone, i + 1);
	timestamp(created, sizeof(created), NOW_S - 3600 - (int64_t)rng_pick((uint32_t)MAX_AGE_S));
	claim_labels = json_pack("{s:s,s:s,s:s,s:s}", "karpenter.sh/nodepool", p->name,
				 "node.kubernetes.io/instance-type", type,
				 "topology.kubernetes.io/zone", zone, "karpenter.sh/capacity-type", ct);
	labels = json_deep_copy(claim_labels);
	for (uint32_t l = 0; labels && l < it->n_labels; l++)
		json_object_set_new(labels, strtab_str(st, it->labels[l].key),
				    json_string(strtab_str(st, it->labels[l].value)));
	more = json_pack("{s:s,s:s,s:s,s:s,s:s}", "topology.kubernetes.io/region", REGION,
			 "kubernetes.io/hostname", node, "kubernetes.io/os", "linux",
			 "karpenter.sh/registered", "true", "karpenter.sh/initialized", "true");
	if (!labels || !more || json_object_update(labels, more) < 0)
		die("label a node", -ENOMEM);
	json_decref(more);
	add(g, "NodeClaim",
	    json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:{s:s,s:s,s:s},s:[]},s:{s:s,s:s,s:[{s:s,s:s}]}}",
		      "apiVersion", "karpenter.sh/v1", "kind", "NodeClaim", "metadata", "name", claim,
		      "creationTimestamp", created, "labels", claim_labels, "spec", "nodeClassRef",
		      "group", "karpenter.k8s.aws", "kind", "EC2NodeClass", "name", "default",
		      "requirements", "status", "nodeName", node, "providerID", provider, "conditions",
		      "type", "Ready", "status", "True"));
	add(g, "Node",
	    json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:[{s:s,s:s,s:s,s:s}]},s:{s:s},"
		      "s:{s:o,s:o,s:[{s:s,s:s}]}}",
		      "apiVersion", "v1", "kind", "Node", "metadata", "name", node, "creationTimestamp",
		      created, "labels", labels, "ownerReferences", "apiVersion", "karpenter.sh/v1",
		      "kind", "NodeClaim", "name", claim, "uid", claim, "spec", "providerID", provider,
		      "status", "capacity", resources_json(&it->capacity), "allocatable",
		      resources_json(&it->allocatable), "conditions", "type", "Ready", "status",
		      "True"));
}

struct node_plan {
	size_t pool;
	const struct instance_type *it;
	double u;
	char name[48];
	int64_t cpu_left, mem_left; /* m, Mi: the rest of u × allocatable */
	uint32_t pods_left;
};

/* Adds up to k pods of the node's pool's deployments within what is left
 * of its utilisation, each the closest of FILL_DRAWS draws to the size
 * left per pod; returns how many. */
static uint32_t fill(struct gen *g, struct node_plan *x, uint32_t k)
{
	uint32_t placed = 0;
	char name[96];

	for (uint32_t tries = 0; placed < k && x->pods_left && tries < 40; tries++) {
		const struct deployment *best = NULL;
		int64_t want = x->cpu_left / (int64_t)(k - placed);
		for (int d = 0; d < FILL_DRAWS; d++) {
			const struct deployment *y = &g->deps[x->pool][rng_pick(DEPLOYMENTS_PER_POOL)];
			if (y->cpu_m <= x->cpu_left && y->mem_mi <= x->mem_left &&
			    (!best || llabs(y->cpu_m - want) < llabs(best->cpu_m - want)))
				best = y;
		}
		if (!best)
			continue;
		snprintf(name, sizeof(name), "%s-%u", best->name, g->n_pods);
		add_pod(g, x->name, "default", name, best->name, "ReplicaSet", best->name,
			pools[x->pool].name, best->cpu_m, best->mem_mi, false);
		x->cpu_left -= best->cpu_m;
		x->mem_left -= best->mem_mi;
		x->pods_left--;
		placed++;
		g->n_pods++;
		tries = 0;
	}
	return placed;
}

/* 2% of the busy nodes: one more small pod that must not be disrupted (a
 * batch job), or one a PDB allowing no disruption covers. */
static void maybe_block(struct gen *g, const struct node_plan *x, uint32_t i)
{
	bool dnd = rng_pick(2);
	char name[96];
	int r;

	if (rng_pick(100) >= 2)
		return;
	snprintf(name, sizeof(name), "%s-%u", dnd ? "batch-job" : "ledger", i);
	add_pod(g, x->name, "default", name, dnd ? "batch-job" : "ledger", "ReplicaSet",
		dnd ? "batch-job" : "ledger", NULL, 50, 64, dnd);
	if ((r = hashmap_put(&g->blocked, x->name, (void *)1, NULL)) < 0)
		die("remember a node", r);
	g->n_pods++;
	g->n_blocked++;
}

static void generate(struct gen *g, uint32_t n_nodes, uint32_t n_pods)
{
	struct node_plan *plan = calloc(n_nodes + 1, sizeof(*plan));
	double weight = 0, per_weight;
	uint32_t *placed = calloc(n_nodes + 1, sizeof(*placed)), more = 1;
	char name[96];

	if (!plan || !placed)
		die("plan the nodes", -ENOMEM);
	make_deployments(g);
	for (size_t p = 0; p < N_POOLS; p++)
		add_nodepool(g, &pools[p]);
	add_daemonset(g);
	for (uint32_t i = 0; i < n_nodes; i++) {
		struct node_plan *x = &plan[i];
		unsigned w = rng_pick(100), mix = rng_pick(100);
		size_t p = 0;
		while (w >= pools[p].share)
			w -= pools[p++].share;
		x->pool = p;
		x->it = pick_type(g, &pools[p]);
		x->u = mix < 4 ? 0 : mix < 28 ? 0.10 + 0.35 * rng_unit() : 0.65 + 0.30 * rng_unit();
		x->cpu_left = (int64_t)(x->u * (double)(x->it->allocatable.v[RES_CPU] - DAEMON_CPU_M));
		x->mem_left = (int64_t)(x->u * (double)((x->it->allocatable.v[RES_MEMORY] >> 20) -
							 DAEMON_MEM_MI));
		x->pods_left = (uint32_t)x->it->allocatable.v[RES_PODS] - 2;
		weight += x->u * (double)x->it->allocatable.v[RES_CPU];
		add_node(g, i, &pools[p], x->it, x->name, sizeof(x->name));
		snprintf(name, sizeof(name), "node-agent-%u", i);
		add_pod(g, x->name, "kube-system", name, "node-agent", "DaemonSet", "node-agent", NULL,
			DAEMON_CPU_M, DAEMON_MEM_MI, false);
		g->n_daemon_pods++;
	}
	/* Pods in proportion to each node's share of the cpu in use, then one
	 * more a round on the nodes with room until PODS are placed. */
	per_weight = weight > 0 ? n_pods / weight : 0;
	for (uint32_t i = 0; i < n_nodes; i++) {
		double want = plan[i].u * (double)plan[i].it->allocatable.v[RES_CPU] * per_weight;
		placed[i] = fill(g, &plan[i], (uint32_t)(want + 0.5));
	}
	for (int raise = 0; raise < 4 && g->n_pods < n_pods; raise++) {
		for (more = 1; more && g->n_pods < n_pods;)
			for (uint32_t i = more = 0; i < n_nodes && g->n_pods < n_pods; i++)
				if (plan[i].u > 0 && fill(g, &plan[i], 1) > 0) {
					placed[i]++;
					more = 1;
				}
		/* Still short (the shapes did not fill u exactly): 2% more of
		 * every busy node below 85% (never past allocatable). */
		for (uint32_t i = 0; i < n_nodes; i++)
			if (plan[i].u > 0 && plan[i].u < 0.85) {
				plan[i].cpu_left += plan[i].it->allocatable.v[RES_CPU] / 50;
				plan[i].mem_left += (plan[i].it->allocatable.v[RES_MEMORY] >> 20) / 50;
			}
	}
	for (uint32_t i = 0; i < n_nodes; i++) {
		g->n_empty += placed[i] == 0;
		if (placed[i])
			maybe_block(g, &plan[i], i);
	}
	add(g, "PodDisruptionBudget",
	    json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:i,s:{s:{s:s}}},s:{s:i}}", "apiVersion", "policy/v1",
		      "kind", "PodDisruptionBudget", "metadata", "name", "ledger", "namespace",
		      "default", "spec", "maxUnavailable", 0, "selector", "matchLabels", "app",
		      "ledger", "status", "disruptionsAllowed", 0));
	free(placed);
	free(plan);
}

static struct cluster *model(const struct gen *g)
{
	struct from_state_options fo = { .region = REGION, .now_ms = NOW_S * 1000 };
	struct cluster *c;
	char err[512];
	int r;

	if ((r = cluster_from_state(&g->store, NULL, 0, &fo, &c, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s\n", err);
		die("model the cluster", r);
	}
	return c;
}

/* Consolidation's candidates in c, as consolidation.c gathers them (nodes
 * of a NodePool carrying pods that may move, not blocked), sorted, and
 * each pool's Underutilized budget (10% of its nodes, rounded up). */
static uint32_t candidates(const struct gen *g, struct cluster *c, struct consolidation_candidate *v,
			   uint32_t *budget)
{
	uint32_t *pods = calloc(c->st.n + 1, sizeof(*pods)), n = 0, total[N_POOLS + 1] = { 0 };

	if (!pods)
		die("count pods", -ENOMEM);
	for (uint32_t p = 0; p < c->n_pods; p++)
		if (c->pods[p].node != STR_NONE && !c->pods[p].dies_with_node)
			pods[c->pods[p].node]++;
	for (uint32_t i = 0; i < c->n_nodes; i++) {
		const struct node *x = &c->nodes[i];
		const char *name = strtab_str(&c->st, x->name);
		if (x->nodepool < 0 || x->in_flight)
			continue;
		total[x->nodepool]++;
		if (!pods[x->name] || hashmap_get(&g->blocked, name))
			continue;
		v[n++] = (struct consolidation_candidate){
			.node = i, .pool = (uint32_t)x->nodepool, .n_pods = pods[x->name],
			/* Every pod at priority 0; the lifetime left is not in
			 * the model (wi_compute() has it): order by pods. */
			.cost = pods[x->name] * consolidation_eviction_cost(0),
			.price = cluster_node_price(c, i),
			.spot = labels_get(x->labels, x->n_labels, K_CAPACITY_TYPE) == V_SPOT };
	}
	for (uint32_t p = 0; p < c->n_nodepools; p++)
		budget[p] = (total[p] + 9) / 10;
	consolidation_sort(v, n);
	free(pods);
	return n;
}

enum method { METHOD_MULTI, METHOD_SINGLE, METHOD_SCAN };

/* One method alone on a fresh model: its time, in *taken how many nodes
 * its command takes (0: none) and in *looked the candidates it tried
 * (single-node) or could try (multi-node). METHOD_SCAN: single-node's
 * worst case, every candidate tried (each alone, one what-if each);
 * *taken then counts those that could go. */
static double method(const struct gen *g, enum method m, uint32_t *taken, uint32_t *looked)
{
	struct cluster *c = model(g);
	struct consolidation_candidate *v = calloc(c->n_nodes + 1, sizeof(*v));
	uint32_t budget[N_POOLS + 1] = { 0 }, n;
	struct consolidation_command cmd;
	double t0, t;
	int r = 0;

	if (!v)
		die("allocate candidates", -ENOMEM);
	n = candidates(g, c, v, budget);
	struct consolidation_options o = { .budget = budget, .n_pools = c->n_nodepools, .max_split = 1 };
	*taken = 0;
	*looked = m == METHOD_MULTI && n > CONSOLIDATION_MAX_MULTI ? CONSOLIDATION_MAX_MULTI : n;
	t0 = now_ms();
	for (uint32_t i = 0; m == METHOD_SCAN && i < n && r >= 0; i++) {
		r = consolidation_compute_single(c, &v[i], 1, &o, &cmd);
		*taken += r >= 0 && cmd.method != CONSOLIDATION_NONE;
		consolidation_command_done(&cmd);
	}
	if (m != METHOD_SCAN)
		r = m == METHOD_MULTI ? consolidation_compute_multi(c, v, n, &o, &cmd)
				      : consolidation_compute_single(c, v, n, &o, &cmd);
	t = now_ms() - t0;
	if (r < 0)
		die("compute a consolidation", r);
	if (m != METHOD_SCAN) {
		*taken = cmd.method == CONSOLIDATION_NONE ? 0 : cmd.n_candidates;
		if (m == METHOD_SINGLE && cmd.method != CONSOLIDATION_NONE)
			*looked = cmd.candidates[0] + 1;
		consolidation_command_done(&cmd);
	}
	free(v);
	cluster_free(c);
	return t;
}

static long peak_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* The pass as kanna-reaper --what-if decides it, best of repeats: the
 * model's time in *model_ms, the report of the last in rep. */
static double pass(const struct gen *g, int repeats, double *model_ms, struct wi_report *rep)
{
	double best = 1e300;
	int r;

	*model_ms = 1e300;
	for (int i = 0; i < repeats; i++) {
		double t0 = now_ms(), t1, t2;
		struct cluster *c = model(g);
		t1 = now_ms();
		wi_report_done(rep);
		if ((r = wi_compute(c, &g->store, NOW_S * 1000, false, false, rep)) < 0)
			die("decide a pass", r);
		t2 = now_ms();
		*model_ms = t1 - t0 < *model_ms ? t1 - t0 : *model_ms;
		best = t2 - t1 < best ? t2 - t1 : best;
		cluster_free(c);
	}
	return best;
}

static void print_report(const struct wi_report *rep)
{
	uint32_t nodes[_WI_METHOD_MAX] = { 0 };
	double before[_WI_METHOD_MAX] = { 0 }, after[_WI_METHOD_MAX] = { 0 };
	const char *detail[_WI_METHOD_MAX] = { 0 };

	for (uint32_t i = 0; i < rep->n_decisions; i++) {
		const struct wi_decision *d = &rep->decisions[i];
		nodes[d->method] += d->n_nodes;
		before[d->method] += d->before;
		after[d->method] += d->after;
		detail[d->method] = *d->detail ? d->detail : detail[d->method];
	}
	for (int m = 0; m < _WI_METHOD_MAX; m++)
		printf("pass_%s %u nodes%s%s $%.2f/h -> $%.2f/h\n", wi_method_name(m), nodes[m],
		       detail[m] ? " " : "", detail[m] ?: "", before[m], after[m]);
	printf("pass_blocked %u\ncluster_per_hour %.2f %.2f\n", rep->n_blocked, rep->cluster_before,
	       rep->cluster_after);
}

int main(int argc, char **argv)
{
	static struct gen g;
	static const char *const names[] = { "multi", "single", "scan" };
	const char *only = getenv("BENCH_ONLY");
	double model_ms = 0, pass_ms = 0, t0;
	uint32_t n_nodes, n_pods;
	struct wi_report rep = { 0 };
	char path[4096];
	int repeats, r;

	if (argc != 3 || !(n_nodes = (uint32_t)strtoul(argv[1], NULL, 10)) ||
	    !(n_pods = (uint32_t)strtoul(argv[2], NULL, 10))) {
		fprintf(stderr, "usage: %s NODES PODS\n", argv[0]);
		return 2;
	}
	repeats = getenv("BENCH_REPEATS") ? atoi(getenv("BENCH_REPEATS")) : BENCH_REPEATS;
	repeats = repeats > 0 ? repeats : 1;
	state_store_init(&g.store);
	g.dec.arena = &g.arena;
	catalog_default_path(path, sizeof(path));
	if ((r = cluster_new(&g.cat)) < 0 ||
	    (r = catalog_load_tsv(&g.cat->cat, path, REGION, zones, 3)) < 0 ||
	    (r = catalog_finalize(&g.cat->cat)) < 0)
		die("load the catalog", r);
	t0 = now_ms();
	generate(&g, n_nodes, n_pods);
	cluster_free(g.cat);
	printf("setup_ms %.0f\nnodes %u\npods %u\ndaemon_pods %u\nempty_nodes %u\nblocked_nodes %u\n"
	       "store_rss_kb %ld\n", now_ms() - t0, n_nodes, g.n_pods, g.n_daemon_pods, g.n_empty,
	       g.n_blocked, peak_rss_kb());
	fflush(stdout);
	if (!only || streq(only, "pass")) {
		pass_ms = pass(&g, repeats, &model_ms, &rep);
		printf("model_ms %.1f\npass_ms %.1f\n", model_ms, pass_ms);
		print_report(&rep);
		fflush(stdout);
	}
	for (enum method m = METHOD_MULTI; m <= METHOD_SCAN; m++) {
		double best = 1e300;
		uint32_t taken = 0, looked = 0;
		if (only && !streq(only, names[m]))
			continue;
		/* The scan is the long one: once. */
		for (int i = 0; i < (m == METHOD_SCAN ? 1 : repeats); i++) {
			double t = method(&g, m, &taken, &looked);
			best = t < best ? t : best;
		}
		printf("%s_ms %.1f\n%s_taken %u of %u\n", names[m], best, names[m], taken, looked);
		fflush(stdout);
	}
	printf("peak_rss_kb %ld\n", peak_rss_kb());
	wi_report_done(&rep);
	hashmap_done(&g.blocked);
	state_store_done(&g.store);
	arena_done(&g.arena);
	return 0;
}
