/*
 * Kubernetes client against a scripted API server (libmicrohttpd in this
 * process): retries on 429 with Retry-After, paged LIST, WATCH with
 * bookmarks, stream end → resume, 410 Gone → relist, malformed events;
 * credentials only over https (the same server behind TLS with
 * kanna-sim's generated CA), and TLS failures that say why.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <malloc.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/kube-client-internal.h"
#include "common/loop.h"
#include "sim/tls.h"

struct server {
	struct MHD_Daemon *d;
	uint16_t port;
	pthread_mutex_t lock;
	int requests;
	int throttle_left;       /* answer 429 this many times first */
	int watches;             /* watch requests seen */
	int odd_second_pages;    /* second pages of /api/v1/oddpods served */
	char last_watch_rv[32];
	char last_auth[128];
	char paths[64][256];
};

static struct server srv = { .lock = PTHREAD_MUTEX_INITIALIZER };

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *body,
			     const char *extra_header, const char *extra_value)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;
	MHD_add_response_header(r, "Content-Type", "application/json");
	if (extra_header)
		MHD_add_response_header(r, extra_header, extra_value);
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

#define POD(name, rv) \
	"{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"default\",\"resourceVersion\":\"" rv "\"}}"

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **state)
{
	const char *watch = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "watch");
	const char *cont = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "continue");
	const char *rv = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "resourceVersion");
	const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	int n, w = 0;

	(void)cls; (void)version; (void)upload; (void)upload_size;
	if (*state == NULL) {
		*state = (void *)1;
		return MHD_YES;
	}
	pthread_mutex_lock(&srv.lock);
	n = srv.requests++;
	snprintf(srv.paths[n % 64], sizeof(srv.paths[0]), "%s %s%s%s", method, url,
		 watch ? " watch rv=" : "", watch && rv ? rv : "");
	if (auth)
		snprintf(srv.last_auth, sizeof(srv.last_auth), "%s", auth);
	if (srv.throttle_left > 0) {
		srv.throttle_left--;
		pthread_mutex_unlock(&srv.lock);
		return reply(conn, 429,
			     "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"TooManyRequests\","
			     "\"message\":\"slow down\",\"code\":429}",
			     "Retry-After", "1");
	}
	if (watch) {
		w = ++srv.watches;
		snprintf(srv.last_watch_rv, sizeof(srv.last_watch_rv), "%s", rv ? rv : "");
	}
	pthread_mutex_unlock(&srv.lock);

	if (strcmp(url, "/api/v1/namespaces/default/pods/a") == 0)
		return reply(conn, 404,
			     "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\","
			     "\"message\":\"pods \\\"a\\\" not found\",\"code\":404}", NULL, NULL);
	/* Served for its list, then gone (its CRD deleted) when watched. */
	if (strcmp(url, "/apis/example.com/v1/things") == 0)
		return watch ? reply(conn, 404,
				     "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}",
				     NULL, NULL) :
			       reply(conn, 200,
				     "{\"kind\":\"ThingList\",\"metadata\":{\"resourceVersion\":\"10\"},"
				     "\"items\":[" POD("t", "9") "]}", NULL, NULL);
	/* Pages read a value at a time: metadata after the items, spaces
	 * between the values, and a second page cut short the first time. */
	if (strcmp(url, "/api/v1/oddpods") == 0 && !watch && !cont)
		return reply(conn, 200,
			     " { \"items\" : [ " POD("a", "5") " , " POD("b", "6") " ] , \"kind\" : "
			     "\"PodList\" , \"metadata\" : {\"resourceVersion\":\"10\",\"continue\":\"p2\"} }\n",
			     NULL, NULL);
	if (strcmp(url, "/api/v1/oddpods") == 0 && !watch) {
		pthread_mutex_lock(&srv.lock);
		n = srv.odd_second_pages++;
		pthread_mutex_unlock(&srv.lock);
		return reply(conn, 200,
			     n == 0 ? "{\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[" POD("c", "7") ",{" :
				      "{\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[" POD("c", "7") "]}",
			     NULL, NULL);
	}
	if (strcmp(url, "/api/v1/pods") != 0)
		return reply(conn, 404, "{}", NULL, NULL);
	if (!watch && !cont)
		return reply(conn, 200,
			     "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\",\"continue\":\"p2\"},"
			     "\"items\":[" POD("a", "5") "," POD("b", "6") "]}", NULL, NULL);
	if (!watch)
		return reply(conn, 200,
			     "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},"
			     "\"items\":[" POD("c", "7") "]}", NULL, NULL);
	switch (w) {
	case 1: /* events then the server's timeout ends the stream */
		return reply(conn, 200,
			     "{\"type\":\"ADDED\",\"object\":" POD("d", "11") "}\n"
			     "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"15\"}}}\n"
			     "{\"type\":\"DELETED\",\"object\":" POD("a", "16") "}\n", NULL, NULL);
	case 2: /* resumed from 16, then told our version is too old */
		return reply(conn, 200,
			     "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
			     "\"reason\":\"Expired\",\"message\":\"too old resource version\"}}\n",
			     NULL, NULL);
	case 3: /* after the relist: a malformed line, then resume */
		return reply(conn, 200, "{\"type\":\"MODIFIED\",\"object\":" POD("b", "12") "}\nnot json\n",
			     NULL, NULL);
	default: /* keep the client waiting a little */
		return reply(conn, 410,
			     "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"gone\"}",
			     NULL, NULL);
	}
}

static void server_start(void)
{
	const union MHD_DaemonInfo *info;

	srv.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				 handler, NULL, MHD_OPTION_END);
	cr_assert_not_null(srv.d);
	info = MHD_get_daemon_info(srv.d, MHD_DAEMON_INFO_BIND_PORT);
	srv.port = info->port;
}

static struct kube_client *client_new(struct loop *loop)
{
	struct kube_config *cfg = calloc(1, sizeof(*cfg));
	struct kube_client *c = NULL;
	char server[64];
	snprintf(server, sizeof(server), "http://127.0.0.1:%u", srv.port);
	cfg->server = strdup(server);
	cfg->token = strdup("t0k3n");
	cfg->namespace = strdup("default");
	cfg->context = strdup("test");
	cr_assert_eq(kube_client_new(&c, loop, cfg,
				     &(struct kube_client_options){ .allow_insecure_http = true }), 0);
	return c;
}

struct result {
	struct loop *loop;
	long status;
	char reason[64];
	char error[256];
};

static void on_get(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct result *res = userdata;
	(void)c;
	res->status = resp->status;
	snprintf(res->reason, sizeof(res->reason), "%s", resp->reason ? resp->reason : "");
	snprintf(res->error, sizeof(res->error), "%s", resp->error ? resp->error : "");
	loop_exit(res->loop, 0);
}

Test(kube_client, throttled_requests_are_retried_after_retry_after_and_status_is_decoded)
{
	struct loop *loop;
	struct kube_client *c;
	struct result res = { 0 };
	server_start();
	srv.throttle_left = 1;
	cr_assert_eq(loop_new(&loop, "test"), 0);
	res.loop = loop;
	c = client_new(loop);
	cr_assert_eq(kube_request(c, "GET", "/api/v1/namespaces/default/pods/a", NULL, NULL, on_get,
				  &res), 0);
	cr_assert_geq(loop_run(loop), 0);
	cr_assert_eq(srv.requests, 2, "one 429, one retry");
	cr_assert_eq(res.status, 404);
	cr_assert_str_eq(res.reason, "NotFound");
	cr_assert_str_eq(res.error, "pods \"a\" not found");
	cr_assert_str_eq(srv.last_auth, "", "the token went over plain http: %s", srv.last_auth);
	kube_client_free(c);
	loop_free(loop);
	MHD_stop_daemon(srv.d);
}

static struct kube_config *config_for(const char *scheme, uint16_t port)
{
	struct kube_config *cfg = calloc(1, sizeof(*cfg));
	char server[64];

	cr_assert_not_null(cfg);
	snprintf(server, sizeof(server), "%s://127.0.0.1:%u", scheme, port);
	cfg->server = strdup(server);
	cfg->token = strdup("t0k3n");
	cfg->namespace = strdup("default");
	cfg->context = strdup("test");
	return cfg;
}

Test(kube_client, a_plain_http_server_is_refused_unless_allowed_and_saying_why)
{
	struct kube_config *cfg = config_for("http", 1);
	struct kube_client *c = NULL;
	struct loop *loop;
	char err[512] = "";

	cr_assert_eq(loop_new(&loop, "test"), 0);
	cr_assert_lt(kube_config_check(cfg, false, err, sizeof(err)), 0);
	cr_assert(strstr(err, "plain http") && strstr(err, "kube-client-allow-insecure-http"), "%s", err);
	cr_assert_eq(kube_config_check(cfg, true, err, sizeof(err)), 0);
	cr_assert_eq(kube_client_new(&c, loop, cfg, NULL), -EPROTONOSUPPORT);
	cr_assert_null(c);
	cfg = config_for("ftp", 1);
	cr_assert_lt(kube_config_check(cfg, true, err, sizeof(err)), 0);
	cr_assert(strstr(err, "not an https:// URL"), "%s", err);
	kube_config_free(cfg);
	loop_free(loop);
}

/* An exec plugin would hand over a token too: over plain http it never runs. */
Test(kube_client, an_allowed_plain_http_server_gets_no_token_and_runs_no_exec_plugin)
{
	struct kube_config *cfg;
	struct kube_client *c;
	struct result res = { 0 };
	struct loop *loop;
	char marker[] = "/tmp/kanna-exec-ran-XXXXXX";
	int fd = mkstemp(marker);

	cr_assert_geq(fd, 0);
	close(fd);
	unlink(marker);
	server_start();
	cfg = config_for("http", srv.port);
	cfg->exec = calloc(1, sizeof(*cfg->exec));
	cfg->exec->command = strdup("/bin/touch");
	cfg->exec->args = calloc(2, sizeof(char *));
	cfg->exec->args[0] = strdup(marker);
	cfg->exec->env = calloc(1, sizeof(char *));
	cfg->exec->api_version = strdup("client.authentication.k8s.io/v1");
	cfg->exec->timeout_usec = 5000000;
	cr_assert_eq(loop_new(&loop, "test"), 0);
	res.loop = loop;
	cr_assert_eq(kube_client_new(&c, loop, cfg,
				     &(struct kube_client_options){ .allow_insecure_http = true }), 0);
	cr_assert_eq(kube_request(c, "GET", "/api/v1/namespaces/default/pods/a", NULL, NULL, on_get,
				  &res), 0);
	cr_assert_geq(loop_run(loop), 0);
	cr_assert_eq(res.status, 404, "%ld %s", res.status, res.error);
	cr_assert_eq(srv.requests, 1);
	cr_assert_str_eq(srv.last_auth, "", "a credential went over plain http: %s", srv.last_auth);
	cr_assert_neq(access(marker, F_OK), 0, "the exec plugin ran for a plain http server");
	kube_client_free(c);
	loop_free(loop);
	MHD_stop_daemon(srv.d);
}

/* The same scripted server behind TLS with a certificate for 127.0.0.1. */
static struct MHD_Daemon *tls_server_start(const struct sim_tls *tls, uint16_t *ret_port)
{
	struct MHD_Daemon *d;

	cr_assert_eq(MHD_is_feature_supported(MHD_FEATURE_TLS), MHD_YES);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS, 0, NULL, NULL, handler,
			     NULL, MHD_OPTION_HTTPS_MEM_KEY, tls->key_pem, MHD_OPTION_HTTPS_MEM_CERT,
			     tls->cert_pem, MHD_OPTION_END);
	cr_assert_not_null(d);
	*ret_port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
	return d;
}

static void get_once(struct kube_config *cfg, struct result *res)
{
	struct kube_client *c;
	struct loop *loop;

	cr_assert_eq(loop_new(&loop, "test"), 0);
	res->loop = loop;
	cr_assert_eq(kube_client_new(&c, loop, cfg, NULL), 0);
	cr_assert_eq(kube_request(c, "GET", "/api/v1/namespaces/default/pods/a", NULL, NULL, on_get,
				  res), 0);
	cr_assert_geq(loop_run(loop), 0);
	kube_client_free(c);
	loop_free(loop);
}

Test(kube_client, https_with_the_servers_ca_carries_the_token, .timeout = 30)
{
	struct sim_tls tls;
	struct result res = { 0 };
	struct MHD_Daemon *d;
	struct kube_config *cfg;
	uint16_t port;

	cr_assert_eq(sim_tls_generate(&tls), 0);
	d = tls_server_start(&tls, &port);
	cfg = config_for("https", port);
	cfg->ca_pem = strdup(tls.ca_pem);
	cfg->ca_pem_len = strlen(tls.ca_pem);
	get_once(cfg, &res);
	cr_assert_eq(res.status, 404, "%ld %s", res.status, res.error);
	cr_assert_str_eq(srv.last_auth, "Bearer t0k3n");
	MHD_stop_daemon(d);
	sim_tls_clear(&tls);
}

/* "SSL peer certificate or SSH remote key was not OK" is curl's generic
 * text; the error buffer names the certificate problem. */
Test(kube_client, a_server_certificate_from_another_ca_fails_saying_why, .timeout = 30)
{
	struct sim_tls tls, other;
	struct result res = { 0 };
	struct MHD_Daemon *d;
	struct kube_config *cfg;
	uint16_t port;

	cr_assert_eq(sim_tls_generate(&tls), 0);
	cr_assert_eq(sim_tls_generate(&other), 0);
	d = tls_server_start(&tls, &port);
	cfg = config_for("https", port);
	cfg->ca_pem = strdup(other.ca_pem);
	cfg->ca_pem_len = strlen(other.ca_pem);
	get_once(cfg, &res);
	cr_assert_eq(res.status, 0);
	cr_assert(strstr(res.error, "certificate"), "%s", res.error);
	cr_assert_str_neq(res.error, curl_easy_strerror(CURLE_PEER_FAILED_VERIFICATION));
	cr_assert_eq(srv.requests, 0, "a request reached the server");
	MHD_stop_daemon(d);
	sim_tls_clear(&tls);
	sim_tls_clear(&other);
}

/* The https-only client never falls back: a plain http answer is a TLS
 * failure, reported as such. */
Test(kube_client, an_https_server_answering_plain_http_fails_saying_why, .timeout = 30)
{
	struct result res = { 0 };
	struct kube_config *cfg;

	server_start();
	cfg = config_for("https", srv.port);
	get_once(cfg, &res);
	cr_assert_eq(res.status, 0);
	cr_assert(strstr(res.error, "SSL") || strstr(res.error, "TLS") ||
		  strstr(res.error, "wrong version"), "%s", res.error);
	cr_assert_str_neq(res.error, curl_easy_strerror(CURLE_SSL_CONNECT_ERROR));
	MHD_stop_daemon(srv.d);
}

struct replica {
	struct loop *loop;
	int relists, synced;
	char names[16][16];
	int n;
	int deleted_a;
	int errors;
	struct kube_watch *w;
};

static void on_relist(void *userdata)
{
	struct replica *r = userdata;
	r->relists++;
	r->n = 0;
}

static void on_event(enum kube_event_type type, json_t *obj, void *userdata)
{
	struct replica *r = userdata;
	const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	if (type == KUBE_EVENT_DELETED) {
		if (strcmp(name, "a") == 0)
			r->deleted_a++;
		return;
	}
	if (type == KUBE_EVENT_ADDED && r->n < 16)
		snprintf(r->names[r->n++], sizeof(r->names[0]), "%s", name);
}

static void on_synced(const char *rv, void *userdata)
{
	struct replica *r = userdata;
	r->synced++;
	cr_assert_str_eq(rv, "10");
}

static void on_error(const char *what, void *userdata)
{
	struct replica *r = userdata;
	r->errors++;
	if (strstr(what, "decode") && r->synced >= 2)
		loop_exit(r->loop, 0);
}

Test(kube_client, list_pages_then_watch_resumes_relists_on_gone_and_survives_bad_events, .timeout = 30)
{
	struct loop *loop;
	struct kube_client *c;
	struct replica rep = { 0 };
	struct kube_watch_handlers h = { .on_relist = on_relist, .on_event = on_event,
					 .on_synced = on_synced, .on_error = on_error, .userdata = &rep };
	struct kube_watch_stats st;
	server_start();
	cr_assert_eq(loop_new(&loop, "test"), 0);
	rep.loop = loop;
	c = client_new(loop);
	cr_assert_eq(kube_watch_start(c, "/api/v1/pods", NULL, &h, &rep.w), 0);
	cr_assert_geq(loop_run(loop), 0);
	kube_watch_get_stats(rep.w, &st);
	cr_assert_eq(rep.relists, 2, "first list and the relist after 410");
	cr_assert_eq(rep.synced, 2);
	cr_assert_eq(st.gone, 1);
	cr_assert_eq(st.bookmarks, 1);
	cr_assert_eq(rep.deleted_a, 1);
	cr_assert_eq(rep.n, 3, "relist replaced the replica: a, b, c");
	cr_assert_str_eq(rep.names[2], "c");
	cr_assert_geq(srv.watches, 3);
	cr_assert_str_eq(srv.last_watch_rv, "10", "third watch starts from the relisted version");
	kube_watch_free(rep.w);
	kube_client_free(c);
	loop_free(loop);
	MHD_stop_daemon(srv.d);
}

static void on_absent(void *userdata)
{
	struct replica *r = userdata;
	r->synced++;
}

static int stop_loop(struct loop *loop, void *userdata)
{
	(void)userdata;
	loop_exit(loop, 0);
	return 0;
}

Test(kube_client, a_collection_that_answers_404_is_absent_and_not_retried, .timeout = 30)
{
	struct loop *loop;
	struct kube_client *c;
	struct replica rep = { 0 };
	struct kube_watch_handlers h = { .on_relist = on_relist, .on_event = on_event,
					 .on_error = on_error, .on_absent = on_absent,
					 .userdata = &rep };
	struct kube_watch_stats st;
	sd_event_source *t = NULL;
	server_start();
	cr_assert_eq(loop_new(&loop, "test"), 0);
	rep.loop = loop;
	c = client_new(loop);
	cr_assert_eq(kube_watch_start(c, "/apis/karpenter.sh/v1alpha5/provisioners", NULL, &h, &rep.w), 0);
	/* Long enough for several backoff retries, were there any. */
	cr_assert_eq(loop_add_timer(loop, 2 * 1000 * 1000, stop_loop, NULL, &t), 0);
	cr_assert_geq(loop_run(loop), 0);
	kube_watch_get_stats(rep.w, &st);
	cr_assert_eq(rep.synced, 1, "told once that the collection is absent");
	cr_assert_eq(st.absent, 1);
	cr_assert_eq(st.lists, 1, "no retry after 404");
	cr_assert_eq(st.errors, 0);
	cr_assert_eq(rep.errors, 0);
	cr_assert_eq(srv.requests, 1);
	sd_event_source_disable_unref(t);
	kube_watch_free(rep.w);
	kube_client_free(c);
	loop_free(loop);
	MHD_stop_daemon(srv.d);
}

Test(kube_client, a_collection_gone_when_its_watch_resumes_is_absent, .timeout = 30)
{
	struct loop *loop;
	struct kube_client *c;
	struct replica rep = { 0 };
	struct kube_watch_handlers h = { .on_relist = on_relist, .on_event = on_event,
					 .on_synced = on_synced, .on_error = on_error,
					 .on_absent = on_absent, .userdata = &rep };
	struct kube_watch_stats st;
	sd_event_source *t = NULL;
	server_start();
	cr_assert_eq(loop_new(&loop, "test"), 0);
	rep.loop = loop;
	c = client_new(loop);
	cr_assert_eq(kube_watch_start(c, "/apis/example.com/v1/things", NULL, &h, &rep.w), 0);
	cr_assert_eq(loop_add_timer(loop, 2 * 1000 * 1000, stop_loop, NULL, &t), 0);
	cr_assert_geq(loop_run(loop), 0);
	kube_watch_get_stats(rep.w, &st);
	cr_assert_eq(rep.n, 1, "the list delivered its item");
	cr_assert_eq(rep.synced, 2, "synced once, then told it is absent");
	cr_assert_eq(st.absent, 1);
	cr_assert_eq(st.watches, 1, "no retry of the 404 watch");
	cr_assert_eq(srv.requests, 2);
	sd_event_source_disable_unref(t);
	kube_watch_free(rep.w);
	kube_client_free(c);
	loop_free(loop);
	MHD_stop_daemon(srv.d);
}

static void on_synced_stop(const char *rv, void *userdata)
{
	struct replica *r = userdata;
	r->synced++;
	cr_assert_str_eq(rv, "10");
	loop_exit(r->loop, 0);
}

Test(kube_client, list_pages_are_read_item_by_item_and_a_malformed_page_relists, .timeout = 30)
{
	struct loop *loop;
	struct kube_client *c;
	struct replica rep = { 0 };
	struct kube_watch_handlers h = { .on_relist = on_relist, .on_event = on_event,
					 .on_synced = on_synced_stop, .on_error = on_error,
					 .userdata = &rep };
	struct kube_watch_stats st;
	server_start();
	cr_assert_eq(loop_new(&loop, "test"), 0);
	rep.loop = loop;
	c = client_new(loop);
	cr_assert_eq(kube_watch_start(c, "/api/v1/oddpods", NULL, &h, &rep.w), 0);
	cr_assert_geq(loop_run(loop), 0);
	kube_watch_get_stats(rep.w, &st);
	cr_assert_eq(rep.synced, 1);
	cr_assert_eq(rep.errors, 1, "the cut page is reported");
	cr_assert_eq(rep.relists, 2, "and the list starts over");
	cr_assert_eq(rep.n, 3, "a, b and c after the relist");
	cr_assert_str_eq(rep.names[0], "a");
	cr_assert_str_eq(rep.names[2], "c");
	cr_assert_eq(srv.odd_second_pages, 2);
	kube_watch_free(rep.w);
	kube_client_free(c);
	loop_free(loop);
	MHD_stop_daemon(srv.d);
}

Test(kube_client, backoff_is_full_jitter_capped)
{
	cr_assert_eq(kube_backoff_usec(0, 0), 0);
	cr_assert_leq(kube_backoff_usec(0, UINT64_MAX), KUBE_BACKOFF_BASE_USEC);
	cr_assert_leq(kube_backoff_usec(3, UINT64_MAX), KUBE_BACKOFF_BASE_USEC * 8);
	cr_assert_leq(kube_backoff_usec(60, UINT64_MAX), KUBE_BACKOFF_CAP_USEC);
	cr_assert_eq(kube_backoff_usec(60, KUBE_BACKOFF_CAP_USEC), KUBE_BACKOFF_CAP_USEC);
}

/* ---- requests on the wire at once ---------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	int now, most, served;
} wire = { .lock = PTHREAD_MUTEX_INITIALIZER };

static enum MHD_Result slow_handler(void *cls, struct MHD_Connection *conn, const char *url,
				    const char *method, const char *version, const char *upload,
				    size_t *upload_size, void **state)
{
	(void)cls; (void)url; (void)method; (void)version; (void)upload; (void)upload_size;
	if (*state == NULL) {
		*state = (void *)1;
		return MHD_YES;
	}
	pthread_mutex_lock(&wire.lock);
	if (++wire.now > wire.most)
		wire.most = wire.now;
	pthread_mutex_unlock(&wire.lock);
	usleep(20 * 1000);
	pthread_mutex_lock(&wire.lock);
	wire.now--;
	wire.served++;
	pthread_mutex_unlock(&wire.lock);
	return reply(conn, 200, "{\"kind\":\"Pod\"}", NULL, NULL);
}

/* The slow server, a thread per connection: requests overlap on the wire. */
static struct MHD_Daemon *slow_server_start(uint16_t *port)
{
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION |
							MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
						0, NULL, NULL, slow_handler, NULL, MHD_OPTION_END);

	cr_assert_not_null(d);
	*port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
	return d;
}

struct wire_count {
	struct loop *loop;
	int done, ok, want;
};

static void on_wire_done(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct wire_count *w = userdata;

	(void)c;
	w->done++;
	if (resp->status == 200)
		w->ok++;
	if (w->done == w->want)
		loop_exit(w->loop, 0);
}

Test(kube_client, a_burst_keeps_at_most_max_in_flight_on_the_wire_and_all_complete, .timeout = 30)
{
	struct MHD_Daemon *d;
	struct loop *loop;
	struct kube_client *c = NULL;
	struct kube_req *cancelled = NULL;
	struct wire_count w = { .want = 3 * KUBE_CLIENT_MAX_IN_FLIGHT };
	uint16_t port;

	d = slow_server_start(&port);
	cr_assert_eq(loop_new(&loop, "test"), 0);
	w.loop = loop;
	cr_assert_eq(kube_client_new(&c, loop, config_for("http", port),
				     &(struct kube_client_options){ .allow_insecure_http = true,
								    .qps = 10000, .burst = 1000 }), 0);
	for (int i = 0; i < w.want; i++)
		cr_assert_eq(kube_request(c, "GET", "/api/v1/namespaces/default/pods/p", NULL, NULL,
					  on_wire_done, &w), 0);
	/* One more, then taken back while it waits its turn: it never runs
	 * and the queue goes on past it. */
	cr_assert_eq(kube_request_event(c, "GET", "/api/v1/namespaces/default/pods/q", NULL, NULL,
					on_wire_done, &w, &cancelled), 0);
	kube_req_free(cancelled);
	cr_assert_geq(loop_run(loop), 0);
	cr_assert_eq(w.ok, w.want, "%d of %d requests answered 200", w.ok, w.want);
	cr_assert_eq(wire.served, w.want, "the server answered %d", wire.served);
	cr_assert_leq(wire.most, KUBE_CLIENT_MAX_IN_FLIGHT, "%d requests on the wire at once", wire.most);
	cr_assert_gt(wire.most, 1, "requests ran one at a time");
	kube_client_free(c);
	loop_free(loop);
	MHD_stop_daemon(d);
}

/* ---- bulk requests wait behind the others ---------------------------------------- */

struct lanes {
	struct loop *loop;
	int bulk_done, bulk_want;
	int urgent_done, urgent_want;
	int bulk_before_urgent; /* bulk requests answered when the last urgent one was */
	int bulk_ok, urgent_ok;
	struct kube_client *client;
};

static void lanes_maybe_exit(struct lanes *l)
{
	if (l->bulk_done == l->bulk_want && l->urgent_done == l->urgent_want)
		loop_exit(l->loop, 0);
}


static void on_urgent_done(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct lanes *l = userdata;

	(void)c;
	if (++l->urgent_done == l->urgent_want)
		l->bulk_before_urgent = l->bulk_done;
	l->urgent_ok += resp->status == 200;
	lanes_maybe_exit(l);
}

static void send_urgent(struct lanes *l)
{
	cr_assert_gt(l->client->waiting_head != NULL, 0, "bulk requests are waiting");
	for (int i = 0; i < l->urgent_want; i++)
		cr_assert_eq(kube_request(l->client, "GET", "/apis/karpenter.sh/v1/nodeclaims/n", NULL,
					  NULL, on_urgent_done, l), 0);
}

/* The others are sent once the first bulk one is answered: however late
 * that is on a loaded machine, one place was freed of the few on the wire,
 * and most bulk requests are still waiting. */
static void on_bulk_done(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct lanes *l = userdata;

	(void)c;
	l->bulk_ok += resp->status == 200;
	if (++l->bulk_done == 1)
		send_urgent(l);
	lanes_maybe_exit(l);
}

/* Bindings by the thousand (the launcher's) must not hold back a
 * NodeClaim's create queued after them: the other requests start first,
 * on places bulk ones leave free, and every request completes. */
Test(kube_client, requests_queued_after_bulk_ones_go_first_and_all_complete, .timeout = 30)
{
	struct MHD_Daemon *d;
	struct loop *loop;
	struct kube_client *c = NULL;
	struct lanes l = { .bulk_want = 4 * KUBE_CLIENT_MAX_IN_FLIGHT, .urgent_want = 8 };
	uint16_t port;

	wire.now = wire.most = wire.served = 0;
	d = slow_server_start(&port);
	cr_assert_eq(loop_new(&loop, "test"), 0);
	l.loop = loop;
	cr_assert_eq(kube_client_new(&c, loop, config_for("http", port),
				     &(struct kube_client_options){ .allow_insecure_http = true,
								    .qps = 10000, .burst = 1000 }), 0);
	for (int i = 0; i < l.bulk_want; i++)
		cr_assert_eq(kube_request_bulk(c, "GET", "/api/v1/namespaces/default/pods/p", NULL,
					       NULL, on_bulk_done, &l), 0);
	l.client = c;
	cr_assert_geq(loop_run(loop), 0);
	cr_assert_eq(l.bulk_ok, l.bulk_want, "%d of %d bulk requests answered 200", l.bulk_ok, l.bulk_want);
	cr_assert_eq(l.urgent_ok, l.urgent_want);
	/* FIFO would answer all 128 bulk requests first. */
	cr_assert_lt(l.bulk_before_urgent, 2 * KUBE_CLIENT_MAX_IN_FLIGHT,
		     "%d bulk requests were answered before the last of the others", l.bulk_before_urgent);
	cr_assert_leq(wire.most, KUBE_CLIENT_MAX_IN_FLIGHT, "%d requests on the wire at once", wire.most);
	kube_client_free(c);
	loop_free(loop);
	MHD_stop_daemon(d);
}

/* ---- userdata the client owns -------------------------------------------------- */

#define OWNED_BYTES (4u << 20) /* mmapped by malloc: mallinfo2().hblkhd sees it */

struct owned_seen {
	struct loop *loop;
	int calls;
	long status;
	int second; /* what sending the second request returned */
};

static struct owned_seen owned_seen;

static void *owned_userdata(void)
{
	unsigned char *data = malloc(OWNED_BYTES);

	cr_assert_not_null(data);
	memset(data, 0x5a, OWNED_BYTES);
	return data;
}

/* The first answer sends a second request, and stops the loop 5 ms later:
 * the server takes 20 ms, so it is on the wire then. */
static void on_owned_done(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	unsigned char *data = userdata;

	cr_assert_eq(data[OWNED_BYTES - 1], 0x5a, "the userdata is still there in done()");
	owned_seen.calls++;
	owned_seen.status = resp->status;
	owned_seen.second = kube_request_owned(c, true, "GET", "/api/v1/namespaces/default/pods/q",
					       NULL, NULL, on_owned_done, owned_userdata());
	if (loop_add_timer(owned_seen.loop, 5000, stop_loop, NULL, NULL) < 0)
		loop_exit(owned_seen.loop, -1);
}

/* A record only done() freed was lost when the client was freed with its
 * request in flight (a reaper stopped mid-PATCH leaked one, found by
 * LeakSanitizer): an owned one is freed after done(), and with the request
 * when it is cancelled, done() never running then. The sanitized build's
 * LeakSanitizer checks the same at exit. */
Test(kube_client, owned_userdata_is_freed_after_done_and_when_cancelled_in_flight, .timeout = 30)
{
	struct MHD_Daemon *d;
	struct loop *loop;
	struct kube_client *c = NULL;
	uint16_t port;
	long before, one, grown;
	void *probe;

	d = slow_server_start(&port);
	cr_assert_eq(loop_new(&loop, "test"), 0);
	owned_seen.loop = loop;
	cr_assert_eq(kube_client_new(&c, loop, config_for("http", port),
				     &(struct kube_client_options){ .allow_insecure_http = true }), 0);
	/* What one takes (0 under AddressSanitizer: its allocator is its own);
	 * a fixed threshold, or the first free raises it past OWNED_BYTES. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	before = (long)mallinfo2().hblkhd;
	probe = owned_userdata();
	one = (long)mallinfo2().hblkhd - before;
	free(probe);

	cr_assert_eq(kube_request_owned(c, false, "GET", "/api/v1/namespaces/default/pods/p", NULL,
					NULL, on_owned_done, owned_userdata()), 0);
	cr_assert_geq(loop_run(loop), 0);
	cr_assert_eq(owned_seen.calls, 1);
	cr_assert_eq(owned_seen.status, 200);
	cr_assert_eq(owned_seen.second, 0, "%s", strerror(-owned_seen.second));
	cr_assert_eq(c->requests != NULL, 1, "the second request is still in flight");
	/* Others' mmapped blocks (curl's, the loop's) come and go: one of
	 * ours is there, not two. */
	grown = (long)mallinfo2().hblkhd - (long)before;
	cr_assert(!one || (grown > one / 2 && grown < one + one / 2),
		  "the first freed once done() returned (%ld bytes more mmapped, one is %ld)", grown,
		  one);
	kube_client_free(c);
	cr_assert_eq(owned_seen.calls, 1, "a cancelled request calls nothing back");
	grown = (long)mallinfo2().hblkhd - (long)before;
	cr_assert(!one || grown < one / 2,
		  "the second freed with the cancelled request (%ld bytes more mmapped, one is %ld)",
		  grown, one);
	loop_free(loop);
	MHD_stop_daemon(d);
}
