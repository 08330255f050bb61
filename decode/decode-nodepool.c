/*
 * NodePools in all three shapes users write them, converted on read into
 * one model with each version's defaults (DESIGN §3):
 *   karpenter.sh/v1 NodePool       expireAfter 720h, WhenEmptyOrUnderutilized,
 *                                  consolidateAfter 0s, budgets [nodes 10%]
 *   karpenter.sh/v1beta1 NodePool  expireAfter 720h (in disruption),
 *                                  WhenUnderutilized, kubelet in the template
 *   karpenter.sh/v1alpha5 Provisioner  ttlSecondsAfterEmpty → WhenEmpty +
 *                                  consolidateAfter; consolidation.enabled →
 *                                  WhenUnderutilized; ttlSecondsUntilExpired →
 *                                  expireAfter (absent: Never); capacity-type
 *                                  on-demand and arch amd64 when unconstrained,
 *                                  as the v1alpha5 AWS webhook defaulted them.
 * Requirements that no node could satisfy mark the NodePool invalid (with
 * the reason) rather than failing the decode: the watcher reports it.
 * Also NodeClaims (karpenter.sh/v1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/decode.h"
#include "proto/schema.h"

#define DEFAULT_EXPIRE_AFTER_S (720 * 3600)
#define DEFAULT_BUDGET_NODES "10%"

/* Labels a NodePool may not constrain (Karpenter's RestrictedLabels). */
static const char *const restricted_keys[] = {
	"karpenter.sh/nodepool", "karpenter.sh/provisioner-name", "kubernetes.io/hostname",
	"karpenter.sh/initialized", "karpenter.sh/registered",
};

static bool is_integer(const char *s)
{
	char *end;

	if (!s || !*s)
		return false;
	strtoll(s, &end, 10);
	return *end == '\0';
}

/*
 * Why a requirement list can never be met, or NULL. The reason starts with
 * the field at fault ("<where>[2].values: ..."), so that a status condition
 * and --simulate's file:line:column both point at the requirement.
 */
static const char *requirements_problem(const struct proto_requirement *q, uint32_t n,
					const char *where, char *buf, size_t size)
{
	for (uint32_t i = 0; i < n; i++) {
		for (size_t k = 0; k < ARRAY_SIZE(restricted_keys); k++)
			if (streq(q[i].key, restricted_keys[k])) {
				snprintf(buf, size, "%s[%u].key: requirement %s is restricted", where, i,
					 q[i].key);
				return buf;
			}
		switch (q[i].op) {
		case PROTO_OP_IN:
			if (q[i].n_values == 0) {
				snprintf(buf, size, "%s[%u].values: requirement %s In [] can never be satisfied",
					 where, i, q[i].key);
				return buf;
			}
			if (q[i].min_values > q[i].n_values) {
				snprintf(buf, size, "%s[%u].minValues: requirement %s: minValues %u exceeds its %u values",
					 where, i, q[i].key, q[i].min_values, q[i].n_values);
				return buf;
			}
			break;
		case PROTO_OP_GT:
		case PROTO_OP_LT:
		case PROTO_OP_GTE:
		case PROTO_OP_LTE:
			if (q[i].n_values != 1 || !is_integer(q[i].values[0])) {
				snprintf(buf, size, "%s[%u].values: requirement %s %s needs exactly one integer value",
					 where, i, q[i].key, proto_enum_name(&proto_enum_desc_requirement_op, q[i].op));
				return buf;
			}
			break;
		case PROTO_OP_EXISTS:
		case PROTO_OP_DOES_NOT_EXIST:
			if (q[i].n_values != 0) {
				snprintf(buf, size, "%s[%u].values: requirement %s %s takes no values", where, i,
					 q[i].key, q[i].op == PROTO_OP_EXISTS ? "Exists" : "DoesNotExist");
				return buf;
			}
			break;
		default:
			break;
		}
		/* Two In requirements on one key with nothing in common. */
		for (uint32_t j = 0; j < i; j++) {
			bool common = false;
			if (!streq(q[i].key, q[j].key) || q[i].op != PROTO_OP_IN || q[j].op != PROTO_OP_IN)
				continue;
			for (uint32_t a = 0; a < q[i].n_values && !common; a++)
				for (uint32_t b = 0; b < q[j].n_values && !common; b++)
					common = streq(q[i].values[a], q[j].values[b]);
			if (!common) {
				snprintf(buf, size, "%s[%u].values: requirements on %s have no value in common",
					 where, i, q[i].key);
				return buf;
			}
		}
	}
	return NULL;
}

static int budgets(struct decoder *d, const json_t *arr, struct proto_nodepool *np)
{
	const json_t *b;
	char at[64];
	size_t i;
	int r;

	if (!json_is_array(arr)) {
		np->budgets = arena_calloc(d->arena, 1, sizeof(*np->budgets));
		if (!np->budgets || !(np->budgets[0].nodes = arena_strdup(d->arena, DEFAULT_BUDGET_NODES)))
			return -ENOMEM;
		np->n_budgets = 1;
		return 0;
	}
	if (json_array_size(arr) > PROTO_MAX_BUDGETS)
		return decode_fail(d, "spec.disruption.budgets: more than %u", PROTO_MAX_BUDGETS);
	np->budgets = arena_calloc(d->arena, json_array_size(arr) + 1, sizeof(*np->budgets));
	if (!np->budgets)
		return -ENOMEM;
	json_array_foreach(arr, i, b) {
		struct proto_budget *bu = &np->budgets[i];
		decode_path(at, sizeof(at), "spec.disruption.budgets[%zu]", i);
		if ((r = decode_string(d, b, "nodes", at, &bu->nodes)) < 0 ||
		    (r = decode_string(d, b, "schedule", at, &bu->schedule)) < 0 ||
		    (r = decode_duration(d, json_object_get(b, "duration"), at, &bu->duration_s)) < 0 ||
		    (r = decode_strings(d, json_object_get(b, "reasons"), at, &bu->reasons,
					&bu->n_reasons)) < 0)
			return r;
		if (!bu->nodes && !(bu->nodes = arena_strdup(d->arena, DEFAULT_BUDGET_NODES)))
			return -ENOMEM;
	}
	np->n_budgets = (uint32_t)json_array_size(arr);
	return 0;
}

static int consolidation_policy(struct decoder *d, const char *s, uint8_t dflt, uint8_t *ret)
{
	if (!s)
		*ret = dflt;
	else if (streq(s, "WhenEmptyOrUnderutilized"))
		*ret = PROTO_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED;
	else if (streq(s, "WhenEmpty"))
		*ret = PROTO_CONSOLIDATE_WHEN_EMPTY;
	else if (streq(s, "WhenUnderutilized"))
		*ret = PROTO_CONSOLIDATE_WHEN_UNDERUTILIZED;
	else if (streq(s, "Balanced")) /* v1 (core v1.14): reaper/consolidation-search.c */
		*ret = PROTO_CONSOLIDATE_BALANCED;
	else
		return decode_fail(d, "spec.disruption.consolidationPolicy: '%s' is not "
				   "WhenEmptyOrUnderutilized, WhenEmpty, Balanced or WhenUnderutilized", s);
	return 0;
}

/* Appends "key In [value]" unless some requirement already names key. */
static bool has_requirement(const struct proto_nodepool *np, const char *key)
{
	for (uint32_t i = 0; i < np->n_requirements; i++)
		if (streq(np->requirements[i].key, key))
			return true;
	return false;
}

/* Appends key op values unless a requirement on key is already there. */
static int default_requirement_op(struct decoder *d, struct proto_nodepool *np, const char *key,
				  enum proto_requirement_op op, const char *const *values, uint32_t n_values)
{
	struct proto_requirement *all, *r;

	if (has_requirement(np, key))
		return 0;
	all = arena_calloc(d->arena, np->n_requirements + 2, sizeof(*all));
	if (!all)
		return -ENOMEM;
	if (np->n_requirements)
		memcpy(all, np->requirements, np->n_requirements * sizeof(*all));
	r = &all[np->n_requirements];
	r->key = arena_strdup(d->arena, key);
	r->op = op;
	r->values = arena_calloc(d->arena, n_values, sizeof(char *));
	if (!r->key || !r->values)
		return -ENOMEM;
	for (uint32_t i = 0; i < n_values; i++)
		if (!(r->values[i] = arena_strdup(d->arena, values[i])))
			return -ENOMEM;
	r->n_values = n_values;
	np->requirements = all;
	np->n_requirements++;
	return 0;
}

static int default_requirement(struct decoder *d, struct proto_nodepool *np, const char *key,
			       const char *value)
{
	return default_requirement_op(d, np, key, PROTO_OP_IN, &value, 1);
}

/*
 * The AWS provider's v1alpha5 Provisioner.SetDefaults (v0.31,
 * pkg/apis/v1alpha5/provisioner.go): os linux, arch amd64, on-demand, and
 * instance-category In c,m,r with instance-generation Gt 2 unless the
 * Provisioner constrains the instance type, family, category or generation.
 * Only requirements count, as there (not spec.labels).
 */
static int provisioner_defaults(struct decoder *d, struct proto_nodepool *np)
{
	static const char *const categories[] = { "c", "m", "r" };
	static const char *const generation[] = { "2" };
	int r;

	if ((r = default_requirement(d, np, "kubernetes.io/os", "linux")) < 0 ||
	    (r = default_requirement(d, np, "kubernetes.io/arch", "amd64")) < 0 ||
	    (r = default_requirement(d, np, "karpenter.sh/capacity-type", "on-demand")) < 0)
		return r;
	if (has_requirement(np, "node.kubernetes.io/instance-type") ||
	    has_requirement(np, "karpenter.k8s.aws/instance-family") ||
	    has_requirement(np, "karpenter.k8s.aws/instance-category") ||
	    has_requirement(np, "karpenter.k8s.aws/instance-generation"))
		return 0;
	if ((r = default_requirement_op(d, np, "karpenter.k8s.aws/instance-category", PROTO_OP_IN,
					categories, ARRAY_SIZE(categories))) < 0)
		return r;
	return default_requirement_op(d, np, "karpenter.k8s.aws/instance-generation", PROTO_OP_GT,
				      generation, ARRAY_SIZE(generation));
}

/* v1 spec.replicas (a static NodePool; upstream since v1.8, StaticCapacity):
 * its presence is what makes the pool static, 0 included. */
static int static_replicas(struct decoder *d, const json_t *v, struct proto_nodepool *np)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return decode_fail(d, "spec.replicas: expected an integer");
	np->static_capacity = true;
	np->replicas = json_integer_value(v);
	return 0;
}

/*
 * The rules the v1 CRD states in x-kubernetes-validations and its schema
 * for a static NodePool (data/crds/karpenter.sh_nodepools.yaml): an API
 * server refuses such an object, so one that reaches us anyway (kanna-sim
 * evaluates no CEL) is invalid rather than half applied. NULL: none.
 */
static const char *static_problem(const json_t *spec, const struct proto_nodepool *np)
{
	if (!np->static_capacity)
		return NULL;
	if (np->replicas < 0)
		return "spec.replicas must be at least 0";
	if (json_object_get(spec, "weight") && !json_is_null(json_object_get(spec, "weight")))
		return "'weight' is not supported on static NodePools";
	for (uint32_t i = 0; i < np->n_limits; i++)
		if (!streq(np->limits[i].name, "nodes"))
			return "only 'limits.nodes' is supported on static NodePools";
	return NULL;
}

static int nodepool_v1(struct decoder *d, const json_t *spec, bool beta, struct proto_nodepool *np)
{
	const json_t *tmpl = json_object_get(spec, "template");
	const json_t *tspec = json_object_get(tmpl, "spec");
	const json_t *dis = json_object_get(spec, "disruption");
	const json_t *ref = json_object_get(tspec, "nodeClassRef");
	int r;

	np->source_api = beta ? PROTO_API_V1BETA1 : PROTO_API_V1;
	if ((r = decode_kv(d, json_path(tmpl, "metadata.labels"), "spec.template.metadata.labels",
			   PROTO_MAX_LABELS, PROTO_MAX_LABEL_VALUE_LEN, &np->labels, &np->n_labels)) < 0 ||
	    (r = decode_kv(d, json_path(tmpl, "metadata.annotations"),
			   "spec.template.metadata.annotations", PROTO_MAX_LABELS, PROTO_MAX_ANNOTATION_LEN, &np->annotations,
			   &np->n_annotations)) < 0 ||
	    (r = (beta ? decode_requirements : decode_karpenter_requirements)(
		     d, json_object_get(tspec, "requirements"), "spec.template.spec.requirements",
		     &np->requirements, &np->n_requirements)) < 0 ||
	    (r = decode_taints(d, json_object_get(tspec, "taints"), "spec.template.spec.taints",
			       &np->taints, &np->n_taints)) < 0 ||
	    (r = decode_taints(d, json_object_get(tspec, "startupTaints"),
			       "spec.template.spec.startupTaints", &np->startup_taints,
			       &np->n_startup_taints)) < 0)
		return r;
	if (json_is_object(ref)) {
		if ((r = decode_string(d, ref, "name", "spec.template.spec.nodeClassRef",
				       &np->nodeclass_ref.name)) < 0 ||
		    (r = decode_string(d, ref, "kind", "spec.template.spec.nodeClassRef",
				       &np->nodeclass_ref.kind)) < 0 ||
		    (r = decode_string(d, ref, beta ? "apiVersion" : "group",
				       "spec.template.spec.nodeClassRef", &np->nodeclass_ref.group)) < 0)
			return r;
		/* v1beta1 names the class by apiVersion ("karpenter.k8s.aws/v1beta1");
		 * the v1 NodeClaims kanna writes take its group only, as
		 * Karpenter's conversion does (schema.ParseGroupVersion), and the
		 * NodeClaim CRD's group pattern ^[^/]*$ requires. */
		if (beta && np->nodeclass_ref.group && strchr(np->nodeclass_ref.group, '/'))
			*strchr(np->nodeclass_ref.group, '/') = '\0';
	}
	np->expire_after_s = DEFAULT_EXPIRE_AFTER_S;
	if ((r = decode_duration(d, json_object_get(beta ? dis : tspec, "expireAfter"),
				 beta ? "spec.disruption.expireAfter" : "spec.template.spec.expireAfter",
				 &np->expire_after_s)) < 0 ||
	    (r = decode_duration(d, json_object_get(tspec, "terminationGracePeriod"),
				 "spec.template.spec.terminationGracePeriod",
				 &np->termination_grace_period_s)) < 0 ||
	    (r = consolidation_policy(d, json_string_value(json_object_get(dis, "consolidationPolicy")),
				      beta ? PROTO_CONSOLIDATE_WHEN_UNDERUTILIZED :
					     PROTO_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED,
				      &np->consolidation_policy)) < 0 ||
	    (r = decode_duration(d, json_object_get(dis, "consolidateAfter"),
				 "spec.disruption.consolidateAfter", &np->consolidate_after_s)) < 0 ||
	    (r = budgets(d, json_object_get(dis, "budgets"), np)) < 0 ||
	    (r = decode_resources(d, json_object_get(spec, "limits"), "spec.limits", &np->limits,
				  &np->n_limits)) < 0)
		return r;
	if (beta)
		return decode_kubelet(d, json_object_get(tspec, "kubelet"), "spec.template.spec.kubelet",
			       &np->kubelet);
	return static_replicas(d, json_object_get(spec, "replicas"), np);
}

static int provisioner_v1alpha5(struct decoder *d, const json_t *spec, struct proto_nodepool *np)
{
	const json_t *empty = json_object_get(spec, "ttlSecondsAfterEmpty");
	const json_t *expire = json_object_get(spec, "ttlSecondsUntilExpired");
	const json_t *ref = json_object_get(spec, "providerRef");
	int r;

	np->source_api = PROTO_API_V1ALPHA5;
	if ((r = decode_kv(d, json_object_get(spec, "labels"), "spec.labels", PROTO_MAX_LABELS, PROTO_MAX_LABEL_VALUE_LEN, &np->labels,
			   &np->n_labels)) < 0 ||
	    (r = decode_kv(d, json_object_get(spec, "annotations"), "spec.annotations",
			   PROTO_MAX_LABELS, PROTO_MAX_ANNOTATION_LEN, &np->annotations, &np->n_annotations)) < 0 ||
	    (r = decode_requirements(d, json_object_get(spec, "requirements"), "spec.requirements",
				     &np->requirements, &np->n_requirements)) < 0 ||
	    (r = decode_taints(d, json_object_get(spec, "taints"), "spec.taints", &np->taints,
			       &np->n_taints)) < 0 ||
	    (r = decode_taints(d, json_object_get(spec, "startupTaints"), "spec.startupTaints",
			       &np->startup_taints, &np->n_startup_taints)) < 0 ||
	    (r = decode_resources(d, json_path(spec, "limits.resources"), "spec.limits.resources",
				  &np->limits, &np->n_limits)) < 0 ||
	    (r = decode_kubelet(d, json_object_get(spec, "kubeletConfiguration"),
			 "spec.kubeletConfiguration", &np->kubelet)) < 0)
		return r;
	if ((r = provisioner_defaults(d, np)) < 0)
		return r;
	if (empty && !json_is_integer(empty))
		return decode_fail(d, "spec.ttlSecondsAfterEmpty: expected an integer");
	if (expire && !json_is_integer(expire))
		return decode_fail(d, "spec.ttlSecondsUntilExpired: expected an integer");
	if (json_is_true(json_path(spec, "consolidation.enabled"))) {
		if (empty)
			return decode_fail(d, "spec: consolidation.enabled and ttlSecondsAfterEmpty "
					   "are mutually exclusive");
		np->consolidation_policy = PROTO_CONSOLIDATE_WHEN_UNDERUTILIZED;
	} else {
		np->consolidation_policy = PROTO_CONSOLIDATE_WHEN_EMPTY;
		/* No ttlSecondsAfterEmpty: empty nodes are never removed. */
		np->consolidate_after_s = empty ? json_integer_value(empty) : -1;
	}
	np->expire_after_s = expire ? json_integer_value(expire) : -1;
	np->budgets = arena_calloc(d->arena, 1, sizeof(*np->budgets));
	if (!np->budgets || !(np->budgets[0].nodes = arena_strdup(d->arena, DEFAULT_BUDGET_NODES)))
		return -ENOMEM;
	np->n_budgets = 1;
	/* providerRef names an AWSNodeTemplate; an inline provider becomes a
	 * node class named after the Provisioner (decode_nodeclass). */
	if (json_is_object(ref)) {
		const char *api = json_string_value(json_object_get(ref, "apiVersion"));
		const char *kind = json_string_value(json_object_get(ref, "kind"));

		/* Kept only when they name something else, which refuses the
		 * Provisioner (decode_nodepool): a reference to the
		 * AWSNodeTemplate reads, hashes and writes as before. */
		if (!decode_nodeclass_ref_supported(api, kind, true) &&
		    ((r = decode_string(d, ref, "apiVersion", "spec.providerRef", &np->nodeclass_ref.group)) < 0 ||
		     (r = decode_string(d, ref, "kind", "spec.providerRef", &np->nodeclass_ref.kind)) < 0))
			return r;
		return decode_string(d, ref, "name", "spec.providerRef", &np->nodeclass_ref.name);
	}
	if (json_is_object(json_object_get(spec, "provider")) &&
	    !(np->nodeclass_ref.name = arena_strdup(d->arena, np->name)))
		return -ENOMEM;
	return 0;
}

/* The v1beta1 kubelet that upstream's conversion webhook keeps on a v1
 * NodePool (kubernetes-sigs/karpenter pkg/apis/v1: KubeletCompatibility-
 * AnnotationKey, JSON); in Karpenter v1.0 it takes precedence over the
 * EC2NodeClass's kubelet when nodes are launched (model/kubelet.c). */
#define KUBELET_COMPATIBILITY_ANNOTATION "compatibility.karpenter.sh/v1beta1-kubelet-conversion"

/*
 * "where.a, where.b are not supported by kanna" for the kubelet fields k
 * sets that kanna does not honour (the EC2NodeClass's UnsupportedField
 * list, and a v1alpha5 containerRuntime other than containerd, the only
 * runtime kanna's bootstrap starts), or NULL.
 */
static int kubelet_unsupported(struct decoder *d, const json_t *k, const char *where, bool v1alpha5,
			       char **ret)
{
	const json_t *runtime = json_object_get(k, "containerRuntime");
	char text[PROTO_MAX_TEXT_LEN + 1];
	size_t len = 0;
	unsigned n = 0;

	*ret = NULL;
	for (size_t i = 0; i < decode_kubelet_n_unsupported_fields && len < sizeof(text); i++)
		if (json_object_get(k, decode_kubelet_unsupported_fields[i]))
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s.%s", n++ ? ", " : "",
						where, decode_kubelet_unsupported_fields[i]);
	if (v1alpha5 && runtime && !streq_ptr(json_string_value(runtime), "containerd") &&
	    len < sizeof(text))
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s.containerRuntime",
					n++ ? ", " : "", where);
	if (!n)
		return 0;
	if (len < sizeof(text))
		snprintf(text + len, sizeof(text) - len, " %s not supported by kanna",
			 n == 1 ? "is" : "are");
	*ret = arena_strdup(d->arena, text);
	return *ret ? 0 : -ENOMEM;
}

/* The kubelet settings of the pool's version (v1alpha5 kubeletConfiguration
 * and v1beta1 template kubelet are decoded with the spec; a v1 NodePool's
 * come from the conversion annotation), and what of them kanna refuses. */
static int nodepool_kubelet(struct decoder *d, const json_t *spec, const json_t *annotations,
			    bool provisioner, bool beta, struct proto_nodepool *np, char **unsupported)
{
	const char *where = "metadata.annotations." KUBELET_COMPATIBILITY_ANNOTATION;
	const json_t *compat = json_object_get(annotations, KUBELET_COMPATIBILITY_ANNOTATION);
	json_t *k;
	int r;

	if (provisioner)
		return kubelet_unsupported(d, json_object_get(spec, "kubeletConfiguration"),
					   "spec.kubeletConfiguration", true, unsupported);
	if (beta)
		return kubelet_unsupported(d, json_path(spec, "template.spec.kubelet"),
					   "spec.template.spec.kubelet", false, unsupported);
	if (!compat)
		return 0;
	k = json_is_string(compat) ? json_loads(json_string_value(compat), 0, NULL) : NULL;
	if (!json_is_object(k)) {
		json_decref(k);
		return decode_fail(d, "%s: expected the JSON of a v1beta1 kubelet configuration", where);
	}
	r = decode_kubelet(d, k, where, &np->kubelet);
	if (r >= 0)
		r = kubelet_unsupported(d, k, where, false, unsupported);
	json_decref(k);
	return r;
}

/*
 * A nodeClassRef (providerRef) naming another kind of node class than the
 * one kanna launches with, or NULL. Karpenter v1 looks that class up among
 * its own kinds only and sets NodeClassReady=False NodeClassNotFound
 * (nodepool/readiness), and provisions nothing into the NodePool; kanna
 * refuses the pool, never looks the name up as an EC2NodeClass.
 */
static const char *nodeclass_ref_problem(const struct proto_nodepool *np, char *buf, size_t size)
{
	bool v1alpha5 = np->source_api == PROTO_API_V1ALPHA5;
	const char *where = v1alpha5 ? "spec.providerRef" : "spec.template.spec.nodeClassRef";

	if (decode_nodeclass_ref_supported(np->nodeclass_ref.group, np->nodeclass_ref.kind, v1alpha5))
		return NULL;
	snprintf(buf, size, "%s: NodeClass not found on cluster: %s %s %s is not %s %s, "
		 "the only node class kanna launches with", where,
		 np->source_api == PROTO_API_V1 ? "group" : "apiVersion",
		 np->nodeclass_ref.group ?: "(default)", np->nodeclass_ref.kind ?: "(default kind)",
		 NODECLASS_REF_DEFAULT_GROUP, v1alpha5 ? "AWSNodeTemplate" : NODECLASS_REF_DEFAULT_KIND);
	return buf;
}

/* A min-savings annotation as written; one that is not a short string is
 * carried as "<malformed>", so that the watcher reports it and the reaper
 * ignores it, and the NodePool itself stays valid. */
static int min_savings(struct decoder *d, const json_t *annotations, const char *key, char **ret)
{
	const json_t *v = json_object_get(annotations, key);
	const char *s = json_string_value(v);

	*ret = NULL;
	if (!v)
		return 0;
	*ret = arena_strdup(d->arena, s && strlen(s) <= PROTO_MAX_NAME_LEN ? s : "<malformed>");
	return *ret ? 0 : -ENOMEM;
}

int decode_nodepool(struct decoder *d, const json_t *obj, struct proto_nodepool *np)
{
	const char *api = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const json_t *spec = json_object_get(obj, "spec");
	bool provisioner = streq_ptr(kind, "Provisioner") || streq_ptr(api, "karpenter.sh/v1alpha5");
	bool beta = streq_ptr(api, "karpenter.sh/v1beta1");
	struct decoded_meta m;
	char why[512];
	char *unsupported = NULL;
	const char *problem;
	int r;

	*np = (struct proto_nodepool){ 0 };
	if ((r = decode_metadata(d, obj, provisioner ? "Provisioner" : "NodePool", false, &m)) < 0)
		return r;
	np->name = m.name;
	np->uid = m.uid;
	np->resource_version = m.resource_version;
	np->creation_time = m.creation_ms;
	if (!json_is_object(spec))
		r = decode_fail(d, "spec is missing");
	else if (provisioner)
		r = provisioner_v1alpha5(d, spec, np);
	else
		r = nodepool_v1(d, spec, beta, np);
	if (r >= 0)
		r = nodepool_kubelet(d, spec, m.annotations, provisioner, beta, np, &unsupported);
	r = decode_prefix(d, provisioner ? "provisioner" : "nodepool", NULL, m.name, r);
	if (r < 0)
		return r;
	np->weight = (int32_t)json_integer_value(json_object_get(spec, "weight"));
	if ((r = min_savings(d, m.annotations, KANNA_MIN_SAVINGS_PER_HOUR_ANNOTATION,
			     &np->min_savings_per_hour)) < 0 ||
	    (r = min_savings(d, m.annotations, KANNA_MIN_SAVINGS_PERCENT_ANNOTATION,
			     &np->min_savings_percent)) < 0)
		return r;
	/* v1alpha5 defaults are appended after the user's requirements: the
	 * indexes of the user's own stay as written. */
	problem = requirements_problem(np->requirements, np->n_requirements,
				       provisioner ? "spec.requirements" : "spec.template.spec.requirements",
				       why, sizeof(why));
	if (!problem)
		problem = static_problem(spec, np);
	if (!problem && np->weight < 0)
		problem = "weight must be between 0 and 100";
	if (!problem && np->weight > 100)
		problem = "weight must be between 0 and 100";
	/* Refused, not launched without it (as an EC2NodeClass's field). */
	if (!problem)
		problem = unsupported;
	if (!problem)
		problem = nodeclass_ref_problem(np, why, sizeof(why));
	if (problem) {
		np->status = PROTO_NODEPOOL_INVALID;
		if (!(np->status_reason = arena_strdup(d->arena, problem)))
			return -ENOMEM;
	}
	return decode_nodepool_hash(d, np);
}

int decode_nodeclaim(struct decoder *d, const json_t *obj, struct proto_nodeclaim *nc)
{
	const json_t *spec = json_object_get(obj, "spec"), *status = json_object_get(obj, "status");
	const json_t *planned, *ref = json_object_get(spec, "nodeClassRef");
	const char *ct;
	struct decoded_meta m;
	int r;

	*nc = (struct proto_nodeclaim){ 0 };
	if ((r = decode_metadata(d, obj, "NodeClaim", false, &m)) < 0)
		return r;
	nc->name = m.name;
	nc->uid = m.uid;
	nc->resource_version = m.resource_version;
	nc->creation_time = m.creation_ms;
	nc->deletion_time = m.deletion_ms;
	if ((r = decode_kv(d, m.labels, "metadata.labels", PROTO_MAX_LABELS, PROTO_MAX_LABEL_VALUE_LEN, &nc->labels, &nc->n_labels)) < 0 ||
	    (r = decode_karpenter_requirements(d, json_object_get(spec, "requirements"),
					       "spec.requirements", &nc->requirements,
					       &nc->n_requirements)) < 0 ||
	    (r = decode_resources(d, json_path(spec, "resources.requests"), "spec.resources.requests",
				  &nc->requests, &nc->n_requests)) < 0 ||
	    (r = decode_taints(d, json_object_get(spec, "taints"), "spec.taints", &nc->taints,
			       &nc->n_taints)) < 0 ||
	    (r = decode_taints(d, json_object_get(spec, "startupTaints"), "spec.startupTaints",
			       &nc->startup_taints, &nc->n_startup_taints)) < 0 ||
	    (r = decode_duration(d, json_object_get(spec, "expireAfter"), "spec.expireAfter",
				 &nc->expire_after_s)) < 0 ||
	    (r = decode_duration(d, json_object_get(spec, "terminationGracePeriod"),
				 "spec.terminationGracePeriod", &nc->termination_grace_period_s)) < 0 ||
	    (r = decode_string(d, status, "providerID", "status", &nc->provider_id)) < 0 ||
	    (r = decode_string(d, status, "nodeName", "status", &nc->node_name)) < 0 ||
	    (r = decode_string(d, status, "imageID", "status", &nc->image_id)) < 0 ||
	    (r = decode_resources(d, json_object_get(status, "capacity"), "status.capacity",
				  &nc->capacity, &nc->n_capacity)) < 0 ||
	    (r = decode_resources(d, json_object_get(status, "allocatable"), "status.allocatable",
				  &nc->allocatable, &nc->n_allocatable)) < 0 ||
	    (r = decode_conditions(d, json_object_get(status, "conditions"), "status.conditions",
				   &nc->conditions, &nc->n_conditions)) < 0 ||
	    (r = decode_time(d, status, "lastPodEventTime", "status", &nc->last_pod_event_time)) < 0 ||
	    (r = decode_string(d, m.annotations, KARPENTER_NODEPOOL_HASH_ANNOTATION, "metadata.annotations",
			       &nc->nodepool_hash)) < 0 ||
	    (r = decode_string(d, m.annotations, KARPENTER_NODEPOOL_HASH_VERSION_ANNOTATION,
			       "metadata.annotations", &nc->nodepool_hash_version)) < 0 ||
	    (r = decode_string(d, m.annotations, KARPENTER_NODECLASS_HASH_ANNOTATION,
			       "metadata.annotations", &nc->nodeclass_hash)) < 0 ||
	    (r = decode_string(d, m.annotations, KARPENTER_NODECLASS_HASH_VERSION_ANNOTATION,
			       "metadata.annotations", &nc->nodeclass_hash_version)) < 0 ||
	    (r = decode_string(d, m.annotations, "kanna.dev/fleet-batch", "metadata.annotations",
			       &nc->fleet_batch)) < 0 ||
	    (r = decode_strings(d, json_path(obj, "metadata.finalizers"), "metadata.finalizers",
				&nc->finalizers, &nc->n_finalizers)) < 0)
		goto fail;
	if (nc->n_finalizers > PROTO_MAX_FINALIZERS) {
		r = decode_fail(d, "metadata.finalizers: more than %u", PROTO_MAX_FINALIZERS);
		goto fail;
	}
	nc->do_not_disrupt = streq_ptr(json_string_value(json_object_get(m.annotations,
						ANNOTATION_DO_NOT_DISRUPT)), "true");
	if (json_is_object(ref) &&
	    (r = decode_string(d, ref, "name", "spec.nodeClassRef", &nc->nodeclass)) < 0)
		goto fail;
	/* Another provider's NodeClaim: Karpenter's controllers leave a claim
	 * whose class is not one of theirs alone, and so does kanna — it is
	 * reported (FailedValidation names the field), never launched with the
	 * EC2NodeClass of the same name. A group with a version (kanna wrote
	 * the apiVersion of a v1beta1 NodePool's ref there) counts by group. */
	if (json_is_object(ref) &&
	    !decode_nodeclass_ref_supported(json_string_value(json_object_get(ref, "group")),
					    json_string_value(json_object_get(ref, "kind")), false)) {
		r = decode_fail(d, "spec.nodeClassRef: %s %s is not %s %s, the only node class kanna launches with",
				json_string_value(json_object_get(ref, "group")) ?: "(no group)",
				json_string_value(json_object_get(ref, "kind")) ?: "(no kind)",
				NODECLASS_REF_DEFAULT_GROUP, NODECLASS_REF_DEFAULT_KIND);
		goto fail;
	}
	for (uint32_t i = 0; i < nc->n_labels; i++) {
		char *k = nc->labels[i].key, *v = nc->labels[i].value;
		if (streq(k, "karpenter.sh/nodepool"))
			nc->nodepool = v;
		else if (streq(k, "node.kubernetes.io/instance-type"))
			nc->instance_type = v;
		else if (streq(k, "topology.kubernetes.io/zone"))
			nc->zone = v;
	}
	ct = NULL;
	for (uint32_t i = 0; i < nc->n_labels; i++)
		if (streq(nc->labels[i].key, "karpenter.sh/capacity-type"))
			ct = nc->labels[i].value;
	nc->capacity_type = ct && streq(ct, "spot") ? PROTO_CAPACITY_SPOT :
			    ct && streq(ct, "reserved") ? PROTO_CAPACITY_RESERVED :
							  PROTO_CAPACITY_ON_DEMAND;
	planned = json_object_get(m.annotations, ANNOTATION_PLANNED_PODS);
	if (planned) {
		json_t *list = json_is_string(planned) ?
				       json_loads(json_string_value(planned), 0, NULL) : NULL;
		r = list ? decode_strings(d, list, "metadata.annotations." ANNOTATION_PLANNED_PODS,
					  &nc->planned_pods, &nc->n_planned_pods) :
			   decode_fail(d, "metadata.annotations." ANNOTATION_PLANNED_PODS
				       ": expected a JSON list of namespace/name");
		json_decref(list);
		if (r >= 0 && nc->n_planned_pods > PROTO_MAX_POD_KEYS)
			r = decode_fail(d, "metadata.annotations." ANNOTATION_PLANNED_PODS
					": more than %u pods", PROTO_MAX_POD_KEYS);
		if (r < 0)
			goto fail;
	}
	return 0;
fail:
	return decode_prefix(d, "nodeclaim", NULL, m.name, r);
}
