/*
 * Kubernetes requests over libcurl on the event loop (see kube-client.h).
 * Each request is a struct kube_req that owns its easy handle, waits for a
 * rate-limit token, runs, and is retried with jittered backoff on 429 (the
 * server's Retry-After wins), 5xx and transport errors. LIST+WATCH streams
 * live in kube-watch.c. Credentials go only to an https server (curl is
 * held to https); a request that needs the exec plugin's credential waits,
 * parked, while the plugin runs. Transport failures carry curl's own
 * reason. Never blocks; never logs (callers log with context).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/kube-client-internal.h"
#include "common/log.h"

uint64_t kube_backoff_usec(unsigned attempt, uint64_t random_value)
{
	uint64_t ceiling = KUBE_BACKOFF_BASE_USEC;

	for (unsigned i = 0; i < attempt && ceiling < KUBE_BACKOFF_CAP_USEC; i++)
		ceiling *= 2;
	if (ceiling > KUBE_BACKOFF_CAP_USEC)
		ceiling = KUBE_BACKOFF_CAP_USEC;
	return random_value % (ceiling + 1);
}

int kube_client_new(struct kube_client **ret, struct loop *loop, struct kube_config *cfg,
		    const struct kube_client_options *opts)
{
	struct kube_client *c;
	int r = loop_http_init(loop);

	if (r < 0) {
		kube_config_free(cfg);
		return r;
	}
	if (kube_config_check(cfg, opts && opts->allow_insecure_http, NULL, 0) < 0) {
		kube_config_free(cfg);
		return -EPROTONOSUPPORT;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		kube_config_free(cfg);
		return -ENOMEM;
	}
	c->loop = loop;
	c->cfg = cfg;
	c->plain_http = kube_config_is_plain_http(cfg);
	c->user_agent = strdup(opts && opts->user_agent ? opts->user_agent : "kanna/" PACKAGE_VERSION);
	if (!c->user_agent) {
		kube_client_free(c);
		return -ENOMEM;
	}
	ratelimit_init(&c->limit, opts && opts->qps > 0 ? opts->qps : KUBE_CLIENT_DEFAULT_QPS,
		       opts && opts->burst ? opts->burst : KUBE_CLIENT_DEFAULT_BURST,
		       clock_monotonic_usec());
	c->events_limit = c->limit;
	c->bulk_limit = c->limit;
	c->rng = (uint64_t)clock_monotonic_usec() ^ (uint64_t)(uintptr_t)c;
	*ret = c;
	return 0;
}

struct kube_client *kube_client_free(struct kube_client *c)
{
	if (!c)
		return NULL;
	/* Requests in flight hold no reference to c beyond this point. */
	while (c->requests)
		kube_req_free(c->requests);
	sd_event_source_disable_unref(c->waiting_timer);
	kube_config_free(c->cfg);
	free(c->user_agent);
	json_arena_done(&c->pages);
	free(c);
	return NULL;
}

const struct kube_config *kube_client_config(const struct kube_client *c)
{
	return c->cfg;
}

uint64_t kube_client_random(struct kube_client *c)
{
	/* xorshift64*: jitter only, not security. */
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 2685821657736338717ULL;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct kube_req *req = userdata;
	size_t n = size * nmemb;

	if (req->on_chunk)
		return req->on_chunk(req, data, n) < 0 ? 0 : n;
	if (req->body_len + n > KUBE_MAX_BODY_BYTES)
		return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
	if (req->body_len + n + 1 > req->body_cap) {
		size_t cap = MAX(req->body_cap * 2, req->body_len + n + 1);
		curl_off_t announced = -1;
		char *nb;

		/* Take the announced length at once: growing a LIST page of
		 * megabytes by doubling copies it several times over. */
		if (req->body_cap == 0 &&
		    curl_easy_getinfo(req->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced) == CURLE_OK &&
		    announced > 0 && (uint64_t)announced < KUBE_MAX_BODY_BYTES)
			cap = MAX(cap, (size_t)announced + 1);
		nb = realloc(req->body, cap);
		if (!nb)
			return 0;
		req->body = nb;
		req->body_cap = cap;
	}
	memcpy(req->body + req->body_len, data, n);
	req->body_len += n;
	req->body[req->body_len] = '\0';
	return n;
}

/* A request's headers hold the bearer token: zeroed before they go. */
static void headers_free_erased(struct curl_slist *headers)
{
	for (struct curl_slist *h = headers; h; h = h->next)
		explicit_bzero(h->data, strlen(h->data));
	curl_slist_free_all(headers);
}

static int on_waiting_timer(struct loop *loop, void *userdata);

/* req's place on the wire goes to the first waiting request, started from
 * the loop (never from inside libcurl's callback). */
static void req_release_in_flight(struct kube_req *req)
{
	struct kube_client *c = req->client;

	if (!req->in_flight)
		return;
	req->in_flight = false;
	c->in_flight--;
	if (c->waiting_head && !c->waiting_timer &&
	    loop_add_timer(c->loop, 0, on_waiting_timer, c, &c->waiting_timer) < 0)
		log_warn("kube client: cannot start the next waiting request now; "
			    "it starts when another request ends");
}

static void req_unwait(struct kube_req *req)
{
	struct kube_client *c = req->client;
	struct kube_req **p, *prev = NULL;

	if (!req->waiting)
		return;
	for (p = &c->waiting_head; *p != req; prev = *p, p = &(*p)->waiting_next)
		;
	*p = req->waiting_next;
	if (c->waiting_tail == req)
		c->waiting_tail = prev;
	if (c->waiting_urgent_tail == req) /* the others come first: prev is one, or none */
		c->waiting_urgent_tail = prev;
	req->waiting = false;
	req->waiting_next = NULL;
}

void kube_req_free(struct kube_req *req)
{
	struct kube_client *c = req->client;

	req->freeing = true;
	if (req->easy && req->running)
		loop_http_cancel(c->loop, req->easy); /* runs on_done, which sees req->freeing */
	req_release_in_flight(req);
	req_unwait(req);
	if (req->timer)
		sd_event_source_disable_unref(req->timer);
	if (req->easy)
		curl_easy_cleanup(req->easy);
	headers_free_erased(req->headers);
	curl_slist_free_all(req->connect_to);
	if (req->prev)
		req->prev->next = req->next;
	else if (c->requests == req)
		c->requests = req->next;
	if (req->next)
		req->next->prev = req->prev;
	if (req->owns_userdata)
		free(req->userdata);
	free(req->method);
	free(req->path);
	free(req->content_type);
	free(req->request_body);
	free(req->body);
	free(req->error);
	free(req);
}

/*
 * The URL for path. With kubeconfig's tls-server-name the URL names that
 * host (so SNI and certificate verification use it) and CONNECT_TO sends
 * the connection to the real server, as client-go's ServerName does.
 */
static int kube_req_url(const struct kube_config *cfg, const char *path, char **ret_url,
			char **ret_connect_to)
{
	_cleanup_free_ char *url = NULL;
	char *host = NULL, *port = NULL;
	CURLU *u;
	int r = 0;

	if (asprintf(&url, "%s%s", cfg->server, path) < 0)
		return -ENOMEM;
	*ret_connect_to = NULL;
	if (!cfg->tls_server_name) {
		*ret_url = TAKE_PTR(url);
		return 0;
	}
	u = curl_url();
	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    curl_url_set(u, CURLUPART_HOST, cfg->tls_server_name, 0) != CURLUE_OK)
		r = -EINVAL;
	if (r >= 0 && asprintf(ret_connect_to, "%s:%s:%s:%s", cfg->tls_server_name, port, host,
			       port) < 0)
		r = -ENOMEM;
	free(url);
	url = NULL;
	if (r >= 0 && curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK)
		r = -EINVAL;
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	if (r < 0) {
		free(*ret_connect_to);
		*ret_connect_to = NULL;
		return r;
	}
	/* curl_url_get() memory must go to curl_free(); copy it. */
	*ret_url = strdup(url);
	curl_free(TAKE_PTR(url));
	return *ret_url ? 0 : -ENOMEM;
}

static int on_retry_timer(struct loop *loop, void *userdata);

/* The exec plugin's run ended: the requests parked for it go on (from the
 * loop, each on its own timer, as they may fail and free themselves). */
static void on_credential(void *userdata)
{
	struct kube_client *c = userdata;

	for (struct kube_req *req = c->requests; req; req = req->next) {
		if (!req->awaiting_credential)
			continue;
		if (loop_add_timer(c->loop, 0, on_retry_timer, req, &req->timer) < 0)
			continue; /* stays parked until the next run ends */
		req->awaiting_credential = false;
		req->limited = true; /* its rate-limit token is spent already */
	}
}

/*
 * The bearer token for this request (NULL: none). Over plain http there is
 * none, whatever the kubeconfig says: no token file is read and no plugin
 * runs. -EINPROGRESS: the exec plugin is running; on_credential() resumes.
 */
static int req_token(struct kube_client *c, const char **ret, char *err, size_t errlen)
{
	int r;

	*ret = NULL;
	if (c->plain_http)
		return 0;
	if (c->cfg->exec) {
		r = kube_exec_credential(c->cfg->exec, c->loop, on_credential, c, err, errlen);
		if (r < 0)
			return r;
	}
	r = kube_config_bearer_token(c->cfg, ret, err, errlen);
	if (r < 0)
		return r;
	if (*ret && strpbrk(*ret, "\r\n")) {
		snprintf(err, errlen, "the bearer token contains a line break");
		return -EINVAL;
	}
	return 0;
}

static int req_prepare(struct kube_req *req, char *err, size_t errlen)
{
	struct kube_client *c = req->client;
	_cleanup_free_ char *url = NULL, *ctype = NULL, *connect_to = NULL;
	_cleanup_erased_ char *auth = NULL;
	const char *token = NULL;
	int r;

	r = req_token(c, &token, err, errlen);
	if (r < 0)
		return r;
	r = kube_req_url(c->cfg, req->path, &url, &connect_to);
	if (r < 0)
		return r;
	if (!req->easy && !(req->easy = curl_easy_init()))
		return -ENOMEM;
	curl_easy_reset(req->easy);
	headers_free_erased(req->headers);
	req->headers = NULL;
	req->body_len = 0;
	if (asprintf(&ctype, "Content-Type: %s",
		     req->content_type ? req->content_type : "application/json") < 0)
		return -ENOMEM;
	req->headers = curl_slist_append(req->headers, "Accept: application/json");
	if (req->request_body)
		req->headers = curl_slist_append(req->headers, ctype);
	if (token) {
		if (asprintf(&auth, "Authorization: Bearer %s", token) < 0)
			return -ENOMEM;
		req->headers = curl_slist_append(req->headers, auth);
	}
	if (!req->headers)
		return -ENOMEM;
	if (!c->plain_http) {
		r = kube_config_apply_tls(c->cfg, req->easy);
		if (r < 0)
			return r;
	}
	/* Only the scheme checked at start: an https server is never reached
	 * in clear, nor through any other protocol curl knows. */
#if LIBCURL_VERSION_NUM >= 0x075500
	if (curl_easy_setopt(req->easy, CURLOPT_PROTOCOLS_STR, c->plain_http ? "http" : "https") !=
	    CURLE_OK)
		return -EPROTONOSUPPORT;
#else
	if (curl_easy_setopt(req->easy, CURLOPT_PROTOCOLS,
			     (long)(c->plain_http ? CURLPROTO_HTTP : CURLPROTO_HTTPS)) != CURLE_OK)
		return -EPROTONOSUPPORT;
#endif
	req->curl_error[0] = '\0';
	curl_easy_setopt(req->easy, CURLOPT_ERRORBUFFER, req->curl_error);
	curl_easy_setopt(req->easy, CURLOPT_URL, url);
	curl_easy_setopt(req->easy, CURLOPT_CUSTOMREQUEST, req->method);
	curl_easy_setopt(req->easy, CURLOPT_HTTPHEADER, req->headers);
	curl_easy_setopt(req->easy, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(req->easy, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(req->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	/* A burst waits for the connection being set up to say whether it
	 * multiplexes (HTTP/2: one connection, as client-go) before another. */
	curl_easy_setopt(req->easy, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(req->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(req->easy, CURLOPT_CONNECTTIMEOUT, (long)KUBE_CONNECT_TIMEOUT_SEC);
	curl_easy_setopt(req->easy, CURLOPT_TIMEOUT,
			 (long)(req->on_chunk ? KUBE_WATCH_TIMEOUT_SEC + 30 : KUBE_REQUEST_TIMEOUT_SEC));
	curl_easy_setopt(req->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(req->easy, CURLOPT_WRITEDATA, req);
	curl_slist_free_all(req->connect_to);
	req->connect_to = NULL;
	if (connect_to) {
		req->connect_to = curl_slist_append(NULL, connect_to);
		if (!req->connect_to)
			return -ENOMEM;
		curl_easy_setopt(req->easy, CURLOPT_CONNECT_TO, req->connect_to);
	}
	if (req->request_body) {
		curl_easy_setopt(req->easy, CURLOPT_POSTFIELDS, req->request_body);
		curl_easy_setopt(req->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(req->request_body));
	}
	return 0;
}

static void req_finish(struct kube_req *req, long status, const char *transport_error)
{
	struct kube_response resp = { .status = status };
	json_t *body = NULL;

	if (req->body_raw && status >= 200 && status < 300 && !transport_error) {
		resp.text = req->body ? req->body : "";
		resp.text_len = req->body_len;
	} else if (req->body_len > 0) {
		body = json_loadb(req->body, req->body_len, 0, NULL);
		if (!body && status >= 200 && status < 300 && !transport_error) {
			free(req->error);
			req->error = strdup("response body is not JSON");
			resp.error = req->error;
		}
	}
	resp.body = body;
	if (transport_error)
		resp.error = transport_error;
	else if (body && streq_ptr(json_string_value(json_object_get(body, "kind")), "Status") &&
		 (status < 200 || status >= 300)) {
		resp.error = json_string_value(json_object_get(body, "message"));
		resp.reason = json_string_value(json_object_get(body, "reason"));
	} else if (!resp.error && (status < 200 || status >= 300)) {
		free(req->error);
		if (asprintf(&req->error, "HTTP %ld", status) < 0)
			req->error = NULL;
		resp.error = req->error;
	}
	if (req->done)
		req->done(req->client, &resp, req->userdata);
	json_decref(body);
}

static bool req_retriable(const struct kube_req *req, long status, CURLcode result)
{
	bool idempotent = req->repeatable || (!streq(req->method, "POST") && !streq(req->method, "PATCH"));

	if (req->attempt + 1 >= KUBE_REQUEST_MAX_ATTEMPTS)
		return false;
	if (result != CURLE_OK)
		return idempotent && result != CURLE_WRITE_ERROR;
	if (status == 429)
		return true; /* the server did not process it */
	if (status == 503)
		return true;
	return status >= 500 && idempotent;
}

static int req_send(struct kube_req *req);

static int on_retry_timer(struct loop *loop, void *userdata)
{
	struct kube_req *req = userdata;

	(void)loop;
	req->timer = sd_event_source_disable_unref(req->timer);
	return req_send(req);
}

static void on_done(CURL *easy, CURLcode result, void *userdata)
{
	struct kube_req *req = userdata;
	long status = 0;
	curl_off_t retry_after = 0;
	uint64_t delay;

	req->running = false;
	req_release_in_flight(req);
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
	if (req->freeing)
		return;
	if (req->on_stream_end) {
		req->on_stream_end(req, result, status);
		return;
	}
	if (req_retriable(req, status, result)) {
		curl_easy_getinfo(easy, CURLINFO_RETRY_AFTER, &retry_after);
		delay = retry_after > 0 ? (uint64_t)retry_after * 1000000u :
					  kube_backoff_usec(req->attempt, kube_client_random(req->client));
		req->attempt++;
		if (loop_add_timer(req->client->loop, delay, on_retry_timer, req, &req->timer) >= 0)
			return;
	}
	req_finish(req, status, result == CURLE_OK ? NULL : kube_req_transport_error(req, result));
	kube_req_free(req);
}

const char *kube_req_transport_error(const struct kube_req *req, CURLcode result)
{
	if (req->curl_error[0])
		return req->curl_error;
	if (result == CURLE_FAILED_INIT && req->error)
		return req->error; /* it never started: req_send() said why */
	return curl_easy_strerror(result);
}

/* Requests on the wire at most when req would start: bulk ones leave
 * KUBE_CLIENT_RESERVED_IN_FLIGHT places to the others. */
static unsigned in_flight_cap(const struct kube_req *req)
{
	return req->bulk ? KUBE_CLIENT_MAX_IN_FLIGHT - KUBE_CLIENT_RESERVED_IN_FLIGHT
			 : KUBE_CLIENT_MAX_IN_FLIGHT;
}

/* Into the waiting queue: a bulk request last, another after the last of
 * the others (before every bulk one). */
static void waiting_add(struct kube_client *c, struct kube_req *req)
{
	struct kube_req **at = req->bulk ? NULL
					 : c->waiting_urgent_tail ? &c->waiting_urgent_tail->waiting_next
								  : &c->waiting_head;

	if (!at) {
		if (c->waiting_tail)
			c->waiting_tail->waiting_next = req;
		else
			c->waiting_head = req;
		c->waiting_tail = req;
	} else {
		req->waiting_next = *at;
		*at = req;
		if (!req->waiting_next)
			c->waiting_tail = req;
		c->waiting_urgent_tail = req;
	}
	req->waiting = true;
}

static int req_send(struct kube_req *req)
{
	struct kube_client *c = req->client;
	char err[512] = "";
	uint64_t wait;
	int r;

	if (!req->limited) {
		/* Always start from the loop, never from the caller's stack: the
		 * caller may be inside a libcurl callback (a watch event), where
		 * adding a transfer to the multi handle is refused. */
		wait = ratelimit_reserve(req->limit, clock_monotonic_usec());
		req->limited = true;
		return loop_add_timer(req->client->loop, wait, on_retry_timer, req, &req->timer);
	}
	if (!req->on_chunk && c->in_flight >= in_flight_cap(req)) {
		/* Its turn comes when one running ends (req_release_in_flight),
		 * still past the rate limiter: req->limited stays true. */
		waiting_add(c, req);
		return 0;
	}
	req->limited = false;
	r = req_prepare(req, err, sizeof(err));
	if (r == -EINPROGRESS) {
		req->awaiting_credential = true;
		return 0;
	}
	if (r >= 0) {
		r = loop_http_start(req->client->loop, req->easy, on_done, req);
		if (r >= 0) {
			req->running = true;
			if (!req->on_chunk) {
				req->in_flight = true;
				c->in_flight++;
			}
			return 0;
		}
		snprintf(err, sizeof(err), "failed to start transfer: %s", strerror(-r));
	}
	if (req->on_stream_end) {
		free(req->error);
		req->error = strdup(err[0] ? err : strerror(-r));
		req->on_stream_end(req, CURLE_FAILED_INIT, 0);
		return 0;
	}
	req_finish(req, 0, err[0] ? err : strerror(-r));
	kube_req_free(req);
	return 0;
}

static int on_waiting_timer(struct loop *loop, void *userdata)
{
	struct kube_client *c = userdata;
	struct kube_req *req;

	(void)loop;
	c->waiting_timer = sd_event_source_disable_unref(c->waiting_timer);
	while (c->waiting_head && c->in_flight < in_flight_cap(c->waiting_head)) {
		req = c->waiting_head;
		req_unwait(req);
		req_send(req); /* a failure to start ends req through its done() */
	}
	return 0;
}

int kube_req_new(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const char *body, struct kube_req **ret)
{
	struct kube_req *req = calloc(1, sizeof(*req));

	if (!req)
		return -ENOMEM;
	req->client = c;
	req->limit = &c->limit;
	req->method = strdup(method);
	req->path = strdup(path);
	req->content_type = content_type ? strdup(content_type) : NULL;
	req->request_body = body ? strdup(body) : NULL;
	req->next = c->requests;
	if (c->requests)
		c->requests->prev = req;
	c->requests = req;
	if (!req->method || !req->path || (content_type && !req->content_type) ||
	    (body && !req->request_body)) {
		kube_req_free(req);
		return -ENOMEM;
	}
	*ret = req;
	return 0;
}

int kube_req_start(struct kube_req *req)
{
	req->attempt = 0;
	return req_send(req);
}

static int kube_request_paced(struct kube_client *c, struct ratelimit *limit, bool repeatable,
			      const char *method, const char *path, const char *content_type,
			      const char *body, kube_done_fn done, void *userdata,
			      struct kube_req **ret)
{
	struct kube_req *req;
	int r;

	r = kube_req_new(c, method, path, content_type, body, &req);
	if (r < 0)
		return r;
	req->limit = limit;
	req->done = done;
	req->userdata = userdata;
	req->repeatable = repeatable;
	r = kube_req_start(req);
	if (r < 0) {
		kube_req_free(req);
		return r;
	}
	if (ret)
		*ret = req;
	return 0;
}

struct loop *kube_client_loop(const struct kube_client *c)
{
	return c->loop;
}

int kube_request(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const char *body, kube_done_fn done, void *userdata)
{
	return kube_request_paced(c, &c->limit, false, method, path, content_type, body, done,
				  userdata, NULL);
}

static int request_start(struct kube_client *c, bool bulk, bool owned, const char *method,
			 const char *path, const char *content_type, const char *body,
			 kube_done_fn done, void *userdata)
{
	struct kube_req *req;
	int r;

	r = kube_req_new(c, method, path, content_type, body, &req);
	if (r < 0) {
		if (owned)
			free(userdata);
		return r;
	}
	req->limit = bulk ? &c->bulk_limit : &c->limit;
	req->bulk = bulk;
	req->done = done;
	req->userdata = userdata;
	req->owns_userdata = owned;
	r = kube_req_start(req);
	if (r < 0) {
		kube_req_free(req);
		return r;
	}
	return 0;
}

int kube_request_bulk(struct kube_client *c, const char *method, const char *path,
		      const char *content_type, const char *body, kube_done_fn done,
		      void *userdata)
{
	return request_start(c, true, false, method, path, content_type, body, done, userdata);
}

int kube_request_owned(struct kube_client *c, bool bulk, const char *method, const char *path,
		       const char *content_type, const char *body, kube_done_fn done,
		       void *userdata)
{
	return request_start(c, bulk, true, method, path, content_type, body, done, userdata);
}

int kube_request_event(struct kube_client *c, const char *method, const char *path,
		       const char *content_type, const char *body, kube_done_fn done,
		       void *userdata, struct kube_req **ret)
{
	return kube_request_paced(c, &c->events_limit, true, method, path, content_type, body, done,
				  userdata, ret);
}
