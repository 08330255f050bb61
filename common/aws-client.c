/*
 * The asynchronous AWS client: aws_call_query()/aws_call_json() sign a
 * request with SigV4, pass it through the client's token bucket, run it on
 * the event loop (loop_http_start), parse the answer (XML tree or JSON),
 * and retry throttling, 5xx and network failures with full-jitter backoff
 * on loop timers, then call done() exactly once. Used by the launcher and
 * the reaper. Never blocks: expiring temporary credentials are refreshed
 * on a worker thread (aws-refresh.c) while calls go on.
 */
#include "common/clock.h"
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/aws-internal.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/ratelimit.h"
#include "common/sigv4.h"

/* After a failed refresh, keep the old credentials and try again later,
 * not on every request. */
#define AWS_CREDENTIALS_RETRY_REFRESH_SEC 30
#define AWS_QUERY_CONTENT_TYPE "application/x-www-form-urlencoded; charset=utf-8"
#define AWS_JSON_CONTENT_TYPE "application/x-amz-json-1.1"
#define AWS_CALL_MAX_HEADERS 8

struct aws_call {
	struct aws_client *client;
	struct aws_call *prev, *next;
	enum aws_protocol protocol;
	char *service;
	char *target;    /* JSON protocol X-Amz-Target */
	char *body;
	CURL *easy;
	struct curl_slist *headers;
	char *response;
	size_t response_len;
	bool response_too_big;
	char curl_error[CURL_ERROR_SIZE];
	sd_event_source *timer;
	bool token_reserved; /* the timer waits for a reserved bucket token */
	unsigned attempts;
	aws_done_fn done;
	void *userdata;
	bool owns_userdata; /* aws_call_query_owned(): free()d with the call */
};

struct aws_client {
	struct loop *loop;
	char *region;
	char *user_agent;
	struct aws_credentials *creds;
	struct aws_credentials_options cred_opts;
	char *cred_profile;            /* owned copy behind cred_opts.profile */
	struct aws_refresh *refresh;   /* background refresh in flight */
	time_t last_refresh_attempt;
	struct ratelimit limiter;
	struct aws_retry_policy retry;
	long timeout_ms;
	aws_rng_fn rng;
	void *rng_userdata;
	uint64_t rng_state;
	struct aws_call *calls;
};

static int call_schedule(struct aws_call *call, uint64_t delay_usec);

/* xorshift64*: jitter needs spread, not secrecy. */
static uint64_t default_rng(void *userdata)
{
	uint64_t *s = userdata;

	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

int aws_client_new(struct loop *loop, const struct aws_client_options *opts,
		   const struct aws_credentials *creds, struct aws_client **ret)
{
	_cleanup_(aws_client_freep) struct aws_client *c = NULL;
	int r;

	if (!loop || !opts || !opts->region || !creds || !ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->region = strdup(opts->region);
	if (opts->user_agent)
		c->user_agent = strdup(opts->user_agent);
	else if (asprintf(&c->user_agent, "kanna/%s", PACKAGE_VERSION) < 0)
		c->user_agent = NULL;
	if (!c->region || !c->user_agent)
		return -ENOMEM;
	r = aws_credentials_dup(creds, &c->creds);
	if (r < 0)
		return r;
	if (opts->credentials_options) {
		c->cred_opts = *opts->credentials_options;
		if (c->cred_opts.profile && !(c->cred_profile = strdup(c->cred_opts.profile)))
			return -ENOMEM;
		c->cred_opts.profile = c->cred_profile;
	}
	c->cred_opts.region = c->region;
	ratelimit_init(&c->limiter, opts->rate < 0 ? 0 : opts->rate > 0 ? opts->rate : AWS_CLIENT_DEFAULT_RATE,
		       opts->burst ? opts->burst : AWS_CLIENT_DEFAULT_BURST, clock_monotonic_usec());
	if (opts->retry.max_attempts)
		c->retry = opts->retry;
	else
		aws_retry_policy_default(&c->retry);
	c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : AWS_CLIENT_TIMEOUT_MS;
	c->rng = opts->rng;
	c->rng_userdata = opts->rng_userdata;
	if (!c->rng) {
		if (getrandom(&c->rng_state, sizeof(c->rng_state), GRND_NONBLOCK) != sizeof(c->rng_state))
			c->rng_state = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		c->rng_state |= 1; /* xorshift must not start at 0 */
		c->rng = default_rng;
		c->rng_userdata = &c->rng_state;
	}
	*ret = TAKE_PTR(c);
	return 0;
}

/* Take the call off its client's list (idempotent). */
static void call_unlink(struct aws_call *call)
{
	struct aws_client *c = call->client;

	if (call->prev)
		call->prev->next = call->next;
	else if (c->calls == call)
		c->calls = call->next;
	if (call->next)
		call->next->prev = call->prev;
	call->prev = call->next = NULL;
}

/* Free an unlinked call; never touches the client (it may be gone). */
static void call_destroy(struct aws_call *call)
{
	if (call->timer)
		sd_event_source_disable_unref(call->timer);
	if (call->easy)
		curl_easy_cleanup(call->easy);
	curl_slist_free_all(call->headers);
	free(call->service);
	free(call->target);
	free(call->body);
	free(call->response);
	if (call->owns_userdata)
		free(call->userdata);
	free(call);
}

static void call_free(struct aws_call *call)
{
	call_unlink(call);
	call_destroy(call);
}

void aws_client_free(struct aws_client *c)
{
	if (!c)
		return;
	while (c->calls) {
		struct aws_call *call = c->calls;

		/* done() of a cancelled transfer runs inside cancel; it sees
		 * done == NULL and only frees */
		call->done = NULL;
		if (call->easy && loop_http_cancel(c->loop, call->easy) >= 0)
			continue;
		call_free(call);
	}
	aws_refresh_free(c->refresh);
	aws_credentials_free(c->creds);
	free(c->cred_profile);
	free(c->region);
	free(c->user_agent);
	free(c);
}

const char *aws_client_region(const struct aws_client *c)
{
	return c->region;
}

int aws_client_set_credentials(struct aws_client *c, const struct aws_credentials *creds)
{
	struct aws_credentials *copy;
	int r = aws_credentials_dup(creds, &copy);

	if (r < 0)
		return r;
	aws_credentials_free(c->creds);
	c->creds = copy;
	return 0;
}

const struct aws_credentials *aws_client_credentials(const struct aws_client *c)
{
	return c->creds;
}

static void on_refresh_done(int r, struct aws_credentials *fresh, const char *why, void *userdata)
{
	struct aws_client *c = userdata;

	c->refresh = NULL;
	if (r < 0) {
		log_warn_errno(r, "Failed to refresh AWS credentials (keeping the current ones): %s",
			       why ? why : "unknown reason");
		return;
	}
	log_info("refreshed AWS credentials from %s", fresh->source);
	aws_credentials_free(c->creds);
	c->creds = fresh;
}

/* Temporary credentials close to expiry are re-resolved in the background
 * (aws-refresh.c); calls keep signing with the current ones meanwhile, and
 * on failure they stay until AWS rejects them. */
static void client_refresh_credentials(struct aws_client *c)
{
	time_t now = time(NULL);
	int r;

	if (c->refresh || !aws_credentials_need_refresh(c->creds, now) ||
	    now - c->last_refresh_attempt < AWS_CREDENTIALS_RETRY_REFRESH_SEC)
		return;
	c->last_refresh_attempt = now;
	r = aws_refresh_start(c->loop, &c->cred_opts, on_refresh_done, c, &c->refresh);
	if (r < 0)
		log_warn_errno(r, "Failed to start refreshing AWS credentials: %m");
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct aws_call *call = userdata;
	size_t n = size * nmemb;
	char *d;

	if (call->response_len + n > AWS_CLIENT_MAX_BODY) {
		call->response_too_big = true;
		return 0;
	}
	d = realloc(call->response, call->response_len + n + 1);
	if (!d)
		return 0;
	memcpy(d + call->response_len, ptr, n);
	call->response_len += n;
	d[call->response_len] = '\0';
	call->response = d;
	return n;
}

/* "host[:port]" of url (the Host header curl would send) and its path
 * (what gets signed; an endpoint override may carry a path prefix). */
static int url_parts(const char *url, char **ret_host, char **ret_path)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL, *path = NULL;
	int r = 0;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
		r = -EINVAL;
	else if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK && port)
		r = asprintf(ret_host, "%s:%s", host, port) < 0 ? -ENOMEM : 0;
	else
		r = (*ret_host = strdup(host)) ? 0 : -ENOMEM;
	if (r >= 0 && !(*ret_path = strdup(path))) {
		free(*ret_host);
		r = -ENOMEM;
	}
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return r;
}

static int header_append(struct curl_slist **list, const char *name, const char *value)
{
	_cleanup_free_ char *line = NULL;
	struct curl_slist *l;

	if (asprintf(&line, "%s: %s", name, value) < 0)
		return -ENOMEM;
	l = curl_slist_append(*list, line);
	if (!l)
		return -ENOMEM;
	*list = l;
	return 0;
}

/* Signed headers of the request, then Authorization, into call->headers. */
static int call_build_headers(struct aws_call *call, const char *host, const char *path)
{
	struct aws_client *c = call->client;
	struct sigv4_header h[AWS_CALL_MAX_HEADERS];
	struct sigv4_credentials sc = { c->creds->access_key_id, c->creds->secret_access_key,
					c->creds->session_token };
	_cleanup_free_ char *authorization = NULL;
	char amz_date[SIGV4_AMZ_DATE_LEN + 1], payload[65];
	size_t n = 0;
	int r;

	r = sigv4_format_amz_date(time(NULL), amz_date);
	if (r < 0)
		return r;
	r = sigv4_sha256_hex(call->body, strlen(call->body), payload);
	if (r < 0)
		return r;
	h[n++] = (struct sigv4_header){ "Host", host };
	h[n++] = (struct sigv4_header){ "Content-Type", call->protocol == AWS_PROTOCOL_JSON
							       ? AWS_JSON_CONTENT_TYPE
							       : AWS_QUERY_CONTENT_TYPE };
	h[n++] = (struct sigv4_header){ "X-Amz-Date", amz_date };
	if (sc.session_token)
		h[n++] = (struct sigv4_header){ "X-Amz-Security-Token", sc.session_token };
	if (call->target)
		h[n++] = (struct sigv4_header){ "X-Amz-Target", call->target };
	struct sigv4_request req = { .method = "POST", .path = path, .headers = h, .n_headers = n,
				     .payload_sha256_hex = payload };
	r = sigv4_sign(&req, &sc, aws_signing_region(call->service, c->region), call->service,
		       amz_date, &authorization);
	if (r < 0)
		return r;
	curl_slist_free_all(call->headers);
	call->headers = NULL;
	for (size_t i = 0; i < n; i++) {
		r = header_append(&call->headers, h[i].name, h[i].value);
		if (r < 0)
			return r;
	}
	r = header_append(&call->headers, "Authorization", authorization);
	if (r < 0)
		return r;
	/* no "Expect: 100-continue" round trip for our small bodies */
	if (!(call->headers = curl_slist_append(call->headers, "Expect:")))
		return -ENOMEM;
	return 0;
}

static void on_http_done(CURL *easy, CURLcode result, void *userdata);

static int call_send(struct aws_call *call)
{
	struct aws_client *c = call->client;
	_cleanup_free_ char *endpoint = NULL, *url = NULL, *host = NULL, *path = NULL;
	int r;

	client_refresh_credentials(c);
	r = aws_endpoint_url(call->service, c->region, &endpoint);
	if (r < 0)
		return r;
	if (asprintf(&url, "%s/", endpoint) < 0)
		return -ENOMEM;
	r = url_parts(url, &host, &path);
	if (r < 0)
		return r;
	r = call_build_headers(call, host, path);
	if (r < 0)
		return r;
	if (!call->easy) {
		call->easy = curl_easy_init();
		if (!call->easy)
			return -ENOMEM;
	}
	curl_easy_reset(call->easy);
	free(call->response);
	call->response = NULL;
	call->response_len = 0;
	call->response_too_big = false;
	call->curl_error[0] = '\0';
	curl_easy_setopt(call->easy, CURLOPT_URL, url);
	curl_easy_setopt(call->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(call->easy, CURLOPT_POSTFIELDS, call->body);
	curl_easy_setopt(call->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(call->body));
	curl_easy_setopt(call->easy, CURLOPT_HTTPHEADER, call->headers);
	curl_easy_setopt(call->easy, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(call->easy, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(call->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(call->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(call->easy, CURLOPT_WRITEDATA, call);
	curl_easy_setopt(call->easy, CURLOPT_ERRORBUFFER, call->curl_error);
	if ((r = aws_curl_set_ca_bundle(call->easy)) < 0)
		return r;
	call->attempts++;
	return loop_http_start(c->loop, call->easy, on_http_done, call);
}

static void response_describe(struct aws_response *r)
{
	if (r->result == -EREMOTEIO && *r->error.code)
		snprintf(r->description, sizeof(r->description), "%s: %s", r->error.code,
			 *r->error.message ? r->error.message : "(no message)");
	else if (r->result < 0)
		snprintf(r->description, sizeof(r->description), "%s%s%s", strerror(-r->result),
			 *r->error.message ? ": " : "", r->error.message);
	else
		snprintf(r->description, sizeof(r->description), "success");
}

static void call_finish(struct aws_call *call, struct aws_response *resp)
{
	response_describe(resp);
	resp->attempts = call->attempts;
	resp->body = call->response;
	resp->body_len = call->response_len;
	/* unlinked first: done() may even free the client */
	call_unlink(call);
	if (call->done)
		call->done(call->client, resp, call->userdata);
	if (resp->xml)
		aws_xml_free(resp->xml);
	json_decref(resp->json);
	call_destroy(call);
}

static void call_fail(struct aws_call *call, int r, const char *why)
{
	struct aws_response resp = { .result = r };

	snprintf(resp.error.message, sizeof(resp.error.message), "%s", why);
	call_finish(call, &resp);
}

/* Parse a 2xx body; -EBADMSG if it is not what the protocol promises. */
static int parse_success(struct aws_call *call, struct aws_response *resp)
{
	const char *body = call->response ? call->response : "";

	if (call->protocol == AWS_PROTOCOL_JSON) {
		resp->json = json_loadb(body, call->response_len, 0, NULL);
		if (!resp->json && call->response_len == 0)
			resp->json = json_object();
		return resp->json ? 0 : -EBADMSG;
	}
	return aws_xml_parse(body, call->response_len, &resp->xml);
}

static int transport_errno(CURLcode result, bool too_big)
{
	if (too_big)
		return -E2BIG;
	switch (result) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_ABORTED_BY_CALLBACK:
		return -ECANCELED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -ECONNREFUSED;
	}
}

static void on_http_done(CURL *easy, CURLcode result, void *userdata)
{
	struct aws_call *call = userdata;
	struct aws_client *c = call->client;
	struct aws_response resp = { 0 };
	enum aws_retry_class retry;
	int r;

	if (!call->done && result == CURLE_ABORTED_BY_CALLBACK) {
		call_free(call); /* cancelled by aws_client_free() */
		return;
	}
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &resp.http_status);
	if (result != CURLE_OK) {
		resp.result = transport_errno(result, call->response_too_big);
		snprintf(resp.error.message, sizeof(resp.error.message), "%s",
			 *call->curl_error ? call->curl_error : curl_easy_strerror(result));
	} else if (resp.http_status >= 200 && resp.http_status <= 299) {
		r = parse_success(call, &resp);
		if (r < 0) {
			resp.result = r;
			snprintf(resp.error.message, sizeof(resp.error.message),
				 "unreadable response (%zu bytes)", call->response_len);
		}
		return call_finish(call, &resp);
	} else {
		aws_error_parse(call->response, call->response_len, resp.http_status, &resp.error);
		resp.result = -EREMOTEIO;
	}
	retry = aws_retry_classify(result, resp.http_status, result == CURLE_OK ? resp.error.code : NULL);
	if (call->done && aws_retry_should_retry(&c->retry, retry, call->attempts) &&
	    !loop_is_stopping(c->loop)) {
		uint64_t delay = aws_retry_backoff_usec(&c->retry, call->attempts, c->rng, c->rng_userdata);

		log_debug("retrying %s call after %s (attempt %u, in %llu ms)", call->service,
			  *resp.error.code ? resp.error.code : resp.error.message, call->attempts + 1,
			  (unsigned long long)(delay / 1000));
		/* always through a timer: never re-enter curl from done() */
		r = call_schedule(call, delay ? delay : 1);
		if (r >= 0)
			return;
	}
	call_finish(call, &resp);
}

static int on_call_timer(struct loop *loop, void *userdata)
{
	struct aws_call *call = userdata;
	int r;

	call->timer = sd_event_source_disable_unref(call->timer);
	if (call->token_reserved) {
		call->token_reserved = false;
		r = call_send(call);
	} else {
		r = call_schedule(call, 0);
	}
	if (r < 0)
		call_fail(call, r, "Failed to start the request");
	return 0;
}

/* Wait delay_usec (backoff) if any, then take a token from the bucket
 * (waiting for it if needed; the token stays reserved), then send. */
static int call_schedule(struct aws_call *call, uint64_t delay_usec)
{
	struct aws_client *c = call->client;

	if (delay_usec == 0) {
		uint64_t wait = ratelimit_reserve(&c->limiter, clock_monotonic_usec());

		if (wait == 0)
			return call_send(call);
		call->token_reserved = true;
		delay_usec = wait;
	}
	return loop_add_timer(c->loop, delay_usec, on_call_timer, call, &call->timer);
}

static int call_new(struct aws_client *c, enum aws_protocol protocol, const char *service,
		    const char *target, char *body, aws_done_fn done, void *userdata,
		    struct aws_call **ret)
{
	struct aws_call *call = calloc(1, sizeof(*call));

	if (!call) {
		free(body);
		return -ENOMEM;
	}
	call->client = c;
	call->protocol = protocol;
	call->body = body;
	call->service = strdup(service);
	call->target = target ? strdup(target) : NULL;
	call->done = done;
	call->userdata = userdata;
	call->next = c->calls;
	if (c->calls)
		c->calls->prev = call;
	c->calls = call;
	if (!call->service || (target && !call->target)) {
		call_free(call);
		return -ENOMEM;
	}
	*ret = call;
	return 0;
}

static int call_start(struct aws_call *call)
{
	int r = call_schedule(call, 0);

	if (r < 0) {
		call->done = NULL; /* the caller gets the error instead */
		call_free(call);
	}
	return r;
}

static int call_query(struct aws_client *c, const char *service, struct aws_query *q,
		      aws_done_fn done, void *userdata, bool owned)
{
	struct aws_call *call;
	char *body = NULL;
	int r;

	if (!c || !service || !q || !done) {
		aws_query_free(q);
		r = -EINVAL;
		goto fail;
	}
	r = aws_query_encode(q, &body);
	aws_query_free(q);
	if (r < 0)
		goto fail;
	r = call_new(c, AWS_PROTOCOL_QUERY, service, NULL, body, done, userdata, &call);
	if (r < 0)
		goto fail;
	call->owns_userdata = owned; /* from here on call_free() frees it */
	return call_start(call);
fail:
	if (owned)
		free(userdata);
	return r;
}

int aws_call_query(struct aws_client *c, const char *service, struct aws_query *q,
		   aws_done_fn done, void *userdata)
{
	return call_query(c, service, q, done, userdata, false);
}

int aws_call_query_owned(struct aws_client *c, const char *service, struct aws_query *q,
			 aws_done_fn done, void *userdata)
{
	return call_query(c, service, q, done, userdata, true);
}

int aws_call_json(struct aws_client *c, const char *service, const char *target,
		  json_t *body, aws_done_fn done, void *userdata)
{
	struct aws_call *call;
	char *text;
	int r;

	if (!c || !service || !target || !body || !done) {
		json_decref(body);
		return -EINVAL;
	}
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return -ENOMEM;
	r = call_new(c, AWS_PROTOCOL_JSON, service, target, text, done, userdata, &call);
	if (r < 0)
		return r;
	return call_start(call);
}

const char *aws_response_strerror(const struct aws_response *r)
{
	return r->description;
}
