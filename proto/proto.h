/*
 * Every message kanna's processes exchange, declared once. Each struct's
 * fields are an X-macro list; the C structs below, the msgpack encoder and
 * decoder, validation, deep copy, equality, JSON rendering, the random
 * generator of the tests and the field table in proto/README.md are all
 * generated from these lists (proto/schema.c), so sender, receiver and
 * documentation can never disagree. Wire format: proto/README.md.
 */
#ifndef KANNA_PROTO_PROTO_H
#define KANNA_PROTO_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/limits.h"

/* Bump MINOR when adding optional fields or messages (old peers skip them);
 * bump MAJOR for anything an old peer would misread: it is refused. */
#define PROTO_VERSION_MAJOR 2
#define PROTO_VERSION_MINOR 7

/* ------------------------------------------------------------------------
 * Enums: V(CONSTANT, "wire/JSON name"). Values are 0-based and contiguous;
 * on the wire an enum is its number. Adding a value is a MINOR bump and
 * appends at the end.
 * ------------------------------------------------------------------------ */
#define proto_values_process(V)                                               \
	V(PROTO_PROCESS_WATCHER, "watcher")                                   \
	V(PROTO_PROCESS_SCHEDULER, "scheduler")                               \
	V(PROTO_PROCESS_LAUNCHER, "launcher")                                 \
	V(PROTO_PROCESS_REAPER, "reaper")                                     \
	V(PROTO_PROCESS_TAP, "tap")                                           \
	V(PROTO_PROCESS_SIM, "sim")                                           \
	V(PROTO_PROCESS_TOOL, "tool")

/* M(a, CONSTANT, body): every message, in enum proto_msg_type order. */
#define PROTO_MESSAGES(M, a)                                                     \
	M(a, PROTO_MSG_HELLO, hello)                                             \
	M(a, PROTO_MSG_HEARTBEAT, heartbeat)                                     \
	M(a, PROTO_MSG_STATE_DELTA, state_delta)                                 \
	M(a, PROTO_MSG_SNAPSHOT_REQUEST, snapshot_request)                       \
	M(a, PROTO_MSG_SNAPSHOT_ITEM, snapshot_item)                             \
	M(a, PROTO_MSG_SNAPSHOT_END, snapshot_end)                               \
	M(a, PROTO_MSG_PENDING_PODS, pending_pods)                               \
	M(a, PROTO_MSG_LAUNCH_PLAN, launch_plan)                                 \
	M(a, PROTO_MSG_LAUNCH_RESULT, launch_result)                             \
	M(a, PROTO_MSG_OFFERING_UNAVAILABLE, offering_unavailable)               \
	M(a, PROTO_MSG_CATALOG, catalog)                                         \
	M(a, PROTO_MSG_DISRUPTION_DECISION, disruption_decision)

/* O(a, CONSTANT, struct): every cluster-state object, in enum order. */
#define PROTO_OBJECTS(O, a)                                                      \
	O(a, PROTO_OBJECT_POD, pod)                                              \
	O(a, PROTO_OBJECT_NODE, node)                                            \
	O(a, PROTO_OBJECT_NODEPOOL, nodepool)                                    \
	O(a, PROTO_OBJECT_NODECLAIM, nodeclaim)                                  \
	O(a, PROTO_OBJECT_NODECLASS, nodeclass)                                  \
	O(a, PROTO_OBJECT_PDB, pdb)                                              \
	O(a, PROTO_OBJECT_PVC, pvc)                                              \
	O(a, PROTO_OBJECT_PV, pv)                                                \
	O(a, PROTO_OBJECT_STORAGECLASS, storageclass)                            \
	O(a, PROTO_OBJECT_DAEMONSET, daemonset)                                  \
	O(a, PROTO_OBJECT_NAMESPACE, namespace)                                  \
	O(a, PROTO_OBJECT_NODEOVERLAY, nodeoverlay)

/* Generated from PROTO_MESSAGES / PROTO_OBJECTS above. */
#define PROTO_AS_VALUE_(V, c, name) V(c, #name)
#define proto_values_msg_type(V) PROTO_MESSAGES(PROTO_AS_VALUE_, V)
#define proto_values_object_kind(V) PROTO_OBJECTS(PROTO_AS_VALUE_, V)

#define proto_values_delta_op(V)                                              \
	V(PROTO_DELTA_ADD, "add")                                             \
	V(PROTO_DELTA_UPDATE, "update")                                       \
	V(PROTO_DELTA_DELETE, "delete")

#define proto_values_requirement_op(V)                                        \
	V(PROTO_OP_IN, "In")                                                  \
	V(PROTO_OP_NOT_IN, "NotIn")                                           \
	V(PROTO_OP_EXISTS, "Exists")                                          \
	V(PROTO_OP_DOES_NOT_EXIST, "DoesNotExist")                            \
	V(PROTO_OP_GT, "Gt")                                                  \
	V(PROTO_OP_LT, "Lt")                                                  \
	V(PROTO_OP_GTE, "Gte")                                                \
	V(PROTO_OP_LTE, "Lte")

#define proto_values_toleration_op(V)                                         \
	V(PROTO_TOLERATION_EQUAL, "Equal")                                    \
	V(PROTO_TOLERATION_EXISTS, "Exists")

/* ANY: a toleration with an empty effect matches every effect. */
#define proto_values_taint_effect(V)                                          \
	V(PROTO_EFFECT_ANY, "")                                               \
	V(PROTO_EFFECT_NO_SCHEDULE, "NoSchedule")                             \
	V(PROTO_EFFECT_PREFER_NO_SCHEDULE, "PreferNoSchedule")                \
	V(PROTO_EFFECT_NO_EXECUTE, "NoExecute")

#define proto_values_unsatisfiable(V)                                         \
	V(PROTO_UNSATISFIABLE_DO_NOT_SCHEDULE, "DoNotSchedule")               \
	V(PROTO_UNSATISFIABLE_SCHEDULE_ANYWAY, "ScheduleAnyway")

#define proto_values_inclusion_policy(V)                                      \
	V(PROTO_POLICY_UNSET, "")                                             \
	V(PROTO_POLICY_HONOR, "Honor")                                        \
	V(PROTO_POLICY_IGNORE, "Ignore")

#define proto_values_protocol(V)                                              \
	V(PROTO_PROTOCOL_TCP, "TCP")                                          \
	V(PROTO_PROTOCOL_UDP, "UDP")                                          \
	V(PROTO_PROTOCOL_SCTP, "SCTP")

#define proto_values_pod_phase(V)                                             \
	V(PROTO_PHASE_PENDING, "Pending")                                     \
	V(PROTO_PHASE_RUNNING, "Running")                                     \
	V(PROTO_PHASE_SUCCEEDED, "Succeeded")                                 \
	V(PROTO_PHASE_FAILED, "Failed")                                       \
	V(PROTO_PHASE_UNKNOWN, "Unknown")

#define proto_values_condition_status(V)                                      \
	V(PROTO_COND_UNKNOWN, "Unknown")                                      \
	V(PROTO_COND_TRUE, "True")                                            \
	V(PROTO_COND_FALSE, "False")

#define proto_values_capacity_type(V)                                         \
	V(PROTO_CAPACITY_ON_DEMAND, "on-demand")                              \
	V(PROTO_CAPACITY_SPOT, "spot")                                        \
	V(PROTO_CAPACITY_RESERVED, "reserved")

#define proto_values_consolidation_policy(V)                                  \
	V(PROTO_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED, "WhenEmptyOrUnderutilized") \
	V(PROTO_CONSOLIDATE_WHEN_EMPTY, "WhenEmpty")                          \
	V(PROTO_CONSOLIDATE_WHEN_UNDERUTILIZED, "WhenUnderutilized")         \
	V(PROTO_CONSOLIDATE_BALANCED, "Balanced")

/* The API version an object was read as (converted on read, DESIGN §3). */
#define proto_values_api_version(V)                                           \
	V(PROTO_API_V1, "v1")                                                 \
	V(PROTO_API_V1BETA1, "v1beta1")                                       \
	V(PROTO_API_V1ALPHA5, "v1alpha5")

#define proto_values_nodepool_status(V)                                       \
	V(PROTO_NODEPOOL_OK, "ok")                                            \
	V(PROTO_NODEPOOL_INVALID, "invalid")

#define proto_values_iop_kind(V)                                        \
	V(PROTO_IOP_UNSET, "unset")                                           \
	V(PROTO_IOP_INT, "int")                                               \
	V(PROTO_IOP_PERCENT, "percent")

#define proto_values_pvc_phase(V)                                             \
	V(PROTO_PVC_PENDING, "Pending")                                       \
	V(PROTO_PVC_BOUND, "Bound")                                           \
	V(PROTO_PVC_LOST, "Lost")

#define proto_values_binding_mode(V)                                          \
	V(PROTO_BINDING_IMMEDIATE, "Immediate")                               \
	V(PROTO_BINDING_WAIT_FOR_FIRST_CONSUMER, "WaitForFirstConsumer")

#define proto_values_launch_outcome(V)                                        \
	V(PROTO_LAUNCH_LAUNCHED, "launched")                                  \
	V(PROTO_LAUNCH_FAILED, "failed")                                      \
	V(PROTO_LAUNCH_INSUFFICIENT_CAPACITY, "insufficient_capacity")        \
	V(PROTO_LAUNCH_LIMIT_EXCEEDED, "limit_exceeded")                      \
	V(PROTO_LAUNCH_NODECLASS_NOT_READY, "nodeclass_not_ready")            \
	V(PROTO_LAUNCH_REGISTERED, "registered")                              \
	V(PROTO_LAUNCH_BOUND, "bound")

#define proto_values_disruption_reason(V)                                     \
	V(PROTO_DISRUPT_EMPTINESS, "emptiness")                               \
	V(PROTO_DISRUPT_EXPIRY, "expiry")                                     \
	V(PROTO_DISRUPT_DRIFT, "drift")                                       \
	V(PROTO_DISRUPT_CONSOLIDATION_DELETE, "consolidation_delete")         \
	V(PROTO_DISRUPT_CONSOLIDATION_REPLACE, "consolidation_replace")       \
	V(PROTO_DISRUPT_GARBAGE_COLLECTION, "garbage_collection")

/* E(name): every enum above. */
#define PROTO_ENUMS(E)                                                        \
	E(process) E(msg_type) E(object_kind) E(delta_op) E(requirement_op)  \
	E(toleration_op) E(taint_effect) E(unsatisfiable)                     \
	E(inclusion_policy) E(protocol) E(pod_phase) E(condition_status)      \
	E(capacity_type) E(consolidation_policy) E(api_version)               \
	E(nodepool_status) E(iop_kind) E(pvc_phase) E(binding_mode)     \
	E(launch_outcome) E(disruption_reason)

#define PROTO_ENUM_CONST_(c, s) c,
#define PROTO_ENUM_DECLARE_(e)                                                \
	enum proto_##e { proto_values_##e(PROTO_ENUM_CONST_) };
PROTO_ENUMS(PROTO_ENUM_DECLARE_)

/* ------------------------------------------------------------------------
 * Field kinds and their C representation:
 *   BOOL bool, U32 uint32_t, U64 uint64_t, I32 int32_t, I64 int64_t,
 *   F64 double, ENUM uint8_t (holding enum proto_<arg>),
 *   STR   char * (NULL when absent; arg unused, max = byte length)
 *   STRS  char **name + uint32_t n_name (arg = element length, max = count)
 *   KV    struct proto_kv *name + n_name, string→string map (labels,
 *         selectors, tags; arg = value length, max = entries)
 *   RES   struct proto_resource *name + n_name, resource name→int64
 *         (cpu millicores, memory/ephemeral-storage bytes, pods, extended)
 *   OBJ   struct proto_<arg> embedded
 *   OBJS  struct proto_<arg> *name + n_name (max = count)
 *   OBJECT struct proto_object: one cluster-state object of any kind
 * F(S, id, name, KIND, arg, max, REQ|OPT). Ids are the wire keys: never
 * reuse or renumber one; new fields take new ids and are OPT.
 * Times are Unix time in milliseconds, 0 = unset. Durations in seconds,
 * -1 = "Never".
 * ------------------------------------------------------------------------ */

struct proto_kv {
	char *key;
	char *value;
};

struct proto_resource {
	char *name;
	int64_t value;
};

#define proto_fields_requirement(F, S)                                        \
	F(S, 1, key, STR, _, PROTO_MAX_KEY_LEN, REQ)                          \
	F(S, 2, op, ENUM, requirement_op, 0, REQ)                             \
	F(S, 3, values, STRS, PROTO_MAX_VALUE_LEN, PROTO_MAX_REQUIREMENT_VALUES, OPT) \
	F(S, 4, min_values, U32, _, 0, OPT)

/* One nodeSelectorTerm: requirements ANDed. */
#define proto_fields_node_selector_term(F, S)                                 \
	F(S, 1, requirements, OBJS, requirement, PROTO_MAX_REQUIREMENTS, OPT)

#define proto_fields_preferred_term(F, S)                                     \
	F(S, 1, weight, I32, _, 0, REQ)                                       \
	F(S, 2, term, OBJ, node_selector_term, 0, REQ)

#define proto_fields_label_selector(F, S)                                     \
	F(S, 1, match_labels, KV, PROTO_MAX_LABEL_VALUE_LEN, PROTO_MAX_LABELS, OPT) \
	F(S, 2, match_expressions, OBJS, requirement, PROTO_MAX_REQUIREMENTS, OPT)

#define proto_fields_toleration(F, S)                                         \
	F(S, 1, key, STR, _, PROTO_MAX_KEY_LEN, OPT)                          \
	F(S, 2, op, ENUM, toleration_op, 0, OPT)                              \
	F(S, 3, value, STR, _, PROTO_MAX_LABEL_VALUE_LEN, OPT)                \
	F(S, 4, effect, ENUM, taint_effect, 0, OPT)                           \
	F(S, 5, has_seconds, BOOL, _, 0, OPT)                                 \
	F(S, 6, seconds, I64, _, 0, OPT)

#define proto_fields_taint(F, S)                                              \
	F(S, 1, key, STR, _, PROTO_MAX_KEY_LEN, REQ)                          \
	F(S, 2, value, STR, _, PROTO_MAX_LABEL_VALUE_LEN, OPT)                \
	F(S, 3, effect, ENUM, taint_effect, 0, REQ)

#define proto_fields_spread_constraint(F, S)                                  \
	F(S, 1, max_skew, I32, _, 0, REQ)                                     \
	F(S, 2, topology_key, STR, _, PROTO_MAX_KEY_LEN, REQ)                 \
	F(S, 3, when_unsatisfiable, ENUM, unsatisfiable, 0, REQ)              \
	F(S, 4, selector, OBJ, label_selector, 0, OPT)                        \
	F(S, 5, min_domains, I32, _, 0, OPT)                                  \
	F(S, 6, match_label_keys, STRS, PROTO_MAX_KEY_LEN, PROTO_MAX_LABELS, OPT) \
	F(S, 7, node_affinity_policy, ENUM, inclusion_policy, 0, OPT)         \
	F(S, 8, node_taints_policy, ENUM, inclusion_policy, 0, OPT)

#define proto_fields_pod_affinity_term(F, S)                                  \
	F(S, 1, topology_key, STR, _, PROTO_MAX_KEY_LEN, REQ)                 \
	F(S, 2, selector, OBJ, label_selector, 0, OPT)                        \
	F(S, 3, namespaces, STRS, PROTO_MAX_NAME_LEN, PROTO_MAX_NAMESPACES, OPT) \
	F(S, 4, has_namespace_selector, BOOL, _, 0, OPT)                      \
	F(S, 5, namespace_selector, OBJ, label_selector, 0, OPT)              \
	F(S, 6, match_label_keys, STRS, PROTO_MAX_KEY_LEN, PROTO_MAX_LABELS, OPT)

#define proto_fields_weighted_affinity_term(F, S)                             \
	F(S, 1, weight, I32, _, 0, REQ)                                       \
	F(S, 2, term, OBJ, pod_affinity_term, 0, REQ)

#define proto_fields_owner_ref(F, S)                                          \
	F(S, 1, kind, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 3, uid, STR, _, PROTO_MAX_NAME_LEN, OPT)                         \
	F(S, 4, controller, BOOL, _, 0, OPT)

#define proto_fields_host_port(F, S)                                          \
	F(S, 1, port, U32, _, 0, REQ)                                         \
	F(S, 2, protocol, ENUM, protocol, 0, OPT)                             \
	F(S, 3, host_ip, STR, _, PROTO_MAX_ID_LEN, OPT)

#define proto_fields_condition(F, S)                                          \
	F(S, 1, type, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, status, ENUM, condition_status, 0, REQ)                       \
	F(S, 3, reason, STR, _, PROTO_MAX_NAME_LEN, OPT)                      \
	F(S, 4, message, STR, _, PROTO_MAX_TEXT_LEN, OPT)                     \
	F(S, 5, last_transition, I64, _, 0, OPT)

/* Kubelet settings that change allocatable (v1 EC2NodeClass, v1beta1 NodePool). */
#define proto_fields_kubelet(F, S)                                            \
	F(S, 1, max_pods, I32, _, 0, OPT)                                     \
	F(S, 2, pods_per_core, I32, _, 0, OPT)                                \
	F(S, 3, system_reserved, RES, _, PROTO_MAX_RESOURCES, OPT)            \
	F(S, 4, kube_reserved, RES, _, PROTO_MAX_RESOURCES, OPT)              \
	F(S, 5, eviction_hard, KV, PROTO_MAX_LABEL_VALUE_LEN, PROTO_MAX_RESOURCES, OPT)

#define proto_fields_nodeclass_ref(F, S)                                      \
	F(S, 1, group, STR, _, PROTO_MAX_NAME_LEN, OPT)                       \
	F(S, 2, kind, STR, _, PROTO_MAX_NAME_LEN, OPT)                        \
	F(S, 3, name, STR, _, PROTO_MAX_NAME_LEN, REQ)

/* nodes: "10%" or "5"; schedule: cron; reasons: Empty, Drifted, Underutilized. */
#define proto_fields_budget(F, S)                                             \
	F(S, 1, nodes, STR, _, PROTO_MAX_LABEL_VALUE_LEN, REQ)                \
	F(S, 2, schedule, STR, _, PROTO_MAX_VALUE_LEN, OPT)                   \
	F(S, 3, duration_s, I64, _, 0, OPT)                                   \
	F(S, 4, reasons, STRS, PROTO_MAX_NAME_LEN, PROTO_MAX_REASONS, OPT)

#define proto_fields_int_or_percent(F, S)                                     \
	F(S, 1, kind, ENUM, iop_kind, 0, OPT)                           \
	F(S, 2, value, I32, _, 0, OPT)

/* EC2NodeClass subnet / security group / AMI selector term. */
#define proto_fields_selector_term(F, S)                                      \
	F(S, 1, tags, KV, PROTO_MAX_VALUE_LEN, PROTO_MAX_LABELS, OPT)         \
	F(S, 2, id, STR, _, PROTO_MAX_ID_LEN, OPT)                            \
	F(S, 3, name, STR, _, PROTO_MAX_VALUE_LEN, OPT)                       \
	F(S, 4, alias, STR, _, PROTO_MAX_NAME_LEN, OPT)                       \
	F(S, 5, owner, STR, _, PROTO_MAX_NAME_LEN, OPT)                       \
	F(S, 6, ssm_parameter, STR, _, PROTO_MAX_VALUE_LEN, OPT)

#define proto_fields_block_device(F, S)                                       \
	F(S, 1, device_name, STR, _, PROTO_MAX_NAME_LEN, REQ)                 \
	F(S, 2, volume_size_bytes, I64, _, 0, OPT)                            \
	F(S, 3, volume_type, STR, _, PROTO_MAX_NAME_LEN, OPT)                 \
	F(S, 4, iops, I32, _, 0, OPT)                                         \
	F(S, 5, throughput, I32, _, 0, OPT)                                   \
	F(S, 6, encrypted, BOOL, _, 0, OPT)                                   \
	F(S, 7, kms_key_id, STR, _, PROTO_MAX_VALUE_LEN, OPT)                 \
	F(S, 8, snapshot_id, STR, _, PROTO_MAX_ID_LEN, OPT)                   \
	F(S, 9, delete_on_termination, BOOL, _, 0, OPT)                       \
	F(S, 10, root_volume, BOOL, _, 0, OPT)

#define proto_fields_metadata_options(F, S)                                   \
	F(S, 1, http_endpoint, STR, _, PROTO_MAX_NAME_LEN, OPT)               \
	F(S, 2, http_protocol_ipv6, STR, _, PROTO_MAX_NAME_LEN, OPT)          \
	F(S, 3, http_put_response_hop_limit, I32, _, 0, OPT)                  \
	F(S, 4, http_tokens, STR, _, PROTO_MAX_NAME_LEN, OPT)

/* A resolved subnet (id, zone), security group (id, name) or AMI (id, name,
 * requirements it is valid for, e.g. arch). */
#define proto_fields_resolved(F, S)                                           \
	F(S, 1, id, STR, _, PROTO_MAX_ID_LEN, REQ)                            \
	F(S, 2, name, STR, _, PROTO_MAX_VALUE_LEN, OPT)                       \
	F(S, 3, zone, STR, _, PROTO_MAX_NAME_LEN, OPT)                        \
	F(S, 4, zone_id, STR, _, PROTO_MAX_NAME_LEN, OPT)                     \
	F(S, 5, requirements, OBJS, requirement, PROTO_MAX_REQUIREMENTS, OPT)

#define proto_fields_offering(F, S)                                           \
	F(S, 1, zone, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, capacity_type, ENUM, capacity_type, 0, REQ)                   \
	F(S, 3, price, F64, _, 0, REQ)                                        \
	F(S, 4, available, BOOL, _, 0, OPT)

/* A candidate instance type in a plan: its name and usable offerings. */
#define proto_fields_candidate(F, S)                                          \
	F(S, 1, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, offerings, OBJS, offering, PROTO_MAX_OFFERINGS, OPT)

/* A catalog entry. labels = the type's well-known labels (arch, os,
 * karpenter.k8s.aws/instance-*), capacity before and allocatable after the
 * overhead model. */
#define proto_fields_instance_type(F, S)                                      \
	F(S, 1, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, labels, KV, PROTO_MAX_LABEL_VALUE_LEN, PROTO_MAX_LABELS, OPT) \
	F(S, 3, capacity, RES, _, PROTO_MAX_RESOURCES, OPT)                   \
	F(S, 4, allocatable, RES, _, PROTO_MAX_RESOURCES, OPT)                \
	F(S, 5, offerings, OBJS, offering, PROTO_MAX_OFFERINGS, OPT)

/* ---- cluster-state objects (what the watcher replicates) ---------------- */

/* What the pods of one workload have in common: the labels, owner, requests
 * and constraints their template gives them. Pods of a Deployment or Job
 * share all of it and most pods ask nothing of topology, so a pod holds
 * this by reference (pod.template: none or one), a state store keeps one
 * copy of each distinct set, and the pod's own struct stays small (100,000
 * of them live in every replica). requests: the pod's effective request,
 * max(each init container) vs sum(containers), plus overhead;
 * per-container requests are not carried (no consumer needs them).
 * pvc_names: claims of the pod's volumes. Read it through
 * proto_pod_template_of(). */
#define proto_fields_pod_template(F, S)                                       \
	F(S, 1, labels, KV, PROTO_MAX_LABEL_VALUE_LEN, PROTO_MAX_LABELS, OPT) \
	F(S, 2, owner_refs, OBJS, owner_ref, PROTO_MAX_OWNER_REFS, OPT)       \
	F(S, 3, requests, RES, _, PROTO_MAX_RESOURCES, OPT)                   \
	F(S, 4, priority, I32, _, 0, OPT)                                     \
	F(S, 5, scheduler_name, STR, _, PROTO_MAX_NAME_LEN, OPT)              \
	F(S, 6, termination_grace_s, I64, _, 0, OPT)                          \
	F(S, 7, daemonset_owned, BOOL, _, 0, OPT)                             \
	F(S, 8, node_selector, KV, PROTO_MAX_LABEL_VALUE_LEN, PROTO_MAX_LABELS, OPT) \
	F(S, 9, node_affinity_required, OBJS, node_selector_term, PROTO_MAX_TERMS, OPT) \
	F(S, 10, node_affinity_preferred, OBJS, preferred_term, PROTO_MAX_TERMS, OPT) \
	F(S, 11, tolerations, OBJS, toleration, PROTO_MAX_TOLERATIONS, OPT)   \
	F(S, 12, topology_spread, OBJS, spread_constraint, PROTO_MAX_SPREAD, OPT) \
	F(S, 13, pod_affinity_required, OBJS, pod_affinity_term, PROTO_MAX_AFFINITY_TERMS, OPT) \
	F(S, 14, pod_affinity_preferred, OBJS, weighted_affinity_term, PROTO_MAX_AFFINITY_TERMS, OPT) \
	F(S, 15, pod_anti_affinity_required, OBJS, pod_affinity_term, PROTO_MAX_AFFINITY_TERMS, OPT) \
	F(S, 16, pod_anti_affinity_preferred, OBJS, weighted_affinity_term, PROTO_MAX_AFFINITY_TERMS, OPT) \
	F(S, 17, pvc_names, STRS, PROTO_MAX_NAME_LEN, PROTO_MAX_VOLUMES, OPT) \
	F(S, 18, host_ports, OBJS, host_port, PROTO_MAX_HOST_PORTS, OPT)

/* A pod: what tells it apart and where it stands; the rest is its
 * template (absent when empty; ids 5-17, 19, 28, 30 and 31 held those
 * fields before protocol 2 and are never reused).
 * nominated_nodeclaim: the NodeClaim whose planned-pods annotation names the
 * pod (DESIGN §2 rule 4). deletion_cost: the pod's
 * controller.kubernetes.io/pod-deletion-cost annotation (0 when absent or
 * not a number), which consolidation weighs as Karpenter's EvictionCost
 * does (since 2.3). scheduled_time: lastTransitionTime of its PodScheduled
 * condition when True (when it was bound; since 2.6). */
#define proto_fields_pod(F, S)                                                \
	F(S, 1, ns, STR, _, PROTO_MAX_NAME_LEN, REQ)                          \
	F(S, 2, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 3, uid, STR, _, PROTO_MAX_NAME_LEN, REQ)                         \
	F(S, 4, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 20, phase, ENUM, pod_phase, 0, OPT)                              \
	F(S, 21, scheduled, ENUM, condition_status, 0, OPT)                   \
	F(S, 22, scheduled_reason, STR, _, PROTO_MAX_NAME_LEN, OPT)           \
	F(S, 23, node_name, STR, _, PROTO_MAX_NAME_LEN, OPT)                  \
	F(S, 24, nominated_nodeclaim, STR, _, PROTO_MAX_NAME_LEN, OPT)        \
	F(S, 25, do_not_disrupt, BOOL, _, 0, OPT)                             \
	F(S, 26, creation_time, I64, _, 0, OPT)                               \
	F(S, 27, deletion_time, I64, _, 0, OPT)                               \
	F(S, 29, mirror, BOOL, _, 0, OPT)                                     \
	F(S, 32, template, OBJS, pod_template, 1, OPT)                        \
	F(S, 33, deletion_cost, F64, _, 0, OPT)                               \
	F(S, 34, scheduled_time, I64, _, 0, OPT)

#define proto_fields_node(F, S)                                               \
	F(S, 1, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, uid, STR, _, PROTO_MAX_NAME_LEN, REQ)                         \
	F(S, 3, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 4, labels, KV, PROTO_MAX_LABEL_VALUE_LEN, PROTO_MAX_LABELS, OPT) \
	F(S, 5, taints, OBJS, taint, PROTO_MAX_TAINTS, OPT)                   \
	F(S, 6, capacity, RES, _, PROTO_MAX_RESOURCES, OPT)                   \
	F(S, 7, allocatable, RES, _, PROTO_MAX_RESOURCES, OPT)                \
	F(S, 8, provider_id, STR, _, PROTO_MAX_ID_LEN, OPT)                   \
	F(S, 9, ready, ENUM, condition_status, 0, OPT)                        \
	F(S, 10, unschedulable, BOOL, _, 0, OPT)                              \
	F(S, 11, nodeclaim, STR, _, PROTO_MAX_NAME_LEN, OPT)                  \
	F(S, 12, creation_time, I64, _, 0, OPT)                               \
	F(S, 13, deletion_time, I64, _, 0, OPT)                               \
	F(S, 14, finalizers, STRS, PROTO_MAX_NAME_LEN, PROTO_MAX_FINALIZERS, OPT) \
	F(S, 15, do_not_disrupt, BOOL, _, 0, OPT)

#define proto_fields_nodepool(F, S)                                           \
	F(S, 1, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, uid, STR, _, PROTO_MAX_NAME_LEN, REQ)                         \
	F(S, 3, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 4, weight, I32, _, 0, OPT)                                       \
	F(S, 5, labels, KV, PROTO_MAX_LABEL_VALUE_LEN, PROTO_MAX_LABELS, OPT) \
	F(S, 6, annotations, KV, PROTO_MAX_ANNOTATION_LEN, PROTO_MAX_LABELS, OPT) \
	F(S, 7, requirements, OBJS, requirement, PROTO_MAX_REQUIREMENTS, OPT) \
	F(S, 8, taints, OBJS, taint, PROTO_MAX_TAINTS, OPT)                   \
	F(S, 9, startup_taints, OBJS, taint, PROTO_MAX_TAINTS, OPT)           \
	F(S, 10, nodeclass_ref, OBJ, nodeclass_ref, 0, OPT)                   \
	F(S, 11, expire_after_s, I64, _, 0, OPT)                              \
	F(S, 12, termination_grace_period_s, I64, _, 0, OPT)                  \
	F(S, 13, consolidation_policy, ENUM, consolidation_policy, 0, OPT)    \
	F(S, 14, consolidate_after_s, I64, _, 0, OPT)                         \
	F(S, 15, budgets, OBJS, budget, PROTO_MAX_BUDGETS, OPT)               \
	F(S, 16, limits, RES, _, PROTO_MAX_RESOURCES, OPT)                    \
	F(S, 17, source_api, ENUM, api_version, 0, OPT)                       \
	F(S, 18, status, ENUM, nodepool_status, 0, OPT)                       \
	F(S, 19, status_reason, STR, _, PROTO_MAX_TEXT_LEN, OPT)              \
	F(S, 20, kubelet, OBJ, kubelet, 0, OPT)                               \
	F(S, 21, creation_time, I64, _, 0, OPT) \
	F(S, 22, nodepool_hash, STR, _, PROTO_MAX_NAME_LEN, OPT)              \
	F(S, 23, nodepool_hash_version, STR, _, PROTO_MAX_NAME_LEN, OPT)      \
	F(S, 24, min_savings_per_hour, STR, _, PROTO_MAX_NAME_LEN, OPT)       \
	F(S, 25, min_savings_percent, STR, _, PROTO_MAX_NAME_LEN, OPT)      \
	F(S, 26, static_capacity, BOOL, _, 0, OPT)                            \
	F(S, 27, replicas, I64, _, 0, OPT)

/* nodepool static_capacity: spec.replicas is set (a static NodePool, since
 * 2.6): the launcher keeps exactly replicas NodeClaims of it whatever the
 * pods (launcher/static.c), the reaper removes the surplus
 * (reaper/static.c), no pod opens a NodeClaim in it and consolidation
 * leaves its nodes alone. replicas: spec.replicas, meaningful only with
 * static_capacity (0 is a valid static size, hence the flag).
 * nodepool min_savings_per_hour / min_savings_percent: the NodePool's own
 * kanna.dev/consolidation-min-savings-per-hour and -percent annotations as
 * written (model/budget.h min_savings_parse() reads them), so that a
 * Karpenter CRD schema need not know them. */

/* planned_pods: the pod keys ("ns/name") of the planned-pods annotation.
 * nodepool_hash / nodeclass_hash (and their _version): the
 * karpenter.sh/nodepool-hash(-version) and
 * karpenter.k8s.aws/ec2nodeclass-hash(-version) annotations, compared with
 * the NodePool's and EC2NodeClass's own for static drift (decode/decode.h). do_not_disrupt: the
 * karpenter.sh/do-not-disrupt annotation (also on nodes and pods).
 * fleet_batch: the kanna.dev/fleet-batch annotation, the ClientToken of
 * the CreateFleet call that launched several NodeClaims at once.
 * last_pod_event_time: status.lastPodEventTime, when the set of pods on its
 * Node last changed, as the reaper records it (reaper/pod-events.c; since
 * 2.6). */
#define proto_fields_nodeclaim(F, S)                                          \
	F(S, 1, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, uid, STR, _, PROTO_MAX_NAME_LEN, REQ)                         \
	F(S, 3, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 4, nodepool, STR, _, PROTO_MAX_NAME_LEN, OPT)                    \
	F(S, 5, nodeclass, STR, _, PROTO_MAX_NAME_LEN, OPT)                   \
	F(S, 6, labels, KV, PROTO_MAX_LABEL_VALUE_LEN, PROTO_MAX_LABELS, OPT) \
	F(S, 7, requirements, OBJS, requirement, PROTO_MAX_REQUIREMENTS, OPT) \
	F(S, 8, requests, RES, _, PROTO_MAX_RESOURCES, OPT)                   \
	F(S, 9, taints, OBJS, taint, PROTO_MAX_TAINTS, OPT)                   \
	F(S, 10, startup_taints, OBJS, taint, PROTO_MAX_TAINTS, OPT)          \
	F(S, 11, provider_id, STR, _, PROTO_MAX_ID_LEN, OPT)                  \
	F(S, 12, instance_type, STR, _, PROTO_MAX_NAME_LEN, OPT)              \
	F(S, 13, zone, STR, _, PROTO_MAX_NAME_LEN, OPT)                       \
	F(S, 14, capacity_type, ENUM, capacity_type, 0, OPT)                  \
	F(S, 15, image_id, STR, _, PROTO_MAX_ID_LEN, OPT)                     \
	F(S, 16, capacity, RES, _, PROTO_MAX_RESOURCES, OPT)                  \
	F(S, 17, allocatable, RES, _, PROTO_MAX_RESOURCES, OPT)               \
	F(S, 18, conditions, OBJS, condition, PROTO_MAX_CONDITIONS, OPT)      \
	F(S, 19, planned_pods, STRS, PROTO_MAX_KEY_LEN, PROTO_MAX_POD_KEYS, OPT) \
	F(S, 20, node_name, STR, _, PROTO_MAX_NAME_LEN, OPT)                  \
	F(S, 21, expire_after_s, I64, _, 0, OPT)                              \
	F(S, 22, termination_grace_period_s, I64, _, 0, OPT)                  \
	F(S, 23, creation_time, I64, _, 0, OPT)                               \
	F(S, 24, deletion_time, I64, _, 0, OPT) \
	F(S, 25, do_not_disrupt, BOOL, _, 0, OPT)                             \
	F(S, 26, nodepool_hash, STR, _, PROTO_MAX_NAME_LEN, OPT)              \
	F(S, 27, nodeclass_hash, STR, _, PROTO_MAX_NAME_LEN, OPT)             \
	F(S, 28, fleet_batch, STR, _, PROTO_MAX_ID_LEN, OPT)                  \
	F(S, 29, finalizers, STRS, PROTO_MAX_NAME_LEN, PROTO_MAX_FINALIZERS, OPT) \
	F(S, 30, nodepool_hash_version, STR, _, PROTO_MAX_NAME_LEN, OPT)      \
	F(S, 31, nodeclass_hash_version, STR, _, PROTO_MAX_NAME_LEN, OPT)     \
	F(S, 32, last_pod_event_time, I64, _, 0, OPT)

/* EC2NodeClass (v1; v1beta1 EC2NodeClass and v1alpha1 AWSNodeTemplate
 * converted). status_*: what the launcher resolved. nodeclass_hash(_version):
 * computed by the watcher's decoder (decode/decode-hash.c), as is a
 * NodePool's nodepool_hash(_version). user_data is not on the state feed:
 * the watcher publishes user_data_sha256 (hex SHA-256 of spec.userData)
 * instead and the launcher, the only reader, GETs the text (since 2.4).
 * unsupported: set by the watcher's decoder when the spec uses a field kanna
 * does not implement ("spec.cpuOptions is not supported by kanna"): the
 * launcher reports it as ValidationSucceeded=False and nothing is launched
 * for the class, rather than launching without the field.
 * associate_public_ip_address: spec.associatePublicIPAddress, Unknown when
 * unset (then the subnet decides), True or False as written. */
#define proto_fields_nodeclass(F, S)                                          \
	F(S, 1, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, uid, STR, _, PROTO_MAX_NAME_LEN, REQ)                         \
	F(S, 3, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 4, ami_family, STR, _, PROTO_MAX_NAME_LEN, OPT)                  \
	F(S, 5, ami_selector_terms, OBJS, selector_term, PROTO_MAX_SELECTOR_TERMS, OPT) \
	F(S, 6, subnet_selector_terms, OBJS, selector_term, PROTO_MAX_SELECTOR_TERMS, OPT) \
	F(S, 7, security_group_selector_terms, OBJS, selector_term, PROTO_MAX_SELECTOR_TERMS, OPT) \
	F(S, 8, role, STR, _, PROTO_MAX_VALUE_LEN, OPT)                       \
	F(S, 9, instance_profile, STR, _, PROTO_MAX_VALUE_LEN, OPT)           \
	F(S, 10, tags, KV, PROTO_MAX_VALUE_LEN, PROTO_MAX_LABELS, OPT)        \
	F(S, 11, user_data, STR, _, PROTO_MAX_USER_DATA_LEN, OPT)             \
	F(S, 12, block_devices, OBJS, block_device, PROTO_MAX_BLOCK_DEVICES, OPT) \
	F(S, 13, metadata_options, OBJ, metadata_options, 0, OPT)             \
	F(S, 14, kubelet, OBJ, kubelet, 0, OPT)                               \
	F(S, 15, detailed_monitoring, BOOL, _, 0, OPT)                        \
	F(S, 16, status_subnets, OBJS, resolved, PROTO_MAX_RESOLVED, OPT)     \
	F(S, 17, status_security_groups, OBJS, resolved, PROTO_MAX_RESOLVED, OPT) \
	F(S, 18, status_amis, OBJS, resolved, PROTO_MAX_RESOLVED, OPT)        \
	F(S, 19, status_instance_profile, STR, _, PROTO_MAX_VALUE_LEN, OPT)   \
	F(S, 20, ready, ENUM, condition_status, 0, OPT)                       \
	F(S, 21, ready_reason, STR, _, PROTO_MAX_TEXT_LEN, OPT)               \
	F(S, 22, source_api, ENUM, api_version, 0, OPT) \
	F(S, 23, nodeclass_hash, STR, _, PROTO_MAX_NAME_LEN, OPT)             \
	F(S, 24, nodeclass_hash_version, STR, _, PROTO_MAX_NAME_LEN, OPT)     \
	F(S, 25, user_data_sha256, STR, _, PROTO_MAX_NAME_LEN, OPT)           \
	F(S, 26, unsupported, STR, _, PROTO_MAX_TEXT_LEN, OPT)               \
	F(S, 27, associate_public_ip_address, ENUM, condition_status, 0, OPT)

#define proto_fields_pdb(F, S)                                                \
	F(S, 1, ns, STR, _, PROTO_MAX_NAME_LEN, REQ)                          \
	F(S, 2, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 3, uid, STR, _, PROTO_MAX_NAME_LEN, OPT)                         \
	F(S, 4, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 5, selector, OBJ, label_selector, 0, OPT)                        \
	F(S, 6, min_available, OBJ, int_or_percent, 0, OPT)                   \
	F(S, 7, max_unavailable, OBJ, int_or_percent, 0, OPT)                 \
	F(S, 8, disruptions_allowed, I32, _, 0, OPT)

/* selected_node: annotation volume.kubernetes.io/selected-node; zone: the
 * zone the claim is pinned to, when known (bound PV or topology annotation). */
#define proto_fields_pvc(F, S)                                                \
	F(S, 1, ns, STR, _, PROTO_MAX_NAME_LEN, REQ)                          \
	F(S, 2, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 3, uid, STR, _, PROTO_MAX_NAME_LEN, OPT)                         \
	F(S, 4, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 5, storage_class, STR, _, PROTO_MAX_NAME_LEN, OPT)               \
	F(S, 6, volume_name, STR, _, PROTO_MAX_NAME_LEN, OPT)                 \
	F(S, 7, phase, ENUM, pvc_phase, 0, OPT)                               \
	F(S, 8, selected_node, STR, _, PROTO_MAX_NAME_LEN, OPT)               \
	F(S, 9, zone, STR, _, PROTO_MAX_NAME_LEN, OPT)                        \
	F(S, 10, storage_bytes, I64, _, 0, OPT)

#define proto_fields_pv(F, S)                                                 \
	F(S, 1, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, uid, STR, _, PROTO_MAX_NAME_LEN, OPT)                         \
	F(S, 3, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 4, node_affinity, OBJS, node_selector_term, PROTO_MAX_TERMS, OPT) \
	F(S, 5, zone, STR, _, PROTO_MAX_NAME_LEN, OPT)                        \
	F(S, 6, storage_class, STR, _, PROTO_MAX_NAME_LEN, OPT)               \
	F(S, 7, claim_ns, STR, _, PROTO_MAX_NAME_LEN, OPT)                    \
	F(S, 8, claim_name, STR, _, PROTO_MAX_NAME_LEN, OPT)

/* allowed_topologies: each term's requirements are "key In values". */
#define proto_fields_storageclass(F, S)                                       \
	F(S, 1, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, uid, STR, _, PROTO_MAX_NAME_LEN, OPT)                         \
	F(S, 3, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 4, provisioner, STR, _, PROTO_MAX_NAME_LEN, OPT)                 \
	F(S, 5, binding_mode, ENUM, binding_mode, 0, OPT)                     \
	F(S, 6, allowed_topologies, OBJS, node_selector_term, PROTO_MAX_TERMS, OPT)

/* requests: the effective request of one of its pods. */
#define proto_fields_daemonset(F, S)                                          \
	F(S, 1, ns, STR, _, PROTO_MAX_NAME_LEN, REQ)                          \
	F(S, 2, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 3, uid, STR, _, PROTO_MAX_NAME_LEN, OPT)                         \
	F(S, 4, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 5, requests, RES, _, PROTO_MAX_RESOURCES, OPT)                   \
	F(S, 6, node_selector, KV, PROTO_MAX_LABEL_VALUE_LEN, PROTO_MAX_LABELS, OPT) \
	F(S, 7, node_affinity_required, OBJS, node_selector_term, PROTO_MAX_TERMS, OPT) \
	F(S, 8, tolerations, OBJS, toleration, PROTO_MAX_TOLERATIONS, OPT)    \
	F(S, 9, priority, I32, _, 0, OPT)                                     \
	F(S, 10, host_ports, OBJS, host_port, PROTO_MAX_HOST_PORTS, OPT)

/* Its labels are what pod (anti-)affinity namespaceSelectors match. */
#define proto_fields_namespace(F, S)                                          \
	F(S, 1, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, uid, STR, _, PROTO_MAX_NAME_LEN, OPT)                         \
	F(S, 3, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 4, labels, KV, PROTO_MAX_LABEL_VALUE_LEN, PROTO_MAX_LABELS, OPT)

/* A karpenter.sh/v1alpha1 NodeOverlay (decode/decode-nodeoverlay.c):
 * requirements select instance types and offerings; price (absolute,
 * has_price) or price_adjustment (a delta, or adjustment_percent: a
 * percentage) change the offerings' prices; capacity adds extended
 * resources. invalid: why it fails validation (then it is not applied). */
#define proto_fields_nodeoverlay(F, S)                                        \
	F(S, 1, name, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, uid, STR, _, PROTO_MAX_NAME_LEN, OPT)                         \
	F(S, 3, resource_version, STR, _, PROTO_MAX_NAME_LEN, OPT)            \
	F(S, 4, weight, I32, _, 0, OPT)                                       \
	F(S, 5, requirements, OBJS, requirement, PROTO_MAX_REQUIREMENTS, OPT) \
	F(S, 6, has_price, BOOL, _, 0, OPT)                                   \
	F(S, 7, price, F64, _, 0, OPT)                                        \
	F(S, 8, has_adjustment, BOOL, _, 0, OPT)                              \
	F(S, 9, adjustment, F64, _, 0, OPT)                                   \
	F(S, 10, adjustment_percent, BOOL, _, 0, OPT)                         \
	F(S, 11, capacity, RES, _, PROTO_MAX_RESOURCES, OPT)                  \
	F(S, 12, invalid, STR, _, PROTO_MAX_TEXT_LEN, OPT)

/* ---- plans and results --------------------------------------------------- */

/* One NodeClaim to create. id: chosen by the scheduler, unique per plan, and
 * the NodeClaim's name (so a replayed plan names the same NodeClaim).
 * instance_types: ≤ 60 candidates, cheapest first. pods: keys "ns/name". */
#define proto_fields_planned_nodeclaim(F, S)                                  \
	F(S, 1, id, STR, _, PROTO_MAX_NAME_LEN, REQ)                          \
	F(S, 2, nodepool, STR, _, PROTO_MAX_NAME_LEN, REQ)                    \
	F(S, 3, nodeclass, STR, _, PROTO_MAX_NAME_LEN, OPT)                   \
	F(S, 4, requirements, OBJS, requirement, PROTO_MAX_REQUIREMENTS, OPT) \
	F(S, 5, instance_types, OBJS, candidate, PROTO_MAX_CANDIDATES, REQ)   \
	F(S, 6, requests, RES, _, PROTO_MAX_RESOURCES, OPT)                   \
	F(S, 7, pods, STRS, PROTO_MAX_KEY_LEN, PROTO_MAX_POD_KEYS, OPT)

/* A disruption candidate: the node, its NodeClaim and what it costs. */
#define proto_fields_disruption_candidate(F, S)                               \
	F(S, 1, node, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 2, nodeclaim, STR, _, PROTO_MAX_NAME_LEN, OPT)                   \
	F(S, 3, nodepool, STR, _, PROTO_MAX_NAME_LEN, OPT)                    \
	F(S, 4, instance_type, STR, _, PROTO_MAX_NAME_LEN, OPT)               \
	F(S, 5, capacity_type, ENUM, capacity_type, 0, OPT)                   \
	F(S, 6, price, F64, _, 0, OPT)                                        \
	F(S, 7, pods, STRS, PROTO_MAX_KEY_LEN, PROTO_MAX_POD_KEYS, OPT)

/* ---- message bodies -------------------------------------------------------
 * The envelope travels with every message; body = one of the messages below,
 * chosen by envelope.type. */

#define proto_fields_envelope(F, S)                                           \
	F(S, 1, type, ENUM, msg_type, 0, REQ)                                 \
	F(S, 2, seq, U64, _, 0, OPT)                                          \
	F(S, 3, sender, ENUM, process, 0, REQ)                                \
	F(S, 4, sender_shard, U32, _, 0, OPT)                                 \
	F(S, 5, send_time_ns, I64, _, 0, OPT)                                 \
	F(S, 6, trace_id, U64, _, 0, OPT)

/* First message on every connection; a peer whose version major, role or
 * shard count does not match is refused loudly (STYLE 12). */
#define proto_fields_hello(F, S)                                              \
	F(S, 1, version_major, U32, _, 0, REQ)                                \
	F(S, 2, version_minor, U32, _, 0, REQ)                                \
	F(S, 3, role, ENUM, process, 0, REQ)                                  \
	F(S, 4, shard, U32, _, 0, OPT)                                        \
	F(S, 5, n_shards, U32, _, 0, OPT)                                     \
	F(S, 6, instance, STR, _, PROTO_MAX_NAME_LEN, OPT)                    \
	F(S, 7, pid, U32, _, 0, OPT)

#define proto_fields_heartbeat(F, S)                                          \
	F(S, 1, uptime_ms, I64, _, 0, OPT)                                    \
	F(S, 2, state_seq, U64, _, 0, OPT)                                    \
	F(S, 3, queue_depth, U32, _, 0, OPT)

/* Clone pattern: every change to cluster state, gap-free seq. */
#define proto_fields_state_delta(F, S)                                        \
	F(S, 1, seq, U64, _, 0, REQ)                                          \
	F(S, 2, op, ENUM, delta_op, 0, REQ)                                   \
	F(S, 3, object, OBJECT, _, 0, REQ)

#define proto_fields_snapshot_request(F, S)                                   \
	F(S, 1, since_seq, U64, _, 0, OPT)

#define proto_fields_snapshot_item(F, S)                                      \
	F(S, 1, seq, U64, _, 0, OPT)                                          \
	F(S, 2, object, OBJECT, _, 0, REQ)

#define proto_fields_snapshot_end(F, S)                                       \
	F(S, 1, as_of_seq, U64, _, 0, REQ)                                    \
	F(S, 2, n_items, U64, _, 0, OPT)

#define proto_fields_pending_pods(F, S)                                       \
	F(S, 1, shard, U32, _, 0, OPT)                                        \
	F(S, 2, n_shards, U32, _, 0, OPT)                                     \
	F(S, 3, state_seq, U64, _, 0, OPT)                                    \
	F(S, 4, pods, OBJS, pod, PROTO_MAX_PENDING_PODS, REQ)

#define proto_fields_launch_plan(F, S)                                        \
	F(S, 1, plan_id, STR, _, PROTO_MAX_ID_LEN, REQ)                       \
	F(S, 2, shard, U32, _, 0, OPT)                                        \
	F(S, 3, batch_id, U64, _, 0, OPT)                                     \
	F(S, 4, state_seq, U64, _, 0, OPT)                                    \
	F(S, 5, nodeclaims, OBJS, planned_nodeclaim, PROTO_MAX_PLAN_NODECLAIMS, REQ)

#define proto_fields_launch_result(F, S)                                      \
	F(S, 1, plan_id, STR, _, PROTO_MAX_ID_LEN, OPT)                       \
	F(S, 2, nodeclaim, STR, _, PROTO_MAX_NAME_LEN, REQ)                   \
	F(S, 3, outcome, ENUM, launch_outcome, 0, REQ)                        \
	F(S, 4, instance_id, STR, _, PROTO_MAX_ID_LEN, OPT)                   \
	F(S, 5, instance_type, STR, _, PROTO_MAX_NAME_LEN, OPT)               \
	F(S, 6, zone, STR, _, PROTO_MAX_NAME_LEN, OPT)                        \
	F(S, 7, capacity_type, ENUM, capacity_type, 0, OPT)                   \
	F(S, 8, error, STR, _, PROTO_MAX_TEXT_LEN, OPT)                       \
	F(S, 9, pods, STRS, PROTO_MAX_KEY_LEN, PROTO_MAX_POD_KEYS, OPT)       \
	F(S, 10, node_name, STR, _, PROTO_MAX_NAME_LEN, OPT)

/* until: Unix ms after which the offering may be tried again. */
#define proto_fields_offering_unavailable(F, S)                               \
	F(S, 1, instance_type, STR, _, PROTO_MAX_NAME_LEN, REQ)               \
	F(S, 2, zone, STR, _, PROTO_MAX_NAME_LEN, REQ)                        \
	F(S, 3, capacity_type, ENUM, capacity_type, 0, REQ)                   \
	F(S, 4, until, I64, _, 0, REQ)                                        \
	F(S, 5, reason, STR, _, PROTO_MAX_TEXT_LEN, OPT)

#define proto_fields_catalog(F, S)                                            \
	F(S, 1, generation, U64, _, 0, OPT)                                   \
	F(S, 2, region, STR, _, PROTO_MAX_NAME_LEN, OPT)                      \
	F(S, 3, instance_types, OBJS, instance_type, PROTO_MAX_CATALOG_TYPES, REQ)

/* savings: $/hour saved; explanation: why, in words a user can act on. */
#define proto_fields_disruption_decision(F, S)                                \
	F(S, 1, id, STR, _, PROTO_MAX_ID_LEN, REQ)                            \
	F(S, 2, reason, ENUM, disruption_reason, 0, REQ)                      \
	F(S, 3, candidates, OBJS, disruption_candidate, PROTO_MAX_DISRUPTION_NODES, REQ) \
	F(S, 4, replacements, OBJS, planned_nodeclaim, PROTO_MAX_DISRUPTION_NODES, OPT) \
	F(S, 5, savings, F64, _, 0, OPT)                                      \
	F(S, 6, explanation, STR, _, PROTO_MAX_TEXT_LEN, OPT)

/* ------------------------------------------------------------------------
 * Every struct, in dependency order (an OBJ must come after its type).
 * ------------------------------------------------------------------------ */
#define PROTO_STRUCTS(X)                                                      \
	X(requirement) X(node_selector_term) X(preferred_term)                \
	X(label_selector) X(toleration) X(taint) X(spread_constraint)         \
	X(pod_affinity_term) X(weighted_affinity_term) X(owner_ref)           \
	X(host_port) X(pod_template) X(condition) X(kubelet) X(nodeclass_ref) \
	X(budget)                                                             \
	X(int_or_percent) X(selector_term) X(block_device)                    \
	X(metadata_options) X(resolved) X(offering) X(candidate)              \
	X(instance_type) X(pod) X(node) X(nodepool) X(nodeclaim)              \
	X(nodeclass) X(pdb) X(pvc) X(pv) X(storageclass) X(daemonset)         \
	X(namespace) X(nodeoverlay)                                           \
	X(planned_nodeclaim) X(disruption_candidate) X(envelope)              \
	PROTO_MESSAGES(PROTO_MSG_STRUCT_, X)
#define PROTO_MSG_STRUCT_(X, c, name) X(name)

/* ---- the C structs, generated ------------------------------------------- *
 * Members are laid out widest first: pointers and 64-bit values, then
 * 32-bit values and array counts, then bytes (bools and enums), each group
 * in field order. An array and its count side by side would pad 4 bytes
 * each: the pod struct is 272 bytes this way instead of 328, 5.6 MB for
 * 100,000 pods in every replica. Initialize these structs by member name:
 * a positional initializer follows this layout, not the field list. */
#define PROTO_WIDE_BOOL(name, arg)
#define PROTO_WIDE_U32(name, arg)
#define PROTO_WIDE_U64(name, arg) uint64_t name;
#define PROTO_WIDE_I32(name, arg)
#define PROTO_WIDE_I64(name, arg) int64_t name;
#define PROTO_WIDE_F64(name, arg) double name;
#define PROTO_WIDE_ENUM(name, arg)
#define PROTO_WIDE_STR(name, arg) char *name;
#define PROTO_WIDE_STRS(name, arg) char **name;
#define PROTO_WIDE_KV(name, arg) struct proto_kv *name;
#define PROTO_WIDE_RES(name, arg) struct proto_resource *name;
#define PROTO_WIDE_OBJ(name, arg) struct proto_##arg name;
#define PROTO_WIDE_OBJS(name, arg) struct proto_##arg *name;
#define PROTO_WIDE_OBJECT(name, arg) struct proto_object name;
#define PROTO_MID_BOOL(name, arg)
#define PROTO_MID_U32(name, arg) uint32_t name;
#define PROTO_MID_U64(name, arg)
#define PROTO_MID_I32(name, arg) int32_t name;
#define PROTO_MID_I64(name, arg)
#define PROTO_MID_F64(name, arg)
#define PROTO_MID_ENUM(name, arg)
#define PROTO_MID_STR(name, arg)
#define PROTO_MID_STRS(name, arg) uint32_t n_##name;
#define PROTO_MID_KV(name, arg) uint32_t n_##name;
#define PROTO_MID_RES(name, arg) uint32_t n_##name;
#define PROTO_MID_OBJ(name, arg)
#define PROTO_MID_OBJS(name, arg) uint32_t n_##name;
#define PROTO_MID_OBJECT(name, arg)
#define PROTO_NARROW_BOOL(name, arg) bool name;
#define PROTO_NARROW_ENUM(name, arg) uint8_t name; /* enum proto_##arg */
#define PROTO_NARROW_U32(name, arg)
#define PROTO_NARROW_U64(name, arg)
#define PROTO_NARROW_I32(name, arg)
#define PROTO_NARROW_I64(name, arg)
#define PROTO_NARROW_F64(name, arg)
#define PROTO_NARROW_STR(name, arg)
#define PROTO_NARROW_STRS(name, arg)
#define PROTO_NARROW_KV(name, arg)
#define PROTO_NARROW_RES(name, arg)
#define PROTO_NARROW_OBJ(name, arg)
#define PROTO_NARROW_OBJS(name, arg)
#define PROTO_NARROW_OBJECT(name, arg)
#define PROTO_MEMBER_WIDE_(S, id, name, kind, arg, max, flags) PROTO_WIDE_##kind(name, arg)
#define PROTO_MEMBER_MID_(S, id, name, kind, arg, max, flags) PROTO_MID_##kind(name, arg)
#define PROTO_MEMBER_NARROW_(S, id, name, kind, arg, max, flags) PROTO_NARROW_##kind(name, arg)

#define PROTO_FORWARD_(s) struct proto_##s;
PROTO_STRUCTS(PROTO_FORWARD_)

/* One cluster-state object: kind selects the union member. */
struct proto_object {
	uint8_t kind; /* enum proto_object_kind */
	union {
		void *ptr;
#define PROTO_OBJECT_MEMBER_(a, c, s) struct proto_##s *s;
		PROTO_OBJECTS(PROTO_OBJECT_MEMBER_, _)
#undef PROTO_OBJECT_MEMBER_
	};
};

#define PROTO_DEFINE_STRUCT_(s)                                               \
	struct proto_##s {                                                    \
		proto_fields_##s(PROTO_MEMBER_WIDE_, s)                       \
		proto_fields_##s(PROTO_MEMBER_MID_, s)                        \
		proto_fields_##s(PROTO_MEMBER_NARROW_, s)                     \
	};
PROTO_STRUCTS(PROTO_DEFINE_STRUCT_)

/* A pod's template; all empty when it has none. */
static inline const struct proto_pod_template *proto_pod_template_of(const struct proto_pod *p)
{
	static const struct proto_pod_template none;

	return p->n_template ? p->template : &none;
}

/* A whole message. version_*: as received (encode always sends this
 * build's PROTO_VERSION_*). body: the member named by env.type. */
struct proto_msg {
	uint8_t version_major;
	uint8_t version_minor;
	struct proto_envelope env;
	union {
#define PROTO_BODY_MEMBER_(a, c, s) struct proto_##s s;
		PROTO_MESSAGES(PROTO_BODY_MEMBER_, _)
#undef PROTO_BODY_MEMBER_
	} body;
};

/* ------------------------------------------------------------------------
 * Codec API (proto/codec.c, proto/decode.c, proto/json.c)
 * ------------------------------------------------------------------------ */

enum proto_error_code {
	PROTO_OK = 0,
	PROTO_E_TRUNCATED,     /* frame ends inside an object */
	PROTO_E_TRAILING,      /* bytes after the top-level object */
	PROTO_E_MALFORMED,     /* not msgpack (reserved byte 0xc1), or nesting too deep */
	PROTO_E_FRAME_SIZE,    /* frame larger than PROTO_MAX_FRAME_BYTES */
	PROTO_E_VERSION,       /* protocol major we do not speak */
	PROTO_E_TYPE,          /* a field has the wrong msgpack type */
	PROTO_E_RANGE,         /* integer out of range, unknown enum value */
	PROTO_E_TOO_LONG,      /* string longer than its limit */
	PROTO_E_TOO_MANY,      /* array/map with more entries than its limit */
	PROTO_E_MISSING,       /* required field absent */
	PROTO_E_DUPLICATE,     /* field id given twice */
	PROTO_E_UNKNOWN_TYPE,  /* envelope.type or object kind we do not know */
	PROTO_E_NOMEM,
};

#define PROTO_ERROR_TEXT_MAX 256
struct proto_error {
	enum proto_error_code code;
	/* e.g. "launch_plan.nodeclaims[3].instance_types: array of 61 exceeds limit 60" */
	char text[PROTO_ERROR_TEXT_MAX];
};

const char *proto_error_code_name(enum proto_error_code code);
const char *proto_type_name(enum proto_msg_type type);
const char *proto_process_name(enum proto_process process);
const char *proto_object_kind_name(enum proto_object_kind kind);

/*
 * Appends the encoded message to out (a msgpack_sbuffer from <msgpack.h>;
 * msgpack_sbuffer_clear() it to reuse the buffer). Refuses a message a peer
 * would reject: -EBADMSG (limits, missing required field, bad enum),
 * -EMSGSIZE (frame too large), -ENOMEM; err (may be NULL) says which field.
 * On failure out is left as it was.
 */
struct msgpack_sbuffer;
int proto_encode(const struct proto_msg *msg, struct msgpack_sbuffer *out,
		 struct proto_error *err);

/*
 * Whether a cluster-state object can travel at all: encodes it inside the
 * largest message that carries one (a state_delta whose envelope and
 * sequence fields are at their widest) and discards the bytes. 0, or
 * -EBADMSG/-EMSGSIZE/-ENOMEM with err naming the field from the object
 * down ("annotations[0]: string of 5000 bytes exceeds limit 4096"). The
 * watcher's decoders call it, so that what they accept can always be
 * published.
 */
int proto_object_check(const struct proto_object *obj, struct proto_error *err);

/*
 * A decoder owns the memory of the last message it decoded; that message is
 * valid until the next proto_decode() or proto_decoder_free(). Keep data
 * longer with proto_msg_dup() / proto_<struct>_dup().
 */
struct proto_decoder;
struct proto_decoder *proto_decoder_new(void);
void proto_decoder_free(struct proto_decoder *d);
/* Lowers the decoded-size budget (default and maximum PROTO_MAX_DECODED_BYTES). */
void proto_decoder_set_max_decoded(struct proto_decoder *d, size_t max_bytes);
/* Ends the last message's life now rather than at the next decode: a big
 * one's memory (a catalog, a snapshot batch) goes back at once instead of
 * staying until a next message comes, which on a quiet socket is hours. */
void proto_decoder_release(struct proto_decoder *d);

/*
 * Decodes exactly one frame. Returns 0 and *ret, or -EBADMSG (malformed,
 * wrong type, limits, missing field), -EPROTONOSUPPORT (version major),
 * -EMSGSIZE (frame too large), -ENOMEM, with err (may be NULL) filled.
 */
int proto_decode(struct proto_decoder *d, const void *buf, size_t len,
		 const struct proto_msg **ret, struct proto_error *err);

/*
 * Decodes a frame that must be a hello, of any protocol major: the
 * envelope's type and sender and the hello's fields are frozen across
 * majors (proto/README.md, Conversation), so that a peer of another
 * release can be named when it is refused. Anything but a hello: -EBADMSG
 * (PROTO_E_TYPE), or -EPROTONOSUPPORT when it is of another major. Check
 * the result with proto_hello_verify().
 */
int proto_decode_hello(struct proto_decoder *d, const void *buf, size_t len,
		       const struct proto_msg **ret, struct proto_error *err);

/* Zeroes *m and stamps the envelope: type, sender, shard, seq, send time. */
void proto_msg_init(struct proto_msg *m, enum proto_msg_type type, enum proto_process sender,
		    uint32_t shard, uint64_t seq);
/* The hello that opens every connection (instance may be NULL). */
void proto_hello_init(struct proto_msg *m, enum proto_process role, uint32_t shard,
		      uint32_t n_shards, const char *instance, uint32_t pid);
/*
 * Checks a peer's first message: a hello of our major version from
 * want_role and, when want_n_shards is not 0, with that shard count.
 * Returns 0, or a negative errno with err saying what differs; the caller
 * logs it as an error and closes the connection.
 */
int proto_hello_verify(const struct proto_msg *m, enum proto_process want_role,
		       uint32_t want_n_shards, struct proto_error *err);

/* Deep copies in ONE allocation each; release with free() or *_free(). */
struct proto_msg *proto_msg_dup(const struct proto_msg *msg);
void proto_msg_free(struct proto_msg *msg);
bool proto_msg_equal(const struct proto_msg *a, const struct proto_msg *b);
int proto_object_dup(const struct proto_object *src, struct proto_object *dst);
void proto_object_free(struct proto_object *obj);

/*
 * Copies for objects kept long in large numbers (the state stores,
 * proto/share.c): the object's block holds `header` bytes for the caller,
 * then its struct and the strings that tell it apart (name, uid,
 * resource_version); every other string and every array is shared through
 * sh with the objects that hold the same value, counted by reference.
 * Such a copy is read-only and released only with proto_object_free_shared().
 */
struct proto_share;
int proto_share_new(struct proto_share **ret);
struct proto_share *proto_share_ref(struct proto_share *sh);
struct proto_share *proto_share_unref(struct proto_share *sh); /* returns NULL */
size_t proto_share_count(const struct proto_share *sh);       /* values held */
int proto_object_dup_shared(struct proto_share *sh, const struct proto_object *src, size_t header,
			    void **block, struct proto_object *dst);
void proto_object_free_shared(struct proto_share *sh, void *block, const struct proto_object *obj);

#define PROTO_DECLARE_DUP_(s)                                                 \
	struct proto_##s *proto_##s##_dup(const struct proto_##s *src);      \
	void proto_##s##_free(struct proto_##s *p);
PROTO_STRUCTS(PROTO_DECLARE_DUP_)

/* {"version":"1.0","type":"launch_plan","seq":…,"sender":"scheduler",
 *  …envelope…, "body":{field: value…}}; enums by name. NULL on ENOMEM. */
typedef struct json_t json_t;
json_t *proto_to_json(const struct proto_msg *msg);

#endif
