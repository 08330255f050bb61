/* kanna-sim object store: identity, resourceVersion, 409 on stale writes,
 * status subresource, finalizers, graceful pod deletion, garbage collection,
 * LIST paging and the watch window. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/clock.h"
#include "sim/k8s-store.h"
#include "sim/k8s-watch.h"

static struct k8s_registry *reg;
static struct k8s_store *store;
static struct k8s_resource *pods, *nodes, *deployments, *nss;

static void setup_window(size_t window)
{
	reg = k8s_registry_new();
	cr_assert_not_null(reg);
	cr_assert_eq(k8s_store_new(reg, window, &store), 0);
	cr_assert_eq(k8s_store_seed(store), 0);
	pods = k8s_registry_find(reg, "", "v1", "pods");
	nodes = k8s_registry_find(reg, "", "v1", "nodes");
	nss = k8s_registry_find(reg, "", "v1", "namespaces");
	deployments = k8s_registry_find(reg, "apps", "v1", "deployments");
}

static void setup(void)
{
	setup_window(0);
}

static void teardown(void)
{
	k8s_store_free(store);
	k8s_registry_free(reg);
}

TestSuite(sim_store, .init = setup, .fini = teardown);

static json_t *create(struct k8s_resource *res, const char *ns, const char *json)
{
	struct k8s_error err = {};
	json_t *body = json_loads(json, 0, NULL), *out = NULL;

	cr_assert_not_null(body, "bad JSON %s", json);
	cr_assert_eq(k8s_store_create(store, res, ns, body, &out, &err), 0, "%s", err.message);
	json_decref(body);
	return out;
}

static const char *meta_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static json_int_t generation(json_t *obj)
{
	return json_integer_value(json_object_get(json_object_get(obj, "metadata"), "generation"));
}

Test(sim_store, create_assigns_identity_and_increasing_resource_versions)
{
	json_t *a = create(pods, "default", "{\"metadata\":{\"name\":\"a\"},\"spec\":{}}");
	json_t *b = create(pods, "default", "{\"metadata\":{\"generateName\":\"b-\"},\"spec\":{}}");

	cr_assert_eq(strlen(meta_str(a, "uid")), 36);
	cr_assert_not_null(meta_str(a, "creationTimestamp"));
	cr_assert_eq(generation(a), 1);
	cr_assert_str_eq(json_string_value(json_object_get(a, "kind")), "Pod");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(a, "status"), "phase")),
			 "Pending");
	cr_assert(strtoull(meta_str(b, "resourceVersion"), NULL, 10) >
		  strtoull(meta_str(a, "resourceVersion"), NULL, 10));
	cr_assert_eq(strncmp(meta_str(b, "name"), "b-", 2), 0);
	cr_assert_eq(strlen(meta_str(b, "name")), 7);
	json_decref(a);
	json_decref(b);
}

Test(sim_store, create_refuses_duplicates_missing_namespaces_and_bad_names)
{
	struct k8s_error err = {};
	json_t *body = json_loads("{\"metadata\":{\"name\":\"a\"}}", 0, NULL);
	json_t *bad = json_loads("{\"metadata\":{\"name\":\"Bad_Name\"}}", 0, NULL);

	cr_assert_eq(k8s_store_create(store, pods, "default", body, NULL, &err), 0);
	cr_assert_eq(k8s_store_create(store, pods, "default", body, NULL, &err), -EEXIST);
	cr_assert_eq(err.code, 409);
	cr_assert_str_eq(err.reason, "AlreadyExists");
	cr_assert_eq(k8s_store_create(store, pods, "nope", body, NULL, &err), -ENOENT);
	cr_assert_eq(err.code, 404);
	cr_assert_str_eq(err.message, "namespaces \"nope\" not found");
	cr_assert_eq(k8s_store_create(store, pods, "default", bad, NULL, &err), -EINVAL);
	cr_assert_eq(err.code, 422);
	json_decref(body);
	json_decref(bad);
}

/* kube-apiserver refuses negative quantities at admission; so does the sim,
 * with the same 422, message and causes. */
Test(sim_store, negative_requests_and_limits_are_refused_as_upstream_refuses_them)
{
	struct k8s_error err = {};
	json_t *body = json_loads("{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"containers\":[{\"name\":\"c\","
				  "\"resources\":{\"requests\":{\"cpu\":\"-30\",\"memory\":\"1Gi\"}}}]}}", 0, NULL);
	json_t *cause;

	cr_assert_eq(k8s_store_create(store, pods, "default", body, NULL, &err), -EINVAL);
	cr_assert_eq(err.code, 422);
	cr_assert_str_eq(err.reason, "Invalid");
	cr_assert_str_eq(err.message, "Pod \"bad\" is invalid: spec.containers[0].resources.requests[cpu]: "
				      "Invalid value: \"-30\": must be greater than or equal to 0");
	cause = json_array_get(json_object_get(err.details, "causes"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(cause, "field")),
			 "spec.containers[0].resources.requests[cpu]");
	cr_assert_str_eq(json_string_value(json_object_get(cause, "reason")), "FieldValueInvalid");
	cr_assert_str_eq(json_string_value(json_object_get(err.details, "kind")), "Pod");
	k8s_error_clear(&err);
	json_decref(body);

	/* Several errors are listed in brackets; a template is checked too. */
	body = json_loads("{\"metadata\":{\"name\":\"web\"},\"spec\":{\"template\":{\"spec\":{"
			  "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":{\"memory\":-1}}}],"
			  "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"-0.5\"}}}]}}}}",
			  0, NULL);
	cr_assert_eq(k8s_store_create(store, deployments, "default", body, NULL, &err), -EINVAL);
	cr_assert_eq(err.code, 422);
	cr_assert_str_eq(err.message,
			 "Deployment.apps \"web\" is invalid: [spec.template.spec.initContainers[0].resources.limits[memory]: "
			 "Invalid value: \"-1\": must be greater than or equal to 0, "
			 "spec.template.spec.containers[0].resources.requests[cpu]: "
			 "Invalid value: \"-0.5\": must be greater than or equal to 0]");
	cr_assert_eq(json_array_size(json_object_get(err.details, "causes")), 2);
	k8s_error_clear(&err);
	json_decref(body);

	/* Zero is a quantity like any other; an update may not turn it negative. */
	json_decref(create(pods, "default", "{\"metadata\":{\"name\":\"zero\"},\"spec\":{\"containers\":[{\"name\":\"c\","
					    "\"resources\":{\"requests\":{\"cpu\":\"0\",\"memory\":\"-0\"}}}]}}"));
	body = json_loads("{\"metadata\":{\"name\":\"zero\"},\"spec\":{\"containers\":[{\"name\":\"c\","
			  "\"resources\":{\"requests\":{\"cpu\":\"-1m\"}}}]}}", 0, NULL);
	cr_assert_eq(k8s_store_update(store, pods, "default", "zero", body, K8S_WRITE_MAIN, NULL, &err),
		     -EINVAL);
	cr_assert_eq(err.code, 422);
	k8s_error_clear(&err);
	json_decref(body);
}

/* A StatefulSet's template mounts its volumeClaimTemplates, which its
 * controller adds to each pod's volumes: upstream leaves the template's
 * mounts unchecked (ValidatePodTemplateSpecForStatefulSet); a Deployment's
 * mount of a volume it does not declare is refused. */
Test(sim_store, a_statefulset_mounts_its_claim_templates_a_deployment_only_its_volumes)
{
	struct k8s_resource *sets = k8s_registry_find(reg, "apps", "v1", "statefulsets");
	static const char spec[] = "\"template\":{\"metadata\":{\"labels\":{\"app\":\"db\"}},\"spec\":{"
				   "\"containers\":[{\"name\":\"c\",\"volumeMounts\":[{\"name\":\"data\","
				   "\"mountPath\":\"/data\"}]}]}},\"selector\":{\"matchLabels\":{\"app\":\"db\"}}";
	struct k8s_error err = {};
	json_t *body;
	char json[1024];

	cr_assert_not_null(sets);
	snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"db\"},\"spec\":{%s,\"volumeClaimTemplates\":"
		 "[{\"metadata\":{\"name\":\"data\"}}]}}", spec);
	json_decref(create(sets, "default", json));
	snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"db\"},\"spec\":{%s}}", spec);
	body = json_loads(json, 0, NULL);
	cr_assert_eq(k8s_store_create(store, deployments, "default", body, NULL, &err), -EINVAL);
	cr_assert_eq(err.code, 422);
	cr_assert_str_eq(err.message, "Deployment.apps \"db\" is invalid: "
				      "spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"data\"");
	k8s_error_clear(&err);
	json_decref(body);
}

Test(sim_store, stale_resource_version_gets_conflict)
{
	json_t *d = create(deployments, "default",
			   "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":1}}");
	json_t *u1 = json_deep_copy(d), *u2 = json_deep_copy(d), *out = NULL;
	struct k8s_error err = {};

	json_object_set_new(json_object_get(u1, "spec"), "replicas", json_integer(3));
	json_object_set_new(json_object_get(u2, "spec"), "replicas", json_integer(4));
	cr_assert_eq(k8s_store_update(store, deployments, "default", "d", u1, K8S_WRITE_MAIN,
				      &out, &err), 0);
	cr_assert_eq(generation(out), 2, "a spec change bumps generation");
	cr_assert_eq(k8s_store_update(store, deployments, "default", "d", u2, K8S_WRITE_MAIN,
				      NULL, &err), -ESTALE);
	cr_assert_eq(err.code, 409);
	cr_assert_str_eq(err.reason, "Conflict");
	cr_assert(strstr(err.message, "the object has been modified"));
	json_decref(d);
	json_decref(u1);
	json_decref(u2);
	json_decref(out);
}

Test(sim_store, status_subresource_separates_spec_and_status_writes)
{
	json_t *d = create(deployments, "default",
			   "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":1}}");
	json_t *u = json_deep_copy(d), *out = NULL;
	struct k8s_error err = {};

	json_object_set_new(u, "status", json_pack("{s:i}", "replicas", 7));
	json_object_set_new(json_object_get(u, "spec"), "replicas", json_integer(2));
	json_object_del(json_object_get(u, "metadata"), "resourceVersion");
	cr_assert_eq(k8s_store_update(store, deployments, "default", "d", u, K8S_WRITE_MAIN, &out,
				      &err), 0);
	cr_assert_null(json_object_get(out, "status"), "main resource ignores status");
	json_decref(out);
	cr_assert_eq(k8s_store_update(store, deployments, "default", "d", u, K8S_WRITE_STATUS,
				      &out, &err), 0);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(out, "status"), "replicas")), 7);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(out, "spec"), "replicas")), 2);
	cr_assert_eq(generation(out), 2, "status writes do not bump generation");
	json_decref(out);
	json_decref(u);
	json_decref(d);
}

static struct k8s_delete_options default_delete(void)
{
	struct k8s_delete_options o;

	k8s_delete_options_init(&o);
	return o;
}

Test(sim_store, finalizers_hold_deletion_until_removed)
{
	json_t *n = create(nodes, NULL, "{\"metadata\":{\"name\":\"n1\",\"finalizers\":[\"karpenter.sh/termination\"]}}");
	struct k8s_delete_options opts = default_delete();
	struct k8s_error err = {};
	json_t *got = NULL, *u;

	cr_assert_eq(k8s_store_delete(store, nodes, NULL, "n1", &opts, NULL, &err), 0);
	cr_assert_eq(k8s_store_get(store, nodes, NULL, "n1", &got, &err), 0, "still there");
	cr_assert_not_null(meta_str(got, "deletionTimestamp"));
	u = json_deep_copy(got);
	json_array_append_new(json_object_get(json_object_get(u, "metadata"), "finalizers"),
			      json_string("new"));
	cr_assert_eq(k8s_store_update(store, nodes, NULL, "n1", u, K8S_WRITE_MAIN, NULL, &err),
		     -EINVAL, "no new finalizers while deleting");
	json_decref(u);
	u = json_deep_copy(got);
	json_object_set_new(json_object_get(u, "metadata"), "finalizers", json_array());
	cr_assert_eq(k8s_store_update(store, nodes, NULL, "n1", u, K8S_WRITE_MAIN, NULL, &err), 0);
	json_decref(got);
	got = NULL;
	cr_assert_eq(k8s_store_get(store, nodes, NULL, "n1", &got, &err), -ENOENT);
	cr_assert_eq(err.code, 404);
	json_decref(u);
	json_decref(n);
}

static void create_owned_pod(const char *name, json_t *owner)
{
	char body[600];

	snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\",\"ownerReferences\":"
		 "[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"d\",\"uid\":\"%s\"}]}}",
		 name, meta_str(owner, "uid"));
	json_decref(create(pods, "default", body));
}

Test(sim_store, owner_deletion_collects_dependents_unless_orphaned)
{
	json_t *d = create(deployments, "default", "{\"metadata\":{\"name\":\"d\"},\"spec\":{}}");
	struct k8s_delete_options opts = default_delete();
	struct k8s_error err = {};
	json_t *got = NULL;

	create_owned_pod("p0", d);
	create_owned_pod("p1", d);
	cr_assert_eq(k8s_store_delete(store, deployments, "default", "d", &opts, NULL, &err), 0);
	cr_assert_eq(k8s_store_get(store, pods, "default", "p0", &got, &err), -ENOENT);
	cr_assert_eq(k8s_store_get(store, pods, "default", "p1", &got, &err), -ENOENT);
	json_decref(d);

	d = create(deployments, "default", "{\"metadata\":{\"name\":\"d\"},\"spec\":{}}");
	create_owned_pod("p2", d);
	opts.propagation = K8S_PROPAGATE_ORPHAN;
	cr_assert_eq(k8s_store_delete(store, deployments, "default", "d", &opts, NULL, &err), 0);
	cr_assert_eq(k8s_store_get(store, pods, "default", "p2", &got, &err), 0);
	cr_assert_eq(json_array_size(json_object_get(json_object_get(got, "metadata"),
						     "ownerReferences")), 0);
	json_decref(got);
	json_decref(d);
}

Test(sim_store, bound_pods_terminate_gracefully_then_disappear)
{
	struct k8s_delete_options opts = default_delete();
	struct k8s_error err = {};
	json_t *got = NULL;

	json_decref(create(pods, "default", "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeName\":\"n1\"}}"));
	cr_assert_eq(k8s_store_delete(store, pods, "default", "p", &opts, NULL, &err), 0);
	cr_assert_eq(k8s_store_get(store, pods, "default", "p", &got, &err), 0);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(got, "metadata"),
							"deletionGracePeriodSeconds")), 30);
	json_decref(got);
	cr_assert_eq(k8s_store_sweep(store, clock_monotonic_ms()), 0, "not due yet");
	cr_assert_eq(k8s_store_sweep(store, clock_monotonic_ms() + K8S_POD_TERMINATION_MS + 1), 1);
	cr_assert_eq(k8s_store_get(store, pods, "default", "p", &got, &err), -ENOENT);
}

Test(sim_store, deleting_a_namespace_deletes_its_contents)
{
	struct k8s_delete_options opts = default_delete();
	struct k8s_error err = {};
	json_t *got = NULL;

	json_decref(create(nss, NULL, "{\"metadata\":{\"name\":\"team\"}}"));
	json_decref(create(pods, "team", "{\"metadata\":{\"name\":\"p\"}}"));
	cr_assert_eq(k8s_store_delete(store, nss, NULL, "team", &opts, NULL, &err), 0);
	cr_assert_eq(k8s_store_get(store, pods, "team", "p", &got, &err), -ENOENT);
}

static json_t *list(const char *ns, const char *labels, long limit, const char *cont)
{
	struct k8s_selector *sel = NULL;
	struct k8s_list_options opts = { .limit = limit, .continue_token = cont };
	struct k8s_error err = {};
	char msg[128], *body = NULL;
	size_t len;
	json_t *out;

	if (labels)
		cr_assert_eq(k8s_label_selector_parse(labels, &sel, msg, sizeof(msg)), 0);
	opts.labels = sel;
	cr_assert_eq(k8s_store_list(store, pods, ns, &opts, &body, &len, &err), 0);
	out = json_loadb(body, len, 0, NULL);
	cr_assert_not_null(out, "list body is JSON");
	free(body);
	k8s_selector_free(sel);
	return out;
}

Test(sim_store, list_filters_by_labels_and_pages_with_continue)
{
	json_t *l, *l2;
	const char *cont;

	for (int i = 0; i < 5; i++) {
		char body[256];

		snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"p%d\",\"labels\":{\"app\":\"%s\"}}}",
			 i, i % 2 ? "odd" : "even");
		json_decref(create(pods, "default", body));
	}
	l = list("default", "app=even", 0, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(l, "kind")), "PodList");
	cr_assert_eq(json_array_size(json_object_get(l, "items")), 3);
	json_decref(l);
	l = list(NULL, NULL, 2, NULL);
	cr_assert_eq(json_array_size(json_object_get(l, "items")), 2);
	cont = json_string_value(json_object_get(json_object_get(l, "metadata"), "continue"));
	cr_assert_not_null(cont);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(l, "metadata"),
							"remainingItemCount")), 3);
	l2 = list(NULL, NULL, 10, cont);
	cr_assert_eq(json_array_size(json_object_get(l2, "items")), 3);
	cr_assert_str_eq(meta_str(json_array_get(json_object_get(l2, "items"), 0), "name"), "p2");
	cr_assert_null(json_object_get(json_object_get(l2, "metadata"), "continue"));
	json_decref(l);
	json_decref(l2);
}

static json_t *relabel(const json_t *cur, void *userdata, struct k8s_error *err)
{
	json_t *out = json_deep_copy(cur);

	json_object_set_new(json_object_get(out, "metadata"), "labels",
			    json_pack("{s:s}", "app", "changed"));
	return out;
}

/* A streamed LIST in reads of step bytes. */
static char *read_stream(struct k8s_list_stream *s, size_t step, size_t *len)
{
	size_t cap = k8s_list_stream_length(s), n = 0, k;
	char *out = malloc(cap + 1);

	cr_assert_not_null(out);
	while ((k = k8s_list_stream_read(s, out + n, MIN(step, cap - n))) > 0)
		n += k;
	cr_assert_eq(k8s_list_stream_read(s, out, 1), 0, "nothing after the end");
	out[n] = '\0';
	*len = n;
	return out;
}

Test(sim_store, a_streamed_list_is_the_listed_body_read_from_a_snapshot)
{
	struct k8s_list_options opts = { .limit = 3 };
	struct k8s_delete_options del;
	struct k8s_list_stream *s;
	struct k8s_error err = {};
	char *body = NULL, *streamed;
	size_t len, slen;

	for (int i = 0; i < 5; i++) {
		char obj[128];

		snprintf(obj, sizeof(obj), "{\"metadata\":{\"name\":\"p%d\",\"labels\":{\"app\":\"a\"}}}", i);
		json_decref(create(pods, "default", obj));
	}
	cr_assert_eq(k8s_store_list(store, pods, NULL, &opts, &body, &len, &err), 0);
	for (size_t step = 1; step <= len + 1; step += step < 16 ? 1 : 37) {
		cr_assert_eq(k8s_store_list_stream(store, pods, NULL, &opts, &s, &err), 0);
		cr_assert_eq(k8s_list_stream_length(s), len);
		streamed = read_stream(s, step, &slen);
		cr_assert_eq(slen, len, "%zu-byte reads", step);
		cr_assert_str_eq(streamed, body, "%zu-byte reads", step);
		free(streamed);
		k8s_list_stream_free(s);
	}
	/* What is written after the snapshot does not show in it, even half-read. */
	cr_assert_eq(k8s_store_list_stream(store, pods, NULL, &opts, &s, &err), 0);
	streamed = malloc(len + 1);
	slen = k8s_list_stream_read(s, streamed, 10);
	cr_assert_eq(k8s_store_mutate(store, pods, "default", "p1", K8S_WRITE_MAIN, relabel, NULL,
				      NULL, &err), 0);
	k8s_delete_options_init(&del);
	cr_assert_eq(k8s_store_delete(store, pods, "default", "p2", &del, NULL, &err), 0);
	while ((len = k8s_list_stream_read(s, streamed + slen, 64)) > 0)
		slen += len;
	streamed[slen] = '\0';
	cr_assert_str_eq(streamed, body);
	k8s_list_stream_free(s);
	free(streamed);
	free(body);
	/* Freed half-read, it lets go of what it held. */
	cr_assert_eq(k8s_store_list_stream(store, pods, NULL, &opts, &s, &err), 0);
	streamed = malloc(16);
	k8s_list_stream_read(s, streamed, 16);
	free(streamed);
	k8s_list_stream_free(s);
}

static char *read_all(struct k8s_watch *w)
{
	char *out = calloc(1, 1 << 16);
	size_t n = 0;
	ssize_t k;

	while ((k = k8s_watch_read(w, out + n, (1 << 16) - 1 - n)) > 0)
		n += (size_t)k;
	return out;
}

Test(sim_store, watch_resumes_after_a_resource_version_and_expires_old_ones)
{
	struct k8s_watch_options opts = { .timeout_seconds = 1 };
	struct k8s_error err = {};
	struct k8s_watch *w = NULL;
	json_t *a = create(pods, "default", "{\"metadata\":{\"name\":\"a\"}}");
	char *text;

	json_decref(create(pods, "default", "{\"metadata\":{\"name\":\"b\"}}"));
	opts.resource_version = meta_str(a, "resourceVersion");
	cr_assert_eq(k8s_watch_new(store, pods, "default", NULL, NULL, &opts, &w, &err), 0);
	text = read_all(w);
	cr_assert(strstr(text, "\"type\":\"ADDED\""), "got %s", text);
	cr_assert(strstr(text, "\"name\":\"b\""));
	cr_assert_null(strstr(text, "\"name\":\"a\""), "events up to the rv are not repeated");
	free(text);
	k8s_watch_free(w);
	json_decref(a);
	teardown();

	setup_window(4);
	a = create(pods, "default", "{\"metadata\":{\"name\":\"a\"}}");
	for (int i = 0; i < 6; i++) {
		char body[128];

		snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"x%d\"}}", i);
		json_decref(create(pods, "default", body));
	}
	opts.resource_version = meta_str(a, "resourceVersion");
	w = NULL;
	cr_assert_eq(k8s_watch_new(store, pods, "default", NULL, NULL, &opts, &w, &err), -ESTALE);
	cr_assert_eq(err.code, 410);
	cr_assert_str_eq(err.reason, "Expired");
	json_decref(a);
}

Test(sim_store, updates_and_deletes_survive_snapshots_that_left_the_watch_window)
{
	struct k8s_delete_options opts = default_delete();
	struct k8s_error err = {};
	json_t *got = NULL, *u;

	teardown();
	setup_window(2);
	json_decref(create(nodes, NULL, "{\"metadata\":{\"name\":\"n1\",\"finalizers\":[\"f\"]}}"));
	json_decref(create(pods, "default", "{\"metadata\":{\"name\":\"x1\"}}"));
	json_decref(create(pods, "default", "{\"metadata\":{\"name\":\"x2\"}}"));
	/* n1's snapshot is now held by the tree alone; writes replace it. */
	cr_assert_eq(k8s_store_get(store, nodes, NULL, "n1", &got, &err), 0);
	cr_assert_eq(k8s_store_delete(store, nodes, NULL, "n1", &opts, NULL, &err), 0);
	u = json_deep_copy(got);
	json_object_set_new(json_object_get(u, "metadata"), "labels", json_pack("{s:s}", "a", "b"));
	cr_assert_eq(k8s_store_update(store, nodes, NULL, "n1", u, K8S_WRITE_MAIN, NULL, &err), -ESTALE,
		     "the deletion moved the resourceVersion");
	json_object_del(json_object_get(u, "metadata"), "resourceVersion");
	cr_assert_eq(k8s_store_update(store, nodes, NULL, "n1", u, K8S_WRITE_MAIN, NULL, &err), 0);
	json_decref(u);
	json_decref(got);
}

static json_t *bind_to_n1(const json_t *cur, void *userdata, struct k8s_error *err)
{
	json_t *out = json_deep_copy(cur);

	json_object_set_new(json_object_get(out, "spec"), "nodeName", json_string("n1"));
	return out;
}

Test(sim_store, filtered_watch_sees_objects_leave_and_enter_the_selection)
{
	struct k8s_watch_options opts = { .timeout_seconds = 1, .resource_version = "1" };
	struct k8s_selector *fields = NULL, *labels = NULL;
	struct k8s_error err = {};
	struct k8s_watch *w = NULL;
	json_t *relabel;
	char msg[64], *text;

	json_decref(create(pods, "default", "{\"metadata\":{\"name\":\"p\"},\"spec\":{}}"));
	cr_assert_eq(k8s_field_selector_parse("spec.nodeName=", &fields, msg, sizeof(msg)), 0);
	cr_assert_eq(k8s_store_mutate(store, pods, "default", "p", K8S_WRITE_MAIN, bind_to_n1, NULL,
				      NULL, &err), 0);
	cr_assert_eq(k8s_watch_new(store, pods, "default", NULL, fields, &opts, &w, &err), 0);
	text = read_all(w);
	cr_assert(strstr(text, "{\"type\":\"ADDED\""), "got %s", text);
	cr_assert(strstr(text, "{\"type\":\"DELETED\""), "binding leaves spec.nodeName=: %s", text);
	cr_assert_null(strstr(text, "MODIFIED"), "got %s", text);
	free(text);
	k8s_watch_free(w);

	cr_assert_eq(k8s_label_selector_parse("tier=fe", &labels, msg, sizeof(msg)), 0);
	relabel = json_loads("{\"metadata\":{\"name\":\"p\",\"labels\":{\"tier\":\"fe\"}},\"spec\":{\"nodeName\":\"n1\"}}",
			     0, NULL);
	cr_assert_eq(k8s_store_update(store, pods, "default", "p", relabel, K8S_WRITE_MAIN, NULL, &err), 0);
	cr_assert_eq(k8s_watch_new(store, pods, "default", labels, NULL, &opts, &w, &err), 0);
	text = read_all(w);
	cr_assert(strstr(text, "{\"type\":\"ADDED\""), "relabelling enters the selection: %s", text);
	cr_assert_null(strstr(text, "MODIFIED"), "got %s", text);
	free(text);
	k8s_watch_free(w);
	json_decref(relabel);
}

Test(sim_store, delete_collection_deletes_only_what_the_selector_selects)
{
	struct k8s_delete_options opts = default_delete();
	struct k8s_selector *sel = NULL;
	struct k8s_list_options selected = {};
	struct k8s_error err = {};
	json_t *l;
	char msg[64];

	json_decref(create(pods, "default", "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"x\"}}}"));
	json_decref(create(pods, "default", "{\"metadata\":{\"name\":\"b\",\"labels\":{\"app\":\"y\"}}}"));
	json_decref(create(pods, "default", "{\"metadata\":{\"name\":\"c\",\"labels\":{\"app\":\"x\"}}}"));
	cr_assert_eq(k8s_label_selector_parse("app=x", &sel, msg, sizeof(msg)), 0);
	selected.labels = sel;
	cr_assert_eq(k8s_store_delete_collection(store, pods, "default", &selected, &opts, &err), 2);
	l = list("default", NULL, 0, NULL);
	cr_assert_eq(json_array_size(json_object_get(l, "items")), 1);
	cr_assert_str_eq(meta_str(json_array_get(json_object_get(l, "items"), 0), "name"), "b");
	json_decref(l);
	k8s_selector_free(sel);
}
