/*
 * The admission checks of kube-apiserver's registry strategies that
 * kanna-sim enforces, so that no client sees it accept what a real cluster
 * refuses: a pod's (or a workload's pod template's) resource quantities
 * must not be negative (ValidateResourceQuantityValue: "must be greater
 * than or equal to 0"), with upstream's 422 Invalid, its message and its
 * causes; and the RBAC kinds' structural checks (k8s-rbac.c). Called by
 * k8s-write.c on create and on every spec write.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/quantity.h"
#include "common/util.h"
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

static void check_list(struct field_errors *fe, const json_t *list, const char *path)
{
	const char *name;
	const json_t *v;

	json_object_foreach((json_t *)list, name, v) {
		char field[256], value[64], message[128];
		size_t len = strlen(fe->text);

		if (!negative_quantity(v, value, sizeof(value)))
			continue;
		snprintf(field, sizeof(field), "%s[%s]", path, name);
		snprintf(message, sizeof(message), "Invalid value: \"%s\": must be greater than or equal to 0",
			 value);
		json_array_append_new(fe->causes, json_pack("{s:s, s:s, s:s}", "reason",
							    "FieldValueInvalid", "message", message,
							    "field", field));
		snprintf(fe->text + len, sizeof(fe->text) - len, "%s%s: %s", len ? ", " : "", field,
			 message);
	}
}

static void check_pod_spec(struct field_errors *fe, const json_t *spec, const char *path)
{
	static const char *const lists[] = { "initContainers", "containers" };
	char at[256];
	const json_t *c;
	size_t i;

	for (size_t l = 0; l < ARRAY_SIZE(lists); l++)
		json_array_foreach(json_object_get(spec, lists[l]), i, c) {
			const json_t *res = json_object_get(c, "resources");

			snprintf(at, sizeof(at), "%s.%s[%zu].resources.limits", path, lists[l], i);
			check_list(fe, json_object_get(res, "limits"), at);
			snprintf(at, sizeof(at), "%s.%s[%zu].resources.requests", path, lists[l], i);
			check_list(fe, json_object_get(res, "requests"), at);
		}
	snprintf(at, sizeof(at), "%s.overhead", path);
	check_list(fe, json_object_get(spec, "overhead"), at);
}

int k8s_validate(const struct k8s_resource *res, const char *name, const json_t *obj,
		 const json_t *old, struct k8s_error *err)
{
	struct field_errors fe = { 0 };
	size_t n;

	if (streq(res->group, "rbac.authorization.k8s.io")) {
		const json_t *c;
		size_t i;

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
	for (size_t i = 0; i < ARRAY_SIZE(pod_specs); i++) {
		if (!streq(res->group, pod_specs[i].group) || !streq(res->kind, pod_specs[i].kind))
			continue;
		fe.causes = json_array();
		if (!fe.causes)
			return -ENOMEM;
		check_pod_spec(&fe, at_path(obj, pod_specs[i].path), pod_specs[i].path);
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
