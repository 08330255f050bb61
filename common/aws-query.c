/*
 * Query-protocol request bodies (EC2, STS, SQS): Action, Version, then the
 * parameters in the order added, form-encoded with RFC 3986 escaping (what
 * the SDKs send, and what SigV4 hashes). Names follow the EC2 flattening
 * conventions, built by the caller printf-style ("Filter.1.Value.2").
 * Called by launcher/ and reaper/ through aws_call_query(); no I/O here.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "common/aws.h"

/* CreateFleet with 60 candidates x 8 subnets and tags stays under ~2k
 * parameters; the bound stops a runaway loop from eating memory. */
#define AWS_QUERY_MAX_PARAMS 8192

struct aws_query_param {
	char *name;
	char *value;
};

struct aws_query {
	char *action;
	struct aws_query_param *params; /* [0] Action, [1] Version */
	size_t n_params;
	size_t cap;
};

void aws_query_free(struct aws_query *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n_params; i++) {
		free(q->params[i].name);
		free(q->params[i].value);
	}
	free(q->params);
	free(q->action);
	free(q);
}

static int query_push(struct aws_query *q, char *name, const char *value)
{
	char *v;

	if (!name)
		return -ENOMEM;
	if (q->n_params >= AWS_QUERY_MAX_PARAMS) {
		free(name);
		return -E2BIG;
	}
	if (q->n_params == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		struct aws_query_param *p = realloc(q->params, cap * sizeof(*p));

		if (!p) {
			free(name);
			return -ENOMEM;
		}
		q->params = p;
		q->cap = cap;
	}
	v = strdup(value ? value : "");
	if (!v) {
		free(name);
		return -ENOMEM;
	}
	q->params[q->n_params++] = (struct aws_query_param){ name, v };
	return 0;
}

int aws_query_new(const char *action, const char *version, struct aws_query **ret)
{
	_cleanup_(aws_query_freep) struct aws_query *q = NULL;
	int r;

	if (!action || !*action || !version || !*version)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->action = strdup(action);
	if (!q->action)
		return -ENOMEM;
	r = query_push(q, strdup("Action"), action);
	if (r < 0)
		return r;
	r = query_push(q, strdup("Version"), version);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(q);
	return 0;
}

static int query_vadd(struct aws_query *q, const char *value, const char *name_fmt, va_list ap)
	_printf_(3, 0);

static int query_vadd(struct aws_query *q, const char *value, const char *name_fmt, va_list ap)
{
	char *name;

	if (!q || !name_fmt)
		return -EINVAL;
	if (vasprintf(&name, name_fmt, ap) < 0)
		return -ENOMEM;
	if (!*name) {
		free(name);
		return -EINVAL;
	}
	return query_push(q, name, value);
}

int aws_query_add(struct aws_query *q, const char *value, const char *name_fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, name_fmt);
	r = query_vadd(q, value, name_fmt, ap);
	va_end(ap);
	return r;
}

int aws_query_add_int(struct aws_query *q, long long value, const char *name_fmt, ...)
{
	char buf[32];
	va_list ap;
	int r;

	snprintf(buf, sizeof(buf), "%lld", value);
	va_start(ap, name_fmt);
	r = query_vadd(q, buf, name_fmt, ap);
	va_end(ap);
	return r;
}

int aws_query_add_list(struct aws_query *q, const char *prefix, const char *const *values,
		       size_t n)
{
	int r;

	if (!prefix || !*prefix || (n > 0 && !values))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		r = aws_query_add(q, values[i], "%s.%zu", prefix, i + 1);
		if (r < 0)
			return r;
	}
	return 0;
}

int aws_query_add_filter(struct aws_query *q, unsigned index, const char *name,
			 const char *const *values, size_t n)
{
	char prefix[64];
	int r;

	if (index == 0 || !name)
		return -EINVAL;
	r = aws_query_add(q, name, "Filter.%u.Name", index);
	if (r < 0)
		return r;
	snprintf(prefix, sizeof(prefix), "Filter.%u.Value", index);
	return aws_query_add_list(q, prefix, values, n);
}

const char *aws_query_action(const struct aws_query *q)
{
	return q ? q->action : NULL;
}

static void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

int aws_query_encode(const struct aws_query *q, char **ret)
{
	_cleanup_(fclosep) FILE *f = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;

	if (!q || !ret)
		return -EINVAL;
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < q->n_params; i++) {
		/* curl_easy_escape keeps exactly RFC 3986's unreserved set */
		_cleanup_free_ char *n = NULL, *v = NULL;
		char *tmp;

		tmp = curl_easy_escape(NULL, q->params[i].name, 0);
		n = tmp ? strdup(tmp) : NULL;
		curl_free(tmp);
		tmp = curl_easy_escape(NULL, q->params[i].value, 0);
		v = tmp ? strdup(tmp) : NULL;
		curl_free(tmp);
		if (!n || !v)
			return -ENOMEM;
		fprintf(f, "%s%s=%s", i ? "&" : "", n, v);
	}
	if (ferror(f) || fclose(f) != 0) {
		f = NULL;
		return -ENOMEM;
	}
	f = NULL;
	*ret = TAKE_PTR(buf);
	return 0;
}
