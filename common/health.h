/*
 * The per-process HTTP endpoints for probes and scrapes (libmicrohttpd on
 * 127.0.0.1): /metrics renders a metrics registry, /healthz answers 200
 * while the event loop is turning (health_server_attach_loop() bumps a
 * heartbeat from a periodic job) and 503 once it has not for the stall
 * window, /readyz answers 200 only after the daemon called
 * health_server_set_ready(s, true, NULL). MHD runs its own polling thread,
 * so probes answer even while the main thread is busy in a long solve.
 *
 * As in Karpenter (metrics 8080, health 8081) metrics and probes have their
 * own ports: the config keys metrics-port and health-port
 * (doc/configuration.md; defaults differ per daemon so that all of them
 * fit on one host). Equal ports share one listener serving all three
 * paths. A path a listener does not serve is 404, any method but GET and
 * HEAD is 405.
 */
#ifndef KANNA_COMMON_HEALTH_H
#define KANNA_COMMON_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/metrics.h"

/* Port values besides 1..65535: no listener (what 0 means in the config),
 * or an ephemeral port chosen by the kernel (tests; read it back). */
#define HEALTH_PORT_DISABLED 0
#define HEALTH_PORT_EPHEMERAL (-1)

/* A loop that has not turned for this long is reported unhealthy: long
 * enough for the biggest bounded solve slice and a slow API round trip,
 * short enough that a kubelet liveness probe (period 10 s) restarts a
 * truly stuck daemon within a minute. */
#define HEALTH_STALL_SECONDS_DEFAULT 30
/* How often health_server_attach_loop() bumps the heartbeat: well inside
 * the smallest sensible stall window (a few seconds). */
#define HEALTH_HEARTBEAT_USEC (500ULL * 1000)

struct health_server;

/*
 * Starts the listeners: /metrics on metrics_port (needs metrics), /healthz
 * and /readyz on health_port; each HEALTH_PORT_DISABLED, HEALTH_PORT_EPHEMERAL
 * or a port number. stall_seconds 0 selects HEALTH_STALL_SECONDS_DEFAULT.
 * A daemon passes its config_common metrics_port and health_port as they
 * are (0 disables in both). The server starts not ready ("starting") with
 * a fresh heartbeat. Returns 0, -EADDRINUSE when a port is taken, -EINVAL
 * for a port out of range or a metrics port without a registry, or another
 * negative errno.
 */
int health_server_new(struct metrics_registry *metrics, int metrics_port, int health_port,
		      unsigned stall_seconds, struct health_server **ret);
/* The same on address, an IPv4 or IPv6 literal ("0.0.0.0" in a pod, where
 * the kubelet probes the pod's IP); NULL is loopback. -EINVAL for anything
 * else. */
int health_server_new_at(const char *address, struct metrics_registry *metrics, int metrics_port,
			 int health_port, unsigned stall_seconds, struct health_server **ret);
/* Stops the HTTP threads and frees the server. NULL is allowed. */
void health_server_free(struct health_server *s);

/* The bound TCP ports (useful after HEALTH_PORT_EPHEMERAL); 0 when disabled. */
uint16_t health_server_metrics_port(const struct health_server *s);
uint16_t health_server_health_port(const struct health_server *s);

/* Records that the event loop turned (cheap: one atomic store). */
void health_server_heartbeat(struct health_server *s);

/*
 * Bumps the heartbeat from `loop` every HEALTH_HEARTBEAT_USEC (a periodic
 * job named "health-heartbeat"): the usual way a daemon wires /healthz to
 * its event loop. A timer runs only when the loop turns, so a main thread
 * stuck in one callback stops the heartbeat and /healthz turns 503.
 */
struct loop;
int health_server_attach_loop(struct health_server *s, struct loop *loop);

/*
 * Declares the daemon ready or not. reason says why it is not ready
 * ("state replica not synced"), or, when ready, what it is ready as
 * ("standby"; NULL: plain "ok"); it is copied (cut at 255 bytes) and shown
 * by /readyz.
 */
void health_server_set_ready(struct health_server *s, bool ready, const char *reason);

#endif
