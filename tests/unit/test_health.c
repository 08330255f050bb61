/* Health server: /metrics, /healthz, /readyz, 404 and 405 over real HTTP. */
#include <criterion/criterion.h>
#include <errno.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/health.h"
#include "common/log.h"
#include "common/loop.h"

struct reply {
	long status;
	char *body;
	char *content_type;
};

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
	FILE *f = arg;
	return fwrite(data, size, n, f);
}

static struct reply http(uint16_t port, const char *method, const char *path)
{
	struct reply r = { 0 };
	char url[128], *ct = NULL;
	size_t len;
	FILE *body = open_memstream(&r.body, &len);
	CURL *curl = curl_easy_init();

	cr_assert(curl && body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, 5L);
	CURLcode rc = curl_easy_perform(curl);
	cr_assert_eq(rc, CURLE_OK, "GET %s: %s", url, curl_easy_strerror(rc));
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &ct);
	r.content_type = strdup(ct ? ct : "");
	curl_easy_cleanup(curl);
	fclose(body);
	return r;
}

static void reply_free(struct reply *r)
{
	free(r->body);
	free(r->content_type);
}

/* Short so the tests run quickly, long enough that a loaded machine
 * (sanitizers, parallel tests) does not miss a 500 ms heartbeat. */
#define STALL_SECONDS 2

static struct metrics_registry *reg;
static struct health_server *server;

static void setup(void)
{
	struct metrics_counter *c;

	log_setup("kanna-test", LOG_FORMAT_TEXT, LOG_LEVEL_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	cr_assert_eq(metrics_registry_new(&reg), 0);
	cr_assert_eq(metrics_counter_new(reg, &c, "karpenter_nodeclaims_created_total",
					 "Number of nodeclaims created.", "nodepool", NULL), 0);
	cr_assert_eq(metrics_counter_add(c, 3, "default", NULL), 0);
	cr_assert_eq(health_server_new(reg, HEALTH_PORT_EPHEMERAL, HEALTH_PORT_EPHEMERAL,
				       STALL_SECONDS, &server), 0);
	cr_assert_gt(health_server_metrics_port(server), 0);
	cr_assert_gt(health_server_health_port(server), 0);
	cr_assert_neq(health_server_metrics_port(server), health_server_health_port(server));
}

static void teardown(void)
{
	health_server_free(server);
	metrics_registry_free(reg);
	curl_global_cleanup();
}

TestSuite(health, .init = setup, .fini = teardown);

Test(health, metrics_endpoint_serves_the_exposition_format)
{
	struct reply r = http(health_server_metrics_port(server), "GET", "/metrics");
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.content_type, METRICS_CONTENT_TYPE);
	cr_assert_str_eq(r.body, "# HELP karpenter_nodeclaims_created_total Number of nodeclaims created.\n"
				 "# TYPE karpenter_nodeclaims_created_total counter\n"
				 "karpenter_nodeclaims_created_total{nodepool=\"default\"} 3\n");
	reply_free(&r);
}

Test(health, healthz_is_ok_while_heartbeats_arrive_and_503_when_they_stop)
{
	health_server_heartbeat(server);
	struct reply r = http(health_server_health_port(server), "GET", "/healthz");
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.body, "ok\n");
	reply_free(&r);

	/* Let the stall window pass without a heartbeat. */
	nanosleep(&(struct timespec){ .tv_sec = STALL_SECONDS, .tv_nsec = 300 * 1000000 }, NULL);
	r = http(health_server_health_port(server), "GET", "/healthz");
	cr_assert_eq(r.status, 503);
	cr_assert(strstr(r.body, "event loop stalled: no heartbeat for "), "%s", r.body);
	cr_assert(strstr(r.body, "s (limit 2s)\n"), "%s", r.body);
	reply_free(&r);

	health_server_heartbeat(server);
	r = http(health_server_health_port(server), "GET", "/healthz");
	cr_assert_eq(r.status, 200);
	reply_free(&r);
}

Test(health, readyz_is_503_with_the_reason_until_the_daemon_declares_ready)
{
	struct reply r = http(health_server_health_port(server), "GET", "/readyz");
	cr_assert_eq(r.status, 503);
	cr_assert_str_eq(r.body, "not ready: starting\n");
	reply_free(&r);

	health_server_set_ready(server, false, "state replica not synced");
	r = http(health_server_health_port(server), "GET", "/readyz");
	cr_assert_eq(r.status, 503);
	cr_assert_str_eq(r.body, "not ready: state replica not synced\n");
	reply_free(&r);

	health_server_set_ready(server, true, NULL);
	r = http(health_server_health_port(server), "GET", "/readyz");
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.body, "ok\n");
	reply_free(&r);
}

Test(health, unknown_path_is_404_and_other_methods_are_405)
{
	struct reply r = http(health_server_health_port(server), "GET", "/nope");
	cr_assert_eq(r.status, 404);
	reply_free(&r);

	r = http(health_server_metrics_port(server), "POST", "/metrics");
	cr_assert_eq(r.status, 405);
	reply_free(&r);

	r = http(health_server_health_port(server), "DELETE", "/readyz");
	cr_assert_eq(r.status, 405);
	reply_free(&r);
}

Test(health, each_port_serves_only_its_own_paths)
{
	struct reply r = http(health_server_health_port(server), "GET", "/metrics");
	cr_assert_eq(r.status, 404);
	reply_free(&r);

	r = http(health_server_metrics_port(server), "GET", "/healthz");
	cr_assert_eq(r.status, 404);
	reply_free(&r);

	r = http(health_server_metrics_port(server), "GET", "/readyz");
	cr_assert_eq(r.status, 404);
	reply_free(&r);
}

Test(health, equal_ports_share_one_listener_for_all_paths)
{
	struct health_server *probe, *shared;

	/* Find a free port, then ask for it for both. */
	cr_assert_eq(health_server_new(NULL, HEALTH_PORT_DISABLED, HEALTH_PORT_EPHEMERAL, 0, &probe), 0);
	int port = health_server_health_port(probe);
	health_server_free(probe);
	cr_assert_eq(health_server_new(reg, port, port, 0, &shared), 0);
	cr_assert_eq(health_server_metrics_port(shared), port);
	cr_assert_eq(health_server_health_port(shared), port);

	struct reply r = http((uint16_t)port, "GET", "/metrics");
	cr_assert_eq(r.status, 200);
	reply_free(&r);
	r = http((uint16_t)port, "GET", "/healthz");
	cr_assert_eq(r.status, 200);
	reply_free(&r);
	health_server_free(shared);
}

/* In a pod the kubelet probes the pod's IP: every address, the loopback
 * included; anything but an address literal is refused. */
Test(health, listens_on_the_address_given_and_refuses_a_name)
{
	struct health_server *any, *bad = NULL;

	cr_assert_eq(health_server_new_at("0.0.0.0", reg, HEALTH_PORT_DISABLED, HEALTH_PORT_EPHEMERAL, 0,
					  &any), 0);
	struct reply r = http(health_server_health_port(any), "GET", "/healthz");
	cr_assert_eq(r.status, 200);
	reply_free(&r);
	health_server_free(any);
	cr_assert_eq(health_server_new_at("localhost", reg, HEALTH_PORT_DISABLED, HEALTH_PORT_EPHEMERAL,
					  0, &bad), -EINVAL);
	cr_assert_null(bad);
	cr_assert_eq(health_server_new_at("127.0.0.1:80", reg, HEALTH_PORT_DISABLED,
					  HEALTH_PORT_EPHEMERAL, 0, &bad), -EINVAL);
}

Test(health, disabled_ports_have_no_listener)
{
	struct health_server *none;
	cr_assert_eq(health_server_new(NULL, HEALTH_PORT_DISABLED, HEALTH_PORT_DISABLED, 0, &none), 0);
	cr_assert_eq(health_server_metrics_port(none), 0);
	cr_assert_eq(health_server_health_port(none), 0);
	health_server_free(none);
}

Test(health, rejects_a_metrics_port_without_registry_and_ports_out_of_range)
{
	struct health_server *bad;
	cr_assert_eq(health_server_new(NULL, HEALTH_PORT_EPHEMERAL, HEALTH_PORT_DISABLED, 0, &bad), -EINVAL);
	cr_assert_eq(health_server_new(NULL, HEALTH_PORT_DISABLED, 65536, 0, &bad), -EINVAL);
	cr_assert_eq(health_server_new(NULL, HEALTH_PORT_DISABLED, -2, 0, &bad), -EINVAL);
}

struct prober {
	uint16_t port;
	long status;
	atomic_bool done;
};

static void *probe(void *arg)
{
	struct prober *p = arg;
	char url[64];
	CURL *curl = curl_easy_init();

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", p->port);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, 5L);
	if (curl_easy_perform(curl) == CURLE_OK)
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &p->status);
	curl_easy_cleanup(curl);
	atomic_store(&p->done, true);
	return NULL;
}

Test(health, probes_answer_while_the_main_thread_is_busy)
{
	struct prober p = { .port = health_server_health_port(server) };
	struct timespec start, now;
	pthread_t t;

	health_server_heartbeat(server);
	clock_gettime(CLOCK_MONOTONIC, &start);
	cr_assert_eq(pthread_create(&t, NULL, probe, &p), 0);
	/* Spin like a long solve: no event loop runs on this thread. */
	double elapsed;
	do {
		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed = (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
	} while (!atomic_load(&p.done) && elapsed < 0.8);
	cr_assert(atomic_load(&p.done), "no answer within %.2fs of busy main thread", elapsed);
	pthread_join(t, NULL);
	cr_assert_eq(p.status, 200);
}

Test(health, a_taken_port_is_reported_as_eaddrinuse)
{
	struct health_server *second;
	cr_assert_eq(health_server_new(NULL, HEALTH_PORT_DISABLED, health_server_health_port(server), 0,
				       &second), -EADDRINUSE);
}

static int stop_loop(struct loop *loop, void *userdata)
{
	loop_exit(loop, 0);
	return 0;
}

Test(health, a_turning_loop_keeps_healthz_ok_past_the_stall_window)
{
	struct loop *loop;

	cr_assert_eq(loop_new(&loop, "kanna-test"), 0);
	cr_assert_eq(health_server_attach_loop(server, loop), 0);
	/* Turn the loop for longer than the stall window. */
	cr_assert_eq(loop_add_timer(loop, (STALL_SECONDS * 1000 + 500) * 1000, stop_loop, NULL, NULL), 0);
	cr_assert_eq(loop_run(loop), 0);
	struct reply r = http(health_server_health_port(server), "GET", "/healthz");
	cr_assert_eq(r.status, 200, "%s", r.body);
	reply_free(&r);
	loop_free(loop);
}

struct stuck {
	long status;
};

/* A callback that never returns in time: the loop cannot turn meanwhile. */
static int stuck_callback(struct loop *loop, void *userdata)
{
	struct stuck *s = userdata;
	nanosleep(&(struct timespec){ .tv_sec = STALL_SECONDS, .tv_nsec = 500 * 1000000 }, NULL);
	struct reply r = http(health_server_health_port(server), "GET", "/healthz");
	s->status = r.status;
	reply_free(&r);
	loop_exit(loop, 0);
	return 0;
}

Test(health, a_loop_stuck_in_one_callback_turns_healthz_503)
{
	struct loop *loop;
	struct stuck s = { 0 };

	cr_assert_eq(loop_new(&loop, "kanna-test"), 0);
	cr_assert_eq(health_server_attach_loop(server, loop), 0);
	cr_assert_eq(loop_add_timer(loop, 100 * 1000, stuck_callback, &s, NULL), 0);
	cr_assert_eq(loop_run(loop), 0);
	cr_assert_eq(s.status, 503);
	loop_free(loop);
}

/* libmicrohttpd warns at every start when its logger is not the first
 * option (and logs anything before it to stderr on its own). */
Test(health, starting_the_listeners_logs_no_warning)
{
	struct health_server *quiet;
	char *out = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&out, &len);

	cr_assert_not_null(mem);
	log_set_level(LOG_LEVEL_DEBUG);
	log_set_stream(mem);
	cr_assert_eq(health_server_new(reg, HEALTH_PORT_EPHEMERAL, HEALTH_PORT_EPHEMERAL, 0, &quiet), 0);
	health_server_free(quiet);
	log_set_stream(NULL);
	log_set_level(LOG_LEVEL_ERROR);
	fclose(mem);
	cr_assert_null(strstr(out, "health server"), "the listeners logged: %s", out);
	free(out);
}
