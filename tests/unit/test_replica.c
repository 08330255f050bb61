/*
 * Cluster-state replication end to end in one process: a publisher (the
 * watcher's side) and replicas over ipc through the event loop. Replicas
 * that start early or late converge to the publisher's store field by
 * field, and a restarted publisher is detected and resynced.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/replica.h"
#include "common/arena.h"
#include "proto/random.h"
#include "watcher/publish.h"

static char dir[64];
static struct loop *loop;
static struct sock_ctx *ctx;

static void setup(void)
{
	strcpy(dir, "/tmp/kanna-replica-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(loop_new(&loop, "test"), 0);
	cr_assert_eq(sock_ctx_new(&ctx, loop, "watcher", dir), 0);
}

static void teardown(void)
{
	char cmd[128];
	sock_ctx_free(ctx);
	loop_free(loop);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

TestSuite(replica, .init = setup, .fini = teardown, .timeout = 60);

static bool object_equal(const struct proto_object *a, const struct proto_object *b)
{
	struct proto_msg ma = { .env.type = PROTO_MSG_SNAPSHOT_ITEM }, mb = ma;
	ma.body.snapshot_item.object = *a;
	mb.body.snapshot_item.object = *b;
	return proto_msg_equal(&ma, &mb);
}

/* Every object of want is in have, equal field by field, and nothing more. */
static bool stores_equal(const struct state_store *want, const struct state_store *have)
{
	const struct state_entry *e;
	size_t it = 0;
	if (want->objects.n != have->objects.n)
		return false;
	while ((e = state_store_next(want, &it))) {
		const char *ns, *name;
		const struct state_entry *h;
		state_object_name(&e->obj, &ns, &name);
		h = state_store_get(have, e->obj.kind, ns, name);
		if (!h || !object_equal(&e->obj, &h->obj))
			return false;
	}
	return true;
}

/* Random churn: adds and updates of random objects, and some deletes. */
static void churn(struct publisher *p, struct proto_rng *rng, int n)
{
	struct arena a = { 0 };
	for (int i = 0; i < n; i++) {
		struct proto_msg m;
		cr_assert_eq(proto_random_msg(rng, &a, PROTO_MSG_STATE_DELTA, 3, &m), 0);
		cr_assert_geq(publisher_apply(p, PROTO_DELTA_ADD, &m.body.state_delta.object), 0);
		if (i % 7 == 3)
			cr_assert_geq(publisher_apply(p, PROTO_DELTA_DELETE, &m.body.state_delta.object), 0);
		arena_reset(&a);
	}
	arena_done(&a);
}

struct goal {
	struct publisher *p;
	struct replica *r[2];
	int n;
};

static bool converged(struct goal *g)
{
	for (int i = 0; i < g->n; i++)
		if (!replica_synced(g->r[i]) ||
		    replica_store(g->r[i])->seq != publisher_seq(g->p) ||
		    !stores_equal(publisher_store(g->p), replica_store(g->r[i])))
			return false;
	return true;
}

/* Turns the loop by hand (sd_event_loop cannot be restarted once exited). */
static void run_until_converged(struct goal *g)
{
	for (int i = 0; i < 5000 && !converged(g); i++)
		cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0);
	cr_assert(converged(g), "replicas did not converge");
}

Test(replica, early_and_late_replicas_equal_the_publisher_after_churn)
{
	struct proto_rng rng = { 42 };
	struct goal g = { 0 };
	struct replica_stats st;
	cr_assert_eq(publisher_new(&g.p, ctx, loop, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC), 0);
	cr_assert_eq(replica_new(&g.r[0], ctx, loop, PROTO_PROCESS_SCHEDULER, ENDPOINT_STATE_PUB,
				 ENDPOINT_STATE_SYNC, NULL), 0);
	g.n = 1;
	churn(g.p, &rng, 2000);
	run_until_converged(&g);
	churn(g.p, &rng, 1000); /* while replica 0 is live */
	cr_assert_eq(replica_new(&g.r[1], ctx, loop, PROTO_PROCESS_REAPER, ENDPOINT_STATE_PUB,
				 ENDPOINT_STATE_SYNC, NULL), 0);
	g.n = 2;
	run_until_converged(&g);
	churn(g.p, &rng, 1000);
	run_until_converged(&g);
	replica_get_stats(g.r[1], &st);
	cr_assert_geq(st.snapshots, 1);
	cr_assert_gt(publisher_store(g.p)->objects.n, 1000);
	replica_free(g.r[0]);
	replica_free(g.r[1]);
	publisher_free(g.p);
}

Test(replica, a_restarted_publisher_is_noticed_and_replicas_resync_to_its_state)
{
	struct proto_rng rng = { 7 };
	struct goal g = { 0 };
	struct replica_stats st;
	cr_assert_eq(publisher_new(&g.p, ctx, loop, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC), 0);
	cr_assert_eq(replica_new(&g.r[0], ctx, loop, PROTO_PROCESS_LAUNCHER, ENDPOINT_STATE_PUB,
				 ENDPOINT_STATE_SYNC, NULL), 0);
	g.n = 1;
	churn(g.p, &rng, 500);
	run_until_converged(&g);
	/* The watcher dies and comes back with a different picture. */
	publisher_free(g.p);
	usleep(2000); /* a new start time, so a new sequence origin */
	cr_assert_eq(publisher_new(&g.p, ctx, loop, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC), 0);
	churn(g.p, &rng, 300);
	run_until_converged(&g);
	replica_get_stats(g.r[0], &st);
	cr_assert_geq(st.gaps, 1);
	cr_assert_geq(st.snapshots, 2);
	replica_free(g.r[0]);
	publisher_free(g.p);
}

struct counter {
	int adds, deletes, synced;
};

static void on_change(enum proto_delta_op op, const struct proto_object *old,
		      const struct proto_object *now, void *userdata)
{
	struct counter *c = userdata;
	if (op == PROTO_DELTA_DELETE) {
		cr_assert_not_null(old);
		cr_assert_null(now);
		c->deletes++;
	} else {
		cr_assert_not_null(now);
		c->adds++;
	}
}

static void on_synced(uint64_t seq, void *userdata)
{
	struct counter *c = userdata;
	(void)seq;
	c->synced++;
}

Test(replica, consumers_see_each_live_change_once)
{
	struct proto_rng rng = { 3 };
	struct goal g = { 0 };
	struct counter c = { 0 };
	struct replica_handlers h = { on_change, on_synced, &c };
	cr_assert_eq(publisher_new(&g.p, ctx, loop, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC), 0);
	cr_assert_eq(replica_new(&g.r[0], ctx, loop, PROTO_PROCESS_SCHEDULER, ENDPOINT_STATE_PUB,
				 ENDPOINT_STATE_SYNC, &h), 0);
	g.n = 1;
	run_until_converged(&g);
	cr_assert_eq(c.synced, 1);
	churn(g.p, &rng, 70); /* 70 adds, 10 deletes (i % 7 == 3) */
	run_until_converged(&g);
	cr_assert_eq(c.deletes, 10);
	cr_assert_geq(c.adds, 60);
	replica_free(g.r[0]);
	publisher_free(g.p);
}

Test(replica, a_delta_that_cannot_be_encoded_changes_neither_the_store_nor_the_sequence)
{
	static char big[5001];
	struct proto_kv ann[] = { { "example.com/blob", big } };
	struct proto_nodepool np = { .name = "big", .uid = "u1", .annotations = ann, .n_annotations = 1 };
	struct proto_nodepool ok = { .name = "ok", .uid = "u2" };
	struct goal g = { 0 };
	uint64_t seq;
	size_t n;

	memset(big, 'x', sizeof(big) - 1);
	cr_assert_eq(publisher_new(&g.p, ctx, loop, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC), 0);
	cr_assert_eq(publisher_apply(g.p, PROTO_DELTA_ADD,
				     &(struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &ok }), 1);
	seq = publisher_seq(g.p);
	n = publisher_store(g.p)->objects.n;
	cr_assert_eq(publisher_apply(g.p, PROTO_DELTA_ADD,
				     &(struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np }),
		     -EBADMSG);
	cr_assert_eq(publisher_seq(g.p), seq);
	cr_assert_eq(publisher_store(g.p)->objects.n, n);
	/* Snapshots still complete: a replica syncs to the one good object. */
	cr_assert_eq(replica_new(&g.r[0], ctx, loop, PROTO_PROCESS_SCHEDULER, ENDPOINT_STATE_PUB,
				 ENDPOINT_STATE_SYNC, NULL), 0);
	g.n = 1;
	run_until_converged(&g);
	cr_assert_eq(replica_store(g.r[0])->objects.n, 1);
	replica_free(g.r[0]);
	publisher_free(g.p);
}
