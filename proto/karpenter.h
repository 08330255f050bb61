/*
 * The names Karpenter gives things on Kubernetes objects — finalizers,
 * taints, annotations, API paths — that more than one kanna daemon writes
 * or reads (the launcher puts them on, the reaper takes them off), and
 * the decoders read. One spelling, here, in proto/ because decode/ and
 * model/ both need it and neither may include the other.
 */
#ifndef KANNA_PROTO_KARPENTER_H
#define KANNA_PROTO_KARPENTER_H

/* Karpenter's termination finalizer, on every NodeClaim and Node we create;
 * the reaper removes it once the instance is gone. */
#define KARPENTER_TERMINATION_FINALIZER "karpenter.sh/termination"
/*
 * The hold on a Node the launcher launched: karpenter.sh/unregistered, the
 * key Karpenter's kubelets register with (as NoExecute, user data), here
 * NoSchedule. The launcher creates the Node with it (or puts it in place
 * of the kubelet's) and takes it off once the pods planned for the Node
 * are bound or released, so that the default scheduler never places a pod
 * there between the Node turning Ready and a bind the launcher retries —
 * two binders racing on one Node, each within the other's replica lag,
 * overcommit it. NoSchedule, not NoExecute: the launcher binds through it,
 * and a kubelet refuses (and the taint manager evicts) pods that do not
 * tolerate a NoExecute taint. Pods are not refused for it by kanna's
 * schedulers (an ephemeral taint, model/from-state.c).
 */
#define KARPENTER_UNREGISTERED_TAINT_KEY "karpenter.sh/unregistered"
/* The taint a Node gets once it is chosen for removal (Karpenter v1:
 * karpenter.sh/disrupted:NoSchedule): nothing new lands there. */
#define KARPENTER_DISRUPTED_TAINT_KEY "karpenter.sh/disrupted"
/* Pods, Nodes and NodeClaims with it are not disrupted voluntarily. */
#define KARPENTER_DO_NOT_DISRUPT_ANNOTATION "karpenter.sh/do-not-disrupt"
/* Static drift: the hashes (and their scheme's version) of the NodePool and
 * EC2NodeClass a NodeClaim was launched from (decode/decode-hash.c). */
#define KARPENTER_NODEPOOL_HASH_ANNOTATION "karpenter.sh/nodepool-hash"
#define KARPENTER_NODEPOOL_HASH_VERSION_ANNOTATION "karpenter.sh/nodepool-hash-version"
#define KARPENTER_NODECLASS_HASH_ANNOTATION "karpenter.k8s.aws/ec2nodeclass-hash"
#define KARPENTER_NODECLASS_HASH_VERSION_ANNOTATION "karpenter.k8s.aws/ec2nodeclass-hash-version"

/* kanna's own NodePool annotations (a Karpenter CRD schema keeps unknown
 * annotations): no consolidation replace saves less than this, in $/hour
 * and/or in percent of the replaced nodes' price (model/budget.h). */
#define KANNA_MIN_SAVINGS_PER_HOUR_ANNOTATION "kanna.dev/consolidation-min-savings-per-hour"
#define KANNA_MIN_SAVINGS_PERCENT_ANNOTATION "kanna.dev/consolidation-min-savings-percent"

#define KARPENTER_NODECLAIMS_PATH "/apis/karpenter.sh/v1/nodeclaims"
#define KUBE_NODES_PATH "/api/v1/nodes"
#define KUBE_MERGE_PATCH "application/merge-patch+json"
#define KUBE_JSON_PATCH "application/json-patch+json"

#endif
