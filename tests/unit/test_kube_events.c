/*
 * Event recorder: the Event object's shape, folding of repeats, and what
 * happens when a write fails. The fake API server remembers the Events
 * created (a PATCH of another is 404, a second create of one 409) and
 * answers the next fail_posts creates with fail_status.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kube-events.h"
#include "common/log.h"
#include "common/loop.h"

#define MAX_EVENTS 64

static struct {
	struct MHD_Daemon *d;
	uint16_t port;
	pthread_mutex_t lock;
	int posts, patches;
	char last_path[256];
	char last_body[4096];
	char names[MAX_EVENTS][320];
	int n_names;
	int fail_posts;
	unsigned fail_status;
} srv = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool known_name(const char *name)
{
	for (int i = 0; i < srv.n_names; i++)
		if (strcmp(srv.names[i], name) == 0)
			return true;
	return false;
}

/* The status the fake answers a write with; remembers created Events. */
static unsigned answer(const char *method, const char *url, const char *body)
{
	if (strcmp(method, "POST") == 0) {
		json_t *ev = json_loads(body, 0, NULL);
		const char *name = json_string_value(json_object_get(json_object_get(ev, "metadata"), "name"));
		unsigned status = 201;

		if (srv.fail_posts > 0) {
			srv.fail_posts--;
			status = srv.fail_status;
		} else if (!name) {
			status = 422;
		} else if (known_name(name)) {
			status = 409;
		} else if (srv.n_names < MAX_EVENTS) {
			snprintf(srv.names[srv.n_names++], sizeof(srv.names[0]), "%s", name);
		}
		json_decref(ev);
		return status;
	}
	if (strcmp(method, "PATCH") == 0) {
		const char *slash = strrchr(url, '/');
		return slash && known_name(slash + 1) ? 200 : 404;
	}
	return 200;
}

struct upload {
	char buf[4096];
	size_t len;
};

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *data,
			       size_t *size, void **state)
{
	struct upload *up = *state;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned status;

	(void)cls; (void)version;
	if (!up) {
		*state = calloc(1, sizeof(struct upload));
		return MHD_YES;
	}
	if (*size) {
		size_t n = *size < sizeof(up->buf) - 1 - up->len ? *size : sizeof(up->buf) - 1 - up->len;
		memcpy(up->buf + up->len, data, n);
		up->len += n;
		*size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&srv.lock);
	if (strcmp(method, "POST") == 0)
		srv.posts++;
	if (strcmp(method, "PATCH") == 0)
		srv.patches++;
	snprintf(srv.last_path, sizeof(srv.last_path), "%s %s", method, url);
	memcpy(srv.last_body, up->buf, up->len + 1);
	status = answer(method, url, up->buf);
	pthread_mutex_unlock(&srv.lock);
	free(up);
	*state = NULL;
	resp = MHD_create_response_from_buffer(2, (void *)"{}", MHD_RESPMEM_PERSISTENT);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static struct loop *loop;
static struct kube_client *client;

static int stop_soon(struct loop *l, void *userdata)
{
	(void)userdata;
	if (loop_http_running(l) == 0)
		loop_exit(l, 0);
	return 0;
}

static void run_until_idle(void)
{
	cr_assert_eq(loop_add_periodic(loop, "stop", 20000, stop_soon, NULL), 0);
	cr_assert_geq(loop_run(loop), 0);
	loop_remove_periodic(loop, "stop");
}

static void setup(void)
{
	struct kube_config *cfg = calloc(1, sizeof(*cfg));
	char server[64];
	srv.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, NULL,
				 MHD_OPTION_END);
	cr_assert_not_null(srv.d);
	srv.port = MHD_get_daemon_info(srv.d, MHD_DAEMON_INFO_BIND_PORT)->port;
	snprintf(server, sizeof(server), "http://127.0.0.1:%u", srv.port);
	cfg->server = strdup(server);
	cr_assert_eq(loop_new(&loop, "test"), 0);
	cr_assert_eq(kube_client_new(&client, loop, cfg,
				     &(struct kube_client_options){ .allow_insecure_http = true }), 0);
}

static void teardown(void)
{
	kube_client_free(client);
	loop_free(loop);
	MHD_stop_daemon(srv.d);
}

TestSuite(kube_events, .init = setup, .fini = teardown, .timeout = 20);

static const struct kube_object_ref pod = { "v1", "Pod", "default", "inflate-1", "uid-1" };

Test(kube_events, an_event_is_written_in_the_core_v1_shape_on_the_object)
{
	struct kube_events *ev;
	json_t *body;
	cr_assert_eq(kube_events_new(&ev, client, "karpenter", "kanna-scheduler-0"), 0);
	cr_assert_eq(kube_event_record(ev, &pod, KUBE_EVENT_WARNING, "FailedScheduling",
				       "incompatible with nodepool %s", "default"), 0);
	run_until_idle();
	cr_assert_eq(srv.posts, 1);
	cr_assert_str_eq(srv.last_path, "POST /api/v1/namespaces/default/events");
	body = json_loads(srv.last_body, 0, NULL);
	cr_assert_not_null(body);
	cr_assert_str_eq(json_string_value(json_object_get(body, "reason")), "FailedScheduling");
	cr_assert_str_eq(json_string_value(json_object_get(body, "type")), "Warning");
	cr_assert_str_eq(json_string_value(json_object_get(body, "message")),
			 "incompatible with nodepool default");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(body, "involvedObject"), "uid")),
			 "uid-1");
	cr_assert_eq(json_integer_value(json_object_get(body, "count")), 1);
	cr_assert(strncmp(json_string_value(json_object_get(json_object_get(body, "metadata"), "name")),
			  "inflate-1.", 10) == 0);
	json_decref(body);
	kube_events_free(ev);
}

Test(kube_events, repeats_are_folded_and_distinct_messages_are_not)
{
	struct kube_events *ev;
	struct kube_events_stats st;
	cr_assert_eq(kube_events_new(&ev, client, "karpenter", NULL), 0);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(kube_event_record(ev, &pod, KUBE_EVENT_NORMAL, "Nominated",
					       "Pod should schedule on: nodeclaim/default-abc"), 0);
	cr_assert_eq(kube_event_record(ev, &pod, KUBE_EVENT_NORMAL, "Nominated",
				       "Pod should schedule on: nodeclaim/default-xyz"), 0);
	run_until_idle();
	kube_events_get_stats(ev, &st);
	cr_assert_eq(srv.posts, 2);
	cr_assert_eq(st.created, 2);
	cr_assert_eq(st.suppressed, 4);
	cr_assert_eq(st.failed, 0);
	kube_events_free(ev);
}

Test(kube_events, incomplete_object_references_are_refused)
{
	struct kube_events *ev;
	struct kube_object_ref bad = { "v1", NULL, "default", "x", NULL };
	cr_assert_eq(kube_events_new(&ev, client, "karpenter", NULL), 0);
	cr_assert_eq(kube_event_record(ev, &bad, KUBE_EVENT_NORMAL, "X", "y"), -EINVAL);
	kube_events_free(ev);
}

static int posts_when_get_done = -1;

static void on_get_done(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	(void)c; (void)resp; (void)userdata;
	pthread_mutex_lock(&srv.lock);
	posts_when_get_done = srv.posts;
	pthread_mutex_unlock(&srv.lock);
	loop_exit(loop, 0);
}

/* Events wait in their own bucket: a burst of them does not hold back the
 * controller's own writes (client-go's recorder has its own client). */
Test(kube_events, events_are_paced_apart_from_the_clients_other_requests)
{
	struct kube_config *cfg = calloc(1, sizeof(*cfg));
	struct kube_client_options opts = { .qps = 0.5, .burst = 1, .allow_insecure_http = true };
	struct kube_client *slow;
	struct kube_events *ev;
	char server[64];

	snprintf(server, sizeof(server), "http://127.0.0.1:%u", srv.port);
	cr_assert_not_null(cfg);
	cfg->server = strdup(server);
	cr_assert_eq(kube_client_new(&slow, loop, cfg, &opts), 0);
	cr_assert_eq(kube_events_new(&ev, slow, "karpenter", NULL), 0);
	/* Two distinct events: the second waits two seconds for a token. */
	cr_assert_eq(kube_event_record(ev, &pod, KUBE_EVENT_NORMAL, "Nominated", "first"), 0);
	cr_assert_eq(kube_event_record(ev, &pod, KUBE_EVENT_NORMAL, "Nominated", "second"), 0);
	cr_assert_eq(kube_request(slow, "GET", "/version", NULL, NULL, on_get_done, NULL), 0);
	cr_assert_geq(loop_run(loop), 0);
	/* 2: the GET waited behind the second event's token. */
	cr_assert_eq(posts_when_get_done, 1, "the GET did not go out ahead of the second event (%d)",
		     posts_when_get_done);
	kube_events_free(ev);
	kube_client_free(slow);
}

/* The recorder's clock, moved by the tests past the update interval. */
static uint64_t fake_now = 1000000000000ULL;

static uint64_t fake_clock(void)
{
	return fake_now;
}

#define UPDATE_DUE (KUBE_EVENT_UPDATE_INTERVAL_USEC + 1)

static struct kube_events *recorder(void)
{
	struct kube_events *ev;

	cr_assert_eq(kube_events_new(&ev, client, "karpenter", NULL), 0);
	kube_events_set_clock(ev, fake_clock);
	return ev;
}

/* Turns the loop until every write of ev was answered (the client's
 * retries included); the loop stays usable for the next write. */
static void run_until_written(struct kube_events *ev)
{
	struct kube_events_stats st;

	for (int i = 0; i < 1000; i++) {
		kube_events_get_stats(ev, &st);
		if (st.in_flight == 0)
			return;
		cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0);
	}
	cr_assert_fail("%" PRIu64 " Event write(s) still in flight after 10 s", st.in_flight);
}

static void record_failed_scheduling(struct kube_events *ev, const struct kube_object_ref *obj)
{
	cr_assert_eq(kube_event_record(ev, obj, KUBE_EVENT_WARNING, "FailedScheduling",
				       "Failed to schedule pod, incompatible with nodepool default"), 0);
	run_until_written(ev);
}

/* A pending pod's only explanation must not vanish for the aggregation
 * window because one write of it failed. */
Test(kube_events, a_failed_create_is_forgotten_so_the_next_repeat_creates_the_event)
{
	struct kube_events *ev = recorder();
	struct kube_events_stats st;

	srv.fail_posts = 1;
	srv.fail_status = 403;
	record_failed_scheduling(ev, &pod);
	kube_events_get_stats(ev, &st);
	cr_assert_eq(st.failed, 1);
	fake_now += UPDATE_DUE;
	record_failed_scheduling(ev, &pod);
	cr_assert_eq(srv.patches, 0, "the repeat updated an Event that was never created");
	cr_assert_eq(srv.posts, 2);
	cr_assert_eq(srv.n_names, 1, "the Event does not exist");
	kube_events_get_stats(ev, &st);
	cr_assert_eq(st.failed, 1);
	kube_events_free(ev);
}

/* An Event names itself, so its create is safe to send again. */
Test(kube_events, a_create_answered_500_is_retried)
{
	struct kube_events *ev = recorder();
	struct kube_events_stats st;

	srv.fail_posts = 1;
	srv.fail_status = 500;
	record_failed_scheduling(ev, &pod);
	kube_events_get_stats(ev, &st);
	cr_assert_eq(srv.posts, 2);
	cr_assert_eq(srv.n_names, 1, "the Event was not created");
	cr_assert_eq(st.failed, 0);
	kube_events_free(ev);
}

Test(kube_events, a_create_answered_409_already_exists_is_no_failure)
{
	struct kube_events *ev = recorder();
	struct kube_events_stats st;

	srv.fail_posts = 1;
	srv.fail_status = 409;
	record_failed_scheduling(ev, &pod);
	kube_events_get_stats(ev, &st);
	cr_assert_eq(st.failed, 0);
	kube_events_free(ev);
}

/* Events expire (the API server's TTL is an hour) or get deleted while
 * their recorder still folds repeats into them. */
Test(kube_events, an_update_answered_404_creates_the_event_again)
{
	struct kube_events *ev = recorder();
	struct kube_events_stats st;
	json_t *body;

	record_failed_scheduling(ev, &pod);
	cr_assert_eq(srv.n_names, 1);
	pthread_mutex_lock(&srv.lock);
	srv.n_names = 0; /* expired */
	pthread_mutex_unlock(&srv.lock);
	fake_now += UPDATE_DUE;
	record_failed_scheduling(ev, &pod);
	cr_assert_eq(srv.patches, 1);
	cr_assert_eq(srv.posts, 2, "the Event was not created again");
	cr_assert_eq(srv.n_names, 1);
	body = json_loads(srv.last_body, 0, NULL);
	cr_assert_eq(json_integer_value(json_object_get(body, "count")), 2);
	cr_assert_str_eq(json_string_value(json_object_get(body, "reason")), "FailedScheduling");
	json_decref(body);
	kube_events_get_stats(ev, &st);
	cr_assert_eq(st.recreated, 1);
	cr_assert_eq(st.failed, 0);
	/* The Event created again is the one updated from now on. */
	fake_now += UPDATE_DUE;
	record_failed_scheduling(ev, &pod);
	cr_assert_eq(srv.patches, 2);
	cr_assert_eq(srv.posts, 2);
	kube_events_get_stats(ev, &st);
	cr_assert_eq(st.failed, 0);
	kube_events_free(ev);
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* A storm of one kind of failure is logged once a minute with a count,
 * and does not silence another kind. */
Test(kube_events, each_kind_of_failure_is_logged_once_per_interval)
{
	struct kube_events *ev = recorder();
	char *out = NULL, name[32];
	size_t len = 0;
	FILE *mem = open_memstream(&out, &len);

	cr_assert_not_null(mem);
	log_set_stream(mem);
	srv.fail_posts = 12;
	srv.fail_status = 403;
	for (int i = 0; i < 12; i++) {
		struct kube_object_ref p = pod;
		snprintf(name, sizeof(name), "inflate-%d", i);
		p.name = name;
		record_failed_scheduling(ev, &p);
	}
	srv.fail_posts = 1;
	srv.fail_status = 422;
	record_failed_scheduling(ev, &pod);
	fake_now += KUBE_EVENT_FAILURE_LOG_INTERVAL_USEC;
	srv.fail_posts = 1;
	srv.fail_status = 403;
	record_failed_scheduling(ev, &pod);
	log_set_stream(NULL);
	fclose(mem);
	cr_assert_eq(count_lines(out, "HTTP 403"), 2, "403s logged: %s", out);
	cr_assert_eq(count_lines(out, "HTTP 422"), 1, "the 422 was not logged: %s", out);
	cr_assert_eq(count_lines(out, "and 11 more such failure(s)"), 1, "%s", out);
	cr_assert_eq(count_lines(out, "Failed to create an Event on Pod default/inflate-3 (FailedScheduling)"),
		     0, "%s", out);
	cr_assert_eq(count_lines(out, "Failed to create an Event on Pod default/inflate-0 (FailedScheduling)"),
		     1, "%s", out);
	free(out);
	kube_events_free(ev);
}
