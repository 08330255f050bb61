/*
 * libmicrohttpd glue for kanna-sim's Kubernetes API: accumulates request
 * bodies (3 MiB cap), checks the bearer token, hands the request to
 * k8s_api_handle() and sends JSON bodies or chunked watch streams. Also runs
 * the sweeper thread. Never interprets Kubernetes objects itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/util.h"
#include "sim/k8s-schema.h"
#include "sim/k8s-server.h"

struct k8s_server {
	struct k8s_api *api;
	struct MHD_Daemon *daemon;
	char *token;
	uint16_t port;
	pthread_t sweeper;
	bool sweeper_running;
	pthread_mutex_t lock;
	pthread_cond_t stop_cond;
	bool stop;
};

struct request_ctx {
	char *body;
	size_t len;
	bool too_large;
};

static const char *mhd_arg(void *cls, const char *name)
{
	return MHD_lookup_connection_value(cls, MHD_GET_ARGUMENT_KIND, name);
}

struct arg_values {
	const char *name;
	const char **values;
	size_t max, n;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct arg_values *a = cls;

	(void)kind;
	if (!streq(key, a->name))
		return MHD_YES;
	/* "?dryRun" with no "=": Go's url.Values holds "". */
	if (a->n < a->max)
		a->values[a->n] = value ? value : "";
	a->n++;
	return MHD_YES;
}

/* Every value of a repeated query parameter, as url.Values keeps them. */
static size_t mhd_arg_values(void *cls, const char *name, const char **values, size_t max)
{
	struct arg_values a = { .name = name, .values = values, .max = max };

	MHD_get_connection_values(cls, MHD_GET_ARGUMENT_KIND, collect_arg, &a);
	return a.n;
}

static ssize_t watch_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	ssize_t n = k8s_watch_read(cls, buf, max);

	return n > 0 ? n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void watch_free(void *cls)
{
	k8s_watch_free(cls);
}

static ssize_t list_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	size_t n = k8s_list_stream_read(cls, buf, max);

	return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void list_free(void *cls)
{
	k8s_list_stream_free(cls);
}

static enum MHD_Result send_response(struct MHD_Connection *conn,
				     struct k8s_response *resp)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (resp->watch) {
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, K8S_WATCH_BLOCK_BYTES,
						      watch_reader, resp->watch, watch_free);
		if (r)
			resp->watch = NULL;
	} else if (resp->list) {
		r = MHD_create_response_from_callback(k8s_list_stream_length(resp->list),
						      K8S_LIST_BLOCK_BYTES, list_reader, resp->list,
						      list_free);
		if (r)
			resp->list = NULL;
	} else {
		r = MHD_create_response_from_buffer(resp->len, resp->body,
						    MHD_RESPMEM_MUST_FREE);
		if (r)
			resp->body = NULL;
	}
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
	if (resp->warnings) {
		const json_t *w;
		size_t i;

		/* apiserver's warning filter: `299 - "<text>"`, text strconv.Quote'd. */
		json_array_foreach(resp->warnings, i, w) {
			char quoted[1200], header[1300];

			k8s_schema_go_value(w, quoted, sizeof(quoted));
			snprintf(header, sizeof(header), "299 - %s", quoted);
			MHD_add_response_header(r, "Warning", header);
		}
	}
	if (resp->retry_after) {
		char secs[16];

		snprintf(secs, sizeof(secs), "%u", resp->retry_after);
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, secs);
	}
	ret = MHD_queue_response(conn, (unsigned)resp->status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, int code,
				  const char *reason, const char *message)
{
	struct k8s_response resp = {};
	struct k8s_error err = {};
	enum MHD_Result ret;

	k8s_error_set(&err, code, reason, "%s", message);
	if (k8s_reply_error(&resp, &err) < 0)
		return MHD_NO;
	ret = send_response(conn, &resp);
	k8s_response_clear(&resp);
	return ret;
}

static bool authorized(struct k8s_server *s, struct MHD_Connection *conn)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);
	size_t n;

	if (!s->token)
		return true;
	if (!h || strncmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	n = strlen(s->token);
	return strlen(h) == n && CRYPTO_memcmp(h, s->token, n) == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_size, void **con_cls)
{
	struct k8s_server *s = cls;
	struct request_ctx *ctx = *con_cls;
	struct k8s_response resp = {};
	struct k8s_request req = {};
	enum MHD_Result ret;

	if (!ctx) {
		ctx = calloc(1, sizeof(*ctx));
		*con_cls = ctx;
		return ctx ? MHD_YES : MHD_NO;
	}
	if (*upload_size > 0) {
		if (!ctx->too_large && ctx->len + *upload_size <= K8S_MAX_BODY_BYTES) {
			char *b = realloc(ctx->body, ctx->len + *upload_size + 1);

			if (!b)
				return MHD_NO;
			memcpy(b + ctx->len, upload_data, *upload_size);
			ctx->body = b;
			ctx->len += *upload_size;
			ctx->body[ctx->len] = '\0';
		} else
			ctx->too_large = true;
		*upload_size = 0;
		return MHD_YES;
	}
	if (!authorized(s, conn))
		return send_error(conn, 401, "Unauthorized", "Unauthorized");
	if (ctx->too_large)
		return send_error(conn, 413, "RequestEntityTooLarge",
				  "the request body exceeds the 3 MiB limit");
	req.method = method;
	req.path = url;
	req.content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						       MHD_HTTP_HEADER_CONTENT_TYPE);
	req.accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	req.user_agent = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_USER_AGENT);
	req.body = ctx->body;
	req.body_len = ctx->len;
	req.stream_lists = true;
	req.arg = mhd_arg;
	req.arg_values = mhd_arg_values;
	req.arg_cls = conn;
	if (k8s_api_handle(s->api, &req, &resp) < 0) {
		k8s_response_clear(&resp);
		return MHD_NO;
	}
	log_debug("%s %s -> %d", method, url, resp.status);
	ret = send_response(conn, &resp);
	k8s_response_clear(&resp);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct request_ctx *ctx = *con_cls;

	if (ctx) {
		free(ctx->body);
		free(ctx);
		*con_cls = NULL;
	}
}

static void *sweeper_main(void *userdata)
{
	struct k8s_server *s = userdata;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct timespec ts = clock_realtime_in_ms(K8S_SWEEP_INTERVAL_MS);

		pthread_cond_timedwait(&s->stop_cond, &s->lock, &ts);
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->lock);
		k8s_store_sweep(s->api->store, clock_monotonic_ms());
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int k8s_server_start(struct k8s_api *api, const struct k8s_server_config *cfg,
		     struct k8s_server **ret)
{
	struct k8s_server *s = calloc(1, sizeof(*s));
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(cfg->port) };
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
	const union MHD_DaemonInfo *info;

	if (!s)
		return -ENOMEM;
	s->api = api;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->stop_cond, NULL);
	if (cfg->token && !(s->token = strdup(cfg->token))) {
		k8s_server_free(s);
		return -ENOMEM;
	}
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (cfg->tls) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			k8s_server_free(s);
			return log_error_errno(-ENOTSUP, "Failed to start HTTPS: libmicrohttpd lacks TLS support (use --insecure-http)");
		}
		flags |= MHD_USE_TLS;
		s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
					     MHD_OPTION_SOCK_ADDR, &addr,
					     MHD_OPTION_HTTPS_MEM_KEY, cfg->tls->key_pem,
					     MHD_OPTION_HTTPS_MEM_CERT, cfg->tls->cert_pem,
					     MHD_OPTION_CONNECTION_LIMIT, K8S_SERVER_MAX_CONNECTIONS,
					     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
					     MHD_OPTION_END);
	} else
		s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
					     MHD_OPTION_SOCK_ADDR, &addr,
					     MHD_OPTION_CONNECTION_LIMIT, K8S_SERVER_MAX_CONNECTIONS,
					     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
					     MHD_OPTION_END);
	if (!s->daemon) {
		k8s_server_free(s);
		return log_error_errno(-EADDRINUSE, "Failed to start the Kubernetes API server on 127.0.0.1:%u",
				       cfg->port);
	}
	info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : cfg->port;
	if (pthread_create(&s->sweeper, NULL, sweeper_main, s) != 0) {
		k8s_server_free(s);
		return -EAGAIN;
	}
	s->sweeper_running = true;
	*ret = s;
	return 0;
}

uint16_t k8s_server_port(const struct k8s_server *s)
{
	return s->port;
}

struct k8s_server *k8s_server_free(struct k8s_server *s)
{
	if (!s)
		return NULL;
	if (s->sweeper_running) {
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_signal(&s->stop_cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->sweeper, NULL);
	}
	k8s_store_close(s->api->store);
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	pthread_cond_destroy(&s->stop_cond);
	pthread_mutex_destroy(&s->lock);
	free(s->token);
	free(s);
	return NULL;
}
