/*
 * One NodeClaim's launch, as a chain of asynchronous steps on the loop:
 *
 *   create NodeClaim → resolve EC2NodeClass (launch template per arch)
 *   → [look for an instance already tagged with the NodeClaim]
 *   → CreateFleet (insufficient capacity: mark the offering unavailable,
 *     publish it, retry at once with what is left) → DescribeInstances
 *   → record the launch on the NodeClaim → create the Node → bind pods.
 *
 * The NodeClaim exists before EC2 is called, so the intent survives a
 * crash; the ClientToken comes from its UID, so a retried CreateFleet never
 * launches twice. A step that fails for any other reason is retried with
 * backoff until launch-timeout; then the NodeClaim is deleted and its pods
 * are handed back to the schedulers (a failed launch result). A NodeClaim
 * deleted meanwhile stops the chain at its next step (launch-undo.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/aws.h"
#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/log.h"
#include "common/metrics.h"
#include "state/state-store.h"
#include "launcher/catalog.h"
#include "launcher/fleet-request.h"
#include "launcher/fleet.h"
#include "launcher/launcher.h"
#include "launcher/objects.h"
#include "model/match.h"
#include "proto/schema.h"

/* Backoff of a step that failed for a reason other than capacity. */
#define LAUNCH_BACKOFF_BASE_USEC (2ULL * 1000 * 1000)
#define LAUNCH_BACKOFF_CAP_USEC (60ULL * 1000 * 1000)

static void launch_arch_clear(struct launch_arch *a)
{
	free(a->cfg.launch_template_name);
	free(a->cfg.image_id);
	for (size_t i = 0; i < a->cfg.n_subnets; i++) {
		free((char *)a->cfg.subnets[i].id);
		free((char *)a->cfg.subnets[i].zone);
	}
	free(a->cfg.subnets);
	for (size_t i = 0; i < a->cfg.n_security_groups; i++)
		free(a->cfg.security_group_ids[i]);
	free(a->cfg.security_group_ids);
	free(a->why);
	memset(&a->cfg, 0, sizeof(a->cfg));
	a->why = NULL;
	a->error = 0;
}

struct launch *launch_new(struct launcher *l, const char *name, const char *plan_id,
			  const struct proto_planned_nodeclaim *planned)
{
	struct launch *la = calloc(1, sizeof(*la));

	if (!la)
		return NULL;
	la->l = l;
	la->name = strdup(name);
	la->plan_id = plan_id ? strdup(plan_id) : NULL;
	la->planned = proto_planned_nodeclaim_dup(planned);
	la->t_received = la->t_mark = clock_monotonic_usec();
	la->deadline = la->t_received + l->cfg->launch_timeout_usec;
	if (!la->name || !la->planned || (plan_id && !la->plan_id)) {
		launch_free(la);
		return NULL;
	}
	return la;
}

void launch_free(struct launch *la)
{
	if (!la)
		return;
	launch_reached_batcher(la);
	if (la->timer)
		sd_event_source_disable_unref(la->timer);
	for (unsigned i = 0; i < la->n_arches; i++)
		launch_arch_clear(&la->arches[i]);
	free(la->name);
	free(la->uid);
	free(la->plan_id);
	proto_planned_nodeclaim_free(la->planned);
	free(la);
}

int launch_enqueue(struct launcher *l, struct launch *la)
{
	int r = hashmap_put(&l->launches, la->name, la, NULL);

	if (r < 0)
		return r;
	if (la->step <= STEP_FLEET) {
		la->before_batcher = true;
		l->launches_before_batcher++;
	}
	if (l->queue_tail)
		l->queue_tail->next_queued = la;
	else
		l->queue_head = la;
	l->queue_tail = la;
	launcher_pump(l);
	return 0;
}

void launch_reached_batcher(struct launch *la)
{
	if (!la->before_batcher)
		return;
	la->before_batcher = false;
	la->l->launches_before_batcher--;
}

void launcher_pump(struct launcher *l)
{
	unsigned queued = 0;

	while (l->queue_head && l->n_running < l->cfg->max_concurrent_launches) {
		struct launch *la = l->queue_head;

		l->queue_head = la->next_queued;
		if (!l->queue_head)
			l->queue_tail = NULL;
		la->next_queued = NULL;
		l->n_running++;
		la->t_mark = clock_monotonic_usec();
		launch_advance(la);
	}
	for (struct launch *q = l->queue_head; q; q = q->next_queued)
		queued++;
	metrics_gauge_set(l->m.queued, queued, NULL);
	metrics_gauge_set(l->m.inflight, l->n_running, NULL);
}

/* Our own processing time: from t_mark to now, added before each request. */
void launch_account_busy(struct launch *la)
{
	uint64_t now = clock_monotonic_usec();

	la->busy_usec += now - la->t_mark;
	la->t_mark = now;
}

void launch_resume(struct launch *la)
{
	la->busy = false;
	la->t_mark = clock_monotonic_usec();
}

/* The launch leaves the run slots (done or given up). */
void launch_finish(struct launch *la, bool keep_reservation)
{
	struct launcher *l = la->l;

	l->n_running--;
	la->step = STEP_DONE;
	launch_reached_batcher(la);
	if (keep_reservation) {
		/* Stays in the table, holding its capacity for the limits,
		 * until the replica shows the launched NodeClaim (reconcile.c). */
		la->finished_at = clock_monotonic_usec();
	} else {
		hashmap_remove(&l->launches, la->name);
		launch_free(la);
	}
	launcher_update_usage_metrics(l);
	launcher_pump(l);
}

void launch_event(struct launch *la, enum kube_event_kind kind, const char *reason,
		  const char *text)
{
	struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, la->name, la->uid };

	if (la->uid)
		kube_event_record(la->l->d->events, &ref, kind, reason, "%s", text);
}

static void on_claim_deleted(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	char *name = userdata;

	(void)c;
	if (resp->status >= 300 && resp->status != 404)
		log_warn_kv(LOG_KV({ "nodeclaim", name }),
			    "Failed to delete nodeclaim %s: %s (the reaper or the next start will)", name,
			    resp->error ?: "unknown error");
}

/*
 * Deletes a NodeClaim that never got an instance. Its termination
 * finalizer guards an instance; there is none, so the launcher, which put
 * it there, removes it in the same breath (nothing for the reaper to do).
 */
static void delete_unlaunched_claim(struct launcher *l, const char *name)
{
	char path[512];
	char *n1 = strdup(name), *n2 = strdup(name);

	if (!n1 || !n2) {
		free(n1);
		free(n2);
		return;
	}
	snprintf(path, sizeof(path), NODECLAIMS_PATH "/%s", name);
	(void)kube_request_owned(l->d->kube, false, "PATCH", path, MERGE_PATCH,
				 "{\"metadata\":{\"finalizers\":null}}", on_claim_deleted, n1);
	(void)kube_request_owned(l->d->kube, false, "DELETE", path, NULL, NULL, on_claim_deleted, n2);
}

/* Gives up: pods go back to the schedulers, the NodeClaim is removed. */
void launch_give_up(struct launch *la, enum proto_launch_outcome outcome, const char *why)
{
	struct launcher *l = la->l;
	const char *reason = outcome == PROTO_LAUNCH_INSUFFICIENT_CAPACITY ? "InsufficientCapacityError"
			     : outcome == PROTO_LAUNCH_NODECLASS_NOT_READY ? "NodeClassNotReady"
			     : outcome == PROTO_LAUNCH_LIMIT_EXCEEDED ? "LimitExceeded"
								       : "LaunchFailed";

	log_error_kv(LOG_KV({ "nodeclaim", la->name }, { "nodepool", la->planned->nodepool }),
		     "Failed to launch nodeclaim %s: %s; its %u pod(s) will be planned again", la->name,
		     why, la->planned->n_pods);
	launch_event(la, KUBE_EVENT_WARNING, reason, why);
	launcher_publish_result(l, la, outcome, why);
	metrics_counter_add(l->m.launch_failures, 1, la->planned->nodepool,
			    proto_enum_desc_launch_outcome.values[outcome], NULL);
	if (la->uid || la->claim_existed)
		delete_unlaunched_claim(l, la->name);
	launch_finish(la, false);
}

static int on_retry_timer(struct loop *loop, void *userdata)
{
	struct launch *la = userdata;

	(void)loop;
	sd_event_source_disable_unref(la->timer);
	la->timer = NULL;
	launch_resume(la);
	launch_advance(la);
	return 0;
}

int launch_retry_in(struct launch *la, uint64_t delay_usec)
{
	la->busy = true;
	return loop_add_timer(la->l->d->loop, delay_usec, on_retry_timer, la, &la->timer);
}

/* A step failed for a reason that may pass (API down, credentials, …). */
void launch_retry_later(struct launch *la, const char *what, const char *why)
{
	uint64_t delay = LAUNCH_BACKOFF_BASE_USEC << MIN(la->failures, 10u);

	if (la->deleted) {
		/* Nothing to retry for a deleted NodeClaim. */
		la->busy = false;
		launch_advance(la);
		return;
	}
	delay = MIN(delay, LAUNCH_BACKOFF_CAP_USEC);
	la->failures++;
	/* Once an instance exists, giving up would leak it: keep trying. */
	if (!*la->launched.instance_id && clock_monotonic_usec() + delay > la->deadline) {
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s: %s (gave up after launch-timeout)", what, why);
		launch_give_up(la, PROTO_LAUNCH_FAILED, msg);
		return;
	}
	log_warn_kv(LOG_KV({ "nodeclaim", la->name }),
		    "Failed to %s for nodeclaim %s: %s; retrying in %.1f s", what, la->name, why,
		    (double)delay / 1e6);
	if (la->failures == 1)
		launch_event(la, KUBE_EVENT_WARNING, "LaunchFailed", why);
	if (launch_retry_in(la, delay) < 0) {
		la->busy = false;
		launch_give_up(la, PROTO_LAUNCH_FAILED, "out of memory scheduling a retry");
	}
}

/* ---- create the NodeClaim ------------------------------------------------ */

static void on_claim_created(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct launch *la = userdata;
	const char *uid;

	(void)c;
	launch_resume(la);
	if (resp->status == 409 && streq_ptr(resp->reason, "AlreadyExists")) {
		/* A replayed plan or our own earlier try: the reconcile pass
		 * adopts the existing NodeClaim with its own UID. */
		log_info_kv(LOG_KV({ "nodeclaim", la->name }),
			    "nodeclaim %s already exists; leaving it to recovery", la->name);
		launch_finish(la, false);
		return;
	}
	if (resp->status < 200 || resp->status >= 300) {
		char why[512];

		snprintf(why, sizeof(why), "HTTP %ld: %s", resp->status, resp->error ?: "no detail");
		if (resp->status == 422 || resp->status == 400 || resp->status == 403)
			launch_give_up(la, PROTO_LAUNCH_FAILED, why);
		else
			launch_retry_later(la, "create the NodeClaim", why);
		return;
	}
	uid = json_string_value(json_object_get(json_object_get(resp->body, "metadata"), "uid"));
	if (!uid || !(la->uid = strdup(uid))) {
		launch_retry_later(la, "create the NodeClaim", "the API server returned no uid");
		return;
	}
	la->failures = 0;
	metrics_counter_add(la->l->m.nodeclaims_created, 1, la->planned->nodepool, NULL);
	log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "nodepool", la->planned->nodepool }),
		    "created nodeclaim %s for %u pod(s) with %u instance type option(s)", la->name,
		    la->planned->n_pods, la->planned->n_instance_types);
	la->step = STEP_RESOLVE;
	launch_advance(la);
}

static void launch_create_claim(struct launch *la)
{
	const struct state_store *st = launcher_store(la->l);
	const struct state_entry *pe = state_store_get(st, PROTO_OBJECT_NODEPOOL, "", la->planned->nodepool);
	const struct state_entry *ce;
	const char *ncname;
	json_t *body;
	char *text;
	int r;

	if (!pe) {
		launch_give_up(la, PROTO_LAUNCH_FAILED, "its NodePool no longer exists");
		return;
	}
	ncname = la->planned->nodeclass ?: pe->obj.nodepool->nodeclass_ref.name;
	ce = ncname ? state_store_get(st, PROTO_OBJECT_NODECLASS, "", ncname) : NULL;
	body = nodeclaim_json(la->planned, la->plan_id, pe->obj.nodepool, ce ? ce->obj.nodeclass : NULL);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text) {
		launch_give_up(la, PROTO_LAUNCH_FAILED, "out of memory building the NodeClaim");
		return;
	}
	launch_account_busy(la);
	la->busy = true;
	r = kube_request(la->l->d->kube, "POST", NODECLAIMS_PATH, NULL, text, on_claim_created, la);
	free(text);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "create the NodeClaim", strerror(-r));
	}
}

/* ---- resolve the EC2NodeClass ------------------------------------------- */

const char *launch_type_group(const char *type, void *userdata)
{
	static const char *const groups[][3] = {
		{ "amd64", "amd64/nvidia", "amd64/neuron" },
		{ "arm64", "arm64/nvidia", "arm64/neuron" },
	};
	struct launcher *l = userdata;
	const struct proto_instance_type *it = launcher_catalog_find(l->catalog, type);
	const char *arch = NULL;
	unsigned variant = 0;

	for (uint32_t i = 0; it && i < it->n_labels; i++) {
		const char *k = it->labels[i].key;

		if (streq(k, "kubernetes.io/arch"))
			arch = it->labels[i].value;
		/* aws/karpenter-provider-aws pkg/providers/amifamily/types.go:
		 * nvidia where instance-gpu-count exists, neuron where
		 * instance-accelerator-count does */
		else if (streq(k, "karpenter.k8s.aws/instance-gpu-count"))
			variant = 1;
		else if (streq(k, "karpenter.k8s.aws/instance-accelerator-count") && !variant)
			variant = 2;
	}
	if (streq_ptr(arch, "amd64") || streq_ptr(arch, "arm64"))
		return groups[streq(arch, "arm64")][variant];
	return arch;
}

/* "arm64/nvidia" → arch "arm64", variant "nvidia" (NULL: standard). */
static void launch_group_split(const char *group, char *arch, size_t size, const char **variant)
{
	const char *slash = strchr(group, '/');

	snprintf(arch, size, "%.*s", slash ? (int)(slash - group) : (int)strlen(group), group);
	*variant = slash ? slash + 1 : NULL;
}

static int launch_config_copy(struct launch_config *dst, const struct launch_config *src)
{
	*dst = (struct launch_config){ 0 };
	dst->launch_template_name = strdup(src->launch_template_name);
	dst->image_id = strdup(src->image_id ?: "");
	dst->subnets = calloc(src->n_subnets + 1, sizeof(*dst->subnets));
	dst->security_group_ids = calloc(src->n_security_groups + 1, sizeof(char *));
	if (!dst->launch_template_name || !dst->image_id || !dst->subnets || !dst->security_group_ids)
		return -ENOMEM;
	for (size_t i = 0; i < src->n_subnets; i++) {
		dst->subnets[i].id = strdup(src->subnets[i].id);
		dst->subnets[i].zone = strdup(src->subnets[i].zone ?: "");
		dst->n_subnets++;
		if (!dst->subnets[i].id || !dst->subnets[i].zone)
			return -ENOMEM;
	}
	for (size_t i = 0; i < src->n_security_groups; i++) {
		dst->security_group_ids[i] = strdup(src->security_group_ids[i]);
		dst->n_security_groups++;
		if (!dst->security_group_ids[i])
			return -ENOMEM;
	}
	return 0;
}

static void resolve_finished(struct launch *la)
{
	char why[1024] = "";
	unsigned ok = 0;

	for (unsigned i = 0; i < la->n_arches; i++) {
		if (la->arches[i].error == 0) {
			ok++;
			continue;
		}
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s: %s", *why ? "; " : "",
			 la->arches[i].arch, la->arches[i].why ?: strerror(-la->arches[i].error));
	}
	launch_resume(la);
	if (ok == 0) {
		char msg[1200];

		snprintf(msg, sizeof(msg), "EC2NodeClass not ready: %s", why);
		if (clock_monotonic_usec() + LAUNCH_BACKOFF_BASE_USEC > la->deadline)
			launch_give_up(la, PROTO_LAUNCH_NODECLASS_NOT_READY, msg);
		else
			launch_retry_later(la, "resolve the EC2NodeClass", msg);
		return;
	}
	/* A launcher before us may have launched for it: until find_instance
	 * has looked, a deletion must look too. */
	if (la->claim_existed)
		la->fleet_in_doubt = true;
	la->step = la->claim_existed ? STEP_FIND_INSTANCE : STEP_FLEET;
	launch_advance(la);
}

struct resolve_ctx {
	struct launch *la;
	unsigned arch;
};

static void on_launch_config(int error, const char *why, const struct launch_config *cfg,
			     void *userdata)
{
	struct resolve_ctx *ctx = userdata;
	struct launch *la = ctx->la;
	struct launch_arch *a = &la->arches[ctx->arch];

	free(ctx);
	if (la->l->stopping) { /* teardown: nothing more to do */
		la->n_resolving--;
		return;
	}
	a->error = error;
	if (error == 0 && launch_config_copy(&a->cfg, cfg) < 0)
		a->error = -ENOMEM;
	if (a->error && why)
		a->why = strdup(why);
	if (--la->n_resolving == 0)
		resolve_finished(la);
}

static void launch_resolve(struct launch *la)
{
	const struct state_store *st = launcher_store(la->l);
	const struct state_entry *pe = state_store_get(st, PROTO_OBJECT_NODEPOOL, "", la->planned->nodepool);
	const struct state_entry *ce;
	const char *ncname;
	unsigned n;

	if (!pe) {
		launch_give_up(la, PROTO_LAUNCH_FAILED, "its NodePool no longer exists");
		return;
	}
	ncname = la->planned->nodeclass ?: pe->obj.nodepool->nodeclass_ref.name;
	ce = ncname ? state_store_get(st, PROTO_OBJECT_NODECLASS, "", ncname) : NULL;
	if (!ce) {
		char why[512];

		snprintf(why, sizeof(why), "EC2NodeClass %s not found", ncname ?: "(none referenced)");
		launch_retry_later(la, "resolve the EC2NodeClass", why);
		return;
	}
	/* The launch groups the candidates span, in candidate order. */
	for (unsigned i = 0; i < la->n_arches; i++)
		launch_arch_clear(&la->arches[i]);
	la->n_arches = 0;
	for (uint32_t t = 0; t < la->planned->n_instance_types; t++) {
		const char *arch = launch_type_group(la->planned->instance_types[t].name, la->l) ?: "amd64";
		bool seen = false;

		for (unsigned i = 0; i < la->n_arches; i++)
			seen |= streq(la->arches[i].arch, arch);
		if (!seen && la->n_arches < LAUNCH_MAX_GROUPS)
			snprintf(la->arches[la->n_arches++].arch, sizeof(la->arches[0].arch), "%s", arch);
	}
	if (la->n_arches == 0) {
		launch_give_up(la, PROTO_LAUNCH_INSUFFICIENT_CAPACITY, "no instance type option is left");
		return;
	}
	launch_account_busy(la);
	la->busy = true;
	n = la->n_resolving = la->n_arches;
	/* done() may run before nodeclass_launch_config() returns and, for
	 * the last architecture, free la: touch only locals after it. */
	for (unsigned i = 0; i < n; i++) {
		struct launch_config_request req = { ce->obj.nodeclass, pe->obj.nodepool, NULL, NULL };
		struct resolve_ctx *ctx = malloc(sizeof(*ctx));
		char arch[16];
		int r;

		launch_group_split(la->arches[i].arch, arch, sizeof(arch), &req.variant);
		req.arch = arch;
		if (!ctx) {
			la->arches[i].error = -ENOMEM;
			if (--la->n_resolving == 0)
				resolve_finished(la);
			continue;
		}
		*ctx = (struct resolve_ctx){ la, i };
		r = nodeclass_launch_config(la->l->resolver, &req, on_launch_config, ctx);
		if (r < 0)
			on_launch_config(r, "could not start resolving", NULL, ctx);
	}
}

/* ---- launch templates ahead of the first launch ---------------------------------------------- */

static void on_prewarmed(int error, const char *why, const struct launch_config *cfg, void *userdata)
{
	char *nodepool = userdata; /* done() runs exactly once, also at teardown */

	(void)cfg;
	if (error && error != -ECANCELED)
		log_debug_kv(LOG_KV({ "nodepool", nodepool }),
			     "no launch template ahead of a launch for nodepool %s: %s", nodepool,
			     why ?: strerror(-error));
	free(nodepool);
}

/*
 * The launch templates a NodePool's first launches will want, created now
 * rather than between their NodeClaim's create and the CreateFleet (two
 * AWS round trips on the path of the first pods): one per architecture its
 * requirements allow, standard AMI variant (GPU and accelerator variants
 * are made by the launches that need them). A template already made is a
 * cache hit; one no launch uses is deleted by the resolver's collector
 * like any other.
 */
void launcher_prewarm_templates(struct launcher *l, const struct proto_nodepool *np)
{
	static const char *const arches[] = { "amd64", "arm64" };
	const struct state_entry *ce;

	if (!l->resolver || !np->nodeclass_ref.name)
		return;
	ce = state_store_get(launcher_store(l), PROTO_OBJECT_NODECLASS, "", np->nodeclass_ref.name);
	if (!ce)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(arches); i++) {
		struct launch_config_request req = { ce->obj.nodeclass, np, arches[i], NULL };
		char *name;

		if (!requirements_allow(np->requirements, np->n_requirements, "kubernetes.io/arch",
					arches[i]) ||
		    !(name = strdup(np->name)))
			continue;
		if (nodeclass_launch_config(l->resolver, &req, on_prewarmed, name) < 0)
			free(name);
	}
}

/* ---- the chain ----------------------------------------------------------------------------- */

/* Deleted, as daemon.c heard, or as the replica shows now (a snapshot
 * after a gap reports no deletes one by one). */
static bool claim_deleted(struct launch *la)
{
	const struct state_entry *e;

	if (la->deleted || !la->uid)
		return la->deleted;
	e = state_store_get(launcher_store(la->l), PROTO_OBJECT_NODECLAIM, "", la->name);
	if (e && e->obj.nodeclaim->deletion_time && streq_ptr(e->obj.nodeclaim->uid, la->uid))
		la->deleted = true;
	return la->deleted;
}

void launch_advance(struct launch *la)
{
	if (la->busy)
		return;
	if (la->step > STEP_FLEET) /* an instance found, or launched alone */
		launch_reached_batcher(la);
	if (la->step != STEP_DONE && claim_deleted(la)) {
		launch_reached_batcher(la);
		launch_undo(la);
		return;
	}
	switch (la->step) {
	case STEP_QUEUED:
		la->step = la->uid ? STEP_RESOLVE : STEP_CREATE_CLAIM;
		launch_advance(la);
		return;
	case STEP_CREATE_CLAIM:
		launch_create_claim(la);
		return;
	case STEP_RESOLVE:
		launch_resolve(la);
		return;
	case STEP_FIND_INSTANCE:
		launch_find_instance(la);
		return;
	case STEP_FLEET:
		launch_fleet(la);
		return;
	case STEP_DESCRIBE:
		launch_account_busy(la);
		la->busy = true;
		if (describe_batcher_add(la->l, la) < 0) {
			la->busy = false;
			launch_retry_later(la, "describe the launched instance", "out of memory");
		}
		return;
	case STEP_RECORD:
		launch_record(la);
		return;
	case STEP_NODE:
		launch_create_node(la);
		return;
	case STEP_BIND:
		launch_bind_pods(la);
		return;
	case STEP_DONE:
		return;
	}
}
