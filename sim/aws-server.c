/*
 * kanna-sim's AWS HTTP front: libmicrohttpd on 127.0.0.1 (thread per
 * connection), form bodies through MHD's post processor, the service a
 * request is for (X-Amz-Target, else the SigV4 credential scope), SigV4
 * verification of every request with common/sigv4.h, then aws_dispatch().
 * /_sim/... is the unauthenticated admin endpoint (loopback only).
 * It never interprets an action itself and never holds the lock while
 * sleeping (added latency, SQS long polling).
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <time.h>

#include "common/log.h"
#include "common/sigv4.h"
#include "sim/aws-internal.h"

/* Post processor buffer: MHD's recommended minimum is 256 bytes. */
#define POST_BUFFER_SIZE (64 * 1024)
/* Enough for a fleet of SDK clients and a few admin calls. */
#define CONNECTION_LIMIT 256
/* Longer than SQS's 20 s long poll so a waiting receive is not cut. */
#define CONNECTION_TIMEOUT_SEC 60
#define HEADERS_MAX 128

struct conn {
	char *uri; /* raw, with the query string: what the client signed */
	char *body;
	size_t len, cap;
	bool too_big;
	bool headers_seen; /* MHD's first call carries headers only */
	struct aws_params params;
	struct MHD_PostProcessor *pp;
	int param_error;
};

static void conn_free(struct conn *c)
{
	if (!c)
		return;
	if (c->pp)
		MHD_destroy_post_processor(c->pp);
	aws_params_clear(&c->params);
	free(c->body);
	free(c->uri);
	free(c);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *connection)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (c)
		c->uri = strdup(uri ? uri : "/");
	return c;
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	conn_free(*con_cls);
	*con_cls = NULL;
}

static enum MHD_Result on_post_value(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *filename, const char *content_type,
				     const char *transfer_encoding, const char *data,
				     uint64_t off, size_t size)
{
	struct conn *c = cls;
	int r = aws_params_add(&c->params, key, data, size, off);

	if (r < 0)
		c->param_error = r;
	return r < 0 ? MHD_NO : MHD_YES;
}

static enum MHD_Result on_get_value(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct conn *c = cls;
	int r = aws_params_add(&c->params, key, value, value ? strlen(value) : 0, 0);

	if (r < 0)
		c->param_error = r;
	return r < 0 ? MHD_NO : MHD_YES;
}

static int body_append(struct conn *c, const char *data, size_t size)
{
	if (c->len + size > SIM_AWS_BODY_MAX) {
		c->too_big = true;
		return 0;
	}
	if (c->len + size + 1 > c->cap) {
		size_t cap = MAX(c->cap * 2, c->len + size + 1);
		char *b = realloc(c->body, cap);

		if (!b)
			return -ENOMEM;
		c->body = b;
		c->cap = cap;
	}
	memcpy(c->body + c->len, data, size);
	c->len += size;
	c->body[c->len] = '\0';
	return 0;
}

static enum MHD_Result send_response(struct MHD_Connection *connection,
				     struct aws_response *resp, const char *request_id)
{
	struct MHD_Response *m;
	enum MHD_Result ret;

	m = MHD_create_response_from_buffer(resp->len, resp->body, MHD_RESPMEM_MUST_FREE);
	if (!m)
		return MHD_NO;
	resp->body = NULL;
	MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE,
				resp->content_type ?: "text/plain");
	if (request_id) {
		MHD_add_response_header(m, "x-amzn-RequestId", request_id);
		MHD_add_response_header(m, "x-amz-request-id", request_id);
	}
	if (resp->query_error)
		MHD_add_response_header(m, "x-amzn-query-error", resp->query_error);
	ret = MHD_queue_response(connection, resp->status ?: 500, m);
	MHD_destroy_response(m);
	return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *connection, unsigned status,
				 const char *text)
{
	struct aws_response resp = { .status = status, .content_type = "text/plain" };

	resp.body = strdup(text);
	if (!resp.body)
		return MHD_NO;
	resp.len = strlen(resp.body);
	return send_response(connection, &resp, NULL);
}

struct header_list {
	struct sigv4_header v[HEADERS_MAX];
	size_t n;
};

static enum MHD_Result on_header(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct header_list *h = cls;

	if (h->n < HEADERS_MAX)
		h->v[h->n++] = (struct sigv4_header){ key, value ? value : "" };
	return MHD_YES;
}

/* SigV4 signing names of the simulated services. */
static const char *const service_names[_AWS_SERVICE_MAX] = {
	[AWS_SERVICE_EC2] = "ec2", [AWS_SERVICE_SSM] = "ssm",
	[AWS_SERVICE_STS] = "sts", [AWS_SERVICE_SQS] = "sqs",
	[AWS_SERVICE_PRICING] = "pricing", [AWS_SERVICE_IAM] = "iam",
};

static const char *service_name(enum aws_service s)
{
	return service_names[s];
}

static enum aws_service service_from_name(const char *name, bool *ok)
{
	const char *const *names = service_names;

	for (size_t i = 0; i < _AWS_SERVICE_MAX; i++)
		if (streq(names[i], name)) {
			*ok = true;
			return (enum aws_service)i;
		}
	*ok = false;
	return AWS_SERVICE_EC2;
}

/* The AWS error for a failed verification, per service as AWS answers. */
static int auth_error(struct aws_response *resp, const struct aws_request *req, int r,
		      const char *why)
{
	bool json = req->service == AWS_SERVICE_SSM || req->service == AWS_SERVICE_PRICING;
	bool ec2 = req->service == AWS_SERVICE_EC2;

	switch (r) {
	case SIGV4_ERR_UNKNOWN_KEY:
		if (json)
			return aws_error(resp, req, 400, "UnrecognizedClientException",
					 "The security token included in the request is invalid.");
		if (ec2)
			return aws_error(resp, req, 401, "AuthFailure",
					 "AWS was not able to validate the provided access credentials");
		return aws_error(resp, req, 403, "InvalidClientTokenId",
				 "The security token included in the request is invalid.");
	case SIGV4_ERR_SKEW:
		if (ec2)
			return aws_error(resp, req, 400, "RequestExpired",
					 "Request has expired: %s", why);
		if (json)
			return aws_error(resp, req, 400, "InvalidSignatureException",
					 "Signature expired: %s", why);
		return aws_error(resp, req, 403, "SignatureDoesNotMatch",
				 "Signature expired: %s", why);
	case SIGV4_ERR_MISMATCH:
		if (json)
			return aws_error(resp, req, 400, "InvalidSignatureException",
					 "The request signature we calculated does not match the signature you provided.");
		return aws_error(resp, req, 403, "SignatureDoesNotMatch",
				 "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.");
	default:
		return aws_error(resp, req, 400, json ? "IncompleteSignatureException" : "IncompleteSignature",
				 "%s", why);
	}
}

/* The service a request is for: X-Amz-Target, else the SigV4 scope, else
 * the one unsigned action. False (scope service in unknown) if not ours. */
static bool service_select(struct aws_request *req, const char *target, const char *authz,
			   const char *action, char *unknown, size_t len)
{
	struct sigv4_authorization parsed;
	bool known = true;

	if (target && strncmp(target, "AmazonSSM.", 10) == 0)
		req->service = AWS_SERVICE_SSM;
	else if (target && strncmp(target, "AmazonSQS.", 10) == 0)
		req->service = AWS_SERVICE_SQS;
	else if (target && strncmp(target, "AWSPriceListService.", 20) == 0)
		req->service = AWS_SERVICE_PRICING;
	else if (authz && sigv4_parse_authorization(authz, &parsed) >= 0) {
		req->service = service_from_name(parsed.service, &known);
		snprintf(unknown, len, "%s", parsed.service);
	} else if (streq_ptr(action, "AssumeRoleWithWebIdentity"))
		req->service = AWS_SERVICE_STS;
	/* SSM and Pricing speak only JSON; SQS when X-Amz-Target says so. */
	req->json_protocol = req->service == AWS_SERVICE_SSM || req->service == AWS_SERVICE_PRICING ||
			     (req->service == AWS_SERVICE_SQS && target);
	return known;
}

/* sigv4_verify() over the request as received: raw path and query, every
 * header, the body's hash. */
static int signature_verify(struct sim_aws *aws, struct MHD_Connection *connection,
			    struct conn *c, const char *method, const struct aws_request *req,
			    const char *authz, struct sigv4_authorization *parsed,
			    char *why, size_t whylen)
{
	struct sigv4_credentials creds = { aws->access_key_id, aws->secret_access_key, NULL };
	struct sigv4_request sreq = { .method = method, .path = req->path };
	struct header_list headers = { .n = 0 };
	const char *q = strchr(c->uri, '?');
	char payload[65];
	int r;

	sreq.query = q ? q + 1 : "";
	MHD_get_connection_values(connection, MHD_HEADER_KIND, on_header, &headers);
	sreq.headers = headers.v;
	sreq.n_headers = headers.n;
	r = sigv4_sha256_hex(c->body ? c->body : "", c->len, payload);
	if (r < 0)
		return r;
	sreq.payload_sha256_hex = payload;
	return sigv4_verify(&sreq, authz, &creds, 1, time(NULL), parsed, why, whylen);
}

/* Picks the service, then verifies the signature. Returns 1 when the
 * request may go on, 0 when resp holds an error, < 0 on failure. */
static int authenticate(struct sim_aws *aws, struct MHD_Connection *connection,
			struct conn *c, const char *method, struct aws_request *req,
			struct aws_response *resp)
{
	const char *target = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "X-Amz-Target");
	const char *authz = MHD_lookup_connection_value(connection, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_AUTHORIZATION);
	const char *action = aws_params_get(&c->params, "Action");
	struct sigv4_authorization parsed;
	char why[256] = "", unknown[SIGV4_SCOPE_PART_MAX] = "";
	int r;

	if (!service_select(req, target, authz, action, unknown, sizeof(unknown)))
		return aws_error(resp, req, 400, "InvalidAction",
				 "The service '%s' is not simulated here", unknown);
	/* AssumeRoleWithWebIdentity is unsigned by design: the token proves who. */
	if (req->service == AWS_SERVICE_STS && streq_ptr(action, "AssumeRoleWithWebIdentity") && !authz)
		return 1;
	if (!authz)
		return aws_error(resp, req, req->service == AWS_SERVICE_EC2 ? 401 : 403,
				 req->json_protocol ? "MissingAuthenticationTokenException"
						    : "MissingAuthenticationToken",
				 "Request is missing Authentication Token");
	r = signature_verify(aws, connection, c, method, req, authz, &parsed, why, sizeof(why));
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return auth_error(resp, req, r, why);

	if (aws_catalog_region(aws->catalog, parsed.region))
		snprintf(req->region_buf, sizeof(req->region_buf), "%s", parsed.region);
	else if (req->service == AWS_SERVICE_STS || req->service == AWS_SERVICE_PRICING ||
		 req->service == AWS_SERVICE_IAM)
		/* Global (STS, IAM) or us-east-1-only (Pricing) endpoints: any scope. */
		snprintf(req->region_buf, sizeof(req->region_buf), "%s", aws->region);
	else
		return aws_error(resp, req, 400, req->service == AWS_SERVICE_EC2 ? "AuthFailure" : "InvalidClientTokenId",
				 "Credential should be scoped to a valid region, not '%s'. ", parsed.region);
	req->region = req->region_buf;
	return 1;
}

static int json_body(struct conn *c, struct aws_request *req, struct aws_response *resp)
{
	json_error_t e;

	req->json = json_loadb(c->body ? c->body : "{}", c->len ? c->len : 2, JSON_REJECT_DUPLICATES, &e);
	if (!req->json || !json_is_object(req->json))
		return aws_error(resp, req, 400, "SerializationException",
				 "Failed to parse the request body: %s", e.text);
	return 1;
}

static enum MHD_Result serve_aws(struct sim_aws *aws, struct MHD_Connection *connection,
				 struct conn *c, const char *method)
{
	struct aws_request req = { .service = AWS_SERVICE_EC2, .endpoint = aws->endpoint,
				   .region = aws->region, .params = &c->params };
	_cleanup_free_ char *path = strndup(c->uri, strcspn(c->uri, "?"));
	struct aws_response resp = { 0 };
	const char *target;
	unsigned latency_ms = 0;
	enum MHD_Result ret;
	bool go_on;
	int r;

	if (!path)
		return MHD_NO;
	req.path = path;
	pthread_mutex_lock(&aws->lock);
	aws_new_uuid(aws, req.request_id);
	pthread_mutex_unlock(&aws->lock);

	r = authenticate(aws, connection, c, method, &req, &resp);
	target = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "X-Amz-Target");
	if (r > 0 && req.json_protocol) {
		req.action = target ? strchr(target, '.') + 1 : NULL;
		r = json_body(c, &req, &resp);
	} else if (r > 0)
		req.action = aws_params_get(&c->params, "Action");
	/* r > 0: authenticated and parsed; 0: resp holds the error already. */
	go_on = r > 0;
	if (go_on) {
		pthread_mutex_lock(&aws->lock);
		r = aws_faults_apply(aws, &req, &resp, &latency_ms);
		pthread_mutex_unlock(&aws->lock);
		go_on = r == 0;
	}
	/* Faults answer at once; only a request that goes on may long-poll. */
	if (go_on) {
		if (req.service == AWS_SERVICE_SQS && streq_ptr(req.action, "ReceiveMessage"))
			aws_sqs_wait(aws, &req);
		pthread_mutex_lock(&aws->lock);
		r = aws_dispatch(aws, &req, &resp);
		if (r >= 0)
			r = aws_faults_lose_answer(aws, &req, &resp);
		pthread_mutex_unlock(&aws->lock);
	}
	json_decref(req.json);
	if (r < 0) {
		log_warn_errno(r, "Failed to answer AWS request %s: %m", req.request_id);
		aws_response_clear(&resp);
		r = aws_error(&resp, &req, 500, "InternalError", "Failed to answer the request");
		if (r < 0)
			return MHD_NO;
	}
	log_debug("AWS %s %s in %s: %u (request %s)", service_name(req.service),
		  req.action ? req.action : "-", req.region, resp.status, req.request_id);
	if (latency_ms)
		usleep(latency_ms * 1000U);
	ret = send_response(connection, &resp, req.request_id);
	aws_response_clear(&resp);
	return ret;
}

static enum MHD_Result serve_admin(struct sim_aws *aws, struct MHD_Connection *connection,
				   const char *url, const char *method, struct conn *c)
{
	struct aws_response resp = { 0 };
	enum MHD_Result ret;
	int r;

	pthread_mutex_lock(&aws->lock);
	r = aws_admin_handle(aws, url, method, c->body, c->len, &resp);
	pthread_mutex_unlock(&aws->lock);
	if (r < 0) {
		aws_response_clear(&resp);
		return send_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	ret = send_response(connection, &resp, NULL);
	aws_response_clear(&resp);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection,
				  const char *url, const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct sim_aws *aws = cls;
	struct conn *c = *con_cls;

	if (!c)
		return MHD_NO;
	if (!c->headers_seen) {
		c->headers_seen = true;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		if (body_append(c, upload_data, *upload_data_size) < 0)
			return MHD_NO;
		if (!c->too_big && !c->pp && c->len == *upload_data_size)
			c->pp = MHD_create_post_processor(connection, POST_BUFFER_SIZE,
							  on_post_value, c);
		if (c->pp && !c->too_big &&
		    MHD_post_process(c->pp, upload_data, *upload_data_size) != MHD_YES &&
		    c->param_error == 0)
			c->param_error = -EINVAL;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (c->too_big)
		return send_text(connection, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large\n");
	/* Admin bodies are JSON or raw message bodies, never forms: what the
	 * form parser made of them does not matter. */
	if (strncmp(url, "/_sim/", 6) == 0)
		return serve_admin(aws, connection, url, method, c);
	MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, on_get_value, c);
	if (c->param_error)
		return send_text(connection, MHD_HTTP_BAD_REQUEST, "malformed form body\n");
	return serve_aws(aws, connection, c, method);
}

int sim_aws_start(struct sim_aws *aws, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const union MHD_DaemonInfo *info;

	if (aws->mhd)
		return -EALREADY;
	aws->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
					    MHD_USE_ERROR_LOG,
				    port, NULL, NULL, on_request, aws,
				    MHD_OPTION_SOCK_ADDR, &sa,
				    MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
				    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_SEC,
				    MHD_OPTION_END);
	if (!aws->mhd)
		return log_error_errno(EADDRINUSE, "Failed to listen on 127.0.0.1:%u for the AWS endpoint",
				       (unsigned)port);
	info = MHD_get_daemon_info(aws->mhd, MHD_DAEMON_INFO_BIND_PORT);
	/* Under the lock: request threads may already run and read both. */
	pthread_mutex_lock(&aws->lock);
	aws->port = info ? info->port : port;
	snprintf(aws->endpoint, sizeof(aws->endpoint), "http://127.0.0.1:%u", (unsigned)aws->port);
	pthread_mutex_unlock(&aws->lock);
	log_info("AWS endpoint listening on %s (ec2, ssm, sts, sqs, pricing, iam; admin %s/_sim/)",
		 aws->endpoint, aws->endpoint);
	return 0;
}

void aws_server_stop(struct sim_aws *aws)
{
	if (!aws->mhd)
		return;
	pthread_mutex_lock(&aws->lock);
	aws->stopping = true;
	pthread_mutex_unlock(&aws->lock);
	MHD_stop_daemon(aws->mhd);
	aws->mhd = NULL;
	aws->port = 0;
}
