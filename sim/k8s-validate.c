/*
 * The admission checks of kube-apiserver's registry strategies that
 * kanna-sim enforces, so that no client sees it accept what a real cluster
 * refuses: a pod's (or a workload's pod template's) resource quantities
 * must not be negative (ValidateResourceQuantityValue: "must be greater
 * than or equal to 0"), with upstream's 422 Invalid, its message and its
 * causes; a container's volumeMounts must name a volume of the pod and
 * mount at distinct paths (ValidateVolumeMounts); a workload's selector
 * must select its own pod template (ValidatePodTemplateSpecForReplicaSet);
 * a service-account-token Secret must name its ServiceAccount (ValidateSecret);
 * the RBAC kinds' structural checks (k8s-rbac.c); and a custom resource's
 * values against the enums of its CRD version's openAPIV3Schema (structural
 * schema validation: karpenter.k8s.aws/v1 refuses amiFamily Ubuntu, which
 * v1beta1 allows). Called by k8s-write.c on create and on every spec write.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantity.h"
#include "common/util.h"
#include "sim/k8s-selector.h"
#include "sim/k8s-store-internal.h"

/* Kinds that hold a pod spec, and where. */
static const struct {
	const char *group, *kind, *path;
} pod_specs[] = {
	{ "", "Pod", "spec" },
	{ "", "PodTemplate", "template.spec" },
	{ "", "ReplicationController", "spec.template.spec" },
	{ "apps", "Deployment", "spec.template.spec" },
	{ "apps", "ReplicaSet", "spec.template.spec" },
	{ "apps", "StatefulSet", "spec.template.spec" },
	{ "apps", "DaemonSet", "spec.template.spec" },
	{ "batch", "Job", "spec.template.spec" },
	{ "batch", "CronJob", "spec.jobTemplate.spec.template.spec" },
};

static const json_t *at_path(const json_t *o, const char *dotted)
{
	char key[64];

	while (o && *dotted) {
		size_t n = strcspn(dotted, ".");

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, dotted, n);
		key[n] = '\0';
		o = json_object_get(o, key);
		dotted += n + (dotted[n] == '.');
	}
	return o;
}

/* Negative as resource.Quantity's Sign() says: a quantity (other checks
 * refuse what is not one) with a minus and a nonzero digit before its
 * suffix or exponent. Upstream prints the canonical form ("-0.5" as
 * "-500m"); the value is shown here as written. */
static bool negative_quantity(const json_t *v, char *text, size_t size)
{
	const char *s = json_string_value(v);
	int64_t q;

	if (json_is_integer(v)) {
		snprintf(text, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return json_integer_value(v) < 0;
	}
	if (json_is_real(v)) {
		snprintf(text, size, "%g", json_real_value(v));
		return json_real_value(v) < 0;
	}
	if (!s || s[0] != '-' || quantity_parse(s, true, &q) < 0)
		return false;
	snprintf(text, size, "%s", s);
	for (s++; *s && strchr("0123456789.", *s); s++)
		if (*s >= '1' && *s <= '9')
			return true;
	return false;
}

struct field_errors {
	json_t *causes;
	char text[2048]; /* "a, b" as errs.ToAggregate() joins them */
};

/* One field.Error: its cause, and "field: message" in the aggregate text. */
static void field_error(struct field_errors *fe, const char *reason, const char *field,
			const char *message)
{
	size_t len = strlen(fe->text);

	json_array_append_new(fe->causes, json_pack("{s:s, s:s, s:s}", "reason", reason,
						    "message", message, "field", field));
	snprintf(fe->text + len, sizeof(fe->text) - len, "%s%s: %s", len ? ", " : "", field,
		 message);
}

static void check_list(struct field_errors *fe, const json_t *list, const char *path)
{
	const char *name;
	const json_t *v;

	json_object_foreach((json_t *)list, name, v) {
		char field[256], value[64], message[128];

		if (!negative_quantity(v, value, sizeof(value)))
			continue;
		snprintf(field, sizeof(field), "%s[%s]", path, name);
		snprintf(message, sizeof(message), "Invalid value: \"%s\": must be greater than or equal to 0",
			 value);
		field_error(fe, "FieldValueInvalid", field, message);
	}
}

/* claim_templates: a StatefulSet's spec.volumeClaimTemplates, whose names
 * its controller adds to each pod's volumes (upstream's
 * ValidatePodTemplateSpecForStatefulSet leaves the template's mounts
 * unchecked for that reason); NULL for other kinds. */
static bool has_volume(const json_t *spec, const json_t *claim_templates, const char *name)
{
	const json_t *vol;
	size_t i;

	json_array_foreach(json_object_get(spec, "volumes"), i, vol)
		if (streq(json_string_value(json_object_get(vol, "name")) ?: "", name))
			return true;
	json_array_foreach(claim_templates, i, vol)
		if (streq(json_string_value(json_object_get(json_object_get(vol, "metadata"), "name")) ?: "",
			  name))
			return true;
	return false;
}

/* ValidateVolumeMounts (pkg/apis/core/validation): a mount of a volume the
 * pod does not declare is field.NotFound; two mounts at one path,
 * field.Invalid "must be unique". */
static void check_volume_mounts(struct field_errors *fe, const json_t *spec,
				const json_t *claim_templates, const json_t *c, const char *path)
{
	const json_t *mounts = json_object_get(c, "volumeMounts"), *m;
	char field[300], message[600];
	size_t i;

	json_array_foreach(mounts, i, m) {
		const char *name = json_string_value(json_object_get(m, "name")) ?: "";
		const char *at = json_string_value(json_object_get(m, "mountPath")) ?: "";

		if (*name && !has_volume(spec, claim_templates, name)) {
			snprintf(field, sizeof(field), "%s[%zu].name", path, i);
			snprintf(message, sizeof(message), "Not found: \"%.500s\"", name);
			field_error(fe, "FieldValueNotFound", field, message);
		}
		for (size_t j = 0; *at && j < i; j++)
			if (streq(json_string_value(json_object_get(json_array_get(mounts, j),
								    "mountPath")) ?: "", at)) {
				snprintf(field, sizeof(field), "%s[%zu].mountPath", path, i);
				snprintf(message, sizeof(message),
					 "Invalid value: \"%.500s\": must be unique", at);
				field_error(fe, "FieldValueInvalid", field, message);
				break;
			}
	}
}

static void check_pod_spec(struct field_errors *fe, const json_t *spec, const json_t *claim_templates,
			   const char *path)
{
	static const char *const lists[] = { "initContainers", "containers" };
	char at[256];
	const json_t *c;
	size_t i;

	for (size_t l = 0; l < ARRAY_SIZE(lists); l++)
		json_array_foreach(json_object_get(spec, lists[l]), i, c) {
			const json_t *res = json_object_get(c, "resources");

			snprintf(at, sizeof(at), "%s.%s[%zu].volumeMounts", path, lists[l], i);
			check_volume_mounts(fe, spec, claim_templates, c, at);
			snprintf(at, sizeof(at), "%s.%s[%zu].resources.limits", path, lists[l], i);
			check_list(fe, json_object_get(res, "limits"), at);
			snprintf(at, sizeof(at), "%s.%s[%zu].resources.requests", path, lists[l], i);
			check_list(fe, json_object_get(res, "requests"), at);
		}
	snprintf(at, sizeof(at), "%s.overhead", path);
	check_list(fe, json_object_get(spec, "overhead"), at);
}

/* ValidateSecret (pkg/apis/core/validation): a kubernetes.io/service-account-token
 * Secret names its ServiceAccount (the token controller fills in the
 * token); without the annotation, field.Required. */
static void check_secret(struct field_errors *fe, const json_t *obj)
{
	const json_t *annotations = at_path(obj, "metadata.annotations");
	const char *sa = json_string_value(
		json_object_get(annotations, "kubernetes.io/service-account.name"));

	if (!streq(json_string_value(json_object_get(obj, "type")) ?: "",
		   "kubernetes.io/service-account-token") || (sa && *sa))
		return;
	field_error(fe, "FieldValueRequired",
		    "metadata.annotations[kubernetes.io/service-account.name]", "Required value");
}

static int compare_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Go's %#v of a map[string]string, as field.Invalid prints the template's
 * labels: keys sorted, `map[string]string{"a":"b", "c":"d"}`, or
 * `map[string]string(nil)` for none. */
static void format_labels(const json_t *labels, char *buf, size_t size)
{
	const char *keys[256], *key;
	size_t n = 0, len;
	const json_t *v;

	if (!json_is_object(labels)) {
		snprintf(buf, size, "map[string]string(nil)");
		return;
	}
	json_object_foreach((json_t *)labels, key, v)
		if (n < ARRAY_SIZE(keys))
			keys[n++] = key;
	qsort(keys, n, sizeof(keys[0]), compare_keys);
	len = (size_t)snprintf(buf, size, "map[string]string{");
	for (size_t i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s\"%s\":\"%s\"", i ? ", " : "",
					keys[i],
					json_string_value(json_object_get(labels, keys[i])) ?: "");
	if (len < size)
		snprintf(buf + len, size - len, "}");
}

/* ValidatePodTemplateSpecForReplicaSet (pkg/apis/apps/validation), which
 * ValidateDeploymentSpec and ValidateReplicaSetSpec call, and the same
 * check in ValidateStatefulSetSpec and ValidateDaemonSetSpec: a selector
 * that is not empty must match the template's labels, else
 * field.Invalid(spec.template.metadata.labels, labels, "`selector` does not
 * match template `labels`"). An empty or malformed selector has its own
 * errors upstream, not made here. */
static void check_template_selected(struct field_errors *fe, const json_t *obj)
{
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *sel = json_object_get(spec, "selector");
	const json_t *labels = at_path(spec, "template.metadata.labels");
	struct k8s_selector *parsed = NULL;
	char err[256], value[1500], message[1600];
	bool matches;

	if (json_object_size(json_object_get(sel, "matchLabels")) == 0 &&
	    json_array_size(json_object_get(sel, "matchExpressions")) == 0)
		return;
	if (k8s_label_selector_from_json(sel, &parsed, err, sizeof(err)) < 0)
		return;
	matches = k8s_label_selector_matches(parsed, labels);
	k8s_selector_free(parsed);
	if (matches)
		return;
	format_labels(labels, value, sizeof(value));
	snprintf(message, sizeof(message),
		 "Invalid value: %s: `selector` does not match template `labels`", value);
	field_error(fe, "FieldValueInvalid", "spec.template.metadata.labels", message);
}

/* The openAPIV3Schema of res's version in its CRD, or NULL. */
static const json_t *crd_schema(const struct k8s_registry *reg, const struct k8s_resource *res)
{
	char crd_name[512];
	const json_t *v;
	size_t i;

	snprintf(crd_name, sizeof(crd_name), "%s.%s", res->plural, res->group);
	json_array_foreach(json_object_get(json_object_get(json_object_get(reg->crds, crd_name), "spec"),
					   "versions"), i, v)
		if (streq_ptr(json_string_value(json_object_get(v, "name")), res->version))
			return json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
	return NULL;
}

/* field.NotSupported for every value outside its schema's enum, as
 * apiextensions' validator reports it: `spec.amiFamily: Unsupported value:
 * "Ubuntu": supported values: "AL2", "AL2023", …`. */
static void check_enums(struct field_errors *fe, const json_t *schema, const json_t *v, char *path,
			size_t size)
{
	const json_t *en = json_object_get(schema, "enum"), *e, *child;
	size_t len = strlen(path), i;
	const char *key;
	bool listed = false;

	if (json_is_array(en) && json_array_size(en)) {
		json_array_foreach(en, i, e)
			listed |= json_equal(e, v);
		if (!listed) {
			char msg[1024];
			char *shown = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

			snprintf(msg, sizeof(msg), "Unsupported value: %s: supported values: ", shown ?: "?");
			free(shown);
			json_array_foreach(en, i, e) {
				char *s = json_dumps(e, JSON_ENCODE_ANY | JSON_COMPACT);

				snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%s%s", i ? ", " : "", s ?: "?");
				free(s);
			}
			field_error(fe, "FieldValueNotSupported", path, msg);
		}
	}
	if (json_is_object(v) && json_is_object(json_object_get(schema, "properties")))
		json_object_foreach((json_t *)v, key, child) {
			const json_t *sub = json_object_get(json_object_get(schema, "properties"), key);

			if (!sub || (len == 0 && streq(key, "metadata")))
				continue;
			snprintf(path + len, size - len, "%s%s", len ? "." : "", key);
			check_enums(fe, sub, child, path, size);
			path[len] = '\0';
		}
	else if (json_is_array(v) && json_is_object(json_object_get(schema, "items")))
		json_array_foreach(v, i, child) {
			snprintf(path + len, size - len, "[%zu]", i);
			check_enums(fe, json_object_get(schema, "items"), child, path, size);
			path[len] = '\0';
		}
}

int k8s_validate(const struct k8s_registry *reg, const struct k8s_resource *res, const char *name,
		 const json_t *obj, const json_t *old, struct k8s_error *err)
{
	struct field_errors fe = { 0 };
	const json_t *schema = res->custom && reg && !reg->crd_enums_unchecked ? crd_schema(reg, res)
										 : NULL;
	size_t n;

	if (schema) {
		char path[512] = "";

		fe.causes = json_array();
		if (!fe.causes)
			return -ENOMEM;
		check_enums(&fe, schema, obj, path, sizeof(path));
	}
	if (streq(res->group, "rbac.authorization.k8s.io")) {
		const json_t *c;
		size_t i;

		if (!fe.causes)
			fe.causes = json_array();
		if (!fe.causes || k8s_rbac_validate(res, obj, old, fe.causes) < 0) {
			json_decref(fe.causes);
			return -ENOMEM;
		}
		json_array_foreach(fe.causes, i, c) {
			size_t len = strlen(fe.text);

			snprintf(fe.text + len, sizeof(fe.text) - len, "%s%s: %s", len ? ", " : "",
				 json_string_value(json_object_get(c, "field")),
				 json_string_value(json_object_get(c, "message")));
		}
	}
	if (streq(res->group, "") && streq(res->kind, "Secret")) {
		if (!fe.causes)
			fe.causes = json_array();
		if (!fe.causes)
			return -ENOMEM;
		check_secret(&fe, obj);
	}
	for (size_t i = 0; i < ARRAY_SIZE(pod_specs); i++) {
		if (!streq(res->group, pod_specs[i].group) || !streq(res->kind, pod_specs[i].kind))
			continue;
		if (!fe.causes)
			fe.causes = json_array();
		if (!fe.causes)
			return -ENOMEM;
		if (streq(res->group, "apps"))
			check_template_selected(&fe, obj);
		check_pod_spec(&fe, at_path(obj, pod_specs[i].path),
			       streq(res->kind, "StatefulSet") ? at_path(obj, "spec.volumeClaimTemplates") : NULL,
			       pod_specs[i].path);
		break;
	}
	n = json_array_size(fe.causes);
	if (n == 0) {
		json_decref(fe.causes);
		return 0;
	}
	/* Upstream: `<Kind>[.<group>] "<name>" is invalid: <one error>` or
	 * `[<error>, <error>]` for several. */
	k8s_error_set(err, 422, "Invalid", "%s%s%s \"%s\" is invalid: %s%s%s", res->kind,
		      *res->group ? "." : "", res->group, name, n > 1 ? "[" : "", fe.text,
		      n > 1 ? "]" : "");
	if (err) {
		json_decref(err->details);
		err->details = json_pack("{s:s, s:s*, s:s, s:o}", "name", name, "group",
					 *res->group ? res->group : NULL, "kind", res->kind, "causes",
					 fe.causes);
	} else {
		json_decref(fe.causes);
	}
	return -EINVAL;
}
