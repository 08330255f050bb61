/*
 * Kubernetes JSON → compact proto structs. The watcher decodes every object
 * once, here; downstream processes never see Kubernetes JSON. Strings and
 * arrays are allocated from the caller's arena; the caller deep-copies the
 * result (proto_<kind>_dup) and resets the arena.
 *
 * A decoder fails (-EINVAL) only when the object cannot be represented at
 * all (no name, a field of the wrong type, a malformed quantity); the error
 * names the object and the field path. Objects that decode but make no
 * sense (a NodePool with impossible requirements) decode with status
 * invalid and a reason, so they are reported and skipped downstream.
 */
#ifndef KANNA_WATCHER_DECODE_H
#define KANNA_WATCHER_DECODE_H

#include <jansson.h>
#include <stdbool.h>

#include "common/arena.h"
#include "common/util.h"
#include "proto/karpenter.h"
#include "proto/proto.h"

#define DECODE_ERROR_MAX 512

/* Annotation on a NodeClaim naming the pods planned for it (DESIGN §2.4):
 * a JSON array of "namespace/name". */
#define ANNOTATION_PLANNED_PODS "kanna.dev/planned-pods"
#define ANNOTATION_DO_NOT_DISRUPT "karpenter.sh/do-not-disrupt"
#define ANNOTATION_MIRROR_POD "kubernetes.io/config.mirror"
#define ANNOTATION_SELECTED_NODE "volume.kubernetes.io/selected-node"
/* Kubernetes' corev1.PodDeletionCost: which replicas a ReplicaSet removes
 * first, and a term of Karpenter's EvictionCost (decode_pod_deletion_cost). */
#define ANNOTATION_POD_DELETION_COST "controller.kubernetes.io/pod-deletion-cost"
/* A pod deletion cost beyond this either way weighs the same in
 * EvictionCost (which clamps to [-10, 10] after adding at most 64 for the
 * priority): the decoder keeps it finite, and in this range. */
#define POD_DELETION_COST_MAX 1e11

/* Static drift (decode/decode-hash.c): the versions of our own hash
 * scheme, stamped next to the hashes (KARPENTER_*_HASH_VERSION_ANNOTATION,
 * proto/karpenter.h). A NodeClaim whose hash-version annotation differs
 * (stamped by Karpenter, whose "v3"/"v4" hashes we cannot reproduce, or by
 * an older kanna) is never statically drifted, as Karpenter skips static
 * drift on a version mismatch. */
#define NODEPOOL_HASH_VERSION "kanna-v1"
/* kanna-v2: v1beta1 and v1alpha5 node classes default the IMDS hop limit
 * to 2 (was 1), a hashed default. */
#define NODECLASS_HASH_VERSION "kanna-v2"
/* What the launcher writes for a nodeClassRef without group or kind. */
#define NODECLASS_REF_DEFAULT_GROUP "karpenter.k8s.aws"
#define NODECLASS_REF_DEFAULT_KIND "EC2NodeClass"

struct decoder {
	struct arena *arena;
	char error[DECODE_ERROR_MAX];
};

/* Every decoder: 0, or -EINVAL with d->error set, or -ENOMEM. */
int decode_pod(struct decoder *d, const json_t *obj, struct proto_pod *ret);
int decode_node(struct decoder *d, const json_t *obj, struct proto_node *ret);
/* karpenter.sh/v1 or v1beta1 NodePool, or karpenter.sh/v1alpha5 Provisioner. */
int decode_nodepool(struct decoder *d, const json_t *obj, struct proto_nodepool *ret);
int decode_nodeclaim(struct decoder *d, const json_t *obj, struct proto_nodeclaim *ret);
/* karpenter.k8s.aws/v1 or v1beta1 EC2NodeClass, v1alpha1 AWSNodeTemplate,
 * or the inline `provider` block of a v1alpha5 Provisioner (named after it). */
int decode_nodeclass(struct decoder *d, const json_t *obj, struct proto_nodeclass *ret);
int decode_pdb(struct decoder *d, const json_t *obj, struct proto_pdb *ret);
int decode_pvc(struct decoder *d, const json_t *obj, struct proto_pvc *ret);
int decode_pv(struct decoder *d, const json_t *obj, struct proto_pv *ret);
int decode_storageclass(struct decoder *d, const json_t *obj, struct proto_storageclass *ret);
int decode_daemonset(struct decoder *d, const json_t *obj, struct proto_daemonset *ret);
int decode_namespace(struct decoder *d, const json_t *obj, struct proto_namespace *ret);
/* karpenter.sh/v1alpha1 NodeOverlay: ret->invalid says why it is not applied. */
int decode_nodeoverlay(struct decoder *d, const json_t *obj, struct proto_nodeoverlay *ret);

/* The static-drift hashes (decode/decode-hash.c): over a decoded object,
 * the same whatever order its maps and lists were written in. The decoders
 * set nodepool_hash(_version) and nodeclass_hash(_version) with them. */
uint64_t nodepool_hash(const struct proto_nodepool *np);
uint64_t nodeclass_hash(const struct proto_nodeclass *nc);
int decode_nodepool_hash(struct decoder *d, struct proto_nodepool *np);
int decode_nodeclass_hash(struct decoder *d, struct proto_nodeclass *nc);

/* The pod deletion cost annotation's value as Karpenter's EvictionCost
 * reads it (strconv.ParseFloat: a decimal or hexadecimal float, Inf; no
 * space, nothing after it), held within ±POD_DELETION_COST_MAX; 0 when it
 * is absent or does not parse (Karpenter logs it and ignores it; NaN and
 * out-of-range values too, which ParseFloat refuses or would make the
 * cost order meaningless). */
double decode_pod_deletion_cost(const char *s);

/* Chooses the decoder by kind ("Pod", "NodePool", "Provisioner", …). */
int decode_object(struct decoder *d, const char *kind, const json_t *obj,
		  struct proto_object *ret);

/* ---- helpers shared by the decode-*.c files ---- */

int decode_fail(struct decoder *d, const char *fmt, ...) _printf_(2, 3);
/* Prefixes d->error with "<what> <ns>/<name>: " when r is -EINVAL; returns r. */
int decode_prefix(struct decoder *d, const char *what, const char *ns, const char *name, int r);
/* Formats a field path for messages; a path too long is cut, not an error. */
void decode_path(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);
/* The same for the value v that buf will name, only when v is there to
 * decode (absent and null values are not read, so their paths are never
 * shown: building them was 4% of the watcher's initial list). Returns v. */
const json_t *decode_path_of(const json_t *v, char *buf, size_t size, const char *fmt, ...)
	_printf_(4, 5);
/*
 * An optional JSON list (absent or null: none) of at most max entries:
 * allocates its elements zeroed and returns how many, or a negative errno
 * with "<where>: expected a list of <what>" or the limit in d->error.
 */
int decode_list(struct decoder *d, const json_t *arr, const char *where, size_t max,
		const char *what, size_t elem_size, void **ret);
/* Optional string at key; -EINVAL when present but not a string. */
int decode_string(struct decoder *d, const json_t *o, const char *key, const char *where,
		  char **ret);
/* A string map of at most max_entries, keys within PROTO_MAX_KEY_LEN and
 * values within max_value bytes: the limits of the proto field it fills. */
int decode_kv(struct decoder *d, const json_t *map, const char *where, uint32_t max_entries,
	      size_t max_value, struct proto_kv **ret, uint32_t *n);
int decode_strings(struct decoder *d, const json_t *arr, const char *where, char ***ret,
		   uint32_t *n);
/* metadata.namespace/name/uid/resourceVersion/creation/deletion. */
struct decoded_meta {
	char *ns, *name, *uid, *resource_version;
	int64_t creation_ms, deletion_ms;
	const json_t *labels, *annotations;
};
int decode_metadata(struct decoder *d, const json_t *obj, const char *kind, bool namespaced,
		    struct decoded_meta *ret);
int decode_requirements(struct decoder *d, const json_t *arr, const char *where,
			struct proto_requirement **ret, uint32_t *n);
/* The same with Karpenter's Gte and Lte (v1 NodePools and NodeClaims). */
int decode_karpenter_requirements(struct decoder *d, const json_t *arr, const char *where,
				  struct proto_requirement **ret, uint32_t *n);
int decode_node_selector_terms(struct decoder *d, const json_t *arr, const char *where,
			       struct proto_node_selector_term **ret, uint32_t *n);
int decode_label_selector(struct decoder *d, const json_t *sel, const char *where,
			  struct proto_label_selector *ret);
int decode_tolerations(struct decoder *d, const json_t *arr, const char *where,
		       struct proto_toleration **ret, uint32_t *n);
int decode_taints(struct decoder *d, const json_t *arr, const char *where,
		  struct proto_taint **ret, uint32_t *n);
int decode_conditions(struct decoder *d, const json_t *arr, const char *where,
		      struct proto_condition **ret, uint32_t *n);
/* A resource list (requests, capacity, limits): cpu in millicores, the rest
 * in units (bytes, counts). */
int decode_resources(struct decoder *d, const json_t *map, const char *where,
		     struct proto_resource **ret, uint32_t *n);
/* Kubelet settings that change allocatable (maxPods, podsPerCore,
 * systemReserved, kubeReserved, evictionHard with quantities or percentages). */
int decode_kubelet(struct decoder *d, const json_t *k, const char *where, struct proto_kubelet *ret);
/* The kubelet fields of Karpenter's CRDs (v1 EC2NodeClass, v1beta1
 * NodePool, v1alpha5 Provisioner) that decode_kubelet does not read. */
extern const char *const decode_kubelet_unsupported_fields[];
extern const size_t decode_kubelet_n_unsupported_fields;
/*
 * Whether a nodeClassRef (v1alpha5: providerRef) names the node class kanna
 * launches with: karpenter.k8s.aws EC2NodeClass, or for a v1alpha5
 * Provisioner karpenter.k8s.aws AWSNodeTemplate. group may be an apiVersion
 * (v1beta1, v1alpha5): its group part counts, as upstream's conversion to
 * v1 takes it. An absent group or kind is the default.
 */
bool decode_nodeclass_ref_supported(const char *group, const char *kind, bool v1alpha5);
/* The kubelet fields decode_kubelet reads. */
extern const char *const decode_kubelet_fields[];
extern const size_t decode_kubelet_n_fields;
/* Go duration ("720h", "30s") or "Never" (-1) into seconds. */
int decode_duration(struct decoder *d, const json_t *v, const char *where, int64_t *ret);
int64_t decode_time_ms(const json_t *v);
/* Optional RFC 3339 time at key into Unix ms (absent or null: 0); -EINVAL
 * when it is not one. */
int decode_time(struct decoder *d, const json_t *o, const char *key, const char *where,
		int64_t *ret);
int decode_condition_status(const char *s);
const json_t *json_path(const json_t *o, const char *dotted);

#endif
