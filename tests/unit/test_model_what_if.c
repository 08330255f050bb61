/*
 * The solver's what-if (model/what-if.h), consolidation's question, and the
 * solve options it rests on: a deadline that defers the pods not yet tried,
 * a cap on new NodeClaims and on their price. Small clusters on Karpenter's
 * fake catalog, where fake-it-N has N+1 vCPU and costs more as N grows.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "model/what-if.h"
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

/* A Ready node of NodePool "default" in test-zone-1, on-demand. */
static uint32_t fx_node(struct cluster *c, const char *name, const char *type)
{
	uint32_t t = type_named(c, type);
	struct node *n = cluster_add_node(c);
	struct label *l = arena_alloc(&c->arena, 4 * sizeof(*l));

	cr_assert(n && l);
	n->name = fx_s(c, name);
	l[0] = (struct label){ K_NODEPOOL, fx_s(c, "default") };
	l[1] = (struct label){ K_ZONE, fx_s(c, "test-zone-1") };
	l[2] = (struct label){ K_INSTANCE_TYPE, fx_s(c, type) };
	l[3] = (struct label){ K_CAPACITY_TYPE, V_ON_DEMAND };
	labels_sort(l, 4);
	n->labels = l;
	n->n_labels = 4;
	n->capacity = c->cat.types[t].capacity;
	n->allocatable = c->cat.types[t].allocatable;
	return c->n_nodes - 1;
}

static struct pod *fx_bound(struct cluster *c, const char *name, const char *node, int64_t cpu_m)
{
	struct pod *p = fx_pod(c, name, cpu_m, 256);

	p->node = fx_s(c, node);
	return p;
}

static struct cluster *two_half_empty_nodes(void)
{
	struct cluster *c = fx_cluster(8);

	fx_nodepool(c, "default", 0);
	fx_node(c, "node-a", "fake-it-3");
	fx_node(c, "node-b", "fake-it-3");
	fx_bound(c, "a-1", "node-a", 500);
	fx_bound(c, "b-1", "node-b", 500);
	cluster_assign_nodepools(c);
	return c;
}

Test(what_if, removing_an_underused_node_moves_its_pods_onto_the_others_and_saves_its_price)
{
	_cleanup_(cluster_freep) struct cluster *c = two_half_empty_nodes();
	uint32_t remove = 0;
	struct what_if w = { .remove = &remove, .n_remove = 1 };
	struct what_if_result res;
	double price = cluster_node_price(c, 0);

	cr_assert_gt(price, 0);
	cr_assert_eq(what_if_solve(c, &w, &res), 0);
	cr_expect(res.fits, "%s", res.reason ? res.reason : "?");
	cr_expect_eq(res.n_moved, 1);
	cr_expect_eq(res.placement->n_claims, 0);
	cr_expect_eq(res.placement->pod_bin[res.moved[0]], 1, "a-1 goes to node-b");
	cr_expect_float_eq(res.removed_price, price, 1e-9);
	cr_expect_float_eq(res.cost_delta, -price, 1e-9);
	cr_expect_lt(res.cost_delta, 0);
	what_if_result_done(&res);
}

Test(what_if, a_big_node_is_replaced_by_one_cheaper_nodeclaim_that_holds_its_pods)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	uint32_t remove = 0;
	struct what_if w = { .remove = &remove, .n_remove = 1, .max_new_claims = 1 };
	struct what_if_result res;

	fx_nodepool(c, "default", 0);
	fx_node(c, "big", "fake-it-7");
	fx_bound(c, "p-1", "big", 700);
	fx_bound(c, "p-2", "big", 700);
	cluster_assign_nodepools(c);
	cr_assert_eq(what_if_solve(c, &w, &res), 0);
	cr_assert(res.fits, "%s", res.reason ? res.reason : "?");
	cr_expect_eq(res.n_moved, 2);
	cr_assert_eq(res.placement->n_claims, 1);
	cr_expect_eq(res.placement->claims[0].n_pods, 2);
	cr_expect_lt(res.added_price, res.removed_price);
	cr_expect_lt(res.cost_delta, 0);
	for (uint32_t i = 0; i < res.placement->claims[0].n_types; i++)
		cr_expect_lt(catalog_type_price(&c->cat, res.placement->claims[0].types[i], UINT64_MAX, ~0u),
			     res.removed_price, "every option is cheaper than the node replaced");
	what_if_result_done(&res);
}

Test(what_if, pods_that_fit_nowhere_else_make_a_delete_impossible_and_say_why)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	uint32_t remove = 0;
	struct what_if w = { .remove = &remove, .n_remove = 1, .max_new_claims = 0 };
	struct what_if_result res;

	fx_nodepool(c, "default", 0);
	fx_node(c, "only", "fake-it-3");
	fx_bound(c, "p-1", "only", 500);
	cluster_assign_nodepools(c);
	cr_assert_eq(what_if_solve(c, &w, &res), 0);
	cr_expect_not(res.fits);
	cr_expect_eq(res.unplaced_pod, res.moved[0]);
	cr_assert(res.reason);
	cr_expect(strstr(res.reason, "node only is being removed") ||
		  strstr(res.reason, "no new nodeclaim allowed"), "%s", res.reason);
	what_if_result_done(&res);
}

Test(what_if, a_replacement_that_saves_nothing_is_no_answer)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	uint32_t remove = 0;
	struct what_if w = { .remove = &remove, .n_remove = 1, .max_new_claims = 1 };
	struct what_if_result res;

	fx_nodepool(c, "default", 0);
	fx_node(c, "small", "fake-it-0"); /* the cheapest type there is */
	fx_bound(c, "p-1", "small", 600);
	cluster_assign_nodepools(c);
	cr_assert_eq(what_if_solve(c, &w, &res), 0);
	cr_expect_not(res.fits);
	cr_expect_eq(res.placement->n_claims, 0);
	cr_assert(res.reason);
	cr_expect(strstr(res.reason, "costs less than"), "%s", res.reason);
	what_if_result_done(&res);
}

Test(what_if, daemonset_pods_go_with_their_node)
{
	_cleanup_(cluster_freep) struct cluster *c = two_half_empty_nodes();
	uint32_t remove = 0;
	struct what_if w = { .remove = &remove, .n_remove = 1 };
	struct what_if_result res;
	struct pod *ds = fx_bound(c, "ds-a", "node-a", 100);

	ds->dies_with_node = true;
	cr_assert_eq(what_if_solve(c, &w, &res), 0);
	cr_expect(res.fits);
	cr_expect_eq(res.n_moved, 1, "only a-1 moves");
	cr_expect_eq(c->pods[res.moved[0]].name, fx_s(c, "a-1"));
	what_if_result_done(&res);
}

Test(what_if, removing_every_node_without_new_capacity_places_nothing)
{
	_cleanup_(cluster_freep) struct cluster *c = two_half_empty_nodes();
	uint32_t remove[] = { 0, 1 };
	struct what_if w = { .remove = remove, .n_remove = 2, .max_new_claims = 0 };
	struct what_if_result res;

	cr_assert_eq(what_if_solve(c, &w, &res), 0);
	cr_expect_not(res.fits);
	cr_expect_eq(res.n_moved, 2);
	cr_expect_float_eq(res.removed_price, 2 * cluster_node_price(c, 0), 1e-9);
	what_if_result_done(&res);
}

Test(solve_options, a_solve_past_its_deadline_defers_the_pods_it_did_not_try)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	_cleanup_(sched_result_freep) struct sched_result *res = NULL;
	struct sched_options o = { .deadline_usec = 1 }; /* long past */
	char name[16];

	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "p-%d", i);
		fx_pod(c, name, 100, 64);
	}
	cr_assert_eq(sched_solve_with(c, &o, &res), 0);
	cr_expect(res->stopped);
	cr_expect_eq(res->n_deferred, 50);
	cr_expect_eq(res->n_unschedulable, 0, "not tried is not unschedulable");
	cr_expect_eq(res->n_claims, 0);
}

Test(solve_options, a_cancelled_solve_stops_and_one_without_options_places_everything)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(8);
	_cleanup_(sched_result_freep) struct sched_result *res = NULL;
	_cleanup_(sched_result_freep) struct sched_result *all = NULL;
	atomic_bool cancel = true;
	struct sched_options o = { .cancel = &cancel };

	fx_nodepool(c, "default", 0);
	fx_pod(c, "p-0", 100, 64);
	fx_pod(c, "p-1", 100, 64);
	cr_assert_eq(sched_solve_with(c, &o, &res), 0);
	cr_expect(res->stopped);
	cr_expect_eq(res->n_deferred, 2);
	cr_assert_eq(sched_solve(c, &all), 0);
	cr_expect_not(all->stopped);
	cr_expect_eq(all->n_deferred, 0);
	cr_expect_eq(all->n_claims, 1);
	cr_expect_eq(all->claims[0].n_pods, 2);
}

Test(solve_options, at_most_the_allowed_number_of_nodeclaims_is_opened)
{
	_cleanup_(cluster_freep) struct cluster *c = fx_cluster(2);
	_cleanup_(sched_result_freep) struct sched_result *res = NULL;
	struct sched_options o = { .limit_new_claims = true, .max_new_claims = 1 };

	fx_nodepool(c, "default", 0);
	fx_pod(c, "p-0", 1500, 64); /* fake-it-1 holds one of these */
	fx_pod(c, "p-1", 1500, 64);
	cr_assert_eq(sched_solve_with(c, &o, &res), 0);
	cr_expect_eq(res->n_claims, 1);
	cr_assert_eq(res->n_unschedulable, 1);
	cr_expect(strstr(res->unschedulable[0].reason, "no new nodeclaim allowed beyond 1"), "%s",
		  res->unschedulable[0].reason);
}

/* pending_first: a pending pod takes its room on what remains before the
 * removed node's pods look for theirs (Karpenter's SimulateScheduling
 * solves pending pods beside the candidates'): with a pending pod that
 * leaves node-b 250m, a-1 has no place; the model is as before after. */
Test(what_if, pending_pods_take_their_room_first)
{
	_cleanup_(cluster_freep) struct cluster *c = two_half_empty_nodes();
	int64_t room = c->nodes[1].allocatable.v[RES_CPU] - 500;
	struct pod *pending = fx_pod(c, "pending", room - 250, 256);
	uint32_t remove = 0, pending_idx = (uint32_t)(pending - c->pods);
	struct what_if w = { .remove = &remove, .n_remove = 1, .pending_first = true };
	struct what_if_result res;

	cr_assert_eq(what_if_solve(c, &w, &res), 0);
	cr_expect_not(res.fits, "the pending pod took node-b's room");
	cr_expect_eq(res.placement->n_claims, 0);
	cr_expect_eq(c->pods[pending_idx].node, STR_NONE, "the model is as before");
	cr_expect_null(c->pods[pending_idx].invalid);
	what_if_result_done(&res);
}

/* A pending pod with no room on what remains is out of the question: no
 * NodeClaim is opened for it even where the what-if allows one (new
 * capacity for pending pods is the scheduler's to plan, and a replacement
 * that carried it would race the scheduler's own plan). Without
 * pending_first it rides the one NodeClaim allowed. */
Test(what_if, a_pending_pod_without_room_rides_no_replacement)
{
	_cleanup_(cluster_freep) struct cluster *c = two_half_empty_nodes();
	int64_t room = c->nodes[1].allocatable.v[RES_CPU] - 500;
	struct pod *pending = fx_pod(c, "pending", room + 100, 256);
	uint32_t remove = 0, pending_idx = (uint32_t)(pending - c->pods);
	struct what_if w = { .remove = &remove, .n_remove = 1, .max_new_claims = 1, .max_new_price = -1 };
	struct what_if_result res;

	cr_assert_eq(what_if_solve(c, &w, &res), 0);
	cr_expect_eq(res.placement->n_claims, 1, "without pending_first a NodeClaim opens for it");
	cr_expect_geq(res.placement->pod_bin[pending_idx], (int32_t)c->n_nodes);
	what_if_result_done(&res);
	for (uint32_t p = 0; p < c->n_pods; p++) /* put a-1 back */
		if (c->pods[p].name == fx_s(c, "a-1"))
			c->pods[p].node = fx_s(c, "node-a");
	c->nodes[0].removed = false;

	w.pending_first = true;
	cr_assert_eq(what_if_solve(c, &w, &res), 0);
	cr_expect(res.fits, "%s", res.reason ? res.reason : "?");
	cr_expect_eq(res.placement->n_claims, 0, "no NodeClaim for the pending pod");
	cr_expect_eq(res.placement->pod_bin[res.moved[0]], 1, "a-1 goes to node-b");
	cr_expect_eq(c->pods[pending_idx].node, STR_NONE, "the model is as before");
	cr_expect_null(c->pods[pending_idx].invalid);
	what_if_result_done(&res);
}
