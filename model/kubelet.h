/*
 * What a node of an instance type can hold once its kubelet reserves what
 * it is told to: Karpenter's AWS formulas (pods(), kubeReservedResources(),
 * systemReservedResources(), evictionThreshold() of its instancetype
 * provider), with the defaults the catalog uses and the per-NodePool
 * kubelet settings users write (v1: EC2NodeClass spec.kubelet; v1beta1:
 * NodePool spec.template.spec.kubelet; v1alpha5: Provisioner
 * spec.kubeletConfiguration). One computation for the scheduler's model
 * (catalog.c, from-state.c) and the launcher (the capacity and allocatable
 * it writes on NodeClaims and Nodes), so that both sides agree.
 *
 *   pods        = maxPods, else the ENI-limited count (the catalog's),
 *                 on Windows 110 (no ENI limit); with podsPerCore, at
 *                 most podsPerCore × vCPUs
 *   allocatable = capacity − kubeReserved − systemReserved − eviction
 *   kubeReserved: cpu 6% of the first core, 1% of the second, 0.5% of the
 *                 next two, 0.25% of the rest; memory 11Mi × ENI-limited
 *                 pods + 255Mi (AL2/AL2023 size it by the ENI limit even
 *                 when maxPods is set, Windows by its pods); ephemeral-
 *                 storage 1Gi — each
 *                 replaced by the kubeReserved value given for it
 *   eviction:     memory 100Mi, ephemeral-storage 10% — replaced by
 *                 evictionHard memory.available / nodefs.available, an
 *                 absolute quantity or a percentage of capacity
 */
#ifndef KANNA_SCHEDULER_KUBELET_H
#define KANNA_SCHEDULER_KUBELET_H

#include "model/model.h"

/* proto/proto.h, for the functions that read the proto forms. */
struct proto_kubelet;
struct proto_nodeclass;
struct proto_nodepool;
struct proto_instance_type;
struct proto_resource;

/* An evictionHard signal: absent, an absolute amount, or a share of capacity. */
struct eviction_signal {
	enum { EVICTION_DEFAULT, EVICTION_QUANTITY, EVICTION_PERCENT } kind;
	int64_t quantity;
	double percent;
};

struct kubelet_settings {
	bool set;              /* something below differs from the defaults */
	int32_t max_pods;      /* 0: the ENI-limited count */
	int32_t pods_per_core; /* 0: no cap */
	bool windows;          /* Windows nodes (kubelet_settings_windows()) */
	struct resources kube_reserved;   /* cpu, memory, ephemeral-storage slots */
	uint32_t kube_reserved_set;       /* bit per slot given */
	struct resources system_reserved;
	struct eviction_signal memory_available, nodefs_available;
};

/* The kubelet settings that apply to a NodePool's nodes: the NodePool's own
 * when it has any (v1beta1, v1alpha5, and a v1 NodePool's v1beta1 kubelet
 * conversion annotation, which Karpenter v1.0 lets take precedence over the
 * EC2NodeClass's), else its EC2NodeClass's (v1). Either may be NULL. */
const struct proto_kubelet *kubelet_of(const struct proto_nodeclass *nodeclass,
				       const struct proto_nodepool *nodepool);

/* node.kubernetes.io/windows-build of a Windows AMI family ("Windows2022")
 * (aws/karpenter-provider-aws pkg/apis/v1/labels.go), NULL for others. */
const char *ami_family_windows_build_of(const char *ami_family);
/* The same for a NodeClass's nodes: its amiFamily, else its first alias
 * ("windows2022@latest"); NULL: Linux nodes (nodeclass may be NULL). */
const char *nodeclass_windows_build(const struct proto_nodeclass *nodeclass);

/*
 * Settings from their proto form (k may be NULL: defaults). Unknown
 * resource names (pid, …) and eviction signals other than memory.available
 * and nodefs.available change no schedulable resource and are skipped.
 * Returns 0, or -EINVAL for a malformed evictionHard value (the watcher
 * refuses such objects: see quantity_or_percent_parse()).
 */
int kubelet_settings_from_proto(const struct proto_kubelet *k, struct kubelet_settings *ret);
/* Marks the settings as Windows nodes' (a Windows AMI family's pool):
 * their pods are not ENI-limited (aws/karpenter-provider-aws
 * pkg/providers/instancetype/types.go pods(), kubeReservedResources()). */
void kubelet_settings_windows(struct kubelet_settings *k, bool windows);

/*
 * The capacity and allocatable of a node of a type whose default capacity
 * (catalog: ENI-limited pods, memory net of the VM overhead) and
 * allocatable are given, under settings k (NULL: defaults). Resources other
 * than cpu, memory, pods and ephemeral-storage keep the type's values.
 */
void kubelet_node_resources(const struct kubelet_settings *k, const struct resources *type_capacity,
			    const struct resources *type_allocatable, struct resources *capacity,
			    struct resources *allocatable);

/*
 * The same over proto resource lists (the launcher's catalog entries),
 * for Windows nodes when windows:
 * writes at most PROTO_MAX_RESOURCES entries to capacity and allocatable
 * (their names point into it). Returns 0 or -EINVAL (see above).
 */
int kubelet_type_resources(const struct proto_kubelet *k, bool windows,
			   const struct proto_instance_type *it,
			   struct proto_resource *capacity, uint32_t *n_capacity,
			   struct proto_resource *allocatable, uint32_t *n_allocatable);

#endif
