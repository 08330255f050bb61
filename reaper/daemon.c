/*
 * kanna-reaper as a daemon (common/daemon.h): a replica of the cluster
 * state, the AWS client (common/aws-start.h), the plans socket to the
 * launcher for replacements, and one periodic pass that advances every
 * termination (termination.c) and then looks for empty, expired, drifted
 * (disruption.c) and underutilized nodes (consolidation.c, whose searches
 * run on a worker thread); disruption decisions are published on
 * ENDPOINT_DECISIONS. The pass runs only while the replica is in sync; every
 * decision is taken from the state as the pass finds it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws-start.h"
#include "common/clock.h"
#include "common/log.h"
#include "state/endpoints.h"
#include "reaper/daemon.h"
#include "reaper/disruption.h"
#include "reaper/reaper.h"
#include "reaper/static.h"

static int on_pass(struct loop *loop, void *userdata)
{
	struct reaper *r = userdata;
	uint64_t now = clock_monotonic_usec();

	(void)loop;
	if (!r->replica || !replica_synced(r->replica))
		return 0;
	r->pass++;
	gc_pass(r, now);
	termination_pass(r, now);
	static_pass(r);
	disruption_pass(r, now);
	drain_forget(r, false);
	reaper_forget_work(r, false);
	return 0;
}

static void on_synced(uint64_t seq, void *userdata)
{
	struct reaper *r = userdata;

	(void)seq;
	if (r->aws_ok)
		health_server_set_ready(r->d->health, true, NULL);
}

static void on_aws_verified(struct aws_client *aws, void *userdata)
{
	struct reaper *r = userdata;

	(void)aws;
	r->aws_ok = true;
	if (r->replica && replica_synced(r->replica))
		health_server_set_ready(r->d->health, true, NULL);
	if (interruption_start(r) < 0)
		log_error("Failed to start reading the interruption queue: out of memory");
	loop_notify_status(r->d->loop, "reaping");
}

static int reaper_work_start(struct daemon *d, void *userdata)
{
	struct reaper *r = userdata;
	struct replica_handlers rh = { NULL, on_synced, r };
	int k;

	(void)d;
	if ((k = replica_new(&r->replica, r->d->socks, r->d->loop, PROTO_PROCESS_REAPER,
			     ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC, &rh)) < 0)
		return log_error_errno(k, "Failed to subscribe to cluster state in %s: %m",
				       sock_ctx_runtime_dir(r->d->socks));
	replica_count_drops(r->replica, r->m.messages_dropped);
	if ((k = replica_lag_metric_new(r->replica, r->d->metrics)) < 0)
		return log_error_errno(k, "Failed to register the replica's metrics: %m");
	/* An XPUB, so that each subscriber is greeted (kanna-tap needs none). */
	if ((k = sock_new(&r->decisions_tx, r->d->socks, ZMQ_XPUB, ENDPOINT_DECISIONS)) < 0 ||
	    (k = msg_hello_on_connect(&r->io, r->decisions_tx, 0)) < 0 ||
	    (k = sock_admit(r->decisions_tx, ENDPOINT_DECISIONS_PEERS)) < 0 ||
	    (k = sock_bind(r->decisions_tx, ENDPOINT_DECISIONS)) < 0)
		return log_error_errno(k, "Failed to bind the disruption decisions socket in %s: %m",
				       sock_ctx_runtime_dir(r->d->socks));
	if ((k = consolidation_init(r)) < 0)
		return log_error_errno(k, "Failed to start the consolidation thread: %m");
	if ((k = instances_init(r)) < 0 || (k = gc_init(r)) < 0 ||
	    (k = loop_add_periodic(r->d->loop, "reap", r->cfg->reconcile_period_usec, on_pass, r)) < 0)
		return log_error_errno(k, "Failed to schedule the reaper's passes: %m");
	health_server_set_ready(r->d->health, false, "waiting for AWS and cluster state");
	k = aws_start_new(&r->aws_start, r->d->loop, r->d->health,
			  &(struct aws_client_options){ .region = r->region, .rate = r->cfg->aws_rate,
							.burst = (unsigned)r->cfg->aws_burst,
							.user_agent = "kanna-reaper/" PACKAGE_VERSION },
			  &(struct aws_start_hooks){ NULL, on_aws_verified, r }, &r->aws);
	if (k < 0)
		return log_error_errno(k, "Failed to start the AWS client: %m");
	r->working = true;
	log_info("reaping for cluster %s in %s", r->cfg->cluster_name, r->region);
	return 0;
}

static int reaper_metrics(struct daemon *d, void *userdata)
{
	static const double buckets[] = { 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600 };
	static const double decision_buckets[] = { 0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60 };
	struct reaper *r = userdata;
	struct metrics_registry *m = d->metrics;
	int k;

	r->d = d;
	if ((k = metrics_counter_new(m, &r->m.nodeclaims_terminated, "karpenter_nodeclaims_terminated_total",
				     "NodeClaims whose termination finished.", "nodepool",
				     "capacity_type", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &r->m.nodes_terminated, "karpenter_nodes_terminated_total",
				     "Nodes whose termination finished.", "nodepool", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &r->m.nodes_drained, "karpenter_nodes_drained_total",
				     "Nodes drained for termination.", "nodepool", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &r->m.pods_evicted, "karpenter_pods_drained_total",
				     "Pods evicted from nodes being terminated.", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &r->m.eviction_requests, "karpenter_pods_eviction_requests_total",
				     "Eviction API requests, by HTTP status.", "code", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &r->m.pods_deleted, "kanna_reaper_pods_deleted_total",
				     "Pods deleted because a terminationGracePeriod ran out.", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &r->m.disrupted, "karpenter_nodeclaims_disrupted_total",
				     "NodeClaims disrupted voluntarily.", "nodepool", "reason", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &r->m.decisions, "karpenter_voluntary_disruption_decisions_total",
				     "Disruption decisions taken.", "decision", "reason", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &r->m.instances_terminated, "kanna_reaper_instances_terminated_total",
				     "Instances EC2 confirmed shutting down or terminated.", NULL)) < 0 ||
	    (k = metrics_counter_new(m, &r->m.instances_collected, "kanna_reaper_instances_garbage_collected_total",
				     "Instances of the cluster terminated because no NodeClaim spoke for them.",
				     "nodepool", NULL)) < 0 ||
	    (k = metrics_histogram_new(m, &r->m.termination_seconds,
				       "karpenter_nodes_termination_duration_seconds",
				       "From a NodeClaim's deletion to its finalizer removed.", buckets,
				       ARRAY_SIZE(buckets), NULL)) < 0 ||
	    (k = metrics_histogram_new(m, &r->m.decision_seconds,
				       "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
				       "How long a consolidation search or validation took.",
				       decision_buckets, ARRAY_SIZE(decision_buckets), NULL)) < 0 ||
	    (k = metrics_gauge_new(m, &r->m.eligible, "karpenter_voluntary_disruption_eligible_nodes",
				   "Nodes a disruption method would take now but for the budgets, by "
				   "reason.", "reason", NULL)) < 0 ||
	    (k = metrics_gauge_new(m, &r->m.allowed_disruptions, "karpenter_nodepools_allowed_disruptions",
				   "Nodes a NodePool's budgets allow to disrupt now.", "nodepool",
				   "reason", NULL)) < 0 ||
	    (k = msg_dropped_metric_new(m, &r->m.messages_dropped)) < 0 ||
	    (k = msg_messages_metric_new(m)) < 0 ||
	    (k = interruption_new(r, m)) < 0)
		return k;
	return 0;
}

/* A standby too: the region, and the socket replacements are planned on. */
static int prepare(struct daemon *d, void *userdata)
{
	struct reaper *r = userdata;
	char *region_error = NULL;
	int k;

	(void)d;
	if ((k = msg_io_init(&r->io, PROTO_PROCESS_REAPER, 0)) < 0)
		return log_error_errno(k, "Failed to set up message encoding: %m");
	k = aws_region_resolve(r->cfg->region, NULL, &r->region, &region_error);
	if (k < 0) {
		log_error("Failed to determine the AWS region: %s", region_error ?: strerror(-k));
		free(region_error);
		return k;
	}
	if ((k = sock_new(&r->plans_tx, r->d->socks, ZMQ_PUSH, ENDPOINT_PLANS)) < 0 ||
	    (k = msg_hello_on_connect(&r->io, r->plans_tx, 0)) < 0 ||
	    (k = sock_connect(r->plans_tx, ENDPOINT_PLANS)) < 0)
		return log_error_errno(k, "Failed to connect to the launcher's plans socket in %s: %m",
				       sock_ctx_runtime_dir(r->d->socks));
	return 0;
}

/* SIGTERM: nothing is handed back — every step is in the objects. */
static void on_shutdown(struct daemon *d, void *userdata)
{
	struct reaper *r = userdata;

	(void)d;
	log_info("stopping: %zu termination(s) and disruption(s) resume on the next start",
		 r->work.n);
}

static void teardown(struct daemon *d, void *userdata)
{
	struct reaper *r = userdata;

	(void)d;
	consolidation_done(r); /* first: its job may still hold a model */
	r->decisions_tx = sock_free(r->decisions_tx);
	r->aws_start = aws_start_free(r->aws_start);
	aws_client_free(r->aws);
	r->aws = NULL;
	instances_done(r);
	interruption_free(r); /* after the client: its calls are cancelled */
	gc_done(r);
	r->replica = replica_free(r->replica);
	r->plans_tx = sock_free(r->plans_tx);
	msg_io_done(&r->io);
}

int reaper_run(struct reaper_config *cfg, int argc, char **argv)
{
	static const struct daemon_hooks hooks = {
		.register_metrics = reaper_metrics, .prepare = prepare,
		.start_work = reaper_work_start, .shutdown = on_shutdown, .teardown = teardown,
	};
	struct reaper r = { .cfg = cfg };
	int k;

	k = daemon_run(&(struct daemon_options){ .program = "kanna-reaper", .process = "reaper",
						 .leader_election = true, .events_component = "karpenter",
						 .schema = &reaper_schema, .cfg = cfg,
						 .cfg_size = sizeof(*cfg), .kube = &cfg->kube,
						 .argc = argc, .argv = argv },
		       &hooks, &r);
	/* After the skeleton freed the Kubernetes client: its cancelled
	 * requests called nothing back, so their records are still here. */
	drain_forget(&r, true);
	reaper_forget_work(&r, true);
	free(r.region);
	return k;
}
