/*
 * Informers and API discovery against kanna-sim's API server in this
 * process (plain HTTP, ephemeral port, no controllers): an object whose
 * last state does not decode is still deleted, a NodePool that becomes
 * invalid is published as invalid, a collection that is not served is
 * synced empty and found once served, a version switch replaces the old
 * version's objects, and discovery says which versions are served.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kube-events.h"
#include "state/state-store.h"
#include "sim/k8s-server.h"
#include "sim/k8s-store-internal.h"
#include "watcher/discovery.h"
#include "watcher/informer.h"
#include "watcher/publish.h"

static struct k8s_registry *reg;
static struct k8s_store *kstore;
static struct k8s_api api;
static struct k8s_server *server;
static struct loop *loop;
static struct sock_ctx *ctx;
static struct kube_client *client;
static struct publisher *pub;
static struct informer_metrics metrics;
static char dir[64];

static void setup(void)
{
	struct k8s_server_config cfg = { .port = 0 };
	struct kube_config *kc = calloc(1, sizeof(*kc));
	char url[64];

	reg = k8s_registry_new();
	cr_assert_not_null(reg);
	cr_assert_eq(k8s_registry_load_crds(reg, KANNA_SRCDIR "/data/crds"), 0);
	/* an invalid operator (below) must reach the watcher, as under CRDs
	 * without the enum (kanna-sim's crd-enums: false) */
	reg->crd_enums_unchecked = true;
	cr_assert_eq(k8s_store_new(reg, 0, &kstore), 0);
	cr_assert_eq(k8s_store_seed(kstore), 0);
	k8s_api_init(&api, reg, kstore);
	cr_assert_eq(k8s_server_start(&api, &cfg, &server), 0);
	strcpy(dir, "/tmp/kanna-informer-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(loop_new(&loop, "test"), 0);
	cr_assert_eq(sock_ctx_new(&ctx, loop, "watcher", dir), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", k8s_server_port(server));
	kc->server = strdup(url);
	kc->namespace = strdup("default");
	kc->context = strdup("test");
	cr_assert_eq(kube_client_new(&client, loop, kc,
				     &(struct kube_client_options){ .allow_insecure_http = true }), 0);
	cr_assert_eq(publisher_new(&pub, ctx, loop, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC), 0);
	cr_assert_eq(publisher_set_complete(pub), 0);
}

static void teardown(void)
{
	char cmd[128];

	publisher_free(pub);
	kube_client_free(client);
	sock_ctx_free(ctx);
	loop_free(loop);
	k8s_server_free(server);
	k8s_api_done(&api);
	k8s_store_free(kstore);
	k8s_registry_free(reg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

TestSuite(informer, .init = setup, .fini = teardown, .timeout = 60);

/* "?name=value" of the request's path: one argument is all the tests use. */
static const char *query_arg(void *cls, const char *name)
{
	const char *q = cls ? strchr(cls, '?') : NULL;
	size_t n = strlen(name);

	return q && strncmp(q + 1, name, n) == 0 && q[1 + n] == '=' ? q + 2 + n : NULL;
}

/* A request to the sim, as kubectl would make it; wants a 2xx. */
static void sim(const char *method, const char *uri, const char *body)
{
	char path[256];
	struct k8s_request req = {
		.method = method, .path = path, .body = body, .body_len = body ? strlen(body) : 0,
		.content_type = streq(method, "PATCH") ? "application/merge-patch+json" :
							  "application/json",
		.arg = query_arg, .arg_cls = (void *)uri,
	};
	struct k8s_response resp;

	snprintf(path, sizeof(path), "%.*s", (int)strcspn(uri, "?"), uri);
	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	cr_assert(resp.status / 100 == 2, "%s %s: %d %.*s", method, path, resp.status,
		  (int)resp.len, resp.body);
	k8s_response_clear(&resp);
}

static const struct informer_def *def_named(const char *resource)
{
	for (size_t i = 0; i < informer_n_defs; i++)
		if (streq(informer_defs[i].resource, resource))
			return &informer_defs[i];
	cr_assert_fail("no informer for %s", resource);
	return NULL;
}

static struct informer *watch(const char *resource, const char *version)
{
	struct informer_env env = { .client = client, .pub = pub, .metrics = &metrics };
	struct informer *inf;

	cr_assert_eq(informer_new(&inf, def_named(resource), &env), 0);
	cr_assert_eq(informer_set_version(inf, version), 0);
	return inf;
}

static const struct state_entry *get(enum proto_object_kind kind, const char *ns, const char *name)
{
	return state_store_get(publisher_store(pub), kind, ns, name);
}

/* Turns the loop until cond holds, for at most 10 s. */
#define RUN_UNTIL(cond, ...)                                                     \
	do {                                                                     \
		for (int i_ = 0; i_ < 1000 && !(cond); i_++)                     \
			cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0); \
		cr_assert(cond, __VA_ARGS__);                                    \
	} while (0)

#define NODEPOOL(name, op)                                                                        \
	"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"" name \
	"\"},\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\","  \
	"\"kind\":\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":[{\"key\":"              \
	"\"kubernetes.io/arch\",\"operator\":\"" op "\",\"values\":[\"amd64\"]}]}}}}"

Test(informer, a_nodepool_that_becomes_invalid_is_published_invalid_and_its_delete_is_seen)
{
	struct informer *inf = watch("nodepools", "v1");
	const struct state_entry *e;

	RUN_UNTIL(informer_synced(inf), "nodepools never synced");
	sim("POST", "/apis/karpenter.sh/v1/nodepools", NODEPOOL("np", "In"));
	RUN_UNTIL((e = get(PROTO_OBJECT_NODEPOOL, "", "np")), "the NodePool never arrived");
	cr_assert_eq(e->obj.nodepool->status, PROTO_NODEPOOL_OK);
	/* Updated to something that does not decode: no longer the valid one.
	 * (A merge patch: a PUT of a custom resource needs its resourceVersion,
	 * as kube-apiserver's custom resource strategy has it.) */
	sim("PATCH", "/apis/karpenter.sh/v1/nodepools/np",
	    "{\"spec\":{\"template\":{\"spec\":{\"requirements\":[{\"key\":\"kubernetes.io/arch\","
	    "\"operator\":\"Near\",\"values\":[\"amd64\"]}]}}}}");
	RUN_UNTIL((e = get(PROTO_OBJECT_NODEPOOL, "", "np")) &&
			  e->obj.nodepool->status == PROTO_NODEPOOL_INVALID,
		  "the old valid NodePool is still published");
	cr_assert(strstr(e->obj.nodepool->status_reason, "'Near' is not one of"), "%s",
		  e->obj.nodepool->status_reason);
	cr_assert_eq(e->obj.nodepool->n_requirements, 0, "nothing of the invalid spec is planned with");
	/* Deleted in that state: the DELETED body does not decode either. */
	sim("DELETE", "/apis/karpenter.sh/v1/nodepools/np", NULL);
	RUN_UNTIL(!get(PROTO_OBJECT_NODEPOOL, "", "np"), "the deleted NodePool stays in state");
	informer_free(inf);
}

#define POD(name, labels)                                                                  \
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\","     \
	"\"namespace\":\"default\",\"labels\":{" labels "}},\"spec\":{\"containers\":["   \
	"{\"name\":\"c\",\"image\":\"pause\"}]}}"
#define LONG_VALUE "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv" /* 64 */

Test(informer, an_object_deleted_while_its_last_state_does_not_decode_leaves_no_ghost)
{
	struct informer *inf = watch("pods", "v1");

	RUN_UNTIL(informer_synced(inf), "pods never synced");
	sim("POST", "/api/v1/namespaces/default/pods", POD("p1", "\"app\":\"a\""));
	RUN_UNTIL(get(PROTO_OBJECT_POD, "default", "p1"), "the pod never arrived");
	/* A label value past proto's limit: the update cannot be published. */
	sim("PATCH", "/api/v1/namespaces/default/pods/p1",
	    "{\"metadata\":{\"labels\":{\"app\":\"" LONG_VALUE "\"}}}");
	/* Events of one collection arrive in order: once the marker is in,
	 * the update was seen. */
	sim("POST", "/api/v1/namespaces/default/pods", POD("marker", ""));
	RUN_UNTIL(get(PROTO_OBJECT_POD, "default", "marker"), "the marker pod never arrived");
	cr_assert_not_null(get(PROTO_OBJECT_POD, "default", "p1"));
	sim("DELETE", "/api/v1/namespaces/default/pods/p1?gracePeriodSeconds=0", NULL);
	RUN_UNTIL(!get(PROTO_OBJECT_POD, "default", "p1"), "the deleted pod stays in state");
	informer_free(inf);
}

/*
 * Stores obj as an older API server may have: past the admission checks the
 * sim now makes (it refuses negative requests, as kube-apiserver does).
 */
static void store_unchecked(const char *plural, const char *json)
{
	struct k8s_resource *res = k8s_registry_find(reg, "", "v1", plural);
	json_t *obj = json_loads(json, 0, NULL);

	cr_assert(res && obj);
	k8s_store_lock(kstore);
	cr_assert_eq(k8s_store_commit(kstore, res, obj, K8S_EVENT_ADDED, NULL), 0);
	k8s_store_unlock(kstore);
	json_decref(obj);
}

/* "reason message" of each Event in default, one a line (malloc'd). */
static char *events_text(void)
{
	struct k8s_resource *res = k8s_registry_find(reg, "", "v1", "events");
	struct k8s_list_options opts = { 0 };
	struct k8s_error err = { 0 };
	char *body = NULL, *out = NULL;
	size_t len, out_len = 0;
	FILE *f = open_memstream(&out, &out_len);
	json_t *list, *ev;
	size_t i;

	cr_assert(res && f);
	cr_assert_eq(k8s_store_list(kstore, res, "default", &opts, &body, &len, &err), 0);
	list = json_loadb(body, len, 0, NULL);
	json_array_foreach(json_object_get(list, "items"), i, ev)
		fprintf(f, "%s %s\n", json_string_value(json_object_get(ev, "reason")),
			json_string_value(json_object_get(ev, "message")));
	fclose(f);
	json_decref(list);
	free(body);
	return out;
}

static bool has_event(const char *line)
{
	char *text = events_text();
	bool found = strstr(text, line) != NULL;

	free(text);
	return found;
}

Test(informer, a_pending_pod_with_a_negative_request_is_not_published_and_told_why)
{
	struct kube_events *events;
	struct informer_env env = { .client = client, .pub = pub, .metrics = &metrics };
	struct informer *inf;

	cr_assert_eq(kube_events_new(&events, client, "karpenter", "test"), 0);
	env.events = events;
	cr_assert_eq(informer_new(&inf, def_named("pods"), &env), 0);
	cr_assert_eq(informer_set_version(inf, "v1"), 0);
	RUN_UNTIL(informer_synced(inf), "pods never synced");
	store_unchecked("pods", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"negative\","
				"\"namespace\":\"default\",\"uid\":\"u-neg\"},\"spec\":{\"containers\":[{\"name\":\"c\","
				"\"resources\":{\"requests\":{\"cpu\":\"-30\"}}}]},\"status\":{\"phase\":\"Pending\","
				"\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}");
	sim("POST", "/api/v1/namespaces/default/pods", POD("marker", ""));
	RUN_UNTIL(get(PROTO_OBJECT_POD, "default", "marker"), "the marker pod never arrived");
	cr_assert_null(get(PROTO_OBJECT_POD, "default", "negative"), "a pod with a negative request was published");
	RUN_UNTIL(has_event("FailedScheduling Failed to schedule pod, "
			    "spec.containers[0].resources.requests.cpu: negative quantity -30\n"),
		  "no FailedScheduling Event on the pod: %s", events_text());
	informer_free(inf);
	kube_events_free(events);
}

#define PROVISIONER(provider)                                                                     \
	"{\"apiVersion\":\"karpenter.sh/v1alpha5\",\"kind\":\"Provisioner\",\"metadata\":{\"name\":" \
	"\"legacy\"},\"spec\":{" provider "}}"

static void set_faults(const char *json)
{
	sim("POST", "/_sim/faults", json);
}

Test(informer, an_unserved_collection_is_synced_empty_and_watched_once_served)
{
	struct informer *inf;

	set_faults("{\"unservedVersions\":[\"karpenter.sh/v1alpha5\"]}");
	inf = watch("provisioners", "v1alpha5");
	RUN_UNTIL(informer_synced(inf), "a 404 collection never counted as synced");
	cr_assert(informer_absent(inf));
	/* Installed later: the recheck (the same version again) finds it. */
	set_faults("{}");
	sim("POST", "/apis/karpenter.sh/v1alpha5/provisioners",
	    PROVISIONER("\"provider\":{\"subnetSelector\":{\"karpenter.sh/discovery\":\"kanna\"},"
			"\"securityGroupSelector\":{\"karpenter.sh/discovery\":\"kanna\"}}"));
	cr_assert_eq(informer_set_version(inf, "v1alpha5"), 0);
	RUN_UNTIL(get(PROTO_OBJECT_NODEPOOL, "", "legacy") && get(PROTO_OBJECT_NODECLASS, "", "legacy"),
		  "the Provisioner and its node class never arrived");
	cr_assert_not(informer_absent(inf));
	/* Its provider removed: the node class it made goes. */
	sim("PATCH", "/apis/karpenter.sh/v1alpha5/provisioners/legacy", "{\"spec\":{\"provider\":null}}");
	RUN_UNTIL(!get(PROTO_OBJECT_NODECLASS, "", "legacy"), "the node class outlived its provider");
	cr_assert_not_null(get(PROTO_OBJECT_NODEPOOL, "", "legacy"));
	/* Uninstalled (discovery finds no version of it): what it held goes. */
	cr_assert_eq(informer_set_version(inf, NULL), 0);
	cr_assert(informer_absent(inf));
	cr_assert(informer_synced(inf));
	cr_assert_null(get(PROTO_OBJECT_NODEPOOL, "", "legacy"), "the Provisioner outlived its CRD");
	informer_free(inf);
}

Test(informer, switching_versions_replaces_the_objects_of_the_old_one)
{
	struct informer *inf = watch("nodepools", "v1beta1");

	sim("POST", "/apis/karpenter.sh/v1beta1/nodepools",
	    "{\"apiVersion\":\"karpenter.sh/v1beta1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":"
	    "\"beta-only\"},\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"name\":\"default\"}}}}}");
	sim("POST", "/apis/karpenter.sh/v1/nodepools", NODEPOOL("v1-only", "In"));
	RUN_UNTIL(get(PROTO_OBJECT_NODEPOOL, "", "beta-only"), "the v1beta1 NodePool never arrived");
	cr_assert_null(get(PROTO_OBJECT_NODEPOOL, "", "v1-only"));
	cr_assert_eq(informer_set_version(inf, "v1"), 0);
	RUN_UNTIL(get(PROTO_OBJECT_NODEPOOL, "", "v1-only") && !get(PROTO_OBJECT_NODEPOOL, "", "beta-only"),
		  "the switch to v1 did not replace the v1beta1 objects");
	cr_assert_str_eq(informer_version(inf), "v1");
	cr_assert_eq(informer_set_version(inf, "v2"), -EINVAL);
	informer_free(inf);
}

struct discovered {
	int done, result;
};

static void on_discovered(struct discovery *d, int result, void *userdata)
{
	struct discovered *got = userdata;

	(void)d;
	got->done++;
	got->result = result;
}

static const char *const groups[] = { "karpenter.sh", "karpenter.k8s.aws", NULL };

static void discover(struct discovery *d, struct discovered *got)
{
	int want = got->done + 1;

	cr_assert_eq(discovery_refresh(d), 0);
	RUN_UNTIL(got->done == want, "discovery never finished");
	cr_assert_eq(got->result, 0);
}

Test(informer, discovery_says_which_crd_versions_are_served)
{
	struct discovered got = { 0 };
	struct discovery *d;

	cr_assert_eq(discovery_new(&d, client, groups, on_discovered, &got), 0);
	cr_assert_not(discovery_known(d));
	discover(d, &got);
	cr_assert(discovery_known(d));
	cr_assert(discovery_served(d, "karpenter.sh", "v1", "nodepools"));
	cr_assert(discovery_served(d, "karpenter.sh", "v1beta1", "nodepools"));
	cr_assert(discovery_served(d, "karpenter.sh", "v1alpha5", "provisioners"));
	cr_assert(discovery_served(d, "karpenter.k8s.aws", "v1", "ec2nodeclasses"));
	cr_assert_not(discovery_served(d, "karpenter.sh", "v1", "nodepools/status"));
	/* A cluster with only v1 of karpenter.sh and no karpenter.k8s.aws at all. */
	set_faults("{\"unservedVersions\":[\"karpenter.sh/v1beta1\",\"karpenter.sh/v1alpha5\","
		   "\"karpenter.k8s.aws/v1\",\"karpenter.k8s.aws/v1beta1\",\"karpenter.k8s.aws/v1alpha1\"]}");
	discover(d, &got);
	cr_assert(discovery_served(d, "karpenter.sh", "v1", "nodepools"));
	cr_assert_not(discovery_served(d, "karpenter.sh", "v1beta1", "nodepools"));
	cr_assert_not(discovery_served(d, "karpenter.sh", "v1alpha5", "provisioners"));
	cr_assert_not(discovery_served(d, "karpenter.k8s.aws", "v1", "ec2nodeclasses"));
	discovery_free(d);
}

static void count_relist(struct informer *inf, void *userdata)
{
	(void)inf;
	(*(int *)userdata)++;
}

Test(informer, only_a_relist_after_410_calls_the_relist_hook_not_a_version_switch)
{
	int relists = 0;
	struct informer_env env = { .client = client, .pub = pub, .metrics = &metrics,
				    .on_relist = count_relist, .userdata = &relists };
	struct informer *inf;

	cr_assert_eq(informer_new(&inf, def_named("nodepools"), &env), 0);
	cr_assert_eq(informer_set_version(inf, "v1beta1"), 0);
	RUN_UNTIL(informer_synced(inf), "nodepools never synced");
	/* The next stream is cut after one event and its resumption is 410 Gone. */
	set_faults("{\"watchCutAfterEvents\":1,\"watchGone\":1}");
	cr_assert_eq(informer_set_version(inf, "v1"), 0);
	sim("POST", "/apis/karpenter.sh/v1/nodepools", NODEPOOL("after-switch", "In"));
	RUN_UNTIL(relists == 1, "no relist after 410 Gone");
	set_faults("{}");
	sim("POST", "/apis/karpenter.sh/v1/nodepools", NODEPOOL("after-relist", "In"));
	RUN_UNTIL(get(PROTO_OBJECT_NODEPOOL, "", "after-relist"), "the watch did not resume after the relist");
	cr_assert_not_null(get(PROTO_OBJECT_NODEPOOL, "", "after-switch"));
	cr_assert_eq(relists, 1, "%d relist(s)", relists);
	informer_free(inf);
}

#define PROVISIONER_NAMED(name)                                                                   \
	"{\"apiVersion\":\"karpenter.sh/v1alpha5\",\"kind\":\"Provisioner\",\"metadata\":{\"name\":" \
	"\"" name "\"},\"spec\":{}}"
#define PROVISIONERS "/apis/karpenter.sh/v1alpha5/provisioners"

static struct informer *legacy_informer;

static void restore_legacy(struct informer *inf, const char *key, uint32_t owners, void *userdata)
{
	(void)inf;
	(void)userdata;
	cr_assert_geq(informer_restore(legacy_informer, key, owners), 0);
}

static int nodepool_source(const char *name)
{
	const struct state_entry *e = get(PROTO_OBJECT_NODEPOOL, "", name);

	return e ? (int)e->obj.nodepool->source_api : -1;
}

/* Mid-migration both exist: the NodePool is used while it exists, and
 * nothing the Provisioner does (update, delete) touches it. */
Test(informer, a_nodepool_wins_over_a_provisioner_of_the_same_name_while_it_exists)
{
	struct informer_env env = { .client = client, .pub = pub, .metrics = &metrics,
				    .on_released = restore_legacy };
	struct informer *nodepools;

	legacy_informer = watch("provisioners", "v1alpha5");
	cr_assert_eq(informer_new(&nodepools, def_named("nodepools"), &env), 0);
	cr_assert_eq(informer_set_version(nodepools, "v1"), 0);
	sim("POST", PROVISIONERS, PROVISIONER_NAMED("default"));
	RUN_UNTIL(nodepool_source("default") == PROTO_API_V1ALPHA5, "the Provisioner never arrived");
	sim("POST", "/apis/karpenter.sh/v1/nodepools", NODEPOOL("default", "In"));
	RUN_UNTIL(nodepool_source("default") == PROTO_API_V1, "the NodePool did not take over");
	/* Provisioner events arrive in order: once a marker is in, the one
	 * before it was seen. */
	sim("PATCH", PROVISIONERS "/default", "{\"spec\":{\"weight\":7}}");
	sim("POST", PROVISIONERS, PROVISIONER_NAMED("marker-1"));
	RUN_UNTIL(nodepool_source("marker-1") >= 0, "marker-1 never arrived");
	cr_assert_eq(nodepool_source("default"), PROTO_API_V1, "the Provisioner's update replaced it");
	sim("DELETE", PROVISIONERS "/default", NULL);
	sim("POST", PROVISIONERS, PROVISIONER_NAMED("marker-2"));
	RUN_UNTIL(nodepool_source("marker-2") >= 0, "marker-2 never arrived");
	cr_assert_eq(nodepool_source("default"), PROTO_API_V1, "the Provisioner's delete removed it");
	/* Back with a Provisioner of that name: it waits while the NodePool
	 * exists and is used once the NodePool is deleted. */
	sim("POST", PROVISIONERS, PROVISIONER_NAMED("default"));
	sim("POST", PROVISIONERS, PROVISIONER_NAMED("marker-3"));
	RUN_UNTIL(nodepool_source("marker-3") >= 0, "marker-3 never arrived");
	cr_assert_eq(nodepool_source("default"), PROTO_API_V1);
	sim("DELETE", "/apis/karpenter.sh/v1/nodepools/default", NULL);
	RUN_UNTIL(nodepool_source("default") == PROTO_API_V1ALPHA5,
		  "the Provisioner was not used again after the NodePool went (%d)",
		  nodepool_source("default"));
	informer_free(nodepools);
	informer_free(legacy_informer);
}
