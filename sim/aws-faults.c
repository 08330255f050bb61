/*
 * Fault injection and the admin endpoint of kanna-sim's AWS side: the fault
 * set (insufficient capacity per offering, throttling by rate or per-second
 * budget, 5xx rate, added latency, EventBridge state-change events) parsed
 * from the JSON of POST /_sim/faults or the config, the per-request draws
 * (from the seeded generator, so a run is reproducible), and spot
 * interruption and rebalance notices.
 * Called with aws->lock held; it never sleeps (the server applies latency).
 */
#include <math.h>

#include "common/clock.h"
#include "sim/aws-internal.h"

void aws_faults_clear(struct aws_faults *f)
{
	for (size_t i = 0; i < f->n_ice; i++) {
		free(f->ice[i].instance_type);
		free(f->ice[i].zone);
		free(f->ice[i].capacity_type);
	}
	free(f->ice);
	for (size_t i = 0; i < f->n_never_boot; i++)
		free(f->never_boot[i]);
	free(f->never_boot);
	*f = (struct aws_faults){ 0 };
}

static int dup_opt(json_t *o, const char *key, char **ret, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	*ret = NULL;
	if (!v || json_is_null(v) || (json_is_string(v) && streq(json_string_value(v), "*")))
		return 0;
	if (!json_is_string(v)) {
		snprintf(err, errlen, "insufficientCapacity[].%s must be a string", key);
		return -EINVAL;
	}
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

/* The capacity errors EC2 reports per override (Karpenter treats all as ICE). */
static const char *const ice_error_codes[] = {
	"InsufficientInstanceCapacity", "UnfulfillableCapacity",
	"MaxSpotInstanceCountExceeded", "InsufficientFreeAddressesInSubnet",
};

static int ice_code_parse(json_t *v, const char **ret)
{
	*ret = ice_error_codes[0];
	if (!v)
		return 0;
	for (size_t i = 0; json_is_string(v) && i < ARRAY_SIZE(ice_error_codes); i++)
		if (streq(json_string_value(v), ice_error_codes[i])) {
			*ret = ice_error_codes[i];
			return 0;
		}
	return -EINVAL;
}

static int parse_ice(json_t *a, struct aws_faults *f, char *err, size_t errlen)
{
	size_t i;
	json_t *e;
	int r;

	if (!json_is_array(a)) {
		snprintf(err, errlen, "insufficientCapacity must be an array");
		return -EINVAL;
	}
	f->ice = calloc(json_array_size(a) + 1, sizeof(*f->ice));
	if (!f->ice)
		return -ENOMEM;
	json_array_foreach(a, i, e) {
		struct aws_ice_rule *rule = &f->ice[f->n_ice];
		const char *k;
		json_t *v;

		if (!json_is_object(e)) {
			snprintf(err, errlen, "insufficientCapacity[%zu] must be an object", i);
			return -EINVAL;
		}
		json_object_foreach(e, k, v)
			if (!streq(k, "instanceType") && !streq(k, "zone") && !streq(k, "capacityType") &&
			    !streq(k, "errorCode")) {
				snprintf(err, errlen, "insufficientCapacity[%zu]: unknown key '%s'", i, k);
				return -EINVAL;
			}
		f->n_ice++;
		r = dup_opt(e, "instanceType", &rule->instance_type, err, errlen);
		if (r >= 0)
			r = dup_opt(e, "zone", &rule->zone, err, errlen);
		if (r >= 0)
			r = dup_opt(e, "capacityType", &rule->capacity_type, err, errlen);
		if (r < 0)
			return r;
		if (ice_code_parse(json_object_get(e, "errorCode"), &rule->error_code) < 0) {
			snprintf(err, errlen, "insufficientCapacity[%zu].errorCode must be InsufficientInstanceCapacity, UnfulfillableCapacity, MaxSpotInstanceCountExceeded or InsufficientFreeAddressesInSubnet", i);
			return -EINVAL;
		}
		if (rule->capacity_type && !streq(rule->capacity_type, "spot") &&
		    !streq(rule->capacity_type, "on-demand")) {
			snprintf(err, errlen, "insufficientCapacity[%zu].capacityType must be spot or on-demand", i);
			return -EINVAL;
		}
	}
	return 0;
}

static int parse_fraction(json_t *v, const char *name, double *ret, char *err, size_t errlen)
{
	if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1 ||
	    isnan(json_number_value(v))) {
		snprintf(err, errlen, "%s must be a number between 0 and 1", name);
		return -EINVAL;
	}
	*ret = json_number_value(v);
	return 0;
}

static int parse_count(json_t *v, const char *name, json_int_t max, unsigned *ret,
		       char *err, size_t errlen)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max) {
		snprintf(err, errlen, "%s must be an integer between 0 and %lld", name, (long long)max);
		return -EINVAL;
	}
	*ret = (unsigned)json_integer_value(v);
	return 0;
}

/* Added latency above this would only make clients time out. */
#define FAULT_LATENCY_MAX_MS 60000
#define FAULT_BUDGET_MAX 1000000

/* "neverBoot": ["m5.large", …] */
static int parse_never_boot(json_t *a, const struct aws_catalog *catalog, struct aws_faults *f,
			    char *err, size_t errlen)
{
	json_t *v;
	size_t i;

	if (!json_is_array(a) || !(f->never_boot = calloc(json_array_size(a) + 1, sizeof(char *)))) {
		snprintf(err, errlen, "neverBoot must be an array of instance types");
		return -EINVAL;
	}
	json_array_foreach(a, i, v) {
		if (!json_is_string(v) || !aws_catalog_type(catalog, json_string_value(v))) {
			snprintf(err, errlen, "neverBoot[%zu] is not a known instance type", i);
			return -EINVAL;
		}
		if (!(f->never_boot[f->n_never_boot] = strdup(json_string_value(v))))
			return -ENOMEM;
		f->n_never_boot++;
	}
	return 0;
}

bool aws_faults_never_boot(const struct sim_aws *aws, const char *type)
{
	for (size_t i = 0; i < aws->faults.n_never_boot; i++)
		if (streq(aws->faults.never_boot[i], type))
			return true;
	return false;
}

static int parse_faults(json_t *root, const struct aws_catalog *catalog, struct aws_faults *f,
			json_t **interrupt, char *err, size_t errlen)
{
	const char *k;
	json_t *v;
	int r = 0;

	if (!json_is_object(root)) {
		snprintf(err, errlen, "faults must be a JSON object");
		return -EINVAL;
	}
	json_object_foreach(root, k, v) {
		if (streq(k, "insufficientCapacity"))
			r = parse_ice(v, f, err, errlen);
		else if (streq(k, "throttleRate"))
			r = parse_fraction(v, k, &f->throttle_rate, err, errlen);
		else if (streq(k, "throttlePerSecond"))
			r = parse_count(v, k, FAULT_BUDGET_MAX, &f->throttle_per_sec, err, errlen);
		else if (streq(k, "errorRate"))
			r = parse_fraction(v, k, &f->error_rate, err, errlen);
		else if (streq(k, "lostAnswerRate"))
			r = parse_fraction(v, k, &f->lost_answer_rate, err, errlen);
		else if (streq(k, "garbledAnswerRate"))
			r = parse_fraction(v, k, &f->garbled_answer_rate, err, errlen);
		else if (streq(k, "latencyMs"))
			r = parse_count(v, k, FAULT_LATENCY_MAX_MS, &f->latency_ms, err, errlen);
		else if (streq(k, "interrupt") && json_is_array(v))
			*interrupt = v;
		else if (streq(k, "neverBoot"))
			r = parse_never_boot(v, catalog, f, err, errlen);
		else if (streq(k, "stateChangeEvents") && json_is_boolean(v))
			f->state_change_events = json_is_true(v);
		else {
			snprintf(err, errlen, "unknown or malformed key '%s'", k);
			r = -EINVAL;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* All or nothing: on any error the current faults stay as they were. */
int aws_faults_set_json(struct sim_aws *aws, const char *json, char *err, size_t errlen)
{
	struct aws_faults f = { 0 };
	json_t *root, *interrupt = NULL, *id;
	json_error_t e;
	size_t i;
	int r;

	snprintf(err, errlen, "invalid");
	root = json_loads(json, JSON_REJECT_DUPLICATES, &e);
	if (!root) {
		snprintf(err, errlen, "line %d column %d: %s", e.line, e.column, e.text);
		return -EINVAL;
	}
	r = parse_faults(root, aws->catalog, &f, &interrupt, err, errlen);
	json_array_foreach(interrupt, i, id) {
		if (r < 0)
			break;
		if (!json_is_string(id) || !aws_instance_find(aws, json_string_value(id))) {
			snprintf(err, errlen, "interrupt[%zu] is not a known instance id", i);
			r = -ENOENT;
		}
	}
	if (r < 0) {
		aws_faults_clear(&f);
		json_decref(root);
		return r;
	}
	aws_faults_clear(&aws->faults);
	aws->faults = f;
	aws_timeline_add(aws, "faults", "%s", json);
	json_array_foreach(interrupt, i, id)
		if (aws_interrupt_instance(aws, json_string_value(id), err, errlen) < 0)
			r = -EINVAL;
	json_decref(root);
	return r;
}

json_t *aws_faults_injected_json(const struct sim_aws *aws)
{
	const struct aws_fault_counts *c = &aws->injected;

	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "insufficientCapacity",
			 (json_int_t)c->insufficient_capacity, "throttle", (json_int_t)c->throttle,
			 "internalError", (json_int_t)c->internal_error, "latency",
			 (json_int_t)c->latency, "lostAnswer", (json_int_t)c->lost_answer,
			 "garbledAnswer", (json_int_t)c->garbled_answer);
}

json_t *aws_faults_to_json(const struct sim_aws *aws)
{
	const struct aws_faults *f = &aws->faults;
	json_t *ice = json_array(), *never = json_array(), *o;

	for (size_t i = 0; ice && i < f->n_ice; i++)
		json_array_append_new(ice, json_pack("{s:s?, s:s?, s:s?, s:s}",
						     "instanceType", f->ice[i].instance_type,
						     "zone", f->ice[i].zone,
						     "capacityType", f->ice[i].capacity_type,
						     "errorCode", f->ice[i].error_code));
	for (size_t i = 0; never && i < f->n_never_boot; i++)
		json_array_append_new(never, json_string(f->never_boot[i]));
	o = json_pack("{s:o?, s:o?, s:f, s:I, s:f, s:f, s:f, s:I, s:b}", "insufficientCapacity", ice,
		      "neverBoot", never,
		      "throttleRate", f->throttle_rate, "throttlePerSecond", (json_int_t)f->throttle_per_sec,
		      "errorRate", f->error_rate, "lostAnswerRate", f->lost_answer_rate,
		      "garbledAnswerRate", f->garbled_answer_rate, "latencyMs", (json_int_t)f->latency_ms,
		      "stateChangeEvents", f->state_change_events);
	return o;
}

const char *aws_faults_ice(const struct sim_aws *aws, const char *type, const char *zone, bool spot)
{
	for (size_t i = 0; i < aws->faults.n_ice; i++) {
		const struct aws_ice_rule *r = &aws->faults.ice[i];

		if ((!r->instance_type || streq(r->instance_type, type)) &&
		    (!r->zone || streq(r->zone, zone)) &&
		    (!r->capacity_type || streq(r->capacity_type, spot ? "spot" : "on-demand")))
			return r->error_code;
	}
	return NULL;
}

static bool throttled(struct sim_aws *aws)
{
	uint64_t sec = (uint64_t)clock_realtime_ms() / 1000;

	if (aws->faults.throttle_per_sec) {
		if (sec != aws->throttle_window_sec) {
			aws->throttle_window_sec = sec;
			aws->throttle_window_count = 0;
		}
		if (++aws->throttle_window_count > aws->faults.throttle_per_sec)
			return true;
	}
	return aws->faults.throttle_rate > 0 && aws_rand_unit(aws) < aws->faults.throttle_rate;
}

/* Returns 0 to go on, 1 when resp holds an injected failure, < 0 on error. */
int aws_faults_apply(struct sim_aws *aws, const struct aws_request *req,
		     struct aws_response *resp, unsigned *ret_latency_ms)
{
	int r;

	*ret_latency_ms = aws->faults.latency_ms;
	if (aws->faults.latency_ms)
		aws->injected.latency++;
	if (throttled(aws)) {
		aws->injected.throttle++;
		aws_timeline_add(aws, "throttle", "%s", req->action ? req->action : "?");
		if (req->service == AWS_SERVICE_EC2)
			r = aws_error(resp, req, 503, "RequestLimitExceeded", "Request limit exceeded.");
		else if (req->service == AWS_SERVICE_STS || req->service == AWS_SERVICE_IAM)
			r = aws_error(resp, req, 400, "Throttling", "Rate exceeded");
		else
			r = aws_error(resp, req, 400, "ThrottlingException", "Rate exceeded");
		return r < 0 ? r : 1;
	}
	if (aws->faults.error_rate > 0 && aws_rand_unit(aws) < aws->faults.error_rate) {
		aws->injected.internal_error++;
		aws_timeline_add(aws, "internal-error", "%s", req->action ? req->action : "?");
		if (req->service == AWS_SERVICE_SSM || req->service == AWS_SERVICE_PRICING)
			r = aws_error(resp, req, 500, "InternalServerError", "An internal error has occurred");
		else if (req->service == AWS_SERVICE_STS)
			r = aws_error(resp, req, 500, "InternalFailure", "An internal error has occurred");
		else if (req->service == AWS_SERVICE_IAM)
			r = aws_error(resp, req, 500, "ServiceFailure", "An internal error has occurred");
		else
			r = aws_error(resp, req, 500, "InternalError", "An internal error has occurred");
		return r < 0 ? r : 1;
	}
	return 0;
}

int aws_faults_lose_answer(struct sim_aws *aws, const struct aws_request *req,
			   struct aws_response *resp)
{
	int r;

	if (req->service != AWS_SERVICE_EC2 || resp->status >= 400)
		return 0;
	if (aws->faults.garbled_answer_rate > 0 && resp->len > 1 &&
	    aws_rand_unit(aws) < aws->faults.garbled_answer_rate) {
		aws->injected.garbled_answer++;
		aws_timeline_add(aws, "garbled-answer", "%s", req->action ? req->action : "?");
		resp->len /= 2;
		resp->body[resp->len] = '\0';
		return 1;
	}
	if (aws->faults.lost_answer_rate <= 0 || aws_rand_unit(aws) >= aws->faults.lost_answer_rate)
		return 0;
	aws->injected.lost_answer++;
	aws_timeline_add(aws, "lost-answer", "%s", req->action ? req->action : "?");
	aws_response_clear(resp);
	r = aws_error(resp, req, 500, "InternalError", "An internal error has occurred");
	return r < 0 ? r : 1;
}

/* Queues EventBridge's "EC2 Spot Instance Interruption Warning" and
 * terminates the instance aws->interruption_ms later. */
int aws_interrupt_instance(struct sim_aws *aws, const char *id, char *err, size_t errlen)
{
	struct aws_instance *i = aws_instance_find(aws, id);
	int r;

	if (!i || !i->spot || (i->state != INSTANCE_PENDING && i->state != INSTANCE_RUNNING)) {
		snprintf(err, errlen, "instance %s is not a pending or running spot instance", id);
		return -EINVAL;
	}
	if (i->interrupt_at_ms)
		return 0;
	r = aws_event_enqueue(aws, i, "EC2 Spot Instance Interruption Warning",
			      json_pack("{s:s, s:s}", "instance-id", i->id, "instance-action", "terminate"));
	if (r < 0) {
		snprintf(err, errlen, "out of memory");
		return r;
	}
	i->interrupt_at_ms = (uint64_t)clock_realtime_ms() + aws->interruption_ms;
	aws_timeline_add(aws, "spot-interruption-warning", "%s", i->id);
	return 0;
}

/* EventBridge's "EC2 Instance Rebalance Recommendation" (no termination). */
int aws_rebalance_instance(struct sim_aws *aws, const char *id, char *err, size_t errlen)
{
	struct aws_instance *i = aws_instance_find(aws, id);
	int r;

	if (!i || (i->state != INSTANCE_PENDING && i->state != INSTANCE_RUNNING)) {
		snprintf(err, errlen, "instance %s is not pending or running", id);
		return -EINVAL;
	}
	r = aws_event_enqueue(aws, i, "EC2 Instance Rebalance Recommendation",
			      json_pack("{s:s}", "instance-id", i->id));
	if (r < 0) {
		snprintf(err, errlen, "out of memory");
		return r;
	}
	aws_timeline_add(aws, "rebalance-recommendation", "%s", i->id);
	return 0;
}
