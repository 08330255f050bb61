/*
 * The disruption controller-lite for kanna-sim: writes each
 * PodDisruptionBudget's status as upstream's disruption controller does —
 * expectedPods (pods the selector picks), currentHealthy (Ready, not
 * terminating), desiredHealthy (minAvailable, or expected less
 * maxUnavailable; percentages rounded up), disruptionsAllowed and the
 * DisruptionAllowed condition — so that `kubectl get pdb` and clients that
 * read status see what an eviction would be allowed. The eviction
 * subresource (k8s-subresource.c) still decides from the pods themselves.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"

struct pdb_count {
	struct k8s_selector *sel;
	json_int_t expected, healthy;
};

static void count_pod(struct k8s_object *o, void *userdata)
{
	struct pdb_count *c = userdata;

	if (!k8s_label_selector_matches(c->sel, o->labels))
		return;
	c->expected++;
	c->healthy += o->pod_ready && !o->deleting;
}

/* An int or a percentage of total, rounded up as upstream does. */
static json_int_t int_or_percent(const json_t *v, json_int_t total)
{
	const char *s = json_string_value(v);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (s && strchr(s, '%'))
		return (json_int_t)ceil(strtod(s, NULL) * (double)total / 100.0);
	return s ? strtoll(s, NULL, 10) : 0;
}

static json_t *set_status(const json_t *cur, void *userdata, struct k8s_error *err)
{
	json_t *out = json_deep_copy(cur);

	json_object_set(out, "status", userdata);
	return out;
}

/* The condition, keeping its lastTransitionTime while its status stays. */
static json_t *allowed_condition(const json_t *pdb, bool allowed, json_int_t gen)
{
	const json_t *old = json_array_get(json_object_get(json_object_get(pdb, "status"),
							   "conditions"), 0);
	const char *status = allowed ? "True" : "False";
	const char *since = json_string_value(json_object_get(old, "lastTransitionTime"));
	char now[32];

	k8s_timestamp(now, 0);
	if (!since || !streq_ptr(json_string_value(json_object_get(old, "status")), status))
		since = now;
	return json_pack("{s:s, s:s, s:I, s:s, s:s, s:s}", "type", "DisruptionAllowed", "status",
			 status, "observedGeneration", gen, "lastTransitionTime", since, "reason",
			 allowed ? "SufficientPods" : "InsufficientPods", "message", "");
}

static int reconcile_pdb(struct k8s_store *store, const json_t *pdb)
{
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	const struct k8s_resource *pdbs = k8s_registry_find(store->reg, "policy", "v1",
							    "poddisruptionbudgets");
	const json_t *spec = json_object_get(pdb, "spec"), *meta = json_object_get(pdb, "metadata");
	const json_t *min = json_object_get(spec, "minAvailable");
	const json_t *max = json_object_get(spec, "maxUnavailable");
	json_int_t gen = json_integer_value(json_object_get(meta, "generation")), desired = 0, allowed;
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	struct pdb_count c = {};
	struct k8s_error err = {};
	json_t *status;
	char msg[128];
	int writes = 0;

	if (k8s_label_selector_from_json(json_object_get(spec, "selector"), &c.sel, msg,
					 sizeof(msg)) < 0)
		return 0;
	k8s_store_foreach(store, pods, ns, count_pod, &c);
	k8s_selector_free(c.sel);
	if (min)
		desired = int_or_percent(min, c.expected);
	else if (max)
		desired = MAX(c.expected - int_or_percent(max, c.expected), 0);
	allowed = MAX(c.healthy - desired, 0);
	status = json_pack("{s:I, s:I, s:I, s:I, s:I, s:[o]}", "observedGeneration", gen,
			   "disruptionsAllowed", allowed, "currentHealthy", c.healthy,
			   "desiredHealthy", desired, "expectedPods", c.expected, "conditions",
			   allowed_condition(pdb, allowed > 0, gen));
	if (status && !json_equal(status, json_object_get(pdb, "status")) &&
	    k8s_store_mutate(store, pdbs, ns, json_string_value(json_object_get(meta, "name")),
			     K8S_WRITE_STATUS, set_status, status, NULL, &err) >= 0)
		writes++;
	k8s_error_clear(&err);
	json_decref(status);
	return writes;
}

int k8s_disruption_reconcile(struct k8s_store *store)
{
	json_t *all = k8s_controller_snapshot(store, "policy", "poddisruptionbudgets");
	const json_t *pdb;
	size_t i;
	int writes = 0;

	if (!all)
		return -ENOMEM;
	json_array_foreach(all, i, pdb)
		if (!json_object_get(json_object_get(pdb, "metadata"), "deletionTimestamp"))
			writes += reconcile_pdb(store, pdb);
	json_decref(all);
	return writes;
}
