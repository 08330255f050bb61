/*
 * State publisher (see publish.h). A snapshot records the seq when it is
 * asked for, then walks the store's index slot by slot, streaming the
 * objects in slices, each encoded as it goes, so the store can keep
 * changing meanwhile and a snapshot of 100k objects costs a cursor, not a
 * copy of them or of their keys. An object that stays keeps its slot (the
 * index leaves tombstones), so the walk misses none; when the index is
 * rebuilt the walk starts over, and objects sent twice are harmless.
 * Replicas apply every delta after the snapshot's seq on top: deltas carry
 * whole objects, so an item that is newer than the seq changes nothing
 * when its delta arrives, and an object deleted meanwhile is simply not
 * sent (its delete delta follows).
 *
 * state.pub is an XPUB so that each replica is greeted with a hello as it
 * subscribes (a PUB would drop a greeting sent before the subscription);
 * on state.sync a replica says hello before each snapshot request and is
 * greeted back (state/msg.h checks the hellos).
 *
 * Until the owner says the store is complete (every collection listed),
 * snapshot requests wait and deltas are not sent: a snapshot of a third of
 * the cluster would let a replica call itself synced, and deltas are of no
 * use to replicas that cannot have a snapshot yet.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "watcher/publish.h"

struct snapshot_job {
	struct snapshot_job *next;
	void *identity;
	size_t identity_len;
	size_t next_slot;  /* the walk over the store's index */
	uint64_t layout;   /* the index layout the walk is in */
	uint64_t sent;
	uint64_t as_of;
};

/* A snapshot request that came before the store was complete. */
struct held_request {
	struct held_request *next;
	size_t identity_len;
	unsigned char identity[];
};

struct publisher {
	struct loop *loop;
	struct state_store store;
	struct sock *pub, *sync;
	struct msg_io io;
	struct msg_dispatch sync_dispatch;
	bool complete;
	struct held_request *held;
	size_t n_held;
	struct snapshot_job *jobs;
	sd_event_source *slice_timer;
	struct publisher_stats stats;
};

static void job_free(struct snapshot_job *j)
{
	free(j->identity);
	free(j);
}

/* Sends m to the job's replica: 0, -EAGAIN (queue full), other negative errno. */
static int job_send(struct publisher *p, struct snapshot_job *j, struct proto_msg *m)
{
	struct iovec route = { j->identity, j->identity_len };

	return msg_send_routed(&p->io, p->sync, &route, 1, m, ZMQ_DONTWAIT);
}

static int on_slice(struct loop *loop, void *userdata);

static int schedule_slice(struct publisher *p, uint64_t delay_usec)
{
	if (p->slice_timer)
		return 0;
	return loop_add_timer(p->loop, delay_usec, on_slice, p, &p->slice_timer);
}

/* Sends one slice of a snapshot; true when the job is finished (or dead). */
static bool job_slice(struct publisher *p, struct snapshot_job *j)
{
	size_t budget = PUBLISH_SNAPSHOT_SLICE, at;
	const struct state_entry *e;
	struct proto_msg m;
	int r;

	if (j->layout != p->store.objects.layout) {
		j->layout = p->store.objects.layout;
		j->next_slot = 0; /* entries moved: walk again */
	}
	while (budget > 0) {
		at = j->next_slot;
		if (!(e = state_store_next(&p->store, &at)))
			break;
		m = (struct proto_msg){ .env.type = PROTO_MSG_SNAPSHOT_ITEM };
		m.body.snapshot_item.seq = e->seq;
		m.body.snapshot_item.object = e->obj;
		r = job_send(p, j, &m);
		if (r == -EAGAIN)
			return false; /* the replica's queue is full: next turn */
		if (r == -EHOSTUNREACH)
			return true; /* the replica went away */
		if (r < 0) {
			/* publisher_apply() stores only what encodes: not expected. */
			log_error("Failed to send a state snapshot: %s",
				  r == -EBADMSG || r == -EMSGSIZE ? p->io.last_error.text : strerror(-r));
			return true;
		}
		j->next_slot = at;
		j->sent++;
		budget--;
	}
	if (budget == 0)
		return false;
	m = (struct proto_msg){ .env.type = PROTO_MSG_SNAPSHOT_END };
	m.body.snapshot_end.as_of_seq = j->as_of;
	m.body.snapshot_end.n_items = j->sent;
	r = job_send(p, j, &m);
	return r != -EAGAIN;
}

static int on_slice(struct loop *loop, void *userdata)
{
	struct publisher *p = userdata;
	struct snapshot_job **jp = &p->jobs;
	bool moved = false;

	(void)loop;
	p->slice_timer = sd_event_source_disable_unref(p->slice_timer);
	while (*jp) {
		struct snapshot_job *j = *jp;
		uint64_t sent = j->sent;
		if (job_slice(p, j)) {
			*jp = j->next;
			job_free(j);
			moved = true;
		} else {
			moved |= j->sent != sent;
			jp = &j->next;
		}
	}
	/* Every replica's queue full: let them drain instead of spinning on
	 * the CPU they need to do it. */
	return p->jobs ? schedule_slice(p, moved ? 0 : PUBLISH_SNAPSHOT_WAIT_USEC) : 0;
}

static int snapshot_start(struct publisher *p, const void *identity, size_t identity_len)
{
	struct snapshot_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->identity = malloc(identity_len);
	if (!j->identity) {
		job_free(j);
		return -ENOMEM;
	}
	memcpy(j->identity, identity, identity_len);
	j->identity_len = identity_len;
	j->layout = p->store.objects.layout;
	j->as_of = p->store.seq;
	j->next = p->jobs;
	p->jobs = j;
	p->stats.snapshots++;
	p->stats.snapshot_items += p->store.objects.n;
	log_debug("sending a snapshot of %zu object(s) as of seq %" PRIu64, p->store.objects.n,
		  j->as_of);
	return schedule_slice(p, 0);
}

/* Until the store is complete, a request waits (one per replica: a
 * replica that times out and asks again is the same request). */
static int hold_request(struct publisher *p, const void *identity, size_t len)
{
	struct held_request *h;

	for (h = p->held; h; h = h->next)
		if (h->identity_len == len && memcmp(h->identity, identity, len) == 0)
			return 0;
	if (p->n_held >= PUBLISH_MAX_HELD_REQUESTS) {
		log_warn("Failed to hold a state snapshot request: %zu already wait for the first "
			 "list; the replica will ask again", p->n_held);
		return 0;
	}
	h = malloc(sizeof(*h) + len);
	if (!h)
		return -ENOMEM;
	h->identity_len = len;
	memcpy(h->identity, identity, len);
	h->next = p->held;
	p->held = h;
	p->n_held++;
	log_debug("holding a state snapshot request until every collection is listed");
	return 0;
}

static void drop_held(struct publisher *p)
{
	while (p->held) {
		struct held_request *h = p->held;
		p->held = h->next;
		free(h);
	}
	p->n_held = 0;
}

/* The replica's identity: the ROUTER's first frame. */
static bool request_identity(struct publisher *p, const void **id, size_t *len)
{
	struct sock_msg *msg = p->sync_dispatch.msg;

	if (msg->n_frames < 2) {
		p->stats.bad_requests++;
		return false;
	}
	*id = sock_msg_data(msg, 0);
	*len = sock_msg_size(msg, 0);
	return true;
}

/* A replica greets us before each snapshot request: we greet it back. */
static int on_hello(const struct proto_msg *m, void *userdata)
{
	struct publisher *p = userdata;
	struct iovec route;
	int r;

	(void)m;
	if (!request_identity(p, (const void **)&route.iov_base, &route.iov_len))
		return 0;
	r = msg_send_hello_routed(&p->io, p->sync, &route, 1, ZMQ_DONTWAIT);
	if (r < 0 && r != -EAGAIN && r != -EHOSTUNREACH)
		log_warn_errno(r, "Failed to greet a replica on %s: %m", ENDPOINT_STATE_SYNC);
	return 0;
}

static int on_snapshot_request(const struct proto_msg *m, void *userdata)
{
	struct publisher *p = userdata;
	const void *id;
	size_t len;
	int r;

	(void)m;
	if (!request_identity(p, &id, &len))
		return 0;
	r = p->complete ? snapshot_start(p, id, len) : hold_request(p, id, len);
	if (r < 0)
		return log_error_errno(r, "Failed to prepare a state snapshot: %m");
	return 0;
}

/* Any process may replicate the cluster state. */
static const struct msg_route sync_routes[] = {
	{ PROTO_MSG_HELLO, 0, on_hello },
	{ PROTO_MSG_SNAPSHOT_REQUEST, 0, on_snapshot_request },
};

static int on_sync_readable(struct sock *s, void *userdata)
{
	struct publisher *p = userdata;
	uint64_t dropped = p->sync_dispatch.n_dropped;
	int r = msg_dispatch(&p->sync_dispatch, s, p);

	p->stats.bad_requests += p->sync_dispatch.n_dropped - dropped;
	return r;
}

static int on_heartbeat(struct loop *loop, void *userdata)
{
	struct publisher *p = userdata;
	struct proto_msg m = { .env.type = PROTO_MSG_HEARTBEAT };

	(void)loop;
	m.env.seq = p->store.seq;
	m.body.heartbeat.state_seq = p->store.seq;
	/* Best effort: a lost heartbeat is replaced by the next one. */
	(void)msg_send(&p->io, p->pub, &m, ZMQ_DONTWAIT);
	return 0;
}

int publisher_new(struct publisher **ret, struct sock_ctx *ctx, struct loop *loop,
		  const char *pub_endpoint, const char *sync_endpoint)
{
	struct publisher *p = calloc(1, sizeof(*p));
	int one = 1, r;

	if (!p)
		return -ENOMEM;
	p->loop = loop;
	state_store_init(&p->store);
	p->store.seq = clock_realtime_usec();
	p->sync_dispatch = (struct msg_dispatch){ .socket = ENDPOINT_STATE_SYNC, .routes = sync_routes,
						  .n_routes = ARRAY_SIZE(sync_routes), .io = &p->io };
	/* An XPUB, so that each replica that subscribes is greeted. */
	if ((r = msg_io_init(&p->io, PROTO_PROCESS_WATCHER, 0)) < 0 ||
	    (r = sock_new(&p->pub, ctx, ZMQ_XPUB, ENDPOINT_STATE_PUB)) < 0 ||
	    (r = msg_hello_on_connect(&p->io, p->pub, 0)) < 0 ||
	    (r = sock_new(&p->sync, ctx, ZMQ_ROUTER, ENDPOINT_STATE_SYNC)) < 0)
		goto fail;
	/* Report unroutable replies instead of dropping them silently. */
	zmq_setsockopt(sock_zsock(p->sync), ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
	/* Snapshot items wait in the store, not in this socket's queue. */
	zmq_setsockopt(sock_zsock(p->sync), ZMQ_SNDHWM, &(int){ PUBLISH_SYNC_SNDHWM }, sizeof(int));
	if ((r = sock_admit(p->pub, ENDPOINT_STATE_PEERS)) < 0 ||
	    (r = sock_admit(p->sync, ENDPOINT_STATE_PEERS)) < 0 ||
	    (r = sock_bind(p->pub, pub_endpoint)) < 0 || (r = sock_bind(p->sync, sync_endpoint)) < 0 ||
	    (r = sock_watch(p->sync, on_sync_readable, p)) < 0 ||
	    (r = loop_add_periodic(loop, "state-heartbeat", PUBLISH_HEARTBEAT_USEC, on_heartbeat, p)) < 0)
		goto fail;
	*ret = p;
	return 0;
fail:
	publisher_free(p);
	return r;
}

void publisher_count_drops(struct publisher *p, struct metrics_counter *dropped)
{
	p->sync_dispatch.dropped = dropped;
}

struct publisher *publisher_free(struct publisher *p)
{
	if (!p)
		return NULL;
	loop_remove_periodic(p->loop, "state-heartbeat");
	sd_event_source_disable_unref(p->slice_timer);
	drop_held(p);
	while (p->jobs) {
		struct snapshot_job *j = p->jobs;
		p->jobs = j->next;
		job_free(j);
	}
	sock_free(p->pub);
	sock_free(p->sync);
	msg_io_done(&p->io);
	state_store_done(&p->store);
	free(p);
	return NULL;
}

int publisher_apply(struct publisher *p, enum proto_delta_op op, const struct proto_object *obj)
{
	uint64_t seq = p->store.seq + 1;
	struct proto_msg m = { .env.type = PROTO_MSG_STATE_DELTA };
	char key[STATE_KEY_MAX];
	int r;

	m.env.seq = seq;
	m.body.state_delta.seq = seq;
	m.body.state_delta.op = (uint8_t)op;
	m.body.state_delta.object = *obj;
	/* Encode first: what cannot go on the wire must not enter the store,
	 * or every snapshot would stop at it and no replica would sync. */
	r = msg_encode(&p->io, &m);
	if (r < 0) {
		if (state_key(obj, key, sizeof(key)) < 0)
			snprintf(key, sizeof(key), "%s", proto_object_kind_name(obj->kind));
		log_error("Failed to publish %s: %s", key, p->io.last_error.text);
		return r;
	}
	r = state_store_apply(&p->store, op, obj, seq);
	if (r <= 0)
		return r;
	p->stats.deltas++;
	if (!p->complete)
		return 1; /* no replica holds a snapshot to apply it to yet */
	/* A PUB never blocks; a slow replica drops and resyncs on the gap. */
	r = msg_send_encoded(&p->io, p->pub, ZMQ_DONTWAIT);
	if (r < 0 && r != -EAGAIN)
		return log_error_errno(r, "Failed to publish state delta %" PRIu64 ": %m", seq);
	return 1;
}

int publisher_delete(struct publisher *p, const char *key)
{
	const struct state_entry *e = state_store_get_key(&p->store, key);

	/* The delta is encoded from the entry before the store drops it. */
	return e ? publisher_apply(p, PROTO_DELTA_DELETE, &e->obj) : 0;
}

int publisher_set_complete(struct publisher *p)
{
	struct held_request *h;
	int r = 0;

	if (p->complete)
		return 0;
	p->complete = true;
	log_debug("answering %zu held state snapshot request(s) as of seq %" PRIu64, p->n_held,
		  p->store.seq);
	for (h = p->held; h && r >= 0; h = h->next)
		r = snapshot_start(p, h->identity, h->identity_len);
	drop_held(p);
	return r;
}

bool publisher_complete(const struct publisher *p)
{
	return p->complete;
}

struct state_store *publisher_store(struct publisher *p)
{
	return &p->store;
}

uint64_t publisher_seq(const struct publisher *p)
{
	return p->store.seq;
}

void publisher_get_stats(const struct publisher *p, struct publisher_stats *ret)
{
	*ret = p->stats;
}
