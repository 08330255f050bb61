/*
 * JSON of the objects the launcher writes (see objects.h). jansson builds
 * them; names and shapes are Karpenter's karpenter.sh/v1 NodeClaim and the
 * core/v1 Node and Binding.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/quantity.h"
#include "common/util.h"
#include "launcher/objects.h"
#include "proto/schema.h"
#include "model/kubelet.h"

#define INSTANCE_TYPE_LABEL "node.kubernetes.io/instance-type"
#define PROVISIONER_NAME_LABEL "karpenter.sh/provisioner-name"

void rfc3339_now(char buf[static 32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void format_duration(int64_t seconds, char *buf, size_t size)
{
	if (seconds < 0)
		snprintf(buf, size, "Never");
	else
		snprintf(buf, size, "%llds", (long long)seconds);
}

/* {"cpu":"1500m","memory":"1536Mi","pods":"5"}; cpu is in millicores. */
static json_t *resources_json(const struct proto_resource *res, uint32_t n)
{
	json_t *o = json_object();

	for (uint32_t i = 0; o && i < n; i++) {
		char q[64];
		bool cpu = streq(res[i].name, "cpu");
		bool bytes = streq(res[i].name, "memory") || streq(res[i].name, "ephemeral-storage") ||
			     startswith(res[i].name, "hugepages-");

		quantity_format(res[i].value, cpu, bytes, q, sizeof(q));
		if (json_object_set_new(o, res[i].name, json_string(q)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *taints_json(const struct proto_taint *t, uint32_t n, json_t *arr)
{
	for (uint32_t i = 0; arr && i < n; i++) {
		json_t *o = json_pack("{s:s, s:s}", "key", t[i].key, "effect",
				      proto_enum_name(&proto_enum_desc_taint_effect, t[i].effect));

		if (o && t[i].value && *t[i].value)
			json_object_set_new(o, "value", json_string(t[i].value));
		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *requirement_json(const char *key, const char *op, char *const *values, uint32_t n,
				uint32_t min_values)
{
	json_t *vals = json_array(), *o;

	for (uint32_t i = 0; vals && i < n; i++)
		if (json_array_append_new(vals, json_string(values[i])) < 0) {
			json_decref(vals);
			return NULL;
		}
	o = json_pack("{s:s, s:s, s:o}", "key", key, "operator", op, "values", vals);
	if (o && min_values)
		json_object_set_new(o, "minValues", json_integer(min_values));
	return o;
}

static json_t *requirements_json(const struct proto_planned_nodeclaim *p)
{
	json_t *arr = json_array(), *o;
	char **types;

	if (!arr)
		return NULL;
	for (uint32_t i = 0; i < p->n_requirements; i++) {
		const struct proto_requirement *r = &p->requirements[i];

		/* Replaced below by the candidates, which the solver already
		 * narrowed to what this requirement allows. */
		if (streq(r->key, INSTANCE_TYPE_LABEL) && r->op == PROTO_OP_IN)
			continue;
		/* The v1 NodeClaim CRD refuses requirement keys of the
		 * karpenter.sh domain but capacity-type and nodepool (its
		 * x-kubernetes-validations): a v1alpha5 pool's claims carry
		 * the name as a label instead (nodeclaim_json). */
		if (streq(r->key, PROVISIONER_NAME_LABEL))
			continue;
		o = requirement_json(r->key, proto_enum_name(&proto_enum_desc_requirement_op, r->op), r->values,
				     r->n_values, r->min_values);
		if (!o || json_array_append_new(arr, o) < 0)
			goto fail;
	}
	types = calloc(p->n_instance_types + 1, sizeof(*types));
	if (!types)
		goto fail;
	for (uint32_t i = 0; i < p->n_instance_types; i++)
		types[i] = p->instance_types[i].name;
	o = requirement_json(INSTANCE_TYPE_LABEL, "In", types, p->n_instance_types, 0);
	free(types);
	if (!o || json_array_append_new(arr, o) < 0)
		goto fail;
	return arr;
fail:
	json_decref(arr);
	return NULL;
}

static json_t *string_list_json(char *const *v, uint32_t n)
{
	json_t *arr = json_array();

	for (uint32_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, json_string(v[i])) < 0) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

json_t *nodeclaim_json(const struct proto_planned_nodeclaim *planned, const char *plan_id,
		       const struct proto_nodepool *nodepool, const struct proto_nodeclass *nodeclass)
{
	json_t *labels = json_object(), *annotations = json_object(), *spec, *pods, *o = NULL;
	const char *nc_name = planned->nodeclass ?: nodepool->nodeclass_ref.name;
	/* A v1beta1 NodePool's ref has an apiVersion: its group part, as
	 * upstream's conversion to v1 takes it (the group may have no "/"). */
	const char *group = nodepool->nodeclass_ref.group ?: "karpenter.k8s.aws";
	char *pods_text = NULL, dur[32];

	if (!labels || !annotations)
		goto out;
	for (uint32_t i = 0; i < nodepool->n_labels; i++)
		json_object_set_new(labels, nodepool->labels[i].key, json_string(nodepool->labels[i].value));
	json_object_set_new(labels, "karpenter.sh/nodepool", json_string(planned->nodepool));
	if (nodepool->source_api == PROTO_API_V1ALPHA5)
		json_object_set_new(labels, PROVISIONER_NAME_LABEL, json_string(planned->nodepool));
	/* spec.template.metadata.annotations first, Karpenter's and ours over
	 * them (kubernetes-sigs/karpenter NodeClaimTemplate: the template's
	 * annotations, then the hash annotations, lo.Assign) */
	for (uint32_t i = 0; i < nodepool->n_annotations; i++)
		json_object_set_new(annotations, nodepool->annotations[i].key,
				    json_string(nodepool->annotations[i].value));
	pods = string_list_json(planned->pods, planned->n_pods);
	pods_text = pods ? json_dumps(pods, JSON_COMPACT) : NULL;
	json_decref(pods);
	if (!pods_text)
		goto out;
	json_object_set_new(annotations, KANNA_PLANNED_PODS_ANNOTATION, json_string(pods_text));
	if (plan_id)
		json_object_set_new(annotations, KANNA_PLAN_ANNOTATION, json_string(plan_id));
	/* Static drift (reaper/drift.c): the hashes the watcher computed, with
	 * the version of their scheme, as Karpenter stamps its own. */
	if (nodepool->nodepool_hash) {
		json_object_set_new(annotations, KARPENTER_NODEPOOL_HASH_ANNOTATION,
				    json_string(nodepool->nodepool_hash));
		if (nodepool->nodepool_hash_version)
			json_object_set_new(annotations, KARPENTER_NODEPOOL_HASH_VERSION_ANNOTATION,
					    json_string(nodepool->nodepool_hash_version));
	}
	if (nodeclass && nodeclass->nodeclass_hash) {
		json_object_set_new(annotations, KARPENTER_NODECLASS_HASH_ANNOTATION,
				    json_string(nodeclass->nodeclass_hash));
		if (nodeclass->nodeclass_hash_version)
			json_object_set_new(annotations, KARPENTER_NODECLASS_HASH_VERSION_ANNOTATION,
					    json_string(nodeclass->nodeclass_hash_version));
	}
	spec = json_pack("{s:{s:s%, s:s, s:s?}, s:o, s:{s:o}}",
			 "nodeClassRef", "group", group, strcspn(group, "/"),
			 "kind", nodepool->nodeclass_ref.kind ?: "EC2NodeClass", "name", nc_name,
			 "requirements", requirements_json(planned),
			 "resources", "requests", resources_json(planned->requests, planned->n_requests));
	if (!spec)
		goto out;
	if (nodepool->n_taints)
		json_object_set_new(spec, "taints", taints_json(nodepool->taints, nodepool->n_taints,
								json_array()));
	if (nodepool->n_startup_taints)
		json_object_set_new(spec, "startupTaints",
				    taints_json(nodepool->startup_taints, nodepool->n_startup_taints,
						json_array()));
	if (nodepool->expire_after_s) {
		format_duration(nodepool->expire_after_s, dur, sizeof(dur));
		json_object_set_new(spec, "expireAfter", json_string(dur));
	}
	if (nodepool->termination_grace_period_s > 0) {
		format_duration(nodepool->termination_grace_period_s, dur, sizeof(dur));
		json_object_set_new(spec, "terminationGracePeriod", json_string(dur));
	}
	o = json_pack("{s:s, s:s, s:{s:s, s:O, s:O, s:[s], s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:o}",
		      "apiVersion", "karpenter.sh/v1", "kind", "NodeClaim",
		      "metadata", "name", planned->id, "labels", labels, "annotations", annotations,
		      "finalizers", KARPENTER_TERMINATION_FINALIZER,
		      "ownerReferences", "apiVersion", "karpenter.sh/v1", "kind", "NodePool",
		      "name", nodepool->name, "uid", nodepool->uid, "blockOwnerDeletion", 1,
		      "controller", 0, "spec", spec);
out:
	free(pods_text);
	json_decref(labels);
	json_decref(annotations);
	return o;
}

int provider_id_format(const char *zone, const char *instance_id, char *buf, size_t size)
{
	int n;

	if (!zone || !*zone || !instance_id || !*instance_id)
		return -EINVAL;
	n = snprintf(buf, size, "aws:///%s/%s", zone, instance_id);
	return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

int provider_id_parse(const char *provider_id, char *zone, size_t zone_size, char *instance_id,
		      size_t id_size)
{
	const char *z, *slash;

	if (!provider_id || !startswith(provider_id, "aws:///"))
		return -EINVAL;
	z = provider_id + strlen("aws:///");
	slash = strchr(z, '/');
	if (!slash || slash == z || !slash[1] || strchr(slash + 1, '/') ||
	    (size_t)(slash - z) >= zone_size || strlen(slash + 1) >= id_size)
		return -EINVAL;
	memcpy(zone, z, (size_t)(slash - z));
	zone[slash - z] = 0;
	strcpy(instance_id, slash + 1);
	return 0;
}

static json_t *labels_json(const node_label *labels, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < n; i++)
		if (json_object_set_new(o, labels[i].key, json_string(labels[i].value)) < 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}

json_t *nodeclaim_labels_patch(const node_label *labels, size_t n_labels)
{
	return json_pack("{s:{s:o}}", "metadata", "labels", labels_json(labels, n_labels));
}

/* The type's capacity or allocatable under the NodePool's kubelet settings. */
static json_t *type_resources(const struct launched_instance *li, bool allocatable)
{
	struct proto_resource cap[PROTO_MAX_RESOURCES], alloc[PROTO_MAX_RESOURCES];
	uint32_t n_cap, n_alloc;

	if (!li->type)
		return json_object();
	if (kubelet_type_resources(li->kubelet, li->windows_build != NULL, li->type, cap, &n_cap, alloc, &n_alloc) < 0)
		/* Refused by the watcher's decoder: cannot come from the replica. */
		return allocatable ? resources_json(li->type->allocatable, li->type->n_allocatable)
				   : resources_json(li->type->capacity, li->type->n_capacity);
	return allocatable ? resources_json(alloc, n_alloc) : resources_json(cap, n_cap);
}

json_t *nodeclaim_launched_status(const struct launched_instance *li, const char *now)
{
	char provider[256];

	if (provider_id_format(li->zone, li->instance_id, provider, sizeof(provider)) < 0)
		return NULL;
	return json_pack("{s:{s:s, s:s?, s:s?, s:o, s:o, s:[{s:s, s:s, s:s, s:s, s:s}]}}", "status",
			 "providerID", provider, "imageID", li->image_id, "nodeName", li->node_name,
			 "capacity", type_resources(li, false), "allocatable", type_resources(li, true),
			 "conditions", "type", "Launched", "status", "True", "reason", "Launched",
			 "message", "", "lastTransitionTime", now);
}

static const struct proto_taint node_hold = { .key = KARPENTER_UNREGISTERED_TAINT_KEY,
					      .effect = PROTO_EFFECT_NO_SCHEDULE };

static bool is_hold(const struct proto_taint *t)
{
	return streq(t->key, node_hold.key) && t->effect == node_hold.effect;
}

bool node_held(const struct proto_node *node)
{
	for (uint32_t i = 0; i < node->n_taints; i++)
		if (is_hold(&node->taints[i]))
			return true;
	return false;
}

json_t *node_release_hold_patch(const struct proto_node *node)
{
	json_t *taints = json_array();

	for (uint32_t i = 0; taints && i < node->n_taints; i++)
		if (!is_hold(&node->taints[i]) && node->taints[i].effect != PROTO_EFFECT_ANY)
			taints = taints_json(&node->taints[i], 1, taints);
	if (!taints)
		return NULL;
	/* An empty list is dropped, as the API server stores it. */
	if (!json_array_size(taints)) {
		json_decref(taints);
		taints = json_null();
	}
	if (!node->resource_version || !*node->resource_version)
		return json_pack("{s:{s:o}}", "spec", "taints", taints);
	return json_pack("{s:{s:s}, s:{s:o}}", "metadata", "resourceVersion", node->resource_version,
			 "spec", "taints", taints);
}

json_t *node_json(const struct launched_instance *li, const struct proto_nodeclaim *claim,
		  const struct proto_nodepool *nodepool, const node_label *labels, size_t n_labels)
{
	char provider[256];
	json_t *taints = json_array(), *spec, *meta;

	if (provider_id_format(li->zone, li->instance_id, provider, sizeof(provider)) < 0 || !taints) {
		json_decref(taints);
		return NULL;
	}
	/* the NodeClaim's taints, as Karpenter's registration syncs them
	 * onto the Node (lifecycle/registration.go) */
	taints = taints_json(claim->taints, claim->n_taints, taints);
	taints = taints_json(claim->startup_taints, claim->n_startup_taints, taints);
	taints = taints_json(&node_hold, 1, taints);
	spec = json_pack("{s:s, s:o}", "providerID", provider, "taints", taints);
	meta = json_pack("{s:s, s:o, s:[s]}", "name", li->node_name, "labels",
			 labels_json(labels, n_labels), "finalizers", KARPENTER_TERMINATION_FINALIZER);
	/* the NodeClaim's template annotations, as Karpenter's registration
	 * (lifecycle/registration.go syncNode) assigns the NodeClaim's
	 * annotations onto its Node */
	if (meta && nodepool && nodepool->n_annotations) {
		json_t *annotations = json_object();

		for (uint32_t i = 0; annotations && i < nodepool->n_annotations; i++)
			json_object_set_new(annotations, nodepool->annotations[i].key,
					    json_string(nodepool->annotations[i].value));
		json_object_set_new(meta, "annotations", annotations);
	}
	if (meta && claim && claim->uid)
		json_object_set_new(meta, "ownerReferences",
				    json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion", "karpenter.sh/v1",
					      "kind", "NodeClaim", "name", claim->name, "uid", claim->uid,
					      "blockOwnerDeletion", 1));
	return json_pack("{s:s, s:s, s:o, s:o, s:{s:o, s:o}}", "apiVersion", "v1", "kind", "Node",
			 "metadata", meta, "spec", spec, "status", "capacity",
			 type_resources(li, false), "allocatable", type_resources(li, true));
}

/* Sets key=value in out[0..*n), replacing an earlier value of the key. */
static int label_set(node_label *out, size_t max, size_t *n, const char *key, const char *value)
{
	for (size_t i = 0; i < *n; i++)
		if (streq(out[i].key, key)) {
			out[i].value = value;
			return 0;
		}
	if (*n == max)
		return -E2BIG;
	out[(*n)++] = (node_label){ key, value };
	return 0;
}

int node_labels_collect(const struct launched_instance *li, const struct proto_nodepool *nodepool,
			const struct proto_requirement *reqs, size_t n_reqs, const char *region,
			node_label *out, size_t max, size_t *ret_n)
{
	node_label wk[NODE_WELL_KNOWN_LABELS_MAX];
	node_facts f = { .instance_type = li->instance_type, .zone = li->zone, .region = region,
			 .capacity_type = li->capacity_type, .nodepool = nodepool ? nodepool->name : NULL,
			 .arch = "amd64", .os = "linux", .hostname = li->node_name,
			 .v1alpha5 = nodepool && nodepool->source_api == PROTO_API_V1ALPHA5 };
	size_t n = 0, n_wk;
	int r = 0;

	if (li->type)
		for (uint32_t i = 0; i < li->type->n_labels && r >= 0; i++) {
			const struct proto_kv *kv = &li->type->labels[i];

			if (streq(kv->key, "kubernetes.io/arch"))
				f.arch = kv->value;
			else if (streq(kv->key, "kubernetes.io/os"))
				f.os = kv->value;
			r = label_set(out, max, &n, kv->key, kv->value);
		}
	for (size_t i = 0; i < n_reqs && r >= 0; i++)
		if (reqs[i].op == PROTO_OP_IN && reqs[i].n_values == 1)
			r = label_set(out, max, &n, reqs[i].key, reqs[i].values[0]);
	for (uint32_t i = 0; nodepool && i < nodepool->n_labels && r >= 0; i++)
		r = label_set(out, max, &n, nodepool->labels[i].key, nodepool->labels[i].value);
	if (r < 0)
		return r;
	/* the catalog's os is Linux's; a Windows AMI family's nodes are
	 * windows with the family's build (Karpenter's instance types under
	 * a Windows EC2NodeClass, pkg/providers/instancetype/types.go) */
	if (li->windows_build) {
		f.os = "windows";
		r = label_set(out, max, &n, "node.kubernetes.io/windows-build", li->windows_build);
	}
	if (r >= 0)
		r = node_well_known_labels(&f, wk, &n_wk);
	for (size_t i = 0; r >= 0 && i < n_wk; i++)
		r = label_set(out, max, &n, wk[i].key, wk[i].value);
	if (r < 0)
		return r;
	*ret_n = n;
	return 0;
}

json_t *nodeclaim_planned_pods_patch(char *const *pods, size_t n, char *const *drop, size_t n_drop)
{
	json_t *list = json_array(), *patch = NULL;
	char *text = NULL;

	for (size_t i = 0; list && i < n; i++) {
		bool dropped = false;

		for (size_t k = 0; k < n_drop && !dropped; k++)
			dropped = streq(pods[i], drop[k]);
		if (!dropped && json_array_append_new(list, json_string(pods[i])) < 0)
			goto out;
	}
	text = list ? json_dumps(list, JSON_COMPACT) : NULL;
	if (text)
		patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", KANNA_PLANNED_PODS_ANNOTATION,
				  text);
out:
	free(text);
	json_decref(list);
	return patch;
}

json_t *binding_json(const char *pod_name, const char *node_name)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind",
			 "Binding", "metadata", "name", pod_name, "target", "apiVersion", "v1",
			 "kind", "Node", "name", node_name);
}
