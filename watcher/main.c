/*
 * kanna-watcher: the only process that reads the Kubernetes API. Wires the
 * configuration, the event loop, the Kubernetes client, one informer per
 * kind, API discovery (which version of each CRD to read), the state
 * publisher (state.pub / state.sync) and the pending pod router
 * (pending.<shard>), plus metrics, health and readiness. The work is in
 * informer.c, discovery.c, publish.c and pending.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/health.h"
#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/lease.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/sock.h"
#include "watcher/config.h"
#include "watcher/discovery.h"
#include "watcher/informer.h"
#include "watcher/pending.h"
#include "watcher/publish.h"

/* How often gauges (node count, pending pods) are refreshed. */
#define WATCHER_GAUGE_PERIOD_USEC (5ULL * 1000 * 1000)

/* The groups whose served versions vary by cluster (Karpenter's CRDs). */
static const char *const discovered_groups[] = { "karpenter.sh", "karpenter.k8s.aws", NULL };

struct watcher {
	struct watcher_config cfg;
	int argc;
	char **argv; /* kept for SIGHUP: a reload reads the same command line */
	struct loop *loop;
	struct sock_ctx *socks;
	struct metrics_registry *metrics;
	struct health_server *health;
	struct kube_client *kube;
	struct kube_events *events;
	struct publisher *pub;
	struct pending_router *pending;
	struct msg_io io;
	struct informer **informers;
	size_t n_informers;
	struct discovery *discovery;
	bool ready;
	struct informer_metrics inf_metrics;
	struct metrics_gauge *node_count, *synced_gauge, *pending_gauge;
	struct lease *lease;
};

static int64_t now_ms_realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool resource_enabled(const struct watcher_config *cfg, const char *resource)
{
	for (char **r = cfg->resources; r && *r; r++)
		if (streq(*r, resource))
			return true;
	return false;
}

static int on_announce(struct loop *loop, void *userdata)
{
	struct watcher *w = userdata;
	int r;

	(void)loop;
	if (!w->ready)
		return 0; /* a half-listed picture would announce pods twice */
	r = pending_router_announce(w->pending, &w->io, publisher_store(w->pub), publisher_seq(w->pub),
				    now_ms_realtime());
	if (r < 0)
		return log_error_errno(r, "Failed to announce pending pods: %m");
	return 0;
}

static int on_gauges(struct loop *loop, void *userdata)
{
	struct watcher *w = userdata;
	struct pending_stats ps;

	(void)loop;
	pending_router_get_stats(w->pending, &ps);
	metrics_gauge_set(w->node_count, (double)publisher_store(w->pub)->count[PROTO_OBJECT_NODE], NULL);
	metrics_gauge_set(w->synced_gauge, w->ready ? 1 : 0, NULL);
	metrics_gauge_set(w->pending_gauge, (double)ps.last_pending, NULL);
	return 0;
}

/* The version a CRD-served kind is read at: the first of its versions that
 * discovery found, or none when none is served. */
static const char *discovered_version(struct watcher *w, const struct informer_def *def)
{
	for (const char *const *v = def->versions; *v; v++)
		if (discovery_served(w->discovery, def->group, *v, def->plural))
			return *v;
	return NULL;
}

static void on_discovered(struct discovery *d, int result, void *userdata)
{
	struct watcher *w = userdata;

	for (size_t i = 0; i < w->n_informers; i++) {
		struct informer *inf = w->informers[i];
		const struct informer_def *def = informer_def_of(inf);
		const char *v;
		int r;

		if (!def->crd)
			continue;
		if (result >= 0)
			v = discovered_version(w, def);
		else if (!discovery_known(d) && !informer_synced(inf) && !informer_version(inf))
			v = def->versions[0]; /* no answer yet: the preferred one, 404 tells */
		else
			continue; /* keep what the last answer chose */
		r = informer_set_version(inf, v);
		if (r < 0)
			log_error_errno(r, "Failed to watch %s: %m", def->resource);
	}
	if (result < 0 && !discovery_known(d))
		log_warn("Failed to discover which Karpenter CRD versions are served; reading the "
			 "preferred ones and checking again every %" PRIu64 "s",
			 w->cfg.discovery_interval_usec / 1000000);
}

/* Periodic: discover again; look again for the built-in kinds found absent. */
static int on_recheck(struct loop *loop, void *userdata)
{
	struct watcher *w = userdata;

	(void)loop;
	for (size_t i = 0; i < w->n_informers; i++) {
		struct informer *inf = w->informers[i];

		if (!informer_def_of(inf)->crd && informer_absent(inf) &&
		    informer_set_version(inf, informer_version(inf)) < 0)
			log_error("Failed to watch %s again", informer_def_of(inf)->resource);
	}
	return discovery_refresh(w->discovery);
}

/* A CRD kind relisted (410 Gone): its CRD may have changed too. */
static void on_informer_relist(struct informer *inf, void *userdata)
{
	struct watcher *w = userdata;

	if (informer_def_of(inf)->crd)
		(void)discovery_refresh(w->discovery);
}

/* A NodePool or EC2NodeClass left state: a Provisioner or AWSNodeTemplate
 * of the same name that yielded to it is used again. */
static void on_informer_released(struct informer *inf, const char *key, uint32_t owners,
				 void *userdata)
{
	struct watcher *w = userdata;

	(void)inf;
	for (size_t i = 0; i < w->n_informers; i++)
		if (informer_restore(w->informers[i], key, owners) < 0)
			log_error("Failed to list %s again", informer_def_of(w->informers[i])->resource);
}

static int on_ready_check(struct loop *loop, void *userdata)
{
	struct watcher *w = userdata;
	char status[128];

	if (w->ready)
		return 0;
	for (size_t i = 0; i < w->n_informers; i++)
		if (!informer_synced(w->informers[i])) {
			const struct informer_def *def = informer_def_of(w->informers[i]);
			snprintf(status, sizeof(status), "waiting for the first list of %s%s",
				 def->resource,
				 def->crd && !discovery_known(w->discovery) ? " (API discovery)" : "");
			health_server_set_ready(w->health, false, status);
			return 0;
		}
	w->ready = true;
	/* Only now may replicas take a snapshot: all of the cluster is in it. */
	if (publisher_set_complete(w->pub) < 0)
		log_error("Failed to answer the held state snapshot requests: out of memory");
	snprintf(status, sizeof(status), "replicating %zu object(s)",
		 publisher_store(w->pub)->objects.n);
	health_server_set_ready(w->health, true, NULL);
	loop_notify_ready(loop, status);
	log_info("cluster state synced: %zu object(s), seq %" PRIu64,
		 publisher_store(w->pub)->objects.n, publisher_seq(w->pub));
	return on_announce(loop, w);
}

static int watcher_metrics(struct watcher *w)
{
	int r;

	if ((r = metrics_registry_new(&w->metrics)) < 0 ||
	    (r = metrics_counter_new(w->metrics, &w->inf_metrics.events, "kanna_watcher_events_total",
				     "Kubernetes objects received, by resource.", "resource", NULL)) < 0 ||
	    (r = metrics_counter_new(w->metrics, &w->inf_metrics.decode_errors,
				     "kanna_watcher_decode_errors_total",
				     "Kubernetes objects that could not be decoded, by resource.",
				     "resource", NULL)) < 0 ||
	    (r = metrics_gauge_new(w->metrics, &w->node_count, "karpenter_cluster_state_node_count",
				   "Nodes in the replicated cluster state.", NULL)) < 0 ||
	    (r = metrics_gauge_new(w->metrics, &w->synced_gauge, "karpenter_cluster_state_synced",
				   "1 when the cluster state is synced with the API server.", NULL)) < 0 ||
	    (r = metrics_gauge_new(w->metrics, &w->pending_gauge,
				   "karpenter_scheduler_unschedulable_pods_count",
				   "Pods waiting for capacity as last announced.", NULL)) < 0)
		return r;
	return 0;
}

/* Everything a leader does: sockets, publisher, informers, routing. */
static int watcher_work(struct watcher *w)
{
	int r;

	if ((r = sock_ctx_new(&w->socks, w->loop, "watcher", w->cfg.common.runtime_dir)) < 0)
		return log_error_errno(r, "Failed to open sockets in %s: %m", w->cfg.common.runtime_dir);
	if ((r = msg_io_init(&w->io, PROTO_PROCESS_WATCHER, 0)) < 0 ||
	    (r = publisher_new(&w->pub, w->socks, w->loop, ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC)) < 0 ||
	    (r = pending_router_new(&w->pending, w->socks, (unsigned)w->cfg.shards)) < 0)
		return log_error_errno(r, "Failed to bind the watcher's sockets in %s: %m",
				       sock_ctx_runtime_dir(w->socks));
	w->informers = calloc(informer_n_defs, sizeof(*w->informers));
	if (!w->informers)
		return log_error_errno(-ENOMEM, "Failed to start informers: %m");
	if ((r = discovery_new(&w->discovery, w->kube, discovered_groups, on_discovered, w)) < 0)
		return log_error_errno(r, "Failed to start API discovery: %m");
	for (size_t i = 0; i < informer_n_defs; i++) {
		const struct informer_def *def = &informer_defs[i];
		struct informer_env env = { .client = w->kube, .pub = w->pub, .events = w->events,
					    .metrics = &w->inf_metrics,
					    .on_relist = on_informer_relist,
					    .on_released = on_informer_released, .userdata = w };

		if (!resource_enabled(&w->cfg, def->resource))
			continue;
		r = informer_new(&w->informers[w->n_informers], def, &env);
		/* Built-in kinds start now; CRD kinds once discovery chose a version. */
		if (r >= 0 && !def->crd)
			r = informer_set_version(w->informers[w->n_informers], def->versions[0]);
		if (w->informers[w->n_informers])
			w->n_informers++;
		if (r < 0)
			return log_error_errno(r, "Failed to watch %s: %m", def->resource);
	}
	if ((r = discovery_refresh(w->discovery)) < 0)
		return log_error_errno(r, "Failed to start API discovery: %m");
	for (char **res = w->cfg.resources; res && *res; res++) {
		bool known = false;
		for (size_t i = 0; i < informer_n_defs; i++)
			known = known || streq(*res, informer_defs[i].resource);
		if (!known)
			log_warn("Unknown resource '%s' in resources, ignored", *res);
	}
	health_server_set_ready(w->health, false, "listing cluster state");
	if ((r = loop_add_periodic(w->loop, "ready-check", 100000, on_ready_check, w)) < 0 ||
	    (r = loop_add_periodic(w->loop, "announce-pending", w->cfg.announce_interval_usec,
				   on_announce, w)) < 0 ||
	    (r = loop_add_periodic(w->loop, "gauges", WATCHER_GAUGE_PERIOD_USEC, on_gauges, w)) < 0 ||
	    (r = loop_add_periodic(w->loop, "recheck", w->cfg.discovery_interval_usec, on_recheck,
				   w)) < 0)
		return log_error_errno(r, "Failed to schedule periodic work: %m");
	log_info_kv(LOG_KV({ "runtime_dir", sock_ctx_runtime_dir(w->socks) }),
		    "watching %zu collection(s), %" PRIu64 " scheduler shard(s)", w->n_informers,
		    w->cfg.shards);
	return 0;
}

static void on_started_leading(void *userdata)
{
	struct watcher *w = userdata;
	int r = watcher_work(w);

	if (r < 0)
		loop_exit(w->loop, 1);
}

static void on_stopped_leading(void *userdata)
{
	struct watcher *w = userdata;

	/* Another watcher may be publishing now: stop at once, as Karpenter does. */
	log_error("Leadership lost, exiting so that the supervisor restarts us as a standby");
	loop_exit(w->loop, 1);
}

static int watcher_start(struct watcher *w)
{
	struct kube_client_options kopts = { .qps = w->cfg.kube.qps,
					     .burst = (unsigned)w->cfg.kube.burst,
					     .user_agent = "kanna-watcher/" PACKAGE_VERSION };
	struct kube_config *kcfg = NULL;
	char err[512], host[256] = "kanna-watcher";
	int r;

	gethostname(host, sizeof(host) - 1);
	if ((r = loop_new(&w->loop, "kanna-watcher")) < 0)
		return log_error_errno(r, "Failed to create the event loop: %m");
	if ((r = watcher_metrics(w)) < 0)
		return log_error_errno(r, "Failed to register metrics: %m");
	r = health_server_new(w->metrics, (int)w->cfg.common.metrics_port,
			      (int)w->cfg.common.health_port, 0, &w->health);
	if (r < 0)
		return log_error_errno(r, "Failed to serve metrics on %" PRIu64 " and health on %" PRIu64 ": %m",
				       w->cfg.common.metrics_port, w->cfg.common.health_port);
	if ((r = health_server_attach_loop(w->health, w->loop)) < 0)
		return log_error_errno(r, "Failed to attach health checks: %m");
	r = kube_config_resolve(w->cfg.kube.kubeconfig, w->cfg.kube.context, &kcfg, err, sizeof(err));
	if (r < 0)
		return log_error_errno(r, "Failed to load Kubernetes configuration: %s", err);
	log_info_kv(LOG_KV({ "server", kcfg->server }, { "context", kcfg->context }),
		    "using Kubernetes API at %s", kcfg->server);
	if ((r = kube_client_new(&w->kube, w->loop, kcfg, &kopts)) < 0 ||
	    (r = kube_events_new(&w->events, w->kube, "karpenter", host)) < 0)
		return log_error_errno(r, "Failed to create the Kubernetes client: %m");
	if (!w->cfg.kube.leader_elect)
		return watcher_work(w);
	{
		char identity[300];
		struct lease_options lo = {
			.name = WATCHER_LEASE_NAME, .namespace = w->cfg.kube.leader_namespace,
			.identity = identity,
			.duration_sec = (unsigned)(w->cfg.kube.lease_duration_usec / 1000000),
			/* client-go's proportions: deadline 2/3, retry 2/15 of the duration */
			.renew_deadline_sec = (unsigned)(w->cfg.kube.lease_duration_usec * 2 / 3 / 1000000),
			.retry_period_sec = MAX(1u, (unsigned)(w->cfg.kube.lease_duration_usec * 2 / 15 / 1000000)),
		};
		struct lease_handlers lh = { on_started_leading, on_stopped_leading, w };
		snprintf(identity, sizeof(identity), "%s_%d", host, (int)getpid());
		health_server_set_ready(w->health, false, "waiting for leadership");
		if ((r = lease_new(&w->lease, w->kube, &lo, &lh)) < 0)
			return log_error_errno(r, "Failed to start leader election: %m");
		/* Under Type=notify a standby must report itself started, or
		 * systemd kills it at TimeoutStartSec; STATUS= says what it awaits. */
		snprintf(err, sizeof(err), "standby: waiting to acquire lease %s/%s",
			 w->cfg.kube.leader_namespace, WATCHER_LEASE_NAME);
		loop_notify_ready(w->loop, err);
		log_info("%s as %s", err, identity);
	}
	return 0;
}

/* SIGHUP: read everything again; apply all of it or none (config_reload). */
static int on_reload(struct loop *loop, void *userdata)
{
	struct watcher *w = userdata;
	struct config_source src = { w->argc, w->argv, NULL };
	struct config_result res = { 0 };
	struct watcher_config fresh = { 0 };
	bool announce_changed;
	int r;

	r = config_reload(&watcher_schema, &w->cfg, &fresh, &src, &res);
	if (r < 0) {
		log_error("%s; keeping the running configuration", res.error);
		config_result_done(&res);
		return 0;
	}
	announce_changed = fresh.announce_interval_usec != w->cfg.announce_interval_usec;
	config_free(&watcher_schema, &w->cfg);
	w->cfg = fresh;
	config_setup_logging(&watcher_schema, &w->cfg);
	if (announce_changed && w->pending) {
		loop_remove_periodic(loop, "announce-pending");
		loop_add_periodic(loop, "announce-pending", w->cfg.announce_interval_usec, on_announce, w);
	}
	log_info("reloaded configuration%s%s", res.changed[0] ? ": changed " : " (no change)",
		 res.changed);
	config_result_done(&res);
	return 0;
}

/* SIGTERM: nothing is in flight that the API does not already hold. */
static int on_shutdown(struct loop *loop, void *userdata)
{
	(void)loop;
	(void)userdata;
	log_info("stopping");
	return 0;
}

static void watcher_stop(struct watcher *w)
{
	lease_free(w->lease);
	for (size_t i = 0; i < w->n_informers; i++)
		informer_free(w->informers[i]);
	free(w->informers);
	discovery_free(w->discovery);
	pending_router_free(w->pending);
	publisher_free(w->pub);
	msg_io_done(&w->io);
	sock_ctx_free(w->socks);
	kube_events_free(w->events);
	kube_client_free(w->kube);
	health_server_free(w->health);
	metrics_registry_free(w->metrics);
	loop_free(w->loop);
	config_free(&watcher_schema, &w->cfg);
}

int main(int argc, char **argv)
{
	struct watcher w = { 0 };
	int exit_code, r;

	if (config_handle_command_line(&watcher_schema, &w.cfg, argc, argv, &exit_code))
		return exit_code;
	w.argc = argc;
	w.argv = argv;
	r = watcher_start(&w);
	if (r >= 0)
		loop_set_hooks(w.loop, &(struct loop_hooks){ on_shutdown, on_reload, &w });
	if (r >= 0)
		r = loop_run(w.loop);
	watcher_stop(&w);
	return r < 0 ? 1 : r;
}
