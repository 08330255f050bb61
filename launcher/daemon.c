/*
 * kanna-launcher as a daemon: wiring of the loop, the Kubernetes and AWS
 * clients, the state replica, the live catalog, the EC2NodeClass resolver
 * and the sockets (PULL "plans" from the schedulers, XPUB "results" to
 * them). Plans are taken only while this process holds the launcher Lease,
 * its AWS credentials are accepted and its replica is synced: until then
 * schedulers cannot hand us work, so nothing is half-started with bad
 * credentials. The work is in admit.c, launch.c and reconcile.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/aws.h"
#include "common/aws-start.h"
#include "state/endpoints.h"
#include "common/base64.h"
#include "common/daemon.h"
#include "common/kubeconfig.h"
#include "common/log.h"
#include "common/read-file.h"
#include "common/metrics.h"
#include "state/replica.h"
#include "common/sock.h"
#include "launcher/catalog.h"
#include "launcher/daemon.h"
#include "launcher/launcher.h"

/* Credentials refused or unreachable: try again this often. */
/* A cluster CA bundle larger than this is not one. */
#define CLUSTER_CA_MAX (1u << 20)
/* Schedulers that start after a catalog was published get it again. */
#define CATALOG_REPUBLISH_USEC (30ULL * 1000 * 1000)

const struct state_store *launcher_store(const struct launcher *l)
{
	return l->replica ? replica_store(l->replica) : NULL;
}

/* ---- results -------------------------------------------------------------- */

static uint8_t capacity_type_value(const char *s)
{
	return streq_ptr(s, "spot") ? PROTO_CAPACITY_SPOT : PROTO_CAPACITY_ON_DEMAND;
}

void launcher_publish_result(struct launcher *l, const struct launch *la,
			     enum proto_launch_outcome outcome, const char *error)
{
	struct proto_msg m;
	struct proto_launch_result *r = &m.body.launch_result;
	bool launched = *la->launched.instance_id;

	proto_msg_init(&m, PROTO_MSG_LAUNCH_RESULT, PROTO_PROCESS_LAUNCHER, 0, 0);
	r->plan_id = la->plan_id;
	r->nodeclaim = la->name;
	r->outcome = outcome;
	if (launched) {
		r->instance_id = (char *)la->launched.instance_id;
		r->instance_type = (char *)la->launched.instance_type;
		r->zone = (char *)la->launched.zone;
		r->capacity_type = capacity_type_value(la->launched.capacity_type);
	}
	r->error = (char *)error;
	r->pods = la->planned->pods;
	r->n_pods = la->planned->n_pods;
	r->node_name = *la->node_name ? (char *)la->node_name : NULL;
	if (msg_send(&l->io, l->results_tx, &m, ZMQ_DONTWAIT) < 0)
		log_debug("Failed to publish the launch result of %s: %s", la->name, l->io.last_error.text);
}

void launcher_publish_unavailable(struct launcher *l, const char *type, const char *zone,
				  uint8_t capacity_type, int64_t until_ms, const char *reason)
{
	struct proto_msg m;
	struct proto_offering_unavailable *u = &m.body.offering_unavailable;

	proto_msg_init(&m, PROTO_MSG_OFFERING_UNAVAILABLE, PROTO_PROCESS_LAUNCHER, 0, 0);
	u->instance_type = (char *)type;
	u->zone = (char *)zone;
	u->capacity_type = capacity_type;
	u->until = until_ms;
	u->reason = (char *)reason;
	if (msg_send(&l->io, l->results_tx, &m, ZMQ_DONTWAIT) < 0)
		log_debug("Failed to publish an unavailable offering: %s", l->io.last_error.text);
}

static void publish_catalog(void *userdata)
{
	struct launcher *l = userdata;
	struct proto_msg m;

	if (!l->catalog || !l->results_tx)
		return;
	proto_msg_init(&m, PROTO_MSG_CATALOG, PROTO_PROCESS_LAUNCHER, 0, 0);
	launcher_catalog_msg(l->catalog, &m);
	if (msg_send(&l->io, l->results_tx, &m, ZMQ_DONTWAIT) < 0)
		log_warn("Failed to publish the instance-type catalog: %s", l->io.last_error.text);
}

static int on_republish_catalog(struct loop *loop, void *userdata)
{
	(void)loop;
	publish_catalog(userdata);
	return 0;
}

/* ---- plans ------------------------------------------------------------------ */

static int on_launch_plan(const struct proto_msg *m, void *userdata)
{
	launcher_handle_plan(userdata, &m->body.launch_plan);
	return 0;
}

/* Plans come from the schedulers; the reaper's replacements will too. */
static const struct msg_route plans_routes[] = {
	{ PROTO_MSG_LAUNCH_PLAN, MSG_FROM(PROTO_PROCESS_SCHEDULER) | MSG_FROM(PROTO_PROCESS_REAPER),
	  on_launch_plan },
};

static int on_plans(struct sock *sk, void *userdata)
{
	struct launcher *l = userdata;

	return msg_dispatch(&l->plans_dispatch, sk, l);
}

/* Work starts once all three hold: leader, AWS accepted, replica synced. */
static void maybe_take_plans(struct launcher *l)
{
	int r;

	if (!l->working || !l->aws_ok || !l->replica || !replica_synced(l->replica) || l->plans_rx)
		return;
	if ((r = sock_new(&l->plans_rx, l->d->socks, ZMQ_PULL, ENDPOINT_PLANS)) < 0 ||
	    (r = sock_admit(l->plans_rx, ENDPOINT_PLANS_PEERS)) < 0 ||
	    (r = sock_bind(l->plans_rx, ENDPOINT_PLANS)) < 0 ||
	    (r = sock_watch(l->plans_rx, on_plans, l)) < 0) {
		log_error_errno(r, "Failed to bind %s in %s: %m", ENDPOINT_PLANS,
				sock_ctx_runtime_dir(l->d->socks));
		loop_exit(l->d->loop, 1);
		return;
	}
	launcher_reconcile(l->d->loop, l);
	health_server_set_ready(l->d->health, true, NULL);
	loop_notify_ready(l->d->loop, "launching");
	log_info("taking launch plans on %s", ENDPOINT_PLANS);
}

/* ---- replica --------------------------------------------------------------------- */

/* The launch templates of every NodePool of one EC2NodeClass (NULL: all). */
static void prewarm_nodeclass(struct launcher *l, const char *nodeclass)
{
	const struct state_entry *e;
	size_t it = 0;

	if (!l->replica || !replica_synced(l->replica))
		return;
	while ((e = state_store_next(replica_store(l->replica), &it)))
		if (e->obj.kind == PROTO_OBJECT_NODEPOOL &&
		    (!nodeclass || streq_ptr(e->obj.nodepool->nodeclass_ref.name, nodeclass)))
			launcher_prewarm_templates(l, e->obj.nodepool);
}

static void on_change(enum proto_delta_op op, const struct proto_object *old,
		      const struct proto_object *now, void *userdata)
{
	struct launcher *l = userdata;

	launcher_static_observe(l, op == PROTO_DELTA_ADD ? NULL : old,
				op == PROTO_DELTA_DELETE ? NULL : now);
	if (op == PROTO_DELTA_DELETE && old && old->kind == PROTO_OBJECT_NODECLAIM)
		launcher_nodeclaim_deleted(l, old->nodeclaim->name, old->nodeclaim->uid);
	else if (now && now->kind == PROTO_OBJECT_NODECLAIM && now->nodeclaim->deletion_time)
		launcher_nodeclaim_deleted(l, now->nodeclaim->name, now->nodeclaim->uid);
	if (!l->resolver)
		return;
	if (now && now->kind == PROTO_OBJECT_NODECLASS) {
		nodeclass_resolver_observe(l->resolver, now->nodeclass);
		prewarm_nodeclass(l, now->nodeclass->name);
	} else if (op == PROTO_DELTA_DELETE && old && old->kind == PROTO_OBJECT_NODECLASS) {
		nodeclass_resolver_forget(l->resolver, old->nodeclass->name);
	} else if (now && now->kind == PROTO_OBJECT_NODEPOOL && op != PROTO_DELTA_DELETE &&
		   replica_synced(l->replica)) {
		launcher_prewarm_templates(l, now->nodepool);
	}
}

static void on_synced(uint64_t seq, void *userdata)
{
	struct launcher *l = userdata;
	const struct state_entry *e;
	size_t it = 0;

	log_info("cluster state replica synced at seq %" PRIu64, seq);
	while (l->resolver && (e = state_store_next(replica_store(l->replica), &it)))
		if (e->obj.kind == PROTO_OBJECT_NODECLASS)
			nodeclass_resolver_observe(l->resolver, e->obj.nodeclass);
	prewarm_nodeclass(l, NULL);
	maybe_take_plans(l);
}

/* ---- AWS ---------------------------------------------------------------------------- */

static void on_aws_verified(struct aws_client *aws, void *userdata)
{
	struct launcher *l = userdata;

	(void)aws;
	l->aws_ok = true;
	maybe_take_plans(l);
}

/* ---- leadership and start-up --------------------------------------------------------- */

/* The parts that call AWS, created once the client exists. */
static int start_aws_users(struct aws_client *aws, void *userdata)
{
	struct launcher *l = userdata;
	struct launcher_catalog_options co = {
		.region = l->region, .shipped_path = l->cfg->catalog,
		.refresh_usec = l->cfg->catalog_refresh_usec,
		.vm_memory_overhead_percent = l->cfg->vm_memory_overhead_percent,
		.changed = publish_catalog, .userdata = l,
	};
	struct nodeclass_resolver_options no = { .cluster_name = l->cfg->cluster_name,
						 .cluster_endpoint = l->cfg->cluster_endpoint ?: l->kcfg->server };
	char *ca = NULL;
	size_t ca_len = 0;
	const struct state_entry *e;
	size_t it = 0;
	int r;

	if (l->cfg->cluster_ca_file) {
		r = read_file(l->cfg->cluster_ca_file, CLUSTER_CA_MAX, &ca, &ca_len);
		if (r < 0)
			return log_error_errno(r, "Failed to read cluster-ca-file %s: %m",
					       l->cfg->cluster_ca_file);
		l->cluster_ca_b64 = base64_encode(ca, ca_len);
		free(ca);
	} else if (l->kcfg->ca_pem) {
		l->cluster_ca_b64 = base64_encode(l->kcfg->ca_pem, l->kcfg->ca_pem_len);
	}
	no.cluster_ca = l->cluster_ca_b64;
	no.default_instance_profile = l->cfg->default_instance_profile;
	r = launcher_catalog_new(l->d->loop, l->aws, l->d->metrics, &co, &l->catalog);
	if (r < 0)
		return log_error_errno(r, "Failed to load the instance-type catalog: %m");
	r = nodeclass_resolver_new(l->d->loop, l->aws, l->d->kube, l->d->events, l->d->metrics, &no,
				   &l->resolver);
	if (r < 0)
		return log_error_errno(r, "Failed to start the EC2NodeClass resolver: %m");
	while (l->replica && replica_synced(l->replica) &&
	       (e = state_store_next(replica_store(l->replica), &it)))
		if (e->obj.kind == PROTO_OBJECT_NODECLASS)
			nodeclass_resolver_observe(l->resolver, e->obj.nodeclass);
	prewarm_nodeclass(l, NULL);
	return 0;
}

static int launcher_work(struct launcher *l)
{
	struct replica_handlers rh = { on_change, on_synced, l };
	int r;

	if ((r = replica_new(&l->replica, l->d->socks, l->d->loop, PROTO_PROCESS_LAUNCHER,
			     ENDPOINT_STATE_PUB, ENDPOINT_STATE_SYNC, &rh)) < 0)
		return log_error_errno(r, "Failed to subscribe to cluster state in %s: %m",
				       sock_ctx_runtime_dir(l->d->socks));
	replica_count_drops(l->replica, l->m.messages_dropped);
	if ((r = replica_lag_metric_new(l->replica, l->d->metrics)) < 0)
		return log_error_errno(r, "Failed to register the replica's metrics: %m");
	if ((r = loop_add_periodic(l->d->loop, "reconcile", l->cfg->reconcile_period_usec,
				   launcher_reconcile, l)) < 0 ||
	    (r = loop_add_periodic(l->d->loop, "catalog", CATALOG_REPUBLISH_USEC, on_republish_catalog,
				   l)) < 0)
		return log_error_errno(r, "Failed to schedule periodic work: %m");
	l->working = true;
	health_server_set_ready(l->d->health, false, "waiting for AWS and cluster state");
	r = aws_start_new(&l->aws_start, l->d->loop, l->d->health,
			  &(struct aws_client_options){ .region = l->region, .rate = l->cfg->aws_rate,
							.burst = (unsigned)l->cfg->aws_burst,
							.user_agent = "kanna-launcher/" PACKAGE_VERSION },
			  &(struct aws_start_hooks){ start_aws_users, on_aws_verified, l }, &l->aws);
	if (r < 0)
		return log_error_errno(r, "Failed to start the AWS client: %m");
	return 0;
}

static int launcher_metrics(struct daemon *d, void *userdata)
{
	static const double fast[] = { 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1 };
	static const double slow[] = { 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300 };
	struct launcher *l = userdata;
	int r;

	l->d = d;
	if ((r = metrics_counter_new(d->metrics, &l->m.plans, "kanna_launcher_plans_received_total",
				     "Launch plans received from schedulers.", NULL)) < 0 ||
	    (r = metrics_counter_new(d->metrics, &l->m.nodeclaims_created,
				     "karpenter_nodeclaims_created_total", "NodeClaims created.",
				     "nodepool", NULL)) < 0 ||
	    (r = metrics_counter_new(d->metrics, &l->m.nodes_created, "karpenter_nodes_created_total",
				     "Nodes created.", "nodepool", NULL)) < 0 ||
	    (r = metrics_counter_new(d->metrics, &l->m.launched, "kanna_launcher_instances_launched_total",
				     "Instances launched.", "nodepool", "capacity_type", NULL)) < 0 ||
	    (r = metrics_counter_new(d->metrics, &l->m.launch_failures,
				     "kanna_launcher_launch_failures_total",
				     "NodeClaims given up, by outcome.", "nodepool", "outcome", NULL)) < 0 ||
	    (r = metrics_counter_new(d->metrics, &l->m.pods_bound, "kanna_launcher_pods_bound_total",
				     "Pods bound to launched nodes.", "nodepool", NULL)) < 0 ||
	    (r = metrics_counter_new(d->metrics, &l->m.binds_refused, "kanna_launcher_binds_refused_total",
				     "Planned pods not bound because they no longer fit their node.",
				     "nodepool", NULL)) < 0 ||
	    (r = metrics_counter_new(d->metrics, &l->m.offerings_unavailable,
				     "kanna_launcher_offerings_unavailable_total",
				     "Offerings marked unavailable after insufficient capacity.",
				     "instance_type", "zone", "capacity_type", NULL)) < 0 ||
	    (r = metrics_counter_new(d->metrics, &l->m.offerings_dropped,
				     "kanna_launcher_planned_offerings_dropped_total",
				     "Planned candidates or offerings the re-check at admission dropped.",
				     "nodepool", "reason", NULL)) < 0 ||
	    (r = metrics_gauge_new(d->metrics, &l->m.inflight, "kanna_launcher_launches_running",
				   "Launches in progress.", NULL)) < 0 ||
	    (r = metrics_gauge_new(d->metrics, &l->m.queued, "kanna_launcher_launches_queued",
				   "Launches waiting for a slot.", NULL)) < 0 ||
	    (r = metrics_gauge_new(d->metrics, &l->m.usage, "karpenter_nodepools_usage",
				   "Resources of a NodePool's NodeClaims, launched or in flight.",
				   "nodepool", "resource_type", NULL)) < 0 ||
	    (r = metrics_gauge_new(d->metrics, &l->m.limit, "karpenter_nodepools_limit",
				   "A NodePool's limits.", "nodepool", "resource_type", NULL)) < 0 ||
	    (r = metrics_histogram_new(d->metrics, &l->m.plan_to_fleet,
				       "kanna_launcher_plan_to_fleet_processing_seconds",
				       "Our own processing time from plan received to CreateFleet sent, "
				       "API latency excluded.", fast, ARRAY_SIZE(fast), NULL)) < 0 ||
	    (r = msg_dropped_metric_new(d->metrics, &l->m.messages_dropped)) < 0 ||
	    (r = msg_messages_metric_new(d->metrics)) < 0 ||
	    (r = metrics_histogram_new(d->metrics, &l->m.launch_seconds,
				       "kanna_launcher_launch_duration_seconds",
				       "Plan received to pods bound.", slow, ARRAY_SIZE(slow), NULL)) < 0)
		return r;
	return 0;
}

/* ---- the daemon's hooks (common/daemon.h) ------------------------------------------------- */

/* A standby too: the region, and the results socket the schedulers connect to. */
static int prepare(struct daemon *d, void *userdata)
{
	struct launcher *l = userdata;
	char *region_error = NULL;
	int r;

	l->kcfg = kube_client_config(d->kube);
	if ((r = msg_io_init(&l->io, PROTO_PROCESS_LAUNCHER, 0)) < 0)
		return log_error_errno(r, "Failed to set up message encoding: %m");
	l->plans_dispatch = (struct msg_dispatch){ .socket = "plans", .routes = plans_routes,
						   .n_routes = ARRAY_SIZE(plans_routes), .io = &l->io,
						   .dropped = l->m.messages_dropped };
	r = aws_region_resolve(l->cfg->region, NULL, &l->region, &region_error);
	if (r < 0) {
		log_error("Failed to determine the AWS region: %s", region_error ?: strerror(-r));
		free(region_error);
		return r;
	}
	/* An XPUB, so that each scheduler that subscribes is greeted. */
	if ((r = sock_new(&l->results_tx, l->d->socks, ZMQ_XPUB, ENDPOINT_RESULTS)) < 0 ||
	    (r = msg_hello_on_connect(&l->io, l->results_tx, 0)) < 0 ||
	    (r = sock_admit(l->results_tx, ENDPOINT_RESULTS_PEERS)) < 0 ||
	    (r = sock_bind(l->results_tx, ENDPOINT_RESULTS)) < 0)
		return log_error_errno(r, "Failed to bind the results socket in %s: %m",
				       sock_ctx_runtime_dir(l->d->socks));
	log_info("launching in %s for cluster %s", l->region, l->cfg->cluster_name);
	return 0;
}

static int start_work(struct daemon *d, void *userdata)
{
	(void)d;
	return launcher_work(userdata);
}

static void on_reloaded(struct daemon *d, void *userdata)
{
	(void)d;
	launcher_pump(userdata);
}

/* SIGTERM: take no more plans and hand back the ones not started; every
 * started launch is a NodeClaim already, resumed by the next start. */
static void on_shutdown(struct daemon *d, void *userdata)
{
	struct launcher *l = userdata;
	unsigned handed_back = 0;

	(void)d;
	if (l->plans_rx) {
		sock_unwatch(l->plans_rx);
		l->plans_rx = sock_free(l->plans_rx);
	}
	while (l->queue_head) {
		struct launch *la = l->queue_head;

		l->queue_head = la->next_queued;
		if (!la->uid)
			launcher_publish_result(l, la, PROTO_LAUNCH_FAILED, "the launcher is stopping");
		hashmap_remove(&l->launches, la->name);
		launch_free(la);
		handed_back++;
	}
	l->queue_tail = NULL;
	log_info("stopping: %u queued launch(es) handed back, %u in flight resume on the next start",
		 handed_back, l->n_running);
}

/* Frees every value of m, then m. */
static void free_values(struct hashmap *m, void (*free_value)(void *))
{
	const char *key;
	void *value;
	size_t it = 0;

	while (hashmap_next(m, &it, &key, &value))
		free_value(value);
	hashmap_done(m);
}

static void launch_free_value(void *la)
{
	launch_free(la);
}

static void teardown(struct daemon *d, void *userdata)
{
	struct launcher *l = userdata;

	(void)d;
	batcher_done(l);
	l->plans_rx = sock_free(l->plans_rx);
	/* Before the launches: it fails the resolutions they wait for, and
	 * on_launch_config() sees stopping and only lets go of them. */
	l->stopping = true;
	nodeclass_resolver_free(l->resolver);
	l->resolver = NULL;
	free_values(&l->launches, launch_free_value);
	free_values(&l->registering, free);
	launcher_registering_calls_free(l);
	free_values(&l->releasing, free);
	free_values(&l->static_refused, free);
	launcher_static_done(l);
	launcher_catalog_free(l->catalog);
	l->catalog = NULL;
	l->aws_start = aws_start_free(l->aws_start);
	aws_client_free(l->aws);
	l->aws = NULL;
	l->replica = replica_free(l->replica);
	l->results_tx = sock_free(l->results_tx);
	msg_io_done(&l->io);
}

int launcher_run(struct launcher_config *cfg, int argc, char **argv)
{
	static const struct daemon_hooks hooks = {
		.register_metrics = launcher_metrics, .prepare = prepare, .start_work = start_work,
		.reloaded = on_reloaded, .shutdown = on_shutdown, .teardown = teardown,
	};
	struct launcher l = { .cfg = cfg };
	int r;

	r = daemon_run(&(struct daemon_options){ .program = "kanna-launcher", .process = "launcher",
						 .leader_election = true, .events_component = "karpenter",
						 .schema = &launcher_schema, .cfg = cfg,
						 .cfg_size = sizeof(*cfg), .kube = &cfg->kube,
						 .argc = argc, .argv = argv },
		       &hooks, &l);
	state_store_done(&l.recent);
	unavailable_done(&l.unavailable);
	free(l.region);
	free(l.cluster_ca_b64);
	return r;
}
