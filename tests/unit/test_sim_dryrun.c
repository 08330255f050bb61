/* kanna-sim's write options as kube-apiserver has them: dryRun=All runs
 * every check and answers what would be stored but stores nothing (no
 * resourceVersion, no watch event, no timeline entry); other dryRun
 * values, bad fieldManagers, force on a non-apply patch and bad
 * DeleteOptions get upstream's 422 word for word; pretty=true indents. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/k8s-api.h"
#include "sim/k8s-controllers.h"

static struct k8s_registry *reg;
static struct k8s_store *store;
static struct k8s_api api;

static void setup(void)
{
	reg = k8s_registry_new();
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

TestSuite(sim_dryrun, .init = setup, .fini = teardown);

/* Every value of name in a "a=1&b=2" query (cls), in order, unescaped
 * only for %01 and %20 (what these tests send). */
static size_t query_values(void *cls, const char *name, const char **values, size_t max)
{
	static char store_[16][512];
	static unsigned next;
	const char *q = cls;
	size_t n = strlen(name), found = 0;

	while (q && *q) {
		const char *end = strchr(q, '&');
		size_t len = end ? (size_t)(end - q) : strlen(q);

		if (len > n && strncmp(q, name, n) == 0 && q[n] == '=') {
			char *v = store_[next++ % 16], *o = v;

			for (const char *p = q + n + 1; p < q + len && o < v + 511; p++) {
				if (*p == '%' && p + 2 < q + len) {
					*o++ = (char)strtol((char[]){ p[1], p[2], 0 }, NULL, 16);
					p += 2;
				} else
					*o++ = *p;
			}
			*o = '\0';
			if (found < max)
				values[found] = v;
			found++;
		}
		q = end ? end + 1 : NULL;
	}
	return found;
}

static const char *query_arg(void *cls, const char *name)
{
	const char *v = NULL;

	return query_values(cls, name, &v, 1) ? v : NULL;
}

/* The raw answer body (malloc'ed) after checking its status. */
static char *call_raw(const char *method, const char *path, const char *query, const char *accept,
		      const char *content_type, const char *body, int want_status)
{
	struct k8s_request req = {
		.method = method, .path = path, .content_type = content_type, .accept = accept,
		.body = body, .body_len = body ? strlen(body) : 0,
		.arg = query_arg, .arg_values = query_values, .arg_cls = (void *)query,
	};
	struct k8s_response resp;
	char *out;

	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	cr_assert_eq(resp.status, want_status, "%s %s?%s: %d %s", method, path, query ? query : "",
		     resp.status, resp.body);
	out = strndup(resp.body, resp.len);
	k8s_response_clear(&resp);
	return out;
}

static json_t *call(const char *method, const char *path, const char *query,
		    const char *content_type, const char *body, int want_status)
{
	char *raw = call_raw(method, path, query, NULL, content_type, body, want_status);
	json_t *out = json_loads(raw, 0, NULL);

	cr_assert_not_null(out, "%s", raw);
	free(raw);
	return out;
}

static const char *meta(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static const char *message(const json_t *status)
{
	return json_string_value(json_object_get(status, "message"));
}

static uint64_t store_rv(void)
{
	uint64_t rv;

	k8s_store_lock(store);
	rv = store->rv;
	k8s_store_unlock(store);
	return rv;
}

static size_t timeline_length(void)
{
	uint64_t dropped;
	json_t *t = k8s_timeline_json(store, &dropped);
	size_t n = json_array_size(t);

	json_decref(t);
	return n;
}

#define CM "/api/v1/namespaces/default/configmaps"
#define PODS "/api/v1/namespaces/default/pods"

static void create_configmap(const char *name, const char *extra_meta)
{
	char body[512];

	snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"%s},\"data\":{\"k\":\"v\"}}", name,
		 extra_meta ? extra_meta : "");
	json_decref(call("POST", CM, NULL, NULL, body, 201));
}

Test(sim_dryrun, a_dry_run_create_answers_the_object_it_would_store_and_stores_nothing)
{
	uint64_t rv = store_rv();
	size_t timeline = timeline_length();
	json_t *obj = call("POST", PODS, "dryRun=All&fieldManager=kubectl-create", NULL,
			   "{\"metadata\":{\"generateName\":\"web-\"},\"spec\":{\"containers\":"
			   "[{\"name\":\"c\",\"image\":\"pause\"}]}}", 201);

	cr_assert_eq(strncmp(meta(obj, "name"), "web-", 4), 0, "generated: %s", meta(obj, "name"));
	cr_assert_eq(strlen(meta(obj, "name")), 9);
	cr_assert_eq(strlen(meta(obj, "uid")), 36);
	cr_assert_not_null(meta(obj, "creationTimestamp"));
	cr_assert_null(meta(obj, "resourceVersion"), "no resourceVersion is used");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(obj, "status"), "phase")),
			 "Pending", "defaults as a real create");
	cr_assert_eq(store_rv(), rv, "no resourceVersion consumed, so no watch event");
	cr_assert_eq(timeline_length(), timeline, "no timeline entry");
	{
		char path[128];

		snprintf(path, sizeof(path), PODS "/%s", meta(obj, "name"));
		json_decref(call("GET", path, NULL, NULL, NULL, 404));
	}
	json_decref(obj);
}

Test(sim_dryrun, a_dry_run_create_is_refused_where_a_real_one_is)
{
	json_t *st;

	create_configmap("taken", NULL);
	st = call("POST", CM, "dryRun=All", NULL, "{\"metadata\":{\"name\":\"taken\"}}", 409);
	cr_assert_str_eq(json_string_value(json_object_get(st, "reason")), "AlreadyExists");
	json_decref(st);
	json_decref(call("POST", CM, "dryRun=All", NULL, "{\"metadata\":{\"name\":\"Bad_Name\"}}", 422));
	json_decref(call("POST", "/api/v1/namespaces/nowhere/configmaps", "dryRun=All", NULL,
			 "{\"metadata\":{\"name\":\"x\"}}", 404));
}

Test(sim_dryrun, no_controller_reacts_to_a_dry_run_deployment)
{
	json_t *pods;

	json_decref(call("POST", "/apis/apps/v1/namespaces/default/deployments", "dryRun=All", NULL,
			 "{\"metadata\":{\"name\":\"inflate\"},\"spec\":{\"replicas\":3,\"selector\":"
			 "{\"matchLabels\":{\"app\":\"inflate\"}},\"template\":{\"metadata\":{\"labels\":"
			 "{\"app\":\"inflate\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}}}}",
			 201));
	cr_assert_geq(k8s_deployments_reconcile(store), 0);
	pods = call("GET", PODS, NULL, NULL, NULL, 200);
	cr_assert_eq(json_array_size(json_object_get(pods, "items")), 0);
	json_decref(pods);
}

Test(sim_dryrun, a_dry_run_update_and_patch_answer_the_new_object_at_the_stored_version)
{
	json_t *cur, *obj;
	uint64_t rv;
	char body[256];

	create_configmap("cm", NULL);
	cur = call("GET", CM "/cm", NULL, NULL, NULL, 200);
	rv = store_rv();
	snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"cm\",\"resourceVersion\":\"%s\"},"
		 "\"data\":{\"k\":\"new\"}}", meta(cur, "resourceVersion"));
	obj = call("PUT", CM "/cm", "dryRun=All", NULL, body, 200);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(obj, "data"), "k")), "new");
	cr_assert_str_eq(meta(obj, "resourceVersion"), meta(cur, "resourceVersion"));
	cr_assert_str_eq(meta(obj, "uid"), meta(cur, "uid"));
	json_decref(obj);
	obj = call("PATCH", CM "/cm", "dryRun=All", "application/merge-patch+json",
		   "{\"data\":{\"k\":\"patched\"}}", 200);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(obj, "data"), "k")), "patched");
	json_decref(obj);
	cr_assert_eq(store_rv(), rv);
	obj = call("GET", CM "/cm", NULL, NULL, NULL, 200);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(obj, "data"), "k")), "v");
	json_decref(obj);
	/* A stale version conflicts in a dry run too. */
	json_decref(call("PUT", CM "/cm", "dryRun=All", NULL,
			 "{\"metadata\":{\"name\":\"cm\",\"resourceVersion\":\"1\"}}", 409));
	json_decref(cur);
}

Test(sim_dryrun, a_dry_run_apply_of_a_missing_object_answers_201_and_creates_nothing)
{
	json_t *obj = call("PATCH", CM "/applied", "dryRun=All&fieldManager=kubectl",
			   "application/apply-patch+yaml",
			   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n", 201);

	cr_assert_str_eq(meta(obj, "name"), "applied");
	json_decref(obj);
	json_decref(call("GET", CM "/applied", NULL, NULL, NULL, 404));
}

Test(sim_dryrun, a_dry_run_delete_leaves_the_object_and_shows_the_deletion_finalizers_hold)
{
	uint64_t rv;
	json_t *obj;

	create_configmap("plain", NULL);
	create_configmap("held", ",\"finalizers\":[\"example.com/hold\"]");
	rv = store_rv();
	/* DeleteOptions in the body, as kubectl sends them. */
	obj = call("DELETE", CM "/held", NULL, NULL,
		   "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"dryRun\":[\"All\"]}", 200);
	cr_assert_not_null(meta(obj, "deletionTimestamp"));
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(obj, "metadata"),
							"deletionGracePeriodSeconds")), 0);
	json_decref(obj);
	/* In the query, as the Python client sends them. A ConfigMap that
	 * would go at once answers finalizeDelete's Status, dry run or not. */
	obj = call("DELETE", CM "/plain", "dryRun=All", NULL, NULL, 200);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "status")) ?: "", "Success");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(obj, "details"), "name"))
			 ?: "", "plain");
	json_decref(obj);
	cr_assert_eq(store_rv(), rv);
	obj = call("GET", CM "/held", NULL, NULL, NULL, 200);
	cr_assert_null(meta(obj, "deletionTimestamp"));
	json_decref(obj);
	json_decref(call("GET", CM "/plain", NULL, NULL, NULL, 200));
	/* Preconditions are checked all the same. */
	json_decref(call("DELETE", CM "/plain", NULL, NULL,
			 "{\"dryRun\":[\"All\"],\"preconditions\":{\"uid\":\"not-it\"}}", 409));
}

Test(sim_dryrun, a_delete_with_a_body_reads_no_options_from_the_query)
{
	create_configmap("gone", NULL);
	/* handlers/delete.go: a body is all the options there are. */
	json_decref(call("DELETE", CM "/gone", "dryRun=All", NULL, "{}", 200));
	json_decref(call("GET", CM "/gone", NULL, NULL, NULL, 404));
}

Test(sim_dryrun, a_dry_run_namespace_delete_keeps_the_namespace_and_its_contents)
{
	json_decref(call("POST", "/api/v1/namespaces", NULL, NULL, "{\"metadata\":{\"name\":\"team\"}}", 201));
	json_decref(call("POST", "/api/v1/namespaces/team/configmaps", NULL, NULL,
			 "{\"metadata\":{\"name\":\"c\"}}", 201));
	json_decref(call("DELETE", "/api/v1/namespaces/team", "dryRun=All", NULL, NULL, 200));
	json_decref(call("GET", "/api/v1/namespaces/team/configmaps/c", NULL, NULL, NULL, 200));
	json_decref(call("DELETE", CM, "dryRun=All", NULL, NULL, 200));
	json_decref(call("GET", "/api/v1/namespaces/team", NULL, NULL, NULL, 200));
}

#define POD_BODY(name, labels) \
	"{\"metadata\":{\"name\":\"" name "\",\"labels\":" labels "},\"spec\":{\"containers\":" \
	"[{\"name\":\"c\",\"image\":\"pause\"}]}}"

/* A pod bound and Running, Ready as the kubelet would report it. */
static void running_pod(const char *name)
{
	char body[512], path[128];
	json_t *pod;

	snprintf(body, sizeof(body), POD_BODY("%s", "{\"app\":\"web\"}"), name);
	json_decref(call("POST", PODS, NULL, NULL, body, 201));
	snprintf(path, sizeof(path), PODS "/%s/status", name);
	pod = call("PATCH", path, NULL, "application/merge-patch+json",
		   "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
		   200);
	json_decref(pod);
}

Test(sim_dryrun, a_dry_run_eviction_checks_the_budget_and_evicts_nothing)
{
	size_t timeline;

	running_pod("web-1");
	running_pod("web-2");
	json_decref(call("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", NULL, NULL,
			 "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"minAvailable\":1,\"selector\":"
			 "{\"matchLabels\":{\"app\":\"web\"}}}}", 201));
	timeline = timeline_length();
	json_decref(call("POST", PODS "/web-1/eviction", "dryRun=All", NULL,
			 "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"web-1\"}}",
			 201));
	/* The Eviction's own deleteOptions.dryRun counts as well. */
	json_decref(call("POST", PODS "/web-2/eviction", NULL, NULL,
			 "{\"metadata\":{\"name\":\"web-2\"},\"deleteOptions\":{\"dryRun\":[\"All\"]}}", 201));
	json_decref(call("GET", PODS "/web-1", NULL, NULL, NULL, 200));
	json_decref(call("GET", PODS "/web-2", NULL, NULL, NULL, 200));
	cr_assert_eq(timeline_length(), timeline, "no pod-evicted entry");
	/* One really goes; then the budget refuses even a dry run. */
	json_decref(call("POST", PODS "/web-1/eviction", NULL, NULL, "{\"metadata\":{\"name\":\"web-1\"}}", 201));
	json_decref(call("POST", PODS "/web-2/eviction", "dryRun=All", NULL,
			 "{\"metadata\":{\"name\":\"web-2\"}}", 429));
}

Test(sim_dryrun, a_dry_run_binding_binds_nothing)
{
	json_t *pod;

	json_decref(call("POST", PODS, NULL, NULL, POD_BODY("p", "{}"), 201));
	json_decref(call("POST", PODS "/p/binding", "dryRun=All", NULL,
			 "{\"metadata\":{\"name\":\"p\"},\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}", 201));
	pod = call("GET", PODS "/p", NULL, NULL, NULL, 200);
	cr_assert_null(json_object_get(json_object_get(pod, "spec"), "nodeName"));
	json_decref(pod);
}

Test(sim_dryrun, a_dry_run_value_but_All_gets_upstreams_422)
{
	json_t *st = call("POST", CM, "dryRun=Server", NULL, "{\"metadata\":{\"name\":\"x\"}}", 422);
	const json_t *details = json_object_get(st, "details");
	const json_t *cause = json_array_get(json_object_get(details, "causes"), 0);

	cr_assert_str_eq(message(st), "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported "
				      "value: []string{\"Server\"}: supported values: \"All\"");
	cr_assert_str_eq(json_string_value(json_object_get(st, "reason")), "Invalid");
	cr_assert_str_eq(json_string_value(json_object_get(details, "group")), "meta.k8s.io");
	cr_assert_str_eq(json_string_value(json_object_get(details, "kind")), "CreateOptions");
	cr_assert_str_eq(json_string_value(json_object_get(cause, "reason")), "FieldValueNotSupported");
	cr_assert_str_eq(json_string_value(json_object_get(cause, "field")), "dryRun");
	json_decref(st);
	/* Every value is checked; the options come before the body. */
	st = call("PUT", CM "/x", "dryRun=All&dryRun=", NULL, "not json", 422);
	cr_assert_str_eq(message(st), "UpdateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported "
				      "value: []string{\"All\", \"\"}: supported values: \"All\"");
	json_decref(st);
	st = call("DELETE", CM "/x", NULL, NULL, "{\"dryRun\":[\"all\"]}", 422);
	cr_assert_str_eq(message(st), "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported "
				      "value: []string{\"all\"}: supported values: \"All\"");
	json_decref(st);
	json_decref(call("GET", CM "/x", NULL, NULL, NULL, 404));
}

Test(sim_dryrun, field_managers_are_checked_as_upstream_and_recorded_nowhere)
{
	char query[300] = "fieldManager=";
	json_t *st, *obj;

	memset(query + strlen(query), 'm', 129);
	st = call("POST", CM, query, NULL, "{\"metadata\":{\"name\":\"x\"}}", 422);
	cr_assert_str_eq(message(st), "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: "
				      "may not be more than 128 bytes");
	json_decref(st);
	st = call("PATCH", CM "/x", "fieldManager=a%01b", "application/merge-patch+json", "{}", 422);
	cr_assert_str_eq(message(st), "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid "
				      "value: \"a\\x01b\": invalid character U+0001 (at position 1)");
	json_decref(st);
	query[strlen("fieldManager=") + 128] = '\0';
	obj = call("POST", CM, query, NULL, "{\"metadata\":{\"name\":\"x\"}}", 201);
	cr_assert_null(json_object_get(json_object_get(obj, "metadata"), "managedFields"));
	json_decref(obj);
}

Test(sim_dryrun, patch_options_need_a_manager_for_apply_and_force_only_with_it)
{
	json_t *st;

	create_configmap("cm", NULL);
	st = call("PATCH", CM "/cm", NULL, "application/apply-patch+yaml", "metadata:\n  name: cm\n", 422);
	cr_assert_str_eq(message(st), "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required "
				      "value: is required for apply patch");
	json_decref(st);
	st = call("PATCH", CM "/cm", "force=true&dryRun=x", "application/merge-patch+json", "{}", 422);
	cr_assert_str_eq(message(st), "PatchOptions.meta.k8s.io \"\" is invalid: [force: Forbidden: may not "
				      "be specified for non-apply patch, dryRun: Unsupported value: "
				      "[]string{\"x\"}: supported values: \"All\"]");
	cr_assert_eq(json_array_size(json_object_get(json_object_get(st, "details"), "causes")), 2);
	json_decref(st);
	json_decref(call("PATCH", CM "/cm", "force=true&fieldManager=me", "application/apply-patch+yaml",
			 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n", 200));
	st = call("POST", CM, "fieldValidation=strict", NULL, "{\"metadata\":{\"name\":\"y\"}}", 422);
	cr_assert_str_eq(message(st), "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: "
				      "Unsupported value: \"strict\": supported values: \"\", \"Ignore\", "
				      "\"Strict\", \"Warn\"");
	json_decref(st);
}

Test(sim_dryrun, delete_options_are_validated_as_upstream)
{
	json_t *st;

	create_configmap("cm", NULL);
	st = call("DELETE", CM "/cm", "propagationPolicy=Later", NULL, NULL, 422);
	cr_assert_str_eq(message(st), "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: "
				      "Unsupported value: \"Later\": supported values: \"Foreground\", "
				      "\"Background\", \"Orphan\", \"nil\"");
	json_decref(st);
	st = call("DELETE", CM "/cm", NULL, NULL,
		  "{\"orphanDependents\":true,\"propagationPolicy\":\"Orphan\"}", 422);
	cr_assert_str_eq(message(st), "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: "
				      "Invalid value: \"Orphan\": orphanDependents and deletionPropagation "
				      "cannot be both set");
	json_decref(st);
	st = call("DELETE", CM "/cm", "gracePeriodSeconds=soon", NULL, NULL, 400);
	cr_assert_str_eq(message(st), "strconv.ParseInt: parsing \"soon\": invalid syntax");
	json_decref(st);
	st = call("DELETE", CM "/cm", NULL, NULL, "{\"dryRun\":\"All\"}", 500);
	cr_assert_null(json_object_get(st, "reason"), "a decoding error is no API status");
	json_decref(st);
	json_decref(call("GET", CM "/cm", NULL, NULL, NULL, 200));
}

Test(sim_dryrun, a_resource_version_on_a_create_is_refused_unless_dry_run)
{
	json_t *st = call("POST", CM, NULL, NULL, "{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\"}}", 500);

	cr_assert_str_eq(message(st), "resourceVersion should not be set on objects to be created");
	json_decref(st);
	st = call("POST", CM, "dryRun=All", NULL, "{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\"}}", 201);
	cr_assert_str_eq(meta(st, "resourceVersion"), "7", "a dry run keeps it as sent");
	json_decref(st);
}

Test(sim_dryrun, pretty_true_indents_as_upstream_and_other_words_do_not)
{
	char *raw;

	create_configmap("cm", NULL);
	raw = call_raw("GET", CM "/cm", "pretty=true", NULL, NULL, NULL, 200);
	cr_assert(strncmp(raw, "{\n  \"", 5) == 0, "%s", raw);
	free(raw);
	raw = call_raw("GET", CM, "pretty=1", NULL, NULL, NULL, 200);
	cr_assert(strstr(raw, "\n    {\n"), "list items indented: %s", raw);
	free(raw);
	/* strconv.ParseBool: "yes" is no word of it, so not pretty. */
	raw = call_raw("GET", CM "/cm", "pretty=yes", NULL, NULL, NULL, 200);
	cr_assert_null(strchr(raw, '\n'), "%s", raw);
	free(raw);
	raw = call_raw("GET", CM "/cm", "pretty=False", NULL, NULL, NULL, 200);
	cr_assert_null(strchr(raw, '\n'), "%s", raw);
	free(raw);
	raw = call_raw("GET", CM "/cm", NULL, "application/json;pretty=1", NULL, NULL, 200);
	cr_assert_not_null(strchr(raw, '\n'), "%s", raw);
	free(raw);
	/* Errors too. */
	raw = call_raw("GET", CM "/none", "pretty=T", NULL, NULL, NULL, 404);
	cr_assert_not_null(strstr(raw, "\n  \"reason\": \"NotFound\""), "%s", raw);
	free(raw);
}

Test(sim_dryrun, status_and_scale_subresources_take_dry_runs_too)
{
	json_t *obj;
	uint64_t rv;

	json_decref(call("POST", "/apis/apps/v1/namespaces/default/deployments", NULL, NULL,
			 "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":1,\"selector\":"
			 "{\"matchLabels\":{\"app\":\"d\"}},\"template\":{\"metadata\":{\"labels\":"
			 "{\"app\":\"d\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}}}}",
			 201));
	rv = store_rv();
	obj = call("PATCH", "/apis/apps/v1/namespaces/default/deployments/d/scale", "dryRun=All",
		   "application/merge-patch+json", "{\"spec\":{\"replicas\":5}}", 200);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(obj, "spec"), "replicas")), 5);
	json_decref(obj);
	obj = call("PATCH", "/apis/apps/v1/namespaces/default/deployments/d/status", "dryRun=All",
		   "application/merge-patch+json", "{\"status\":{\"replicas\":9}}", 200);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(obj, "status"), "replicas")), 9);
	json_decref(obj);
	cr_assert_eq(store_rv(), rv);
	obj = call("GET", "/apis/apps/v1/namespaces/default/deployments/d", NULL, NULL, NULL, 200);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(obj, "spec"), "replicas")), 1);
	cr_assert_null(json_object_get(json_object_get(obj, "status"), "replicas"));
	json_decref(obj);
}
