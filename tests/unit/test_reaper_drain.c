/*
 * The reaper's drain order (reaper/drain.c), as Karpenter's terminator
 * drains: DaemonSet, mirror and finished pods and pods that tolerate
 * karpenter.sh/disrupted stay; the others are evicted, critical ones only
 * once no other is left; do-not-disrupt holds a pod until the NodeClaim's
 * terminationGracePeriod runs out, when every pod still there is deleted
 * early enough for its own grace period to end by the deadline.
 */
#include <criterion/criterion.h>

#include "proto/karpenter.h"
#include "reaper/reaper.h"
#include "tests/unit/pod-template-fixture.h"

#define SYSTEM_CLUSTER_CRITICAL 2000000000
#define SYSTEM_NODE_CRITICAL 2000001000

static struct proto_pod pod(const char *name)
{
	struct proto_pod p = { .ns = "default", .name = (char *)name, .phase = PROTO_PHASE_RUNNING };

	fx_template(&p)->termination_grace_s = 30;
	return p;
}

static struct proto_pod critical(const char *name, int32_t priority)
{
	struct proto_pod p = pod(name);

	fx_template(&p)->priority = priority;
	return p;
}

static struct proto_pod tolerating(const char *name, const char *key, enum proto_toleration_op op,
				   enum proto_taint_effect effect)
{
	static struct proto_toleration tol[16];
	static unsigned used;
	struct proto_pod p = pod(name);
	struct proto_pod_template *t = fx_template(&p);

	cr_assert_lt(used, 16);
	tol[used] = (struct proto_toleration){ .key = (char *)key, .op = op, .effect = effect };
	t->tolerations = &tol[used++];
	t->n_tolerations = 1;
	return p;
}

Test(reaper_drain, daemonset_mirror_and_finished_pods_stay_with_the_node)
{
	struct proto_pod ds = pod("ds"), mirror = pod("mirror"), done = pod("done"), failed = pod("failed");

	fx_template(&ds)->daemonset_owned = true;
	mirror.mirror = true;
	done.phase = PROTO_PHASE_SUCCEEDED;
	failed.phase = PROTO_PHASE_FAILED;
	cr_assert_eq(drain_pod_action(&ds, 0, DRAIN_NO_DEADLINE, false), DRAIN_STAYS);
	cr_assert_eq(drain_pod_action(&mirror, 0, DRAIN_NO_DEADLINE, false), DRAIN_STAYS);
	cr_assert_eq(drain_pod_action(&done, 0, DRAIN_NO_DEADLINE, false), DRAIN_STAYS);
	cr_assert_eq(drain_pod_action(&failed, 0, DRAIN_NO_DEADLINE, false), DRAIN_STAYS);
}

Test(reaper_drain, pods_tolerating_the_disrupted_taint_stay_and_others_go)
{
	struct proto_pod exact = tolerating("exact", KARPENTER_DISRUPTED_TAINT_KEY,
					     PROTO_TOLERATION_EXISTS, PROTO_EFFECT_NO_SCHEDULE);
	struct proto_pod any_effect = tolerating("any", KARPENTER_DISRUPTED_TAINT_KEY,
						  PROTO_TOLERATION_EXISTS, PROTO_EFFECT_ANY);
	struct proto_pod everything = tolerating("all", NULL, PROTO_TOLERATION_EXISTS, PROTO_EFFECT_ANY);
	struct proto_pod noexecute = tolerating("ne", KARPENTER_DISRUPTED_TAINT_KEY,
						 PROTO_TOLERATION_EXISTS, PROTO_EFFECT_NO_EXECUTE);
	struct proto_pod other = tolerating("other", "example.com/other", PROTO_TOLERATION_EXISTS,
					    PROTO_EFFECT_ANY);

	cr_assert(drain_pod_stays(&exact));
	cr_assert(drain_pod_stays(&any_effect));
	cr_assert(drain_pod_stays(&everything));
	cr_assert_not(drain_pod_stays(&noexecute), "NoExecute does not tolerate a NoSchedule taint");
	cr_assert_not(drain_pod_stays(&other));
	cr_assert_eq(drain_pod_action(&other, 1, DRAIN_NO_DEADLINE, false), DRAIN_EVICT);
}

Test(reaper_drain, critical_pods_wait_until_no_other_pod_is_left)
{
	struct proto_pod web = pod("web"), dns = critical("dns", SYSTEM_CLUSTER_CRITICAL),
			 proxy = critical("proxy", SYSTEM_NODE_CRITICAL),
			 almost = critical("almost", SYSTEM_CLUSTER_CRITICAL - 1),
			 ds = pod("ds");
	const struct proto_pod *all[] = { &dns, &web, &proxy, &almost, &ds };
	unsigned left;

	fx_template(&ds)->daemonset_owned = true;
	left = drain_noncritical_left(all, 5);
	cr_assert_eq(left, 2, "web and almost (below system-cluster-critical); the DaemonSet pod stays");
	cr_assert_eq(drain_pod_action(&web, left, DRAIN_NO_DEADLINE, false), DRAIN_EVICT);
	cr_assert_eq(drain_pod_action(&almost, left, DRAIN_NO_DEADLINE, false), DRAIN_EVICT);
	cr_assert_eq(drain_pod_action(&dns, left, DRAIN_NO_DEADLINE, false), DRAIN_AFTER_NONCRITICAL);
	cr_assert_eq(drain_pod_action(&proxy, left, DRAIN_NO_DEADLINE, false), DRAIN_AFTER_NONCRITICAL);
	/* The next pass: the others are gone, the critical ones go. */
	const struct proto_pod *rest[] = { &dns, &proxy, &ds };
	left = drain_noncritical_left(rest, 3);
	cr_assert_eq(left, 0);
	cr_assert_eq(drain_pod_action(&dns, left, DRAIN_NO_DEADLINE, false), DRAIN_EVICT);
	cr_assert_eq(drain_pod_action(&proxy, left, DRAIN_NO_DEADLINE, false), DRAIN_EVICT);
}

Test(reaper_drain, a_pod_being_deleted_is_waited_for_not_evicted_again)
{
	struct proto_pod leaving = pod("leaving");

	leaving.deletion_time = 1;
	cr_assert_eq(drain_pod_action(&leaving, 1, DRAIN_NO_DEADLINE, false), DRAIN_LEAVING);
}

Test(reaper_drain, do_not_disrupt_holds_a_pod_until_the_termination_deadline)
{
	struct proto_pod held = pod("held");

	held.do_not_disrupt = true;
	cr_assert_eq(drain_pod_action(&held, 1, DRAIN_NO_DEADLINE, false), DRAIN_DO_NOT_DISRUPT);
	cr_assert_eq(drain_pod_action(&held, 1, 600, false), DRAIN_DO_NOT_DISRUPT,
		     "600 s left, its grace is 30 s: not yet");
	cr_assert_eq(drain_pod_action(&held, 1, 30, false), DRAIN_DELETE_FOR_DEADLINE,
		     "30 s left: deleted so that its 30 s grace ends by the deadline");
}

Test(reaper_drain, the_deadline_overrides_the_order_and_is_sent_once)
{
	struct proto_pod dns = critical("dns", SYSTEM_CLUSTER_CRITICAL), slow = pod("slow");

	fx_template(&slow)->termination_grace_s = 300;
	cr_assert_eq(drain_pod_action(&dns, 3, 10, false), DRAIN_DELETE_FOR_DEADLINE,
		     "a critical pod waits for no one past the deadline");
	cr_assert_eq(drain_pod_action(&slow, 1, 299, false), DRAIN_DELETE_FOR_DEADLINE,
		     "a long grace period starts before the others'");
	cr_assert_eq(drain_pod_action(&slow, 1, 301, false), DRAIN_EVICT);
	slow.deletion_time = 1;
	cr_assert_eq(drain_pod_action(&slow, 1, 100, true), DRAIN_LEAVING,
		     "deleted for the deadline already: not deleted again");
	cr_assert_eq(drain_pod_action(&slow, 1, -5, false), DRAIN_DELETE_FOR_DEADLINE,
		     "being deleted by someone else with a longer grace: shortened");
}
