/*
 * Unit tests for launcher/objects.c and launcher/fleet.c: the NodeClaim,
 * Node and Binding JSON, providerIDs, label precedence, the CreateFleet
 * query (capacity type, overrides per zone and architecture, tags, token)
 * and the DescribeInstances reader.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"
#include "launcher/fleet.h"
#include "common/quantity.h"
#include "launcher/objects.h"
#include "model/catalog.h"
#include "model/kubelet.h"

static struct proto_offering offs_m5[] = {
	{ .zone = "us-west-2a", .capacity_type = PROTO_CAPACITY_SPOT, .price = 0.04, .available = true },
	{ .zone = "us-west-2b", .capacity_type = PROTO_CAPACITY_ON_DEMAND, .price = 0.096, .available = true },
	{ .zone = "us-west-2c", .capacity_type = PROTO_CAPACITY_SPOT, .price = 0.05, .available = true },
};
static struct proto_offering offs_m6g[] = {
	{ .zone = "us-west-2a", .capacity_type = PROTO_CAPACITY_ON_DEMAND, .price = 0.077, .available = true },
};
static struct proto_candidate cands[] = {
	{ .name = "m5.large", .offerings = offs_m5, .n_offerings = 3 },
	{ .name = "m6g.large", .offerings = offs_m6g, .n_offerings = 1 },
};
static char *ct_values[] = { "spot", "on-demand" };
static char *od_only[] = { "on-demand" };
static struct proto_requirement reqs[] = {
	{ .key = "karpenter.sh/capacity-type", .op = PROTO_OP_IN, .values = ct_values, .n_values = 2 },
	{ .key = "intent", .op = PROTO_OP_IN, .values = (char *[]){ "apps" }, .n_values = 1 },
	{ .key = "node.kubernetes.io/instance-type", .op = PROTO_OP_IN,
	  .values = (char *[]){ "m5.large", "m6g.large", "c5.large" }, .n_values = 3 },
};
static struct proto_resource requests[] = { { "cpu", 1500 }, { "memory", 1610612736 }, { "pods", 5 } };
static char *pods[] = { "default/inflate-1", "default/inflate-2" };

static struct proto_planned_nodeclaim planned(void)
{
	return (struct proto_planned_nodeclaim){
		.id = "default-abcde", .nodepool = "default", .nodeclass = "default",
		.requirements = reqs, .n_requirements = 3, .instance_types = cands,
		.n_instance_types = 2, .requests = requests, .n_requests = 3, .pods = pods, .n_pods = 2,
	};
}

static struct proto_kv pool_labels[] = { { "intent", "apps" } };
static struct proto_taint pool_taints[] = { { .key = "dedicated", .value = "apps", .effect = PROTO_EFFECT_NO_SCHEDULE } };
static struct proto_taint startup[] = { { .key = "node.cilium.io/agent-not-ready", .effect = PROTO_EFFECT_NO_EXECUTE } };

static struct proto_nodepool pool(void)
{
	return (struct proto_nodepool){
		.name = "default", .uid = "11111111-2222-3333-4444-555555555555",
		.labels = pool_labels, .n_labels = 1, .taints = pool_taints, .n_taints = 1,
		.startup_taints = startup, .n_startup_taints = 1,
		.nodeclass_ref = { .group = "karpenter.k8s.aws", .kind = "EC2NodeClass", .name = "default" },
		.expire_after_s = 720 * 3600, .nodepool_hash = "123",
	};
}

static const json_t *find_requirement(const json_t *claim, const char *key)
{
	const json_t *r;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(claim, "spec"), "requirements"), i, r)
		if (!strcmp(json_string_value(json_object_get(r, "key")), key))
			return r;
	return NULL;
}

Test(launcher_objects, nodeclaim_records_candidates_pods_owner_and_finalizer)
{
	struct proto_planned_nodeclaim p = planned();
	struct proto_nodepool np = pool();
	json_t *o = nodeclaim_json(&p, "plan-0-1-ab", &np, NULL);
	const json_t *meta = json_object_get(o, "metadata"), *spec = json_object_get(o, "spec");
	const json_t *it;

	cr_assert_not_null(o);
	cr_assert_str_eq(json_string_value(json_object_get(o, "apiVersion")), "karpenter.sh/v1");
	cr_assert_str_eq(json_string_value(json_object_get(meta, "name")), "default-abcde");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(meta, "labels"),
							   "karpenter.sh/nodepool")), "default");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(meta, "annotations"),
							   KANNA_PLANNED_PODS_ANNOTATION)),
			 "[\"default/inflate-1\",\"default/inflate-2\"]");
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(meta, "finalizers"), 0)),
			 KARPENTER_TERMINATION_FINALIZER);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(
				 json_object_get(meta, "ownerReferences"), 0), "uid")), np.uid);
	/* The instance-type requirement is the candidate list, not the plan's wider one. */
	it = find_requirement(o, "node.kubernetes.io/instance-type");
	cr_assert_not_null(it);
	cr_assert_eq(json_array_size(json_object_get(it, "values")), 2);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(it, "values"), 1)), "m6g.large");
	cr_assert_str_eq(json_string_value(json_object_get(find_requirement(o, "intent"), "operator")), "In");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(spec,
				 "resources"), "requests"), "cpu")), "1500m");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(spec,
				 "resources"), "requests"), "memory")), "1536Mi");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(spec, "nodeClassRef"), "name")),
			 "default");
	cr_assert_str_eq(json_string_value(json_object_get(spec, "expireAfter")), "2592000s");
	cr_assert_eq(json_array_size(json_object_get(spec, "startupTaints")), 1);
	json_decref(o);
}

/* A v1beta1 NodePool's nodeClassRef.apiVersion: the NodeClaim's group is
 * its group part (the v1 CRD's pattern ^[^/]*$), as upstream converts it. */
Test(launcher_objects, nodeclaim_group_is_the_group_of_a_v1beta1_apiversion)
{
	struct proto_planned_nodeclaim p = planned();
	struct proto_nodepool np = pool();
	json_t *o;

	np.nodeclass_ref.group = "karpenter.k8s.aws/v1beta1";
	o = nodeclaim_json(&p, NULL, &np, NULL);
	cr_assert_not_null(o);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(o, "spec"), "nodeClassRef"), "group")),
			 "karpenter.k8s.aws");
	json_decref(o);
	np.nodeclass_ref.group = NULL;
	o = nodeclaim_json(&p, NULL, &np, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(o, "spec"), "nodeClassRef"), "group")),
			 "karpenter.k8s.aws");
	json_decref(o);
}

Test(launcher_objects, nodeclaim_carries_the_drift_hashes_with_their_versions)
{
	struct proto_planned_nodeclaim p = planned();
	struct proto_nodepool np = pool();
	struct proto_nodeclass nc = { .name = "default", .uid = "u", .nodeclass_hash = "456",
				      .nodeclass_hash_version = "kanna-v1" };
	json_t *o, *ann;

	np.nodepool_hash_version = "kanna-v1";
	o = nodeclaim_json(&p, NULL, &np, &nc);
	ann = json_object_get(json_object_get(o, "metadata"), "annotations");
	cr_assert_str_eq(json_string_value(json_object_get(ann, KARPENTER_NODEPOOL_HASH_ANNOTATION)), "123");
	cr_assert_str_eq(json_string_value(json_object_get(ann, KARPENTER_NODEPOOL_HASH_VERSION_ANNOTATION)),
			 "kanna-v1");
	cr_assert_str_eq(json_string_value(json_object_get(ann, KARPENTER_NODECLASS_HASH_ANNOTATION)), "456");
	cr_assert_str_eq(json_string_value(json_object_get(ann, KARPENTER_NODECLASS_HASH_VERSION_ANNOTATION)),
			 "kanna-v1");
	json_decref(o);
}

Test(launcher_objects, provider_id_round_trips_and_rejects_garbage)
{
	char buf[128], zone[32], id[32];

	cr_assert_eq(provider_id_format("us-west-2a", "i-0123", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "aws:///us-west-2a/i-0123");
	cr_assert_eq(provider_id_parse(buf, zone, sizeof(zone), id, sizeof(id)), 0);
	cr_assert_str_eq(zone, "us-west-2a");
	cr_assert_str_eq(id, "i-0123");
	cr_assert_eq(provider_id_parse("kind://x/y", zone, sizeof(zone), id, sizeof(id)), -EINVAL);
	cr_assert_eq(provider_id_parse("aws:///us-west-2a/", zone, sizeof(zone), id, sizeof(id)), -EINVAL);
	cr_assert_eq(provider_id_parse("aws:////i-1", zone, sizeof(zone), id, sizeof(id)), -EINVAL);
	cr_assert_eq(provider_id_format("", "i-1", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(provider_id_format("us-west-2a", "i-1", buf, 8), -ENOBUFS);
}

static struct proto_kv type_labels[] = {
	{ "kubernetes.io/arch", "arm64" }, { "kubernetes.io/os", "linux" },
	{ "karpenter.k8s.aws/instance-family", "m6g" }, { "intent", "from-catalog" },
};
static struct proto_resource type_cap[] = { { "cpu", 2000 }, { "memory", 8589934592 }, { "pods", 29 } };

Test(launcher_objects, node_labels_and_taints)
{
	struct proto_instance_type t = { .name = "m6g.large", .labels = type_labels, .n_labels = 4,
					 .capacity = type_cap, .n_capacity = 3, .allocatable = type_cap,
					 .n_allocatable = 3 };
	struct launched_instance li = { "i-1", "m6g.large", "us-west-2a", "on-demand", "ami-1",
					"ip-10-0-0-1.us-west-2.compute.internal", &t, NULL, NULL };
	struct proto_nodepool np = pool();
	struct proto_nodeclaim claim = { .name = "default-abcde", .uid = "u-1", .taints = pool_taints,
					 .n_taints = 1, .startup_taints = startup, .n_startup_taints = 1 };
	node_label labels[64];
	size_t n;
	json_t *node;
	const json_t *l;

	cr_assert_eq(node_labels_collect(&li, &np, reqs, 3, "us-west-2", labels, 64, &n), 0);
	node = node_json(&li, &claim, &np, labels, n);
	cr_assert_not_null(node);
	l = json_object_get(json_object_get(node, "metadata"), "labels");
	cr_assert_str_eq(json_string_value(json_object_get(l, "kubernetes.io/arch")), "arm64");
	cr_assert_str_eq(json_string_value(json_object_get(l, "node.kubernetes.io/instance-type")), "m6g.large");
	cr_assert_str_eq(json_string_value(json_object_get(l, "topology.kubernetes.io/region")), "us-west-2");
	cr_assert_str_eq(json_string_value(json_object_get(l, "karpenter.sh/capacity-type")), "on-demand");
	cr_assert_str_eq(json_string_value(json_object_get(l, "kubernetes.io/hostname")), li.node_name);
	cr_assert_str_eq(json_string_value(json_object_get(l, "karpenter.k8s.aws/instance-family")), "m6g");
	/* The NodePool's label beats the catalog's. */
	cr_assert_str_eq(json_string_value(json_object_get(l, "intent")), "apps");
	cr_assert_null(json_object_get(l, "karpenter.sh/provisioner-name"));
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(node, "spec"), "providerID")),
			 "aws:///us-west-2a/i-1");
	/* The NodeClaim's taint, its startup taint, and the hold until the
	 * planned pods are bound. */
	cr_assert_eq(json_array_size(json_object_get(json_object_get(node, "spec"), "taints")), 3);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(
				 node, "spec"), "taints"), 2), "key")), "karpenter.sh/unregistered");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(
				 node, "spec"), "taints"), 2), "effect")), "NoSchedule");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(node, "status"),
				 "allocatable"), "memory")), "8Gi");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(
				 json_object_get(node, "metadata"), "ownerReferences"), 0), "kind")), "NodeClaim");
	json_decref(node);
	np.source_api = PROTO_API_V1ALPHA5;
	cr_assert_eq(node_labels_collect(&li, &np, reqs, 3, "us-west-2", labels, 64, &n), 0);
	cr_assert_eq(node_labels_collect(&li, &np, reqs, 3, "us-west-2", labels, 3, &n), -E2BIG);
}

/* The Node registers with its NodeClaim's taints, not its NodePool's
 * (Karpenter's lifecycle/registration.go): a claim written before the pool
 * changed, or by Karpenter, keeps its own. */
Test(launcher_objects, the_node_gets_the_nodeclaims_taints)
{
	struct proto_taint own[] = { { .key = "gpu", .value = "yes", .effect = PROTO_EFFECT_NO_EXECUTE } };
	struct proto_instance_type t = { .name = "m6g.large", .labels = type_labels, .n_labels = 4,
					 .capacity = type_cap, .n_capacity = 3, .allocatable = type_cap,
					 .n_allocatable = 3 };
	struct launched_instance li = { "i-1", "m6g.large", "us-west-2a", "on-demand", "ami-1",
					"ip-10-0-0-1.us-west-2.compute.internal", &t, NULL, NULL };
	struct proto_nodepool np = pool();
	struct proto_nodeclaim claim = { .name = "default-abcde", .uid = "u-1", .taints = own, .n_taints = 1 };
	const json_t *taints;
	json_t *node;

	node = node_json(&li, &claim, &np, NULL, 0);
	cr_assert_not_null(node);
	taints = json_object_get(json_object_get(node, "spec"), "taints");
	cr_assert_eq(json_array_size(taints), 2, "the claim's taint and the hold only");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(taints, 0), "key")), "gpu");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(taints, 0), "effect")), "NoExecute");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(taints, 1), "key")),
			 "karpenter.sh/unregistered");
	json_decref(node);
}

/* spec.template.metadata.annotations reach the NodeClaim and its Node;
 * Karpenter's own annotations win over a template's of the same key. */
Test(launcher_objects, the_template_annotations_reach_the_nodeclaim_and_the_node)
{
	struct proto_kv ann[] = { { "team.example.com/owner", "payments" },
				  { KARPENTER_NODEPOOL_HASH_ANNOTATION, "forged" } };
	struct proto_instance_type t = { .name = "m6g.large", .labels = type_labels, .n_labels = 4,
					 .capacity = type_cap, .n_capacity = 3, .allocatable = type_cap,
					 .n_allocatable = 3 };
	struct launched_instance li = { "i-1", "m6g.large", "us-west-2a", "on-demand", "ami-1",
					"ip-10-0-0-1.us-west-2.compute.internal", &t, NULL, NULL };
	struct proto_planned_nodeclaim p = planned();
	struct proto_nodepool np = pool();
	struct proto_nodeclaim claim = { .name = "default-abcde", .uid = "u-1" };
	json_t *o, *node;
	const json_t *a;

	np.annotations = ann;
	np.n_annotations = 2;
	o = nodeclaim_json(&p, NULL, &np, NULL);
	a = json_object_get(json_object_get(o, "metadata"), "annotations");
	cr_assert_str_eq(json_string_value(json_object_get(a, "team.example.com/owner")), "payments");
	cr_assert_str_eq(json_string_value(json_object_get(a, KARPENTER_NODEPOOL_HASH_ANNOTATION)), "123");
	node = node_json(&li, &claim, &np, NULL, 0);
	a = json_object_get(json_object_get(node, "metadata"), "annotations");
	cr_assert_str_eq(json_string_value(json_object_get(a, "team.example.com/owner")), "payments");
	json_decref(o);
	json_decref(node);
}

Test(launcher_objects, the_hold_comes_off_with_every_other_taint_kept_and_the_version_as_precondition)
{
	struct proto_taint held[] = {
		{ .key = "dedicated", .value = "apps", .effect = PROTO_EFFECT_NO_SCHEDULE },
		{ .key = "karpenter.sh/unregistered", .effect = PROTO_EFFECT_NO_SCHEDULE },
		/* The kubelet's, not ours: it stays. */
		{ .key = "karpenter.sh/unregistered", .effect = PROTO_EFFECT_NO_EXECUTE },
	};
	struct proto_node node = { .name = "ip-1", .resource_version = "42", .taints = held, .n_taints = 3 };
	json_t *patch, *taints;
	char *text;

	cr_assert(node_held(&node));
	patch = node_release_hold_patch(&node);
	cr_assert_not_null(patch);
	taints = json_object_get(json_object_get(patch, "spec"), "taints");
	text = json_dumps(taints, JSON_COMPACT | JSON_SORT_KEYS);
	cr_assert_str_eq(text, "[{\"effect\":\"NoSchedule\",\"key\":\"dedicated\",\"value\":\"apps\"},"
			       "{\"effect\":\"NoExecute\",\"key\":\"karpenter.sh/unregistered\"}]");
	free(text);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(patch, "metadata"),
							   "resourceVersion")), "42");
	json_decref(patch);

	/* Only the hold: the list goes; no version: no precondition. */
	node = (struct proto_node){ .name = "ip-1", .taints = &held[1], .n_taints = 1 };
	patch = node_release_hold_patch(&node);
	cr_assert(json_is_null(json_object_get(json_object_get(patch, "spec"), "taints")));
	cr_assert_null(json_object_get(patch, "metadata"));
	json_decref(patch);
	node.n_taints = 0;
	cr_assert_not(node_held(&node));
	node = (struct proto_node){ .name = "ip-1", .taints = &held[2], .n_taints = 1 };
	cr_assert_not(node_held(&node));
}

/* A Windows AMI family's node: os windows and the family's build, not the
 * catalog's linux (Karpenter's instance types under a Windows EC2NodeClass). */
Test(launcher_objects, a_windows_nodeclass_labels_its_nodes_windows_with_the_build)
{
	struct proto_kv linux_labels[] = { { "kubernetes.io/arch", "amd64" }, { "kubernetes.io/os", "linux" } };
	struct proto_instance_type t = { .name = "m5.large", .labels = linux_labels, .n_labels = 2 };
	struct launched_instance li = { "i-1", "m5.large", "us-west-2a", "on-demand", "ami-1", "ip-1", &t, NULL,
					"10.0.20348" };
	struct proto_nodepool np = pool();
	node_label labels[64];
	const char *os = NULL, *build = NULL;
	size_t n;

	cr_assert_eq(node_labels_collect(&li, &np, NULL, 0, "us-west-2", labels, 64, &n), 0);
	for (size_t i = 0; i < n; i++) {
		if (streq(labels[i].key, "kubernetes.io/os"))
			os = labels[i].value;
		if (streq(labels[i].key, "node.kubernetes.io/windows-build"))
			build = labels[i].value;
	}
	cr_assert_str_eq(os, "windows");
	cr_assert_str_eq(build, "10.0.20348");
	li.windows_build = NULL;
	cr_assert_eq(node_labels_collect(&li, &np, NULL, 0, "us-west-2", labels, 64, &n), 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_str_neq(labels[i].key, "node.kubernetes.io/windows-build");
		if (streq(labels[i].key, "kubernetes.io/os"))
			cr_assert_str_eq(labels[i].value, "linux");
	}
}

Test(launcher_objects, launched_status_and_binding)
{
	struct launched_instance li = { "i-9", "m5.large", "us-west-2c", "spot", "ami-7", "ip-1", NULL, NULL, NULL };
	json_t *s = nodeclaim_launched_status(&li, "2026-11-24T07:00:00Z");
	json_t *b = binding_json("inflate-1", "ip-1");
	const json_t *st = json_object_get(s, "status");

	cr_assert_str_eq(json_string_value(json_object_get(st, "providerID")), "aws:///us-west-2c/i-9");
	cr_assert_str_eq(json_string_value(json_object_get(st, "imageID")), "ami-7");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(st, "conditions"),
				 0), "type")), "Launched");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "target"), "name")), "ip-1");
	cr_assert_str_eq(json_string_value(json_object_get(b, "kind")), "Binding");
	json_decref(s);
	json_decref(b);
}

Test(launcher_objects, a_pod_released_from_a_nodeclaim_leaves_its_planned_pods_annotation)
{
	static char *planned_pods[] = { "default/big-1", "default/big-2", "default/big-3" };
	static char *drop[] = { "default/big-2" };
	json_t *p = nodeclaim_planned_pods_patch(planned_pods, 3, drop, 1);
	json_t *all = nodeclaim_planned_pods_patch(planned_pods, 3, planned_pods, 3);
	const char *key = KANNA_PLANNED_PODS_ANNOTATION;

	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(p, "metadata"),
									   "annotations"), key)),
			 "[\"default/big-1\",\"default/big-3\"]");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(all, "metadata"),
									   "annotations"), key)),
			 "[]", "an empty list, which the watcher reads as no planned pods");
	json_decref(p);
	json_decref(all);
}

static int64_t status_quantity(const json_t *obj, const char *list, const char *name)
{
	const char *q = json_string_value(json_object_get(json_object_get(json_object_get(obj, "status"),
									  list), name));
	int64_t v = -1;

	cr_assert_not_null(q, "status.%s.%s missing", list, name);
	cr_assert_eq(quantity_parse(q, streq(name, "cpu"), &v), 0, "%s", q);
	return v;
}

/* The launcher writes what the scheduler planned with: the same function. */
Test(launcher_objects, node_status_follows_the_kubelet_settings_the_scheduler_planned_with)
{
	struct resources cap, alloc, want_cap, want_alloc;
	struct proto_resource pcap[4], palloc[4];
	struct proto_resource sys[] = { { "cpu", 500 }, { "memory", 1LL << 30 } };
	struct proto_kv hard[] = { { "memory.available", "5%" } };
	struct proto_kubelet k = { .max_pods = 20, .system_reserved = sys, .n_system_reserved = 2,
				   .eviction_hard = hard, .n_eviction_hard = 1 };
	struct kubelet_settings ks;
	static const char *const names[] = { "cpu", "memory", "pods", "ephemeral-storage" };
	struct proto_instance_type t = { .name = "m5.xlarge", .capacity = pcap, .n_capacity = 4,
					 .allocatable = palloc, .n_allocatable = 4 };
	struct launched_instance li = { "i-1", "m5.xlarge", "us-west-2a", "on-demand", "ami-1",
					"ip-10-0-0-1", &t, &k, NULL };
	struct proto_nodeclaim claim = { .name = "default-abcde", .uid = "u-1" };
	json_t *node, *status;

	catalog_capacity(4, 16384, 58, SCHED_VM_MEMORY_OVERHEAD, &cap, &alloc);
	for (int i = 0; i < 4; i++) {
		pcap[i] = (struct proto_resource){ (char *)names[i], cap.v[i] };
		palloc[i] = (struct proto_resource){ (char *)names[i], alloc.v[i] };
	}
	cr_assert_eq(kubelet_settings_from_proto(&k, &ks), 0);
	kubelet_node_resources(&ks, &cap, &alloc, &want_cap, &want_alloc);
	cr_assert_eq(want_alloc.v[RES_PODS], 20);
	cr_assert_lt(want_alloc.v[RES_CPU], alloc.v[RES_CPU] - 499);
	node = node_json(&li, &claim, NULL, NULL, 0);
	status = nodeclaim_launched_status(&li, "2026-11-24T07:00:00Z");
	cr_assert_not_null(node);
	cr_assert_not_null(status);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(status_quantity(node, "allocatable", names[i]), want_alloc.v[i], "Node %s", names[i]);
		cr_assert_eq(status_quantity(node, "capacity", names[i]), want_cap.v[i], "Node %s", names[i]);
		cr_assert_eq(status_quantity(status, "allocatable", names[i]), want_alloc.v[i], "NodeClaim %s",
			     names[i]);
	}
	json_decref(node);
	json_decref(status);
	/* Without settings the catalog's figures stand. */
	li.kubelet = NULL;
	node = node_json(&li, &claim, NULL, NULL, 0);
	cr_assert_eq(status_quantity(node, "allocatable", "cpu"), alloc.v[RES_CPU]);
	cr_assert_eq(status_quantity(node, "allocatable", "pods"), 58);
	json_decref(node);
	/* A Windows node is not ENI-limited: 110 pods, as the scheduler
	 * planned its Windows pool (model/kubelet.h). */
	li.windows_build = "10.0.20348";
	node = node_json(&li, &claim, NULL, NULL, 0);
	status = nodeclaim_launched_status(&li, "2026-11-24T07:00:00Z");
	cr_assert_not_null(node);
	cr_assert_not_null(status);
	cr_assert_eq(status_quantity(node, "capacity", "pods"), 110);
	cr_assert_eq(status_quantity(node, "allocatable", "pods"), 110);
	cr_assert_eq(status_quantity(status, "allocatable", "pods"), 110);
	cr_assert_eq(status_quantity(status, "allocatable", "memory"),
		     cap.v[RES_MEMORY] - ((11 * 110 + 255 + 100) << 20));
	json_decref(node);
	json_decref(status);
}

/* ---- CreateFleet ---------------------------------------------------------------- */

static struct fleet_subnet subnets[] = { { "subnet-a", "us-west-2a" }, { "subnet-b", "us-west-2b" },
					 { "subnet-c", "us-west-2c" } };
static const char *const arches[] = { "amd64", "arm64" };

static const char *arch_of(const char *type, void *ud)
{
	(void)ud;
	return strstr(type, "g.") ? "arm64" : "amd64";
}

static bool zone_c_unavailable(const char *type, const char *zone, uint8_t ct, void *ud)
{
	(void)type;
	(void)ct;
	(void)ud;
	return !strcmp(zone, "us-west-2c");
}

static char *encode(struct aws_query *q)
{
	char *s = NULL;

	cr_assert_eq(aws_query_encode(q, &s), 0);
	aws_query_free(q);
	return s;
}

Test(launcher_fleet_query, spot_when_allowed_with_one_override_per_offering_zone)
{
	struct proto_planned_nodeclaim p = planned();
	struct launch_config cfgs[] = { { "kanna-lt1", "ami-x86", subnets, 3, NULL, 0 },
					{ "kanna-lt2", "ami-arm", subnets, 3, NULL, 0 } };
	struct fleet_tag tags[] = { { "karpenter.sh/nodeclaim", "default-abcde" } };
	struct fleet_input in = { "kanna-tok-0", &p, arches, cfgs, 2, arch_of, NULL, NULL, tags, 1, 0 };
	struct aws_query *q;
	uint8_t ct;
	size_t n;
	char *s;

	cr_assert_eq(fleet_query_build(&in, &q, &ct, &n), 0);
	cr_assert_eq(ct, PROTO_CAPACITY_SPOT);
	cr_assert_eq(n, 2); /* m5.large spot in 2a and 2c; m6g has no spot */
	s = encode(q);
	cr_assert(strstr(s, "Action=CreateFleet"));
	cr_assert(strstr(s, "ClientToken=kanna-tok-0"));
	cr_assert(strstr(s, "DefaultTargetCapacityType=spot"));
	cr_assert(strstr(s, "SpotOptions.AllocationStrategy=price-capacity-optimized"));
	cr_assert(strstr(s, "LaunchTemplateConfigs.1.Overrides.2.SubnetId=subnet-c"));
	/* The zone too: EC2 echoes the overrides as sent, and the answer's
	 * launches and capacity errors are placed by it. */
	cr_assert(strstr(s, "LaunchTemplateConfigs.1.Overrides.2.AvailabilityZone=us-west-2c"));
	cr_assert(strstr(s, "LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone=us-west-2a"));
	cr_assert_null(strstr(s, "LaunchTemplateConfigs.2.Overrides"));
	cr_assert(strstr(s, "TagSpecification.1.ResourceType=instance"));
	cr_assert(strstr(s, "TagSpecification.1.Tag.1.Key=karpenter.sh%2Fnodeclaim"));
	free(s);
	/* Without spot offerings left, on-demand with both architectures. */
	in.unavailable = zone_c_unavailable;
	offs_m5[0].available = false;
	cr_assert_eq(fleet_query_build(&in, &q, &ct, &n), 0);
	offs_m5[0].available = true;
	cr_assert_eq(ct, PROTO_CAPACITY_ON_DEMAND);
	cr_assert_eq(n, 2);
	s = encode(q);
	cr_assert(strstr(s, "OnDemandOptions.AllocationStrategy=lowest-price"));
	cr_assert(strstr(s, "LaunchTemplateConfigs.2.LaunchTemplateSpecification.LaunchTemplateName=kanna-lt2"));
	cr_assert(strstr(s, "LaunchTemplateConfigs.2.Overrides.1.InstanceType=m6g.large"));
	cr_assert(strstr(s, "LaunchTemplateConfigs.1.Overrides.1.SubnetId=subnet-b"));
	free(s);
}

Test(launcher_fleet_query, on_demand_only_requirement_and_nothing_left)
{
	struct proto_planned_nodeclaim p = planned();
	struct proto_requirement od[] = { { .key = "karpenter.sh/capacity-type", .op = PROTO_OP_IN,
					    .values = od_only, .n_values = 1 } };
	struct launch_config cfgs[] = { { "kanna-lt1", "ami-x86", subnets, 1, NULL, 0 } };
	struct fleet_input in = { "t", &p, arches, cfgs, 1, NULL, NULL, NULL, NULL, 0, 3 };
	struct aws_query *q;
	uint8_t ct;
	size_t n;

	p.requirements = od;
	p.n_requirements = 1;
	/* Only subnet-a: m5.large has no on-demand offering there, m6g.large does. */
	cr_assert_eq(fleet_query_build(&in, &q, &ct, &n), 0);
	cr_assert_eq(ct, PROTO_CAPACITY_ON_DEMAND);
	cr_assert_eq(n, 1);
	{
		char *text = encode(q); /* a batch of three */

		cr_assert(strstr(text, "TargetCapacitySpecification.TotalTargetCapacity=3"));
		free(text);
	}
	in.unavailable = zone_c_unavailable;
	cfgs[0].subnets = &subnets[2];
	cr_assert_eq(fleet_query_build(&in, &q, &ct, &n), -ENOENT);
}

/*
 * The configs and overrides of an encoded query: LaunchTemplateConfigs.N
 * that name a launch template (bit N-1 of *named) and those with at least
 * one override (bit N-1 of *with_overrides).
 */
static void query_configs(const char *s, unsigned *named, unsigned *with_overrides)
{
	const char *p = s;

	*named = *with_overrides = 0;
	while ((p = strstr(p, "LaunchTemplateConfigs."))) {
		char *end;
		unsigned long n = strtoul(p + strlen("LaunchTemplateConfigs."), &end, 10);

		cr_assert(n >= 1 && n <= 8, "config index %lu in %s", n, s);
		if (!strncmp(end, ".LaunchTemplateSpecification.LaunchTemplateName=", 48))
			*named |= 1u << (n - 1);
		else if (!strncmp(end, ".Overrides.1.InstanceType=", 26))
			*with_overrides |= 1u << (n - 1);
		p = end;
	}
}

static bool unavailable_in_mask(const char *type, const char *zone, uint8_t ct, void *ud)
{
	const unsigned *mask = ud;

	for (uint32_t t = 0; t < 2; t++)
		for (uint32_t k = 0; k < cands[t].n_offerings; k++)
			if (!strcmp(cands[t].name, type) && !strcmp(cands[t].offerings[k].zone, zone) &&
			    cands[t].offerings[k].capacity_type == ct)
				return *mask >> (t * 3 + k) & 1;
	return false;
}

/* EC2 refuses a whole CreateFleet whose LaunchTemplateConfigs.N has no
 * overrides (MissingParameter); Karpenter sends only the launch templates
 * that have instance types. m6g.large (arm64) has no spot offering, so the
 * spot request is for amd64 alone. */
Test(launcher_fleet_query, a_launch_template_without_overrides_is_left_out)
{
	struct proto_planned_nodeclaim p = planned();
	struct launch_config cfgs[] = { { "kanna-lt1", "ami-x86", subnets, 3, NULL, 0 },
					{ "kanna-lt2", "ami-arm", subnets, 3, NULL, 0 } };
	struct fleet_input in = { "t", &p, arches, cfgs, 2, arch_of, NULL, NULL, NULL, 0, 0 };
	struct aws_query *q;
	uint8_t ct;
	size_t n;
	char *s;

	cr_assert_eq(fleet_query_build(&in, &q, &ct, &n), 0);
	cr_assert_eq(ct, PROTO_CAPACITY_SPOT);
	s = encode(q);
	cr_assert(strstr(s, "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=kanna-lt1"));
	cr_assert_null(strstr(s, "LaunchTemplateConfigs.2."), "%s", s);
	cr_assert_null(strstr(s, "kanna-lt2"), "%s", s);
	free(s);
	/* amd64 has nothing left on-demand either: arm64 alone, as config 1. */
	offs_m5[0].available = offs_m5[1].available = offs_m5[2].available = false;
	cr_assert_eq(fleet_query_build(&in, &q, &ct, &n), 0);
	offs_m5[0].available = offs_m5[1].available = offs_m5[2].available = true;
	cr_assert_eq(ct, PROTO_CAPACITY_ON_DEMAND);
	cr_assert_eq(n, 1);
	s = encode(q);
	cr_assert(strstr(s, "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=kanna-lt2"), "%s", s);
	cr_assert(strstr(s, "LaunchTemplateConfigs.1.Overrides.1.InstanceType=m6g.large"), "%s", s);
	cr_assert(strstr(s, "LaunchTemplateConfigs.1.Overrides.1.ImageId=ami-arm"), "%s", s);
	cr_assert_null(strstr(s, "LaunchTemplateConfigs.2."), "%s", s);
	free(s);
}

/* Whatever is unavailable, every launch template named has overrides and
 * the configs are numbered 1..N: all 16 sets of unavailable offerings. */
Test(launcher_fleet_query, every_launch_template_sent_has_overrides)
{
	struct proto_planned_nodeclaim p = planned();
	struct launch_config cfgs[] = { { "kanna-lt1", "ami-x86", subnets, 3, NULL, 0 },
					{ "kanna-lt2", "ami-arm", subnets, 3, NULL, 0 } };
	unsigned mask;
	struct fleet_input in = { "t", &p, arches, cfgs, 2, arch_of, unavailable_in_mask, &mask, NULL, 0, 0 };

	for (mask = 0; mask < 16; mask++) {
		struct aws_query *q;
		unsigned named, with_overrides;
		uint8_t ct;
		size_t n;
		char *s;
		int r = fleet_query_build(&in, &q, &ct, &n);

		if (mask == 15) {
			cr_assert_eq(r, -ENOENT, "nothing is left, nothing may be sent");
			continue;
		}
		cr_assert_eq(r, 0, "mask %u", mask);
		s = encode(q);
		query_configs(s, &named, &with_overrides);
		cr_assert_eq(named, with_overrides, "mask %u: %s", mask, s);
		cr_assert(named == 1 || named == 3, "mask %u: configs numbered from 1: %s", mask, s);
		free(s);
	}
}

Test(launcher_fleet_query, remove_offering_prunes_empty_candidates)
{
	struct proto_offering o1[] = { { .zone = "a", .capacity_type = 1, .available = true } };
	struct proto_offering o2[] = { { .zone = "a", .capacity_type = 1, .available = true },
				       { .zone = "b", .capacity_type = 1, .available = true } };
	struct proto_candidate c[] = { { .name = "x", .offerings = o1, .n_offerings = 1 },
				       { .name = "y", .offerings = o2, .n_offerings = 2 } };
	struct proto_planned_nodeclaim p = { .instance_types = c, .n_instance_types = 2 };

	cr_assert_eq(planned_remove_offering(&p, "x", "a", 1), 2);
	cr_assert_eq(p.n_instance_types, 1);
	cr_assert_str_eq(p.instance_types[0].name, "y");
	cr_assert_eq(planned_remove_offering(&p, "y", "a", 0), 2); /* other capacity type */
	cr_assert_eq(planned_remove_offering(&p, "y", "a", 1), 1);
	cr_assert_eq(planned_count_offerings(&p, NULL, NULL), 1);
	cr_assert(fleet_error_is_capacity("InsufficientInstanceCapacity"));
	cr_assert(fleet_error_is_capacity("UnfulfillableCapacity"));
	cr_assert_not(fleet_error_is_capacity("InvalidParameterValue"));
}

Test(launcher_fleet_query, describe_instances_reader)
{
	static const char doc[] =
		"<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
		"<requestId>r</requestId><reservationSet><item><instancesSet><item>"
		"<instanceId>i-1</instanceId><imageId>ami-1</imageId><instanceState><name>running</name>"
		"</instanceState><privateDnsName>ip-10-0-0-1.us-west-2.compute.internal</privateDnsName>"
		"<instanceType>m5.large</instanceType><placement><availabilityZone>us-west-2a"
		"</availabilityZone></placement><instanceLifecycle>spot</instanceLifecycle><tagSet><item>"
		"<key>karpenter.sh/nodeclaim</key><value>default-abcde</value></item></tagSet></item>"
		"</instancesSet></item></reservationSet></DescribeInstancesResponse>";
	struct aws_xml_node *root;
	struct ec2_instance e[2];

	cr_assert_eq(aws_xml_parse(doc, strlen(doc), &root), 0);
	cr_assert_eq(ec2_instances_parse(root, e, 2), 1);
	cr_assert_str_eq(e[0].instance_id, "i-1");
	cr_assert_str_eq(e[0].zone, "us-west-2a");
	cr_assert_str_eq(e[0].nodeclaim, "default-abcde");
	cr_assert_str_eq(e[0].state, "running");
	cr_assert(e[0].spot);
	aws_xml_free(root);
	cr_assert_eq(aws_xml_parse("<Other/>", 8, &root), 0);
	cr_assert_eq(ec2_instances_parse(root, e, 2), -EBADMSG);
	aws_xml_free(root);
}

/* NodeClaim names from consecutive batches of one scheduler must not repeat:
 * the launcher treats a known name as a replayed plan. */
#include "common/hashmap.h"
void nodeclaim_suffix(uint64_t nonce, uint64_t batch_id, uint32_t index, char out[static 6]);

Test(launcher_objects, planned_nodeclaim_names_do_not_repeat)
{
	struct hashmap seen = { 0 };
	char s[6];

	for (uint64_t batch = 1; batch <= 400; batch++)
		for (uint32_t k = 0; k < 5; k++) {
			nodeclaim_suffix(0x1a20c4dc1f70000ULL + batch, batch, k, s);
			cr_assert_eq(strlen(s), 5);
			cr_assert_null(hashmap_get(&seen, s), "suffix %s repeated", s);
			cr_assert_eq(hashmap_put(&seen, s, (void *)1, NULL), 0);
		}
	nodeclaim_suffix(7, 7, 0, s);
	{
		char again[6];

		nodeclaim_suffix(7, 7, 0, again);
		cr_assert_str_eq(s, again);
	}
	hashmap_done(&seen);
}
