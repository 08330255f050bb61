/*
 * API errors as the real server reports them: a metav1.Status object with
 * code, reason and message. Called by the store and the HTTP handlers;
 * holds no state. (DeleteOptions are decoded in k8s-options.c.)
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
	/* metav1.Status reason is omitempty: an error that is no API status
	 * (StatusReasonUnknown, "") has none (responsewriters ErrorToAPIStatus). */
	if (err->reason && *err->reason)
		json_object_set_new(st, "reason", json_string(err->reason));
	if (err->details)
		json_object_set(st, "details", err->details);
	json_object_set_new(st, "code", json_integer(err->code));
	return st;
}
