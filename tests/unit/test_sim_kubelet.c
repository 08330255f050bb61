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
