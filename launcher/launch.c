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
 * are handed back to the schedulers (a failed launch result).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"
#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/state-store.h"
#include "launcher/catalog.h"
#include "launcher/fleet-request.h"
#include "launcher/fleet.h"
#include "launcher/launcher.h"
#include "launcher/objects.h"
#include "proto/schema.h"
#include "scheduler/kubelet.h"

#define NODECLAIMS_PATH "/apis/karpenter.sh/v1/nodeclaims"
#define MERGE_PATCH "application/merge-patch+json"
/* Backoff of a step that failed for a reason other than capacity. */
#define LAUNCH_BACKOFF_BASE_USEC (2ULL * 1000 * 1000)
#define LAUNCH_BACKOFF_CAP_USEC (60ULL * 1000 * 1000)
/* Labels a Node and NodeClaim may carry (catalog ~25 + pool + well-known). */
#define LAUNCH_MAX_LABELS 96

void launch_advance(struct launch *la);

static const char *capacity_type_name(uint8_t ct)
{
	return ct == PROTO_CAPACITY_SPOT ? "spot" : ct == PROTO_CAPACITY_RESERVED ? "reserved"
										    : "on-demand";
}

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
	la->t_received = la->t_mark = now_usec();
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
	if (l->queue_tail)
		l->queue_tail->next_queued = la;
	else
		l->queue_head = la;
	l->queue_tail = la;
	launcher_pump(l);
	return 0;
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
		la->t_mark = now_usec();
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
	uint64_t now = now_usec();

	la->busy_usec += now - la->t_mark;
	la->t_mark = now;
}

void launch_resume(struct launch *la)
{
	la->busy = false;
	la->t_mark = now_usec();
}

/* The launch leaves the run slots (done or given up). */
static void launch_finish(struct launch *la, bool keep_reservation)
{
	struct launcher *l = la->l;

	l->n_running--;
	la->step = STEP_DONE;
	if (keep_reservation) {
		/* Stays in the table, holding its capacity for the limits,
		 * until the replica shows the launched NodeClaim (reconcile.c). */
		la->finished_at = now_usec();
	} else {
		hashmap_remove(&l->launches, la->name);
		launch_free(la);
	}
	launcher_update_usage_metrics(l);
	launcher_pump(l);
}

static void launch_event(struct launch *la, enum kube_event_kind kind, const char *reason,
			 const char *text)
{
	struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, la->name, la->uid };

	if (la->uid)
		kube_event_record(la->l->events, &ref, kind, reason, "%s", text);
}

static void on_claim_deleted(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	char *name = userdata;

	(void)c;
	if (resp->status >= 300 && resp->status != 404)
		log_warn_kv(LOG_KV({ "nodeclaim", name }),
			    "Failed to delete nodeclaim %s: %s (the reaper or the next start will)", name,
			    resp->error ?: "unknown error");
	free(name);
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
	if (kube_request(l->kube, "PATCH", path, MERGE_PATCH, "{\"metadata\":{\"finalizers\":null}}",
			 on_claim_deleted, n1) < 0)
		free(n1);
	if (kube_request(l->kube, "DELETE", path, NULL, NULL, on_claim_deleted, n2) < 0)
		free(n2);
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

/* A step failed for a reason that may pass (API down, credentials, …). */
void launch_retry_later(struct launch *la, const char *what, const char *why)
{
	uint64_t delay = LAUNCH_BACKOFF_BASE_USEC << MIN(la->failures, 10u);

	delay = MIN(delay, LAUNCH_BACKOFF_CAP_USEC);
	la->failures++;
	/* Once an instance exists, giving up would leak it: keep trying. */
	if (!*la->launched.instance_id && now_usec() + delay > la->deadline) {
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
	la->busy = true;
	if (loop_add_timer(la->l->loop, delay, on_retry_timer, la, &la->timer) < 0)
		launch_give_up(la, PROTO_LAUNCH_FAILED, "out of memory scheduling a retry");
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

static void step_create_claim(struct launch *la)
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
	r = kube_request(la->l->kube, "POST", NODECLAIMS_PATH, NULL, text, on_claim_created, la);
	free(text);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "create the NodeClaim", strerror(-r));
	}
}

/* ---- resolve the EC2NodeClass ------------------------------------------- */

const char *launch_type_arch(const char *type, void *userdata)
{
	struct launcher *l = userdata;
	const struct proto_instance_type *it = launcher_catalog_find(l->catalog, type);

	for (uint32_t i = 0; it && i < it->n_labels; i++)
		if (streq(it->labels[i].key, "kubernetes.io/arch"))
			return it->labels[i].value;
	return NULL;
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
		if (now_usec() + LAUNCH_BACKOFF_BASE_USEC > la->deadline)
			launch_give_up(la, PROTO_LAUNCH_NODECLASS_NOT_READY, msg);
		else
			launch_retry_later(la, "resolve the EC2NodeClass", msg);
		return;
	}
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
	a->error = error;
	if (error == 0 && launch_config_copy(&a->cfg, cfg) < 0)
		a->error = -ENOMEM;
	if (a->error && why)
		a->why = strdup(why);
	if (--la->n_resolving == 0)
		resolve_finished(la);
}

static void step_resolve(struct launch *la)
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
	/* The architectures the candidates span, in candidate order. */
	for (unsigned i = 0; i < la->n_arches; i++)
		launch_arch_clear(&la->arches[i]);
	la->n_arches = 0;
	for (uint32_t t = 0; t < la->planned->n_instance_types; t++) {
		const char *arch = launch_type_arch(la->planned->instance_types[t].name, la->l) ?: "amd64";
		bool seen = false;

		for (unsigned i = 0; i < la->n_arches; i++)
			seen |= streq(la->arches[i].arch, arch);
		if (!seen && la->n_arches < LAUNCH_MAX_ARCHES)
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
		struct launch_config_request req = { ce->obj.nodeclass, pe->obj.nodepool, la->arches[i].arch };
		struct resolve_ctx *ctx = malloc(sizeof(*ctx));
		int r;

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

/* ---- find an instance launched before a crash ---------------------------- */

int launch_adopt_instance(struct launch *la, const struct ec2_instance *e)
{
	fleet_launched *f = &la->launched;

	snprintf(f->instance_id, sizeof(f->instance_id), "%s", e->instance_id);
	snprintf(f->instance_type, sizeof(f->instance_type), "%s", e->instance_type);
	snprintf(f->zone, sizeof(f->zone), "%s", e->zone);
	snprintf(f->capacity_type, sizeof(f->capacity_type), "%s", e->spot ? "spot" : "on-demand");
	snprintf(la->image_id, sizeof(la->image_id), "%s", e->image_id);
	snprintf(la->node_name, sizeof(la->node_name), "%s", e->private_dns_name);
	return 0;
}

static void on_find_instance(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct launch *la = userdata;
	struct ec2_instance found[4];
	int n;

	(void)c;
	launch_resume(la);
	if (resp->result < 0) {
		launch_retry_later(la, "look for an instance of the NodeClaim", aws_response_strerror(resp));
		return;
	}
	n = ec2_instances_parse(resp->xml, found, ARRAY_SIZE(found));
	if (n < 0) {
		launch_retry_later(la, "look for an instance of the NodeClaim",
				   "DescribeInstances returned an unexpected document");
		return;
	}
	for (int i = 0; i < n; i++)
		if (streq(found[i].state, "pending") || streq(found[i].state, "running")) {
			log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "instance", found[i].instance_id }),
				    "found instance %s already launched for nodeclaim %s", found[i].instance_id,
				    la->name);
			launch_adopt_instance(la, &found[i]);
			la->step = STEP_RECORD;
			launch_advance(la);
			return;
		}
	if (*la->fleet_batch) {
		/* Launched with others: the instance may lack our tag yet. */
		launch_find_batched_instance(la);
		return;
	}
	la->step = STEP_FLEET;
	launch_advance(la);
}

static void describe_instances(struct launch *la, const char *instance_id, aws_done_fn done)
{
	struct aws_query *q = NULL;
	const char *states[] = { "pending", "running" };
	const char *name[] = { la->name };
	int r;

	if ((r = aws_query_new("DescribeInstances", "2016-11-15", &q)) >= 0) {
		if (instance_id)
			r = aws_query_add(q, instance_id, "InstanceId.1");
		else if ((r = aws_query_add_filter(q, 1, "tag:karpenter.sh/nodeclaim", name, 1)) >= 0)
			r = aws_query_add_filter(q, 2, "instance-state-name", states, 2);
	}
	if (r < 0) {
		aws_query_free(q);
		launch_retry_later(la, "describe instances", strerror(-r));
		return;
	}
	launch_account_busy(la);
	la->busy = true;
	r = aws_call_query(la->l->aws, "ec2", q, done, la);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "describe instances", strerror(-r));
	}
}

/* ---- CreateFleet --------------------------------------------------------- */

bool launch_offering_is_unavailable(const char *type, const char *zone, uint8_t ct, void *userdata)
{
	return launcher_offering_unavailable(userdata, type, zone, ct);
}

void on_fleet(struct aws_client *c, const struct aws_response *resp, void *userdata);

void launch_fleet_call(struct launch *la, struct fleet_call *fc, bool per_claim)
{
	struct launcher *l = la->l;
	const struct state_store *st = launcher_store(l);
	const struct state_entry *pe = state_store_get(st, PROTO_OBJECT_NODEPOOL, "", la->planned->nodepool);
	const char *ncname = la->planned->nodeclass ?: (pe ? pe->obj.nodepool->nodeclass_ref.name : NULL);
	const struct state_entry *ce = ncname ? state_store_get(st, PROTO_OBJECT_NODECLASS, "", ncname) : NULL;
	size_t n_tags = 0;

	*fc = (struct fleet_call){ 0 };
	fc->in = (struct fleet_input){ .client_token = fc->token, .planned = la->planned,
				       .arches = fc->arches, .configs = fc->configs, .arch_of = launch_type_arch,
				       .unavailable = launch_offering_is_unavailable, .userdata = l,
				       .tags = fc->tags };
	for (unsigned i = 0; i < la->n_arches; i++)
		if (la->arches[i].error == 0) {
			fc->arches[fc->in.n_configs] = la->arches[i].arch;
			fc->configs[fc->in.n_configs++] = la->arches[i].cfg;
		}
	snprintf(fc->cluster_tag, sizeof(fc->cluster_tag), "kubernetes.io/cluster/%s", l->cfg->cluster_name);
	fc->tags[n_tags++] = (struct fleet_tag){ fc->cluster_tag, "owned" };
	fc->tags[n_tags++] = (struct fleet_tag){ "karpenter.sh/nodepool", la->planned->nodepool };
	fc->tags[n_tags++] = (struct fleet_tag){ "karpenter.k8s.aws/ec2nodeclass", ncname ?: "" };
	fc->tags[n_tags++] = (struct fleet_tag){ "eks:eks-cluster-name", l->cfg->cluster_name };
	if (per_claim) {
		fc->tags[n_tags++] = (struct fleet_tag){ "karpenter.sh/nodeclaim", la->name };
		fc->tags[n_tags++] = (struct fleet_tag){ "Name", la->name };
	}
	for (uint32_t i = 0; ce && i < ce->obj.nodeclass->n_tags && n_tags < FLEET_CALL_MAX_TAGS - 1; i++) {
		const struct proto_kv *kv = &ce->obj.nodeclass->tags[i];

		/* Ours win: GC depends on them (DESIGN §2 rule 3). */
		if (startswith(kv->key, "karpenter.sh/") || startswith(kv->key, "kubernetes.io/cluster/") ||
		    startswith(kv->key, "karpenter.k8s.aws/") || startswith(kv->key, "kanna.dev/") ||
		    streq(kv->key, "Name"))
			continue;
		fc->tags[n_tags++] = (struct fleet_tag){ kv->key, kv->value };
	}
	fc->in.n_tags = n_tags;
}

/* Offerings left? Then hand the NodeClaim to the batcher, which sends it
 * alone or with identical ones (batch.c). */
static void step_fleet(struct launch *la)
{
	struct fleet_call fc;
	struct aws_query *q = NULL;
	size_t n_overrides;
	char *key = NULL;
	uint8_t ct;
	int r;

	launch_fleet_call(la, &fc, false);
	snprintf(fc.token, sizeof(fc.token), "-");
	r = fleet_query_build(&fc.in, &q, &ct, &n_overrides);
	if (r == -ENOENT) {
		launch_give_up(la, PROTO_LAUNCH_INSUFFICIENT_CAPACITY,
			       "all offerings of its instance types are unavailable or have no "
			       "subnet in their zone");
		return;
	}
	if (r >= 0) {
		r = aws_query_encode(q, &key);
		aws_query_free(q);
	}
	if (r >= 0)
		r = fleet_batcher_add(la->l, la, key);
	free(key);
	if (r < 0)
		launch_retry_later(la, "prepare the CreateFleet request", strerror(-r));
}

void launch_send_fleet(struct launch *la)
{
	struct launcher *l = la->l;
	struct fleet_call fc;
	struct aws_query *q = NULL;
	size_t n_overrides;
	uint8_t ct;
	int r;

	launch_resume(la);
	if (fleet_client_token(la->uid, la->attempt, fc.token, sizeof(fc.token)) < 0) {
		launch_give_up(la, PROTO_LAUNCH_FAILED, "the NodeClaim has no valid UID");
		return;
	}
	{
		char token[sizeof(fc.token)];

		memcpy(token, fc.token, sizeof(token));
		launch_fleet_call(la, &fc, true);
		memcpy(fc.token, token, sizeof(token));
	}
	r = fleet_query_build(&fc.in, &q, &ct, &n_overrides);
	if (r < 0) {
		launch_retry_later(la, "build the CreateFleet request", strerror(-r));
		return;
	}
	launch_note_fleet_sent(la, ct, n_overrides, fc.token);
	la->busy = true;
	r = aws_call_query(l->aws, "ec2", q, on_fleet, la);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "call CreateFleet", strerror(-r));
	}
}

void launch_note_fleet_sent(struct launch *la, uint8_t ct, size_t n_overrides, const char *token)
{
	struct launcher *l = la->l;

	launch_account_busy(la);
	if (la->attempt == 0 && !la->claim_existed)
		metrics_histogram_observe(l->m.plan_to_fleet, (double)la->busy_usec / 1e6, NULL);
	log_debug_kv(LOG_KV({ "nodeclaim", la->name }),
		     "CreateFleet for nodeclaim %s: %s, %zu override(s), token %s, %.3f ms of our "
		     "processing since the plan", la->name, capacity_type_name(ct), n_overrides, token,
		     (double)la->busy_usec / 1000.0);
	la->fleet_capacity_type = ct;
}

size_t launch_fleet_errors(struct launch *la, const fleet_result *fr, char *first, size_t size)
{
	size_t capacity_errors = 0;

	/* Capacity errors come per override, also next to a launch that
	 * succeeded with a later override: mark every one. */
	for (size_t i = 0; i < fr->n_errors; i++) {
		const fleet_error *e = &fr->errors[i];

		if (first && !*first)
			snprintf(first, size, "%s for %s in %s", e->code, e->instance_type, e->zone);
		if (!fleet_error_is_capacity(e->code) || !*e->instance_type || !*e->zone)
			continue;
		capacity_errors++;
		if (!launcher_offering_unavailable(la->l, e->instance_type, e->zone, la->fleet_capacity_type))
			launcher_mark_unavailable(la->l, e->instance_type, e->zone, la->fleet_capacity_type,
						  e->code);
		planned_remove_offering(la->planned, e->instance_type, e->zone, la->fleet_capacity_type);
	}
	return capacity_errors;
}

void on_fleet(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct launch *la = userdata;
	fleet_result *fr;
	size_t capacity_errors;
	char first_error[256] = "";

	(void)c;
	launch_resume(la);
	if (resp->result < 0) {
		/* IdempotentParameterMismatch: a try before a crash used this
		 * token with other overrides, and launched nothing (we looked). */
		if (streq(resp->error.code, "IdempotentParameterMismatch")) {
			la->attempt++;
			la->step = STEP_FLEET;
			launch_advance(la);
			return;
		}
		launch_retry_later(la, "launch an instance (CreateFleet)", aws_response_strerror(resp));
		return;
	}
	fr = malloc(sizeof(*fr));
	if (!fr || fleet_response_parse(resp->body, resp->body_len, fr) < 0) {
		free(fr);
		launch_retry_later(la, "launch an instance (CreateFleet)",
				   "the CreateFleet response could not be read");
		return;
	}
	capacity_errors = launch_fleet_errors(la, fr, first_error, sizeof(first_error));
	if (fr->launched_ok) {
		la->launched = fr->launched;
		free(fr);
		la->failures = 0;
		la->step = STEP_DESCRIBE;
		launch_advance(la);
		return;
	}
	free(fr);
	if (capacity_errors > 0) {
		size_t left = planned_count_offerings(la->planned, launch_offering_is_unavailable, la->l);

		log_warn_kv(LOG_KV({ "nodeclaim", la->name }),
			    "insufficient capacity for nodeclaim %s (%s); %zu offering(s) left to try",
			    la->name, first_error, left);
		if (left == 0) {
			char why[400];

			snprintf(why, sizeof(why), "insufficient capacity in every offering (%s)", first_error);
			launch_give_up(la, PROTO_LAUNCH_INSUFFICIENT_CAPACITY, why);
			return;
		}
		la->attempt++;
		la->step = STEP_FLEET;
		launch_advance(la);
		return;
	}
	launch_retry_later(la, "launch an instance (CreateFleet)",
			   *first_error ? first_error : "CreateFleet launched nothing and said why not");
}

/* ---- describe the launched instance ----------------------------------------- */

/* The DescribeInstances answer for this launch's instance (batch.c); e is
 * NULL when the instance was not in it, error set when the call failed. */
void launch_described(struct launch *la, const struct ec2_instance *e, const char *error)
{
	launch_resume(la);
	if (error) {
		launch_retry_later(la, "describe the launched instance", error);
		return;
	}
	if (!e || !*e->private_dns_name) {
		/* EC2 is eventually consistent: a new instance may not show yet. */
		launch_retry_later(la, "describe the launched instance",
				   "the instance is not visible in DescribeInstances yet");
		return;
	}
	if (streq(e->state, "terminated") || streq(e->state, "shutting-down")) {
		launch_give_up(la, PROTO_LAUNCH_FAILED, "the launched instance was terminated");
		return;
	}
	if (!*la->launched.instance_type)
		launch_adopt_instance(la, e);
	snprintf(la->image_id, sizeof(la->image_id), "%s", e->image_id);
	snprintf(la->node_name, sizeof(la->node_name), "%s", e->private_dns_name);
	if (!*la->launched.capacity_type)
		snprintf(la->launched.capacity_type, sizeof(la->launched.capacity_type), "%s",
			 e->spot ? "spot" : "on-demand");
	la->step = STEP_RECORD;
	launch_advance(la);
}

/* ---- record the launch on the NodeClaim ---------------------------------------- */

static void launched_instance_of(const struct launch *la, struct launched_instance *li)
{
	const struct state_store *st = launcher_store(la->l);
	const struct state_entry *pe = state_store_get(st, PROTO_OBJECT_NODEPOOL, "", la->planned->nodepool);
	const char *ncname = la->planned->nodeclass ?: (pe ? pe->obj.nodepool->nodeclass_ref.name : NULL);
	const struct state_entry *ce = ncname ? state_store_get(st, PROTO_OBJECT_NODECLASS, "", ncname) : NULL;

	*li = (struct launched_instance){
		.instance_id = la->launched.instance_id, .instance_type = la->launched.instance_type,
		.zone = la->launched.zone, .capacity_type = la->launched.capacity_type,
		.image_id = *la->image_id ? la->image_id : NULL, .node_name = la->node_name,
		.type = launcher_catalog_find(la->l->catalog, la->launched.instance_type),
		/* What the node holds under these, as the scheduler planned it. */
		.kubelet = kubelet_of(ce ? ce->obj.nodeclass : NULL, pe ? pe->obj.nodepool : NULL),
	};
}

static int launch_labels(const struct launch *la, node_label *out, size_t *n)
{
	const struct state_entry *pe = state_store_get(launcher_store(la->l), PROTO_OBJECT_NODEPOOL, "",
						       la->planned->nodepool);
	struct launched_instance li;
	struct proto_nodepool fallback = { .name = la->planned->nodepool };

	launched_instance_of(la, &li);
	return node_labels_collect(&li, pe ? pe->obj.nodepool : &fallback, la->planned->requirements,
				   la->planned->n_requirements, la->l->region, out, LAUNCH_MAX_LABELS, n);
}

static void on_status_recorded(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct launch *la = userdata;
	struct launcher *l = la->l;
	struct launched_instance li;

	(void)c;
	launch_resume(la);
	if (resp->status == 404) {
		/* Deleted under us: the instance is the reaper's to collect. */
		log_warn_kv(LOG_KV({ "nodeclaim", la->name }),
			    "nodeclaim %s was deleted while launching; instance %s is left to garbage "
			    "collection", la->name, la->launched.instance_id);
		launch_finish(la, false);
		return;
	}
	if (resp->status < 200 || resp->status >= 300) {
		launch_retry_later(la, "record the launch on the NodeClaim", resp->error ?: "HTTP error");
		return;
	}
	launched_instance_of(la, &li);
	log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "nodepool", la->planned->nodepool },
			   { "provider-id", la->launched.instance_id },
			   { "instance-type", la->launched.instance_type }, { "zone", la->launched.zone },
			   { "capacity-type", la->launched.capacity_type }),
		    "launched nodeclaim %s: instance %s, type %s, zone %s, capacity type %s", la->name,
		    la->launched.instance_id, la->launched.instance_type, la->launched.zone,
		    la->launched.capacity_type);
	kube_event_record(l->events,
			  &(struct kube_object_ref){ "karpenter.sh/v1", "NodeClaim", NULL, la->name, la->uid },
			  KUBE_EVENT_NORMAL, "Launched", "Launched instance: %s, type: %s, zone: %s, capacityType: %s",
			  la->launched.instance_id, la->launched.instance_type, la->launched.zone,
			  la->launched.capacity_type);
	metrics_counter_add(l->m.launched, 1, la->planned->nodepool, la->launched.capacity_type, NULL);
	launcher_publish_result(l, la, PROTO_LAUNCH_LAUNCHED, NULL);
	(void)li;
	la->step = STEP_NODE;
	launch_advance(la);
}

static void on_labels_recorded(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct launch *la = userdata;
	struct launched_instance li;
	char path[512], now[32], *text;
	json_t *status;
	int r;

	(void)c;
	launch_resume(la);
	if (resp->status == 404) {
		on_status_recorded(c, resp, la);
		return;
	}
	if (resp->status < 200 || resp->status >= 300) {
		launch_retry_later(la, "label the NodeClaim", resp->error ?: "HTTP error");
		return;
	}
	launched_instance_of(la, &li);
	rfc3339_now(now);
	status = nodeclaim_launched_status(&li, now);
	text = status ? json_dumps(status, JSON_COMPACT) : NULL;
	json_decref(status);
	if (!text) {
		launch_retry_later(la, "record the launch on the NodeClaim", "out of memory");
		return;
	}
	snprintf(path, sizeof(path), NODECLAIMS_PATH "/%s/status", la->name);
	launch_account_busy(la);
	la->busy = true;
	r = kube_request(la->l->kube, "PATCH", path, MERGE_PATCH, text, on_status_recorded, la);
	free(text);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "record the launch on the NodeClaim", strerror(-r));
	}
}

static void step_record(struct launch *la)
{
	node_label labels[LAUNCH_MAX_LABELS];
	size_t n;
	json_t *patch;
	char path[512], *text;
	int r;

	r = launch_labels(la, labels, &n);
	patch = r >= 0 ? nodeclaim_labels_patch(labels, n) : NULL;
	text = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
	json_decref(patch);
	if (!text) {
		launch_retry_later(la, "label the NodeClaim", r < 0 ? strerror(-r) : "out of memory");
		return;
	}
	snprintf(path, sizeof(path), NODECLAIMS_PATH "/%s", la->name);
	launch_account_busy(la);
	la->busy = true;
	r = kube_request(la->l->kube, "PATCH", path, MERGE_PATCH, text, on_labels_recorded, la);
	free(text);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "label the NodeClaim", strerror(-r));
	}
}

/* ---- create the Node ------------------------------------------------------------------ */

static json_t *launch_node_json(struct launch *la)
{
	const struct state_entry *pe = state_store_get(launcher_store(la->l), PROTO_OBJECT_NODEPOOL, "",
						       la->planned->nodepool);
	struct proto_nodeclaim claim = { .name = la->name, .uid = la->uid };
	node_label labels[LAUNCH_MAX_LABELS];
	struct launched_instance li;
	size_t n;

	if (launch_labels(la, labels, &n) < 0)
		return NULL;
	launched_instance_of(la, &li);
	return node_json(&li, &claim, pe ? pe->obj.nodepool : NULL, labels, n);
}

static void on_node_created(struct kube_client *c, const struct kube_response *resp, void *userdata);

static void on_node_patched(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct launch *la = userdata;

	(void)c;
	launch_resume(la);
	if (resp->status < 200 || resp->status >= 300) {
		launch_retry_later(la, "label the existing Node", resp->error ?: "HTTP error");
		return;
	}
	la->step = STEP_BIND;
	launch_advance(la);
}

static void on_node_created(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct launch *la = userdata;

	(void)c;
	launch_resume(la);
	if (resp->status == 409) {
		/* The kubelet registered first: give its Node our labels,
		 * taints and finalizer (a merge patch keeps its status). */
		json_t *node = launch_node_json(la), *patch;
		char path[512], *text = NULL;
		int r = -ENOMEM;

		if (node) {
			patch = json_pack("{s:O, s:O}", "metadata", json_object_get(node, "metadata"), "spec",
					  json_object_get(node, "spec"));
			json_object_del(json_object_get(patch, "metadata"), "name");
			text = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
			json_decref(patch);
			json_decref(node);
		}
		snprintf(path, sizeof(path), "/api/v1/nodes/%s", la->node_name);
		if (text) {
			la->busy = true;
			r = kube_request(la->l->kube, "PATCH", path, MERGE_PATCH, text, on_node_patched, la);
			free(text);
		}
		if (r < 0) {
			la->busy = false;
			launch_retry_later(la, "label the existing Node", strerror(-r));
		}
		return;
	}
	if (resp->status < 200 || resp->status >= 300) {
		launch_retry_later(la, "create the Node", resp->error ?: "HTTP error");
		return;
	}
	metrics_counter_add(la->l->m.nodes_created, 1, la->planned->nodepool, NULL);
	log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }),
		    "created node %s for nodeclaim %s", la->node_name, la->name);
	la->step = STEP_BIND;
	launch_advance(la);
}

static void step_node(struct launch *la)
{
	json_t *node = launch_node_json(la);
	char *text = node ? json_dumps(node, JSON_COMPACT) : NULL;
	int r;

	json_decref(node);
	if (!text) {
		launch_retry_later(la, "create the Node", "out of memory or too many labels");
		return;
	}
	la->busy = true;
	r = kube_request(la->l->kube, "POST", "/api/v1/nodes", NULL, text, on_node_created, la);
	free(text);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "create the Node", strerror(-r));
	}
}

/* ---- bind the planned pods -------------------------------------------------------------- */

static void binds_finished(struct launch *la)
{
	struct launcher *l = la->l;

	launch_resume(la);
	if (la->bound > 0) {
		log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }),
			    "bound %u pod(s) to node %s", la->bound, la->node_name);
		metrics_counter_add(l->m.pods_bound, la->bound, la->planned->nodepool, NULL);
	}
	launcher_publish_result(l, la, PROTO_LAUNCH_BOUND, NULL);
	if (la->needs_tag) {
		la->needs_tag = false;
		launcher_tag_instance(l, la->launched.instance_id, la->name);
	}
	metrics_histogram_observe(l->m.launch_seconds, (double)(now_usec() - la->t_received) / 1e6,
				  NULL);
	launch_finish(la, true);
}

static void on_bound(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct launch *la = userdata;

	(void)c;
	if (resp->status >= 200 && resp->status < 300)
		la->bound++;
	else if (resp->status != 409 && resp->status != 404)
		log_warn_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }),
			    "Failed to bind a pod to node %s: %s", la->node_name, resp->error ?: "HTTP error");
	if (--la->binds_outstanding == 0)
		binds_finished(la);
}

/* Still waiting for a node: pending, unbound, not being deleted. */
static bool pod_bindable(const struct state_store *st, const char *key, char *ns, size_t ns_size,
			 const char **name)
{
	const char *slash = strchr(key, '/');
	const struct state_entry *e;

	if (!slash || (size_t)(slash - key) >= ns_size)
		return false;
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = 0;
	*name = slash + 1;
	e = state_store_get(st, PROTO_OBJECT_POD, ns, *name);
	return e && !e->obj.pod->node_name && !e->obj.pod->deletion_time;
}

static void step_bind(struct launch *la)
{
	const struct state_store *st = launcher_store(la->l);

	la->bound = 0;
	la->binds_outstanding = 1; /* held while requests are issued */
	la->busy = true;
	for (uint32_t i = 0; la->l->cfg->bind_pods && i < la->planned->n_pods; i++) {
		char ns[256], path[700], *text;
		const char *name;
		json_t *b;
		int r;

		if (!pod_bindable(st, la->planned->pods[i], ns, sizeof(ns), &name))
			continue;
		b = binding_json(name, la->node_name);
		text = b ? json_dumps(b, JSON_COMPACT) : NULL;
		json_decref(b);
		if (!text)
			continue;
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", ns, name);
		la->binds_outstanding++;
		r = kube_request(la->l->kube, "POST", path, NULL, text, on_bound, la);
		free(text);
		if (r < 0)
			la->binds_outstanding--;
	}
	if (--la->binds_outstanding == 0)
		binds_finished(la);
}

/* ---- the chain ----------------------------------------------------------------------------- */

void launch_advance(struct launch *la)
{
	if (la->busy)
		return;
	switch (la->step) {
	case STEP_QUEUED:
		la->step = la->uid ? STEP_RESOLVE : STEP_CREATE_CLAIM;
		launch_advance(la);
		return;
	case STEP_CREATE_CLAIM:
		step_create_claim(la);
		return;
	case STEP_RESOLVE:
		step_resolve(la);
		return;
	case STEP_FIND_INSTANCE:
		describe_instances(la, NULL, on_find_instance);
		return;
	case STEP_FLEET:
		step_fleet(la);
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
		step_record(la);
		return;
	case STEP_NODE:
		step_node(la);
		return;
	case STEP_BIND:
		step_bind(la);
		return;
	case STEP_DONE:
		return;
	}
}
