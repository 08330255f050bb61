/*
 * A CRD schema's x-kubernetes-validations, compiled once and run over an
 * object as apiextensions-apiserver's pkg/apiserver/schema/cel/validation.go
 * does: each node's rules with self bound to the value there (null values
 * are not validated), then its properties, additionalProperties and items;
 * oldSelf is the correlated old value (map keys and properties always,
 * list items only in x-kubernetes-list-type: map lists, by their keys),
 * transition rules run only when it exists, and a failure of a rule that
 * does not read oldSelf on a value equal to its correlated old one is
 * ratcheted (a warning there, dropped here). The cost budget is not
 * modelled. Only rule and message are accepted: the shipped CRDs use
 * nothing else, and the other fields are refused rather than ignored.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cel-internal.h"
#include "sim/cel.h"

struct cel_rule {
	struct cel_program *prog;
	char *text;    /* the rule, trimmed */
	char *message; /* trimmed; NULL when unset */
};

struct cel_prop {
	char *name;
	struct cel_schema *node;
};

struct cel_schema {
	const char *type; /* the schema's type, in "Invalid value: \"object\"" */
	char *type_owned;
	struct cel_rule *rules;
	size_t nrules;
	struct cel_prop *props;
	size_t nprops;
	struct cel_schema *items, *additional;
	json_t *list_map_keys; /* x-kubernetes-list-type: map */
	bool list_set;	       /* x-kubernetes-list-type: set */
};

void cel_schema_free(struct cel_schema *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->nrules; i++) {
		cel_program_free(cs->rules[i].prog);
		free(cs->rules[i].text);
		free(cs->rules[i].message);
	}
	free(cs->rules);
	for (size_t i = 0; i < cs->nprops; i++) {
		free(cs->props[i].name);
		cel_schema_free(cs->props[i].node);
	}
	free(cs->props);
	cel_schema_free(cs->items);
	cel_schema_free(cs->additional);
	json_decref(cs->list_map_keys);
	free(cs->type_owned);
	free(cs);
}

/* strings.TrimSpace for the ASCII spaces the CRDs could hold. */
static char *trimmed(const char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f')
		s++;
	n = strlen(s);
	while (n && strchr(" \t\n\r\v\f", s[n - 1]))
		n--;
	return strndup(s, n);
}

static int add_rule(struct cel_schema *cs, const json_t *rule, const char *path, char *err,
		    size_t errlen)
{
	const char *text = json_string_value(json_object_get(rule, "rule"));
	const json_t *message = json_object_get(rule, "message");
	struct cel_rule *r, *grown;
	char why[512];
	const char *key;
	json_t *v;
	int ret;

	json_object_foreach((json_t *)rule, key, v) {
		if (strcmp(key, "rule") && strcmp(key, "message")) {
			snprintf(err, errlen, "%s: x-kubernetes-validations field '%s' is not supported",
				 path, key);
			return -EINVAL;
		}
	}
	if (!text || (message && !json_is_string(message))) {
		snprintf(err, errlen, "%s: a validation rule needs a string rule and message", path);
		return -EINVAL;
	}
	grown = realloc(cs->rules, (cs->nrules + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	cs->rules = grown;
	r = &cs->rules[cs->nrules];
	*r = (struct cel_rule){ 0 };
	ret = cel_compile(text, &r->prog, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "%s: rule %s: %s", path, text, why);
		return ret;
	}
	r->text = trimmed(text);
	if (message && json_string_length(message))
		r->message = trimmed(json_string_value(message));
	cs->nrules++;
	if (!r->text || (message && json_string_length(message) && !r->message))
		return -ENOMEM;
	return 0;
}

static int build(const json_t *schema, const char *path, struct cel_schema **out, char *err,
		 size_t errlen);

static int add_prop(struct cel_schema *cs, const char *name, const json_t *sub, const char *path,
		    char *err, size_t errlen)
{
	struct cel_schema *node = NULL;
	struct cel_prop *grown;
	char sub_path[1024];
	int r;

	snprintf(sub_path, sizeof(sub_path), "%s.%s", path, name);
	r = build(sub, sub_path, &node, err, errlen);
	if (r < 0 || !node)
		return r;
	grown = realloc(cs->props, (cs->nprops + 1) * sizeof(*grown));
	if (!grown) {
		cel_schema_free(node);
		return -ENOMEM;
	}
	cs->props = grown;
	cs->props[cs->nprops].name = strdup(name);
	cs->props[cs->nprops++].node = node;
	return cs->props[cs->nprops - 1].name ? 0 : -ENOMEM;
}

/* *out stays NULL for a schema without a rule anywhere below it. */
static int build(const json_t *schema, const char *path, struct cel_schema **out, char *err,
		 size_t errlen)
{
	struct cel_schema *cs = calloc(1, sizeof(*cs));
	const json_t *rules = json_object_get(schema, "x-kubernetes-validations");
	const json_t *sub = json_object_get(schema, "properties");
	const char *list_type = json_string_value(json_object_get(schema, "x-kubernetes-list-type"));
	char sub_path[1024];
	const char *key;
	json_t *v;
	size_t i;
	int r = 0;

	*out = NULL;
	if (!cs)
		return -ENOMEM;
	cs->type_owned = strdup(json_string_value(json_object_get(schema, "type")) ?: "");
	cs->type = cs->type_owned;
	if (!cs->type_owned)
		r = -ENOMEM;
	json_array_foreach(rules, i, v)
		if (r == 0)
			r = add_rule(cs, v, path, err, errlen);
	json_object_foreach((json_t *)sub, key, v)
		if (r == 0)
			r = add_prop(cs, key, v, path, err, errlen);
	snprintf(sub_path, sizeof(sub_path), "%s.items", path);
	if (r == 0 && json_is_object(json_object_get(schema, "items")))
		r = build(json_object_get(schema, "items"), sub_path, &cs->items, err, errlen);
	snprintf(sub_path, sizeof(sub_path), "%s.additionalProperties", path);
	if (r == 0 && json_is_object(json_object_get(schema, "additionalProperties")))
		r = build(json_object_get(schema, "additionalProperties"), sub_path, &cs->additional,
			  err, errlen);
	/* Upstream runs allOf's rules too; no shipped CRD has an allOf. */
	if (r == 0 && json_object_get(schema, "allOf")) {
		snprintf(err, errlen, "%s: allOf is not supported", path);
		r = -EINVAL;
	}
	if (r < 0 || (!cs->nrules && !cs->nprops && !cs->items && !cs->additional)) {
		cel_schema_free(cs);
		return r;
	}
	if (list_type && !strcmp(list_type, "map"))
		cs->list_map_keys = json_incref(json_object_get(schema, "x-kubernetes-list-map-keys"));
	cs->list_set = list_type && !strcmp(list_type, "set");
	*out = cs;
	return 0;
}

int cel_schema_new(const json_t *schema, struct cel_schema **out, char *err, size_t errlen)
{
	if (errlen)
		err[0] = '\0';
	return build(schema, "openAPIV3Schema", out, err, errlen);
}

struct walk {
	cel_error_fn report;
	void *ctx;
	int errors;
	char path[2048];
	size_t len;
};

/* field.Path's Child ("a.b"), Index ("a[0]") and Key ("a[k]"). */
static size_t push(struct walk *w, const char *fmt, const char *name, size_t index)
{
	size_t was = w->len;
	int n;

	if (!strcmp(fmt, "child"))
		n = snprintf(w->path + w->len, sizeof(w->path) - w->len, "%s%s", w->len ? "." : "",
			     name);
	else if (!strcmp(fmt, "index"))
		n = snprintf(w->path + w->len, sizeof(w->path) - w->len, "[%zu]", index);
	else
		n = snprintf(w->path + w->len, sizeof(w->path) - w->len, "[%s]", name);
	if (n > 0)
		w->len += (size_t)n < sizeof(w->path) - w->len ? (size_t)n : sizeof(w->path) - w->len - 1;
	return was;
}

static void pop(struct walk *w, size_t was)
{
	w->len = was;
	w->path[was] = '\0';
}

static void report_error(struct walk *w, const struct cel_schema *cs, const char *detail)
{
	char body[4096];

	snprintf(body, sizeof(body), "Invalid value: \"%s\": %s", cs->type, detail);
	/* The root's path is a nil field.Path, which prints as "<nil>". */
	w->report(w->ctx, w->len ? w->path : "<nil>", "FieldValueInvalid", body);
	w->errors++;
}

static void run_rules(struct walk *w, const struct cel_schema *cs, json_t *obj, json_t *old,
		      bool ratchet)
{
	for (size_t i = 0; i < cs->nrules; i++) {
		const struct cel_rule *rule = &cs->rules[i];
		const char *shown = rule->message ? rule->message : rule->text;
		char why[512], detail[3072];
		int r = cel_validate_object(rule->prog, obj, old, why, sizeof(why));

		if (r == 1)
			continue;
		if (r == -EINVAL && !strncmp(why, "no such overload", 16))
			snprintf(detail, sizeof(detail),
				 "'%s': call arguments did not match a supported operator, function or macro signature for rule: %s",
				 why, shown);
		else if (r < 0)
			snprintf(detail, sizeof(detail), "%s evaluating rule: %s", why, shown);
		else if (!rule->prog->uses_old_self && ratchet)
			continue;
		else if (rule->message)
			snprintf(detail, sizeof(detail), "%s", rule->message);
		else
			snprintf(detail, sizeof(detail), "failed rule: %s", rule->text);
		report_error(w, cs, detail);
	}
}

/* The old item a list-type map item correlates with: equal map keys. */
static json_t *correlated_item(const struct cel_schema *cs, json_t *item, json_t *old_list)
{
	size_t i, k;
	json_t *o, *key;

	if (!cs->list_map_keys || !json_is_object(item))
		return NULL;
	json_array_foreach(old_list, i, o) {
		bool same = json_is_object(o);

		json_array_foreach(cs->list_map_keys, k, key) {
			const char *name = json_string_value(key);

			if (!same || !name)
				break;
			json_t *a = json_object_get(item, name), *b = json_object_get(o, name);

			same = (!a && !b) || (a && b && json_equal(a, b));
		}
		if (same)
			return o;
	}
	return NULL;
}

static bool set_has(json_t *old_list, json_t *item)
{
	size_t i;
	json_t *o;

	json_array_foreach(old_list, i, o)
		if (json_equal(o, item))
			return true;
	return false;
}

/* old: this value's correlated old value, NULL if none; ratchet: whether
 * the nearest correlated ancestor equals its old value (upstream's
 * nearestParentCorrelation), replaced by this value's own when it has an
 * old one. */
static void walk(struct walk *w, const struct cel_schema *cs, json_t *obj, json_t *old,
		 bool ratchet)
{
	if (!cs || !obj || json_is_null(obj))
		return;
	if (old && json_is_null(old))
		old = NULL;
	if (old)
		ratchet = json_equal(obj, old);
	run_rules(w, cs, obj, old, ratchet);
	if (json_is_object(obj)) {
		const char *key;
		json_t *v;

		json_object_foreach(obj, key, v) {
			json_t *o = json_is_object(old) ? json_object_get(old, key) : NULL;
			const struct cel_schema *sub = NULL;
			size_t was;

			for (size_t i = 0; i < cs->nprops && !sub; i++)
				if (!strcmp(cs->props[i].name, key))
					sub = cs->props[i].node;
			if (cs->additional) {
				was = push(w, "key", key, 0);
				walk(w, cs->additional, v, o, ratchet);
				pop(w, was);
			}
			if (sub) {
				was = push(w, "child", key, 0);
				walk(w, sub, v, o, ratchet);
				pop(w, was);
			}
		}
	} else if (json_is_array(obj) && cs->items) {
		size_t i;
		json_t *v;

		json_array_foreach(obj, i, v) {
			json_t *o = json_is_array(old) ? correlated_item(cs, v, old) : NULL;
			/* A set's item equal to an old one ratchets like a
			 * correlated one, without being oldSelf to rules. */
			bool r = ratchet || (cs->list_set && json_is_array(old) && set_has(old, v));
			size_t was = push(w, "index", NULL, i);

			walk(w, cs->items, v, o, r);
			pop(w, was);
		}
	}
}

int cel_schema_validate(const struct cel_schema *cs, json_t *obj, json_t *old, cel_error_fn report,
			void *ctx)
{
	struct walk w = { .report = report, .ctx = ctx };

	walk(&w, cs, obj, old, false);
	return w.errors;
}
