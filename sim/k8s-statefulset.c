/*
 * StatefulSet controller-lite for kanna-sim: pods named <set>-<ordinal> for
 * ordinals below spec.replicas, each with a PersistentVolumeClaim
 * <template>-<set>-<ordinal> per volumeClaimTemplate (claims outlive their
 * pods, as upstream). OrderedReady creates the next ordinal only once every
 * lower one is Ready; Parallel creates them all. Scale-down removes the
 * highest ordinals first. Claims are bound by k8s-volumes.c when the
 * scheduler places their first consumer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"

static const char *meta(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static void create_quietly(struct k8s_store *store, const struct k8s_resource *res,
			   const char *ns, json_t *obj, int *writes)
{
	struct k8s_error err = {};

	if (obj && k8s_store_create(store, res, ns, obj, NULL, &err) >= 0)
		(*writes)++;
	else if (err.code != 409)
		log_warn("Failed to create %s for a StatefulSet in %s: %s", res->kind, ns, err.message);
	k8s_error_clear(&err);
	json_decref(obj);
}

/* Claims first: a pod must never run before its volumes exist. */
static void ensure_claims(struct k8s_store *store, const json_t *set, long ordinal, int *writes)
{
	const struct k8s_resource *pvcs = k8s_registry_find(store->reg, "", "v1",
							    "persistentvolumeclaims");
	const char *ns = meta(set, "namespace");
	const json_t *tmpl;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(set, "spec"), "volumeClaimTemplates"), i,
			   tmpl) {
		char name[512];
		json_t *pvc;

		snprintf(name, sizeof(name), "%s-%s-%ld", meta(tmpl, "name") ?: "data",
			 meta(set, "name"), ordinal);
		if (k8s_store_lookup(pvcs, ns, name))
			continue;
		pvc = json_pack("{s:s, s:s, s:{s:s, s:s, s:O?}, s:O?}", "apiVersion", "v1", "kind",
				"PersistentVolumeClaim", "metadata", "name", name, "namespace", ns,
				"labels", json_object_get(json_object_get(json_object_get(
						  set, "spec"), "selector"), "matchLabels"),
				"spec", json_object_get(tmpl, "spec"));
		create_quietly(store, pvcs, ns, pvc, writes);
	}
}

static json_t *set_pod(const json_t *set, long ordinal)
{
	const json_t *spec = json_object_get(set, "spec");
	const json_t *tmpl = json_object_get(spec, "template"), *claim;
	json_t *labels = json_deep_copy(json_object_get(json_object_get(tmpl, "metadata"), "labels"));
	json_t *pod_spec = json_deep_copy(json_object_get(tmpl, "spec"));
	json_t *volumes;
	char name[300];
	size_t i;

	if (!labels)
		labels = json_object();
	if (!pod_spec)
		pod_spec = json_object();
	snprintf(name, sizeof(name), "%s-%ld", meta(set, "name"), ordinal);
	json_object_set_new(labels, "statefulset.kubernetes.io/pod-name", json_string(name));
	json_object_set_new(labels, "controller-revision-hash",
			    json_sprintf("%s-%08x", meta(set, "name"), k8s_template_hash(tmpl)));
	json_object_set_new(labels, "apps.kubernetes.io/pod-index", json_sprintf("%ld", ordinal));
	json_object_set_new(pod_spec, "hostname", json_string(name));
	if (json_object_get(spec, "serviceName"))
		json_object_set(pod_spec, "subdomain", json_object_get(spec, "serviceName"));
	volumes = json_object_get(pod_spec, "volumes");
	if (!json_is_array(volumes))
		json_object_set_new(pod_spec, "volumes", volumes = json_array());
	json_array_foreach(json_object_get(spec, "volumeClaimTemplates"), i, claim) {
		char claim_name[512];

		snprintf(claim_name, sizeof(claim_name), "%s-%s", meta(claim, "name") ?: "data", name);
		json_array_append_new(volumes, json_pack("{s:s, s:{s:s}}", "name",
							 meta(claim, "name") ?: "data",
							 "persistentVolumeClaim", "claimName",
							 claim_name));
	}
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:o}",
			 "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace",
			 meta(set, "namespace"), "labels", labels, "ownerReferences", "apiVersion",
			 "apps/v1", "kind", "StatefulSet", "name", meta(set, "name"), "uid",
			 meta(set, "uid"), "controller", 1, "blockOwnerDeletion", 1, "spec", pod_spec);
}

struct surplus {
	const char *uid, *prefix; /* "<set>-" */
	long want;
	long *ordinals;
	size_t n;
};

static void find_surplus(struct k8s_object *o, void *userdata)
{
	struct surplus *s = userdata;
	size_t plen = strlen(s->prefix);
	char *end;
	long ordinal;
	long *v;

	if (o->deleting || o->n_owners == 0 || !streq(o->owners[0], s->uid) ||
	    strncmp(o->name, s->prefix, plen) != 0)
		return;
	ordinal = strtol(o->name + plen, &end, 10);
	if (*end || ordinal < s->want)
		return;
	v = realloc(s->ordinals, (s->n + 1) * sizeof(*v));
	if (!v)
		return;
	s->ordinals = v;
	v[s->n++] = ordinal;
}

static int cmp_desc(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Lock held. Highest ordinal first; one at a time unless Parallel. */
static int scale_down(struct k8s_store *store, const json_t *set, long want, bool parallel)
{
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	char prefix[300];
	struct surplus s = { .uid = meta(set, "uid"), .prefix = prefix, .want = want };
	int writes = 0;

	snprintf(prefix, sizeof(prefix), "%s-", meta(set, "name"));
	k8s_store_foreach(store, pods, meta(set, "namespace"), find_surplus, &s);
	if (s.n > 0)
		qsort(s.ordinals, s.n, sizeof(*s.ordinals), cmp_desc);
	for (size_t i = 0; i < s.n && (parallel || i == 0); i++) {
		struct k8s_delete_options opts;
		struct k8s_error err = {};
		char name[400];

		snprintf(name, sizeof(name), "%s%ld", prefix, s.ordinals[i]);
		k8s_delete_options_init(&opts);
		if (k8s_store_delete(store, pods, meta(set, "namespace"), name, &opts, NULL, &err) >= 0)
			writes++;
		k8s_error_clear(&err);
	}
	free(s.ordinals);
	return writes;
}

static json_t *set_status(const json_t *cur, void *userdata, struct k8s_error *err)
{
	json_t *out = json_deep_copy(cur);

	json_object_set(out, "status", userdata);
	return out;
}

static int reconcile_set(struct k8s_store *store, const json_t *set)
{
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	const struct k8s_resource *sets = k8s_registry_find(store->reg, "apps", "v1", "statefulsets");
	const json_t *spec = json_object_get(set, "spec");
	const char *ns = meta(set, "namespace");
	long want = (long)json_integer_value(json_object_get(spec, "replicas"));
	bool parallel = streq_ptr(json_string_value(json_object_get(spec, "podManagementPolicy")),
				  "Parallel");
	long have = 0, ready = 0;
	int writes = 0, created;
	char revision[300];
	json_t *status;

	k8s_store_lock(store);
	for (long i = 0; i < want; i++) {
		char name[300];
		struct k8s_object *o;

		snprintf(name, sizeof(name), "%s-%ld", meta(set, "name"), i);
		o = k8s_store_lookup(pods, ns, name);
		if (o) {
			have++;
			ready += o->pod_ready;
			if (!parallel && !o->pod_ready)
				break; /* OrderedReady: wait for this one */
			continue;
		}
		ensure_claims(store, set, i, &writes);
		created = writes;
		create_quietly(store, pods, ns, set_pod(set, i), &writes);
		have += writes > created; /* counted at once, as upstream's status does */
		if (!parallel)
			break;
	}
	writes += scale_down(store, set, want, parallel);
	k8s_store_unlock(store);
	/* Pods are never rolled, so every one is of the current (and update) revision. */
	snprintf(revision, sizeof(revision), "%s-%08x", meta(set, "name"),
		 k8s_template_hash(json_object_get(spec, "template")));
	status = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s}", "observedGeneration",
			   json_integer_value(json_object_get(json_object_get(set, "metadata"), "generation")),
			   "replicas", (json_int_t)have, "readyReplicas", (json_int_t)ready,
			   "currentReplicas", (json_int_t)have, "updatedReplicas", (json_int_t)have,
			   "availableReplicas", (json_int_t)ready, "currentRevision", revision,
			   "updateRevision", revision);
	if (status && !json_equal(status, json_object_get(set, "status"))) {
		struct k8s_error err = {};

		if (k8s_store_mutate(store, sets, ns, meta(set, "name"), K8S_WRITE_STATUS, set_status,
				     status, NULL, &err) >= 0)
			writes++;
		k8s_error_clear(&err);
	}
	json_decref(status);
	return writes;
}

int k8s_statefulsets_reconcile(struct k8s_store *store)
{
	json_t *sets = k8s_controller_snapshot(store, "apps", "statefulsets");
	const json_t *set;
	size_t i;
	int writes = 0;

	if (!sets)
		return -ENOMEM;
	json_array_foreach(sets, i, set)
		if (!meta(set, "deletionTimestamp") && meta(set, "uid"))
			writes += reconcile_set(store, set);
	json_decref(sets);
	return writes;
}
