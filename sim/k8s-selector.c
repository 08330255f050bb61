/*
 * Label and field selector parsing and matching for kanna-sim's LIST, WATCH
 * and PDB evaluation. The grammar follows k8s.io/apimachinery/pkg/labels:
 * comma-separated requirements, `key`, `!key`, `key=v`, `key==v`, `key!=v`,
 * `key in (a,b)`, `key notin (a,b)`. Never touches the object store.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-selector.h"

struct k8s_selector *k8s_selector_free(struct k8s_selector *sel)
{
	if (!sel)
		return NULL;
	for (size_t i = 0; i < sel->n_reqs; i++) {
		free(sel->reqs[i].key);
		for (size_t j = 0; j < sel->reqs[i].n_values; j++)
			free(sel->reqs[i].values[j]);
		free(sel->reqs[i].values);
	}
	free(sel->reqs);
	free(sel);
	return NULL;
}

static struct k8s_requirement *selector_add(struct k8s_selector *sel)
{
	struct k8s_requirement *r;

	r = realloc(sel->reqs, (sel->n_reqs + 1) * sizeof(*r));
	if (!r)
		return NULL;
	sel->reqs = r;
	r = &sel->reqs[sel->n_reqs++];
	memset(r, 0, sizeof(*r));
	return r;
}

static int requirement_add_value(struct k8s_requirement *r, const char *v,
				 size_t len)
{
	char **values = realloc(r->values, (r->n_values + 1) * sizeof(char *));

	if (!values)
		return -ENOMEM;
	r->values = values;
	r->values[r->n_values] = strndup(v, len);
	if (!r->values[r->n_values])
		return -ENOMEM;
	r->n_values++;
	return 0;
}

static bool is_token_char(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_' ||
	       c == '/';
}

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Reads a key or value token; returns its length (may be 0). */
static size_t token_len(const char *p)
{
	size_t n = 0;

	while (is_token_char(p[n]))
		n++;
	return n;
}

static int parse_set(struct k8s_requirement *r, const char **pp, char *err,
		     size_t errlen)
{
	const char *p = skip_space(*pp);
	int k;

	if (*p != '(') {
		snprintf(err, errlen, "found '%c', expected: '('", *p ? *p : ' ');
		return -EINVAL;
	}
	p++;
	for (;;) {
		size_t n;

		p = skip_space(p);
		n = token_len(p);
		k = requirement_add_value(r, p, n);
		if (k < 0)
			return k;
		p = skip_space(p + n);
		if (*p == ')')
			break;
		if (*p != ',') {
			snprintf(err, errlen, "found '%c', expected: ',' or ')'",
				 *p ? *p : ' ');
			return -EINVAL;
		}
		p++;
	}
	*pp = p + 1;
	return 0;
}

static int parse_operator(struct k8s_requirement *r, const char **pp,
			  bool field, char *err, size_t errlen)
{
	const char *p = skip_space(*pp);

	if (p[0] == '=' && p[1] == '=') {
		r->op = K8S_SELECTOR_EQUALS;
		p += 2;
	} else if (p[0] == '=') {
		r->op = K8S_SELECTOR_EQUALS;
		p += 1;
	} else if (p[0] == '!' && p[1] == '=') {
		r->op = K8S_SELECTOR_NOT_EQUALS;
		p += 2;
	} else if (!field && strncmp(p, "in", 2) == 0 && !is_token_char(p[2])) {
		r->op = K8S_SELECTOR_IN;
		*pp = p + 2;
		return parse_set(r, pp, err, errlen);
	} else if (!field && strncmp(p, "notin", 5) == 0 &&
		   !is_token_char(p[5])) {
		r->op = K8S_SELECTOR_NOT_IN;
		*pp = p + 5;
		return parse_set(r, pp, err, errlen);
	} else if (!field && (*p == ',' || *p == '\0')) {
		r->op = K8S_SELECTOR_EXISTS;
		*pp = p;
		return 0;
	} else {
		snprintf(err, errlen, "found '%.16s', expected: operator", p);
		return -EINVAL;
	}
	p = skip_space(p);
	size_t n = token_len(p);
	int k = requirement_add_value(r, p, n);
	if (k < 0)
		return k;
	*pp = p + n;
	return 0;
}

static int selector_parse(const char *s, bool field, struct k8s_selector **ret,
			  char *err, size_t errlen)
{
	struct k8s_selector *sel;
	const char *p = s ? s : "";
	int r = 0;

	if (strlen(p) > K8S_SELECTOR_MAX_LEN) {
		snprintf(err, errlen, "selector longer than %d bytes",
			 K8S_SELECTOR_MAX_LEN);
		return -EINVAL;
	}
	sel = calloc(1, sizeof(*sel));
	if (!sel)
		return -ENOMEM;
	p = skip_space(p);
	while (*p) {
		struct k8s_requirement *req = selector_add(sel);
		bool negated = false;
		size_t n;

		if (!req) {
			r = -ENOMEM;
			goto fail;
		}
		if (!field && *p == '!') {
			negated = true;
			p = skip_space(p + 1);
		}
		n = token_len(p);
		if (n == 0) {
			snprintf(err, errlen, "found '%c', expected: identifier",
				 *p ? *p : ' ');
			r = -EINVAL;
			goto fail;
		}
		req->key = strndup(p, n);
		if (!req->key) {
			r = -ENOMEM;
			goto fail;
		}
		p += n;
		if (negated) {
			req->op = K8S_SELECTOR_NOT_EXISTS;
		} else {
			r = parse_operator(req, &p, field, err, errlen);
			if (r < 0)
				goto fail;
		}
		p = skip_space(p);
		if (*p == ',') {
			p = skip_space(p + 1);
			if (!*p) {
				snprintf(err, errlen, "found ',', expected: identifier after ','");
				r = -EINVAL;
				goto fail;
			}
		} else if (*p) {
			snprintf(err, errlen, "found '%c', expected: ','", *p);
			r = -EINVAL;
			goto fail;
		}
	}
	*ret = sel;
	return 0;
fail:
	k8s_selector_free(sel);
	return r;
}

int k8s_label_selector_parse(const char *s, struct k8s_selector **ret,
			     char *err, size_t errlen)
{
	return selector_parse(s, false, ret, err, errlen);
}

int k8s_field_selector_parse(const char *s, struct k8s_selector **ret,
			     char *err, size_t errlen)
{
	return selector_parse(s, true, ret, err, errlen);
}

static int expression_from_json(struct k8s_selector *sel, const json_t *e,
				char *err, size_t errlen)
{
	const char *key = json_string_value(json_object_get(e, "key"));
	const char *op = json_string_value(json_object_get(e, "operator"));
	const json_t *values = json_object_get(e, "values");
	struct k8s_requirement *req;
	size_t i;
	json_t *v;
	int r;

	if (!key || !op) {
		snprintf(err, errlen, "matchExpressions entry needs key and operator");
		return -EINVAL;
	}
	req = selector_add(sel);
	if (!req)
		return -ENOMEM;
	req->key = strdup(key);
	if (!req->key)
		return -ENOMEM;
	if (streq(op, "In"))
		req->op = K8S_SELECTOR_IN;
	else if (streq(op, "NotIn"))
		req->op = K8S_SELECTOR_NOT_IN;
	else if (streq(op, "Exists"))
		req->op = K8S_SELECTOR_EXISTS;
	else if (streq(op, "DoesNotExist"))
		req->op = K8S_SELECTOR_NOT_EXISTS;
	else {
		snprintf(err, errlen, "%s is not a valid label selector operator", op);
		return -EINVAL;
	}
	json_array_foreach(values, i, v) {
		const char *s = json_string_value(v);

		if (!s) {
			snprintf(err, errlen, "matchExpressions values must be strings");
			return -EINVAL;
		}
		r = requirement_add_value(req, s, strlen(s));
		if (r < 0)
			return r;
	}
	return 0;
}

int k8s_label_selector_from_json(const json_t *js, struct k8s_selector **ret,
				 char *err, size_t errlen)
{
	struct k8s_selector *sel = calloc(1, sizeof(*sel));
	const char *key;
	json_t *v;
	size_t i;
	int r;

	if (!sel)
		return -ENOMEM;
	if (!js || json_is_null(js)) {
		sel->match_nothing = true;
		*ret = sel;
		return 0;
	}
	json_object_foreach((json_t *)json_object_get(js, "matchLabels"), key, v) {
		struct k8s_requirement *req = selector_add(sel);

		if (!req || !(req->key = strdup(key))) {
			r = -ENOMEM;
			goto fail;
		}
		req->op = K8S_SELECTOR_EQUALS;
		if (!json_is_string(v)) {
			snprintf(err, errlen, "matchLabels values must be strings");
			r = -EINVAL;
			goto fail;
		}
		r = requirement_add_value(req, json_string_value(v),
					  json_string_length(v));
		if (r < 0)
			goto fail;
	}
	json_array_foreach(json_object_get(js, "matchExpressions"), i, v) {
		r = expression_from_json(sel, v, err, errlen);
		if (r < 0)
			goto fail;
	}
	*ret = sel;
	return 0;
fail:
	k8s_selector_free(sel);
	return r;
}

static bool value_in(const struct k8s_requirement *r, const char *v)
{
	for (size_t i = 0; i < r->n_values; i++)
		if (streq(r->values[i], v))
			return true;
	return false;
}

static bool requirement_matches(const struct k8s_requirement *r,
				const char *v)
{
	switch (r->op) {
	case K8S_SELECTOR_EXISTS:
		return v != NULL;
	case K8S_SELECTOR_NOT_EXISTS:
		return v == NULL;
	case K8S_SELECTOR_EQUALS:
	case K8S_SELECTOR_IN:
		return v && value_in(r, v);
	case K8S_SELECTOR_NOT_EQUALS:
	case K8S_SELECTOR_NOT_IN:
		return !v || !value_in(r, v);
	}
	return false;
}

bool k8s_label_selector_matches(const struct k8s_selector *sel,
				const json_t *labels)
{
	if (!sel)
		return true;
	if (sel->match_nothing)
		return false;
	for (size_t i = 0; i < sel->n_reqs; i++) {
		const char *v = json_string_value(
			json_object_get(labels, sel->reqs[i].key));

		if (!requirement_matches(&sel->reqs[i], v))
			return false;
	}
	return true;
}

bool k8s_field_selector_matches(const struct k8s_selector *sel,
				k8s_field_resolver resolve, void *userdata)
{
	if (!sel)
		return true;
	for (size_t i = 0; i < sel->n_reqs; i++) {
		const char *v = resolve(sel->reqs[i].key, userdata);

		/* A missing field compares as upstream's field set has it: "" or "false". */
		if (!requirement_matches(&sel->reqs[i], v ? v : sel->reqs[i].absent ?: ""))
			return false;
	}
	return true;
}

const char *k8s_json_field(const json_t *obj, const char *field, char *buf,
			   size_t buflen)
{
	const json_t *cur = obj;
	const char *p = field;

	while (cur && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		char key[256];

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		cur = json_object_get(cur, key);
		p = dot ? dot + 1 : p + n;
	}
	if (!cur)
		return NULL;
	if (json_is_string(cur))
		return json_string_value(cur);
	if (json_is_integer(cur)) {
		snprintf(buf, buflen, "%" JSON_INTEGER_FORMAT, json_integer_value(cur));
		return buf;
	}
	if (json_is_boolean(cur))
		return json_is_true(cur) ? "true" : "false";
	return NULL;
}
