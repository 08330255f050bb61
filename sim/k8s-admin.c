/*
 * GET /_sim/status on the Kubernetes API port (same token): what the
 * cluster looks like now — every Node (ready, cordoned, instance type,
 * zone, capacity type, NodePool, providerID) and every pod (namespace,
 * name, node, phase) — the Kubernetes side's timeline (time, event,
 * detail: the shape of the AWS port's) and the faults injected so far by
 * kind, for the demo's report and end-to-end assertions. Instances, their cost and the AWS timeline are on
 * the AWS port's /_sim/status; "requests", what each User-Agent asked for
 * as RBAC sees it (k8s-requests.c). Read-only; called by k8s_faults_apply()'s
 * admin routing.
 */
#include <string.h>

#include "common/clock.h"
#include "sim/k8s-api.h"

#define LABEL(o, k) json_string_value(json_object_get((o)->labels, (k)))

struct collect {
	json_t *list;
	bool nodes;
};

static void collect_one(struct k8s_object *o, void *userdata)
{
	struct collect *c = userdata;
	json_t *e;

	if (c->nodes) {
		json_t *obj = json_loadb(o->json, o->len, 0, NULL);
		const json_t *conds = json_object_get(json_object_get(obj, "status"), "conditions"), *cond;
		bool ready = false;
		size_t i;

		json_array_foreach(conds, i, cond)
			if (!strcmp(json_string_value(json_object_get(cond, "type")) ?: "", "Ready"))
				ready = !strcmp(json_string_value(json_object_get(cond, "status")) ?: "", "True");
		e = json_pack("{s:s, s:b, s:b, s:s?, s:s?, s:s?, s:s?, s:s?}", "name", o->name,
			      "ready", ready, "unschedulable",
			      json_is_true(json_object_get(json_object_get(obj, "spec"), "unschedulable")),
			      "instanceType", LABEL(o, "node.kubernetes.io/instance-type"),
			      "zone", LABEL(o, "topology.kubernetes.io/zone"),
			      "capacityType", LABEL(o, "karpenter.sh/capacity-type"),
			      "nodePool", LABEL(o, "karpenter.sh/nodepool"),
			      "providerID", json_string_value(json_object_get(json_object_get(obj, "spec"),
									      "providerID")));
		json_decref(obj);
	} else {
		e = json_pack("{s:s, s:s, s:s?, s:s?}", "namespace", o->ns, "name", o->name, "node",
			      o->node_name, "phase", o->phase);
	}
	if (e)
		json_array_append_new(c->list, e);
}

int k8s_admin_status(struct k8s_api *api, const struct k8s_request *req, struct k8s_response *resp)
{
	struct k8s_resource *nodes = k8s_registry_find(api->reg, "", "v1", "nodes");
	struct k8s_resource *pods = k8s_registry_find(api->reg, "", "v1", "pods");
	struct collect cn = { json_array(), true }, cp = { json_array(), false };
	struct k8s_error err = {};
	uint64_t dropped = 0;
	json_t *out, *timeline;
	char now[32];

	if (!streq(req->method, "GET")) {
		json_decref(cn.list);
		json_decref(cp.list);
		k8s_error_set(&err, 405, "MethodNotAllowed", "GET /_sim/status");
		return k8s_reply_error(resp, &err);
	}
	if (nodes)
		k8s_store_foreach(api->store, nodes, NULL, collect_one, &cn);
	if (pods)
		k8s_store_foreach(api->store, pods, NULL, collect_one, &cp);
	timeline = k8s_timeline_json(api->store, &dropped);
	k8s_format_time_ms((uint64_t)clock_realtime_ms(), now);
	out = json_pack("{s:s, s:o, s:o, s:o?, s:I, s:o?, s:o?}", "time", now, "nodes", cn.list,
			"pods", cp.list, "timeline", timeline, "timelineDropped", (json_int_t)dropped,
			"faultsInjected", k8s_faults_injected_json(api), "requests",
			k8s_requests_json(api));
	return k8s_reply_json(resp, 200, out);
}
