/*
 * The structural validation kube-apiserver applies to the RBAC kinds
 * (rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding,
 * ClusterRoleBinding), as kubernetes pkg/apis/rbac/validation/validation.go
 * does it: ValidatePolicyRule (verbs required; a rule names resources with
 * their API groups or non-resource URLs, never both, and a Role's never
 * URLs), ValidateClusterRole's aggregationRule, ValidateRoleBinding and
 * ValidateClusterRoleBinding's roleRef and ValidateRoleBindingSubject, and
 * the *BindingUpdate check that a roleRef never changes. Causes are
 * appended with upstream's field paths and field.Error bodies; k8s-validate.c
 * turns them into the 422. Object names are checked by k8s-write.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-store-internal.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

static int cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	return json_array_append_new(causes, json_pack("{s:s, s:s, s:s}", "reason", reason,
						       "message", message, "field", field)) < 0
		       ? -ENOMEM
		       : 0;
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key)) ?: "";
}

static size_t count(const json_t *o, const char *key)
{
	return json_array_size(json_object_get(o, key));
}

/* Go's %#v of a []string, as field.Invalid prints its value. */
static void go_strings(const json_t *arr, char *buf, size_t size)
{
	size_t len = (size_t)snprintf(buf, size, "[]string{");
	const json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s\"%s\"", i ? ", " : "",
						json_string_value(v) ?: "");
	if (len < size)
		snprintf(buf + len, size - len, "}");
}

static int validate_rule(const json_t *rule, bool namespaced, size_t index, json_t *causes)
{
	char field[96], value[512];
	int r = 0;

	if (count(rule, "verbs") == 0) {
		snprintf(field, sizeof(field), "rules[%zu].verbs", index);
		r = cause(causes, "FieldValueRequired", field,
			  "Required value: verbs must contain at least one value");
	}
	if (r >= 0 && count(rule, "nonResourceURLs") > 0) {
		snprintf(field, sizeof(field), "rules[%zu].nonResourceURLs", index);
		go_strings(json_object_get(rule, "nonResourceURLs"), value, sizeof(value));
		if (namespaced)
			r = cause(causes, "FieldValueInvalid", field,
				  "Invalid value: %s: namespaced rules cannot apply to non-resource URLs",
				  value);
		if (r >= 0 && (count(rule, "apiGroups") || count(rule, "resources") ||
			       count(rule, "resourceNames")))
			r = cause(causes, "FieldValueInvalid", field,
				  "Invalid value: %s: rules cannot apply to both regular resources and non-resource URLs",
				  value);
		return r;
	}
	if (r >= 0 && count(rule, "apiGroups") == 0) {
		snprintf(field, sizeof(field), "rules[%zu].apiGroups", index);
		r = cause(causes, "FieldValueRequired", field,
			  "Required value: resource rules must supply at least one api group");
	}
	if (r >= 0 && count(rule, "resources") == 0) {
		snprintf(field, sizeof(field), "rules[%zu].resources", index);
		r = cause(causes, "FieldValueRequired", field,
			  "Required value: resource rules must supply at least one resource");
	}
	return r;
}

/* path.IsValidPathSegmentName, upstream's ValidateRBACName. */
static const char *path_segment_problem(const char *name)
{
	if (streq(name, "."))
		return "may not be '.'";
	if (streq(name, ".."))
		return "may not be '..'";
	if (strchr(name, '/'))
		return "may not contain '/'";
	if (strchr(name, '%'))
		return "may not contain '%'";
	return NULL;
}

static int validate_role_ref(const json_t *ref, bool namespaced, json_t *causes)
{
	const char *group = str(ref, "apiGroup"), *kind = str(ref, "kind"), *name = str(ref, "name");
	const char *problem;
	int r = 0;

	if (!streq(group, RBAC_GROUP))
		r = cause(causes, "FieldValueNotSupported", "roleRef.apiGroup",
			  "Unsupported value: \"%s\": supported values: \"" RBAC_GROUP "\"", group);
	if (r >= 0 && !(streq(kind, "ClusterRole") || (namespaced && streq(kind, "Role"))))
		r = cause(causes, "FieldValueNotSupported", "roleRef.kind",
			  "Unsupported value: \"%s\": supported values: %s", kind,
			  namespaced ? "\"Role\", \"ClusterRole\"" : "\"ClusterRole\"");
	if (r >= 0 && !*name)
		r = cause(causes, "FieldValueRequired", "roleRef.name", "Required value");
	else if (r >= 0 && (problem = path_segment_problem(name)))
		r = cause(causes, "FieldValueInvalid", "roleRef.name", "Invalid value: \"%s\": %s",
			  name, problem);
	return r;
}

static int validate_subject(const json_t *s, bool namespaced, size_t index, json_t *causes)
{
	const char *kind = str(s, "kind"), *group = str(s, "apiGroup");
	char field[96];
	int r = 0;

	if (!*str(s, "name")) {
		snprintf(field, sizeof(field), "subjects[%zu].name", index);
		r = cause(causes, "FieldValueRequired", field, "Required value");
	}
	if (r < 0)
		return r;
	if (streq(kind, "ServiceAccount")) {
		snprintf(field, sizeof(field), "subjects[%zu].apiGroup", index);
		if (*group)
			r = cause(causes, "FieldValueNotSupported", field,
				  "Unsupported value: \"%s\": supported values: \"\"", group);
		snprintf(field, sizeof(field), "subjects[%zu].namespace", index);
		if (r >= 0 && !namespaced && !*str(s, "namespace"))
			r = cause(causes, "FieldValueRequired", field, "Required value");
	} else if (streq(kind, "User") || streq(kind, "Group")) {
		/* v1's SetDefaults_Subject fills an empty apiGroup in first. */
		snprintf(field, sizeof(field), "subjects[%zu].apiGroup", index);
		if (*group && !streq(group, RBAC_GROUP))
			r = cause(causes, "FieldValueNotSupported", field,
				  "Unsupported value: \"%s\": supported values: \"" RBAC_GROUP "\"",
				  group);
	} else {
		snprintf(field, sizeof(field), "subjects[%zu].kind", index);
		r = cause(causes, "FieldValueNotSupported", field,
			  "Unsupported value: \"%s\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
			  kind);
	}
	return r;
}

static int validate_binding(const json_t *obj, const json_t *old, bool namespaced, json_t *causes)
{
	const json_t *ref = json_object_get(obj, "roleRef"), *s;
	const json_t *old_ref = old ? json_object_get(old, "roleRef") : NULL;
	size_t i;
	int r = validate_role_ref(ref, namespaced, causes);

	json_array_foreach(json_object_get(obj, "subjects"), i, s)
		if (r >= 0)
			r = validate_subject(s, namespaced, i, causes);
	if (r >= 0 && old &&
	    !(streq(str(ref, "apiGroup"), str(old_ref, "apiGroup")) &&
	      streq(str(ref, "kind"), str(old_ref, "kind")) &&
	      streq(str(ref, "name"), str(old_ref, "name"))))
		r = cause(causes, "FieldValueInvalid", "roleRef",
			  "Invalid value: rbac.RoleRef{APIGroup:\"%s\", Kind:\"%s\", Name:\"%s\"}: cannot change roleRef",
			  str(ref, "apiGroup"), str(ref, "kind"), str(ref, "name"));
	return r;
}

int k8s_rbac_validate(const struct k8s_resource *res, const json_t *obj, const json_t *old,
		      json_t *causes)
{
	bool role = streq(res->kind, "Role"), cluster_role = streq(res->kind, "ClusterRole");
	const json_t *rule, *agg;
	size_t i;
	int r = 0;

	if (!streq(res->group, RBAC_GROUP))
		return 0;
	if (streq(res->kind, "RoleBinding") || streq(res->kind, "ClusterRoleBinding"))
		return validate_binding(obj, old, streq(res->kind, "RoleBinding"), causes);
	if (!role && !cluster_role)
		return 0;
	json_array_foreach(json_object_get(obj, "rules"), i, rule)
		if (r >= 0)
			r = validate_rule(rule, role, i, causes);
	agg = json_object_get(obj, "aggregationRule");
	if (r >= 0 && cluster_role && json_is_object(agg) && count(agg, "clusterRoleSelectors") == 0)
		r = cause(causes, "FieldValueRequired", "aggregationRule.clusterRoleSelectors",
			  "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil");
	return r;
}
