/*
 * Typed access to libyaml document nodes for the --simulate loader, and the
 * Kubernetes building blocks shared by several kinds: requirements, label
 * selectors, labels, taints, resource lists. Every error names the node's
 * file:line:column. Called by simulate-load.c and simulate-pod.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/simulate-internal.h"

/* Values one requirement or selector term may list. */
#define YAML_MAX_VALUES 1024

int yerr(struct yctx *y, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	int off;

	if (y->err[0]) /* keep the first error */
		return -EINVAL;
	off = snprintf(y->err, y->err_size, "%s:%zu:%zu: ", y->file,
		       n ? n->start_mark.line + 1 : 1, n ? n->start_mark.column + 1 : 1);
	if (off < 0 || (size_t)off >= y->err_size)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(y->err + off, y->err_size - (size_t)off, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

bool yis(const yaml_node_t *n, yaml_node_type_t t)
{
	return n && n->type == t;
}

static bool ynull(const yaml_node_t *n)
{
	if (!n)
		return true;
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	const char *v = (const char *)n->data.scalar.value;
	return !*v || streq(v, "~") || streq(v, "null") || streq(v, "Null") || streq(v, "NULL");
}

int yexpect(struct yctx *y, const yaml_node_t *n, yaml_node_type_t t, const char *what)
{
	if (yis(n, t))
		return 0;
	return yerr(y, n, "expected %s", what);
}

yaml_node_t *yget(struct yctx *y, const yaml_node_t *map, const char *key)
{
	yaml_node_pair_t *pair;

	if (!yis(map, YAML_MAPPING_NODE))
		return NULL;
	YMAP_FOREACH(y, map, pair) {
		yaml_node_t *k = yaml_document_get_node(y->doc, pair->key);
		if (yis(k, YAML_SCALAR_NODE) && streq((const char *)k->data.scalar.value, key)) {
			yaml_node_t *v = yaml_document_get_node(y->doc, pair->value);
			return ynull(v) ? NULL : v;
		}
	}
	return NULL;
}

int ystr(struct yctx *y, const yaml_node_t *n, const char **ret)
{
	if (!n)
		return 0;
	if (n->type != YAML_SCALAR_NODE)
		return yerr(y, n, "expected a string");
	*ret = (const char *)n->data.scalar.value;
	return 0;
}

int yint(struct yctx *y, const yaml_node_t *n, int64_t *ret)
{
	const char *s = NULL;
	char *end;
	long long v;
	int r = ystr(y, n, &s);

	if (r < 0 || !s)
		return r;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || end == s)
		return yerr(y, n, "expected an integer, got \"%s\"", s);
	*ret = v;
	return 0;
}

int ybool(struct yctx *y, const yaml_node_t *n, bool *ret)
{
	const char *s = NULL;
	int r = ystr(y, n, &s);

	if (r < 0 || !s)
		return r;
	if (streq(s, "true") || streq(s, "True"))
		*ret = true;
	else if (streq(s, "false") || streq(s, "False"))
		*ret = false;
	else
		return yerr(y, n, "expected true or false, got \"%s\"", s);
	return 0;
}

int yquantity(struct yctx *y, const yaml_node_t *n, bool milli, int64_t *ret)
{
	const char *s = NULL;
	int r = ystr(y, n, &s);

	if (r < 0 || !s)
		return r;
	if (quantity_parse(s, milli, ret) < 0 || *ret < 0)
		return yerr(y, n, "invalid quantity \"%s\"", s);
	return 0;
}

uint32_t yintern(struct yctx *y, const char *s)
{
	return cluster_intern(y->c, s);
}

static int ystrings(struct yctx *y, const yaml_node_t *seq, uint32_t *out, size_t *n)
{
	yaml_node_t *item;
	int r;

	*n = 0;
	if (!seq)
		return 0;
	if ((r = yexpect(y, seq, YAML_SEQUENCE_NODE, "a list of strings")) < 0)
		return r;
	YSEQ_FOREACH(y, seq, item) {
		const char *s = NULL;
		if ((r = ystr(y, item, &s)) < 0)
			return r;
		if (!s)
			return yerr(y, item, "expected a string");
		if (*n >= YAML_MAX_VALUES)
			return yerr(y, item, "more than %d values", YAML_MAX_VALUES);
		if ((out[(*n)++] = yintern(y, s)) == STR_NONE)
			return -ENOMEM;
	}
	return 0;
}

static int yrequirement(struct yctx *y, const yaml_node_t *item, struct requirements *r,
			bool selector)
{
	const char *key = NULL, *op = NULL;
	int64_t min_values = 0;
	enum req_op o;
	size_t n;
	int ret;

	uint32_t *values = malloc(YAML_MAX_VALUES * sizeof(*values));
	if (!values)
		return -ENOMEM;
	if ((ret = yexpect(y, item, YAML_MAPPING_NODE, "a requirement {key, operator, values}")) < 0 ||
	    (ret = ystr(y, yget(y, item, "key"), &key)) < 0 ||
	    (ret = ystr(y, yget(y, item, "operator"), &op)) < 0 ||
	    (ret = yint(y, yget(y, item, "minValues"), &min_values)) < 0 ||
	    (ret = ystrings(y, yget(y, item, "values"), values, &n)) < 0)
		goto out;
	ret = -EINVAL;
	if (!op && n)
		op = "In"; /* StorageClass allowedTopologies list values only */
	if (!key || !*key) {
		yerr(y, item, "requirement without a key");
		goto out;
	}
	if (!op || req_op_from_string(op, &o) < 0 || (selector && (o == REQ_GT || o == REQ_LT))) {
		yerr(y, yget(y, item, "operator") ? yget(y, item, "operator") : item,
		     "unknown operator \"%s\" (In, NotIn, Exists, DoesNotExist%s)", op ? op : "",
		     selector ? "" : ", Gt, Lt");
		goto out;
	}
	if ((o == REQ_IN || o == REQ_NOT_IN) && !n) {
		yerr(y, item, "operator %s needs values", op);
		goto out;
	}
	if ((o == REQ_EXISTS || o == REQ_DOES_NOT_EXIST) && n) {
		yerr(y, item, "operator %s takes no values", op);
		goto out;
	}
	if (min_values < 0 || min_values > 50) {
		yerr(y, yget(y, item, "minValues"), "minValues must be between 1 and 50");
		goto out;
	}
	ret = requirements_add(r, &y->c->st, yintern(y, key), o, values, n, (uint32_t)min_values);
	if (ret == -EINVAL)
		yerr(y, item, "operator %s needs exactly one integer value", op);
out:
	free(values);
	return ret;
}

int yrequirements(struct yctx *y, const yaml_node_t *list, struct requirements *r)
{
	yaml_node_t *item;
	int ret;

	if (!list)
		return 0;
	if ((ret = yexpect(y, list, YAML_SEQUENCE_NODE, "a list of requirements")) < 0)
		return ret;
	YSEQ_FOREACH(y, list, item)
		if ((ret = yrequirement(y, item, r, false)) < 0)
			return ret;
	return 0;
}

int yselector(struct yctx *y, const yaml_node_t *sel, struct requirements *r)
{
	const yaml_node_t *ml, *me;
	yaml_node_pair_t *pair;
	yaml_node_t *item;
	int ret;

	if (!sel) /* a null selector selects nothing */
		return requirements_add(r, &y->c->st, K_HOSTNAME, REQ_IN, NULL, 0, 0);
	if ((ret = yexpect(y, sel, YAML_MAPPING_NODE, "a label selector")) < 0)
		return ret;
	ml = yget(y, sel, "matchLabels");
	me = yget(y, sel, "matchExpressions");
	if (ml) {
		if ((ret = yexpect(y, ml, YAML_MAPPING_NODE, "a map of labels")) < 0)
			return ret;
		YMAP_FOREACH(y, ml, pair) {
			const char *k = NULL, *v = NULL;
			if ((ret = ystr(y, yaml_document_get_node(y->doc, pair->key), &k)) < 0 ||
			    (ret = ystr(y, yaml_document_get_node(y->doc, pair->value), &v)) < 0)
				return ret;
			uint32_t vid = yintern(y, v ? v : "");
			if ((ret = requirements_add(r, &y->c->st, yintern(y, k ? k : ""), REQ_IN, &vid, 1, 0)) < 0)
				return ret;
		}
	}
	if (me) {
		if ((ret = yexpect(y, me, YAML_SEQUENCE_NODE, "a list of expressions")) < 0)
			return ret;
		YSEQ_FOREACH(y, me, item)
			if ((ret = yrequirement(y, item, r, true)) < 0)
				return ret;
	}
	return 0;
}

int ylabels(struct yctx *y, const yaml_node_t *map, struct label **ret, uint32_t *n)
{
	yaml_node_pair_t *pair;
	uint32_t count = 0;
	int r;

	*ret = NULL;
	*n = 0;
	if (!map)
		return 0;
	if ((r = yexpect(y, map, YAML_MAPPING_NODE, "a map of labels")) < 0)
		return r;
	count = (uint32_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
	struct label *l = arena_alloc(&y->c->arena, (count ? count : 1) * sizeof(*l));
	if (!l)
		return -ENOMEM;
	YMAP_FOREACH(y, map, pair) {
		const char *k = NULL, *v = NULL;
		if ((r = ystr(y, yaml_document_get_node(y->doc, pair->key), &k)) < 0 ||
		    (r = ystr(y, yaml_document_get_node(y->doc, pair->value), &v)) < 0)
			return r;
		l[(*n)++] = (struct label){ yintern(y, k ? k : ""), yintern(y, v ? v : "") };
	}
	labels_sort(l, *n);
	*ret = l;
	return 0;
}

int ytaints(struct yctx *y, const yaml_node_t *list, struct taint **ret, uint32_t *n)
{
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute" };
	yaml_node_t *item;
	int r;

	*ret = NULL;
	*n = 0;
	if (!list)
		return 0;
	if ((r = yexpect(y, list, YAML_SEQUENCE_NODE, "a list of taints")) < 0)
		return r;
	size_t count = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
	struct taint *t = arena_alloc(&y->c->arena, (count ? count : 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	YSEQ_FOREACH(y, list, item) {
		const char *key = NULL, *value = NULL, *effect = NULL;
		int e = -1;
		if ((r = yexpect(y, item, YAML_MAPPING_NODE, "a taint {key, value, effect}")) < 0 ||
		    (r = ystr(y, yget(y, item, "key"), &key)) < 0 ||
		    (r = ystr(y, yget(y, item, "value"), &value)) < 0 ||
		    (r = ystr(y, yget(y, item, "effect"), &effect)) < 0)
			return r;
		for (int i = 0; effect && i < 3; i++)
			if (streq(effect, effects[i]))
				e = i;
		if (!key || e < 0)
			return yerr(y, item, "a taint needs a key and an effect (NoSchedule, PreferNoSchedule, NoExecute)");
		t[(*n)++] = (struct taint){ yintern(y, key), value ? yintern(y, value) : STR_NONE,
					    (uint8_t)e };
	}
	*ret = t;
	return 0;
}

int yresources(struct yctx *y, const yaml_node_t *map, struct resources *ret)
{
	yaml_node_pair_t *pair;
	int r;

	if (!map)
		return 0;
	if ((r = yexpect(y, map, YAML_MAPPING_NODE, "a map of resources")) < 0)
		return r;
	YMAP_FOREACH(y, map, pair) {
		yaml_node_t *k = yaml_document_get_node(y->doc, pair->key);
		yaml_node_t *v = yaml_document_get_node(y->doc, pair->value);
		const char *name = NULL;
		int64_t q = 0;
		int slot;

		if ((r = ystr(y, k, &name)) < 0)
			return r;
		if (!name || streq(name, "nodes"))
			continue; /* NodePool limit on node count: read by the caller */
		if (!strncmp(name, "attachable-volumes-", 19))
			continue; /* node status only; no pod requests it */
		slot = catalog_resource(&y->c->cat, name, true);
		if (slot == -E2BIG)
			return yerr(y, k, "too many distinct resources (at most %d)", SCHED_MAX_RESOURCES);
		if (slot < 0)
			return slot;
		if ((r = yquantity(y, v, slot == RES_CPU, &q)) < 0)
			return r;
		ret->v[slot] = q;
	}
	return 0;
}
