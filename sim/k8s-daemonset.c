/*
 * DaemonSet controller-lite for kanna-sim: one pod per node that the pod
 * template selects (nodeSelector, required node affinity) and whose taints
 * it tolerates, with the tolerations upstream adds to every daemon pod
 * (not-ready, unreachable, unschedulable, pressure). The pod is created
 * already bound to its node, as the DaemonSet controller did before it
 * delegated to the scheduler; pods on nodes that are gone or no longer
 * selected are deleted.
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

/* The tolerations the DaemonSet controller adds to every pod it creates. */
static const struct {
	const char *key, *effect;
} daemon_tolerations[] = {
	{ "node.kubernetes.io/not-ready", "NoExecute" },
	{ "node.kubernetes.io/unreachable", "NoExecute" },
	{ "node.kubernetes.io/disk-pressure", "NoSchedule" },
	{ "node.kubernetes.io/memory-pressure", "NoSchedule" },
	{ "node.kubernetes.io/pid-pressure", "NoSchedule" },
	{ "node.kubernetes.io/unschedulable", "NoSchedule" },
};

/* The pod the set would run, before it is bound (also its fit test). */
static json_t *daemon_pod(const json_t *set)
{
	const json_t *tmpl = json_object_get(json_object_get(set, "spec"), "template");
	json_t *spec = json_deep_copy(json_object_get(tmpl, "spec"));
	json_t *labels = json_deep_copy(json_object_get(json_object_get(tmpl, "metadata"), "labels"));
	json_t *tols;
	char gen[300];

	if (!spec)
		spec = json_object();
	if (!labels)
		labels = json_object();
	tols = json_object_get(spec, "tolerations");
	if (!json_is_array(tols))
		json_object_set_new(spec, "tolerations", tols = json_array());
	for (size_t i = 0; i < ARRAY_SIZE(daemon_tolerations); i++)
		json_array_append_new(tols, json_pack("{s:s, s:s, s:s}", "key",
						      daemon_tolerations[i].key, "operator", "Exists",
						      "effect", daemon_tolerations[i].effect));
	snprintf(gen, sizeof(gen), "%s-", meta(set, "name"));
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:o}",
			 "apiVersion", "v1", "kind", "Pod", "metadata", "generateName", gen,
			 "namespace", meta(set, "namespace"), "labels", labels, "ownerReferences",
			 "apiVersion", "apps/v1", "kind", "DaemonSet", "name", meta(set, "name"),
			 "uid", meta(set, "uid"), "controller", 1, "blockOwnerDeletion", 1, "spec", spec);
}

struct daemon_pods {
	const char *uid;
	json_t *by_node; /* node name → pod name */
	json_t *orphans; /* pod names without a node */
};

static void find_daemon_pods(struct k8s_object *o, void *userdata)
{
	struct daemon_pods *d = userdata;

	if (o->deleting || o->n_owners == 0 || !streq(o->owners[0], d->uid))
		return;
	if (o->node_name && !json_object_get(d->by_node, o->node_name))
		json_object_set_new(d->by_node, o->node_name, json_string(o->name));
	else
		json_array_append_new(d->orphans, json_string(o->name));
}

static int delete_pod(struct k8s_store *store, const char *ns, const char *name)
{
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	struct k8s_delete_options opts;
	struct k8s_error err = {};
	int r;

	k8s_delete_options_init(&opts);
	r = k8s_store_delete(store, pods, ns, name, &opts, NULL, &err);
	k8s_error_clear(&err);
	return r >= 0;
}

static int reconcile_set(struct k8s_store *store, const json_t *set, const json_t *nodes)
{
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	const char *ns = meta(set, "namespace");
	struct daemon_pods d = { .uid = meta(set, "uid"), .by_node = json_object(),
				 .orphans = json_array() };
	json_t *pod = daemon_pod(set), *name;
	const json_t *node;
	const char *node_name;
	int writes = 0;
	size_t i;

	if (!pod || !d.by_node || !d.orphans)
		goto out;
	k8s_store_foreach(store, pods, ns, find_daemon_pods, &d);
	json_array_foreach(nodes, i, node) {
		bool wanted = !meta(node, "deletionTimestamp") && k8s_pod_selects_node(pod, node) &&
			      k8s_pod_tolerates_node(pod, node);
		const char *have;

		node_name = meta(node, "name");
		have = json_string_value(json_object_get(d.by_node, node_name));
		if (have && !wanted)
			writes += delete_pod(store, ns, have);
		if (!have && wanted) {
			json_t *bound = json_deep_copy(pod);
			struct k8s_error err = {};

			json_object_set_new(json_object_get(bound, "spec"), "nodeName",
					    json_string(node_name));
			if (k8s_store_create(store, pods, ns, bound, NULL, &err) >= 0)
				writes++;
			else
				log_warn("Failed to create daemon pod of %s/%s on %s: %s", ns,
					 meta(set, "name"), node_name, err.message);
			k8s_error_clear(&err);
			json_decref(bound);
		}
		json_object_del(d.by_node, node_name);
	}
	/* Whatever is left runs on nodes that no longer exist. */
	json_object_foreach(d.by_node, node_name, name)
		writes += delete_pod(store, ns, json_string_value(name));
	json_array_foreach(d.orphans, i, name)
		writes += delete_pod(store, ns, json_string_value(name));
out:
	json_decref(pod);
	json_decref(d.by_node);
	json_decref(d.orphans);
	return writes;
}

int k8s_daemonsets_reconcile(struct k8s_store *store)
{
	json_t *sets = k8s_controller_snapshot(store, "apps", "daemonsets");
	json_t *nodes = NULL;
	const json_t *set;
	size_t i;
	int writes = 0;

	if (!sets)
		return -ENOMEM;
	if (json_array_size(sets) > 0)
		nodes = k8s_controller_snapshot(store, "", "nodes");
	json_array_foreach(sets, i, set)
		if (nodes && !meta(set, "deletionTimestamp") && meta(set, "uid"))
			writes += reconcile_set(store, set, nodes);
	json_decref(nodes);
	json_decref(sets);
	return writes;
}
