/* kanna-sim lite controllers: quantities, the Deployment, StatefulSet and
 * DaemonSet controllers with the status upstream's report, and
 * kube-scheduler-lite (fit, selectors, taints, Unschedulable). */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "sim/k8s-controllers.h"

static struct k8s_registry *reg;
static struct k8s_store *store;
static struct k8s_resource *pods, *nodes, *deployments;

static void setup(void)
{
	reg = k8s_registry_new();
	cr_assert_eq(k8s_store_new(reg, 0, &store), 0);
	cr_assert_eq(k8s_store_seed(store), 0);
	pods = k8s_registry_find(reg, "", "v1", "pods");
	nodes = k8s_registry_find(reg, "", "v1", "nodes");
	deployments = k8s_registry_find(reg, "apps", "v1", "deployments");
}

static void teardown(void)
{
	k8s_store_free(store);
	k8s_registry_free(reg);
}

TestSuite(sim_controllers, .init = setup, .fini = teardown);

static void create(struct k8s_resource *res, const char *ns, const char *json)
{
	struct k8s_error err = {};
	json_t *body = json_loads(json, 0, NULL);

	cr_assert_not_null(body, "bad JSON %s", json);
	cr_assert_eq(k8s_store_create(store, res, ns, body, NULL, &err), 0, "%s", err.message);
	json_decref(body);
}

static json_t *get_pod(const char *name)
{
	struct k8s_error err = {};
	json_t *out = NULL;

	cr_assert_eq(k8s_store_get(store, pods, "default", name, &out, &err), 0, "%s", err.message);
	return out;
}

static const char *field(json_t *obj, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(obj, a), b));
}

static const char *condition(json_t *pod, const char *key)
{
	return json_string_value(json_object_get(
		json_array_get(json_object_get(json_object_get(pod, "status"), "conditions"), 0), key));
}

#define NODE(name, extra) \
	"{\"metadata\":{\"name\":\"" name "\",\"labels\":{\"zone\":\"a\"}},\"spec\":{" extra "}," \
	"\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]," \
	"\"allocatable\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"10\"}}}"
#define POD(name, cpu, extra) \
	"{\"metadata\":{\"name\":\"" name "\"},\"spec\":{" extra "\"containers\":[{\"name\":\"c\"," \
	"\"resources\":{\"requests\":{\"cpu\":\"" cpu "\",\"memory\":\"1Gi\"}}}]}}"

Test(sim_controllers, quantities_parse_to_milli_units)
{
	int64_t v;

	cr_assert_eq(k8s_quantity_parse_milli("500m", &v), 0);
	cr_assert_eq(v, 500);
	cr_assert_eq(k8s_quantity_parse_milli("2", &v), 0);
	cr_assert_eq(v, 2000);
	cr_assert_eq(k8s_quantity_parse_milli("1.5", &v), 0);
	cr_assert_eq(v, 1500);
	cr_assert_eq(k8s_quantity_parse_milli("512Mi", &v), 0);
	cr_assert_eq(v, 512LL * 1024 * 1024 * 1000);
	cr_assert_eq(k8s_quantity_parse_milli("1G", &v), 0);
	cr_assert_eq(v, 1000000000000LL);
	cr_assert_eq(k8s_quantity_parse_milli("12parsecs", &v), -EINVAL);
	cr_assert_eq(k8s_quantity_parse_milli("", &v), -EINVAL);
}

Test(sim_controllers, pending_pod_without_nodes_is_unschedulable)
{
	json_t *p;

	create(pods, "default", POD("p", "500m", ""));
	cr_assert_gt(k8s_scheduler_reconcile(store), 0);
	p = get_pod("p");
	cr_assert_str_eq(condition(p, "type"), "PodScheduled");
	cr_assert_str_eq(condition(p, "status"), "False");
	cr_assert_str_eq(condition(p, "reason"), "Unschedulable");
	cr_assert_str_eq(condition(p, "message"), "0/0 nodes are available.");
	json_decref(p);
}

Test(sim_controllers, scheduler_binds_to_a_node_that_fits_and_respects_capacity)
{
	json_t *a, *b, *c;

	create(nodes, NULL, NODE("n1", ""));
	create(pods, "default", POD("a", "1500m", ""));
	create(pods, "default", POD("b", "1", ""));
	create(pods, "default", POD("c", "500m", ""));
	k8s_scheduler_reconcile(store);
	a = get_pod("a");
	b = get_pod("b");
	c = get_pod("c");
	cr_assert_str_eq(field(a, "spec", "nodeName"), "n1");
	cr_assert_null(field(b, "spec", "nodeName"), "1 cpu does not fit beside 1.5");
	cr_assert_str_eq(condition(b, "message"), "0/1 nodes are available: 1 Insufficient cpu.");
	cr_assert_str_eq(field(c, "spec", "nodeName"), "n1");
	cr_assert_str_eq(condition(c, "status"), "True");
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

Test(sim_controllers, scheduler_honours_selectors_taints_and_cordons)
{
	json_t *p;

	create(nodes, NULL, NODE("tainted", "\"taints\":[{\"key\":\"gpu\",\"value\":\"yes\",\"effect\":\"NoSchedule\"}]"));
	create(nodes, NULL, NODE("cordoned", "\"unschedulable\":true"));
	create(pods, "default", POD("picky", "100m", "\"nodeSelector\":{\"zone\":\"b\"},"));
	create(pods, "default", POD("plain", "100m", ""));
	create(pods, "default", POD("tolerant", "100m",
				    "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}],"));
	k8s_scheduler_reconcile(store);
	p = get_pod("picky");
	cr_assert_null(field(p, "spec", "nodeName"));
	json_decref(p);
	p = get_pod("plain");
	cr_assert_null(field(p, "spec", "nodeName"));
	cr_assert_str_eq(condition(p, "message"),
			 "0/2 nodes are available: 1 node(s) were unschedulable, 1 node(s) had untolerated taint.");
	json_decref(p);
	p = get_pod("tolerant");
	cr_assert_str_eq(field(p, "spec", "nodeName"), "tainted");
	json_decref(p);
}

static size_t count_pods(void)
{
	json_t *all = k8s_controller_snapshot(store, "", "pods");
	size_t n = 0, i;
	json_t *p;

	json_array_foreach(all, i, p)
		n += json_object_get(json_object_get(p, "metadata"), "deletionTimestamp") == NULL;
	json_decref(all);
	return n;
}

Test(sim_controllers, deployment_controller_follows_replicas)
{
	struct k8s_error err = {};
	json_t *d = NULL, *all;

	create(deployments, "default",
	       "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":"
	       "{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":"
	       "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}");
	cr_assert_eq(k8s_deployments_reconcile(store), 4, "three pods and the status");
	cr_assert_eq(count_pods(), 3);
	all = k8s_controller_snapshot(store, "", "pods");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(
				 json_array_get(all, 0), "metadata"), "labels"), "app")), "web");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(
				 json_object_get(json_array_get(all, 0), "metadata"), "ownerReferences"), 0),
							   "kind")), "Deployment");
	json_decref(all);
	k8s_deployments_reconcile(store);
	cr_assert_eq(k8s_store_get(store, deployments, "default", "web", &d, &err), 0);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(d, "status"), "replicas")), 3);
	json_object_set_new(json_object_get(d, "spec"), "replicas", json_integer(1));
	cr_assert_eq(k8s_store_update(store, deployments, "default", "web", d, K8S_WRITE_MAIN, NULL, &err), 0);
	k8s_deployments_reconcile(store);
	cr_assert_eq(count_pods(), 1);
	json_decref(d);
}

static size_t count_named(const char *plural, const char *name)
{
	json_t *all = k8s_controller_snapshot(store, "", plural);
	size_t n = 0, i;
	json_t *o;

	json_array_foreach(all, i, o)
		n += strcmp(json_string_value(json_object_get(json_object_get(o, "metadata"), "name")),
			    name) == 0;
	json_decref(all);
	return n;
}

static json_t *ready(const json_t *cur, void *userdata, struct k8s_error *err)
{
	json_t *out = json_deep_copy(cur);

	json_object_set_new(out, "status", json_pack("{s:s, s:[{s:s, s:s}]}", "phase", "Running",
						     "conditions", "type", "Ready", "status", "True"));
	return out;
}

Test(sim_controllers, statefulset_creates_ordered_pods_with_claims)
{
	struct k8s_resource *sets = k8s_registry_find(reg, "apps", "v1", "statefulsets");
	struct k8s_error err = {};

	create(sets, "default",
	       "{\"metadata\":{\"name\":\"db\"},\"spec\":{\"replicas\":2,\"serviceName\":\"db\","
	       "\"selector\":{\"matchLabels\":{\"app\":\"db\"}},\"template\":{\"metadata\":{\"labels\":"
	       "{\"app\":\"db\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}},"
	       "\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":"
	       "[\"ReadWriteOnce\"],\"storageClassName\":\"wffc\",\"resources\":{\"requests\":"
	       "{\"storage\":\"1Gi\"}}}}]}}");
	k8s_statefulsets_reconcile(store);
	cr_assert_eq(count_named("pods", "db-0"), 1);
	cr_assert_eq(count_named("persistentvolumeclaims", "data-db-0"), 1);
	cr_assert_eq(count_named("pods", "db-1"), 0, "OrderedReady waits for db-0 to be Ready");
	cr_assert_eq(k8s_store_mutate(store, pods, "default", "db-0", K8S_WRITE_ALL, ready, NULL,
				      NULL, &err), 0);
	k8s_statefulsets_reconcile(store);
	cr_assert_eq(count_named("pods", "db-1"), 1);
	cr_assert_eq(count_named("persistentvolumeclaims", "data-db-1"), 1);
}

static const char *node_of(const char *generate_prefix, size_t *count)
{
	static char node[64];
	json_t *all = k8s_controller_snapshot(store, "", "pods");
	json_t *p;
	size_t i;

	*count = 0;
	node[0] = '\0';
	json_array_foreach(all, i, p) {
		const char *name = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));

		if (strncmp(name, generate_prefix, strlen(generate_prefix)) != 0 ||
		    json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"))
			continue;
		(*count)++;
		snprintf(node, sizeof(node), "%s",
			 json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName")));
	}
	json_decref(all);
	return node;
}

Test(sim_controllers, daemonset_runs_one_pod_per_selected_node_even_when_cordoned)
{
	struct k8s_resource *sets = k8s_registry_find(reg, "apps", "v1", "daemonsets");
	struct k8s_delete_options opts;
	struct k8s_error err = {};
	size_t n;

	create(nodes, NULL, NODE("picked", "\"unschedulable\":true"));
	create(nodes, NULL, "{\"metadata\":{\"name\":\"other\",\"labels\":{\"zone\":\"b\"}},\"spec\":{}}");
	create(sets, "default",
	       "{\"metadata\":{\"name\":\"agent\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"agent\"}},"
	       "\"template\":{\"metadata\":{\"labels\":{\"app\":\"agent\"}},\"spec\":{\"nodeSelector\":"
	       "{\"zone\":\"a\"},\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}");
	k8s_daemonsets_reconcile(store);
	cr_assert_str_eq(node_of("agent-", &n), "picked");
	cr_assert_eq(n, 1);
	k8s_daemonsets_reconcile(store);
	node_of("agent-", &n);
	cr_assert_eq(n, 1, "a second pass changes nothing");
	k8s_delete_options_init(&opts);
	cr_assert_eq(k8s_store_delete(store, nodes, NULL, "picked", &opts, NULL, &err), 0);
	k8s_daemonsets_reconcile(store);
	node_of("agent-", &n);
	cr_assert_eq(n, 0, "the pod goes with its node");
}

Test(sim_controllers, first_consumer_binds_a_claim_in_its_zone_and_later_pods_follow_it)
{
	struct k8s_resource *pvcs = k8s_registry_find(reg, "", "v1", "persistentvolumeclaims");
	struct k8s_resource *pvs = k8s_registry_find(reg, "", "v1", "persistentvolumes");
	struct k8s_delete_options opts;
	struct k8s_error err = {};
	json_t *pvc = NULL, *pv = NULL, *p;

	create(nodes, NULL, "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"topology.kubernetes.io/zone\":\"a\"}},"
			    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
			    "\"allocatable\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"10\"}}}");
	create(pvcs, "default", "{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":"
				"[\"ReadWriteOnce\"],\"storageClassName\":\"wffc\",\"resources\":"
				"{\"requests\":{\"storage\":\"1Gi\"}}}}");
	create(pods, "default", POD("first", "100m", "\"volumes\":[{\"name\":\"d\","
				    "\"persistentVolumeClaim\":{\"claimName\":\"data\"}}],"));
	k8s_scheduler_reconcile(store);
	cr_assert_eq(k8s_store_get(store, pvcs, "default", "data", &pvc, &err), 0);
	cr_assert_str_eq(field(pvc, "status", "phase"), "Bound");
	cr_assert_eq(k8s_store_get(store, pvs, NULL, field(pvc, "spec", "volumeName"), &pv, &err), 0);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(json_array_get(json_object_get(
				 json_array_get(json_object_get(json_object_get(json_object_get(
					 json_object_get(pv, "spec"), "nodeAffinity"), "required"),
							       "nodeSelectorTerms"), 0),
				 "matchExpressions"), 0), "values"), 0)), "a");
	/* The zone-a node goes; a zone-b node cannot take the claim's next user. */
	k8s_delete_options_init(&opts);
	cr_assert_eq(k8s_store_delete(store, nodes, NULL, "n1", &opts, NULL, &err), 0);
	create(nodes, NULL, "{\"metadata\":{\"name\":\"n2\",\"labels\":{\"topology.kubernetes.io/zone\":\"b\"}},"
			    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
			    "\"allocatable\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"10\"}}}");
	create(pods, "default", POD("second", "100m", "\"volumes\":[{\"name\":\"d\","
				    "\"persistentVolumeClaim\":{\"claimName\":\"data\"}}],"));
	k8s_scheduler_reconcile(store);
	p = get_pod("second");
	cr_assert_null(field(p, "spec", "nodeName"));
	cr_assert_str_eq(condition(p, "message"),
			 "0/1 nodes are available: 1 node(s) had volume node affinity conflict.");
	json_decref(p);
	json_decref(pv);
	json_decref(pvc);
}

#define ZONE_NODE(name, zone) \
	"{\"metadata\":{\"name\":\"" name "\",\"labels\":{\"topology.kubernetes.io/zone\":\"" zone "\"}}," \
	"\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]," \
	"\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"10\"}}}"
#define TERM(kind, app) \
	"\"affinity\":{\"" kind "\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":" \
	"{\"matchLabels\":{\"app\":\"" app "\"}},\"topologyKey\":\"topology.kubernetes.io/zone\"}]}},"

Test(sim_controllers, required_pod_affinity_and_anti_affinity_pick_the_zone)
{
	json_t *p;

	create(nodes, NULL, ZONE_NODE("a1", "za"));
	create(nodes, NULL, ZONE_NODE("b1", "zb"));
	create(pods, "default", "{\"metadata\":{\"name\":\"leader\",\"labels\":{\"app\":\"leader\"}},"
				"\"spec\":{\"nodeName\":\"b1\",\"containers\":[{\"name\":\"c\"}]}}");
	create(pods, "default", POD("follower", "100m", TERM("podAffinity", "leader")));
	create(pods, "default", POD("loner", "100m", TERM("podAntiAffinity", "leader")));
	create(pods, "default", POD("stray", "100m", TERM("podAffinity", "nobody")));
	k8s_scheduler_reconcile(store);
	p = get_pod("follower");
	cr_assert_str_eq(field(p, "spec", "nodeName"), "b1", "follows the leader's zone");
	json_decref(p);
	p = get_pod("loner");
	cr_assert_str_eq(field(p, "spec", "nodeName"), "a1", "avoids the leader's zone");
	json_decref(p);
	p = get_pod("stray");
	cr_assert_null(field(p, "spec", "nodeName"), "nothing to be near");
	cr_assert_str_eq(condition(p, "message"),
			 "0/2 nodes are available: 2 node(s) didn't match pod affinity rules.");
	json_decref(p);
}

/* A pod of app s spreading on key with maxSkew 1. */
static void create_spread_pod(const char *name, const char *key, const char *when)
{
	char json[1024];

	snprintf(json, sizeof(json),
		 "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"s\"}},\"spec\":{"
		 "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"%s\","
		 "\"whenUnsatisfiable\":\"%s\",\"labelSelector\":{\"matchLabels\":{\"app\":\"s\"}}}],"
		 "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
		 "{\"cpu\":\"100m\",\"memory\":\"1Gi\"}}}]}}", name, key, when);
	create(pods, "default", json);
}

static const char *bound_to(const char *pod)
{
	static char name[64];
	json_t *p = get_pod(pod);

	snprintf(name, sizeof(name), "%s", field(p, "spec", "nodeName") ?: "");
	json_decref(p);
	return name;
}

Test(sim_controllers, do_not_schedule_spread_keeps_the_skew_where_first_fit_would_not)
{
	char zones[5] = "";
	json_t *p;

	/* Sorted by name, first fit would put every pod on a1. */
	create(nodes, NULL, ZONE_NODE("a1", "za"));
	create(nodes, NULL, ZONE_NODE("a2", "za"));
	create(nodes, NULL, ZONE_NODE("b1", "zb"));
	for (int i = 0; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "s-%d", i);
		create_spread_pod(name, "topology.kubernetes.io/zone", "DoNotSchedule");
		k8s_scheduler_reconcile(store);
		zones[i] = bound_to(name)[0];
	}
	cr_assert(strchr("ab", zones[0]) && strchr("ab", zones[1]), "%s", zones);
	cr_assert_eq((zones[0] == 'a') + (zones[1] == 'a') + (zones[2] == 'a') + (zones[3] == 'a'), 2,
		     "two per zone: %s", zones);
	/* An empty zone is a domain: the next pod must go there. */
	create(nodes, NULL, ZONE_NODE("c1", "zc"));
	create_spread_pod("s-4", "topology.kubernetes.io/zone", "DoNotSchedule");
	k8s_scheduler_reconcile(store);
	cr_assert_str_eq(bound_to("s-4"), "c1");
	/* ScheduleAnyway does not filter; a key no node has fits nowhere. */
	create_spread_pod("any", "rack", "ScheduleAnyway");
	create_spread_pod("rack", "rack", "DoNotSchedule");
	k8s_scheduler_reconcile(store);
	cr_assert_str_eq(bound_to("any"), "a1");
	p = get_pod("rack");
	cr_assert_null(field(p, "spec", "nodeName"));
	cr_assert_str_eq(condition(p, "message"),
			 "0/4 nodes are available: 4 node(s) didn't match pod topology spread constraints.");
	json_decref(p);
}

static json_t *get_obj(const char *group, const char *plural, const char *ns, const char *name)
{
	struct k8s_resource *res = k8s_registry_find(reg, group, "v1", plural);
	struct k8s_error err = {};
	json_t *out = NULL;

	cr_assert_eq(k8s_store_get(store, res, ns, name, &out, &err), 0, "%s", err.message);
	return out;
}

static json_int_t status_int(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(json_object_get(obj, "status"), key);

	cr_assert(!v || json_is_integer(v), "status.%s is not an integer", key);
	return v ? json_integer_value(v) : -1; /* -1: omitted */
}

static void make_ready(const char *prefix)
{
	json_t *all = k8s_controller_snapshot(store, "", "pods");
	struct k8s_error err = {};
	json_t *p;
	size_t i;

	json_array_foreach(all, i, p) {
		const char *name = json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));

		if (strncmp(name, prefix, strlen(prefix)) == 0)
			cr_assert_eq(k8s_store_mutate(store, pods, "default", name, K8S_WRITE_ALL, ready,
						      NULL, NULL, &err), 0, "%s", err.message);
	}
	json_decref(all);
}

Test(sim_controllers, daemonset_status_counts_nodes_as_the_daemonset_controller_does)
{
	struct k8s_resource *sets = k8s_registry_find(reg, "apps", "v1", "daemonsets");
	json_t *ds;

	create(nodes, NULL, NODE("a1", ""));
	create(nodes, NULL, NODE("a2", ""));
	create(nodes, NULL, "{\"metadata\":{\"name\":\"b1\",\"labels\":{\"zone\":\"b\"}},\"spec\":{}}");
	create(sets, "default",
	       "{\"metadata\":{\"name\":\"agent\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"agent\"}},"
	       "\"template\":{\"metadata\":{\"labels\":{\"app\":\"agent\"}},\"spec\":{\"nodeSelector\":"
	       "{\"zone\":\"a\"},\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}");
	cr_assert_eq(k8s_daemonsets_reconcile(store), 3, "two pods and the status");
	ds = get_obj("apps", "daemonsets", "default", "agent");
	cr_assert_eq(status_int(ds, "desiredNumberScheduled"), 2);
	cr_assert_eq(status_int(ds, "currentNumberScheduled"), 2);
	cr_assert_eq(status_int(ds, "numberMisscheduled"), 0);
	cr_assert_eq(status_int(ds, "numberReady"), 0);
	cr_assert_eq(status_int(ds, "updatedNumberScheduled"), 2);
	cr_assert_eq(status_int(ds, "numberAvailable"), -1, "omitted while 0, as upstream");
	cr_assert_eq(status_int(ds, "numberUnavailable"), 2);
	cr_assert_eq(status_int(ds, "observedGeneration"), 1);
	json_decref(ds);
	make_ready("agent-");
	cr_assert_eq(k8s_daemonsets_reconcile(store), 1, "only the status");
	cr_assert_eq(k8s_daemonsets_reconcile(store), 0, "a settled set writes nothing");
	ds = get_obj("apps", "daemonsets", "default", "agent");
	cr_assert_eq(status_int(ds, "numberReady"), 2);
	cr_assert_eq(status_int(ds, "numberAvailable"), 2);
	cr_assert_eq(status_int(ds, "numberUnavailable"), -1);
	json_decref(ds);
}

Test(sim_controllers, daemonset_pods_of_an_older_template_are_not_updated)
{
	struct k8s_resource *sets = k8s_registry_find(reg, "apps", "v1", "daemonsets");
	struct k8s_error err = {};
	json_t *ds;

	create(nodes, NULL, NODE("a1", ""));
	create(sets, "default",
	       "{\"metadata\":{\"name\":\"agent\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"agent\"}},"
	       "\"template\":{\"metadata\":{\"labels\":{\"app\":\"agent\"}},\"spec\":"
	       "{\"containers\":[{\"name\":\"c\",\"image\":\"x:1\"}]}}}}");
	k8s_daemonsets_reconcile(store);
	ds = get_obj("apps", "daemonsets", "default", "agent");
	json_array_set_new(json_object_get(json_object_get(json_object_get(json_object_get(ds, "spec"),
		"template"), "spec"), "containers"), 0, json_pack("{s:s, s:s}", "name", "c", "image", "x:2"));
	cr_assert_eq(k8s_store_update(store, sets, "default", "agent", ds, K8S_WRITE_MAIN, NULL, &err), 0,
		     "%s", err.message);
	json_decref(ds);
	k8s_daemonsets_reconcile(store);
	ds = get_obj("apps", "daemonsets", "default", "agent");
	cr_assert_eq(status_int(ds, "currentNumberScheduled"), 1);
	cr_assert_eq(status_int(ds, "updatedNumberScheduled"), -1, "the pod runs the old template");
	cr_assert_eq(status_int(ds, "observedGeneration"), 2);
	json_decref(ds);
}

static const char *condition_of(const json_t *obj, const char *type, const char *key)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0)
			return json_string_value(json_object_get(c, key));
	return NULL;
}

Test(sim_controllers, deployment_status_reports_availability_and_progress_as_upstream)
{
	json_t *d;

	create(deployments, "default",
	       "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":4,\"selector\":{\"matchLabels\":"
	       "{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":"
	       "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}");
	k8s_deployments_reconcile(store);
	d = get_obj("apps", "deployments", "default", "web");
	cr_assert_eq(status_int(d, "replicas"), 4);
	cr_assert_eq(status_int(d, "updatedReplicas"), 4);
	cr_assert_eq(status_int(d, "unavailableReplicas"), 4);
	cr_assert_str_eq(condition_of(d, "Available", "status"), "False");
	cr_assert_str_eq(condition_of(d, "Available", "reason"), "MinimumReplicasUnavailable");
	cr_assert_str_eq(condition_of(d, "Progressing", "reason"), "ReplicaSetUpdated");
	cr_assert_not_null(condition_of(d, "Progressing", "lastTransitionTime"));
	json_decref(d);
	make_ready("web-");
	k8s_deployments_reconcile(store);
	cr_assert_eq(k8s_deployments_reconcile(store), 0, "a settled deployment writes nothing");
	d = get_obj("apps", "deployments", "default", "web");
	cr_assert_eq(status_int(d, "readyReplicas"), 4);
	cr_assert_eq(status_int(d, "availableReplicas"), 4);
	cr_assert_eq(status_int(d, "unavailableReplicas"), -1);
	cr_assert_str_eq(condition_of(d, "Available", "status"), "True");
	cr_assert_str_eq(condition_of(d, "Available", "message"), "Deployment has minimum availability.");
	cr_assert_str_eq(condition_of(d, "Progressing", "reason"), "NewReplicaSetAvailable");
	cr_assert(strstr(condition_of(d, "Progressing", "message"), "has successfully progressed."));
	json_decref(d);
}

Test(sim_controllers, statefulset_status_names_its_revision)
{
	struct k8s_resource *sets = k8s_registry_find(reg, "apps", "v1", "statefulsets");
	json_t *set, *pod;
	const char *rev;

	create(sets, "default",
	       "{\"metadata\":{\"name\":\"db\"},\"spec\":{\"replicas\":1,\"podManagementPolicy\":\"Parallel\","
	       "\"selector\":{\"matchLabels\":{\"app\":\"db\"}},\"template\":{\"metadata\":{\"labels\":"
	       "{\"app\":\"db\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}");
	k8s_statefulsets_reconcile(store);
	set = get_obj("apps", "statefulsets", "default", "db");
	pod = get_pod("db-0");
	rev = json_string_value(json_object_get(json_object_get(set, "status"), "updateRevision"));
	cr_assert(rev && strncmp(rev, "db-", 3) == 0, "%s", rev);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(set, "status"), "currentRevision")), rev);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(pod, "metadata"),
		"labels"), "controller-revision-hash")), rev);
	cr_assert_eq(status_int(set, "updatedReplicas"), 1);
	cr_assert_eq(status_int(set, "availableReplicas"), 0);
	json_decref(set);
	json_decref(pod);
}

Test(sim_controllers, pdb_status_counts_healthy_pods_against_the_budget)
{
	struct k8s_resource *pdbs = k8s_registry_find(reg, "policy", "v1", "poddisruptionbudgets");
	json_t *pdb;

	create(pods, "default", "{\"metadata\":{\"name\":\"web-1\",\"labels\":{\"app\":\"web\"}},"
				"\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
	create(pods, "default", "{\"metadata\":{\"name\":\"web-2\",\"labels\":{\"app\":\"web\"}},"
				"\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
	create(pods, "default", "{\"metadata\":{\"name\":\"other\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
	create(pdbs, "default", "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"maxUnavailable\":\"50%\","
				"\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}");
	cr_assert_eq(k8s_disruption_reconcile(store), 1);
	pdb = get_obj("policy", "poddisruptionbudgets", "default", "web");
	cr_assert_eq(status_int(pdb, "expectedPods"), 2);
	cr_assert_eq(status_int(pdb, "desiredHealthy"), 1, "2 less 50%% of 2, rounded up");
	cr_assert_eq(status_int(pdb, "currentHealthy"), 0);
	cr_assert_eq(status_int(pdb, "disruptionsAllowed"), 0);
	cr_assert_str_eq(condition_of(pdb, "DisruptionAllowed", "reason"), "InsufficientPods");
	json_decref(pdb);
	make_ready("web-");
	cr_assert_eq(k8s_disruption_reconcile(store), 1);
	cr_assert_eq(k8s_disruption_reconcile(store), 0, "nothing changed");
	pdb = get_obj("policy", "poddisruptionbudgets", "default", "web");
	cr_assert_eq(status_int(pdb, "currentHealthy"), 2);
	cr_assert_eq(status_int(pdb, "disruptionsAllowed"), 1);
	cr_assert_str_eq(condition_of(pdb, "DisruptionAllowed", "status"), "True");
	cr_assert_str_eq(condition_of(pdb, "DisruptionAllowed", "reason"), "SufficientPods");
	json_decref(pdb);
}

static bool pod_exists(const char *name)
{
	struct k8s_error err = {};
	json_t *out = NULL;
	int r = k8s_store_get(store, pods, "default", name, &out, &err);

	json_decref(out);
	k8s_error_clear(&err);
	return r == 0;
}

Test(sim_controllers, pod_gc_deletes_pods_of_a_node_gone_for_the_quarantine)
{
	json_t *missing = json_object();
	struct k8s_delete_options opts;
	struct k8s_error err = {};

	create(nodes, NULL, NODE("n1", ""));
	create(nodes, NULL, NODE("n2", ""));
	create(pods, "default", POD("a", "100m", ""));
	k8s_scheduler_reconcile(store);
	cr_assert(pod_exists("a"));
	k8s_delete_options_init(&opts);
	cr_assert_eq(k8s_store_delete(store, nodes, NULL, "n1", &opts, NULL, &err), 0, "%s", err.message);
	cr_assert_eq(k8s_store_delete(store, nodes, NULL, "n2", &opts, NULL, &err), 0, "%s", err.message);
	cr_assert_eq(k8s_podgc_reconcile(store, missing, 1000, 5000), 0, "first seen gone: quarantined");
	cr_assert_eq(k8s_podgc_reconcile(store, missing, 1000, 5999), 0, "still in quarantine");
	cr_assert(pod_exists("a"));
	cr_assert_eq(k8s_podgc_reconcile(store, missing, 1000, 6000), 1, "quarantine over");
	cr_assert_not(pod_exists("a"));
	cr_assert_eq(json_object_size(missing), 0, "nothing left to remember");
	json_decref(missing);
}

Test(sim_controllers, pod_gc_spares_pods_whose_node_came_back)
{
	json_t *missing = json_object();
	struct k8s_delete_options opts;
	struct k8s_error err = {};

	create(nodes, NULL, NODE("n1", ""));
	create(pods, "default", POD("a", "100m", ""));
	k8s_scheduler_reconcile(store);
	k8s_delete_options_init(&opts);
	cr_assert_eq(k8s_store_delete(store, nodes, NULL, "n1", &opts, NULL, &err), 0, "%s", err.message);
	cr_assert_eq(k8s_podgc_reconcile(store, missing, 1000, 5000), 0);
	create(nodes, NULL, NODE("n1", ""));
	cr_assert_eq(k8s_podgc_reconcile(store, missing, 1000, 7000), 0);
	cr_assert(pod_exists("a"));
	cr_assert_eq(json_object_size(missing), 0, "the node's absence is forgotten");
	json_decref(missing);
}
