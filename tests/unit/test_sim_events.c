/* kanna-sim Events and timeline: the recorder's aggregation and expiry, the
 * Events kube-scheduler-lite, the Deployment controller and kubelet-lite
 * write, kubectl's Event table, and the Kubernetes side's timeline. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "common/clock.h"
#include "sim/k8s-api.h"
#include "sim/k8s-controllers.h"
#include "sim/kubelet.h"

static struct k8s_registry *reg;
static struct k8s_store *store;
static struct k8s_api api;
static struct k8s_resource *pods, *nodes, *deployments, *events, *nodeclaims;

#define NODECLAIM_CRD \
	"{\"metadata\":{\"name\":\"nodeclaims.karpenter.sh\"},\"spec\":{\"group\":\"karpenter.sh\"," \
	"\"scope\":\"Cluster\",\"names\":{\"kind\":\"NodeClaim\",\"plural\":\"nodeclaims\"," \
	"\"singular\":\"nodeclaim\"},\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true," \
	"\"subresources\":{\"status\":{}},\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"," \
	"\"x-kubernetes-preserve-unknown-fields\":true," \
	"\"description\":\"NodeClaim is the Schema for the NodeClaims API\"}}}]}}"

static void setup(void)
{
	json_t *crd = json_loads(NODECLAIM_CRD, 0, NULL);

	reg = k8s_registry_new();
	cr_assert_eq(k8s_registry_add_crd(reg, crd), 0);
	json_decref(crd);
	cr_assert_eq(k8s_store_new(reg, 0, &store), 0);
	cr_assert_eq(k8s_store_seed(store), 0);
	k8s_api_init(&api, reg, store);
	pods = k8s_registry_find(reg, "", "v1", "pods");
	nodes = k8s_registry_find(reg, "", "v1", "nodes");
	deployments = k8s_registry_find(reg, "apps", "v1", "deployments");
	events = k8s_registry_find(reg, "", "v1", "events");
	nodeclaims = k8s_registry_find(reg, "karpenter.sh", "v1", "nodeclaims");
}

static void teardown(void)
{
	k8s_api_done(&api);
	k8s_store_free(store);
	k8s_registry_free(reg);
}

TestSuite(sim_events, .init = setup, .fini = teardown);

static json_t *create(struct k8s_resource *res, const char *ns, const char *json)
{
	struct k8s_error err = {};
	json_t *body = json_loads(json, 0, NULL), *out = NULL;

	cr_assert_not_null(body, "bad JSON %s", json);
	cr_assert_eq(k8s_store_create(store, res, ns, body, &out, &err), 0, "%s", err.message);
	json_decref(body);
	return out;
}

static void patch(struct k8s_resource *res, const char *name, enum k8s_write_mode mode,
		  const char *json)
{
	struct k8s_error err = {};
	json_t *cur = NULL, *p = json_loads(json, 0, NULL);

	cr_assert_eq(k8s_store_get(store, res, res->namespaced ? "default" : "", name, &cur, &err),
		     0, "%s", err.message);
	cr_assert_not_null(p);
	json_object_update_recursive(cur, p);
	cr_assert_eq(k8s_store_update(store, res, res->namespaced ? "default" : "", name, cur, mode,
				      NULL, &err), 0, "%s", err.message);
	json_decref(cur);
	json_decref(p);
}

/* Every Event, as a parsed list. */
static json_t *all_events(void)
{
	return k8s_controller_snapshot(store, "", "events");
}

/* The Events about one object with a reason, in list (name) order. */
static json_t *events_of(const char *object, const char *reason)
{
	json_t *all = all_events(), *out = json_array(), *e;
	size_t i;

	json_array_foreach(all, i, e) {
		const json_t *inv = json_object_get(e, "involvedObject");

		if (streq_ptr(json_string_value(json_object_get(inv, "name")), object) &&
		    streq_ptr(json_string_value(json_object_get(e, "reason")), reason))
			json_array_append(out, e);
	}
	json_decref(all);
	return out;
}

static const char *str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

#define POD(name, cpu) \
	"{\"metadata\":{\"name\":\"" name "\"},\"spec\":{\"containers\":[{\"name\":\"app\"," \
	"\"image\":\"nginx\",\"resources\":{\"requests\":{\"cpu\":\"" cpu "\"}}}]}}"
#define READY_NODE(name) \
	"{\"metadata\":{\"name\":\"" name "\"},\"status\":{\"conditions\":[{\"type\":\"Ready\"," \
	"\"status\":\"True\"}],\"allocatable\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"10\"}}}"

Test(sim_events, a_repeated_event_is_one_object_whose_count_grows)
{
	json_t *pod = create(pods, "default", POD("web", "1")), *got, *e;
	const struct k8s_event_source src = { .component = "tester", .host = "h1" };
	struct k8s_event_ref ref;
	char first[300];

	k8s_event_ref_of(pod, &ref);
	cr_assert_eq(k8s_event_record(store, &ref, &src, K8S_EVENT_WARNING, "Boom", "it %s", "broke"), 0);
	cr_assert_eq(k8s_event_record(store, &ref, &src, K8S_EVENT_WARNING, "Boom", "it %s", "broke"), 0);
	got = events_of("web", "Boom");
	cr_assert_eq(json_array_size(got), 1);
	e = json_array_get(got, 0);
	cr_assert_eq(json_integer_value(json_object_get(e, "count")), 2);
	cr_assert_str_eq(str(e, "type"), "Warning");
	cr_assert_str_eq(str(e, "message"), "it broke");
	cr_assert_str_eq(str(json_object_get(e, "involvedObject"), "kind"), "Pod");
	cr_assert_str_eq(str(json_object_get(e, "involvedObject"), "uid"), ref.uid);
	cr_assert_str_eq(str(json_object_get(e, "involvedObject"), "namespace"), "default");
	cr_assert_str_eq(str(json_object_get(e, "source"), "component"), "tester");
	cr_assert_str_eq(str(json_object_get(e, "source"), "host"), "h1");
	snprintf(first, sizeof(first), "%s", str(json_object_get(e, "metadata"), "name"));
	cr_assert(strncmp(first, "web.", 4) == 0, "name %s", first);
	json_decref(got);

	/* Something else said about the same object is another Event, named later. */
	cr_assert_eq(k8s_event_record(store, &ref, &src, K8S_EVENT_WARNING, "Boom", "it broke again"), 0);
	got = events_of("web", "Boom");
	cr_assert_eq(json_array_size(got), 2);
	cr_assert_str_eq(str(json_object_get(json_array_get(got, 0), "metadata"), "name"), first);
	cr_assert_str_eq(str(json_array_get(got, 1), "message"), "it broke again");
	json_decref(got);
	json_decref(pod);
}

Test(sim_events, events_about_cluster_scoped_objects_live_in_default_and_expire)
{
	json_t *node = create(nodes, NULL, READY_NODE("n1")), *got;
	const struct k8s_event_source src = { .component = "tester" };
	struct k8s_event_ref ref;

	k8s_event_ref_of(node, &ref);
	cr_assert_eq(k8s_event_record(store, &ref, &src, K8S_EVENT_NORMAL, "Hello", "hi"), 0);
	got = events_of("n1", "Hello");
	cr_assert_eq(json_array_size(got), 1);
	cr_assert_str_eq(str(json_object_get(json_array_get(got, 0), "metadata"), "namespace"),
			 "default");
	cr_assert_null(json_object_get(json_object_get(json_array_get(got, 0), "involvedObject"),
				       "namespace"));
	json_decref(got);
	cr_assert_eq(k8s_store_sweep(store, clock_monotonic_ms() + K8S_EVENT_TTL_MS / 2), 0);
	cr_assert_eq(k8s_store_sweep(store, clock_monotonic_ms() + K8S_EVENT_TTL_MS + 1000), 1);
	got = events_of("n1", "Hello");
	cr_assert_eq(json_array_size(got), 0, "an Event outlived its TTL");
	json_decref(got);
	/* Once expired, a repeat starts a new Event. */
	cr_assert_eq(k8s_event_record(store, &ref, &src, K8S_EVENT_NORMAL, "Hello", "hi"), 0);
	got = events_of("n1", "Hello");
	cr_assert_eq(json_array_size(got), 1);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(got, 0), "count")), 1);
	json_decref(got);
	json_decref(node);
}

Test(sim_events, scheduler_reports_failed_scheduling_once_per_reason_then_scheduled)
{
	json_t *got;

	json_decref(create(pods, "default", POD("p", "1")));
	cr_assert_geq(k8s_scheduler_reconcile(store), 1);
	k8s_scheduler_reconcile(store);
	got = events_of("p", "FailedScheduling");
	cr_assert_eq(json_array_size(got), 1, "one Event while the reason stays the same");
	cr_assert_str_eq(str(json_array_get(got, 0), "message"), "0/0 nodes are available.");
	cr_assert_str_eq(str(json_array_get(got, 0), "type"), "Warning");
	cr_assert_str_eq(str(json_object_get(json_array_get(got, 0), "source"), "component"),
			 "default-scheduler");
	json_decref(got);

	json_decref(create(nodes, NULL, READY_NODE("n1")));
	patch(nodes, "n1", K8S_WRITE_ALL, "{\"spec\":{\"unschedulable\":true}}");
	k8s_scheduler_reconcile(store);
	got = events_of("p", "FailedScheduling");
	cr_assert_eq(json_array_size(got), 2, "a new reason is a new Event");
	cr_assert_str_eq(str(json_array_get(got, 1), "message"),
			 "0/1 nodes are available: 1 node(s) were unschedulable.");
	json_decref(got);

	patch(nodes, "n1", K8S_WRITE_ALL, "{\"spec\":{\"unschedulable\":false}}");
	k8s_scheduler_reconcile(store);
	got = events_of("p", "Scheduled");
	cr_assert_eq(json_array_size(got), 1);
	cr_assert_str_eq(str(json_array_get(got, 0), "message"),
			 "Successfully assigned default/p to n1");
	cr_assert_str_eq(str(json_array_get(got, 0), "type"), "Normal");
	json_decref(got);
}

static const char *deployment_name_of(const json_t *e)
{
	return str(json_object_get(e, "involvedObject"), "name");
}

Test(sim_events, deployment_scaling_is_reported_but_replacing_a_pod_is_not)
{
	json_t *all, *scaled = json_array(), *e;
	struct k8s_delete_options opts;
	struct k8s_error err = {};
	size_t i;

	json_decref(create(deployments, "default",
			   "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":3,\"selector\":"
			   "{\"matchLabels\":{\"a\":\"b\"}},\"template\":{\"metadata\":{\"labels\":"
			   "{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}"));
	k8s_deployments_reconcile(store);
	k8s_deployments_reconcile(store);
	/* Lose one pod: the controller replaces it without a scaling Event. */
	all = k8s_controller_snapshot(store, "", "pods");
	cr_assert_eq(json_array_size(all), 3);
	k8s_delete_options_init(&opts);
	cr_assert_eq(k8s_store_delete(store, pods, "default",
				      str(json_object_get(json_array_get(all, 0), "metadata"), "name"),
				      &opts, NULL, &err), 0);
	json_decref(all);
	k8s_deployments_reconcile(store);
	patch(deployments, "d", K8S_WRITE_MAIN, "{\"spec\":{\"replicas\":1}}");
	k8s_deployments_reconcile(store);

	all = all_events();
	json_array_foreach(all, i, e)
		if (streq_ptr(str(e, "reason"), "ScalingReplicaSet") && streq_ptr(deployment_name_of(e), "d"))
			json_array_append(scaled, e);
	cr_assert_eq(json_array_size(scaled), 2);
	cr_assert(strncmp(str(json_array_get(scaled, 0), "message"), "Scaled up replica set d-", 24) == 0,
		  "%s", str(json_array_get(scaled, 0), "message"));
	cr_assert(strstr(str(json_array_get(scaled, 0), "message"), " from 0 to 3"));
	cr_assert(strncmp(str(json_array_get(scaled, 1), "message"), "Scaled down replica set d-", 26) == 0);
	cr_assert(strstr(str(json_array_get(scaled, 1), "message"), " from 3 to 1"));
	json_decref(scaled);
	json_decref(all);
}

Test(sim_events, kubelet_reports_each_container_it_starts)
{
	struct sim_kubelet *kubelet;
	json_t *got;

	cr_assert_eq(sim_kubelet_new(store, NULL, SIM_KUBELET_BOOT_MS_DEFAULT, &kubelet), 0);
	json_decref(create(nodes, NULL, READY_NODE("n1")));
	json_decref(create(pods, "default",
			   "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":"
			   "[{\"name\":\"app\",\"image\":\"nginx:1\"},{\"name\":\"side\",\"image\":\"busybox\"}]}}"));
	cr_assert_eq(sim_kubelet_reconcile(kubelet, 0), 1);
	got = events_of("p", "Pulled");
	cr_assert_eq(json_array_size(got), 2);
	cr_assert_str_eq(str(json_array_get(got, 0), "message"),
			 "Container image \"nginx:1\" already present on machine");
	cr_assert_str_eq(str(json_object_get(json_array_get(got, 0), "source"), "host"), "n1");
	json_decref(got);
	got = events_of("p", "Started");
	cr_assert_eq(json_array_size(got), 2);
	cr_assert_str_eq(str(json_array_get(got, 1), "message"), "Started container side");
	json_decref(got);
	/* A running pod is not started again. */
	cr_assert_eq(sim_kubelet_reconcile(kubelet, 0), 0);
	got = events_of("p", "Created");
	cr_assert_eq(json_array_size(got), 2);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(got, 0), "count")), 1);
	json_decref(got);
	sim_kubelet_free(kubelet);
}

Test(sim_events, kubectl_gets_events_as_upstream_prints_them)
{
	json_t *pod = create(pods, "default", POD("web", "1")), *items, *table, *cells, *defs;
	const struct k8s_event_source src = { .component = "kubelet", .host = "n1" };
	struct k8s_event_ref ref;

	k8s_event_ref_of(pod, &ref);
	k8s_event_record(store, &ref, &src, K8S_EVENT_NORMAL, "Started", "Started container app");
	k8s_event_record(store, &ref, &src, K8S_EVENT_NORMAL, "Started", "Started container app");
	items = all_events();
	table = k8s_table_new(&api, events, items, NULL);
	defs = json_object_get(table, "columnDefinitions");
	cr_assert_str_eq(str(json_array_get(defs, 0), "name"), "Last Seen");
	cr_assert_str_eq(str(json_array_get(defs, 9), "name"), "Name");
	cr_assert_str_eq(str(json_array_get(defs, 9), "format"), "name");
	cells = json_object_get(json_array_get(json_object_get(table, "rows"), 0), "cells");
	cr_assert(strstr(json_string_value(json_array_get(cells, 0)), "(x2 over "),
		  "last seen: %s", json_string_value(json_array_get(cells, 0)));
	cr_assert_str_eq(json_string_value(json_array_get(cells, 1)), "Normal");
	cr_assert_str_eq(json_string_value(json_array_get(cells, 2)), "Started");
	cr_assert_str_eq(json_string_value(json_array_get(cells, 3)), "pod/web");
	cr_assert_str_eq(json_string_value(json_array_get(cells, 5)), "kubelet, n1");
	cr_assert_str_eq(json_string_value(json_array_get(cells, 6)), "Started container app");
	cr_assert_eq(json_integer_value(json_array_get(cells, 8)), 2);
	json_decref(table);
	json_decref(items);
	json_decref(pod);
}

/* ---- timeline ---------------------------------------------------------- */

/* "event detail" lines of the timeline, in order. */
static char *timeline_text(void)
{
	json_t *t = k8s_timeline_json(store, NULL), *e;
	size_t i, len = 0;
	char *out = NULL;
	FILE *f = open_memstream(&out, &len);

	json_array_foreach(t, i, e)
		fprintf(f, "%s %s\n", str(e, "event"), str(e, "detail"));
	fclose(f);
	json_decref(t);
	return out;
}

Test(sim_events, the_timeline_follows_a_pod_from_creation_to_deletion)
{
	struct k8s_delete_options opts;
	struct k8s_error err = {};
	char *text;

	json_decref(create(pods, "default", POD("p", "1")));
	k8s_scheduler_reconcile(store);
	json_decref(create(nodes, NULL,
			   "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"node.kubernetes.io/instance-type\":"
			   "\"m5.large\",\"topology.kubernetes.io/zone\":\"us-west-2a\","
			   "\"karpenter.sh/nodepool\":\"default\"}},\"status\":"
			   "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],\"allocatable\":"
			   "{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"10\"}}}"));
	k8s_scheduler_reconcile(store);
	patch(pods, "p", K8S_WRITE_STATUS, "{\"status\":{\"phase\":\"Running\"}}");
	patch(pods, "p", K8S_WRITE_STATUS, "{\"status\":{\"phase\":\"Running\",\"podIP\":\"10.1.0.2\"}}");
	k8s_delete_options_init(&opts);
	opts.grace_period_seconds = 0;
	cr_assert_eq(k8s_store_delete(store, pods, "default", "p", &opts, NULL, &err), 0);
	text = timeline_text();
	cr_assert_str_eq(text,
			 "pod-created default/p\n"
			 "pod-unschedulable default/p\n"
			 "node-registered n1 m5.large us-west-2a nodepool=default\n"
			 "node-ready n1\n"
			 "pod-scheduled default/p n1\n"
			 "pod-bound default/p n1\n"
			 "pod-running default/p n1\n"
			 "pod-deleted default/p n1\n");
	free(text);
}

Test(sim_events, the_timeline_follows_a_node_through_cordon_taint_and_removal)
{
	struct k8s_delete_options opts;
	struct k8s_error err = {};
	char *text;

	json_decref(create(nodes, NULL,
			   "{\"metadata\":{\"name\":\"n1\",\"finalizers\":[\"karpenter.sh/termination\"]},"
			   "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}"));
	patch(nodes, "n1", K8S_WRITE_STATUS,
	      "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	patch(nodes, "n1", K8S_WRITE_ALL, "{\"spec\":{\"unschedulable\":true}}");
	patch(nodes, "n1", K8S_WRITE_ALL, "{\"spec\":{\"unschedulable\":false}}");
	patch(nodes, "n1", K8S_WRITE_ALL,
	      "{\"spec\":{\"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoSchedule\"}]}}");
	patch(nodes, "n1", K8S_WRITE_ALL, "{\"spec\":{\"taints\":[]}}");
	patch(nodes, "n1", K8S_WRITE_ALL,
	      "{\"spec\":{\"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoSchedule\"}]}}");
	patch(nodes, "n1", K8S_WRITE_STATUS,
	      "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}");
	k8s_delete_options_init(&opts);
	cr_assert_eq(k8s_store_delete(store, nodes, NULL, "n1", &opts, NULL, &err), 0);
	patch(nodes, "n1", K8S_WRITE_ALL, "{\"metadata\":{\"finalizers\":[]}}");
	text = timeline_text();
	cr_assert_str_eq(text,
			 "node-registered n1\n"
			 "node-ready n1\n"
			 "node-cordoned n1\n"
			 "node-uncordoned n1\n"
			 "node-tainted n1 karpenter.sh/disrupted:NoSchedule\n"
			 "node-untainted n1 karpenter.sh/disrupted:NoSchedule\n"
			 "node-tainted n1 karpenter.sh/disrupted:NoSchedule\n"
			 "node-not-ready n1\n"
			 "node-deleting n1\n"
			 "node-deleted n1\n");
	free(text);
}

Test(sim_events, the_timeline_notes_nodeclaims_and_evictions)
{
	const char *eviction = "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\","
			       "\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"}}";
	struct k8s_request req = {
		.method = "POST", .path = "/api/v1/namespaces/default/pods/p/eviction",
		.content_type = "application/json", .body = eviction, .body_len = strlen(eviction),
	};
	struct k8s_response resp;
	uint64_t dropped = 7;
	json_t *t;
	char *text;

	json_decref(create(nodeclaims, NULL,
			   "{\"metadata\":{\"name\":\"default-abc\",\"labels\":{\"karpenter.sh/nodepool\":"
			   "\"default\"}}}"));
	patch(nodeclaims, "default-abc", K8S_WRITE_STATUS,
	      "{\"status\":{\"providerID\":\"aws:///us-west-2a/i-0123\"}}");
	json_decref(create(pods, "default",
			   "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":"
			   "[{\"name\":\"c\"}]}}"));
	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	cr_assert_eq(resp.status, 201, "%s", resp.body);
	k8s_response_clear(&resp);
	text = timeline_text();
	cr_assert_str_eq(text,
			 "nodeclaim-created default-abc default\n"
			 "nodeclaim-launched default-abc aws:///us-west-2a/i-0123\n"
			 "pod-created default/p\n"
			 "pod-bound default/p n1\n"
			 "pod-evicted default/p n1\n");
	free(text);
	t = k8s_timeline_json(store, &dropped);
	cr_assert_eq(dropped, 0);
	cr_assert(strlen(str(json_array_get(t, 0), "time")) == 24, "time %s",
		  str(json_array_get(t, 0), "time"));
	json_decref(t);
}

Test(sim_events, admin_status_carries_the_timeline)
{
	struct k8s_request req = { .method = "GET", .path = "/_sim/status" };
	struct k8s_response resp;
	json_t *status;

	json_decref(create(nodes, NULL, READY_NODE("n1")));
	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	cr_assert_eq(resp.status, 200);
	status = json_loadb(resp.body, resp.len, 0, NULL);
	cr_assert_not_null(status);
	cr_assert_str_eq(str(json_array_get(json_object_get(status, "timeline"), 0), "event"),
			 "node-registered");
	cr_assert_eq(json_integer_value(json_object_get(status, "timelineDropped")), 0);
	cr_assert_not_null(json_object_get(status, "time"));
	cr_assert_str_eq(str(json_array_get(json_object_get(status, "nodes"), 0), "name"), "n1");
	json_decref(status);
	k8s_response_clear(&resp);
}

/* POSTs an Eviction for default/NAME; returns the HTTP status. */
static long evict(const char *name)
{
	char path[128], body[256];
	struct k8s_request req = { .method = "POST", .path = path,
				   .content_type = "application/json", .body = body };
	struct k8s_response resp;
	long status;

	snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s/eviction", name);
	snprintf(body, sizeof(body), "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"}}", name);
	req.body_len = strlen(body);
	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	status = resp.status;
	k8s_response_clear(&resp);
	return status;
}

#define WEB_POD(name, phase, ready)                                                               \
	"{\"metadata\":{\"name\":\"" name "\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"nodeName\":" \
	"\"n1\",\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"" phase "\","           \
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"" ready "\"}]}}"

static void ready(const char *name)
{
	patch(pods, name, K8S_WRITE_STATUS, "{\"status\":{\"phase\":\"Running\",\"conditions\":"
	      "[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
}

/* The timeline's pod-evicted says which budget covered the pod, how many
 * disruptions it allowed just before, and why it did not count (pending):
 * what the chaos test's pdb-eviction-violated invariant reads. */
Test(sim_events, an_eviction_notes_the_budget_it_met)
{
	struct k8s_resource *pdbs = k8s_registry_find(reg, "policy", "v1", "poddisruptionbudgets");
	json_t *t, *e;
	size_t i;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	json_decref(create(pdbs, "default", "{\"metadata\":{\"name\":\"web\"},\"spec\":{"
			   "\"maxUnavailable\":1,\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}}"));
	json_decref(create(pods, "default", WEB_POD("w1", "Running", "True")));
	json_decref(create(pods, "default", WEB_POD("w2", "Running", "True")));
	ready("w1");
	ready("w2");
	json_decref(create(pods, "default", "{\"metadata\":{\"name\":\"solo\"},\"spec\":{\"nodeName\":"
			   "\"n1\",\"containers\":[{\"name\":\"c\"}]}}"));

	/* 2 pods, both healthy, 1 may be unavailable: desired 1, allowed 1. */
	cr_assert_eq(evict("w2"), 201);
	/* Now 1 healthy (w2 gone or terminating) of desired 1 at least: 0. */
	json_decref(create(pods, "default", WEB_POD("w3", "Pending", "False")));
	cr_assert_eq(evict("w1"), 429, "a Ready pod the budget holds");
	/* A pending pod goes whatever the budget says: noted as exempt. */
	cr_assert_eq(evict("w3"), 201);
	cr_assert_eq(evict("solo"), 201, "no budget covers it");

	t = k8s_timeline_json(store, NULL);
	f = open_memstream(&text, &len);
	json_array_foreach(t, i, e)
		if (streq(str(e, "event"), "pod-evicted"))
			fprintf(f, "%s\n", str(e, "detail"));
	fclose(f);
	json_decref(t);
	cr_assert_str_eq(text, "default/w2 n1 pdb default/web allowed 1\n"
			       "default/w3 n1 pdb default/web allowed 0 exempt pending\n"
			       "default/solo n1\n");
	free(text);
}
