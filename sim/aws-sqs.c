/*
 * SQS for kanna-sim (awsJson1_0, as the current SQS model says): one queue
 * per sim, named after the cluster, holding EventBridge events such as
 * "EC2 Spot Instance Interruption Warning" (queued by aws-faults.c).
 * GetQueueUrl, ReceiveMessage (visibility timeout, long poll up to
 * WaitTimeSeconds) and DeleteMessage, in both of SQS's wire forms: JSON
 * (X-Amz-Target, what current SDKs send) and the query protocol with XML
 * answers (what kanna's own client sends). Handlers run with the lock held;
 * only aws_sqs_wait() sleeps, and it does so without the lock.
 */
#include <openssl/evp.h>

#include "common/clock.h"
#include "sim/aws-internal.h"

/* SQS limits: at most 10 messages per receive, 20 s long poll, 12 h hidden. */
#define SQS_RECEIVE_MAX 10
#define SQS_WAIT_SEC_MAX 20
#define SQS_VISIBILITY_SEC_DEFAULT 30
#define SQS_VISIBILITY_SEC_MAX 43200
/* SendMessage: the largest message body, 1 MiB. */
#define SQS_BODY_MAX (1024 * 1024)
/* How often a long poll looks at the queue again. */
#define SQS_POLL_INTERVAL_MS 50

int sqs_queue_url(const struct sim_aws *aws, const struct aws_request *req, char *out, size_t len)
{
	int k = snprintf(out, len, "%s/%s/%s", req->endpoint ? req->endpoint : "",
			 SIM_AWS_ACCOUNT_ID, aws->cluster_name);

	return k < 0 || (size_t)k >= len ? -ENOBUFS : 0;
}

/* A request parameter in whichever protocol the client spoke. */
static const char *sqs_str(const struct aws_request *req, const char *key)
{
	if (req->json_protocol)
		return json_string_value(json_object_get(req->json, key));
	return aws_params_get(req->params, key);
}

static int sqs_uint(const struct aws_request *req, const char *key, unsigned long max,
		    unsigned long dflt, unsigned long *ret)
{
	json_t *v = req->json_protocol ? json_object_get(req->json, key) : NULL;
	const char *s = req->json_protocol ? NULL : aws_params_get(req->params, key);

	*ret = dflt;
	if (s)
		return aws_parse_uint(s, max, ret);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (unsigned long)json_integer_value(v) > max)
		return -EINVAL;
	*ret = (unsigned long)json_integer_value(v);
	return 0;
}

/* JSON answer as is; query answer as <ActionResponse><ActionResult> with
 * one element per string and <Message> elements for "Messages". */
static int sqs_reply(const struct aws_request *req, struct aws_response *resp, json_t *result)
{
	char root[64], res[64];
	const char *key;
	json_t *v, *m;
	struct xml x;
	size_t i;
	int r;

	if (req->json_protocol) {
		r = aws_json_reply(resp, result);
		resp->content_type = "application/x-amz-json-1.0";
		return r;
	}
	if (!result)
		return -ENOMEM;
	snprintf(root, sizeof(root), "%sResponse", req->action);
	snprintf(res, sizeof(res), "%sResult", req->action);
	r = xml_begin(&x, root, SQS_XMLNS);
	if (r < 0) {
		json_decref(result);
		return r;
	}
	if (json_object_size(result) > 0 || streq(req->action, "ReceiveMessage"))
		xml_open(&x, res);
	json_object_foreach(result, key, v) {
		if (json_is_string(v))
			xml_leaf(&x, key, json_string_value(v));
		json_array_foreach(v, i, m) {
			const char *mk;
			json_t *mv;

			xml_open(&x, "Message");
			json_object_foreach(m, mk, mv)
				xml_leaf(&x, mk, json_string_value(mv));
			xml_close(&x, "Message");
		}
	}
	if (json_object_size(result) > 0 || streq(req->action, "ReceiveMessage"))
		xml_close(&x, res);
	json_decref(result);
	xml_open(&x, "ResponseMetadata");
	xml_leaf(&x, "RequestId", req->request_id);
	xml_close(&x, "ResponseMetadata");
	return xml_finish(&x, root, resp);
}

/* Errors carry a different code per protocol (JSON shape id vs query code). */
static int sqs_error(struct aws_response *resp, const struct aws_request *req,
		     const char *json_code, const char *query_code, const char *msg)
{
	int r = aws_error(resp, req, 400, req->json_protocol ? json_code : query_code, "%s", msg);

	resp->query_error = NULL;
	if (req->json_protocol && streq(query_code, "AWS.SimpleQueueService.NonExistentQueue"))
		resp->query_error = "AWS.SimpleQueueService.NonExistentQueue;Sender";
	return r;
}

static int no_queue(struct aws_response *resp, const struct aws_request *req)
{
	return sqs_error(resp, req, "com.amazonaws.sqs#QueueDoesNotExist",
			 "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.");
}

static int invalid(struct aws_response *resp, const struct aws_request *req, const char *msg)
{
	return sqs_error(resp, req, "com.amazonaws.sqs#InvalidParameterValue", "InvalidParameterValue", msg);
}

/* Any URL (or, in the query protocol, request path) whose last segment is
 * the queue's name: clients rewrite hosts. */
static bool queue_url_ok(const struct sim_aws *aws, const struct aws_request *req)
{
	const char *url = sqs_str(req, "QueueUrl");
	const char *slash;

	if (!url && !req->json_protocol)
		url = req->path;
	slash = url ? strrchr(url, '/') : NULL;
	return slash && streq(slash + 1, aws->cluster_name);
}

int sqs_get_queue_url(struct sim_aws *aws, const struct aws_request *req,
		      struct aws_response *resp)
{
	const char *name = sqs_str(req, "QueueName");
	char url[256];

	if (!name)
		return sqs_error(resp, req, "com.amazonaws.sqs#MissingParameter", "MissingParameter",
				 "The request must contain the parameter QueueName.");
	if (!streq(name, aws->cluster_name))
		return no_queue(resp, req);
	if (sqs_queue_url(aws, req, url, sizeof(url)) < 0)
		return -ENOBUFS;
	return sqs_reply(req, resp, json_pack("{s:s}", "QueueUrl", url));
}

static json_t *message_json(struct sim_aws *aws, struct aws_sqs_message *m)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];

	if (EVP_Digest(m->body, strlen(m->body), md, &mdlen, EVP_md5(), NULL) != 1)
		return NULL;
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	aws_new_id(aws, "sim-receipt-", 16, m->receipt, sizeof(m->receipt));
	return json_pack("{s:s, s:s, s:s, s:s}", "MessageId", m->id, "ReceiptHandle", m->receipt,
			 "MD5OfBody", hex, "Body", m->body);
}

int sqs_receive_message(struct sim_aws *aws, const struct aws_request *req,
			struct aws_response *resp)
{
	unsigned long max, vis, wait;
	uint64_t now = (uint64_t)clock_realtime_ms();
	json_t *msgs;

	if (!queue_url_ok(aws, req))
		return no_queue(resp, req);
	if (sqs_uint(req, "MaxNumberOfMessages", SQS_RECEIVE_MAX, 1, &max) < 0 || max == 0)
		return invalid(resp, req, "Value for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10.");
	if (sqs_uint(req, "VisibilityTimeout", SQS_VISIBILITY_SEC_MAX, SQS_VISIBILITY_SEC_DEFAULT, &vis) < 0)
		return invalid(resp, req, "Value for parameter VisibilityTimeout is invalid.");
	if (sqs_uint(req, "WaitTimeSeconds", SQS_WAIT_SEC_MAX, 0, &wait) < 0)
		return invalid(resp, req, "Value for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20.");
	msgs = json_array();
	if (!msgs)
		return -ENOMEM;
	for (size_t i = 0; i < aws->n_queue && json_array_size(msgs) < max; i++) {
		struct aws_sqs_message *m = &aws->queue[i];

		if (m->visible_at_ms > now)
			continue;
		if (json_array_append_new(msgs, message_json(aws, m)) < 0) {
			json_decref(msgs);
			return -ENOMEM;
		}
		m->visible_at_ms = now + vis * 1000;
	}
	if (json_array_size(msgs) == 0) {
		json_decref(msgs);
		return sqs_reply(req, resp, json_object());
	}
	return sqs_reply(req, resp, json_pack("{s:o}", "Messages", msgs));
}

int sqs_delete_message(struct sim_aws *aws, const struct aws_request *req,
		       struct aws_response *resp)
{
	const char *receipt = sqs_str(req, "ReceiptHandle");
	char msg[512];

	if (!queue_url_ok(aws, req))
		return no_queue(resp, req);
	if (!receipt)
		return sqs_error(resp, req, "com.amazonaws.sqs#MissingParameter", "MissingParameter",
				 "The request must contain the parameter ReceiptHandle.");
	for (size_t i = 0; i < aws->n_queue; i++)
		if (streq(aws->queue[i].receipt, receipt)) {
			aws_timeline_add(aws, "sqs-delete", "%s", aws->queue[i].id);
			free(aws->queue[i].body);
			memmove(&aws->queue[i], &aws->queue[i + 1],
				(aws->n_queue - i - 1) * sizeof(*aws->queue));
			aws->n_queue--;
			return sqs_reply(req, resp, json_object());
		}
	snprintf(msg, sizeof(msg), "The input receipt handle \"%.200s\" is not a valid receipt handle.", receipt);
	return sqs_error(resp, req, "com.amazonaws.sqs#ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", msg);
}

int aws_event_enqueue(struct sim_aws *aws, const struct aws_instance *i,
		      const char *detail_type, json_t *detail)
{
	char uuid[40], time[32], arn[160];
	uint64_t now = (uint64_t)clock_realtime_ms();
	json_t *ev;
	char *body;

	if (!detail)
		return -ENOMEM;
	aws_new_uuid(aws, uuid);
	/* EventBridge times have whole seconds: "2026-01-01T00:00:00Z". */
	format_iso8601(now, time);
	time[19] = 'Z';
	time[20] = '\0';
	snprintf(arn, sizeof(arn), "arn:aws:ec2:%s:%s:instance/%s", i->region->name,
		 SIM_AWS_ACCOUNT_ID, i->id);
	ev = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:[s], s:o}",
		       "version", "0", "id", uuid, "detail-type", detail_type,
		       "source", "aws.ec2", "account", SIM_AWS_ACCOUNT_ID, "time", time,
		       "region", i->region->name, "resources", arn, "detail", detail);
	body = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	json_decref(ev);
	if (!body)
		return -ENOMEM;
	return sqs_enqueue(aws, body);
}

/* Takes ownership of body (freed on failure too). */
int sqs_enqueue(struct sim_aws *aws, char *body)
{
	struct aws_sqs_message *m;

	if (aws->n_queue == aws->cap_queue) {
		size_t cap = aws->cap_queue ? aws->cap_queue * 2 : 16;

		m = realloc(aws->queue, cap * sizeof(*m));
		if (!m) {
			free(body);
			return -ENOMEM;
		}
		aws->queue = m;
		aws->cap_queue = cap;
	}
	m = &aws->queue[aws->n_queue++];
	*m = (struct aws_sqs_message){ .body = body, .visible_at_ms = 0 };
	aws_new_uuid(aws, m->id);
	return 0;
}

/* SendMessage's rules for a body (Amazon SQS API Reference, SendMessage,
 * MessageBody): "The minimum size is one character. The maximum size is
 * 1 MiB or 1,048,576 bytes", and only the XML characters #x9 | #xA | #xD |
 * #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF, else SQS
 * "rejects the message and returns an InvalidMessageContents error". */
static int sqs_body_check(const char *body, size_t len, char *err, size_t errlen)
{
	const unsigned char *p = (const unsigned char *)body, *end = p + len;

	if (len == 0 || len > SQS_BODY_MAX) {
		snprintf(err, errlen, "InvalidParameterValue: the message body must be 1 to %d bytes, "
			 "not %zu", SQS_BODY_MAX, len);
		return -EINVAL;
	}
	while (p < end) {
		unsigned n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 :
			     (*p & 0xf8) == 0xf0 ? 4 : 0;
		uint32_t c = n == 1 ? *p : n == 2 ? *p & 0x1f : n == 3 ? *p & 0x0f : *p & 0x07;

		for (unsigned i = 1; n && i < n; i++) {
			if (p + i >= end || (p[i] & 0xc0) != 0x80)
				n = 0;
			else
				c = (c << 6) | (p[i] & 0x3f);
		}
		/* Overlong forms and surrogates are not UTF-8 either. */
		if (!n || (n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
		    !(c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) ||
		      (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff))) {
			snprintf(err, errlen, "InvalidMessageContents: invalid character at byte %td of the "
				 "message body", (const char *)p - body);
			return -EINVAL;
		}
		p += n;
	}
	return 0;
}

int sqs_send_raw(struct sim_aws *aws, const char *body, size_t len, char *id, size_t idlen,
		 char *err, size_t errlen)
{
	char *copy;
	int r;

	if ((r = sqs_body_check(body, len, err, errlen)) < 0)
		return r;
	if (!(copy = strndup(body, len)))
		return -ENOMEM;
	if ((r = sqs_enqueue(aws, copy)) < 0)
		return r;
	snprintf(id, idlen, "%s", aws->queue[aws->n_queue - 1].id);
	aws_timeline_add(aws, "sqs-send", "%s", id);
	return 0;
}

static bool queue_has_visible(const struct sim_aws *aws, uint64_t now)
{
	for (size_t i = 0; i < aws->n_queue; i++)
		if (aws->queue[i].visible_at_ms <= now)
			return true;
	return false;
}

void aws_sqs_wait(struct sim_aws *aws, const struct aws_request *req)
{
	unsigned long wait;
	uint64_t deadline;
	bool done;

	if (sqs_uint(req, "WaitTimeSeconds", SQS_WAIT_SEC_MAX, 0, &wait) < 0 || wait == 0)
		return;
	deadline = (uint64_t)clock_realtime_ms() + wait * 1000;
	for (;;) {
		uint64_t now = (uint64_t)clock_realtime_ms();

		pthread_mutex_lock(&aws->lock);
		done = aws->stopping || queue_has_visible(aws, now) || now >= deadline;
		pthread_mutex_unlock(&aws->lock);
		if (done)
			return;
		usleep(SQS_POLL_INTERVAL_MS * 1000);
	}
}
