/*
 * The catalog part of the scheduler's model kept between batches
 * (model/model-base.h): a batch planned over the kept base gets the very
 * plan it gets over a catalog loaded for it alone — plain, zonal, arm64,
 * instance-type-pinned, GPU and spread pods, next to Nodes whose labels
 * name instance types and an in-flight NodeClaim, with offerings marked
 * unavailable, from the launcher's catalog message and from the shipped
 * table. The base is reused while its key holds and rebuilt when the
 * catalog's generation, the unavailable offerings (also one expiring) or
 * the region change; a model keeps its base alive after the cache moved
 * on; a batch whose extended resources find no slot next to the
 * catalog's is built as before.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "model/catalog-proto.h"
#include "model/from-state.h"
#include "model/model-base.h"
#include "model/plan.h"
#include "model/solver.h"
#include "tests/unit/pod-template-fixture.h"

static const char *const zones[] = { "us-west-2a", "us-west-2b", "us-west-2c" };

static struct strtab shipped_st;
static struct catalog shipped_cat;
static struct arena shipped_arena;
static struct proto_catalog msg;
static struct state_store store;
static struct model_base_cache cache;

static void setup(void)
{
	char path[4096];

	memset(&shipped_arena, 0, sizeof(shipped_arena));
	cr_assert_eq(strtab_init(&shipped_st), 0);
	cr_assert_eq(wellknown_intern(&shipped_st), 0);
	cr_assert_eq(catalog_init(&shipped_cat, &shipped_st), 0);
	catalog_default_path(path, sizeof(path));
	cr_assert_eq(catalog_load_tsv(&shipped_cat, path, "us-west-2", zones, 3), 0);
	cr_assert_eq(catalog_to_proto(&shipped_cat, &shipped_arena, true, &msg.instance_types,
				      &msg.n_instance_types), 0);
	msg.generation = 1;
	msg.region = "us-west-2";
	state_store_init(&store);
	memset(&cache, 0, sizeof(cache));
}

static void teardown(void)
{
	model_base_cache_done(&cache);
	state_store_done(&store);
	arena_done(&shipped_arena);
	catalog_done(&shipped_cat);
	strtab_done(&shipped_st);
}

TestSuite(model_base, .init = setup, .fini = teardown);

static void add(struct proto_object o)
{
	cr_assert_geq(state_store_apply(&store, PROTO_DELTA_ADD, &o, store.seq + 1), 0);
}

static struct proto_resource small[] = { { "cpu", 500 }, { "memory", 512LL << 20 } };
static struct proto_resource big[] = { { "cpu", 3000 }, { "memory", 6LL << 30 } };
static struct proto_resource gpu[] = { { "cpu", 1000 }, { "memory", 1LL << 30 },
				       { "nvidia.com/gpu", 1 } };

/* Static, not malloc'd, like fx_template()'s: the tests do not free pods. */
static struct proto_pod pod_pool[512];
static struct proto_kv kv_pool[512];
static unsigned pods_used, kvs_used;

static struct proto_pod *pod(const char *name, struct proto_resource *req, uint32_t n_req)
{
	struct proto_pod *p;

	cr_assert_lt(pods_used, sizeof(pod_pool) / sizeof(pod_pool[0]));
	p = &pod_pool[pods_used++];
	*p = (struct proto_pod){ .ns = "default", .name = (char *)name, .uid = (char *)name,
				 .scheduled = PROTO_COND_FALSE, .scheduled_reason = "Unschedulable" };
	fx_template(p)->requests = req;
	fx_template(p)->n_requests = n_req;
	return p;
}

static void selector(struct proto_pod *p, const char *key, const char *value)
{
	struct proto_kv *kv;

	cr_assert_lt(kvs_used, sizeof(kv_pool) / sizeof(kv_pool[0]));
	kv = &kv_pool[kvs_used++];
	*kv = (struct proto_kv){ (char *)key, (char *)value };
	fx_template(p)->node_selector = kv;
	fx_template(p)->n_node_selector = 1;
}

/* A NodePool of c/m/r on-demand and spot, two Nodes that name instance
 * types in their labels, and a NodeClaim in flight. */
static void world(void)
{
	static char *cats[] = { "r", "c", "m" }, *cts[] = { "spot", "on-demand" };
	static struct proto_requirement reqs[] = {
		{ .key = "karpenter.k8s.aws/instance-category", .op = PROTO_OP_IN, .values = cats, .n_values = 3 },
		{ .key = "karpenter.sh/capacity-type", .op = PROTO_OP_IN, .values = cts, .n_values = 2 },
	};
	static struct proto_nodepool np = { .name = "default", .uid = "np", .requirements = reqs,
					    .n_requirements = 2 };
	static struct proto_kv l1[] = { { "kubernetes.io/hostname", "n1" },
					{ "node.kubernetes.io/instance-type", "m6i.large" },
					{ "topology.kubernetes.io/zone", "us-west-2b" },
					{ "karpenter.sh/nodepool", "default" } };
	static struct proto_kv l2[] = { { "kubernetes.io/hostname", "n2" },
					{ "node.kubernetes.io/instance-type", "c5.xlarge" },
					{ "topology.kubernetes.io/zone", "us-west-2a" } };
	static struct proto_resource size1[] = { { "cpu", 1930 }, { "memory", 7LL << 30 }, { "pods", 29 } };
	static struct proto_resource size2[] = { { "cpu", 3920 }, { "memory", 6LL << 30 }, { "pods", 58 } };
	static struct proto_node n1 = { .name = "n1", .uid = "n1", .labels = l1, .n_labels = 4,
					.allocatable = size1, .n_allocatable = 3 };
	static struct proto_node n2 = { .name = "n2", .uid = "n2", .labels = l2, .n_labels = 3,
					.allocatable = size2, .n_allocatable = 3 };
	static char *it[] = { "c6i.2xlarge" };
	static struct proto_requirement ncr[] = {
		{ .key = "node.kubernetes.io/instance-type", .op = PROTO_OP_IN, .values = it, .n_values = 1 },
	};
	static struct proto_nodeclaim nc = { .name = "default-x", .uid = "ncx", .nodepool = "default",
					     .requirements = ncr, .n_requirements = 1 };

	add((struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np });
	add((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &n1 });
	add((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &n2 });
	add((struct proto_object){ .kind = PROTO_OBJECT_NODECLAIM, .nodeclaim = &nc });
}

/* A batch of 40 pods of every kind above. */
static void batch(const struct proto_pod **pending, size_t *n)
{
	static struct proto_spread_constraint spread = {
		.max_skew = 1, .topology_key = "topology.kubernetes.io/zone",
		.when_unsatisfiable = PROTO_UNSATISFIABLE_DO_NOT_SCHEDULE,
	};
	static struct proto_kv app[] = { { "app", "spread" } };
	static char names[40][16];
	size_t k = 0;

	spread.selector.match_labels = app;
	spread.selector.n_match_labels = 1;
	for (int i = 0; i < 40; i++) {
		struct proto_pod *p;

		snprintf(names[i], sizeof(names[i]), "p%02d", i);
		switch (i % 8) {
		case 0: p = pod(names[i], small, 2); break;
		case 1: p = pod(names[i], big, 2); break;
		case 2: p = pod(names[i], small, 2); selector(p, "topology.kubernetes.io/zone", "us-west-2c"); break;
		case 3: p = pod(names[i], big, 2); selector(p, "kubernetes.io/arch", "arm64"); break;
		case 4: p = pod(names[i], small, 2); selector(p, "node.kubernetes.io/instance-type", "m5.xlarge"); break;
		case 5: p = pod(names[i], small, 2); selector(p, "karpenter.sh/capacity-type", "spot"); break;
		case 6: p = pod(names[i], big, 2);
			fx_template(p)->labels = app;
			fx_template(p)->n_labels = 1;
			fx_template(p)->topology_spread = &spread;
			fx_template(p)->n_topology_spread = 1;
			break;
		default: p = pod(names[i], gpu, 3); break;
		}
		pending[k++] = p;
	}
	*n = k;
}

/* The plan as text: every field the launcher reads. */
static char *plan_text(struct from_state_options *fo, const struct proto_pod **pending, size_t n)
{
	struct plan_context ctx = { 0 };
	struct proto_launch_plan plan;
	struct sched_result *res;
	struct arena a = { 0 };
	struct cluster *c;
	char err[512], *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	cr_assert_not_null(f);
	cr_assert_eq(cluster_from_state(&store, pending, n, fo, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(!!c->base, !!fo->base_cache);
	cr_assert_eq(sched_solve(c, &res), 0);
	cr_assert_eq(plan_build(&a, c, res, &ctx, &plan), 0);
	fprintf(f, "%u unschedulable\n", res->n_unschedulable);
	for (uint32_t i = 0; i < res->n_unschedulable; i++)
		fprintf(f, "  %s: %s\n", pending[res->unschedulable[i].pod]->name, res->unschedulable[i].reason);
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%s -> %d\n", pending[i]->name, res->pod_bin[i]);
	for (uint32_t k = 0; k < plan.n_nodeclaims; k++) {
		const struct proto_planned_nodeclaim *p = &plan.nodeclaims[k];

		fprintf(f, "claim %s pool %s\n ", p->id, p->nodepool);
		for (uint32_t i = 0; i < p->n_requirements; i++) {
			fprintf(f, " %s %d [", p->requirements[i].key, (int)p->requirements[i].op);
			for (uint32_t v = 0; v < p->requirements[i].n_values; v++)
				fprintf(f, " %s", p->requirements[i].values[v]);
			fprintf(f, " ] min %u;", p->requirements[i].min_values);
		}
		fprintf(f, "\n  types");
		for (uint32_t i = 0; i < p->n_instance_types; i++) {
			fprintf(f, " %s(", p->instance_types[i].name);
			for (uint32_t o = 0; o < p->instance_types[i].n_offerings; o++)
				fprintf(f, " %s/%d/%.5f", p->instance_types[i].offerings[o].zone,
					(int)p->instance_types[i].offerings[o].capacity_type,
					p->instance_types[i].offerings[o].price);
			fprintf(f, ")");
		}
		fprintf(f, "\n  requests");
		for (uint32_t i = 0; i < p->n_requests; i++)
			fprintf(f, " %s=%lld", p->requests[i].name, (long long)p->requests[i].value);
		fprintf(f, "\n  pods");
		for (uint32_t i = 0; i < p->n_pods; i++)
			fprintf(f, " %s", p->pods[i]);
		fprintf(f, "\n");
	}
	cr_assert_eq(fclose(f), 0);
	arena_done(&a);
	sched_result_free(res);
	cluster_free(c);
	return buf;
}

static void assert_same_plans(struct from_state_options *fo)
{
	const struct proto_pod *pending[64];
	size_t n;
	char *alone, *kept, *again;

	batch(pending, &n);
	fo->base_cache = NULL;
	alone = plan_text(fo, pending, n);
	fo->base_cache = &cache;
	kept = plan_text(fo, pending, n);
	again = plan_text(fo, pending, n); /* the base reused */
	cr_assert_str_eq(kept, alone);
	cr_assert_str_eq(again, alone);
	cr_assert_geq(cache.reuses, 1);
	free(alone);
	free(kept);
	free(again);
}

Test(model_base, plans_over_the_launchers_catalog_are_the_same_as_without_it)
{
	struct from_state_options fo = { .region = "us-west-2", .catalog = &msg, .now_ms = 1000 };

	world();
	assert_same_plans(&fo);
	cr_assert_eq(cache.builds, 1);
}

Test(model_base, plans_over_the_shipped_table_are_the_same_as_without_it)
{
	struct from_state_options fo = { .region = "us-west-2", .now_ms = 1000 };

	world();
	assert_same_plans(&fo);
	cr_assert_eq(cache.builds, 1);
}

Test(model_base, plans_with_unavailable_offerings_are_the_same_as_without_it)
{
	struct unavailable_offering un[] = {
		{ "m6i.large", "us-west-2c", PROTO_CAPACITY_ON_DEMAND, 5000 },
		{ "c6i.large", "us-west-2c", PROTO_CAPACITY_ON_DEMAND, 5000 },
		{ "c7i.large", "us-west-2c", PROTO_CAPACITY_SPOT, 5000 },
		{ "m7g.xlarge", "us-west-2a", PROTO_CAPACITY_ON_DEMAND, 500 }, /* expired */
	};
	struct from_state_options fo = { .region = "us-west-2", .catalog = &msg, .now_ms = 1000,
					 .unavailable = un, .n_unavailable = 4 };

	world();
	assert_same_plans(&fo);
}

/* A model from the base, planned once with a batch, into *c. */
static struct model_base *base_of(struct from_state_options *fo, struct cluster **c)
{
	const struct proto_pod *pending[1] = { pod("solo", small, 2) };
	char err[512];

	fo->base_cache = &cache;
	cr_assert_eq(cluster_from_state(&store, pending, 1, fo, c, err, sizeof(err)), 0, "%s", err);
	cr_assert_not_null((*c)->base);
	return (*c)->base;
}

Test(model_base, rebuilt_when_its_key_changes_and_kept_alive_by_its_models)
{
	struct unavailable_offering un[] = { { "m6i.large", "us-west-2c", PROTO_CAPACITY_ON_DEMAND, 5000 } };
	struct from_state_options fo = { .region = "us-west-2", .catalog = &msg, .now_ms = 1000 };
	struct cluster *c[7];
	struct model_base *b0, *b;
	struct sched_result *res;

	world();
	b0 = base_of(&fo, &c[0]);
	cr_assert_eq(base_of(&fo, &c[1]), b0, "same key: the same base");
	msg.generation = 2;
	b = base_of(&fo, &c[2]);
	cr_assert_neq(b, b0, "a new catalog generation: a new base");
	fo.unavailable = un;
	fo.n_unavailable = 1;
	cr_assert_neq(base_of(&fo, &c[3]), b, "an offering marked: a new base");
	b = c[3]->base;
	fo.now_ms = 4999;
	cr_assert_eq(base_of(&fo, &c[4]), b, "still marked: the same base");
	fo.now_ms = 5000;
	cr_assert_neq(base_of(&fo, &c[5]), b, "the mark expired: a new base");
	b = c[5]->base;
	fo.catalog = NULL;
	cr_assert_neq(base_of(&fo, &c[6]), b, "the shipped table: a new base");
	cr_assert_eq(cache.builds, 5);
	cr_assert_eq(cache.reuses, 2);
	/* The first base, long replaced in the cache, still plans. */
	cr_assert_eq(sched_solve(c[0], &res), 0);
	cr_assert_geq(res->pod_bin[0], 0, "the pod is placed");
	sched_result_free(res);
	for (int i = 0; i < 7; i++)
		cluster_free(c[i]);
}

Test(model_base, a_batch_whose_resources_find_no_slot_is_built_without_the_base)
{
	/* The catalog takes 8 slots; nine more names leave one without. */
	static struct proto_resource many[] = {
		{ "cpu", 100 }, { "memory", 1 << 20 }, { "example.com/r1", 1 }, { "example.com/r2", 1 },
		{ "example.com/r3", 1 }, { "example.com/r4", 1 }, { "example.com/r5", 1 },
		{ "example.com/r6", 1 }, { "example.com/r7", 1 }, { "example.com/r8", 1 },
		{ "example.com/r9", 1 },
	};
	const struct proto_pod *pending[1] = { pod("greedy", many, 11) };
	struct from_state_options fo = { .region = "us-west-2", .catalog = &msg, .now_ms = 1000,
					 .base_cache = &cache };
	struct cluster *c;
	char err[512];

	world();
	cr_assert_eq(cluster_from_state(&store, pending, 1, &fo, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_null(c->base, "built as before, the batch's resources first");
	cr_assert_geq(catalog_resource(&c->cat, "example.com/r9", false), 0);
	cluster_free(c);
}
