/* The asynchronous AWS client end to end on the event loop, against a local
 * libmicrohttpd server that verifies every request's SigV4 signature with
 * sigv4_verify() (as kanna-sim does) and answers from a script: retries on
 * throttling, 5xx and network errors, final errors surfaced by code and
 * message, the JSON protocol, session tokens, and the token bucket. */
#include <criterion/criterion.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/aws.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/sigv4.h"

#define KEY_ID "AKIDKANNATEST"
#define SECRET "kanna-test-secret"
#define MAX_SCRIPT 16
#define MAX_BODY 65536
#define MAX_HEADERS 32
/* Whole-test guard: a hung transfer fails the test instead of hanging. */
#define TEST_TIMEOUT_USEC (20ULL * 1000 * 1000)

static const char throttled[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>RequestLimitExceeded"
	"</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>"
	"5ba9a3e2-1b5d-4a44-a0f5-b1d0b8c1e0e7</RequestID></Response>";
static const char ice[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>"
	"InsufficientInstanceCapacity</Code><Message>We currently do not have sufficient m5.large "
	"capacity in the Availability Zone you requested (us-west-2a).</Message></Error></Errors>"
	"<RequestID>ea966190-f9aa-478e-9ede-3c5e1b1d6b4a</RequestID></Response>";
static const char unavailable[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>Unavailable</Code>"
	"<Message>The server is overloaded.</Message></Error></Errors><RequestID>r</RequestID></Response>";
static const char described[] =
	"<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>"
	"8f7724cf</requestId><reservationSet><item><instancesSet><item><instanceId>i-1234567890abcdef0"
	"</instanceId></item></instancesSet></item></reservationSet></DescribeInstancesResponse>";
static const char parameter[] =
	"{\"Parameter\":{\"Name\":\"/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/"
	"standard/recommended/image_id\",\"Type\":\"String\",\"Value\":\"ami-0123456789abcdef0\","
	"\"Version\":42}}";

struct scripted {
	unsigned status;
	const char *body;
};

static struct {
	struct MHD_Daemon *daemon;
	unsigned port;
	pthread_mutex_t lock;
	struct scripted script[MAX_SCRIPT];
	size_t n_script;
	struct scripted after; /* answer once the script is exhausted */
	size_t served;
	int bad_signatures;
	char last_body[MAX_BODY];
	char last_target[128];
	char last_token[128];
	char last_content_type[128];
} srv;

struct upload {
	char data[MAX_BODY];
	size_t len;
};

struct header_list {
	struct sigv4_header h[MAX_HEADERS];
	size_t n;
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	struct header_list *l = cls;

	if (l->n < MAX_HEADERS)
		l->h[l->n++] = (struct sigv4_header){ key, value ? value : "" };
	return MHD_YES;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *body)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret = MHD_queue_response(conn, status, r);

	MHD_destroy_response(r);
	return ret;
}

/* Verify like kanna-sim, then answer the next scripted response. */
static enum MHD_Result serve(struct MHD_Connection *conn, const char *url, const char *method,
			     struct upload *up)
{
	static const struct sigv4_credentials keys[] = { { KEY_ID, SECRET, NULL } };
	struct header_list headers = { .n = 0 };
	char payload[65], err[256] = "";
	const char *auth, *v;
	struct scripted next;
	int r;

	MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, &headers);
	auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	up->data[up->len] = '\0';
	sigv4_sha256_hex(up->data, up->len, payload);
	struct sigv4_request req = { .method = method, .path = url, .headers = headers.h,
				     .n_headers = headers.n, .payload_sha256_hex = payload };
	r = sigv4_verify(&req, auth, keys, 1, time(NULL), NULL, err, sizeof(err));
	pthread_mutex_lock(&srv.lock);
	snprintf(srv.last_body, sizeof(srv.last_body), "%s", up->data);
	v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Amz-Target");
	snprintf(srv.last_target, sizeof(srv.last_target), "%s", v ? v : "");
	v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Amz-Security-Token");
	snprintf(srv.last_token, sizeof(srv.last_token), "%s", v ? v : "");
	v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
	snprintf(srv.last_content_type, sizeof(srv.last_content_type), "%s", v ? v : "");
	if (r < 0) {
		srv.bad_signatures++;
		pthread_mutex_unlock(&srv.lock);
		fprintf(stderr, "signature rejected: %s\n", err);
		return reply(conn, 403, "<Response><Errors><Error><Code>SignatureDoesNotMatch</Code>"
					"<Message>bad</Message></Error></Errors></Response>");
	}
	next = srv.served < srv.n_script ? srv.script[srv.served] : srv.after;
	srv.served++;
	pthread_mutex_unlock(&srv.lock);
	return reply(conn, next.status, next.body);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct upload *up = *con_cls;

	if (!up) {
		up = calloc(1, sizeof(*up));
		*con_cls = up;
		return up ? MHD_YES : MHD_NO;
	}
	if (*upload_data_size > 0) {
		size_t n = MIN(*upload_data_size, sizeof(up->data) - 1 - up->len);

		memcpy(up->data + up->len, upload_data, n);
		up->len += n;
		*upload_data_size = 0;
		return MHD_YES;
	}
	return serve(conn, url, method, up);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	free(*con_cls);
	*con_cls = NULL;
}

static void script(const struct scripted *s, size_t n)
{
	memcpy(srv.script, s, n * sizeof(*s));
	srv.n_script = n;
	srv.served = 0;
}

static void setup(void)
{
	char url[64];

	log_setup("test-aws-client", LOG_FORMAT_TEXT, LOG_LEVEL_WARN);
	pthread_mutex_init(&srv.lock, NULL);
	srv.daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				      on_request, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
				      MHD_OPTION_END);
	cr_assert(srv.daemon);
	srv.port = MHD_get_daemon_info(srv.daemon, MHD_DAEMON_INFO_BIND_PORT)->port;
	srv.after = (struct scripted){ 500, "script exhausted" };
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", srv.port);
	unsetenv("AWS_ENDPOINT_URL_EC2");
	unsetenv("AWS_ENDPOINT_URL_SSM");
	setenv("AWS_ENDPOINT_URL", url, 1);
}

static void teardown(void)
{
	MHD_stop_daemon(srv.daemon);
}

TestSuite(aws_client, .init = setup, .fini = teardown);

/* ---- test harness: a loop, a client, calls that record their outcome ---- */

struct outcome {
	bool done;
	int result;
	unsigned attempts;
	long http_status;
	char code[AWS_ERROR_CODE_MAX];
	char text[2048];
	char first_instance[64];
	char ami[64];
};

struct harness {
	struct loop *loop;
	struct aws_client *client;
	struct outcome out[16];
	size_t expected;
	size_t finished;
};

static uint64_t rng_zero(void *userdata)
{
	return 0; /* no jitter wait: tests run fast */
}

static void on_done(struct aws_client *c, const struct aws_response *r, void *userdata)
{
	struct outcome *o = userdata;

	o->done = true;
	o->result = r->result;
	o->attempts = r->attempts;
	o->http_status = r->http_status;
	snprintf(o->code, sizeof(o->code), "%s", r->error.code);
	snprintf(o->text, sizeof(o->text), "%s", aws_response_strerror(r));
	if (r->xml) {
		const char *id = aws_xml_text(r->xml, "reservationSet/item/instancesSet/item/instanceId");
		snprintf(o->first_instance, sizeof(o->first_instance), "%s", id ? id : "");
	}
	if (r->json)
		snprintf(o->ami, sizeof(o->ami), "%s",
			 json_string_value(json_object_get(json_object_get(r->json, "Parameter"), "Value")) ?: "");
}

static struct harness *current;

static void on_done_count(struct aws_client *c, const struct aws_response *r, void *userdata)
{
	on_done(c, r, userdata);
	if (++current->finished == current->expected)
		loop_exit(current->loop, 0);
}

static int on_guard(struct loop *loop, void *userdata)
{
	loop_exit(loop, 1);
	return 0;
}

static void harness_init(struct harness *h, const struct aws_client_options *extra,
			 const char *session_token)
{
	struct aws_credentials creds = { .access_key_id = KEY_ID, .secret_access_key = SECRET,
					 .session_token = (char *)session_token, .source = "test" };
	struct aws_client_options o = { .region = "us-west-2", .rng = rng_zero };

	memset(h, 0, sizeof(*h));
	if (extra) {
		o = *extra;
		o.region = "us-west-2";
		if (!o.rng)
			o.rng = rng_zero;
	}
	current = h;
	cr_assert_eq(loop_new(&h->loop, "test-aws-client"), 0);
	cr_assert_eq(aws_client_new(h->loop, &o, &creds, &h->client), 0);
	cr_assert_eq(loop_add_timer(h->loop, TEST_TIMEOUT_USEC, on_guard, NULL, NULL), 0);
}

static void harness_run(struct harness *h, size_t expected)
{
	h->expected = expected;
	cr_assert_eq(loop_run(h->loop), 0, "the calls did not finish in time");
	aws_client_free(h->client);
	loop_free(h->loop);
}

static void describe_instances(struct harness *h, struct outcome *o)
{
	struct aws_query *q = NULL;

	cr_assert_eq(aws_query_new("DescribeInstances", "2016-11-15", &q), 0);
	cr_assert_eq(aws_query_add(q, "i-1234567890abcdef0", "InstanceId.%u", 1), 0);
	cr_assert_eq(aws_call_query(h->client, "ec2", q, on_done_count, o), 0);
}

Test(aws_client, retries_ec2_throttling_then_succeeds)
{
	static const struct scripted s[] = { { 503, throttled }, { 503, throttled }, { 200, described } };
	struct harness h;

	script(s, ARRAY_SIZE(s));
	harness_init(&h, NULL, NULL);
	describe_instances(&h, &h.out[0]);
	harness_run(&h, 1);
	cr_assert_eq(h.out[0].result, 0, "%s", h.out[0].text);
	cr_assert_eq(h.out[0].attempts, 3);
	cr_assert_eq(srv.served, 3);
	cr_assert_eq(srv.bad_signatures, 0);
	cr_assert_str_eq(h.out[0].first_instance, "i-1234567890abcdef0");
	cr_assert_str_eq(srv.last_body, "Action=DescribeInstances&Version=2016-11-15&InstanceId.1=i-1234567890abcdef0");
	cr_assert(strstr(srv.last_content_type, "application/x-www-form-urlencoded"));
}

Test(aws_client, surfaces_a_final_error_code_and_message_without_retrying)
{
	/* EC2 answers capacity errors with HTTP 500: the code decides, and
	 * the launcher must move to its next candidate at once */
	static const struct scripted s[] = { { 500, ice }, { 200, described } };
	struct harness h;
	char line[2200];

	script(s, ARRAY_SIZE(s));
	harness_init(&h, NULL, NULL);
	describe_instances(&h, &h.out[0]);
	harness_run(&h, 1);
	cr_assert_eq(h.out[0].result, -EREMOTEIO);
	cr_assert_eq(h.out[0].attempts, 1);
	cr_assert_eq(h.out[0].http_status, 500);
	cr_assert_eq(srv.served, 1);
	cr_assert_str_eq(h.out[0].code, "InsufficientInstanceCapacity");
	snprintf(line, sizeof(line), "Failed to CreateFleet: %s", h.out[0].text);
	cr_assert_str_eq(line, "Failed to CreateFleet: InsufficientInstanceCapacity: We currently do not "
			       "have sufficient m5.large capacity in the Availability Zone you requested "
			       "(us-west-2a).");
}

Test(aws_client, gives_up_after_the_attempt_limit)
{
	static const struct scripted s[] = { { 503, unavailable }, { 503, unavailable }, { 503, unavailable },
					     { 200, described } };
	struct aws_client_options o = { .retry = { .max_attempts = 3, .base_usec = 1000, .cap_usec = 1000 } };
	struct harness h;

	script(s, ARRAY_SIZE(s));
	harness_init(&h, &o, NULL);
	describe_instances(&h, &h.out[0]);
	harness_run(&h, 1);
	cr_assert_eq(h.out[0].result, -EREMOTEIO);
	cr_assert_eq(h.out[0].attempts, 3);
	cr_assert_eq(srv.served, 3);
	cr_assert_str_eq(h.out[0].code, "Unavailable");
}

Test(aws_client, retries_network_errors)
{
	struct aws_client_options o = { .retry = { .max_attempts = 2, .base_usec = 1000, .cap_usec = 1000 } };
	struct harness h;

	setenv("AWS_ENDPOINT_URL_EC2", "http://127.0.0.1:9", 1); /* refused */
	harness_init(&h, &o, NULL);
	describe_instances(&h, &h.out[0]);
	harness_run(&h, 1);
	cr_assert_eq(h.out[0].result, -ECONNREFUSED, "%s", h.out[0].text);
	cr_assert_eq(h.out[0].attempts, 2);
	cr_assert(strstr(h.out[0].text, "127.0.0.1"), "%s", h.out[0].text);
}

Test(aws_client, json_protocol_call_to_ssm)
{
	static const struct scripted s[] = { { 200, parameter } };
	struct harness h;
	json_t *body;

	script(s, ARRAY_SIZE(s));
	harness_init(&h, NULL, NULL);
	body = json_pack("{s:s}", "Name", "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/"
					  "standard/recommended/image_id");
	cr_assert_eq(aws_call_json(h.client, "ssm", "AmazonSSM.GetParameter", body, on_done_count, &h.out[0]), 0);
	harness_run(&h, 1);
	cr_assert_eq(h.out[0].result, 0, "%s", h.out[0].text);
	cr_assert_str_eq(h.out[0].ami, "ami-0123456789abcdef0");
	cr_assert_str_eq(srv.last_target, "AmazonSSM.GetParameter");
	cr_assert_str_eq(srv.last_content_type, "application/x-amz-json-1.1");
	cr_assert(strstr(srv.last_body, "\"Name\""));
	cr_assert_eq(srv.bad_signatures, 0);
}

Test(aws_client, signs_the_session_token)
{
	static const struct scripted s[] = { { 200, described } };
	struct harness h;

	script(s, ARRAY_SIZE(s));
	harness_init(&h, NULL, "kanna-session-token");
	describe_instances(&h, &h.out[0]);
	harness_run(&h, 1);
	cr_assert_eq(h.out[0].result, 0, "%s", h.out[0].text);
	cr_assert_str_eq(srv.last_token, "kanna-session-token");
	cr_assert_eq(srv.bad_signatures, 0);
}

Test(aws_client, wrong_secret_is_rejected_and_not_retried)
{
	static const struct scripted s[] = { { 200, described } };
	struct aws_credentials wrong = { .access_key_id = KEY_ID, .secret_access_key = "not-the-secret",
					 .source = "test" };
	struct harness h;

	script(s, ARRAY_SIZE(s));
	harness_init(&h, NULL, NULL);
	cr_assert_eq(aws_client_set_credentials(h.client, &wrong), 0);
	describe_instances(&h, &h.out[0]);
	harness_run(&h, 1);
	cr_assert_eq(h.out[0].result, -EREMOTEIO);
	cr_assert_eq(h.out[0].attempts, 1);
	cr_assert_str_eq(h.out[0].code, "SignatureDoesNotMatch");
	cr_assert_eq(srv.bad_signatures, 1);
}

Test(aws_client, token_bucket_spaces_calls_beyond_the_burst)
{
	static const struct scripted s[] = { { 200, described }, { 200, described }, { 200, described },
					     { 200, described } };
	/* 10/s with a burst of 1: four calls need three 100 ms refills */
	struct aws_client_options o = { .rate = 10.0, .burst = 1 };
	struct harness h;
	struct timespec a, b;
	double elapsed;

	script(s, ARRAY_SIZE(s));
	harness_init(&h, &o, NULL);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 4; i++)
		describe_instances(&h, &h.out[i]);
	harness_run(&h, 4);
	clock_gettime(CLOCK_MONOTONIC, &b);
	elapsed = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	for (int i = 0; i < 4; i++)
		cr_assert_eq(h.out[i].result, 0, "%s", h.out[i].text);
	cr_assert_geq(elapsed, 0.29, "four calls took %.3f s", elapsed);
	cr_assert_lt(elapsed, 2.0, "four calls took %.3f s", elapsed);
}

/* Refresh test: the first call signs with the expiring (stale) secret and
 * starts the background refresh; once the client holds the refreshed
 * credentials a second call goes through. */
static struct outcome refresh_out[2];

static void on_refreshed_call_done(struct aws_client *c, const struct aws_response *r, void *userdata)
{
	on_done(c, r, &refresh_out[1]);
	loop_exit(current->loop, 0);
}

static int on_poll_credentials(struct loop *loop, void *userdata)
{
	const struct aws_credentials *now = aws_client_credentials(current->client);
	struct aws_query *q = NULL;

	if (!streq(now->source, "environment"))
		return loop_add_timer(loop, 10000, on_poll_credentials, NULL, NULL);
	cr_assert_eq(aws_query_new("DescribeInstances", "2016-11-15", &q), 0);
	return aws_call_query(current->client, "ec2", q, on_refreshed_call_done, NULL);
}

static void on_stale_call_done(struct aws_client *c, const struct aws_response *r, void *userdata)
{
	on_done(c, r, &refresh_out[0]);
	cr_assert_eq(loop_add_timer(current->loop, 1000, on_poll_credentials, NULL, NULL), 0);
}

Test(aws_client, refreshes_expiring_credentials_in_the_background)
{
	static const struct scripted s[] = { { 200, described } };
	struct aws_credentials_options copts = { .profile = "default" };
	struct aws_client_options o = { .credentials_options = &copts, .rng = rng_zero };
	struct aws_credentials expiring = { .access_key_id = KEY_ID, .secret_access_key = "stale-secret",
					    .session_token = "stale-token",
					    .expiration = time(NULL) + 60, .source = "test" };
	struct harness h;
	struct aws_query *q = NULL;

	/* the chain now yields the good key (environment) */
	setenv("AWS_ACCESS_KEY_ID", KEY_ID, 1);
	setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
	unsetenv("AWS_SESSION_TOKEN");
	script(s, ARRAY_SIZE(s));
	harness_init(&h, &o, NULL);
	cr_assert_eq(aws_client_set_credentials(h.client, &expiring), 0);
	cr_assert_eq(aws_query_new("DescribeInstances", "2016-11-15", &q), 0);
	cr_assert_eq(aws_call_query(h.client, "ec2", q, on_stale_call_done, NULL), 0);
	cr_assert_eq(loop_run(h.loop), 0, "the refresh did not finish in time");
	cr_assert_str_eq(refresh_out[0].code, "SignatureDoesNotMatch");
	cr_assert_eq(refresh_out[1].result, 0, "%s", refresh_out[1].text);
	cr_assert_str_eq(aws_client_credentials(h.client)->secret_access_key, SECRET);
	cr_assert_eq(aws_client_credentials(h.client)->expiration, 0);
	cr_assert_eq(srv.bad_signatures, 1);
	aws_client_free(h.client);
	loop_free(h.loop);
}

static void on_done_never(struct aws_client *c, const struct aws_response *r, void *userdata)
{
	cr_assert_fail("done() called for a call cancelled by aws_client_free()");
}

Test(aws_client, free_cancels_calls_in_flight_without_calling_done)
{
	static const struct scripted s[] = { { 200, described } };
	struct harness h;
	struct aws_query *q = NULL;

	script(s, ARRAY_SIZE(s));
	harness_init(&h, NULL, NULL);
	cr_assert_eq(aws_query_new("DescribeInstances", "2016-11-15", &q), 0);
	cr_assert_eq(aws_call_query(h.client, "ec2", q, on_done_never, NULL), 0);
	cr_assert_eq(loop_http_running(h.loop), 1);
	aws_client_free(h.client);
	cr_assert_eq(loop_http_running(h.loop), 0);
	loop_free(h.loop);
}

Test(aws_client, signs_the_path_of_an_endpoint_override_with_a_prefix)
{
	static const struct scripted s[] = { { 200, described } };
	struct harness h;
	char url[96];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/ec2-sim/", srv.port);
	setenv("AWS_ENDPOINT_URL_EC2", url, 1);
	script(s, ARRAY_SIZE(s));
	harness_init(&h, NULL, NULL);
	describe_instances(&h, &h.out[0]);
	harness_run(&h, 1);
	cr_assert_eq(h.out[0].result, 0, "%s", h.out[0].text);
	cr_assert_eq(srv.bad_signatures, 0);
}

static void on_done_free_client(struct aws_client *c, const struct aws_response *r, void *userdata)
{
	on_done(c, r, userdata);
	aws_client_free(c);
	current->client = NULL;
	loop_exit(current->loop, 0);
}

Test(aws_client, done_may_free_the_client)
{
	static const struct scripted s[] = { { 200, described } };
	struct harness h;
	struct aws_query *q = NULL;

	script(s, ARRAY_SIZE(s));
	harness_init(&h, NULL, NULL);
	cr_assert_eq(aws_query_new("DescribeInstances", "2016-11-15", &q), 0);
	cr_assert_eq(aws_call_query(h.client, "ec2", q, on_done_free_client, &h.out[0]), 0);
	cr_assert_eq(loop_run(h.loop), 0);
	cr_assert_eq(h.out[0].result, 0, "%s", h.out[0].text);
	cr_assert_null(h.client);
	loop_free(h.loop);
}

Test(aws_client, rides_out_a_throttling_storm_without_losing_a_call)
{
	enum { CALLS = 10, THROTTLED = 15 };
	struct harness h;

	/* the first 15 answers are RequestLimitExceeded, then success */
	for (size_t i = 0; i < THROTTLED && i < MAX_SCRIPT; i++)
		srv.script[i] = (struct scripted){ 503, throttled };
	srv.n_script = MIN((size_t)THROTTLED, (size_t)MAX_SCRIPT);
	srv.after = (struct scripted){ 200, described };
	srv.served = 0;
	harness_init(&h, NULL, NULL);
	cr_assert_leq(CALLS, (int)ARRAY_SIZE(h.out));
	for (int i = 0; i < CALLS; i++)
		describe_instances(&h, &h.out[i]);
	harness_run(&h, CALLS);
	/* Every throttled answer cost its call exactly one more attempt. Which
	 * calls took them depends on timing (a retry may overtake a late first
	 * attempt on a loaded machine), how many does not. */
	unsigned retries = 0;
	for (int i = 0; i < CALLS; i++) {
		cr_assert_eq(h.out[i].result, 0, "call %d: %s", i, h.out[i].text);
		cr_assert_geq(h.out[i].attempts, 1, "call %d", i);
		retries += h.out[i].attempts - 1;
	}
	cr_assert_eq(retries, MIN(THROTTLED, MAX_SCRIPT));
	cr_assert_eq(srv.served, CALLS + MIN(THROTTLED, MAX_SCRIPT));
	cr_assert_eq(srv.bad_signatures, 0);
}
