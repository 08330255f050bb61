/*
 * CEL's evaluator over jansson values, for the trees cel-parse.c builds.
 * Values are json_t references (new ones, released by the caller); JSON
 * integers are CEL ints, reals doubles, objects maps. Errors follow
 * cel-go: && and || absorb an error when the other side decides the result,
 * all() and exists() likewise across elements, everything else passes it
 * up; the texts are cel-go's ("no such key: x", "index out of bounds: 1",
 * "no such overload"), which kube-apiserver wraps into its field errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cel-internal.h"
#include "sim/cel.h"

#define CEL_MAX_BINDINGS 8

struct eval {
	json_t *self, *old_self;
	const char *names[CEL_MAX_BINDINGS];
	json_t *values[CEL_MAX_BINDINGS];
	int nbound;
	int error; /* -EINVAL or -ENOMEM once failed */
	char *err;
	size_t errlen;
};

static json_t *fail(struct eval *ev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static json_t *fail(struct eval *ev, const char *fmt, ...)
{
	va_list ap;

	ev->error = -EINVAL;
	va_start(ap, fmt);
	vsnprintf(ev->err, ev->errlen, fmt, ap);
	va_end(ap);
	return NULL;
}

static json_t *oom(struct eval *ev)
{
	ev->error = -ENOMEM;
	snprintf(ev->err, ev->errlen, "out of memory");
	return NULL;
}

static json_t *no_overload(struct eval *ev)
{
	return fail(ev, "no such overload");
}

/* A new reference, or an out-of-memory error. */
static json_t *made(struct eval *ev, json_t *v)
{
	return v ? v : oom(ev);
}

static json_t *eval(struct eval *ev, const struct cel_node *n);

/* Evaluates n to a bool: 1, 0, or -1 with ev->error set. */
static int eval_bool(struct eval *ev, const struct cel_node *n)
{
	json_t *v = eval(ev, n);
	int r;

	if (!v)
		return -1;
	r = json_is_boolean(v) ? json_is_true(v) : (no_overload(ev), -1);
	json_decref(v);
	return r;
}

/* CEL's heterogeneous equality: numbers compare by value, lists and maps
 * element-wise, values of different types are unequal. */
static bool equal(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	if (json_typeof(a) != json_typeof(b) &&
	    !(json_is_boolean(a) && json_is_boolean(b)))
		return false;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
	case JSON_TRUE:
	case JSON_FALSE:
		return json_is_true(a) == json_is_true(b);
	case JSON_NULL:
		return true;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!equal(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	case JSON_OBJECT: {
		const char *k;
		json_t *v;

		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach((json_t *)a, k, v) {
			json_t *w = json_object_get(b, k);

			if (!w || !equal(v, w))
				return false;
		}
		return true;
	}
	default:
		return false;
	}
}

/* <0, 0, >0, or -2 with "no such overload" (ordering needs like types). */
static int compare(struct eval *ev, const json_t *a, const json_t *b, int *out)
{
	if (json_is_integer(a) && json_is_integer(b)) {
		json_int_t x = json_integer_value(a), y = json_integer_value(b);

		*out = (x > y) - (x < y);
	} else if (json_is_number(a) && json_is_number(b)) {
		double x = json_number_value(a), y = json_number_value(b);

		if (isnan(x) || isnan(y)) {
			*out = 2; /* unordered: every comparison false */
			return 0;
		}
		*out = (x > y) - (x < y);
	} else if (json_is_string(a) && json_is_string(b)) {
		size_t la = json_string_length(a), lb = json_string_length(b);
		int c = memcmp(json_string_value(a), json_string_value(b), la < lb ? la : lb);

		*out = c ? c : (la > lb) - (la < lb);
	} else if (json_is_boolean(a) && json_is_boolean(b)) {
		*out = json_is_true(a) - json_is_true(b);
	} else {
		no_overload(ev);
		return -1;
	}
	return 0;
}

/* Code points, as CEL's size() counts a string (jansson holds UTF-8). */
static json_int_t utf8_length(const char *s, size_t len)
{
	json_int_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

static json_t *call_int(struct eval *ev, const json_t *v)
{
	if (json_is_integer(v))
		return made(ev, json_integer(json_integer_value(v)));
	if (json_is_real(v)) {
		double d = json_real_value(v);

		/* cel-go: doubles outside int64 (and NaN) do not convert. */
		if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
			return fail(ev, "integer overflow");
		return made(ev, json_integer((json_int_t)d));
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v), *end;
		long long x;

		errno = 0;
		x = strtoll(s, (char **)&end, 10);
		/* strconv.ParseInt: a sign, then digits only; cel-go gives
		 * one text for every failure, overflow included. */
		if (!*s || *s == ' ' || *s == '\t' || *s == '\n' || *end ||
		    end != s + json_string_length(v) || !(s[*s == '-' || *s == '+'] >= '0' &&
							   s[*s == '-' || *s == '+'] <= '9') ||
		    errno == ERANGE)
			return fail(ev, "type conversion error from 'string' to 'int'");
		return made(ev, json_integer(x));
	}
	return no_overload(ev);
}

static json_t *call_split(struct eval *ev, const json_t *s, const json_t *sep)
{
	const char *p = json_string_value(s), *end = p + json_string_length(s);
	const char *d = json_string_value(sep);
	size_t dl = json_string_length(sep);
	json_t *list = json_array();

	if (!list)
		return oom(ev);
	while (p <= end) {
		const char *q;

		if (dl == 0) { /* "": one element per code point */
			if (p == end)
				break;
			q = p + 1;
			while (q < end && ((unsigned char)*q & 0xc0) == 0x80)
				q++;
		} else {
			q = p;
			while (q + dl <= end && memcmp(q, d, dl))
				q++;
			if (q + dl > end)
				q = end;
		}
		if (json_array_append_new(list, json_stringn(p, (size_t)(q - p))) < 0) {
			json_decref(list);
			return oom(ev);
		}
		p = q + (dl ? dl : 0);
		if (dl && q == end)
			break;
	}
	return list;
}

/* matches() is a search, not an anchored match (Go's MatchString). */
static json_t *call_regex(struct eval *ev, const struct cel_node *n, const json_t *s)
{
	regmatch_t m[1] = { { 0, (regoff_t)json_string_length(s) } };
	int r = regexec(n->re, json_string_value(s), 1, m, REG_STARTEND);

	if (r != 0 && r != REG_NOMATCH)
		return fail(ev, "regex evaluation failed");
	if (n->fn == CEL_FN_MATCHES)
		return made(ev, json_boolean(r == 0));
	if (r != 0)
		return made(ev, json_string(""));
	return made(ev, json_stringn(json_string_value(s) + m[0].rm_so,
				     (size_t)(m[0].rm_eo - m[0].rm_so)));
}

static json_t *call(struct eval *ev, const struct cel_node *n)
{
	json_t *a = eval(ev, n->kids[0]), *b = NULL, *r = NULL;

	if (!a)
		return NULL;
	if (n->nkids > 1 && n->fn != CEL_FN_MATCHES && n->fn != CEL_FN_FIND) {
		b = eval(ev, n->kids[1]);
		if (!b) {
			json_decref(a);
			return NULL;
		}
	}
	switch (n->fn) {
	case CEL_FN_SIZE:
		if (json_is_string(a))
			r = made(ev, json_integer(utf8_length(json_string_value(a),
							      json_string_length(a))));
		else if (json_is_array(a))
			r = made(ev, json_integer((json_int_t)json_array_size(a)));
		else if (json_is_object(a))
			r = made(ev, json_integer((json_int_t)json_object_size(a)));
		else
			r = no_overload(ev);
		break;
	case CEL_FN_INT:
		r = call_int(ev, a);
		break;
	case CEL_FN_STARTS_WITH:
	case CEL_FN_ENDS_WITH:
		if (!json_is_string(a) || !json_is_string(b)) {
			r = no_overload(ev);
		} else {
			size_t la = json_string_length(a), lb = json_string_length(b);
			const char *s = json_string_value(a);

			r = made(ev, json_boolean(
				     lb <= la &&
				     !memcmp(n->fn == CEL_FN_STARTS_WITH ? s : s + la - lb,
					     json_string_value(b), lb)));
		}
		break;
	case CEL_FN_MATCHES:
	case CEL_FN_FIND:
		r = json_is_string(a) ? call_regex(ev, n, a) : no_overload(ev);
		break;
	case CEL_FN_SPLIT:
		r = json_is_string(a) && json_is_string(b) ? call_split(ev, a, b) : no_overload(ev);
		break;
	}
	json_decref(a);
	json_decref(b);
	return r;
}

/* all(), exists(), filter() over a list's elements or a map's keys. */
static json_t *comprehension(struct eval *ev, const struct cel_node *n)
{
	json_t *range = eval(ev, n->kids[0]), *keys = NULL, *out = NULL;
	int result = n->op == CEL_ALL, saved = 0;
	char saved_err[256] = "";

	if (!range)
		return NULL;
	if (json_is_object(range)) {
		const char *k;
		json_t *v;

		keys = json_array();
		if (!keys)
			goto oom;
		json_object_foreach(range, k, v)
			if (json_array_append_new(keys, json_string(k)) < 0)
				goto oom;
	} else if (!json_is_array(range)) {
		json_decref(range);
		return no_overload(ev);
	}
	if (n->op == CEL_FILTER && !(out = json_array()))
		goto oom;
	if (ev->nbound == CEL_MAX_BINDINGS) {
		json_decref(range);
		json_decref(keys);
		json_decref(out);
		return fail(ev, "macros nested too deep");
	}
	for (size_t i = 0; i < json_array_size(keys ? keys : range); i++) {
		json_t *elem = json_array_get(keys ? keys : range, i);
		int p;

		ev->names[ev->nbound] = n->str;
		ev->values[ev->nbound++] = elem;
		p = eval_bool(ev, n->kids[1]);
		ev->nbound--;
		if (p < 0) {
			if (n->op == CEL_FILTER || ev->error == -ENOMEM)
				goto error;
			/* Another element may still decide the result. */
			if (!saved)
				snprintf(saved_err, sizeof(saved_err), "%s", ev->err);
			saved = 1;
			ev->error = 0;
			continue;
		}
		if (n->op == CEL_FILTER) {
			if (p && json_array_append(out, elem) < 0)
				goto oom;
		} else if (p != result) {
			result = p;
			saved = 0;
			break;
		}
	}
	json_decref(range);
	json_decref(keys);
	if (n->op == CEL_FILTER)
		return out;
	if (saved)
		return fail(ev, "%s", saved_err);
	return made(ev, json_boolean(result));
oom:
	oom(ev);
error:
	json_decref(range);
	json_decref(keys);
	json_decref(out);
	return NULL;
}

/* a && b, a || b: the deciding value wins over an error on either side
 * (cel-go's evalAnd and evalOr). */
static json_t *logical(struct eval *ev, const struct cel_node *n)
{
	int decide = n->op == CEL_OR; /* the value that decides */
	int a = eval_bool(ev, n->kids[0]), b;
	char saved[256];

	if (a == decide)
		return made(ev, json_boolean(decide));
	if (a < 0) {
		if (ev->error == -ENOMEM)
			return NULL;
		snprintf(saved, sizeof(saved), "%s", ev->err);
		ev->error = 0;
	}
	b = eval_bool(ev, n->kids[1]);
	if (b == decide)
		return made(ev, json_boolean(decide));
	if (b < 0 && ev->error == -ENOMEM)
		return NULL;
	/* cel-go reports the left error when both sides fail. */
	if (a < 0)
		return fail(ev, "%s", saved);
	if (b < 0)
		return NULL;
	return made(ev, json_boolean(!decide));
}

static json_t *lookup(struct eval *ev, const char *name)
{
	for (int i = ev->nbound - 1; i >= 0; i--)
		if (!strcmp(ev->names[i], name))
			return json_incref(ev->values[i]);
	if (!strcmp(name, "self"))
		return json_incref(ev->self);
	if (ev->old_self && !strcmp(name, "oldSelf"))
		return json_incref(ev->old_self);
	return fail(ev, "no such attribute: %s", name);
}

static json_t *relation(struct eval *ev, const struct cel_node *n, json_t *a, json_t *b)
{
	int c;

	switch (n->op) {
	case CEL_EQ:
		return made(ev, json_boolean(equal(a, b)));
	case CEL_NE:
		return made(ev, json_boolean(!equal(a, b)));
	case CEL_IN:
		if (json_is_array(b)) {
			for (size_t i = 0; i < json_array_size(b); i++)
				if (equal(a, json_array_get(b, i)))
					return made(ev, json_true());
			return made(ev, json_false());
		}
		if (json_is_object(b))
			return json_is_string(a) ?
				made(ev, json_boolean(json_object_getn(b, json_string_value(a),
								       json_string_length(a)) != NULL)) :
				made(ev, json_false());
		return no_overload(ev);
	default:
		if (compare(ev, a, b, &c) < 0)
			return NULL;
		if (c == 2)
			return made(ev, json_false());
		return made(ev, json_boolean(n->op == CEL_LT ? c < 0 : n->op == CEL_LE ? c <= 0 :
					     n->op == CEL_GT ? c > 0 : c >= 0));
	}
}

static json_t *eval(struct eval *ev, const struct cel_node *n)
{
	json_t *a, *b, *r;
	int c;

	switch (n->op) {
	case CEL_BOOL:
		return made(ev, json_boolean(n->ival));
	case CEL_INT:
		return made(ev, json_integer(n->ival));
	case CEL_STRING:
		return made(ev, json_stringn(n->str, n->len));
	case CEL_NULL:
		return made(ev, json_null());
	case CEL_LIST:
		r = json_array();
		if (!r)
			return oom(ev);
		for (size_t i = 0; i < n->nkids; i++) {
			if (!(a = eval(ev, n->kids[i]))) {
				json_decref(r);
				return NULL;
			}
			if (json_array_append_new(r, a) < 0) {
				json_decref(r);
				return oom(ev);
			}
		}
		return r;
	case CEL_IDENT:
		return lookup(ev, n->str);
	case CEL_SELECT:
	case CEL_HAS:
		if (!(a = eval(ev, n->kids[0])))
			return NULL;
		if (!json_is_object(a)) {
			json_decref(a);
			return no_overload(ev);
		}
		b = json_object_get(a, n->str);
		if (n->op == CEL_HAS)
			r = made(ev, json_boolean(b != NULL));
		else
			r = b ? json_incref(b) : fail(ev, "no such key: %s", n->str);
		json_decref(a);
		return r;
	case CEL_INDEX:
		if (!(a = eval(ev, n->kids[0])))
			return NULL;
		if (!(b = eval(ev, n->kids[1]))) {
			json_decref(a);
			return NULL;
		}
		if (json_is_array(a) && json_is_integer(b)) {
			json_int_t i = json_integer_value(b);

			r = i >= 0 && (size_t)i < json_array_size(a) ?
				    json_incref(json_array_get(a, (size_t)i)) :
				    fail(ev, "index out of bounds: %" JSON_INTEGER_FORMAT, i);
		} else if (json_is_object(a) && json_is_string(b)) {
			r = json_object_getn(a, json_string_value(b), json_string_length(b));
			r = r ? json_incref(r) : fail(ev, "no such key: %s", json_string_value(b));
		} else {
			r = no_overload(ev);
		}
		json_decref(a);
		json_decref(b);
		return r;
	case CEL_NOT:
		c = eval_bool(ev, n->kids[0]);
		return c < 0 ? NULL : made(ev, json_boolean(!c));
	case CEL_AND:
	case CEL_OR:
		return logical(ev, n);
	case CEL_COND:
		c = eval_bool(ev, n->kids[0]);
		return c < 0 ? NULL : eval(ev, n->kids[c ? 1 : 2]);
	case CEL_EQ:
	case CEL_NE:
	case CEL_LT:
	case CEL_LE:
	case CEL_GT:
	case CEL_GE:
	case CEL_IN:
		if (!(a = eval(ev, n->kids[0])))
			return NULL;
		if (!(b = eval(ev, n->kids[1]))) {
			json_decref(a);
			return NULL;
		}
		r = relation(ev, n, a, b);
		json_decref(a);
		json_decref(b);
		return r;
	case CEL_CALL:
		return call(ev, n);
	case CEL_ALL:
	case CEL_EXISTS:
	case CEL_FILTER:
		return comprehension(ev, n);
	}
	return no_overload(ev);
}

int cel_validate_object(const struct cel_program *prog, json_t *self, json_t *old_self, char *err,
			size_t errlen)
{
	struct eval ev = { .self = self, .old_self = old_self, .err = err, .errlen = errlen };
	int r;

	if (errlen)
		err[0] = '\0';
	/* Kubernetes evaluates a transition rule only on an update that has
	 * an old value to compare with. */
	if (prog->uses_old_self && !old_self)
		return 1;
	r = eval_bool(&ev, prog->root);
	if (r < 0)
		return ev.error ? ev.error : -EINVAL;
	return r;
}
