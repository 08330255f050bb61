/*
 * kanna-watcher: the only process that reads the Kubernetes API. On the
 * daemon skeleton (common/daemon.h), wires one informer per kind, API
 * discovery (which version of each CRD to read), the state publisher
 * (state.pub / state.sync) and the pending pod router (pending.<shard>),
 * plus its metrics and readiness. The work is in informer.c, discovery.c,
 * publish.c and pending.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/daemon.h"
#include "common/log.h"
#include "watcher/config.h"
#include "watcher/discovery.h"
#include "watcher/informer.h"
#include "watcher/pending.h"
#include "watcher/publish.h"

/* With several shards an announcement carries every pending pod (a
 * group's shard depends on the others): at most this often between the
 * periodic ones. */
#define WATCHER_EARLY_ANNOUNCE_GAP_USEC (100ULL * 1000)

/* A burst of watch events is read as one: newly pending pods are announced
 * once it is through, or once the first has waited this long, whichever
 * comes first (100 pod events take the watcher ~7 ms). */
#define WATCHER_FRESH_MAX_WAIT_USEC 1000ULL

/* How often gauges (node count, pending pods) are refreshed. */
#define WATCHER_GAUGE_PERIOD_USEC (5ULL * 1000 * 1000)

/* The groups whose served versions vary by cluster (Karpenter's CRDs). */
static const char *const discovered_groups[] = { "karpenter.sh", "karpenter.k8s.aws", NULL };

struct watcher {
	struct watcher_config cfg; /* replaced in place by a reload (common/daemon.h) */
	uint64_t announce_interval_usec; /* as the announce-pending timer runs */
	struct daemon *d; /* the skeleton's loop, clients and sockets (common/daemon.h) */
	struct publisher *pub;
	struct pending_router *pending;
	/* Pods that became unschedulable since the last announcement, sent
	 * from the loop at once (announce_timer) rather than at the next
	 * period: Karpenter's provisioner is triggered by the pod event. */
	char **fresh;
	size_t n_fresh, cap_fresh;
	sd_event_source *announce_timer;
	uint64_t last_early_usec;
	uint64_t fresh_since_usec; /* when the first of fresh came */
	struct msg_io io;
	struct informer **informers;
	size_t n_informers;
	struct discovery *discovery;
	struct nodepool_status *nodepool_status;
	bool ready;
	struct informer_metrics inf_metrics;
	struct metrics_gauge *node_count, *synced_gauge, *pending_gauge;
	struct metrics_counter *messages_dropped;
};

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
				    clock_realtime_ms());
	if (r < 0)
		return log_error_errno(r, "Failed to announce pending pods: %m");
	return 0;
}

static void fresh_clear(struct watcher *w)
{
	for (size_t i = 0; i < w->n_fresh; i++)
		free(w->fresh[i]);
	w->n_fresh = 0;
}

static int on_announce_now(struct loop *loop, void *userdata)
{
	struct watcher *w = userdata;
	int r;

	(void)loop;
	w->announce_timer = sd_event_source_disable_unref(w->announce_timer);
	w->last_early_usec = clock_monotonic_usec();
	r = pending_router_announce_now(w->pending, &w->io, publisher_store(w->pub), w->fresh,
					w->n_fresh, publisher_seq(w->pub), clock_realtime_ms());
	fresh_clear(w);
	if (r < 0)
		log_warn_errno(r, "Failed to announce newly pending pods (the next announcement will): %m");
	return 0;
}

static void on_pod_pending(const struct proto_pod *pod, void *userdata)
{
	struct watcher *w = userdata;
	uint64_t now = clock_monotonic_usec(), delay = 0;
	char *key;

	if (!w->ready || !w->pending)
		return; /* the announcement at sync carries it */
	if (w->n_fresh == w->cap_fresh) {
		size_t cap = w->cap_fresh ? w->cap_fresh * 2 : 64;
		char **nf = realloc(w->fresh, cap * sizeof(*nf));
		if (!nf)
			return; /* the periodic announcement carries it */
		w->fresh = nf;
		w->cap_fresh = cap;
	}
	if (asprintf(&key, "%s/%s", pod->ns, pod->name) < 0)
		return;
	w->fresh[w->n_fresh++] = key;
	if (w->announce_timer) {
		/* One shard: no gap to keep between announcements. */
		if (w->cfg.shards <= 1 && now - w->fresh_since_usec >= WATCHER_FRESH_MAX_WAIT_USEC)
			on_announce_now(w->d->loop, w);
		return;
	}
	w->fresh_since_usec = now;
	if (w->pending && w->cfg.shards > 1 && now < w->last_early_usec + WATCHER_EARLY_ANNOUNCE_GAP_USEC)
		delay = w->last_early_usec + WATCHER_EARLY_ANNOUNCE_GAP_USEC - now;
	if (loop_add_timer(w->d->loop, delay, on_announce_now, w, &w->announce_timer) < 0)
		fresh_clear(w); /* the periodic announcement carries them */
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

/* NodePool status (watcher/nodepool-status.h): counted once the state is
 * whole, or a restart would patch lower counts over the true ones. */
static int on_nodepool_status(struct loop *loop, void *userdata)
{
	struct watcher *w = userdata;

	(void)loop;
	nodepool_status_flush(w->nodepool_status, w->ready, clock_monotonic_usec());
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
			health_server_set_ready(w->d->health, false, status);
			return 0;
		}
	w->ready = true;
	/* Only now may replicas take a snapshot: all of the cluster is in it. */
	if (publisher_set_complete(w->pub) < 0)
		log_error("Failed to answer the held state snapshot requests: out of memory");
	snprintf(status, sizeof(status), "replicating %zu object(s)",
		 publisher_store(w->pub)->objects.n);
	health_server_set_ready(w->d->health, true, NULL);
	loop_notify_ready(loop, status);
	log_info("cluster state synced: %zu object(s), seq %" PRIu64,
		 publisher_store(w->pub)->objects.n, publisher_seq(w->pub));
	return on_announce(loop, w);
}

static int watcher_metrics(struct daemon *d, void *userdata)
{
	struct watcher *w = userdata;
	int r;

	w->d = d;
	if ((r = metrics_counter_new(d->metrics, &w->inf_metrics.events, "kanna_watcher_events_total",
				     "Kubernetes objects received, by resource.", "resource", NULL)) < 0 ||
	    (r = metrics_counter_new(d->metrics, &w->inf_metrics.decode_errors,
				     "kanna_watcher_decode_errors_total",
				     "Kubernetes objects that could not be decoded, by resource.",
				     "resource", NULL)) < 0 ||
	    (r = metrics_gauge_new(d->metrics, &w->node_count, "karpenter_cluster_state_node_count",
				   "Nodes in the replicated cluster state.", NULL)) < 0 ||
	    (r = metrics_gauge_new(d->metrics, &w->synced_gauge, "karpenter_cluster_state_synced",
				   "1 when the cluster state is synced with the API server.", NULL)) < 0 ||
	    (r = metrics_gauge_new(d->metrics, &w->pending_gauge,
				   "karpenter_scheduler_unschedulable_pods_count",
				   "Pods waiting for capacity as last announced.", NULL)) < 0 ||
	    (r = msg_dropped_metric_new(d->metrics, &w->messages_dropped)) < 0 ||
	    (r = msg_messages_metric_new(d->metrics)) < 0)
		return r;
	return 0;
}

/* Everything a leader does: sockets, publisher, informers, routing. */
static int watcher_work(struct watcher *w)
{
	int r;

	if ((r = msg_io_init(&w->io, PROTO_PROCESS_WATCHER, 0)) < 0 ||
	    (r = publisher_new(&w->pub, w->d->socks, w->d->loop, ENDPOINT_STATE_PUB,
			       ENDPOINT_STATE_SYNC)) < 0 ||
	    (r = pending_router_new(&w->pending, w->d->socks, &w->io, (unsigned)w->cfg.shards)) < 0)
		return log_error_errno(r, "Failed to bind the watcher's sockets in %s: %m",
				       sock_ctx_runtime_dir(w->d->socks));
	publisher_count_drops(w->pub, w->messages_dropped);
	w->informers = calloc(informer_n_defs, sizeof(*w->informers));
	if (!w->informers)
		return log_error_errno(-ENOMEM, "Failed to start informers: %m");
	if ((r = nodepool_status_new(&w->nodepool_status, w->d->kube, publisher_store(w->pub))) < 0)
		return log_error_errno(r, "Failed to start the NodePool status writer: %m");
	if ((r = discovery_new(&w->discovery, w->d->kube, discovered_groups, on_discovered, w)) < 0)
		return log_error_errno(r, "Failed to start API discovery: %m");
	for (size_t i = 0; i < informer_n_defs; i++) {
		const struct informer_def *def = &informer_defs[i];
		struct informer_env env = { .client = w->d->kube, .pub = w->pub, .events = w->d->events,
					    .nodepool_status = w->nodepool_status,
					    .metrics = &w->inf_metrics,
					    .on_relist = on_informer_relist,
					    .on_released = on_informer_released,
					    .on_pending = on_pod_pending, .userdata = w };

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
	health_server_set_ready(w->d->health, false, "listing cluster state");
	if ((r = loop_add_periodic(w->d->loop, "ready-check", 100000, on_ready_check, w)) < 0 ||
	    (r = loop_add_periodic(w->d->loop, "announce-pending", w->cfg.announce_interval_usec,
				   on_announce, w)) < 0 ||
	    (r = loop_add_periodic(w->d->loop, "gauges", WATCHER_GAUGE_PERIOD_USEC, on_gauges, w)) < 0 ||
	    (r = loop_add_periodic(w->d->loop, "nodepool-status", NODEPOOL_STATUS_PERIOD_USEC,
				   on_nodepool_status, w)) < 0 ||
	    (r = loop_add_periodic(w->d->loop, "recheck", w->cfg.discovery_interval_usec, on_recheck,
				   w)) < 0)
		return log_error_errno(r, "Failed to schedule periodic work: %m");
	log_info_kv(LOG_KV({ "runtime_dir", sock_ctx_runtime_dir(w->d->socks) }),
		    "watching %zu collection(s), %" PRIu64 " scheduler shard(s)", w->n_informers,
		    w->cfg.shards);
	return 0;
}

static int start_work(struct daemon *d, void *userdata)
{
	(void)d;
	return watcher_work(userdata);
}

/* SIGHUP put a new configuration in place. */
static void on_reloaded(struct daemon *d, void *userdata)
{
	struct watcher *w = userdata;

	if (w->cfg.announce_interval_usec != w->announce_interval_usec && w->pending) {
		loop_remove_periodic(d->loop, "announce-pending");
		loop_add_periodic(d->loop, "announce-pending", w->cfg.announce_interval_usec, on_announce, w);
	}
	w->announce_interval_usec = w->cfg.announce_interval_usec;
}

/* SIGTERM: nothing is in flight that the API does not already hold. */
static void on_shutdown(struct daemon *d, void *userdata)
{
	(void)d;
	(void)userdata;
	log_info("stopping");
}

static void teardown(struct daemon *d, void *userdata)
{
	struct watcher *w = userdata;

	(void)d;
	for (size_t i = 0; i < w->n_informers; i++)
		informer_free(w->informers[i]);
	free(w->informers);
	nodepool_status_free(w->nodepool_status);
	discovery_free(w->discovery);
	sd_event_source_disable_unref(w->announce_timer);
	fresh_clear(w);
	free(w->fresh);
	pending_router_free(w->pending);
	publisher_free(w->pub);
	msg_io_done(&w->io);
}

int main(int argc, char **argv)
{
	static const struct daemon_hooks hooks = {
		.register_metrics = watcher_metrics, .start_work = start_work, .reloaded = on_reloaded,
		.shutdown = on_shutdown, .teardown = teardown,
	};
	struct watcher w = { 0 };
	int exit_code;

	if (config_handle_command_line(&watcher_schema, &w.cfg, argc, argv, &exit_code))
		return exit_code;
	w.announce_interval_usec = w.cfg.announce_interval_usec;
	exit_code = daemon_run(&(struct daemon_options){ .program = "kanna-watcher", .process = "watcher",
							 .leader_election = true,
							 .events_component = "karpenter",
							 .schema = &watcher_schema, .cfg = &w.cfg,
							 .cfg_size = sizeof(w.cfg), .kube = &w.cfg.kube,
							 .argc = argc, .argv = argv },
			       &hooks, &w);
	config_free(&watcher_schema, &w.cfg);
	return exit_code;
}
