/*
 * Volume topology for kanna-sim's scheduler-lite and a provisioner-lite:
 * a pod whose claims are bound may only go where their PersistentVolumes'
 * nodeAffinity allows; when a pod is bound, each of its unbound claims gets
 * a PersistentVolume in the chosen node's zone (what an EBS CSI driver does
 * for a WaitForFirstConsumer StorageClass; Immediate classes are treated
 * the same way, since no zone is known before a consumer exists).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"

#define GET(o, k) json_object_get((o), (k))

static const struct k8s_resource *claims_res(struct k8s_store *store)
{
	return k8s_registry_find(store->reg, "", "v1", "persistentvolumeclaims");
}

static const struct k8s_resource *volumes_res(struct k8s_store *store)
{
	return k8s_registry_find(store->reg, "", "v1", "persistentvolumes");
}

json_t *k8s_pod_volume_terms(struct k8s_store *store, const json_t *pod, char *why, size_t whylen)
{
	const char *ns = json_string_value(GET(GET(pod, "metadata"), "namespace"));
	json_t *terms = json_array();
	const json_t *vol;
	size_t i;

	json_array_foreach(GET(GET(pod, "spec"), "volumes"), i, vol) {
		const char *claim = json_string_value(GET(GET(vol, "persistentVolumeClaim"), "claimName"));
		struct k8s_error err = {};
		json_t *pvc = NULL, *pv = NULL;
		const char *pv_name;

		if (!claim)
			continue;
		if (k8s_store_get(store, claims_res(store), ns, claim, &pvc, &err) < 0) {
			snprintf(why, whylen, "0/0 nodes are available: persistentvolumeclaim \"%s\" not found.",
				 claim);
			k8s_error_clear(&err);
			json_decref(terms);
			return NULL;
		}
		pv_name = json_string_value(GET(GET(pvc, "spec"), "volumeName"));
		if (pv_name && k8s_store_get(store, volumes_res(store), NULL, pv_name, &pv, &err) >= 0) {
			const json_t *t = GET(GET(GET(GET(pv, "spec"), "nodeAffinity"), "required"),
					      "nodeSelectorTerms");

			if (json_array_size(t) > 0)
				json_array_append(terms, (json_t *)t);
		}
		k8s_error_clear(&err);
		json_decref(pv);
		json_decref(pvc);
	}
	return terms;
}

struct claim_binding {
	const char *pv;
	const char *node;
	const json_t *capacity;
};

static json_t *bind_claim(const json_t *cur, void *userdata, struct k8s_error *err)
{
	const struct claim_binding *b = userdata;
	json_t *out = json_deep_copy(cur), *meta = GET(out, "metadata"), *ann;

	if (json_string_value(GET(GET(cur, "spec"), "volumeName")))
		return out; /* bound meanwhile */
	ann = GET(meta, "annotations");
	if (!json_is_object(ann))
		json_object_set_new(meta, "annotations", ann = json_object());
	json_object_set_new(ann, "pv.kubernetes.io/bind-completed", json_string("yes"));
	json_object_set_new(ann, "volume.kubernetes.io/selected-node", json_string(b->node));
	json_object_set_new(GET(out, "spec"), "volumeName", json_string(b->pv));
	json_object_set_new(out, "status", json_pack("{s:s, s:O?, s:O?}", "phase", "Bound", "capacity",
						     b->capacity, "accessModes",
						     GET(GET(cur, "spec"), "accessModes")));
	return out;
}

static json_t *volume_for(const json_t *pvc, const char *pv_name, const char *zone)
{
	const json_t *meta = GET(pvc, "metadata"), *spec = GET(pvc, "spec");
	json_t *pv = json_pack("{s:s, s:s, s:{s:s}, s:{s:O?, s:O?, s:s, s:O?, s:{s:s, s:O, s:O, s:O},"
			       " s:{s:s, s:s}}, s:{s:s}}",
			       "apiVersion", "v1", "kind", "PersistentVolume", "metadata", "name", pv_name,
			       "spec", "capacity", GET(GET(spec, "resources"), "requests"),
			       "accessModes", GET(spec, "accessModes"),
			       "persistentVolumeReclaimPolicy", "Delete",
			       "storageClassName", GET(spec, "storageClassName"),
			       "claimRef", "kind", "PersistentVolumeClaim", "namespace",
			       GET(meta, "namespace"), "name", GET(meta, "name"), "uid", GET(meta, "uid"),
			       "csi", "driver", "ebs.csi.aws.com", "volumeHandle", pv_name,
			       "status", "phase", "Bound");

	if (pv && zone)
		json_object_set_new(GET(pv, "spec"), "nodeAffinity",
				    json_pack("{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}", "required",
					      "nodeSelectorTerms", "matchExpressions", "key",
					      "topology.kubernetes.io/zone", "operator", "In", "values",
					      zone));
	return pv;
}

static int provision(struct k8s_store *store, const char *ns, const char *claim, const json_t *node)
{
	const char *node_name = json_string_value(GET(GET(node, "metadata"), "name"));
	const char *zone = json_string_value(GET(GET(GET(node, "metadata"), "labels"),
						 "topology.kubernetes.io/zone"));
	struct k8s_error err = {};
	json_t *pvc = NULL, *pv = NULL;
	char pv_name[64];
	int r;

	if (k8s_store_get(store, claims_res(store), ns, claim, &pvc, &err) < 0 ||
	    json_string_value(GET(GET(pvc, "spec"), "volumeName"))) {
		r = 0;
		goto out;
	}
	snprintf(pv_name, sizeof(pv_name), "pvc-%s",
		 json_string_value(GET(GET(pvc, "metadata"), "uid")) ?: "unknown");
	pv = volume_for(pvc, pv_name, zone);
	r = pv ? k8s_store_create(store, volumes_res(store), NULL, pv, NULL, &err) : -ENOMEM;
	if (r >= 0 || err.code == 409) {
		struct claim_binding b = { .pv = pv_name, .node = node_name ?: "",
					   .capacity = GET(GET(GET(pvc, "spec"), "resources"), "requests") };

		k8s_error_clear(&err);
		r = k8s_store_mutate(store, claims_res(store), ns, claim, K8S_WRITE_ALL, bind_claim, &b,
				     NULL, &err);
	}
	if (r < 0)
		log_warn("Failed to provision a volume for %s/%s: %s", ns, claim, err.message);
	r = r >= 0;
out:
	k8s_error_clear(&err);
	json_decref(pvc);
	json_decref(pv);
	return r;
}

int k8s_volumes_bind_for_pod(struct k8s_store *store, const json_t *pod, const json_t *node)
{
	const char *ns = json_string_value(GET(GET(pod, "metadata"), "namespace"));
	const json_t *vol;
	int bound = 0;
	size_t i;

	json_array_foreach(GET(GET(pod, "spec"), "volumes"), i, vol) {
		const char *claim = json_string_value(GET(GET(vol, "persistentVolumeClaim"), "claimName"));

		if (claim)
			bound += provision(store, ns, claim, node);
	}
	return bound;
}
