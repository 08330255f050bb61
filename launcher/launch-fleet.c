/*
 * The EC2 side of one NodeClaim's launch (launch.c drives the chain):
 * looking for an instance a crashed launcher already started, the
 * CreateFleet call (overrides, ClientToken, capacity errors marked
 * unavailable and pruned, retried at once with what is left) and the
 * DescribeInstances answer that completes the launched instance.
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
#include "state/state-store.h"
#include "launcher/catalog.h"
#include "launcher/fleet-request.h"
#include "launcher/fleet.h"
#include "launcher/launcher.h"
#include "launcher/objects.h"
#include "proto/schema.h"
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
	la->fleet_in_doubt = false; /* what it launched is adopted below, or nothing was */
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

void launch_find_instance(struct launch *la)
{
	describe_instances(la, NULL, on_find_instance);
}

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
				       .arches = fc->arches, .configs = fc->configs, .arch_of = launch_type_group,
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

/* No candidate is left to try: the launch has failed, at once rather than
 * at launch-timeout. The NodeClaim is deleted and the failure published,
 * and the schedulers hear again which offerings are gone (one that started
 * since would otherwise plan the same ones again), so that they plan the
 * pods with what they still have. */
void launch_no_candidate_left(struct launch *la)
{
	launcher_republish_unavailable(la->l, la->planned);
	launch_give_up(la, PROTO_LAUNCH_INSUFFICIENT_CAPACITY,
		       "all offerings of its instance types are unavailable or have no subnet in "
		       "their zone");
}

bool launch_fleet_refused(const struct aws_response *resp)
{
	return resp->result == -EREMOTEIO &&
	       aws_retry_classify(CURLE_OK, resp->http_status, resp->error.code) == AWS_RETRY_NONE;
}

/* Offerings left? Then hand the NodeClaim to the batcher, which sends it
 * alone or with identical ones (batch.c). */
void launch_fleet(struct launch *la)
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
		launch_no_candidate_left(la);
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
	if (la->deleted) {
		/* Deleted while queued or batched: not sent (launch-undo.c). */
		launch_advance(la);
		return;
	}
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
	if (r == -ENOENT) {
		launch_no_candidate_left(la);
		return;
	}
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
		     "processing since the plan", la->name, proto_capacity_type_name(ct), n_overrides, token,
		     (double)la->busy_usec / 1000.0);
	la->fleet_capacity_type = ct;
}

/* The zone of one of the launch's subnets (a reply's override names only
 * what the request sent). */
static const char *subnet_zone(const char *subnet_id, void *userdata)
{
	const struct launch *la = userdata;

	for (unsigned a = 0; a < la->n_arches; a++)
		for (size_t i = 0; i < la->arches[a].cfg.n_subnets; i++)
			if (streq_ptr(la->arches[a].cfg.subnets[i].id, subnet_id))
				return la->arches[a].cfg.subnets[i].zone;
	return NULL;
}

int launch_fleet_read(struct launch *la, const struct aws_response *resp, fleet_result *fr)
{
	int r = fleet_response_parse(resp->body, resp->body_len, fr);

	if (r >= 0 && (r = fleet_result_zones(fr, subnet_zone, la)) < 0)
		fleet_result_done(fr);
	return r;
}

bool launch_fleet_answer_unreadable(const struct aws_response *resp)
{
	return resp->result < 0 && resp->result != -EREMOTEIO && resp->http_status >= 200 &&
	       resp->http_status <= 299;
}

void launch_fleet_unreadable(struct launch *la)
{
	log_warn_kv(LOG_KV({ "nodeclaim", la->name }),
		    "Failed to read the CreateFleet answer for nodeclaim %s: it said 200 but the body "
		    "is not a CreateFleetResponse we can read; looking for an instance launched for it "
		    "before calling CreateFleet again", la->name);
	/* It may have launched: never a blind second CreateFleet. */
	la->fleet_in_doubt = true;
	la->step = STEP_FIND_INSTANCE;
	launch_advance(la);
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
	if (launch_fleet_answer_unreadable(resp)) {
		launch_fleet_unreadable(la);
		return;
	}
	if (resp->result < 0) {
		/* IdempotentParameterMismatch: an earlier try used this token
		 * with other overrides (before a crash, or its answer was lost
		 * and offerings were pruned since). It may have launched: look
		 * for the NodeClaim's instance before a new token is sent, or
		 * the next CreateFleet would launch a second one. */
		if (streq(resp->error.code, "IdempotentParameterMismatch")) {
			la->attempt++;
			la->step = STEP_FIND_INSTANCE;
			launch_advance(la);
			return;
		}
		/* Refused as a whole, nothing done under this token: the next
		 * request is built again from what is left by then, and a
		 * request that differs must not carry a token already used. */
		if (launch_fleet_refused(resp))
			la->attempt++;
		else
			la->fleet_in_doubt = true; /* it may have launched: the answer is lost */
		launch_retry_later(la, "launch an instance (CreateFleet)", aws_response_strerror(resp));
		return;
	}
	fr = malloc(sizeof(*fr));
	if (!fr || launch_fleet_read(la, resp, fr) < 0) {
		free(fr);
		launch_fleet_unreadable(la);
		return;
	}
	capacity_errors = launch_fleet_errors(la, fr, first_error, sizeof(first_error));
	if (fr->launched_ok) {
		la->launched = fr->launched;
		fleet_result_done(fr);
		free(fr);
		la->failures = 0;
		la->step = STEP_DESCRIBE;
		launch_advance(la);
		return;
	}
	fleet_result_done(fr);
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
	/* EC2 keeps this answer under the token and would replay it to a retry
	 * with the same one, even once the cause has passed. */
	la->attempt++;
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
