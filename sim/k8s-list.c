/*
 * LIST for kanna-sim: walks one resource's ordered tree, filters by
 * namespace, label and field selector, pages with limit/continue (the
 * continue token is opaque base64 of the last key and the list's
 * resourceVersion). The page is a snapshot taken under the lock — a
 * reference to each selected object, whose stored JSON never changes — and
 * the List body is read from it without the lock and without re-encoding:
 * streamed in pieces by the HTTP server (no copy of a 100,000-pod body is
 * ever held) or gathered into one buffer for tables, tests and the fuzzer.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/util.h"
#include "sim/k8s-store-internal.h"

/* Tokens we issue are about 100 bytes; anything far longer is not ours. */
#define K8S_CONTINUE_MAX_LEN 4096

struct field_ctx {
	const struct k8s_object *o;
	json_t *parsed; /* lazily, for fields not kept in the snapshot */
	char buf[64];
};

static const char *resolve_field(const char *field, void *userdata)
{
	struct field_ctx *c = userdata;

	if (streq(field, "metadata.name"))
		return c->o->name;
	if (streq(field, "metadata.namespace"))
		return c->o->ns;
	if (streq(field, "spec.nodeName") && c->o->phase)
		return c->o->node_name;
	if (streq(field, "status.phase") && c->o->phase)
		return c->o->phase;
	if (!c->parsed)
		c->parsed = k8s_object_parse(c->o);
	return k8s_json_field(c->parsed, field, c->buf, sizeof(c->buf));
}

bool k8s_object_matches(const struct k8s_object *o, const char *ns,
			const struct k8s_selector *labels,
			const struct k8s_selector *fields)
{
	struct field_ctx c = { .o = o };
	bool hit;

	if (ns && *ns && !streq(o->ns, ns))
		return false;
	if (labels && !k8s_label_selector_matches(labels, o->labels))
		return false;
	if (!fields)
		return true;
	hit = k8s_field_selector_matches(fields, resolve_field, &c);
	json_decref(c.parsed);
	return hit;
}

struct walk {
	k8s_object_fn fn;
	void *userdata;
	const char *ns;
};

static void walk_node(const void *node, VISIT which, void *closure)
{
	struct walk *w = closure;
	struct k8s_object *o = *(struct k8s_object *const *)node;

	if (which != postorder && which != leaf)
		return;
	if (w->ns && *w->ns && !streq(o->ns, w->ns))
		return;
	w->fn(o, w->userdata);
}

void k8s_store_foreach(struct k8s_store *store, const struct k8s_resource *res,
		       const char *ns, k8s_object_fn fn, void *userdata)
{
	struct walk w = { .fn = fn, .userdata = userdata, .ns = ns };

	k8s_store_lock(store);
	twalk_r(res->objects, walk_node, &w);
	k8s_store_unlock(store);
}

struct page {
	const char *ns;
	const struct k8s_list_options *opts;
	struct k8s_object start; /* continue after this key */
	bool has_start;
	struct k8s_object **objs; /* referenced */
	size_t n, cap;
	size_t items_len; /* their JSON with the commas between */
	size_t remaining;
	bool full, oom;
};

static void page_one(struct k8s_object *o, void *userdata)
{
	struct page *p = userdata;

	if (p->has_start && k8s_object_cmp(o, &p->start) <= 0)
		return;
	if (!k8s_object_matches(o, p->ns, p->opts->labels, p->opts->fields))
		return;
	if (p->full) {
		p->remaining++;
		return;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct k8s_object **v = realloc(p->objs, cap * sizeof(*v));

		if (!v) {
			p->oom = p->full = true;
			return;
		}
		p->objs = v;
		p->cap = cap;
	}
	p->objs[p->n++] = k8s_object_ref(o);
	p->items_len += o->len + (p->n > 1);
	if (p->opts->limit > 0 && p->n >= (size_t)p->opts->limit)
		p->full = true;
}

/* The List body in three parts: head ("...,\"items\":["), objects, "]}". */
struct k8s_list_stream {
	char *head;
	size_t head_len;
	struct k8s_object **objs;
	size_t n;
	size_t len;  /* the whole body */
	size_t next; /* the object to send next; n: the tail, n + 1: all sent */
	size_t off;  /* bytes of the current part (head, object, tail) sent */
	bool head_done;
};

struct k8s_list_stream *k8s_list_stream_free(struct k8s_list_stream *s)
{
	if (!s)
		return NULL;
	for (size_t i = s->next; i < s->n; i++)
		k8s_object_unref(s->objs[i]);
	free(s->objs);
	free(s->head);
	free(s);
	return NULL;
}

size_t k8s_list_stream_length(const struct k8s_list_stream *s)
{
	return s->len;
}

size_t k8s_list_stream_read(struct k8s_list_stream *s, char *buf, size_t max)
{
	size_t out = 0, n;

	if (!s->head_done) {
		n = MIN(s->head_len - s->off, max);
		memcpy(buf, s->head + s->off, n);
		out = n;
		s->off += n;
		if (s->off == s->head_len)
			s->head_done = true, s->off = 0;
	}
	/* Object i goes out as "," (but the first) then its stored JSON. */
	while (s->head_done && out < max && s->next < s->n) {
		struct k8s_object *o = s->objs[s->next];
		size_t lead = s->next > 0, piece = lead + o->len;

		if (s->off < lead) {
			buf[out++] = ',';
			s->off++;
			continue;
		}
		n = MIN(piece - s->off, max - out);
		memcpy(buf + out, o->json + (s->off - lead), n);
		out += n;
		s->off += n;
		if (s->off == piece) {
			k8s_object_unref(o); /* sent: the stream need not hold it */
			s->next++;
			s->off = 0;
		}
	}
	if (s->head_done && out < max && s->next == s->n) {
		n = MIN(2 - s->off, max - out);
		memcpy(buf + out, &"]}"[s->off], n);
		out += n;
		s->off += n;
		if (s->off == 2)
			s->next++;
	}
	return out;
}

/* Token: base64 of {"rv":N,"ns":..,"name":..}, opaque to clients. */
static char *continue_encode(uint64_t rv, const char *ns, const char *name)
{
	json_t *t = json_pack("{s:I, s:s, s:s}", "rv", (json_int_t)rv, "ns", ns,
			      "name", name);
	char *raw = t ? json_dumps(t, JSON_COMPACT) : NULL;
	char *out = NULL;

	json_decref(t);
	if (raw)
		out = base64_encode(raw, strlen(raw));
	free(raw);
	return out;
}

static int continue_decode(const char *token, uint64_t *rv, json_t **ret)
{
	size_t len = strlen(token);
	unsigned char *raw;
	int n;
	json_t *t;

	if (len % 4 != 0 || len > K8S_CONTINUE_MAX_LEN)
		return -EINVAL;
	raw = malloc(len + 1);
	if (!raw)
		return -ENOMEM;
	n = EVP_DecodeBlock(raw, (const unsigned char *)token, (int)len);
	while (n > 0 && raw[n - 1] == '\0')
		n--;
	t = n >= 0 ? json_loadb((char *)raw, (size_t)n, 0, NULL) : NULL;
	free(raw);
	if (!t || !json_is_integer(json_object_get(t, "rv")) ||
	    !json_is_string(json_object_get(t, "ns")) ||
	    !json_is_string(json_object_get(t, "name"))) {
		json_decref(t);
		return -EINVAL;
	}
	*rv = (uint64_t)json_integer_value(json_object_get(t, "rv"));
	*ret = t;
	return 0;
}

static char *list_header(const struct k8s_resource *res, uint64_t rv,
			 const char *cont, size_t remaining)
{
	char api[128], kind[160], rvs[32];
	json_t *h;
	char *s;

	snprintf(kind, sizeof(kind), "%sList", res->kind);
	snprintf(rvs, sizeof(rvs), "%" PRIu64, rv);
	h = json_pack("{s:s, s:s, s:{s:s}}", "kind", kind, "apiVersion",
		      k8s_resource_api_version(res, api, sizeof(api)), "metadata",
		      "resourceVersion", rvs);
	if (!h)
		return NULL;
	if (cont) {
		json_t *meta = json_object_get(h, "metadata");

		json_object_set_new(meta, "continue", json_string(cont));
		json_object_set_new(meta, "remainingItemCount", json_integer((json_int_t)remaining));
	}
	s = json_dumps(h, JSON_COMPACT);
	json_decref(h);
	return s;
}

int k8s_store_list_stream(struct k8s_store *store, const struct k8s_resource *res,
			  const char *ns, const struct k8s_list_options *opts,
			  struct k8s_list_stream **ret, struct k8s_error *err)
{
	struct page p = { .ns = ns, .opts = opts };
	struct k8s_list_stream *s = NULL;
	char *header = NULL, *cont = NULL;
	json_t *token = NULL;
	uint64_t rv = 0;
	size_t hlen;
	int r = 0;

	*ret = NULL;
	if (opts->continue_token && *opts->continue_token) {
		if (continue_decode(opts->continue_token, &rv, &token) < 0) {
			k8s_error_set(err, 400, "BadRequest",
				      "continue key is not valid: illegal base64 data");
			return -EINVAL;
		}
		p.start.ns = (char *)json_string_value(json_object_get(token, "ns"));
		p.start.name = (char *)json_string_value(json_object_get(token, "name"));
		p.has_start = true;
	}
	k8s_store_lock(store);
	if (token && store->rv > store->window && rv < store->rv - store->window) {
		k8s_error_set(err, 410, "Expired",
			      "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.");
		r = -ESTALE;
	} else {
		if (!token)
			rv = store->rv;
		k8s_store_foreach(store, res, ns, page_one, &p);
	}
	k8s_store_unlock(store);
	json_decref(token);
	if (r < 0 || p.oom) {
		r = r < 0 ? r : -ENOMEM;
		goto out;
	}
	if (p.full && p.remaining > 0) {
		struct k8s_object *last = p.objs[p.n - 1];

		cont = continue_encode(rv, last->ns, last->name);
		if (!cont) {
			r = -ENOMEM;
			goto out;
		}
	}
	header = list_header(res, rv, cont, p.remaining);
	s = calloc(1, sizeof(*s));
	if (!header || !s) {
		r = -ENOMEM;
		goto out;
	}
	/* header ends with "}": the items go in before it. */
	hlen = strlen(header);
	s->head = malloc(hlen + 10);
	if (!s->head) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(s->head, header, hlen - 1);
	memcpy(s->head + hlen - 1, ",\"items\":[", 10);
	s->head_len = hlen + 9;
	s->objs = p.objs;
	s->n = p.n;
	s->len = s->head_len + p.items_len + 2;
	p.objs = NULL;
	p.n = 0;
	*ret = s;
	s = NULL;
out:
	for (size_t i = 0; i < p.n; i++)
		k8s_object_unref(p.objs[i]);
	free(p.objs);
	k8s_list_stream_free(s);
	free(header);
	free(cont);
	return r;
}

int k8s_store_list(struct k8s_store *store, const struct k8s_resource *res,
		   const char *ns, const struct k8s_list_options *opts,
		   char **body, size_t *len, struct k8s_error *err)
{
	struct k8s_list_stream *s;
	size_t n;
	int r;

	r = k8s_store_list_stream(store, res, ns, opts, &s, err);
	if (r < 0)
		return r;
	*body = malloc(s->len + 1);
	if (!*body) {
		k8s_list_stream_free(s);
		return -ENOMEM;
	}
	n = k8s_list_stream_read(s, *body, s->len);
	(*body)[n] = '\0';
	*len = n;
	k8s_list_stream_free(s);
	return n == *len ? 0 : -EIO;
}
