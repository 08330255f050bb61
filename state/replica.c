/*
 * Cluster-state replica (see replica.h). States: SYNCING (snapshot asked
 * for; items go into a fresh store, deltas are buffered) and LIVE (deltas
 * apply in order). The fresh store replaces the live one only when the
 * snapshot ends, so readers never see a half-loaded picture.
 *
 * Each request goes out on a new state.sync socket: the watcher answers a
 * socket, so the rest of an earlier snapshot (one that timed out, or one a
 * watcher killed since was sending) lands on a closed socket instead of
 * mixing into the new one, where its end would pass a partial picture off
 * as complete. A snapshot that keeps arriving is never cut by the timeout.
 * Each such connection opens with our hello, and the watcher's (on
 * state.pub too, as we subscribe) is checked by msg_dispatch().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/metrics.h"
#include "state/replica.h"

struct buffered_delta {
	struct proto_msg *msg; /* a proto_msg_dup() of the delta */
};

struct replica {
	struct loop *loop;
	struct sock_ctx *ctx;
	char *sync_endpoint;
	struct sock *sub, *sync;
	uint64_t items, items_at_check; /* snapshot items received: progress */
	struct msg_io io;
	struct msg_dispatch dispatch;
	struct replica_handlers h;
	struct state_store store, incoming;
	bool live, syncing;
	uint64_t current_usec; /* when it last knew itself current (replica_current_usec()) */
	struct proto_msg **buffered;
	size_t n_buffered, cap_buffered;
	sd_event_source *timeout;
	struct replica_stats stats;
	struct metrics_gauge *lag; /* kanna_replica_lag_seconds, may be NULL */
};

static int replica_request_snapshot(struct replica *r);

static void drop_buffered(struct replica *r)
{
	for (size_t i = 0; i < r->n_buffered; i++)
		proto_msg_free(r->buffered[i]);
	r->n_buffered = 0;
}

static int on_sub_readable(struct sock *s, void *userdata);

static int on_timeout(struct loop *loop, void *userdata)
{
	struct replica *r = userdata;

	r->timeout = sd_event_source_disable_unref(r->timeout);
	if (r->items != r->items_at_check) {
		/* Still arriving: a big snapshot, not a lost one. */
		r->items_at_check = r->items;
		return loop_add_timer(loop, REPLICA_SNAPSHOT_TIMEOUT_USEC, on_timeout, r, &r->timeout);
	}
	log_info("No state snapshot from the watcher in %llus (it may still be listing the "
		 "cluster, or restarting), asking again", REPLICA_SNAPSHOT_TIMEOUT_USEC / 1000000);
	return replica_request_snapshot(r);
}

/* A new state.sync socket (see the top of this file). */
static int open_sync(struct replica *r)
{
	int k;

	r->sync = sock_free(r->sync);
	if ((k = sock_new(&r->sync, r->ctx, ZMQ_DEALER, "state.sync")) < 0)
		return k;
	if (zmq_setsockopt(sock_zsock(r->sync), ZMQ_RCVHWM, &(int){ REPLICA_SYNC_RCVHWM },
			   sizeof(int)) < 0)
		return -errno;
	if ((k = sock_connect(r->sync, r->sync_endpoint)) < 0 ||
	    (k = sock_watch(r->sync, on_sub_readable, r)) < 0)
		return k;
	return 0;
}

static int replica_request_snapshot(struct replica *r)
{
	struct proto_msg m = { .env.type = PROTO_MSG_SNAPSHOT_REQUEST };
	int k;

	state_store_clear(&r->incoming);
	drop_buffered(r);
	r->syncing = true;
	r->items_at_check = r->items;
	r->timeout = sd_event_source_disable_unref(r->timeout);
	k = loop_add_timer(r->loop, REPLICA_SNAPSHOT_TIMEOUT_USEC, on_timeout, r, &r->timeout);
	if (k < 0)
		return k;
	k = open_sync(r);
	if (k < 0)
		return k;
	/* A new connection: it opens with our hello; the watcher answers
	 * with its own before the snapshot. */
	k = msg_send_hello(&r->io, r->sync, ZMQ_DONTWAIT);
	if (k >= 0)
		k = msg_send(&r->io, r->sync, &m, ZMQ_DONTWAIT);
	/* Not connected yet: the timeout asks again. */
	return k == -EAGAIN ? 0 : k;
}

/* Applies one delta to the live store, telling the consumer. */
static int apply_live(struct replica *r, const struct proto_state_delta *d)
{
	const struct state_entry *old_e;
	struct proto_object old = { 0 };
	const char *ns, *name;
	int k;

	state_object_name(&d->object, &ns, &name);
	old_e = state_store_get(&r->store, d->object.kind, ns, name);
	if (old_e && r->h.on_change && (k = proto_object_dup(&old_e->obj, &old)) < 0)
		return k;
	k = state_store_apply(&r->store, d->op, &d->object, d->seq);
	r->store.seq = d->seq;
	r->current_usec = clock_monotonic_usec();
	if (k > 0 && r->h.on_change) {
		const struct state_entry *now_e = state_store_get(&r->store, d->object.kind, ns, name);
		r->h.on_change(d->op, old_e ? &old : NULL, now_e ? &now_e->obj : NULL, r->h.userdata);
	}
	if (old.ptr)
		proto_object_free(&old);
	r->stats.deltas++;
	return k < 0 ? k : 0;
}

/* How far behind the watcher this replica runs: the age of a delta or an
 * in-step heartbeat as it is applied (the two clocks are one host's). */
static void measure_lag(struct replica *r, const struct proto_msg *m)
{
	int64_t now = clock_realtime_ns(), sent = (int64_t)m->env.send_time_ns;

	if (r->lag && sent > 0 && now >= sent)
		(void)metrics_gauge_set(r->lag, (double)(now - sent) / 1e9, NULL);
}

static int on_delta(struct replica *r, const struct proto_msg *m)
{
	const struct proto_state_delta *d = &m->body.state_delta;

	if (r->syncing) {
		if (r->n_buffered == REPLICA_MAX_BUFFERED)
			return replica_request_snapshot(r);
		if (r->n_buffered == r->cap_buffered) {
			size_t cap = r->cap_buffered ? r->cap_buffered * 2 : 64;
			struct proto_msg **n = realloc(r->buffered, cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			r->buffered = n;
			r->cap_buffered = cap;
		}
		r->buffered[r->n_buffered] = proto_msg_dup(m);
		if (!r->buffered[r->n_buffered])
			return -ENOMEM;
		r->n_buffered++;
		return 0;
	}
	if (d->seq <= r->store.seq) {
		r->stats.duplicates++;
		return 0;
	}
	if (d->seq != r->store.seq + 1) {
		r->stats.gaps++;
		log_info("State delta %" PRIu64 " after %" PRIu64 ": a gap, taking a new snapshot",
			 d->seq, r->store.seq);
		return replica_request_snapshot(r);
	}
	measure_lag(r, m);
	return apply_live(r, d);
}

static int on_heartbeat(struct replica *r, const struct proto_msg *m)
{
	uint64_t seq = m->body.heartbeat.state_seq;

	if (!r->syncing && r->live && seq == r->store.seq) {
		r->current_usec = clock_monotonic_usec();
		measure_lag(r, m);
	}
	if (r->syncing || seq <= r->store.seq)
		return 0;
	/* The watcher is ahead of us with no delta in between: we lost some. */
	r->stats.gaps++;
	log_info("State heartbeat at %" PRIu64 " while we are at %" PRIu64 ", taking a new snapshot",
		 seq, r->store.seq);
	return replica_request_snapshot(r);
}

static int on_snapshot_end(struct replica *r, uint64_t as_of)
{
	struct state_store tmp = r->store;
	int k = 0;

	/* Swap: the complete snapshot becomes the live store. */
	r->store = r->incoming;
	r->incoming = tmp;
	state_store_clear(&r->incoming);
	r->store.seq = as_of;
	r->syncing = false;
	r->live = true;
	r->current_usec = clock_monotonic_usec();
	r->timeout = sd_event_source_disable_unref(r->timeout);
	r->stats.snapshots++;
	for (size_t i = 0; i < r->n_buffered && k >= 0; i++) {
		const struct proto_state_delta *d = &r->buffered[i]->body.state_delta;
		if (d->seq <= r->store.seq)
			continue;
		if (d->seq != r->store.seq + 1) {
			r->stats.gaps++;
			drop_buffered(r);
			return replica_request_snapshot(r);
		}
		k = apply_live(r, d);
	}
	drop_buffered(r);
	/* The store replaced and the deltas held meanwhile are free now. */
	memory_trim();
	if (k < 0)
		return k;
	log_info("State replica synced: %zu object(s) as of seq %" PRIu64, r->store.objects.n,
		 r->store.seq);
	if (r->h.on_synced)
		r->h.on_synced(r->store.seq, r->h.userdata);
	return 0;
}

static int on_delta_msg(const struct proto_msg *m, void *userdata)
{
	return on_delta(userdata, m);
}

static int on_heartbeat_msg(const struct proto_msg *m, void *userdata)
{
	return on_heartbeat(userdata, m);
}

static int on_snapshot_item(const struct proto_msg *m, void *userdata)
{
	struct replica *r = userdata;

	r->items++;
	return r->syncing ? state_store_apply(&r->incoming, PROTO_DELTA_ADD, &m->body.snapshot_item.object,
					      m->body.snapshot_item.seq) : 0;
}

static int on_snapshot_end_msg(const struct proto_msg *m, void *userdata)
{
	struct replica *r = userdata;

	return r->syncing ? on_snapshot_end(r, m->body.snapshot_end.as_of_seq) : 0;
}

/* Only the watcher publishes cluster state. */
static const struct msg_route state_routes[] = {
	{ PROTO_MSG_STATE_DELTA, MSG_FROM(PROTO_PROCESS_WATCHER), on_delta_msg },
	{ PROTO_MSG_HEARTBEAT, MSG_FROM(PROTO_PROCESS_WATCHER), on_heartbeat_msg },
	{ PROTO_MSG_SNAPSHOT_ITEM, MSG_FROM(PROTO_PROCESS_WATCHER), on_snapshot_item },
	{ PROTO_MSG_SNAPSHOT_END, MSG_FROM(PROTO_PROCESS_WATCHER), on_snapshot_end_msg },
};

static int on_message(struct replica *r, struct sock *s)
{
	int k = msg_dispatch(&r->dispatch, s, r);

	r->stats.bad_messages = r->dispatch.n_dropped;
	r->stats.hellos = r->dispatch.n_hellos;
	return k < 0 ? k : 0;
}

void replica_count_drops(struct replica *r, struct metrics_counter *dropped)
{
	r->dispatch.dropped = dropped;
}

int replica_lag_metric_new(struct replica *r, struct metrics_registry *reg)
{
	return metrics_gauge_new(reg, &r->lag, "kanna_replica_lag_seconds",
				 "Age of the last state delta or in-step heartbeat of the watcher "
				 "when this replica applied it.",
				 NULL);
}

static int on_sub_readable(struct sock *s, void *userdata)
{
	/* on_message() may replace r->sync: it touches s no more after that. */
	return on_message(userdata, s);
}

int replica_new(struct replica **ret, struct sock_ctx *ctx, struct loop *loop,
		enum proto_process self, const char *pub_endpoint, const char *sync_endpoint,
		const struct replica_handlers *h)
{
	struct replica *r = calloc(1, sizeof(*r));
	int k;

	if (!r)
		return -ENOMEM;
	r->loop = loop;
	r->ctx = ctx;
	if (h)
		r->h = *h;
	state_store_init(&r->store);
	state_store_init(&r->incoming);
	/* A resync loads next to the live store: what both hold, once. Every
	 * failure below goes through replica_free(), which takes a half-built
	 * replica (tests/unit/test_replica_oom.c fails each allocation). */
	if ((k = state_store_share_with(&r->incoming, &r->store)) < 0) {
		replica_free(r);
		return k;
	}
	r->sync_endpoint = strdup(sync_endpoint);
	if (!r->sync_endpoint) {
		replica_free(r);
		return -ENOMEM;
	}
	r->dispatch = (struct msg_dispatch){ .socket = "state", .routes = state_routes,
					     .n_routes = ARRAY_SIZE(state_routes), .io = &r->io };
	if ((k = msg_io_init(&r->io, self, 0)) < 0 ||
	    (k = sock_new(&r->sub, ctx, ZMQ_SUB, "state.pub")) < 0 ||
	    (k = sock_subscribe(r->sub, "", 0)) < 0 ||
	    (k = sock_connect(r->sub, pub_endpoint)) < 0 ||
	    (k = sock_watch(r->sub, on_sub_readable, r)) < 0 ||
	    (k = replica_request_snapshot(r)) < 0) {
		replica_free(r);
		return k;
	}
	*ret = r;
	return 0;
}

struct replica *replica_free(struct replica *r)
{
	if (!r)
		return NULL;
	sd_event_source_disable_unref(r->timeout);
	sock_free(r->sub);
	sock_free(r->sync);
	msg_io_done(&r->io);
	drop_buffered(r);
	free(r->buffered);
	state_store_done(&r->store);
	state_store_done(&r->incoming);
	free(r->sync_endpoint);
	free(r);
	return NULL;
}

uint64_t replica_current_usec(const struct replica *r)
{
	return r->live && !r->syncing ? r->current_usec : 0;
}

bool replica_synced(const struct replica *r)
{
	return r->live && !r->syncing;
}

const struct state_store *replica_store(const struct replica *r)
{
	return &r->store;
}

void replica_get_stats(const struct replica *r, struct replica_stats *ret)
{
	*ret = r->stats;
}
