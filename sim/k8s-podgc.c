/*
 * The pod garbage collector-lite, as kube-controller-manager's podgc
 * (pkg/controller/podgc/gc_controller.go, gcOrphaned): a pod bound to a
 * Node that no longer exists is deleted at once (grace period 0) once the
 * Node has been gone for the quarantine (upstream: 40 s, so that a Node
 * object recreated in the meantime saves its pods). Its Deployment then
 * makes a new pod, which the scheduler places. This is what happens to
 * the pods of a Node deleted after its instance vanished, without a drain.
 * Run by the controller thread (k8s-controllers.c); the Nodes' absence is
 * remembered in podgc->missing between passes.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/util.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"

static const char *pod_node(const json_t *pod)
{
	return json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
}

static const char *meta(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static int delete_pod(struct k8s_store *store, const struct k8s_resource *pod_res, const json_t *pod,
		      const char *node)
{
	struct k8s_delete_options opts;
	struct k8s_error err = {};
	int r;

	k8s_delete_options_init(&opts);
	opts.grace_period_seconds = 0;
	opts.precondition_uid = meta(pod, "uid");
	r = k8s_store_delete(store, pod_res, meta(pod, "namespace"), meta(pod, "name"), &opts, NULL, &err);
	if (r >= 0)
		log_info("pod-garbage-collector: deleted orphaned pod %s/%s (node %s is gone)",
			 meta(pod, "namespace"), meta(pod, "name"), node);
	k8s_error_clear(&err);
	return r;
}

int k8s_podgc_reconcile(struct k8s_store *store, json_t *missing, uint64_t quarantine_ms,
			uint64_t now_ms)
{
	const struct k8s_resource *pod_res = k8s_registry_find(store->reg, "", "v1", "pods");
	json_t *pods = k8s_controller_snapshot(store, "", "pods");
	json_t *nodes = k8s_controller_snapshot(store, "", "nodes");
	json_t *names = json_object(), *still = json_object();
	const json_t *o;
	const char *key;
	json_t *v;
	int writes = 0;
	size_t i;

	if (!pods || !nodes || !names || !still) {
		writes = -ENOMEM;
		goto out;
	}
	json_array_foreach(nodes, i, o)
		json_object_set_new(names, meta(o, "name") ?: "", json_true());
	json_array_foreach(pods, i, o) {
		const char *node = pod_node(o);
		json_t *since;

		if (!node || !*node || json_object_get(names, node))
			continue;
		since = json_object_get(missing, node);
		if (since && now_ms - (uint64_t)json_integer_value(since) >= quarantine_ms &&
		    delete_pod(store, pod_res, o, node) >= 0) {
			writes++;
			continue;
		}
		json_object_set_new(still, node, json_integer(since ? json_integer_value(since)
								     : (json_int_t)now_ms));
	}
	/* Forget Nodes that came back or whose pods are all gone. */
	json_object_clear(missing);
	json_object_foreach(still, key, v)
		json_object_set(missing, key, v);
out:
	json_decref(pods);
	json_decref(nodes);
	json_decref(names);
	json_decref(still);
	return writes;
}
