/*
 * The scheduler daemon's pieces: the batcher's windows and holds, and the
 * path from replicated state through the solver to a launch plan.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/batch.h"
#include "scheduler/config.h"
#include "model/from-state.h"
#include "model/plan.h"
#include "tests/unit/pod-template-fixture.h"

static struct proto_pod pod(const char *name, int64_t cpu_milli)
{
	static struct proto_resource req[2][8];
	static int slot;
	struct proto_resource *r = req[slot++ % 2];
	r[0] = (struct proto_resource){ "cpu", cpu_milli };
	r[1] = (struct proto_resource){ "memory", 512LL << 20 };
	struct proto_pod p = { .ns = "default", .name = (char *)name, .uid = (char *)name,
			       .scheduled = PROTO_COND_FALSE, .scheduled_reason = "Unschedulable" };

	fx_template(&p)->requests = r;
	fx_template(&p)->n_requests = 2;
	return p;
}

#define SEC 1000000ULL

Test(sched_batch, a_batch_is_due_after_the_idle_window_since_the_last_new_pod)
{
	struct batch b;
	struct proto_pod a = pod("a", 100), c = pod("c", 100);
	batch_init(&b, 1 * SEC, 10 * SEC);
	cr_assert_not(batch_due(&b, 0));
	cr_assert_eq(batch_add(&b, &a, 0), 1);
	cr_assert_eq(batch_add(&b, &c, SEC / 2), 1);
	cr_assert_eq(batch_add(&b, &a, SEC), 0, "a re-announcement is not new");
	cr_assert_not(batch_due(&b, SEC + SEC / 4), "idle window restarts with each new pod");
	cr_assert(batch_due(&b, SEC / 2 + SEC));
	batch_done(&b);
}

Test(sched_batch, a_steady_stream_is_cut_at_the_max_window)
{
	struct batch b;
	char names[40][8];
	batch_init(&b, 1 * SEC, 10 * SEC);
	for (int i = 0; i < 40; i++) {
		struct proto_pod p = pod(names[i], 100);
		snprintf(names[i], sizeof(names[i]), "p%d", i);
		p.name = names[i];
		cr_assert_eq(batch_add(&b, &p, (uint64_t)i * SEC / 2), 1);
		if ((uint64_t)i * SEC / 2 < 10 * SEC)
			cr_assert_not(batch_due(&b, (uint64_t)i * SEC / 2));
	}
	cr_assert(batch_due(&b, 10 * SEC));
	batch_done(&b);
}

Test(sched_batch, reloaded_windows_apply_to_the_batch_being_collected)
{
	struct batch b;
	struct proto_pod a = pod("a", 100);
	batch_init(&b, 1 * SEC, 10 * SEC);
	cr_assert_eq(batch_add(&b, &a, 0), 1);
	batch_set_windows(&b, 3 * SEC, 10 * SEC);
	cr_assert_not(batch_due(&b, 2 * SEC), "the idle window is 3 s now");
	cr_assert(batch_due(&b, 3 * SEC));
	batch_set_windows(&b, 3 * SEC, 2 * SEC);
	cr_assert(batch_due(&b, 2 * SEC), "and the max window 2 s");
	batch_done(&b);
}

Test(sched_batch, held_pods_are_not_batched_until_released_or_expired)
{
	struct batch b;
	struct proto_pod a = pod("a", 100), **taken;
	size_t n;
	batch_init(&b, SEC, 10 * SEC);
	cr_assert_eq(batch_hold(&b, "default/a", 5 * SEC), 0);
	cr_assert_eq(batch_add(&b, &a, 0), 0);
	cr_assert_eq(b.pods.n, 0);
	cr_assert_eq(batch_expire(&b, 4 * SEC), 0);
	cr_assert_eq(batch_expire(&b, 5 * SEC), 1);
	cr_assert_eq(batch_add(&b, &a, 6 * SEC), 1);
	cr_assert_eq(batch_take(&b, &taken, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(taken[0]->name, "a");
	free(taken[0]);
	free(taken);
	batch_hold(&b, "default/a", 100 * SEC);
	batch_release(&b, "default/a");
	cr_assert_eq(batch_add(&b, &a, 7 * SEC), 1, "a failed launch releases its pods");
	batch_done(&b);
}

static void add(struct state_store *s, struct proto_object o)
{
	cr_assert_geq(state_store_apply(s, PROTO_DELTA_ADD, &o, s->seq + 1), 0);
}

static const char *nodeclass_of(const char *nodepool, void *userdata)
{
	(void)nodepool;
	(void)userdata;
	return "default";
}

Test(sched_from_state, pending_pods_become_one_planned_nodeclaim_of_the_valid_nodepool)
{
	struct state_store s;
	struct proto_kv labels[] = { { "intent", "apps" } };
	struct proto_nodepool good = { .name = "default", .uid = "u1", .labels = labels, .n_labels = 1,
				       .nodeclass_ref = { .name = "default" } };
	struct proto_nodepool bad = { .name = "broken", .uid = "u2", .weight = 100,
				      .status = PROTO_NODEPOOL_INVALID, .status_reason = "x" };
	struct proto_kv sel[] = { { "intent", "apps" } };
	struct proto_pod p[3] = { pod("p0", 1000), pod("p1", 1000), pod("p2", 1000) };
	const struct proto_pod *pending[3] = { &p[0], &p[1], &p[2] };
	struct from_state_options fo = { .region = "us-west-2" };
	struct cluster *c;
	struct sched_result *res;
	struct arena a = { 0 };
	struct proto_launch_plan plan;
	struct plan_context ctx = { .shard = 0, .batch_id = 1, .nonce = 7, .nodeclass_of = nodeclass_of };
	char err[512];

	for (int i = 0; i < 3; i++) {
		fx_template(&p[i])->node_selector = sel;
		fx_template(&p[i])->n_node_selector = 1;
	}
	state_store_init(&s);
	add(&s, (struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &good });
	add(&s, (struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &bad });
	cr_assert_eq(cluster_from_state(&s, pending, 3, &fo, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c->n_nodepools, 1, "the invalid NodePool is not launched into");
	cr_assert_eq(sched_solve(c, &res), 0);
	cr_assert_eq(res->n_claims, 1);
	cr_assert_eq(res->n_unschedulable, 0);
	cr_assert_eq(plan_build(&a, c, res, &ctx, &plan), 0);
	cr_assert_eq(plan.n_nodeclaims, 1);
	cr_assert_str_eq(plan.nodeclaims[0].nodepool, "default");
	cr_assert_str_eq(plan.nodeclaims[0].nodeclass, "default");
	cr_assert_eq(plan.nodeclaims[0].n_pods, 3);
	cr_assert_leq(plan.nodeclaims[0].n_instance_types, 60);
	cr_assert_gt(plan.nodeclaims[0].n_instance_types, 0);
	for (uint32_t i = 0; i < plan.nodeclaims[0].n_instance_types; i++) {
		const struct proto_candidate *cand = &plan.nodeclaims[0].instance_types[i];
		cr_assert_gt(cand->n_offerings, 0, "%s has no usable offering", cand->name);
		for (uint32_t f = 0; f < cand->n_offerings; f++) {
			cr_assert(strncmp(cand->offerings[f].zone, "us-west-2", 9) == 0);
			/* Defaulting: a NodePool without capacity-type gets on-demand. */
			cr_assert_eq(cand->offerings[f].capacity_type, PROTO_CAPACITY_ON_DEMAND);
		}
		if (i > 0)
			cr_assert_leq(plan.nodeclaims[0].instance_types[i - 1].offerings[0].price,
				      cand->offerings[0].price + 1e-9, "candidates are cheapest first");
	}
	arena_done(&a);
	sched_result_free(res);
	cluster_free(c);
	state_store_done(&s);
}

Test(sched_from_state, offerings_reported_unavailable_are_not_planned)
{
	struct state_store s;
	struct proto_nodepool good = { .name = "default", .uid = "u1" };
	struct proto_pod p = pod("p0", 500);
	const struct proto_pod *pending[1] = { &p };
	struct cluster *c;
	struct sched_result *res;
	struct arena a = { 0 };
	struct proto_launch_plan plan;
	struct plan_context ctx = { 0 };
	char err[512], cheapest[64];
	struct from_state_options fo = { .region = "us-west-2", .now_ms = 1000 };

	state_store_init(&s);
	add(&s, (struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &good });
	cr_assert_eq(cluster_from_state(&s, pending, 1, &fo, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sched_solve(c, &res), 0);
	cr_assert_eq(plan_build(&a, c, res, &ctx, &plan), 0);
	snprintf(cheapest, sizeof(cheapest), "%s", plan.nodeclaims[0].instance_types[0].name);
	sched_result_free(res);
	cluster_free(c);
	/* The launcher found no capacity for it anywhere. */
	struct unavailable_offering u[3];
	const char *zones[3] = { "us-west-2a", "us-west-2b", "us-west-2c" };
	for (int i = 0; i < 3; i++)
		u[i] = (struct unavailable_offering){ cheapest, (char *)zones[i], PROTO_CAPACITY_ON_DEMAND, 999999 };
	fo.unavailable = u;
	fo.n_unavailable = 3;
	cr_assert_eq(cluster_from_state(&s, pending, 1, &fo, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sched_solve(c, &res), 0);
	arena_reset(&a);
	cr_assert_eq(plan_build(&a, c, res, &ctx, &plan), 0);
	for (uint32_t i = 0; i < plan.nodeclaims[0].n_instance_types; i++)
		cr_assert_str_neq(plan.nodeclaims[0].instance_types[i].name, cheapest);
	arena_done(&a);
	sched_result_free(res);
	cluster_free(c);
	state_store_done(&s);
}

Test(sched_config, the_table_passes_the_schema_check_and_shards_parse)
{
	struct config_result res = { 0 };
	unsigned i, n;
	cr_assert_eq(config_schema_check(&scheduler_schema, &res), 0, "%s", res.error);
	config_result_done(&res);
	cr_assert_eq(scheduler_parse_shard("2/4", &i, &n), 0);
	cr_assert_eq(i, 2);
	cr_assert_eq(n, 4);
	cr_assert_eq(scheduler_parse_shard("4/4", &i, &n), -EINVAL);
	cr_assert_eq(scheduler_parse_shard("0/0", &i, &n), -EINVAL);
	cr_assert_eq(scheduler_parse_shard("1", &i, &n), -EINVAL);
	cr_assert_eq(scheduler_parse_shard("0/65", &i, &n), -EINVAL);
}
