/* Matching on proto structs (see match.h). */
#include <errno.h>
#include <stdlib.h>

#include "common/util.h"
#include "model/match.h"

const char *proto_labels_get(const struct proto_kv *labels, uint32_t n, const char *key)
{
	for (uint32_t i = 0; i < n; i++)
		if (streq(labels[i].key, key))
			return labels[i].value;
	return NULL;
}

static bool listed(const struct proto_requirement *q, const char *v)
{
	for (uint32_t i = 0; v && i < q->n_values; i++)
		if (streq(v, q->values[i]))
			return true;
	return false;
}

bool label_selector_matches(const struct proto_label_selector *sel, const struct proto_kv *labels,
			    uint32_t n)
{
	if (sel->n_match_labels == 0 && sel->n_match_expressions == 0)
		return false;
	for (uint32_t i = 0; i < sel->n_match_labels; i++)
		if (!streq_ptr(proto_labels_get(labels, n, sel->match_labels[i].key), sel->match_labels[i].value))
			return false;
	for (uint32_t i = 0; i < sel->n_match_expressions; i++) {
		const struct proto_requirement *q = &sel->match_expressions[i];
		const char *v = proto_labels_get(labels, n, q->key);
		bool ok;

		switch (q->op) {
		case PROTO_OP_IN: ok = listed(q, v); break;
		case PROTO_OP_NOT_IN: ok = !listed(q, v); break;
		case PROTO_OP_EXISTS: ok = v != NULL; break;
		case PROTO_OP_DOES_NOT_EXIST: ok = v == NULL; break;
		default: ok = false; break;
		}
		if (!ok)
			return false;
	}
	return true;
}

/* v as a decimal integer, as Gt/Lt read node labels; false when it is not one. */
static bool integer(const char *v, long long *ret)
{
	char *end;

	if (!v || !*v)
		return false;
	errno = 0;
	*ret = strtoll(v, &end, 10);
	return !*end && errno == 0;
}

bool requirements_allow(const struct proto_requirement *reqs, uint32_t n, const char *key,
			const char *value)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct proto_requirement *q = &reqs[i];
		long long have, bound;

		if (!streq(q->key, key))
			continue;
		switch (q->op) {
		case PROTO_OP_IN:
			if (!listed(q, value))
				return false;
			break;
		case PROTO_OP_NOT_IN:
			if (listed(q, value))
				return false;
			break;
		case PROTO_OP_DOES_NOT_EXIST:
			return false;
		case PROTO_OP_GT:
		case PROTO_OP_LT:
		case PROTO_OP_GTE:
		case PROTO_OP_LTE:
			/* Gte and Lte are inclusive (Karpenter's withinBounds,
			 * pkg/scheduling/requirement.go). */
			if (q->n_values != 1 || !integer(value, &have) || !integer(q->values[0], &bound) ||
			    (q->op == PROTO_OP_GT && have <= bound) ||
			    (q->op == PROTO_OP_LT && have >= bound) ||
			    (q->op == PROTO_OP_GTE && have < bound) ||
			    (q->op == PROTO_OP_LTE && have > bound))
				return false;
			break;
		default:
			break;
		}
	}
	return true;
}
