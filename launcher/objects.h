/*
 * The Kubernetes objects the launcher writes, as JSON: the NodeClaim it
 * creates before calling EC2, the merge patches that record a launch on it,
 * the Node of a launched instance and the pods/binding of a planned pod.
 * Pure functions (no I/O) so that every field is unit-tested.
 */
#ifndef KANNA_LAUNCHER_OBJECTS_H
#define KANNA_LAUNCHER_OBJECTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "launcher/node-labels.h"
#include "proto/karpenter.h"
#include "proto/proto.h"

/* The pods a NodeClaim was planned for (DESIGN §2 rule 4), JSON list of "ns/name". */
#define KANNA_PLANNED_PODS_ANNOTATION "kanna.dev/planned-pods"
/* The plan the NodeClaim came from (debugging aid). */
#define KANNA_PLAN_ANNOTATION "kanna.dev/plan"

/*
 * The NodeClaim of a planned claim: name = planned->id; labels = NodePool
 * labels + karpenter.sh/nodepool; requirements = the plan's, with
 * node.kubernetes.io/instance-type In [candidates] (the durable record of
 * what may be launched, read back on recovery); resources.requests; taints
 * and startupTaints, expireAfter and terminationGracePeriod of the
 * NodePool; owner reference to the NodePool; the termination finalizer.
 * nodeclass may be NULL (the NodePool's nodeClassRef is used).
 */
json_t *nodeclaim_json(const struct proto_planned_nodeclaim *planned, const char *plan_id,
		       const struct proto_nodepool *nodepool, const struct proto_nodeclass *nodeclass);

/* What a launch produced, for the NodeClaim status and the Node. */
struct launched_instance {
	const char *instance_id;
	const char *instance_type;
	const char *zone;
	const char *capacity_type; /* "spot" / "on-demand" */
	const char *image_id;
	const char *node_name;     /* private DNS name */
	const struct proto_instance_type *type; /* catalog entry; may be NULL */
	const struct proto_kubelet *kubelet;    /* the NodePool's kubelet settings; may be NULL */
	const char *windows_build; /* a Windows AMI family's build: kubernetes.io/os windows */
};

/* "aws:///<zone>/<instance-id>" */
int provider_id_format(const char *zone, const char *instance_id, char *buf, size_t size);
/* Parses a providerID back; -EINVAL when it is not of that form. */
int provider_id_parse(const char *provider_id, char *zone, size_t zone_size, char *instance_id,
		      size_t id_size);

/* Merge patch of the NodeClaim's metadata: the node's labels (well-known,
 * catalog, NodePool) so that `kubectl get nodeclaims -L` shows them. */
json_t *nodeclaim_labels_patch(const node_label *labels, size_t n_labels);
/* Merge patch of the status subresource: providerID, imageID, nodeName,
 * capacity, allocatable, condition Launched=True. now: RFC 3339. */
json_t *nodeclaim_launched_status(const struct launched_instance *li, const char *now);

/*
 * The Node: name = private DNS name; labels = well-known + catalog +
 * NodePool labels + single-valued requirements; taints = the NodeClaim's
 * taints + startupTaints + the hold (KARPENTER_UNREGISTERED_TAINT_KEY:NoSchedule);
 * providerID; the termination finalizer; owner reference to
 * the NodeClaim (uid). capacity / allocatable in status: the catalog's
 * under the kubelet settings (kubelet_type_resources(), as the scheduler
 * computes them).
 */
json_t *node_json(const struct launched_instance *li, const struct proto_nodeclaim *claim,
		  const struct proto_nodepool *nodepool, const node_label *labels, size_t n_labels);

/* Does node carry the hold (KARPENTER_UNREGISTERED_TAINT_KEY, NoSchedule)? */
bool node_held(const struct proto_node *node);
/* Merge patch taking the hold off node: its taints without the hold, with
 * metadata.resourceVersion as the precondition (409 when another writer
 * changed the Node since the replica saw it). NULL when out of memory. */
json_t *node_release_hold_patch(const struct proto_node *node);

/* Every label the Node (and NodeClaim) carries, deduplicated, later sources
 * winning in this order: catalog type labels, requirements with one value,
 * NodePool labels, well-known labels. Strings point into the inputs and
 * into buf; -E2BIG when more than max labels. */
int node_labels_collect(const struct launched_instance *li, const struct proto_nodepool *nodepool,
			const struct proto_requirement *reqs, size_t n_reqs, const char *region,
			node_label *out, size_t max, size_t *ret_n);

/* Merge patch of the NodeClaim's planned-pods annotation: pods[0..n) less
 * those in drop[0..n_drop) (pods that no longer fit its Node, released so
 * that the schedulers plan them again; DESIGN §2 rule 4). */
json_t *nodeclaim_planned_pods_patch(char *const *pods, size_t n, char *const *drop, size_t n_drop);

/* {"apiVersion":"v1","kind":"Binding","metadata":{"name":pod},"target":{…Node}} */
json_t *binding_json(const char *pod_name, const char *node_name);

/* RFC 3339 UTC time of now ("2026-11-24T07:01:02Z"). */
void rfc3339_now(char buf[static 32]);

#endif
