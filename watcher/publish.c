/*
 * State publisher (see publish.h). A snapshot is encoded in full when it is
 * asked for — a consistent picture as of one seq — and then streamed in
 * slices from that copy, so the store can keep changing meanwhile; deltas
 * after the snapshot's seq are full objects, so a replica that applies one
 * it already has from the snapshot changes nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "watcher/publish.h"

struct snapshot_job {
	struct snapshot_job *next;
	void *identity;
	size_t identity_len;
	struct iovec *frames; /* encoded items, then the end marker */
	size_t n_frames, sent;
};

struct publisher {
	struct loop *loop;
	struct state_store store;
	struct sock *pub, *sync;
	struct msg_io io;
	struct snapshot_job *jobs;
	sd_event_source *slice_timer;
	struct publisher_stats stats;
};

static uint64_t now_usec_realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void job_free(struct snapshot_job *j)
{
	for (size_t i = 0; i < j->n_frames; i++)
		free(j->frames[i].iov_base);
	free(j->frames);
	free(j->identity);
	free(j);
}

static int job_add_frame(struct publisher *p, struct snapshot_job *j, struct proto_msg *m)
{
	struct timespec ts;
	void *copy;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	m->env.sender = PROTO_PROCESS_WATCHER;
	m->env.send_time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	msgpack_sbuffer_clear(&p->io.buf);
	r = proto_encode(m, &p->io.buf, &p->io.last_error);
	if (r < 0)
		return r;
	copy = malloc(p->io.buf.size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, p->io.buf.data, p->io.buf.size);
	j->frames[j->n_frames++] = (struct iovec){ copy, p->io.buf.size };
	return 0;
}

static int on_slice(struct loop *loop, void *userdata);

static int schedule_slice(struct publisher *p)
{
	if (p->slice_timer)
		return 0;
	return loop_add_timer(p->loop, 0, on_slice, p, &p->slice_timer);
}

/* Sends up to one slice of every pending snapshot. */
static int on_slice(struct loop *loop, void *userdata)
{
	struct publisher *p = userdata;
	struct snapshot_job **jp = &p->jobs;

	(void)loop;
	p->slice_timer = sd_event_source_disable_unref(p->slice_timer);
	while (*jp) {
		struct snapshot_job *j = *jp;
		size_t end = MIN(j->n_frames, j->sent + PUBLISH_SNAPSHOT_SLICE);
		bool drop = false;

		for (; j->sent < end; j->sent++) {
			struct iovec f[2] = { { j->identity, j->identity_len }, j->frames[j->sent] };
			int r = sock_send_frames(p->sync, f, 2, ZMQ_DONTWAIT);
			if (r == -EAGAIN)
				break; /* peer's queue is full: try again next turn */
			if (r < 0) {
				/* EHOSTUNREACH: the replica went away. */
				drop = true;
				break;
			}
		}
		if (drop || j->sent == j->n_frames) {
			*jp = j->next;
			job_free(j);
		} else {
			jp = &j->next;
		}
	}
	return p->jobs ? schedule_slice(p) : 0;
}

static int snapshot_start(struct publisher *p, const void *identity, size_t identity_len)
{
	struct snapshot_job *j = calloc(1, sizeof(*j));
	const struct state_entry *e;
	struct proto_msg m;
	size_t iter = 0, total = p->store.objects.n;
	int r = -ENOMEM;

	if (!j)
		return -ENOMEM;
	j->identity = malloc(identity_len);
	j->frames = calloc(total + 1, sizeof(*j->frames));
	if (!j->identity || !j->frames)
		goto fail;
	memcpy(j->identity, identity, identity_len);
	j->identity_len = identity_len;
	while ((e = state_store_next(&p->store, &iter))) {
		m = (struct proto_msg){ .env.type = PROTO_MSG_SNAPSHOT_ITEM };
		m.body.snapshot_item.seq = e->seq;
		m.body.snapshot_item.object = e->obj;
		if ((r = job_add_frame(p, j, &m)) < 0)
			goto fail;
	}
	m = (struct proto_msg){ .env.type = PROTO_MSG_SNAPSHOT_END };
	m.body.snapshot_end.as_of_seq = p->store.seq;
	m.body.snapshot_end.n_items = total;
	if ((r = job_add_frame(p, j, &m)) < 0)
		goto fail;
	j->next = p->jobs;
	p->jobs = j;
	p->stats.snapshots++;
	p->stats.snapshot_items += total;
	log_debug("sending a snapshot of %zu object(s) as of seq %" PRIu64, total, p->store.seq);
	return schedule_slice(p);
fail:
	job_free(j);
	return r;
}

static int on_sync_readable(struct sock *s, void *userdata)
{
	struct publisher *p = userdata;
	const struct proto_msg *m;
	struct sock_msg msg;
	int r;

	r = sock_recv(s, &msg, ZMQ_DONTWAIT);
	if (r < 0)
		return r == -EAGAIN ? 0 : r;
	if (msg.n_frames < 2) {
		p->stats.bad_requests++;
		sock_msg_close(&msg);
		return 0;
	}
	r = msg_decode(&p->io, &msg, &m);
	if (r < 0 || m->env.type != PROTO_MSG_SNAPSHOT_REQUEST) {
		p->stats.bad_requests++;
		log_warn("Failed to serve a state.sync request: %s",
			 r < 0 ? p->io.last_error.text : "not a snapshot_request");
		sock_msg_close(&msg);
		return 0;
	}
	r = snapshot_start(p, sock_msg_data(&msg, 0), sock_msg_size(&msg, 0));
	sock_msg_close(&msg);
	if (r < 0)
		return log_error_errno(r, "Failed to prepare a state snapshot: %m");
	return 0;
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
	p->store.seq = now_usec_realtime();
	if ((r = msg_io_init(&p->io, PROTO_PROCESS_WATCHER, 0)) < 0 ||
	    (r = sock_new(&p->pub, ctx, ZMQ_PUB, STATE_PUB_SOCKET)) < 0 ||
	    (r = sock_new(&p->sync, ctx, ZMQ_ROUTER, STATE_SYNC_SOCKET)) < 0)
		goto fail;
	/* Report unroutable replies instead of dropping them silently. */
	zmq_setsockopt(sock_zsock(p->sync), ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
	if ((r = sock_bind(p->pub, pub_endpoint)) < 0 || (r = sock_bind(p->sync, sync_endpoint)) < 0 ||
	    (r = sock_watch(p->sync, on_sync_readable, p)) < 0 ||
	    (r = loop_add_periodic(loop, "state-heartbeat", PUBLISH_HEARTBEAT_USEC, on_heartbeat, p)) < 0)
		goto fail;
	*ret = p;
	return 0;
fail:
	publisher_free(p);
	return r;
}

struct publisher *publisher_free(struct publisher *p)
{
	if (!p)
		return NULL;
	loop_remove_periodic(p->loop, "state-heartbeat");
	sd_event_source_disable_unref(p->slice_timer);
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
	int r;

	r = state_store_apply(&p->store, op, obj, seq);
	if (r <= 0)
		return r;
	m.env.seq = seq;
	m.body.state_delta.seq = seq;
	m.body.state_delta.op = (uint8_t)op;
	m.body.state_delta.object = *obj;
	p->stats.deltas++;
	/* A PUB never blocks; a slow replica drops and resyncs on the gap. */
	r = msg_send(&p->io, p->pub, &m, ZMQ_DONTWAIT);
	if (r < 0 && r != -EAGAIN)
		return log_error_errno(r, "Failed to publish state delta %" PRIu64 ": %m", seq);
	return 1;
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
