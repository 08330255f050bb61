/*
 * API errors as the real server reports them: a metav1.Status object with
 * code, reason and message, and DeleteOptions decoding. Called by the store
 * and the HTTP handlers; holds no state.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-store.h"

void k8s_error_set(struct k8s_error *err, int code, const char *reason,
		   const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	err->code = code;
	err->reason = reason;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

void k8s_error_clear(struct k8s_error *err)
{
	json_decref(err->details);
	memset(err, 0, sizeof(*err));
}

json_t *k8s_status_new(const struct k8s_error *err)
{
	json_t *st = json_pack("{s:s, s:s, s:{}}", "kind", "Status", "apiVersion",
			       "v1", "metadata");

	if (!st)
		return NULL;
	if (!err || err->code < 300) {
		json_object_set_new(st, "status", json_string("Success"));
		json_object_set_new(st, "code", json_integer(err ? err->code : 200));
		return st;
	}
	json_object_set_new(st, "status", json_string("Failure"));
	json_object_set_new(st, "message", json_string(err->message));
	json_object_set_new(st, "reason", json_string(err->reason ? err->reason : ""));
	if (err->details)
		json_object_set(st, "details", err->details);
	json_object_set_new(st, "code", json_integer(err->code));
	return st;
}

void k8s_delete_options_init(struct k8s_delete_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->propagation = K8S_PROPAGATE_BACKGROUND;
	opts->grace_period_seconds = -1;
}

int k8s_delete_options_from_json(struct k8s_delete_options *opts,
				 const json_t *body, struct k8s_error *err)
{
	const json_t *pre, *grace;
	const char *prop;

	if (!body || json_is_null(body))
		return 0;
	if (!json_is_object(body)) {
		k8s_error_set(err, 400, "BadRequest", "DeleteOptions must be an object");
		return -EINVAL;
	}
	prop = json_string_value(json_object_get(body, "propagationPolicy"));
	if (json_is_false(json_object_get(body, "orphanDependents")))
		opts->propagation = K8S_PROPAGATE_BACKGROUND;
	if (json_is_true(json_object_get(body, "orphanDependents")))
		opts->propagation = K8S_PROPAGATE_ORPHAN;
	if (prop) {
		if (streq(prop, "Background"))
			opts->propagation = K8S_PROPAGATE_BACKGROUND;
		else if (streq(prop, "Foreground"))
			opts->propagation = K8S_PROPAGATE_FOREGROUND;
		else if (streq(prop, "Orphan"))
			opts->propagation = K8S_PROPAGATE_ORPHAN;
		else {
			k8s_error_set(err, 422, "Invalid",
				      "propagationPolicy: Unsupported value: \"%s\": supported values: \"Foreground\", \"Background\", \"Orphan\"",
				      prop);
			return -EINVAL;
		}
	}
	grace = json_object_get(body, "gracePeriodSeconds");
	if (json_is_integer(grace))
		opts->grace_period_seconds = (long)json_integer_value(grace);
	pre = json_object_get(body, "preconditions");
	opts->precondition_uid = json_string_value(json_object_get(pre, "uid"));
	opts->precondition_rv = json_string_value(json_object_get(pre, "resourceVersion"));
	return 0;
}
