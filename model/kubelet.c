/*
 * Node capacity and allocatable under kubelet settings (see kubelet.h):
 * Karpenter's formulas in one place for the catalog, the scheduler's
 * per-NodePool view of it and the launcher's NodeClaim and Node status.
 * Pure computation; no state.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantity.h"
#include "proto/proto.h"
#include "model/kubelet.h"

/* kube-reserved ephemeral-storage Karpenter assumes by default. */
#define KUBE_RESERVED_EPHEMERAL_BYTES (1LL << 30)
/* Default hard eviction threshold of nodefs.available: 10% of the volume. */
#define EVICTION_NODEFS_PERCENT 10
/* kube-reserved memory: 11Mi per (ENI-limited) pod plus 255Mi. */
#define KUBE_RESERVED_MIB_PER_POD 11
#define KUBE_RESERVED_MIB_BASE 255
/* Windows nodes' pods without maxPods: no ENI limit (the Windows AMI
 * families' SupportsENILimitedPodDensity is false; pods() then gives 110). */
#define WINDOWS_DEFAULT_PODS 110

static bool kubelet_set(const struct proto_kubelet *k)
{
	return k && (k->max_pods || k->pods_per_core || k->n_system_reserved || k->n_kube_reserved ||
		     k->n_eviction_hard);
}

const struct proto_kubelet *kubelet_of(const struct proto_nodeclass *nodeclass,
				       const struct proto_nodepool *nodepool)
{
	if (nodepool && kubelet_set(&nodepool->kubelet))
		return &nodepool->kubelet;
	if (nodeclass && kubelet_set(&nodeclass->kubelet))
		return &nodeclass->kubelet;
	return nodepool ? &nodepool->kubelet : nodeclass ? &nodeclass->kubelet : NULL;
}

static const struct {
	const char *family, *alias, *build;
} windows_builds[] = {
	{ "Windows2019", "windows2019@", "10.0.17763" },
	{ "Windows2022", "windows2022@", "10.0.20348" },
	{ "Windows2025", "windows2025@", "10.0.26100" },
};

const char *ami_family_windows_build_of(const char *ami_family)
{
	for (size_t i = 0; ami_family && i < sizeof(windows_builds) / sizeof(windows_builds[0]); i++)
		if (strcmp(ami_family, windows_builds[i].family) == 0)
			return windows_builds[i].build;
	return NULL;
}

const char *nodeclass_windows_build(const struct proto_nodeclass *nodeclass)
{
	if (!nodeclass)
		return NULL;
	if (nodeclass->ami_family)
		return ami_family_windows_build_of(nodeclass->ami_family);
	for (uint32_t t = 0; t < nodeclass->n_ami_selector_terms; t++) {
		const char *alias = nodeclass->ami_selector_terms[t].alias;

		for (size_t i = 0; alias && i < sizeof(windows_builds) / sizeof(windows_builds[0]); i++)
			if (strncmp(alias, windows_builds[i].alias, strlen(windows_builds[i].alias)) == 0)
				return windows_builds[i].build;
	}
	return NULL;
}

static int eviction_signal_parse(const char *s, struct eviction_signal *ret)
{
	double percent;
	int64_t q;

	if (quantity_or_percent_parse(s ? s : "", &q, &percent) < 0)
		return -EINVAL;
	*ret = percent >= 0 ? (struct eviction_signal){ .kind = EVICTION_PERCENT, .percent = percent }
			    : (struct eviction_signal){ .kind = EVICTION_QUANTITY, .quantity = q };
	return 0;
}

static int reserved_slot(const char *name)
{
	if (streq(name, "cpu"))
		return RES_CPU;
	if (streq(name, "memory"))
		return RES_MEMORY;
	if (streq(name, "ephemeral-storage"))
		return RES_EPHEMERAL_STORAGE;
	return -1; /* pid, …: nothing pods request */
}

int kubelet_settings_from_proto(const struct proto_kubelet *k, struct kubelet_settings *ret)
{
	*ret = (struct kubelet_settings){ 0 };
	if (!k)
		return 0;
	ret->max_pods = MAX(k->max_pods, 0);
	ret->pods_per_core = MAX(k->pods_per_core, 0);
	for (uint32_t i = 0; i < k->n_kube_reserved; i++) {
		int slot = reserved_slot(k->kube_reserved[i].name);
		if (slot < 0)
			continue;
		ret->kube_reserved.v[slot] = k->kube_reserved[i].value;
		ret->kube_reserved_set |= 1u << slot;
	}
	for (uint32_t i = 0; i < k->n_system_reserved; i++) {
		int slot = reserved_slot(k->system_reserved[i].name);
		if (slot >= 0)
			ret->system_reserved.v[slot] += k->system_reserved[i].value;
	}
	for (uint32_t i = 0; i < k->n_eviction_hard; i++) {
		struct eviction_signal *sig =
			streq(k->eviction_hard[i].key, "memory.available") ? &ret->memory_available :
			streq(k->eviction_hard[i].key, "nodefs.available") ? &ret->nodefs_available : NULL;
		if (sig && eviction_signal_parse(k->eviction_hard[i].value, sig) < 0)
			return -EINVAL;
	}
	ret->set = ret->max_pods || ret->pods_per_core || ret->kube_reserved_set ||
		   ret->system_reserved.v[RES_CPU] || ret->system_reserved.v[RES_MEMORY] ||
		   ret->system_reserved.v[RES_EPHEMERAL_STORAGE] ||
		   ret->memory_available.kind != EVICTION_DEFAULT ||
		   ret->nodefs_available.kind != EVICTION_DEFAULT;
	return 0;
}

void kubelet_settings_windows(struct kubelet_settings *k, bool windows)
{
	k->windows = windows;
	k->set |= windows;
}

/* Karpenter's kube-reserved cpu: a share of each range of millicores. */
static int64_t kube_reserved_cpu(int64_t cpu)
{
	static const struct {
		int64_t start, end;
		double share;
	} ranges[] = { { 0, 1000, 0.06 }, { 1000, 2000, 0.01 }, { 2000, 4000, 0.005 },
		       { 4000, INT64_MAX, 0.0025 } };
	int64_t reserved = 0;

	for (size_t i = 0; i < ARRAY_SIZE(ranges); i++)
		if (cpu > ranges[i].start)
			reserved += (int64_t)((double)(MIN(cpu, ranges[i].end) - ranges[i].start) *
					      ranges[i].share);
	return reserved;
}

static int64_t eviction(const struct eviction_signal *sig, int64_t capacity, int64_t fallback)
{
	switch (sig->kind) {
	case EVICTION_QUANTITY:
		return sig->quantity;
	case EVICTION_PERCENT:
		return (int64_t)ceil((double)capacity / 100.0 * sig->percent);
	default:
		return fallback;
	}
}

void kubelet_node_resources(const struct kubelet_settings *k, const struct resources *type_capacity,
			    const struct resources *type_allocatable, struct resources *capacity,
			    struct resources *allocatable)
{
	static const struct kubelet_settings defaults;
	const int64_t eni_pods = type_capacity->v[RES_PODS];
	struct resources reserved = { { 0 } };
	int64_t pods = eni_pods;

	if (!k)
		k = &defaults;
	*capacity = *type_capacity;
	*allocatable = *type_allocatable;
	if (k->max_pods > 0)
		pods = k->max_pods;
	else if (k->windows)
		pods = WINDOWS_DEFAULT_PODS;
	if (k->pods_per_core > 0)
		pods = MIN(pods, (int64_t)k->pods_per_core * (type_capacity->v[RES_CPU] / 1000));
	capacity->v[RES_PODS] = pods;
	reserved.v[RES_CPU] = kube_reserved_cpu(capacity->v[RES_CPU]);
	/* Windows (UsesENILimitedMemoryOverhead false): by the pods it holds. */
	reserved.v[RES_MEMORY] = (KUBE_RESERVED_MIB_PER_POD * (k->windows ? pods : eni_pods) +
				  KUBE_RESERVED_MIB_BASE) << 20;
	reserved.v[RES_EPHEMERAL_STORAGE] = KUBE_RESERVED_EPHEMERAL_BYTES;
	for (int r = 0; r < RES_N_BUILTIN; r++) {
		if (k->kube_reserved_set >> r & 1)
			reserved.v[r] = k->kube_reserved.v[r];
		reserved.v[r] += k->system_reserved.v[r];
	}
	reserved.v[RES_MEMORY] += eviction(&k->memory_available, capacity->v[RES_MEMORY],
					   SCHED_EVICTION_THRESHOLD_BYTES);
	reserved.v[RES_EPHEMERAL_STORAGE] +=
		eviction(&k->nodefs_available, capacity->v[RES_EPHEMERAL_STORAGE],
			 (capacity->v[RES_EPHEMERAL_STORAGE] * EVICTION_NODEFS_PERCENT + 99) / 100);
	allocatable->v[RES_PODS] = pods;
	allocatable->v[RES_CPU] = MAX(capacity->v[RES_CPU] - reserved.v[RES_CPU], 0);
	allocatable->v[RES_MEMORY] = MAX(capacity->v[RES_MEMORY] - reserved.v[RES_MEMORY], 0);
	allocatable->v[RES_EPHEMERAL_STORAGE] =
		MAX(capacity->v[RES_EPHEMERAL_STORAGE] - reserved.v[RES_EPHEMERAL_STORAGE], 0);
}

/* The four resources kubelet settings touch, by their API names. */
static const char *const touched[] = {
	[RES_CPU] = "cpu",
	[RES_MEMORY] = "memory",
	[RES_PODS] = "pods",
	[RES_EPHEMERAL_STORAGE] = "ephemeral-storage",
};

static void to_resources(const struct proto_resource *list, uint32_t n, struct resources *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (uint32_t i = 0; i < n; i++)
		for (size_t r = 0; r < ARRAY_SIZE(touched); r++)
			if (streq(list[i].name, touched[r]))
				ret->v[r] = list[i].value;
}

static uint32_t from_resources(const struct proto_resource *list, uint32_t n,
			       const struct resources *v, struct proto_resource *out)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n && k < PROTO_MAX_RESOURCES; i++) {
		out[k] = list[i];
		for (size_t r = 0; r < ARRAY_SIZE(touched); r++)
			if (streq(list[i].name, touched[r]))
				out[k].value = v->v[r];
		k++;
	}
	return k;
}

int kubelet_type_resources(const struct proto_kubelet *k, bool windows,
			   const struct proto_instance_type *it,
			   struct proto_resource *capacity, uint32_t *n_capacity,
			   struct proto_resource *allocatable, uint32_t *n_allocatable)
{
	struct kubelet_settings ks;
	struct resources cap, alloc, node_cap, node_alloc;
	int r = kubelet_settings_from_proto(k, &ks);

	if (r < 0)
		return r;
	kubelet_settings_windows(&ks, windows);
	to_resources(it->capacity, it->n_capacity, &cap);
	to_resources(it->allocatable, it->n_allocatable, &alloc);
	if (ks.set)
		kubelet_node_resources(&ks, &cap, &alloc, &node_cap, &node_alloc);
	else
		node_cap = cap, node_alloc = alloc; /* the catalog's own figures, untouched */
	*n_capacity = from_resources(it->capacity, it->n_capacity, &node_cap, capacity);
	*n_allocatable = from_resources(it->allocatable, it->n_allocatable, &node_alloc, allocatable);
	return 0;
}
