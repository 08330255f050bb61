/*
 * What the API server and the controllers would have done to a cluster
 * dump before the scheduler saw it (dump.h): admission defaulting
 * (namespace "default", the default StorageClass on claims naming none) and
 * Deployments/ReplicaSets/StatefulSets expanded into the replicas the dump
 * lacks — with each StatefulSet replica's claims from its
 * volumeClaimTemplates — as Pod and PersistentVolumeClaim objects that
 * then decode like any other. Called by load.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"
#include "dump/dump-internal.h"

/* Pods one workload may expand to. */
#define DUMP_MAX_REPLICAS 100000
#define ANNOTATION_DEFAULT_CLASS "storageclass.kubernetes.io/is-default-class"
#define ANNOTATION_DEFAULT_CLASS_BETA "storageclass.beta.kubernetes.io/is-default-class"

static bool namespaced(const char *kind)
{
	static const char *const kinds[] = { "Pod", "PersistentVolumeClaim", "DaemonSet", "Deployment",
					     "ReplicaSet", "StatefulSet", "PodDisruptionBudget" };

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (streq(kind, kinds[i]))
			return true;
	return false;
}

/* The StorageClass the DefaultStorageClass admission plugin would give a
 * claim that names none (the first one annotated default), or NULL. */
static const char *default_storage_class(const struct dump_input *in)
{
	const json_t *obj;
	size_t i;

	json_array_foreach(in->objects, i, obj) {
		const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
		if (i >= in->n_given)
			break;
		if (!streq_ptr(dump_kind(obj), "StorageClass"))
			continue;
		if (streq_ptr(json_string_value(json_object_get(ann, ANNOTATION_DEFAULT_CLASS)), "true") ||
		    streq_ptr(json_string_value(json_object_get(ann, ANNOTATION_DEFAULT_CLASS_BETA)), "true"))
			return dump_name(obj);
	}
	return NULL;
}

/* A claim spec without storageClassName gets the default class (a copy:
 * templates are shared). New reference, or NULL on ENOMEM. */
static json_t *claim_spec_admitted(const json_t *spec, const char *default_class)
{
	json_t *s;

	if (!json_is_object(spec))
		return json_object();
	if (json_object_get(spec, "storageClassName") || !default_class)
		return json_incref((json_t *)spec);
	s = json_copy((json_t *)spec);
	if (s && json_object_set_new(s, "storageClassName", json_string(default_class)) < 0) {
		json_decref(s);
		return NULL;
	}
	return s;
}

int dump_admit(struct dump_input *in)
{
	const char *default_class = default_storage_class(in);
	json_t *obj;
	size_t i;

	json_array_foreach(in->objects, i, obj) {
		json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
		const char *ns = dump_namespace(obj);

		if (i >= in->n_given)
			break;
		if (namespaced(dump_kind(obj)) && (!ns || !*ns) &&
		    json_object_set_new(meta, "namespace", json_string("default")) < 0)
			return -ENOMEM;
		if (streq(dump_kind(obj), "PersistentVolumeClaim") && json_is_object(spec) &&
		    !json_object_get(spec, "storageClassName") && default_class &&
		    json_object_set_new(spec, "storageClassName", json_string(default_class)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* "ns/name" keys of the input's objects of one kind. */
static int index_kind(const struct dump_input *in, const char *kind, struct hashmap *ret)
{
	const json_t *obj;
	char key[1024];
	size_t i;
	int r;

	json_array_foreach(in->objects, i, obj) {
		if (!streq(dump_kind(obj), kind))
			continue;
		snprintf(key, sizeof(key), "%.300s/%.600s", dump_namespace(obj) ?: "", dump_name(obj));
		if ((r = hashmap_put(ret, key, (void *)obj, NULL)) < 0)
			return r;
	}
	return 0;
}

static bool taken(const struct hashmap *names, const char *ns, const char *name)
{
	char key[1024];

	snprintf(key, sizeof(key), "%.300s/%.600s", ns, name);
	return hashmap_get(names, key) != NULL;
}

static int mark_taken(struct hashmap *names, const char *ns, const char *name)
{
	char key[1024];

	snprintf(key, sizeof(key), "%.300s/%.600s", ns, name);
	return hashmap_put(names, key, (void *)names, NULL);
}

/* Pods of the dump that belong to the workload already: "<name>-…" in its
 * namespace (a Deployment's pods are "<name>-<hash>-<suffix>"). */
static int64_t existing_replicas(const struct dump_input *in, const char *ns, const char *name)
{
	size_t len = strlen(name), i;
	const json_t *obj;
	int64_t n = 0;

	json_array_foreach(in->objects, i, obj) {
		const char *pn = dump_name(obj);
		if (i >= in->n_given)
			break;
		if (streq(dump_kind(obj), "Pod") && streq_ptr(dump_namespace(obj), ns) &&
		    !strncmp(pn, name, len) && pn[len] == '-')
			n++;
	}
	return n;
}

static json_t *pod_object(const char *kind, const char *owner, const char *ns, const char *name,
			  const json_t *tmpl_meta, json_t *spec)
{
	json_t *meta = json_pack("{s:s, s:s, s:[{s:s, s:s, s:b}]}", "name", name, "namespace", ns,
				 "ownerReferences", "kind", kind, "name", owner, "controller", 1);
	const json_t *labels = json_object_get(tmpl_meta, "labels");
	const json_t *annotations = json_object_get(tmpl_meta, "annotations");

	if (!meta || !spec ||
	    (labels && json_object_set(meta, "labels", (json_t *)labels) < 0) ||
	    (annotations && json_object_set(meta, "annotations", (json_t *)annotations) < 0)) {
		json_decref(meta);
		json_decref(spec);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", meta,
			 "spec", spec);
}

/*
 * A StatefulSet replica's pod spec: the template's, with one volume per
 * claim template naming "<template>-<set>-<ordinal>" (replacing a template
 * volume of the same name), as the StatefulSet controller builds it. The
 * claims the dump does not have are generated unbound.
 */
static json_t *statefulset_replica(struct dump_input *in, const json_t *set, const json_t *spec,
				   const char *ns, const char *name, int64_t ordinal,
				   struct hashmap *claims, const char *default_class)
{
	const json_t *vcts = json_object_get(json_object_get(set, "spec"), "volumeClaimTemplates");
	json_t *out = json_copy((json_t *)spec), *vols = json_array(), *v, *t;
	size_t i, j;

	if (!out || !vols)
		goto nomem;
	json_array_foreach(json_object_get(spec, "volumes"), i, v) {
		bool replaced = false;
		json_array_foreach(vcts, j, t)
			replaced |= streq_ptr(dump_name(t), json_string_value(json_object_get(v, "name")));
		if (!replaced && json_array_append(vols, v) < 0)
			goto nomem;
	}
	json_array_foreach(vcts, j, t) {
		const char *tn = dump_name(t);
		char claim[1024];
		if (!tn) {
			json_decref(out);
			json_decref(vols);
			dump_error(in, t, set, "volumeClaimTemplates[%zu] without metadata.name", j);
			return NULL;
		}
		snprintf(claim, sizeof(claim), "%.300s-%.300s-%lld", tn, name, (long long)ordinal);
		if (json_array_append_new(vols, json_pack("{s:s, s:{s:s}}", "name", tn, "persistentVolumeClaim",
							  "claimName", claim)) < 0)
			goto nomem;
		if (taken(claims, ns, claim))
			continue;
		json_t *cspec = claim_spec_admitted(json_object_get(t, "spec"), default_class);
		if (!cspec ||
		    dump_append(in, json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "v1", "kind",
					      "PersistentVolumeClaim", "metadata", "name", claim, "namespace",
					      ns, "spec", cspec), t) < 0 ||
		    mark_taken(claims, ns, claim) < 0)
			goto nomem;
	}
	if (json_object_set_new(out, "volumes", vols) < 0) {
		json_decref(out);
		return NULL;
	}
	return out;
nomem:
	json_decref(out);
	json_decref(vols);
	return NULL;
}

/* Adds replica "<name>-<ordinal>" of workload obj unless a pod of that
 * name exists: 1 added, 0 taken, negative errno. A replica of a Deployment
 * or ReplicaSet is the first one (*first, once set) renamed. */
static int add_replica(struct dump_input *in, const json_t *obj, int64_t ordinal, struct hashmap *pods,
		       struct hashmap *claims, const char *default_class, ssize_t *first)
{
	const char *kind = dump_kind(obj), *name = dump_name(obj), *ns = dump_namespace(obj);
	const json_t *tmpl = json_object_get(json_object_get(obj, "spec"), "template");
	const json_t *tspec = json_object_get(tmpl, "spec");
	char pod[1024];
	json_t *pspec;
	int r;

	snprintf(pod, sizeof(pod), "%.500s-%lld", name, (long long)ordinal);
	if (taken(pods, ns, pod))
		return 0;
	if (*first >= 0) {
		r = dump_add_copy(in, (size_t)*first, pod);
		return r < 0 ? r : mark_taken(pods, ns, pod) < 0 ? -ENOMEM : 1;
	}
	pspec = streq(kind, "StatefulSet") ?
			statefulset_replica(in, obj, tspec, ns, name, ordinal, claims, default_class) :
			json_incref((json_t *)tspec);
	if (!pspec)
		return in->err[0] ? -EINVAL : -ENOMEM;
	if ((r = dump_append(in, pod_object(kind, name, ns, pod, json_object_get(tmpl, "metadata"), pspec),
			     obj)) < 0 ||
	    (r = mark_taken(pods, ns, pod)) < 0)
		return r;
	if (!streq(kind, "StatefulSet"))
		*first = (ssize_t)json_array_size(in->objects) - 1;
	return 1;
}

static int expand(struct dump_input *in, const json_t *obj, struct hashmap *pods,
		  struct hashmap *claims, const char *default_class)
{
	const json_t *spec = json_object_get(obj, "spec"), *tmpl = json_object_get(spec, "template");
	const json_t *replicas_node = json_object_get(spec, "replicas");
	int64_t replicas = 1, made;
	ssize_t first = -1;
	int r;

	if (streq(dump_kind(obj), "ReplicaSet") &&
	    json_object_get(json_object_get(obj, "metadata"), "ownerReferences"))
		return 0; /* its Deployment (in the same dump) accounts for it */
	if (replicas_node && !json_is_null(replicas_node)) {
		if (!json_is_integer(replicas_node) || json_integer_value(replicas_node) < 0 ||
		    json_integer_value(replicas_node) > DUMP_MAX_REPLICAS)
			return dump_error(in, replicas_node, obj, "replicas must be between 0 and %d",
					  DUMP_MAX_REPLICAS);
		replicas = json_integer_value(replicas_node);
	}
	if (!json_is_object(tmpl) || !json_is_object(json_object_get(tmpl, "spec")))
		return dump_error(in, tmpl, obj, "expected spec.template with a pod spec");
	/* A StatefulSet's replicas are its ordinals 0 … replicas-1. */
	if (streq(dump_kind(obj), "StatefulSet")) {
		for (int64_t ordinal = 0; ordinal < replicas; ordinal++)
			if ((r = add_replica(in, obj, ordinal, pods, claims, default_class, &first)) < 0)
				return r;
		return 0;
	}
	/* Others fill up to replicas, under names no pod of the dump has. */
	made = existing_replicas(in, dump_namespace(obj), dump_name(obj));
	for (int64_t ordinal = made; made < replicas; ordinal++) {
		if ((r = add_replica(in, obj, ordinal, pods, claims, default_class, &first)) < 0)
			return r;
		made += r;
	}
	return 0;
}

int dump_expand_workloads(struct dump_input *in)
{
	const char *default_class = default_storage_class(in);
	struct hashmap pods = { 0 }, claims = { 0 };
	size_t n = in->n_given;
	int r;

	if ((r = index_kind(in, "Pod", &pods)) >= 0)
		r = index_kind(in, "PersistentVolumeClaim", &claims);
	for (size_t i = 0; i < n && r >= 0; i++) {
		const json_t *obj = json_array_get(in->objects, i);
		const char *kind = dump_kind(obj);
		if (streq(kind, "Deployment") || streq(kind, "ReplicaSet") || streq(kind, "StatefulSet"))
			r = expand(in, obj, &pods, &claims, default_class);
	}
	hashmap_done(&pods);
	hashmap_done(&claims);
	return r;
}
