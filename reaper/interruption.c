/*
 * The interruption queue (--interruption-queue NAME, Karpenter's
 * INTERRUPTION_QUEUE), read as Karpenter's interruption controller reads
 * it (aws/karpenter-provider-aws pkg/controllers/interruption/controller.go
 * and utils.go, pkg/providers/sqs/sqs.go):
 *  - GetQueueUrl by name once; then ReceiveMessage over and over, up to 10
 *    messages, hidden for 20 s, long-polling 20 s (SQS's maximum);
 *  - each body is parsed (interruption-message.c); a malformed one is
 *    logged, counted and deleted — it would fail the same way again;
 *  - each instance a message names leads to the NodeClaim whose providerID
 *    names it (none of ours: a debug line, as Karpenter skips it); its
 *    NodeClaim and Node get the kind's Event; for the CordonAndDrain kinds
 *    a NodeClaim not yet deleting is deleted — termination.c then taints it
 *    karpenter.sh/disrupted, drains it through the Eviction API and
 *    terminates the instance, while the evicted pods go pending and the
 *    scheduler and launcher replace their capacity — and gets
 *    TerminatingOnInterruption;
 *  - the message is deleted once every NodeClaim DELETE was accepted (or
 *    found the NodeClaim gone); a refused one leaves it on the queue, which
 *    shows it again after the visibility timeout (acting twice is
 *    harmless: a deleting NodeClaim is left alone);
 *  - the next receive starts when the whole batch is settled (Karpenter's
 *    reconcile handles one batch, then requeues at once).
 * Not followed: Karpenter also marks an interrupted spot offering
 * unavailable in its ICE cache; the unavailable offerings are the
 * launcher's to publish, so a replacement may choose the same offering.
 *
 * Runs on the leader only (the skeleton calls reaper_work_start, which
 * makes the AWS client, only while leading), and only while the replica is
 * in sync: the NodeClaims are looked up in it. A long poll in flight at
 * SIGTERM is cancelled by aws_client_free() and calls nothing back; the
 * unsettled batch is freed here after it. Called by daemon.c.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/kube-events.h"
#include "common/log.h"
#include "proto/karpenter.h"
#include "reaper/interruption-message.h"
#include "reaper/reaper.h"

#define SQS_API_VERSION "2012-11-05"
/* Karpenter's ReceiveMessage: 10 messages (SQS's maximum per call), hidden
 * 20 s while they are handled, 20 s long poll (SQS's maximum; the AWS
 * client's AWS_CLIENT_TIMEOUT_MS of 30 s leaves room for it). */
#define RECEIVE_MAX_MESSAGES 10
#define RECEIVE_VISIBILITY_SEC 20
#define RECEIVE_WAIT_SEC 20
/* A failed GetQueueUrl or ReceiveMessage (the client retried already) is
 * tried again after this, doubling: a missing queue or a denied policy is
 * not hammered, and a fixed one is picked up within a minute. */
#define RETRY_BASE_USEC (1ULL * 1000 * 1000)
#define RETRY_CAP_USEC (60ULL * 1000 * 1000)
/* Replica not in sync (start-up, a resync): look again this soon. */
#define SYNC_WAIT_USEC (500ULL * 1000)

struct sqs_message;

/* One NodeClaim DELETE a message asked for (its answer's userdata). */
struct claim_delete {
	struct sqs_message *msg;
	char *nodeclaim, *uid, *nodepool, *node, *node_uid;
};

/* A received message until it is deleted or left on the queue. */
struct sqs_message {
	struct interruption *in;
	struct sqs_message *next;
	char *message_id, *receipt;
	struct interruption_message ev;
	struct claim_delete *deletes;
	unsigned n_deletes, waiting;
	bool refused;
};

struct interruption {
	struct reaper *r;
	char *queue_name, *queue_url;
	sd_event_source *timer;
	uint64_t backoff_usec;
	struct sqs_message *batch; /* received and not settled yet */
	bool taking;               /* a receive's messages are being taken */
	struct metrics_counter *received, *deleted, *malformed;
	struct metrics_histogram *queue_seconds;
};

static void receive(struct interruption *in);
static void get_queue_url(struct interruption *in);

/* ---- lifetime ---------------------------------------------------------------- */

int interruption_new(struct reaper *r, struct metrics_registry *m)
{
	/* Karpenter's metrics.DurationBuckets() span the same range. */
	static const double buckets[] = { 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600 };
	struct interruption *in = calloc(1, sizeof(*in));
	int k;

	if (!in)
		return -ENOMEM;
	in->r = r;
	r->interruption = in;
	if ((k = metrics_counter_new(m, &in->received, "karpenter_interruption_received_messages_total",
				     "Count of messages received from the SQS queue. Broken down by "
				     "message type.", "message_type", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &in->deleted, "karpenter_interruption_deleted_messages_total",
				     "Count of messages deleted from the SQS queue.", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &in->malformed, "kanna_reaper_interruption_malformed_messages_total",
				     "Messages of the interruption queue that were not EventBridge "
				     "events the reaper could read (logged and deleted).", NULL)) < 0 ||
	    (k = metrics_histogram_new(m, &in->queue_seconds,
				       "karpenter_interruption_message_queue_duration_seconds",
				       "Amount of time an interruption message is on the queue before "
				       "it is processed by karpenter.", buckets, ARRAY_SIZE(buckets),
				       NULL)) < 0)
		return k;
	return 0;
}

static void message_free(struct sqs_message *m)
{
	for (unsigned i = 0; i < m->n_deletes; i++) {
		struct claim_delete *d = &m->deletes[i];
		free(d->nodeclaim);
		free(d->uid);
		free(d->nodepool);
		free(d->node);
		free(d->node_uid);
	}
	free(m->deletes);
	interruption_message_done(&m->ev);
	free(m->message_id);
	free(m->receipt);
	free(m);
}

void interruption_free(struct reaper *r)
{
	struct interruption *in = r->interruption;

	if (!in)
		return;
	sd_event_source_disable_unref(in->timer);
	while (in->batch) {
		struct sqs_message *m = in->batch;
		in->batch = m->next;
		message_free(m);
	}
	free(in->queue_name);
	free(in->queue_url);
	free(in);
	r->interruption = NULL;
}

/* ---- scheduling -------------------------------------------------------------- */

static int on_timer(struct loop *loop, void *userdata)
{
	struct interruption *in = userdata;

	(void)loop;
	sd_event_source_disable_unref(in->timer);
	in->timer = NULL;
	if (!in->queue_url)
		get_queue_url(in);
	else
		receive(in);
	return 0;
}

static void later(struct interruption *in, uint64_t delay_usec)
{
	sd_event_source_disable_unref(in->timer);
	in->timer = NULL;
	if (loop_add_timer(in->r->d->loop, delay_usec, on_timer, in, &in->timer) < 0)
		log_error("Failed to schedule the next read of interruption queue %s: out of memory",
			  in->queue_name);
}

static void retry_later(struct interruption *in)
{
	in->backoff_usec = in->backoff_usec ? MIN(in->backoff_usec * 2, RETRY_CAP_USEC) : RETRY_BASE_USEC;
	later(in, in->backoff_usec);
}

/* The batch is settled when every message was deleted or left. */
static void message_settled(struct sqs_message *m)
{
	struct interruption *in = m->in;

	for (struct sqs_message **p = &in->batch; *p; p = &(*p)->next)
		if (*p == m) {
			*p = m->next;
			break;
		}
	message_free(m);
	if (!in->batch && !in->taking)
		later(in, 0);
}

/* ---- SQS calls --------------------------------------------------------------- */

static void on_queue_url(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct interruption *in = userdata;
	const char *url = resp->result < 0 ? NULL : aws_xml_text(resp->xml, "GetQueueUrlResult/QueueUrl");

	(void)c;
	if (!url || !*url) {
		log_error("Failed to find interruption queue %s: %s; trying again", in->queue_name,
			  resp->result < 0 ? aws_response_strerror(resp) : "no QueueUrl in the answer");
		retry_later(in);
		return;
	}
	if (!(in->queue_url = strdup(url))) {
		retry_later(in);
		return;
	}
	in->backoff_usec = 0;
	log_info_kv(LOG_KV({ "queue", in->queue_name }), "watching interruption queue %s (%s)",
		    in->queue_name, in->queue_url);
	receive(in);
}

static void get_queue_url(struct interruption *in)
{
	struct aws_query *q = NULL;
	int k;

	if ((k = aws_query_new("GetQueueUrl", SQS_API_VERSION, &q)) >= 0 &&
	    (k = aws_query_add(q, in->queue_name, "QueueName")) >= 0) {
		k = aws_call_query(in->r->aws, "sqs", q, on_queue_url, in);
		q = NULL;
	}
	aws_query_free(q);
	if (k < 0) {
		log_error("Failed to ask for interruption queue %s: %s", in->queue_name, strerror(-k));
		retry_later(in);
	}
}

static void on_message_deleted(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct sqs_message *m = userdata;

	(void)c;
	if (resp->result < 0)
		log_warn_kv(LOG_KV({ "queue", m->in->queue_name }, { "message", m->message_id }),
			    "Failed to delete interruption message %s: %s; it is handled again once "
			    "SQS shows it again", m->message_id, aws_response_strerror(resp));
	else
		metrics_counter_add(m->in->deleted, 1, NULL);
	message_settled(m);
}

static void delete_message(struct sqs_message *m)
{
	struct interruption *in = m->in;
	struct aws_query *q = NULL;
	int k;

	if ((k = aws_query_new("DeleteMessage", SQS_API_VERSION, &q)) >= 0 &&
	    (k = aws_query_add(q, in->queue_url, "QueueUrl")) >= 0 &&
	    (k = aws_query_add(q, m->receipt, "ReceiptHandle")) >= 0) {
		k = aws_call_query(in->r->aws, "sqs", q, on_message_deleted, m);
		q = NULL;
	}
	aws_query_free(q);
	if (k < 0) {
		log_error("Failed to delete interruption message %s: %s", m->message_id, strerror(-k));
		message_settled(m);
	}
}

/* ---- handling ---------------------------------------------------------------- */

/* Every DELETE answered: delete the message, or leave it when one failed. */
static void message_handled(struct sqs_message *m)
{
	if (m->refused) {
		log_warn_kv(LOG_KV({ "queue", m->in->queue_name }, { "message", m->message_id }),
			    "Failed to handle interruption message %s: leaving it on the queue for "
			    "another try", m->message_id);
		message_settled(m);
		return;
	}
	if (m->ev.time_s > 0)
		metrics_histogram_observe(m->in->queue_seconds,
					  (double)(clock_realtime_ms() - m->ev.time_s * 1000) / 1000.0, NULL);
	delete_message(m);
}

static void record(struct reaper *r, const char *api_version, const char *kind, const char *name,
		   const char *uid, bool warning, const char *reason, const char *message)
{
	struct kube_object_ref ref = { api_version, kind, NULL, name, uid };

	kube_event_record(r->d->events, &ref, warning ? KUBE_EVENT_WARNING : KUBE_EVENT_NORMAL, reason,
			  "%s", message);
}

static void on_claim_deleted(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct claim_delete *d = userdata;
	struct sqs_message *m = d->msg;
	struct reaper *r = m->in->r;
	const char *kind = interruption_kind_name(m->ev.kind);

	(void)c;
	if (resp->status == 404) {
		/* Gone already: nothing to initiate (Karpenter ignores NotFound). */
		log_debug_kv(LOG_KV({ "nodeclaim", d->nodeclaim }),
			     "nodeclaim %s of interruption message %s is gone already", d->nodeclaim,
			     m->message_id);
	} else if (resp->status >= 200 && resp->status < 300) {
		/* Karpenter's deleteNodeClaim: log, Event, disrupted counter. */
		log_info_kv(LOG_KV({ "nodeclaim", d->nodeclaim }, { "node", d->node ?: "-" },
				   { "messageKind", kind }, { "action", "CordonAndDrain" }),
			    "initiating delete from interruption message: nodeclaim %s (node %s), %s",
			    d->nodeclaim, d->node ?: "-", kind);
		record(r, "karpenter.sh/v1", "NodeClaim", d->nodeclaim, d->uid, true,
		       "TerminatingOnInterruption", "Interruption triggered termination for the NodeClaim");
		if (d->node)
			record(r, "v1", "Node", d->node, d->node_uid, true, "TerminatingOnInterruption",
			       "Interruption triggered termination for the Node");
		metrics_counter_add(r->m.disrupted, 1, d->nodepool ?: "", kind, NULL);
	} else {
		log_warn_kv(LOG_KV({ "nodeclaim", d->nodeclaim }, { "message", m->message_id }),
			    "Failed to delete nodeclaim %s for interruption message %s: HTTP %ld: %s",
			    d->nodeclaim, m->message_id, resp->status, resp->error ?: "no reason given");
		m->refused = true;
	}
	if (--m->waiting == 0)
		message_handled(m);
}

static const struct proto_nodeclaim *claim_of_instance(struct reaper *r, const char *instance_id)
{
	const struct state_entry *e;
	size_t it = 0;

	while ((e = state_store_next(reaper_store(r), &it)))
		if (e->obj.kind == PROTO_OBJECT_NODECLAIM &&
		    streq_ptr(provider_instance_id(e->obj.nodeclaim->provider_id), instance_id))
			return e->obj.nodeclaim;
	return NULL;
}

static const struct proto_node *node_of_claim(struct reaper *r, const struct proto_nodeclaim *nc)
{
	const struct state_entry *e;

	if (!nc->node_name || !*nc->node_name)
		return NULL;
	e = state_store_get(reaper_store(r), PROTO_OBJECT_NODE, "", nc->node_name);
	return e ? e->obj.node : NULL;
}

/* Sends the DELETE for nc; the answer settles it (on_claim_deleted). */
static int delete_claim(struct sqs_message *m, const struct proto_nodeclaim *nc,
			const struct proto_node *node)
{
	struct claim_delete *d = &m->deletes[m->n_deletes];
	char path[512];

	*d = (struct claim_delete){ .msg = m };
	m->n_deletes++; /* freed with the message from here on */
	if (!(d->nodeclaim = strdup(nc->name)) || !(d->uid = strdup(nc->uid ?: "")) ||
	    (nc->nodepool && !(d->nodepool = strdup(nc->nodepool))) ||
	    (node && (!(d->node = strdup(node->name)) || !(d->node_uid = strdup(node->uid ?: "")))))
		return -ENOMEM;
	snprintf(path, sizeof(path), KARPENTER_NODECLAIMS_PATH "/%s", nc->name);
	if (kube_request(m->in->r->d->kube, "DELETE", path, NULL, NULL, on_claim_deleted, d) < 0)
		return -ENOMEM;
	m->waiting++;
	return 0;
}

/* Karpenter's handleMessage + handleNodeClaim for one parsed message. */
static void handle(struct sqs_message *m)
{
	struct reaper *r = m->in->r;
	const char *kind = interruption_kind_name(m->ev.kind);
	struct interruption_notice notice = interruption_notice_for(m->ev.kind);
	bool drain = interruption_action_for(m->ev.kind) == INTERRUPTION_CORDON_AND_DRAIN;

	if (!(m->deletes = calloc(m->ev.n_instance_ids ?: 1, sizeof(*m->deletes)))) {
		m->refused = true;
		goto done;
	}
	for (size_t i = 0; i < m->ev.n_instance_ids; i++) {
		const char *id = m->ev.instance_ids[i];
		const struct proto_nodeclaim *nc = claim_of_instance(r, id);
		const struct proto_node *node;

		if (!nc) {
			log_debug_kv(LOG_KV({ "instance", id }, { "messageKind", kind }),
				     "interruption message %s (%s) names instance %s: no nodeclaim of ours",
				     m->message_id, kind, id);
			continue;
		}
		node = node_of_claim(r, nc);
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "node", node ? node->name : "-" },
				   { "instance", id }, { "messageKind", kind },
				   { "action", drain ? "CordonAndDrain" : "NoAction" }),
			    "received interruption message %s: %s for instance %s, nodeclaim %s (node %s), "
			    "action %s", m->message_id, kind, id, nc->name, node ? node->name : "-",
			    drain ? "CordonAndDrain" : "NoAction");
		record(r, "karpenter.sh/v1", "NodeClaim", nc->name, nc->uid, notice.warning, notice.reason,
		       notice.message);
		if (node)
			record(r, "v1", "Node", node->name, node->uid, notice.warning, notice.reason,
			       notice.message);
		if (!drain || nc->deletion_time)
			continue; /* an Event only, or being deleted already */
		if (delete_claim(m, nc, node) < 0) {
			log_error("Failed to delete nodeclaim %s for interruption message %s: out of memory",
				  nc->name, m->message_id);
			m->refused = true;
		}
	}
done:
	if (m->waiting == 0)
		message_handled(m);
}

/* ---- receiving ----------------------------------------------------------------- */

/* SQS's MD5OfBody, as the AWS SDKs check it: a body that does not match
 * was damaged on the way and stays on the queue. */
static bool body_md5_ok(const char *body, const char *md5_hex)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];

	if (!md5_hex)
		return true; /* not every SQS-compatible queue sends it */
	if (EVP_Digest(body, strlen(body), md, &len, EVP_md5(), NULL) != 1)
		return false;
	for (unsigned i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return !strcasecmp(hex, md5_hex);
}

/* One received message: malformed ones are deleted at once, the others
 * handled. */
static void take(struct interruption *in, const struct aws_xml_node *x)
{
	const char *id = aws_xml_text(x, "MessageId"), *receipt = aws_xml_text(x, "ReceiptHandle"),
		   *body = aws_xml_text(x, "Body") ?: "";
	const struct aws_xml_node *body_node = aws_xml_child(x, "Body");
	char why[INTERRUPTION_WHY_MAX];
	struct sqs_message *m;
	int k;

	if (!receipt || !*receipt) {
		log_warn("Failed to handle interruption message %s: SQS sent no receipt handle",
			 id ?: "-");
		return;
	}
	if (!body_md5_ok(body, aws_xml_text(x, "MD5OfBody"))) {
		log_warn_kv(LOG_KV({ "queue", in->queue_name }, { "message", id ?: "-" }),
			    "Failed to read interruption message %s: its body does not match its "
			    "MD5OfBody; leaving it on the queue", id ?: "-");
		return;
	}
	if (!(m = calloc(1, sizeof(*m))) || !(m->message_id = strdup(id ?: "-")) ||
	    !(m->receipt = strdup(receipt))) {
		if (m)
			message_free(m);
		log_error("Failed to handle interruption message %s: out of memory", id ?: "-");
		return;
	}
	m->in = in;
	m->next = in->batch;
	in->batch = m;
	k = interruption_message_parse(body, body_node ? body_node->text_len : strlen(body), &m->ev,
				       why, sizeof(why));
	if (k == -EBADMSG) {
		log_warn_kv(LOG_KV({ "queue", in->queue_name }, { "message", m->message_id }),
			    "Failed to parse interruption message %s: %s; deleting it", m->message_id, why);
		metrics_counter_add(in->malformed, 1, NULL);
		delete_message(m);
		return;
	}
	if (k < 0) {
		log_error("Failed to parse interruption message %s: %s", m->message_id, strerror(-k));
		message_settled(m); /* out of memory: SQS shows it again */
		return;
	}
	metrics_counter_add(in->received, 1, interruption_kind_name(m->ev.kind), NULL);
	if (m->ev.kind == INTERRUPTION_NO_OP) {
		log_debug_kv(LOG_KV({ "queue", in->queue_name }, { "message", m->message_id }),
			     "interruption message %s (%s from %s) asks for nothing: deleting it",
			     m->message_id, m->ev.detail_type ?: "empty", m->ev.source ?: "-");
		delete_message(m);
		return;
	}
	handle(m);
}

static void on_received(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct interruption *in = userdata;
	const struct aws_xml_node *x, *next;

	(void)c;
	if (resp->result < 0) {
		log_warn_kv(LOG_KV({ "queue", in->queue_name }),
			    "Failed to receive from interruption queue %s: %s; trying again",
			    in->queue_name, aws_response_strerror(resp));
		retry_later(in);
		return;
	}
	in->backoff_usec = 0;
	x = aws_xml_first(aws_xml_find(resp->xml, "ReceiveMessageResult"), "Message");
	if (!x) {
		later(in, 0); /* the long poll ended empty */
		return;
	}
	/* A message settled while the others are taken must not start the
	 * next receive: the batch is whole only after the loop. */
	in->taking = true;
	for (; x; x = next) {
		next = aws_xml_next(x);
		take(in, x);
	}
	in->taking = false;
	if (!in->batch)
		later(in, 0);
}

static void receive(struct interruption *in)
{
	struct reaper *r = in->r;
	struct aws_query *q = NULL;
	int k;

	if (!r->replica || !replica_synced(r->replica)) {
		later(in, SYNC_WAIT_USEC);
		return;
	}
	if ((k = aws_query_new("ReceiveMessage", SQS_API_VERSION, &q)) >= 0 &&
	    (k = aws_query_add(q, in->queue_url, "QueueUrl")) >= 0 &&
	    (k = aws_query_add_int(q, RECEIVE_MAX_MESSAGES, "MaxNumberOfMessages")) >= 0 &&
	    (k = aws_query_add_int(q, RECEIVE_VISIBILITY_SEC, "VisibilityTimeout")) >= 0 &&
	    (k = aws_query_add_int(q, RECEIVE_WAIT_SEC, "WaitTimeSeconds")) >= 0) {
		k = aws_call_query(r->aws, "sqs", q, on_received, in);
		q = NULL;
	}
	aws_query_free(q);
	if (k < 0) {
		log_error("Failed to receive from interruption queue %s: %s", in->queue_name, strerror(-k));
		retry_later(in);
	}
}

int interruption_start(struct reaper *r)
{
	struct interruption *in = r->interruption;
	const char *name = r->cfg->interruption_queue;

	if (!in || !name || !*name || in->queue_name)
		return 0;
	if (!(in->queue_name = strdup(name)))
		return -ENOMEM;
	get_queue_url(in);
	return 0;
}
