/*
 * WATCH streams over the store's event ring: each stream keeps a cursor
 * (the last resourceVersion it has delivered), formats matching events as
 * newline-separated JSON {"type":..,"object":..} and waits on the store's
 * condition variable when it has caught up. A cursor that falls out of the
 * ring ends the stream with an ERROR event (410 Expired), as upstream.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/util.h"
#include "sim/k8s-store-internal.h"
#include "sim/k8s-watch.h"

struct k8s_watch {
	struct k8s_store *store;
	const struct k8s_resource *res;
	char *ns;
	struct k8s_selector *labels, *fields;
	uint64_t cursor;
	bool bookmarks;
	bool initial_end_bookmark;
	k8s_watch_transform transform;
	void *transform_cls;
	uint64_t deadline_ms, next_bookmark_ms;
	struct k8s_object **initial;
	size_t n_initial, i_initial;
	char *buf;
	size_t len, off;
	bool ended;
	struct k8s_watch_cut *cut;
	uint64_t cut_generation;
	unsigned cut_after, sent;
};

struct k8s_watch *k8s_watch_free(struct k8s_watch *w)
{
	if (!w)
		return NULL;
	free(w->ns);
	k8s_selector_free(w->labels);
	k8s_selector_free(w->fields);
	for (size_t i = w->i_initial; i < w->n_initial; i++)
		k8s_object_unref(w->initial[i]);
	free(w->initial);
	free(w->buf);
	free(w);
	return NULL;
}

static void collect_initial(struct k8s_object *o, void *userdata)
{
	struct k8s_watch *w = userdata;
	struct k8s_object **v;

	if (!k8s_object_matches(o, w->ns, w->labels, w->fields))
		return;
	v = realloc(w->initial, (w->n_initial + 1) * sizeof(*v));
	if (!v)
		return;
	w->initial = v;
	w->initial[w->n_initial++] = k8s_object_ref(o);
}

static bool rv_expired(const struct k8s_store *store, uint64_t rv)
{
	return store->rv > store->window && rv < store->rv - store->window;
}

int k8s_watch_new(struct k8s_store *store, const struct k8s_resource *res,
		  const char *ns, struct k8s_selector *labels,
		  struct k8s_selector *fields, const struct k8s_watch_options *opts,
		  struct k8s_watch **ret, struct k8s_error *err)
{
	struct k8s_watch *w = calloc(1, sizeof(*w));
	const char *rvs = opts->resource_version;
	uint64_t now = clock_monotonic_ms(), rv = 0;
	long timeout = opts->timeout_seconds > 0 ? MIN(opts->timeout_seconds, K8S_WATCH_MAX_TIMEOUT_S)
						 : K8S_WATCH_DEFAULT_TIMEOUT_S;
	char *end;
	int r = 0;

	if (!w || !(w->ns = strdup(ns ? ns : ""))) {
		free(w);
		k8s_selector_free(labels);
		k8s_selector_free(fields);
		return -ENOMEM;
	}
	w->store = store;
	w->res = res;
	w->labels = labels;
	w->fields = fields;
	w->bookmarks = opts->bookmarks;
	w->transform = opts->transform;
	w->cut = opts->cut;
	if (w->cut) {
		w->cut_generation = __atomic_load_n(&w->cut->generation, __ATOMIC_ACQUIRE);
		w->cut_after = __atomic_load_n(&w->cut->after, __ATOMIC_RELAXED);
	}
	w->transform_cls = opts->transform_cls;
	w->deadline_ms = now + (uint64_t)timeout * 1000;
	w->next_bookmark_ms = now + K8S_WATCH_BOOKMARK_MS;
	if (rvs && *rvs) {
		errno = 0;
		rv = strtoull(rvs, &end, 10);
		if (errno || *end) {
			k8s_error_set(err, 400, "BadRequest",
				      "invalid resource version: \"%.64s\"", rvs);
			k8s_watch_free(w);
			return -EINVAL;
		}
	}
	k8s_store_lock(store);
	if (rv == 0 || opts->send_initial_events) {
		k8s_store_foreach(store, res, w->ns, collect_initial, w);
		w->cursor = store->rv;
		w->initial_end_bookmark = opts->send_initial_events;
	} else if (rv_expired(store, rv)) {
		k8s_error_set(err, 410, "Expired", "too old resource version: %" PRIu64 " (%" PRIu64 ")",
			      rv, store->rv - store->window);
		r = -ESTALE;
	} else
		w->cursor = MIN(rv, store->rv);
	k8s_store_unlock(store);
	if (r < 0)
		return k8s_watch_free(w), r;
	*ret = w;
	return 0;
}

static const char *const event_names[] = {
	[K8S_EVENT_ADDED] = "ADDED",
	[K8S_EVENT_MODIFIED] = "MODIFIED",
	[K8S_EVENT_DELETED] = "DELETED",
};

static void emit_raw(FILE *f, const char *type, const char *json, size_t len)
{
	fprintf(f, "{\"type\":\"%s\",\"object\":", type);
	fwrite(json, 1, len, f);
	fputs("}\n", f);
}

static void emit_json(FILE *f, const char *type, json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT);

	if (s)
		emit_raw(f, type, s, strlen(s));
	free(s);
	json_decref(obj);
}

static void emit_object(struct k8s_watch *w, FILE *f, const char *type,
			const struct k8s_object *o)
{
	json_t *obj, *out;

	if (!w->transform) {
		emit_raw(f, type, o->json, o->len);
		return;
	}
	obj = k8s_object_parse(o);
	out = obj ? w->transform(w->transform_cls, w->res, obj) : NULL;
	json_decref(obj);
	if (out)
		emit_json(f, type, out);
}

static void emit_bookmark(struct k8s_watch *w, FILE *f, bool initial_end)
{
	char api[128], rv[32];
	json_t *o;

	snprintf(rv, sizeof(rv), "%" PRIu64, w->cursor);
	o = json_pack("{s:s, s:s, s:{s:s}}", "kind", w->res->kind, "apiVersion",
		      k8s_resource_api_version(w->res, api, sizeof(api)), "metadata",
		      "resourceVersion", rv);
	if (o && initial_end)
		json_object_set_new(json_object_get(o, "metadata"), "annotations",
				    json_pack("{s:s}", "k8s.io/initial-events-end", "true"));
	if (o)
		emit_json(f, "BOOKMARK", o);
}

/*
 * What a filtered watch sees, as upstream's watch cache: an update that
 * moves an object into the selection is ADDED, out of it DELETED.
 */
static const char *event_type_for(const struct k8s_watch *w, const struct k8s_event *ev)
{
	bool now = k8s_object_matches(ev->obj, w->ns, w->labels, w->fields);
	bool before = now;

	if (ev->type == K8S_EVENT_MODIFIED && ev->prev)
		before = k8s_object_matches(ev->prev, w->ns, w->labels, w->fields);
	if (now && before)
		return event_names[ev->type];
	if (now)
		return "ADDED";
	if (before)
		return "DELETED";
	return NULL;
}

void k8s_watch_cut_set(struct k8s_watch_cut *cut, unsigned after)
{
	__atomic_store_n(&cut->after, after, __ATOMIC_RELAXED);
	__atomic_add_fetch(&cut->generation, 1, __ATOMIC_RELEASE);
}

/* One more event sent: true when it is the last before the injected cut. */
static bool counted_cut(struct k8s_watch *w)
{
	uint64_t generation;

	if (!w->cut)
		return false;
	generation = __atomic_load_n(&w->cut->generation, __ATOMIC_ACQUIRE);
	if (generation != w->cut_generation) {
		w->cut_generation = generation;
		w->cut_after = __atomic_load_n(&w->cut->after, __ATOMIC_RELAXED);
		w->sent = 0;
	}
	if (!w->cut_after || ++w->sent < w->cut_after)
		return false;
	__atomic_add_fetch(&w->cut->count, 1, __ATOMIC_RELAXED);
	return true;
}

/* Lock held. Formats what is ready into f; returns false at end of stream. */
static bool fill(struct k8s_watch *w, FILE *f, uint64_t now)
{
	struct k8s_store *store = w->store;
	size_t n = 0;

	if (store->closing || now >= w->deadline_ms || (w->cut_after && w->sent >= w->cut_after))
		return false;
	while (w->i_initial < w->n_initial && n < K8S_WATCH_BATCH) {
		struct k8s_object *o = w->initial[w->i_initial++];

		emit_object(w, f, "ADDED", o);
		k8s_object_unref(o);
		n++;
		if (counted_cut(w))
			return true;
	}
	if (w->i_initial < w->n_initial)
		return true;
	if (w->initial_end_bookmark) {
		w->initial_end_bookmark = false;
		emit_bookmark(w, f, true);
	}
	if (w->cursor < store->rv && rv_expired(store, w->cursor)) {
		struct k8s_error err = {};

		k8s_error_set(&err, 410, "Expired", "too old resource version: %" PRIu64 " (%" PRIu64 ")",
			      w->cursor, store->rv - store->window);
		emit_json(f, "ERROR", k8s_status_new(&err));
		return false;
	}
	while (w->cursor < store->rv && n < K8S_WATCH_BATCH) {
		struct k8s_event *ev = &store->ring[(w->cursor + 1) % store->window];

		const char *type;

		w->cursor++;
		if (ev->rv != w->cursor || ev->res != w->res)
			continue;
		type = event_type_for(w, ev);
		if (!type)
			continue;
		emit_object(w, f, type, ev->obj);
		n++;
		if (counted_cut(w))
			return true;
	}
	if (w->bookmarks && now >= w->next_bookmark_ms) {
		w->next_bookmark_ms = now + K8S_WATCH_BOOKMARK_MS;
		emit_bookmark(w, f, false);
	}
	return true;
}

static void wait_for_change(struct k8s_watch *w, uint64_t now)
{
	uint64_t until = w->deadline_ms;
	struct timespec ts;

	if (w->bookmarks)
		until = MIN(until, w->next_bookmark_ms);
	ts = clock_realtime_in_ms(until > now ? until - now : 0);
	pthread_cond_timedwait(&w->store->changed, &w->store->lock, &ts);
}

ssize_t k8s_watch_read(struct k8s_watch *w, char *out, size_t max)
{
	while (w->off >= w->len) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f;
		bool more;

		if (w->ended)
			return 0;
		f = open_memstream(&buf, &len);
		if (!f)
			return 0;
		k8s_store_lock(w->store);
		more = fill(w, f, clock_monotonic_ms());
		fflush(f);
		if (more && len == 0)
			wait_for_change(w, clock_monotonic_ms());
		k8s_store_unlock(w->store);
		fclose(f);
		free(w->buf);
		w->buf = buf;
		w->len = len;
		w->off = 0;
		w->ended = !more;
	}
	size_t n = MIN(max, w->len - w->off);
	memcpy(out, w->buf + w->off, n);
	w->off += n;
	return (ssize_t)n;
}
