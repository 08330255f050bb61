/*
 * Consolidation's search (reaper/consolidation.h): disruption cost and the
 * order of candidates, and which method takes which nodes on small model
 * clusters over Karpenter's fake catalog (fake-it-N: N+1 vCPU, dearer as N
 * grows; spot and on-demand at one price).
 */
#include <criterion/criterion.h>
#include <math.h>

#include "reaper/consolidation.h"
#include "sched-fixture.h"

static uint32_t type_named(struct cluster *c, const char *name)
{
	uint32_t id = fx_s(c, name);

	for (uint32_t t = 0; t < c->cat.n_types; t++)
		if (c->cat.types[t].name == id)
			return t;
	cr_assert_fail("no type %s", name);
	return 0;
}

/* A Ready node of NodePool "default" in test-zone-1. */
static uint32_t fx_node_ct(struct cluster *c, const char *name, const char *type, uint32_t ct)
{
	uint32_t t = type_named(c, type);
	struct node *n = cluster_add_node(c);
	struct label *l = arena_alloc(&c->arena, 4 * sizeof(*l));

	cr_assert(n && l);
	n->name = fx_s(c, name);
	l[0] = (struct label){ K_NODEPOOL, fx_s(c, "default") };
	l[1] = (struct label){ K_ZONE, fx_s(c, "test-zone-1") };
	l[2] = (struct label){ K_INSTANCE_TYPE, fx_s(c, type) };
	l[3] = (struct label){ K_CAPACITY_TYPE, ct };
	labels_sort(l, 4);
	n->labels = l;
	n->n_labels = 4;
	n->capacity = c->cat.types[t].capacity;
	n->allocatable = c->cat.types[t].allocatable;
	return c->n_nodes - 1;
}

static uint32_t fx_node(struct cluster *c, const char *name, const char *type)
{
	return fx_node_ct(c, name, type, V_ON_DEMAND);
}

static void fx_bound(struct cluster *c, const char *name, const char *node, int64_t cpu_m)
{
	fx_pod(c, name, cpu_m, 256)->node = fx_s(c, node);
}

/* Every node of the cluster a candidate, of cost = its pods. */
static uint32_t candidates(struct cluster *c, struct consolidation_candidate *v)
{
	for (uint32_t i = 0; i < c->n_nodes; i++) {
		uint32_t pods = 0;
		for (uint32_t p = 0; p < c->n_pods; p++)
			pods += c->pods[p].node == c->nodes[i].name;
		v[i] = (struct consolidation_candidate){
			.node = i, .n_pods = pods, .cost = pods, .price = cluster_node_price(c, i),
			.spot = labels_get(c->nodes[i].labels, c->nodes[i].n_labels, K_CAPACITY_TYPE) ==
				V_SPOT };
	}
	consolidation_sort(v, c->n_nodes);
	return c->n_nodes;
}

static const uint32_t ten[1] = { 10 };
static const struct consolidation_options opts = { .budget = ten, .n_pools = 1 };

static const char *node_name(struct cluster *c, const struct consolidation_candidate *v,
			     const struct consolidation_command *cmd, uint32_t i)
{
	return strtab_str(&c->st, c->nodes[v[cmd->candidates[i]].node].name);
}

Test(consolidation_cost, a_default_pod_costs_one_and_priority_moves_it_within_ten_either_way)
{
	cr_expect_float_eq(consolidation_eviction_cost(0), 1.0, 1e-12);
	cr_expect_float_eq(consolidation_eviction_cost(1 << 25), 2.0, 1e-12);
	cr_expect_float_eq(consolidation_eviction_cost(2000000000), 10.0, 1e-12);
	cr_expect_float_eq(consolidation_eviction_cost(INT32_MIN), -10.0, 1e-12);
}

Test(consolidation_cost, a_node_near_its_expiry_is_cheaper_to_disrupt)
{
	cr_expect_float_eq(consolidation_lifetime_remaining(0, 100), 1.0, 1e-12);
	cr_expect_float_eq(consolidation_lifetime_remaining(90, 100), 0.1, 1e-12);
	cr_expect_float_eq(consolidation_lifetime_remaining(200, 100), 0.0, 1e-12);
	cr_expect_float_eq(consolidation_lifetime_remaining(1000, -1), 1.0, 1e-12, "Never expires");
}

Test(consolidation_order, candidates_go_cheapest_to_disrupt_first)
{
	struct consolidation_candidate v[] = { { .node = 0, .cost = 3 }, { .node = 1, .cost = 0.5 },
					       { .node = 2, .cost = -2 }, { .node = 3, .cost = 0.5 } };

	consolidation_sort(v, 4);
	cr_expect_eq(v[0].node, 2);
	cr_expect_eq(v[1].node, 1);
	cr_expect_eq(v[2].node, 3, "equal costs keep node order");
	cr_expect_eq(v[3].node, 0);
}

static struct cluster *three_nodes(const char *type, int64_t cpu_m)
{
	struct cluster *c = fx_cluster(8);

	fx_nodepool(c, "default", 0);
	fx_node(c, "a", type);
	fx_node(c, "b", type);
	fx_node(c, "c", type);
	fx_bound(c, "a-1", "a", cpu_m);
	fx_bound(c, "b-1", "b", cpu_m);
	fx_bound(c, "c-1", "c", cpu_m);
	cluster_assign_nodepools(c);
	return c;
}

Test(consolidation_method, three_big_underused_nodes_go_at_once_onto_one_cheaper_node)
{
	_cleanup_(cluster_freep) struct cluster *c = three_nodes("fake-it-7", 1000);
	struct consolidation_candidate v[3];
	struct consolidation_command cmd;

	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &opts, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_MULTI);
	cr_expect_eq(cmd.n_candidates, 3, "all three nodes go");
	cr_assert(cmd.res.placement);
	cr_expect_eq(cmd.res.placement->n_claims, 1, "onto one new node");
	cr_expect_lt(cmd.added_price, cmd.removed_price);
	cr_expect_float_eq(cmd.savings, cmd.removed_price - cmd.added_price, 1e-9);
	for (uint32_t p = 0; p < c->n_pods; p++)
		cr_expect_neq(c->pods[p].node, STR_NONE, "the model is put back after the search");
	consolidation_command_done(&cmd);
}

Test(consolidation_method, three_half_empty_nodes_become_one_by_deleting_two_not_by_a_same_type_replacement)
{
	_cleanup_(cluster_freep) struct cluster *c = three_nodes("fake-it-3", 1000);
	struct consolidation_candidate v[3];
	struct consolidation_command cmd;

	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &opts, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_MULTI);
	cr_expect_eq(cmd.n_candidates, 2, "filterOutSameType: a fake-it-3 for three is a delete of two");
	cr_expect_eq(cmd.res.placement->n_claims, 0);
	consolidation_command_done(&cmd);
}

Test(consolidation_method, an_underused_node_whose_pods_fit_elsewhere_is_deleted_without_a_replacement)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	struct consolidation_candidate v[2];
	struct consolidation_command cmd;

	fx_nodepool(c, "default", 0);
	fx_node(c, "full", "fake-it-3");
	fx_node(c, "light", "fake-it-3");
	fx_bound(c, "f-1", "full", 1500);
	fx_bound(c, "f-2", "full", 1500);
	fx_bound(c, "l-1", "light", 500);
	cluster_assign_nodepools(c);
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &opts, &cmd), 0);
	cr_assert_eq(cmd.method, CONSOLIDATION_SINGLE, "two nodes cannot both go");
	cr_assert_eq(cmd.n_candidates, 1);
	cr_expect_str_eq(node_name(c, v, &cmd, 0), "light", "the cheaper one to disrupt");
	cr_expect_eq(cmd.res.placement->n_claims, 0, "a delete");
	consolidation_command_done(&cmd);
}

Test(consolidation_method, a_big_node_is_replaced_by_one_strictly_cheaper_node)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	fx_nodepool(c, "default", 0);
	fx_node(c, "big", "fake-it-7");
	fx_bound(c, "p-1", "big", 700);
	cluster_assign_nodepools(c);
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &opts, &cmd), 0);
	cr_assert_eq(cmd.method, CONSOLIDATION_SINGLE);
	cr_assert_eq(cmd.res.placement->n_claims, 1);
	const struct sched_claim *cl = &cmd.res.placement->claims[0];
	for (uint32_t i = 0; i < cl->n_types; i++)
		cr_expect_lt(catalog_type_price(&c->cat, cl->types[i], cl->zones, cl->capacity_types),
			     v[0].price, "every option cheaper than the node");
	cr_expect_gt(cmd.savings, 0);
	consolidation_command_done(&cmd);
}

Test(consolidation_method, the_cheapest_node_is_not_replaced_and_says_why)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	fx_nodepool(c, "default", 0);
	fx_node(c, "small", "fake-it-0");
	fx_bound(c, "p-1", "small", 600);
	cluster_assign_nodepools(c);
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &opts, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE);
	cr_expect_neq(cmd.why[0][0], '\0', "an Unconsolidatable reason");
	consolidation_command_done(&cmd);
}

Test(consolidation_method, a_pod_that_fits_nowhere_else_is_named_with_why)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	/* The cheapest type already: no cheaper node could take its pod. */
	fx_nodepool(c, "default", 0);
	fx_node(c, "small", "fake-it-0");
	fx_bound(c, "stuck", "small", 600);
	cluster_assign_nodepools(c);
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &opts, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE);
	/* Karpenter's NonPendingPodSchedulingErrors: "ns/name => why". */
	cr_expect(strncmp(cmd.why[0], "not all pods would schedule, default/stuck => ", 46) == 0 &&
			  strlen(cmd.why[0]) > 46,
		  "%s", cmd.why[0]);
	consolidation_command_done(&cmd);
}

Test(consolidation_method, spot_is_not_replaced_by_spot_without_the_feature_gate)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	fx_nodepool(c, "default", 0);
	fx_node_ct(c, "big", "fake-it-7", V_SPOT);
	fx_bound(c, "p-1", "big", 700);
	cluster_assign_nodepools(c);
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &opts, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE);
	cr_expect(strstr(cmd.why[0], "SpotToSpotConsolidation is disabled"), "%s", cmd.why[0]);
	consolidation_command_done(&cmd);
}

Test(consolidation_method, spot_to_spot_needs_fifteen_cheaper_types_to_keep_diversity)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;
	struct consolidation_options o = opts;

	o.spot_to_spot = true;
	fx_nodepool(c, "default", 0);
	fx_node_ct(c, "big", "fake-it-7", V_SPOT);
	fx_bound(c, "p-1", "big", 700);
	cluster_assign_nodepools(c);
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE, "7 cheaper types only");
	cr_expect(strstr(cmd.why[0], "requires 15 cheaper instance type options"), "%s", cmd.why[0]);
	consolidation_command_done(&cmd);
}

Test(consolidation_method, spot_to_spot_with_enough_cheaper_types_launches_from_the_fifteen_cheapest)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(40);
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;
	struct consolidation_options o = opts;

	o.spot_to_spot = true;
	fx_nodepool(c, "default", 0);
	fx_node_ct(c, "big", "fake-it-30", V_SPOT);
	fx_bound(c, "p-1", "big", 700);
	cluster_assign_nodepools(c);
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_assert_eq(cmd.method, CONSOLIDATION_SINGLE, "%s", cmd.why[0]);
	cr_expect_eq(cmd.res.placement->claims[0].n_types, CONSOLIDATION_MIN_SPOT_TYPES);
	cr_expect_eq(cmd.res.placement->claims[0].capacity_types, 1u << CT_SPOT);
	consolidation_command_done(&cmd);
}

Test(consolidation_method, a_budget_of_zero_holds_every_candidate)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	struct consolidation_candidate v[2];
	struct consolidation_command cmd;
	static const uint32_t none[1] = { 0 };
	struct consolidation_options o = { .budget = none, .n_pools = 1 };

	fx_nodepool(c, "default", 0);
	fx_node(c, "a", "fake-it-3");
	fx_node(c, "b", "fake-it-3");
	fx_bound(c, "a-1", "a", 500);
	fx_bound(c, "b-1", "b", 500);
	cluster_assign_nodepools(c);
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE);
	cr_expect(strstr(cmd.why[0], "budgets"), "%s", cmd.why[0]);
	consolidation_command_done(&cmd);
}

Test(consolidation_method, a_budget_of_one_lets_multi_node_take_no_pair)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	struct consolidation_candidate v[3];
	struct consolidation_command cmd;
	static const uint32_t one[1] = { 1 };
	struct consolidation_options o = { .budget = one, .n_pools = 1 };

	fx_nodepool(c, "default", 0);
	fx_node(c, "a", "fake-it-3");
	fx_node(c, "b", "fake-it-3");
	fx_node(c, "c", "fake-it-3");
	fx_bound(c, "a-1", "a", 500);
	fx_bound(c, "b-1", "b", 500);
	fx_bound(c, "c-1", "c", 500);
	cluster_assign_nodepools(c);
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_SINGLE);
	cr_expect_eq(cmd.n_candidates, 1);
	consolidation_command_done(&cmd);
}

Test(consolidation_validate, a_command_whose_pods_no_longer_fit_is_dropped)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	struct consolidation_candidate v[2];
	struct consolidation_command cmd;

	fx_nodepool(c, "default", 0);
	fx_node(c, "full", "fake-it-0");
	fx_node(c, "light", "fake-it-0");
	fx_bound(c, "f-1", "full", 800);
	fx_bound(c, "l-1", "light", 500);
	cluster_assign_nodepools(c);
	candidates(c, v);
	/* "light" alone, as a delete would have it: its pod fits nowhere now. */
	struct consolidation_candidate only = v[0].node == 1 ? v[0] : v[1];
	cr_assert_eq(consolidation_validate(c, &only, 1, &opts, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE);
	consolidation_command_done(&cmd);
}

/* kanna's minimum savings (NodePool annotations, model/budget.h). */
static struct cluster *one_big_node(void)
{
	struct cluster *c = fx_cluster(8);

	fx_nodepool(c, "default", 0);
	fx_node(c, "big", "fake-it-7");
	fx_bound(c, "p-1", "big", 700);
	cluster_assign_nodepools(c);
	return c;
}

static double best_saving(void)
{
	_cleanup_(cluster_freep) struct cluster *c = one_big_node();
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;
	const struct sched_claim *cl;
	double best = 0;

	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &opts, &cmd), 0);
	cr_assert_eq(cmd.method, CONSOLIDATION_SINGLE);
	cl = &cmd.res.placement->claims[0];
	for (uint32_t i = 0; i < cl->n_types; i++)
		best = fmax(best, v[0].price - catalog_type_price(&c->cat, cl->types[i], cl->zones,
								  cl->capacity_types));
	consolidation_command_done(&cmd);
	return best;
}

Test(consolidation_min_savings, a_replace_saving_less_than_the_nodepools_minimum_is_not_done_and_says_why)
{
	_cleanup_(cluster_freep) struct cluster *c = one_big_node();
	struct min_savings ms = { .per_hour = best_saving() + 0.001 };
	struct consolidation_options o = opts;
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	o.min_savings = &ms;
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE);
	cr_expect(strstr(cmd.why[0], "replacement not cheaper enough (saving $"), "%s", cmd.why[0]);
	cr_expect(strstr(cmd.why[0], "/h below threshold $"), "%s", cmd.why[0]);
	consolidation_command_done(&cmd);
}

Test(consolidation_min_savings, a_replace_saving_more_than_the_minimum_launches_only_types_that_save_it)
{
	_cleanup_(cluster_freep) struct cluster *c = one_big_node();
	struct min_savings ms = { .per_hour = best_saving() / 2 };
	struct consolidation_options o = opts;
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	o.min_savings = &ms;
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_assert_eq(cmd.method, CONSOLIDATION_SINGLE);
	cr_assert_eq(cmd.res.placement->n_claims, 1);
	const struct sched_claim *cl = &cmd.res.placement->claims[0];
	cr_expect_gt(cl->n_types, 0);
	for (uint32_t i = 0; i < cl->n_types; i++)
		cr_expect_geq(v[0].price - catalog_type_price(&c->cat, cl->types[i], cl->zones,
							      cl->capacity_types),
			      ms.per_hour - 1e-9, "every option saves the minimum");
	consolidation_command_done(&cmd);
}

Test(consolidation_min_savings, a_percentage_is_of_the_replaced_nodes_price)
{
	_cleanup_(cluster_freep) struct cluster *c = one_big_node();
	struct min_savings ms = { .percent = 100 };
	struct consolidation_options o = opts;
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	o.min_savings = &ms;
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE, "no node saves 100%%");
	cr_expect(strstr(cmd.why[0], "below threshold"), "%s", cmd.why[0]);
	consolidation_command_done(&cmd);
	ms.percent = 1;
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_SINGLE, "1%% is saved");
	consolidation_command_done(&cmd);
}

Test(consolidation_min_savings, multi_node_deletes_still_go_when_the_replace_is_held_back)
{
	_cleanup_(cluster_freep) struct cluster *c = three_nodes("fake-it-7", 1000);
	struct min_savings ms = { .per_hour = 999 };
	struct consolidation_options o = opts;
	struct consolidation_candidate v[3];
	struct consolidation_command cmd;

	o.min_savings = &ms;
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_MULTI);
	cr_expect_eq(cmd.n_candidates, 2, "two nodes deleted, their pods onto the third");
	cr_expect_eq(cmd.res.placement ? cmd.res.placement->n_claims : 0, 0, "no replacement");
	consolidation_command_done(&cmd);
}

Test(consolidation_min_savings, the_annotations_read_as_numbers_and_a_malformed_one_is_named_and_ignored)
{
	struct proto_nodepool np = { .min_savings_per_hour = "0.05", .min_savings_percent = "20" };
	struct min_savings ms;
	char err[256] = "";

	cr_expect_eq(min_savings_parse(&np, &ms, err, sizeof(err)), 0);
	cr_expect_float_eq(ms.per_hour, 0.05, 1e-12);
	cr_expect_float_eq(ms.percent, 20, 1e-12);
	np.min_savings_percent = "120";
	cr_expect_eq(min_savings_parse(&np, &ms, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "kanna.dev/consolidation-min-savings-percent"), "%s", err);
	cr_expect_float_eq(ms.per_hour, 0.05, 1e-12, "the other one still applies");
	cr_expect_float_eq(ms.percent, 0, 1e-12);
	np = (struct proto_nodepool){ .min_savings_per_hour = "5 cents" };
	cr_expect_eq(min_savings_parse(&np, &ms, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "kanna.dev/consolidation-min-savings-per-hour: \"5 cents\""), "%s", err);
	np = (struct proto_nodepool){ .min_savings_per_hour = "nan" };
	cr_expect_eq(min_savings_parse(&np, &ms, err, sizeof(err)), -EINVAL);
	np = (struct proto_nodepool){ 0 };
	cr_expect_eq(min_savings_parse(&np, &ms, err, sizeof(err)), 0);
	cr_expect(ms.per_hour == 0 && ms.percent == 0);
}

/* 1→N (kanna's): a node whose pods only a dear type holds together, but
 * two cheap ones hold apart. fake-it-2..6 priced out, fake-it-7 dear. */
static struct cluster *dear_big_node(void)
{
	struct cluster *c = fx_cluster(8);

	for (uint32_t t = 0; t < c->cat.n_types; t++) {
		const char *name = strtab_str(&c->st, c->cat.types[t].name);
		double price = streq(name, "fake-it-7") ? 5.0 : strcmp(name, "fake-it-1") > 0 ? 100.0 : -1;
		for (uint32_t k = 0; price > 0 && k < c->cat.types[t].n_offerings; k++)
			c->cat.types[t].offerings[k].price = price;
	}
	fx_nodepool(c, "default", 0);
	fx_node(c, "big", "fake-it-7");
	fx_bound(c, "p-1", "big", 1500);
	fx_bound(c, "p-2", "big", 1500);
	cluster_assign_nodepools(c);
	return c;
}

Test(consolidation_split, one_dear_node_is_not_replaced_by_one_when_only_a_dear_type_holds_its_pods)
{
	_cleanup_(cluster_freep) struct cluster *c = dear_big_node();
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &opts, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE, "Karpenter's one-for-one finds nothing cheaper");
	consolidation_command_done(&cmd);
}

Test(consolidation_split, one_dear_node_is_replaced_by_two_cheaper_nodes_that_cost_less_together)
{
	_cleanup_(cluster_freep) struct cluster *c = dear_big_node();
	struct consolidation_options o = opts;
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	o.max_split = CONSOLIDATION_MAX_SPLIT;
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_assert_eq(cmd.method, CONSOLIDATION_SINGLE, "%s", cmd.why[0]);
	cr_assert_eq(cmd.res.placement->n_claims, 2);
	double worst = 0;
	for (uint32_t i = 0; i < 2; i++) {
		const struct sched_claim *cl = &cmd.res.placement->claims[i];
		double dearest = 0;
		for (uint32_t t = 0; t < cl->n_types; t++)
			dearest = fmax(dearest, catalog_type_price(&c->cat, cl->types[t], cl->zones,
								   cl->capacity_types));
		worst += dearest;
	}
	cr_expect_lt(worst, v[0].price, "whichever types launch, the two cost less than the node");
	cr_expect_float_eq(cmd.savings, cmd.removed_price - cmd.added_price, 1e-9);
	cr_expect_gt(cmd.savings, 0);
	consolidation_command_done(&cmd);
}

Test(consolidation_split, a_split_saving_less_than_the_minimum_is_not_done)
{
	_cleanup_(cluster_freep) struct cluster *c = dear_big_node();
	struct min_savings ms = { .per_hour = 4.99 };
	struct consolidation_options o = opts;
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	o.max_split = CONSOLIDATION_MAX_SPLIT;
	o.min_savings = &ms;
	cr_assert_eq(consolidation_compute(c, v, candidates(c, v), &o, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE);
	cr_expect(strstr(cmd.why[0], "not cheaper enough"), "%s", cmd.why[0]);
	consolidation_command_done(&cmd);
}

/* consolidationPolicy Balanced (Karpenter core v1.14, kubernetes-sigs/
 * karpenter pkg/controllers/disruption/balanced.go ScoreMove): a move goes
 * when its share of the pool's cost saved over its share of the pool's
 * disruption cost is at least 1/k, k = 2. */
Test(consolidation_balanced, the_score_is_the_share_of_savings_over_the_share_of_disruption)
{
	struct consolidation_balanced b = { .on = true, .total_cost = 10, .total_disruption = 20 };

	cr_expect_float_eq(consolidation_balanced_score(1, 2, &b), 1.0, 1e-9, "10%% saved for 10%%");
	cr_expect_float_eq(consolidation_balanced_score(0.4, 4, &b), 0.2, 1e-9, "4%% saved for 20%%");
	cr_expect_eq(consolidation_balanced_score(0, 2, &b), 0, "no savings: never");
	cr_expect_eq(consolidation_balanced_score(-1, 2, &b), 0);
	cr_expect(isinf(consolidation_balanced_score(1, 0, &b)), "disrupting nothing");
	b.total_cost = 0;
	cr_expect_eq(consolidation_balanced_score(1, 2, &b), 0, "a pool of no known cost: never");
}

/* The one big node replaced by a cheaper one, its pool's totals as given. */
static int balanced_compute(struct cluster *c, struct consolidation_candidate *v,
			    struct consolidation_balanced *b, double cost_factor, double disruption,
			    struct consolidation_command *cmd)
{
	struct consolidation_options o = opts;
	uint32_t n = candidates(c, v);

	v[0].reschedule_cost = 2; /* 1 + one default pod */
	b->total_cost = cost_factor * v[0].price;
	b->total_disruption = disruption;
	o.balanced = b;
	return consolidation_compute(c, v, n, &o, cmd);
}

Test(consolidation_balanced, a_replace_saving_little_of_the_pool_for_all_its_disruption_is_not_done_and_says_why)
{
	_cleanup_(cluster_freep) struct cluster *c = one_big_node();
	struct consolidation_balanced b = { .on = true };
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;

	/* The node is 1% of the pool's cost and all of its disruption. */
	cr_assert_eq(balanced_compute(c, v, &b, 100, 2, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_NONE);
	cr_expect(strstr(cmd.why[0], "below the Balanced threshold 0.500"), "%s", cmd.why[0]);
	cr_expect(strstr(cmd.why[0], "of its disruption cost"), "%s", cmd.why[0]);
	consolidation_command_done(&cmd);

	b.on = false; /* WhenEmptyOrUnderutilized: any saving goes */
	cr_assert_eq(balanced_compute(c, v, &b, 100, 2, &cmd), 0);
	cr_expect_eq(cmd.method, CONSOLIDATION_SINGLE);
	consolidation_command_done(&cmd);
}

Test(consolidation_balanced, a_replace_saving_much_of_the_pool_for_little_of_its_disruption_is_done)
{
	_cleanup_(cluster_freep) struct cluster *c = one_big_node();
	struct consolidation_balanced b = { .on = true };
	struct consolidation_candidate v[1];
	struct consolidation_command cmd;
	double saving = best_saving();

	/* All of the pool's cost, a tenth of its disruption: score ≥ 10 × saving / price. */
	cr_assert_eq(balanced_compute(c, v, &b, 1, 20, &cmd), 0);
	cr_assert_geq(10 * saving / v[0].price, 0.5, "the fixture saves too little to test this");
	cr_expect_eq(cmd.method, CONSOLIDATION_SINGLE, "%s", cmd.why[0]);
	cr_expect_gt(cmd.savings, 0);
	consolidation_command_done(&cmd);
}
