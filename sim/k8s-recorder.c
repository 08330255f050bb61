/*
 * The Event recorder of kanna-sim's controllers (kube-scheduler-lite, the
 * Deployment controller, kubelet-lite): core/v1 Events shaped like those
 * client-go's EventRecorder writes, so that `kubectl get events` and
 * `kubectl describe` show them. Repeats are aggregated as upstream does: a
 * fixed cache (in the store) maps a hash of what an Event says to its
 * name, so a repeat bumps count and lastTimestamp of the existing object;
 * a slot taken by another Event, or an expired object, starts a new one.
 * Lookup and write happen under the store lock.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hash.h"
#include "common/clock.h"
#include "common/util.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"

/* Kubernetes object names are at most this long. */
#define K8S_EVENT_NAME_MAX 253
/* ".<16 hex digits>" after the object's name. */
#define K8S_EVENT_SUFFIX_LEN 17

void k8s_event_ref_of(const json_t *obj, struct k8s_event_ref *ref)
{
	const json_t *meta = json_object_get(obj, "metadata");

	ref->api_version = json_string_value(json_object_get(obj, "apiVersion"));
	ref->kind = json_string_value(json_object_get(obj, "kind"));
	ref->ns = json_string_value(json_object_get(meta, "namespace"));
	ref->name = json_string_value(json_object_get(meta, "name"));
	ref->uid = json_string_value(json_object_get(meta, "uid"));
}

static uint64_t event_key(const struct k8s_event_ref *ref,
			  const struct k8s_event_source *source, const char *type,
			  const char *reason, const char *message)
{
	const char *parts[] = { ref->kind, ref->ns, ref->name, ref->uid, source->component,
				source->host, type, reason, message };
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
		h = hash_fnv1a64_field(h, parts[i]);
	return h | 1; /* never 0, the empty slot */
}

/* client-go's names: <object>.<unix nanoseconds in hex>; unique here. */
static uint64_t next_stamp(struct k8s_store *store)
{
	uint64_t ns = (uint64_t)clock_realtime_ns();

	store->last_event_stamp = MAX(ns, store->last_event_stamp + 1);
	return store->last_event_stamp;
}

static void event_name(const struct k8s_event_ref *ref, uint64_t stamp, char name[static 254])
{
	snprintf(name, 254, "%.*s.%016" PRIx64, K8S_EVENT_NAME_MAX - K8S_EVENT_SUFFIX_LEN,
		 ref->name, stamp);
}

static json_t *event_new(const struct k8s_event_ref *ref, const struct k8s_event_source *source,
			 const char *ns, const char *name, const char *type, const char *reason,
			 const char *message)
{
	char now[32];

	k8s_timestamp(now, 0);
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s*, s:s*, s:s*, s:s*, s:s*},"
			 " s:s, s:s, s:s, s:{s:s, s:s*}, s:s, s:s, s:i, s:s, s:s}",
			 "apiVersion", "v1", "kind", "Event", "metadata", "name", name,
			 "namespace", ns, "involvedObject", "apiVersion", ref->api_version,
			 "kind", ref->kind, "namespace", ref->ns, "name", ref->name, "uid",
			 ref->uid, "reason", reason, "message", message, "type", type, "source",
			 "component", source->component, "host", source->host, "firstTimestamp",
			 now, "lastTimestamp", now, "count", 1, "reportingComponent",
			 source->component, "reportingInstance", source->host ? source->host : "");
}

static json_t *bump(const json_t *cur, void *userdata, struct k8s_error *err)
{
	json_t *out = json_deep_copy(cur);
	char now[32];

	k8s_timestamp(now, 0);
	json_object_set_new(out, "count",
			    json_integer(json_integer_value(json_object_get(cur, "count")) + 1));
	json_object_set_new(out, "lastTimestamp", json_string(now));
	return out;
}

int k8s_event_record(struct k8s_store *store, const struct k8s_event_ref *ref,
		     const struct k8s_event_source *source, const char *type,
		     const char *reason, const char *fmt, ...)
{
	const struct k8s_resource *events = k8s_registry_find(store->reg, "", "v1", "events");
	/* Events about cluster-scoped objects live in "default", as upstream. */
	const char *ns = ref->ns && *ref->ns ? ref->ns : "default";
	char message[K8S_EVENT_MESSAGE_MAX], name[254];
	struct k8s_error err = {};
	struct k8s_event_slot *slot;
	uint64_t key;
	json_t *ev;
	va_list ap;
	int r;

	if (!events || !ref->kind || !ref->name || !source->component)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	key = event_key(ref, source, type, reason, message);
	k8s_store_lock(store);
	if (!store->event_slots &&
	    !(store->event_slots = calloc(K8S_EVENT_CACHE_SIZE, sizeof(*store->event_slots)))) {
		k8s_store_unlock(store);
		return -ENOMEM;
	}
	slot = &store->event_slots[key % K8S_EVENT_CACHE_SIZE];
	if (slot->key == key) {
		event_name(ref, slot->stamp, name);
		if (k8s_store_lookup(events, ns, name)) {
			r = k8s_store_mutate(store, events, ns, name, K8S_WRITE_ALL, bump, NULL, NULL,
					     &err);
			goto out;
		}
	}
	slot->key = key;
	slot->stamp = next_stamp(store);
	event_name(ref, slot->stamp, name);
	ev = event_new(ref, source, ns, name, type, reason, message);
	r = ev ? k8s_store_create(store, events, ns, ev, NULL, &err) : -ENOMEM;
	json_decref(ev);
out:
	k8s_store_unlock(store);
	k8s_error_clear(&err);
	return r;
}
