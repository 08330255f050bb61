/*
 * The per-process HTTP endpoint for probes and scrapes (libmicrohttpd on
 * 127.0.0.1): /metrics renders a metrics registry, /healthz answers 200
 * while the event loop is turning (the loop calls health_server_heartbeat()
 * on every iteration or from a timer) and 503 once it has not for the
 * configured stall window, /readyz answers 200 only after the daemon called
 * health_server_set_ready(s, true, NULL). MHD runs its own polling thread,
 * so probes answer even while the main thread is busy in a long solve.
 *
 * Karpenter serves health on 8081 and metrics on 8080; kanna serves all
 * three paths on one port per process, because several daemons share a
 * host under systemd. Defaults below; each daemon's configuration may
 * change its port, and port 0 binds an ephemeral port (see
 * health_server_port()).
 */
#ifndef KANNA_COMMON_HEALTH_H
#define KANNA_COMMON_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/metrics.h"

/* Default ports, one per process so that all fit on one host. The
 * scheduler's shard k listens on HEALTH_PORT_SCHEDULER + k. */
#define HEALTH_PORT_WATCHER 9471
#define HEALTH_PORT_LAUNCHER 9472
#define HEALTH_PORT_REAPER 9473
#define HEALTH_PORT_INIT 9474
#define HEALTH_PORT_SIM 9479
#define HEALTH_PORT_SCHEDULER 9480

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
 * Starts serving on 127.0.0.1:port (0 = ephemeral). metrics may be NULL
 * (then /metrics is 404). stall_seconds 0 selects the default. The server
 * starts not ready ("starting") with a fresh heartbeat. Returns 0 or a
 * negative errno (-EADDRINUSE when the port is taken).
 */
int health_server_new(struct metrics_registry *metrics, uint16_t port,
		      unsigned stall_seconds, struct health_server **ret);
/* Stops the HTTP thread and frees the server. NULL is allowed. */
void health_server_free(struct health_server *s);

/* The bound TCP port, useful after asking for port 0. */
uint16_t health_server_port(const struct health_server *s);

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
 * ("state replica not synced"); it is copied (cut at 255 bytes) and shown
 * by /readyz.
 */
void health_server_set_ready(struct health_server *s, bool ready, const char *reason);

#endif
