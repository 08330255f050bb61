/* kanna-sim kubelet-lite: pods bound to Ready nodes start; others wait. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "sim/kubelet.h"

static struct k8s_registry *reg;
static struct k8s_store *store;
static struct k8s_resource *pods, *nodes;
static struct sim_kubelet *kubelet;

static void setup(void)
{
	reg = k8s_registry_new();
	cr_assert_eq(k8s_store_new(reg, 0, &store), 0);
	cr_assert_eq(k8s_store_seed(store), 0);
	pods = k8s_registry_find(reg, "", "v1", "pods");
	nodes = k8s_registry_find(reg, "", "v1", "nodes");
	cr_assert_eq(sim_kubelet_new(store, NULL, SIM_KUBELET_BOOT_MS_DEFAULT, &kubelet), 0);
}

static void teardown(void)
{
	sim_kubelet_free(kubelet);
	k8s_store_free(store);
	k8s_registry_free(reg);
}

TestSuite(sim_kubelet, .init = setup, .fini = teardown);

static void create(struct k8s_resource *res, const char *ns, const char *json)
{
	struct k8s_error err = {};
	json_t *body = json_loads(json, 0, NULL);

	cr_assert_eq(k8s_store_create(store, res, ns, body, NULL, &err), 0, "%s", err.message);
	json_decref(body);
}

static json_t *pod(const char *name)
{
	struct k8s_error err = {};
	json_t *out = NULL;

	cr_assert_eq(k8s_store_get(store, pods, "default", name, &out, &err), 0);
	return out;
}

static const char *phase(json_t *p)
{
	return json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
}

Test(sim_kubelet, pods_bound_to_ready_nodes_become_running_and_ready)
{
	json_t *a, *b;

	create(nodes, NULL, "{\"metadata\":{\"name\":\"up\"},\"status\":{\"conditions\":"
			    "[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	create(nodes, NULL, "{\"metadata\":{\"name\":\"down\"},\"status\":{\"conditions\":"
			    "[{\"type\":\"Ready\",\"status\":\"False\"}]}}");
	create(pods, "default", "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"nodeName\":\"up\","
				"\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
	create(pods, "default", "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"nodeName\":\"down\","
				"\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
	cr_assert_eq(sim_kubelet_reconcile(kubelet, 0), 1);
	a = pod("a");
	b = pod("b");
	cr_assert_str_eq(phase(a), "Running");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(
				 json_object_get(a, "status"), "conditions"), 3), "type")), "Ready");
	cr_assert(json_is_true(json_object_get(json_array_get(json_object_get(json_object_get(
			a, "status"), "containerStatuses"), 0), "ready")));
	cr_assert_str_eq(phase(b), "Pending", "a NotReady node runs nothing");
	cr_assert_eq(sim_kubelet_reconcile(kubelet, 0), 0, "nothing left to do");
	json_decref(a);
	json_decref(b);
}

/* As a kubelet admits pods (pkg/kubelet/lifecycle/predicate.go): a pod that
 * does not tolerate a NoExecute taint of its node fails; NoSchedule taints
 * are the scheduler's business, not the kubelet's. */
Test(sim_kubelet, a_pod_bound_past_a_noexecute_taint_is_rejected_and_noschedule_is_not_checked)
{
	json_t *a, *b, *c;

	create(nodes, NULL, "{\"metadata\":{\"name\":\"joining\"},\"spec\":{\"taints\":["
			    "{\"key\":\"karpenter.sh/unregistered\",\"effect\":\"NoExecute\"},"
			    "{\"key\":\"dedicated\",\"value\":\"x\",\"effect\":\"NoSchedule\"}]},"
			    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	create(pods, "default", "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"nodeName\":\"joining\","
				"\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
	create(pods, "default", "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"nodeName\":\"joining\","
				"\"tolerations\":[{\"key\":\"karpenter.sh/unregistered\",\"operator\":\"Exists\","
				"\"effect\":\"NoExecute\"}],\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
	create(pods, "default", "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"nodeName\":\"joining\","
				"\"tolerations\":[{\"operator\":\"Exists\"}],"
				"\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
	cr_assert_eq(sim_kubelet_reconcile(kubelet, 0), 3);
	a = pod("a");
	b = pod("b");
	c = pod("c");
	cr_assert_str_eq(phase(a), "Failed");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(a, "status"), "reason")),
			 "TaintToleration");
	cr_assert(strstr(json_string_value(json_object_get(json_object_get(a, "status"), "message")),
			 "karpenter.sh/unregistered"));
	cr_assert_str_eq(phase(b), "Running", "NoSchedule is not the kubelet's to check");
	cr_assert_str_eq(phase(c), "Running");
	cr_assert_eq(sim_kubelet_reconcile(kubelet, 0), 0, "a failed pod stays failed");
	json_decref(a);
	json_decref(b);
	json_decref(c);
}
