/*
 * Node capacity and allocatable under kubelet settings (model/kubelet.c),
 * by Karpenter's formulas: the defaults are the catalog's own, kubeReserved
 * replaces a computed default, systemReserved subtracts, evictionHard
 * replaces the 100Mi / 10% thresholds (quantities or percentages),
 * maxPods and podsPerCore cap pods; and which object's settings apply.
 */
#include <criterion/criterion.h>

#include "proto/proto.h"
#include "model/catalog.h"
#include "model/kubelet.h"

#define MI (1LL << 20)
#define GI (1LL << 30)

/* An m5.xlarge of the shipped catalog: 4 vCPUs, 16 GiB, 58 ENI-limited pods. */
static struct resources cap, alloc;

static void setup(void)
{
	catalog_capacity(4, 16384, 58, SCHED_VM_MEMORY_OVERHEAD, &cap, &alloc);
}

TestSuite(kubelet, .init = setup);

static void node(const struct proto_kubelet *k, struct resources *c, struct resources *a)
{
	struct kubelet_settings ks;

	cr_assert_eq(kubelet_settings_from_proto(k, &ks), 0);
	kubelet_node_resources(&ks, &cap, &alloc, c, a);
}

Test(kubelet, default_settings_give_the_catalogs_allocatable)
{
	struct resources c, a;

	/* 16384 MiB less 7.5% for the hypervisor: 15155 MiB. */
	cr_assert_eq(cap.v[RES_MEMORY], 15155 * MI);
	/* cpu 6% + 1% + 2 × 0.5% of a core; memory 11Mi × 58 + 255Mi + 100Mi;
	 * ephemeral 1Gi + 10% of 20Gi. */
	cr_assert_eq(alloc.v[RES_CPU], 4000 - 80);
	cr_assert_eq(alloc.v[RES_MEMORY], (15155 - 11 * 58 - 255 - 100) * MI);
	cr_assert_eq(alloc.v[RES_EPHEMERAL_STORAGE], 20 * GI - GI - 2 * GI);
	node(NULL, &c, &a);
	cr_assert_arr_eq(&a, &alloc, sizeof(a));
	cr_assert_arr_eq(&c, &cap, sizeof(c));
}

Test(kubelet, system_reserved_subtracts_from_allocatable)
{
	struct proto_resource sys[] = { { "cpu", 500 }, { "memory", GI }, { "ephemeral-storage", 2 * GI },
					{ "pid", 1000 } };
	struct proto_kubelet k = { .system_reserved = sys, .n_system_reserved = 4 };
	struct resources c, a;

	node(&k, &c, &a);
	cr_assert_eq(a.v[RES_CPU], alloc.v[RES_CPU] - 500);
	cr_assert_eq(a.v[RES_MEMORY], alloc.v[RES_MEMORY] - GI);
	cr_assert_eq(a.v[RES_EPHEMERAL_STORAGE], alloc.v[RES_EPHEMERAL_STORAGE] - 2 * GI);
	cr_assert_eq(a.v[RES_PODS], 58);
	cr_assert_arr_eq(&c, &cap, sizeof(c), "capacity is the machine's");
}

Test(kubelet, kube_reserved_replaces_the_computed_default_per_resource)
{
	struct proto_resource kube[] = { { "cpu", 200 } };
	struct proto_kubelet k = { .kube_reserved = kube, .n_kube_reserved = 1 };
	struct resources c, a;

	node(&k, &c, &a);
	cr_assert_eq(a.v[RES_CPU], 4000 - 200, "200m instead of the computed 80m");
	cr_assert_eq(a.v[RES_MEMORY], alloc.v[RES_MEMORY], "memory keeps its computed default");
}

Test(kubelet, eviction_hard_replaces_the_default_thresholds_with_quantities_or_percentages)
{
	struct proto_kv abs[] = { { "memory.available", "500Mi" } };
	struct proto_kv pct[] = { { "memory.available", "5%" }, { "nodefs.available", "15%" },
				  { "imagefs.available", "20%" } };
	struct proto_kubelet k = { .eviction_hard = abs, .n_eviction_hard = 1 };
	struct resources c, a;
	int64_t kube_mem = (11 * 58 + 255) * MI;

	node(&k, &c, &a);
	cr_assert_eq(a.v[RES_MEMORY], cap.v[RES_MEMORY] - kube_mem - 500 * MI);
	k.eviction_hard = pct;
	k.n_eviction_hard = 3;
	node(&k, &c, &a);
	/* ceil(capacity / 100 × 5), of the memory after the hypervisor's share. */
	cr_assert_eq(a.v[RES_MEMORY], cap.v[RES_MEMORY] - kube_mem - (cap.v[RES_MEMORY] * 5 + 99) / 100);
	cr_assert_eq(a.v[RES_EPHEMERAL_STORAGE], 20 * GI - GI - (20 * GI * 15 + 99) / 100);
}

Test(kubelet, max_pods_and_pods_per_core_cap_pods)
{
	struct proto_kubelet k = { .max_pods = 20 };
	struct resources c, a;

	node(&k, &c, &a);
	cr_assert_eq(c.v[RES_PODS], 20);
	cr_assert_eq(a.v[RES_PODS], 20);
	cr_assert_eq(a.v[RES_MEMORY], alloc.v[RES_MEMORY],
		     "kube-reserved memory stays sized by the ENI limit (AL2/AL2023)");
	k = (struct proto_kubelet){ .pods_per_core = 2 };
	node(&k, &c, &a);
	cr_assert_eq(a.v[RES_PODS], 8, "2 per core × 4 vCPUs");
	k.max_pods = 5;
	node(&k, &c, &a);
	cr_assert_eq(a.v[RES_PODS], 5, "the smaller of maxPods and podsPerCore × vCPUs");
	k = (struct proto_kubelet){ .max_pods = 110, .pods_per_core = 100 };
	node(&k, &c, &a);
	cr_assert_eq(a.v[RES_PODS], 110);
}

Test(kubelet, malformed_eviction_thresholds_are_refused)
{
	static const char *const bad[] = { "lots", "150%", "%", "-1Gi", "5 %" };
	struct kubelet_settings ks;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct proto_kv kv = { "memory.available", (char *)bad[i] };
		struct proto_kubelet k = { .eviction_hard = &kv, .n_eviction_hard = 1 };
		cr_assert_eq(kubelet_settings_from_proto(&k, &ks), -EINVAL, "%s", bad[i]);
	}
}

Test(kubelet, the_nodepools_own_settings_win_over_the_nodeclasses)
{
	struct proto_nodeclass nc = { .name = "default" };
	struct proto_nodepool np = { .name = "default", .kubelet = { .max_pods = 30 } };

	cr_assert_eq(kubelet_of(&nc, &np), &np.kubelet, "v1beta1: the NodePool's own");
	cr_assert_eq(kubelet_of(NULL, &np), &np.kubelet);
	nc.kubelet.pods_per_core = 4;
	/* Karpenter v1.0: the v1beta1 kubelet conversion annotation on the
	 * NodePool takes precedence over the EC2NodeClass's kubelet. */
	cr_assert_eq(kubelet_of(&nc, &np), &np.kubelet, "the NodePool's v1beta1 kubelet");
	np.kubelet = (struct proto_kubelet){ 0 };
	cr_assert_eq(kubelet_of(&nc, &np), &nc.kubelet, "v1: the EC2NodeClass's");
	cr_assert_eq(kubelet_of(&nc, NULL), &nc.kubelet);
}

Test(kubelet, proto_resource_lists_get_the_same_figures)
{
	static const char *const names[] = { "cpu", "memory", "pods", "ephemeral-storage" };
	struct proto_resource pcap[5], palloc[5], oc[PROTO_MAX_RESOURCES], oa[PROTO_MAX_RESOURCES];
	struct proto_resource sys[] = { { "memory", 2 * GI } };
	struct proto_kubelet k = { .max_pods = 12, .system_reserved = sys, .n_system_reserved = 1 };
	struct proto_instance_type t = { .name = "m5.xlarge", .capacity = pcap, .n_capacity = 5,
					 .allocatable = palloc, .n_allocatable = 5 };
	struct resources c, a;
	uint32_t nc, na;

	for (int i = 0; i < 4; i++) {
		pcap[i] = (struct proto_resource){ (char *)names[i], cap.v[i] };
		palloc[i] = (struct proto_resource){ (char *)names[i], alloc.v[i] };
	}
	pcap[4] = palloc[4] = (struct proto_resource){ "vpc.amazonaws.com/pod-eni", 9 };
	node(&k, &c, &a);
	cr_assert_eq(kubelet_type_resources(&k, false, &t, oc, &nc, oa, &na), 0);
	cr_assert_eq(nc, 5);
	cr_assert_eq(na, 5);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(oc[i].value, c.v[i], "%s", names[i]);
		cr_assert_eq(oa[i].value, a.v[i], "%s", names[i]);
	}
	cr_assert_eq(oa[4].value, 9, "extended resources are the type's");
}

/* Windows nodes (a Windows AMI family's pool) are not ENI-limited: 110 pods
 * unless maxPods says otherwise, podsPerCore still caps them, and the
 * kube-reserved memory follows those pods (aws/karpenter-provider-aws
 * pkg/providers/instancetype/types.go pods(), kubeReservedResources(); the
 * Windows families' feature flags). The launcher's proto form agrees. */
Test(kubelet, windows_nodes_hold_110_pods_and_reserve_memory_by_them)
{
	struct proto_kubelet max = { .max_pods = 30 }, per_core = { .pods_per_core = 10 };
	struct proto_resource pcap[4], palloc[4], oc[PROTO_MAX_RESOURCES], oa[PROTO_MAX_RESOURCES];
	static const char *const names[] = { "cpu", "memory", "pods", "ephemeral-storage" };
	struct proto_instance_type t = { .name = "m5.xlarge", .capacity = pcap, .n_capacity = 4,
					 .allocatable = palloc, .n_allocatable = 4 };
	struct kubelet_settings ks;
	struct resources c, a;
	uint32_t nc, na;

	cr_assert_eq(kubelet_settings_from_proto(NULL, &ks), 0);
	kubelet_settings_windows(&ks, true);
	cr_assert(ks.set, "Windows nodes differ from the catalog's figures");
	kubelet_node_resources(&ks, &cap, &alloc, &c, &a);
	cr_assert_eq(c.v[RES_PODS], 110);
	cr_assert_eq(a.v[RES_PODS], 110);
	cr_assert_eq(a.v[RES_MEMORY], (15155 - 11 * 110 - 255 - 100) * MI);
	cr_assert_eq(a.v[RES_CPU], alloc.v[RES_CPU]);
	cr_assert_eq(kubelet_settings_from_proto(&max, &ks), 0);
	kubelet_settings_windows(&ks, true);
	kubelet_node_resources(&ks, &cap, &alloc, &c, &a);
	cr_assert_eq(a.v[RES_PODS], 30);
	cr_assert_eq(a.v[RES_MEMORY], (15155 - 11 * 30 - 255 - 100) * MI, "by maxPods, not the ENI limit");
	cr_assert_eq(kubelet_settings_from_proto(&per_core, &ks), 0);
	kubelet_settings_windows(&ks, true);
	kubelet_node_resources(&ks, &cap, &alloc, &c, &a);
	cr_assert_eq(a.v[RES_PODS], 40, "10 per core × 4");
	/* Linux keeps the ENI limit. */
	kubelet_settings_windows(&ks, false);
	cr_assert_eq(kubelet_settings_from_proto(NULL, &ks), 0);
	kubelet_node_resources(&ks, &cap, &alloc, &c, &a);
	cr_assert_eq(a.v[RES_PODS], 58);
	for (int i = 0; i < 4; i++) {
		pcap[i] = (struct proto_resource){ (char *)names[i], cap.v[i] };
		palloc[i] = (struct proto_resource){ (char *)names[i], alloc.v[i] };
	}
	cr_assert_eq(kubelet_type_resources(NULL, true, &t, oc, &nc, oa, &na), 0);
	cr_assert_eq(oc[2].value, 110);
	cr_assert_eq(oa[2].value, 110);
	cr_assert_eq(oa[1].value, (15155 - 11 * 110 - 255 - 100) * MI);
	cr_assert_eq(kubelet_type_resources(NULL, false, &t, oc, &nc, oa, &na), 0);
	cr_assert_eq(oa[2].value, 58);
}
