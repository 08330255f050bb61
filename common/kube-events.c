/*
 * Event recorder (see kube-events.h). A fixed-size cache keyed by a hash of
 * (object, type, reason, message) remembers the Event object written for
 * each distinct event; a repeat inside the aggregation window bumps its
 * count and, at most every KUBE_EVENT_UPDATE_INTERVAL_USEC, merge-patches
 * count and lastTimestamp onto it. Writes are fire-and-forget through the
 * Kubernetes client; a failure is counted and the next repeat starts anew.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/kube-client-internal.h"
#include "common/kube-events.h"
#include "common/log.h"

struct event_slot {
	uint64_t key; /* 0 = empty */
	char *name, *namespace;
	uint64_t first_usec, last_sent_usec;
	unsigned count;
};

struct kube_events {
	struct kube_client *client;
	char *component, *instance;
	struct event_slot slots[KUBE_EVENT_CACHE_SIZE];
	struct kube_events_stats stats;
};

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	h ^= 0xff; /* field separator */
	h *= 1099511628211ULL;
	return h;
}

int kube_events_new(struct kube_events **ret, struct kube_client *c, const char *component,
		    const char *instance)
{
	struct kube_events *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->client = c;
	e->component = strdup(component);
	e->instance = strdup(instance ? instance : component);
	if (!e->component || !e->instance) {
		kube_events_free(e);
		return -ENOMEM;
	}
	*ret = e;
	return 0;
}

static void slot_clear(struct event_slot *s)
{
	free(s->name);
	free(s->namespace);
	*s = (struct event_slot){ 0 };
}

struct kube_events *kube_events_free(struct kube_events *e)
{
	if (!e)
		return NULL;
	for (size_t i = 0; i < KUBE_EVENT_CACHE_SIZE; i++)
		slot_clear(&e->slots[i]);
	free(e->component);
	free(e->instance);
	free(e);
	return NULL;
}

static void rfc3339_now(char buf[32])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void on_written(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct kube_events *e = userdata;

	(void)c;
	if (resp->status >= 200 && resp->status < 300)
		return;
	/* Events are best effort; say why the first few fail, then count. */
	if (e->stats.failed++ < KUBE_EVENT_FAILURES_LOGGED)
		log_warn("Failed to write an Event: %s", resp->error ? resp->error : "no response");
}

static int event_create(struct kube_events *e, struct event_slot *s,
			const struct kube_object_ref *obj, const char *type, const char *reason,
			const char *message)
{
	_cleanup_free_ char *path = NULL, *body = NULL;
	struct timespec ts;
	char now[32], name[320];
	json_t *ev;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	/* client-go names events <object>.<unix nanoseconds in hex>. */
	snprintf(name, sizeof(name), "%s.%llx", obj->name,
		 (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
	rfc3339_now(now);
	ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s*, s:s, s:s*, s:s, s:s*},"
		       " s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:i, s:s, s:s}",
		       "apiVersion", "v1", "kind", "Event",
		       "metadata", "name", name, "namespace", obj->namespace ? obj->namespace : "default",
		       "involvedObject", "apiVersion", obj->api_version, "kind", obj->kind,
		       "namespace", obj->namespace, "name", obj->name, "uid", obj->uid,
		       "reason", reason, "message", message, "type", type,
		       "source", "component", e->component, "host", e->instance,
		       "firstTimestamp", now, "lastTimestamp", now, "count", 1,
		       "reportingComponent", e->component, "reportingInstance", e->instance);
	if (!ev)
		return -ENOMEM;
	body = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	if (!body || asprintf(&path, "/api/v1/namespaces/%s/events",
			      obj->namespace ? obj->namespace : "default") < 0)
		return -ENOMEM;
	free(s->name);
	free(s->namespace);
	s->name = strdup(name);
	s->namespace = strdup(obj->namespace ? obj->namespace : "default");
	if (!s->name || !s->namespace)
		return -ENOMEM;
	r = kube_request_event(e->client, "POST", path, NULL, body, on_written, e);
	if (r >= 0)
		e->stats.created++;
	return r;
}

static int event_update(struct kube_events *e, struct event_slot *s)
{
	_cleanup_free_ char *path = NULL, *body = NULL;
	char now[32];
	int r;

	rfc3339_now(now);
	if (asprintf(&path, "/api/v1/namespaces/%s/events/%s", s->namespace, s->name) < 0 ||
	    asprintf(&body, "{\"count\":%u,\"lastTimestamp\":\"%s\"}", s->count, now) < 0)
		return -ENOMEM;
	r = kube_request_event(e->client, "PATCH", path, "application/merge-patch+json", body,
			       on_written, e);
	if (r >= 0)
		e->stats.updated++;
	return r;
}

int kube_event_record(struct kube_events *e, const struct kube_object_ref *obj,
		      enum kube_event_kind kind, const char *reason, const char *fmt, ...)
{
	const char *type = kind == KUBE_EVENT_WARNING ? "Warning" : "Normal";
	char message[KUBE_EVENT_MESSAGE_MAX];
	uint64_t key, now = kube_now_usec();
	struct event_slot *s;
	va_list ap;
	int r;

	if (!obj || !obj->kind || !obj->name || !reason)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	key = 14695981039346656037ULL;
	key = fnv1a(key, obj->kind);
	key = fnv1a(key, obj->namespace);
	key = fnv1a(key, obj->name);
	key = fnv1a(key, obj->uid);
	key = fnv1a(key, type);
	key = fnv1a(key, reason);
	key = fnv1a(key, message);
	key |= 1; /* never 0, the empty marker */
	s = &e->slots[key % KUBE_EVENT_CACHE_SIZE];
	if (s->key == key && now - s->first_usec < KUBE_EVENT_AGGREGATE_WINDOW_USEC) {
		s->count++;
		if (now - s->last_sent_usec < KUBE_EVENT_UPDATE_INTERVAL_USEC) {
			e->stats.suppressed++;
			return 0;
		}
		s->last_sent_usec = now;
		return event_update(e, s);
	}
	/* New, expired, or a different event in this slot: write a new object. */
	slot_clear(s);
	s->key = key;
	s->first_usec = s->last_sent_usec = now;
	s->count = 1;
	r = event_create(e, s, obj, type, reason, message);
	if (r < 0)
		slot_clear(s);
	return r;
}

void kube_events_get_stats(const struct kube_events *e, struct kube_events_stats *ret)
{
	*ret = e->stats;
}
