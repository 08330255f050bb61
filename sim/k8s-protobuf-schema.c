/*
 * The protobuf messages kanna-sim decodes (see k8s-protobuf.h): field
 * numbers, JSON names and shapes from k8s.io/api and k8s.io/apimachinery
 * generated.proto (core/v1, apps/v1, policy/v1, meta/v1, intstr,
 * resource). Every field of these messages is listed except nested types
 * that kubectl's generators never fill (volumes, probes, affinity,
 * security contexts, ...): those are refused when they carry data. Flags
 * follow the Go types: PB_KEEP_ZERO for pointers and fields without
 * omitempty, so the JSON matches what the client would have sent as JSON.
 */
#include <stddef.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-protobuf.h"

#define MESSAGE(var, pbname, ...)                                                   \
	static const struct pb_field var##_fields[] = { __VA_ARGS__ };                \
	static const struct pb_message var = { pbname, var##_fields, ARRAY_SIZE(var##_fields) }

#define S(n, name) { n, name, PB_STRING, 0, NULL }
#define S_KEEP(n, name) { n, name, PB_STRING, PB_KEEP_ZERO, NULL }
#define S_REP(n, name) { n, name, PB_STRING, PB_REPEATED, NULL }
#define I32(n, name) { n, name, PB_INT32, 0, NULL }
#define I32_KEEP(n, name) { n, name, PB_INT32, PB_KEEP_ZERO, NULL }
#define I64(n, name) { n, name, PB_INT64, 0, NULL }
#define I64_KEEP(n, name) { n, name, PB_INT64, PB_KEEP_ZERO, NULL }
#define B(n, name) { n, name, PB_BOOL, 0, NULL }
#define B_KEEP(n, name) { n, name, PB_BOOL, PB_KEEP_ZERO, NULL }
#define M(n, name, msg) { n, name, PB_MESSAGE, 0, &msg }
#define M_REP(n, name, msg) { n, name, PB_MESSAGE, PB_REPEATED, &msg }
#define MAP(n, name, type) { n, name, type, 0, NULL }
#define T(n, name) { n, name, PB_TIME, 0, NULL }
#define IOS(n, name) { n, name, PB_INT_OR_STRING, PB_KEEP_ZERO, NULL }

/* ---- k8s.io/apimachinery/pkg/apis/meta/v1 ---- */

MESSAGE(owner_reference, "OwnerReference",
	S_KEEP(5, "apiVersion"), S_KEEP(1, "kind"), S_KEEP(3, "name"), S_KEEP(4, "uid"),
	B_KEEP(6, "controller"), B_KEEP(7, "blockOwnerDeletion"));

MESSAGE(object_meta, "ObjectMeta",
	S(1, "name"), S(2, "generateName"), S(3, "namespace"), S(4, "selfLink"), S(5, "uid"),
	S(6, "resourceVersion"), I64(7, "generation"), T(8, "creationTimestamp"),
	T(9, "deletionTimestamp"), I64_KEEP(10, "deletionGracePeriodSeconds"),
	MAP(11, "labels", PB_MAP_STRING), MAP(12, "annotations", PB_MAP_STRING),
	M_REP(13, "ownerReferences", owner_reference), S_REP(14, "finalizers"));

MESSAGE(label_selector_requirement, "LabelSelectorRequirement",
	S_KEEP(1, "key"), S_KEEP(2, "operator"), S_REP(3, "values"));

MESSAGE(label_selector, "LabelSelector",
	MAP(1, "matchLabels", PB_MAP_STRING),
	M_REP(2, "matchExpressions", label_selector_requirement));

MESSAGE(condition, "Condition",
	S_KEEP(1, "type"), S_KEEP(2, "status"), I64(3, "observedGeneration"),
	T(4, "lastTransitionTime"), S_KEEP(5, "reason"), S_KEEP(6, "message"));

MESSAGE(preconditions, "Preconditions", S_KEEP(1, "uid"), S_KEEP(2, "resourceVersion"));

MESSAGE(delete_options, "DeleteOptions",
	I64_KEEP(1, "gracePeriodSeconds"), M(2, "preconditions", preconditions),
	B_KEEP(3, "orphanDependents"), S_KEEP(4, "propagationPolicy"), S_REP(5, "dryRun"));

/* ---- k8s.io/api/core/v1 ---- */

MESSAGE(namespace_condition, "NamespaceCondition",
	S_KEEP(1, "type"), S_KEEP(2, "status"), T(4, "lastTransitionTime"), S(5, "reason"),
	S(6, "message"));
MESSAGE(namespace_spec, "NamespaceSpec", S_REP(1, "finalizers"));
MESSAGE(namespace_status, "NamespaceStatus",
	S(1, "phase"), M_REP(2, "conditions", namespace_condition));
MESSAGE(namespace, "Namespace",
	M(1, "metadata", object_meta), M(2, "spec", namespace_spec),
	M(3, "status", namespace_status));

MESSAGE(config_map, "ConfigMap",
	M(1, "metadata", object_meta), B_KEEP(4, "immutable"), MAP(2, "data", PB_MAP_STRING),
	MAP(3, "binaryData", PB_MAP_BYTES));

MESSAGE(secret, "Secret",
	M(1, "metadata", object_meta), B_KEEP(5, "immutable"), MAP(2, "data", PB_MAP_BYTES),
	MAP(4, "stringData", PB_MAP_STRING), S(3, "type"));

MESSAGE(object_reference, "ObjectReference",
	S(1, "kind"), S(2, "namespace"), S(3, "name"), S(4, "uid"), S(5, "apiVersion"),
	S(6, "resourceVersion"), S(7, "fieldPath"));
MESSAGE(local_object_reference, "LocalObjectReference", S(1, "name"));

MESSAGE(service_account, "ServiceAccount",
	M(1, "metadata", object_meta), M_REP(2, "secrets", object_reference),
	M_REP(3, "imagePullSecrets", local_object_reference),
	B_KEEP(4, "automountServiceAccountToken"));

MESSAGE(service_port, "ServicePort",
	S(1, "name"), S(2, "protocol"), S_KEEP(6, "appProtocol"), I32_KEEP(3, "port"),
	IOS(4, "targetPort"), I32(5, "nodePort"));
MESSAGE(client_ip_config, "ClientIPConfig", I32_KEEP(1, "timeoutSeconds"));
MESSAGE(session_affinity_config, "SessionAffinityConfig", M(1, "clientIP", client_ip_config));
MESSAGE(service_spec, "ServiceSpec",
	M_REP(1, "ports", service_port), MAP(2, "selector", PB_MAP_STRING), S(3, "clusterIP"),
	S_REP(18, "clusterIPs"), S(4, "type"), S_REP(5, "externalIPs"),
	S(7, "sessionAffinity"), S(8, "loadBalancerIP"),
	S_REP(9, "loadBalancerSourceRanges"), S(10, "externalName"),
	S(11, "externalTrafficPolicy"), I32(12, "healthCheckNodePort"),
	B(13, "publishNotReadyAddresses"),
	M(14, "sessionAffinityConfig", session_affinity_config), S_REP(19, "ipFamilies"),
	S_KEEP(17, "ipFamilyPolicy"), B_KEEP(20, "allocateLoadBalancerNodePorts"),
	S_KEEP(21, "loadBalancerClass"), S_KEEP(22, "internalTrafficPolicy"),
	S_KEEP(23, "trafficDistribution"));
MESSAGE(port_status, "PortStatus", I32_KEEP(1, "port"), S_KEEP(2, "protocol"), S_KEEP(3, "error"));
MESSAGE(load_balancer_ingress, "LoadBalancerIngress",
	S(1, "ip"), S(2, "hostname"), S_KEEP(3, "ipMode"), M_REP(4, "ports", port_status));
MESSAGE(load_balancer_status, "LoadBalancerStatus", M_REP(1, "ingress", load_balancer_ingress));
MESSAGE(service_status, "ServiceStatus",
	M(1, "loadBalancer", load_balancer_status), M_REP(2, "conditions", condition));
MESSAGE(service, "Service",
	M(1, "metadata", object_meta), M(2, "spec", service_spec), M(3, "status", service_status));

MESSAGE(container_port, "ContainerPort",
	S(1, "name"), I32(2, "hostPort"), I32_KEEP(3, "containerPort"), S(4, "protocol"),
	S(5, "hostIP"));
MESSAGE(env_var, "EnvVar", S_KEEP(1, "name"), S(2, "value"));
MESSAGE(resource_claim, "ResourceClaim", S_KEEP(1, "name"), S(2, "request"));
MESSAGE(resource_requirements, "ResourceRequirements",
	MAP(1, "limits", PB_MAP_QUANTITY), MAP(2, "requests", PB_MAP_QUANTITY),
	M_REP(3, "claims", resource_claim));
MESSAGE(volume_mount, "VolumeMount",
	S_KEEP(1, "name"), B(2, "readOnly"), S_KEEP(7, "recursiveReadOnly"),
	S_KEEP(3, "mountPath"), S(4, "subPath"), S_KEEP(5, "mountPropagation"),
	S(6, "subPathExpr"));
MESSAGE(container_resize_policy, "ContainerResizePolicy",
	S_KEEP(1, "resourceName"), S_KEEP(2, "restartPolicy"));
MESSAGE(container, "Container",
	S_KEEP(1, "name"), S(2, "image"), S_REP(3, "command"), S_REP(4, "args"),
	S(5, "workingDir"), M_REP(6, "ports", container_port), M_REP(7, "env", env_var),
	M(8, "resources", resource_requirements), M_REP(9, "volumeMounts", volume_mount),
	S(13, "terminationMessagePath"), S(20, "terminationMessagePolicy"),
	S(14, "imagePullPolicy"), B(16, "stdin"), B(17, "stdinOnce"), B(18, "tty"),
	M_REP(23, "resizePolicy", container_resize_policy), S_KEEP(24, "restartPolicy"));

MESSAGE(toleration, "Toleration",
	S(1, "key"), S(2, "operator"), S(3, "value"), S(4, "effect"),
	I64_KEEP(5, "tolerationSeconds"));
MESSAGE(pod_readiness_gate, "PodReadinessGate", S_KEEP(1, "conditionType"));
MESSAGE(topology_spread_constraint, "TopologySpreadConstraint",
	I32_KEEP(1, "maxSkew"), S_KEEP(2, "topologyKey"), S_KEEP(3, "whenUnsatisfiable"),
	M(4, "labelSelector", label_selector), I32_KEEP(5, "minDomains"),
	S_KEEP(6, "nodeAffinityPolicy"), S_KEEP(7, "nodeTaintsPolicy"),
	S_REP(8, "matchLabelKeys"));
MESSAGE(pod_os, "PodOS", S_KEEP(1, "name"));
MESSAGE(pod_scheduling_gate, "PodSchedulingGate", S_KEEP(1, "name"));
MESSAGE(pod_spec, "PodSpec",
	M_REP(20, "initContainers", container), M_REP(2, "containers", container),
	S(3, "restartPolicy"), I64_KEEP(4, "terminationGracePeriodSeconds"),
	I64_KEEP(5, "activeDeadlineSeconds"), S(6, "dnsPolicy"),
	MAP(7, "nodeSelector", PB_MAP_STRING), S(8, "serviceAccountName"),
	S(9, "serviceAccount"), B_KEEP(21, "automountServiceAccountToken"), S(10, "nodeName"),
	B(11, "hostNetwork"), B(12, "hostPID"), B(13, "hostIPC"),
	B_KEEP(27, "shareProcessNamespace"),
	M_REP(15, "imagePullSecrets", local_object_reference), S(16, "hostname"),
	S(17, "subdomain"), S(19, "schedulerName"), M_REP(22, "tolerations", toleration),
	S(24, "priorityClassName"), I32_KEEP(25, "priority"),
	M_REP(28, "readinessGates", pod_readiness_gate), S_KEEP(29, "runtimeClassName"),
	B_KEEP(30, "enableServiceLinks"), S_KEEP(31, "preemptionPolicy"),
	MAP(32, "overhead", PB_MAP_QUANTITY),
	M_REP(33, "topologySpreadConstraints", topology_spread_constraint),
	B_KEEP(35, "setHostnameAsFQDN"), M(36, "os", pod_os), B_KEEP(37, "hostUsers"),
	M_REP(38, "schedulingGates", pod_scheduling_gate),
	M(40, "resources", resource_requirements));
MESSAGE(pod_template_spec, "PodTemplateSpec",
	M(1, "metadata", object_meta), M(2, "spec", pod_spec));
/* Status is the kubelet's: a client's create carries none (zeros are skipped). */
MESSAGE(pod, "Pod", M(1, "metadata", object_meta), M(2, "spec", pod_spec));

/* ---- k8s.io/api/apps/v1 ---- */

MESSAGE(rolling_update_deployment, "RollingUpdateDeployment",
	IOS(1, "maxUnavailable"), IOS(2, "maxSurge"));
MESSAGE(deployment_strategy, "DeploymentStrategy",
	S(1, "type"), M(2, "rollingUpdate", rolling_update_deployment));
MESSAGE(deployment_spec, "DeploymentSpec",
	I32_KEEP(1, "replicas"), M(2, "selector", label_selector),
	M(3, "template", pod_template_spec), M(4, "strategy", deployment_strategy),
	I32(5, "minReadySeconds"), I32_KEEP(6, "revisionHistoryLimit"), B(7, "paused"),
	I32_KEEP(9, "progressDeadlineSeconds"));
MESSAGE(deployment_condition, "DeploymentCondition",
	S_KEEP(1, "type"), S_KEEP(2, "status"), T(6, "lastUpdateTime"),
	T(7, "lastTransitionTime"), S(4, "reason"), S(5, "message"));
MESSAGE(deployment_status, "DeploymentStatus",
	I64(1, "observedGeneration"), I32(2, "replicas"), I32(3, "updatedReplicas"),
	I32(7, "readyReplicas"), I32(4, "availableReplicas"), I32(5, "unavailableReplicas"),
	I32_KEEP(9, "terminatingReplicas"), M_REP(6, "conditions", deployment_condition),
	I32_KEEP(8, "collisionCount"));
MESSAGE(deployment, "Deployment",
	M(1, "metadata", object_meta), M(2, "spec", deployment_spec),
	M(3, "status", deployment_status));

/* ---- k8s.io/api/policy/v1 ---- */

MESSAGE(pdb_spec, "PodDisruptionBudgetSpec",
	IOS(1, "minAvailable"), M(2, "selector", label_selector), IOS(3, "maxUnavailable"),
	S_KEEP(4, "unhealthyPodEvictionPolicy"));
MESSAGE(pdb_status, "PodDisruptionBudgetStatus",
	I64(1, "observedGeneration"), MAP(2, "disruptedPods", PB_MAP_TIME),
	I32_KEEP(3, "disruptionsAllowed"), I32_KEEP(4, "currentHealthy"),
	I32_KEEP(5, "desiredHealthy"), I32_KEEP(6, "expectedPods"),
	M_REP(7, "conditions", condition));
MESSAGE(pdb, "PodDisruptionBudget",
	M(1, "metadata", object_meta), M(2, "spec", pdb_spec), M(3, "status", pdb_status));

static const struct {
	const char *api_version; /* NULL: any (DeleteOptions is in every group) */
	const char *kind;
	const struct pb_message *message;
} kinds[] = {
	{ "v1", "Namespace", &namespace },
	{ "v1", "ConfigMap", &config_map },
	{ "v1", "Secret", &secret },
	{ "v1", "ServiceAccount", &service_account },
	{ "v1", "Service", &service },
	{ "v1", "Pod", &pod },
	{ "apps/v1", "Deployment", &deployment },
	{ "policy/v1", "PodDisruptionBudget", &pdb },
	{ NULL, "DeleteOptions", &delete_options },
};

const struct pb_message *k8s_protobuf_message(const char *api_version, const char *kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (streq(kinds[i].kind, kind) &&
		    (!kinds[i].api_version || streq(kinds[i].api_version, api_version)))
			return kinds[i].message;
	return NULL;
}
