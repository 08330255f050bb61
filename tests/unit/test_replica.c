/*
 * Cluster-state replication end to end in one process: a publisher (the
 * watcher's side) and replicas over ipc through the event loop. Replicas
 * that start early or late converge to the publisher's store field by
 * field, and a restarted publisher is detected and resynced.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "state/replica.h"
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

/* A publisher whose store is complete from the start (as after the first list). */
static void publisher_start(struct publisher **p)
{
	cr_assert_eq(publisher_new(p, ctx, loop, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC), 0);
	cr_assert_eq(publisher_set_complete(*p), 0);
}

Test(replica, early_and_late_replicas_equal_the_publisher_after_churn)
{
	struct proto_rng rng = { 42 };
	struct goal g = { 0 };
	struct replica_stats st;
	publisher_start(&g.p);
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
	/* The watcher greeted it on both sockets, and nothing was dropped. */
	cr_assert_geq(st.hellos, 2);
	cr_assert_eq(st.bad_messages, 0);
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
	publisher_start(&g.p);
	cr_assert_eq(replica_new(&g.r[0], ctx, loop, PROTO_PROCESS_LAUNCHER, ENDPOINT_STATE_PUB,
				 ENDPOINT_STATE_SYNC, NULL), 0);
	g.n = 1;
	churn(g.p, &rng, 500);
	run_until_converged(&g);
	/* The watcher dies and comes back with a different picture. */
	publisher_free(g.p);
	usleep(2000); /* a new start time, so a new sequence origin */
	publisher_start(&g.p);
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
	publisher_start(&g.p);
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
	publisher_start(&g.p);
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

Test(replica, a_replica_is_not_synced_until_the_publisher_has_the_whole_cluster)
{
	struct proto_rng rng = { 11 };
	struct goal g = { 0 };
	struct replica_stats st;
	cr_assert_eq(publisher_new(&g.p, ctx, loop, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC), 0);
	cr_assert_eq(replica_new(&g.r[0], ctx, loop, PROTO_PROCESS_SCHEDULER, ENDPOINT_STATE_PUB,
				 ENDPOINT_STATE_SYNC, NULL), 0);
	g.n = 1;
	/* A third of the cluster is listed: the replica's request waits. */
	churn(g.p, &rng, 300);
	for (int i = 0; i < 100; i++)
		cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0);
	cr_assert_not(replica_synced(g.r[0]), "synced on a partial store");
	cr_assert_eq(replica_store(g.r[0])->objects.n, 0);
	/* The rest is listed; now the replica gets all of it. */
	churn(g.p, &rng, 600);
	cr_assert_eq(publisher_set_complete(g.p), 0);
	run_until_converged(&g);
	replica_get_stats(g.r[0], &st);
	cr_assert_eq(st.snapshots, 1, "one snapshot, of the whole store");
	churn(g.p, &rng, 100); /* and deltas flow from then on */
	run_until_converged(&g);
	replica_free(g.r[0]);
	publisher_free(g.p);
}

/* ---- a scripted watcher: a bare ROUTER on state.sync ---- */

struct fake_watcher {
	struct sock *sync;
	struct msg_io io;
	unsigned char who[2][256]; /* identities of the requests seen */
	size_t who_len[2];
	int requests, hellos;
};

static void fake_start(struct fake_watcher *f)
{
	cr_assert_eq(msg_io_init(&f->io, PROTO_PROCESS_WATCHER, 0), 0);
	cr_assert_eq(sock_new(&f->sync, ctx, ZMQ_ROUTER, "state.sync"), 0);
	cr_assert_eq(sock_bind(f->sync, ENDPOINT_STATE_SYNC), 0);
}

static void fake_stop(struct fake_watcher *f)
{
	sock_free(f->sync);
	msg_io_done(&f->io);
}

/* Turns the loop until the fake has seen n requests (or seconds pass). */
static void fake_wait_requests(struct fake_watcher *f, int n, int seconds)
{
	for (int i = 0; i <= seconds * 100 && (i == 0 || f->requests < n); i++) {
		struct sock_msg msg;
		if (i > 0)
			cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0);
		while (sock_recv(f->sync, &msg, ZMQ_DONTWAIT) >= 0) {
			const struct proto_msg *m;
			int k;
			if (msg_decode(&f->io, &msg, &m) >= 0 && m->env.type == PROTO_MSG_HELLO) {
				f->hellos++; /* each request's connection opens with one */
				sock_msg_close(&msg);
				continue;
			}
			k = f->requests++ % 2;
			f->who_len[k] = MIN(sock_msg_size(&msg, 0), sizeof(f->who[k]));
			memcpy(f->who[k], sock_msg_data(&msg, 0), f->who_len[k]);
			sock_msg_close(&msg);
		}
	}
	cr_assert_geq(f->requests, n, "%d snapshot request(s), want %d", f->requests, n);
}

static struct proto_namespace ns_obj[4] = {
	{ .name = "a", .uid = "1" }, { .name = "b", .uid = "2" },
	{ .name = "c", .uid = "3" }, { .name = "d", .uid = "4" },
};

/* Sends snapshot items [from, to) and, when end, the end (as of seq 100). */
static void fake_send(struct fake_watcher *f, int request, int from, int to, bool end)
{
	struct iovec route = { f->who[request % 2], f->who_len[request % 2] };
	struct proto_msg m;

	for (int i = from; i < to; i++) {
		m = (struct proto_msg){ .env.type = PROTO_MSG_SNAPSHOT_ITEM };
		m.body.snapshot_item.seq = 10 + (uint64_t)i;
		m.body.snapshot_item.object = (struct proto_object){ .kind = PROTO_OBJECT_NAMESPACE,
								     .namespace = &ns_obj[i] };
		(void)msg_send_routed(&f->io, f->sync, &route, 1, &m, ZMQ_DONTWAIT);
	}
	if (!end)
		return;
	m = (struct proto_msg){ .env.type = PROTO_MSG_SNAPSHOT_END };
	m.body.snapshot_end.as_of_seq = 100;
	m.body.snapshot_end.n_items = (uint64_t)(to - from);
	(void)msg_send_routed(&f->io, f->sync, &route, 1, &m, ZMQ_DONTWAIT);
}

static void on_synced_count(uint64_t seq, void *userdata)
{
	struct counter *c = userdata;
	(void)seq;
	c->synced++;
}

static void turn(int ms)
{
	for (int i = 0; i < ms / 10; i++)
		cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0);
}

Test(replica, the_rest_of_a_snapshot_that_timed_out_never_completes_the_next_one)
{
	struct fake_watcher f = { 0 };
	struct counter c = { 0 };
	struct replica_handlers h = { NULL, on_synced_count, &c };
	struct replica *r;

	fake_start(&f);
	cr_assert_eq(replica_new(&r, ctx, loop, PROTO_PROCESS_SCHEDULER, ENDPOINT_STATE_PUB,
				 ENDPOINT_STATE_SYNC, &h), 0);
	fake_wait_requests(&f, 1, 5);
	fake_send(&f, 0, 0, 1, false); /* one item, then the watcher stalls */
	fake_wait_requests(&f, 2, 15);  /* the replica times out and asks again */
	cr_assert_eq(f.hellos, f.requests, "each request's new connection opens with a hello");
	/* The first snapshot's end arrives late: it must not count. */
	fake_send(&f, 0, 3, 4, true);
	turn(300);
	cr_assert_eq(c.synced, 0, "synced on %zu object(s) of a stale stream",
		     replica_store(r)->objects.n);
	fake_send(&f, 1, 0, 4, true);
	for (int i = 0; i < 300 && !replica_synced(r); i++)
		turn(10);
	cr_assert(replica_synced(r));
	cr_assert_eq(c.synced, 1);
	cr_assert_eq(replica_store(r)->objects.n, 4);
	replica_free(r);
	fake_stop(&f);
}

Test(replica, a_snapshot_that_keeps_arriving_is_not_cut_by_the_timeout)
{
	struct fake_watcher f = { 0 };
	struct replica *r;

	fake_start(&f);
	cr_assert_eq(replica_new(&r, ctx, loop, PROTO_PROCESS_SCHEDULER, ENDPOINT_STATE_PUB,
				 ENDPOINT_STATE_SYNC, NULL), 0);
	fake_wait_requests(&f, 1, 5);
	/* Slower than the timeout in all, never silent for as long. */
	for (int i = 0; i < 4; i++) {
		fake_send(&f, 0, i, i + 1, false);
		turn((int)(REPLICA_SNAPSHOT_TIMEOUT_USEC / 1000 / 3));
	}
	fake_send(&f, 0, 4, 4, true);
	for (int i = 0; i < 300 && !replica_synced(r); i++)
		turn(10);
	cr_assert(replica_synced(r));
	cr_assert_eq(replica_store(r)->objects.n, 4);
	fake_wait_requests(&f, 1, 0); /* collects any request sent meanwhile */
	cr_assert_eq(f.requests, 1, "asked again while the snapshot was arriving");
	replica_free(r);
	fake_stop(&f);
}

/* Turns the loop for about ms milliseconds. */
static void run_for_ms(uint64_t ms)
{
	uint64_t end = clock_monotonic_usec() + ms * 1000;

	while (clock_monotonic_usec() < end)
		cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0);
}

Test(replica, the_publishers_heartbeats_keep_a_replica_current_and_its_silence_ages_it)
{
	struct goal g = { 0 };
	uint64_t seen, before;

	publisher_start(&g.p);
	cr_assert_eq(replica_new(&g.r[0], ctx, loop, PROTO_PROCESS_REAPER, ENDPOINT_STATE_PUB,
				 ENDPOINT_STATE_SYNC, NULL), 0);
	cr_assert_eq(replica_current_usec(g.r[0]), 0, "not synced: never current");
	g.n = 1;
	run_until_converged(&g);
	seen = replica_current_usec(g.r[0]);
	cr_assert_gt(seen, 0);
	/* Nothing changes, but heartbeats (1 s) say the replica is still current. */
	run_for_ms(2500);
	cr_assert_gt(replica_current_usec(g.r[0]), seen, "a heartbeat at our seq renews it");
	/* The watcher goes away: the store stays, synced, but stops being current. */
	publisher_free(g.p);
	before = replica_current_usec(g.r[0]);
	run_for_ms(2500);
	cr_assert(replica_synced(g.r[0]));
	cr_assert_eq(replica_current_usec(g.r[0]), before, "silence does not renew it");
	cr_assert_geq(clock_monotonic_usec() - before, 2000000);
	replica_free(g.r[0]);
}
