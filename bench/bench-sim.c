/*
 * ./quickstart bench sim: kanna-sim's Kubernetes API at the scale
 * target — 100,000 pods and 5,000 nodes under 500 MB RSS, a LIST of every
 * pod served in under 1 s, 1,000 watch events/s to 5 watchers. The store
 * and the server run in-process behind the real HTTPS listener (generated
 * CA, bearer token); LISTs and the 5 watch streams are read over it with
 * libcurl as a client would, and the peak RSS (VmHWM) is taken after the
 * LISTs, so what a LIST costs to serve is counted. Prints rows, tab-
 * separated: figure, value, unit, target, direction (bench/lib.sh).
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/k8s-controllers.h"
#include "sim/k8s-server.h"
#include "sim/tls.h"

#define BENCH_PODS 100000
#define BENCH_NODES 5000
#define BENCH_WATCHERS 5
#define BENCH_WATCH_EVENTS 20000
#define BENCH_LIST_RUNS 3
/* How long watchers may take to connect and see the first event. */
#define BENCH_WATCH_CONNECT_S 30

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A /proc/self/status figure in MB: "VmRSS:" now, "VmHWM:" the peak so far. */
static double status_mb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	double kb = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0)
			kb = strtod(line + strlen(key), NULL);
	if (f)
		fclose(f);
	return kb / 1024.0;
}

/* Every request goes over HTTPS with the generated CA and the token, as kubectl's. */
struct client {
	uint16_t port;
	const char *ca_pem;
};

static CURL *client_get(const struct client *c, const char *path, struct curl_slist *headers)
{
	struct curl_blob ca = { .data = (void *)c->ca_pem, .len = strlen(c->ca_pem),
				.flags = CURL_BLOB_COPY };
	CURL *curl = curl_easy_init();
	char url[256];

	if (!curl)
		return NULL;
	snprintf(url, sizeof(url), "https://127.0.0.1:%u%s", c->port, path);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
	curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	return curl;
}

static void create_or_die(struct k8s_store *store, const struct k8s_resource *res,
			  const char *ns, const char *json)
{
	struct k8s_error err = {};
	json_t *obj = json_loads(json, 0, NULL);

	if (!obj || k8s_store_create(store, res, ns, obj, NULL, &err) < 0) {
		fprintf(stderr, "Failed to create object: %s\n", err.message);
		exit(EXIT_FAILURE);
	}
	json_decref(obj);
}

static void populate(struct k8s_store *store)
{
	const struct k8s_resource *nodes = k8s_registry_find(store->reg, "", "v1", "nodes");
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	char buf[2048];

	for (int i = 0; i < BENCH_NODES; i++) {
		snprintf(buf, sizeof(buf),
			 "{\"metadata\":{\"name\":\"ip-10-0-%d-%d.us-west-2.compute.internal\",\"labels\":"
			 "{\"node.kubernetes.io/instance-type\":\"m5.large\",\"topology.kubernetes.io/zone\":"
			 "\"us-west-2a\",\"karpenter.sh/capacity-type\":\"spot\",\"karpenter.sh/nodepool\":"
			 "\"default\"}},\"spec\":{\"providerID\":\"aws:///us-west-2a/i-%017d\"},\"status\":"
			 "{\"allocatable\":{\"cpu\":\"1930m\",\"memory\":\"7Gi\",\"pods\":\"29\"},"
			 "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
			 i / 250, i % 250, i);
		create_or_die(store, nodes, NULL, buf);
	}
	for (int i = 0; i < BENCH_PODS; i++) {
		snprintf(buf, sizeof(buf),
			 "{\"metadata\":{\"name\":\"inflate-%d\",\"labels\":{\"app\":\"inflate\"},"
			 "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":"
			 "\"inflate-5d8f7c9b6\",\"uid\":\"0b1c2d3e-0000-4000-8000-%012d\",\"controller\":true}]},"
			 "\"spec\":{\"nodeName\":\"ip-10-0-%d-%d.us-west-2.compute.internal\",\"containers\":"
			 "[{\"name\":\"inflate\",\"image\":\"public.ecr.aws/eks-distro/kubernetes/pause:3.7\","
			 "\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"512Mi\"}}}]}}",
			 i, i % 50, (i % BENCH_NODES) / 250, (i % BENCH_NODES) % 250);
		create_or_die(store, pods, "default", buf);
	}
}

static size_t count_bytes(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	*(size_t *)userdata += size * nmemb;
	return size * nmemb;
}

static double list_seconds(const struct client *c, size_t *bytes)
{
	struct curl_slist *headers = curl_slist_append(NULL, "Authorization: Bearer bench");
	CURL *curl = client_get(c, "/api/v1/pods", headers);
	double t0, t;
	long code = 0;

	*bytes = 0;
	if (!curl)
		return -1;
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, count_bytes);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, bytes);
	t0 = now_s();
	if (curl_easy_perform(curl) != CURLE_OK)
		*bytes = 0;
	t = now_s() - t0;
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(headers);
	curl_easy_cleanup(curl);
	return code == 200 ? t : -1;
}

/* One watch stream over HTTPS, read by its own thread with libcurl. */
struct watcher {
	const struct client *client;
	const char *rv;
	pthread_t thread;
	size_t events; /* newline-terminated events received; atomic */
	double done_at;
	bool failed;
};

static size_t watch_chunk(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct watcher *w = userdata;
	size_t n = size * nmemb, events = 0;

	for (size_t i = 0; i < n; i++)
		events += ptr[i] == '\n';
	events = __atomic_add_fetch(&w->events, events, __ATOMIC_RELAXED);
	if (events >= BENCH_WATCH_EVENTS) {
		w->done_at = now_s();
		return 0; /* enough: end the transfer */
	}
	return n;
}

static void *watcher_main(void *userdata)
{
	struct watcher *w = userdata;
	struct curl_slist *headers = curl_slist_append(NULL, "Authorization: Bearer bench");
	char path[128];
	CURL *curl;

	snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%s&timeoutSeconds=120",
		 w->rv);
	curl = client_get(w->client, path, headers);
	if (curl) {
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, watch_chunk);
		curl_easy_setopt(curl, CURLOPT_WRITEDATA, w);
		(void)curl_easy_perform(curl); /* ends with a write error once done */
		curl_easy_cleanup(curl);
	}
	curl_slist_free_all(headers);
	w->failed = __atomic_load_n(&w->events, __ATOMIC_RELAXED) < BENCH_WATCH_EVENTS;
	return NULL;
}

static json_t *relabel(const json_t *cur, void *userdata, struct k8s_error *err)
{
	json_t *out = json_deep_copy(cur);

	json_object_set_new(json_object_get(json_object_get(out, "metadata"), "labels"), "bench",
			    json_integer(*(int *)userdata));
	return out;
}

/*
 * Events/s each of 5 HTTPS watchers receives: a first event tells that
 * all are connected, then the clock runs from the second event written to
 * the moment the slowest watcher has them all. *written: the write rate.
 */
static double watch_rate(struct k8s_store *store, const struct client *c, double *written)
{
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	struct watcher w[BENCH_WATCHERS] = {};
	char rv[32], name[64];
	double t0 = 0, t_written, last = 0;
	int i;

	k8s_store_lock(store);
	snprintf(rv, sizeof(rv), "%" PRIu64, store->rv);
	k8s_store_unlock(store);
	for (i = 0; i < BENCH_WATCHERS; i++) {
		w[i].client = c;
		w[i].rv = rv;
		pthread_create(&w[i].thread, NULL, watcher_main, &w[i]);
	}
	for (i = 0; i < BENCH_WATCH_EVENTS; i++) {
		struct k8s_error err = {};

		snprintf(name, sizeof(name), "inflate-%d", i % BENCH_PODS);
		k8s_store_mutate(store, pods, "default", name, K8S_WRITE_MAIN, relabel, &i, NULL, &err);
		/* The first event is the warm-up: every watcher connected and saw it. */
		for (int j = 0; i == 0 && j < BENCH_WATCHERS; j++) {
			double wait = now_s();

			while (__atomic_load_n(&w[j].events, __ATOMIC_RELAXED) == 0 &&
			       now_s() - wait < BENCH_WATCH_CONNECT_S)
				nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
		}
		if (i == 0)
			t0 = now_s();
	}
	t_written = now_s();
	for (i = 0; i < BENCH_WATCHERS; i++) {
		pthread_join(w[i].thread, NULL);
		last = w[i].done_at > last ? w[i].done_at : last;
		if (w[i].failed)
			return -1;
	}
	*written = (BENCH_WATCH_EVENTS - 1) / (t_written - t0);
	return (BENCH_WATCH_EVENTS - 1) / (last - t0);
}

static void row(const char *figure, double value, const char *unit, double target, bool less)
{
	printf("%s\t%.3f\t%s\t%.0f\t%s\n", figure, value, unit, target, less ? "<" : ">");
}

/* A figure with no target. */
static void info(const char *figure, double value, const char *unit, bool less)
{
	printf("%s\t%.1f\t%s\t-\t%s\n", figure, value, unit, less ? "<" : ">");
}

int main(void)
{
	struct k8s_registry *reg = k8s_registry_new();
	struct k8s_server_config cfg = { .token = "bench" };
	struct k8s_server *server = NULL;
	struct k8s_store *store = NULL;
	struct k8s_api api = {};
	struct sim_tls tls = {};
	struct client client;
	double t0, load, rss, hwm_loaded, hwm_listed, best = 1e9, worst = 0, rate, written = 0;
	size_t bytes = 0;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!reg || k8s_store_new(reg, 0, &store) < 0 || k8s_store_seed(store) < 0 ||
	    sim_tls_generate(&tls) < 0)
		return EXIT_FAILURE;
	t0 = now_s();
	populate(store);
	load = now_s() - t0;
	rss = status_mb("VmRSS:");
	hwm_loaded = status_mb("VmHWM:");
	k8s_api_init(&api, reg, store);
	cfg.tls = &tls;
	if (k8s_server_start(&api, &cfg, &server) < 0)
		return EXIT_FAILURE;
	client = (struct client){ .port = k8s_server_port(server), .ca_pem = tls.ca_pem };
	for (int i = 0; i < BENCH_LIST_RUNS; i++) {
		double t = list_seconds(&client, &bytes);

		if (t < 0)
			return EXIT_FAILURE;
		best = t < best ? t : best;
		worst = t > worst ? t : worst;
	}
	hwm_listed = status_mb("VmHWM:");
	row("create 100,000 pods + 5,000 nodes", load, "s", 60, true);
	row("RSS holding 100,000 pods + 5,000 nodes", rss, "MB", 500, true);
	info("peak RSS while loading (VmHWM)", hwm_loaded, "MB", true);
	row("peak RSS after 3 LISTs over HTTPS (VmHWM)", hwm_listed, "MB", 500, true);
	row("LIST 100,000 pods over HTTPS (worst of 3)", worst, "s", 1, true);
	row("LIST 100,000 pods over HTTPS (best of 3)", best, "s", 1, true);
	info("LIST body size", (double)bytes / (1 << 20), "MB", true);
	rate = watch_rate(store, &client, &written);
	row("watch events/s to each of 5 HTTPS watchers", rate, "events/s", 1000, false);
	info("events/s written (in-process)", written, "events/s", false);
	t0 = now_s();
	k8s_deployments_reconcile(store);
	k8s_statefulsets_reconcile(store);
	k8s_daemonsets_reconcile(store);
	k8s_disruption_reconcile(store);
	k8s_scheduler_reconcile(store);
	/* Target: one pass fits in the controllers' 100 ms interval. */
	row("controller pass over 100,000 pods", (now_s() - t0) * 1000, "ms", K8S_CONTROLLER_INTERVAL_MS, true);
	k8s_server_free(server);
	k8s_api_done(&api);
	k8s_store_free(store);
	k8s_registry_free(reg);
	sim_tls_clear(&tls);
	curl_global_cleanup();
	return EXIT_SUCCESS;
}
