/*
 * The admin endpoint of kanna-sim's AWS side (no SigV4: loopback only, for
 * tests, the demo report and operators):
 *   GET  /_sim/status     instances (launch/terminate times, cost accrued at
 *                         their launch price, image, launch template),
 *                         launch templates (image, user data), totals,
 *                         faults, the faults injected so far by kind, the
 *                         timeline
 *   GET  /_sim/launch-templates  every launch template with the
 *                         LaunchTemplateData it was created with (user data
 *                         base64 as sent)
 *   GET  /_sim/faults     the current fault set
 *   POST /_sim/faults     replace the fault set (JSON, see aws-faults.c)
 *   POST /_sim/interrupt  {"instanceIds":[...], "kind": "spot-interruption" |
 *                         "rebalance-recommendation"}: EventBridge notices
 *   POST /_sim/sqs/send   the raw request body becomes one message on the
 *                         interruption queue, as SendMessage would queue it
 *                         (SQS's size and character rules apply): how
 *                         tests put malformed or foreign messages there
 * Called by the HTTP front; takes aws->lock itself.
 */
#include "common/clock.h"
#include "sim/aws-internal.h"

static json_t *instance_json(const struct sim_aws *aws, const struct aws_instance *i, uint64_t now)
{
	char launch[32], term[32];
	json_t *tags = json_object();
	const struct aws_image *im = aws_image_by_id(aws, i->region->name, i->image_id);

	for (size_t k = 0; tags && k < i->tags.n; k++)
		json_object_set_new(tags, i->tags.v[k].key, json_string(i->tags.v[k].value));
	format_iso8601(i->launch_ms, launch);
	format_iso8601(i->terminate_ms, term);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s?, s:f, s:f, s:o?, s:s, s:s?, s:s?}",
			 "instanceId", i->id, "instanceType", i->type->name,
			 "region", i->region->name, "zone", i->zone->name,
			 "capacityType", i->spot ? "spot" : "on-demand",
			 "state", aws_instance_state_name(i->state), "launchTime", launch,
			 "terminateTime", i->terminate_ms ? term : NULL,
			 "pricePerHour", i->price, "costAccrued", aws_instance_cost(i, now),
			 "tags", tags, "imageId", i->image_id, "imageName", im ? im->name : NULL,
			 "launchTemplateId", *i->launch_template_id ? i->launch_template_id : NULL);
}

/* What each launch template holds: the image and user data (base64, as
 * sent) a node launched from it boots with. */
static json_t *templates_json(const struct sim_aws *aws)
{
	json_t *v = json_array();

	for (size_t k = 0; v && k < aws->n_templates; k++) {
		const struct aws_launch_template *lt = aws->templates[k];

		json_array_append_new(v, json_pack("{s:s, s:s, s:s?, s:s?}", "launchTemplateId", lt->id,
						   "launchTemplateName", lt->name, "imageId", lt->image_id,
						   "userData", lt->user_data));
	}
	return v;
}

json_t *aws_status_json(struct sim_aws *aws)
{
	uint64_t now = (uint64_t)clock_realtime_ms();
	json_t *instances = json_array(), *timeline = json_array();
	double total = 0;
	size_t running = 0;
	char t[32];

	aws_instances_refresh(aws, now);
	for (size_t k = 0; instances && k < aws->n_instances; k++) {
		const struct aws_instance *i = aws->instances[k];

		json_array_append_new(instances, instance_json(aws, i, now));
		total += aws_instance_cost(i, now);
		running += i->state == INSTANCE_PENDING || i->state == INSTANCE_RUNNING;
	}
	for (size_t k = 0; timeline && k < aws->n_timeline; k++) {
		format_iso8601(aws->timeline[k].ms, t);
		json_array_append_new(timeline, json_pack("{s:s, s:s, s:s}", "time", t,
							  "event", aws->timeline[k].kind,
							  "detail", aws->timeline[k].detail));
	}
	format_iso8601(now, t);
	return json_pack("{s:s, s:s, s:s, s:o?, s:I, s:f, s:o?, s:I, s:o?, s:o?, s:I, s:o?, s:I}",
			 "time", t, "region", aws->region, "endpoint", aws->endpoint,
			 "instances", instances, "activeInstances", (json_int_t)running,
			 "totalCost", total, "timeline", timeline,
			 "timelineDropped", (json_int_t)aws->timeline_dropped,
			 "faults", aws_faults_to_json(aws),
			 "faultsInjected", aws_faults_injected_json(aws),
			 "launchTemplates", (json_int_t)aws->n_templates,
			 "templates", templates_json(aws),
			 "interruptionQueueDepth", (json_int_t)aws->n_queue);
}

static int admin_json(struct aws_response *resp, unsigned status, json_t *body)
{
	int r;

	resp->status = status;
	r = aws_json_reply(resp, body);
	resp->content_type = "application/json";
	return r;
}

static int admin_error(struct aws_response *resp, unsigned status, const char *msg)
{
	return admin_json(resp, status, json_pack("{s:s}", "error", msg));
}

static int admin_interrupt(struct sim_aws *aws, const char *body, size_t len,
			   struct aws_response *resp)
{
	json_t *root = json_loadb(body ? body : "", len, 0, NULL), *ids, *id;
	char err[256] = "";
	const char *kind;
	size_t i, n;
	int r = 0;

	kind = json_string_value(json_object_get(root, "kind")) ?: "spot-interruption";
	ids = json_object_get(root, "instanceIds");
	if (!json_is_array(ids)) {
		json_decref(root);
		return admin_error(resp, 400, "expected {\"instanceIds\": [\"i-...\"]}");
	}
	n = json_array_size(ids);
	json_array_foreach(ids, i, id) {
		if (!json_is_string(id)) {
			snprintf(err, sizeof(err), "instanceIds[%zu] must be a string", i);
			r = -EINVAL;
			break;
		}
		if (streq(kind, "rebalance-recommendation"))
			r = aws_rebalance_instance(aws, json_string_value(id), err, sizeof(err));
		else if (streq(kind, "spot-interruption"))
			r = aws_interrupt_instance(aws, json_string_value(id), err, sizeof(err));
		else {
			snprintf(err, sizeof(err), "kind must be spot-interruption or rebalance-recommendation");
			r = -EINVAL;
		}
		if (r < 0)
			break;
	}
	json_decref(root);
	if (r < 0)
		return admin_error(resp, 400, err);
	return admin_json(resp, 200, json_pack("{s:I}", "queued", (json_int_t)n));
}

int aws_admin_handle(struct sim_aws *aws, const char *url, const char *method,
		     const char *body, size_t len, struct aws_response *resp)
{
	_cleanup_free_ char *text = NULL;
	char err[256] = "";
	bool get = streq(method, "GET"), post = streq(method, "POST");
	int r;

	if (streq(url, "/_sim/status") && get)
		return admin_json(resp, 200, aws_status_json(aws));
	if (streq(url, "/_sim/launch-templates") && get)
		return admin_json(resp, 200, aws_launch_templates_json(aws));
	if (streq(url, "/_sim/faults") && get)
		return admin_json(resp, 200, aws_faults_to_json(aws));
	if (streq(url, "/_sim/faults") && post) {
		text = strndup(body ? body : "", len);
		if (!text)
			return -ENOMEM;
		r = aws_faults_set_json(aws, text, err, sizeof(err));
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return admin_error(resp, 400, err);
		return admin_json(resp, 200, aws_faults_to_json(aws));
	}
	if (streq(url, "/_sim/interrupt") && post)
		return admin_interrupt(aws, body, len, resp);
	if (streq(url, "/_sim/sqs/send") && post) {
		char id[64];

		r = sqs_send_raw(aws, body ? body : "", body ? len : 0, id, sizeof(id), err, sizeof(err));
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return admin_error(resp, 400, err);
		return admin_json(resp, 200, json_pack("{s:s}", "MessageId", id));
	}
	return admin_error(resp, 404, "unknown admin path or method");
}
