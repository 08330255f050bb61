/*
 * ./quickstart bench sim: kanna-sim's Kubernetes API at the scale
 * target — 100,000 pods and 5,000 nodes held under 500 MB RSS, a LIST of
 * every pod over HTTP under 1 s, 1,000 watch events/s to 5 watchers.
 * Runs the store and the HTTP server in-process; prints one table.
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

#define BENCH_PODS 100000
#define BENCH_NODES 5000
#define BENCH_WATCHERS 5
#define BENCH_WATCH_EVENTS 20000
#define BENCH_LIST_RUNS 3

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double rss_mb(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	double kb = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtod(line + 6, NULL);
	if (f)
		fclose(f);
	return kb / 1024.0;
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

static double list_seconds(uint16_t port, size_t *bytes)
{
	CURL *curl = curl_easy_init();
	struct curl_slist *headers = curl_slist_append(NULL, "Authorization: Bearer bench");
	char url[128];
	double t0, t;
	long code = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/pods", port);
	*bytes = 0;
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
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

struct watcher {
	struct k8s_watch *watch;
	pthread_t thread;
	size_t events;
	double done_at;
};

static void *watcher_main(void *userdata)
{
	struct watcher *w = userdata;
	char buf[65536];
	ssize_t n;

	while (w->events < BENCH_WATCH_EVENTS && (n = k8s_watch_read(w->watch, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			w->events += buf[i] == '\n';
	w->done_at = now_s();
	return NULL;
}

static json_t *relabel(const json_t *cur, void *userdata, struct k8s_error *err)
{
	json_t *out = json_deep_copy(cur);

	json_object_set_new(json_object_get(json_object_get(out, "metadata"), "labels"), "bench",
			    json_integer(*(int *)userdata));
	return out;
}

static double watch_rate(struct k8s_store *store)
{
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	struct k8s_watch_options opts = { .timeout_seconds = 120 };
	struct watcher w[BENCH_WATCHERS] = {};
	char rv[32], name[64];
	double t0, last = 0;

	snprintf(rv, sizeof(rv), "%" PRIu64, store->rv);
	opts.resource_version = rv;
	for (int i = 0; i < BENCH_WATCHERS; i++) {
		struct k8s_error err = {};

		if (k8s_watch_new(store, pods, NULL, NULL, NULL, &opts, &w[i].watch, &err) < 0)
			return -1;
		pthread_create(&w[i].thread, NULL, watcher_main, &w[i]);
	}
	t0 = now_s();
	for (int i = 0; i < BENCH_WATCH_EVENTS; i++) {
		struct k8s_error err = {};

		snprintf(name, sizeof(name), "inflate-%d", i % BENCH_PODS);
		k8s_store_mutate(store, pods, "default", name, K8S_WRITE_MAIN, relabel, &i, NULL, &err);
	}
	for (int i = 0; i < BENCH_WATCHERS; i++) {
		pthread_join(w[i].thread, NULL);
		last = w[i].done_at > last ? w[i].done_at : last;
		if (w[i].events < BENCH_WATCH_EVENTS)
			return -1;
		k8s_watch_free(w[i].watch);
	}
	return BENCH_WATCH_EVENTS / (last - t0);
}

static void row(const char *figure, double value, const char *unit, double target, bool less)
{
	double ratio = value / target;

	printf("%-44s %12.3f %-9s %10.0f %8.3f %s\n", figure, value, unit, target, ratio,
	       value >= 0 && (less ? ratio <= 1.0 : ratio >= 1.0) ? "ok" : "MISSED");
}

int main(void)
{
	struct k8s_registry *reg = k8s_registry_new();
	struct k8s_server_config cfg = { .token = "bench" };
	struct k8s_server *server = NULL;
	struct k8s_store *store = NULL;
	struct k8s_api api = {};
	double t0, load, rss, best = 1e9, worst = 0;
	size_t bytes = 0;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!reg || k8s_store_new(reg, 0, &store) < 0 || k8s_store_seed(store) < 0)
		return EXIT_FAILURE;
	t0 = now_s();
	populate(store);
	load = now_s() - t0;
	rss = rss_mb();
	k8s_api_init(&api, reg, store);
	if (k8s_server_start(&api, &cfg, &server) < 0)
		return EXIT_FAILURE;
	for (int i = 0; i < BENCH_LIST_RUNS; i++) {
		double t = list_seconds(k8s_server_port(server), &bytes);

		if (t < 0)
			return EXIT_FAILURE;
		best = t < best ? t : best;
		worst = t > worst ? t : worst;
	}
	printf("%-44s %12s %-9s %10s %8s\n", "figure", "value", "unit", "target", "ratio");
	row("create 100,000 pods + 5,000 nodes", load, "s", 60, true);
	row("RSS holding 100,000 pods + 5,000 nodes", rss, "MB", 500, true);
	row("LIST 100,000 pods over HTTP (worst of 3)", worst, "s", 1, true);
	row("LIST 100,000 pods over HTTP (best of 3)", best, "s", 1, true);
	printf("%-44s %12.1f %-9s\n", "LIST body size", (double)bytes / (1 << 20), "MB");
	row("watch events/s delivered to each of 5", watch_rate(store), "events/s", 1000, false);
	t0 = now_s();
	k8s_deployments_reconcile(store);
	k8s_statefulsets_reconcile(store);
	k8s_daemonsets_reconcile(store);
	k8s_scheduler_reconcile(store);
	/* Target: one pass fits in the controllers' 100 ms interval. */
	row("controller pass over 100,000 pods", (now_s() - t0) * 1000, "ms", K8S_CONTROLLER_INTERVAL_MS, true);
	k8s_server_free(server);
	k8s_api_done(&api);
	k8s_store_free(store);
	k8s_registry_free(reg);
	curl_global_cleanup();
	return EXIT_SUCCESS;
}
