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

Test(solver, a_pod_on_a_node_the_model_does_not_hold_is_not_reported_unschedulable)
{
	c = fx_cluster(10);
	fx_nodepool(c, "default", 0);
	fx_pod(c, "pending", 500, 256);
	/* Bound (or planned) to a node or NodeClaim the cluster model left out. */
	fx_pod(c, "elsewhere", 500, 256)->node = fx_s(c, "ip-10-0-0-1.unknown");
	solve();
	cr_assert_eq(res->n_claims, 1);
	cr_assert_eq(res->n_unschedulable, 0, "reported: %s",
		     res->n_unschedulable ? res->unschedulable[0].reason : "");
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

/* What the plan sends is what later batches count the claim's pods in
 * (an in-flight NodeClaim's single zone value): a spread claim's zone
 * requirement names exactly the zone it was pinned to. */
Test(solver, zonal_spread_claims_require_the_zone_they_are_pinned_to)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 3; i++) {
		struct pod *p = fx_pod(c, "s", 1000, 100);
		fx_label(c, p, "app", "web");
		fx_topo(c, p, TOPO_SPREAD, "topology.kubernetes.io/zone", "app", "web", 1, false, 0);
	}
	solve();
	cr_assert_eq(res->n_claims, 3);
	for (uint32_t k = 0; k < res->n_claims; k++) {
		const struct requirement *z = requirements_get(&res->claims[k].reqs, K_ZONE);
		cr_assert_eq(__builtin_popcountll(res->claims[k].zones), 1);
		cr_assert(z && !z->complement && z->n_values == 1, "claim %u: zone not narrowed", k);
		cr_assert_eq(z->values[0], c->cat.zones[__builtin_ctzll(res->claims[k].zones)]);
	}
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

Test(solver, hostname_spread_allows_max_skew_pods_per_node)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 6; i++) {
		struct pod *p = fx_pod(c, "h", 100, 100);
		fx_label(c, p, "app", "web");
		fx_topo(c, p, TOPO_SPREAD, "kubernetes.io/hostname", "app", "web", 2, false, 0);
	}
	solve();
	cr_assert_eq(res->n_claims, 3);
	for (uint32_t k = 0; k < res->n_claims; k++)
		cr_assert_eq(res->claims[k].n_pods, 2);
}

Test(solver, capacity_type_spread_uses_both_capacity_types)
{
	c = fx_cluster(20);
	struct nodepool *np = fx_nodepool(c, "default", 0);
	fx_req(c, &np->reqs, "karpenter.sh/capacity-type", REQ_IN, "spot", "on-demand");
	for (int i = 0; i < 4; i++) {
		struct pod *p = fx_pod(c, "ct", 1000, 100);
		fx_label(c, p, "app", "x");
		fx_topo(c, p, TOPO_SPREAD, "karpenter.sh/capacity-type", "app", "x", 1, false, 0);
	}
	solve();
	int spot = 0, od = 0;
	for (uint32_t k = 0; k < res->n_claims; k++) {
		cr_assert_eq(__builtin_popcount(res->claims[k].capacity_types), 1);
		if (res->claims[k].capacity_types == 1u << CT_SPOT)
			spot += (int)res->claims[k].n_pods;
		else
			od += (int)res->claims[k].n_pods;
	}
	cr_assert_eq(spot, 2);
	cr_assert_eq(od, 2);
}

Test(solver, spread_on_a_custom_nodepool_label_pins_its_values)
{
	c = fx_cluster(20);
	struct nodepool *np = fx_nodepool(c, "default", 0);
	fx_req(c, &np->reqs, "rack", REQ_IN, "r1", "r2");
	for (int i = 0; i < 4; i++) {
		struct pod *p = fx_pod(c, "r", 1000, 100);
		fx_label(c, p, "app", "x");
		fx_topo(c, p, TOPO_SPREAD, "rack", "app", "x", 1, false, 0);
	}
	solve();
	int per[2] = { 0 };
	for (uint32_t k = 0; k < res->n_claims; k++) {
		const struct requirement *q = requirements_get(&res->claims[k].reqs, fx_s(c, "rack"));
		cr_assert(q && !q->complement && q->n_values == 1);
		per[q->values[0] == fx_s(c, "r2")] += (int)res->claims[k].n_pods;
	}
	cr_assert_eq(per[0], 2);
	cr_assert_eq(per[1], 2);
}

static struct node *fx_node(const char *name, const char *zone, int64_t cpu_m)
{
	struct node *n = cluster_add_node(c);
	n->name = fx_s(c, name);
	n->labels = arena_alloc(&c->arena, sizeof(*n->labels));
	n->labels[0] = (struct label){ K_ZONE, fx_s(c, zone) };
	n->n_labels = 1;
	n->allocatable.v[RES_CPU] = cpu_m;
	n->allocatable.v[RES_MEMORY] = 64LL << 30;
	n->allocatable.v[RES_PODS] = 100;
	n->capacity = n->allocatable;
	return n;
}

Test(solver, existing_nodes_are_filled_first_unless_tainted)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	struct node *tainted = fx_node("tainted", "test-zone-1", 64000);
	tainted->taints = arena_alloc(&c->arena, sizeof(struct taint));
	tainted->taints[0] = (struct taint){ fx_s(c, "karpenter.sh/disrupted"), STR_NONE, TAINT_NO_SCHEDULE };
	tainted->n_taints = 1;
	fx_node("free", "test-zone-2", 2000);
	for (int i = 0; i < 3; i++)
		fx_pod(c, "p", 1000, 100);
	solve();
	int on_free = 0, on_tainted = 0;
	for (uint32_t p = 0; p < c->n_pods; p++) {
		on_tainted += res->pod_bin[p] == 0;
		on_free += res->pod_bin[p] == 1;
	}
	cr_assert_eq(on_tainted, 0);
	cr_assert_eq(on_free, 2);
	cr_assert_eq(res->n_claims, 1);
}

Test(solver, inverse_anti_affinity_keeps_matching_pods_out_of_the_zone)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	fx_node("n1", "test-zone-1", 64000);
	struct pod *owner = fx_pod(c, "owner", 100, 100);
	owner->node = fx_s(c, "n1");
	fx_topo(c, owner, TOPO_ANTI_AFFINITY, "topology.kubernetes.io/zone", "app", "victim", 0, false, 0);
	struct pod *v = fx_pod(c, "victim", 100, 100);
	fx_label(c, v, "app", "victim");
	solve();
	cr_assert_eq(res->n_unschedulable, 0);
	cr_assert_geq(res->pod_bin[1], 1); /* not on n1 (bin 0) */
	cr_assert_eq(res->claims[0].zones & 1, 0, "the claim must avoid test-zone-1");
}

Test(solver, required_node_affinity_uses_the_first_satisfiable_term)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	struct pod *p = fx_pod(c, "p", 100, 100);
	p->terms = calloc(2, sizeof(*p->terms));
	p->n_terms = 2;
	fx_req(c, &p->terms[0], "node.kubernetes.io/instance-type", REQ_IN, "no-such-type", NULL);
	fx_req(c, &p->terms[1], "node.kubernetes.io/instance-type", REQ_IN, "fake-it-7", NULL);
	solve();
	cr_assert_eq(res->n_unschedulable, 0);
	cr_assert_str_eq(claim_type(0), "fake-it-7");
	cr_assert_eq(res->claims[0].n_types, 1);
}

Test(solver, satisfiable_preferred_node_affinity_is_honoured)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	struct pod *p = fx_pod(c, "p", 100, 100);
	p->prefs = calloc(1, sizeof(*p->prefs));
	p->n_prefs = 1;
	p->prefs[0].weight = 10;
	fx_req(c, &p->prefs[0].reqs, "topology.kubernetes.io/zone", REQ_IN, "test-zone-3", NULL);
	solve();
	cr_assert_eq(res->claims[0].zones, 1ULL << 2);
	cr_assert_eq(res->claims[0].capacity_types, 1u << CT_ON_DEMAND); /* no spot in zone 3 */
}

Test(solver, daemonset_overhead_is_reserved_on_new_nodeclaims)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	struct pod *ds = cluster_add_daemonset(c);
	ds->req.v[RES_CPU] = 1000;
	ds->req.v[RES_PODS] = 1;
	fx_pod(c, "p", 1500, 100);
	solve();
	/* 1.5 + 1 cpu + 100m reserved: 3 vCPU (fake-it-2) is the smallest. */
	cr_assert_str_eq(claim_type(0), "fake-it-2");
	cr_assert_eq(res->claims[0].requests.v[RES_CPU], 2500);
}

Test(solver, host_ports_never_collide_on_a_node)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	static uint16_t port = 8080;
	for (int i = 0; i < 3; i++) {
		struct pod *p = fx_pod(c, "hp", 100, 100);
		p->host_ports = &port;
		p->n_host_ports = 1;
	}
	solve();
	cr_assert_eq(res->n_claims, 3);
}

/* The incident: a -30 cpu pod that others had pod affinity to pulled eight
 * 4-cpu pods onto one 7.91-cpu node. A negative request is invalid input. */
Test(solver, a_pending_pod_with_a_negative_request_is_refused_not_packed)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	struct pod *neg = fx_pod(c, "negative", -30000, 100);
	fx_label(c, neg, "app", "web");
	for (int i = 0; i < 8; i++) {
		struct pod *p = fx_pod(c, "follower", 4000, 100);
		fx_topo(c, p, TOPO_AFFINITY, "kubernetes.io/hostname", "app", "web", 0, false, 0);
	}
	solve();
	cr_assert_eq(res->pod_bin[0], -1, "the negative pod was placed");
	cr_assert_eq(res->n_claims, 0, "%u nodeclaim(s) for pods that need the negative one",
		     res->n_claims);
	cr_assert_eq(res->n_unschedulable, 9);
	for (uint32_t i = 0; i < res->n_unschedulable; i++)
		if (res->unschedulable[i].pod == 0)
			cr_assert_str_eq(res->unschedulable[i].reason,
					 "invalid request of -30 cpu: requests must not be negative");
}

Test(solver, a_bound_pod_with_a_negative_request_frees_no_capacity)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	fx_node("n", "test-zone-1", 8000);
	fx_pod(c, "negative", -30000, 100)->node = fx_s(c, "n");
	fx_pod(c, "running", 4000, 100)->node = fx_s(c, "n");
	for (int i = 0; i < 3; i++)
		fx_pod(c, "pending", 4000, 100);
	solve();
	int on_node = 0;
	for (uint32_t p = 2; p < c->n_pods; p++)
		on_node += res->pod_bin[p] == 0;
	cr_assert_eq(on_node, 1, "%d pending pod(s) of 4 cpu went onto the node's 4 free cpu", on_node);
	cr_assert_eq(res->n_unschedulable, 0);
}

/* With twenty NodePools the reason listing them all was cut off before the
 * one the pod selects, the one that explains it. */
Test(solver, the_reason_leads_with_the_nodepool_that_got_furthest)
{
	char name[16];

	c = fx_cluster(10);
	for (int i = 0; i < 19; i++) {
		snprintf(name, sizeof(name), "np-%02d", i);
		struct nodepool *np = fx_nodepool(c, name, 10);
		fx_req(c, &np->reqs, "team", REQ_IN, "x", NULL);
	}
	struct nodepool *mine = fx_nodepool(c, "team-a", 0);
	fx_req(c, &mine->reqs, "team", REQ_IN, "a", NULL);
	struct pod *p = fx_pod(c, "big", 96000, 256);
	fx_req(c, &p->reqs, "team", REQ_IN, "a", NULL);
	solve();
	cr_assert_eq(res->n_unschedulable, 1);
	const char *why = res->unschedulable[0].reason;
	const char *lead = "incompatible with nodepool team-a: no instance type with 96 cpu in zones "
			   "[test-zone-1 test-zone-2 test-zone-3]; incompatible with nodepool np-00: ";
	cr_assert_eq(strncmp(why, lead, strlen(lead)), 0, "%s", why);
	cr_assert_lt(strlen(why), 511, "cut off: %s", why);
	cr_assert(strstr(why, "more nodepool(s)"), "%s", why);
}

/* Does every candidate type of claim k have an instance-cpu label in [lo, hi]? */
static bool claim_cpus_within(uint32_t k, long lo, long hi, bool *edge)
{
	for (uint32_t i = 0; i < res->claims[k].n_types; i++) {
		const struct instance_type *it = &c->cat.types[res->claims[k].types[i]];
		long cpu = atol(fx_str(c, labels_get(it->labels, it->n_labels, K_INSTANCE_CPU)));
		if (cpu < lo || cpu > hi)
			return false;
		*edge |= cpu == lo || cpu == hi;
	}
	return res->claims[k].n_types > 0;
}

Test(solver, nodepool_instance_cpu_gte_4_allows_4_vcpu_types)
{
	bool edge = false;

	c = fx_cluster(20); /* fake-it-N has N+1 vCPU */
	struct nodepool *np = fx_nodepool(c, "default", 0);
	fx_req(c, &np->reqs, "karpenter.k8s.aws/instance-cpu", REQ_GTE, "4", NULL);
	fx_pod(c, "p", 500, 256);
	solve();
	cr_assert_eq(res->n_claims, 1);
	cr_assert_str_eq(claim_type(0), "fake-it-3", "the cheapest type of 4 vCPU");
	cr_assert(claim_cpus_within(0, 4, 1000, &edge) && edge);
}

Test(solver, nodepool_instance_cpu_lte_4_excludes_8_vcpu_types)
{
	bool edge = false;

	c = fx_cluster(20);
	struct nodepool *np = fx_nodepool(c, "default", 0);
	fx_req(c, &np->reqs, "karpenter.k8s.aws/instance-cpu", REQ_LTE, "4", NULL);
	fx_pod(c, "fits", 3500, 256);  /* only a 4-vCPU type holds it */
	fx_pod(c, "large", 7000, 256); /* needs 8 vCPU: refused */
	solve();
	cr_assert_eq(res->n_claims, 1);
	cr_assert(claim_cpus_within(0, 0, 4, &edge) && edge, "every type has at most 4 vCPU, 4 among them");
	cr_assert_eq(res->n_unschedulable, 1);
	cr_assert(strstr(res->unschedulable[0].reason, "no instance type with 7 cpu"), "%s",
		  res->unschedulable[0].reason);
}

/* Karpenter starts a new NodeClaim with its template's daemon host ports
 * taken (scheduler.go getDaemonHostPortUsage → NewNodeClaim). */
Test(solver, a_host_port_a_daemonset_takes_keeps_the_pod_off_new_nodes_of_that_pool)
{
	static uint16_t exporter = 9100, other = 9200;

	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	struct pod *ds = cluster_add_daemonset(c);
	ds->ns = fx_s(c, "monitoring");
	ds->name = fx_s(c, "node-exporter");
	ds->req.v[RES_CPU] = 100;
	ds->req.v[RES_PODS] = 1;
	ds->host_ports = &exporter;
	ds->n_host_ports = 1;
	struct pod *p = fx_pod(c, "collides", 100, 100);
	p->host_ports = &exporter;
	p->n_host_ports = 1;
	solve();
	cr_assert_eq(res->n_claims, 0);
	cr_assert_eq(res->n_unschedulable, 1);
	cr_assert_str_eq(res->unschedulable[0].reason,
			 "incompatible with nodepool default: host port 9100 is taken by daemonset monitoring/node-exporter");
	sched_result_free(res);
	res = NULL;

	p->host_ports = &other;
	solve();
	cr_assert_eq(res->n_claims, 1);
	cr_assert_eq(res->n_unschedulable, 0);
}

Test(solver, a_daemonset_that_does_not_run_on_the_pool_leaves_its_host_port_free)
{
	static uint16_t exporter = 9100;

	c = fx_cluster(20);
	struct nodepool *np = fx_nodepool(c, "gpu", 0);
	np->taints = arena_alloc(&c->arena, sizeof(struct taint));
	np->taints[0] = (struct taint){ fx_s(c, "nvidia.com/gpu"), STR_NONE, TAINT_NO_SCHEDULE };
	np->n_taints = 1;
	struct pod *ds = cluster_add_daemonset(c); /* tolerates nothing */
	ds->host_ports = &exporter;
	ds->n_host_ports = 1;
	struct pod *p = fx_pod(c, "tolerant", 100, 100);
	p->tols = arena_alloc(&c->arena, sizeof(struct toleration));
	p->tols[0] = (struct toleration){ fx_s(c, "nvidia.com/gpu"), STR_NONE, true, -1 };
	p->n_tols = 1;
	p->host_ports = &exporter;
	p->n_host_ports = 1;
	solve();
	cr_assert_eq(res->n_claims, 1);
	cr_assert_eq(res->n_unschedulable, 0);
}

/* A self-selecting hostname pod-affinity group of four (6 cpu) among
 * other pods, largest type 8 vCPU (7.9 allocatable). */
static void together_pod(int64_t cpu_m)
{
	struct pod *p = fx_pod(c, "together", cpu_m, 100);
	fx_label(c, p, "app", "together");
	fx_topo(c, p, TOPO_AFFINITY, "kubernetes.io/hostname", "app", "together", 0, false, 0);
}

Test(solver, hostname_affinity_group_is_placed_before_others_fill_its_node)
{
	c = fx_cluster(8);
	fx_nodepool(c, "default", 0);
	together_pod(2000);
	together_pod(2000);
	together_pod(1000);
	together_pod(1000);
	for (int i = 0; i < 3; i++)
		fx_pod(c, "other", 1500, 100);
	solve();
	/* By size alone the 1.5 cpu pods would fill its node before the two
	 * 1 cpu pods of the group came, and those would have nowhere to go. */
	cr_assert_eq(res->n_unschedulable, 0);
	for (uint32_t i = 1; i < 4; i++)
		cr_assert_eq(res->pod_bin[i], res->pod_bin[0], "pod %u of the group apart", i);
}

Test(solver, hostname_affinity_group_starts_on_a_node_that_holds_all_of_it)
{
	c = fx_cluster(8);
	fx_nodepool(c, "default", 0);
	fx_pod(c, "big", 5000, 100);
	for (int i = 0; i < 4; i++)
		together_pod(1000);
	solve();
	/* The big pod's node has room for two of the group, not four. */
	cr_assert_eq(res->n_unschedulable, 0);
	cr_assert_eq(res->n_claims, 2);
	cr_assert_neq(res->pod_bin[1], res->pod_bin[0]);
	for (uint32_t i = 2; i < 5; i++)
		cr_assert_eq(res->pod_bin[i], res->pod_bin[1], "pod %u of the group apart", i);
}
