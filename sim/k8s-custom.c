/*
 * What kube-apiserver's decoder does to a custom resource before any
 * admission: prune the fields its schema does not know, report them as
 * fieldValidation asks, and apply the schema's defaults
 * (apiextensions-apiserver pkg/apiserver/customresource_handler.go
 * unstructuredSchemaCoercer and unstructuredDefaulter; the strict errors as
 * apiserver pkg/endpoints/handlers create.go/update.go transformDecodeError
 * and patch.go applyPatchToCurrentObject make them). Called by k8s-write.c
 * on every create and update of a custom resource, the sim's own writes
 * included (as Ignore: a real controller's writes are pruned too).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-schema.h"
#include "sim/k8s-store-internal.h"

/* "strict decoding error: unknown field "a", unknown field "b"". */
static void strict_text(const json_t *unknown, char *buf, size_t size)
{
	size_t len = (size_t)snprintf(buf, size, "strict decoding error: ");
	const json_t *u;
	size_t i;

	json_array_foreach(unknown, i, u)
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%sunknown field \"%s\"",
						i ? ", " : "", json_string_value(u));
}

/* A PATCH refused: errors.NewInvalid(GroupKind{}, "", field.Invalid("patch",
 * string(patchedObjJS), strictDecodingError)). */
static int patch_refused(const json_t *patched, const char *strict, struct k8s_error *err)
{
	char *js = json_dumps(patched, JSON_COMPACT | JSON_SORT_KEYS);
	json_t *quoted = js ? json_string(js) : NULL;
	char value[sizeof(err->message)], message[sizeof(err->message)];

	free(js);
	if (!quoted)
		return -ENOMEM;
	/* The object is cut, not the errors after it, when it is too long
	 * for our Status message (upstream's has no limit). */
	k8s_schema_go_value(quoted, value, sizeof(value) - 64 - MIN(strlen(strict), sizeof(value) / 2));
	json_decref(quoted);
	/* Cut as the Status message is: the object may be large. */
	if (snprintf(message, sizeof(message), "Invalid value: %s: %s", value, strict) < 0)
		message[0] = '\0';
	k8s_error_set(err, 422, "Invalid", " \"\" is invalid: patch: %s", message);
	json_decref(err->details);
	err->details = json_pack("{s:s, s:[{s:s, s:s, s:s}]}", "kind", "", "causes", "reason",
				 "FieldValueInvalid", "message", message, "field", "patch");
	return -EINVAL;
}

/*
 * A server-side apply whose configuration has fields the schema does not
 * declare: the field manager's ObjectToTyped fails, a plain error that the
 * handler answers 500 with no reason (managedfields structuredmerge.go
 * Apply, "failed to create typed patch object (<ns>/<name>; <gvk>)";
 * structured-merge-diff's ValidationErrors, one per line when several).
 */
static int apply_refused(const struct k8s_resource *res, const json_t *obj, const json_t *unknown,
			 struct k8s_error *err)
{
	const json_t *meta = json_object_get(obj, "metadata"), *u;
	char paths[2048] = "";
	size_t i, len = 0, n = json_array_size(unknown);

	json_array_foreach(unknown, i, u)
		if (len < sizeof(paths))
			len += (size_t)snprintf(paths + len, sizeof(paths) - len, "%s.%s: field not declared in schema",
						n > 1 ? "\n  " : "", json_string_value(u));
	k8s_error_set(err, 500, NULL, "failed to create typed patch object (%s/%s; %s/%s, Kind=%s): %s%s",
		      json_string_value(json_object_get(meta, "namespace")) ?: "",
		      json_string_value(json_object_get(meta, "name")) ?: "", res->group, res->version,
		      res->kind, n > 1 ? "errors:" : "", paths);
	return -EINVAL;
}

int k8s_custom_decode(const struct k8s_resource *res, json_t *obj,
		      const struct k8s_write_options *opts, struct k8s_error *err)
{
	enum k8s_field_validation fv = opts ? opts->field_validation : K8S_FIELD_VALIDATION_IGNORE;
	json_t *unknown, *patched = NULL, *u;
	char strict[sizeof(err->message)];
	size_t i;
	int r;

	if (!res->custom || !res->schema)
		return 0;
	unknown = json_array();
	if (!unknown)
		return -ENOMEM;
	if (fv == K8S_FIELD_VALIDATION_STRICT && opts->patch && !opts->apply && !(patched = json_deep_copy(obj))) {
		r = -ENOMEM;
		goto out;
	}
	r = k8s_schema_prune(res->schema, obj, unknown);
	if (r < 0 || json_array_size(unknown) == 0)
		goto defaults;
	if (opts && opts->apply) {
		r = apply_refused(res, obj, unknown, err);
		goto out;
	}
	if (fv == K8S_FIELD_VALIDATION_STRICT) {
		strict_text(unknown, strict, sizeof(strict));
		if (patched) {
			r = patch_refused(patched, strict, err);
			goto out;
		}
		k8s_error_set(err, 400, "BadRequest", "%s in version \"%s\" cannot be handled as a %s: %s",
			      res->kind, res->version, res->kind, strict);
		r = -EINVAL;
		goto out;
	}
	if (fv == K8S_FIELD_VALIDATION_WARN && opts->warnings)
		json_array_foreach(unknown, i, u) {
			char text[1100];

			snprintf(text, sizeof(text), "unknown field \"%s\"", json_string_value(u));
			if (json_array_append_new(opts->warnings, json_string(text)) < 0) {
				r = -ENOMEM;
				goto out;
			}
		}
defaults:
	if (r >= 0)
		r = k8s_schema_default(res->schema, obj);
out:
	json_decref(patched);
	json_decref(unknown);
	return r;
}
