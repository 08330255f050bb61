/*
 * kanna-scheduler as a daemon: pending pods from the watcher (PULL on
 * pending.<shard>) are batched; a due batch is modelled from the state
 * replica, solved, and sent to the launcher as a launch plan (PUSH to
 * "plans"). Launch results (SUB on "results") release pods whose launch
 * failed and mark offerings without capacity. Pods that cannot be placed
 * get a FailedScheduling Event naming the reason. A shard elects no
 * leader: it works on what its replica's watcher announces, which only
 * the leading replica's does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/schema.h"
#include "common/clock.h"
#include "common/daemon.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/worker.h"
#include "state/endpoints.h"
#include "state/replica.h"
#include "scheduler/batch.h"
#include "model/catalog-proto.h"
#include "scheduler/daemon.h"
#include "model/from-state.h"
#include "model/model-base.h"
#include "model/node-overlay.h"
#include "model/plan.h"
#include "scheduler/solve.h"
#include "scheduler/unschedulable.h"

/* How often the batcher looks at its windows and expires holds. */
#define SCHEDULER_TICK_USEC (100ULL * 1000)
/* How often the pods still unschedulable are summed up in the log (each
 * pod's own reason is logged only when it changes). */
#define SCHEDULER_SUMMARY_USEC (60ULL * 1000 * 1000)

struct scheduler {
	struct scheduler_config *cfg; /* replaced in place by a reload (daemon.h) */
	unsigned shard, n_shards;
	char process[32];
	struct daemon *d; /* the skeleton's loop, clients and sockets (common/daemon.h) */
	struct replica *replica;
	struct sock *pending_rx, *plans_tx, *results_rx;
	struct msg_io io;
	struct msg_dispatch pending_dispatch, results_dispatch;
	struct metrics_counter *messages_dropped;
	struct batch batch;
	struct worker *solver; /* solves run there, one at a time (solve.h) */
	struct solve_job *running; /* handed to the worker, not back yet */
	bool stopping;
	struct arena plan_arena;
	struct unavailable_offerings unavailable; /* what the launcher reported */
	struct unschedulable unsched; /* reasons said, per pod */
	uint64_t batch_id;
	/* The launcher's newest valid catalog (NULL: the shipped table) and the
	 * last generation refused, so that a republished bad one logs once. */
	struct proto_msg *catalog;
	uint64_t catalog_refused;
	/* The catalog part of the model, kept between batches (model-base.h). */
	struct model_base_cache base_cache;
	char *base_error; /* the last failure to build it, logged once */
	struct metrics_histogram *solve_seconds, *batch_size;
	struct metrics_gauge *queue_depth, *unschedulable;
	struct metrics_counter *plans_sent;
};

static const char *nodeclass_of(const char *nodepool, void *userdata)
{
	struct scheduler *s = userdata;
	const struct state_entry *e = state_store_get(replica_store(s->replica),
						      PROTO_OBJECT_NODEPOOL, "", nodepool);

	return e ? e->obj.nodepool->nodeclass_ref.name : NULL;
}

/* Still unschedulable in the replica? (It may have been bound or deleted.) */
static bool still_pending(struct scheduler *s, const struct proto_pod *p)
{
	const struct state_entry *e = state_store_get(replica_store(s->replica), PROTO_OBJECT_POD,
						      p->ns, p->name);

	return e && state_pod_is_unschedulable(e->obj.pod);
}

/* The log says a pod's reason when it changes; the Event is recorded every
 * time (the recorder folds repeats). pods[0..n) are the batch's. */
static void report_unschedulable(struct scheduler *s, const struct sched_result *res,
				 struct proto_pod **pods, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (res->pod_bin[i] >= 0)
			unschedulable_forget(&s->unsched, pods[i]->uid);
	for (uint32_t i = 0; i < res->n_unschedulable; i++) {
		const struct proto_pod *p = pods[res->unschedulable[i].pod];
		struct kube_object_ref ref = { "v1", "Pod", p->ns, p->name, p->uid };
		const char *why = res->unschedulable[i].reason;

		if (unschedulable_note(&s->unsched, p, why) != 0)
			log_warn_kv(LOG_KV({ "pod", p->name }, { "namespace", p->ns }),
				    "could not schedule pod: %s", why);
		kube_event_record(s->d->events, &ref, KUBE_EVENT_WARNING, "FailedScheduling",
				  "Failed to schedule pod, %s", why);
	}
	metrics_gauge_set(s->unschedulable, res->n_unschedulable, NULL);
}

static bool pod_still_pending(const char *ns, const char *name, const char *uid, void *userdata)
{
	struct scheduler *s = userdata;
	const struct state_entry *e = state_store_get(replica_store(s->replica), PROTO_OBJECT_POD,
						      ns, name);

	return e && streq_ptr(e->obj.pod->uid, uid) && state_pod_is_unschedulable(e->obj.pod);
}

/* Once a minute: the pods still unschedulable, by reason, in one line. */
static int on_summary(struct loop *loop, void *userdata)
{
	struct scheduler *s = userdata;
	char line[1024];

	(void)loop;
	if (!replica_synced(s->replica))
		return 0;
	unschedulable_sweep(&s->unsched, pod_still_pending, s);
	if (unschedulable_summary(&s->unsched, line, sizeof(line)) > 0)
		log_warn_kv(LOG_KV({ "shard", s->process }), "%s", line);
	return 0;
}

static int send_plan(struct scheduler *s, const struct cluster *c, const struct sched_result *res,
		     struct proto_pod **pods)
{
	struct plan_context ctx = { .shard = s->shard, .batch_id = ++s->batch_id,
				    .state_seq = replica_store(s->replica)->seq,
				    .nonce = ((uint64_t)clock_realtime_ms() << 16) ^ (uint64_t)getpid(),
				    .nodeclass_of = nodeclass_of, .userdata = s };
	struct proto_msg m = { .env.type = PROTO_MSG_LAUNCH_PLAN };
	uint64_t until = clock_monotonic_usec() + s->cfg->plan_timeout_usec;
	int r;

	if (res->n_claims == 0)
		return 0;
	r = plan_build(&s->plan_arena, c, res, &ctx, &m.body.launch_plan);
	if (r < 0)
		return log_error_errno(r, "Failed to build a launch plan: %m");
	r = msg_send(&s->io, s->plans_tx, &m, ZMQ_DONTWAIT);
	if (r < 0) {
		/* No launcher connected: the watcher announces the pods again. */
		log_warn_errno(r, "Failed to send launch plan %s (is kanna-launcher running?): %m",
			       m.body.launch_plan.plan_id);
		return 0;
	}
	metrics_counter_add(s->plans_sent, 1, NULL);
	for (uint32_t k = 0; k < m.body.launch_plan.n_nodeclaims; k++) {
		const struct proto_planned_nodeclaim *nc = &m.body.launch_plan.nodeclaims[k];
		log_info_kv(LOG_KV({ "nodeclaim", nc->id }, { "nodepool", nc->nodepool }),
			    "computed packing of %u pod(s) for nodeclaim %s with %u instance type "
			    "option(s) (cheapest %s)", nc->n_pods, nc->id, nc->n_instance_types,
			    nc->n_instance_types ? nc->instance_types[0].name : "-");
		for (uint32_t i = 0; i < nc->n_pods; i++)
			batch_hold(&s->batch, nc->pods[i], until);
	}
	(void)pods;
	return 0;
}

/* Pods the solve did not get to before its deadline go into the batch
 * being collected, so the next solve takes them first thing. */
static void requeue_deferred(struct scheduler *s, const struct solve_job *j)
{
	uint64_t now = clock_monotonic_usec();

	for (uint32_t i = 0; i < j->res->n_deferred; i++)
		if (batch_add(&s->batch, j->pods[j->res->deferred[i]], now) < 0)
			break; /* out of memory: the watcher announces them again */
	log_warn_kv(LOG_KV({ "shard", s->process }),
		    "solve reached its deadline of %.1f s: launching what it placed, %u pod(s) "
		    "left for the next batch", (double)s->cfg->solve_deadline_usec / 1e6,
		    j->res->n_deferred);
	metrics_gauge_set(s->queue_depth, (double)s->batch.pods.n, NULL);
}

/* Back on the loop thread: report, re-queue what was not tried, plan. */
static void on_solved(void *job, void *userdata)
{
	struct solve_job *j = job;
	struct scheduler *s = userdata;
	uint32_t placed = 0;

	s->running = NULL;
	batch_release_pods(&s->batch, j->pods, j->n_pods);
	if (s->stopping)
		goto out; /* the watcher announces the batch to the next scheduler */
	if (j->r < 0) {
		log_error_errno(j->r, "Failed to solve a batch of %zu pod(s): %m", j->n_pods);
		goto out;
	}
	metrics_histogram_observe(s->solve_seconds, (double)j->solve_usec / 1e6, NULL);
	metrics_histogram_observe(s->batch_size, (double)j->n_pods, NULL);
	for (uint32_t i = 0; i < j->res->n_claims; i++)
		placed += j->res->claims[i].n_pods;
	log_info("computed new nodeclaim(s) to fit pod(s): %u "
		 "nodeclaim(s) for %u pod(s) in %.1f ms", j->res->n_claims, placed,
		 (double)(clock_monotonic_usec() - j->queued_usec) / 1000.0);
	if (j->res->stopped)
		requeue_deferred(s, j);
	report_unschedulable(s, j->res, j->pods, j->n_pods);
	send_plan(s, j->c, j->res, j->pods);
out:
	solve_job_free(j);
	arena_reset(&s->plan_arena);
}

/* How a batch is modelled now: the catalog, the offerings unavailable. */
static struct from_state_options model_options(struct scheduler *s)
{
	return (struct from_state_options){ .region = s->cfg->region, .catalog_path = s->cfg->catalog,
					    .unavailable = s->unavailable.v,
					    .n_unavailable = s->unavailable.n,
					    .now_ms = clock_realtime_ms(),
					    .catalog = s->catalog ? &s->catalog->body.catalog : NULL,
					    .ignore_preferences = s->cfg->preference_policy ==
								  PREFERENCE_POLICY_IGNORE,
					    .base_cache = &s->base_cache };
}

/* Builds the catalog part of the model before a batch needs it (a new
 * catalog, an offering marked or its mark expired), so that a batch's
 * model is only its own pods and nodes: called from the tick while no
 * batch is due, so that a burst of changes costs one rebuild. */
static void warm_model_base(struct scheduler *s)
{
	struct from_state_options fo = model_options(s);
	const struct proto_nodeoverlay **ov = NULL;
	struct model_base *b = NULL;
	char err[512] = "";
	size_t n_ov = 0;
	int r = node_overlays_collect(replica_store(s->replica), &ov, &n_ov);

	fo.node_overlays = ov;
	fo.n_node_overlays = n_ov;
	if (r >= 0)
		r = model_base_get(&s->base_cache, &fo, &b, err, sizeof(err));
	free(ov);

	if (r < 0 && (!s->base_error || !streq(s->base_error, err))) {
		/* The batch's build reports it; said once here. */
		log_warn("Failed to prepare the instance-type catalog for the next batch: %s",
			 err[0] ? err : strerror(-r));
		free(s->base_error);
		s->base_error = strdup(err);
	} else if (r >= 0 && s->base_error) {
		free(s->base_error);
		s->base_error = NULL;
	}
	model_base_unref(b);
}

/* Takes the due batch, models it and hands it to the worker. */
static int solve_batch(struct scheduler *s)
{
	struct proto_pod **pods = NULL;
	struct cluster *c = NULL;
	struct solve_job *j = NULL;
	struct from_state_options fo = model_options(s);
	char err[512];
	size_t n = 0, k = 0;
	int r;

	r = batch_take(&s->batch, &pods, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (still_pending(s, pods[i]))
			pods[k++] = pods[i];
		else
			free(pods[i]);
	}
	metrics_gauge_set(s->queue_depth, 0, NULL);
	if (k == 0)
		goto fail;
	log_info_kv(LOG_KV({ "shard", s->process }), "found %zu provisionable pod(s)", k);
	r = cluster_from_state(replica_store(s->replica), (const struct proto_pod *const *)pods, k,
			       &fo, &c, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		goto fail;
	}
	r = solve_job_new(&j, c, pods, k, s->cfg->solve_deadline_usec);
	if (r < 0)
		goto fail;
	r = batch_hold_pods(&s->batch, pods, k, UINT64_MAX);
	if (r >= 0)
		r = worker_submit(s->solver, solve_job_run, j);
	if (r < 0) {
		batch_release_pods(&s->batch, pods, k);
		j->c = NULL;
		j->pods = NULL;
		solve_job_free(j);
		goto fail;
	}
	s->running = j;
	return 0;
fail:
	for (size_t i = 0; i < k; i++)
		free(pods[i]);
	free(pods);
	cluster_free(c);
	if (r < 0)
		log_error_errno(r, "Failed to start solving a batch of %zu pod(s): %m", k);
	return r < 0 ? r : 0;
}

static int on_tick(struct loop *loop, void *userdata)
{
	struct scheduler *s = userdata;
	uint64_t now = clock_monotonic_usec();

	(void)loop;
	batch_expire(&s->batch, now);
	/* One solve at a time; the batch goes on filling meanwhile. */
	if (!replica_synced(s->replica) || worker_busy(s->solver))
		return 0;
	if (!batch_due(&s->batch, now)) {
		warm_model_base(s);
		return 0;
	}
	return solve_batch(s);
}

static int on_pending_pods(const struct proto_msg *m, void *userdata)
{
	struct scheduler *s = userdata;
	bool was_empty = s->batch.pods.n == 0;
	int r = 0;

	for (uint32_t i = 0; i < m->body.pending_pods.n_pods && r >= 0; i++)
		r = batch_add(&s->batch, &m->body.pending_pods.pods[i], clock_monotonic_usec());
	/* The documents' 0.6-era "Waiting to batch additional pods": a batch
	 * opens, and is solved once no new pod came for the idle window. */
	if (was_empty && s->batch.pods.n > 0)
		log_info_kv(LOG_KV({ "shard", s->process }), "waiting to batch additional pods (%zu so far)",
			    s->batch.pods.n);
	metrics_gauge_set(s->queue_depth, (double)s->batch.pods.n, NULL);
	return r < 0 ? r : 0;
}

static const struct msg_route pending_routes[] = {
	{ PROTO_MSG_PENDING_PODS, MSG_FROM(PROTO_PROCESS_WATCHER), on_pending_pods },
};

static int on_pending(struct sock *sk, void *userdata)
{
	struct scheduler *s = userdata;

	return msg_dispatch(&s->pending_dispatch, sk, s);
}

static void remember_unavailable(struct scheduler *s, const struct proto_offering_unavailable *u)
{
	if (unavailable_add(&s->unavailable, u->instance_type, u->zone, u->capacity_type, u->until,
			    clock_realtime_ms()) < 0) {
		log_warn("Failed to remember that offering %s/%s/%s is unavailable: out of memory",
			 u->instance_type, u->zone, proto_capacity_type_name(u->capacity_type));
		return;
	}
	log_info("offering %s/%s/%s unavailable until %" PRId64, u->instance_type, u->zone,
		 proto_capacity_type_name(u->capacity_type), u->until);
	/* No rebuild here: one capacity error marks ~180 offerings, a
	 * message each; the next tick rebuilds once for all of them. */
}

/* The launcher's live catalog replaces the shipped table. The newest
 * generation wins (the launcher republishes it for schedulers that start
 * later); one that would not load is logged and ignored. */
static void on_catalog(struct scheduler *s, const struct proto_msg *m)
{
	const struct proto_catalog *cat = &m->body.catalog;
	struct proto_msg *copy;
	char why[256];

	if ((s->catalog && cat->generation <= s->catalog->body.catalog.generation) ||
	    (s->catalog_refused && cat->generation == s->catalog_refused))
		return;
	if (catalog_proto_check(cat, why, sizeof(why)) < 0) {
		s->catalog_refused = cat->generation;
		log_warn("Failed to use instance-type catalog generation %" PRIu64
			 " from the launcher, keeping the %s: %s", cat->generation,
			 s->catalog ? "previous one" : "shipped table", why);
		return;
	}
	copy = proto_msg_dup(m);
	if (!copy) {
		log_warn("Failed to keep instance-type catalog generation %" PRIu64 ": out of memory",
			 cat->generation);
		return;
	}
	if (cat->region && s->cfg->region && !streq(cat->region, s->cfg->region))
		log_warn("The launcher's instance-type catalog is for region %s, this scheduler is "
			 "configured for %s; planning with the launcher's", cat->region, s->cfg->region);
	proto_msg_free(s->catalog);
	s->catalog = copy;
	log_info("planning with the launcher's instance-type catalog generation %" PRIu64
		 " (%u instance types)", cat->generation, cat->n_instance_types);
}

static int on_offering_unavailable(const struct proto_msg *m, void *userdata)
{
	remember_unavailable(userdata, &m->body.offering_unavailable);
	return 0;
}

static int on_launch_result(const struct proto_msg *m, void *userdata)
{
	struct scheduler *s = userdata;
	const struct proto_launch_result *lr = &m->body.launch_result;

	if (lr->outcome != PROTO_LAUNCH_LAUNCHED && lr->outcome != PROTO_LAUNCH_REGISTERED &&
	    lr->outcome != PROTO_LAUNCH_BOUND)
		/* The launch failed: its pods are ours to plan again. */
		for (uint32_t i = 0; i < lr->n_pods; i++)
			batch_release(&s->batch, lr->pods[i]);
	return 0;
}

static int on_catalog_msg(const struct proto_msg *m, void *userdata)
{
	on_catalog(userdata, m);
	return 0;
}

static const struct msg_route results_routes[] = {
	{ PROTO_MSG_OFFERING_UNAVAILABLE, MSG_FROM(PROTO_PROCESS_LAUNCHER), on_offering_unavailable },
	{ PROTO_MSG_LAUNCH_RESULT, MSG_FROM(PROTO_PROCESS_LAUNCHER), on_launch_result },
	{ PROTO_MSG_CATALOG, MSG_FROM(PROTO_PROCESS_LAUNCHER), on_catalog_msg },
};

static int on_results(struct sock *sk, void *userdata)
{
	struct scheduler *s = userdata;

	return msg_dispatch(&s->results_dispatch, sk, s);
}

static void log_windows(const struct scheduler *s, const char *how)
{
	char idle[32], max[32], hold[32];

	config_format_duration(s->cfg->batch_idle_usec, idle, sizeof(idle));
	config_format_duration(s->cfg->batch_max_usec, max, sizeof(max));
	config_format_duration(s->cfg->plan_timeout_usec, hold, sizeof(hold));
	log_info("%s: batch idle window %s, max window %s; planned pods held %s", how, idle, max, hold);
}

/* SIGHUP put a new configuration in place: the batch being collected gets
 * the new windows; holds already granted keep their expiry, later plans
 * get the new timeout. */
static void on_reloaded(struct daemon *d, void *userdata)
{
	struct scheduler *s = userdata;

	(void)d;
	batch_set_windows(&s->batch, s->cfg->batch_idle_usec, s->cfg->batch_max_usec);
	log_windows(s, "batching");
}

/* SIGTERM: stop taking pods. Plans sent are the launcher's; the pods of the
 * batch being collected are announced again by the watcher to whichever
 * scheduler takes this shard next, so nothing is handed back. */
static void on_shutdown(struct daemon *d, void *userdata)
{
	struct scheduler *s = userdata;

	(void)d;
	if (s->pending_rx)
		sock_unwatch(s->pending_rx);
	s->stopping = true;
	if (s->running)
		atomic_store(&s->running->cancel, true);
	log_info("stopping: %zu pending pod(s) of the unsolved batch are left to the next announcement",
		 s->batch.pods.n);
}

static int scheduler_work(struct scheduler *s)
{
	char name[64];
	int r;

	snprintf(name, sizeof(name), ENDPOINT_PENDING_PREFIX ".%u", s->shard);
	r = replica_new(&s->replica, s->d->socks, s->d->loop, PROTO_PROCESS_SCHEDULER, ENDPOINT_STATE_PUB,
			ENDPOINT_STATE_SYNC, NULL);
	if (r >= 0) {
		replica_count_drops(s->replica, s->messages_dropped);
		r = replica_lag_metric_new(s->replica, s->d->metrics);
	}
	if (r < 0 || (r = sock_new(&s->pending_rx, s->d->socks, ZMQ_PULL, name)) < 0 ||
	    (r = sock_connect(s->pending_rx, name)) < 0 ||
	    (r = sock_watch(s->pending_rx, on_pending, s)) < 0 ||
	    (r = sock_new(&s->plans_tx, s->d->socks, ZMQ_PUSH, ENDPOINT_PLANS)) < 0 ||
	    (r = msg_hello_on_connect(&s->io, s->plans_tx, s->n_shards)) < 0 ||
	    (r = sock_connect(s->plans_tx, ENDPOINT_PLANS)) < 0 ||
	    (r = sock_new(&s->results_rx, s->d->socks, ZMQ_SUB, ENDPOINT_RESULTS)) < 0 ||
	    (r = sock_subscribe(s->results_rx, "", 0)) < 0 ||
	    (r = sock_connect(s->results_rx, ENDPOINT_RESULTS)) < 0 ||
	    (r = sock_watch(s->results_rx, on_results, s)) < 0)
		return log_error_errno(r, "Failed to connect the scheduler's sockets in %s: %m",
				       sock_ctx_runtime_dir(s->d->socks));
	r = worker_new(&s->solver, s->d->loop, "solver", on_solved, s);
	if (r < 0)
		return log_error_errno(r, "Failed to start the solver thread: %m");
	if ((r = loop_add_periodic(s->d->loop, "batch", SCHEDULER_TICK_USEC, on_tick, s)) < 0 ||
	    (r = loop_add_periodic(s->d->loop, "unschedulable-summary", SCHEDULER_SUMMARY_USEC,
				   on_summary, s)) < 0)
		return log_error_errno(r, "Failed to schedule batching and its summaries: %m");
	health_server_set_ready(s->d->health, true, NULL);
	loop_notify_ready(s->d->loop, "scheduling");
	log_info_kv(LOG_KV({ "shard", s->process }), "scheduling shard %u of %u", s->shard,
		    s->n_shards);
	log_windows(s, "batching");
	return 0;
}

static int start_work(struct daemon *d, void *userdata)
{
	(void)d;
	return scheduler_work(userdata);
}

static int scheduler_metrics(struct daemon *d, void *userdata)
{
	static const double buckets[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60 };
	static const double pods[] = { 1, 5, 10, 50, 100, 500, 1000, 5000, 10000, 50000 };
	struct scheduler *s = userdata;
	int r;

	s->d = d;
	if ((r = metrics_histogram_new(d->metrics, &s->solve_seconds,
				       "karpenter_scheduler_scheduling_duration_seconds",
				       "Duration of one scheduling simulation (solve).", buckets,
				       ARRAY_SIZE(buckets), NULL)) < 0 ||
	    (r = metrics_histogram_new(d->metrics, &s->batch_size, "kanna_scheduler_batch_size",
				       "Pods in each batch solved.", pods, ARRAY_SIZE(pods), NULL)) < 0 ||
	    (r = metrics_gauge_new(d->metrics, &s->queue_depth, "karpenter_scheduler_queue_depth",
				   "Pods waiting in the current batch.", NULL)) < 0 ||
	    (r = metrics_gauge_new(d->metrics, &s->unschedulable,
				   "karpenter_scheduler_unschedulable_pods_count",
				   "Pods the last solve could not place.", NULL)) < 0 ||
	    (r = metrics_counter_new(d->metrics, &s->plans_sent, "kanna_scheduler_plans_sent_total",
				     "Launch plans sent to the launcher.", NULL)) < 0 ||
	    (r = msg_dropped_metric_new(d->metrics, &s->messages_dropped)) < 0 ||
	    (r = msg_messages_metric_new(d->metrics)) < 0)
		return r;
	return 0;
}

static int prepare(struct daemon *d, void *userdata)
{
	struct scheduler *s = userdata;
	int r;

	if ((r = msg_io_init(&s->io, PROTO_PROCESS_SCHEDULER, s->shard)) < 0)
		return log_error_errno(r, "Failed to set up message encoding: %m");
	s->pending_dispatch = (struct msg_dispatch){ .socket = "pending", .routes = pending_routes,
						     .n_shards = s->n_shards,
						     .n_routes = ARRAY_SIZE(pending_routes), .io = &s->io,
						     .dropped = s->messages_dropped };
	s->results_dispatch = (struct msg_dispatch){ .socket = "results", .routes = results_routes,
						     .n_routes = ARRAY_SIZE(results_routes), .io = &s->io,
						     .dropped = s->messages_dropped };
	return 0;
}

static void teardown(struct daemon *d, void *userdata)
{
	struct scheduler *s = userdata;

	(void)d;
	s->stopping = true;
	if (s->running)
		atomic_store(&s->running->cancel, true);
	s->solver = worker_free(s->solver); /* hands the last job to on_solved() */
	s->replica = replica_free(s->replica);
	s->pending_rx = sock_free(s->pending_rx);
	s->plans_tx = sock_free(s->plans_tx);
	s->results_rx = sock_free(s->results_rx);
	msg_io_done(&s->io);
}

int scheduler_run(struct scheduler_config *cfg, int argc, char **argv)
{
	static const struct daemon_hooks hooks = {
		.register_metrics = scheduler_metrics, .prepare = prepare, .start_work = start_work,
		.reloaded = on_reloaded, .shutdown = on_shutdown, .teardown = teardown,
	};
	struct scheduler s = { .cfg = cfg };
	int r;

	if (scheduler_parse_shard(cfg->shard, &s.shard, &s.n_shards) < 0) {
		log_error("Failed to parse shard '%s': expected I/N with 0 <= I < N <= 64", cfg->shard);
		return 2;
	}
	snprintf(s.process, sizeof(s.process), "scheduler-%u", s.shard);
	batch_init(&s.batch, cfg->batch_idle_usec, cfg->batch_max_usec);
	unschedulable_init(&s.unsched);
	/* No leader election: a shard plans only what its replica's watcher
	 * announces, and only the leading replica's watcher announces. */
	r = daemon_run(&(struct daemon_options){ .program = "kanna-scheduler", .process = s.process,
						 .events_component = "karpenter",
						 .schema = &scheduler_schema, .cfg = cfg,
						 .cfg_size = sizeof(*cfg), .kube = &cfg->kube,
						 .argc = argc, .argv = argv },
		       &hooks, &s);
	batch_done(&s.batch);
	unschedulable_done(&s.unsched);
	arena_done(&s.plan_arena);
	unavailable_done(&s.unavailable);
	model_base_cache_done(&s.base_cache);
	free(s.base_error);
	proto_msg_free(s.catalog);
	return r;
}
