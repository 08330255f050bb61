/*
 * Benchmark of common/metrics and common/health: how cheap an update is on a
 * daemon's hot path, how long a scrape of a large registry takes, and how
 * many /healthz probes the HTTP thread answers while the main thread is
 * busy (it spins here, as in a long solve, and never yields). Prints rows,
 * tab-separated (bench/lib.sh prints the table). Run by bench/metrics.sh.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/health.h"
#include "common/log.h"
#include "common/metrics.h"

/* A daemon handling 500k messages/s that updates two metrics per message
 * needs 1M updates/s; ask five times that so metrics stay far below 20%
 * of a core. */
#define TARGET_UPDATES_PER_S 5000000.0
/* Prometheus scrapes every 15-30 s; a 10k-series scrape in under 50 ms
 * (20/s) keeps the registry mutex short for the main thread. */
#define TARGET_SCRAPES_PER_S 20.0
/* kubelet probes every few seconds; 1000/s is a wide margin. */
#define TARGET_PROBES_PER_S 1000.0
#define SCRAPE_SERIES 10000
#define RUN_SECONDS (bench_quick() ? 0.02 : 1.0)
#define PROBE_SECONDS (bench_quick() ? 0.1 : 2.0)

/* KANNA_BENCH_QUICK=1 (bench/results.sh, the pipeline's test): the same
 * rows from a fiftieth of the work; the figures then measure nothing. */
static bool bench_quick(void)
{
	const char *q = getenv("KANNA_BENCH_QUICK");

	return q && strcmp(q, "1") == 0;
}

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One row, tab-separated: figure, value, unit, target, direction
 * (bench/lib.sh prints the table); every figure here is a rate. */
static void row(const char *figure, double value, const char *unit, double target)
{
	printf("%s\t%.0f\t%s\t%.0f\t>\n", figure, value, unit, target);
}

static double bench_counter(struct metrics_registry *reg)
{
	static const char *const pools[] = { "default", "gpu", "spot", "arm64" };
	struct metrics_counter *c;
	unsigned long n = 0;

	if (metrics_counter_new(reg, &c, "karpenter_nodeclaims_created_total", "x", "reason",
				"nodepool", NULL) < 0)
		abort();
	double start = cpu_now(), elapsed;
	do {
		for (int i = 0; i < 1000; i++, n++)
			metrics_counter_add(c, 1, "provisioned", pools[n & 3], NULL);
	} while ((elapsed = cpu_now() - start) < RUN_SECONDS);
	return (double)n / elapsed;
}

static double bench_histogram(struct metrics_registry *reg)
{
	struct metrics_histogram *h;
	unsigned long n = 0;

	if (metrics_histogram_new(reg, &h, "karpenter_scheduler_scheduling_duration_seconds", "x",
				  metrics_duration_buckets, metrics_duration_buckets_len,
				  "nodepool", NULL) < 0)
		abort();
	double start = cpu_now(), elapsed;
	do {
		for (int i = 0; i < 1000; i++, n++)
			metrics_histogram_observe(h, (double)(n % 700) / 10.0, "default", NULL);
	} while ((elapsed = cpu_now() - start) < RUN_SECONDS);
	return (double)n / elapsed;
}

static double bench_scrape(void)
{
	struct metrics_registry *reg;
	struct metrics_gauge *g;
	char node[64];
	unsigned long n = 0;

	if (metrics_registry_new(&reg) < 0 ||
	    metrics_gauge_new(reg, &g, "karpenter_nodes_allocatable", "x", "node", "resource_type",
			      NULL) < 0)
		abort();
	for (int i = 0; i < SCRAPE_SERIES; i++) {
		snprintf(node, sizeof(node), "ip-10-0-%d-%d.ec2.internal", i / 256, i % 256);
		metrics_gauge_set(g, 4000 + i, node, "cpu", NULL);
	}
	double start = cpu_now(), elapsed;
	do {
		char *text;
		size_t len;
		if (metrics_registry_render(reg, &text, &len) < 0)
			abort();
		free(text);
		n++;
	} while ((elapsed = cpu_now() - start) < RUN_SECONDS);
	metrics_registry_free(reg);
	return (double)n / elapsed;
}

struct prober {
	uint16_t port;
	atomic_bool stop;
	unsigned long ok;
};

static size_t discard(char *data, size_t size, size_t n, void *arg)
{
	return size * n;
}

static void *probe_loop(void *arg)
{
	struct prober *p = arg;
	char url[64];
	CURL *curl = curl_easy_init();
	long status = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", p->port);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
	while (!atomic_load(&p->stop)) {
		if (curl_easy_perform(curl) == CURLE_OK &&
		    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
		    status == 200)
			p->ok++;
	}
	curl_easy_cleanup(curl);
	return NULL;
}

static double bench_probes(void)
{
	struct health_server *s;
	struct prober p = { 0 };
	pthread_t t;
	volatile unsigned long spin = 0;

	if (health_server_new(NULL, HEALTH_PORT_DISABLED, HEALTH_PORT_EPHEMERAL, 0, &s) < 0)
		abort();
	p.port = health_server_health_port(s);
	if (pthread_create(&t, NULL, probe_loop, &p) != 0)
		abort();
	/* The "main thread" is busy: no loop, no heartbeat, just work. */
	double start = now();
	while (now() - start < PROBE_SECONDS)
		spin++;
	atomic_store(&p.stop, true);
	pthread_join(t, NULL);
	health_server_free(s);
	return (double)p.ok / PROBE_SECONDS;
}

int main(void)
{
	struct metrics_registry *reg;

	log_setup("bench-metrics", LOG_FORMAT_TEXT, LOG_LEVEL_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (metrics_registry_new(&reg) < 0)
		return 1;
	row("counter add, 2 labels (one core)", bench_counter(reg), "updates/s", TARGET_UPDATES_PER_S);
	row("histogram observe, 40 buckets (one core)", bench_histogram(reg), "updates/s",
	    TARGET_UPDATES_PER_S);
	row("render 10k series (one core)", bench_scrape(), "scrapes/s", TARGET_SCRAPES_PER_S);
	row("/healthz answered, main thread busy", bench_probes(), "probes/s", TARGET_PROBES_PER_S);
	metrics_registry_free(reg);
	curl_global_cleanup();
	return 0;
}
