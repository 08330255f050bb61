/* Event recorder: the Event object's shape, folding of repeats. */
#include <criterion/criterion.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kube-events.h"
#include "common/loop.h"

static struct {
	struct MHD_Daemon *d;
	uint16_t port;
	pthread_mutex_t lock;
	int posts, patches;
	char last_path[256];
	char last_body[4096];
} srv = { .lock = PTHREAD_MUTEX_INITIALIZER };

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
	pthread_mutex_unlock(&srv.lock);
	free(up);
	*state = NULL;
	resp = MHD_create_response_from_buffer(2, (void *)"{}", MHD_RESPMEM_PERSISTENT);
	ret = MHD_queue_response(conn, 201, resp);
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
	cr_assert_eq(kube_client_new(&client, loop, cfg, NULL), 0);
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
	struct kube_client_options opts = { .qps = 0.5, .burst = 1 };
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
