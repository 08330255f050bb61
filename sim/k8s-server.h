/*
 * kanna-sim's Kubernetes API over HTTP(S) on loopback: libmicrohttpd with a
 * thread per connection (watch streams block in their own thread), bearer
 * token authentication, and a sweeper thread completing graceful pod
 * deletions. Started and stopped by main.c.
 */
#ifndef KANNA_SIM_K8S_SERVER_H
#define KANNA_SIM_K8S_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/k8s-api.h"
#include "sim/tls.h"

/* How often graceful pod deletions are checked for completion. */
#define K8S_SWEEP_INTERVAL_MS 200
/* Concurrent connections; each watch holds one (and one thread). */
#define K8S_SERVER_MAX_CONNECTIONS 1024
/* Watch stream bytes handed to libmicrohttpd per call. */
#define K8S_WATCH_BLOCK_BYTES (64 * 1024)
/* LIST body bytes per call: large enough that a 100,000-pod body is few calls. */
#define K8S_LIST_BLOCK_BYTES (256 * 1024)

struct k8s_server_config {
	uint16_t port;              /* 0: ephemeral */
	const struct sim_tls *tls;  /* NULL: plain HTTP */
	const char *token;          /* NULL: no authentication */
};

struct k8s_server;

int k8s_server_start(struct k8s_api *api, const struct k8s_server_config *cfg,
		     struct k8s_server **ret);
uint16_t k8s_server_port(const struct k8s_server *s);
/* Ends watch streams, stops the daemon and the sweeper. */
struct k8s_server *k8s_server_free(struct k8s_server *s);

#endif
