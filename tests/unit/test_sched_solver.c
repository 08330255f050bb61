/* The solver on Karpenter's fake catalog: FFD packing, NodePool choice,
 * limits, taints, requirements, topology spread and pod (anti-)affinity. */
#include "tests/unit/sched-fixture.h"

static struct cluster *c;
static struct sched_result *res;

static void teardown(void)
{
	sched_result_free(res);
	res = NULL;
	cluster_free(c);
	c = NULL;
}

TestSuite(solver, .fini = teardown);

static void solve(void)
{
	cluster_compute_daemon_overhead(c);
	cr_assert_eq(sched_solve(c, &res), 0);
}

static const char *claim_type(uint32_t k)
{
	return fx_str(c, c->cat.types[res->claims[k].types[0]].name);
}

Test(solver, packs_identical_pods_onto_one_cheapest_nodeclaim)
{
	c = fx_cluster(400);
	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 5; i++)
		fx_pod(c, "p", 500, 512);
	solve();
	cr_assert_eq(res->n_claims, 1);
	cr_assert_eq(res->claims[0].n_pods, 5);
	cr_assert_eq(res->n_unschedulable, 0);
	/* 2.5 cpu + 100m reserved: fake-it-2 (3 vCPU) is the cheapest that fits. */
	cr_assert_str_eq(claim_type(0), "fake-it-2");
	cr_assert_leq(res->claims[0].n_types, SCHED_MAX_CANDIDATE_TYPES);
	for (uint32_t i = 1; i < res->claims[0].n_types; i++)
		cr_assert_leq(res->claims[0].types[i - 1], res->claims[0].types[i]);
}

Test(solver, opens_a_second_nodeclaim_when_the_largest_type_is_full)
{
	c = fx_cluster(4); /* largest: 4 vCPU */
	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 10; i++)
		fx_pod(c, "p", 1000, 256);
	solve();
	cr_assert_eq(res->n_claims, 4);
	cr_assert_eq(res->n_unschedulable, 0);
}

Test(solver, too_big_pod_is_unschedulable_with_a_precise_reason)
{
	c = fx_cluster(10);
	fx_nodepool(c, "default", 0);
	fx_pod(c, "big", 96000, 256);
	solve();
	cr_assert_eq(res->n_claims, 0);
	cr_assert_eq(res->n_unschedulable, 1);
	cr_assert_str_eq(res->unschedulable[0].reason,
			 "incompatible with nodepool default: no instance type with 96 cpu in zones [test-zone-1 test-zone-2 test-zone-3]");
}

Test(solver, heaviest_compatible_nodepool_wins)
{
	c = fx_cluster(50);
	fx_nodepool(c, "light", 1);
	struct nodepool *heavy = fx_nodepool(c, "heavy", 10);
	fx_req(c, &heavy->reqs, "team", REQ_IN, "a", NULL);
	struct pod *p = fx_pod(c, "x", 100, 100);
	fx_req(c, &p->reqs, "team", REQ_IN, "a", NULL);
	fx_pod(c, "y", 100, 100);
	solve();
	for (uint32_t k = 0; k < res->n_claims; k++)
		cr_assert_str_eq(fx_str(c, c->nodepools[res->claims[k].nodepool].name), "heavy");
	cr_assert_eq(res->n_claims, 1);
}

Test(solver, custom_label_unknown_to_every_nodepool_is_reported)
{
	c = fx_cluster(10);
	fx_nodepool(c, "default", 0);
	struct pod *p = fx_pod(c, "x", 100, 100);
	fx_req(c, &p->reqs, "intent", REQ_IN, "apps", NULL);
	solve();
	cr_assert_eq(res->n_unschedulable, 1);
	cr_assert_str_eq(res->unschedulable[0].reason,
			 "incompatible with nodepool default: label \"intent\" does not have known values");
}

Test(solver, taints_need_tolerations)
{
	c = fx_cluster(10);
	struct nodepool *np = fx_nodepool(c, "gpu", 0);
	np->taints = arena_alloc(&c->arena, sizeof(struct taint));
	np->taints[0] = (struct taint){ fx_s(c, "dedicated"), fx_s(c, "gpu"), TAINT_NO_SCHEDULE };
	np->n_taints = 1;
	fx_pod(c, "plain", 100, 100);
	struct pod *p = fx_pod(c, "tolerant", 100, 100);
	p->tols = arena_alloc(&c->arena, sizeof(struct toleration));
	p->tols[0] = (struct toleration){ fx_s(c, "dedicated"), STR_NONE, true, -1 };
	p->n_tols = 1;
	solve();
	cr_assert_eq(res->n_claims, 1);
	cr_assert_eq(res->n_unschedulable, 1);
	cr_assert_str_eq(fx_str(c, c->pods[res->unschedulable[0].pod].name), "plain");
	cr_assert(strstr(res->unschedulable[0].reason, "did not tolerate taint dedicated=gpu:NoSchedule"));
}

Test(solver, nodepool_cpu_limit_caps_new_capacity)
{
	c = fx_cluster(4);
	struct nodepool *np = fx_nodepool(c, "default", 0);
	np->limits.v[RES_CPU] = 8000;
	for (int i = 0; i < 12; i++)
		fx_pod(c, "p", 1000, 100);
	solve();
	int64_t reserved = 0;
	for (uint32_t k = 0; k < res->n_claims; k++) {
		int64_t max = 0;
		for (uint32_t t = 0; t < res->claims[k].n_types; t++)
			max = MAX(max, c->cat.types[res->claims[k].types[t]].capacity.v[RES_CPU]);
		reserved += max;
	}
	cr_assert_leq(reserved, 8000);
	cr_assert_gt(res->n_unschedulable, 0);
	cr_assert(strstr(res->unschedulable[0].reason, "all instance types exceed nodepool limits"),
		  "%s", res->unschedulable[0].reason);
}

Test(solver, zonal_spread_balances_zones)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 9; i++) {
		struct pod *p = fx_pod(c, "s", 1000, 100);
		fx_label(c, p, "app", "web");
		fx_topo(c, p, TOPO_SPREAD, "topology.kubernetes.io/zone", "app", "web", 1, false, 0);
	}
	solve();
	int per_zone[3] = { 0 };
	for (uint32_t k = 0; k < res->n_claims; k++) {
		cr_assert_eq(__builtin_popcountll(res->claims[k].zones), 1);
		per_zone[__builtin_ctzll(res->claims[k].zones)] += (int)res->claims[k].n_pods;
	}
	cr_assert_eq(per_zone[0], 3);
	cr_assert_eq(per_zone[1], 3);
	cr_assert_eq(per_zone[2], 3);
}

Test(solver, hostname_anti_affinity_gives_each_pod_its_own_nodeclaim)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 5; i++) {
		struct pod *p = fx_pod(c, "a", 100, 100);
		fx_label(c, p, "app", "db");
		fx_topo(c, p, TOPO_ANTI_AFFINITY, "kubernetes.io/hostname", "app", "db", 0, false, 0);
	}
	fx_pod(c, "other", 100, 100);
	solve();
	cr_assert_eq(res->n_claims, 5);
	cr_assert_eq(res->n_unschedulable, 0);
}

Test(solver, zonal_pod_affinity_follows_the_first_pod)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 6; i++) {
		struct pod *p = fx_pod(c, "f", 2000, 100);
		fx_label(c, p, "app", "cache");
		fx_topo(c, p, TOPO_AFFINITY, "topology.kubernetes.io/zone", "app", "cache", 0, false, 0);
	}
	solve();
	uint64_t zones = 0;
	for (uint32_t k = 0; k < res->n_claims; k++)
		zones |= res->claims[k].zones;
	cr_assert_eq(__builtin_popcountll(zones), 1);
	cr_assert_eq(res->n_unschedulable, 0);
}

Test(solver, unsatisfiable_preference_is_relaxed)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 4; i++) {
		struct pod *p = fx_pod(c, "p", 100, 100);
		fx_label(c, p, "app", "x");
		/* Only 3 zones: the fourth pod cannot avoid the others, relaxes. */
		fx_topo(c, p, TOPO_ANTI_AFFINITY, "topology.kubernetes.io/zone", "app", "x", 0, true, 50);
	}
	solve();
	cr_assert_eq(res->n_unschedulable, 0);
	uint64_t zones = 0;
	for (uint32_t k = 0; k < res->n_claims; k++)
		zones |= res->claims[k].zones;
	cr_assert_eq(__builtin_popcountll(zones), 3);
}

Test(solver, min_values_opens_another_nodeclaim_rather_than_narrowing_below_it)
{
	c = fx_cluster(10);
	struct nodepool *np = fx_nodepool(c, "default", 0);
	cr_assert_eq(requirements_add(&np->reqs, &c->st, K_INSTANCE_TYPE, REQ_EXISTS, NULL, 0, 3), 0);
	for (int i = 0; i < 3; i++)
		fx_pod(c, "p", 3000, 100);
	solve();
	cr_assert_eq(res->n_unschedulable, 0);
	cr_assert_eq(res->n_claims, 2);
	for (uint32_t k = 0; k < res->n_claims; k++)
		cr_assert_geq(res->claims[k].n_types, 3);
}
