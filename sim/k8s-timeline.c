/*
 * The Kubernetes side's timeline for /_sim/status: what happened to nodes,
 * pods and NodeClaims and when, whoever wrote it (kubectl, kanna, the lite
 * controllers). k8s_store_commit() hands every write to
 * k8s_timeline_observe(), which compares the new snapshot with the one it
 * replaces; pods need no parsing (the snapshot's facts suffice), nodes and
 * NodeClaims are few and parsed. Entries have the AWS side's shape (time,
 * event, detail), the detail starting with the object's name.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/util.h"
#include "sim/k8s-store.h"

void k8s_format_time_ms(uint64_t wall_ms, char buf[static 32])
{
	time_t secs = (time_t)(wall_ms / 1000);
	char day[24];
	struct tm tm;

	if (!gmtime_r(&secs, &tm) || !strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(day, sizeof(day), "1970-01-01T00:00:00");
	snprintf(buf, 32, "%s.%03uZ", day, (unsigned)(wall_ms % 1000));
}

void k8s_timeline_clear(struct k8s_timeline *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].event);
		free(t->v[i].detail);
	}
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static void timeline_vadd(struct k8s_store *store, const char *event, const char *fmt,
			  va_list ap) _printf_(3, 0);

static void timeline_vadd(struct k8s_store *store, const char *event, const char *fmt,
			  va_list ap)
{
	struct k8s_timeline *t = &store->timeline;
	struct k8s_timeline_entry *e;
	char *detail = NULL;

	if (t->n >= K8S_TIMELINE_MAX) {
		t->dropped++;
		return;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;

		e = realloc(t->v, cap * sizeof(*e));
		if (!e) {
			t->dropped++;
			return;
		}
		t->v = e;
		t->cap = cap;
	}
	e = &t->v[t->n];
	if (vasprintf(&detail, fmt, ap) < 0) {
		t->dropped++;
		return;
	}
	e->event = strdup(event);
	if (!e->event) {
		free(detail);
		t->dropped++;
		return;
	}
	e->detail = detail;
	e->ms = (uint64_t)clock_realtime_ms();
	t->n++;
}

void k8s_timeline_add(struct k8s_store *store, const char *event, const char *fmt, ...)
{
	va_list ap;

	k8s_store_lock(store);
	va_start(ap, fmt);
	timeline_vadd(store, event, fmt, ap);
	va_end(ap);
	k8s_store_unlock(store);
}

/* ---- pods: from the snapshots' facts --------------------------------- */

static void observe_pod(struct k8s_store *store, enum k8s_event_type type,
			const struct k8s_object *o, const struct k8s_object *prev)
{
	const char *node = o->node_name ? o->node_name : "";
	const char *sep = o->node_name ? " " : "";

	if (type == K8S_EVENT_DELETED) {
		k8s_timeline_add(store, "pod-deleted", "%s/%s%s%s", o->ns, o->name, sep, node);
		return;
	}
	if (type == K8S_EVENT_ADDED)
		k8s_timeline_add(store, "pod-created", "%s/%s", o->ns, o->name);
	if (o->pod_unschedulable && !(prev && prev->pod_unschedulable))
		k8s_timeline_add(store, "pod-unschedulable", "%s/%s", o->ns, o->name);
	if (o->node_name && !(prev && prev->node_name))
		k8s_timeline_add(store, "pod-bound", "%s/%s %s", o->ns, o->name, node);
	if (streq_ptr(o->phase, "Running") && !(prev && streq_ptr(prev->phase, "Running")))
		k8s_timeline_add(store, "pod-running", "%s/%s%s%s", o->ns, o->name, sep, node);
}

/* ---- nodes and NodeClaims: parsed, they are few ------------------------ */

static const json_t *get2(const json_t *obj, const char *a, const char *b)
{
	return json_object_get(json_object_get(obj, a), b);
}

static bool node_ready(const json_t *node)
{
	const json_t *c;
	size_t i;

	json_array_foreach(get2(node, "status", "conditions"), i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), "Ready"))
			return streq_ptr(json_string_value(json_object_get(c, "status")), "True");
	return false;
}

static bool has_taint(const json_t *node, const json_t *taint)
{
	const json_t *t;
	size_t i;

	json_array_foreach(get2(node, "spec", "taints"), i, t)
		if (json_equal(json_object_get(t, "key"), json_object_get(taint, "key")) &&
		    json_equal(json_object_get(t, "effect"), json_object_get(taint, "effect")))
			return true;
	return false;
}

static void observe_node(struct k8s_store *store, enum k8s_event_type type,
			 const struct k8s_object *o, const struct k8s_object *prev)
{
	json_t *node = k8s_object_parse(o), *before = prev ? k8s_object_parse(prev) : NULL;
	const char *type_label = json_string_value(json_object_get(o->labels, "node.kubernetes.io/instance-type"));
	const char *zone = json_string_value(json_object_get(o->labels, "topology.kubernetes.io/zone"));
	const char *pool = json_string_value(json_object_get(o->labels, "karpenter.sh/nodepool"));
	bool ready = node_ready(node), was_ready = before && node_ready(before);
	bool cordoned = json_is_true(get2(node, "spec", "unschedulable"));
	const json_t *t;
	size_t i;

	if (!node)
		goto out;
	if (type == K8S_EVENT_DELETED) {
		k8s_timeline_add(store, "node-deleted", "%s", o->name);
		goto out;
	}
	if (type == K8S_EVENT_ADDED)
		k8s_timeline_add(store, "node-registered", "%s%s%s%s%s%s%s", o->name,
				 type_label ? " " : "", type_label ?: "", zone ? " " : "", zone ?: "",
				 pool ? " nodepool=" : "", pool ?: "");
	if (ready && !was_ready)
		k8s_timeline_add(store, "node-ready", "%s", o->name);
	if (!ready && was_ready)
		k8s_timeline_add(store, "node-not-ready", "%s", o->name);
	if (cordoned && !json_is_true(get2(before, "spec", "unschedulable")))
		k8s_timeline_add(store, "node-cordoned", "%s", o->name);
	if (!cordoned && json_is_true(get2(before, "spec", "unschedulable")))
		k8s_timeline_add(store, "node-uncordoned", "%s", o->name);
	json_array_foreach(get2(node, "spec", "taints"), i, t)
		if (!before || !has_taint(before, t)) {
			const char *value = json_string_value(json_object_get(t, "value"));

			k8s_timeline_add(store, "node-tainted", "%s %s%s%s:%s", o->name,
					 json_string_value(json_object_get(t, "key")) ?: "",
					 value ? "=" : "", value ?: "",
					 json_string_value(json_object_get(t, "effect")) ?: "");
		}
	json_array_foreach(get2(before, "spec", "taints"), i, t)
		if (!has_taint(node, t))
			k8s_timeline_add(store, "node-untainted", "%s %s:%s", o->name,
					 json_string_value(json_object_get(t, "key")) ?: "",
					 json_string_value(json_object_get(t, "effect")) ?: "");
	if (o->deleting && !(prev && prev->deleting))
		k8s_timeline_add(store, "node-deleting", "%s", o->name);
out:
	json_decref(node);
	json_decref(before);
}

static void observe_nodeclaim(struct k8s_store *store, enum k8s_event_type type,
			      const struct k8s_object *o, const struct k8s_object *prev)
{
	json_t *claim, *before;
	const char *provider, *pool;

	if (type == K8S_EVENT_DELETED) {
		k8s_timeline_add(store, "nodeclaim-deleted", "%s", o->name);
		return;
	}
	pool = json_string_value(json_object_get(o->labels, "karpenter.sh/nodepool"));
	if (type == K8S_EVENT_ADDED)
		k8s_timeline_add(store, "nodeclaim-created", "%s%s%s", o->name, pool ? " " : "",
				 pool ?: "");
	claim = k8s_object_parse(o);
	before = prev ? k8s_object_parse(prev) : NULL;
	provider = json_string_value(get2(claim, "status", "providerID"));
	if (provider && !get2(before, "status", "providerID"))
		k8s_timeline_add(store, "nodeclaim-launched", "%s %s", o->name, provider);
	json_decref(claim);
	json_decref(before);
}

void k8s_timeline_observe(struct k8s_store *store, enum k8s_event_type type,
			  const struct k8s_resource *res, const struct k8s_object *o,
			  const struct k8s_object *prev)
{
	if (!*res->group && streq(res->kind, "Pod"))
		observe_pod(store, type, o, prev);
	else if (!*res->group && streq(res->kind, "Node"))
		observe_node(store, type, o, prev);
	else if (streq(res->group, "karpenter.sh") && streq(res->kind, "NodeClaim"))
		observe_nodeclaim(store, type, o, prev);
}

json_t *k8s_timeline_json(struct k8s_store *store, uint64_t *dropped)
{
	json_t *arr = json_array();

	k8s_store_lock(store);
	for (size_t i = 0; arr && i < store->timeline.n; i++) {
		const struct k8s_timeline_entry *e = &store->timeline.v[i];
		char when[32];

		k8s_format_time_ms(e->ms, when);
		if (json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "time", when, "event",
							 e->event, "detail", e->detail)) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	if (dropped)
		*dropped = store->timeline.dropped;
	k8s_store_unlock(store);
	return arr;
}
