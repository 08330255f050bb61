/*
 * kubelet-lite for kanna-sim (see kubelet.h). Instances are read through
 * sim_aws_foreach_instance() into plain copies first, then the store is
 * written with the store API only, so the two locks never nest. Node names
 * are the instances' private DNS names, as on EKS. Writes the Events the
 * kubelet and node controller write (Starting, RegisteredNode, NodeReady,
 * NodeNotReady; Pulled, Created, Started for each container).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/util.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"
#include "sim/kubelet.h"

/* The kubelet version Nodes report. */
#define SIM_KUBELET_VERSION "v1.32.0-kanna-sim"

struct sim_kubelet {
	struct k8s_store *store;
	struct sim_aws *aws;
	unsigned boot_ms;
	uint32_t next_pod_ip; /* pod IPs are handed out from 10.1.0.0/16 */
};

int sim_kubelet_new(struct k8s_store *store, struct sim_aws *aws, unsigned boot_ms,
		    struct sim_kubelet **ret)
{
	struct sim_kubelet *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->store = store;
	k->aws = aws;
	k->boot_ms = boot_ms;
	*ret = k;
	return 0;
}

struct sim_kubelet *sim_kubelet_free(struct sim_kubelet *k)
{
	free(k);
	return NULL;
}

static const char *tag(const struct sim_aws_instance_info *i, const char *key)
{
	for (size_t t = 0; t < i->n_tags; t++)
		if (streq(i->tags[t].key, key))
			return i->tags[t].value;
	return NULL;
}

/* One instance as JSON: what the Node needs, copied out of the AWS lock. */
static int copy_instance(const struct sim_aws_instance_info *i, void *userdata)
{
	char provider[256];
	json_t *labels = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
				   "node.kubernetes.io/instance-type", i->instance_type,
				   "topology.kubernetes.io/zone", i->zone,
				   "topology.kubernetes.io/region", i->region,
				   "kubernetes.io/arch", i->arch, "kubernetes.io/os", i->os,
				   "kubernetes.io/hostname", i->private_dns_name,
				   "karpenter.sh/capacity-type", i->capacity_type);
	const char *pool = tag(i, "karpenter.sh/nodepool");
	json_t *taints;

	if (!labels)
		return -ENOMEM;
	if (pool)
		json_object_set_new(labels, "karpenter.sh/nodepool", json_string(pool));
	/* the Windows kubelet labels its Node with its OS build itself */
	if (i->windows_build)
		json_object_set_new(labels, "node.kubernetes.io/windows-build", json_string(i->windows_build));
	/* A Karpenter (or kanna) node's user data registers the kubelet with
	 * karpenter.sh/unregistered:NoExecute, until the controller has
	 * labelled the Node (Karpenter's AMI families add it for every
	 * NodeClaim). The sim reads the instance's tags, not its user data,
	 * for the Node's labels and taints alike. */
	taints = json_array();
	if (!taints || (pool && json_array_append_new(taints, json_pack("{s:s, s:s}", "key",
			"karpenter.sh/unregistered", "effect", "NoExecute")) < 0)) {
		json_decref(labels);
		json_decref(taints);
		return -ENOMEM;
	}
	snprintf(provider, sizeof(provider), "aws:///%s/%s", i->zone, i->id);
	return json_array_append_new(userdata, json_pack(
		"{s:s, s:s, s:s, s:s, s:I, s:b, s:o, s:o, s:I, s:I, s:I, s:I, s:I}", "providerID", provider,
		"state", i->state, "name", i->private_dns_name, "ip", i->private_ip,
		"launch_ms", (json_int_t)i->launch_time_ms, "never_boots", i->never_boots,
		"labels", labels, "taints", taints,
		"cpu", (json_int_t)i->vcpu,
		"memory_mib", (json_int_t)i->memory_mib, "alloc_cpu_m", (json_int_t)i->alloc_cpu_millicores,
		"alloc_memory_mib", (json_int_t)i->alloc_memory_mib, "pods", (json_int_t)i->max_pods)) < 0 ?
		       -ENOMEM : 0;
}

static json_t *node_status(const json_t *inst, bool ready)
{
	char cpu[32], mem[32], acpu[32], amem[32], pods[32], now[32];

	snprintf(cpu, sizeof(cpu), "%lld", (long long)json_integer_value(json_object_get(inst, "cpu")));
	snprintf(mem, sizeof(mem), "%lldMi", (long long)json_integer_value(json_object_get(inst, "memory_mib")));
	snprintf(acpu, sizeof(acpu), "%lldm", (long long)json_integer_value(json_object_get(inst, "alloc_cpu_m")));
	snprintf(amem, sizeof(amem), "%lldMi",
		 (long long)json_integer_value(json_object_get(inst, "alloc_memory_mib")));
	snprintf(pods, sizeof(pods), "%lld", (long long)json_integer_value(json_object_get(inst, "pods")));
	k8s_timestamp(now, 0);
	return json_pack("{s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s, s:s, s:s, s:s}],"
			 " s:[{s:s, s:O}, {s:s, s:O}], s:{s:s, s:s, s:s, s:s}}",
			 "capacity", "cpu", cpu, "memory", mem, "pods", pods,
			 "allocatable", "cpu", acpu, "memory", amem, "pods", pods,
			 "conditions", "type", "Ready", "status", ready ? "True" : "False",
			 "reason", ready ? "KubeletReady" : "KubeletNotReady", "message",
			 ready ? "kubelet is posting ready status" : "instance is not running",
			 "lastHeartbeatTime", now, "lastTransitionTime", now,
			 "addresses", "type", "InternalIP", "address", json_object_get(inst, "ip"),
			 "type", "Hostname", "address", json_object_get(inst, "name"),
			 "nodeInfo", "kubeletVersion", SIM_KUBELET_VERSION, "operatingSystem",
			 json_string_value(json_object_get(json_object_get(inst, "labels"), "kubernetes.io/os")) ?: "linux",
			 "architecture", json_string_value(json_object_get(json_object_get(inst, "labels"),
									   "kubernetes.io/arch")) ?: "amd64",
			 "containerRuntimeVersion", "containerd://1.7.0");
}

static bool condition_true(const json_t *obj, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), type))
			return streq_ptr(json_string_value(json_object_get(c, "status")), "True");
	return false;
}

struct node_update {
	const json_t *inst;
	bool ready;
};

/* Keeps the Node's labels, taints and other conditions; sets Ready. */
static json_t *adopt(const json_t *cur, void *userdata, struct k8s_error *err)
{
	const struct node_update *u = userdata;
	json_t *out = json_deep_copy(cur), *status = node_status(u->inst, u->ready), *conds;
	const json_t *c;
	size_t i;

	conds = json_object_get(status, "conditions");
	json_array_foreach(json_object_get(json_object_get(cur, "status"), "conditions"), i, c)
		if (!streq_ptr(json_string_value(json_object_get(c, "type")), "Ready"))
			json_array_append(conds, (json_t *)c);
	json_object_set_new(out, "status", status);
	return out;
}

/*
 * A Node's Events: the kubelet's refer to the node by name (its uid is the
 * name, as upstream's nodeRef), the node controller's by the object's uid;
 * kubectl describe node looks for both.
 */
static void record_node_event(struct sim_kubelet *k, const json_t *node, bool from_kubelet,
			      const char *reason, const char *message)
{
	struct k8s_event_source src = { .component = "node-controller" };
	struct k8s_event_ref ref;

	k8s_event_ref_of(node, &ref);
	if (from_kubelet) {
		src = (struct k8s_event_source){ .component = "kubelet", .host = ref.name };
		ref.uid = ref.name;
		ref.api_version = NULL;
	}
	(void)k8s_event_record(k->store, &ref, &src, K8S_EVENT_NORMAL, reason, "%s", message);
}

static void record_node_readiness(struct sim_kubelet *k, const json_t *node, bool ready)
{
	const char *name = json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
	char msg[400];

	snprintf(msg, sizeof(msg), "Node %s status is now: %s", name ?: "",
		 ready ? "NodeReady" : "NodeNotReady");
	/* The kubelet says it is ready; the node controller notices it is not. */
	record_node_event(k, node, ready, ready ? "NodeReady" : "NodeNotReady", msg);
}

static int register_node(struct sim_kubelet *k, const struct k8s_resource *nodes, const json_t *inst)
{
	const char *name = json_string_value(json_object_get(inst, "name"));
	struct k8s_error err = {};
	json_t *node = json_pack("{s:s, s:s, s:{s:O, s:O}, s:{s:O, s:O}, s:o}", "apiVersion", "v1",
				 "kind", "Node", "metadata", "name", json_object_get(inst, "name"),
				 "labels", json_object_get(inst, "labels"), "spec", "providerID",
				 json_object_get(inst, "providerID"), "taints", json_object_get(inst, "taints"),
				 "status", node_status(inst, true));
	json_t *created = NULL;
	int r = node ? k8s_store_create(k->store, nodes, NULL, node, &created, &err) : -ENOMEM;
	char msg[400];

	if (r < 0 && err.code != 409)
		log_warn("Failed to register node %s: %s", name, err.message);
	if (r >= 0 && created) {
		record_node_event(k, created, true, "Starting", "Starting kubelet.");
		snprintf(msg, sizeof(msg), "Node %s event: Registered Node %s in Controller", name, name);
		record_node_event(k, created, false, "RegisteredNode", msg);
		record_node_readiness(k, created, true);
	}
	k8s_error_clear(&err);
	json_decref(node);
	json_decref(created);
	return r >= 0;
}

/* providerID → Node, so that matching is linear in instances + nodes. */
static json_t *nodes_by_provider(const json_t *nodes)
{
	json_t *map = json_object();
	const json_t *n;
	size_t i;

	json_array_foreach(nodes, i, n) {
		const char *p = json_string_value(json_object_get(json_object_get(n, "spec"), "providerID"));

		if (map && p)
			json_object_set(map, p, (json_t *)n);
	}
	return map;
}

static int reconcile_nodes(struct sim_kubelet *k, const json_t *insts, const json_t *nodes,
			   uint64_t now_ms)
{
	const struct k8s_resource *res = k8s_registry_find(k->store->reg, "", "v1", "nodes");
	json_t *by_provider = nodes_by_provider(nodes);
	const json_t *inst;
	int writes = 0;
	size_t i;

	if (!by_provider)
		return 0;
	json_array_foreach(insts, i, inst) {
		const char *state = json_string_value(json_object_get(inst, "state"));
		const json_t *node = json_object_get(by_provider, json_string_value(json_object_get(inst, "providerID")) ?: "");
		bool booted = streq_ptr(state, "running") &&
			      !json_is_true(json_object_get(inst, "never_boots")) &&
			      (uint64_t)json_integer_value(json_object_get(inst, "launch_ms")) + k->boot_ms <= now_ms;
		struct node_update u = { .inst = inst, .ready = booted };
		struct k8s_error err = {};

		if (!node) {
			if (booted)
				writes += register_node(k, res, inst);
			continue;
		}
		if (condition_true(node, "Ready") == booted ||
		    (!booted && streq_ptr(state, "pending")))
			continue;
		if (k8s_store_mutate(k->store, res, NULL, json_string_value(json_object_get(
					     json_object_get(node, "metadata"), "name")),
				     K8S_WRITE_ALL, adopt, &u, NULL, &err) >= 0) {
			record_node_readiness(k, node, booted);
			writes++;
		}
		k8s_error_clear(&err);
	}
	json_decref(by_provider);
	return writes;
}

struct pod_start {
	const char *ip;
	const json_t *node; /* the Node it is bound to */
	bool started;       /* false: someone else moved the pod on first */
	bool rejected;      /* refused at admission: a NoExecute taint it does not tolerate */
};

/* The kubelet admits no pod that does not tolerate a NoExecute taint of
 * its Node (pkg/kubelet/lifecycle/predicate.go): the pod fails, with the
 * predicate's name as its reason (Kubelet.rejectPod). */
static json_t *reject_pod(const json_t *cur, const json_t *taint, struct pod_start *start)
{
	json_t *out = json_deep_copy(cur);
	const char *value = json_string_value(json_object_get(taint, "value"));
	char msg[600];

	start->rejected = true;
	snprintf(msg, sizeof(msg),
		 "Pod was rejected: Predicate TaintToleration failed: node(s) had untolerated taint "
		 "{%s: %s}", json_string_value(json_object_get(taint, "key")) ?: "", value ?: "");
	json_object_set_new(out, "status", json_pack("{s:s, s:s, s:s}", "phase", "Failed", "reason",
						     "TaintToleration", "message", msg));
	return out;
}

static json_t *run_pod(const json_t *cur, void *userdata, struct k8s_error *err)
{
	struct pod_start *start = userdata;
	json_t *out = json_deep_copy(cur), *status, *statuses;
	const json_t *c, *taint;
	char now[32];
	size_t i;

	/* Someone else may have moved it on since the scan. */
	if (!json_object_get(json_object_get(cur, "spec"), "nodeName") ||
	    !streq_ptr(json_string_value(json_object_get(json_object_get(cur, "status"), "phase")),
		       "Pending"))
		return out;
	if ((taint = k8s_pod_untolerated_taint(cur, start->node, true))) {
		json_decref(out);
		return reject_pod(cur, taint, start);
	}
	start->started = true;
	statuses = json_array();
	k8s_timestamp(now, 0);
	json_array_foreach(json_object_get(json_object_get(cur, "spec"), "containers"), i, c)
		json_array_append_new(statuses, json_pack("{s:O?, s:O?, s:b, s:b, s:i, s:{s:{s:s}}}",
			"name", json_object_get(c, "name"), "image", json_object_get(c, "image"),
			"ready", 1, "started", 1, "restartCount", 0, "state", "running", "startedAt", now));
	status = json_pack("{s:s, s:s, s:s, s:o, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s},"
			   " {s:s, s:s, s:s}, {s:s, s:s, s:s}]}",
			   "phase", "Running", "startTime", now, "podIP", start->ip,
			   "containerStatuses", statuses, "conditions",
			   "type", "PodScheduled", "status", "True", "lastTransitionTime", now,
			   "type", "Initialized", "status", "True", "lastTransitionTime", now,
			   "type", "ContainersReady", "status", "True", "lastTransitionTime", now,
			   "type", "Ready", "status", "True", "lastTransitionTime", now);
	json_object_set_new(out, "status", status);
	return out;
}

/* What the kubelet reports as it starts each container (images are "present"). */
static void record_container_events(struct sim_kubelet *k, const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec"), *c;
	struct k8s_event_source src = {
		.component = "kubelet",
		.host = json_string_value(json_object_get(spec, "nodeName")),
	};
	struct k8s_event_ref ref;
	size_t i;

	k8s_event_ref_of(pod, &ref);
	json_array_foreach(json_object_get(spec, "containers"), i, c) {
		const char *name = json_string_value(json_object_get(c, "name")) ?: "";

		(void)k8s_event_record(k->store, &ref, &src, K8S_EVENT_NORMAL, "Pulled",
				       "Container image \"%s\" already present on machine",
				       json_string_value(json_object_get(c, "image")) ?: "");
		(void)k8s_event_record(k->store, &ref, &src, K8S_EVENT_NORMAL, "Created",
				       "Created container: %s", name);
		(void)k8s_event_record(k->store, &ref, &src, K8S_EVENT_NORMAL, "Started",
				       "Started container %s", name);
	}
}

/* The kubelet's Warning on a pod it refused (reason and message as set). */
static void record_rejection(struct sim_kubelet *k, const json_t *pod)
{
	const json_t *status = json_object_get(pod, "status");
	struct k8s_event_source src = {
		.component = "kubelet",
		.host = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")),
	};
	struct k8s_event_ref ref;

	k8s_event_ref_of(pod, &ref);
	(void)k8s_event_record(k->store, &ref, &src, K8S_EVENT_WARNING,
			       json_string_value(json_object_get(status, "reason")) ?: "",
			       "%s", json_string_value(json_object_get(status, "message")) ?: "");
	log_info("kubelet on %s rejected pod %s/%s: %s", src.host ?: "",
		 ref.ns ?: "", ref.name ?: "", json_string_value(json_object_get(status, "message")) ?: "");
}

struct pending_scan {
	const json_t *ready_nodes; /* name → Node; NULL: only count */
	json_t *names;             /* [ns, name] of pods to start */
	size_t n_bound_pending;
};

static void find_startable(struct k8s_object *o, void *userdata)
{
	struct pending_scan *s = userdata;

	if (!o->node_name || o->deleting || !streq_ptr(o->phase, "Pending"))
		return;
	s->n_bound_pending++;
	if (s->ready_nodes && json_object_get(s->ready_nodes, o->node_name))
		json_array_append_new(s->names, json_pack("[s, s, s]", o->ns, o->name, o->node_name));
}

/* Bound pods still Pending: the common case at scale is none. */
static size_t count_bound_pending(struct sim_kubelet *k)
{
	const struct k8s_resource *pods = k8s_registry_find(k->store->reg, "", "v1", "pods");
	struct pending_scan s = {};

	k8s_store_foreach(k->store, pods, NULL, find_startable, &s);
	return s.n_bound_pending;
}

static int start_pods(struct sim_kubelet *k, const json_t *nodes)
{
	const struct k8s_resource *pods = k8s_registry_find(k->store->reg, "", "v1", "pods");
	struct pending_scan s = { .ready_nodes = json_object(), .names = json_array() };
	const json_t *n, *p;
	int writes = 0;
	size_t i;

	json_array_foreach(nodes, i, n)
		if (condition_true(n, "Ready"))
			json_object_set((json_t *)s.ready_nodes, json_string_value(json_object_get(
						json_object_get(n, "metadata"), "name")) ?: "", (json_t *)n);
	k8s_store_foreach(k->store, pods, NULL, find_startable, &s);
	json_array_foreach(s.names, i, p) {
		struct k8s_error err = {};
		struct pod_start start = {};
		json_t *pod = NULL;
		char ip[32];
		const char *ns = json_string_value(json_array_get(p, 0));
		const char *name = json_string_value(json_array_get(p, 1));

		k->next_pod_ip = (k->next_pod_ip + 1) % (250 * 250);
		snprintf(ip, sizeof(ip), "10.1.%u.%u", k->next_pod_ip / 250, k->next_pod_ip % 250 + 2);
		start.ip = ip;
		start.node = json_object_get(s.ready_nodes, json_string_value(json_array_get(p, 2)) ?: "");
		if (start.node &&
		    k8s_store_mutate(k->store, pods, ns, name, K8S_WRITE_ALL, run_pod, &start, &pod,
				     &err) >= 0) {
			if (start.started)
				record_container_events(k, pod);
			if (start.rejected)
				record_rejection(k, pod);
			writes++;
		}
		k8s_error_clear(&err);
		json_decref(pod);
	}
	json_decref((json_t *)s.ready_nodes);
	json_decref(s.names);
	return writes;
}

int sim_kubelet_reconcile(struct sim_kubelet *k, uint64_t now_ms)
{
	json_t *insts = json_array(), *nodes;
	int writes;

	if (!insts)
		return -ENOMEM;
	if (k->aws && sim_aws_foreach_instance(k->aws, copy_instance, insts) < 0) {
		json_decref(insts);
		return -ENOMEM;
	}
	writes = 0;
	if (json_array_size(insts) > 0) {
		nodes = k8s_controller_snapshot(k->store, "", "nodes");
		writes += nodes ? reconcile_nodes(k, insts, nodes, now_ms) : 0;
		json_decref(nodes);
	}
	if (count_bound_pending(k) > 0) {
		nodes = k8s_controller_snapshot(k->store, "", "nodes");
		writes += nodes ? start_pods(k, nodes) : 0;
		json_decref(nodes);
	}
	json_decref(insts);
	return writes;
}

void sim_kubelet_tick(void *userdata)
{
	(void)sim_kubelet_reconcile(userdata, (uint64_t)clock_realtime_ms());
}
