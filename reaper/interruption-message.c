/*
 * Parser of the interruption queue's messages (see interruption-message.h):
 * EventBridge events as Karpenter's controllers/interruption/messages
 * parses them (aws/karpenter-provider-aws, parser.go and one parser per
 * kind), keyed by (version, source, detail-type):
 *   ("0", "aws.ec2", "EC2 Spot Instance Interruption Warning")  detail.instance-id
 *   ("0", "aws.ec2", "EC2 Instance Rebalance Recommendation")   detail.instance-id
 *   ("0", "aws.ec2", "EC2 Instance State-change Notification")  detail.instance-id,
 *        detail.state: stopping/stopped, shutting-down/terminated; others no-op
 *   ("0", "aws.health", "AWS Health Event")  detail.service "EC2" and
 *        detail.eventTypeCategory "scheduledChange", else no-op;
 *        detail.affectedEntities[].entityValue are the instances
 * Any other key is a no-op message, deleted without action (Karpenter's
 * noop.Message). Pure: no I/O, no logging; called by interruption.c.
 *
 * Unknown fields are not an error anywhere: the EventBridge Events
 * Reference leaves the detail object to the service that sends it, and
 * AWS adds fields to its events over time (a parser that refused them
 * would drop real interruptions one day). What is checked is what the
 * reaper reads. Where kanna is stricter than Karpenter, on purpose:
 *  - a body without version, source or detail-type (strings) is malformed,
 *    not a no-op: no EventBridge event lacks them, so it is something else
 *    on the queue — an SNS envelope ({"Type": "Notification", "Message":
 *    "…"}) among them, which Karpenter does not unwrap and neither do we;
 *  - a known kind without the detail fields it needs is malformed, where
 *    Go's json.Unmarshal would leave them "" and act on nothing.
 *  - a key given twice is malformed (Go keeps the last; which one did the
 *    sender mean?).
 * As in Karpenter, a field of the wrong type (Go's unmarshal error) or a
 * time that is not RFC 3339 is malformed, and an empty body is a no-op.
 * State names are compared lower-cased (Karpenter lower-cases them when it
 * accepts a state).
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/aws.h"
#include "common/util.h"
#include "reaper/interruption-message.h"

#define EVENT_VERSION "0"
#define SOURCE_EC2 "aws.ec2"
#define SOURCE_HEALTH "aws.health"
#define DETAIL_SPOT "EC2 Spot Instance Interruption Warning"
#define DETAIL_REBALANCE "EC2 Instance Rebalance Recommendation"
#define DETAIL_STATE "EC2 Instance State-change Notification"
#define DETAIL_HEALTH "AWS Health Event"
#define HEALTH_SERVICE "EC2"
#define HEALTH_CATEGORY "scheduledChange"

static const char *const kind_names[] = {
	[INTERRUPTION_NO_OP] = "no_op",
	[INTERRUPTION_SPOT_INTERRUPTED] = "spot_interrupted",
	[INTERRUPTION_REBALANCE_RECOMMENDATION] = "rebalance_recommendation",
	[INTERRUPTION_SCHEDULED_CHANGE] = "scheduled_change",
	[INTERRUPTION_INSTANCE_STOPPED] = "instance_stopped",
	[INTERRUPTION_INSTANCE_TERMINATED] = "instance_terminated",
};

const char *interruption_kind_name(enum interruption_kind kind)
{
	return kind < INTERRUPTION_KIND_MAX ? kind_names[kind] : "no_op";
}

/* Karpenter: CordonAndDrain for spot interruptions, scheduled changes and
 * the stopping/terminating state changes; NoAction (an Event) for a
 * rebalance recommendation. */
enum interruption_action interruption_action_for(enum interruption_kind kind)
{
	switch (kind) {
	case INTERRUPTION_SPOT_INTERRUPTED:
	case INTERRUPTION_SCHEDULED_CHANGE:
	case INTERRUPTION_INSTANCE_STOPPED:
	case INTERRUPTION_INSTANCE_TERMINATED:
		return INTERRUPTION_CORDON_AND_DRAIN;
	default:
		return INTERRUPTION_NO_ACTION;
	}
}

/* Reasons, messages and types as controllers/interruption/events/events.go. */
struct interruption_notice interruption_notice_for(enum interruption_kind kind)
{
	switch (kind) {
	case INTERRUPTION_SPOT_INTERRUPTED:
		return (struct interruption_notice){ "SpotInterrupted",
						     "Spot interruption warning was triggered", true };
	case INTERRUPTION_REBALANCE_RECOMMENDATION:
		return (struct interruption_notice){ "SpotRebalanceRecommendation",
						     "Spot rebalance recommendation was triggered", false };
	case INTERRUPTION_SCHEDULED_CHANGE:
		return (struct interruption_notice){ "InstanceUnhealthy",
						     "An unhealthy warning was triggered for the instance",
						     true };
	case INTERRUPTION_INSTANCE_STOPPED:
		return (struct interruption_notice){ "InstanceStopping", "Instance is stopping", true };
	case INTERRUPTION_INSTANCE_TERMINATED:
		return (struct interruption_notice){ "InstanceTerminating", "Instance is terminating",
						     true };
	default:
		return (struct interruption_notice){ NULL, NULL, false };
	}
}

void interruption_message_done(struct interruption_message *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_instance_ids; i++)
		free(m->instance_ids[i]);
	free(m->instance_ids);
	free(m->id);
	free(m->source);
	free(m->detail_type);
	free(m->state);
	*m = (struct interruption_message){ 0 };
}

_printf_(3, 4) static int malformed(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

/* obj[key] as a string: -ENOENT when absent (or null, as Go reads it),
 * -EBADMSG when it is something else. */
static int get_string(const json_t *obj, const char *key, const char **ret)
{
	const json_t *v = json_object_get(obj, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return -ENOENT;
	if (!json_is_string(v))
		return -EBADMSG;
	*ret = json_string_value(v);
	return 0;
}

/* A required string of obj, named path in the reason. */
static int need_string(const json_t *obj, const char *key, const char *path, const char **ret,
		       char *why, size_t why_len)
{
	int k = get_string(obj, key, ret);

	if (k == -ENOENT)
		return malformed(why, why_len, "field %s is missing", path);
	if (k < 0)
		return malformed(why, why_len, "field %s is not a string", path);
	return 0;
}

/* An optional string: absent is fine, another type is not. */
static int want_string(const json_t *obj, const char *key, const char *path, const char **ret,
		       char *why, size_t why_len)
{
	int k = get_string(obj, key, ret);

	if (k == -EBADMSG)
		return malformed(why, why_len, "field %s is not a string", path);
	return 0;
}

static int add_instance(struct interruption_message *m, const char *id)
{
	char **v;

	if (m->n_instance_ids >= INTERRUPTION_MESSAGE_MAX_INSTANCES)
		return -E2BIG;
	v = realloc(m->instance_ids, (m->n_instance_ids + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->instance_ids = v;
	if (!(v[m->n_instance_ids] = strdup(id)))
		return -ENOMEM;
	m->n_instance_ids++;
	return 0;
}

/* The metadata every EventBridge event carries ("AWS service event
 * metadata" in the EventBridge Events Reference). */
static int parse_metadata(const json_t *root, struct interruption_message *m, char *why,
			  size_t why_len)
{
	const char *version, *source, *detail_type, *id, *s, *when;
	const json_t *res, *r;
	time_t t;
	size_t i;
	int k;

	if ((k = need_string(root, "version", "version", &version, why, why_len)) < 0 ||
	    (k = need_string(root, "source", "source", &source, why, why_len)) < 0 ||
	    (k = need_string(root, "detail-type", "detail-type", &detail_type, why, why_len)) < 0 ||
	    (k = want_string(root, "id", "id", &id, why, why_len)) < 0 ||
	    (k = want_string(root, "account", "account", &s, why, why_len)) < 0 ||
	    (k = want_string(root, "region", "region", &s, why, why_len)) < 0 ||
	    (k = want_string(root, "time", "time", &when, why, why_len)) < 0)
		return k;
	res = json_object_get(root, "resources");
	if (res && !json_is_null(res) && !json_is_array(res))
		return malformed(why, why_len, "field resources is not an array");
	json_array_foreach(res, i, r)
		if (!json_is_string(r))
			return malformed(why, why_len, "field resources[%zu] is not a string", i);
	if (when && aws_parse_iso8601(when, &t) < 0)
		return malformed(why, why_len, "field time is not an RFC 3339 UTC time: \"%.64s\"", when);
	m->time_s = when ? (int64_t)t : 0;
	if (!(m->source = strdup(source)) || !(m->detail_type = strdup(detail_type)) ||
	    (id && !(m->id = strdup(id))))
		return -ENOMEM;
	return 0;
}

/* detail.instance-id (all three aws.ec2 events name one instance). */
static int parse_instance_detail(const json_t *detail, struct interruption_message *m, char *why,
				 size_t why_len)
{
	const char *id;
	int k;

	if ((k = need_string(detail, "instance-id", "detail.instance-id", &id, why, why_len)) < 0)
		return k;
	return add_instance(m, id);
}

static int parse_spot(const json_t *detail, struct interruption_message *m, char *why,
		      size_t why_len)
{
	const char *action;
	int k;

	if ((k = want_string(detail, "instance-action", "detail.instance-action", &action, why,
			     why_len)) < 0)
		return k;
	m->kind = INTERRUPTION_SPOT_INTERRUPTED;
	return parse_instance_detail(detail, m, why, why_len);
}

static int parse_state_change(const json_t *detail, struct interruption_message *m, char *why,
			      size_t why_len)
{
	const char *state;
	int k;

	if ((k = need_string(detail, "state", "detail.state", &state, why, why_len)) < 0 ||
	    (k = parse_instance_detail(detail, m, why, why_len)) < 0)
		return k;
	if (!(m->state = strdup(state)))
		return -ENOMEM;
	if (!strcasecmp(state, "stopping") || !strcasecmp(state, "stopped"))
		m->kind = INTERRUPTION_INSTANCE_STOPPED;
	else if (!strcasecmp(state, "shutting-down") || !strcasecmp(state, "terminated"))
		m->kind = INTERRUPTION_INSTANCE_TERMINATED;
	else
		m->kind = INTERRUPTION_NO_OP; /* pending, running: nothing to do */
	return 0;
}

static int parse_health(const json_t *detail, struct interruption_message *m, char *why,
			size_t why_len)
{
	const char *service, *category, *value;
	const json_t *entities, *e;
	size_t i;
	int k;

	if ((k = need_string(detail, "service", "detail.service", &service, why, why_len)) < 0 ||
	    (k = need_string(detail, "eventTypeCategory", "detail.eventTypeCategory", &category, why,
			     why_len)) < 0)
		return k;
	if (!streq(service, HEALTH_SERVICE) || !streq(category, HEALTH_CATEGORY)) {
		m->kind = INTERRUPTION_NO_OP; /* another service's, or an issue/notification */
		return 0;
	}
	entities = json_object_get(detail, "affectedEntities");
	if (!entities || json_is_null(entities))
		return malformed(why, why_len, "field detail.affectedEntities is missing");
	if (!json_is_array(entities))
		return malformed(why, why_len, "field detail.affectedEntities is not an array");
	json_array_foreach(entities, i, e) {
		char path[64];

		snprintf(path, sizeof(path), "detail.affectedEntities[%zu].entityValue", i);
		if (!json_is_object(e))
			return malformed(why, why_len, "field detail.affectedEntities[%zu] is not an object", i);
		if ((k = need_string(e, "entityValue", path, &value, why, why_len)) < 0)
			return k;
		if ((k = add_instance(m, value)) == -E2BIG)
			return malformed(why, why_len, "field detail.affectedEntities has more than %d entries",
					 INTERRUPTION_MESSAGE_MAX_INSTANCES);
		if (k < 0)
			return k;
	}
	m->kind = INTERRUPTION_SCHEDULED_CHANGE;
	return 0;
}

/* The kind's own detail, once the metadata said which kind it is. */
static int parse_detail(const json_t *root, struct interruption_message *m, char *why,
			size_t why_len)
{
	bool ec2 = streq(m->source, SOURCE_EC2), health = streq(m->source, SOURCE_HEALTH);
	const json_t *detail = json_object_get(root, "detail");
	bool spot = ec2 && streq(m->detail_type, DETAIL_SPOT),
	     rebalance = ec2 && streq(m->detail_type, DETAIL_REBALANCE),
	     state = ec2 && streq(m->detail_type, DETAIL_STATE),
	     scheduled = health && streq(m->detail_type, DETAIL_HEALTH);
	int k;

	if (!spot && !rebalance && !state && !scheduled)
		return 0; /* not an event the reaper handles: a no-op */
	if (!detail || json_is_null(detail))
		return malformed(why, why_len, "field detail is missing");
	if (!json_is_object(detail))
		return malformed(why, why_len, "field detail is not an object");
	if (spot)
		return parse_spot(detail, m, why, why_len);
	if (state)
		return parse_state_change(detail, m, why, why_len);
	if (scheduled)
		return parse_health(detail, m, why, why_len);
	if ((k = parse_instance_detail(detail, m, why, why_len)) < 0)
		return k;
	m->kind = INTERRUPTION_REBALANCE_RECOMMENDATION;
	return 0;
}

int interruption_message_parse(const char *body, size_t len, struct interruption_message *ret,
			       char *why, size_t why_len)
{
	json_error_t jerr;
	json_t *root = NULL;
	int k;

	*ret = (struct interruption_message){ .kind = INTERRUPTION_NO_OP };
	if (why && why_len)
		why[0] = '\0';
	if (!body || len == 0)
		return 0; /* Karpenter: an empty body is a no-op */
	if (len > INTERRUPTION_MESSAGE_MAX_BYTES) {
		k = malformed(why, why_len, "body of %zu bytes is longer than SQS allows (%d)", len,
			      INTERRUPTION_MESSAGE_MAX_BYTES);
		goto fail;
	}
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		k = malformed(why, why_len, "body is not JSON: %s at offset %d", jerr.text, jerr.position);
		goto fail;
	}
	if (!json_is_object(root)) {
		k = malformed(why, why_len, "body is not a JSON object");
		goto fail;
	}
	if ((k = parse_metadata(root, ret, why, why_len)) < 0)
		goto fail;
	/* Another version is a later schema: a no-op (Karpenter's key holds it). */
	if (streq(json_string_value(json_object_get(root, "version")), EVENT_VERSION) &&
	    (k = parse_detail(root, ret, why, why_len)) < 0)
		goto fail;
	json_decref(root);
	return 0;
fail:
	json_decref(root);
	interruption_message_done(ret);
	ret->kind = INTERRUPTION_NO_OP;
	return k;
}
