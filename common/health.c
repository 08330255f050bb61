/*
 * The health and metrics HTTP server behind common/health.h. Owns one or
 * two loopback listening sockets, each a libmicrohttpd daemon with its own
 * polling thread; daemons call health_server_heartbeat() from their event loop and
 * health_server_set_ready() when they can serve. The HTTP thread only reads
 * the heartbeat (atomic), the ready state (under a mutex) and renders the
 * metrics registry (under the registry's mutex): it never touches anything
 * else of the daemon. Cleanup style: explicit frees on each return path.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/clock.h"
#include "common/health.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"

/* Probes and scrapes are tiny; a few parallel connections are plenty, and
 * a cap keeps a misbehaving client from exhausting file descriptors. */
#define HEALTH_MAX_CONNECTIONS 32
/* Idle connections are dropped after this long (seconds). */
#define HEALTH_CONNECTION_TIMEOUT_S 10
/* Backlog of the listening socket. */
#define HEALTH_LISTEN_BACKLOG 16
/* Longest readiness reason kept (longer ones are cut). */
#define HEALTH_REASON_MAX 256

#define CONTENT_TYPE_TEXT "text/plain; charset=utf-8"

enum health_paths {
	HEALTH_PATHS_METRICS = 1 << 0, /* /metrics */
	HEALTH_PATHS_PROBES = 1 << 1,  /* /healthz, /readyz */
};

struct health_listener {
	struct health_server *server;
	struct MHD_Daemon *mhd;
	uint16_t port;
	unsigned paths; /* enum health_paths */
};

struct health_server {
	struct health_listener metrics_listener;
	struct health_listener health_listener; /* unused when the ports are equal */
	struct metrics_registry *metrics;       /* not owned */
	const char *address;                    /* NULL: loopback; only during start */
	uint16_t metrics_port;
	uint16_t health_port;
	uint64_t stall_usec;
	_Atomic uint64_t heartbeat_usec; /* CLOCK_MONOTONIC */
	pthread_mutex_t lock;            /* guards ready and reason */
	bool ready;
	char reason[HEALTH_REASON_MAX];
};

static enum MHD_Result reply(struct MHD_Connection *connection, unsigned status,
			     const char *content_type, void *body, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *response = MHD_create_response_from_buffer(len, body, mode);
	if (!response) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	enum MHD_Result r = MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
						    content_type);
	if (r == MHD_YES && status == MHD_HTTP_METHOD_NOT_ALLOWED)
		r = MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (r == MHD_YES)
		r = MHD_queue_response(connection, status, response);
	MHD_destroy_response(response);
	return r;
}

static enum MHD_Result reply_text(struct MHD_Connection *connection, unsigned status,
				  const char *fmt, ...) _printf_(3, 4);

static enum MHD_Result reply_text(struct MHD_Connection *connection, unsigned status,
				  const char *fmt, ...)
{
	char *text;
	va_list ap;

	va_start(ap, fmt);
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MHD_NO;
	return reply(connection, status, CONTENT_TYPE_TEXT, text, (size_t)n,
		     MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result serve_metrics(struct health_server *s, struct MHD_Connection *c)
{
	char *text;
	size_t len;

	int r = metrics_registry_render(s->metrics, &text, &len);
	if (r < 0)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "Failed to render metrics: %s\n", strerror(-r));
	return reply(c, MHD_HTTP_OK, METRICS_CONTENT_TYPE, text, len, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result serve_healthz(struct health_server *s, struct MHD_Connection *c)
{
	uint64_t now = clock_monotonic_usec();
	uint64_t last = atomic_load_explicit(&s->heartbeat_usec, memory_order_relaxed);
	uint64_t age = now > last ? now - last : 0;

	if (age > s->stall_usec)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "event loop stalled: no heartbeat for %.1fs (limit %.0fs)\n",
				  (double)age / 1e6, (double)s->stall_usec / 1e6);
	return reply_text(c, MHD_HTTP_OK, "ok\n");
}

static enum MHD_Result serve_readyz(struct health_server *s, struct MHD_Connection *c)
{
	char reason[HEALTH_REASON_MAX];

	pthread_mutex_lock(&s->lock);
	bool ready = s->ready;
	memcpy(reason, s->reason, sizeof(reason));
	pthread_mutex_unlock(&s->lock);

	if (ready)
		return *reason ? reply_text(c, MHD_HTTP_OK, "ok: %s\n", reason)
			       : reply_text(c, MHD_HTTP_OK, "ok\n");
	return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready: %s\n", reason);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection,
				  const char *url, const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct health_listener *l = cls;
	unsigned paths = streq(url, "/metrics")					? HEALTH_PATHS_METRICS
			 : streq(url, "/healthz") || streq(url, "/readyz") ? HEALTH_PATHS_PROBES
									   : 0;

	if (!(paths & l->paths))
		return reply_text(connection, MHD_HTTP_NOT_FOUND, "not found: %s\n", url);
	if (!streq(method, MHD_HTTP_METHOD_GET) && !streq(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method %s not allowed\n", method);
	if (paths == HEALTH_PATHS_METRICS)
		return serve_metrics(l->server, connection);
	if (streq(url, "/healthz"))
		return serve_healthz(l->server, connection);
	return serve_readyz(l->server, connection);
}

static void on_mhd_error(void *cls, const char *fmt, va_list ap) _printf_(2, 0);

static void on_mhd_error(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_warn("health server: %s", msg);
}

/* Binds 127.0.0.1:port ourselves so that errors keep their errno and the
 * ephemeral port can be read back. */
/* address: an IPv4 or IPv6 literal; NULL is loopback. */
static int listen_on(const char *address, uint16_t port, int *ret_fd, uint16_t *ret_port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int one = 1, family;

	if (!address || inet_pton(AF_INET, address, &in4->sin_addr) == 1) {
		family = AF_INET;
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		if (!address)
			in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*in4);
	} else if (inet_pton(AF_INET6, address, &in6->sin6_addr) == 1) {
		family = AF_INET6;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		len = sizeof(*in6);
	} else {
		return -EINVAL;
	}

	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, HEALTH_LISTEN_BACKLOG) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	*ret_port = ntohs(family == AF_INET ? in4->sin_port : in6->sin6_port);
	return 0;
}

static int listener_start(struct health_server *s, struct health_listener *l, int port,
			  unsigned paths)
{
	int fd = -1, r;

	if (port < HEALTH_PORT_EPHEMERAL || port > UINT16_MAX)
		return -EINVAL;
	r = listen_on(s->address, port == HEALTH_PORT_EPHEMERAL ? 0 : (uint16_t)port, &fd, &l->port);
	if (r < 0)
		return r;
	l->server = s;
	l->paths = paths;
	/* The logger comes first: MHD logs what it meets before it to stderr,
	 * and warns at every start when it is not first. */
	l->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
					  MHD_USE_ERROR_LOG,
				  l->port, NULL, NULL, on_request, l,
				  MHD_OPTION_EXTERNAL_LOGGER, on_mhd_error, NULL,
				  MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)HEALTH_MAX_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HEALTH_CONNECTION_TIMEOUT_S,
				  MHD_OPTION_END);
	/* On failure fd is not closed here: whether MHD already closed it
	 * differs between versions, and a double close could hit a
	 * descriptor another thread just opened. */
	return l->mhd ? 0 : -EIO; /* MHD logged the reason through on_mhd_error() */
}

static int health_server_listen(struct health_server *s, int metrics_port, int health_port)
{
	int r;

	if (metrics_port != HEALTH_PORT_DISABLED && !s->metrics)
		return -EINVAL;
	if (metrics_port > 0 && metrics_port == health_port) {
		r = listener_start(s, &s->metrics_listener, metrics_port,
				   HEALTH_PATHS_METRICS | HEALTH_PATHS_PROBES);
		s->metrics_port = s->health_port = s->metrics_listener.port;
		return r;
	}
	if (metrics_port != HEALTH_PORT_DISABLED) {
		r = listener_start(s, &s->metrics_listener, metrics_port, HEALTH_PATHS_METRICS);
		if (r < 0)
			return r;
		s->metrics_port = s->metrics_listener.port;
	}
	if (health_port != HEALTH_PORT_DISABLED) {
		r = listener_start(s, &s->health_listener, health_port, HEALTH_PATHS_PROBES);
		if (r < 0)
			return r;
		s->health_port = s->health_listener.port;
	}
	return 0;
}

int health_server_new(struct metrics_registry *metrics, int metrics_port, int health_port,
		      unsigned stall_seconds, struct health_server **ret)
{
	return health_server_new_at(NULL, metrics, metrics_port, health_port, stall_seconds, ret);
}

int health_server_new_at(const char *address, struct metrics_registry *metrics, int metrics_port,
			 int health_port, unsigned stall_seconds, struct health_server **ret)
{
	int r;

	if (!ret)
		return -EINVAL;
	struct health_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = pthread_mutex_init(&s->lock, NULL);
	if (r != 0) {
		free(s);
		return -r;
	}
	s->metrics = metrics;
	s->stall_usec = (uint64_t)(stall_seconds ? stall_seconds : HEALTH_STALL_SECONDS_DEFAULT) *
			1000000u;
	atomic_store(&s->heartbeat_usec, clock_monotonic_usec());
	snprintf(s->reason, sizeof(s->reason), "starting");

	s->address = address;
	r = health_server_listen(s, metrics_port, health_port);
	s->address = NULL;
	if (r < 0) {
		health_server_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void health_server_free(struct health_server *s)
{
	if (!s)
		return;
	/* Joins the threads and closes the sockets. */
	if (s->metrics_listener.mhd)
		MHD_stop_daemon(s->metrics_listener.mhd);
	if (s->health_listener.mhd)
		MHD_stop_daemon(s->health_listener.mhd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

uint16_t health_server_metrics_port(const struct health_server *s)
{
	return s->metrics_port;
}

uint16_t health_server_health_port(const struct health_server *s)
{
	return s->health_port;
}

void health_server_heartbeat(struct health_server *s)
{
	atomic_store_explicit(&s->heartbeat_usec, clock_monotonic_usec(), memory_order_relaxed);
}

void health_server_set_ready(struct health_server *s, bool ready, const char *reason)
{
	pthread_mutex_lock(&s->lock);
	s->ready = ready;
	snprintf(s->reason, sizeof(s->reason), "%s", reason ? reason : (ready ? "" : "unknown"));
	pthread_mutex_unlock(&s->lock);
}

static int on_heartbeat(struct loop *loop, void *userdata)
{
	health_server_heartbeat(userdata);
	return 0;
}

int health_server_attach_loop(struct health_server *s, struct loop *loop)
{
	health_server_heartbeat(s);
	return loop_add_periodic(loop, "health-heartbeat", HEALTH_HEARTBEAT_USEC, on_heartbeat, s);
}
