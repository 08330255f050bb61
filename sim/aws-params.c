/*
 * Query-protocol parameters as kanna-sim's AWS handlers see them: the
 * name/value list that libmicrohttpd's post processor (or the query string)
 * produced, EC2's flattened lists ("Filter.1.Value.2"), filters with EC2's
 * * and ? wildcards, and resource tag sets. Pure data; no HTTP, no state.
 */
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>

#include "sim/aws-internal.h"

int aws_params_add(struct aws_params *p, const char *name, const char *value,
		   size_t len, uint64_t off)
{
	struct aws_param *last = p->n ? &p->v[p->n - 1] : NULL;
	char *v;

	if (off > 0 && last && streq(last->name, name)) {
		size_t old = strlen(last->value);

		if (old + len > SIM_AWS_BODY_MAX)
			return -E2BIG;
		v = realloc(last->value, old + len + 1);
		if (!v)
			return -ENOMEM;
		memcpy(v + old, value, len);
		v[old + len] = '\0';
		last->value = v;
		return 0;
	}
	if (p->n >= SIM_AWS_PARAMS_MAX)
		return -E2BIG;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		struct aws_param *nv = realloc(p->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		p->v = nv;
		p->cap = cap;
	}
	p->v[p->n].name = strdup(name);
	p->v[p->n].value = strndup(value ? value : "", value ? len : 0);
	if (!p->v[p->n].name || !p->v[p->n].value) {
		free(p->v[p->n].name);
		free(p->v[p->n].value);
		return -ENOMEM;
	}
	p->n++;
	return 0;
}

const char *aws_params_get(const struct aws_params *p, const char *name)
{
	if (!p)
		return NULL;
	for (size_t i = 0; i < p->n; i++)
		if (streq(p->v[i].name, name))
			return p->v[i].value;
	return NULL;
}

const char *aws_params_getf(const struct aws_params *p, const char *fmt, ...)
{
	char name[256];
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= sizeof(name))
		return NULL;
	return aws_params_get(p, name);
}

void aws_params_clear(struct aws_params *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].name);
		free(p->v[i].value);
	}
	free(p->v);
	*p = (struct aws_params){ 0 };
}

/* N of a "Prefix.N" or "Prefix.N.<anything>" name, or 0. */
static size_t param_index(const char *name, const char *prefix, size_t prefix_len)
{
	unsigned long v = 0;
	const char *s;

	if (strncmp(name, prefix, prefix_len) != 0 || name[prefix_len] != '.')
		return 0;
	s = name + prefix_len + 1;
	if (*s < '1' || *s > '9')
		return 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > SIM_AWS_LIST_MAX)
			return 0;
	}
	return *s == '\0' || *s == '.' ? v : 0;
}

/* One pass over the parameters: which indexes 1..SIM_AWS_LIST_MAX occur. */
size_t aws_params_count(const struct aws_params *p, const char *prefix)
{
	bool seen[SIM_AWS_LIST_MAX + 1] = { false };
	size_t len = strlen(prefix), n = 0;

	for (size_t i = 0; p && i < p->n; i++)
		seen[param_index(p->v[i].name, prefix, len)] = true;
	while (n < SIM_AWS_LIST_MAX && seen[n + 1])
		n++;
	return n;
}

int aws_params_list(const struct aws_params *p, const char *prefix, struct aws_list *ret)
{
	size_t n = aws_params_count(p, prefix), len = strlen(prefix);

	*ret = (struct aws_list){ 0 };
	if (n == 0)
		return 0;
	ret->v = calloc(n, sizeof(*ret->v));
	if (!ret->v)
		return -ENOMEM;
	ret->n = n;
	for (size_t i = 0; i < p->n; i++) {
		size_t k = param_index(p->v[i].name, prefix, len);

		/* Only "Prefix.N" itself, not "Prefix.N.Key". */
		if (k >= 1 && k <= n && !strchr(p->v[i].name + len + 1, '.'))
			ret->v[k - 1] = p->v[i].value;
	}
	return 0;
}

bool aws_list_has(const struct aws_list *l, const char *s)
{
	for (size_t i = 0; s && i < l->n; i++)
		if (streq_ptr(l->v[i], s))
			return true;
	return false;
}

void aws_list_clear(struct aws_list *l)
{
	free(l->v);
	*l = (struct aws_list){ 0 };
}

int aws_parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int aws_filters_parse(const struct aws_params *p, struct aws_filters *ret)
{
	size_t n = aws_params_count(p, "Filter");

	*ret = (struct aws_filters){ 0 };
	if (n == 0)
		return 0;
	ret->v = calloc(n, sizeof(*ret->v));
	if (!ret->v)
		return -ENOMEM;
	ret->n = n;
	for (size_t i = 0; i < n; i++) {
		struct aws_filter *f = &ret->v[i];
		size_t nv;

		f->name = aws_params_getf(p, "Filter.%zu.Name", i + 1);
		if (!f->name)
			return -EINVAL;
		{
			char prefix[64];

			snprintf(prefix, sizeof(prefix), "Filter.%zu.Value", i + 1);
			nv = aws_params_count(p, prefix);
		}
		if (nv == 0)
			continue;
		f->values = calloc(nv, sizeof(*f->values));
		if (!f->values)
			return -ENOMEM;
		for (size_t j = 0; j < nv; j++) {
			f->values[j] = aws_params_getf(p, "Filter.%zu.Value.%zu", i + 1, j + 1);
			if (!f->values[j])
				return -EINVAL;
		}
		f->n_values = nv;
	}
	return 0;
}

void aws_filters_clear(struct aws_filters *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].values);
	free(f->v);
	*f = (struct aws_filters){ 0 };
}

const struct aws_filter *aws_filters_find(const struct aws_filters *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (streq(f->v[i].name, name))
			return &f->v[i];
	return NULL;
}

bool aws_filter_matches(const struct aws_filter *f, const char *value)
{
	if (!value)
		return false;
	for (size_t i = 0; i < f->n_values; i++)
		if (fnmatch(f->values[i], value, FNM_NOESCAPE) == 0)
			return true;
	return false;
}

int aws_tags_set(struct aws_tags *t, const char *key, const char *value)
{
	struct sim_aws_tag *nv;
	char *k, *v;

	v = strdup(value ? value : "");
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++)
		if (streq(t->v[i].key, key)) {
			free((char *)t->v[i].value);
			t->v[i].value = v;
			return 0;
		}
	k = strdup(key);
	nv = realloc(t->v, (t->n + 1) * sizeof(*nv));
	if (!k || !nv) {
		free(k);
		free(v);
		if (nv)
			t->v = nv;
		return -ENOMEM;
	}
	t->v = nv;
	t->v[t->n++] = (struct sim_aws_tag){ .key = k, .value = v };
	return 0;
}

const char *aws_tags_get(const struct aws_tags *t, const char *key)
{
	for (size_t i = 0; i < t->n; i++)
		if (streq(t->v[i].key, key))
			return t->v[i].value;
	return NULL;
}

void aws_tags_clear(struct aws_tags *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free((char *)t->v[i].key);
		free((char *)t->v[i].value);
	}
	free(t->v);
	*t = (struct aws_tags){ 0 };
}

static bool tags_any(const struct aws_tags *t, const struct aws_filter *f, bool keys)
{
	for (size_t i = 0; i < t->n; i++)
		if (aws_filter_matches(f, keys ? t->v[i].key : t->v[i].value))
			return true;
	return false;
}

bool aws_tags_match_filters(const struct aws_tags *t, const struct aws_filters *f)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct aws_filter *flt = &f->v[i];

		if (strncmp(flt->name, "tag:", 4) == 0) {
			if (!aws_filter_matches(flt, aws_tags_get(t, flt->name + 4)))
				return false;
		} else if (streq(flt->name, "tag-key")) {
			if (!tags_any(t, flt, true))
				return false;
		} else if (streq(flt->name, "tag-value")) {
			if (!tags_any(t, flt, false))
				return false;
		}
	}
	return true;
}

int ec2_filters_load(const struct aws_request *req, struct aws_response *resp,
		     const char *const *allowed, bool tags, struct aws_filters *ret,
		     bool *handled)
{
	int r;

	*handled = false;
	r = aws_filters_parse(req->params, ret);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		aws_filters_clear(ret);
		*handled = true;
		return aws_error_missing(resp, req, "Filter.N.Name");
	}
	for (size_t i = 0; i < ret->n; i++) {
		const char *name = ret->v[i].name;
		bool ok = tags && (strncmp(name, "tag:", 4) == 0 || streq(name, "tag-key") ||
				   streq(name, "tag-value"));

		for (size_t k = 0; !ok && allowed[k]; k++)
			ok = streq(allowed[k], name);
		if (!ok) {
			*handled = true;
			r = aws_error(resp, req, 400, "InvalidParameterValue",
				      "The filter '%s' is invalid", name);
			aws_filters_clear(ret);
			return r;
		}
	}
	return 0;
}

int ec2_parse_tag_specs(const struct aws_params *p, const char *resource_type,
			struct aws_tags *t, char *bad, size_t badlen)
{
	size_t n = aws_params_count(p, "TagSpecification");

	for (size_t i = 1; i <= n; i++) {
		const char *rt = aws_params_getf(p, "TagSpecification.%zu.ResourceType", i);
		char prefix[64];
		size_t m;

		if (!rt) {
			snprintf(bad, badlen, "TagSpecification.%zu.ResourceType", i);
			return -EINVAL;
		}
		if (!streq(rt, resource_type))
			continue;
		snprintf(prefix, sizeof(prefix), "TagSpecification.%zu.Tag", i);
		m = aws_params_count(p, prefix);
		for (size_t k = 1; k <= m; k++) {
			const char *key = aws_params_getf(p, "%s.%zu.Key", prefix, k);
			const char *value = aws_params_getf(p, "%s.%zu.Value", prefix, k);
			int r;

			if (!key || !*key || strncmp(key, "aws:", 4) == 0 || t->n >= EC2_TAGS_MAX) {
				snprintf(bad, badlen, "%s.%zu.Key", prefix, k);
				return -EINVAL;
			}
			r = aws_tags_set(t, key, value);
			if (r < 0)
				return r;
		}
	}
	return 0;
}
