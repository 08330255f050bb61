/*
 * NodeOverlays in the model (model/node-overlay.c): a priceAdjustment that
 * makes a pricier instance type the cheapest changes the type planned,
 * over the scheduler's kept catalog base as over a catalog loaded alone,
 * and the base is rebuilt when an overlay changes; a heavier overlay's
 * price wins over a lighter one's, and of two equal weights the
 * alphabetically first; a capacity overlay adds the extended resource a
 * pod requests to the types it selects; an invalid overlay is not applied;
 * a running node is priced with the overlay too (the reaper's consolidation
 * compares what nodes cost through cluster_node_price()).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "model/from-state.h"
#include "model/model-base.h"
#include "model/node-overlay.h"
#include "model/plan.h"
#include "model/solver.h"
#include "model/what-if.h"
#include "tests/unit/pod-template-fixture.h"

static struct state_store store;
static struct model_base_cache cache;

static void setup(void)
{
	state_store_init(&store);
	memset(&cache, 0, sizeof(cache));
}

static void teardown(void)
{
	model_base_cache_done(&cache);
	state_store_done(&store);
}

TestSuite(node_overlay, .init = setup, .fini = teardown);

static void apply(enum proto_delta_op op, struct proto_object o)
{
	cr_assert_geq(state_store_apply(&store, op, &o, store.seq + 1), 0);
}

/* An on-demand NodePool of c, m and r types. */
static void pool(void)
{
	static char *cats[] = { "c", "m", "r" }, *cts[] = { "on-demand" };
	static struct proto_requirement reqs[] = {
		{ .key = "karpenter.k8s.aws/instance-category", .op = PROTO_OP_IN, .values = cats, .n_values = 3 },
		{ .key = "karpenter.sh/capacity-type", .op = PROTO_OP_IN, .values = cts, .n_values = 1 },
	};
	static struct proto_nodepool np = { .name = "default", .uid = "np", .requirements = reqs,
					    .n_requirements = 2 };

	apply(PROTO_DELTA_ADD, (struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np });
}

static struct proto_pod *pod(const char *name, struct proto_resource *req, uint32_t n_req)
{
	static struct proto_pod pods[16];
	static unsigned used;
	struct proto_pod *p = &pods[used++ % 16];

	*p = (struct proto_pod){ .ns = "default", .name = (char *)name, .uid = (char *)name,
				 .scheduled = PROTO_COND_FALSE, .scheduled_reason = "Unschedulable" };
	fx_template(p)->requests = req;
	fx_template(p)->n_requests = n_req;
	return p;
}

struct choice {
	char first[64], second[64];
	double first_price, second_price;
	uint32_t unschedulable;
};

/* The cheapest two candidates planned for the pod, and their prices. */
static struct choice plan_for(struct proto_pod *p, bool cached)
{
	const struct proto_pod *pending[1] = { p };
	struct from_state_options fo = { .region = "us-west-2", .now_ms = 1000,
					 .base_cache = cached ? &cache : NULL };
	struct plan_context ctx = { 0 };
	struct proto_launch_plan plan;
	struct sched_result *res;
	struct arena a = { 0 };
	struct choice ch = { 0 };
	struct cluster *c;
	char err[512];

	cr_assert_eq(cluster_from_state(&store, pending, 1, &fo, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sched_solve(c, &res), 0);
	cr_assert_eq(plan_build(&a, c, res, &ctx, &plan), 0);
	ch.unschedulable = res->n_unschedulable;
	if (plan.n_nodeclaims) {
		const struct proto_planned_nodeclaim *nc = &plan.nodeclaims[0];

		cr_assert_geq(nc->n_instance_types, 2);
		snprintf(ch.first, sizeof(ch.first), "%s", nc->instance_types[0].name);
		snprintf(ch.second, sizeof(ch.second), "%s", nc->instance_types[1].name);
		ch.first_price = nc->instance_types[0].offerings[0].price;
		ch.second_price = nc->instance_types[1].offerings[0].price;
	}
	arena_done(&a);
	sched_result_free(res);
	cluster_free(c);
	return ch;
}

static struct proto_resource small[] = { { "cpu", 500 }, { "memory", 512LL << 20 } };

static struct proto_requirement type_is(char **value)
{
	return (struct proto_requirement){ .key = "node.kubernetes.io/instance-type", .op = PROTO_OP_IN,
					   .values = value, .n_values = 1 };
}

Test(node_overlay, a_price_adjustment_that_makes_a_pricier_type_cheapest_changes_the_type)
{
	struct choice before, after, after_cached, restored;
	char *second[1];
	struct proto_requirement req[1];
	struct proto_nodeoverlay ov = { .name = "discount", .resource_version = "1", .has_adjustment = true,
					.adjustment_percent = true, .requirements = req, .n_requirements = 1 };

	pool();
	before = plan_for(pod("p", small, 2), true);
	cr_assert_eq(before.unschedulable, 0);
	cr_assert_lt(before.first_price, before.second_price, "%s %f, %s %f", before.first,
		     before.first_price, before.second, before.second_price);
	/* The second, discounted to half the first's price. */
	second[0] = before.second;
	req[0] = type_is(second);
	ov.adjustment = -100 * (1 - 0.5 * before.first_price / before.second_price);
	apply(PROTO_DELTA_ADD, (struct proto_object){ .kind = PROTO_OBJECT_NODEOVERLAY, .nodeoverlay = &ov });
	after = plan_for(pod("p", small, 2), false);
	after_cached = plan_for(pod("p", small, 2), true);
	cr_assert_str_eq(after.first, before.second, "the discounted type is planned first");
	cr_assert_float_eq(after.first_price, before.first_price / 2, 1e-9);
	cr_assert_str_eq(after_cached.first, after.first, "the kept base was rebuilt with the overlay");
	cr_assert_float_eq(after_cached.first_price, after.first_price, 1e-12);
	cr_assert_eq(cache.builds, 2);

	/* An absolute delta: +1 $/h makes it dear again. */
	ov.resource_version = "2";
	ov.adjustment_percent = false;
	ov.adjustment = 1;
	apply(PROTO_DELTA_UPDATE, (struct proto_object){ .kind = PROTO_OBJECT_NODEOVERLAY, .nodeoverlay = &ov });
	restored = plan_for(pod("p", small, 2), true);
	cr_assert_str_eq(restored.first, before.first);
	cr_assert_eq(cache.builds, 3, "a changed overlay rebuilds the base");
}

Test(node_overlay, the_heavier_overlay_and_then_the_alphabetically_first_sets_the_price)
{
	struct choice before, ch;
	char *second[1];
	struct proto_requirement req[1];
	struct proto_nodeoverlay cheap = { .name = "b-cheap", .resource_version = "1", .weight = 1,
					   .has_price = true, .price = 0.0001, .requirements = req,
					   .n_requirements = 1 };
	struct proto_nodeoverlay dear = { .name = "a-dear", .resource_version = "1", .weight = 5,
					  .has_price = true, .price = 100, .requirements = req,
					  .n_requirements = 1 };

	pool();
	before = plan_for(pod("p", small, 2), false);
	second[0] = before.second;
	req[0] = type_is(second);
	apply(PROTO_DELTA_ADD, (struct proto_object){ .kind = PROTO_OBJECT_NODEOVERLAY, .nodeoverlay = &cheap });
	ch = plan_for(pod("p", small, 2), false);
	cr_assert_str_eq(ch.first, before.second);
	cr_assert_float_eq(ch.first_price, 0.0001, 1e-12);
	apply(PROTO_DELTA_ADD, (struct proto_object){ .kind = PROTO_OBJECT_NODEOVERLAY, .nodeoverlay = &dear });
	ch = plan_for(pod("p", small, 2), false);
	cr_assert_str_eq(ch.first, before.first, "weight 5 beats weight 1");
	dear.weight = 1;
	dear.resource_version = "2";
	apply(PROTO_DELTA_UPDATE, (struct proto_object){ .kind = PROTO_OBJECT_NODEOVERLAY, .nodeoverlay = &dear });
	ch = plan_for(pod("p", small, 2), false);
	cr_assert_str_eq(ch.first, before.first, "equal weights: a-dear before b-cheap");
	/* Invalid: not applied, b-cheap's price holds. */
	dear.invalid = "spec: cannot set both 'price' and 'priceAdjustment'";
	apply(PROTO_DELTA_UPDATE, (struct proto_object){ .kind = PROTO_OBJECT_NODEOVERLAY, .nodeoverlay = &dear });
	ch = plan_for(pod("p", small, 2), false);
	cr_assert_str_eq(ch.first, before.second);
}

Test(node_overlay, a_capacity_overlay_adds_the_extended_resource_a_pod_requests)
{
	static struct proto_resource fuse_req[] = { { "cpu", 500 }, { "memory", 512LL << 20 },
						    { "example.com/fuse", 1 } };
	static struct proto_resource fuse[] = { { "example.com/fuse", 2 } };
	static char *family[] = { "m5" };
	struct proto_requirement req[] = {
		{ .key = "karpenter.k8s.aws/instance-family", .op = PROTO_OP_IN, .values = family, .n_values = 1 },
	};
	struct proto_nodeoverlay ov = { .name = "fuse", .resource_version = "1", .requirements = req,
					.n_requirements = 1, .capacity = fuse, .n_capacity = 1 };
	struct choice ch;

	pool();
	ch = plan_for(pod("f", fuse_req, 3), true);
	cr_assert_eq(ch.unschedulable, 1, "no type has example.com/fuse");
	apply(PROTO_DELTA_ADD, (struct proto_object){ .kind = PROTO_OBJECT_NODEOVERLAY, .nodeoverlay = &ov });
	ch = plan_for(pod("f", fuse_req, 3), true);
	cr_assert_eq(ch.unschedulable, 0);
	cr_assert(!strncmp(ch.first, "m5.", 3) && !strncmp(ch.second, "m5.", 3), "%s, %s", ch.first,
		  ch.second);
}

/* The price of the one Node in the model the reaper would build. */
static double node_price(void)
{
	struct from_state_options fo = { .region = "us-west-2", .now_ms = 1000 };
	struct cluster *c;
	char err[512];
	double p;

	cr_assert_eq(cluster_from_state(&store, NULL, 0, &fo, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c->n_nodes, 1);
	p = cluster_node_price(c, 0);
	cluster_free(c);
	return p;
}

Test(node_overlay, a_running_node_is_priced_with_the_overlay_as_consolidation_compares)
{
	static struct proto_kv labels[] = { { "kubernetes.io/hostname", "n1" },
					    { "node.kubernetes.io/instance-type", "m5.large" },
					    { "topology.kubernetes.io/zone", "us-west-2b" },
					    { "karpenter.sh/capacity-type", "on-demand" },
					    { "karpenter.sh/nodepool", "default" } };
	static struct proto_resource size[] = { { "cpu", 1930 }, { "memory", 7LL << 30 }, { "pods", 29 } };
	static struct proto_node n1 = { .name = "n1", .uid = "n1", .labels = labels, .n_labels = 5,
					.allocatable = size, .n_allocatable = 3 };
	static char *zone[] = { "us-west-2b" }, *ct[] = { "on-demand" };
	struct proto_requirement req[] = {
		{ .key = "topology.kubernetes.io/zone", .op = PROTO_OP_IN, .values = zone, .n_values = 1 },
		{ .key = "karpenter.sh/capacity-type", .op = PROTO_OP_IN, .values = ct, .n_values = 1 },
	};
	struct proto_nodeoverlay ov = { .name = "zone-b", .resource_version = "1", .has_adjustment = true,
					.adjustment_percent = true, .adjustment = -50, .requirements = req,
					.n_requirements = 2 };
	double before;

	pool();
	apply(PROTO_DELTA_ADD, (struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &n1 });
	before = node_price();
	cr_assert_gt(before, 0);
	apply(PROTO_DELTA_ADD, (struct proto_object){ .kind = PROTO_OBJECT_NODEOVERLAY, .nodeoverlay = &ov });
	cr_assert_float_eq(node_price(), before / 2, 1e-12);
	zone[0] = "us-west-2a"; /* the overlay's zone is not the node's */
	ov.resource_version = "2";
	apply(PROTO_DELTA_UPDATE, (struct proto_object){ .kind = PROTO_OBJECT_NODEOVERLAY, .nodeoverlay = &ov });
	cr_assert_float_eq(node_price(), before, 1e-12);
}
