/*
 * The check before a bind (launcher/bind-check.c): planned pods against
 * their Node as it is now — free allocatable after every pod bound there
 * and the ones accepted before, taints, node selector, pod (anti-)affinity
 * and topology spread — with the pods and Nodes the launcher wrote moments
 * ago counted though the replica does not show them yet.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "launcher/bind-check.h"
#include "model/solver.h"
#include "tests/unit/pod-template-fixture.h"

#define HOSTNAME "kubernetes.io/hostname"
#define ZONE "topology.kubernetes.io/zone"

static struct state_store replica, recent;

static void setup(void)
{
	state_store_init(&replica);
	state_store_init(&recent);
}

static void teardown(void)
{
	state_store_done(&replica);
	state_store_done(&recent);
}

TestSuite(bind_check, .init = setup, .fini = teardown);

static void add(struct state_store *s, struct proto_object o)
{
	cr_assert_geq(state_store_apply(s, PROTO_DELTA_ADD, &o, s->seq + 1), 0);
}

/* An m5.2xlarge's allocatable: 7910m cpu. */
static struct proto_resource node_size[] = { { "cpu", 7910 }, { "memory", 29317LL << 20 }, { "pods", 58 } };

static struct proto_node node(const char *name, const char *zone, struct proto_kv labels[2])
{
	labels[0] = (struct proto_kv){ HOSTNAME, (char *)name };
	labels[1] = (struct proto_kv){ ZONE, (char *)zone };
	return (struct proto_node){ .name = (char *)name, .uid = (char *)name, .labels = labels,
				    .n_labels = 2, .allocatable = node_size, .n_allocatable = 3,
				    .ready = PROTO_COND_TRUE };
}

static void add_node(const char *name, const char *zone)
{
	static struct proto_kv labels[8][2];
	static unsigned n;
	struct proto_node nd = node(name, zone, labels[n++ % 8]);

	add(&replica, (struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &nd });
}

static void add_tainted_node(const char *name, struct proto_taint *taints, uint32_t n_taints)
{
	static struct proto_kv labels[2];
	struct proto_node nd = node(name, "us-west-2a", labels);

	nd.taints = taints;
	nd.n_taints = n_taints;
	add(&replica, (struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &nd });
}

/* A pod of app `app` asking for cpu millicores, pending (node NULL) or bound. */
static struct proto_pod pod(const char *name, const char *app, int64_t cpu, const char *node_name)
{
	/* Static, as fx_template's: tests do not free their pods. */
	static struct proto_resource reqs[64][2];
	static struct proto_kv labels[64];
	static unsigned used;
	struct proto_resource *req = reqs[used % 64];
	struct proto_kv *label = &labels[used++ % 64];
	struct proto_pod p = { .ns = "default", .name = (char *)name, .uid = (char *)name,
			       .node_name = (char *)node_name,
			       .phase = node_name ? PROTO_PHASE_RUNNING : PROTO_PHASE_PENDING };

	req[0] = (struct proto_resource){ "cpu", cpu };
	req[1] = (struct proto_resource){ "memory", 1LL << 30 };
	*label = (struct proto_kv){ "app", (char *)app };
	fx_template(&p)->requests = req;
	fx_template(&p)->n_requests = 2;
	fx_template(&p)->labels = label;
	fx_template(&p)->n_labels = 1;
	return p;
}

static void add_pod(struct proto_pod p)
{
	add(&replica, (struct proto_object){ .kind = PROTO_OBJECT_POD, .pod = &p });
}

/* pods[0..n) checked against node n1; ret filled. */
static void check(const struct proto_pod *const *pods, size_t n, struct sched_node_fit *ret)
{
	struct bind_check_input in = { .replica = &replica, .recent = &recent, .region = "us-west-2",
				       .node = "n1" };
	char err[512];

	cr_assert_eq(bind_check(&in, pods, n, ret, err, sizeof(err)), 0, "%s", err);
}

static bool fits_alone(struct proto_pod p, char *reason, size_t size)
{
	const struct proto_pod *pods[] = { &p };
	struct sched_node_fit fit;

	check(pods, 1, &fit);
	snprintf(reason, size, "%s", fit.reason);
	return fit.fits;
}

Test(bind_check, a_pod_that_fits_the_free_allocatable_is_accepted)
{
	char why[SCHED_CHECK_REASON_MAX];

	add_node("n1", "us-west-2a");
	add_pod(pod("big-1", "big", 6000, "n1"));
	cr_assert(fits_alone(pod("big-2", "big", 1500, NULL), why, sizeof(why)), "%s", why);
}

Test(bind_check, a_pod_over_the_free_allocatable_is_refused)
{
	char why[SCHED_CHECK_REASON_MAX];

	/* The numbers: 6.0 cpu bound by kanna, 1.5 by the default
	 * scheduler since; 1.5 more would make 9.0 on 7.91 allocatable. */
	add_node("n1", "us-west-2a");
	add_pod(pod("big-1", "big", 6000, "n1"));
	add_pod(pod("filler", "filler", 1500, "n1"));
	cr_assert_not(fits_alone(pod("big-2", "big", 1500, NULL), why, sizeof(why)));
	cr_assert(strstr(why, "Insufficient cpu on node n1"), "%s", why);
	cr_assert(strstr(why, "the pod requests 1500m, 410m of its 7910m allocatable is free"), "%s", why);
}

Test(bind_check, each_pod_bound_in_a_row_counts_the_ones_before_it)
{
	struct proto_pod a = pod("a", "x", 3000, NULL), b = pod("b", "x", 3000, NULL),
			 c = pod("c", "x", 3000, NULL), d = pod("d", "x", 1000, NULL);
	const struct proto_pod *pods[] = { &a, &b, &c, &d };
	struct sched_node_fit fit[4];

	add_node("n1", "us-west-2a");
	check(pods, 4, fit);
	cr_assert(fit[0].fits && fit[1].fits, "%s / %s", fit[0].reason, fit[1].reason);
	cr_assert_not(fit[2].fits, "6000m of 7910m are taken by the two before it");
	cr_assert(fit[3].fits, "a refused pod takes nothing: %s", fit[3].reason);
}

Test(bind_check, pods_the_launcher_bound_moments_ago_count_before_the_replica_shows_them)
{
	struct proto_pod earlier = pod("earlier", "x", 6000, NULL);
	char why[SCHED_CHECK_REASON_MAX];

	add_node("n1", "us-west-2a");
	add_pod(earlier); /* the replica still shows it pending */
	cr_assert_eq(bind_recent_note_pod(&recent, &earlier, "n1", 1000), 1);
	cr_assert(bind_recent_has_pod(&recent, "default", "earlier"));
	cr_assert_not(fits_alone(pod("next", "x", 2000, NULL), why, sizeof(why)));
	cr_assert(strstr(why, "Insufficient cpu"), "%s", why);
	bind_recent_forget_pod(&recent, "default", "earlier");
	cr_assert(fits_alone(pod("next", "x", 2000, NULL), why, sizeof(why)), "a failed binding counts no more: %s", why);
}

Test(bind_check, a_pod_whose_anti_affinity_excludes_a_pod_on_the_node_is_refused)
{
	static struct proto_kv solo[] = { { "app", "solo" } };
	struct proto_pod_affinity_term term = { .topology_key = HOSTNAME,
						.selector = { .match_labels = solo, .n_match_labels = 1 } };
	struct proto_pod first = pod("solo-1", "solo", 100, "n1"), second = pod("solo-2", "solo", 100, NULL);
	char why[SCHED_CHECK_REASON_MAX];

	fx_template(&second)->pod_anti_affinity_required = &term;
	fx_template(&second)->n_pod_anti_affinity_required = 1;
	add_node("n1", "us-west-2a");
	cr_assert(fits_alone(second, why, sizeof(why)), "nothing on n1 yet: %s", why);
	add_pod(first);
	cr_assert_not(fits_alone(second, why, sizeof(why)));
	cr_assert(strstr(why, "node n1 already runs a pod its pod anti-affinity excludes"), "%s", why);
}

Test(bind_check, a_pod_on_the_node_whose_anti_affinity_excludes_the_pod_refuses_it)
{
	static struct proto_kv solo[] = { { "app", "solo" } };
	struct proto_pod_affinity_term term = { .topology_key = HOSTNAME,
						.selector = { .match_labels = solo, .n_match_labels = 1 } };
	struct proto_pod owner = pod("guard", "guard", 100, "n1");
	char why[SCHED_CHECK_REASON_MAX];

	fx_template(&owner)->pod_anti_affinity_required = &term;
	fx_template(&owner)->n_pod_anti_affinity_required = 1;
	add_node("n1", "us-west-2a");
	add_pod(owner);
	cr_assert_not(fits_alone(pod("solo-1", "solo", 100, NULL), why, sizeof(why)));
	cr_assert(strstr(why, "runs a pod whose pod anti-affinity excludes this one"), "%s", why);
	cr_assert(fits_alone(pod("other", "other", 100, NULL), why, sizeof(why)), "%s", why);
}

Test(bind_check, planned_pods_of_one_anti_affinity_group_are_refused_after_the_first)
{
	static struct proto_kv solo[] = { { "app", "solo" } };
	struct proto_pod_affinity_term term = { .topology_key = HOSTNAME,
						.selector = { .match_labels = solo, .n_match_labels = 1 } };
	struct proto_pod a = pod("solo-a", "solo", 100, NULL), b = pod("solo-b", "solo", 100, NULL);
	const struct proto_pod *pods[] = { &a, &b };
	struct sched_node_fit fit[2];

	fx_template(&a)->pod_anti_affinity_required = &term;
	fx_template(&a)->n_pod_anti_affinity_required = 1;
	fx_template(&b)->pod_anti_affinity_required = &term;
	fx_template(&b)->n_pod_anti_affinity_required = 1;
	add_node("n1", "us-west-2a");
	check(pods, 2, fit);
	cr_assert(fit[0].fits, "%s", fit[0].reason);
	cr_assert_not(fit[1].fits, "one-per-node pods twice on one node");
}

Test(bind_check, a_taint_the_pod_does_not_tolerate_refuses_it)
{
	struct proto_taint taint = { .key = "dedicated", .value = "gpu", .effect = PROTO_EFFECT_NO_SCHEDULE };
	struct proto_toleration tol = { .key = "dedicated", .op = PROTO_TOLERATION_EQUAL, .value = "gpu",
					.effect = PROTO_EFFECT_NO_SCHEDULE };
	struct proto_pod tolerant = pod("tolerant", "x", 100, NULL);
	char why[SCHED_CHECK_REASON_MAX];

	fx_template(&tolerant)->tolerations = &tol;
	fx_template(&tolerant)->n_tolerations = 1;
	add_tainted_node("n1", &taint, 1);
	cr_assert_not(fits_alone(pod("plain", "x", 100, NULL), why, sizeof(why)));
	cr_assert(strstr(why, "node n1 has taint dedicated=gpu:NoSchedule that the pod does not tolerate"),
		  "%s", why);
	cr_assert(fits_alone(tolerant, why, sizeof(why)), "%s", why);
}

Test(bind_check, a_booting_nodes_ephemeral_taints_refuse_nothing)
{
	struct proto_taint taints[] = {
		{ .key = "node.kubernetes.io/not-ready", .effect = PROTO_EFFECT_NO_SCHEDULE },
		{ .key = "karpenter.sh/unregistered", .effect = PROTO_EFFECT_NO_SCHEDULE },
		{ .key = "karpenter.sh/unregistered", .effect = PROTO_EFFECT_NO_EXECUTE },
	};
	char why[SCHED_CHECK_REASON_MAX];

	add_tainted_node("n1", taints, 3);
	cr_assert(fits_alone(pod("p", "x", 100, NULL), why, sizeof(why)), "%s", why);
}

/* Karpenter binds nothing: the kube-scheduler binds a pod to the Node once
 * no taint it does not tolerate is left, startup taints included. */
Test(bind_check, a_startup_taint_refuses_the_pods_that_do_not_tolerate_it)
{
	struct proto_taint startup = { .key = "example.com/init", .effect = PROTO_EFFECT_NO_SCHEDULE };
	struct proto_toleration tol = { .key = "example.com/init", .op = PROTO_TOLERATION_EXISTS,
					.effect = PROTO_EFFECT_NO_SCHEDULE };
	struct proto_nodeclaim nc = { .name = "nc1", .uid = "nc1", .nodepool = "default",
				      .node_name = "n1", .startup_taints = &startup, .n_startup_taints = 1 };
	struct proto_pod tolerant = pod("tolerant", "x", 100, NULL);
	struct proto_kv labels[2];
	struct proto_node nd = node("n1", "us-west-2a", labels);
	char why[SCHED_CHECK_REASON_MAX];

	nd.taints = &startup;
	nd.n_taints = 1;
	nd.nodeclaim = "nc1";
	add(&replica, (struct proto_object){ .kind = PROTO_OBJECT_NODECLAIM, .nodeclaim = &nc });
	add(&replica, (struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &nd });
	fx_template(&tolerant)->tolerations = &tol;
	fx_template(&tolerant)->n_tolerations = 1;
	cr_assert_not(fits_alone(pod("plain", "x", 100, NULL), why, sizeof(why)),
		      "a pod bound past a startup taint it does not tolerate");
	cr_assert(strstr(why, "node n1 has taint example.com/init:NoSchedule that the pod does not tolerate"),
		  "%s", why);
	cr_assert(fits_alone(tolerant, why, sizeof(why)), "%s", why);

	/* The taint removed (the replica shows the Node without it): bound. */
	nd.taints = NULL;
	nd.n_taints = 0;
	add(&replica, (struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &nd });
	cr_assert(fits_alone(pod("plain2", "x", 100, NULL), why, sizeof(why)), "%s", why);
}

/* What the launcher notes of a Node it just created carries its startup
 * taints: the replica's lag must not let a pod past them. */
Test(bind_check, a_startup_taint_of_a_node_noted_moments_ago_refuses_too)
{
	struct proto_taint startup = { .key = "example.com/init", .effect = PROTO_EFFECT_NO_SCHEDULE };
	struct proto_kv labels[2];
	struct proto_node nd = node("n1", "us-west-2a", labels);
	char why[SCHED_CHECK_REASON_MAX];

	nd.taints = &startup;
	nd.n_taints = 1;
	cr_assert_geq(bind_recent_note_node(&recent, &replica, &nd, 1), 0);
	cr_assert_not(fits_alone(pod("plain", "x", 100, NULL), why, sizeof(why)));
	cr_assert(strstr(why, "example.com/init"), "%s", why);
}

Test(bind_check, a_node_selector_the_node_does_not_match_refuses_the_pod)
{
	static struct proto_kv selector[] = { { ZONE, "us-west-2b" } };
	struct proto_pod p = pod("p", "x", 100, NULL);
	char why[SCHED_CHECK_REASON_MAX];

	fx_template(&p)->node_selector = selector;
	fx_template(&p)->n_node_selector = 1;
	add_node("n1", "us-west-2a");
	cr_assert_not(fits_alone(p, why, sizeof(why)));
	cr_assert(strstr(why, "does not match the pod's node selector or affinity"), "%s", why);
}

Test(bind_check, a_required_node_affinity_no_term_of_which_the_node_matches_refuses_the_pod)
{
	static char *zone_b[] = { "us-west-2b" }, *zone_a[] = { "us-west-2a" }, *amd64[] = { "amd64" };
	static struct proto_requirement in_b = { .key = ZONE, .op = PROTO_OP_IN, .values = zone_b,
						 .n_values = 1 };
	/* The second term: zone a AND an arch label n1 lacks. */
	static struct proto_requirement in_a_amd64[] = {
		{ .key = ZONE, .op = PROTO_OP_IN, .values = zone_a, .n_values = 1 },
		{ .key = "kubernetes.io/arch", .op = PROTO_OP_IN, .values = amd64, .n_values = 1 },
	};
	struct proto_node_selector_term terms[] = { { .requirements = &in_b, .n_requirements = 1 },
						    { .requirements = in_a_amd64, .n_requirements = 2 } };
	struct proto_pod p = pod("p", "x", 100, NULL);
	char why[SCHED_CHECK_REASON_MAX];

	fx_template(&p)->node_affinity_required = terms;
	fx_template(&p)->n_node_affinity_required = 2;
	add_node("n1", "us-west-2a");
	cr_assert_not(fits_alone(p, why, sizeof(why)), "neither term matches n1");
	cr_assert(strstr(why, "does not match the pod's node selector or affinity"), "%s", why);
	terms[1].n_requirements = 1; /* zone a alone: the second term matches */
	cr_assert(fits_alone(p, why, sizeof(why)), "terms are ORed: %s", why);
}

Test(bind_check, a_node_selector_the_node_matches_accepts_the_pod)
{
	static struct proto_kv selector[] = { { ZONE, "us-west-2a" }, { HOSTNAME, "n1" } };
	struct proto_pod p = pod("p", "x", 100, NULL);
	char why[SCHED_CHECK_REASON_MAX];

	fx_template(&p)->node_selector = selector;
	fx_template(&p)->n_node_selector = 2;
	add_node("n1", "us-west-2a");
	cr_assert(fits_alone(p, why, sizeof(why)), "%s", why);
}

Test(bind_check, zone_spread_counts_the_pods_on_other_nodes_of_the_zone)
{
	static struct proto_kv web[] = { { "app", "web" } };
	struct proto_spread_constraint spread = {
		.max_skew = 1, .topology_key = ZONE,
		.when_unsatisfiable = PROTO_UNSATISFIABLE_DO_NOT_SCHEDULE,
		.selector = { .match_labels = web, .n_match_labels = 1 },
	};
	struct proto_pod p = pod("web-2", "web", 100, NULL);
	char why[SCHED_CHECK_REASON_MAX];

	fx_template(&p)->topology_spread = &spread;
	fx_template(&p)->n_topology_spread = 1;
	add_node("n1", "us-west-2a");
	add_node("n2", "us-west-2a");
	add_node("n3", "us-west-2b");
	cr_assert(fits_alone(p, why, sizeof(why)), "%s", why);
	add_pod(pod("web-1", "web", 100, "n2"));
	cr_assert_not(fits_alone(p, why, sizeof(why)), "zone a would hold 2 web pods, zone b none");
	cr_assert(strstr(why, "topology spread"), "%s", why);
}

Test(bind_check, a_pod_elsewhere_in_the_zone_whose_anti_affinity_excludes_the_pod_refuses_it)
{
	static struct proto_kv solo[] = { { "app", "solo" } };
	struct proto_pod_affinity_term term = { .topology_key = ZONE,
						.selector = { .match_labels = solo, .n_match_labels = 1 } };
	struct proto_pod owner = pod("guard", "guard", 100, "n2");
	char why[SCHED_CHECK_REASON_MAX];

	fx_template(&owner)->pod_anti_affinity_required = &term;
	fx_template(&owner)->n_pod_anti_affinity_required = 1;
	add_node("n1", "us-west-2a");
	add_node("n2", "us-west-2a");
	cr_assert(fits_alone(pod("solo-1", "solo", 100, NULL), why, sizeof(why)), "%s", why);
	add_pod(owner);
	cr_assert_not(fits_alone(pod("solo-1", "solo", 100, NULL), why, sizeof(why)),
		      "the guard on n2 repels solo pods from all of zone a");
}

Test(bind_check, a_node_the_replica_does_not_show_yet_is_checked_as_the_launcher_created_it)
{
	static struct proto_kv labels[2];
	struct proto_node created = node("n1", "us-west-2a", labels);
	struct proto_pod p = pod("p", "x", 8000, NULL);
	const struct proto_pod *pods[] = { &p };
	struct bind_check_input in = { .replica = &replica, .recent = &recent, .region = "us-west-2",
				       .node = "n1" };
	struct sched_node_fit fit;
	char err[512];

	cr_assert_eq(bind_check(&in, pods, 1, &fit, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "n1"), "%s", err);
	cr_assert_eq(bind_recent_note_node(&recent, &replica, &created, 1000), 1);
	cr_assert_eq(bind_check(&in, pods, 1, &fit, err, sizeof(err)), 0, "%s", err);
	cr_assert_not(fit.fits, "8000m on 7910m allocatable");
}

Test(bind_check, recent_writes_are_dropped_once_the_replica_shows_them_or_they_are_old)
{
	static struct proto_kv labels[2];
	struct proto_node created = node("n1", "us-west-2a", labels);
	struct proto_pod lagging = pod("lagging", "x", 100, NULL), seen = pod("seen", "x", 100, NULL);
	struct proto_pod gone = pod("gone", "x", 100, NULL), old = pod("old", "x", 100, NULL);

	add_pod(lagging);
	add_pod(old);
	add_pod(pod("seen", "x", 100, "n1"));
	cr_assert_eq(bind_recent_note_pod(&recent, &lagging, "n1", 200000), 1);
	cr_assert_eq(bind_recent_note_pod(&recent, &seen, "n1", 200000), 1);
	cr_assert_eq(bind_recent_note_pod(&recent, &gone, "n1", 200000), 1);
	cr_assert_eq(bind_recent_note_pod(&recent, &old, "n1", 1000), 1);
	cr_assert_eq(bind_recent_note_node(&recent, &replica, &created, 200000), 1);
	bind_recent_purge(&recent, &replica, 200000 + 1000);
	cr_assert(bind_recent_has_pod(&recent, "default", "lagging"), "the replica still shows it pending");
	cr_assert_not(bind_recent_has_pod(&recent, "default", "seen"), "the replica shows it bound");
	cr_assert_not(bind_recent_has_pod(&recent, "default", "gone"), "the replica shows it deleted");
	cr_assert_not(bind_recent_has_pod(&recent, "default", "old"), "older than BIND_RECENT_KEEP_MS");
	cr_assert_not_null(state_store_get(&recent, PROTO_OBJECT_NODE, "", "n1"));
	add_node("n1", "us-west-2a");
	bind_recent_purge(&recent, &replica, 200000 + 1000);
	cr_assert_null(state_store_get(&recent, PROTO_OBJECT_NODE, "", "n1"), "the replica shows the Node");
}

/*
 * The chaos run's refusal: the kubelet registered the Node first (with the
 * well-known labels only), the launcher's POST met 409 and it merge-patched
 * its labels on; until the replica shows that patch, the Node the check
 * sees is the launcher's, NodePool template labels and all.
 */
Test(bind_check, a_node_the_replica_shows_without_the_launchers_labels_is_checked_as_the_launcher_labelled_it)
{
	static struct proto_kv registered_labels[2], written_labels[3], selector[] = { { "intent", "spread" } };
	struct proto_node registered = node("n1", "us-west-2a", registered_labels);
	struct proto_node written = node("n1", "us-west-2a", written_labels);
	struct proto_pod p = pod("p", "x", 100, NULL);
	char why[SCHED_CHECK_REASON_MAX];

	written_labels[2] = (struct proto_kv){ "intent", "spread" };
	written.n_labels = 3;
	fx_template(&p)->node_selector = selector;
	fx_template(&p)->n_node_selector = 1;
	add(&replica, (struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &registered });
	cr_assert_eq(bind_recent_note_node(&recent, &replica, &written, 200000), 1,
		     "the replica's Node lacks the labels the launcher wrote");
	bind_recent_purge(&recent, &replica, 200000 + 1000);
	cr_assert(fits_alone(p, why, sizeof(why)), "%s", why);
	/* The replica catches up: the overlay has done its work. */
	add(&replica, (struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &written });
	bind_recent_purge(&recent, &replica, 200000 + 2000);
	cr_assert_null(state_store_get(&recent, PROTO_OBJECT_NODE, "", "n1"));
	cr_assert(fits_alone(p, why, sizeof(why)), "%s", why);
	cr_assert_eq(bind_recent_note_node(&recent, &replica, &written, 200000 + 3000), 0,
		     "nothing to lay over a replica that shows the labels already");
	cr_assert_null(state_store_get(&recent, PROTO_OBJECT_NODE, "", "n1"));
}

/* A planned pod as the watcher shows one the default scheduler gave up on. */
static struct proto_pod unschedulable(const char *name)
{
	struct proto_pod p = pod(name, "big", 1500, NULL);

	p.scheduled = PROTO_COND_FALSE;
	p.scheduled_reason = "Unschedulable";
	return p;
}

Test(bind_check, a_nodeclaim_has_pods_to_bind_only_while_it_speaks_for_them)
{
	static char *planned[] = { "default/big-1", "default/big-2" };
	struct proto_condition ready = { .type = "Ready", .status = PROTO_COND_TRUE,
					 .last_transition = 1000000 };
	struct proto_nodeclaim nc = { .name = "bind-abc", .uid = "u", .planned_pods = planned,
				      .n_planned_pods = 2 };
	struct proto_pod waiting = unschedulable("big-2");

	add_pod(pod("big-1", "big", 1500, "n1"));
	cr_assert_not(bind_claim_has_waiting_pods(&replica, &recent, &nc, 1000000), "big-1 is bound");
	add_pod(waiting);
	cr_assert(bind_claim_has_waiting_pods(&replica, &recent, &nc, 1000000), "launching: big-2 waits");
	nc.conditions = &ready;
	nc.n_conditions = 1;
	cr_assert(bind_claim_has_waiting_pods(&replica, &recent, &nc, 1000000 + STATE_NOMINATION_GRACE_MS - 1),
		  "Ready, within the nomination grace");
	cr_assert_not(bind_claim_has_waiting_pods(&replica, &recent, &nc, 1000000 + STATE_NOMINATION_GRACE_MS),
		      "the nomination lapsed: big-2 is the schedulers' to plan again");
	nc.n_conditions = 0;
	cr_assert_eq(bind_recent_note_pod(&recent, &waiting, "n1", 1000), 1);
	cr_assert_not(bind_claim_has_waiting_pods(&replica, &recent, &nc, 1000000),
		      "bound by us moments ago: the replica has not caught up");
}

/* A planned pod whose claim is not bound to a volume yet is the
 * kube-scheduler's to bind (its VolumeBinding provisions the claim where
 * the pod goes): the launcher neither binds it nor holds the Node for it.
 * Once the claim is bound, the pod is the launcher's like any other. */
Test(bind_check, a_pod_with_a_claim_not_bound_yet_is_left_to_the_kube_scheduler)
{
	static char *planned[] = { "default/db-0" };
	static char *claims[] = { "data-db-0" };
	struct proto_nodeclaim nc = { .name = "bind-abc", .uid = "u", .planned_pods = planned,
				      .n_planned_pods = 1 };
	struct proto_pvc pvc = { .ns = "default", .name = "data-db-0", .uid = "c",
				 .storage_class = "ebs-wffc", .phase = PROTO_PVC_PENDING };
	struct proto_pod p = unschedulable("db-0");
	const struct state_entry *e;

	fx_template(&p)->pvc_names = claims;
	fx_template(&p)->n_pvc_names = 1;
	add_pod(p);
	e = state_store_get(&replica, PROTO_OBJECT_POD, "default", "db-0");
	cr_assert_not_null(e);
	cr_assert(bind_pod_has_unbound_claim(&replica, e->obj.pod), "no such claim in the replica yet");
	add(&replica, (struct proto_object){ .kind = PROTO_OBJECT_PVC, .pvc = &pvc });
	cr_assert(bind_pod_has_unbound_claim(&replica, e->obj.pod), "the claim waits for its first consumer");
	cr_assert_not(bind_claim_has_waiting_pods(&replica, &recent, &nc, 1000000),
		      "no pod of the NodeClaim's is the launcher's to bind: the Node is not held");
	pvc.volume_name = "pv-1";
	pvc.phase = PROTO_PVC_BOUND;
	add(&replica, (struct proto_object){ .kind = PROTO_OBJECT_PVC, .pvc = &pvc });
	cr_assert_not(bind_pod_has_unbound_claim(&replica, e->obj.pod), "bound to pv-1");
	cr_assert(bind_claim_has_waiting_pods(&replica, &recent, &nc, 1000000), "db-0 is the launcher's to bind");
}
