/*
 * Launch configs from a resolved EC2NodeClass: the AMI of the requested
 * architecture, the user data of the NodePool (labels, taints, kubelet)
 * merged with the family's bootstrap, and the launch template holding it
 * all, named by its hash. Templates are cached by name; a miss looks the
 * name up (DescribeLaunchTemplates) and creates it when absent ("already
 * exists" is success: another launch or process won the race); requests for
 * a template being created wait for it. Each refresh deletes kanna's
 * templates no launch used for longer than the refresh period.
 * The text of spec.userData is not on the state feed (only its SHA-256):
 * it is fetched from the API server here and cached by digest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "common/clock.h"
#include "common/kube-client.h"
#include "common/log.h"
#include "common/util.h"
#include "launcher/nodeclass-internal.h"
#include "launcher/objects.h"
#include "model/kubelet.h"

enum { CALL_LT_DESCRIBE = 100, CALL_LT_CREATE, CALL_LT_LIST, CALL_LT_DELETE, CALL_USER_DATA,
       CALL_USER_DATA_PROVISIONER };

/* Templates per DescribeLaunchTemplates page of the garbage collector. */
#define GC_PAGE 200

void nc_launch_config_clear(struct launch_config *cfg)
{
	free(cfg->launch_template_name);
	free(cfg->image_id);
	for (size_t i = 0; i < cfg->n_subnets; i++) {
		free((char *)cfg->subnets[i].id);
		free((char *)cfg->subnets[i].zone);
	}
	free(cfg->subnets);
	for (size_t i = 0; i < cfg->n_security_groups; i++)
		free(cfg->security_group_ids[i]);
	free(cfg->security_group_ids);
	*cfg = (struct launch_config){ 0 };
}

void nc_waiter_free(struct nc_waiter *w)
{
	if (!w)
		return;
	proto_nodepool_free(w->nodepool);
	nc_launch_config_clear(&w->cfg);
	free(w);
}

static void finish_waiter(struct nc_waiter *w, int error, const char *why)
{
	w->done(error, why, error ? NULL : &w->cfg, w->userdata);
	nc_waiter_free(w);
}

static int config_build(struct launch_config *cfg, const char *name, const struct nc_image *im,
			const struct nc_resolved *res)
{
	cfg->launch_template_name = strdup(name);
	cfg->image_id = strdup(im->id);
	cfg->subnets = calloc(res->n_subnets + 1, sizeof(*cfg->subnets));
	cfg->security_group_ids = calloc(res->n_groups + 1, sizeof(char *));
	if (!cfg->launch_template_name || !cfg->image_id || !cfg->subnets || !cfg->security_group_ids)
		return -ENOMEM;
	for (size_t i = 0; i < res->n_subnets; i++) {
		cfg->subnets[i].id = strdup(res->subnets[i].id);
		cfg->subnets[i].zone = strdup(res->subnets[i].zone);
		cfg->n_subnets++;
		if (!cfg->subnets[i].id || !cfg->subnets[i].zone)
			return -ENOMEM;
	}
	for (size_t i = 0; i < res->n_groups; i++) {
		cfg->security_group_ids[i] = strdup(res->groups[i].id);
		cfg->n_security_groups++;
		if (!cfg->security_group_ids[i])
			return -ENOMEM;
	}
	return 0;
}

/* The bootstrap family: amiFamily, else the first alias's, else Custom
 * (an AMI chosen by id or name without a family gets its userData as is). */
enum ami_family nc_family_of(const struct proto_nodeclass *nc)
{
	enum ami_family f = AMI_FAMILY_CUSTOM;
	struct nc_alias a;

	if (ami_family_from_name(nc->ami_family, &f) == 0)
		return f;
	for (uint32_t i = 0; i < nc->n_ami_selector_terms; i++)
		if (nc->ami_selector_terms[i].alias && nc_alias_parse(nc->ami_selector_terms[i].alias, &a) == 0)
			return a.family;
	return AMI_FAMILY_CUSTOM;
}

/* Labels of the node: the NodePool's plus karpenter.sh/nodepool; taints:
 * taints plus startupTaints plus karpenter.sh/unregistered:NoExecute,
 * which the kubelet registers with (as Karpenter's AMI families do, so
 * that nothing lands on a Node before the launcher has labelled it; the
 * launcher puts its NoSchedule hold in its place, objects.h). */
static int node_settings(const struct proto_nodepool *np, struct proto_kv **labels, size_t *n_labels,
			 struct proto_taint **taints, size_t *n_taints)
{
	*labels = calloc(np->n_labels + 1, sizeof(**labels));
	*taints = calloc(np->n_taints + np->n_startup_taints + 2, sizeof(**taints));
	if (!*labels || !*taints)
		return -ENOMEM;
	*n_labels = *n_taints = 0;
	for (uint32_t i = 0; i < np->n_labels; i++)
		if (!streq(np->labels[i].key, "karpenter.sh/nodepool"))
			(*labels)[(*n_labels)++] = np->labels[i];
	(*labels)[(*n_labels)++] = (struct proto_kv){ "karpenter.sh/nodepool", np->name };
	for (uint32_t i = 0; i < np->n_taints; i++)
		(*taints)[(*n_taints)++] = np->taints[i];
	for (uint32_t i = 0; i < np->n_startup_taints; i++)
		(*taints)[(*n_taints)++] = np->startup_taints[i];
	for (size_t i = 0; i < *n_taints; i++)
		if (streq((*taints)[i].key, KARPENTER_UNREGISTERED_TAINT_KEY) &&
		    (*taints)[i].effect == PROTO_EFFECT_NO_EXECUTE)
			return 0;
	(*taints)[(*n_taints)++] = (struct proto_taint){ .key = KARPENTER_UNREGISTERED_TAINT_KEY,
							 .effect = PROTO_EFFECT_NO_EXECUTE };
	return 0;
}

static struct nc_template_entry *template_find(struct nodeclass_resolver *r, const char *name)
{
	for (struct nc_template_entry *t = r->templates; t; t = t->next)
		if (streq(t->name, name))
			return t;
	return NULL;
}

static void template_remove(struct nodeclass_resolver *r, struct nc_template_entry *lt, int error,
			    const char *why)
{
	struct nc_waiter *w;

	for (struct nc_template_entry **p = &r->templates; *p; p = &(*p)->next)
		if (*p == lt) {
			*p = lt->next;
			break;
		}
	while ((w = lt->waiters)) {
		lt->waiters = w->next;
		finish_waiter(w, error, why);
	}
	aws_query_free(lt->create);
	free(lt);
}

static void template_ready(struct nc_template_entry *lt)
{
	struct nc_waiter *w;

	lt->state = NC_LT_READY;
	lt->last_used = clock_monotonic_usec();
	aws_query_free(lt->create);
	lt->create = NULL;
	while ((w = lt->waiters)) {
		lt->waiters = w->next;
		finish_waiter(w, 0, NULL);
	}
}

static void on_template(struct aws_client *client, const struct aws_response *resp, void *userdata);

static int template_call(struct nodeclass_resolver *r, struct nc_template_entry *lt, int kind,
			 struct aws_query *q)
{
	struct nc_call *c = nc_call_new(r, NULL, kind);
	int k;

	if (!c) {
		aws_query_free(q);
		return -ENOMEM;
	}
	c->lt = lt;
	snprintf(c->arg, sizeof(c->arg), "%s", lt ? lt->name : "");
	k = aws_call_query(r->aws, "ec2", q, on_template, c);
	if (k < 0) {
		nc_call_end(c);
		free(c);
	}
	return k;
}

static void on_template(struct aws_client *client, const struct aws_response *resp, void *userdata)
{
	struct nc_call *c = userdata;
	struct nodeclass_resolver *r = c->r;
	struct nc_template_entry *lt = c->lt;
	const char *code = resp->error.code;
	int kind = c->kind;
	char why[1200];
	int k;

	(void)client;
	if (!nc_call_end(c) || !lt) {
		free(c);
		return;
	}
	free(c);
	if (resp->result == 0 && kind == CALL_LT_DESCRIBE &&
	    aws_xml_first(aws_xml_child(resp->xml, "launchTemplates"), "item")) {
		template_ready(lt);
		return;
	}
	if ((resp->result == 0 && kind == CALL_LT_CREATE) ||
	    (kind == CALL_LT_CREATE && streq(code, "InvalidLaunchTemplateName.AlreadyExistsException"))) {
		if (resp->result == 0)
			log_info("Created launch template %s", lt->name);
		template_ready(lt);
		return;
	}
	if (kind == CALL_LT_DESCRIBE && (resp->result == 0 ||
					     streq(code, "InvalidLaunchTemplateName.NotFoundException"))) {
		struct aws_query *q = TAKE_PTR(lt->create);

		k = template_call(r, lt, CALL_LT_CREATE, q);
		if (k >= 0)
			return;
		snprintf(why, sizeof(why), "Failed to create launch template %s: %s", lt->name, strerror(-k));
	} else {
		snprintf(why, sizeof(why), "Failed to %s launch template %s: %s",
			 kind == CALL_LT_CREATE ? "create" : "look up", lt->name, aws_response_strerror(resp));
	}
	log_warn("%s", why);
	template_remove(r, lt, -EIO, why);
}

/* ---- user data ------------------------------------------------------------------ */

int nc_user_data_of(const struct nc_entry *e, const char **ret)
{
	const struct proto_nodeclass *nc = e->nc;

	*ret = nc->user_data; /* a 2.3 watcher still sends the text */
	if (!nc->user_data_sha256)
		return 0;
	if (!e->user_data || !streq(e->user_data_sha256, nc->user_data_sha256))
		return -EAGAIN;
	*ret = e->user_data;
	return 0;
}

static void sha256_hex(const char *s, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	*out = '\0';
	if (EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL))
		for (unsigned int i = 0; i < n && i < 32; i++)
			snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static int user_data_get(struct nodeclass_resolver *r, struct nc_entry *e, int kind);

static void on_user_data(struct kube_client *kc, const struct kube_response *resp, void *userdata)
{
	struct nc_call *c = userdata;
	struct nodeclass_resolver *r = c->r;
	struct nc_entry *e = c->e;
	const json_t *spec = json_object_get(resp->body, "spec");
	const char *text;
	char digest[65];
	int kind = c->kind;

	(void)kc;
	if (!nc_call_end(c) || !e) {
		free(c);
		return;
	}
	free(c);
	/* a v1alpha5 node class is an AWSNodeTemplate or a Provisioner's provider */
	if (kind == CALL_USER_DATA && resp->status == 404 && e->nc->source_api == PROTO_API_V1ALPHA5 &&
	    user_data_get(r, e, CALL_USER_DATA_PROVISIONER) >= 0)
		return;
	if (kind == CALL_USER_DATA_PROVISIONER)
		spec = json_object_get(spec, "provider");
	text = json_string_value(json_object_get(spec, "userData"));
	if (text)
		sha256_hex(text, digest);
	if (resp->status != 200 || !text) {
		snprintf(e->user_data_why, sizeof(e->user_data_why), "Failed to get the user data of EC2NodeClass %s: %s",
			 e->nc->name, resp->status != 200 ? resp->error ?: "HTTP error" : "spec.userData is gone");
		log_warn("%s", e->user_data_why);
	} else if (!streq(digest, e->nc->user_data_sha256)) {
		/* changed since the watcher saw it: its next delta brings the new digest */
		snprintf(e->user_data_why, sizeof(e->user_data_why),
			 "the user data of EC2NodeClass %s changed since it was observed; waiting for the update",
			 e->nc->name);
		log_debug("%s (SHA-256 %s, observed %s)", e->user_data_why, digest, e->nc->user_data_sha256);
	} else {
		free(e->user_data);
		e->user_data = strdup(text);
		if (e->user_data) {
			snprintf(e->user_data_sha256, sizeof(e->user_data_sha256), "%s", digest);
			*e->user_data_why = '\0';
		} else {
			snprintf(e->user_data_why, sizeof(e->user_data_why), "out of memory");
		}
	}
	nc_step_done(r, e);
}

static int user_data_get(struct nodeclass_resolver *r, struct nc_entry *e, int kind)
{
	static const char *const paths[] = {
		[PROTO_API_V1] = "/apis/karpenter.k8s.aws/v1/ec2nodeclasses",
		[PROTO_API_V1BETA1] = "/apis/karpenter.k8s.aws/v1beta1/ec2nodeclasses",
		[PROTO_API_V1ALPHA5] = "/apis/karpenter.k8s.aws/v1alpha1/awsnodetemplates",
	};
	_cleanup_free_ char *path = NULL;
	uint8_t api = e->nc->source_api < ARRAY_SIZE(paths) ? e->nc->source_api : PROTO_API_V1;
	struct nc_call *c;
	int k;

	if (asprintf(&path, "%s/%s",
		     kind == CALL_USER_DATA_PROVISIONER ? "/apis/karpenter.sh/v1alpha5/provisioners" : paths[api],
		     e->nc->name) < 0)
		return -ENOMEM;
	c = nc_call_new(r, e, kind);
	if (!c)
		return -ENOMEM;
	snprintf(c->arg, sizeof(c->arg), "%s", e->nc->name);
	k = kube_request(r->kube, "GET", path, NULL, NULL, on_user_data, c);
	if (k < 0) {
		nc_call_end(c);
		free(c);
	}
	return k;
}

void nc_user_data_fetch(struct nodeclass_resolver *r, struct nc_entry *e)
{
	const char *text;
	int k;

	if (nc_user_data_of(e, &text) == 0)
		return;
	if (!r->kube) {
		snprintf(e->user_data_why, sizeof(e->user_data_why),
			 "EC2NodeClass %s has user data and no Kubernetes client to get it with", e->nc->name);
		return;
	}
	k = user_data_get(r, e, CALL_USER_DATA);
	if (k < 0) {
		snprintf(e->user_data_why, sizeof(e->user_data_why), "Failed to get the user data of EC2NodeClass %s: %s",
			 e->nc->name, strerror(-k));
		return;
	}
	snprintf(e->user_data_why, sizeof(e->user_data_why), "the user data of EC2NodeClass %s is being fetched",
		 e->nc->name);
	e->pending++;
}

void nc_serve(struct nodeclass_resolver *r, struct nc_entry *e, struct nc_waiter *w)
{
	const struct proto_nodeclass *nc = e->nc;
	_cleanup_free_ struct proto_kv *labels = NULL;
	_cleanup_free_ struct proto_taint *taints = NULL;
	_cleanup_free_ char *user_data = NULL;
	char why[NC_WHY_MAX], udwhy[USERDATA_WHY_MAX], name[NC_LAUNCH_TEMPLATE_NAME_MAX];
	const struct nc_image *im = NULL;
	struct nc_template_entry *lt;
	struct aws_query *create = NULL, *describe = NULL;
	struct userdata_options uo;
	struct nc_template t;
	const char *custom = NULL;
	size_t n_labels, n_taints;
	int k;

	if (e->error) {
		finish_waiter(w, e->error, e->why);
		return;
	}
	if (nc_user_data_of(e, &custom) < 0) {
		finish_waiter(w, -EAGAIN, e->user_data_why);
		return;
	}
	im = nc_image_for(e->res.images, e->res.n_images, w->arch, w->variant);
	if (!im) {
		snprintf(why, sizeof(why), "EC2NodeClass %s has no AMI for architecture %s%s%s", nc->name, w->arch,
			 w->variant == NC_VARIANT_STANDARD ? "" : ", variant ",
			 w->variant == NC_VARIANT_STANDARD ? "" : nc_variant_name(w->variant));
		finish_waiter(w, -ENOENT, why);
		return;
	}
	k = node_settings(w->nodepool, &labels, &n_labels, &taints, &n_taints);
	if (k < 0) {
		finish_waiter(w, k, "out of memory");
		return;
	}
	uo = (struct userdata_options){
		.family = nc_family_of(nc), .cluster_name = r->cluster_name,
		.cluster_endpoint = r->cluster_endpoint, .cluster_ca = r->cluster_ca,
		.cluster_dns = r->cluster_dns, .service_cidr = r->service_cidr,
		.labels = labels, .n_labels = n_labels, .taints = taints, .n_taints = n_taints,
		.kubelet = kubelet_of(nc, w->nodepool), .custom = custom,
	};
	k = userdata_render(&uo, &user_data, udwhy);
	if (k < 0) {
		snprintf(why, sizeof(why), "EC2NodeClass %s: %s user data: %s", nc->name,
			 ami_family_name(uo.family), *udwhy ? udwhy : strerror(-k));
		finish_waiter(w, k, why);
		return;
	}
	t = (struct nc_template){
		.cluster_name = r->cluster_name, .nodeclass = nc->name, .image_id = im->id,
		.user_data = user_data, .groups = e->res.groups, .n_groups = e->res.n_groups,
		.instance_profile = e->res.instance_profile, .block_devices = nc->block_devices,
		.n_block_devices = nc->n_block_devices, .family = uo.family,
		.metadata = &nc->metadata_options, .detailed_monitoring = nc->detailed_monitoring,
		.associate_public_ip = nc->associate_public_ip_address,
		.tags = nc->tags, .n_tags = nc->n_tags,
	};
	k = nc_template_name(&t, name);
	if (k >= 0)
		k = config_build(&w->cfg, name, im, &e->res);
	if (k < 0) {
		finish_waiter(w, k, "out of memory");
		return;
	}
	lt = template_find(r, name);
	if (lt && lt->state == NC_LT_READY) {
		lt->last_used = clock_monotonic_usec();
		finish_waiter(w, 0, NULL);
		return;
	}
	if (lt) {
		w->next = lt->waiters;
		lt->waiters = w;
		return;
	}
	/* a miss: look the name up, create it if absent */
	lt = calloc(1, sizeof(*lt));
	k = lt ? nc_template_create_query(&t, name, &create) : -ENOMEM;
	if (k >= 0)
		k = aws_query_new("DescribeLaunchTemplates", EC2_API_VERSION, &describe);
	if (k >= 0)
		k = aws_query_add(describe, name, "LaunchTemplateName.1");
	if (k < 0) {
		aws_query_free(create);
		aws_query_free(describe);
		free(lt);
		finish_waiter(w, k, "could not build the launch template request");
		return;
	}
	snprintf(lt->name, sizeof(lt->name), "%s", name);
	lt->state = NC_LT_CREATING;
	lt->create = create;
	w->next = NULL;
	lt->waiters = w;
	lt->next = r->templates;
	r->templates = lt;
	k = template_call(r, lt, CALL_LT_DESCRIBE, describe);
	if (k < 0) {
		snprintf(why, sizeof(why), "Failed to look up launch template %s: %s", name, strerror(-k));
		template_remove(r, lt, k, why);
	}
}

void nodeclass_launch_template_forget(struct nodeclass_resolver *r, const char *name)
{
	struct nc_template_entry *lt = r && name ? template_find(r, name) : NULL;

	if (lt && lt->state == NC_LT_READY)
		template_remove(r, lt, 0, NULL);
}

void nc_templates_free(struct nodeclass_resolver *r)
{
	while (r->templates)
		template_remove(r, r->templates, -ECANCELED, "the launcher is stopping");
}

/* ---- garbage collection ---------------------------------------------------------- */

static void on_gc(struct aws_client *client, const struct aws_response *resp, void *userdata);

static int gc_call(struct nodeclass_resolver *r, int kind, struct aws_query *q, const char *arg)
{
	struct nc_call *c = nc_call_new(r, NULL, kind);
	int k;

	if (!c) {
		aws_query_free(q);
		return -ENOMEM;
	}
	snprintf(c->arg, sizeof(c->arg), "%s", arg ?: "");
	k = aws_call_query(r->aws, "ec2", q, on_gc, c);
	if (k < 0) {
		nc_call_end(c);
		free(c);
	}
	return k;
}

static int gc_list(struct nodeclass_resolver *r, const char *next_token)
{
	const char *owner = r->cluster_name;
	struct aws_query *q = NULL;
	int k;

	k = aws_query_new("DescribeLaunchTemplates", EC2_API_VERSION, &q);
	if (k >= 0)
		k = aws_query_add_filter(q, 1, "tag:" NC_MANAGED_BY_TAG, &owner, 1);
	if (k >= 0)
		k = aws_query_add_int(q, GC_PAGE, "MaxResults");
	if (k >= 0 && next_token)
		k = aws_query_add(q, next_token, "NextToken");
	if (k < 0) {
		aws_query_free(q);
		return k;
	}
	return gc_call(r, CALL_LT_LIST, q, NULL);
}

static void gc_page(struct nodeclass_resolver *r, const struct aws_response *resp)
{
	struct nc_template_seen seen[GC_PAGE];
	uint64_t now = clock_monotonic_usec();
	int64_t wall = (int64_t)time(NULL);
	const char *next;
	size_t n = 0;
	int k;

	k = nc_templates_read(resp->xml, seen, GC_PAGE, &n);
	if (k < 0) {
		log_warn("Failed to read the launch templates to clean up: %s", strerror(-k));
		r->gc_running = false;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct nc_template_entry *lt = template_find(r, seen[i].name);
		struct aws_query *q = NULL;

		if (lt && (lt->state == NC_LT_CREATING || now - lt->last_used < r->refresh_usec))
			continue;
		/* new to us: created by a launch this process has not made yet,
		 * or by the process before a restart; give it one period */
		if (!lt && (uint64_t)(wall - seen[i].created) * 1000000ULL < r->refresh_usec)
			continue;
		if (lt)
			template_remove(r, lt, 0, NULL);
		k = aws_query_new("DeleteLaunchTemplate", EC2_API_VERSION, &q);
		if (k >= 0)
			k = aws_query_add(q, seen[i].name, "LaunchTemplateName");
		if (k >= 0)
			k = gc_call(r, CALL_LT_DELETE, q, seen[i].name);
		else
			aws_query_free(q);
		if (k < 0)
			log_warn("Failed to delete unused launch template %s: %s", seen[i].name, strerror(-k));
	}
	next = aws_xml_text(resp->xml, "nextToken");
	if (next && *next && gc_list(r, next) >= 0)
		return;
	r->gc_running = false;
}

static void on_gc(struct aws_client *client, const struct aws_response *resp, void *userdata)
{
	struct nc_call *c = userdata;
	struct nodeclass_resolver *r = c->r;

	(void)client;
	if (!nc_call_end(c)) {
		free(c);
		return;
	}
	if (c->kind == CALL_LT_DELETE) {
		if (resp->result == 0)
			log_info("Deleted launch template %s, unused for longer than the refresh period", c->arg);
		else if (!streq(resp->error.code, "InvalidLaunchTemplateName.NotFoundException"))
			log_warn("Failed to delete launch template %s: %s", c->arg, aws_response_strerror(resp));
	} else if (resp->result < 0) {
		log_warn("Failed to list kanna's launch templates: %s", aws_response_strerror(resp));
		r->gc_running = false;
	} else {
		gc_page(r, resp);
	}
	free(c);
}

void nc_templates_gc(struct nodeclass_resolver *r)
{
	if (r->gc_running)
		return;
	r->gc_running = true;
	if (gc_list(r, NULL) < 0)
		r->gc_running = false;
}
