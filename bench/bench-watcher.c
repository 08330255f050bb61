/*
 * The watcher benchmark's helper (bench/watcher.sh drives it):
 *   bench-watcher load --pods N --nodes M      create objects in kanna-sim
 *   bench-watcher replica --runtime-dir D --expect N [--churn-seconds S]
 *        join replication, report ms until N objects are replicated and the
 *        replica's peak RSS; with --churn, also the latency from a pod's
 *        patch (its bench/ts label, set by `churn`) to the replica (p50/p99)
 *   bench-watcher churn --rate R --seconds S   patch pods at R/s
 * Output: "key value" lines for the script's table.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/kube-client.h"
#include "common/log.h"
#include "state/replica.h"
#include "watcher/publish.h"

/* Requests in flight while loading: enough to keep the sim busy. */
#define LOAD_IN_FLIGHT 64
#define LATENCY_MAX_SAMPLES 1000000

struct bench {
	struct loop *loop;
	struct kube_client *kube;
	unsigned pods, nodes, done, started, failed, total, in_flight;
	double rate;
	unsigned seconds;
	uint64_t t0;
	double *lat;
	size_t n_lat;
};

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* A "Name:   123 kB" line of /proc/self/status, in kB (-1 when absent). */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	size_t n = strlen(field);
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			kb = atol(line + n + 1);
	if (f)
		fclose(f);
	return kb;
}

static void load_next(struct bench *b);

static void on_created(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct bench *b = userdata;

	(void)c;
	b->in_flight--;
	if (resp->status != 201 && b->failed++ < 5)
		log_warn("create failed: %ld %s", resp->status, resp->error ? resp->error : "");
	b->done++;
	if (b->done == b->total)
		loop_exit(b->loop, 0);
	else
		load_next(b);
}

static void load_next(struct bench *b)
{
	char body[1024];
	unsigned i;

	while (b->started < b->total && b->in_flight < LOAD_IN_FLIGHT) {
		i = b->started++;
		b->in_flight++;
		if (i < b->nodes) {
			snprintf(body, sizeof(body),
				 "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"bench-node-%u\","
				 "\"labels\":{\"topology.kubernetes.io/zone\":\"us-west-2a\"}},\"status\":{"
				 "\"capacity\":{\"cpu\":\"16\",\"memory\":\"64Gi\",\"pods\":\"110\"},"
				 "\"allocatable\":{\"cpu\":\"15\",\"memory\":\"60Gi\",\"pods\":\"110\"}}}", i);
			kube_request(b->kube, "POST", "/api/v1/nodes", NULL, body, on_created, b);
		} else {
			i -= b->nodes;
			snprintf(body, sizeof(body),
				 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"bench-%u\","
				 "\"namespace\":\"default\",\"labels\":{\"app\":\"bench-%u\"}},\"spec\":{"
				 "\"nodeName\":\"bench-node-%u\",\"containers\":[{\"name\":\"c\",\"image\":\"pause\","
				 "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}}}]}}",
				 i, i % 100, b->nodes ? i % b->nodes : 0);
			kube_request(b->kube, "POST", "/api/v1/namespaces/default/pods", NULL, body,
				     on_created, b);
		}
	}
}

static void on_patched(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct bench *b = userdata;

	(void)c;
	b->in_flight--;
	if (resp->status != 200 && b->failed++ < 5)
		log_warn("patch failed: %ld %s", resp->status, resp->error ? resp->error : "");
	b->done++;
}

static int on_churn_tick(struct loop *loop, void *userdata)
{
	struct bench *b = userdata;
	char path[128], body[256];
	uint64_t now = now_usec();
	/* How many patches should have been sent by now at the rate. */
	uint64_t due = (uint64_t)((double)(now - b->t0) / 1e6 * b->rate);

	if (now - b->t0 > (uint64_t)b->seconds * 1000000u) {
		loop_exit(loop, 0);
		return 0;
	}
	while (b->started < due && b->in_flight < LOAD_IN_FLIGHT) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/bench-%u",
			 b->started % b->pods);
		snprintf(body, sizeof(body), "{\"metadata\":{\"labels\":{\"bench/ts\":\"%llu\"}}}",
			 (unsigned long long)now_usec());
		b->started++;
		b->in_flight++;
		kube_request(b->kube, "PATCH", path, "application/merge-patch+json", body, on_patched, b);
	}
	return 0;
}

static void on_change(enum proto_delta_op op, const struct proto_object *old,
		      const struct proto_object *now, void *userdata)
{
	struct bench *b = userdata;

	(void)op;
	(void)old;
	const struct proto_pod_template *t;

	if (!now || now->kind != PROTO_OBJECT_POD || b->n_lat >= LATENCY_MAX_SAMPLES)
		return;
	t = proto_pod_template_of(now->pod);
	for (uint32_t i = 0; i < t->n_labels; i++)
		if (streq(t->labels[i].key, "bench/ts"))
			b->lat[b->n_lat++] = (double)(now_usec() - strtoull(t->labels[i].value,
									  NULL, 10)) / 1000.0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int run_replica(struct bench *b, const char *dir, size_t expect, unsigned churn_seconds)
{
	struct replica_handlers h = { on_change, NULL, b };
	struct sock_ctx *ctx;
	struct replica *r;
	uint64_t start = now_usec(), synced_at = 0;

	b->lat = calloc(LATENCY_MAX_SAMPLES, sizeof(double));
	if (!b->lat || sock_ctx_new(&ctx, b->loop, "bench", dir) < 0 ||
	    replica_new(&r, ctx, b->loop, PROTO_PROCESS_TOOL, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC,
			&h) < 0)
		return 1;
	while (now_usec() - start < 120000000u) {
		sd_event_run(loop_event(b->loop), 10000);
		if (!synced_at && replica_synced(r) && replica_store(r)->objects.n >= expect)
			synced_at = now_usec();
		if (synced_at && now_usec() - synced_at > (uint64_t)churn_seconds * 1000000u)
			break;
	}
	if (!synced_at) {
		fprintf(stderr, "replica did not reach %zu objects (has %zu)\n", expect,
			replica_store(r)->objects.n);
		return 1;
	}
	printf("objects %zu\n", replica_store(r)->objects.n);
	printf("sync_ms %.1f\n", (double)(synced_at - start) / 1000.0);
	printf("replica_rss_mb %.1f\n", (double)status_kb("VmHWM") / 1024.0);
	/* What the peak is made of, as of now: heap and stacks, mapped files
	 * (the libraries' pages). */
	printf("replica_rss_anon_mb %.1f\n", (double)status_kb("RssAnon") / 1024.0);
	printf("replica_rss_file_mb %.1f\n", (double)status_kb("RssFile") / 1024.0);
	if (churn_seconds && b->n_lat) {
		qsort(b->lat, b->n_lat, sizeof(double), cmp_double);
		printf("churn_deltas %zu\n", b->n_lat);
		printf("latency_p50_ms %.2f\n", b->lat[b->n_lat / 2]);
		printf("latency_p99_ms %.2f\n", b->lat[b->n_lat * 99 / 100]);
	}
	replica_free(r);
	sock_ctx_free(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pods", required_argument, NULL, 'p' },   { "nodes", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' },   { "seconds", required_argument, NULL, 's' },
		{ "runtime-dir", required_argument, NULL, 'd' },
		{ "expect", required_argument, NULL, 'e' }, { "churn-seconds", required_argument, NULL, 'c' },
		{ 0 },
	};
	struct bench b = { .pods = 1000, .rate = 1000, .seconds = 5 };
	const char *dir = NULL;
	size_t expect = 0;
	unsigned churn_seconds = 0;
	char err[512];
	struct kube_config *cfg;
	struct kube_client_options ko = { .qps = 1e9, .burst = 1000000 };
	int c;

	log_setup("bench-watcher", LOG_FORMAT_TEXT, LOG_LEVEL_WARN);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		switch (c) {
		case 'p': b.pods = (unsigned)atoi(optarg); break;
		case 'n': b.nodes = (unsigned)atoi(optarg); break;
		case 'r': b.rate = atof(optarg); break;
		case 's': b.seconds = (unsigned)atoi(optarg); break;
		case 'd': dir = optarg; break;
		case 'e': expect = (size_t)atol(optarg); break;
		case 'c': churn_seconds = (unsigned)atoi(optarg); break;
		default: return 2;
		}
	}
	if (optind >= argc || loop_new(&b.loop, "bench") < 0)
		return 2;
	if (strcmp(argv[optind], "replica") == 0)
		return run_replica(&b, dir, expect, churn_seconds);
	if (kube_config_resolve(NULL, NULL, &cfg, err, sizeof(err)) < 0 ||
	    kube_client_new(&b.kube, b.loop, cfg, &ko) < 0) {
		fprintf(stderr, "bench-watcher: %s\n", err);
		return 1;
	}
	b.t0 = now_usec();
	if (strcmp(argv[optind], "load") == 0) {
		b.total = b.pods + b.nodes;
		load_next(&b);
		loop_run(b.loop);
		printf("created %u\nfailed %u\nload_s %.2f\n", b.done - b.failed, b.failed,
		       (double)(now_usec() - b.t0) / 1e6);
	} else if (strcmp(argv[optind], "churn") == 0) {
		loop_add_periodic(b.loop, "churn", 1000, on_churn_tick, &b);
		loop_run(b.loop);
		printf("patched %u\n", b.done);
	} else {
		return 2;
	}
	return b.failed ? 1 : 0;
}
