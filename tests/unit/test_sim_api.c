/* kanna-sim API surface: CRDs merged from split files and served as
 * Established CustomResourceDefinitions, CRD schemas in OpenAPI v3 for
 * kubectl explain, and request bodies (YAML accepted, protobuf 415). */
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

static void setup(void)
{
	reg = k8s_registry_new();
	add_crd(CRD(CRD_VERSION("v1", "false", "old v1") "," CRD_VERSION("v1beta1", "true", "beta")));
	add_crd(CRD(CRD_VERSION("v1", "true", "NodePool is the Schema for the NodePools API")));
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

static json_t *call(const char *method, const char *path, const char *content_type,
		    const char *body, int want_status)
{
	struct k8s_request req = {
		.method = method, .path = path, .content_type = content_type,
		.body = body, .body_len = body ? strlen(body) : 0,
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

Test(sim_api, yaml_bodies_are_accepted_and_protobuf_gets_upstreams_415)
{
	json_t *ns = call("POST", "/api/v1/namespaces", "application/yaml",
			  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: from-yaml\n", 201);
	const char *msg;

	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ns, "metadata"), "name")),
			 "from-yaml");
	json_decref(ns);
	ns = call("POST", "/api/v1/namespaces", "application/yaml", "a: 1\n---\nb: 2\n", 400);
	json_decref(ns);
	ns = call("POST", "/api/v1/namespaces", "application/vnd.kubernetes.protobuf", "k8s\0", 415);
	msg = json_string_value(json_object_get(ns, "message"));
	cr_assert(strncmp(msg, "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
			  110) == 0, "%s", msg);
	cr_assert(strstr(msg, "kubectl apply -f"), "%s", msg);
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
