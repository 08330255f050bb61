/*
 * kanna-sim's lite controllers: Deployment and StatefulSet controllers
 * (replicas ↔ pods, claims from volumeClaimTemplates), a DaemonSet
 * controller (a pod per selected node), a disruption controller (PDB
 * status), a pod garbage collector (pods of Nodes that are gone) and a
 * kube-scheduler-lite (binds pending pods to Ready, schedulable nodes that
 * fit, or marks them PodScheduled=False reason Unschedulable). One thread
 * runs them whenever the store changed; passes are callable for tests.
 */
#ifndef KANNA_SIM_K8S_CONTROLLERS_H
#define KANNA_SIM_K8S_CONTROLLERS_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/k8s-store.h"

/* How often the controller thread looks for a changed resourceVersion. */
#define K8S_CONTROLLER_INTERVAL_MS 100
/* Time-driven work (boot delays) runs at least this often without changes. */
#define K8S_CONTROLLER_TICK_MS 500

struct k8s_controllers;

/*
 * extra (may be NULL) runs after the built-in controllers on every pass and
 * at least every K8S_CONTROLLER_TICK_MS: kanna-sim's kubelet-lite, which
 * lives with the AWS side, hooks in here.
 */
typedef void (*k8s_controller_fn)(void *userdata);
/* Upstream's pod GC quarantine: how long a Node must be gone before the
 * pods bound to it are deleted. */
#define K8S_POD_GC_QUARANTINE_MS_DEFAULT 40000
int k8s_controllers_start(struct k8s_store *store, k8s_controller_fn extra,
			  void *extra_userdata, uint64_t pod_gc_quarantine_ms,
			  struct k8s_controllers **ret);
struct k8s_controllers *k8s_controllers_free(struct k8s_controllers *c);

/* One reconcile pass each; return how many objects they wrote, or -errno. */
int k8s_deployments_reconcile(struct k8s_store *store);
int k8s_scheduler_reconcile(struct k8s_store *store);
int k8s_statefulsets_reconcile(struct k8s_store *store);
int k8s_daemonsets_reconcile(struct k8s_store *store);
int k8s_disruption_reconcile(struct k8s_store *store); /* PodDisruptionBudget status */
/* Pods bound to Nodes gone for quarantine_ms are deleted (k8s-podgc.c);
 * missing: node name → when first seen gone, kept between passes. */
int k8s_podgc_reconcile(struct k8s_store *store, json_t *missing, uint64_t quarantine_ms,
			uint64_t now_ms);

/* Scheduling predicates shared by the scheduler and the DaemonSet controller. */
bool k8s_pod_selects_node(const json_t *pod, const json_t *node); /* nodeSelector, affinity */
bool k8s_pod_tolerates_node(const json_t *pod, const json_t *node); /* NoSchedule/NoExecute */
/* The first NoSchedule or NoExecute taint of node (NoExecute only: what a
 * kubelet checks when it admits a pod) that pod does not tolerate, or NULL. */
const json_t *k8s_pod_untolerated_taint(const json_t *pod, const json_t *node, bool no_execute_only);
bool k8s_node_matches_terms(const json_t *terms, const json_t *node); /* nodeSelectorTerms */

/* Required inter-pod (anti-)affinity (k8s-podaffinity.c). */
struct k8s_pod_affinity;
enum {
	K8S_AFFINITY_MISFIT = 1,
	K8S_AFFINITY_ANTI_MISFIT = 2,
};
int k8s_pod_affinity_new(struct k8s_store *store, const json_t *pod, const json_t *nodes_by_name,
			 struct k8s_pod_affinity **ret);
/* 0 when node fits every term, else K8S_AFFINITY_*MISFIT. */
int k8s_pod_affinity_check(const struct k8s_pod_affinity *a, const json_t *node);
struct k8s_pod_affinity *k8s_pod_affinity_free(struct k8s_pod_affinity *a);

/* Topology spread constraints that say DoNotSchedule (k8s-podspread.c). */
struct k8s_pod_spread;
int k8s_pod_spread_new(struct k8s_store *store, const json_t *pod, const json_t *nodes_by_name,
		       struct k8s_pod_spread **ret);
/* Whether binding the pod to node keeps every constraint's skew. */
bool k8s_pod_spread_fits(const struct k8s_pod_spread *s, const json_t *node);
struct k8s_pod_spread *k8s_pod_spread_free(struct k8s_pod_spread *s);

/*
 * Volumes (k8s-volumes.c): the nodeSelectorTerms of every bound PV a pod's
 * claims use (one array per PV); NULL with why filled when a claim is
 * missing. After a binding, claims without a volume get one provisioned in
 * the node's zone (WaitForFirstConsumer); returns how many it bound.
 */
json_t *k8s_pod_volume_terms(struct k8s_store *store, const json_t *pod, char *why,
			     size_t whylen);
int k8s_volumes_bind_for_pod(struct k8s_store *store, const json_t *pod, const json_t *node);

/* FNV-1a of a pod template's canonical JSON: pod-template-hash, revisions. */
uint32_t k8s_template_hash(const json_t *tmpl);

/* Parsed copies of every object of group/v1/plural, taken under the lock. */
json_t *k8s_controller_snapshot(struct k8s_store *store, const char *group,
				const char *plural);

/*
 * Kubernetes Events (k8s-recorder.c), written as client-go's recorder
 * writes core/v1 Events: named <object>.<creation time in hex ns> (so they
 * list in the order they happened), and a repeat of a remembered one
 * (same object, type, reason, message, source) bumps its count and
 * lastTimestamp. They expire after K8S_EVENT_TTL_MS without a repeat.
 */
struct k8s_event_ref {
	const char *api_version, *kind, *ns, *name, *uid; /* ns NULL: cluster-scoped */
};
struct k8s_event_source {
	const char *component; /* "default-scheduler", "kubelet", ... */
	const char *host;      /* the node, for the kubelet; may be NULL */
};
#define K8S_EVENT_NORMAL "Normal"
#define K8S_EVENT_WARNING "Warning"
/* Upstream cuts event messages at 1024 bytes. */
#define K8S_EVENT_MESSAGE_MAX 1024

/* ref from an object's apiVersion, kind and metadata (pointers into obj). */
void k8s_event_ref_of(const json_t *obj, struct k8s_event_ref *ref);
int k8s_event_record(struct k8s_store *store, const struct k8s_event_ref *ref,
		     const struct k8s_event_source *source, const char *type,
		     const char *reason, const char *fmt, ...) _printf_(6, 7);

/* "500m" → 500, "2" → 2000, "512Mi" → 536870912000: milli-units. */
int k8s_quantity_parse_milli(const char *s, int64_t *ret);

#endif
