/*
 * YAML stream → jansson values, with libyaml's event parser. Plain scalars
 * resolve as YAML 1.2's core schema does (null, true/false, integers,
 * floats, else strings) except that a leading 0 is octal, as Kubernetes'
 * YAML 1.1 reader has it; quoted or tagged-!!str scalars stay strings, so "0755" or
 * "true" written in quotes never change type. Aliases share the anchored
 * node. Callers: kubeconfig loading, `--simulate`, kanna-sim's apply.
 * This file never interprets Kubernetes semantics.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/util.h"
#include "common/yaml-json.h"

struct anchor {
	char *name;
	json_t *node;
	size_t weight; /* nodes in its subtree, counting expanded aliases */
};

struct frame {
	json_t *node;
	ssize_t anchor; /* index in loader.anchors, or -1 */
	size_t nodes_at_open;
	char *pending_key; /* mapping: key waiting for its value */
	unsigned key_line, key_column;
};

struct loader {
	struct yaml_docs *docs;
	struct frame stack[YAML_JSON_MAX_DEPTH];
	size_t depth;
	struct anchor *anchors;
	size_t n_anchors;
	size_t n_nodes;
	char *err;
	size_t errlen;
};

static int loader_fail(struct loader *l, unsigned line, unsigned column,
		       const char *fmt, ...) _printf_(4, 5);

static int loader_fail(struct loader *l, unsigned line, unsigned column,
		       const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!l->err || l->errlen == 0)
		return -EINVAL;
	n = snprintf(l->err, l->errlen, "%s:%u:%u: ",
		     l->docs->filename ? l->docs->filename : "<input>", line, column);
	if (n < 0 || (size_t)n >= l->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(l->err + n, l->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int add_mark(struct yaml_docs *d, const json_t *node, const yaml_mark_t *m)
{
	/* null/true/false are jansson singletons: their address names no node. */
	if (json_is_null(node) || json_is_boolean(node))
		return 0;
	if (d->n_marks == d->cap_marks) {
		size_t cap = d->cap_marks ? d->cap_marks * 2 : 64;
		struct yaml_mark *n = realloc(d->marks, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		d->marks = n;
		d->cap_marks = cap;
	}
	d->marks[d->n_marks++] = (struct yaml_mark){ node, (unsigned)m->line + 1,
						     (unsigned)m->column + 1 };
	return 0;
}

static bool plain_is(const char *v, const char *const *words)
{
	for (; *words; words++)
		if (streq(v, *words))
			return true;
	return false;
}

/* Resolution of a plain scalar (see the top of the file). */
static json_t *scalar_resolve(const char *v, size_t len)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	static const char *const trues[] = { "true", "True", "TRUE", NULL };
	static const char *const falses[] = { "false", "False", "FALSE", NULL };
	char *end;

	if (plain_is(v, nulls))
		return json_null();
	if (plain_is(v, trues))
		return json_true();
	if (plain_is(v, falses))
		return json_false();
	if (len > 0 && strspn(v, "+-0123456789") == len && strpbrk(v, "0123456789")) {
		/* A leading 0 means octal, as YAML 1.1 and so Kubernetes read it
		 * (defaultMode: 0644); "09" is not a number at all. */
		bool octal = v[0] == '0' && len > 1;
		errno = 0;
		long long i = strtoll(v, &end, octal ? 8 : 10);
		if (*end == '\0' && errno == 0)
			return json_integer(i);
		return json_stringn(v, len);
	}
	if (len > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'o')) {
		errno = 0;
		long long i = strtoll(v + 2, &end, v[1] == 'x' ? 16 : 8);
		if (*end == '\0' && errno == 0)
			return json_integer(i);
	}
	if (len > 0 && strspn(v, "+-0123456789.eE") == len && strpbrk(v, "0123456789")) {
		errno = 0;
		double d = strtod(v, &end);
		if (*end == '\0' && errno == 0 && isfinite(d))
			return json_real(d);
	}
	return json_stringn(v, len);
}

static json_t *scalar_to_json(const yaml_event_t *e)
{
	const char *v = (const char *)e->data.scalar.value;
	size_t len = e->data.scalar.length;
	const char *tag = (const char *)e->data.scalar.tag;

	if (tag && streq(tag, YAML_STR_TAG))
		return json_stringn(v, len);
	if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(v, len);
	return scalar_resolve(v, len);
}

static int anchor_remember(struct loader *l, const yaml_char_t *name, json_t *node)
{
	struct anchor *n;

	if (!name)
		return 0;
	n = realloc(l->anchors, (l->n_anchors + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->anchors = n;
	l->anchors[l->n_anchors].name = strdup((const char *)name);
	if (!l->anchors[l->n_anchors].name)
		return -ENOMEM;
	l->anchors[l->n_anchors].node = json_incref(node);
	l->anchors[l->n_anchors].weight = 1;
	l->n_anchors++;
	return 0;
}

static struct anchor *anchor_find(struct loader *l, const yaml_char_t *name)
{
	for (size_t i = l->n_anchors; i > 0; i--)
		if (streq(l->anchors[i - 1].name, (const char *)name))
			return &l->anchors[i - 1];
	return NULL;
}

/* Attaches a finished node (reference stolen) to its parent or the stream. */
static int attach(struct loader *l, json_t *node, const yaml_mark_t *m)
{
	struct frame *top;

	if (++l->n_nodes > YAML_JSON_MAX_NODES) {
		json_decref(node);
		return loader_fail(l, m->line + 1, m->column + 1,
				   "document too large: more than %u nodes", YAML_JSON_MAX_NODES);
	}
	if (l->depth == 0) {
		struct yaml_docs *d = l->docs;
		json_t **n;

		if (d->n_docs >= YAML_JSON_MAX_DOCUMENTS) {
			json_decref(node);
			return loader_fail(l, m->line + 1, m->column + 1,
					   "too many documents (limit %u)", YAML_JSON_MAX_DOCUMENTS);
		}
		n = realloc(d->docs, (d->n_docs + 1) * sizeof(*n));
		if (!n) {
			json_decref(node);
			return -ENOMEM;
		}
		d->docs = n;
		d->docs[d->n_docs++] = node;
		return 0;
	}
	top = &l->stack[l->depth - 1];
	if (json_is_array(top->node))
		return json_array_append_new(top->node, node) < 0 ? -ENOMEM : 0;
	if (!top->pending_key) {
		/* The node is a key: mappings keys must be scalars. */
		if (!json_is_string(node) && !json_is_integer(node) && !json_is_boolean(node) &&
		    !json_is_real(node) && !json_is_null(node)) {
			json_decref(node);
			return loader_fail(l, m->line + 1, m->column + 1,
					   "mapping keys must be scalars");
		}
		if (json_is_string(node))
			top->pending_key = strdup(json_string_value(node));
		else if (json_is_null(node))
			top->pending_key = strdup("null");
		else
			top->pending_key = json_dumps(node, JSON_ENCODE_ANY);
		top->key_line = (unsigned)m->line + 1;
		top->key_column = (unsigned)m->column + 1;
		/* The key node dies here: its mark must not outlive it. */
		if (l->docs->n_marks > 0 && l->docs->marks[l->docs->n_marks - 1].node == node)
			l->docs->n_marks--;
		json_decref(node);
		return top->pending_key ? 0 : -ENOMEM;
	}
	if (json_object_get(top->node, top->pending_key)) {
		int r = loader_fail(l, top->key_line, top->key_column,
				    "duplicate key '%s'", top->pending_key);
		json_decref(node);
		return r;
	}
	if (json_object_set_new(top->node, top->pending_key, node) < 0)
		return -ENOMEM;
	free(top->pending_key);
	top->pending_key = NULL;
	return 0;
}

static int open_container(struct loader *l, json_t *node, const yaml_event_t *e,
			  const yaml_char_t *anchor)
{
	int r;

	if (!node)
		return -ENOMEM;
	if (l->depth >= YAML_JSON_MAX_DEPTH) {
		json_decref(node);
		return loader_fail(l, e->start_mark.line + 1, e->start_mark.column + 1,
				   "nesting deeper than %d levels", YAML_JSON_MAX_DEPTH);
	}
	r = add_mark(l->docs, node, &e->start_mark);
	if (r >= 0)
		r = anchor_remember(l, anchor, node);
	if (r < 0) {
		json_decref(node);
		return r;
	}
	l->stack[l->depth++] = (struct frame){
		.node = node,
		.anchor = anchor ? (ssize_t)l->n_anchors - 1 : -1,
		.nodes_at_open = l->n_nodes,
	};
	return 0;
}

static int close_container(struct loader *l, const yaml_event_t *e)
{
	struct frame f = l->stack[--l->depth];

	if (f.anchor >= 0)
		l->anchors[f.anchor].weight = l->n_nodes - f.nodes_at_open + 1;

	free(f.pending_key); /* a key without value cannot happen in valid YAML */
	return attach(l, f.node, &e->start_mark);
}

static int handle_event(struct loader *l, const yaml_event_t *e)
{
	json_t *node;
	int r;

	switch (e->type) {
	case YAML_SCALAR_EVENT:
		node = scalar_to_json(e);
		if (!node)
			return -ENOMEM;
		r = add_mark(l->docs, node, &e->start_mark);
		if (r >= 0)
			r = anchor_remember(l, e->data.scalar.anchor, node);
		if (r < 0) {
			json_decref(node);
			return r;
		}
		return attach(l, node, &e->start_mark);
	case YAML_ALIAS_EVENT: {
		struct anchor *a = anchor_find(l, e->data.alias.anchor);
		if (!a)
			return loader_fail(l, e->start_mark.line + 1, e->start_mark.column + 1,
					   "unknown alias '*%s'", (const char *)e->data.alias.anchor);
		for (size_t i = 0; i < l->depth; i++)
			if (l->stack[i].node == a->node)
				return loader_fail(l, e->start_mark.line + 1, e->start_mark.column + 1,
						   "alias '*%s' refers to a node that contains it",
						   (const char *)e->data.alias.anchor);
		/* A shared subtree counts its expanded size again, so alias
		 * bombs hit the node limit instead of a consumer's memory. */
		l->n_nodes += a->weight - 1;
		return attach(l, json_incref(a->node), &e->start_mark);
	}
	case YAML_SEQUENCE_START_EVENT:
		return open_container(l, json_array(), e, e->data.sequence_start.anchor);
	case YAML_MAPPING_START_EVENT:
		return open_container(l, json_object(), e, e->data.mapping_start.anchor);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return close_container(l, e);
	case YAML_DOCUMENT_END_EVENT:
		/* Anchors are local to a document. */
		for (size_t i = 0; i < l->n_anchors; i++) {
			free(l->anchors[i].name);
			json_decref(l->anchors[i].node);
		}
		l->n_anchors = 0;
		return 0;
	default:
		return 0;
	}
}

static int mark_cmp(const void *a, const void *b)
{
	const struct yaml_mark *x = a, *y = b;
	return x->node < y->node ? -1 : x->node > y->node;
}

int yaml_docs_load_buffer(const char *buf, size_t len, const char *filename,
			  struct yaml_docs **ret, char *err, size_t errlen)
{
	struct loader l = { .err = err, .errlen = errlen };
	yaml_parser_t parser;
	yaml_event_t event;
	bool done = false;
	int r = 0;

	if (err && errlen)
		err[0] = '\0';
	l.docs = calloc(1, sizeof(*l.docs));
	if (!l.docs)
		return -ENOMEM;
	if (filename && !(l.docs->filename = strdup(filename))) {
		yaml_docs_free(l.docs);
		return -ENOMEM;
	}
	if (!yaml_parser_initialize(&parser)) {
		yaml_docs_free(l.docs);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done && r >= 0) {
		if (!yaml_parser_parse(&parser, &event)) {
			r = loader_fail(&l, (unsigned)parser.problem_mark.line + 1,
					(unsigned)parser.problem_mark.column + 1, "%s%s%s",
					parser.problem ? parser.problem : "invalid YAML",
					parser.context ? " " : "",
					parser.context ? parser.context : "");
			break;
		}
		done = event.type == YAML_STREAM_END_EVENT;
		r = handle_event(&l, &event);
		yaml_event_delete(&event);
	}
	yaml_parser_delete(&parser);
	while (l.depth > 0) {
		struct frame *f = &l.stack[--l.depth];
		free(f->pending_key);
		json_decref(f->node);
	}
	for (size_t i = 0; i < l.n_anchors; i++) {
		free(l.anchors[i].name);
		json_decref(l.anchors[i].node);
	}
	free(l.anchors);
	if (r < 0) {
		yaml_docs_free(l.docs);
		return r;
	}
	if (l.docs->n_marks > 1)
		qsort(l.docs->marks, l.docs->n_marks, sizeof(*l.docs->marks), mark_cmp);
	*ret = l.docs;
	return 0;
}

int yaml_docs_load_file(const char *path, struct yaml_docs **ret, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	{
		size_t cap = 0;
		char chunk[65536];
		size_t n;

		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
			if (len + n + 1 > cap) {
				size_t ncap = MAX(cap * 2, len + n + 1);
				char *nb = realloc(buf, ncap);
				if (!nb) {
					fclose(f);
					return -ENOMEM;
				}
				buf = nb;
				cap = ncap;
			}
			memcpy(buf + len, chunk, n);
			len += n;
		}
		r = ferror(f) ? -EIO : 0;
		fclose(f);
		if (r < 0) {
			snprintf(err, errlen, "%s: read error", path);
			return r;
		}
	}
	return yaml_docs_load_buffer(buf ? buf : "", len, path, ret, err, errlen);
}

struct yaml_docs *yaml_docs_free(struct yaml_docs *docs)
{
	if (!docs)
		return NULL;
	for (size_t i = 0; i < docs->n_docs; i++)
		json_decref(docs->docs[i]);
	free(docs->docs);
	free(docs->marks);
	free(docs->filename);
	free(docs);
	return NULL;
}

bool yaml_docs_mark(const struct yaml_docs *docs, const json_t *node,
		    unsigned *line, unsigned *column)
{
	struct yaml_mark key = { .node = node }, *m;

	if (!docs || !node || docs->n_marks == 0)
		return false;
	m = bsearch(&key, docs->marks, docs->n_marks, sizeof(key), mark_cmp);
	if (!m)
		return false;
	*line = m->line;
	*column = m->column;
	return true;
}
