/*
 * DaemonSet controller-lite for kanna-sim: one pod per node that the pod
 * template selects (nodeSelector, required node affinity) and whose taints
 * it tolerates, with the tolerations upstream adds to every daemon pod
 * (not-ready, unreachable, unschedulable, pressure). The pod is created
 * already bound to its node, as the DaemonSet controller did before it
 * delegated to the scheduler; pods on nodes that are gone or no longer
 * selected are deleted. Status counts nodes as upstream's controller does
 * (desired, current, misscheduled, ready, updated, available); a pod is
 * updated when its controller-revision-hash is the template's.
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
static json_t *daemon_pod(const json_t *set, const char *revision)
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
	json_object_set_new(labels, "controller-revision-hash", json_string(revision));
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
	const char *uid, *revision;
	json_t *by_node; /* node name → {"name", "ready", "updated"} */
	json_t *orphans; /* pod names without a node */
};

static void find_daemon_pods(struct k8s_object *o, void *userdata)
{
	struct daemon_pods *d = userdata;
	const char *rev = json_string_value(json_object_get(o->labels, "controller-revision-hash"));

	if (o->deleting || o->n_owners == 0 || !streq(o->owners[0], d->uid))
		return;
	if (o->node_name && !json_object_get(d->by_node, o->node_name))
		json_object_set_new(d->by_node, o->node_name,
				    json_pack("{s:s, s:b, s:b}", "name", o->name, "ready", o->pod_ready,
					      "updated", streq_ptr(rev, d->revision)));
	else
		json_array_append_new(d->orphans, json_string(o->name));
}

/* DaemonSetStatus: the four counts always, the rest omitted when 0 (omitempty). */
struct daemon_status {
	json_int_t desired, current, misscheduled, ready, updated, available;
};

static json_t *status_json(const json_t *set, const struct daemon_status *st)
{
	json_int_t gen = json_integer_value(json_object_get(json_object_get(set, "metadata"),
							    "generation"));
	json_t *out = json_pack("{s:I, s:I, s:I, s:I}", "currentNumberScheduled", st->current,
				"numberMisscheduled", st->misscheduled, "desiredNumberScheduled",
				st->desired, "numberReady", st->ready);

	if (out && gen > 0)
		json_object_set_new(out, "observedGeneration", json_integer(gen));
	if (out && st->updated > 0)
		json_object_set_new(out, "updatedNumberScheduled", json_integer(st->updated));
	if (out && st->available > 0)
		json_object_set_new(out, "numberAvailable", json_integer(st->available));
	if (out && st->desired > st->available)
		json_object_set_new(out, "numberUnavailable", json_integer(st->desired - st->available));
	return out;
}

static json_t *set_status(const json_t *cur, void *userdata, struct k8s_error *err)
{
	json_t *out = json_deep_copy(cur);

	json_object_set(out, "status", userdata);
	return out;
}

static int write_status(struct k8s_store *store, const json_t *set, const struct daemon_status *st)
{
	const struct k8s_resource *sets = k8s_registry_find(store->reg, "apps", "v1", "daemonsets");
	json_t *status = status_json(set, st);
	struct k8s_error err = {};
	int writes = 0;

	if (status && !json_equal(status, json_object_get(set, "status")) &&
	    k8s_store_mutate(store, sets, meta(set, "namespace"), meta(set, "name"), K8S_WRITE_STATUS,
			     set_status, status, NULL, &err) >= 0)
		writes++;
	k8s_error_clear(&err);
	json_decref(status);
	return writes;
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
	char revision[16];
	struct daemon_pods d = { .uid = meta(set, "uid"), .revision = revision,
				 .by_node = json_object(), .orphans = json_array() };
	struct daemon_status st = {};
	json_t *pod, *name;
	const json_t *node, *have;
	const char *node_name;
	int writes = 0;
	size_t i;

	snprintf(revision, sizeof(revision), "%08x",
		 k8s_template_hash(json_object_get(json_object_get(set, "spec"), "template")));
	pod = daemon_pod(set, revision);
	if (!pod || !d.by_node || !d.orphans)
		goto out;
	k8s_store_foreach(store, pods, ns, find_daemon_pods, &d);
	json_array_foreach(nodes, i, node) {
		bool wanted = !meta(node, "deletionTimestamp") && k8s_pod_selects_node(pod, node) &&
			      k8s_pod_tolerates_node(pod, node);

		node_name = meta(node, "name");
		have = json_object_get(d.by_node, node_name);
		st.desired += wanted;
		if (have && wanted) {
			bool ready = json_is_true(json_object_get(have, "ready"));

			st.current++;
			st.ready += ready;
			st.available += ready; /* minReadySeconds is not modelled */
			st.updated += json_is_true(json_object_get(have, "updated"));
		}
		if (have && !wanted) {
			int deleted = delete_pod(store, ns,
						 json_string_value(json_object_get(have, "name")));

			writes += deleted;
			st.misscheduled += !deleted;
		}
		if (!have && wanted) {
			json_t *bound = json_deep_copy(pod);
			struct k8s_error err = {};

			json_object_set_new(json_object_get(bound, "spec"), "nodeName",
					    json_string(node_name));
			if (k8s_store_create(store, pods, ns, bound, NULL, &err) >= 0) {
				writes++;
				st.current++;
				st.updated++;
			} else
				log_warn("Failed to create daemon pod of %s/%s on %s: %s", ns,
					 meta(set, "name"), node_name, err.message);
			k8s_error_clear(&err);
			json_decref(bound);
		}
		json_object_del(d.by_node, node_name);
	}
	/* Whatever is left runs on nodes that no longer exist. */
	json_object_foreach(d.by_node, node_name, name)
		writes += delete_pod(store, ns, json_string_value(json_object_get(name, "name")));
	json_array_foreach(d.orphans, i, name)
		writes += delete_pod(store, ns, json_string_value(name));
	writes += write_status(store, set, &st);
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
