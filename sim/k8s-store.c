/*
 * The heart of kanna-sim's Kubernetes API: objects kept as immutable,
 * reference-counted snapshots (compact JSON + parsed metadata) in one
 * ordered tree per resource, the global resourceVersion and the watch
 * event ring. Writes (create/update/mutate) live here; deletion, garbage
 * collection and LIST are in k8s-delete.c and k8s-list.c. Callers: the
 * HTTP handlers and the controllers. Never does I/O.
 */
#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/util.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"

void k8s_timestamp(char buf[static 32], long offset_seconds)
{
	time_t t = time(NULL) + offset_seconds;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void k8s_random_uid(char buf[static 37])
{
	uint8_t b[16];

	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (uint8_t)rand();
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(buf, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
}

struct k8s_object *k8s_object_ref(struct k8s_object *o)
{
	if (o)
		__atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
	return o;
}

void k8s_object_unref(struct k8s_object *o)
{
	if (!o || __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	free(o->json);
	free(o->ns);
	free(o->name);
	free(o->uid);
	json_decref(o->labels);
	free(o->node_name);
	free(o->phase);
	for (size_t i = 0; i < o->n_owners; i++)
		free(o->owners[i]);
	free(o->owners);
	free(o);
}

json_t *k8s_object_parse(const struct k8s_object *o)
{
	return json_loadb(o->json, o->len, 0, NULL);
}

static char *strdup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* What the controllers need of a pod, so that they never parse all pods. */
static void pod_facts(struct k8s_object *o, const json_t *pod)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *status = json_string_value(json_object_get(c, "status"));

		if (streq_ptr(type, "Ready"))
			o->pod_ready = streq_ptr(status, "True");
		else if (streq_ptr(type, "PodScheduled"))
			o->pod_unschedulable = streq_ptr(status, "False") &&
					       streq_ptr(json_string_value(json_object_get(c, "reason")),
							 "Unschedulable");
	}
	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, c) {
		const json_t *req = json_object_get(json_object_get(c, "resources"), "requests");
		int64_t v;

		if (k8s_quantity_parse_milli(json_string_value(json_object_get(req, "cpu")), &v) >= 0)
			o->cpu_milli += v;
		if (k8s_quantity_parse_milli(json_string_value(json_object_get(req, "memory")), &v) >= 0)
			o->memory_milli += v;
	}
}

/* Builds a snapshot from a complete object (metadata already final). */
struct k8s_object *k8s_object_new(const struct k8s_resource *res, const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const json_t *owners = json_object_get(meta, "ownerReferences");
	struct k8s_object *o = calloc(1, sizeof(*o));
	const json_t *labels, *v;
	size_t i;

	if (!o)
		return NULL;
	o->refs = 1;
	o->json = json_dumps(obj, JSON_COMPACT);
	o->len = o->json ? strlen(o->json) : 0;
	o->ns = strdup(ns ? ns : "");
	o->name = strdup_or_null(json_string_value(json_object_get(meta, "name")));
	o->uid = strdup_or_null(json_string_value(json_object_get(meta, "uid")));
	o->rv = strtoull(json_string_value(json_object_get(meta, "resourceVersion")) ?: "0",
			 NULL, 10);
	labels = json_object_get(meta, "labels");
	if (json_object_size(labels) > 0)
		o->labels = json_deep_copy(labels);
	if (streq(res->kind, "Pod") && !*res->group) {
		o->node_name = strdup_or_null(json_string_value(
			json_object_get(json_object_get(obj, "spec"), "nodeName")));
		o->phase = strdup_or_null(json_string_value(
			json_object_get(json_object_get(obj, "status"), "phase")));
		pod_facts(o, obj);
	}
	o->n_finalizers = json_array_size(json_object_get(meta, "finalizers"));
	o->deleting = json_object_get(meta, "deletionTimestamp") != NULL;
	if (json_array_size(owners) > 0) {
		o->owners = calloc(json_array_size(owners), sizeof(char *));
		if (!o->owners)
			goto fail;
		json_array_foreach(owners, i, v) {
			const char *uid = json_string_value(json_object_get(v, "uid"));

			if (uid && !(o->owners[o->n_owners++] = strdup(uid)))
				goto fail;
		}
	}
	if (!o->json || !o->ns || !o->name || !o->uid)
		goto fail;
	return o;
fail:
	k8s_object_unref(o);
	return NULL;
}

int k8s_object_cmp(const void *a, const void *b)
{
	const struct k8s_object *x = a, *y = b;
	int c = strcmp(x->ns, y->ns);

	return c ? c : strcmp(x->name, y->name);
}

struct k8s_object *k8s_store_lookup(const struct k8s_resource *res,
				    const char *ns, const char *name)
{
	struct k8s_object key = { .ns = (char *)(ns ? ns : ""), .name = (char *)name };
	void **node = tfind(&key, &res->objects, k8s_object_cmp);

	return node ? *(struct k8s_object **)node : NULL;
}

/* Records the event for o (its rv is the next global rv) and wakes watchers. */
static void store_emit(struct k8s_store *store, enum k8s_event_type type,
		       const struct k8s_resource *res, struct k8s_object *o,
		       struct k8s_object *prev)
{
	struct k8s_event *ev = &store->ring[o->rv % store->window];

	k8s_object_unref(ev->obj);
	k8s_object_unref(ev->prev);
	ev->rv = o->rv;
	ev->type = type;
	ev->res = res;
	ev->obj = k8s_object_ref(o);
	ev->prev = type == K8S_EVENT_MODIFIED ? k8s_object_ref(prev) : NULL;
	pthread_cond_broadcast(&store->changed);
}

/*
 * Stamps the next resourceVersion on obj, swaps it into the tree (insert
 * or replace) and emits the event. obj is not consumed.
 */
int k8s_store_commit(struct k8s_store *store, struct k8s_resource *res,
		     json_t *obj, enum k8s_event_type type, struct k8s_object **ret)
{
	json_t *meta = json_object_get(obj, "metadata");
	struct k8s_object *o, **slot, *prev = NULL;
	char rv[32];

	snprintf(rv, sizeof(rv), "%" PRIu64, store->rv + 1);
	if (json_object_set_new(meta, "resourceVersion", json_string(rv)) < 0)
		return -ENOMEM;
	o = k8s_object_new(res, obj);
	if (!o)
		return -ENOMEM;
	store->rv++;
	res->write_rv = store->rv;
	if (type == K8S_EVENT_DELETED) {
		struct k8s_object *old = k8s_store_lookup(res, o->ns, o->name);

		tdelete(o, &res->objects, k8s_object_cmp);
		res->n_objects--;
		k8s_object_unref(old);
	} else {
		slot = tsearch(o, &res->objects, k8s_object_cmp);
		if (!slot) {
			k8s_object_unref(o);
			return -ENOMEM;
		}
		if (*slot != o) {
			prev = *slot; /* the tree's reference moves to prev */
			*slot = o;
		} else
			res->n_objects++;
		k8s_object_ref(o);
	}
	k8s_timeline_observe(store, type, res, o, prev);
	store_emit(store, type, res, o, prev);
	k8s_object_unref(prev);
	if (ret)
		*ret = o;
	else
		k8s_object_unref(o);
	return 0;
}

void k8s_store_lock(struct k8s_store *store)
{
	pthread_mutex_lock(&store->lock);
}

void k8s_store_unlock(struct k8s_store *store)
{
	pthread_mutex_unlock(&store->lock);
}

int k8s_store_new(struct k8s_registry *reg, size_t window, struct k8s_store **ret)
{
	struct k8s_store *store = calloc(1, sizeof(*store));
	pthread_mutexattr_t attr;

	if (!store)
		return -ENOMEM;
	store->window = window ? window : K8S_WATCH_WINDOW_DEFAULT;
	store->ring = calloc(store->window, sizeof(*store->ring));
	if (!store->ring) {
		free(store);
		return -ENOMEM;
	}
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&store->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	pthread_cond_init(&store->changed, NULL);
	store->reg = reg;
	*ret = store;
	return 0;
}

static void free_node(void *p)
{
	k8s_object_unref(p);
}

struct k8s_store *k8s_store_free(struct k8s_store *store)
{
	if (!store)
		return NULL;
	for (size_t i = 0; i < store->reg->n_resources; i++) {
		tdestroy(store->reg->resources[i].objects, free_node);
		store->reg->resources[i].objects = NULL;
		store->reg->resources[i].n_objects = 0;
	}
	for (size_t i = 0; i < store->window; i++) {
		k8s_object_unref(store->ring[i].obj);
		k8s_object_unref(store->ring[i].prev);
	}
	free(store->ring);
	k8s_timeline_clear(&store->timeline);
	free(store->event_slots);
	pthread_cond_destroy(&store->changed);
	pthread_mutex_destroy(&store->lock);
	free(store);
	return NULL;
}

void k8s_store_close(struct k8s_store *store)
{
	k8s_store_lock(store);
	store->closing = true;
	pthread_cond_broadcast(&store->changed);
	k8s_store_unlock(store);
}

int k8s_store_get(struct k8s_store *store, const struct k8s_resource *res,
		  const char *ns, const char *name, json_t **ret,
		  struct k8s_error *err)
{
	struct k8s_object *o;
	int r = 0;

	k8s_store_lock(store);
	o = k8s_store_lookup(res, ns, name);
	if (!o) {
		k8s_error_set(err, 404, "NotFound", "%s \"%s\" not found",
			      k8s_resource_qualified(res), name);
		r = -ENOENT;
	} else if (!(*ret = k8s_object_parse(o)))
		r = -ENOMEM;
	k8s_store_unlock(store);
	return r;
}

const char *k8s_resource_qualified(const struct k8s_resource *res)
{
	return res->qualified;
}

/* What the apiextensions controllers report once a CRD is served. */
static json_t *crd_status(const json_t *crd)
{
	const json_t *spec = json_object_get(crd, "spec"), *v;
	json_t *stored = json_array();
	char now[32];
	size_t i;

	json_array_foreach(json_object_get(spec, "versions"), i, v)
		if (json_is_true(json_object_get(v, "storage")))
			json_array_append(stored, json_object_get(v, "name"));
	k8s_timestamp(now, 0);
	return json_pack("{s:{}, s:{s:O, s:o, s:[{s:s, s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s}]}}",
			 "metadata", "status", "acceptedNames", json_object_get(spec, "names"),
			 "storedVersions", stored, "conditions", "type", "NamesAccepted",
			 "status", "True", "reason", "NoConflicts", "message",
			 "no conflicts found", "lastTransitionTime", now, "type", "Established",
			 "status", "True", "reason", "InitialNamesAccepted", "message",
			 "the initial names have been accepted", "lastTransitionTime", now);
}

int k8s_store_seed(struct k8s_store *store)
{
	static const char *const namespaces[] = { "default", "kube-system",
						  "kube-public", "kube-node-lease" };
	struct k8s_resource *ns_res = k8s_registry_find(store->reg, "", "v1", "namespaces");
	struct k8s_resource *crd_res = k8s_registry_find(store->reg, "apiextensions.k8s.io",
							 "v1", "customresourcedefinitions");
	struct k8s_error err = {};
	const char *name;
	json_t *crd;
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(namespaces); i++) {
		json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
				       "Namespace", "metadata", "name", namespaces[i]);

		r = ns ? k8s_store_create(store, ns_res, NULL, ns, NULL, &err) : -ENOMEM;
		json_decref(ns);
		if (r < 0)
			goto fail;
	}
	json_object_foreach(store->reg->crds, name, crd) {
		json_t *copy = json_deep_copy(crd), *status;

		if (!copy)
			return -ENOMEM;
		json_object_del(json_object_get(copy, "metadata"), "annotations");
		r = k8s_store_create(store, crd_res, NULL, copy, NULL, &err);
		status = r >= 0 ? crd_status(copy) : NULL;
		json_decref(copy);
		if (r >= 0)
			r = status ? k8s_store_update(store, crd_res, NULL, name, status,
						      K8S_WRITE_STATUS, NULL, &err) : -ENOMEM;
		json_decref(status);
		if (r < 0)
			goto fail;
	}
	return 0;
fail:
	k8s_error_clear(&err);
	return r;
}
