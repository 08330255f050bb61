/*
 * The requirement algebra (In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte,
 * Lte, minValues) over interned label ids: intersection, compatibility and
 * matching against label sets, as Karpenter's scheduling.Requirements does.
 * Called by the catalog index, the solver and the loaders; allocates only
 * the value arrays of the requirements it builds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

int req_op_from_string(const char *s, enum req_op *ret)
{
	static const char *const names[] = {
		[REQ_IN] = "In", [REQ_NOT_IN] = "NotIn", [REQ_EXISTS] = "Exists",
		[REQ_DOES_NOT_EXIST] = "DoesNotExist", [REQ_GT] = "Gt", [REQ_LT] = "Lt",
		[REQ_GTE] = "Gte", [REQ_LTE] = "Lte",
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (streq(s, names[i])) {
			*ret = (enum req_op)i;
			return 0;
		}
	return -EINVAL;
}

void requirements_free(struct requirements *r)
{
	for (uint32_t i = 0; i < r->n; i++)
		free(r->v[i].values);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

int requirements_copy(struct requirements *dst, const struct requirements *src)
{
	memset(dst, 0, sizeof(*dst));
	if (!src->n)
		return 0;
	dst->v = malloc(src->n * sizeof(*dst->v));
	if (!dst->v)
		return -ENOMEM;
	dst->cap = src->n;
	for (uint32_t i = 0; i < src->n; i++) {
		dst->v[i] = src->v[i];
		dst->v[i].values = NULL;
		if (src->v[i].n_values) {
			dst->v[i].values = malloc(src->v[i].n_values * sizeof(uint32_t));
			if (!dst->v[i].values) {
				dst->n = i;
				requirements_free(dst);
				return -ENOMEM;
			}
			memcpy(dst->v[i].values, src->v[i].values,
			       src->v[i].n_values * sizeof(uint32_t));
		}
		dst->n = i + 1;
	}
	return 0;
}

static int32_t requirements_find(const struct requirements *r, uint32_t key)
{
	uint32_t lo = 0, hi = r->n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (r->v[mid].key == key)
			return (int32_t)mid;
		if (r->v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(int32_t)lo - 1;
}

const struct requirement *requirements_get(const struct requirements *r, uint32_t key)
{
	int32_t i = requirements_find(r, key);

	return i >= 0 ? &r->v[i] : NULL;
}

static bool in_bounds(const struct requirement *req, const struct strtab *st, uint32_t value)
{
	int64_t n;

	if (req->gt == INT64_MIN && req->lt == INT64_MAX)
		return true;
	if (!strtab_int(st, value, &n))
		return false;
	return n > req->gt && n < req->lt;
}

static bool values_contain(const uint32_t *v, uint32_t n, uint32_t x)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (v[mid] == x)
			return true;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

bool requirement_allows(const struct requirement *req, const struct strtab *st, uint32_t value)
{
	if (value == STR_NONE)
		return req->absent_ok;
	if (!in_bounds(req, st, value))
		return false;
	return values_contain(req->values, req->n_values, value) != req->complement;
}

static bool bounds_empty(int64_t gt, int64_t lt)
{
	/* Integers strictly between gt and lt. */
	return gt != INT64_MIN && lt != INT64_MAX ? lt - gt <= 1 : gt >= lt;
}

bool requirement_is_empty(const struct requirement *req)
{
	if (req->absent_ok)
		return false;
	if (!req->complement)
		return req->n_values == 0;
	return bounds_empty(req->gt, req->lt);
}

bool requirement_intersects(const struct requirement *a, const struct requirement *b,
			    const struct strtab *st)
{
	if (a->absent_ok && b->absent_ok)
		return true;
	if (!a->complement || !b->complement) {
		const struct requirement *set = !a->complement ? a : b;
		const struct requirement *other = set == a ? b : a;

		for (uint32_t i = 0; i < set->n_values; i++)
			if (requirement_allows(other, st, set->values[i]) &&
			    in_bounds(set, st, set->values[i]))
				return true;
		return false;
	}
	return !bounds_empty(MAX(a->gt, b->gt), MIN(a->lt, b->lt));
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* out := a ∩ b (same key). out->values is freshly allocated. */
static int requirement_intersect(const struct requirement *a, const struct requirement *b,
				 const struct strtab *st, struct requirement *out)
{
	uint32_t cap = a->n_values + b->n_values, n = 0;
	uint32_t *v = NULL;
	struct requirement r = {
		.key = a->key,
		.absent_ok = a->absent_ok && b->absent_ok,
		.gt = MAX(a->gt, b->gt),
		.lt = MIN(a->lt, b->lt),
		.min_values = MAX(a->min_values, b->min_values),
		.complement = a->complement && b->complement,
	};

	if (cap) {
		v = malloc(cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	if (r.complement) {
		/* Union of the exclusions: merge two sorted lists. */
		uint32_t i = 0, j = 0;
		while (i < a->n_values || j < b->n_values) {
			if (j >= b->n_values || (i < a->n_values && a->values[i] < b->values[j]))
				v[n++] = a->values[i++];
			else if (i >= a->n_values || b->values[j] < a->values[i])
				v[n++] = b->values[j++];
			else {
				v[n++] = a->values[i++];
				j++;
			}
		}
	} else {
		const struct requirement *set = !a->complement ? a : b;
		const struct requirement *other = set == a ? b : a;
		for (uint32_t i = 0; i < set->n_values; i++) {
			uint32_t x = set->values[i];
			if (!values_contain(other->values, other->n_values, x) == !other->complement)
				continue;
			if (!in_bounds(&r, st, x))
				continue;
			v[n++] = x;
		}
	}
	r.values = v;
	r.n_values = n;
	if (!n) {
		free(v);
		r.values = NULL;
	}
	*out = r;
	return 0;
}

static int requirements_insert(struct requirements *r, int32_t pos, struct requirement *req)
{
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? r->cap * 2 : 4;
		struct requirement *v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	memmove(&r->v[pos + 1], &r->v[pos], (r->n - (uint32_t)pos) * sizeof(*r->v));
	r->v[pos] = *req;
	r->n++;
	return 0;
}

/* Intersects req (whose values r takes ownership of) into r. */
static int requirements_merge(struct requirements *r, struct requirement *req,
			      const struct strtab *st)
{
	int32_t i = requirements_find(r, req->key);
	struct requirement out;
	int ret;

	if (i < 0) {
		ret = requirements_insert(r, -i - 1, req);
		if (ret < 0)
			free(req->values);
		return ret;
	}
	ret = requirement_intersect(&r->v[i], req, st, &out);
	free(req->values);
	if (ret < 0)
		return ret;
	free(r->v[i].values);
	r->v[i] = out;
	return 0;
}

int requirements_add(struct requirements *r, const struct strtab *st, uint32_t key,
		     enum req_op op, const uint32_t *values, size_t n_values,
		     uint32_t min_values)
{
	struct requirement req = {
		.key = key, .gt = INT64_MIN, .lt = INT64_MAX, .min_values = min_values,
	};
	int64_t bound;

	switch (op) {
	case REQ_IN:
	case REQ_NOT_IN:
		req.complement = op == REQ_NOT_IN;
		req.absent_ok = op == REQ_NOT_IN;
		if (n_values) {
			req.values = malloc(n_values * sizeof(uint32_t));
			if (!req.values)
				return -ENOMEM;
			memcpy(req.values, values, n_values * sizeof(uint32_t));
			if (n_values > 16)
				qsort(req.values, n_values, sizeof(uint32_t), u32_cmp);
			else
				for (size_t i = 1; i < n_values; i++) {
					uint32_t x = req.values[i];
					size_t j = i;
					for (; j > 0 && req.values[j - 1] > x; j--)
						req.values[j] = req.values[j - 1];
					req.values[j] = x;
				}
			uint32_t n = 0;
			for (size_t i = 0; i < n_values; i++)
				if (!n || req.values[n - 1] != req.values[i])
					req.values[n++] = req.values[i];
			req.n_values = n;
		}
		break;
	case REQ_EXISTS:
		req.complement = true;
		break;
	case REQ_DOES_NOT_EXIST:
		req.absent_ok = true;
		break;
	case REQ_GT:
	case REQ_LT:
	case REQ_GTE:
	case REQ_LTE:
		if (n_values != 1 || !strtab_int(st, values[0], &bound))
			return -EINVAL;
		req.complement = true;
		/*
		 * Bounds are kept exclusive: Gte n is Gt n-1 and Lte n is Lt n+1
		 * over the integers. Karpenter does the converse, canonicalizing
		 * Gt n to Gte n+1 and Lt n to Lte n-1 (kubernetes-sigs/karpenter
		 * pkg/scheduling/requirement.go, NewRequirementWithFlexibility:
		 * gte/lte "inclusive lower/upper bound"); both say the same.
		 * Lte INT64_MAX is no bound at all, as INT64_MAX is "none".
		 */
		if (op == REQ_GT)
			req.gt = bound;
		else if (op == REQ_GTE)
			req.gt = bound == INT64_MIN ? INT64_MIN : bound - 1;
		else if (op == REQ_LT)
			req.lt = bound;
		else
			req.lt = bound == INT64_MAX ? INT64_MAX : bound + 1;
		break;
	default:
		return -EINVAL;
	}
	return requirements_merge(r, &req, st);
}

int requirements_intersect(struct requirements *r, const struct requirements *other,
			   const struct strtab *st)
{
	for (uint32_t i = 0; i < other->n; i++) {
		struct requirement req = other->v[i];
		int ret;

		if (req.n_values) {
			req.values = malloc(req.n_values * sizeof(uint32_t));
			if (!req.values)
				return -ENOMEM;
			memcpy(req.values, other->v[i].values, req.n_values * sizeof(uint32_t));
		}
		ret = requirements_merge(r, &req, st);
		if (ret < 0)
			return ret;
	}
	return 0;
}

bool requirements_compatible(const struct requirements *node_side,
			     const struct requirements *pod, const struct strtab *st,
			     uint32_t n_well_known, uint32_t *ret_key)
{
	for (uint32_t i = 0; i < pod->n; i++) {
		const struct requirement *p = &pod->v[i];
		const struct requirement *n = requirements_get(node_side, p->key);
		bool ok;

		if (n)
			ok = requirement_intersects(n, p, st);
		else
			ok = p->key < n_well_known || p->absent_ok;
		if (!ok) {
			if (ret_key)
				*ret_key = p->key;
			return false;
		}
	}
	return true;
}

bool requirements_match_labels(const struct requirements *r, const struct label *labels,
			       uint32_t n_labels, const struct strtab *st)
{
	for (uint32_t i = 0; i < r->n; i++)
		if (!requirement_allows(&r->v[i], st, labels_get(labels, n_labels, r->v[i].key)))
			return false;
	return true;
}

int requirement_format(const struct requirement *req, const struct strtab *st, char *buf,
		       size_t size)
{
	const char *key = strtab_str(st, req->key);
	size_t off = 0;
	int n;

#define APPEND(...)                                                            \
	do {                                                                   \
		n = snprintf(buf + MIN(off, size), size > off ? size - off : 0, \
			     __VA_ARGS__);                                     \
		if (n < 0)                                                     \
			return n;                                              \
		off += (size_t)n;                                              \
	} while (0)

	if (!req->complement && req->n_values == 0)
		APPEND("%s DoesNotExist", key);
	else if (!req->complement || req->n_values) {
		APPEND("%s %s [", key, req->complement ? "NotIn" : "In");
		for (uint32_t i = 0; i < req->n_values; i++)
			APPEND("%s%s", i ? " " : "", strtab_str(st, req->values[i]));
		APPEND("]");
	} else if (req->gt == INT64_MIN && req->lt == INT64_MAX)
		APPEND("%s %s", key, req->absent_ok ? "Any" : "Exists");
	else
		APPEND("%s", key);
	if (req->gt != INT64_MIN)
		APPEND(" Gt %" PRId64, req->gt);
	if (req->lt != INT64_MAX)
		APPEND(" Lt %" PRId64, req->lt);
	if (req->min_values)
		APPEND(" minValues %u", req->min_values);
#undef APPEND
	return (int)off;
}

bool requirements_equal(const struct requirements *a, const struct requirements *b)
{
	if (a == b)
		return true;
	if (a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++) {
		const struct requirement *x = &a->v[i], *y = &b->v[i];
		if (x->key != y->key || x->complement != y->complement ||
		    x->absent_ok != y->absent_ok || x->gt != y->gt || x->lt != y->lt ||
		    x->min_values != y->min_values || x->n_values != y->n_values ||
		    (x->n_values && memcmp(x->values, y->values, x->n_values * sizeof(uint32_t))))
			return false;
	}
	return true;
}
