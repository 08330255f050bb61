/* preference-policy (Karpenter's --preference-policy): Respect tries
 * preferences, Ignore leaves preferred node affinity, preferred pod
 * (anti-)affinity and ScheduleAnyway spread out of the solve while the
 * required terms stay; the scheduler's key parses both words. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "scheduler/config.h"
#include "sched-fixture.h"

static struct cluster *c;
static struct sched_result *res;

static void teardown(void)
{
	sched_result_free(res);
	cluster_free(c);
	res = NULL;
	c = NULL;
}

TestSuite(preference_policy, .fini = teardown);

/* Three pods that would each like test-zone-3 and a node of their own. */
static void three_choosy_pods(void)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 3; i++) {
		struct pod *p = fx_pod(c, "web", 100, 100);
		fx_label(c, p, "app", "web");
		p->prefs = calloc(1, sizeof(*p->prefs));
		cr_assert(p->prefs);
		p->n_prefs = 1;
		p->prefs[0].weight = 1;
		fx_req(c, &p->prefs[0].reqs, "topology.kubernetes.io/zone", REQ_IN, "test-zone-3", NULL);
		fx_topo(c, p, TOPO_ANTI_AFFINITY, "kubernetes.io/hostname", "app", "web", 0, true, 1);
	}
}

Test(preference_policy, respect_tries_the_preferences)
{
	three_choosy_pods();
	cr_assert_eq(sched_solve(c, &res), 0);
	cr_assert_eq(res->n_unschedulable, 0);
	cr_assert_eq(res->n_claims, 3, "preferred hostname anti-affinity: a node each");
	for (uint32_t i = 0; i < res->n_claims; i++)
		cr_assert_eq(res->claims[i].zones, 1ULL << 2, "the preferred zone");
}

Test(preference_policy, ignore_leaves_the_preferences_out)
{
	three_choosy_pods();
	cluster_ignore_preferences(c);
	cr_assert_eq(sched_solve(c, &res), 0);
	cr_assert_eq(res->n_unschedulable, 0);
	cr_assert_eq(res->n_claims, 1, "no anti-affinity left: the three share a node");
	cr_assert_neq(res->claims[0].zones, 1ULL << 2, "no zone preferred: any zone offered");
}

Test(preference_policy, ignore_keeps_the_required_terms)
{
	c = fx_cluster(20);
	fx_nodepool(c, "default", 0);
	for (int i = 0; i < 2; i++) {
		struct pod *p = fx_pod(c, "db", 100, 100);
		fx_label(c, p, "app", "db");
		fx_topo(c, p, TOPO_ANTI_AFFINITY, "kubernetes.io/hostname", "app", "db", 0, false, 0);
		fx_topo(c, p, TOPO_SPREAD, "topology.kubernetes.io/zone", "app", "db", 1, true, 0);
	}
	cluster_ignore_preferences(c);
	for (uint32_t i = 0; i < c->n_pods; i++) {
		cr_assert_eq(c->pods[i].n_topo, 1);
		cr_assert_not(c->pods[i].topo[0].soft);
	}
	cr_assert_eq(sched_solve(c, &res), 0);
	cr_assert_eq(res->n_claims, 2, "required hostname anti-affinity still holds");
}

Test(preference_policy, the_scheduler_key_takes_respect_and_ignore)
{
	static const char *const words[] = { "Respect", "Ignore" };
	static const int want[] = { PREFERENCE_POLICY_RESPECT, PREFERENCE_POLICY_IGNORE };

	for (int i = 0; i < 2; i++) {
		struct scheduler_config cfg = { 0 };
		struct config_result r = { 0 };
		char yaml[128];
		int n = snprintf(yaml, sizeof(yaml), "scheduler: {preference-policy: %s}\n", words[i]);
		cr_assert_eq(config_load_buffer(&scheduler_schema, &cfg, yaml, (size_t)n, "kanna.yaml", &r), 0,
			     "%s", r.error);
		cr_assert_eq(cfg.preference_policy, want[i], "%s", words[i]);
		config_result_done(&r);
		config_free(&scheduler_schema, &cfg);
	}
	struct scheduler_config cfg = { 0 };
	struct config_result r = { 0 };
	static const char bad[] = "scheduler: {preference-policy: Sometimes}\n";
	cr_assert_lt(config_load_buffer(&scheduler_schema, &cfg, bad, sizeof(bad) - 1, "kanna.yaml", &r), 0);
	config_result_done(&r);
	config_free(&scheduler_schema, &cfg);
}
