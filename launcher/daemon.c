/*
 * kanna-launcher as a daemon: wiring of the loop, the Kubernetes and AWS
 * clients, the state replica, the live catalog, the EC2NodeClass resolver
 * and the sockets (PULL "plans" from the schedulers, PUB "results" to
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

#include <openssl/evp.h>

#include "common/aws.h"
#include "common/endpoints.h"
#include "common/health.h"
#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/kubeconfig.h"
#include "common/lease.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/replica.h"
#include "common/sock.h"
#include "launcher/catalog.h"
#include "launcher/daemon.h"
#include "launcher/launcher.h"

#define LAUNCHER_LEASE_NAME "kanna-launcher-leader-election"
/* Credentials refused or unreachable: try again this often. */
#define AWS_VERIFY_RETRY_USEC (15ULL * 1000 * 1000)
/* Schedulers that start after a catalog was published get it again. */
#define CATALOG_REPUBLISH_USEC (30ULL * 1000 * 1000)

uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int64_t now_ms_realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

static int on_plans(struct sock *sk, void *userdata)
{
	struct launcher *l = userdata;
	const struct proto_msg *m;
	struct sock_msg msg;
	int r = sock_recv(sk, &msg, ZMQ_DONTWAIT);

	if (r < 0)
		return r == -EAGAIN ? 0 : r;
	r = msg_decode(&l->io, &msg, &m);
	if (r < 0) {
		log_warn("Failed to decode a message on %s: %s", sock_name(sk), l->io.last_error.text);
	} else if (m->env.type == PROTO_MSG_LAUNCH_PLAN) {
		launcher_handle_plan(l, &m->body.launch_plan);
	} else {
		log_warn("Ignoring a %s message on %s", proto_type_name(m->env.type), sock_name(sk));
	}
	sock_msg_close(&msg);
	return 0;
}

/* Work starts once all three hold: leader, AWS accepted, replica synced. */
static void maybe_take_plans(struct launcher *l)
{
	int r;

	if (!l->working || !l->aws_ok || !l->replica || !replica_synced(l->replica) || l->plans_rx)
		return;
	if ((r = sock_new(&l->plans_rx, l->socks, ZMQ_PULL, ENDPOINT_PLANS)) < 0 ||
	    (r = sock_bind(l->plans_rx, ENDPOINT_PLANS)) < 0 ||
	    (r = sock_watch(l->plans_rx, on_plans, l)) < 0) {
		log_error_errno(r, "Failed to bind %s in %s: %m", ENDPOINT_PLANS,
				sock_ctx_runtime_dir(l->socks));
		loop_exit(l->loop, 1);
		return;
	}
	launcher_reconcile(l->loop, l);
	health_server_set_ready(l->health, true, NULL);
	loop_notify_ready(l->loop, "launching");
	log_info("taking launch plans on %s", ENDPOINT_PLANS);
}

/* ---- replica --------------------------------------------------------------------- */

static void on_change(enum proto_delta_op op, const struct proto_object *old,
		      const struct proto_object *now, void *userdata)
{
	struct launcher *l = userdata;

	if (op == PROTO_DELTA_DELETE && old && old->kind == PROTO_OBJECT_NODECLAIM)
		launcher_nodeclaim_deleted(l, old->nodeclaim->name, old->nodeclaim->uid);
	else if (now && now->kind == PROTO_OBJECT_NODECLAIM && now->nodeclaim->deletion_time)
		launcher_nodeclaim_deleted(l, now->nodeclaim->name, now->nodeclaim->uid);
	if (!l->resolver)
		return;
	if (now && now->kind == PROTO_OBJECT_NODECLASS)
		nodeclass_resolver_observe(l->resolver, now->nodeclass);
	else if (op == PROTO_DELTA_DELETE && old && old->kind == PROTO_OBJECT_NODECLASS)
		nodeclass_resolver_forget(l->resolver, old->nodeclass->name);
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
	maybe_take_plans(l);
}

/* ---- AWS ---------------------------------------------------------------------------- */

static int verify_aws(struct loop *loop, void *userdata);
static int start_aws_users(struct launcher *l);

static void on_caller_identity(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct launcher *l = userdata;
	const struct aws_credentials *creds = aws_client_credentials(c);

	if (resp->result < 0) {
		log_error("AWS refused the credentials from %s: %s; not launching anything until "
			  "they work (retrying every %llu s)",
			  creds && creds->source ? creds->source : "the credential chain",
			  aws_response_strerror(resp), AWS_VERIFY_RETRY_USEC / 1000000);
		health_server_set_ready(l->health, false, "AWS credentials refused");
		loop_add_timer(l->loop, AWS_VERIFY_RETRY_USEC, verify_aws, l, NULL);
		return;
	}
	log_info("AWS credentials from %s accepted: account %s, %s",
		 creds && creds->source ? creds->source : "the credential chain",
		 aws_xml_text(resp->xml, "GetCallerIdentityResult/Account") ?: "?",
		 aws_xml_text(resp->xml, "GetCallerIdentityResult/Arn") ?: "?");
	l->aws_ok = true;
	maybe_take_plans(l);
}

static int start_aws_client(struct launcher *l)
{
	struct aws_credentials_options co = { .region = l->region };
	struct aws_client_options ao = { .region = l->region, .rate = l->cfg->aws_rate,
					 .burst = (unsigned)l->cfg->aws_burst,
					 .user_agent = "kanna-launcher/" PACKAGE_VERSION };
	struct aws_credentials *creds = NULL;
	char *error = NULL;
	int r;

	r = aws_credentials_resolve(&co, &creds, &error);
	if (r < 0) {
		log_error("No AWS credentials: %s", error ?: strerror(-r));
		free(error);
		return r;
	}
	r = aws_client_new(l->loop, &ao, creds, &l->aws);
	aws_credentials_free(creds);
	if (r < 0)
		return log_error_errno(r, "Failed to create the AWS client: %m");
	return 0;
}

/* Resolves credentials (once they resolve) and checks them with STS. */
static int verify_aws(struct loop *loop, void *userdata)
{
	struct launcher *l = userdata;
	struct aws_query *q = NULL;
	int r;

	(void)loop;
	if (!l->aws && start_aws_client(l) < 0) {
		health_server_set_ready(l->health, false, "no AWS credentials");
		loop_add_timer(l->loop, AWS_VERIFY_RETRY_USEC, verify_aws, l, NULL);
		return 0;
	}
	if (!l->catalog && start_aws_users(l) < 0) {
		loop_exit(l->loop, 1);
		return 0;
	}
	if ((r = aws_query_new("GetCallerIdentity", "2011-06-15", &q)) < 0 ||
	    (r = aws_call_query(l->aws, "sts", q, on_caller_identity, l)) < 0) {
		log_error_errno(r, "Failed to call STS GetCallerIdentity: %m");
		loop_add_timer(l->loop, AWS_VERIFY_RETRY_USEC, verify_aws, l, NULL);
	}
	return 0;
}

/* ---- leadership and start-up --------------------------------------------------------- */

static char *base64_encode(const char *data, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);

	if (out)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)data, (int)len);
	return out;
}

static int read_file(const char *path, char **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;
	int r = 0;

	if (!f)
		return -errno;
	buf = malloc(1 << 20);
	if (!buf)
		r = -ENOMEM;
	else
		len = fread(buf, 1, (1 << 20) - 1, f);
	if (r == 0 && ferror(f))
		r = -EIO;
	fclose(f);
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[len] = 0;
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* The parts that call AWS, created once the client exists. */
static int start_aws_users(struct launcher *l)
{
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
		r = read_file(l->cfg->cluster_ca_file, &ca, &ca_len);
		if (r < 0)
			return log_error_errno(r, "Failed to read cluster-ca-file %s: %m",
					       l->cfg->cluster_ca_file);
		l->cluster_ca_b64 = base64_encode(ca, ca_len);
		free(ca);
	} else if (l->kcfg->ca_pem) {
		l->cluster_ca_b64 = base64_encode(l->kcfg->ca_pem, l->kcfg->ca_pem_len);
	}
	no.cluster_ca = l->cluster_ca_b64;
	r = launcher_catalog_new(l->loop, l->aws, l->metrics, &co, &l->catalog);
	if (r < 0)
		return log_error_errno(r, "Failed to load the instance-type catalog: %m");
	r = nodeclass_resolver_new(l->loop, l->aws, l->kube, l->events, l->metrics, &no, &l->resolver);
	if (r < 0)
		return log_error_errno(r, "Failed to start the EC2NodeClass resolver: %m");
	while (l->replica && replica_synced(l->replica) &&
	       (e = state_store_next(replica_store(l->replica), &it)))
		if (e->obj.kind == PROTO_OBJECT_NODECLASS)
			nodeclass_resolver_observe(l->resolver, e->obj.nodeclass);
	return 0;
}

static int launcher_work(struct launcher *l)
{
	struct replica_handlers rh = { on_change, on_synced, l };
	int r;

	if ((r = replica_new(&l->replica, l->socks, l->loop, PROTO_PROCESS_LAUNCHER, ENDPOINT_STATE_PUB,
			     ENDPOINT_STATE_SYNC, &rh)) < 0)
		return log_error_errno(r, "Failed to subscribe to cluster state in %s: %m",
				       sock_ctx_runtime_dir(l->socks));
	if ((r = loop_add_periodic(l->loop, "reconcile", l->cfg->reconcile_period_usec,
				   launcher_reconcile, l)) < 0 ||
	    (r = loop_add_periodic(l->loop, "catalog", CATALOG_REPUBLISH_USEC, on_republish_catalog,
				   l)) < 0)
		return log_error_errno(r, "Failed to schedule periodic work: %m");
	l->working = true;
	health_server_set_ready(l->health, false, "waiting for AWS and cluster state");
	verify_aws(l->loop, l);
	return 0;
}

static void on_started_leading(void *userdata)
{
	struct launcher *l = userdata;

	log_info("acquired lease %s", LAUNCHER_LEASE_NAME);
	if (launcher_work(l) < 0)
		loop_exit(l->loop, 1);
}

static void on_stopped_leading(void *userdata)
{
	struct launcher *l = userdata;

	log_error("Leadership lost, exiting so that the supervisor restarts us as a standby");
	loop_exit(l->loop, 1);
}

static int launcher_metrics(struct launcher *l)
{
	static const double fast[] = { 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1 };
	static const double slow[] = { 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300 };
	int r;

	if ((r = metrics_registry_new(&l->metrics)) < 0 ||
	    (r = metrics_counter_new(l->metrics, &l->m.plans, "kanna_launcher_plans_received_total",
				     "Launch plans received from schedulers.", NULL)) < 0 ||
	    (r = metrics_counter_new(l->metrics, &l->m.nodeclaims_created,
				     "karpenter_nodeclaims_created_total", "NodeClaims created.",
				     "nodepool", NULL)) < 0 ||
	    (r = metrics_counter_new(l->metrics, &l->m.nodes_created, "karpenter_nodes_created_total",
				     "Nodes created.", "nodepool", NULL)) < 0 ||
	    (r = metrics_counter_new(l->metrics, &l->m.launched, "kanna_launcher_instances_launched_total",
				     "Instances launched.", "nodepool", "capacity_type", NULL)) < 0 ||
	    (r = metrics_counter_new(l->metrics, &l->m.launch_failures,
				     "kanna_launcher_launch_failures_total",
				     "NodeClaims given up, by outcome.", "nodepool", "outcome", NULL)) < 0 ||
	    (r = metrics_counter_new(l->metrics, &l->m.pods_bound, "kanna_launcher_pods_bound_total",
				     "Pods bound to launched nodes.", "nodepool", NULL)) < 0 ||
	    (r = metrics_counter_new(l->metrics, &l->m.binds_refused, "kanna_launcher_binds_refused_total",
				     "Planned pods not bound because they no longer fit their node.",
				     "nodepool", NULL)) < 0 ||
	    (r = metrics_counter_new(l->metrics, &l->m.offerings_unavailable,
				     "kanna_launcher_offerings_unavailable_total",
				     "Offerings marked unavailable after insufficient capacity.",
				     "instance_type", "zone", "capacity_type", NULL)) < 0 ||
	    (r = metrics_gauge_new(l->metrics, &l->m.inflight, "kanna_launcher_launches_running",
				   "Launches in progress.", NULL)) < 0 ||
	    (r = metrics_gauge_new(l->metrics, &l->m.queued, "kanna_launcher_launches_queued",
				   "Launches waiting for a slot.", NULL)) < 0 ||
	    (r = metrics_gauge_new(l->metrics, &l->m.usage, "karpenter_nodepools_usage",
				   "Resources of a NodePool's NodeClaims, launched or in flight.",
				   "nodepool", "resource_type", NULL)) < 0 ||
	    (r = metrics_gauge_new(l->metrics, &l->m.limit, "karpenter_nodepools_limit",
				   "A NodePool's limits.", "nodepool", "resource_type", NULL)) < 0 ||
	    (r = metrics_histogram_new(l->metrics, &l->m.plan_to_fleet,
				       "kanna_launcher_plan_to_fleet_processing_seconds",
				       "Our own processing time from plan received to CreateFleet sent, "
				       "API latency excluded.", fast, ARRAY_SIZE(fast), NULL)) < 0 ||
	    (r = metrics_histogram_new(l->metrics, &l->m.launch_seconds,
				       "kanna_launcher_launch_duration_seconds",
				       "Plan received to pods bound.", slow, ARRAY_SIZE(slow), NULL)) < 0)
		return r;
	return 0;
}

/* ---- signals -------------------------------------------------------------------------------- */

struct run_ctx {
	struct launcher *l;
	int argc;
	char **argv;
};

static int on_reload(struct loop *loop, void *userdata)
{
	struct run_ctx *rc = userdata;
	struct config_source src = { rc->argc, rc->argv, NULL };
	struct config_result res = { 0 };
	struct launcher_config fresh = { 0 };
	int r;

	(void)loop;
	r = config_reload(&launcher_schema, rc->l->cfg, &fresh, &src, &res);
	if (r < 0) {
		log_error("%s; keeping the running configuration", res.error);
		config_result_done(&res);
		return 0;
	}
	config_free(&launcher_schema, rc->l->cfg);
	*rc->l->cfg = fresh;
	config_setup_logging(&launcher_schema, rc->l->cfg);
	log_info("reloaded configuration%s%s", res.changed[0] ? ": changed " : " (no change)",
		 res.changed);
	config_result_done(&res);
	launcher_pump(rc->l);
	return 0;
}

/* SIGTERM: take no more plans and hand back the ones not started; every
 * started launch is a NodeClaim already, resumed by the next start. */
static int on_shutdown(struct loop *loop, void *userdata)
{
	struct run_ctx *rc = userdata;
	struct launcher *l = rc->l;
	unsigned handed_back = 0;

	(void)loop;
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
	return 0;
}

int launcher_run(struct launcher_config *cfg, int argc, char **argv)
{
	struct launcher l = { .cfg = cfg };
	struct run_ctx rc = { &l, argc, argv };
	struct kube_client_options ko = { .qps = cfg->kube.qps, .burst = (unsigned)cfg->kube.burst,
					  .user_agent = "kanna-launcher/" PACKAGE_VERSION };
	struct kube_config *kcfg = NULL;
	char err[512], host[256] = "kanna-launcher", identity[300];
	char *region_error = NULL;
	int r;

	gethostname(host, sizeof(host) - 1);
	l.unavailable = calloc(LAUNCHER_MAX_UNAVAILABLE, sizeof(*l.unavailable));
	if (!l.unavailable || (r = loop_new(&l.loop, "launcher")) < 0 || (r = launcher_metrics(&l)) < 0 ||
	    (r = msg_io_init(&l.io, PROTO_PROCESS_LAUNCHER, 0)) < 0) {
		r = log_error_errno(-ENOMEM, "Failed to start: %m");
		goto out;
	}
	loop_set_hooks(l.loop, &(struct loop_hooks){ on_shutdown, on_reload, &rc });
	r = health_server_new(l.metrics, (int)cfg->common.metrics_port, (int)cfg->common.health_port, 0,
			      &l.health);
	if (r < 0 || (r = health_server_attach_loop(l.health, l.loop)) < 0) {
		log_error_errno(r, "Failed to serve metrics and health: %m");
		goto out;
	}
	health_server_set_ready(l.health, false, "starting");
	r = aws_region_resolve(cfg->region, NULL, &l.region, &region_error);
	if (r < 0) {
		log_error("Failed to determine the AWS region: %s", region_error ?: strerror(-r));
		free(region_error);
		goto out;
	}
	r = kube_config_resolve(cfg->kube.kubeconfig, cfg->kube.context, &kcfg, err, sizeof(err));
	if (r < 0) {
		log_error_errno(r, "Failed to load Kubernetes configuration: %s", err);
		goto out;
	}
	/* The client owns the configuration from here on, also when it fails
	 * to start (kube_client_new frees it then): l.kcfg only borrows it,
	 * for as long as l.kube lives. */
	r = kube_client_new(&l.kube, l.loop, TAKE_PTR(kcfg), &ko);
	if (r >= 0)
		l.kcfg = kube_client_config(l.kube);
	if (r < 0 || (r = kube_events_new(&l.events, l.kube, "karpenter", host)) < 0 ||
	    (r = sock_ctx_new(&l.socks, l.loop, "launcher", cfg->common.runtime_dir)) < 0 ||
	    (r = sock_new(&l.results_tx, l.socks, ZMQ_PUB, ENDPOINT_RESULTS)) < 0 ||
	    (r = sock_bind(l.results_tx, ENDPOINT_RESULTS)) < 0) {
		log_error_errno(r, "Failed to start the launcher: %m");
		goto out;
	}
	log_info("launching in %s for cluster %s", l.region, cfg->cluster_name);
	if (!cfg->kube.leader_elect) {
		r = launcher_work(&l);
	} else {
		struct lease_options lo = {
			.name = LAUNCHER_LEASE_NAME, .namespace = cfg->kube.leader_namespace,
			.identity = identity,
			.duration_sec = (unsigned)(cfg->kube.lease_duration_usec / 1000000),
			.renew_deadline_sec = (unsigned)(cfg->kube.lease_duration_usec * 2 / 3 / 1000000),
			.retry_period_sec = MAX(1u, (unsigned)(cfg->kube.lease_duration_usec * 2 / 15 / 1000000)),
		};
		struct lease_handlers lh = { on_started_leading, on_stopped_leading, &l };

		snprintf(identity, sizeof(identity), "%s_%d", host, (int)getpid());
		health_server_set_ready(l.health, false, "waiting for leadership");
		r = lease_new(&l.lease, l.kube, &lo, &lh);
		/* Under Type=notify a standby must report itself started, or
		 * systemd kills it at TimeoutStartSec; STATUS= says what it awaits. */
		if (r >= 0) {
			snprintf(err, sizeof(err), "standby: waiting to acquire lease %s/%s",
				 cfg->kube.leader_namespace, LAUNCHER_LEASE_NAME);
			loop_notify_ready(l.loop, err);
			log_info("%s as %s", err, identity);
		}
	}
	if (r >= 0)
		r = loop_run(l.loop);
out:
	lease_free(l.lease);
	batcher_done(&l);
	if (l.plans_rx)
		sock_free(l.plans_rx);
	{
		const char *key;
		void *value;
		size_t it = 0;

		while (hashmap_next(&l.launches, &it, &key, &value))
			launch_free(value);
		hashmap_done(&l.launches);
		it = 0;
		while (hashmap_next(&l.registering, &it, &key, &value))
			free(value);
		hashmap_done(&l.registering);
		it = 0;
		while (hashmap_next(&l.releasing, &it, &key, &value))
			free(value);
		hashmap_done(&l.releasing);
	}
	nodeclass_resolver_free(l.resolver);
	launcher_catalog_free(l.catalog);
	aws_client_free(l.aws);
	replica_free(l.replica);
	state_store_done(&l.recent);
	sock_free(l.results_tx);
	sock_ctx_free(l.socks);
	kube_events_free(l.events);
	kube_client_free(l.kube);
	kube_config_free(kcfg);
	health_server_free(l.health);
	metrics_registry_free(l.metrics);
	msg_io_done(&l.io);
	for (size_t i = 0; l.unavailable && i < l.n_unavailable; i++) {
		free(l.unavailable[i].instance_type);
		free(l.unavailable[i].zone);
	}
	free(l.unavailable);
	free(l.region);
	free(l.cluster_ca_b64);
	loop_free(l.loop);
	return r < 0 ? 1 : r;
}
