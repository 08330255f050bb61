/*
 * The NodePool status the watcher writes (watcher/nodepool-status.c):
 * Karpenter's counter (status.resources, status.nodes) from the replica's
 * NodeClaims and Nodes, the readiness conditions, each version's shape, and
 * no patch when the object already says it all.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "watcher/nodepool-status.h"

static struct state_store store;
static uint64_t seq;

static void setup(void)
{
	state_store_init(&store);
	seq = 0;
}

static void teardown(void)
{
	state_store_done(&store);
}

TestSuite(nodepool_status, .init = setup, .fini = teardown);

static void add_claim(const char *name, const char *pool, const char *node, int64_t cpu_m,
		      int64_t memory)
{
	struct proto_resource cap[] = { { "cpu", cpu_m }, { "memory", memory }, { "pods", 29 } };
	struct proto_kv label = { "karpenter.sh/nodepool", (char *)pool };
	struct proto_nodeclaim nc = { .name = (char *)name, .uid = (char *)name, .nodepool = (char *)pool,
				      .labels = &label, .n_labels = 1, .node_name = (char *)node,
				      .capacity = cap, .n_capacity = 3 };

	cr_assert_eq(state_store_apply(&store, PROTO_DELTA_ADD,
				       &(struct proto_object){ .kind = PROTO_OBJECT_NODECLAIM, .nodeclaim = &nc },
				       ++seq), 1);
}

static void add_node(const char *name, int64_t cpu_m, int64_t memory, int64_t storage)
{
	struct proto_resource cap[] = { { "cpu", cpu_m }, { "memory", memory }, { "pods", 58 },
					{ "ephemeral-storage", storage } };
	struct proto_node n = { .name = (char *)name, .uid = (char *)name, .capacity = cap, .n_capacity = 4 };

	cr_assert_eq(state_store_apply(&store, PROTO_DELTA_ADD,
				       &(struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &n }, ++seq), 1);
}

static json_t *want_valid(void)
{
	return json_pack("[{s:s, s:s, s:s, s:s}]", "type", "ValidationSucceeded", "status", "True",
			 "reason", "ValidationSucceeded", "message", "");
}

static const json_t *condition(const json_t *patch, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(patch, "status"), "conditions"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0)
			return c;
	return NULL;
}

static const char *field(const json_t *c, const char *name)
{
	return json_string_value(json_object_get(c, name)) ?: "(none)";
}

Test(nodepool_status, resources_sum_the_capacity_of_the_pools_nodeclaims_and_their_nodes)
{
	struct nodepool_usage u;
	json_t *want = want_valid(), *patch, *res;

	add_claim("a-1", "a", NULL, 2000, 4LL << 30);          /* launching: its own capacity */
	add_claim("a-2", "a", "node-2", 4000, 8LL << 30);      /* registered: its Node's */
	add_node("node-2", 8000, 16LL << 30, 20LL << 30);
	add_claim("b-1", "b", NULL, 500, 1LL << 30);           /* another pool */
	cr_assert_eq(nodepool_usage_of(&store, "a", &u), 0);
	cr_assert_eq(u.nodes, 2);
	patch = nodepool_status_patch(PROTO_API_V1, want, PROTO_COND_TRUE, NULL, &u, NULL, 3,
				      "2026-11-27T12:00:00Z");
	cr_assert_not_null(patch);
	res = json_object_get(json_object_get(patch, "status"), "resources");
	cr_expect_str_eq(json_string_value(json_object_get(res, "cpu")), "10");
	cr_expect_str_eq(json_string_value(json_object_get(res, "memory")), "20Gi");
	cr_expect_str_eq(json_string_value(json_object_get(res, "pods")), "87");
	cr_expect_str_eq(json_string_value(json_object_get(res, "ephemeral-storage")), "20Gi");
	cr_expect_str_eq(json_string_value(json_object_get(res, "nodes")), "2");
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(patch, "status"), "nodes")), 2);
	json_decref(patch);
	/* an empty pool has Karpenter's BaseResources, all zero */
	cr_assert_eq(nodepool_usage_of(&store, "empty", &u), 0);
	patch = nodepool_status_patch(PROTO_API_V1, want, PROTO_COND_TRUE, NULL, &u, NULL, 1, "t");
	res = json_object_get(json_object_get(patch, "status"), "resources");
	cr_expect_eq(json_object_size(res), 5);
	cr_expect_str_eq(json_string_value(json_object_get(res, "cpu")), "0");
	cr_expect_str_eq(json_string_value(json_object_get(res, "nodes")), "0");
	json_decref(patch);
	json_decref(want);
}

Test(nodepool_status, ready_follows_validation_and_the_nodeclass_as_karpenter_sets_it)
{
	struct nodepool_usage u;
	json_t *want = want_valid(), *patch;
	const json_t *c;

	nodepool_usage_of(&store, "a", &u);
	patch = nodepool_status_patch(PROTO_API_V1, want, PROTO_COND_TRUE, NULL, &u, NULL, 1, "t");
	c = condition(patch, "NodeClassReady");
	cr_expect_str_eq(field(c, "status"), "True");
	cr_expect_str_eq(field(c, "reason"), "NodeClassReady");
	cr_expect_eq(json_integer_value(json_object_get(c, "observedGeneration")), 1);
	cr_expect_str_eq(field(condition(patch, "Ready"), "status"), "True");
	cr_expect_str_eq(field(condition(patch, "Ready"), "reason"), "Ready");
	json_decref(patch);

	patch = nodepool_status_patch(PROTO_API_V1, want, PROTO_COND_FALSE, "AMI not found", &u, NULL, 1, "t");
	c = condition(patch, "NodeClassReady");
	cr_expect_str_eq(field(c, "status"), "False");
	cr_expect_str_eq(field(c, "message"), "AMI not found");
	c = condition(patch, "Ready");
	cr_expect_str_eq(field(c, "status"), "False");
	cr_expect_str_eq(field(c, "reason"), "UnhealthyDependents");
	cr_expect_str_eq(field(c, "message"), "NodeClassReady=False");
	json_decref(patch);

	patch = nodepool_status_patch(PROTO_API_V1, want, -1, NULL, &u, NULL, 1, "t");
	cr_expect_str_eq(field(condition(patch, "NodeClassReady"), "reason"), "NodeClassNotFound");
	cr_expect_str_eq(field(condition(patch, "NodeClassReady"), "message"), "NodeClass not found on cluster");
	json_decref(patch);
	patch = nodepool_status_patch(PROTO_API_V1, want, PROTO_COND_UNKNOWN, NULL, &u, NULL, 1, "t");
	cr_expect_str_eq(field(condition(patch, "NodeClassReady"), "reason"), "NodeClassReadinessUnknown");
	json_decref(patch);
	json_decref(want);

	want = json_pack("[{s:s, s:s, s:s, s:s}]", "type", "ValidationSucceeded", "status", "False",
			 "reason", "UnsupportedField", "message", "x is not supported by kanna");
	patch = nodepool_status_patch(PROTO_API_V1, want, PROTO_COND_FALSE, "no AMI", &u, NULL, 1, "t");
	cr_expect_str_eq(field(condition(patch, "Ready"), "message"),
			 "ValidationSucceeded=False, NodeClassReady=False");
	json_decref(patch);
	json_decref(want);
}

Test(nodepool_status, each_version_gets_only_what_its_status_schema_has)
{
	struct nodepool_usage u;
	json_t *want = want_valid(), *patch, *status;

	nodepool_usage_of(&store, "a", &u);
	patch = nodepool_status_patch(PROTO_API_V1BETA1, want, PROTO_COND_TRUE, NULL, &u, NULL, 1, "t");
	status = json_object_get(patch, "status");
	cr_expect_eq(json_object_size(status), 1, "v1beta1: resources only");
	cr_expect_not_null(json_object_get(status, "resources"));
	json_decref(patch);
	patch = nodepool_status_patch(PROTO_API_V1ALPHA5, want, PROTO_COND_TRUE, NULL, &u, NULL, 1, "t");
	status = json_object_get(patch, "status");
	cr_expect_null(json_object_get(status, "nodes"), "v1alpha5 has no status.nodes");
	cr_expect_null(condition(patch, "NodeClassReady"), "an AWSNodeTemplate has no Ready to follow");
	cr_expect_str_eq(field(condition(patch, "Ready"), "status"), "True");
	cr_expect_null(json_object_get(condition(patch, "Ready"), "observedGeneration"),
		       "v1alpha5 conditions have no observedGeneration");
	json_decref(patch);
	json_decref(want);
}

Test(nodepool_status, nothing_is_sent_when_the_object_says_it_already_and_gone_resources_are_nulled)
{
	struct nodepool_usage u;
	json_t *want = want_valid(), *patch, *observed, *again;

	add_claim("a-1", "a", NULL, 2000, 4LL << 30);
	nodepool_usage_of(&store, "a", &u);
	patch = nodepool_status_patch(PROTO_API_V1, want, PROTO_COND_TRUE, NULL, &u, NULL, 1,
				      "2026-11-27T12:00:00Z");
	observed = json_deep_copy(json_object_get(patch, "status"));
	again = nodepool_status_patch(PROTO_API_V1, want, PROTO_COND_TRUE, NULL, &u, observed, 1,
				      "2026-11-27T12:05:00Z");
	cr_assert_null(again, "the echo of our own write changes nothing");
	/* a GPU counted before and gone now is set to null, or a merge patch keeps it */
	json_object_set_new(json_object_get(observed, "resources"), "nvidia.com/gpu", json_string("1"));
	again = nodepool_status_patch(PROTO_API_V1, want, PROTO_COND_TRUE, NULL, &u, observed, 1,
				      "2026-11-27T12:05:00Z");
	cr_assert_not_null(again);
	cr_expect(json_is_null(json_object_get(json_object_get(json_object_get(again, "status"), "resources"),
					       "nvidia.com/gpu")));
	cr_expect_str_eq(field(condition(again, "Ready"), "lastTransitionTime"), "2026-11-27T12:00:00Z",
			 "the transition time stays while the status does");
	json_decref(again);
	json_decref(observed);
	json_decref(patch);
	json_decref(want);
}

Test(nodepool_status, a_nodeoverlay_gets_its_validation_and_ready_only_then_nothing_more)
{
	json_t *bad = json_pack("[{s:s, s:s, s:s, s:s}]", "type", "ValidationSucceeded", "status", "False",
				"reason", "UnsupportedField", "message",
				"spec.requirements: key karpenter.sh/nodepool is not supported by kanna");
	json_t *good = want_valid();
	json_t *patch = nodeoverlay_status_patch(bad, NULL, 3, "2026-11-27T00:00:00Z"), *observed;
	const json_t *v, *ready;

	cr_assert_not_null(patch);
	cr_assert_null(json_object_get(json_object_get(patch, "status"), "resources"));
	cr_assert_null(condition(patch, "NodeClassReady"));
	v = condition(patch, "ValidationSucceeded");
	ready = condition(patch, "Ready");
	cr_assert_str_eq(field(v, "reason"), "UnsupportedField");
	cr_assert_str_eq(field(ready, "status"), "False");
	cr_assert_str_eq(field(ready, "message"), "ValidationSucceeded=False");
	cr_assert_eq(json_integer_value(json_object_get(ready, "observedGeneration")), 3);
	json_decref(patch);

	patch = nodeoverlay_status_patch(good, NULL, 4, "2026-11-27T00:00:01Z");
	cr_assert_str_eq(field(condition(patch, "Ready"), "status"), "True");
	observed = json_deep_copy(json_object_get(patch, "status"));
	json_decref(patch);
	cr_assert_null(nodeoverlay_status_patch(good, observed, 4, "2026-11-27T00:00:02Z"),
		       "the object says it already");
	cr_assert_not_null(patch = nodeoverlay_status_patch(good, observed, 5, "2026-11-27T00:00:02Z"),
			   "a new generation is observed");
	json_decref(patch);
	json_decref(observed);
	json_decref(good);
	json_decref(bad);
}
