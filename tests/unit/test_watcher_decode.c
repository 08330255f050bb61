/*
 * Kubernetes JSON → proto: what each object becomes, the defaults of each
 * NodePool version, and the exact errors for objects that cannot decode.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/decode.h"

static struct arena arena;
static struct decoder dec;

static void setup(void)
{
	memset(&arena, 0, sizeof(arena));
	dec = (struct decoder){ .arena = &arena };
}

static void teardown(void)
{
	arena_done(&arena);
}

TestSuite(decode, .init = setup, .fini = teardown);

static json_t *parse(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);
	cr_assert_not_null(j, "fixture is not JSON: %s at %d:%d", err.text, err.line, err.column);
	return j;
}

static int64_t res(const struct proto_resource *r, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(r[i].name, name) == 0)
			return r[i].value;
	return -1;
}

Test(decode, pod_request_is_the_larger_of_init_peak_and_containers_plus_sidecars_and_overhead)
{
	json_t *j = parse(
		"{\"metadata\":{\"name\":\"web-1\",\"namespace\":\"default\",\"uid\":\"u1\","
		" \"labels\":{\"app\":\"web\"},\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\"},"
		" \"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web-abc\",\"uid\":\"r1\",\"controller\":true}]},"
		" \"spec\":{"
		"  \"initContainers\":["
		"   {\"name\":\"sidecar\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}},"
		"   {\"name\":\"migrate\",\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"128Mi\"}}}],"
		"  \"containers\":["
		"   {\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"512Mi\"}},"
		"    \"ports\":[{\"containerPort\":80,\"hostPort\":8080}]},"
		"   {\"name\":\"b\",\"resources\":{\"limits\":{\"cpu\":\"250m\",\"nvidia.com/gpu\":1}}}],"
		"  \"overhead\":{\"cpu\":\"10m\"},"
		"  \"nodeSelector\":{\"intent\":\"apps\"},"
		"  \"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
		"  \"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"data-web-1\"}},"
		"              {\"name\":\"scratch\",\"ephemeral\":{}}],"
		"  \"priority\":1000},"
		" \"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}");
	struct proto_pod p;
	cr_assert_eq(decode_pod(&dec, j, &p), 0, "%s", dec.error);
	const struct proto_pod_template *c = proto_pod_template_of(&p);
	cr_assert_eq(p.n_template, 1);
	/* init peak: migrate 2 cpu + sidecar 100m = 2100m beats 500m+250m+100m = 850m */
	cr_assert_eq(res(c->requests, c->n_requests, "cpu"), 2100 + 10);
	/* memory: containers 512Mi + sidecar 64Mi = 576Mi beats 128Mi+64Mi */
	cr_assert_eq(res(c->requests, c->n_requests, "memory"), 576LL << 20);
	cr_assert_eq(res(c->requests, c->n_requests, "nvidia.com/gpu"), 1, "limits stand in for requests");
	cr_assert_str_eq(c->node_selector[0].value, "apps");
	cr_assert_eq(c->n_tolerations, 1);
	cr_assert_eq(c->tolerations[0].op, PROTO_TOLERATION_EXISTS);
	cr_assert_eq(c->n_pvc_names, 2);
	cr_assert_str_eq(c->pvc_names[1], "web-1-scratch");
	cr_assert_eq(c->host_ports[0].port, 8080);
	cr_assert(p.do_not_disrupt);
	cr_assert_not(c->daemonset_owned);
	cr_assert_eq(p.scheduled, PROTO_COND_FALSE);
	cr_assert_str_eq(p.scheduled_reason, "Unschedulable");
	cr_assert_eq(c->priority, 1000);
	cr_assert_str_eq(c->owner_refs[0].kind, "ReplicaSet");
	json_decref(j);
}

Test(decode, pod_affinity_spread_and_node_affinity_terms)
{
	json_t *j = parse(
		"{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":[],"
		" \"affinity\":{"
		"  \"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
		"    {\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\",\"values\":[\"eu-west-1a\"]}]}]},"
		"   \"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":10,\"preference\":{\"matchExpressions\":"
		"    [{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"spot\"]}]}}]},"
		"  \"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":\"topology.kubernetes.io/zone\","
		"    \"labelSelector\":{\"matchLabels\":{\"app\":\"db\"}}}]},"
		"  \"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":50,"
		"    \"podAffinityTerm\":{\"topologyKey\":\"topology.kubernetes.io/zone\",\"labelSelector\":{\"matchExpressions\":"
		"     [{\"key\":\"app\",\"operator\":\"In\",\"values\":[\"web\"]}]}}}]}},"
		" \"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"kubernetes.io/hostname\","
		"   \"whenUnsatisfiable\":\"ScheduleAnyway\",\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"minDomains\":3}]}}");
	struct proto_pod p;
	cr_assert_eq(decode_pod(&dec, j, &p), 0, "%s", dec.error);
	const struct proto_pod_template *c = proto_pod_template_of(&p);
	cr_assert_eq(c->n_node_affinity_required, 1);
	cr_assert_str_eq(c->node_affinity_required[0].requirements[0].values[0], "eu-west-1a");
	cr_assert_eq(c->node_affinity_preferred[0].weight, 10);
	cr_assert_str_eq(c->pod_affinity_required[0].selector.match_labels[0].value, "db");
	cr_assert_eq(c->pod_anti_affinity_preferred[0].weight, 50);
	cr_assert_eq(c->pod_anti_affinity_preferred[0].term.selector.match_expressions[0].op, PROTO_OP_IN);
	cr_assert_eq(c->topology_spread[0].when_unsatisfiable, PROTO_UNSATISFIABLE_SCHEDULE_ANYWAY);
	cr_assert_eq(c->topology_spread[0].min_domains, 3);
	json_decref(j);
}

Test(decode, malformed_quantities_and_wrong_types_name_the_object_and_field)
{
	json_t *j = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":["
			  "{\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}}");
	struct proto_pod p;
	cr_assert_eq(decode_pod(&dec, j, &p), -EINVAL);
	cr_assert_str_eq(dec.error, "pod ns/p: spec.containers[0].resources.requests.cpu: 'lots' is not a quantity");
	json_decref(j);
	j = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":[],"
		  "\"nodeSelector\":{\"a\":1}}}");
	cr_assert_eq(decode_pod(&dec, j, &p), -EINVAL);
	cr_assert_str_eq(dec.error, "pod ns/p: spec.nodeSelector.a: expected a string");
	json_decref(j);
	j = parse("{\"metadata\":{\"namespace\":\"ns\"},\"spec\":{}}");
	cr_assert_eq(decode_pod(&dec, j, &p), -EINVAL);
	cr_assert_str_eq(dec.error, "Pod: metadata.name is missing");
	json_decref(j);
}

/* The API server refuses them ("must be greater than or equal to 0");
 * packed, a negative request would make room that is not there. */
Test(decode, a_negative_request_limit_or_overhead_is_refused_with_the_field_named)
{
	static const struct {
		const char *spec, *error;
	} cases[] = {
		{ "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"-30\"}}}]",
		  "pod ns/p: spec.containers[0].resources.requests.cpu: negative quantity -30" },
		{ "\"containers\":[{},{\"resources\":{\"requests\":{\"memory\":-1}}}]",
		  "pod ns/p: spec.containers[1].resources.requests.memory: negative quantity -1" },
		{ "\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"-1\"}}}]",
		  "pod ns/p: spec.containers[0].resources.limits.nvidia.com/gpu: negative quantity -1" },
		{ "\"initContainers\":[{\"resources\":{\"requests\":{\"cpu\":\"-500m\"}}}],\"containers\":[]",
		  "pod ns/p: spec.initContainers[0].resources.requests.cpu: negative quantity -500m" },
		{ "\"containers\":[],\"overhead\":{\"cpu\":\"-1\"}",
		  "pod ns/p: spec.overhead.cpu: negative quantity -1" },
	};
	char text[512];
	struct proto_pod p;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{%s}}",
			 cases[i].spec);
		json_t *j = parse(text);
		cr_assert_eq(decode_pod(&dec, j, &p), -EINVAL, "accepted %s", cases[i].spec);
		cr_assert_str_eq(dec.error, cases[i].error);
		json_decref(j);
	}
	/* Zero is a request like any other. */
	json_t *j = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":["
			  "{\"resources\":{\"requests\":{\"cpu\":\"0\",\"memory\":\"-0\"}}}]}}");
	cr_assert_eq(decode_pod(&dec, j, &p), 0, "%s", dec.error);
	json_decref(j);
	/* A DaemonSet's pods cost every node they run on. */
	j = parse("{\"metadata\":{\"name\":\"ds\",\"namespace\":\"ns\"},\"spec\":{\"template\":{\"spec\":"
		  "{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"-1\"}}}]}}}}");
	struct proto_daemonset ds;
	cr_assert_eq(decode_daemonset(&dec, j, &ds), -EINVAL);
	cr_assert_str_eq(dec.error,
			 "daemonset ns/ds: spec.template.spec.containers[0].resources.requests.cpu: negative quantity -1");
	json_decref(j);
}

Test(decode, daemonset_pods_are_owned_and_daemonsets_carry_their_template_cost)
{
	json_t *j = parse("{\"metadata\":{\"name\":\"kube-proxy\",\"namespace\":\"kube-system\"},"
			  "\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"resources\":{\"requests\":"
			  "{\"cpu\":\"100m\",\"memory\":\"50Mi\"}}}],\"tolerations\":[{\"operator\":\"Exists\"}]}}}}");
	struct proto_daemonset ds;
	cr_assert_eq(decode_daemonset(&dec, j, &ds), 0, "%s", dec.error);
	cr_assert_eq(res(ds.requests, ds.n_requests, "cpu"), 100);
	cr_assert_eq(res(ds.requests, ds.n_requests, "memory"), 50LL << 20);
	cr_assert_eq(ds.tolerations[0].effect, PROTO_EFFECT_ANY);
	json_decref(j);
}

Test(decode, node_labels_taints_resources_readiness_and_nodeclaim_owner)
{
	json_t *j = parse(
		"{\"metadata\":{\"name\":\"ip-10-0-0-1\",\"uid\":\"n1\",\"labels\":{\"karpenter.sh/nodepool\":\"default\"},"
		" \"finalizers\":[\"karpenter.sh/termination\"],"
		" \"ownerReferences\":[{\"kind\":\"NodeClaim\",\"name\":\"default-x7k2p\",\"uid\":\"c1\"}]},"
		" \"spec\":{\"providerID\":\"aws:///us-west-2a/i-0abc\",\"unschedulable\":true,"
		"  \"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoSchedule\"}]},"
		" \"status\":{\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"58\"},"
		"  \"allocatable\":{\"cpu\":\"3920m\",\"memory\":\"15Gi\",\"pods\":\"58\"},"
		"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	struct proto_node n;
	cr_assert_eq(decode_node(&dec, j, &n), 0, "%s", dec.error);
	cr_assert_eq(res(n.allocatable, n.n_allocatable, "cpu"), 3920);
	cr_assert_eq(res(n.capacity, n.n_capacity, "memory"), 16LL << 30);
	cr_assert_eq(n.ready, PROTO_COND_TRUE);
	cr_assert(n.unschedulable);
	cr_assert_str_eq(n.nodeclaim, "default-x7k2p");
	cr_assert_str_eq(n.provider_id, "aws:///us-west-2a/i-0abc");
	cr_assert_eq(n.taints[0].effect, PROTO_EFFECT_NO_SCHEDULE);
	cr_assert_str_eq(n.finalizers[0], "karpenter.sh/termination");
	json_decref(j);
}

Test(decode, v1_nodepool_gets_v1_defaults)
{
	json_t *j = parse(
		"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\"},"
		" \"spec\":{\"template\":{\"metadata\":{\"labels\":{\"intent\":\"apps\"}},\"spec\":{"
		"  \"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},"
		"  \"requirements\":[{\"key\":\"karpenter.k8s.aws/instance-generation\",\"operator\":\"Gt\",\"values\":[\"2\"]},"
		"   {\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\",\"values\":[\"c\",\"m\",\"r\"],\"minValues\":2}]}},"
		"  \"limits\":{\"cpu\":1000,\"memory\":\"1000Gi\"}}}");
	struct proto_nodepool np;
	cr_assert_eq(decode_nodepool(&dec, j, &np), 0, "%s", dec.error);
	cr_assert_eq(np.source_api, PROTO_API_V1);
	cr_assert_eq(np.status, PROTO_NODEPOOL_OK);
	cr_assert_eq(np.expire_after_s, 720 * 3600);
	cr_assert_eq(np.consolidation_policy, PROTO_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED);
	cr_assert_eq(np.n_budgets, 1);
	cr_assert_str_eq(np.budgets[0].nodes, "10%");
	cr_assert_eq(np.requirements[1].min_values, 2);
	cr_assert_eq(res(np.limits, np.n_limits, "cpu"), 1000 * 1000);
	cr_assert_str_eq(np.nodeclass_ref.name, "default");
	cr_assert_str_eq(np.labels[0].value, "apps");
	json_decref(j);
}

Test(decode, nodepool_min_savings_annotations_are_carried_as_written_and_a_malformed_one_keeps_it_valid)
{
	json_t *j = parse(
		"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"thrift\","
		"  \"annotations\":{\"kanna.dev/consolidation-min-savings-per-hour\":\"0.05\","
		"   \"kanna.dev/consolidation-min-savings-percent\":{\"not\":\"a string\"}}},"
		" \"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"name\":\"default\"}}}}}");
	struct proto_nodepool np;
	cr_assert_eq(decode_nodepool(&dec, j, &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_OK);
	cr_assert_str_eq(np.min_savings_per_hour, "0.05");
	cr_assert_str_eq(np.min_savings_percent, "<malformed>");
	cr_assert_eq(np.n_annotations, 0, "the NodePool's own annotations are not its nodes'");
	json_decref(j);
}

Test(decode, v1beta1_nodepool_reads_disruption_expiry_and_kubelet)
{
	json_t *j = parse(
		"{\"apiVersion\":\"karpenter.sh/v1beta1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"beta\"},"
		" \"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"name\":\"default\"},\"kubelet\":{\"maxPods\":110}}},"
		"  \"disruption\":{\"consolidationPolicy\":\"WhenEmpty\",\"consolidateAfter\":\"30s\",\"expireAfter\":\"Never\"}}}");
	struct proto_nodepool np;
	cr_assert_eq(decode_nodepool(&dec, j, &np), 0, "%s", dec.error);
	cr_assert_eq(np.source_api, PROTO_API_V1BETA1);
	cr_assert_eq(np.consolidation_policy, PROTO_CONSOLIDATE_WHEN_EMPTY);
	cr_assert_eq(np.consolidate_after_s, 30);
	cr_assert_eq(np.expire_after_s, -1);
	cr_assert_eq(np.kubelet.max_pods, 110);
	json_decref(j);
}

Test(decode, v1alpha5_provisioner_of_the_karpenter_0_6_blog_converts)
{
	/* Scenario S1's Provisioner, as the documents write it. */
	json_t *j = parse(
		"{\"apiVersion\":\"karpenter.sh/v1alpha5\",\"kind\":\"Provisioner\",\"metadata\":{\"name\":\"default\"},"
		" \"spec\":{\"requirements\":[{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"spot\",\"on-demand\"]}],"
		"  \"limits\":{\"resources\":{\"cpu\":100}},\"ttlSecondsAfterEmpty\":30,\"ttlSecondsUntilExpired\":1800,"
		"  \"provider\":{\"subnetSelector\":{\"karpenter.sh/discovery\":\"demo\"},"
		"   \"securityGroupSelector\":{\"karpenter.sh/discovery\":\"demo\"}}}}");
	struct proto_nodepool np;
	struct proto_nodeclass nc;
	cr_assert_eq(decode_nodepool(&dec, j, &np), 0, "%s", dec.error);
	cr_assert_eq(np.source_api, PROTO_API_V1ALPHA5);
	cr_assert_eq(np.consolidation_policy, PROTO_CONSOLIDATE_WHEN_EMPTY);
	cr_assert_eq(np.consolidate_after_s, 30);
	cr_assert_eq(np.expire_after_s, 1800);
	cr_assert_eq(res(np.limits, np.n_limits, "cpu"), 100 * 1000);
	cr_assert_eq(np.n_requirements, 5,
		     "capacity-type kept; os, arch, instance category and generation defaulted");
	cr_assert_str_eq(np.requirements[0].values[0], "spot");
	cr_assert_str_eq(np.requirements[1].key, "kubernetes.io/os");
	cr_assert_str_eq(np.requirements[2].key, "kubernetes.io/arch");
	cr_assert_str_eq(np.nodeclass_ref.name, "default", "the inline provider is its node class");
	cr_assert_eq(decode_nodeclass(&dec, j, &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.source_api, PROTO_API_V1ALPHA5);
	cr_assert_str_eq(nc.ami_family, "AL2");
	cr_assert_eq(nc.n_subnet_selector_terms, 1);
	cr_assert_str_eq(nc.subnet_selector_terms[0].tags[0].key, "karpenter.sh/discovery");
	cr_assert_str_eq(nc.metadata_options.http_tokens, "required");
	json_decref(j);
}

Test(decode, impossible_requirements_mark_the_nodepool_invalid_with_a_reason)
{
	json_t *j = parse(
		"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"bad\"},"
		" \"spec\":{\"template\":{\"spec\":{\"requirements\":["
		"  {\"key\":\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]},"
		"  {\"key\":\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"arm64\"]}]}}}}");
	struct proto_nodepool np;
	cr_assert_eq(decode_nodepool(&dec, j, &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_INVALID);
	cr_assert_str_eq(np.status_reason, "spec.template.spec.requirements[1].values: requirements on kubernetes.io/arch have no value in common");
	json_decref(j);
	j = parse("{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"bad\"},"
		  "\"spec\":{\"template\":{\"spec\":{\"requirements\":[{\"key\":\"karpenter.k8s.aws/instance-cpu\","
		  "\"operator\":\"Gt\",\"values\":[\"many\"]}]}}}}");
	cr_assert_eq(decode_nodepool(&dec, j, &np), 0);
	cr_assert_str_eq(np.status_reason, "spec.template.spec.requirements[0].values: requirement karpenter.k8s.aws/instance-cpu Gt needs exactly one integer value");
	json_decref(j);
	j = parse("{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"bad\"},"
		  "\"spec\":{\"template\":{\"spec\":{\"requirements\":[{\"key\":\"x\",\"operator\":\"Near\"}]}}}}");
	cr_assert_eq(decode_nodepool(&dec, j, &np), -EINVAL);
	cr_assert_str_eq(dec.error, "nodepool bad: spec.template.spec.requirements[0].operator: 'Near' is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte");
	json_decref(j);
}

Test(decode, nodeclaim_status_labels_and_planned_pods)
{
	json_t *j = parse(
		"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":\"default-abc\","
		"  \"labels\":{\"karpenter.sh/nodepool\":\"default\",\"node.kubernetes.io/instance-type\":\"m5.large\","
		"   \"karpenter.sh/capacity-type\":\"spot\",\"topology.kubernetes.io/zone\":\"us-west-2a\"},"
		"  \"annotations\":{\"kanna.dev/planned-pods\":\"[\\\"default/a\\\",\\\"default/b\\\"]\"}},"
		" \"spec\":{\"nodeClassRef\":{\"name\":\"default\"},\"resources\":{\"requests\":{\"cpu\":\"1\"}}},"
		" \"status\":{\"providerID\":\"aws:///us-west-2a/i-1\",\"nodeName\":\"ip-1\","
		"  \"conditions\":[{\"type\":\"Launched\",\"status\":\"True\"}]}}");
	struct proto_nodeclaim nc;
	cr_assert_eq(decode_nodeclaim(&dec, j, &nc), 0, "%s", dec.error);
	cr_assert_str_eq(nc.nodepool, "default");
	cr_assert_str_eq(nc.instance_type, "m5.large");
	cr_assert_eq(nc.capacity_type, PROTO_CAPACITY_SPOT);
	cr_assert_eq(nc.n_planned_pods, 2);
	cr_assert_str_eq(nc.planned_pods[1], "default/b");
	cr_assert_str_eq(nc.conditions[0].type, "Launched");
	cr_assert_eq(res(nc.requests, nc.n_requests, "cpu"), 1000);
	json_decref(j);
}

/* status.lastPodEventTime (the reaper's pod events, reaper/pod-events.c):
 * RFC 3339 into Unix ms, a fraction and an offset too; anything else is
 * an error naming the field, not a time silently lost. A pod's bind time
 * is its PodScheduled=True lastTransitionTime. */
Test(decode, nodeclaim_last_pod_event_time_and_pod_bind_time)
{
	static const struct {
		const char *json;
		int64_t ms;
	} good[] = {
		{ "\"2026-11-27T13:05:07Z\"", 1795784707000 },
		{ "\"2026-11-27T13:05:07.25Z\"", 1795784707250 },
		{ "\"2026-11-27T14:05:07+01:00\"", 1795784707000 },
		{ "\"2026-11-27T12:35:07-00:30\"", 1795784707000 },
		{ "null", 0 },
	};
	static const char *const bad[] = { "\"2026-11-27T13:05:07\"", "\"2026-11-27 13:05:07Z\"",
					   "\"2026-11-27T13:05:07Zjunk\"", "\"2026-11-27T13:05:07.Z\"",
					   "\"2026-11-27T13:05:07+1:00\"", "1795784707", "\"yesterday\"" };
	char text[512];
	struct proto_nodeclaim nc;
	struct proto_pod p;
	json_t *j;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":\"c\"},"
			 " \"spec\":{},\"status\":{\"lastPodEventTime\":%s}}", good[i].json);
		j = parse(text);
		cr_assert_eq(decode_nodeclaim(&dec, j, &nc), 0, "%s: %s", good[i].json, dec.error);
		cr_assert_eq(nc.last_pod_event_time, good[i].ms, "%s: %lld", good[i].json,
			     (long long)nc.last_pod_event_time);
		json_decref(j);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":\"c\"},"
			 " \"spec\":{},\"status\":{\"lastPodEventTime\":%s}}", bad[i]);
		j = parse(text);
		cr_assert_eq(decode_nodeclaim(&dec, j, &nc), -EINVAL, "%s accepted", bad[i]);
		cr_assert_str_eq(dec.error, "nodeclaim c: status.lastPodEventTime: expected an RFC 3339 "
					    "time like 2024-01-02T15:04:05Z");
		json_decref(j);
	}
	j = parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\",\"uid\":\"u\"},"
		  " \"spec\":{\"nodeName\":\"n\",\"containers\":[{\"name\":\"c\"}]},"
		  " \"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","
		  "  \"lastTransitionTime\":\"2026-11-27T13:05:07Z\"}]}}");
	cr_assert_eq(decode_pod(&dec, j, &p), 0, "%s", dec.error);
	cr_assert_eq(p.scheduled_time, 1795784707000);
	json_decref(j);
}

Test(decode, ec2nodeclass_v1_and_awsnodetemplate_selectors)
{
	json_t *j = parse(
		"{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":\"default\"},"
		" \"spec\":{\"amiSelectorTerms\":[{\"alias\":\"al2023@latest\"}],\"role\":\"KarpenterNodeRole-demo\","
		"  \"subnetSelectorTerms\":[{\"tags\":{\"karpenter.sh/discovery\":\"demo\"}},{\"id\":\"subnet-1\"}],"
		"  \"securityGroupSelectorTerms\":[{\"name\":\"eks-cluster-sg\"}],"
		"  \"blockDeviceMappings\":[{\"deviceName\":\"/dev/xvda\",\"rootVolume\":true,\"ebs\":{\"volumeSize\":\"100Gi\",\"volumeType\":\"gp3\"}}]},"
		" \"status\":{\"subnets\":[{\"id\":\"subnet-1\",\"zone\":\"us-west-2a\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	struct proto_nodeclass nc;
	cr_assert_eq(decode_nodeclass(&dec, j, &nc), 0, "%s", dec.error);
	cr_assert_str_eq(nc.ami_selector_terms[0].alias, "al2023@latest");
	cr_assert_eq(nc.n_subnet_selector_terms, 2);
	cr_assert_str_eq(nc.subnet_selector_terms[1].id, "subnet-1");
	cr_assert_eq(nc.block_devices[0].volume_size_bytes, 100LL << 30);
	cr_assert(nc.block_devices[0].root_volume);
	cr_assert_eq(nc.ready, PROTO_COND_TRUE);
	cr_assert_str_eq(nc.status_subnets[0].zone, "us-west-2a");
	json_decref(j);
	j = parse("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\",\"metadata\":{\"name\":\"old\"},"
		  " \"spec\":{\"subnetSelector\":{\"aws-ids\":\"subnet-1, subnet-2\"},"
		  "  \"securityGroupSelector\":{\"karpenter.sh/discovery\":\"demo\"}}}");
	cr_assert_eq(decode_nodeclass(&dec, j, &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.n_subnet_selector_terms, 2);
	cr_assert_str_eq(nc.subnet_selector_terms[1].id, "subnet-2");
	json_decref(j);
	j = parse("{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":\"x\"},\"spec\":{}}");
	cr_assert_eq(decode_nodeclass(&dec, j, &nc), -EINVAL);
	cr_assert_str_eq(dec.error, "EC2NodeClass x: spec: subnet and security group selectors are required");
	json_decref(j);
}

Test(decode, ec2nodeclass_user_data_leaves_as_its_sha256_only)
{
	static const char *const forms[] = {
		"{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":\"a\"},"
		" \"spec\":{\"amiSelectorTerms\":[{\"alias\":\"al2023@latest\"}],\"userData\":\"echo hi\","
		"  \"subnetSelectorTerms\":[{\"id\":\"subnet-1\"}],\"securityGroupSelectorTerms\":[{\"id\":\"sg-1\"}]}}",
		"{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\",\"metadata\":{\"name\":\"b\"},"
		" \"spec\":{\"userData\":\"echo hi\",\"subnetSelector\":{\"aws-ids\":\"subnet-1\"},"
		"  \"securityGroupSelector\":{\"aws-ids\":\"sg-1\"}}}",
	};
	struct proto_nodeclass nc;
	char hash_with_text[64];

	for (size_t i = 0; i < 2; i++) {
		json_t *j = parse(forms[i]);

		cr_assert_eq(decode_nodeclass(&dec, j, &nc), 0, "%s", dec.error);
		cr_expect_null(nc.user_data, "form %zu", i);
		/* printf 'echo hi' | sha256sum */
		cr_expect_str_eq(nc.user_data_sha256,
				 "56a79f3b115448072387c2480044bfa2cf8f90e4f5fddd8c943b4e051b81f80b", "form %zu", i);
		json_decref(j);
	}
	/* the drift hash still covers the text */
	snprintf(hash_with_text, sizeof(hash_with_text), "%s", nc.nodeclass_hash);
	json_t *j = parse("{\"apiVersion\":\"karpenter.k8s.aws/v1alpha1\",\"kind\":\"AWSNodeTemplate\",\"metadata\":{\"name\":\"b\"},"
			  " \"spec\":{\"userData\":\"echo bye\",\"subnetSelector\":{\"aws-ids\":\"subnet-1\"},"
			  "  \"securityGroupSelector\":{\"aws-ids\":\"sg-1\"}}}");
	cr_assert_eq(decode_nodeclass(&dec, j, &nc), 0, "%s", dec.error);
	cr_expect_str_neq(nc.nodeclass_hash, hash_with_text);
	cr_expect_null(nc.user_data);
	json_decref(j);
	j = parse("{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":\"c\"},"
		  " \"spec\":{\"amiSelectorTerms\":[{\"alias\":\"al2023@latest\"}],"
		  "  \"subnetSelectorTerms\":[{\"id\":\"subnet-1\"}],\"securityGroupSelectorTerms\":[{\"id\":\"sg-1\"}]}}");
	cr_assert_eq(decode_nodeclass(&dec, j, &nc), 0, "%s", dec.error);
	cr_expect_null(nc.user_data_sha256, "no userData, no digest");
	json_decref(j);
}

Test(decode, ec2nodeclass_v1_kubelet_settings_and_malformed_eviction_thresholds)
{
	json_t *j = parse(
		"{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":\"k\"},"
		" \"spec\":{\"subnetSelectorTerms\":[{\"id\":\"subnet-1\"}],\"securityGroupSelectorTerms\":[{\"id\":\"sg-1\"}],"
		"  \"kubelet\":{\"maxPods\":42,\"podsPerCore\":4,\"systemReserved\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"},"
		"   \"kubeReserved\":{\"cpu\":\"70m\"},\"evictionHard\":{\"memory.available\":\"5%\",\"nodefs.available\":\"1Gi\"}}}}");
	struct proto_nodeclass nc;
	cr_assert_eq(decode_nodeclass(&dec, j, &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.kubelet.max_pods, 42);
	cr_assert_eq(nc.kubelet.pods_per_core, 4);
	cr_assert_eq(nc.kubelet.n_system_reserved, 2);
	cr_assert_eq(nc.kubelet.n_kube_reserved, 1);
	cr_assert_eq(nc.kubelet.kube_reserved[0].value, 70);
	cr_assert_eq(nc.kubelet.n_eviction_hard, 2);
	json_decref(j);
	j = parse("{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":\"k\"},"
		  " \"spec\":{\"subnetSelectorTerms\":[{\"id\":\"subnet-1\"}],\"securityGroupSelectorTerms\":[{\"id\":\"sg-1\"}],"
		  "  \"kubelet\":{\"evictionHard\":{\"memory.available\":\"half\"}}}}");
	cr_assert_eq(decode_nodeclass(&dec, j, &nc), -EINVAL);
	cr_assert_str_eq(dec.error, "EC2NodeClass k: spec.kubelet.evictionHard.memory.available: 'half' is not a quantity or a percentage");
	json_decref(j);
}

Test(decode, volumes_storageclasses_and_pdbs)
{
	json_t *pv = parse("{\"metadata\":{\"name\":\"pv-1\"},\"spec\":{\"storageClassName\":\"gp3\","
			   "\"claimRef\":{\"namespace\":\"db\",\"name\":\"data-0\"},\"nodeAffinity\":{\"required\":"
			   "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\","
			   "\"operator\":\"In\",\"values\":[\"eu-west-1a\"]}]}]}}}}");
	json_t *sc = parse("{\"metadata\":{\"name\":\"gp3\"},\"provisioner\":\"ebs.csi.aws.com\","
			   "\"volumeBindingMode\":\"WaitForFirstConsumer\",\"allowedTopologies\":[{\"matchLabelExpressions\":"
			   "[{\"key\":\"topology.kubernetes.io/zone\",\"values\":[\"eu-west-1a\",\"eu-west-1b\"]}]}]}");
	json_t *pvc = parse("{\"metadata\":{\"name\":\"data-0\",\"namespace\":\"db\",\"annotations\":"
			    "{\"volume.kubernetes.io/selected-node\":\"ip-1\"}},\"spec\":{\"storageClassName\":\"gp3\","
			    "\"resources\":{\"requests\":{\"storage\":\"10Gi\"}}},\"status\":{\"phase\":\"Pending\"}}");
	json_t *pdb = parse("{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"},\"spec\":{\"maxUnavailable\":\"25%\","
			    "\"selector\":{\"matchLabels\":{\"app\":\"web\"}}},\"status\":{\"disruptionsAllowed\":1}}");
	struct proto_pv v;
	struct proto_storageclass s;
	struct proto_pvc c;
	struct proto_pdb b;
	cr_assert_eq(decode_pv(&dec, pv, &v), 0, "%s", dec.error);
	cr_assert_str_eq(v.zone, "eu-west-1a");
	cr_assert_str_eq(v.claim_name, "data-0");
	cr_assert_eq(decode_storageclass(&dec, sc, &s), 0, "%s", dec.error);
	cr_assert_eq(s.binding_mode, PROTO_BINDING_WAIT_FOR_FIRST_CONSUMER);
	cr_assert_eq(s.allowed_topologies[0].requirements[0].n_values, 2);
	cr_assert_eq(decode_pvc(&dec, pvc, &c), 0, "%s", dec.error);
	cr_assert_str_eq(c.selected_node, "ip-1");
	cr_assert_eq(c.storage_bytes, 10LL << 30);
	cr_assert_eq(c.phase, PROTO_PVC_PENDING);
	cr_assert_eq(decode_pdb(&dec, pdb, &b), 0, "%s", dec.error);
	cr_assert_eq(b.max_unavailable.kind, PROTO_IOP_PERCENT);
	cr_assert_eq(b.max_unavailable.value, 25);
	cr_assert_eq(b.min_available.kind, PROTO_IOP_UNSET);
	cr_assert_eq(b.disruptions_allowed, 1);
	json_decref(pv);
	json_decref(sc);
	json_decref(pvc);
	json_decref(pdb);
}

Test(decode, decode_object_dispatches_by_kind_and_refuses_others)
{
	json_t *j = parse("{\"metadata\":{\"name\":\"n\"}}");
	struct proto_object o;
	cr_assert_eq(decode_object(&dec, "Node", j, &o), 0, "%s", dec.error);
	cr_assert_eq(o.kind, PROTO_OBJECT_NODE);
	cr_assert_str_eq(o.node->name, "n");
	cr_assert_eq(decode_object(&dec, "ConfigMap", j, &o), -EINVAL);
	cr_assert_str_eq(dec.error, "kind ConfigMap is not one the watcher decodes");
	json_decref(j);
}

Test(decode, namespaces_carry_their_labels_for_namespace_selectors)
{
	json_t *j = parse("{\"metadata\":{\"name\":\"team-a\",\"uid\":\"u-ns\",\"labels\":"
			  "{\"kubernetes.io/metadata.name\":\"team-a\",\"tier\":\"web\"}}}");
	struct proto_object o;
	cr_assert_eq(decode_object(&dec, "Namespace", j, &o), 0, "%s", dec.error);
	cr_assert_eq(o.kind, PROTO_OBJECT_NAMESPACE);
	cr_assert_str_eq(o.namespace->name, "team-a");
	cr_assert_str_eq(o.namespace->uid, "u-ns");
	cr_assert_eq(o.namespace->n_labels, 2);
	json_decref(j);
	j = parse("{\"metadata\":{\"name\":\"x\",\"labels\":{\"tier\":3}}}");
	cr_assert_eq(decode_object(&dec, "Namespace", j, &o), -EINVAL);
	cr_assert_str_eq(dec.error, "namespace x: metadata.labels.tier: expected a string");
	json_decref(j);
}

Test(decode, a_limit_without_its_request_stands_in_for_it_resource_by_resource)
{
	/* As the API server defaults: requests.memory and the GPU come from limits. */
	json_t *j = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":["
			  "{\"resources\":{\"requests\":{\"cpu\":\"2\"},\"limits\":{\"cpu\":\"4\","
			  "\"memory\":\"1Gi\",\"nvidia.com/gpu\":2}}}]}}");
	struct proto_pod p;
	cr_assert_eq(decode_pod(&dec, j, &p), 0, "%s", dec.error);
	const struct proto_pod_template *c = proto_pod_template_of(&p);
	cr_assert_eq(res(c->requests, c->n_requests, "cpu"), 2000, "a request given wins over its limit");
	cr_assert_eq(res(c->requests, c->n_requests, "memory"), 1LL << 30);
	cr_assert_eq(res(c->requests, c->n_requests, "nvidia.com/gpu"), 2);
	json_decref(j);
}

/* A NodePool whose template carries one annotation of n bytes. */
static json_t *nodepool_with_annotation(size_t n)
{
	json_t *j = parse("{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\","
			  "\"metadata\":{\"name\":\"big\",\"uid\":\"u-big\"},\"spec\":{\"template\":{"
			  "\"metadata\":{\"annotations\":{}},\"spec\":{\"nodeClassRef\":{"
			  "\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"}}}}}");
	char *blob = malloc(n + 1);

	cr_assert_not_null(blob);
	memset(blob, 'x', n);
	blob[n] = '\0';
	json_object_set_new((json_t *)json_path(j, "spec.template.metadata.annotations"),
			    "example.com/blob", json_string(blob));
	free(blob);
	return j;
}

Test(decode, an_annotation_larger_than_the_wire_carries_makes_the_nodepool_invalid_not_unpublishable)
{
	json_t *j = nodepool_with_annotation(PROTO_MAX_ANNOTATION_LEN);
	struct proto_object o;
	struct proto_error err;

	cr_assert_eq(decode_object(&dec, "NodePool", j, &o), 0, "%s", dec.error);
	cr_assert_eq(proto_object_check(&o, &err), 0, "%s", err.text);
	json_decref(j);
	/* 5,000 bytes: legal in Kubernetes (256 KiB for all annotations), past proto's 4,096. */
	j = nodepool_with_annotation(5000);
	cr_assert_eq(decode_object(&dec, "NodePool", j, &o), -EINVAL);
	cr_assert_str_eq(dec.error, "nodepool big: spec.template.metadata.annotations.example.com/blob: "
				    "value of 5000 bytes exceeds the limit of 4096");
	json_decref(j);
}

Test(decode, an_object_proto_would_refuse_is_invalid_with_the_field_named)
{
	/* A providerID longer than proto's id limit: no Kubernetes rule stops it. */
	json_t *j = parse("{\"metadata\":{\"name\":\"n1\",\"uid\":\"u1\"},\"spec\":{\"providerID\":\"\"}}");
	char id[PROTO_MAX_ID_LEN + 2];
	struct proto_object o;

	memset(id, 'i', sizeof(id) - 1);
	id[sizeof(id) - 1] = '\0';
	json_object_set_new(json_object_get(j, "spec"), "providerID", json_string(id));
	cr_assert_eq(decode_object(&dec, "Node", j, &o), -EINVAL);
	cr_assert_str_eq(dec.error, "node n1: too large for kanna's wire format: provider_id: "
				    "string of 129 bytes exceeds limit 128");
	json_decref(j);
}

/* consolidationPolicy Balanced is in the v1 CRD's enum (core v1.14): read,
 * not refused; the reaper scores its moves (reaper/consolidation.h). */
Test(decode, v1_nodepool_reads_consolidation_policy_balanced)
{
	json_t *j = parse(
		"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"balanced\"},"
		" \"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","
		"  \"kind\":\"EC2NodeClass\",\"name\":\"default\"}}},"
		"  \"disruption\":{\"consolidationPolicy\":\"Balanced\",\"consolidateAfter\":\"1m\"}}}");
	struct proto_nodepool np;

	cr_assert_eq(decode_nodepool(&dec, j, &np), 0, "%s", dec.error);
	cr_assert_eq(np.consolidation_policy, PROTO_CONSOLIDATE_BALANCED);
	cr_assert_eq(np.consolidate_after_s, 60);
	json_decref(j);
}

/* Karpenter v1's inclusive operators (the shipped CRDs' enum): a NodePool
 * using them is valid, a NodeClaim Karpenter wrote with them decodes, and
 * a pod's node affinity (core v1: six operators) still refuses them. */
Test(decode, v1_nodepool_and_nodeclaim_read_gte_and_lte)
{
	json_t *j = parse(
		"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"mid\"},"
		" \"spec\":{\"template\":{\"spec\":{\"requirements\":["
		"  {\"key\":\"karpenter.k8s.aws/instance-cpu\",\"operator\":\"Gte\",\"values\":[\"4\"]},"
		"  {\"key\":\"karpenter.k8s.aws/instance-cpu\",\"operator\":\"Lte\",\"values\":[\"16\"]}]}}}}");
	struct proto_nodepool np;
	struct proto_nodeclaim nc;
	struct proto_pod pod;

	cr_assert_eq(decode_nodepool(&dec, j, &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_OK, "%s", np.status_reason ? np.status_reason : "");
	cr_assert_eq(np.requirements[0].op, PROTO_OP_GTE);
	cr_assert_str_eq(np.requirements[0].values[0], "4");
	cr_assert_eq(np.requirements[1].op, PROTO_OP_LTE);
	json_decref(j);

	j = parse("{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"bad\"},"
		  "\"spec\":{\"template\":{\"spec\":{\"requirements\":[{\"key\":\"karpenter.k8s.aws/instance-cpu\","
		  "\"operator\":\"Lte\",\"values\":[\"4\",\"8\"]}]}}}}");
	cr_assert_eq(decode_nodepool(&dec, j, &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_INVALID);
	cr_assert_str_eq(np.status_reason, "spec.template.spec.requirements[0].values: requirement karpenter.k8s.aws/instance-cpu Lte needs exactly one integer value");
	json_decref(j);

	j = parse("{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":\"mid-x1\","
		  "  \"labels\":{\"karpenter.sh/nodepool\":\"mid\"}},"
		  " \"spec\":{\"nodeClassRef\":{\"name\":\"default\"},\"requirements\":["
		  "  {\"key\":\"karpenter.k8s.aws/instance-cpu\",\"operator\":\"Gte\",\"values\":[\"4\"]},"
		  "  {\"key\":\"karpenter.k8s.aws/instance-memory\",\"operator\":\"Lte\",\"values\":[\"32768\"]}]}}");
	cr_assert_eq(decode_nodeclaim(&dec, j, &nc), 0, "%s", dec.error);
	cr_assert_eq(nc.n_requirements, 2);
	cr_assert_eq(nc.requirements[0].op, PROTO_OP_GTE);
	cr_assert_eq(nc.requirements[1].op, PROTO_OP_LTE);
	cr_assert_str_eq(nc.requirements[1].values[0], "32768");
	json_decref(j);

	j = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},\"spec\":{\"containers\":[{}],"
		  " \"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
		  "  {\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"karpenter.k8s.aws/instance-cpu\","
		  "   \"operator\":\"Gte\",\"values\":[\"4\"]}]}]}}}}}");
	cr_assert_eq(decode_pod(&dec, j, &pod), -EINVAL);
	cr_assert(strstr(dec.error, "'Gte' is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt"), "%s",
		  dec.error);
	cr_assert_null(strstr(dec.error, "Lte"), "%s", dec.error);
	json_decref(j);
}

Test(decode, daemonset_host_ports_are_carried)
{
	json_t *j = parse("{\"metadata\":{\"name\":\"node-exporter\",\"namespace\":\"monitoring\"},"
			  "\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"ports\":["
			  "{\"containerPort\":9100,\"hostPort\":9100},{\"containerPort\":8080}]}]}}}}");
	struct proto_daemonset ds;
	cr_assert_eq(decode_daemonset(&dec, j, &ds), 0, "%s", dec.error);
	cr_assert_eq(ds.n_host_ports, 1);
	cr_assert_eq(ds.host_ports[0].port, 9100);
	cr_assert_eq(ds.host_ports[0].protocol, PROTO_PROTOCOL_TCP);
	json_decref(j);
}

/* A v1 NodePool of a given spec (JSON members after "template"). */
static int static_pool(const char *rest, struct proto_nodepool *np)
{
	char text[1024];
	json_t *j;
	int r;

	snprintf(text, sizeof(text),
		 "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"fixed\"},"
		 " \"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"name\":\"default\"}}}%s}}", rest);
	j = parse(text);
	r = decode_nodepool(&dec, j, np);
	json_decref(j);
	return r;
}

/* spec.replicas (karpenter.sh_nodepools.yaml, alpha StaticCapacity): its
 * presence makes the pool static, 0 included; limits.nodes goes with it. */
Test(decode, v1_nodepool_with_replicas_is_static_with_its_count_and_node_limit)
{
	struct proto_nodepool np;

	cr_assert_eq(static_pool(", \"replicas\":10, \"limits\":{\"nodes\":15}", &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_OK, "%s", np.status_reason);
	cr_assert(np.static_capacity);
	cr_assert_eq(np.replicas, 10);
	cr_assert_eq(res(np.limits, np.n_limits, "nodes"), 15);
	cr_assert_eq(static_pool(", \"replicas\":0", &np), 0, "%s", dec.error);
	cr_assert(np.static_capacity, "replicas 0 is a static pool of no node, not a dynamic one");
	cr_assert_eq(np.replicas, 0);
	cr_assert_eq(static_pool("", &np), 0, "%s", dec.error);
	cr_assert_not(np.static_capacity);
	cr_assert_eq(static_pool(", \"replicas\":null", &np), 0, "%s", dec.error);
	cr_assert_not(np.static_capacity);
}

Test(decode, replicas_do_not_change_the_nodepool_hash)
{
	struct proto_nodepool a, b;

	cr_assert_eq(static_pool(", \"replicas\":3", &a), 0, "%s", dec.error);
	cr_assert_eq(static_pool(", \"replicas\":5", &b), 0, "%s", dec.error);
	cr_assert_str_eq(a.nodepool_hash, b.nodepool_hash, "scaling a static pool drifts none of its nodes");
}

/* The CRD's CEL rules, which kanna-sim does not evaluate. */
Test(decode, a_static_nodepool_the_crd_refuses_is_invalid_with_the_crd_message)
{
	struct proto_nodepool np;

	cr_assert_eq(static_pool(", \"replicas\":2, \"weight\":10", &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_INVALID);
	cr_assert_str_eq(np.status_reason, "'weight' is not supported on static NodePools");
	cr_assert_eq(static_pool(", \"replicas\":2, \"limits\":{\"nodes\":4,\"cpu\":100}", &np), 0, "%s",
		     dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_INVALID);
	cr_assert_str_eq(np.status_reason, "only 'limits.nodes' is supported on static NodePools");
	cr_assert_eq(static_pool(", \"replicas\":-1", &np), 0, "%s", dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_INVALID);
	cr_assert_str_eq(np.status_reason, "spec.replicas must be at least 0");
	cr_assert_eq(static_pool(", \"limits\":{\"nodes\":4,\"cpu\":100}, \"weight\":10", &np), 0, "%s",
		     dec.error);
	cr_assert_eq(np.status, PROTO_NODEPOOL_OK, "a dynamic pool may have both");
	cr_assert_eq(static_pool(", \"replicas\":\"ten\"", &np), -EINVAL);
	cr_assert_str_eq(dec.error, "nodepool fixed: spec.replicas: expected an integer");
}

Test(decode, nodeoverlays_decode_price_adjustment_capacity_and_say_why_one_is_not_applied)
{
	json_t *j = parse("{\"metadata\":{\"name\":\"cheap-c5\",\"uid\":\"u-o\",\"resourceVersion\":\"7\"},"
			  "\"spec\":{\"weight\":10,\"requirements\":[{\"key\":\"karpenter.k8s.aws/instance-family\","
			  "\"operator\":\"In\",\"values\":[\"c5\"]}],\"priceAdjustment\":\"-15%\","
			  "\"capacity\":{\"hugepages-2Mi\":\"100Mi\",\"example.com/fuse\":1}}}");
	struct proto_object o;

	cr_assert_eq(decode_object(&dec, "NodeOverlay", j, &o), 0, "%s", dec.error);
	cr_assert_eq(o.kind, PROTO_OBJECT_NODEOVERLAY);
	cr_assert_str_eq(o.nodeoverlay->name, "cheap-c5");
	cr_assert_str_eq(o.nodeoverlay->resource_version, "7");
	cr_assert_eq(o.nodeoverlay->weight, 10);
	cr_assert_eq(o.nodeoverlay->n_requirements, 1);
	cr_assert(o.nodeoverlay->has_adjustment && o.nodeoverlay->adjustment_percent);
	cr_assert_float_eq(o.nodeoverlay->adjustment, -15.0, 1e-9);
	cr_assert_not(o.nodeoverlay->has_price);
	cr_assert_eq(res(o.nodeoverlay->capacity, o.nodeoverlay->n_capacity, "hugepages-2Mi"), 100LL << 20);
	cr_assert_eq(res(o.nodeoverlay->capacity, o.nodeoverlay->n_capacity, "example.com/fuse"), 1);
	cr_assert_null(o.nodeoverlay->invalid);
	json_decref(j);

	j = parse("{\"metadata\":{\"name\":\"flat\"},\"spec\":{\"requirements\":[],\"price\":\"0.25\"}}");
	cr_assert_eq(decode_object(&dec, "NodeOverlay", j, &o), 0, "%s", dec.error);
	cr_assert(o.nodeoverlay->has_price);
	cr_assert_float_eq(o.nodeoverlay->price, 0.25, 1e-12);
	cr_assert_eq(o.nodeoverlay->weight, 0);
	json_decref(j);

	j = parse("{\"metadata\":{\"name\":\"delta\"},\"spec\":{\"requirements\":[],\"priceAdjustment\":\"+0.5\"}}");
	cr_assert_eq(decode_object(&dec, "NodeOverlay", j, &o), 0, "%s", dec.error);
	cr_assert(o.nodeoverlay->has_adjustment && !o.nodeoverlay->adjustment_percent);
	cr_assert_float_eq(o.nodeoverlay->adjustment, 0.5, 1e-12);
	json_decref(j);

	/* Decoded, but not applied, and the watcher's condition names why. */
	static const struct {
		const char *spec, *why;
	} bad[] = {
		{ "{\"requirements\":[{\"key\":\"karpenter.sh/nodepool\",\"operator\":\"In\",\"values\":[\"a\"]}],"
		  "\"price\":\"1\"}",
		  "spec.requirements: key karpenter.sh/nodepool is not supported by kanna" },
		{ "{\"requirements\":[],\"capacity\":{\"memory\":\"1Gi\"}}",
		  "spec.capacity.memory: invalid resource restricted" },
		{ "{\"requirements\":[],\"price\":\"1\",\"priceAdjustment\":\"+1\"}",
		  "spec: cannot set both 'price' and 'priceAdjustment'" },
		{ "{\"requirements\":[],\"priceAdjustment\":\"10%\"}",
		  "spec.priceAdjustment: '10%' is neither a signed amount nor a percentage" },
		{ "{\"requirements\":[],\"priceAdjustment\":\"-150%\"}",
		  "spec.priceAdjustment: '-150%' is neither" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char text[512];

		snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"bad\"},\"spec\":%s}", bad[i].spec);
		j = parse(text);
		cr_assert_eq(decode_object(&dec, "NodeOverlay", j, &o), 0, "%s", dec.error);
		cr_assert_not_null(o.nodeoverlay->invalid, "%s", bad[i].spec);
		cr_assert(!strncmp(o.nodeoverlay->invalid, bad[i].why, strlen(bad[i].why)), "%s: %s",
			  bad[i].spec, o.nodeoverlay->invalid);
		json_decref(j);
	}

	j = parse("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"requirements\":[],\"weight\":0}}");
	cr_assert_eq(decode_object(&dec, "NodeOverlay", j, &o), -EINVAL);
	cr_assert_str_eq(dec.error, "nodeoverlay w: spec.weight: expected an integer from 1 to 10000");
	json_decref(j);
}
