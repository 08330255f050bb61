/*
 * Compiles a CRD version's openAPIV3Schema into a tree of struct k8s_schema
 * (once, when the CRD is loaded: the sim stores thousands of objects and
 * must not re-read the schema per request), and the two mutations
 * kube-apiserver makes with it on every custom resource it decodes:
 * pruning of unknown fields (apiextensions-apiserver
 * pkg/apiserver/schema/pruning/algorithm.go, with the unknown paths that
 * fieldValidation=Strict/Warn report) and structural defaulting
 * (pkg/apiserver/schema/defaulting/algorithm.go, after
 * PruneNonNullableNullsWithoutDefaults). Validation is k8s-schema-validate.c's.
 *
 * Patterns: kube-openapi matches `pattern` with Go's regexp (RE2 syntax;
 * the OpenAPI spec says ECMA 262). kanna-sim uses POSIX extended regexes
 * (regcomp), so a pattern is translated: \d \w \s and their negations
 * become bracket expressions, \. and the like become the literal, (?: a
 * plain group, lazy quantifiers greedy ones (the same strings match
 * somewhere). What POSIX cannot say (lookarounds, \b) leaves the pattern
 * unchecked, with a warning when the CRD is loaded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "sim/k8s-schema.h"

/* Longest translated pattern: Karpenter's longest is under 300 bytes. */
#define K8S_PATTERN_MAX 4096

/* ObjectMeta's JSON fields: others are unknown fields of metadata. */
static const char *const object_meta_fields[] = {
	"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
	"generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
	"finalizers", "managedFields",
};

struct k8s_schema *k8s_schema_free(struct k8s_schema *s)
{
	if (!s)
		return NULL;
	json_decref(s->default_value);
	json_decref(s->enum_values);
	json_decref(s->list_map_keys);
	json_decref(s->validations);
	free(s->pattern);
	if (s->has_pattern)
		regfree(&s->pattern_re);
	for (size_t i = 0; i < s->n_required; i++)
		free(s->required[i]);
	free(s->required);
	for (size_t i = 0; i < s->n_properties; i++) {
		free(s->properties[i].name);
		k8s_schema_free(s->properties[i].schema);
	}
	free(s->properties);
	k8s_schema_free(s->items);
	k8s_schema_free(s->additional);
	for (size_t i = 0; i < s->n_any_of; i++)
		k8s_schema_free(s->any_of[i]);
	free(s->any_of);
	free(s->list_type);
	free(s);
	return NULL;
}

/* Appends text to out[*n]; false when it does not fit. */
static bool put(char *out, size_t *n, const char *text)
{
	size_t len = strlen(text);

	if (*n + len >= K8S_PATTERN_MAX)
		return false;
	memcpy(out + *n, text, len + 1);
	*n += len;
	return true;
}

/* An RE2/ECMA escape \c as POSIX ERE, inside a bracket expression or not;
 * NULL when POSIX has no equivalent. */
static const char *translate_escape(char c, bool in_bracket, char lit[4])
{
	static const char specials[] = ".[]()*+?{}|$^\\";

	switch (c) {
	case 'd': return in_bracket ? "0-9" : "[0-9]";
	case 'D': return in_bracket ? NULL : "[^0-9]";
	case 'w': return in_bracket ? "[:alnum:]_" : "[[:alnum:]_]";
	case 'W': return in_bracket ? NULL : "[^[:alnum:]_]";
	case 's': return in_bracket ? "[:space:]" : "[[:space:]]";
	case 'S': return in_bracket ? NULL : "[^[:space:]]";
	case 'n': return "\n";
	case 't': return "\t";
	default: break;
	}
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || !c)
		return NULL;
	if (in_bracket) {
		/* Only a backslash and plain punctuation are literal in a POSIX
		 * bracket as they are; ] - ^ would change its meaning. */
		if (c == ']' || c == '-' || c == '^')
			return NULL;
		lit[0] = c;
		lit[1] = '\0';
		return lit;
	}
	if (strchr(specials, c)) {
		lit[0] = '\\';
		lit[1] = c;
		lit[2] = '\0';
	} else {
		lit[0] = c;
		lit[1] = '\0';
	}
	return lit;
}

/* The pattern as a POSIX ERE into out; -EOPNOTSUPP when it cannot be one. */
static int translate_pattern(const char *p, char out[static K8S_PATTERN_MAX])
{
	bool in_bracket = false;
	size_t n = 0;
	char lit[4];

	out[0] = '\0';
	for (; *p; p++) {
		const char *t;

		if (*p == '\\') {
			t = translate_escape(p[1], in_bracket, lit);
			if (!t || !put(out, &n, t))
				return -EOPNOTSUPP;
			p++;
			continue;
		}
		if (in_bracket) {
			lit[0] = *p;
			lit[1] = '\0';
			if (*p == ']')
				in_bracket = false;
			if (!put(out, &n, lit))
				return -EOPNOTSUPP;
			continue;
		}
		if (*p == '[') {
			in_bracket = true;
			if (!put(out, &n, "["))
				return -EOPNOTSUPP;
			/* A leading ^ and ] are part of the bracket's syntax. */
			if (p[1] == '^' && (p++, !put(out, &n, "^")))
				return -EOPNOTSUPP;
			if (p[1] == ']' && (p++, !put(out, &n, "]")))
				return -EOPNOTSUPP;
			continue;
		}
		if (*p == '(' && p[1] == '?') {
			if (p[2] != ':')
				return -EOPNOTSUPP; /* lookaround, named group, flags */
			p += 2;
			if (!put(out, &n, "("))
				return -EOPNOTSUPP;
			continue;
		}
		/* Lazy quantifiers: the same strings match somewhere. */
		if (*p == '?' && n > 0 && strchr("*+?}", out[n - 1]) &&
		    !(n > 1 && out[n - 2] == '\\'))
			continue;
		lit[0] = *p;
		lit[1] = '\0';
		if (!put(out, &n, lit))
			return -EOPNOTSUPP;
	}
	return in_bracket ? -EOPNOTSUPP : 0;
}

static int compile_pattern(struct k8s_schema *s, const char *pattern)
{
	char *ere = malloc(K8S_PATTERN_MAX);
	int r;

	if (!ere)
		return -ENOMEM;
	s->pattern = strdup(pattern);
	if (!s->pattern) {
		free(ere);
		return -ENOMEM;
	}
	r = translate_pattern(pattern, ere);
	if (r >= 0 && regcomp(&s->pattern_re, ere, REG_EXTENDED | REG_NOSUB) == 0)
		s->has_pattern = true;
	else
		log_warn("CRD pattern %s has no POSIX equivalent; values are not checked against it",
			    pattern);
	free(ere);
	return 0;
}

static int64_t int_or(const json_t *v, int64_t none)
{
	return json_is_integer(v) ? json_integer_value(v) : none;
}

static int cmp_property(const void *a, const void *b)
{
	return strcmp(((const struct k8s_schema_property *)a)->name,
		      ((const struct k8s_schema_property *)b)->name);
}

static int compile_node(const json_t *j, struct k8s_schema **ret);

static int compile_properties(struct k8s_schema *s, const json_t *props)
{
	const char *name;
	const json_t *v;
	int r;

	s->properties = calloc(json_object_size(props) + 1, sizeof(*s->properties));
	if (!s->properties)
		return -ENOMEM;
	json_object_foreach((json_t *)props, name, v) {
		struct k8s_schema_property *p = &s->properties[s->n_properties];

		p->name = strdup(name);
		if (!p->name)
			return -ENOMEM;
		s->n_properties++;
		r = compile_node(v, &p->schema);
		if (r < 0)
			return r;
	}
	qsort(s->properties, s->n_properties, sizeof(*s->properties), cmp_property);
	return 0;
}

static int compile_fields(struct k8s_schema *s, const json_t *j)
{
	static const char *const types[] = {
		[K8S_SCHEMA_OBJECT] = "object", [K8S_SCHEMA_ARRAY] = "array",
		[K8S_SCHEMA_STRING] = "string", [K8S_SCHEMA_INTEGER] = "integer",
		[K8S_SCHEMA_NUMBER] = "number", [K8S_SCHEMA_BOOLEAN] = "boolean",
	};
	const char *type = json_string_value(json_object_get(j, "type"));
	const json_t *v, *add = json_object_get(j, "additionalProperties");
	size_t i;
	int r;

	for (i = 1; type && i < ARRAY_SIZE(types); i++)
		if (streq(type, types[i]))
			s->type = (enum k8s_schema_type)i;
	if (type && s->type == K8S_SCHEMA_ANY)
		return -EINVAL;
	s->int_or_string = json_is_true(json_object_get(j, "x-kubernetes-int-or-string"));
	s->preserve_unknown = json_is_true(json_object_get(j, "x-kubernetes-preserve-unknown-fields"));
	s->nullable = json_is_true(json_object_get(j, "nullable"));
	s->embedded = json_is_true(json_object_get(j, "x-kubernetes-embedded-resource"));
	s->default_value = json_deep_copy(json_object_get(j, "default"));
	s->enum_values = json_deep_copy(json_object_get(j, "enum"));
	s->list_map_keys = json_deep_copy(json_object_get(j, "x-kubernetes-list-map-keys"));
	s->validations = json_deep_copy(json_object_get(j, "x-kubernetes-validations"));
	v = json_object_get(j, "x-kubernetes-list-type");
	if (json_is_string(v) && !(s->list_type = strdup(json_string_value(v))))
		return -ENOMEM;
	if ((v = json_object_get(j, "pattern")) && json_is_string(v) &&
	    (r = compile_pattern(s, json_string_value(v))) < 0)
		return r;
	s->has_minimum = json_is_number(v = json_object_get(j, "minimum"));
	s->minimum = json_number_value(v);
	s->has_maximum = json_is_number(v = json_object_get(j, "maximum"));
	s->maximum = json_number_value(v);
	s->exclusive_minimum = json_is_true(json_object_get(j, "exclusiveMinimum"));
	s->exclusive_maximum = json_is_true(json_object_get(j, "exclusiveMaximum"));
	s->min_length = int_or(json_object_get(j, "minLength"), -1);
	s->max_length = int_or(json_object_get(j, "maxLength"), -1);
	s->min_items = int_or(json_object_get(j, "minItems"), -1);
	s->max_items = int_or(json_object_get(j, "maxItems"), -1);
	s->min_properties = int_or(json_object_get(j, "minProperties"), -1);
	s->max_properties = int_or(json_object_get(j, "maxProperties"), -1);
	v = json_object_get(j, "required");
	s->required = calloc(json_array_size(v) + 1, sizeof(*s->required));
	if (!s->required)
		return -ENOMEM;
	for (i = 0; i < json_array_size(v); i++) {
		const char *name = json_string_value(json_array_get(v, i));

		if (name && !(s->required[s->n_required++] = strdup(name)))
			return -ENOMEM;
	}
	if ((v = json_object_get(j, "properties")) && (r = compile_properties(s, v)) < 0)
		return r;
	if ((v = json_object_get(j, "items")) && (r = compile_node(v, &s->items)) < 0)
		return r;
	if (json_is_object(add) && (r = compile_node(add, &s->additional)) < 0)
		return r;
	v = json_object_get(j, "anyOf");
	s->any_of = calloc(json_array_size(v) + 1, sizeof(*s->any_of));
	if (!s->any_of)
		return -ENOMEM;
	for (i = 0; i < json_array_size(v); i++) {
		r = compile_node(json_array_get(v, i), &s->any_of[s->n_any_of]);
		if (r < 0)
			return r;
		s->n_any_of++;
	}
	return 0;
}

static int compile_node(const json_t *j, struct k8s_schema **ret)
{
	struct k8s_schema *s;
	int r;

	*ret = NULL;
	if (!json_is_object(j))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = compile_fields(s, j);
	if (r < 0) {
		k8s_schema_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

int k8s_schema_compile(const json_t *openapi, struct k8s_schema **ret)
{
	return compile_node(openapi, ret);
}

const struct k8s_schema *k8s_schema_property(const struct k8s_schema *s, const char *name)
{
	struct k8s_schema_property key = { .name = (char *)name }, *p;

	if (!s || !s->n_properties)
		return NULL;
	p = bsearch(&key, s->properties, s->n_properties, sizeof(*p), cmp_property);
	return p ? p->schema : NULL;
}

/* ---- pruning ------------------------------------------------------------ */

static int record_unknown(json_t *unknown, const char *path, const char *key)
{
	char buf[1024];

	if (!unknown)
		return 0;
	snprintf(buf, sizeof(buf), "%s%s%s", path, *path ? "." : "", key);
	return json_array_append_new(unknown, json_string(buf)) < 0 ? -ENOMEM : 0;
}

static int prune_meta(json_t *meta, const char *path, json_t *unknown)
{
	const char *key;
	json_t *v;
	void *tmp;
	char at[1024];
	int r;

	if (!json_is_object(meta))
		return 0;
	snprintf(at, sizeof(at), "%s%smetadata", path, *path ? "." : "");
	json_object_foreach_safe(meta, tmp, key, v) {
		bool known = false;

		for (size_t i = 0; i < ARRAY_SIZE(object_meta_fields); i++)
			known = known || streq(key, object_meta_fields[i]);
		if (known)
			continue;
		r = record_unknown(unknown, at, key);
		if (r < 0)
			return r;
		json_object_del(meta, key);
	}
	return 0;
}

static int prune(const struct k8s_schema *s, json_t *v, const char *path, bool root,
		 json_t *unknown);

static int prune_object(const struct k8s_schema *s, json_t *obj, const char *path, bool root,
			json_t *unknown)
{
	const char *key;
	json_t *v;
	void *tmp;
	int r;

	json_object_foreach_safe(obj, tmp, key, v) {
		const struct k8s_schema *p = k8s_schema_property(s, key);
		char at[1024];

		snprintf(at, sizeof(at), "%s%s%s", path, *path ? "." : "", key);
		if (root && (streq(key, "apiVersion") || streq(key, "kind")))
			continue;
		if (root && streq(key, "metadata")) {
			r = prune_meta(v, path, unknown);
			if (r < 0)
				return r;
			continue;
		}
		if (!p)
			p = s->additional;
		if (p) {
			r = prune(p, v, at, false, unknown);
			if (r < 0)
				return r;
			continue;
		}
		if (s->preserve_unknown)
			continue;
		r = record_unknown(unknown, path, key);
		if (r < 0)
			return r;
		json_object_del(obj, key);
	}
	return 0;
}

static int prune(const struct k8s_schema *s, json_t *v, const char *path, bool root,
		 json_t *unknown)
{
	size_t i;
	json_t *item;
	int r;

	if (json_is_object(v) && (s->type == K8S_SCHEMA_OBJECT ||
				  (s->type == K8S_SCHEMA_ANY && !s->preserve_unknown)))
		return prune_object(s, v, path, root || s->embedded, unknown);
	if (json_is_array(v) && s->items)
		json_array_foreach(v, i, item) {
			char at[1024];

			snprintf(at, sizeof(at), "%s[%zu]", path, i);
			r = prune(s->items, item, at, false, unknown);
			if (r < 0)
				return r;
		}
	return 0;
}

static int cmp_json_string(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

int k8s_schema_prune(const struct k8s_schema *s, json_t *obj, json_t *unknown)
{
	size_t from = json_array_size(unknown), n;
	json_t **sorted;
	int r;

	r = prune(s, obj, "", true, unknown);
	if (r < 0 || !unknown || (n = json_array_size(unknown) - from) < 2)
		return r;
	/* Upstream sorts the unknown paths before it reports them. */
	sorted = calloc(n, sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		sorted[i] = json_incref(json_array_get(unknown, from + i));
	qsort(sorted, n, sizeof(*sorted), cmp_json_string);
	for (size_t i = 0; i < n; i++)
		json_array_set_new(unknown, from + i, sorted[i]);
	free(sorted);
	return 0;
}

/* ---- defaulting --------------------------------------------------------- */

static int apply_defaults(const struct k8s_schema *s, json_t *v)
{
	const char *key;
	json_t *child;
	void *tmp;
	size_t i;
	int r;

	if (!s)
		return 0;
	if (json_is_array(v)) {
		json_array_foreach(v, i, child)
			if ((r = apply_defaults(s->items, child)) < 0)
				return r;
		return 0;
	}
	if (!json_is_object(v))
		return 0;
	for (i = 0; i < s->n_properties; i++) {
		const struct k8s_schema *p = s->properties[i].schema;
		json_t *have = json_object_get(v, s->properties[i].name);

		if (!p->default_value || (have && !(json_is_null(have) && !p->nullable)))
			continue;
		if (json_object_set_new(v, s->properties[i].name, json_deep_copy(p->default_value)) < 0)
			return -ENOMEM;
	}
	json_object_foreach_safe(v, tmp, key, child) {
		const struct k8s_schema *p = k8s_schema_property(s, key);

		if (!p)
			p = s->additional;
		if (!p)
			continue;
		/* PruneNonNullableNullsWithoutDefaults. */
		if (json_is_null(child) && !p->nullable) {
			json_object_del(v, key);
			continue;
		}
		if ((r = apply_defaults(p, child)) < 0)
			return r;
	}
	return 0;
}

int k8s_schema_default(const struct k8s_schema *s, json_t *obj)
{
	return apply_defaults(s, obj);
}
