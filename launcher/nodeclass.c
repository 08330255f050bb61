/*
 * The EC2NodeClass resolver: for each NodeClass the launcher sees (from its
 * replica, or first named by a launch) it resolves subnets and security
 * groups by selector terms, AMIs by alias (SSM public parameters) or by
 * selector terms (DescribeImages, newest per architecture) and the
 * instance profile of its role (IAM), all at once on the event loop; one
 * resolution per NodeClass is in flight and every launch asking meanwhile
 * waits for it. The result goes into the EC2NodeClass status (written only
 * when it changed) and a NodeClass that resolves to nothing gets Ready=False,
 * a precise message and an Event. Everything is re-resolved every
 * refresh_usec. Launch configs and templates: nodeclass-launch.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/util.h"
#include "launcher/nodeclass-internal.h"

enum call_kind {
	CALL_VERSION,
	CALL_SUBNETS,
	CALL_GROUPS,
	CALL_IMAGES,
	CALL_SSM,
	CALL_SSM_IMAGES,
	CALL_PROFILE_GET,
	CALL_PROFILE_CREATE,
	CALL_PROFILE_REMOVE_ROLE,
	CALL_PROFILE_ADD_ROLE,
	CALL_STATUS,
};

struct nc_call *nc_call_new(struct nodeclass_resolver *r, struct nc_entry *e, int kind)
{
	struct nc_call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	*c = (struct nc_call){ .next = r->calls, .r = r, .e = e, .gen = e ? e->gen : 0, .kind = kind };
	if (r->calls)
		r->calls->prev = c;
	r->calls = c;
	return c;
}

bool nc_call_end(struct nc_call *c)
{
	bool live = c->r && (!c->e || c->e->gen == c->gen);

	if (c->r) {
		if (c->prev)
			c->prev->next = c->next;
		else
			c->r->calls = c->next;
		if (c->next)
			c->next->prev = c->prev;
	}
	return live;
}

/* ---- spec identity ------------------------------------------------------------- */

static uint64_t mix(uint64_t h, const char *s)
{
	for (s = s ?: "\x01"; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return (h ^ 0xff) * 0x100000001b3ULL;
}

static uint64_t mix_int(uint64_t h, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return mix(h, buf);
}

static uint64_t mix_terms(uint64_t h, const struct proto_selector_term *t, uint32_t n)
{
	h = mix_int(h, n);
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < t[i].n_tags; k++)
			h = mix(mix(h, t[i].tags[k].key), t[i].tags[k].value);
		h = mix(mix(mix(mix(mix(mix(h, t[i].id), t[i].name), t[i].alias), t[i].owner),
			     t[i].ssm_parameter), "|");
	}
	return h;
}

/* Everything of the spec that changes what a resolution or launch produces. */
static uint64_t spec_hash(const struct proto_nodeclass *nc)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = mix(mix(mix(h, nc->ami_family), nc->role), nc->instance_profile);
	h = mix_terms(h, nc->ami_selector_terms, nc->n_ami_selector_terms);
	h = mix_terms(h, nc->subnet_selector_terms, nc->n_subnet_selector_terms);
	h = mix_terms(h, nc->security_group_selector_terms, nc->n_security_group_selector_terms);
	for (uint32_t i = 0; i < nc->n_tags; i++)
		h = mix(mix(h, nc->tags[i].key), nc->tags[i].value);
	/* the digest stands for the text (fetched in nodeclass-launch.c) */
	h = mix(mix(h, nc->user_data), nc->user_data_sha256);
	for (uint32_t i = 0; i < nc->n_block_devices; i++) {
		const struct proto_block_device *b = &nc->block_devices[i];

		h = mix(mix(mix(mix(h, b->device_name), b->volume_type), b->kms_key_id), b->snapshot_id);
		h = mix_int(mix_int(mix_int(h, b->volume_size_bytes), b->iops), b->throughput);
		h = mix_int(h, b->encrypted * 4 + b->delete_on_termination * 2 + b->root_volume);
	}
	h = mix(mix(mix(h, nc->metadata_options.http_endpoint), nc->metadata_options.http_tokens),
		nc->metadata_options.http_protocol_ipv6);
	h = mix_int(h, nc->metadata_options.http_put_response_hop_limit);
	h = mix_int(mix_int(h, nc->kubelet.max_pods), nc->kubelet.pods_per_core);
	h = mix_int(mix(h, nc->unsupported), nc->associate_public_ip_address);
	return mix_int(h, nc->detailed_monitoring);
}

/* ---- entries ------------------------------------------------------------------- */

static struct nc_entry *entry_find(struct nodeclass_resolver *r, const char *name)
{
	for (struct nc_entry *e = r->entries; e; e = e->next)
		if (streq(e->nc->name, name))
			return e;
	return NULL;
}

static void fail_waiters(struct nc_entry *e, int error, const char *why)
{
	struct nc_waiter *w;

	while ((w = e->waiters)) {
		e->waiters = w->next;
		w->done(error, why, NULL, w->userdata);
		nc_waiter_free(w);
	}
}

static void entry_free(struct nodeclass_resolver *r, struct nc_entry *e)
{
	for (struct nc_call *c = r->calls; c; c = c->next)
		if (c->e == e)
			c->e = NULL;
	fail_waiters(e, -ENOENT, "the EC2NodeClass was deleted");
	proto_nodeclass_free(e->nc);
	free(e->status_written);
	free(e->user_data);
	free(e);
}

/* Takes a copy of nc; a changed spec drops the old result. */
static int entry_update(struct nodeclass_resolver *r, const struct proto_nodeclass *nc, bool observed,
			struct nc_entry **ret)
{
	struct nc_entry *e = entry_find(r, nc->name);
	uint64_t h = spec_hash(nc);
	struct proto_nodeclass *copy = proto_nodeclass_dup(nc);

	if (!copy)
		return -ENOMEM;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			proto_nodeclass_free(copy);
			return -ENOMEM;
		}
		e->next = r->entries;
		r->entries = e;
	} else if (e->spec_hash != h) {
		/* a resolution of the old spec in flight is void */
		e->gen++;
		e->resolving = e->waiting_version = false;
		e->resolved = e->ever_ok = false;
	}
	proto_nodeclass_free(e->nc);
	e->nc = copy;
	e->spec_hash = h;
	e->observed |= observed;
	*ret = e;
	return 0;
}

/* ---- status and events ---------------------------------------------------------- */

static void on_status_written(struct kube_client *kc, const struct kube_response *resp, void *userdata)
{
	struct nc_call *c = userdata;

	(void)kc;
	if (!nc_call_end(c) || !c->e || (resp->status >= 200 && resp->status < 300)) {
		free(c);
		return;
	}
	/* A v1alpha5 class that is a Provisioner's inline provider has no
	 * AWSNodeTemplate to hold a status: nothing to retry. */
	if (resp->status == 404 && c->e->nc->source_api == PROTO_API_V1ALPHA5) {
		log_debug("no AWSNodeTemplate %s for its status (a Provisioner's provider)", c->arg);
	} else {
		log_warn("Failed to write the status of EC2NodeClass %s: %s", c->arg,
			    resp->error ?: "HTTP error");
		/* try again on the next change or refresh */
		free(c->e->status_written);
		c->e->status_written = NULL;
	}
	free(c);
}

/* The observed object's status already says what we resolved (a restart). */
static bool status_matches_object(const struct nc_entry *e)
{
	const struct proto_nodeclass *nc = e->nc;
	const struct nc_resolved *res = &e->res;

	if ((nc->ready == PROTO_COND_TRUE) != (e->error == 0) ||
	    (e->error && !streq_ptr(nc->ready_reason, e->why)) ||
	    nc->n_status_subnets != res->n_subnets || nc->n_status_security_groups != res->n_groups ||
	    nc->n_status_amis != res->n_images ||
	    !streq_ptr(nc->status_instance_profile ?: "", res->instance_profile))
		return false;
	for (size_t i = 0; i < res->n_subnets; i++)
		if (!streq_ptr(nc->status_subnets[i].id, res->subnets[i].id) ||
		    !streq_ptr(nc->status_subnets[i].zone, res->subnets[i].zone))
			return false;
	for (size_t i = 0; i < res->n_groups; i++)
		if (!streq_ptr(nc->status_security_groups[i].id, res->groups[i].id))
			return false;
	for (size_t i = 0; i < res->n_images; i++)
		if (!streq_ptr(nc->status_amis[i].id, res->images[i].id))
			return false;
	return true;
}

static void write_status(struct nodeclass_resolver *r, struct nc_entry *e)
{
	_cleanup_free_ char *text = NULL, *path = NULL, *compare = NULL;
	struct nc_condition_state untimed[_NC_COND_MAX];
	json_t *body, *untimed_body;
	struct nc_call *c;
	int k;

	/* Each version's own object and shape: a v1beta1 EC2NodeClass read
	 * where v1 is not served, an AWSNodeTemplate (a Provisioner's inline
	 * provider has none: the 404 is not retried, on_status_written). */
	if (!r->kube || !e->observed)
		return;
	/* what changed is compared without the transition times */
	memcpy(untimed, e->conds, sizeof(untimed));
	for (int i = 0; i < _NC_COND_MAX; i++)
		untimed[i].since = 0;
	untimed_body = nc_status_json_for(e->nc->source_api, &e->res, untimed, 0);
	compare = untimed_body ? json_dumps(untimed_body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(untimed_body);
	if (!compare)
		return;
	if (e->status_written ? streq(e->status_written, compare) : status_matches_object(e)) {
		if (!e->status_written)
			e->status_written = TAKE_PTR(compare);
		return;
	}
	body = nc_status_json_for(e->nc->source_api, &e->res, e->conds, e->ready_since);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	c = text ? nc_call_new(r, e, CALL_STATUS) : NULL;
	if (!c || nc_status_path(e->nc->source_api, e->nc->name, &path) < 0) {
		if (c) {
			nc_call_end(c);
			free(c);
		}
		return;
	}
	snprintf(c->arg, sizeof(c->arg), "%s", e->nc->name);
	k = kube_request(r->kube, "PATCH", path, "application/merge-patch+json", text, on_status_written, c);
	if (k < 0) {
		log_warn("Failed to write the status of EC2NodeClass %s: %s", e->nc->name, strerror(-k));
		nc_call_end(c);
		free(c);
		return;
	}
	free(e->status_written);
	e->status_written = TAKE_PTR(compare);
}

static void record_not_ready(struct nodeclass_resolver *r, struct nc_entry *e)
{
	enum proto_api_version api = e->nc->source_api;
	/* On the class's own object; a Provisioner's inline provider has
	 * none, its Event names an AWSNodeTemplate of the Provisioner's name. */
	struct kube_object_ref ref = {
		.api_version = api == PROTO_API_V1ALPHA5 ? "karpenter.k8s.aws/v1alpha1" :
			       api == PROTO_API_V1BETA1  ? "karpenter.k8s.aws/v1beta1" :
							   "karpenter.k8s.aws/v1",
		.kind = api == PROTO_API_V1ALPHA5 ? "AWSNodeTemplate" : "EC2NodeClass",
		.name = e->nc->name, .uid = e->nc->uid
	};

	log_warn("EC2NodeClass %s is not ready: %s", e->nc->name, e->why);
	if (r->events && e->observed)
		kube_event_record(r->events, &ref, KUBE_EVENT_WARNING, "NodeClassNotReady", "%s", e->why);
}

/* ---- finishing a resolution ------------------------------------------------------- */

/* What every launch of e would refuse, known before any: an amiFamily kanna
 * has no bootstrap for, or user data the family cannot merge. Karpenter
 * finds a bad userData only when CreateFleet's launch template is rendered
 * (aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap: NewArchive
 * errors fail each launch); kanna says it once, on the EC2NodeClass, so the
 * scheduler stops planning NodeClaims for it (model/from-state.c). */
static void validate_launch_inputs(struct nodeclass_resolver *r, struct nc_entry *e, char reason[48])
{
	const struct proto_nodeclass *nc = e->nc;
	_cleanup_free_ char *rendered = NULL;
	char why[USERDATA_WHY_MAX];
	struct userdata_options uo;
	const char *custom;
	enum ami_family f;
	int k;

	/* karpenter.k8s.aws/v1 dropped Ubuntu (its CRD's enum refuses it);
	 * v1beta1 and v1alpha5 objects may still name it */
	if (nc->ami_family && (ami_family_from_name(nc->ami_family, &f) < 0 ||
			       (f == AMI_FAMILY_UBUNTU && nc->source_api == PROTO_API_V1))) {
		snprintf(reason, 48, "AMIFamilyUnknown");
		snprintf(e->work_why[NC_COND_VALIDATION], 512,
			 "amiFamily %.64s is not one kanna bootstraps (AL2, AL2023, Bottlerocket, Custom, Windows2019, Windows2022, Windows2025%s)",
			 nc->ami_family, nc->source_api == PROTO_API_V1 ? "" : ", Ubuntu");
		return;
	}
	if (nc_user_data_of(e, &custom) < 0 || !custom)
		return; /* not fetched yet: finish() holds launches back anyway */
	/* the NodePool's labels and taints differ per launch and are ours, not
	 * the user's: only the user's part is judged here */
	uo = (struct userdata_options){
		.family = nc_family_of(nc), .cluster_name = r->cluster_name ?: "cluster",
		.cluster_endpoint = r->cluster_endpoint ?: "https://kubernetes.default.svc",
		.cluster_ca = r->cluster_ca, .service_cidr = r->service_cidr, .custom = custom,
	};
	*why = '\0';
	k = userdata_render(&uo, &rendered, why);
	if (k == -EINVAL || k == -E2BIG) {
		snprintf(reason, 48, "UserDataInvalid");
		snprintf(e->work_why[NC_COND_VALIDATION], 512, "spec.userData is refused for amiFamily %s: %s",
			 ami_family_name(uo.family), *why ? why : strerror(-k));
	}
}

static void finish(struct nodeclass_resolver *r, struct nc_entry *e)
{
	char terms[400], validation_reason[48] = "";
	bool was_ok = e->resolved && e->error == 0, user_data_missing = false;
	int64_t now = clock_realtime_ms();
	struct nc_waiter *w;

	e->resolving = false;
	e->work.n_images = 0;
	for (size_t i = 0; i < e->n_candidates && i < NC_MAX_IMAGES; i++)
		e->work.images[e->work.n_images++] = e->candidates[i];
	e->work.n_images = nc_images_newest_per_arch(e->work.images, e->work.n_images);
	snprintf(e->work.windows_build, sizeof(e->work.windows_build), "%s",
		 ami_family_windows_build(nc_family_of(e->nc)) ?: "");
	if (!e->work.n_subnets && !*e->work_why[NC_COND_SUBNETS]) {
		nc_terms_describe(e->nc->subnet_selector_terms, e->nc->n_subnet_selector_terms, terms,
				  sizeof(terms));
		snprintf(e->work_why[NC_COND_SUBNETS], 512, "no subnets match subnetSelectorTerms %s", terms);
	}
	if (!e->work.n_groups && !*e->work_why[NC_COND_SECURITY_GROUPS]) {
		nc_terms_describe(e->nc->security_group_selector_terms,
				  e->nc->n_security_group_selector_terms, terms, sizeof(terms));
		snprintf(e->work_why[NC_COND_SECURITY_GROUPS], 512,
			 "no security groups match securityGroupSelectorTerms %s", terms);
	}
	if (!e->work.n_images && !*e->work_why[NC_COND_AMIS]) {
		nc_terms_describe(e->nc->ami_selector_terms, e->nc->n_ami_selector_terms, terms, sizeof(terms));
		snprintf(e->work_why[NC_COND_AMIS], 512, "no AMIs match amiSelectorTerms %s%s%s",
			 e->nc->n_ami_selector_terms ? terms : "(none)",
			 r->k8s_version ? " for Kubernetes " : "", r->k8s_version ?: "");
	}
	/* a field kanna does not implement (decode/decode-nodeclass.c) */
	if (e->nc->unsupported && !*e->work_why[NC_COND_VALIDATION])
		snprintf(e->work_why[NC_COND_VALIDATION], 512, "%s", e->nc->unsupported);
	if (!*e->work_why[NC_COND_VALIDATION])
		validate_launch_inputs(r, e, validation_reason);
	if (!*e->work.instance_profile && !*e->work_why[NC_COND_INSTANCE_PROFILE])
		snprintf(e->work_why[NC_COND_INSTANCE_PROFILE], 512, "%s",
			 e->nc->source_api == PROTO_API_V1ALPHA5
				 ? "neither spec.provider.instanceProfile nor default-instance-profile is set"
				 : "neither spec.role nor spec.instanceProfile is set");
	/* An AWS outage must not throw away a good result: keep it until a
	 * later refresh gets through. */
	if (e->work_transient && e->ever_ok) {
		const char *first = "";

		for (int i = _NC_COND_MAX - 1; i >= 0; i--)
			first = *e->work_why[i] ? e->work_why[i] : first;
		log_warn("Failed to refresh EC2NodeClass %s, keeping the last resolution: %s",
			    e->nc->name, first);
		e->resolved_at = clock_monotonic_usec();
		e->served_usec = r->refresh_usec;
	} else {
		e->error = 0;
		*e->why = '\0';
		for (int i = 0; i < _NC_COND_MAX; i++) {
			bool ok = !*e->work_why[i];

			if (!e->resolved || e->conds[i].ok != ok || e->conds[i].since == 0)
				e->conds[i].since = now;
			e->conds[i].ok = ok;
			snprintf(e->conds[i].message, sizeof(e->conds[i].message), "%s", e->work_why[i]);
			snprintf(e->conds[i].reason, sizeof(e->conds[i].reason), "%s",
				 i == NC_COND_VALIDATION && !ok ? validation_reason : "");
			if (!ok && !e->error) {
				e->error = -ENOENT;
				snprintf(e->why, sizeof(e->why), "%s", e->work_why[i]);
			}
		}
		/* not ready for launches until the user data is here (logged
		 * where the fetch failed: a digest the object no longer has is
		 * the watcher's next delta on its way, not worth an Event) */
		if (!e->error && nc_user_data_of(e, &(const char *){ NULL }) < 0) {
			e->error = -EAGAIN;
			snprintf(e->why, sizeof(e->why), "%s", e->user_data_why);
			e->work_transient = user_data_missing = true;
		}
		if (!e->resolved || was_ok != (e->error == 0) || e->ready_since == 0)
			e->ready_since = now;
		e->res = e->work;
		e->resolved = true;
		e->ever_ok |= e->error == 0;
		e->resolved_at = clock_monotonic_usec();
		e->served_usec = e->error && e->work_transient ? MIN(NC_TRANSIENT_RETRY_USEC, r->refresh_usec)
							       : r->refresh_usec;
		if (e->error && !user_data_missing)
			record_not_ready(r, e);
		else if (!was_ok)
			log_info("EC2NodeClass %s resolved: %zu subnet(s), %zu security group(s), %zu AMI(s), instance profile %s",
				 e->nc->name, e->res.n_subnets, e->res.n_groups, e->res.n_images,
				 e->res.instance_profile);
		write_status(r, e);
	}
	while ((w = e->waiters)) {
		e->waiters = w->next;
		w->next = NULL;
		nc_serve(r, e, w);
	}
}

static void step_done(struct nodeclass_resolver *r, struct nc_entry *e)
{
	if (--e->pending == 0)
		finish(r, e);
}

void nc_step_done(struct nodeclass_resolver *r, struct nc_entry *e)
{
	step_done(r, e);
}

static void set_why(struct nc_entry *e, enum nc_condition c, bool transient, const char *fmt, ...)
	_printf_(4, 5);
static void set_why(struct nc_entry *e, enum nc_condition c, bool transient, const char *fmt, ...)
{
	va_list ap;

	if (*e->work_why[c])
		return;
	va_start(ap, fmt);
	vsnprintf(e->work_why[c], sizeof(e->work_why[c]), fmt, ap);
	va_end(ap);
	e->work_transient |= transient;
}

/* ---- the calls -------------------------------------------------------------------- */

static void on_aws(struct aws_client *client, const struct aws_response *resp, void *userdata);

static int call_query(struct nodeclass_resolver *r, struct nc_entry *e, int kind, const char *service,
		      struct aws_query *q, const char *arg)
{
	struct nc_call *c = nc_call_new(r, e, kind);
	int k;

	if (!c) {
		aws_query_free(q);
		return -ENOMEM;
	}
	snprintf(c->arg, sizeof(c->arg), "%s", arg ?: "");
	k = aws_call_query(r->aws, service, q, on_aws, c);
	if (k < 0) {
		nc_call_end(c);
		free(c);
		return k;
	}
	e->pending++;
	return 0;
}

static int call_ssm(struct nodeclass_resolver *r, struct nc_entry *e, const char *name, unsigned variants)
{
	struct nc_call *c = nc_call_new(r, e, CALL_SSM);
	json_t *body = json_pack("{s:s}", "Name", name);
	int k;

	if (!c || !body) {
		json_decref(body);
		if (c) {
			nc_call_end(c);
			free(c);
		}
		return -ENOMEM;
	}
	snprintf(c->arg, sizeof(c->arg), "%s", name);
	c->variants = variants;
	k = aws_call_json(r->aws, "ssm", "AmazonSSM.GetParameter", body, on_aws, c);
	if (k < 0) {
		nc_call_end(c);
		free(c);
		return k;
	}
	e->ssm_pending++;
	return 0;
}

static struct aws_query *iam_query(const char *action, const char *profile, const char *role)
{
	struct aws_query *q = NULL;

	if (aws_query_new(action, IAM_API_VERSION, &q) < 0)
		return NULL;
	if (aws_query_add(q, profile, "InstanceProfileName") < 0 ||
	    (role && aws_query_add(q, role, "RoleName") < 0)) {
		aws_query_free(q);
		return NULL;
	}
	return q;
}

static void start_profile_get(struct nodeclass_resolver *r, struct nc_entry *e)
{
	struct aws_query *q = iam_query("GetInstanceProfile", e->work.instance_profile, NULL);

	if (!q || call_query(r, e, CALL_PROFILE_GET, "iam", q, NULL) < 0) {
		set_why(e, NC_COND_INSTANCE_PROFILE, true, "Failed to call IAM GetInstanceProfile");
		*e->work.instance_profile = '\0';
	}
}

static int profile_create_query(struct nodeclass_resolver *r, struct nc_entry *e, const char *name,
				struct aws_query **ret)
{
	_cleanup_free_ char *cluster_tag = NULL;
	struct aws_query *q = iam_query("CreateInstanceProfile", name, NULL);
	const char *tags[][2] = {
		{ "karpenter.k8s.aws/ec2nodeclass", e->nc->name },
		{ "karpenter.sh/managed-by", r->cluster_name },
		{ NC_MANAGED_BY_TAG, r->cluster_name },
		{ "topology.kubernetes.io/region", aws_client_region(r->aws) },
		{ NULL, "owned" },
	};
	int k = q ? 0 : -ENOMEM;

	if (k >= 0 && asprintf(&cluster_tag, "kubernetes.io/cluster/%s", r->cluster_name) < 0)
		k = -ENOMEM;
	tags[4][0] = cluster_tag;
	for (unsigned i = 0; k >= 0 && i < ARRAY_SIZE(tags); i++) {
		k = aws_query_add(q, tags[i][0], "Tags.member.%u.Key", i + 1);
		if (k >= 0)
			k = aws_query_add(q, tags[i][1], "Tags.member.%u.Value", i + 1);
	}
	if (k < 0) {
		aws_query_free(q);
		return k;
	}
	*ret = q;
	return 0;
}

/* The next IAM step of role → instance profile, or the end of that phase. */
static void profile_next(struct nodeclass_resolver *r, struct nc_entry *e, int kind)
{
	const char *name = e->work.instance_profile;
	struct aws_query *q = NULL;
	int k;

	switch (kind) {
	case CALL_PROFILE_CREATE:
		k = profile_create_query(r, e, name, &q);
		break;
	case CALL_PROFILE_REMOVE_ROLE:
		q = iam_query("RemoveRoleFromInstanceProfile", name, e->profile_role);
		k = q ? 0 : -ENOMEM;
		break;
	default:
		q = iam_query("AddRoleToInstanceProfile", name, e->nc->role);
		k = q ? 0 : -ENOMEM;
	}
	if (k >= 0)
		k = call_query(r, e, kind, "iam", q, name);
	if (k < 0) {
		set_why(e, NC_COND_INSTANCE_PROFILE, true, "Failed to call IAM for instance profile %s: %s",
			name, strerror(-k));
		*e->work.instance_profile = '\0';
	}
}

static void on_profile(struct nodeclass_resolver *r, struct nc_entry *e, int kind,
		       const struct aws_response *resp)
{
	const char *code = resp->error.code;
	char role[NC_NAME_MAX];

	if (kind == CALL_PROFILE_GET && resp->result == -EREMOTEIO && streq(code, "NoSuchEntity")) {
		profile_next(r, e, CALL_PROFILE_CREATE);
		return;
	}
	/* IAM's answer to a role added to a profile that already holds one
	 * ("Roles in an instance profile: 1"): another resolution of this
	 * EC2NodeClass attached it between our GetInstanceProfile and this
	 * call. Read the profile again, once a pass: ours is fine, another
	 * role is swapped, as after the first Get. */
	if (kind == CALL_PROFILE_ADD_ROLE && resp->result == -EREMOTEIO && streq(code, "LimitExceeded") &&
	    !e->profile_rechecked) {
		e->profile_rechecked = true;
		start_profile_get(r, e);
		return;
	}
	if (resp->result < 0 && !(kind == CALL_PROFILE_CREATE && streq(code, "EntityAlreadyExists"))) {
		set_why(e, NC_COND_INSTANCE_PROFILE, resp->result != -EREMOTEIO || resp->http_status >= 500 ||
			aws_error_code_is_throttling(code),
			"Failed to %s instance profile %s for role %s: %s",
			kind == CALL_PROFILE_GET ? "get" : kind == CALL_PROFILE_CREATE ? "create" : "attach the role to",
			e->work.instance_profile, e->nc->role, aws_response_strerror(resp));
		*e->work.instance_profile = '\0';
		return;
	}
	switch (kind) {
	case CALL_PROFILE_GET:
		if (nc_instance_profile_role(resp->xml, role, sizeof(role)) < 0) {
			set_why(e, NC_COND_INSTANCE_PROFILE, true, "GetInstanceProfile answered no instance profile");
			*e->work.instance_profile = '\0';
		} else if (!*role) {
			profile_next(r, e, CALL_PROFILE_ADD_ROLE);
		} else if (!streq(role, e->nc->role)) {
			/* the NodeClass's role changed: swap it (one role per profile) */
			snprintf(e->profile_role, sizeof(e->profile_role), "%s", role);
			profile_next(r, e, CALL_PROFILE_REMOVE_ROLE);
		}
		break;
	case CALL_PROFILE_CREATE:
	case CALL_PROFILE_REMOVE_ROLE:
		profile_next(r, e, CALL_PROFILE_ADD_ROLE);
		break;
	default:
		log_info("Attached role %s to instance profile %s of EC2NodeClass %s", e->nc->role,
			 e->work.instance_profile, e->nc->name);
	}
}

static void start_ssm_images(struct nodeclass_resolver *r, struct nc_entry *e)
{
	const char *ids[NC_SSM_IDS_MAX];
	struct aws_query *q = NULL;
	int k;

	for (size_t i = 0; i < e->n_ssm_ids; i++)
		ids[i] = e->ssm_ids[i].id;
	k = nc_image_ids_query(ids, e->n_ssm_ids, &q);
	if (k >= 0)
		k = call_query(r, e, CALL_SSM_IMAGES, "ec2", q, NULL);
	if (k < 0)
		set_why(e, NC_COND_AMIS, true, "Failed to describe the AMIs of the aliases: %s", strerror(-k));
}

static void on_ssm(struct nodeclass_resolver *r, struct nc_entry *e, const char *name,
		   unsigned variants, const struct aws_response *resp)
{
	const char *id = json_string_value(json_object_get(json_object_get(resp->json, "Parameter"), "Value"));
	size_t i;

	if (resp->result == 0 && id && *id) {
		for (i = 0; i < e->n_ssm_ids && !streq(e->ssm_ids[i].id, id); i++)
			;
		if (i == e->n_ssm_ids && e->n_ssm_ids < NC_SSM_IDS_MAX) {
			snprintf(e->ssm_ids[i].id, NC_ID_MAX, "%s", id);
			e->ssm_ids[i].variants = variants;
			e->n_ssm_ids++;
		} else if (i < e->n_ssm_ids) {
			/* one image under two parameters serves both's types;
			 * named without a variant anywhere, it serves all */
			e->ssm_ids[i].variants = e->ssm_ids[i].variants && variants ?
						 e->ssm_ids[i].variants | variants : NC_VARIANTS_ANY;
		}
	} else if (resp->result == 0 || !streq(resp->error.code, "ParameterNotFound")) {
		set_why(e, NC_COND_AMIS, resp->result != 0 && !streq(resp->error.code, "ValidationException"),
			"Failed to get SSM parameter %s: %s", name,
			resp->result == 0 ? "no value" : aws_response_strerror(resp));
	}
	/* An alias has no image for some architectures (e.g. no pinned
	 * version): only when every parameter is missing is that an error. */
	if (--e->ssm_pending == 0) {
		if (e->n_ssm_ids)
			start_ssm_images(r, e);
		else
			set_why(e, NC_COND_AMIS, false, "no AMI found for the aliases and SSM parameters of amiSelectorTerms (last tried %s) for Kubernetes %s",
				name, r->k8s_version ?: "?");
		step_done(r, e); /* the SSM phase */
	}
}

static void on_aws(struct aws_client *client, const struct aws_response *resp, void *userdata)
{
	struct nc_call *c = userdata;
	struct nodeclass_resolver *r = c->r;
	struct nc_entry *e = c->e;
	bool transient = resp->result != -EREMOTEIO || resp->http_status >= 500 ||
			 aws_error_code_is_throttling(resp->error.code);
	int k = 0;

	(void)client;
	if (!nc_call_end(c) || !e) {
		free(c);
		return;
	}
	switch (c->kind) {
	case CALL_SUBNETS:
		if (resp->result < 0 || (k = nc_subnets_read(resp->xml, &e->work)) < 0)
			set_why(e, NC_COND_SUBNETS, resp->result < 0 ? transient : false, "Failed to describe subnets: %s",
				resp->result < 0 ? aws_response_strerror(resp) : strerror(-k));
		break;
	case CALL_GROUPS:
		if (resp->result < 0 || (k = nc_security_groups_read(resp->xml, &e->work)) < 0)
			set_why(e, NC_COND_SECURITY_GROUPS, resp->result < 0 ? transient : false,
				"Failed to describe security groups: %s",
				resp->result < 0 ? aws_response_strerror(resp) : strerror(-k));
		break;
	case CALL_IMAGES:
	case CALL_SSM_IMAGES: {
		size_t first = e->n_candidates;

		if (resp->result < 0 ||
		    (k = nc_images_read(resp->xml, e->candidates, NC_MAX_IMAGES, &e->n_candidates)) < 0)
			set_why(e, NC_COND_AMIS, resp->result < 0 ? transient : false, "Failed to describe images: %s",
				resp->result < 0 ? aws_response_strerror(resp) : strerror(-k));
		for (size_t i = first; c->kind == CALL_SSM_IMAGES && i < e->n_candidates; i++)
			for (size_t j = 0; j < e->n_ssm_ids; j++)
				if (streq(e->ssm_ids[j].id, e->candidates[i].id))
					e->candidates[i].variants = e->ssm_ids[j].variants;
		break;
	}
	case CALL_SSM:
		on_ssm(r, e, c->arg, c->variants, resp);
		free(c);
		return; /* counted by the SSM phase */
	default:
		on_profile(r, e, c->kind, resp);
	}
	free(c);
	step_done(r, e);
}

/* ---- starting a resolution -------------------------------------------------------- */

static void start_amis(struct nodeclass_resolver *r, struct nc_entry *e)
{
	const struct proto_nodeclass *nc = e->nc;
	struct nc_alias family_alias = { .version = "latest" };
	struct nc_alias_param params[NC_ALIAS_PARAMS_MAX];
	bool ssm_phase = false;
	int k;

	e->pending++; /* the AMI phase itself, so that finish() waits for SSM answers */
	if (nc->n_ami_selector_terms == 0) {
		enum ami_family f;

		if (ami_family_from_name(nc->ami_family, &f) < 0 || f == AMI_FAMILY_CUSTOM) {
			set_why(e, NC_COND_AMIS, false, "amiSelectorTerms are required for amiFamily %s",
				nc->ami_family ?: "(unset)");
			step_done(r, e);
			return;
		}
		family_alias.family = f;
	}
	for (uint32_t i = 0; i <= nc->n_ami_selector_terms; i++) {
		const struct proto_selector_term *t = i < nc->n_ami_selector_terms ? &nc->ami_selector_terms[i] : NULL;
		struct nc_alias alias;
		struct aws_query *q = NULL;

		if (!t && nc->n_ami_selector_terms)
			break;
		if (!t || t->alias) {
			if (t && nc_alias_parse(t->alias, &alias) < 0) {
				set_why(e, NC_COND_AMIS, false,
					"alias %s: the families are al2, al2023, bottlerocket, windows2019, windows2022 and windows2025 (windows only @latest)",
					t->alias);
				continue;
			}
			if (!t)
				alias = family_alias;
			k = nc_alias_ssm_params(&alias, r->k8s_version, params);
			if (k < 0)
				set_why(e, NC_COND_AMIS, false, "Failed to name the SSM parameters of %s: %s",
					t ? t->alias : ami_family_name(alias.family), strerror(-k));
			for (int p = 0; p < k; p++)
				if (call_ssm(r, e, params[p].name, params[p].variants) >= 0)
					ssm_phase = true;
		} else if (t->ssm_parameter) {
			if (call_ssm(r, e, t->ssm_parameter, NC_VARIANTS_ANY) >= 0)
				ssm_phase = true;
		} else {
			k = nc_image_query(t, &q);
			if (k >= 0)
				k = call_query(r, e, CALL_IMAGES, "ec2", q, NULL);
			if (k < 0)
				set_why(e, NC_COND_AMIS, k != -EINVAL, "Failed to describe the images of amiSelectorTerms[%u]: %s",
					i, strerror(-k));
		}
	}
	if (!ssm_phase)
		step_done(r, e);
}

static void start_terms(struct nodeclass_resolver *r, struct nc_entry *e, bool subnets)
{
	const struct proto_selector_term *t = subnets ? e->nc->subnet_selector_terms
						     : e->nc->security_group_selector_terms;
	uint32_t n = subnets ? e->nc->n_subnet_selector_terms : e->nc->n_security_group_selector_terms;

	for (uint32_t i = 0; i < n; i++) {
		struct aws_query *q = NULL;
		int k = subnets ? nc_subnet_query(&t[i], &q) : nc_security_group_query(&t[i], &q);

		if (k >= 0)
			k = call_query(r, e, subnets ? CALL_SUBNETS : CALL_GROUPS, "ec2", q, NULL);
		if (k < 0)
			set_why(e, subnets ? NC_COND_SUBNETS : NC_COND_SECURITY_GROUPS, k != -EINVAL,
				"Failed to describe the %s of term %u: %s", subnets ? "subnets" : "security groups",
				i, strerror(-k));
	}
}

static void start_profile(struct nodeclass_resolver *r, struct nc_entry *e)
{
	/* Karpenter v0.31: spec.provider.instanceProfile, else the global
	 * aws.defaultInstanceProfile (here default-instance-profile). */
	const char *profile = e->nc->instance_profile ?:
			      e->nc->source_api == PROTO_API_V1ALPHA5 ? r->default_instance_profile : NULL;

	if (profile) {
		snprintf(e->work.instance_profile, sizeof(e->work.instance_profile), "%s", profile);
		return;
	}
	if (!e->nc->role)
		return; /* finish() says why */
	nc_instance_profile_name(r->cluster_name, aws_client_region(r->aws), e->nc->name,
				 e->work.instance_profile);
	e->profile_rechecked = false;
	start_profile_get(r, e);
}

static bool needs_version(const struct proto_nodeclass *nc)
{
	if (nc->n_ami_selector_terms == 0)
		return true;
	for (uint32_t i = 0; i < nc->n_ami_selector_terms; i++)
		if (nc->ami_selector_terms[i].alias)
			return true;
	return false;
}

static void request_version(struct nodeclass_resolver *r);

static void start_resolve(struct nodeclass_resolver *r, struct nc_entry *e)
{
	if (e->resolving)
		return;
	e->gen++;
	e->resolving = true;
	e->waiting_version = false;
	e->pending = 1; /* held until every call is out */
	e->ssm_pending = 0;
	e->work = (struct nc_resolved){ .n_subnets = 0 };
	e->n_candidates = e->n_ssm_ids = 0;
	e->work_transient = false;
	memset(e->work_why, 0, sizeof(e->work_why));
	if (needs_version(e->nc) && !r->k8s_version) {
		if (r->kube) {
			e->waiting_version = true;
			request_version(r);
			return;
		}
		set_why(e, NC_COND_AMIS, false, "the Kubernetes version is unknown, so AMI aliases cannot be resolved");
	}
	start_terms(r, e, true);
	start_terms(r, e, false);
	if (!*e->work_why[NC_COND_AMIS])
		start_amis(r, e);
	start_profile(r, e);
	nc_user_data_fetch(r, e);
	step_done(r, e);
}

static void on_version(struct kube_client *kc, const struct kube_response *resp, void *userdata)
{
	struct nc_call *c = userdata;
	struct nodeclass_resolver *r = c->r;
	const char *major = json_string_value(json_object_get(resp->body, "major"));
	const char *minor = json_string_value(json_object_get(resp->body, "minor"));

	(void)kc;
	if (!nc_call_end(c)) {
		free(c);
		return;
	}
	free(c);
	r->version_pending = false;
	/* EKS answers minor "32+": the digits are the version */
	if (resp->status == 200 && major && minor && atoi(minor) > 0 &&
	    asprintf(&r->k8s_version, "%d.%d", atoi(major), atoi(minor)) < 0)
		r->k8s_version = NULL;
	if (!r->k8s_version)
		log_warn("Failed to read the Kubernetes version from the API server: %s",
			    resp->error ?: "no major/minor in /version");
	for (struct nc_entry *e = r->entries; e; e = e->next) {
		if (!e->waiting_version)
			continue;
		e->resolving = false;
		if (r->k8s_version) {
			start_resolve(r, e);
		} else {
			e->resolving = true;
			e->waiting_version = false;
			set_why(e, NC_COND_AMIS, true, "Failed to read the Kubernetes version from the API server: %s",
				resp->error ?: "no version");
			start_terms(r, e, true);
			start_terms(r, e, false);
			start_profile(r, e);
			nc_user_data_fetch(r, e);
			step_done(r, e);
		}
	}
}

static void request_version(struct nodeclass_resolver *r)
{
	struct nc_call *c;

	if (r->version_pending)
		return;
	c = nc_call_new(r, NULL, CALL_VERSION);
	if (!c)
		return;
	r->version_pending = true;
	if (kube_request(r->kube, "GET", "/version", NULL, NULL, on_version, c) < 0) {
		r->version_pending = false;
		nc_call_end(c);
		free(c);
	}
}

/* ---- the public interface --------------------------------------------------------------- */

static int on_refresh(struct loop *loop, void *userdata)
{
	struct nodeclass_resolver *r = userdata;

	(void)loop;
	for (struct nc_entry *e = r->entries; e; e = e->next)
		if (e->observed)
			start_resolve(r, e);
	nc_templates_gc(r);
	return 0;
}

static int dup_opt(const char *s, char **ret)
{
	*ret = NULL;
	return !s || (*ret = strdup(s)) ? 0 : -ENOMEM;
}

int nodeclass_resolver_new(struct loop *loop, struct aws_client *aws, struct kube_client *kube,
			   struct kube_events *events, struct metrics_registry *metrics,
			   const struct nodeclass_resolver_options *opts, struct nodeclass_resolver **ret)
{
	static unsigned instances;
	struct nodeclass_resolver *r;
	int k;

	(void)metrics;
	if (!loop || !aws || !opts || !ret || !opts->cluster_name || !opts->cluster_endpoint)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (struct nodeclass_resolver){ .loop = loop, .aws = aws, .kube = kube, .events = events,
					  .refresh_usec = opts->refresh_usec ?: NC_DEFAULT_REFRESH_USEC };
	k = dup_opt(opts->cluster_name, &r->cluster_name);
	if (k >= 0)
		k = dup_opt(opts->cluster_endpoint, &r->cluster_endpoint);
	if (k >= 0)
		k = dup_opt(opts->cluster_ca, &r->cluster_ca);
	if (k >= 0)
		k = dup_opt(opts->cluster_dns, &r->cluster_dns);
	if (k >= 0)
		k = dup_opt(opts->service_cidr, &r->service_cidr);
	if (k >= 0)
		k = dup_opt(opts->kubernetes_version, &r->k8s_version);
	if (k >= 0)
		k = dup_opt(opts->default_instance_profile, &r->default_instance_profile);
	snprintf(r->periodic_name, sizeof(r->periodic_name), "nodeclass-refresh-%u", instances++);
	if (k >= 0)
		k = loop_add_periodic(loop, r->periodic_name, r->refresh_usec, on_refresh, r);
	if (k < 0) {
		*r->periodic_name = '\0';
		nodeclass_resolver_free(r);
		return k;
	}
	*ret = r;
	return 0;
}

void nodeclass_resolver_free(struct nodeclass_resolver *r)
{
	if (!r)
		return;
	if (*r->periodic_name)
		loop_remove_periodic(r->loop, r->periodic_name);
	/* the clients, freed next, cancel these without calling back */
	while (r->calls) {
		struct nc_call *c = r->calls;

		r->calls = c->next;
		free(c);
	}
	while (r->entries) {
		struct nc_entry *e = r->entries;

		r->entries = e->next;
		fail_waiters(e, -ECANCELED, "the launcher is stopping");
		proto_nodeclass_free(e->nc);
		free(e->status_written);
		free(e->user_data);
		free(e);
	}
	nc_templates_free(r);
	free(r->cluster_name);
	free(r->cluster_endpoint);
	free(r->cluster_ca);
	free(r->cluster_dns);
	free(r->service_cidr);
	free(r->default_instance_profile);
	free(r->k8s_version);
	free(r);
}

void nodeclass_resolver_observe(struct nodeclass_resolver *r, const struct proto_nodeclass *nc)
{
	struct nc_entry *e;
	bool changed;
	uint64_t before;

	if (!r || !nc || !nc->name)
		return;
	e = entry_find(r, nc->name);
	before = e ? e->spec_hash : 0;
	if (entry_update(r, nc, true, &e) < 0) {
		log_error("Failed to track EC2NodeClass %s: out of memory", nc->name);
		return;
	}
	changed = !e->resolved || before != e->spec_hash;
	/* our own status write comes back as an update: nothing to redo */
	if (changed)
		start_resolve(r, e);
}

void nodeclass_resolver_forget(struct nodeclass_resolver *r, const char *name)
{
	for (struct nc_entry **p = r ? &r->entries : NULL; p && *p; p = &(*p)->next)
		if (streq((*p)->nc->name, name)) {
			struct nc_entry *e = *p;

			*p = e->next;
			entry_free(r, e);
			return;
		}
}

int nodeclass_launch_config(struct nodeclass_resolver *r, const struct launch_config_request *req,
			    launch_config_done_fn done, void *userdata)
{
	struct nc_waiter *w;
	struct nc_entry *e;
	int k;

	if (!r || !req || !req->nodeclass || !req->nodepool || !req->arch || !done)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->nodepool = proto_nodepool_dup(req->nodepool);
	if (!w->nodepool) {
		free(w);
		return -ENOMEM;
	}
	snprintf(w->arch, sizeof(w->arch), "%s", req->arch);
	w->variant = nc_variant_from_name(req->variant) ?: NC_VARIANT_STANDARD;
	w->done = done;
	w->userdata = userdata;
	e = entry_find(r, req->nodeclass->name);
	if (!e || e->spec_hash != spec_hash(req->nodeclass)) {
		k = entry_update(r, req->nodeclass, false, &e);
		if (k < 0) {
			nc_waiter_free(w);
			return k;
		}
	}
	if (e->resolved && !e->resolving && clock_monotonic_usec() - e->resolved_at < e->served_usec) {
		nc_serve(r, e, w);
		return 0;
	}
	w->next = e->waiters;
	e->waiters = w;
	start_resolve(r, e);
	return 0;
}
