/*
 * Consolidation candidates (reaper/candidate.h): which nodes may be
 * consolidated and in which order, over a state store whose pods and PDBs
 * are decoded from the JSON the API server serves (decode/decode-pod.c),
 * so that the pod deletion cost annotation is followed from the object to
 * the order of the candidates.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "decode/decode.h"
#include "reaper/candidate.h"
#include "reaper/consolidation.h"

#define NOW_MS 1800000000000LL

static struct arena arena;
static struct decoder dec;
static struct state_store store;

static void setup(void)
{
	memset(&arena, 0, sizeof(arena));
	dec = (struct decoder){ .arena = &arena };
	state_store_init(&store);
}

static void teardown(void)
{
	state_store_done(&store);
	arena_done(&arena);
}

TestSuite(candidate, .init = setup, .fini = teardown);

static const struct proto_nodepool pool = {
	.name = "default", .uid = "u-np", .source_api = PROTO_API_V1,
	.consolidation_policy = PROTO_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED,
	.consolidate_after_s = 0, .expire_after_s = -1,
};

static struct proto_nodeclaim claim(const char *name)
{
	return (struct proto_nodeclaim){ .name = (char *)name, .uid = (char *)name,
					 .nodepool = "default", .node_name = (char *)name,
					 .creation_time = NOW_MS - 3600 * 1000 };
}

static struct proto_node node(const char *name)
{
	return (struct proto_node){ .name = (char *)name, .uid = (char *)name,
				    .ready = PROTO_COND_TRUE };
}

static void apply_json(const char *kind, const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	struct proto_object o;

	cr_assert_not_null(j, "fixture is not JSON: %s", jerr.text);
	cr_assert_eq(decode_object(&dec, kind, j, &o), 0, "%s", dec.error);
	cr_assert_geq(state_store_apply(&store, PROTO_DELTA_ADD, &o, store.seq + 1), 0);
	store.seq++;
	json_decref(j);
	arena_reset(&arena);
}

/* A running pod of app "web" on node, with these annotations (JSON
 * members, or "") and priority. */
static void pod(const char *name, const char *on, const char *annotations, int priority)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"%s\","
		 " \"namespace\": \"default\", \"labels\": {\"app\": \"web\"},"
		 " \"annotations\": {%s}}, \"spec\": {\"nodeName\": \"%s\", \"priority\": %d,"
		 " \"containers\": [{\"name\": \"c\", \"resources\": {\"requests\": {\"cpu\": \"100m\"}}}]},"
		 " \"status\": {\"phase\": \"Running\"}}",
		 name, annotations, on, priority);
	apply_json("Pod", text);
}

static const struct proto_pod *stored_pod(const char *name)
{
	const struct state_entry *e = state_store_get(&store, PROTO_OBJECT_POD, "default", name);

	cr_assert_not_null(e, "no pod %s", name);
	return e->obj.pod;
}

/* candidate_check() with the PDBs of the store collected as a pass does. */
static const char *check(const struct proto_nodeclaim *nc, const struct proto_nodepool *np,
			 const struct proto_node *n, const char **event, double *cost, char *buf,
			 size_t len)
{
	struct candidate_pdbs pdbs;
	const char *why;

	cr_assert_eq(candidate_pdbs_collect(&store, &pdbs), 0);
	why = candidate_check(&store, &pdbs, nc, np, n, NOW_MS, event, cost, buf, len);
	candidate_pdbs_done(&pdbs);
	return why;
}

/* candidate_check() of node name, which must be a candidate: its cost. */
static double cost_of(const char *name)
{
	struct proto_nodeclaim nc = claim(name);
	struct proto_node n = node(name);
	const char *why, *event = "unset";
	double cost = -1;
	char buf[512];

	why = check(&nc, &pool, &n, &event, &cost, buf, sizeof(buf));
	cr_assert_null(why, "%s is no candidate: %s", name, why);
	cr_assert_null(event);
	return cost;
}

#define DELETION_COST(v) "\"controller.kubernetes.io/pod-deletion-cost\": \"" v "\""

Test(candidate, the_deletion_cost_annotation_reads_as_karpenter_parses_it)
{
	cr_expect_float_eq(decode_pod_deletion_cost("100"), 100.0, 1e-12);
	cr_expect_float_eq(decode_pod_deletion_cost("-2147483647"), -2147483647.0, 1e-3);
	cr_expect_float_eq(decode_pod_deletion_cost("1.5e3"), 1500.0, 1e-12);
	cr_expect_float_eq(decode_pod_deletion_cost("0x1p4"), 16.0, 1e-12, "Go hex float");
	cr_expect_float_eq(decode_pod_deletion_cost("Inf"), POD_DELETION_COST_MAX, 1e-3);
	cr_expect_float_eq(decode_pod_deletion_cost("-infinity"), -POD_DELETION_COST_MAX, 1e-3);
	/* What strconv.ParseFloat refuses is ignored, as Karpenter does. */
	cr_expect_eq(decode_pod_deletion_cost(NULL), 0.0);
	cr_expect_eq(decode_pod_deletion_cost(""), 0.0);
	cr_expect_eq(decode_pod_deletion_cost("high"), 0.0);
	cr_expect_eq(decode_pod_deletion_cost("10 "), 0.0, "trailing space");
	cr_expect_eq(decode_pod_deletion_cost(" 10"), 0.0, "leading space");
	cr_expect_eq(decode_pod_deletion_cost("0x10"), 0.0, "hex without an exponent");
	cr_expect_eq(decode_pod_deletion_cost("1e400"), 0.0, "out of range");
	/* NaN parses in Go but would make the order meaningless. */
	cr_expect_eq(decode_pod_deletion_cost("NaN"), 0.0);
}

Test(candidate, a_pod_decodes_with_its_deletion_cost_and_a_malformed_one_is_ignored)
{
	pod("a", "n1", DELETION_COST("268435456"), 0);
	pod("b", "n1", DELETION_COST("two"), 0);
	pod("c", "n1", "", 0);
	cr_expect_float_eq(stored_pod("a")->deletion_cost, 268435456.0, 1e-6);
	cr_expect_eq(stored_pod("b")->deletion_cost, 0.0);
	cr_expect_eq(stored_pod("c")->deletion_cost, 0.0);
}

Test(candidate, eviction_cost_is_one_plus_deletion_cost_and_priority_clamped_to_ten)
{
	pod("plain", "n1", "", 0);
	pod("cost-2pow27", "n1", DELETION_COST("134217728"), 0);
	pod("prio-2pow25", "n1", "", 33554432);
	pod("both", "n1", DELETION_COST("-134217728"), 33554432);
	pod("saturated", "n1", DELETION_COST("2147483647"), 1000000000);
	pod("floor", "n1", DELETION_COST("-2147483647"), -2147483647 - 1);
	/* The clamp is of the sum: a low deletion cost does not pull a
	 * priority that saturates alone back below ten (upstream: lo.Clamp
	 * after both terms). */
	pod("high-prio-low-cost", "n1", DELETION_COST("-2147483647"), 2000000000);
	cr_expect_float_eq(candidate_eviction_cost(stored_pod("plain")), 1.0, 1e-12);
	cr_expect_float_eq(candidate_eviction_cost(stored_pod("cost-2pow27")), 2.0, 1e-12);
	cr_expect_float_eq(candidate_eviction_cost(stored_pod("prio-2pow25")), 2.0, 1e-12);
	cr_expect_float_eq(candidate_eviction_cost(stored_pod("both")), 1.0, 1e-12);
	cr_expect_float_eq(candidate_eviction_cost(stored_pod("saturated")), 10.0, 1e-12);
	cr_expect_float_eq(candidate_eviction_cost(stored_pod("floor")), -10.0, 1e-12);
	cr_expect_float_eq(candidate_eviction_cost(stored_pod("high-prio-low-cost")), 10.0, 1e-12);
}

/* Orders nodes n1 .. n<n> as consolidation does; returns the first. */
static uint32_t first_in_order(uint32_t n)
{
	struct consolidation_candidate v[8];
	char name[16];

	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "n%u", i + 1);
		v[i] = (struct consolidation_candidate){ .node = i, .n_pods = 2, .cost = cost_of(name) };
	}
	consolidation_sort(v, n);
	return v[0].node + 1;
}

Test(candidate, equal_nodes_go_in_node_order_without_the_annotation)
{
	pod("a1", "n1", "", 0);
	pod("a2", "n1", "", 0);
	pod("b1", "n2", "", 0);
	pod("b2", "n2", "", 0);
	cr_expect_float_eq(cost_of("n1"), cost_of("n2"), 1e-12);
	cr_expect_eq(first_in_order(2), 1);
}

Test(candidate, a_negative_pod_deletion_cost_moves_its_node_first)
{
	pod("a1", "n1", "", 0);
	pod("a2", "n1", "", 0);
	pod("b1", "n2", DELETION_COST("-1000000000"), 0);
	pod("b2", "n2", "", 0);
	cr_expect_lt(cost_of("n2"), cost_of("n1"));
	cr_expect_eq(first_in_order(2), 2);
}

Test(candidate, a_positive_pod_deletion_cost_moves_its_node_behind_a_node_with_more_pods)
{
	/* n1: three plain pods (3); n2: two, one of them dear to delete. */
	pod("a1", "n1", "", 0);
	pod("a2", "n1", "", 0);
	pod("a3", "n1", "", 0);
	pod("b1", "n2", DELETION_COST("1000000000"), 0);
	pod("b2", "n2", "", 0);
	cr_expect_float_eq(cost_of("n1"), 3.0, 1e-12);
	cr_expect_float_eq(cost_of("n2"), 1.0 + (1.0 + 1e9 / 134217728.0), 1e-9);
	cr_expect_eq(first_in_order(2), 1);
}

Test(candidate, pods_that_stay_with_the_node_cost_nothing)
{
	pod("a1", "n1", "\"kubernetes.io/config.mirror\": \"x\"", 0);
	pod("a2", "n1", "", 0);
	cr_expect_float_eq(cost_of("n1"), 1.0, 1e-12);
}

Test(candidate, the_cost_shrinks_with_the_lifetime_left)
{
	struct proto_nodeclaim nc = claim("n1");
	struct proto_node n = node("n1");
	const char *event;
	double cost = 0;
	char buf[256];

	pod("a1", "n1", "", 0);
	pod("a2", "n1", "", 0);
	nc.expire_after_s = 4 * 3600; /* an hour old of four */
	cr_assert_null(check(&nc, &pool, &n, &event, &cost, buf, sizeof(buf)));
	cr_expect_float_eq(cost, 2.0 * 0.75, 1e-9);
}

/* candidate_check() of n1, which must not be a candidate. */
static const char *refusal(const struct proto_nodepool *np, const struct proto_nodeclaim *nc,
			   const struct proto_node *n, const char **event)
{
	static char buf[512];
	double cost = -7;
	const char *why = check(nc, np, n, event, &cost, buf, sizeof(buf));

	cr_assert_not_null(why);
	cr_expect_eq(cost, -7, "no cost for a node that is no candidate");
	return why;
}

Test(candidate, a_pool_that_does_not_consolidate_non_empty_nodes_says_so)
{
	struct proto_nodepool when_empty = pool, v1_underutilized = pool, never = pool;
	struct proto_nodeclaim nc = claim("n1");
	struct proto_node n = node("n1");
	const char *event;

	pod("a1", "n1", "", 0);
	when_empty.consolidation_policy = PROTO_CONSOLIDATE_WHEN_EMPTY;
	v1_underutilized.consolidation_policy = PROTO_CONSOLIDATE_WHEN_UNDERUTILIZED;
	never.consolidate_after_s = -1;
	cr_expect_str_eq(refusal(&when_empty, &nc, &n, &event),
			 "NodePool \"default\" has non-empty consolidation disabled");
	cr_expect_str_eq(event, "Unconsolidatable");
	cr_expect_not_null(refusal(&v1_underutilized, &nc, &n, &event));
	cr_expect_not_null(refusal(&never, &nc, &n, &event));
	cr_expect_eq(candidate_consolidate_after_s(&never), -1);
	v1_underutilized.source_api = PROTO_API_V1BETA1;
	cr_expect_eq(candidate_consolidate_after_s(&v1_underutilized), 0, "v1beta1: at once");
}

/* Upstream consolidation.go ShouldDisrupt: OwnedByStaticNodePool. */
Test(candidate, a_static_pools_node_is_never_a_candidate_empty_or_not)
{
	struct proto_nodepool fixed = pool;
	struct proto_nodeclaim nc = claim("n1"), empty = claim("n2");
	struct proto_node n = node("n1"), e = node("n2");
	const char *event;

	fixed.static_capacity = true;
	fixed.replicas = 2;
	pod("a1", "n1", "", 0);
	cr_expect_str_eq(refusal(&fixed, &nc, &n, &event),
			 "NodePool \"default\" is static (spec.replicas): its nodes are not consolidated");
	cr_expect_str_eq(event, "Unconsolidatable");
	cr_expect_not_null(refusal(&fixed, &empty, &e, &event));
	fixed.static_capacity = false;
	{
		double cost;
		char buf[512];

		cr_expect_null(check(&nc, &fixed, &n, &event, &cost, buf, sizeof(buf)),
			       "the same pool, dynamic, consolidates");
	}
}

Test(candidate, do_not_disrupt_on_the_claim_the_node_or_a_pod_blocks_and_is_named)
{
	struct proto_nodeclaim nc = claim("n1");
	struct proto_node n = node("n1");
	const char *event;

	pod("a1", "n1", "", 0);
	nc.do_not_disrupt = true;
	cr_expect_str_eq(refusal(&pool, &nc, &n, &event),
			 "Cannot disrupt NodeClaim: nodeclaim n1 has the \"karpenter.sh/do-not-disrupt\" "
			 "annotation");
	cr_expect_str_eq(event, "DisruptionBlocked");
	nc.do_not_disrupt = false;
	n.do_not_disrupt = true;
	cr_expect(strstr(refusal(&pool, &nc, &n, &event), "node n1 has") != NULL);
	n.do_not_disrupt = false;
	pod("a2", "n1", "\"karpenter.sh/do-not-disrupt\": \"true\"", 0);
	cr_expect_str_eq(refusal(&pool, &nc, &n, &event),
			 "Cannot disrupt NodeClaim: pod default/a2 has the \"karpenter.sh/do-not-disrupt\" "
			 "annotation");
}

Test(candidate, a_pdb_that_allows_no_disruption_blocks_and_is_named)
{
	struct proto_nodeclaim nc = claim("n1");
	struct proto_node n = node("n1");
	const char *event;

	pod("a1", "n1", "", 0);
	apply_json("PodDisruptionBudget",
		   "{\"apiVersion\": \"policy/v1\", \"kind\": \"PodDisruptionBudget\","
		   " \"metadata\": {\"name\": \"web\", \"namespace\": \"default\"},"
		   " \"spec\": {\"maxUnavailable\": 0, \"selector\": {\"matchLabels\": {\"app\": \"web\"}}},"
		   " \"status\": {\"disruptionsAllowed\": 0}}");
	cr_expect_str_eq(refusal(&pool, &nc, &n, &event),
			 "Cannot disrupt NodeClaim: pdb \"default/web\" prevents pod evictions (pod "
			 "default/a1)");
	cr_expect_str_eq(event, "DisruptionBlocked");
}

Test(candidate, a_pdb_with_disruptions_left_does_not_block)
{
	pod("a1", "n1", "", 0);
	apply_json("PodDisruptionBudget",
		   "{\"apiVersion\": \"policy/v1\", \"kind\": \"PodDisruptionBudget\","
		   " \"metadata\": {\"name\": \"web\", \"namespace\": \"default\"},"
		   " \"spec\": {\"maxUnavailable\": 1, \"selector\": {\"matchLabels\": {\"app\": \"web\"}}},"
		   " \"status\": {\"disruptionsAllowed\": 1}}");
	cr_expect_float_eq(cost_of("n1"), 1.0, 1e-12);
}
