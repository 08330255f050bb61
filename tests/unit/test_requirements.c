/* Requirement algebra and quantities: In/NotIn/Exists/DoesNotExist/Gt/Lt/Gte/Lte,
 * intersection, compatibility (Karpenter's rules), label matching. */
#include <criterion/criterion.h>
#include <limits.h>

#include "model/match.h"
#include "model/catalog.h"
#include "model/model.h"

static struct strtab st;

static void setup(void)
{
	cr_assert_eq(strtab_init(&st), 0);
	cr_assert_eq(wellknown_intern(&st), 0);
}

static void teardown(void)
{
	strtab_done(&st);
}

TestSuite(requirements, .init = setup, .fini = teardown);

static uint32_t S(const char *s)
{
	int64_t id = strtab_intern(&st, s);
	cr_assert_geq(id, 0);
	return (uint32_t)id;
}

static void add(struct requirements *r, const char *key, enum req_op op, const char *v1,
		const char *v2)
{
	uint32_t v[2];
	size_t n = 0;
	if (v1)
		v[n++] = S(v1);
	if (v2)
		v[n++] = S(v2);
	cr_assert_eq(requirements_add(r, &st, S(key), op, v, n, 0), 0);
}

Test(requirements, in_intersected_with_in_keeps_common_values)
{
	struct requirements r = { 0 };
	add(&r, "k", REQ_IN, "a", "b");
	add(&r, "k", REQ_IN, "b", "c");
	const struct requirement *q = requirements_get(&r, S("k"));
	cr_assert(q);
	cr_assert_eq(q->n_values, 1);
	cr_assert_eq(q->values[0], S("b"));
	cr_assert(requirement_allows(q, &st, S("b")));
	cr_assert_not(requirement_allows(q, &st, S("a")));
	cr_assert_not(requirement_allows(q, &st, STR_NONE));
	requirements_free(&r);
}

Test(requirements, in_minus_not_in_and_disjoint_in_is_empty)
{
	struct requirements r = { 0 };
	add(&r, "k", REQ_IN, "a", "b");
	add(&r, "k", REQ_NOT_IN, "a", NULL);
	const struct requirement *q = requirements_get(&r, S("k"));
	cr_assert_eq(q->n_values, 1);
	cr_assert_eq(q->values[0], S("b"));
	add(&r, "k", REQ_IN, "c", NULL);
	cr_assert(requirement_is_empty(requirements_get(&r, S("k"))));
	requirements_free(&r);
}

Test(requirements, not_in_and_does_not_exist_accept_absent_label)
{
	struct requirements r = { 0 };
	add(&r, "k", REQ_NOT_IN, "a", NULL);
	cr_assert(requirement_allows(requirements_get(&r, S("k")), &st, STR_NONE));
	cr_assert(requirement_allows(requirements_get(&r, S("k")), &st, S("z")));
	cr_assert_not(requirement_allows(requirements_get(&r, S("k")), &st, S("a")));
	add(&r, "d", REQ_DOES_NOT_EXIST, NULL, NULL);
	cr_assert(requirement_allows(requirements_get(&r, S("d")), &st, STR_NONE));
	cr_assert_not(requirement_allows(requirements_get(&r, S("d")), &st, S("x")));
	add(&r, "d", REQ_EXISTS, NULL, NULL);
	cr_assert(requirement_is_empty(requirements_get(&r, S("d"))));
	requirements_free(&r);
}

Test(requirements, gt_and_lt_bound_integers_and_filter_in_sets)
{
	struct requirements r = { 0 };
	add(&r, "gen", REQ_GT, "2", NULL);
	const struct requirement *q = requirements_get(&r, S("gen"));
	cr_assert(requirement_allows(q, &st, S("3")));
	cr_assert_not(requirement_allows(q, &st, S("2")));
	cr_assert_not(requirement_allows(q, &st, S("x")));
	cr_assert_not(requirement_allows(q, &st, STR_NONE));
	add(&r, "gen", REQ_IN, "1", "5");
	q = requirements_get(&r, S("gen"));
	cr_assert_eq(q->n_values, 1);
	cr_assert_eq(q->values[0], S("5"));
	add(&r, "c", REQ_GT, "4", NULL);
	add(&r, "c", REQ_LT, "5", NULL);
	cr_assert(requirement_is_empty(requirements_get(&r, S("c"))));
	cr_assert_eq(requirements_add(&r, &st, S("c"), REQ_GT, (uint32_t[]){ S("x") }, 1, 0), -EINVAL);
	requirements_free(&r);
}

Test(requirements, compatible_requires_custom_keys_on_the_node_side)
{
	struct requirements np = { 0 }, pod = { 0 };
	uint32_t key = 0;
	add(&np, "karpenter.sh/capacity-type", REQ_IN, "spot", NULL);
	add(&pod, "intent", REQ_IN, "apps", NULL);
	cr_assert_not(requirements_compatible(&np, &pod, &st, K_N_WELL_KNOWN, &key));
	cr_assert_eq(key, S("intent"));
	add(&np, "intent", REQ_IN, "apps", NULL);
	cr_assert(requirements_compatible(&np, &pod, &st, K_N_WELL_KNOWN, NULL));
	requirements_free(&pod);
	/* Well-known keys may be left to instance types; NotIn of unknown keys is fine. */
	add(&pod, "kubernetes.io/arch", REQ_IN, "arm64", NULL);
	add(&pod, "other", REQ_NOT_IN, "x", NULL);
	cr_assert(requirements_compatible(&np, &pod, &st, K_N_WELL_KNOWN, NULL));
	add(&pod, "karpenter.sh/capacity-type", REQ_IN, "on-demand", NULL);
	cr_assert_not(requirements_compatible(&np, &pod, &st, K_N_WELL_KNOWN, &key));
	cr_assert_eq(key, K_CAPACITY_TYPE);
	requirements_free(&np);
	requirements_free(&pod);
}

Test(requirements, hostname_is_not_well_known_for_new_nodes)
{
	struct requirements np = { 0 }, pod = { 0 };
	add(&pod, "kubernetes.io/hostname", REQ_IN, "ip-1", NULL);
	cr_assert_not(requirements_compatible(&np, &pod, &st, K_N_WELL_KNOWN, NULL));
	requirements_free(&pod);
}

Test(requirements, both_accepting_absence_is_compatible)
{
	struct requirements a = { 0 }, b = { 0 };
	add(&a, "k", REQ_DOES_NOT_EXIST, NULL, NULL);
	add(&b, "k", REQ_NOT_IN, "x", NULL);
	cr_assert(requirements_compatible(&a, &b, &st, K_N_WELL_KNOWN, NULL));
	requirements_free(&b);
	add(&b, "k", REQ_IN, "x", NULL);
	cr_assert_not(requirements_compatible(&a, &b, &st, K_N_WELL_KNOWN, NULL));
	requirements_free(&a);
	requirements_free(&b);
}

Test(requirements, intersect_sets_and_copy_are_independent)
{
	struct requirements a = { 0 }, b = { 0 }, c;
	add(&a, "k", REQ_IN, "a", "b");
	add(&b, "k", REQ_NOT_IN, "b", NULL);
	add(&b, "z", REQ_EXISTS, NULL, NULL);
	cr_assert_eq(requirements_copy(&c, &a), 0);
	cr_assert_eq(requirements_intersect(&a, &b, &st), 0);
	cr_assert_eq(a.n, 2);
	cr_assert_eq(requirements_get(&a, S("k"))->n_values, 1);
	cr_assert_eq(requirements_get(&c, S("k"))->n_values, 2);
	requirements_free(&a);
	requirements_free(&b);
	requirements_free(&c);
}

Test(requirements, match_labels_checks_every_key)
{
	struct requirements r = { 0 };
	struct label l[2] = { { S("a"), S("1") }, { S("b"), S("2") } };
	labels_sort(l, 2);
	add(&r, "a", REQ_IN, "1", NULL);
	add(&r, "c", REQ_DOES_NOT_EXIST, NULL, NULL);
	cr_assert(requirements_match_labels(&r, l, 2, &st));
	add(&r, "b", REQ_NOT_IN, "2", NULL);
	cr_assert_not(requirements_match_labels(&r, l, 2, &st));
	requirements_free(&r);
}

Test(requirements, format_is_readable)
{
	struct requirements r = { 0 };
	char buf[128];
	add(&r, "topology.kubernetes.io/zone", REQ_IN, "eu-west-1a", NULL);
	requirement_format(&r.v[0], &st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "topology.kubernetes.io/zone In [eu-west-1a]");
	requirements_free(&r);
}

TestSuite(quantity);

Test(quantity, parses_kubernetes_suffixes_and_rounds_up)
{
	int64_t v;
	cr_assert_eq(quantity_parse("500m", true, &v), 0);
	cr_assert_eq(v, 500);
	cr_assert_eq(quantity_parse("1.5", true, &v), 0);
	cr_assert_eq(v, 1500);
	cr_assert_eq(quantity_parse("2", true, &v), 0);
	cr_assert_eq(v, 2000);
	cr_assert_eq(quantity_parse("1.5Gi", false, &v), 0);
	cr_assert_eq(v, 1536LL << 20);
	cr_assert_eq(quantity_parse("2e3", false, &v), 0);
	cr_assert_eq(v, 2000);
	cr_assert_eq(quantity_parse("1k", false, &v), 0);
	cr_assert_eq(v, 1000);
	cr_assert_eq(quantity_parse("100Mi", false, &v), 0);
	cr_assert_eq(v, 100LL << 20);
	cr_assert_eq(quantity_parse("1m", false, &v), 0);
	cr_assert_eq(v, 1);
	cr_assert_eq(quantity_parse("0.1m", true, &v), 0);
	cr_assert_eq(v, 1);
	cr_assert_eq(quantity_parse("128974848", false, &v), 0);
	cr_assert_eq(v, 128974848);
}

Test(quantity, rejects_garbage)
{
	int64_t v;
	cr_assert_lt(quantity_parse("", false, &v), 0);
	cr_assert_lt(quantity_parse("abc", false, &v), 0);
	cr_assert_lt(quantity_parse("1Zi", false, &v), 0);
	cr_assert_lt(quantity_parse("1e", false, &v), 0);
	cr_assert_lt(quantity_parse("99999999999999999999999999Ei", false, &v), 0);
	/* The most digits there are, in millis, times 2^50: past 128 bits. */
	cr_assert_eq(quantity_parse("999999999999999999999999999999Pi", true, &v), -ERANGE);
	cr_assert_eq(quantity_parse("0.5Pi", false, &v), 0);
	cr_assert_eq(v, 1LL << 49);
}

Test(quantity, formats_cores_and_binary_units)
{
	char b[32];
	quantity_format(96000, true, false, b, sizeof(b));
	cr_assert_str_eq(b, "96");
	quantity_format(1500, true, false, b, sizeof(b));
	cr_assert_str_eq(b, "1500m");
	quantity_format(512LL << 20, false, true, b, sizeof(b));
	cr_assert_str_eq(b, "512Mi");
}

/* model/match.h: selectors on proto labels, and what node requirements allow. */
Test(match, label_selectors_and_requirements_on_proto_structs)
{
	static struct proto_kv labels[] = { { "app", "web" }, { "tier", "front" } };
	static char *web[] = { "web", "api" }, *back[] = { "back" }, *four[] = { "4" };
	static struct proto_kv app_web[] = { { "app", "web" } };
	struct proto_requirement in = { .key = "app", .op = PROTO_OP_IN, .values = web, .n_values = 2 };
	struct proto_requirement notin = { .key = "tier", .op = PROTO_OP_NOT_IN, .values = back, .n_values = 1 };
	struct proto_requirement gone = { .key = "zone", .op = PROTO_OP_DOES_NOT_EXIST };
	struct proto_requirement gt = { .key = "tier", .op = PROTO_OP_GT, .values = four, .n_values = 1 };
	struct proto_requirement exprs[] = { in, notin, gone };
	struct proto_label_selector sel = { .match_labels = app_web, .n_match_labels = 1,
					    .match_expressions = exprs, .n_match_expressions = 3 };
	struct proto_label_selector empty = { 0 };
	struct proto_requirement gt_sel[] = { gt };
	struct proto_label_selector with_gt = { .match_expressions = gt_sel, .n_match_expressions = 1 };
	struct proto_requirement cpu_gt = { .key = "cpu", .op = PROTO_OP_GT, .values = four, .n_values = 1 };

	cr_assert(label_selector_matches(&sel, labels, 2));
	cr_assert_not(label_selector_matches(&empty, labels, 2), "an empty selector selects nothing");
	cr_assert_not(label_selector_matches(&with_gt, labels, 2), "Gt is no selector operator");
	labels[1].value = "back";
	cr_assert_not(label_selector_matches(&sel, labels, 2));
	labels[1].value = "front";
	cr_assert(requirements_allow(exprs, 3, "app", "api"));
	cr_assert_not(requirements_allow(exprs, 3, "app", "db"));
	cr_assert_not(requirements_allow(exprs, 3, "tier", "back"));
	cr_assert_not(requirements_allow(exprs, 3, "zone", "a"), "DoesNotExist");
	cr_assert(requirements_allow(exprs, 3, "other", "x"), "other keys say nothing");
	cr_assert(requirements_allow(&cpu_gt, 1, "cpu", "8"));
	cr_assert_not(requirements_allow(&cpu_gt, 1, "cpu", "4"));
	cr_assert_not(requirements_allow(&cpu_gt, 1, "cpu", "many"));
}

/* Karpenter's Gte/Lte are inclusive: Gte n is Gt n-1, Lte n is Lt n+1
 * (kubernetes-sigs/karpenter pkg/scheduling/requirement.go). */
Test(requirements, gte_and_lte_include_the_edge_value)
{
	struct requirements r = { 0 }, same = { 0 }, pod = { 0 };
	char buf[128];

	add(&r, "cpu", REQ_GTE, "4", NULL);
	const struct requirement *q = requirements_get(&r, S("cpu"));
	cr_assert(requirement_allows(q, &st, S("4")), "Gte 4 allows 4");
	cr_assert(requirement_allows(q, &st, S("8")));
	cr_assert_not(requirement_allows(q, &st, S("3")));
	cr_assert_not(requirement_allows(q, &st, STR_NONE));
	add(&same, "cpu", REQ_GT, "3", NULL);
	cr_assert(requirements_equal(&r, &same), "Gte 4 is Gt 3");

	add(&r, "cpu", REQ_LTE, "4", NULL);
	q = requirements_get(&r, S("cpu"));
	cr_assert_not(requirement_is_empty(q), "Gte 4 and Lte 4 leave 4");
	cr_assert(requirement_allows(q, &st, S("4")));
	cr_assert_not(requirement_allows(q, &st, S("5")));
	cr_assert_not(requirement_allows(q, &st, S("8")), "Lte 4 excludes 8");
	cr_assert_gt(requirement_format(q, &st, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "cpu Gt 3 Lt 5");

	/* Compatibility at the edge: a pod asking In [4] fits, In [5] or Gt 4 not. */
	add(&pod, "cpu", REQ_IN, "4", NULL);
	cr_assert(requirements_compatible(&r, &pod, &st, K_N_WELL_KNOWN, NULL));
	requirements_free(&pod);
	add(&pod, "cpu", REQ_IN, "5", NULL);
	cr_assert_not(requirements_compatible(&r, &pod, &st, K_N_WELL_KNOWN, NULL));
	requirements_free(&pod);
	add(&pod, "cpu", REQ_GT, "4", NULL);
	cr_assert_not(requirements_compatible(&r, &pod, &st, K_N_WELL_KNOWN, NULL));
	requirements_free(&pod);

	add(&r, "cpu", REQ_GTE, "5", NULL);
	cr_assert(requirement_is_empty(requirements_get(&r, S("cpu"))), "Gte 5 and Lte 4 meet nowhere");
	cr_assert_eq(requirements_add(&r, &st, S("c"), REQ_LTE, (uint32_t[]){ S("x") }, 1, 0), -EINVAL);
	requirements_free(&r);
	requirements_free(&same);
}

Test(match, gte_and_lte_on_proto_structs_are_inclusive)
{
	static char *four[] = { "4" };
	struct proto_requirement q[] = {
		{ .key = "cpu", .op = PROTO_OP_GTE, .values = four, .n_values = 1 },
		{ .key = "gen", .op = PROTO_OP_LTE, .values = four, .n_values = 1 },
	};

	cr_assert(requirements_allow(q, 2, "cpu", "4"));
	cr_assert(requirements_allow(q, 2, "cpu", "8"));
	cr_assert_not(requirements_allow(q, 2, "cpu", "3"));
	cr_assert(requirements_allow(q, 2, "gen", "4"));
	cr_assert_not(requirements_allow(q, 2, "gen", "5"));
	cr_assert_not(requirements_allow(q, 2, "gen", "many"));
}
