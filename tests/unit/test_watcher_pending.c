/*
 * Which pending pods the watcher announces and to which scheduler shard:
 * pods planned for a NodeClaim that still speaks for them are withheld
 * (DESIGN §2 rule 4) until it fails, goes away, or has been Ready for the
 * grace period; pods that constrain each other always share a shard.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/pod-template-fixture.h"
#include "watcher/pending.h"

#define NOW_MS 1700000000000LL

static struct state_store store;

static void setup(void)
{
	state_store_init(&store);
}

static void teardown(void)
{
	state_store_done(&store);
}

TestSuite(pending, .init = setup, .fini = teardown);

static void add(struct proto_object o)
{
	cr_assert_geq(state_store_apply(&store, PROTO_DELTA_ADD, &o, store.seq + 1), 0);
}

static struct proto_pod unschedulable(const char *name)
{
	return (struct proto_pod){ .ns = "default", .name = (char *)name, .uid = (char *)name,
				   .phase = PROTO_PHASE_PENDING, .scheduled = PROTO_COND_FALSE,
				   .scheduled_reason = "Unschedulable" };
}

static void add_pod(const char *name)
{
	struct proto_pod p = unschedulable(name);

	add((struct proto_object){ .kind = PROTO_OBJECT_POD, .pod = &p });
}

/* A NodeClaim planning "default/<pod>", with at most one condition. */
static void add_claim(const char *name, const char *pod, const struct proto_condition *cond,
		      int64_t deletion_time)
{
	char key[128];
	char *keys[1] = { key };
	struct proto_nodeclaim nc = { .name = (char *)name, .uid = (char *)name, .planned_pods = keys,
				      .n_planned_pods = 1, .deletion_time = deletion_time,
				      .conditions = (struct proto_condition *)cond,
				      .n_conditions = cond ? 1 : 0 };

	snprintf(key, sizeof(key), "default/%s", pod);
	add((struct proto_object){ .kind = PROTO_OBJECT_NODECLAIM, .nodeclaim = &nc });
}

static bool announced(const char *name)
{
	const struct proto_pod **pods;
	size_t n;
	bool found = false;

	cr_assert_eq(pending_collect(&store, NOW_MS, &pods, &n), 0);
	for (size_t i = 0; i < n; i++)
		found |= !strcmp(pods[i]->name, name);
	free(pods);
	return found;
}

Test(pending, an_unschedulable_pod_nobody_planned_is_announced)
{
	add_pod("free");
	cr_assert(announced("free"));
}

Test(pending, a_pod_planned_for_a_launching_nodeclaim_is_withheld)
{
	struct proto_condition launched = { .type = "Launched", .status = PROTO_COND_TRUE,
					    .last_transition = NOW_MS - 5000 };

	add_pod("a");
	add_pod("b");
	add_claim("claim-a", "a", NULL, 0);
	add_claim("claim-b", "b", &launched, 0);
	cr_assert_not(announced("a"), "no condition yet: being created");
	cr_assert_not(announced("b"), "launched, Node not joined yet");
}

Test(pending, a_pod_planned_for_a_failed_or_deleted_nodeclaim_is_announced_again)
{
	struct proto_condition failed = { .type = "Launched", .status = PROTO_COND_FALSE,
					  .reason = "InsufficientCapacity",
					  .last_transition = NOW_MS - 1000 };

	add_pod("a");
	add_pod("b");
	add_claim("claim-a", "a", &failed, 0);
	add_claim("claim-b", "b", NULL, NOW_MS - 1000);
	cr_assert(announced("a"), "Launched=False");
	cr_assert(announced("b"), "being deleted");
}

Test(pending, a_ready_nodeclaim_speaks_for_its_pods_only_during_the_grace_period)
{
	struct proto_condition fresh = { .type = "Ready", .status = PROTO_COND_TRUE,
					 .last_transition = NOW_MS - STATE_NOMINATION_GRACE_MS + 1000 };
	struct proto_condition old = { .type = "Ready", .status = PROTO_COND_TRUE,
				       .last_transition = NOW_MS - STATE_NOMINATION_GRACE_MS - 1000 };
	struct proto_condition timeless = { .type = "Ready", .status = PROTO_COND_TRUE };
	struct proto_condition not_ready = { .type = "Ready", .status = PROTO_COND_FALSE,
					     .last_transition = NOW_MS - 3600 * 1000 };

	add_pod("fresh");
	add_pod("old");
	add_pod("timeless");
	add_pod("joining");
	add_claim("claim-fresh", "fresh", &fresh, 0);
	add_claim("claim-old", "old", &old, 0);
	add_claim("claim-timeless", "timeless", &timeless, 0);
	add_claim("claim-joining", "joining", &not_ready, 0);
	cr_assert_not(announced("fresh"), "Ready for less than the grace period");
	cr_assert(announced("old"), "Ready past the grace period and still unbound: plan it again");
	cr_assert(announced("timeless"), "Ready since an unknown time counts as long Ready");
	cr_assert_not(announced("joining"), "not Ready yet");
}

Test(pending, bound_and_terminating_pods_are_not_announced)
{
	struct proto_pod bound = unschedulable("bound"), going = unschedulable("going");

	bound.node_name = "n1";
	going.deletion_time = NOW_MS;
	add((struct proto_object){ .kind = PROTO_OBJECT_POD, .pod = &bound });
	add((struct proto_object){ .kind = PROTO_OBJECT_POD, .pod = &going });
	cr_assert_not(announced("bound"));
	cr_assert_not(announced("going"));
}

/* ---- shards ---- */

static struct proto_owner_ref owners[8];
static char owner_uids[8][16];

static void init_owners(void)
{
	for (int i = 0; i < 8; i++) {
		snprintf(owner_uids[i], sizeof(owner_uids[i]), "rs-%d", i);
		owners[i] = (struct proto_owner_ref){ .kind = "ReplicaSet", .name = owner_uids[i],
						     .uid = owner_uids[i], .controller = true };
	}
}

static struct proto_pod owned(const char *name, int owner)
{
	struct proto_pod p = unschedulable(name);

	fx_template(&p)->owner_refs = &owners[owner];
	fx_template(&p)->n_owner_refs = 1;
	return p;
}

Test(pending, pods_of_one_controller_share_a_shard)
{
	struct proto_pod p[6];
	const struct proto_pod *pp[6];
	unsigned shard[6];
	char names[6][8];

	init_owners();
	for (int i = 0; i < 6; i++) {
		snprintf(names[i], sizeof(names[i]), "p%d", i);
		p[i] = owned(names[i], i % 2);
		pp[i] = &p[i];
	}
	cr_assert_eq(pending_assign_shards(pp, 6, 16, shard), 0);
	for (int i = 2; i < 6; i++)
		cr_assert_eq(shard[i], shard[i % 2], "pod %d left its controller's shard", i);
	for (int i = 0; i < 6; i++)
		cr_assert_lt(shard[i], 16);
}

Test(pending, pods_whose_selectors_select_each_other_share_a_shard)
{
	static struct proto_kv web[] = { { "app", "web" } }, db[] = { { "app", "db" } };
	struct proto_pod_affinity_term near_db = {
		.topology_key = "kubernetes.io/hostname",
		.selector = { .match_labels = db, .n_match_labels = 1 },
	};
	struct proto_pod p[8];
	const struct proto_pod *pp[8];
	unsigned shard[8], alone[8];
	char names[8][8];

	init_owners();
	/* Owners 0..7 hash anywhere; owner 0 (web) wants to be near owner 1 (db). */
	for (int i = 0; i < 8; i++) {
		snprintf(names[i], sizeof(names[i]), "p%d", i);
		p[i] = owned(names[i], i);
		pp[i] = &p[i];
	}
	fx_template(&p[0])->labels = web;
	fx_template(&p[0])->n_labels = 1;
	fx_template(&p[0])->pod_affinity_required = &near_db;
	fx_template(&p[0])->n_pod_affinity_required = 1;
	fx_template(&p[1])->labels = db;
	fx_template(&p[1])->n_labels = 1;
	fx_template(&p[0])->n_pod_affinity_required = 0;
	cr_assert_eq(pending_assign_shards(pp, 8, 64, alone), 0);
	cr_assert_neq(alone[0], alone[1], "precondition: web's and db's owners hash apart");
	fx_template(&p[0])->n_pod_affinity_required = 1;
	cr_assert_eq(pending_assign_shards(pp, 8, 64, shard), 0);
	cr_assert_eq(shard[0], shard[1], "web's affinity to db keeps them on one shard");
	for (int i = 2; i < 8; i++)
		cr_assert_eq(shard[i], alone[i], "unrelated groups keep their shards");
}

Test(pending, one_shard_takes_everything)
{
	struct proto_pod p[3] = { unschedulable("a"), unschedulable("b"), unschedulable("c") };
	const struct proto_pod *pp[3] = { &p[0], &p[1], &p[2] };
	unsigned shard[3] = { 9, 9, 9 };

	cr_assert_eq(pending_assign_shards(pp, 3, 1, shard), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(shard[i], 0);
}
