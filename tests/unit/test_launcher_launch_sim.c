/*
 * The launcher's step machine (admit.c, launch*.c, batch.c) against
 * kanna-sim in this process, over real HTTP: its AWS side for EC2, SSM and
 * IAM, its Kubernetes API server for NodeClaims, Nodes and bindings, and
 * the watcher's own informers and publisher for the cluster state the
 * launcher reads. This file stands in for daemon.c only: launcher_store()
 * is the publisher's store, and the results and unavailable offerings the
 * launcher would publish to the schedulers are recorded for the asserts.
 *
 * Covered: plan → NodeClaim (before EC2, whose ClientToken carries its UID)
 * → EC2NodeClass → CreateFleet → DescribeInstances → recorded → Node → pod
 * bound; identical NodeClaims in one batched CreateFleet; insufficient
 * capacity (next candidate type, a fleet answer with errors beside its
 * instance, spot falling back to on-demand, none left); EC2 throttling; a
 * lost CreateFleet answer retried under the same token; a NodeClaim deleted
 * while its CreateFleet is in flight; NodePool limits.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"
#include "common/clock.h"
#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/kubeconfig.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "common/sock.h"
#include "launcher/catalog.h"
#include "launcher/launcher.h"
#include "launcher/nodeclass.h"
#include "sim/aws.h"
#include "sim/k8s-server.h"
#include "state/state-store.h"
#include "watcher/informer.h"
#include "watcher/publish.h"

#define TEST_AKID "AKIALAUNCHSIM0000001"
#define TEST_SECRET "launchSimSecretKey0000000000000000000000"
#define CLUSTER "demo"
#define REGION "us-west-2"
/* Every wait polls the loop in steps this long, up to this deadline. */
#define POLL_USEC 5000ULL
#define DEADLINE_USEC (8ULL * 1000 * 1000)
/* Tries of one AWS call by the client before the launcher hears of a failure. */
#define AWS_ATTEMPTS 4
/* Teardown: no HTTP transfer for this long means none is coming. */
#define DRAIN_QUIET_USEC (50ULL * 1000)

static struct sim_aws *sim;
static struct k8s_registry *reg;
static struct k8s_store *kstore;
static struct k8s_api api;
static struct k8s_server *server;
static struct loop *loop;
static struct sock_ctx *socks;
static struct kube_client *kube;
static struct kube_events *events;
static struct publisher *pub;
static struct informer_metrics informer_metrics;
static struct informer *informers[5];
static struct metrics_registry *metrics;
static struct aws_client *aws;
static struct launcher_config cfg;
static struct daemon d;
static struct launcher l;
static char dir[64];

/* ---- what daemon.c would publish, recorded --------------------------------------- */

struct result {
	char nodeclaim[64];
	enum proto_launch_outcome outcome;
	char error[512];
	char instance_type[64];
	char node_name[256];
};

static struct result results[64];
static unsigned n_results;
static unsigned n_unavailable_published;

const struct state_store *launcher_store(const struct launcher *self)
{
	(void)self;
	return publisher_store(pub);
}

void launcher_publish_result(struct launcher *self, const struct launch *la,
			     enum proto_launch_outcome outcome, const char *error)
{
	struct result *r = &results[n_results++ % ARRAY_SIZE(results)];

	(void)self;
	*r = (struct result){ .outcome = outcome };
	snprintf(r->nodeclaim, sizeof(r->nodeclaim), "%s", la->name);
	snprintf(r->error, sizeof(r->error), "%s", error ?: "");
	snprintf(r->instance_type, sizeof(r->instance_type), "%s", la->launched.instance_type);
	snprintf(r->node_name, sizeof(r->node_name), "%s", la->node_name);
}

void launcher_publish_unavailable(struct launcher *self, const char *type, const char *zone,
				  uint8_t capacity_type, int64_t until_ms, const char *reason)
{
	(void)self, (void)type, (void)zone, (void)capacity_type, (void)until_ms, (void)reason;
	n_unavailable_published++;
}

/* The last result published for a NodeClaim with that outcome, or NULL. */
static const struct result *result_of(const char *nodeclaim, enum proto_launch_outcome outcome)
{
	for (unsigned i = n_results; i-- > 0;)
		if (streq(results[i].nodeclaim, nodeclaim) && results[i].outcome == outcome)
			return &results[i];
	return NULL;
}

static unsigned results_with(const char *nodeclaim, enum proto_launch_outcome outcome)
{
	unsigned n = 0;

	for (unsigned i = 0; i < n_results; i++)
		n += streq(results[i].nodeclaim, nodeclaim) && results[i].outcome == outcome;
	return n;
}

/* ---- the loop ------------------------------------------------------------------------ */

#define RUN_UNTIL(cond, ...)                                                              \
	do {                                                                              \
		uint64_t until_ = clock_monotonic_usec() + DEADLINE_USEC;                 \
		while (!(cond) && clock_monotonic_usec() < until_)                        \
			cr_assert_geq(sd_event_run(loop_event(loop), POLL_USEC), 0);      \
		cr_assert(cond, __VA_ARGS__);                                             \
	} while (0)

/* ---- kanna-sim's Kubernetes side -------------------------------------------------------- */

static const char *query_arg(void *cls, const char *name)
{
	const char *q = cls ? strchr(cls, '?') : NULL;
	size_t n = strlen(name);

	return q && strncmp(q + 1, name, n) == 0 && q[1 + n] == '=' ? q + 2 + n : NULL;
}

/* A request to the sim's API in-process; the answer's body (NULL when none). */
static json_t *k8s(const char *method, const char *uri, const char *body, int *status)
{
	char path[256];
	struct k8s_request req = {
		.method = method, .path = path, .body = body, .body_len = body ? strlen(body) : 0,
		.content_type = streq(method, "PATCH") ? "application/merge-patch+json" : "application/json",
		.arg = query_arg, .arg_cls = (void *)uri,
	};
	struct k8s_response resp;
	json_t *j;

	snprintf(path, sizeof(path), "%.*s", (int)strcspn(uri, "?"), uri);
	cr_assert_eq(k8s_api_handle(&api, &req, &resp), 0);
	*status = resp.status;
	j = resp.body ? json_loadb(resp.body, resp.len, 0, NULL) : NULL;
	k8s_response_clear(&resp);
	return j;
}

static void k8s_ok(const char *method, const char *uri, const char *body)
{
	int status;
	json_t *j = k8s(method, uri, body, &status);

	cr_assert(status / 100 == 2, "%s %s: %d", method, uri, status);
	json_decref(j);
}

/* The object at uri in the sim (NULL when absent); the caller decrefs. */
static json_t *k8s_get(const char *uri)
{
	int status;
	json_t *j = k8s("GET", uri, NULL, &status);

	if (status == 404) {
		json_decref(j);
		return NULL;
	}
	cr_assert_eq(status, 200, "GET %s: %d", uri, status);
	return j;
}

static bool claim_exists(const char *name)
{
	char uri[256];
	json_t *j;

	snprintf(uri, sizeof(uri), NODECLAIMS_PATH "/%s", name);
	j = k8s_get(uri);
	json_decref(j);
	return j != NULL;
}

/* spec.nodeName of default/<pod>: "" while unbound. */
static const char *pod_node(const char *pod, char *buf, size_t size)
{
	char uri[256];
	json_t *j;

	snprintf(uri, sizeof(uri), "/api/v1/namespaces/default/pods/%s", pod);
	j = k8s_get(uri);
	cr_assert_not_null(j, "pod %s is gone", pod);
	snprintf(buf, size, "%s", json_string_value(json_object_get(json_object_get(j, "spec"), "nodeName")) ?: "");
	json_decref(j);
	return buf;
}

static unsigned count_items(const char *uri)
{
	json_t *j = k8s_get(uri);
	unsigned n = (unsigned)json_array_size(json_object_get(j, "items"));

	json_decref(j);
	return n;
}

/* ---- kanna-sim's AWS side --------------------------------------------------------------- */

struct seen {
	unsigned active; /* pending or running */
	unsigned all;
	char type[32], zone[32], capacity_type[16], id[32], nodeclaim[64], batch[80], image[32];
};

static int see_instance(const struct sim_aws_instance_info *info, void *userdata)
{
	struct seen *s = userdata;

	s->all++;
	if (!streq(info->state, "pending") && !streq(info->state, "running"))
		return 0;
	s->active++;
	snprintf(s->type, sizeof(s->type), "%s", info->instance_type);
	snprintf(s->zone, sizeof(s->zone), "%s", info->zone);
	snprintf(s->capacity_type, sizeof(s->capacity_type), "%s", info->capacity_type);
	snprintf(s->id, sizeof(s->id), "%s", info->id);
	snprintf(s->image, sizeof(s->image), "%s", info->image_id);
	for (size_t i = 0; i < info->n_tags; i++) {
		if (streq(info->tags[i].key, "karpenter.sh/nodeclaim"))
			snprintf(s->nodeclaim, sizeof(s->nodeclaim), "%s", info->tags[i].value);
		if (streq(info->tags[i].key, "kanna.dev/fleet-batch"))
			snprintf(s->batch, sizeof(s->batch), "%s", info->tags[i].value);
	}
	return 0;
}

/* The sim's instances; the fields describe the last active one. */
static struct seen instances(void)
{
	struct seen s = { 0 };

	sim_aws_foreach_instance(sim, see_instance, &s);
	return s;
}

static int count_tagged(const struct sim_aws_instance_info *info, void *userdata)
{
	const char *nodeclaim = ((const char **)userdata)[0];
	unsigned *n = (unsigned *)((const char **)userdata)[1];

	for (size_t i = 0; i < info->n_tags; i++)
		if (streq(info->tags[i].key, "karpenter.sh/nodeclaim") && streq(info->tags[i].value, nodeclaim))
			(*n)++;
	return 0;
}

static unsigned instances_tagged(const char *nodeclaim)
{
	unsigned n = 0;
	const void *args[2] = { nodeclaim, &n };

	sim_aws_foreach_instance(sim, count_tagged, args);
	return n;
}

static void faults(const char *json)
{
	char err[256];

	cr_assert_eq(sim_aws_set_faults(sim, json, err, sizeof(err)), 0, "%s", err);
}

static size_t on_curl_body(char *data, size_t size, size_t nmemb, void *userdata)
{
	FILE *f = userdata;

	return fwrite(data, size, nmemb, f);
}

/* GET /_sim/status of the AWS side. */
static json_t *aws_status(void)
{
	char url[96], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CURL *c = curl_easy_init();
	json_t *j;

	cr_assert(f && c);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/_sim/status", (unsigned)sim_aws_port(sim));
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_curl_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	cr_assert_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_cleanup(c);
	fclose(f);
	j = json_loadb(text, len, 0, NULL);
	free(text);
	cr_assert_not_null(j);
	return j;
}

/* Timeline entries of the AWS side of that kind whose detail starts so. */
static unsigned timeline_count(const char *event, const char *detail_prefix)
{
	json_t *st = aws_status(), *e;
	unsigned n = 0;
	size_t i;

	json_array_foreach(json_object_get(st, "timeline"), i, e) {
		const char *detail = json_string_value(json_object_get(e, "detail")) ?: "";

		n += streq_ptr(json_string_value(json_object_get(e, "event")), event) &&
		     strncmp(detail, detail_prefix, strlen(detail_prefix)) == 0;
	}
	json_decref(st);
	return n;
}

/* A plain EC2 call on the launcher's client. */
struct plain {
	bool done;
	int result;
	char code[AWS_ERROR_CODE_MAX];
	char message[512];
};

static void on_plain(struct aws_client *c, const struct aws_response *r, void *userdata)
{
	struct plain *p = userdata;

	(void)c;
	p->result = r->result;
	snprintf(p->code, sizeof(p->code), "%s", r->error.code);
	snprintf(p->message, sizeof(p->message), "%s", aws_response_strerror(r));
	p->done = true;
}

/* ---- the metrics ----------------------------------------------------------------------- */

/* The text exposition has a line starting with line. */
static bool metric_has(const char *line)
{
	char *text = NULL, *at;
	size_t len;
	bool found = false;

	cr_assert_eq(metrics_registry_render(metrics, &text, &len), 0);
	for (at = text; at && !found; at = strchr(at, '\n'), at = at ? at + 1 : NULL)
		found = strncmp(at, line, strlen(line)) == 0;
	free(text);
	return found;
}

static void register_metrics(void)
{
	cr_assert_eq(metrics_counter_new(metrics, &l.m.nodeclaims_created, "karpenter_nodeclaims_created_total",
					 "NodeClaims created.", "nodepool", NULL), 0);
	cr_assert_eq(metrics_counter_new(metrics, &l.m.nodes_created, "karpenter_nodes_created_total",
					 "Nodes created.", "nodepool", NULL), 0);
	cr_assert_eq(metrics_counter_new(metrics, &l.m.launched, "kanna_launcher_instances_launched_total",
					 "Instances launched.", "nodepool", "capacity_type", NULL), 0);
	cr_assert_eq(metrics_counter_new(metrics, &l.m.launch_failures, "kanna_launcher_launch_failures_total",
					 "NodeClaims given up.", "nodepool", "outcome", NULL), 0);
	cr_assert_eq(metrics_counter_new(metrics, &l.m.pods_bound, "kanna_launcher_pods_bound_total",
					 "Pods bound.", "nodepool", NULL), 0);
	cr_assert_eq(metrics_counter_new(metrics, &l.m.offerings_unavailable,
					 "kanna_launcher_offerings_unavailable_total", "Offerings marked.",
					 "instance_type", "zone", "capacity_type", NULL), 0);
}

/* ---- set-up ------------------------------------------------------------------------------ */

#define NODECLASS                                                                                  \
	"{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":" \
	"\"default\"},\"spec\":{\"amiSelectorTerms\":[{\"alias\":\"al2023@latest\"}],\"role\":"     \
	"\"KarpenterNodeRole-demo\",\"subnetSelectorTerms\":[{\"tags\":{\"karpenter.sh/discovery\":" \
	"\"demo\"}}],\"securityGroupSelectorTerms\":[{\"tags\":{\"karpenter.sh/discovery\":"         \
	"\"demo\"}}]}}"
/* limits.cpu 6: one m5.xlarge (4) and one m5.large (2). */
#define NODEPOOL                                                                                   \
	"{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":"         \
	"\"default\"},\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":"               \
	"\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":"   \
	"[{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"spot\","        \
	"\"on-demand\"]}]}},\"limits\":{\"cpu\":\"6\"}}}"
#define POD(name)                                                                                  \
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\",\"namespace\":" \
	"\"default\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"pause\",\"resources\":"  \
	"{\"requests\":{\"cpu\":\"500m\",\"memory\":\"256Mi\"}}}]}}"

static void start_sim(void)
{
	struct sim_aws_config acfg;
	struct k8s_server_config kcfg = { .port = 0 };
	char url[64];

	sim_aws_config_init(&acfg);
	acfg.access_key_id = TEST_AKID;
	acfg.secret_access_key = TEST_SECRET;
	acfg.catalog_path = KANNA_SRCDIR "/data/instance-types.tsv";
	acfg.cluster_name = CLUSTER;
	cr_assert_geq(sim_aws_new(&sim, &acfg), 0);
	cr_assert_geq(sim_aws_start(sim, 0), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)sim_aws_port(sim));
	setenv("AWS_ENDPOINT_URL", url, 1);

	reg = k8s_registry_new();
	cr_assert_not_null(reg);
	cr_assert_eq(k8s_registry_load_crds(reg, KANNA_SRCDIR "/data/crds"), 0);
	cr_assert_eq(k8s_store_new(reg, 0, &kstore), 0);
	cr_assert_eq(k8s_store_seed(kstore), 0);
	k8s_api_init(&api, reg, kstore);
	cr_assert_eq(k8s_server_start(&api, &kcfg, &server), 0);
}

/* The watcher's half: informers into a publisher, whose store the launcher reads. */
static void start_state(void)
{
	static const char *const watched[][2] = {
		{ "pods", "v1" }, { "nodes", "v1" }, { "nodepools", "v1" },
		{ "nodeclaims", "v1" }, { "ec2nodeclasses", "v1" },
	};
	struct informer_env env = { .client = kube, .metrics = &informer_metrics };

	cr_assert_eq(publisher_new(&pub, socks, loop, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC), 0);
	cr_assert_eq(publisher_set_complete(pub), 0);
	env.pub = pub;
	for (size_t i = 0; i < ARRAY_SIZE(watched); i++) {
		const struct informer_def *def = NULL;

		for (size_t k = 0; k < informer_n_defs; k++)
			if (streq(informer_defs[k].resource, watched[i][0]))
				def = &informer_defs[k];
		cr_assert_not_null(def);
		cr_assert_eq(informer_new(&informers[i], def, &env), 0);
		cr_assert_eq(informer_set_version(informers[i], watched[i][1]), 0);
	}
}

static bool informers_synced(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(informers); i++)
		if (!informer_synced(informers[i]))
			return false;
	return true;
}

static const struct state_entry *in_state(enum proto_object_kind kind, const char *ns, const char *name)
{
	return state_store_get(publisher_store(pub), kind, ns, name);
}

static void setup(void)
{
	struct kube_config *kc = calloc(1, sizeof(*kc));
	struct aws_credentials creds = { .access_key_id = TEST_AKID, .secret_access_key = TEST_SECRET,
					 .source = "test" };
	/* Quick retries: a throttled call is tried again within milliseconds. */
	struct aws_client_options ao = { .region = REGION, .rate = -1,
					 .retry = { .max_attempts = AWS_ATTEMPTS, .base_usec = 10000,
						    .cap_usec = 40000 } };
	struct launcher_catalog_options co = { .region = REGION,
					       .shipped_path = KANNA_SRCDIR "/data/instance-types.tsv",
					       .vm_memory_overhead_percent = 0.075 };
	struct nodeclass_resolver_options no = { .cluster_name = CLUSTER,
						 .cluster_endpoint = "https://127.0.0.1:6443",
						 .cluster_ca = "Q0E=", .kubernetes_version = "1.32" };
	char url[64];

	n_results = n_unavailable_published = 0;
	start_sim();
	strcpy(dir, "/tmp/kanna-launch-sim-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(loop_new(&loop, "test-launch-sim"), 0);
	cr_assert_eq(sock_ctx_new(&socks, loop, "watcher", dir), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", k8s_server_port(server));
	kc->server = strdup(url);
	kc->namespace = strdup("default");
	kc->context = strdup("test");
	/* No client-side rate limit: nothing waits unsent at teardown. */
	cr_assert_eq(kube_client_new(&kube, loop, kc, &(struct kube_client_options){ .qps = 1000, .burst = 1000,
				     .allow_insecure_http = true }),
		     0);
	cr_assert_eq(kube_events_new(&events, kube, "karpenter", NULL), 0);
	cr_assert_eq(metrics_registry_new(&metrics), 0);
	start_state();

	cfg = (struct launcher_config){
		.cluster_name = CLUSTER, .bind_pods = true, .max_concurrent_launches = 100,
		.unavailable_ttl_usec = 180ULL * 1000 * 1000, .launch_timeout_usec = 60ULL * 1000 * 1000,
		.reconcile_period_usec = 10ULL * 1000 * 1000,
	};
	d = (struct daemon){ .loop = loop, .metrics = metrics, .kube = kube, .events = events };
	l = (struct launcher){ .cfg = &cfg, .kcfg = kube_client_config(kube), .d = &d,
			       .aws_ok = true, .working = true };
	l.region = strdup(REGION);
	state_store_init(&l.recent);
	register_metrics();
	cr_assert_eq(aws_client_new(loop, &ao, &creds, &aws), 0);
	l.aws = aws;
	cr_assert_eq(launcher_catalog_new(loop, aws, metrics, &co, &l.catalog), 0);
	cr_assert_eq(nodeclass_resolver_new(loop, aws, kube, events, metrics, &no, &l.resolver), 0);

	k8s_ok("POST", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses", NODECLASS);
	k8s_ok("POST", "/apis/karpenter.sh/v1/nodepools", NODEPOOL);
	k8s_ok("POST", "/api/v1/namespaces/default/pods", POD("p1"));
	k8s_ok("POST", "/api/v1/namespaces/default/pods", POD("p2"));
	RUN_UNTIL(informers_synced() && in_state(PROTO_OBJECT_NODEPOOL, "", "default") &&
			  in_state(PROTO_OBJECT_NODECLASS, "", "default") &&
			  in_state(PROTO_OBJECT_POD, "default", "p1") && in_state(PROTO_OBJECT_POD, "default", "p2"),
		  "the cluster state never arrived");
}

static void free_launches(void)
{
	const char *key;
	void *value;
	size_t it = 0;

	while (hashmap_next(&l.launches, &it, &key, &value))
		launch_free(value);
	hashmap_done(&l.launches);
}

static void free_strings(struct hashmap *m)
{
	const char *key;
	void *value;
	size_t it = 0;

	while (hashmap_next(m, &it, &key, &value))
		free(value);
	hashmap_done(m);
}

static void teardown(void)
{
	char cmd[128];

	uint64_t now = clock_monotonic_usec(), until = now + 1000000, idle_since = now;

	for (size_t i = 0; i < ARRAY_SIZE(informers); i++)
		informers[i] = informer_free(informers[i]);
	/* Requests still on their way (the last PATCH of a launch, a CreateTags)
	 * are let finish, so that what their callbacks own is freed. A request
	 * starts from a timer, not at once: wait for a quiet spell. */
	while ((now = clock_monotonic_usec()) < until && now - idle_since < DRAIN_QUIET_USEC) {
		(void)sd_event_run(loop_event(loop), POLL_USEC);
		if (loop_http_running(loop) > 0)
			idle_since = clock_monotonic_usec();
	}
	batcher_done(&l);
	nodeclass_resolver_free(l.resolver);
	launcher_catalog_free(l.catalog);
	aws_client_free(aws);
	kube_events_free(events);
	kube_client_free(kube);
	free_launches();
	free_strings(&l.registering);
	free_strings(&l.releasing);
	state_store_done(&l.recent);
	unavailable_done(&l.unavailable);
	free(l.region);
	publisher_free(pub);
	sock_ctx_free(socks);
	metrics_registry_free(metrics);
	loop_free(loop);
	k8s_server_free(server);
	k8s_api_done(&api);
	k8s_store_free(kstore);
	k8s_registry_free(reg);
	sim = sim_aws_free(sim);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

TestSuite(launcher_launch_sim, .init = setup, .fini = teardown, .timeout = 30);

/* ---- plans ---------------------------------------------------------------------------------- */

#define ZONES 3
static const char *const zones[ZONES] = { "us-west-2a", "us-west-2b", "us-west-2c" };

struct plan_claim {
	struct proto_planned_nodeclaim p;
	struct proto_candidate cand[4];
	struct proto_offering off[4][2 * ZONES];
	struct proto_requirement req[2];
	char *ct_values[2];
	char *nodepool_values[1];
	struct proto_resource requests[2];
	char *pods[2];
};

/*
 * A planned NodeClaim for the given pods, its candidate types cheapest
 * first, each offered in every zone in the capacity types named
 * ("on-demand", or "spot,on-demand").
 */
static void plan_claim(struct plan_claim *c, const char *name, const char *capacity_types,
		       const char *const *types, unsigned n_types, const char *const *pods, unsigned n_pods)
{
	bool spot = strstr(capacity_types, "spot") != NULL;

	*c = (struct plan_claim){ 0 };
	c->ct_values[0] = "on-demand";
	c->ct_values[1] = "spot";
	c->req[0] = (struct proto_requirement){ .key = "karpenter.sh/capacity-type", .op = PROTO_OP_IN,
						.values = c->ct_values, .n_values = spot ? 2 : 1 };
	/* The scheduler's planned requirements hold the NodePool's: the
	 * launcher refuses a claim whose requirements are not within them. */
	c->nodepool_values[0] = "default";
	c->req[1] = (struct proto_requirement){ .key = "karpenter.sh/nodepool", .op = PROTO_OP_IN,
						.values = c->nodepool_values, .n_values = 1 };
	c->requests[0] = (struct proto_resource){ "cpu", 500 * (int64_t)n_pods };
	c->requests[1] = (struct proto_resource){ "memory", (256LL << 20) * n_pods };
	for (unsigned t = 0; t < n_types; t++) {
		unsigned k = 0;

		for (unsigned z = 0; z < ZONES; z++) {
			c->off[t][k++] = (struct proto_offering){ .zone = (char *)zones[z],
								  .capacity_type = PROTO_CAPACITY_ON_DEMAND,
								  .price = 0.1 * (t + 1), .available = true };
			if (spot)
				c->off[t][k++] = (struct proto_offering){ .zone = (char *)zones[z],
									  .capacity_type = PROTO_CAPACITY_SPOT,
									  .price = 0.03 * (t + 1), .available = true };
		}
		c->cand[t] = (struct proto_candidate){ .name = (char *)types[t], .offerings = c->off[t],
						       .n_offerings = k };
	}
	for (unsigned i = 0; i < n_pods; i++)
		c->pods[i] = (char *)pods[i];
	c->p = (struct proto_planned_nodeclaim){
		.id = (char *)name, .nodepool = "default", .requirements = c->req, .n_requirements = 2,
		.instance_types = c->cand, .n_instance_types = n_types, .requests = c->requests,
		.n_requests = 2, .pods = c->pods, .n_pods = n_pods,
	};
}

static void send_plan(const char *plan_id, struct plan_claim *claims, unsigned n)
{
	struct proto_planned_nodeclaim p[4];
	struct proto_launch_plan plan = { .plan_id = (char *)plan_id, .nodeclaims = p, .n_nodeclaims = n };

	for (unsigned i = 0; i < n; i++)
		p[i] = claims[i].p;
	launcher_handle_plan(&l, &plan);
}

/* One NodeClaim for pod p1 with these candidates. */
static void plan_one(const char *name, const char *capacity_types, const char *const *types,
		     unsigned n_types)
{
	struct plan_claim c;

	plan_claim(&c, name, capacity_types, types, n_types, (const char *const[]){ "default/p1" }, 1);
	send_plan("plan-1", &c, 1);
}

static struct launch *launch_of(const char *name)
{
	return hashmap_get(&l.launches, name);
}

static bool launch_done(const char *name)
{
	struct launch *la = launch_of(name);

	return !la || la->step == STEP_DONE;
}

static bool unavailable(const char *type, const char *zone, uint8_t ct)
{
	return launcher_offering_unavailable(&l, type, zone, ct);
}

/* ---- the happy path ------------------------------------------------------------------------- */

/* Karpenter's launch templates are per AMI: a NodeClaim whose candidates
 * are a GPU type and a plain one launches with two templates in one
 * CreateFleet, the GPU type's with the AL2023 nvidia image (a different
 * one), and the instance boots its own type's image. */
Test(launcher_launch_sim, gpu_and_plain_candidates_get_a_launch_template_per_ami_variant)
{
	const char *name = "default-gpu";
	struct launch *la;
	const char *gpu_image = NULL, *plain_image = NULL;

	plan_one(name, "on-demand", (const char *const[]){ "g5.xlarge", "m5.large" }, 2);
	RUN_UNTIL(launch_done(name), "the launch never finished");
	la = launch_of(name);
	cr_assert_not_null(la);
	cr_assert_eq(la->n_arches, 2, "one launch group per variant");
	for (unsigned i = 0; i < la->n_arches; i++) {
		cr_assert_eq(la->arches[i].error, 0, "%s: %s", la->arches[i].arch, la->arches[i].why ?: "");
		if (streq(la->arches[i].arch, "amd64/nvidia"))
			gpu_image = la->arches[i].cfg.image_id;
		else if (streq(la->arches[i].arch, "amd64"))
			plain_image = la->arches[i].cfg.image_id;
	}
	cr_assert_not_null(gpu_image);
	cr_assert_not_null(plain_image);
	cr_assert_str_neq(gpu_image, plain_image);
	cr_assert_str_neq(la->arches[0].cfg.launch_template_name, la->arches[1].cfg.launch_template_name);
	/* EC2 Fleet's lowest-price picks m5.large; it boots the standard image */
	cr_assert_str_eq(instances().type, "m5.large");
	cr_assert_str_eq(instances().image, plain_image);
}

/* Polled while the launch runs: an instance never exists before its NodeClaim. */
static bool instance_before_claim;

static bool watch_order(const char *name)
{
	if (instances().all > 0 && !claim_exists(name))
		instance_before_claim = true;
	return launch_done(name);
}

Test(launcher_launch_sim, a_planned_nodeclaim_is_created_launched_recorded_given_a_node_and_its_pod_bound)
{
	const char *name = "default-happy";
	struct seen s;
	const struct result *bound;
	struct plain probe = { 0 };
	struct aws_query *q = NULL;
	char node[256], token[FLEET_CLIENT_TOKEN_MAX + 1], uri[512];
	json_t *claim, *status;
	const char *uid;

	instance_before_claim = false;
	plan_one(name, "on-demand", (const char *const[]){ "m5.large", "m5.xlarge" }, 2);
	RUN_UNTIL(watch_order(name), "the launch never finished");
	cr_assert_not(instance_before_claim, "CreateFleet was called before the NodeClaim existed");

	/* One instance, the cheapest candidate, tagged for its NodeClaim. */
	s = instances();
	cr_assert_eq(s.all, 1);
	cr_assert_eq(s.active, 1);
	cr_assert_str_eq(s.type, "m5.large");
	cr_assert_str_eq(s.capacity_type, "on-demand");
	cr_assert_str_eq(s.nodeclaim, name);

	/* The NodeClaim records it. */
	snprintf(uri, sizeof(uri), NODECLAIMS_PATH "/%s", name);
	claim = k8s_get(uri);
	cr_assert_not_null(claim);
	status = json_object_get(claim, "status");
	cr_assert(strstr(json_string_value(json_object_get(status, "providerID")) ?: "", s.id),
		  "providerID does not name %s", s.id);
	cr_assert_str_eq(json_string_value(json_object_get(status, "nodeName")) ?: "", launch_of(name)->node_name);
	uid = json_string_value(json_object_get(json_object_get(claim, "metadata"), "uid"));
	cr_assert_not_null(uid);

	/* Its ClientToken was made from the NodeClaim's UID: the sim knows the
	 * token and refuses it with other parameters. */
	cr_assert_eq(fleet_client_token(uid, 0, token, sizeof(token)), 0);
	json_decref(claim);
	cr_assert_eq(aws_query_new("CreateFleet", "2016-11-15", &q), 0);
	cr_assert_eq(aws_query_add(q, token, "ClientToken"), 0);
	cr_assert_eq(aws_query_add(q, "instant", "Type"), 0);
	cr_assert_eq(aws_call_query(aws, "ec2", q, on_plain, &probe), 0);
	RUN_UNTIL(probe.done, "no answer to the probe");
	cr_assert_str_eq(probe.code, "IdempotentParameterMismatch", "%s", probe.message);

	/* The Node exists, the pod is bound to it, and the results said so. */
	snprintf(uri, sizeof(uri), "/api/v1/nodes/%s", launch_of(name)->node_name);
	claim = k8s_get(uri);
	cr_assert_not_null(claim, "no Node %s", launch_of(name)->node_name);
	json_decref(claim);
	cr_assert_str_eq(pod_node("p1", node, sizeof(node)), launch_of(name)->node_name);
	cr_assert_str_eq(pod_node("p2", node, sizeof(node)), "", "an unplanned pod was bound");
	cr_assert_eq(results_with(name, PROTO_LAUNCH_LAUNCHED), 1);
	bound = result_of(name, PROTO_LAUNCH_BOUND);
	cr_assert_not_null(bound);
	cr_assert_str_eq(bound->instance_type, "m5.large");
	cr_assert(metric_has("karpenter_nodeclaims_created_total{nodepool=\"default\"} 1"));
	cr_assert(metric_has("karpenter_nodes_created_total{nodepool=\"default\"} 1"));
	cr_assert(metric_has("kanna_launcher_pods_bound_total{nodepool=\"default\"} 1"));
}

Test(launcher_launch_sim, identical_nodeclaims_of_a_plan_share_one_batched_createfleet)
{
	struct plan_claim c[2];
	struct seen s;
	char node[256], batch[2][128];
	json_t *claim;

	plan_claim(&c[0], "default-b1", "on-demand", (const char *const[]){ "m5.large" }, 1,
		   (const char *const[]){ "default/p1" }, 1);
	plan_claim(&c[1], "default-b2", "on-demand", (const char *const[]){ "m5.large" }, 1,
		   (const char *const[]){ "default/p2" }, 1);
	send_plan("plan-batch", c, 2);
	RUN_UNTIL(launch_done("default-b1") && launch_done("default-b2"), "the launches never finished");
	RUN_UNTIL(instances_tagged("default-b1") == 1 && instances_tagged("default-b2") == 1,
		  "the batch's instances never got their NodeClaims' tags");

	s = instances();
	cr_assert_eq(s.all, 2);
	cr_assert(strncmp(s.batch, "kanna-batch-", 12) == 0, "not launched in a batch: '%s'", s.batch);
	for (int i = 0; i < 2; i++) {
		char uri[256];

		snprintf(uri, sizeof(uri), NODECLAIMS_PATH "/default-b%d", i + 1);
		claim = k8s_get(uri);
		cr_assert_not_null(claim);
		snprintf(batch[i], sizeof(batch[i]), "%s",
			 json_string_value(json_object_get(json_object_get(json_object_get(claim, "metadata"),
									     "annotations"),
							   "kanna.dev/fleet-batch")) ?: "");
		json_decref(claim);
	}
	cr_assert_str_eq(batch[0], s.batch, "the batch token was not recorded on the NodeClaim first");
	cr_assert_str_eq(batch[1], s.batch);
	cr_assert_str_neq(launch_of("default-b1")->node_name, launch_of("default-b2")->node_name);
	cr_assert_str_eq(pod_node("p1", node, sizeof(node)), launch_of("default-b1")->node_name);
	cr_assert_str_eq(pod_node("p2", node, sizeof(node)), launch_of("default-b2")->node_name);
}

/* ---- insufficient capacity ------------------------------------------------------------------ */

Test(launcher_launch_sim, an_insufficient_capacity_type_is_marked_unavailable_and_the_next_candidate_launched)
{
	const char *name = "default-ice";
	char node[256];
	struct seen s;

	faults("{\"insufficientCapacity\": [{\"instanceType\": \"m5.large\"}]}");
	plan_one(name, "on-demand", (const char *const[]){ "m5.large", "m5.xlarge" }, 2);
	RUN_UNTIL(launch_done(name), "the launch never finished");

	s = instances();
	cr_assert_eq(s.all, 1);
	cr_assert_str_eq(s.type, "m5.xlarge");
	for (unsigned z = 0; z < ZONES; z++) {
		char line[256];

		cr_assert(unavailable("m5.large", zones[z], PROTO_CAPACITY_ON_DEMAND), "%s", zones[z]);
		cr_assert_not(unavailable("m5.xlarge", zones[z], PROTO_CAPACITY_ON_DEMAND), "%s", zones[z]);
		snprintf(line, sizeof(line),
			 "kanna_launcher_offerings_unavailable_total{instance_type=\"m5.large\",zone=\"%s\","
			 "capacity_type=\"on-demand\"} 1", zones[z]);
		cr_assert(metric_has(line), "%s", line);
	}
	cr_assert_eq(n_unavailable_published, ZONES, "the schedulers were not told");
	cr_assert_str_eq(pod_node("p1", node, sizeof(node)), launch_of(name)->node_name);
	cr_assert_str_eq(result_of(name, PROTO_LAUNCH_BOUND)->instance_type, "m5.xlarge");
}

Test(launcher_launch_sim, a_fleet_answer_with_errors_beside_its_instance_marks_only_the_failed_offerings)
{
	const char *name = "default-partial";
	struct seen s;

	faults("{\"insufficientCapacity\": [{\"instanceType\": \"m5.large\", \"zone\": \"us-west-2a\"},"
	       " {\"instanceType\": \"m5.large\", \"zone\": \"us-west-2b\","
	       "  \"errorCode\": \"UnfulfillableCapacity\"}]}");
	plan_one(name, "on-demand", (const char *const[]){ "m5.large" }, 1);
	RUN_UNTIL(launch_done(name), "the launch never finished");

	s = instances();
	cr_assert_eq(s.all, 1);
	cr_assert_str_eq(s.type, "m5.large");
	cr_assert_str_eq(s.zone, "us-west-2c");
	cr_assert(unavailable("m5.large", "us-west-2a", PROTO_CAPACITY_ON_DEMAND));
	cr_assert(unavailable("m5.large", "us-west-2b", PROTO_CAPACITY_ON_DEMAND));
	cr_assert_not(unavailable("m5.large", "us-west-2c", PROTO_CAPACITY_ON_DEMAND));
	cr_assert_eq(launch_of(name)->attempt, 0, "the instance launched was taken, not asked for again");
	cr_assert_eq(results_with(name, PROTO_LAUNCH_BOUND), 1);
}

Test(launcher_launch_sim, spot_without_capacity_anywhere_is_retried_as_on_demand_under_a_new_token)
{
	const char *name = "default-spot";
	struct seen s;

	faults("{\"insufficientCapacity\": [{\"capacityType\": \"spot\"}]}");
	plan_one(name, "spot,on-demand", (const char *const[]){ "m5.large", "m5.xlarge" }, 2);
	RUN_UNTIL(launch_done(name), "the launch never finished");

	s = instances();
	cr_assert_eq(s.all, 1);
	cr_assert_str_eq(s.capacity_type, "on-demand");
	cr_assert_str_eq(s.type, "m5.large");
	cr_assert_eq(launch_of(name)->attempt, 1, "a second CreateFleet must not reuse the first's token");
	cr_assert(unavailable("m5.xlarge", "us-west-2c", PROTO_CAPACITY_SPOT));
	cr_assert(metric_has("kanna_launcher_instances_launched_total{nodepool=\"default\","
			     "capacity_type=\"on-demand\"} 1"));
	cr_assert_eq(results_with(name, PROTO_LAUNCH_BOUND), 1);
}

Test(launcher_launch_sim, no_capacity_in_any_offering_gives_the_nodeclaim_up_and_hands_its_pods_back)
{
	const char *name = "default-none";
	const struct result *r;
	char node[256];

	faults("{\"insufficientCapacity\": [{}]}");
	plan_one(name, "on-demand", (const char *const[]){ "m5.large", "m5.xlarge" }, 2);
	RUN_UNTIL(!launch_of(name), "the launch was never given up");
	RUN_UNTIL(!claim_exists(name), "the NodeClaim was left behind");

	cr_assert_eq(instances().all, 0);
	r = result_of(name, PROTO_LAUNCH_INSUFFICIENT_CAPACITY);
	cr_assert_not_null(r, "the pods were not handed back");
	cr_assert(strstr(r->error, "insufficient capacity in every offering"), "%s", r->error);
	cr_assert_eq(results_with(name, PROTO_LAUNCH_LAUNCHED), 0);
	cr_assert(unavailable("m5.xlarge", "us-west-2b", PROTO_CAPACITY_ON_DEMAND));
	cr_assert_str_eq(pod_node("p1", node, sizeof(node)), "");
	cr_assert(metric_has("kanna_launcher_launch_failures_total{nodepool=\"default\","
			     "outcome=\"insufficient_capacity\"} 1"));
}

/* ---- EC2 faults ----------------------------------------------------------------------------- */

static bool at_fleet(const char *name)
{
	struct launch *la = launch_of(name);

	return la && la->step >= STEP_FLEET;
}

static bool retry_pending(const char *name)
{
	struct launch *la = launch_of(name);

	return la && la->timer && la->failures > 0;
}

/* Throttled past the client's own retries: the launcher tries again later,
 * launching nothing meanwhile and only once in the end. */
Test(launcher_launch_sim, a_throttled_createfleet_is_retried_later_and_launches_once)
{
	const char *name = "default-throttled";
	char node[256];

	plan_one(name, "on-demand", (const char *const[]){ "m5.large" }, 1);
	RUN_UNTIL(at_fleet(name), "the launch never reached CreateFleet");
	faults("{\"throttleRate\": 1}");
	RUN_UNTIL(retry_pending(name), "the throttled CreateFleet was not retried later");
	cr_assert_eq(timeline_count("throttle", "CreateFleet"), AWS_ATTEMPTS,
		     "the client did not retry the throttled call itself first");
	cr_assert_eq(instances().all, 0);
	cr_assert_null(result_of(name, PROTO_LAUNCH_FAILED), "throttling is not a failure");
	faults("{}");
	RUN_UNTIL(launch_done(name), "the launch never finished");

	cr_assert_eq(instances().all, 1, "launched twice");
	cr_assert_str_eq(pod_node("p1", node, sizeof(node)), launch_of(name)->node_name);
	cr_assert_eq(results_with(name, PROTO_LAUNCH_LAUNCHED), 1);
}

/* EC2 carried the CreateFleet out but every answer was lost: the launcher
 * cannot know, so it must ask again with the same token (a new one would
 * launch a second instance). */
Test(launcher_launch_sim, a_lost_createfleet_answer_is_retried_under_the_same_token_and_launches_once)
{
	const char *name = "default-lost";
	char node[256];

	plan_one(name, "on-demand", (const char *const[]){ "m5.large" }, 1);
	RUN_UNTIL(at_fleet(name), "the launch never reached CreateFleet");
	faults("{\"lostAnswerRate\": 1}");
	RUN_UNTIL(retry_pending(name), "the lost answer was not retried later");
	cr_assert(launch_of(name)->fleet_in_doubt);
	cr_assert_eq(launch_of(name)->attempt, 0);
	cr_assert_eq(instances().all, 1, "the first CreateFleet was carried out");
	faults("{}");
	RUN_UNTIL(launch_done(name), "the launch never finished");

	cr_assert_eq(instances().all, 1, "launched twice");
	cr_assert_geq(timeline_count("create-fleet-replay", ""), 1, "no replay under the same token");
	cr_assert_str_eq(pod_node("p1", node, sizeof(node)), launch_of(name)->node_name);
	cr_assert_eq(results_with(name, PROTO_LAUNCH_BOUND), 1);
}

/* ---- a NodeClaim deleted mid-launch ---------------------------------------------------------- */

static bool deletion_seen(const char *name)
{
	const struct state_entry *e = in_state(PROTO_OBJECT_NODECLAIM, "", name);

	return e && e->obj.nodeclaim->deletion_time;
}

Test(launcher_launch_sim, a_nodeclaim_deleted_while_its_createfleet_is_in_flight_leaves_no_instance)
{
	const char *name = "default-deleted";
	char uri[256], node[256];
	struct seen s;

	plan_one(name, "on-demand", (const char *const[]){ "m5.large" }, 1);
	RUN_UNTIL(at_fleet(name), "the launch never reached CreateFleet");
	/* The answer takes long enough for the deletion to be seen first. */
	faults("{\"latencyMs\": 400}");
	snprintf(uri, sizeof(uri), NODECLAIMS_PATH "/%s", name);
	k8s_ok("DELETE", uri, NULL);
	RUN_UNTIL(deletion_seen(name), "the deletion never reached the state");
	RUN_UNTIL(instances().all == 1, "CreateFleet never arrived");
	faults("{}");
	RUN_UNTIL(!launch_of(name), "the launch never stopped");
	RUN_UNTIL(!claim_exists(name), "the NodeClaim's finalizer was never removed");

	s = instances();
	cr_assert_eq(s.all, 1);
	cr_assert_eq(s.active, 0, "instance %s launched for a deleted NodeClaim still runs", s.id);
	cr_assert_eq(count_items("/api/v1/nodes"), 0, "a Node was created for a deleted NodeClaim");
	cr_assert_str_eq(pod_node("p1", node, sizeof(node)), "");
	cr_assert_eq(results_with(name, PROTO_LAUNCH_LAUNCHED), 0);
	cr_assert_not_null(result_of(name, PROTO_LAUNCH_FAILED), "the pods were not handed back");
}

/* Deleted while it waits to retry a CreateFleet whose answer was lost:
 * what that call launched carries the NodeClaim's tag and is terminated. */
Test(launcher_launch_sim, a_nodeclaim_deleted_after_a_lost_createfleet_answer_has_its_instance_found_and_terminated)
{
	const char *name = "default-lost-deleted";
	char uri[256];
	struct seen s;

	plan_one(name, "on-demand", (const char *const[]){ "m5.large" }, 1);
	RUN_UNTIL(at_fleet(name), "the launch never reached CreateFleet");
	faults("{\"lostAnswerRate\": 1}");
	RUN_UNTIL(retry_pending(name), "the lost answer was not retried later");
	faults("{}");
	cr_assert_eq(instances().active, 1);
	snprintf(uri, sizeof(uri), NODECLAIMS_PATH "/%s", name);
	k8s_ok("DELETE", uri, NULL);
	RUN_UNTIL(deletion_seen(name), "the deletion never reached the state");
	/* As daemon.c does for a deletion its replica shows. */
	launcher_nodeclaim_deleted(&l, name, in_state(PROTO_OBJECT_NODECLAIM, "", name)->obj.nodeclaim->uid);
	RUN_UNTIL(!launch_of(name), "the launch never stopped");
	RUN_UNTIL(!claim_exists(name), "the NodeClaim's finalizer was never removed");

	s = instances();
	cr_assert_eq(s.all, 1);
	cr_assert_eq(s.active, 0, "instance %s launched for a deleted NodeClaim still runs", s.id);
	cr_assert_eq(count_items("/api/v1/nodes"), 0);
	cr_assert_eq(results_with(name, PROTO_LAUNCH_LAUNCHED), 0);
	cr_assert_not_null(result_of(name, PROTO_LAUNCH_FAILED));
}

/* ---- NodePool limits -------------------------------------------------------------------------- */

Test(launcher_launch_sim, candidates_beyond_the_nodepool_limits_are_dropped_and_a_plan_with_none_left_is_refused)
{
	struct plan_claim c[3];
	const struct result *r;

	/* limits.cpu is 6: the m5.xlarge (4) is admitted, the next claim may
	 * only be an m5.large (2), and a third finds nothing that fits. */
	plan_claim(&c[0], "default-l1", "on-demand", (const char *const[]){ "m5.xlarge" }, 1,
		   (const char *const[]){ "default/p1" }, 1);
	plan_claim(&c[1], "default-l2", "on-demand", (const char *const[]){ "m5.xlarge", "m5.large" }, 2,
		   (const char *const[]){ "default/p2" }, 1);
	plan_claim(&c[2], "default-l3", "on-demand", (const char *const[]){ "m5.large" }, 1, NULL, 0);
	send_plan("plan-limits", c, 3);

	cr_assert_not_null(launch_of("default-l1"));
	cr_assert_not_null(launch_of("default-l2"));
	cr_assert_eq(launch_of("default-l2")->planned->n_instance_types, 1);
	cr_assert_str_eq(launch_of("default-l2")->planned->instance_types[0].name, "m5.large");
	cr_assert_null(launch_of("default-l3"));
	r = result_of("default-l3", PROTO_LAUNCH_LIMIT_EXCEEDED);
	cr_assert_not_null(r, "the refused claim's pods were not handed back");
	cr_assert(strstr(r->error, "exceed limits for nodepool default"), "%s", r->error);

	RUN_UNTIL(launch_done("default-l1") && launch_done("default-l2"), "the launches never finished");
	cr_assert_eq(instances().all, 2);
	cr_assert_not(claim_exists("default-l3"), "a refused claim was written");
	/* Once they run, the limits still hold against a new plan. */
	plan_one("default-l4", "on-demand", (const char *const[]){ "m5.large" }, 1);
	cr_assert_not_null(result_of("default-l4", PROTO_LAUNCH_LIMIT_EXCEEDED));
	cr_assert_eq(instances().all, 2);
}

/* ---- user data: the state feed carries its SHA-256, the launcher GETs the text ---------- */

#define NODECLASS_USER_DATA                                                                        \
	"{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{\"name\":" \
	"\"ud\"},\"spec\":{\"amiSelectorTerms\":[{\"alias\":\"al2023@latest\"}],\"role\":"          \
	"\"KarpenterNodeRole-demo\",\"userData\":\"echo kanna\",\"subnetSelectorTerms\":[{\"tags\":" \
	"{\"karpenter.sh/discovery\":\"demo\"}}],\"securityGroupSelectorTerms\":[{\"tags\":"          \
	"{\"karpenter.sh/discovery\":\"demo\"}}]}}"
/* printf 'echo kanna' | sha256sum */
#define USER_DATA_SHA256 "60c65115b205635001d3cdea1011726b39db56a0c76c6b391d71527670ae0ab8"

struct config_answer {
	bool done;
	int error;
	char why[512];
	char template[128];
};

static void on_config_answer(int error, const char *why, const struct launch_config *lc, void *userdata)
{
	struct config_answer *a = userdata;

	a->done = true;
	a->error = error;
	snprintf(a->why, sizeof(a->why), "%s", why ?: "");
	if (error == 0)
		snprintf(a->template, sizeof(a->template), "%s", lc->launch_template_name);
}

static struct config_answer launch_config_of(const struct proto_nodeclass *nc)
{
	const struct state_entry *np = in_state(PROTO_OBJECT_NODEPOOL, "", "default");
	struct config_answer a = { 0 };

	cr_assert_not_null(np);
	cr_assert_eq(nodeclass_launch_config(l.resolver,
					     &(struct launch_config_request){ .nodeclass = nc,
									      .nodepool = np->obj.nodepool,
									      .arch = "amd64" },
					     on_config_answer, &a),
		     0);
	RUN_UNTIL(a.done, "no launch config for EC2NodeClass %s", nc->name);
	return a;
}

Test(launcher_launch_sim, user_data_is_fetched_by_its_digest_and_names_the_template_as_its_text_did)
{
	const struct state_entry *e;
	struct proto_nodeclass text, other;
	struct config_answer by_text, fetched, changed, stale;

	k8s_ok("POST", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses", NODECLASS_USER_DATA);
	RUN_UNTIL((e = in_state(PROTO_OBJECT_NODECLASS, "", "ud")), "the EC2NodeClass never arrived");
	/* the state feed has the digest, not the text */
	cr_assert_null(e->obj.nodeclass->user_data);
	cr_assert_str_eq(e->obj.nodeclass->user_data_sha256 ?: "", USER_DATA_SHA256);

	/* a 2.3 watcher sent the text: the template it names is the reference */
	text = *e->obj.nodeclass;
	text.user_data = "echo kanna";
	text.user_data_sha256 = NULL;
	by_text = launch_config_of(&text);
	cr_assert_eq(by_text.error, 0, "%s", by_text.why);
	fetched = launch_config_of(e->obj.nodeclass);
	cr_assert_eq(fetched.error, 0, "%s", fetched.why);
	cr_assert_str_eq(fetched.template, by_text.template, "the fetched text must name the same template");
	other = text;
	other.user_data = "echo other";
	changed = launch_config_of(&other);
	cr_assert_eq(changed.error, 0, "%s", changed.why);
	cr_assert_str_neq(changed.template, by_text.template);

	/* a digest the object no longer has: not ready until the next delta */
	other = *e->obj.nodeclass;
	other.user_data_sha256 = "0000000000000000000000000000000000000000000000000000000000000000";
	stale = launch_config_of(&other);
	cr_assert_eq(stale.error, -EAGAIN);
	cr_assert(strstr(stale.why, "the user data of EC2NodeClass ud changed since it was observed"), "%s",
		  stale.why);
}
