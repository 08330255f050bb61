/*
 * Event recorder (see kube-events.h). A fixed-size cache keyed by a hash of
 * (object, type, reason, message) remembers the Event object written for
 * each distinct event; a repeat inside the aggregation window bumps its
 * count and, at most every KUBE_EVENT_UPDATE_INTERVAL_USEC, merge-patches
 * count and lastTimestamp onto it. Writes are fire-and-forget through the
 * Kubernetes client, which retries them (a create names its Event, so a
 * repeated one is answered 409; an update sets absolute values). Each write
 * carries a struct event_write that finds its slot again when it ends: a
 * failed create drops the slot, so the next repeat creates the Event anew
 * instead of updating one that does not exist, and an update answered 404
 * (the Event expired or was never created) creates it again at once, as
 * client-go's recorder does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hash.h"
#include "common/kube-client-internal.h"
#include "common/clock.h"
#include "common/kube-events.h"
#include "common/log.h"

struct event_slot {
	uint64_t key; /* 0 = empty */
	char *name, *namespace; /* the Event object written (or being created) */
	uint64_t first_usec, last_sent_usec;
	time_t first_time; /* firstTimestamp, should the Event be created again */
	unsigned count;
	bool creating; /* its create is in flight: repeats are only counted */
};

/* One write in flight, on the recorder's list so kube_events_free() can
 * cancel it (a request freed with its client never calls done()). */
struct event_write {
	struct kube_events *e;
	struct event_write *prev, *next;
	struct kube_req *req;
	uint64_t key;       /* the slot's event */
	char *name;         /* the Event object written */
	char *what;         /* "Pod default/inflate-1 (FailedScheduling)", for logs */
	bool create;
	/* An update's fallback when the Event is gone: the create to send. */
	char *recreate_name, *recreate_body;
};

/* Why writes fail, each logged on its own schedule. */
enum event_failure {
	EVENT_FAILURE_TRANSPORT,  /* no HTTP answer */
	EVENT_FAILURE_DENIED,     /* 401, 403: credentials or RBAC */
	EVENT_FAILURE_NOT_FOUND,  /* 404: the namespace (or, updating, the Event) is gone */
	EVENT_FAILURE_REFUSED,    /* other 4xx: the server found the Event invalid */
	EVENT_FAILURE_THROTTLED,  /* 429 after the client's retries */
	EVENT_FAILURE_SERVER,     /* 5xx after the client's retries */
	_EVENT_FAILURE_MAX,
};

struct failure_log {
	uint64_t last_usec; /* when this kind was last logged */
	uint64_t unlogged;  /* failures of this kind since, not logged */
	bool logged;
};

struct kube_events {
	struct kube_client *client;
	char *component, *instance;
	uint64_t (*now)(void);
	struct event_write *writes;
	struct failure_log failures[_EVENT_FAILURE_MAX];
	struct event_slot slots[KUBE_EVENT_CACHE_SIZE];
	struct kube_events_stats stats;
};

/* What one kube_event_record() call describes. */
struct event_desc {
	const struct kube_object_ref *obj;
	const char *type, *reason, *message;
};

int kube_events_new(struct kube_events **ret, struct kube_client *c, const char *component,
		    const char *instance)
{
	struct kube_events *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->client = c;
	e->now = clock_monotonic_usec;
	e->component = strdup(component);
	e->instance = strdup(instance ? instance : component);
	if (!e->component || !e->instance) {
		kube_events_free(e);
		return -ENOMEM;
	}
	*ret = e;
	return 0;
}

void kube_events_set_clock(struct kube_events *e, uint64_t (*now_usec)(void))
{
	e->now = now_usec ? now_usec : clock_monotonic_usec;
}

static void slot_clear(struct event_slot *s)
{
	free(s->name);
	free(s->namespace);
	*s = (struct event_slot){ 0 };
}

static void write_unlink(struct kube_events *e, struct event_write *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else if (e->writes == w)
		e->writes = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->prev = w->next = NULL;
}

static void write_free(struct event_write *w)
{
	free(w->name);
	free(w->what);
	free(w->recreate_name);
	free(w->recreate_body);
	free(w);
}

struct kube_events *kube_events_free(struct kube_events *e)
{
	if (!e)
		return NULL;
	while (e->writes) {
		struct event_write *w = e->writes;

		write_unlink(e, w);
		kube_req_free(w->req); /* cancels it: done() is not called */
		write_free(w);
	}
	for (size_t i = 0; i < KUBE_EVENT_CACHE_SIZE; i++)
		slot_clear(&e->slots[i]);
	free(e->component);
	free(e->instance);
	free(e);
	return NULL;
}

static void rfc3339(time_t t, char buf[32])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* client-go names events <object>.<unix nanoseconds in hex>. */
static void event_name(const char *object, char *buf, size_t size)
{
	snprintf(buf, size, "%s.%llx", object, (unsigned long long)clock_realtime_ns());
}

static const char *event_namespace(const struct kube_object_ref *obj)
{
	return obj->namespace ? obj->namespace : "default";
}

/* The core/v1 Event as JSON (malloc'd), or NULL when out of memory. */
static char *event_body(const struct kube_events *e, const struct event_desc *d, const char *name,
			time_t first, unsigned count)
{
	const struct kube_object_ref *obj = d->obj;
	char first_ts[32], last_ts[32];
	json_t *ev;
	char *body;

	rfc3339(first, first_ts);
	rfc3339(time(NULL), last_ts);
	ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s*, s:s, s:s*, s:s, s:s*},"
		       " s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:i, s:s, s:s}",
		       "apiVersion", "v1", "kind", "Event",
		       "metadata", "name", name, "namespace", event_namespace(obj),
		       "involvedObject", "apiVersion", obj->api_version, "kind", obj->kind,
		       "namespace", obj->namespace, "name", obj->name, "uid", obj->uid,
		       "reason", d->reason, "message", d->message, "type", d->type,
		       "source", "component", e->component, "host", e->instance,
		       "firstTimestamp", first_ts, "lastTimestamp", last_ts, "count", (json_int_t)count,
		       "reportingComponent", e->component, "reportingInstance", e->instance);
	if (!ev)
		return NULL;
	body = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	return body;
}

static enum event_failure failure_of(long status)
{
	if (status == 0)
		return EVENT_FAILURE_TRANSPORT;
	if (status == 401 || status == 403)
		return EVENT_FAILURE_DENIED;
	if (status == 404)
		return EVENT_FAILURE_NOT_FOUND;
	if (status == 429)
		return EVENT_FAILURE_THROTTLED;
	if (status >= 500)
		return EVENT_FAILURE_SERVER;
	return EVENT_FAILURE_REFUSED;
}

/* Counts a failed write; logs it unless its kind was logged less than
 * KUBE_EVENT_FAILURE_LOG_INTERVAL_USEC ago (then the next line counts it). */
static void write_failed(struct kube_events *e, const struct event_write *w,
			 const struct kube_response *resp)
{
	struct failure_log *f = &e->failures[failure_of(resp->status)];
	const char *error = resp->error ? resp->error : "no response";
	char status[32] = "";
	uint64_t now = e->now();

	e->stats.failed++;
	if (f->logged && now - f->last_usec < KUBE_EVENT_FAILURE_LOG_INTERVAL_USEC) {
		f->unlogged++;
		return;
	}
	if (resp->status && strncmp(error, "HTTP ", 5) != 0)
		snprintf(status, sizeof(status), "HTTP %ld: ", resp->status);
	if (f->unlogged)
		log_warn("Failed to %s an Event on %s: %s%s (and %" PRIu64 " more such failure(s) "
			 "since this was last logged)", w->create ? "create" : "update", w->what, status,
			 error, f->unlogged);
	else
		log_warn("Failed to %s an Event on %s: %s%s", w->create ? "create" : "update", w->what,
			 status, error);
	f->logged = true;
	f->last_usec = now;
	f->unlogged = 0;
}

static void on_written(struct kube_client *c, const struct kube_response *resp, void *userdata);

/* Sends one write for the event in slot key; takes name, what and the
 * recreate strings (freed on failure too). */
static int write_send(struct kube_events *e, uint64_t key, const char *method, const char *path,
		      const char *content_type, const char *body, char *name, char *what,
		      char *recreate_name, char *recreate_body)
{
	struct event_write *w = calloc(1, sizeof(*w));
	int r;

	if (!w) {
		free(name);
		free(what);
		free(recreate_name);
		free(recreate_body);
		return -ENOMEM;
	}
	*w = (struct event_write){ .e = e, .key = key, .name = name, .what = what,
				   .create = streq(method, "POST"), .recreate_name = recreate_name,
				   .recreate_body = recreate_body };
	if (!name || !what) {
		write_free(w);
		return -ENOMEM;
	}
	r = kube_request_event(e->client, method, path, content_type, body, on_written, w, &w->req);
	if (r < 0) {
		write_free(w);
		return r;
	}
	w->next = e->writes;
	if (e->writes)
		e->writes->prev = w;
	e->writes = w;
	return 0;
}

static char *event_what(const struct kube_object_ref *obj, const char *reason)
{
	char *what;

	if (asprintf(&what, "%s %s%s%s (%s)", obj->kind, obj->namespace ? obj->namespace : "",
		     obj->namespace ? "/" : "", obj->name, reason) < 0)
		return NULL;
	return what;
}

/* POSTs body as the Event named name, in the slot's namespace. */
static int slot_create(struct kube_events *e, struct event_slot *s, char *name, const char *body,
		       char *what)
{
	_cleanup_free_ char *path = NULL;
	int r;

	if (asprintf(&path, "/api/v1/namespaces/%s/events", s->namespace) < 0) {
		free(name);
		free(what);
		return -ENOMEM;
	}
	free(s->name);
	s->name = strdup(name);
	if (!s->name) {
		free(name);
		free(what);
		return -ENOMEM;
	}
	r = write_send(e, s->key, "POST", path, NULL, body, name, what, NULL, NULL);
	if (r >= 0)
		s->creating = true;
	return r;
}

static int event_create(struct kube_events *e, struct event_slot *s, const struct event_desc *d)
{
	_cleanup_free_ char *body = NULL;
	char name[320];
	int r;

	event_name(d->obj->name, name, sizeof(name));
	body = event_body(e, d, name, s->first_time, s->count);
	s->namespace = strdup(event_namespace(d->obj));
	if (!body || !s->namespace)
		return -ENOMEM;
	r = slot_create(e, s, strdup(name), body, event_what(d->obj, d->reason));
	if (r >= 0)
		e->stats.created++;
	return r;
}

static int event_update(struct kube_events *e, struct event_slot *s, const struct event_desc *d)
{
	_cleanup_free_ char *path = NULL, *body = NULL, *recreate_name = NULL, *recreate_body = NULL;
	char now[32], recreate[320];
	int r;

	rfc3339(time(NULL), now);
	if (asprintf(&path, "/api/v1/namespaces/%s/events/%s", s->namespace, s->name) < 0 ||
	    asprintf(&body, "{\"count\":%u,\"lastTimestamp\":\"%s\"}", s->count, now) < 0)
		return -ENOMEM;
	/* Should the Event be gone, it is created again under a new name with
	 * the count so far (the old name may still be in the server's way). */
	event_name(d->obj->name, recreate, sizeof(recreate));
	recreate_name = strdup(recreate);
	recreate_body = event_body(e, d, recreate, s->first_time, s->count);
	if (!recreate_name || !recreate_body)
		return -ENOMEM;
	r = write_send(e, s->key, "PATCH", path, "application/merge-patch+json", body,
		       strdup(s->name), event_what(d->obj, d->reason), TAKE_PTR(recreate_name),
		       TAKE_PTR(recreate_body));
	if (r >= 0)
		e->stats.updated++;
	return r;
}

/* An update answered 404: create the Event again from the write's fallback. */
static void event_recreate(struct kube_events *e, struct event_slot *s, struct event_write *w,
			   const struct kube_response *resp)
{
	int r = -ENOMEM;

	if (w->recreate_name && w->recreate_body)
		r = slot_create(e, s, TAKE_PTR(w->recreate_name), w->recreate_body,
				strdup(w->what));
	if (r >= 0) {
		e->stats.recreated++;
		return;
	}
	slot_clear(s); /* the next repeat creates it */
	write_failed(e, w, resp);
}

static void on_written(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct event_write *w = userdata;
	struct kube_events *e = w->e;
	struct event_slot *s = &e->slots[w->key % KUBE_EVENT_CACHE_SIZE];
	/* The slot may hold another event by now, or this one written anew. */
	bool ours = s->key == w->key && streq_ptr(s->name, w->name);
	bool ok = resp->status >= 200 && resp->status < 300;

	(void)c;
	write_unlink(e, w);
	if (w->create) {
		if (ours)
			s->creating = false;
		/* 409 AlreadyExists: an earlier attempt of this create got through. */
		if (!ok && resp->status != 409) {
			if (ours)
				slot_clear(s);
			write_failed(e, w, resp);
		}
	} else if (resp->status == 404 && ours) {
		event_recreate(e, s, w, resp);
	} else if (!ok) {
		write_failed(e, w, resp);
	}
	write_free(w);
}

int kube_event_record(struct kube_events *e, const struct kube_object_ref *obj,
		      enum kube_event_kind kind, const char *reason, const char *fmt, ...)
{
	const char *type = kind == KUBE_EVENT_WARNING ? "Warning" : "Normal";
	char message[KUBE_EVENT_MESSAGE_MAX];
	struct event_desc d = { obj, type, reason, message };
	uint64_t key, now = e->now();
	struct event_slot *s;
	va_list ap;
	int r;

	if (!obj || !obj->kind || !obj->name || !reason)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	key = 14695981039346656037ULL;
	key = hash_fnv1a64_field(key, obj->kind);
	key = hash_fnv1a64_field(key, obj->namespace);
	key = hash_fnv1a64_field(key, obj->name);
	key = hash_fnv1a64_field(key, obj->uid);
	key = hash_fnv1a64_field(key, type);
	key = hash_fnv1a64_field(key, reason);
	key = hash_fnv1a64_field(key, message);
	key |= 1; /* never 0, the empty marker */
	s = &e->slots[key % KUBE_EVENT_CACHE_SIZE];
	if (s->key == key && now - s->first_usec < KUBE_EVENT_AGGREGATE_WINDOW_USEC) {
		s->count++;
		/* While the create is in flight there is nothing to update yet;
		 * the count it missed goes out with the next update. */
		if (s->creating || now - s->last_sent_usec < KUBE_EVENT_UPDATE_INTERVAL_USEC) {
			e->stats.suppressed++;
			return 0;
		}
		s->last_sent_usec = now;
		return event_update(e, s, &d);
	}
	/* New, expired, dropped after a failed create, or a different event in
	 * this slot: write a new object. */
	slot_clear(s);
	s->key = key;
	s->first_usec = s->last_sent_usec = now;
	s->first_time = time(NULL);
	s->count = 1;
	r = event_create(e, s, &d);
	if (r < 0)
		slot_clear(s);
	return r;
}

void kube_events_get_stats(const struct kube_events *e, struct kube_events_stats *ret)
{
	*ret = e->stats;
	ret->in_flight = 0;
	for (const struct event_write *w = e->writes; w; w = w->next)
		ret->in_flight++;
}
