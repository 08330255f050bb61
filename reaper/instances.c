/*
 * Terminating instances, batched as Karpenter's cloud provider batches
 * TerminateInstances: ids collect until no new one came for 100 ms, or 1 s
 * after the first, or 500 are waiting; one call takes them all. The
 * answer's currentState says whether each is on its way out
 * (shutting-down, terminated); an instance EC2 does not know any more
 * (InvalidInstanceID.NotFound) is gone too. Anything else is asked again
 * later, with backoff. Asking again is harmless: EC2 answers a terminated
 * instance with its state, and no instance is terminated twice.
 *
 * Called by termination.c once a drain is done; owns the batch and the
 * per-instance record in reaper->instances.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "reaper/reaper.h"

#define TERMINATE_BATCH_IDLE_USEC (100ULL * 1000)
#define TERMINATE_BATCH_MAX_USEC (1000ULL * 1000)
#define TERMINATE_BATCH_MAX_IDS 500
/* An instance not yet on its way out is asked again after this, doubling. */
#define TERMINATE_RETRY_BASE_USEC (2ULL * 1000 * 1000)
#define TERMINATE_RETRY_CAP_USEC (60ULL * 1000 * 1000)

struct instance {
	char id[32];
	enum instance_state state;
	bool queued, alone; /* alone: sent on its own (a batch was refused) */
	uint64_t next_try_usec, backoff_usec;
};

/* A call whose answer has not come; freed at teardown if it never does
 * (aws_client_free() cancels calls without calling back). */
struct terminate_call {
	struct reaper *r;
	struct terminate_call *next;
	unsigned n;
	char ids[][32];
};

struct instance_batch {
	char ids[TERMINATE_BATCH_MAX_IDS][32];
	unsigned n;
	uint64_t first_usec;
	sd_event_source *timer;
	struct terminate_call *calls;
};

static void call_unlink(struct instance_batch *b, struct terminate_call *call)
{
	for (struct terminate_call **p = &b->calls; *p; p = &(*p)->next)
		if (*p == call) {
			*p = call->next;
			return;
		}
}

static void instance_retry_later(struct instance *in, uint64_t now_usec)
{
	in->backoff_usec = in->backoff_usec ? in->backoff_usec * 2 : TERMINATE_RETRY_BASE_USEC;
	if (in->backoff_usec > TERMINATE_RETRY_CAP_USEC)
		in->backoff_usec = TERMINATE_RETRY_CAP_USEC;
	in->next_try_usec = now_usec + in->backoff_usec;
}

static void instance_gone(struct reaper *r, struct instance *in, const char *state)
{
	if (in->state != INSTANCE_GONE) {
		log_info_kv(LOG_KV({ "instance", in->id }), "terminated instance %s (%s)", in->id, state);
		metrics_counter_add(r->m.instances_terminated, 1, NULL);
	}
	in->state = INSTANCE_GONE;
}

static void on_terminated(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct terminate_call *call = userdata;
	struct reaper *r = call->r;
	uint64_t now = clock_monotonic_usec();

	(void)c;
	call_unlink(r->batch, call);
	for (unsigned i = 0; i < call->n; i++) {
		struct instance *in = hashmap_get(&r->instances, call->ids[i]);
		const struct aws_xml_node *item;
		const char *state = NULL;

		if (!in)
			continue; /* forgotten meanwhile */
		in->queued = false;
		if (resp->result < 0) {
			if (streq(resp->error.code, "InvalidInstanceID.NotFound") && call->n == 1) {
				instance_gone(r, in, "not found");
				continue;
			}
			/* One unknown id fails the whole call: ask for each alone. */
			if (streq(resp->error.code, "InvalidInstanceID.NotFound") ||
			    streq(resp->error.code, "InvalidInstanceID.Malformed")) {
				in->alone = true;
				in->next_try_usec = now;
				continue;
			}
			log_warn_kv(LOG_KV({ "instance", in->id }),
				    "Failed to terminate instance %s: %s; retrying", in->id,
				    aws_response_strerror(resp));
			instance_retry_later(in, now);
			continue;
		}
		for (item = aws_xml_first(aws_xml_find(resp->xml, "instancesSet"), "item"); item;
		     item = aws_xml_next(item))
			if (streq_ptr(aws_xml_text(item, "instanceId"), in->id))
				state = aws_xml_text(item, "currentState/name");
		if (streq_ptr(state, "shutting-down") || streq_ptr(state, "terminated"))
			instance_gone(r, in, state);
		else
			instance_retry_later(in, now); /* stopping, or not in the answer */
	}
	free(call);
}

static void batch_send(struct reaper *r)
{
	struct instance_batch *b = r->batch;
	struct terminate_call *call;
	struct aws_query *q = NULL;
	int k;

	sd_event_source_disable_unref(b->timer);
	b->timer = NULL;
	if (!b->n)
		return;
	call = malloc(sizeof(*call) + b->n * sizeof(call->ids[0]));
	if (!call)
		goto fail;
	call->r = r;
	call->n = b->n;
	memcpy(call->ids, b->ids, b->n * sizeof(b->ids[0]));
	k = aws_query_new("TerminateInstances", "2016-11-15", &q);
	for (unsigned i = 0; k >= 0 && i < b->n; i++)
		k = aws_query_add(q, b->ids[i], "InstanceId.%u", i + 1);
	if (k >= 0) {
		call->next = b->calls;
		b->calls = call;
		k = aws_call_query(r->aws, "ec2", q, on_terminated, call);
		q = NULL;
	}
	aws_query_free(q);
	if (k >= 0) {
		log_debug("TerminateInstances for %u instance(s)", b->n);
		b->n = 0;
		return;
	}
	call_unlink(b, call);
	free(call);
fail:
	/* Every id goes back to waiting; the next pass asks again. */
	log_error("Failed to send TerminateInstances for %u instance(s): out of memory", b->n);
	for (unsigned i = 0; i < b->n; i++) {
		struct instance *in = hashmap_get(&r->instances, b->ids[i]);
		if (in) {
			in->queued = false;
			instance_retry_later(in, clock_monotonic_usec());
		}
	}
	b->n = 0;
}

static int on_batch_timer(struct loop *loop, void *userdata)
{
	struct reaper *r = userdata;

	(void)loop;
	batch_send(r); /* drops our reference to this timer (loop.h) */
	return 0;
}

static void batch_add(struct reaper *r, struct instance *in, uint64_t now_usec)
{
	struct instance_batch *b = r->batch;
	uint64_t due;

	if (in->alone && b->n)
		batch_send(r); /* it goes out on its own */
	memcpy(b->ids[b->n++], in->id, sizeof(in->id));
	in->queued = true;
	if (b->n == 1)
		b->first_usec = now_usec;
	if (b->n == TERMINATE_BATCH_MAX_IDS || in->alone) {
		batch_send(r);
		return;
	}
	due = MIN(b->first_usec + TERMINATE_BATCH_MAX_USEC, now_usec + TERMINATE_BATCH_IDLE_USEC);
	sd_event_source_disable_unref(b->timer);
	b->timer = NULL;
	if (loop_add_timer(r->d->loop, due > now_usec ? due - now_usec : 0, on_batch_timer, r,
			   &b->timer) < 0)
		batch_send(r);
}

enum instance_state instance_terminate(struct reaper *r, const char *instance_id,
				       uint64_t now_usec)
{
	struct instance *in = hashmap_get(&r->instances, instance_id);

	if (!in) {
		if (strlen(instance_id) >= sizeof(in->id) || !(in = calloc(1, sizeof(*in))))
			return INSTANCE_UNKNOWN;
		snprintf(in->id, sizeof(in->id), "%s", instance_id);
		if (hashmap_put(&r->instances, in->id, in, NULL) < 0) {
			free(in);
			return INSTANCE_UNKNOWN;
		}
	}
	if (in->state == INSTANCE_GONE || in->queued || now_usec < in->next_try_usec)
		return in->state;
	if (!r->aws_ok)
		return in->state; /* the credentials are not proven yet */
	in->state = INSTANCE_ASKED;
	batch_add(r, in, now_usec);
	return in->state;
}

void instance_forget(struct reaper *r, const char *instance_id)
{
	struct instance *in = hashmap_get(&r->instances, instance_id);

	if (!in || in->queued)
		return; /* a queued one is forgotten once its answer came */
	hashmap_remove(&r->instances, instance_id);
	free(in);
}

int instances_init(struct reaper *r)
{
	r->batch = calloc(1, sizeof(*r->batch));
	return r->batch ? 0 : -ENOMEM;
}

void instances_done(struct reaper *r)
{
	size_t it = 0;
	void *v;

	if (r->batch) {
		sd_event_source_disable_unref(r->batch->timer);
		while (r->batch->calls) {
			struct terminate_call *call = r->batch->calls;
			r->batch->calls = call->next;
			free(call);
		}
	}
	free(r->batch);
	r->batch = NULL;
	while (hashmap_next(&r->instances, &it, NULL, &v))
		free(v);
	hashmap_done(&r->instances);
}
