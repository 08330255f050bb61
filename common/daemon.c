/*
 * The daemon skeleton (see daemon.h): start-up in order, leader election,
 * SIGHUP and SIGTERM, teardown in reverse. Single exit label style.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/daemon.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/util.h"

struct daemon_run {
	struct daemon d;
	const struct daemon_options *o;
	const struct daemon_hooks *h;
	void *userdata;
};

static void on_started_leading(void *userdata)
{
	struct daemon_run *run = userdata;

	log_info("acquired lease %s, starting work", DAEMON_LEASE_NAME);
	/* Ready again once its work is (its replica synced, and so on). */
	health_server_set_ready(run->d.health, false, "starting work as the leader");
	if (run->h->start_work(&run->d, run->userdata) < 0)
		loop_exit(run->d.loop, 1);
}

static void on_stopped_leading(void *userdata)
{
	struct daemon_run *run = userdata;

	/* Another instance may be working now: stop at once, as Karpenter does. */
	log_error("Leadership lost, exiting so that the supervisor restarts us as a standby");
	loop_exit(run->d.loop, 1);
}

/* SIGHUP: everything read again; all of it applies or none (config_reload). */
static int on_reload(struct loop *loop, void *userdata)
{
	struct daemon_run *run = userdata;
	const struct daemon_options *o = run->o;
	struct config_source src = { o->argc, o->argv, NULL };
	struct config_result res = { 0 };
	void *fresh = calloc(1, o->cfg_size);
	int r;

	(void)loop;
	if (!fresh) {
		log_error("Failed to reload the configuration: out of memory; keeping the running one");
		return 0;
	}
	r = config_reload(o->schema, o->cfg, fresh, &src, &res);
	if (r < 0) {
		log_error("%s; keeping the running configuration", res.error);
		config_result_done(&res);
		free(fresh);
		return 0;
	}
	config_free(o->schema, o->cfg);
	memcpy(o->cfg, fresh, o->cfg_size);
	free(fresh);
	config_setup_logging(o->schema, o->cfg);
	log_info("reloaded configuration%s%s", res.changed[0] ? ": changed " : " (no change)",
		 res.changed);
	config_result_done(&res);
	if (run->h->reloaded)
		run->h->reloaded(&run->d, run->userdata);
	return 0;
}

static int on_shutdown(struct loop *loop, void *userdata)
{
	struct daemon_run *run = userdata;

	(void)loop;
	if (run->h->shutdown)
		run->h->shutdown(&run->d, run->userdata);
	return 0;
}

/* Work once the replica holds the Lease; meanwhile a standby, started as
 * far as systemd is concerned (under Type=notify it would be killed at
 * TimeoutStartSec otherwise) and ready as far as Kubernetes is: /readyz
 * answers 200 "ok: standby ...", as a standby Karpenter's does
 * (controller-runtime's readiness checks ignore leadership). A standby pod
 * that was not Ready would count against the PodDisruptionBudget and hold
 * every drain of its node, and a rollout would never finish. The identity
 * is the replica's, not the process's: siblings lead together (lease.h). */
static int run_for_lease(struct daemon_run *run)
{
	const struct kube_settings *k = run->o->kube;
	const char *identity = k->leader_identity && *k->leader_identity ? k->leader_identity
									 : run->d.host;
	struct lease_options lo = {
		.name = DAEMON_LEASE_NAME, .namespace = k->leader_namespace, .identity = identity,
		.duration_usec = k->lease_duration_usec,
		.renew_deadline_usec = k->lease_renew_deadline_usec,
		.retry_period_usec = k->lease_retry_period_usec,
	};
	struct lease_handlers lh = { on_started_leading, on_stopped_leading, run };
	char status[512], err[128];
	int r;

	r = lease_options_check(&lo, err, sizeof(err));
	if (r < 0)
		return log_error_errno(r, "Refusing to start: %s", err);
	snprintf(status, sizeof(status), "standby, waiting for leadership of %s/%s", k->leader_namespace,
		 DAEMON_LEASE_NAME);
	health_server_set_ready(run->d.health, true, status);
	r = lease_new(&run->d.lease, run->d.kube, &lo, &lh);
	if (r < 0)
		return log_error_errno(r, "Failed to start leader election for lease %s/%s: %m",
				       k->leader_namespace, DAEMON_LEASE_NAME);
	snprintf(status, sizeof(status), "standby: waiting to acquire lease %s/%s", k->leader_namespace,
		 DAEMON_LEASE_NAME);
	loop_notify_ready(run->d.loop, status);
	log_info("%s as %s", status, identity);
	return 0;
}

/*
 * The sockets' context, once the runtime directory is one only this daemon
 * (or root) controls: who may reach each socket is then up to the ZAP
 * check of common/sock-guard.c, not to whoever can write the directory.
 */
static int open_sockets(struct daemon_run *run)
{
	const struct daemon_options *o = run->o;
	struct daemon *d = &run->d;
	const struct config_common *common = config_common(o->schema, o->cfg);
	struct sock_access a = { .socket_group = SOCK_NO_GROUP, .tap_group = SOCK_NO_GROUP };
	struct sock_identity *ids = NULL;
	char *dir = NULL, err[CONFIG_ERROR_MAX];
	int r;

	if (common->socket_group && sock_lookup_group(common->socket_group, &a.socket_group) < 0)
		return log_error_errno(ENOENT, "Failed to use socket-group %s: no such group",
				       common->socket_group);
	if (common->tap_group && sock_lookup_group(common->tap_group, &a.tap_group) < 0)
		return log_error_errno(ENOENT, "Failed to use tap-group %s: no such group",
				       common->tap_group);
	r = sock_identities_parse(common->peer_identities, &ids, &a.n_identities, err, sizeof(err));
	if (r < 0)
		return log_error_errno(r, "Failed to use %s", err);
	a.identities = ids;
	r = sock_refused_metric_new(d->metrics, &a.refused);
	if (r < 0) {
		free(ids);
		return log_error_errno(r, "Failed to register metrics: %m");
	}
	r = sock_runtime_dir_shared(common->runtime_dir, a.socket_group, &dir);
	if (r < 0)
		log_error_errno(r, "Failed to create the runtime directory %s: %m", common->runtime_dir);
	else if ((r = sock_runtime_dir_check(dir, &a, err, sizeof(err))) < 0)
		log_error_errno(r, "Refusing to start: %s", err);
	else if ((r = sock_ctx_new_with_access(&d->socks, d->loop, o->process, dir, &a)) < 0)
		log_error_errno(r, "Failed to open the message sockets' context in %s: %m", dir);
	free(dir);
	free(ids);
	return r;
}

/* As Karpenter's: a constant 1 labelled with the build's version. */
static int register_build_info(struct metrics_registry *reg)
{
	struct metrics_gauge *g;
	int r = metrics_gauge_new(reg, &g, "karpenter_build_info",
				  "A metric with a constant '1' value labeled by version from which "
				  "kanna was built.",
				  "version", NULL);

	return r < 0 ? r : metrics_gauge_set(g, 1, PACKAGE_VERSION, NULL);
}

static int start(struct daemon_run *run)
{
	const struct daemon_options *o = run->o;
	struct daemon *d = &run->d;
	const struct config_common *common = config_common(o->schema, o->cfg);
	const struct kube_settings *k = o->kube;
	struct kube_client_options ko = { .qps = k->qps, .burst = (unsigned)k->burst,
					  .allow_insecure_http = k->allow_insecure_http };
	struct kube_config *kcfg = NULL;
	char agent[128], err[512];
	int r;

	if ((r = loop_new(&d->loop, o->process)) < 0)
		return log_error_errno(r, "Failed to create the event loop: %m");
	loop_set_hooks(d->loop, &(struct loop_hooks){ .on_shutdown = on_shutdown,
						       .on_reload = on_reload, .userdata = run });
	if ((r = metrics_registry_new(&d->metrics)) < 0 ||
	    (r = register_build_info(d->metrics)) < 0 ||
	    (r = run->h->register_metrics(d, run->userdata)) < 0)
		return log_error_errno(r, "Failed to register metrics: %m");
	r = health_server_new_at(common->http_listen_address, d->metrics, (int)common->metrics_port,
				 (int)common->health_port, 0, &d->health);
	if (r < 0)
		return log_error_errno(r, "Failed to serve metrics on %s port %" PRIu64
				       " and health on port %" PRIu64 ": %m%s",
				       common->http_listen_address, common->metrics_port,
				       common->health_port,
				       r == -EINVAL ? " (http-listen-address must be an IPv4 or IPv6 address)"
						    : "");
	if ((r = health_server_attach_loop(d->health, d->loop)) < 0)
		return log_error_errno(r, "Failed to attach health checks to the event loop: %m");
	health_server_set_ready(d->health, false, "starting");
	r = kube_config_resolve(k->kubeconfig, k->context, &kcfg, err, sizeof(err));
	if (r < 0)
		return log_error_errno(r, "Failed to load Kubernetes configuration: %s", err);
	r = kube_config_check(kcfg, k->allow_insecure_http, err, sizeof(err));
	if (r < 0) {
		kube_config_free(kcfg);
		return log_error_errno(r, "Failed to use the Kubernetes configuration: %s", err);
	}
	if (kube_config_is_plain_http(kcfg))
		log_warn("The Kubernetes API at %s is plain http (kube-client-allow-insecure-http): "
			 "sending it no token and no client certificate", kcfg->server);
	if (kcfg->insecure_skip_tls_verify)
		log_warn("insecure-skip-tls-verify is set for %s: its certificate is NOT verified, so "
			 "anyone on the network path can pose as the API server and take the "
			 "credentials sent to it; give the cluster's CA instead", kcfg->server);
	log_info_kv(LOG_KV({ "server", kcfg->server }, { "context", kcfg->context }),
		    "using Kubernetes API at %s", kcfg->server);
	snprintf(agent, sizeof(agent), "%s/%s", o->program, PACKAGE_VERSION);
	ko.user_agent = agent;
	/* The client owns the configuration from here on, also when it
	 * fails to start. */
	if ((r = kube_client_new(&d->kube, d->loop, kcfg, &ko)) < 0)
		return log_error_errno(r, "Failed to create the Kubernetes client: %m");
	if ((r = kube_events_new(&d->events, d->kube, o->events_component, d->host)) < 0)
		return log_error_errno(r, "Failed to create the Event recorder: %m");
	if ((r = open_sockets(run)) < 0)
		return r;
	if (run->h->prepare && (r = run->h->prepare(d, run->userdata)) < 0)
		return r;
	if (!k->leader_elect || !o->leader_election)
		return run->h->start_work(d, run->userdata);
	return run_for_lease(run);
}

int daemon_run(const struct daemon_options *o, const struct daemon_hooks *h, void *userdata)
{
	struct daemon_run run = { .o = o, .h = h, .userdata = userdata };
	int r;

	memory_tune();
	snprintf(run.d.host, sizeof(run.d.host), "%s", o->program);
	(void)gethostname(run.d.host, sizeof(run.d.host) - 1);
	r = start(&run);
	if (r >= 0)
		r = loop_run(run.d.loop);
	run.d.lease = lease_free(run.d.lease);
	if (h->teardown)
		h->teardown(&run.d, userdata);
	sock_ctx_free(run.d.socks);
	kube_events_free(run.d.events);
	kube_client_free(run.d.kube);
	health_server_free(run.d.health);
	metrics_registry_free(run.d.metrics);
	loop_free(run.d.loop);
	return r < 0 ? 1 : r;
}
