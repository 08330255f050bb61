/*
 * Validates a custom resource against its compiled schema (k8s-schema.h)
 * as kube-apiserver does: kube-openapi's validate.SchemaValidator (type,
 * anyOf, string, enum, array, object and number checks, in that order per
 * value, array items at "path[i]"), its results turned into field.Errors by
 * apiextensions-apiserver pkg/apiserver/validation/validation.go
 * kubeOpenAPIResultToFieldErrors, then the list-type invariants
 * (structurallisttype.ValidateListSetsAndMaps) and, unless a type error
 * blocks them, the x-kubernetes-validations rules through the CEL hook
 * (registry/customresource/strategy.go Validate). Messages are upstream's
 * word for word ("spec.weight in body must be of type integer: \"string\"",
 * go-openapi errors/schema.go). Not done: format checks (date-time...),
 * multipleOf, uniqueItems, validation ratcheting on update.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-schema.h"

/* A field path or a value as printed in a message: longer ones are cut. */
#define K8S_SCHEMA_TEXT_MAX 1024

static k8s_schema_cel_fn cel_hook;
static void *cel_userdata;

void k8s_schema_set_cel_hook(k8s_schema_cel_fn fn, void *userdata)
{
	cel_hook = fn;
	cel_userdata = userdata;
}

/* ---- Go's fmt of a decoded JSON value ----------------------------------- */

struct text {
	char *buf;
	size_t size, len;
};

static void text_put(struct text *t, const char *s, size_t n)
{
	size_t room = t->size - t->len;

	if (room <= 1)
		return;
	if (n >= room)
		n = room - 1;
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

static void text_str(struct text *t, const char *s)
{
	text_put(t, s, strlen(s));
}

/* strconv.Quote, for the printable UTF-8 and ASCII that JSON strings hold. */
static void go_quote(struct text *t, const char *s, size_t n)
{
	char esc[8];

	text_str(t, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			snprintf(esc, sizeof(esc), "\\%c", c);
			text_str(t, esc);
		} else if (c == '\n' || c == '\t' || c == '\r') {
			text_str(t, c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r");
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", c);
			text_str(t, esc);
		} else {
			text_put(t, (const char *)&c, 1);
		}
	}
	text_str(t, "\"");
}

/* A float64 as %v prints it: the shortest form that reads back. */
static void go_float(struct text *t, double d)
{
	char buf[40];

	snprintf(buf, sizeof(buf), "%g", d);
	if (strtod(buf, NULL) != d)
		snprintf(buf, sizeof(buf), "%.17g", d);
	text_str(t, buf);
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* %#v of an interface{} element (sharp) or %v of a top-level scalar. */
static void go_value(struct text *t, const json_t *v, bool sharp)
{
	char buf[32];

	switch (json_typeof(v)) {
	case JSON_STRING:
		go_quote(t, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		text_str(t, buf);
		break;
	case JSON_REAL:
		go_float(t, json_real_value(v));
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		text_str(t, json_is_true(v) ? "true" : "false");
		break;
	case JSON_NULL:
		text_str(t, sharp ? "interface {}(nil)" : "\"null\"");
		break;
	case JSON_ARRAY: {
		const json_t *e;
		size_t i;

		text_str(t, "[]interface {}{");
		json_array_foreach(v, i, e) {
			text_str(t, i ? ", " : "");
			go_value(t, e, true);
		}
		text_str(t, "}");
		break;
	}
	case JSON_OBJECT: {
		size_t n = json_object_size(v), i = 0;
		const char **keys = calloc(n + 1, sizeof(*keys));
		const json_t *e;
		const char *k;

		text_str(t, "map[string]interface {}{");
		if (keys) {
			json_object_foreach((json_t *)v, k, e)
				keys[i++] = k;
			qsort(keys, n, sizeof(*keys), cmp_keys);
			for (i = 0; i < n; i++) {
				text_str(t, i ? ", " : "");
				go_quote(t, keys[i], strlen(keys[i]));
				text_str(t, ":");
				go_value(t, json_object_get(v, keys[i]), true);
			}
			free(keys);
		}
		text_str(t, "}");
		break;
	}
	}
}

void k8s_schema_go_value(const json_t *v, char *buf, size_t size)
{
	struct text t = { buf, size, 0 };

	if (size)
		buf[0] = '\0';
	go_value(&t, v, false);
}

/* ---- field errors ------------------------------------------------------- */

struct walk {
	json_t *causes;
	int r; /* -ENOMEM once an append failed */
};

static void add_cause(struct walk *w, const char *reason, const char *field, const char *message)
{
	if (w->r < 0)
		return;
	if (json_array_append_new(w->causes, json_pack("{s:s, s:s, s:s}", "reason", reason,
						       "message", message, "field", field)) < 0)
		w->r = -ENOMEM;
}

/* field.Invalid/TypeInvalid/NotSupported/TooMany: "<Type>: <value>[: <detail>]". */
static void add_value_error(struct walk *w, const char *reason, const char *type, const char *field,
			    const json_t *value, const char *detail)
{
	char msg[3 * K8S_SCHEMA_TEXT_MAX];
	struct text t = { msg, sizeof(msg), 0 };

	msg[0] = '\0';
	text_str(&t, type);
	text_str(&t, ": ");
	go_value(&t, value, false);
	if (detail && *detail) {
		text_str(&t, ": ");
		text_str(&t, detail);
	}
	add_cause(w, reason, field, msg);
}

/* kube-openapi's field.Invalid with a "<path> in body ..." detail. */
static void add_invalid(struct walk *w, const char *path, const json_t *value, const char *fmt, ...)
	_printf_(4, 5);
static void add_invalid(struct walk *w, const char *path, const json_t *value, const char *fmt, ...)
{
	char detail[2 * K8S_SCHEMA_TEXT_MAX];
	int n = snprintf(detail, sizeof(detail), "%s in body ", path);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail + n, sizeof(detail) - (size_t)n, fmt, ap);
	va_end(ap);
	add_value_error(w, "FieldValueInvalid", "Invalid value", path, value, detail);
}

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

static bool type_matches(const struct k8s_schema *s, const json_t *v)
{
	bool integral = json_is_integer(v) ||
			(json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));

	if (s->int_or_string)
		return integral || json_is_string(v);
	switch (s->type) {
	case K8S_SCHEMA_ANY: return true;
	case K8S_SCHEMA_OBJECT: return json_is_object(v);
	case K8S_SCHEMA_ARRAY: return json_is_array(v);
	case K8S_SCHEMA_STRING: return json_is_string(v);
	case K8S_SCHEMA_INTEGER: return integral;
	case K8S_SCHEMA_NUMBER: return json_is_number(v);
	case K8S_SCHEMA_BOOLEAN: return json_is_boolean(v);
	}
	return false;
}

static void type_error(struct walk *w, const struct k8s_schema *s, const char *path, const json_t *v)
{
	static const char *const names[] = {
		[K8S_SCHEMA_ANY] = "", [K8S_SCHEMA_OBJECT] = "object", [K8S_SCHEMA_ARRAY] = "array",
		[K8S_SCHEMA_STRING] = "string", [K8S_SCHEMA_INTEGER] = "integer",
		[K8S_SCHEMA_NUMBER] = "number", [K8S_SCHEMA_BOOLEAN] = "boolean",
	};
	const char *want = s->int_or_string ? "integer,string" : names[s->type];
	json_t *got = json_string(json_type_name(v));
	char detail[2 * K8S_SCHEMA_TEXT_MAX];

	/* InvalidType's value is the data's type name, quoted. */
	snprintf(detail, sizeof(detail), "%s in body must be of type %s: \"%s\"", path, want,
		 json_type_name(v));
	add_value_error(w, "FieldValueTypeInvalid", "Invalid value", path, got, detail);
	json_decref(got);
}

/* utf8.RuneCountInString: kube-openapi's lengths are in runes. */
static size_t rune_count(const char *s, size_t n)
{
	size_t runes = 0;

	for (size_t i = 0; i < n; i++)
		runes += ((unsigned char)s[i] & 0xc0) != 0x80;
	return runes;
}

static void check_string(struct walk *w, const struct k8s_schema *s, const char *path, const json_t *v)
{
	const char *str = json_string_value(v);
	size_t len = rune_count(str, json_string_length(v));
	char detail[64];

	if (s->max_length >= 0 && len > (size_t)s->max_length) {
		/* field.TooLongMaxLength: the value is not shown. */
		snprintf(detail, sizeof(detail), "Too long: may not be longer than %" PRId64, s->max_length);
		add_cause(w, "FieldValueTooLong", path, detail);
	}
	if (s->min_length >= 0 && len < (size_t)s->min_length)
		add_invalid(w, path, v, "should be at least %" PRId64 " chars long", s->min_length);
	/* A string with a NUL cannot match through regexec; upstream would
	 * try, and our patterns have no NUL: it does not match. */
	if (s->has_pattern && (strlen(str) != json_string_length(v) ||
			       regexec(&s->pattern_re, str, 0, NULL, 0) != 0))
		add_invalid(w, path, v, "should match '%s'", s->pattern);
}

static void check_enum(struct walk *w, const struct k8s_schema *s, const char *path, const json_t *v)
{
	char msg[3 * K8S_SCHEMA_TEXT_MAX];
	struct text t = { msg, sizeof(msg), 0 };
	const json_t *e;
	size_t i;

	json_array_foreach(s->enum_values, i, e)
		if (json_equal((json_t *)e, (json_t *)v))
			return;
	/* field.NotSupported: each allowed value strconv.Quote'd, non-strings
	 * as their JSON. */
	msg[0] = '\0';
	text_str(&t, "Unsupported value: ");
	go_value(&t, v, false);
	text_str(&t, ": supported values: ");
	json_array_foreach(s->enum_values, i, e) {
		char *json = json_is_string(e) ? NULL : json_dumps(e, JSON_ENCODE_ANY | JSON_COMPACT);
		const char *shown = json ? json : json_string_value(e) ?: "";

		text_str(&t, i ? ", " : "");
		go_quote(&t, shown, strlen(shown));
		free(json);
	}
	add_cause(w, "FieldValueNotSupported", path, msg);
}

static void check_number(struct walk *w, const struct k8s_schema *s, const char *path, const json_t *v)
{
	double d = json_number_value(v);
	char limit[40];
	struct text t = { limit, sizeof(limit), 0 };

	if (s->has_maximum && (s->exclusive_maximum ? d >= s->maximum : d > s->maximum)) {
		limit[0] = '\0';
		t.len = 0;
		go_float(&t, s->maximum);
		add_invalid(w, path, v, "should be less than %s%s", s->exclusive_maximum ? "" : "or equal to ",
			    limit);
	}
	if (s->has_minimum && (s->exclusive_minimum ? d <= s->minimum : d < s->minimum)) {
		limit[0] = '\0';
		t.len = 0;
		go_float(&t, s->minimum);
		add_invalid(w, path, v, "should be greater than %s%s",
			    s->exclusive_minimum ? "" : "or equal to ", limit);
	}
}

static void too_many(struct walk *w, const char *path, size_t have, int64_t max)
{
	char detail[64];
	json_t *n = json_integer((json_int_t)have);

	snprintf(detail, sizeof(detail), "must have at most %" PRId64 " items", max);
	add_value_error(w, "FieldValueTooMany", "Too many", path, n, detail);
	json_decref(n);
}

static void validate_value(struct walk *w, const struct k8s_schema *s, const char *path, const json_t *v);

static void check_array(struct walk *w, const struct k8s_schema *s, const char *path, const json_t *v)
{
	const json_t *item;
	size_t i;

	json_array_foreach(v, i, item) {
		char at[K8S_SCHEMA_TEXT_MAX];

		snprintf(at, sizeof(at), "%s[%zu]", path, i);
		if (s->items)
			validate_value(w, s->items, at, item);
	}
	if (s->min_items >= 0 && json_array_size(v) < (size_t)s->min_items)
		add_invalid(w, path, v, "should have at least %" PRId64 " items", s->min_items);
	if (s->max_items >= 0 && json_array_size(v) > (size_t)s->max_items)
		too_many(w, path, json_array_size(v), s->max_items);
}

static void child_path(char at[static K8S_SCHEMA_TEXT_MAX], const char *path, const char *key)
{
	snprintf(at, K8S_SCHEMA_TEXT_MAX, "%s%s%s", path, *path ? "." : "", key);
}

static void check_object(struct walk *w, const struct k8s_schema *s, const char *path, const json_t *v)
{
	char at[K8S_SCHEMA_TEXT_MAX];
	const json_t *child;
	const char *key;

	if (s->max_properties >= 0 && json_object_size(v) > (size_t)s->max_properties)
		too_many(w, path, json_object_size(v), s->max_properties);
	if (s->min_properties >= 0 && json_object_size(v) < (size_t)s->min_properties)
		add_invalid(w, path, v, "should have at least %" PRId64 " properties", s->min_properties);
	for (size_t i = 0; i < s->n_required; i++)
		if (!json_object_get(v, s->required[i])) {
			child_path(at, path, s->required[i]);
			add_cause(w, "FieldValueRequired", at, "Required value");
		}
	json_object_foreach((json_t *)v, key, child) {
		const struct k8s_schema *p = k8s_schema_property(s, key);

		if (!p)
			p = s->additional;
		if (!p)
			continue;
		child_path(at, path, key);
		validate_value(w, p, at, child);
	}
}

static void check_any_of(struct walk *w, const struct k8s_schema *s, const char *path, const json_t *v)
{
	json_t *best = NULL;
	char msg[2 * K8S_SCHEMA_TEXT_MAX];

	for (size_t i = 0; i < s->n_any_of; i++) {
		struct walk branch = { json_array(), 0 };

		if (!branch.causes) {
			w->r = -ENOMEM;
			break;
		}
		validate_value(&branch, s->any_of[i], path, v);
		if (json_array_size(branch.causes) == 0) {
			json_decref(branch.causes);
			json_decref(best);
			return;
		}
		if (!best || json_array_size(branch.causes) < json_array_size(best)) {
			json_decref(best);
			best = branch.causes;
		} else {
			json_decref(branch.causes);
		}
	}
	/* Not a *Validation error: kubeOpenAPIResultToFieldErrors puts it at
	 * the nil path with an empty value; then the closest branch's errors. */
	snprintf(msg, sizeof(msg), "Invalid value: \"\": \"%s\" must validate at least one schema (anyOf)",
		 path);
	add_cause(w, "FieldValueInvalid", "<nil>", msg);
	if (best && json_array_extend(w->causes, best) < 0)
		w->r = -ENOMEM;
	json_decref(best);
}

static void validate_value(struct walk *w, const struct k8s_schema *s, const char *path, const json_t *v)
{
	if (json_is_null(v) && (s->nullable || (s->type == K8S_SCHEMA_ANY && !s->int_or_string)))
		return;
	/* kube-openapi runs every validator that applies to the value's
	 * kind, a failed type check or not. */
	if (!type_matches(s, v))
		type_error(w, s, path, v);
	if (s->n_any_of)
		check_any_of(w, s, path, v);
	if (json_is_string(v))
		check_string(w, s, path, v);
	if (s->enum_values)
		check_enum(w, s, path, v);
	if (json_is_array(v))
		check_array(w, s, path, v);
	if (json_is_object(v))
		check_object(w, s, path, v);
	if (json_is_number(v))
		check_number(w, s, path, v);
}

/* ---- list types --------------------------------------------------------- */

/* The values of a map list item's keys, as one JSON object. */
static json_t *map_keys_of(const struct k8s_schema *s, const json_t *item)
{
	json_t *keys = json_object();
	const json_t *k;
	size_t i;

	json_array_foreach(s->list_map_keys, i, k) {
		const json_t *v = json_object_get(item, json_string_value(k) ?: "");

		if (v)
			json_object_set(keys, json_string_value(k), (json_t *)v);
	}
	return keys;
}

/* ValidateListSetsAndMaps: a set's items and a map's keys are unique,
 * field.Duplicate at the later item. */
static void check_list_type(struct walk *w, const struct k8s_schema *s, const char *path,
			    const json_t *v)
{
	bool set = s->list_type && streq(s->list_type, "set");
	bool map = s->list_type && streq(s->list_type, "map") && s->list_map_keys;
	size_t n = json_array_size(v);

	for (size_t i = 1; (set || map) && i < n; i++) {
		json_t *a = map ? map_keys_of(s, json_array_get(v, i)) : json_incref(json_array_get(v, i));

		for (size_t j = 0; j < i; j++) {
			json_t *b = map ? map_keys_of(s, json_array_get(v, j))
					: json_incref(json_array_get(v, j));
			bool dup = a && b && json_equal(a, b);

			json_decref(b);
			if (dup) {
				char at[K8S_SCHEMA_TEXT_MAX];

				snprintf(at, sizeof(at), "%s[%zu]", path, i);
				add_value_error(w, "FieldValueDuplicate", "Duplicate value", at, a, NULL);
				break;
			}
		}
		json_decref(a);
	}
}

/* ---- the walk for list types and CEL ------------------------------------ */

/* The old list item correlated with item: same map keys. */
static const json_t *old_item(const struct k8s_schema *s, const json_t *old_list, const json_t *item)
{
	const json_t *o;
	json_t *want;
	size_t i;

	if (!old_list || !s->list_type || !streq(s->list_type, "map") || !s->list_map_keys)
		return NULL;
	want = map_keys_of(s, item);
	json_array_foreach(old_list, i, o) {
		json_t *have = map_keys_of(s, o);
		bool same = want && have && json_equal(want, have);

		json_decref(have);
		if (same) {
			json_decref(want);
			return o;
		}
	}
	json_decref(want);
	return NULL;
}

static void walk_rules(struct walk *w, const struct k8s_schema *s, const char *path,
		       const json_t *v, const json_t *old, bool cel)
{
	char at[K8S_SCHEMA_TEXT_MAX];
	const json_t *child, *rule;
	const char *key;
	size_t i;

	if (!s || !v || json_is_null(v) || w->r < 0)
		return;
	if (!cel && json_is_array(v))
		check_list_type(w, s, path, v);
	if (cel && s->validations && cel_hook)
		json_array_foreach(s->validations, i, rule)
			if (cel_hook(rule, v, old, path, w->causes, cel_userdata) < 0)
				w->r = -ENOMEM;
	if (json_is_array(v))
		json_array_foreach(v, i, child) {
			snprintf(at, sizeof(at), "%s[%zu]", path, i);
			walk_rules(w, s->items, at, child, old_item(s, old, child), cel);
		}
	if (json_is_object(v))
		json_object_foreach((json_t *)v, key, child) {
			const struct k8s_schema *p = k8s_schema_property(s, key);

			child_path(at, path, key);
			walk_rules(w, p ? p : s->additional, at, child,
				   json_is_object(old) ? json_object_get(old, key) : NULL, cel);
		}
}

int k8s_schema_validate(const struct k8s_schema *s, const json_t *obj, const json_t *old,
			json_t *causes)
{
	struct walk w = { causes, 0 };
	const json_t *c;
	bool blocked = false;
	size_t i;

	validate_value(&w, s, "", obj);
	walk_rules(&w, s, "", obj, old, false);
	json_array_foreach(causes, i, c)
		blocked = blocked || streq(json_string_value(json_object_get(c, "reason")) ?: "",
					   "FieldValueTypeInvalid");
	if (blocked && cel_hook)
		add_cause(&w, "FieldValueInvalid", "<nil>",
			  "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation");
	else
		walk_rules(&w, s, "", obj, old, true);
	return w.r;
}
