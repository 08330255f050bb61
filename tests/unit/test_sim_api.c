/* kanna-sim API surface: CRDs merged from split files and served as
 * Established CustomResourceDefinitions, CRD schemas in OpenAPI v3 for
 * kubectl explain, request bodies (YAML accepted, CBOR 415) and the
 * field selectors each resource supports. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sim/k8s-api.h"

static struct k8s_registry *reg;
static struct k8s_store *store;
static struct k8s_api api;

/* As data/crds ships NodePool: a v1beta1-era file that also serves v1, and a v1 file. */
#define CRD(versions) \
	"{\"kind\":\"CustomResourceDefinition\",\"metadata\":{\"name\":\"nodepools.karpenter.sh\"}," \
	"\"spec\":{\"group\":\"karpenter.sh\",\"scope\":\"Cluster\",\"names\":{\"kind\":\"NodePool\"," \
	"\"plural\":\"nodepools\",\"singular\":\"nodepool\"},\"versions\":[" versions "]}}"
#define CRD_VERSION(name, storage, description) \
	"{\"name\":\"" name "\",\"served\":true,\"storage\":" storage ",\"schema\":{\"openAPIV3Schema\":" \
	"{\"type\":\"object\",\"description\":\"" description "\",\"properties\":{\"spec\":" \
	"{\"type\":\"object\"}}}}}"

static void add_crd(const char *text)
{
	json_t *crd = json_loads(text, 0, NULL);

	cr_assert_not_null(crd, "bad JSON %s", text);
	cr_assert_eq(k8s_registry_add_crd(reg, crd), 0);
	json_decref(crd);
}

#define EC2NODECLASSES "/apis/karpenter.k8s.aws/%s/ec2nodeclasses"
/* As the shipped CRDs say (data/crds): v1 dropped Ubuntu, v1beta1 had it. */
#define NODECLASS_VERSION(name, storage, families) \
	"{\"name\":\"" name "\",\"served\":true,\"storage\":" storage ",\"schema\":{\"openAPIV3Schema\":" \
	"{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{\"amiFamily\":" \
	"{\"type\":\"string\",\"enum\":[" families "]},\"amiSelectorTerms\":{\"type\":\"array\",\"items\":" \
	"{\"type\":\"object\",\"properties\":{\"alias\":{\"type\":\"string\"}}}}}}}}}}"

static void add_nodeclass_crd(void)
{
	add_crd("{\"kind\":\"CustomResourceDefinition\",\"metadata\":{\"name\":\"ec2nodeclasses.karpenter.k8s.aws\"},"
		"\"spec\":{\"group\":\"karpenter.k8s.aws\",\"scope\":\"Cluster\",\"names\":{\"kind\":\"EC2NodeClass\","
		"\"plural\":\"ec2nodeclasses\",\"singular\":\"ec2nodeclass\"},\"versions\":["
		NODECLASS_VERSION("v1", "true", "\"AL2\",\"AL2023\",\"Windows2022\"") ","
		NODECLASS_VERSION("v1beta1", "false", "\"AL2\",\"Ubuntu\"") "]}}");
}

static void setup(void)
{
	reg = k8s_registry_new();
	add_crd(CRD(CRD_VERSION("v1", "false", "old v1") "," CRD_VERSION("v1beta1", "true", "beta")));
	add_crd(CRD(CRD_VERSION("v1", "true", "NodePool is the Schema for the NodePools API")));
	add_nodeclass_crd();
	cr_assert_eq(k8s_store_new(reg, 0, &store), 0);
	cr_assert_eq(k8s_store_seed(store), 0);
	k8s_api_init(&api, reg, store);
}

static void teardown(void)
{
	k8s_api_done(&api);
	k8s_store_free(store);
	k8s_registry_free(reg);
}

TestSuite(sim_api, .init = setup, .fini = teardown);

/* The value of name in a "a=1&b=2" query (cls), unescaped. */
static const char *query_arg(void *cls, const char *name)
{
	/* Several values stay valid at once, as libmicrohttpd's do. */
	static char values[8][512];
	static unsigned next;
	char *value = values[next++ % 8];
	const char *q = cls;
	size_t n = strlen(name);

	while (q && *q) {
		const char *end = strchr(q, '&');
		size_t len = end ? (size_t)(end - q) : strlen(q);

		if (len > n && strncmp(q, name, n) == 0 && q[n] == '=') {
			snprintf(value, sizeof(values[0]), "%.*s", (int)(len - n - 1), q + n + 1);
			return value;
		}
		q = end ? end + 1 : NULL;
	}
	return NULL;
}

static json_t *call_query(const char *method, const char *path, const char *query,
			  const char *content_type, const char *body, int want_status)
{
	struct k8s_request req = {
		.method = method, .path = path, .content_type = content_type,
		.body = body, .body_len = body ? strlen(body) : 0,
		.arg = query_arg, .arg_cls = (void *)query,
	};
	struct k8s_response resp;
	json_t *out;

	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	cr_assert_eq(resp.status, want_status, "%s %s: %d %s", method, path, resp.status, resp.body);
	out = json_loadb(resp.body, resp.len, 0, NULL);
	k8s_response_clear(&resp);
	cr_assert_not_null(out);
	return out;
}

static json_t *call(const char *method, const char *path, const char *content_type,
		    const char *body, int want_status)
{
	return call_query(method, path, NULL, content_type, body, want_status);
}

Test(sim_api, split_crd_files_merge_into_one_established_crd_with_one_storage_version)
{
	json_t *crd = call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodepools.karpenter.sh",
			   NULL, NULL, 200);
	const json_t *versions = json_object_get(json_object_get(crd, "spec"), "versions"), *v;
	const json_t *status = json_object_get(crd, "status"), *c;
	bool established = false;
	size_t i;

	cr_assert_eq(json_array_size(versions), 2, "v1 listed once");
	json_array_foreach(versions, i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));

		cr_assert_eq(json_is_true(json_object_get(v, "storage")), strcmp(name, "v1") == 0,
			     "%s storage", name);
		if (strcmp(name, "v1") == 0)
			cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(
						 v, "schema"), "openAPIV3Schema"), "description")),
					 "NodePool is the Schema for the NodePools API");
	}
	json_array_foreach(json_object_get(status, "conditions"), i, c)
		established = established ||
			      (strcmp(json_string_value(json_object_get(c, "type")), "Established") == 0 &&
			       strcmp(json_string_value(json_object_get(c, "status")), "True") == 0);
	cr_assert(established);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(status, "storedVersions"), 0)), "v1");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(status, "acceptedNames"), "kind")),
			 "NodePool");
	json_decref(crd);
}

Test(sim_api, openapi_carries_crd_schemas_tagged_with_their_kind)
{
	json_t *doc = call("GET", "/openapi/v3/apis/karpenter.sh/v1", NULL, NULL, 200);
	const json_t *schema = json_object_get(json_object_get(json_object_get(doc, "components"),
							       "schemas"), "sh.karpenter.v1.NodePool");
	const json_t *gvk = json_array_get(json_object_get(schema, "x-kubernetes-group-version-kind"), 0);

	cr_assert_not_null(schema);
	cr_assert_str_eq(json_string_value(json_object_get(schema, "description")),
			 "NodePool is the Schema for the NodePools API");
	cr_assert_str_eq(json_string_value(json_object_get(gvk, "group")), "karpenter.sh");
	cr_assert_str_eq(json_string_value(json_object_get(gvk, "version")), "v1");
	cr_assert_str_eq(json_string_value(json_object_get(gvk, "kind")), "NodePool");
	json_decref(doc);
	/* Built-in kinds have no schemas. */
	doc = call("GET", "/openapi/v3/api/v1", NULL, NULL, 200);
	cr_assert_eq(json_object_size(json_object_get(json_object_get(doc, "components"), "schemas")), 0);
	json_decref(doc);
}

Test(sim_api, yaml_bodies_are_accepted_and_cbor_gets_upstreams_415)
{
	json_t *ns = call("POST", "/api/v1/namespaces", "application/yaml",
			  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: from-yaml\n", 201);
	const char *msg;

	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ns, "metadata"), "name")),
			 "from-yaml");
	json_decref(ns);
	ns = call("POST", "/api/v1/namespaces", "application/yaml", "a: 1\n---\nb: 2\n", 400);
	json_decref(ns);
	/* client-go falls back to JSON after this 415 (protobuf: test_sim_protobuf). */
	ns = call("POST", "/api/v1/namespaces", "application/cbor", "\xa0", 415);
	msg = json_string_value(json_object_get(ns, "message"));
	cr_assert(strncmp(msg, "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
			  110) == 0, "%s", msg);
	cr_assert_str_eq(json_string_value(json_object_get(ns, "reason")), "UnsupportedMediaType");
	json_decref(ns);
}

static bool lists_version(const json_t *group, const char *version)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(group, "versions"), i, v)
		if (strcmp(json_string_value(json_object_get(v, "version")), version) == 0)
			return true;
	return false;
}

Test(sim_api, unserved_versions_answer_404_and_leave_discovery_as_without_their_crd)
{
	json_t *j;

	j = call("POST", "/_sim/faults", NULL, "{\"unservedVersions\":[\"karpenter.sh/v1beta1\"]}", 200);
	cr_assert_eq(json_array_size(json_object_get(j, "unservedVersions")), 1);
	json_decref(j);
	j = call("GET", "/apis/karpenter.sh", NULL, NULL, 200);
	cr_assert(lists_version(j, "v1"));
	cr_assert_not(lists_version(j, "v1beta1"));
	json_decref(j);
	json_decref(call("GET", "/apis/karpenter.sh/v1beta1/nodepools", NULL, NULL, 404));
	json_decref(call("GET", "/apis/karpenter.sh/v1beta1", NULL, NULL, 404));
	json_decref(call("GET", "/apis/karpenter.sh/v1/nodepools", NULL, NULL, 200));
	/* Every version hidden: the group itself is gone. */
	json_decref(call("POST", "/_sim/faults", NULL,
			 "{\"unservedVersions\":[\"karpenter.sh/v1beta1\",\"karpenter.sh/v1\"]}", 200));
	json_decref(call("GET", "/apis/karpenter.sh", NULL, NULL, 404));
	j = call("GET", "/apis", NULL, NULL, 200);
	{
		char *text = json_dumps(j, JSON_COMPACT);
		cr_assert_not(strstr(text, "karpenter.sh"), "group still listed: %s", text);
		free(text);
	}
	json_decref(j);
	/* Cleared: served again, as a CRD installed later. */
	json_decref(call("POST", "/_sim/faults", NULL, "{}", 200));
	json_decref(call("GET", "/apis/karpenter.sh/v1beta1/nodepools", NULL, NULL, 200));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"unservedVersions\":[\"v1\"]}", 400));
}

Test(sim_api, binding_errors_fail_the_next_bindings_and_nothing_else)
{
	static const char pod[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\"},"
				  "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}}";
	static const char binding[] = "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":"
				      "{\"name\":\"p1\"},\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}";
	const char *path = "/api/v1/namespaces/default/pods/p1/binding";
	json_t *j;

	json_decref(call("POST", "/api/v1/namespaces/default/pods", NULL, pod, 201));
	j = call("POST", "/_sim/faults", NULL, "{\"bindingErrors\":1}", 200);
	cr_assert_eq(json_integer_value(json_object_get(j, "bindingErrors")), 1);
	json_decref(j);
	json_decref(call("GET", "/api/v1/namespaces/default/pods/p1", NULL, NULL, 200));
	json_decref(call("POST", path, NULL, binding, 500));
	json_decref(call("POST", path, NULL, binding, 201));
	j = call("GET", "/_sim/faults", NULL, NULL, 200);
	cr_assert_eq(json_integer_value(json_object_get(j, "bindingErrors")), 0, "used up");
	json_decref(j);
	json_decref(call("POST", "/_sim/faults", NULL, "{\"bindingErrors\":-1}", 400));
}

static void expect_unsupported_field(const char *path, const char *selector, const char *label)
{
	char query[256], want[128];
	json_t *st;

	snprintf(query, sizeof(query), "fieldSelector=%s", selector);
	st = call_query("GET", path, query, NULL, NULL, 400);
	snprintf(want, sizeof(want), "field label not supported: %s", label);
	cr_assert_str_eq(json_string_value(json_object_get(st, "message")), want, "%s?%s", path, query);
	cr_assert_str_eq(json_string_value(json_object_get(st, "reason")), "BadRequest");
	json_decref(st);
}

Test(sim_api, field_selectors_a_resource_does_not_support_get_upstreams_400)
{
	expect_unsupported_field("/api/v1/pods", "spec.bogus=x", "spec.bogus");
	expect_unsupported_field("/api/v1/namespaces/default/pods", "status.phase=Running,status.qosClass=x",
				 "status.qosClass");
	/* Upstream's Node conversion has no metadata.namespace. */
	expect_unsupported_field("/api/v1/nodes", "metadata.namespace=default", "metadata.namespace");
	expect_unsupported_field("/api/v1/configmaps", "data.a=1", "data.a");
	expect_unsupported_field("/apis/apps/v1/deployments", "spec.replicas=1", "spec.replicas");
	expect_unsupported_field("/apis/karpenter.sh/v1/nodepools", "spec.weight=1", "spec.weight");
	/* Watches and collection deletes check the same way. */
	json_decref(call_query("GET", "/api/v1/pods", "watch=1&fieldSelector=spec.bogus=x", NULL, NULL, 400));
	json_decref(call_query("DELETE", "/api/v1/namespaces/default/configmaps", "fieldSelector=data.a=1",
			       NULL, NULL, 400));
}

static const char *first_name(const json_t *list)
{
	return json_string_value(json_object_get(json_object_get(json_array_get(
		json_object_get(list, "items"), 0), "metadata"), "name"));
}

static size_t count_items(const char *path, const char *query)
{
	json_t *list = call_query("GET", path, query, NULL, NULL, 200);
	size_t n = json_array_size(json_object_get(list, "items"));

	json_decref(list);
	return n;
}

Test(sim_api, field_selectors_match_upstreams_aliases_and_absent_values)
{
	json_t *list;

	json_decref(call("POST", "/api/v1/nodes", "application/json",
			 "{\"metadata\":{\"name\":\"n1\"}}", 201));
	json_decref(call("POST", "/api/v1/nodes", "application/json",
			 "{\"metadata\":{\"name\":\"n2\"},\"spec\":{\"unschedulable\":true}}", 201));
	json_decref(call("POST", "/api/v1/namespaces/default/pods", "application/json",
			 "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\","
			 "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}", 201));
	json_decref(call("POST", "/api/v1/namespaces/default/events", "application/json",
			 "{\"metadata\":{\"name\":\"e\"},\"involvedObject\":{\"kind\":\"Pod\","
			 "\"name\":\"p\"},\"reason\":\"Started\",\"source\":{\"component\":\"kubelet\"}}",
			 201));
	/* An absent spec.unschedulable is "false", as upstream's field set has it. */
	list = call_query("GET", "/api/v1/nodes", "fieldSelector=spec.unschedulable=false", NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(list, "items")), 1);
	cr_assert_str_eq(first_name(list), "n1");
	json_decref(list);
	cr_assert_eq(count_items("/api/v1/nodes", "fieldSelector=spec.unschedulable=true"), 1);
	/* spec.host is the old name of spec.nodeName. */
	cr_assert_eq(count_items("/api/v1/pods", "fieldSelector=spec.host=n1"), 1);
	cr_assert_eq(count_items("/api/v1/pods", "fieldSelector=spec.hostNetwork=false"), 1);
	cr_assert_eq(count_items("/api/v1/pods", "fieldSelector=spec.nodeName=n2"), 0);
	/* An Event's source selects on source.component. */
	cr_assert_eq(count_items("/api/v1/namespaces/default/events",
				 "fieldSelector=source=kubelet,involvedObject.name=p"), 1);
	cr_assert_eq(count_items("/api/v1/namespaces/default/events", "fieldSelector=source=default-scheduler"),
		     0);
	cr_assert_eq(count_items("/api/v1/namespaces", "fieldSelector=metadata.name=default"), 1);
}

/* faultsInjected.<kind> (or .errorRates.<resource>) of GET /_sim/status. */
static json_int_t injected(const char *kind, const char *resource)
{
	json_t *st = call("GET", "/_sim/status", NULL, NULL, 200);
	const json_t *f = json_object_get(st, "faultsInjected");
	json_int_t n;

	cr_assert_not_null(f);
	if (resource)
		f = json_object_get(json_object_get(f, "errorRates"), resource);
	else
		f = json_object_get(f, kind);
	n = json_integer_value(f);
	json_decref(st);
	return n;
}

#define EVENT_BODY                                                                         \
	"{\"metadata\":{\"name\":\"e\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"}," \
	"\"reason\":\"Started\"}"
#define BINDING_BODY "{\"metadata\":{\"name\":\"p\"},\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}"

Test(sim_api, error_rates_fail_only_the_named_resource_and_count_what_they_injected)
{
	json_t *j;

	/* Unknown resources and subresources, bad names and rates: refused whole. */
	json_decref(call("POST", "/_sim/faults", NULL, "{\"errorRates\":{\"events\":1,\"pods/bindings\":1}}", 400));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"errorRates\":{\"nodes/binding\":1}}", 400));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"errorRates\":{\"widgets\":1}}", 400));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"errorRates\":{\"Pods\":1}}", 400));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"errorRates\":{\"pods//binding\":1}}", 400));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"errorRates\":{\"events\":1.5}}", 400));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"errorRates\":{\"events\":\"1\"}}", 400));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"errorRates\":[\"events\"]}", 400));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"errorRate\":{\"events\":1}}", 400));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"throttleRate\":0,\"throttleRate\":1}", 400));
	j = call("GET", "/_sim/faults", NULL, NULL, 200);
	cr_assert_eq(json_object_size(json_object_get(j, "errorRates")), 0);
	json_decref(j);

	j = call("POST", "/_sim/faults", NULL, "{\"errorRates\":{\"pods/binding\":1,\"events\":1}}", 200);
	cr_assert_float_eq(json_number_value(json_object_get(json_object_get(j, "errorRates"), "events")),
			   1.0, 1e-9);
	json_decref(j);
	json_decref(call("POST", "/api/v1/nodes", "application/json", "{\"metadata\":{\"name\":\"n1\"}}", 201));
	json_decref(call("POST", "/api/v1/namespaces/default/pods", "application/json",
			 "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
			 201));
	j = call("POST", "/api/v1/namespaces/default/pods/p/binding", "application/json", BINDING_BODY, 500);
	cr_assert_str_eq(json_string_value(json_object_get(j, "reason")), "InternalError");
	json_decref(j);
	json_decref(call("POST", "/api/v1/namespaces/default/events", "application/json", EVENT_BODY, 500));
	json_decref(call("GET", "/api/v1/namespaces/default/events", NULL, NULL, 500));
	/* The pod itself, and other resources, are not hit. */
	json_decref(call("GET", "/api/v1/namespaces/default/pods/p", NULL, NULL, 200));
	json_decref(call("GET", "/api/v1/nodes", NULL, NULL, 200));
	cr_assert_eq(injected(NULL, "pods/binding"), 1);
	cr_assert_eq(injected(NULL, "events"), 2);
	cr_assert_eq(injected("error5xx", NULL), 0);

	/* Cleared: the writes go through; the counts stay. */
	json_decref(call("POST", "/_sim/faults", NULL, "{}", 200));
	json_decref(call("POST", "/api/v1/namespaces/default/pods/p/binding", "application/json", BINDING_BODY, 201));
	json_decref(call("POST", "/api/v1/namespaces/default/events", "application/json", EVENT_BODY, 201));
	cr_assert_eq(injected(NULL, "pods/binding"), 1);
	cr_assert_eq(injected(NULL, "events"), 2);
}

Test(sim_api, every_injected_fault_is_counted_by_kind)
{
	struct k8s_request req = { .method = "GET", .path = "/api/v1/namespaces", .arg = query_arg,
				   .arg_cls = (void *)"watch=1&timeoutSeconds=5" };
	struct k8s_response resp;
	char buf[4096];

	json_decref(call("POST", "/_sim/faults", NULL, "{\"error5xxRate\":1}", 200));
	json_decref(call("GET", "/api/v1/nodes", NULL, NULL, 500));
	json_decref(call("GET", "/api/v1/pods", NULL, NULL, 500));
	json_decref(call("POST", "/_sim/faults", NULL, "{\"throttleRate\":1,\"latencyMs\":1}", 200));
	json_decref(call("GET", "/api/v1/nodes", NULL, NULL, 429));
	cr_assert_eq(injected("error5xx", NULL), 2);
	cr_assert_eq(injected("throttle", NULL), 1);
	cr_assert_eq(injected("latency", NULL), 1);

	/* A resumed watch meets 410; a new one is cut after one event. */
	json_decref(call("POST", "/_sim/faults", NULL, "{\"watchGone\":1,\"watchCutAfterEvents\":1}", 200));
	json_decref(call_query("GET", "/api/v1/namespaces", "watch=1&resourceVersion=1", NULL, NULL, 410));
	cr_assert_eq(injected("watchGone", NULL), 1);
	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	cr_assert_eq(resp.status, 200);
	cr_assert_not_null(resp.watch);
	while (k8s_watch_read(resp.watch, buf, sizeof(buf)) > 0)
		;
	resp.watch = k8s_watch_free(resp.watch);
	k8s_response_clear(&resp);
	cr_assert_eq(injected("watchCut", NULL), 1);

	/* A stream opened before the cut follows it too, as a dropped connection. */
	json_decref(call("POST", "/_sim/faults", NULL, "{}", 200));
	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	cr_assert_gt(k8s_watch_read(resp.watch, buf, sizeof(buf)), 0, "the initial ADDED events");
	json_decref(call("POST", "/_sim/faults", NULL, "{\"watchCutAfterEvents\":1}", 200));
	json_decref(call("POST", "/api/v1/namespaces", "application/json", "{\"metadata\":{\"name\":\"late\"}}", 201));
	cr_assert_gt(k8s_watch_read(resp.watch, buf, sizeof(buf)), 0, "the new namespace");
	cr_assert_eq(k8s_watch_read(resp.watch, buf, sizeof(buf)), 0, "cut after it");
	resp.watch = k8s_watch_free(resp.watch);
	k8s_response_clear(&resp);
	cr_assert_eq(injected("watchCut", NULL), 2);
}

/* Is the answer to GET /api/v1/namespaces?<query> a watch stream? */
static bool answers_a_watch(const char *query)
{
	struct k8s_request req = { .method = "GET", .path = "/api/v1/namespaces", .arg = query_arg,
				   .arg_cls = (void *)query };
	struct k8s_response resp;
	bool watch;

	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	cr_assert_eq(resp.status, 200, "%s: %d %s", query, resp.status, resp.body);
	watch = resp.watch != NULL;
	resp.watch = k8s_watch_free(resp.watch);
	k8s_response_clear(&resp);
	return watch;
}

/* As k8s.io/apimachinery converts query parameters: a boolean is false only
 * when absent, "0" or "false" in any case (Convert_Slice_string_To_bool;
 * the official Python client sends watch=True), an integer is parsed by
 * strconv.ParseInt and a malformed one is a 400. */
Test(sim_api, query_parameters_are_read_as_the_api_server_reads_them)
{
	json_t *st;

	cr_assert(answers_a_watch("watch=True&timeoutSeconds=1"));
	cr_assert(answers_a_watch("watch=TRUE&timeoutSeconds=1"));
	cr_assert(answers_a_watch("watch=t&timeoutSeconds=1"));
	cr_assert(answers_a_watch("watch=&timeoutSeconds=1"), "an empty value is true upstream");
	cr_assert_not(answers_a_watch("watch=False"));
	cr_assert_not(answers_a_watch("watch=FALSE"));
	cr_assert_not(answers_a_watch("watch=0"));
	cr_assert_not(answers_a_watch("limit=1"));
	st = call_query("GET", "/api/v1/namespaces", "limit=ten", NULL, NULL, 400);
	cr_assert_str_eq(json_string_value(json_object_get(st, "reason")), "BadRequest");
	cr_assert_str_eq(json_string_value(json_object_get(st, "message")),
			 "strconv.ParseInt: parsing \"ten\": invalid syntax");
	json_decref(st);
	json_decref(call_query("GET", "/api/v1/namespaces", "watch=1&timeoutSeconds=5s", NULL, NULL, 400));
	json_decref(call_query("GET", "/api/v1/namespaces", "limit=99999999999999999999", NULL, NULL, 400));
}

static const char *status_message(json_t *st)
{
	return json_string_value(json_object_get(st, "message"));
}

/* ValidateListOptions' rules for resourceVersionMatch, and no list served
 * "exactly" at a version the sim does not hold. */
Test(sim_api, resource_version_match_is_validated_and_exact_is_never_served_from_now)
{
	json_t *st, *list = call("GET", "/api/v1/namespaces", NULL, NULL, 200);
	const char *now = json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion"));
	char q[128];

	st = call_query("GET", "/api/v1/namespaces", "resourceVersionMatch=Newest&resourceVersion=1", NULL,
			NULL, 422);
	cr_assert(strstr(status_message(st), "Unsupported value: \"Newest\""), "%s", status_message(st));
	json_decref(st);
	st = call_query("GET", "/api/v1/namespaces", "resourceVersionMatch=NotOlderThan", NULL, NULL, 422);
	cr_assert(strstr(status_message(st), "forbidden unless resourceVersion is provided"));
	json_decref(st);
	json_decref(call_query("GET", "/api/v1/namespaces", "resourceVersionMatch=Exact&resourceVersion=0",
			       NULL, NULL, 422));
	json_decref(call_query("GET", "/api/v1/namespaces", "watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1",
			       NULL, NULL, 422));
	json_decref(call_query("GET", "/api/v1/namespaces", "resourceVersionMatch=NotOlderThan&resourceVersion=1",
			       NULL, NULL, 200));
	json_decref(call_query("GET", "/api/v1/namespaces", "resourceVersionMatch=Exact&resourceVersion=1", NULL,
			       NULL, 410));
	snprintf(q, sizeof(q), "resourceVersionMatch=Exact&resourceVersion=%s", now);
	json_decref(call_query("GET", "/api/v1/namespaces", q, NULL, NULL, 200));
	json_decref(list);
}

#define NODEPOOLS "/apis/karpenter.sh/v1/nodepools"
#define POD_P "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}"

static const char *metadata_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

/* Custom resources allow no unconditional update (apiextensions-apiserver
 * customresource strategy AllowUnconditionalUpdate false; registry store.go
 * Update): a PUT without resourceVersion is 422. Built-ins such as
 * ConfigMaps allow it. */
Test(sim_api, a_put_of_a_custom_resource_without_resource_version_is_invalid)
{
	json_t *np = call("POST", NODEPOOLS, NULL, "{\"metadata\":{\"name\":\"default\"},\"spec\":{}}", 201);
	json_t *err, *cause;
	char body[256];

	err = call("PUT", NODEPOOLS "/default", NULL,
		   "{\"metadata\":{\"name\":\"default\"},\"spec\":{\"weight\":1}}", 422);
	cr_assert_str_eq(json_string_value(json_object_get(err, "message")),
			 "nodepools.karpenter.sh \"default\" is invalid: metadata.resourceVersion: "
			 "Invalid value: 0x0: must be specified for an update");
	cr_assert_str_eq(json_string_value(json_object_get(err, "reason")), "Invalid");
	cause = json_array_get(json_object_get(json_object_get(err, "details"), "causes"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(cause, "field")), "metadata.resourceVersion");
	json_decref(err);
	snprintf(body, sizeof(body),
		 "{\"metadata\":{\"name\":\"default\",\"resourceVersion\":\"%s\"},\"spec\":{\"weight\":1}}",
		 metadata_str(np, "resourceVersion"));
	json_decref(call("PUT", NODEPOOLS "/default", NULL, body, 200));
	json_decref(np);
	json_decref(call("POST", "/api/v1/namespaces/default/configmaps", NULL,
			 "{\"metadata\":{\"name\":\"c\"}}", 201));
	json_decref(call("PUT", "/api/v1/namespaces/default/configmaps/c", NULL,
			 "{\"metadata\":{\"name\":\"c\"},\"data\":{\"a\":\"b\"}}", 200));
}

/* BindingREST.Create and EvictionREST.Create: the body names the pod of the
 * URL, or 400 BadRequest. */
Test(sim_api, a_binding_or_eviction_for_another_pod_is_a_bad_request)
{
	static const char *const cases[][3] = {
		{ "binding", "{\"metadata\":{\"name\":\"q\"},\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}",
		  "name in URL does not match name in Binding object" },
		{ "binding", "{\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}",
		  "name in URL does not match name in Binding object" },
		{ "eviction", "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"q\"}}",
		  "name in URL does not match name in Eviction object" },
		{ "eviction", "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\"}",
		  "name in URL does not match name in Eviction object" },
	};
	char path[128];

	json_decref(call("POST", "/api/v1/namespaces/default/pods", NULL, POD_P, 201));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		json_t *err;

		snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/p/%s", cases[i][0]);
		err = call("POST", path, NULL, cases[i][1], 400);
		cr_assert_str_eq(json_string_value(json_object_get(err, "message")), cases[i][2]);
		cr_assert_str_eq(json_string_value(json_object_get(err, "reason")), "BadRequest");
		json_decref(err);
	}
	json_decref(call("GET", "/api/v1/namespaces/default/pods/p", NULL, NULL, 200));
}

/* A DELETE that removes the object at once answers what its registry
 * answers: the object where ReturnDeletedObject is set (pods), else
 * finalizeDelete's Status with name, group, kind (the plural) and uid
 * (nodes, NodePools). Held by a finalizer, the object comes back marked. */
Test(sim_api, an_immediate_delete_answers_the_object_or_a_status_as_the_registry_does)
{
	json_t *obj, *details;

	json_decref(call("POST", "/api/v1/namespaces/default/pods", NULL, POD_P, 201));
	obj = call("DELETE", "/api/v1/namespaces/default/pods/p", NULL, NULL, 200);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "kind")), "Pod");
	cr_assert_str_eq(metadata_str(obj, "name"), "p");
	json_decref(obj);

	json_decref(call("POST", "/api/v1/nodes", NULL, "{\"metadata\":{\"name\":\"n1\"}}", 201));
	obj = call("DELETE", "/api/v1/nodes/n1", NULL, NULL, 200);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "kind")), "Status");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "status")), "Success");
	cr_assert_null(json_object_get(obj, "code"));
	details = json_object_get(obj, "details");
	cr_assert_str_eq(json_string_value(json_object_get(details, "name")), "n1");
	cr_assert_str_eq(json_string_value(json_object_get(details, "kind")), "nodes");
	cr_assert_null(json_object_get(details, "group"));
	cr_assert_not_null(json_object_get(details, "uid"));
	json_decref(obj);

	json_decref(call("POST", NODEPOOLS, NULL, "{\"metadata\":{\"name\":\"a\"},\"spec\":{}}", 201));
	obj = call("DELETE", NODEPOOLS "/a", NULL, NULL, 200);
	details = json_object_get(obj, "details");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "kind")), "Status");
	cr_assert_str_eq(json_string_value(json_object_get(details, "group")), "karpenter.sh");
	cr_assert_str_eq(json_string_value(json_object_get(details, "kind")), "nodepools");
	json_decref(obj);

	json_decref(call("POST", NODEPOOLS, NULL,
			 "{\"metadata\":{\"name\":\"held\",\"finalizers\":[\"example.com/x\"]},\"spec\":{}}",
			 201));
	obj = call("DELETE", NODEPOOLS "/held", NULL, NULL, 200);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "kind")), "NodePool");
	cr_assert_not_null(metadata_str(obj, "deletionTimestamp"));
	json_decref(obj);
}

static json_t *post_nodeclass(const char *version, const char *family, int want)
{
	char path[128], body[256];

	snprintf(path, sizeof(path), EC2NODECLASSES, version);
	snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"nc-%s\"},\"spec\":{\"amiFamily\":\"%s\","
		 "\"amiSelectorTerms\":[{\"alias\":\"x@latest\"}]}}", version, family);
	return call("POST", path, NULL, body, want);
}

/* apiextensions-apiserver validates a custom resource against its
 * version's structural schema: a value outside an enum is 422
 * FieldValueNotSupported naming the field and the supported values. */
Test(sim_api, a_custom_resource_value_outside_its_schema_enum_is_refused_per_version)
{
	json_t *err, *cause;

	err = post_nodeclass("v1", "Ubuntu", 422);
	cr_assert_str_eq(json_string_value(json_object_get(err, "message")),
			 "EC2NodeClass.karpenter.k8s.aws \"nc-v1\" is invalid: spec.amiFamily: Unsupported value: "
			 "\"Ubuntu\": supported values: \"AL2\", \"AL2023\", \"Windows2022\"");
	cause = json_array_get(json_object_get(json_object_get(err, "details"), "causes"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(cause, "reason")), "FieldValueNotSupported");
	cr_assert_str_eq(json_string_value(json_object_get(cause, "field")), "spec.amiFamily");
	json_decref(err);
	json_decref(post_nodeclass("v1beta1", "Ubuntu", 201));
	json_decref(post_nodeclass("v1", "Windows2022", 201));
}
