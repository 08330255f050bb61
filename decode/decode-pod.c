/*
 * Pods and DaemonSets (whose pod template is what they cost each node).
 * The effective request follows the kubelet: restartable init containers
 * (sidecars) run beside everything after them, so a pod needs
 * max(sum(containers) + sum(sidecars), max over init i of (init_i + sidecars
 * started before i)) plus its overhead.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantity.h"
#include "proto/schema.h"
#include "decode/decode.h"

/* A small resource vector keyed by name, for adding and maxing lists. */
struct res_vec {
	struct proto_resource *r;
	uint32_t n, cap;
};

static int vec_find(struct decoder *d, struct res_vec *v, const char *name)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (streq(v->r[i].name, name))
			return (int)i;
	if (v->n == v->cap) {
		uint32_t cap = v->cap ? v->cap * 2 : 8;
		struct proto_resource *n = arena_calloc(d->arena, cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		if (v->n)
			memcpy(n, v->r, v->n * sizeof(*n));
		v->r = n;
		v->cap = cap;
	}
	if (v->n >= PROTO_MAX_RESOURCES)
		return decode_fail(d, "more than %u distinct resources requested", PROTO_MAX_RESOURCES);
	v->r[v->n].name = arena_strdup(d->arena, name);
	if (!v->r[v->n].name)
		return -ENOMEM;
	v->r[v->n].value = 0;
	return (int)v->n++;
}

static int vec_add(struct decoder *d, struct res_vec *dst, const struct res_vec *src)
{
	for (uint32_t i = 0; i < src->n; i++) {
		int k = vec_find(d, dst, src->r[i].name);
		if (k < 0)
			return k;
		dst->r[k].value += src->r[i].value;
	}
	return 0;
}

static int vec_max(struct decoder *d, struct res_vec *dst, const struct res_vec *src)
{
	for (uint32_t i = 0; i < src->n; i++) {
		int k = vec_find(d, dst, src->r[i].name);
		if (k < 0)
			return k;
		if (src->r[i].value > dst->r[k].value)
			dst->r[k].value = src->r[i].value;
	}
	return 0;
}

/*
 * A pod's resource list (requests, limits, overhead). A negative quantity
 * is invalid input, refused here: the API server refuses it at admission
 * ("must be greater than or equal to 0"), but an object written before
 * that check, or offline input, may carry one, and packed it would make
 * room that is not there (a -30 cpu pod once pulled eight 4-cpu pods onto
 * a 7.91-cpu node).
 */
static int pod_resources(struct decoder *d, const json_t *map, const char *where,
			 struct proto_resource **ret, uint32_t *n)
{
	int r = decode_resources(d, map, where, ret, n);

	for (uint32_t i = 0; r >= 0 && i < *n; i++) {
		const json_t *v = json_object_get(map, (*ret)[i].name);
		char text[32];

		if ((*ret)[i].value >= 0)
			continue;
		if (json_is_integer(v))
			snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		else
			snprintf(text, sizeof(text), "%s", json_string_value(v));
		r = decode_fail(d, "%s.%s: negative quantity %s", where, (*ret)[i].name, text);
	}
	return r;
}

static int container_requests(struct decoder *d, const json_t *c, const char *where,
			      struct res_vec *ret)
{
	const json_t *res = json_object_get(c, "resources");
	struct proto_resource *list;
	uint32_t n;
	char at[256];
	int r;

	*ret = (struct res_vec){ 0 };
	r = pod_resources(d, decode_path_of(json_object_get(res, "requests"), at, sizeof(at),
					    "%s.resources.requests", where),
			  at, &list, &n);
	if (r < 0)
		return r;
	ret->r = list;
	ret->n = ret->cap = n;
	/* The API server defaults each resource's request to its limit; offline
	 * input (--simulate) may not have been through it. */
	r = pod_resources(d, decode_path_of(json_object_get(res, "limits"), at, sizeof(at),
					    "%s.resources.limits", where),
			  at, &list, &n);
	for (uint32_t i = 0; r >= 0 && i < n; i++) {
		bool requested = false;
		for (uint32_t k = 0; k < ret->n && !requested; k++)
			requested = streq(ret->r[k].name, list[i].name);
		if (requested)
			continue;
		if ((r = vec_find(d, ret, list[i].name)) >= 0)
			ret->r[r].value = list[i].value;
	}
	return r < 0 ? r : 0;
}

/* The pod's effective request (see the top of the file). */
static int pod_requests(struct decoder *d, const json_t *spec, const char *where,
			struct proto_resource **ret, uint32_t *n)
{
	struct res_vec main = { 0 }, sidecars = { 0 }, init_peak = { 0 }, one;
	const json_t *c;
	char at[256];
	size_t i;
	int r;

	json_array_foreach(json_object_get(spec, "initContainers"), i, c) {
		decode_path(at, sizeof(at), "%s.initContainers[%zu]", where, i);
		if ((r = container_requests(d, c, at, &one)) < 0)
			return r;
		if (streq_ptr(json_string_value(json_object_get(c, "restartPolicy")), "Always")) {
			if ((r = vec_add(d, &sidecars, &one)) < 0)
				return r;
			continue;
		}
		/* This init container runs beside the sidecars started so far. */
		struct res_vec with = { 0 };
		if ((r = vec_add(d, &with, &one)) < 0 || (r = vec_add(d, &with, &sidecars)) < 0 ||
		    (r = vec_max(d, &init_peak, &with)) < 0)
			return r;
	}
	json_array_foreach(json_object_get(spec, "containers"), i, c) {
		decode_path(at, sizeof(at), "%s.containers[%zu]", where, i);
		if ((r = container_requests(d, c, at, &one)) < 0 || (r = vec_add(d, &main, &one)) < 0)
			return r;
	}
	if ((r = vec_add(d, &main, &sidecars)) < 0 || (r = vec_max(d, &main, &init_peak)) < 0)
		return r;
	{
		struct proto_resource *ov;
		uint32_t nov;
		if ((r = pod_resources(d, decode_path_of(json_object_get(spec, "overhead"), at,
							 sizeof(at), "%s.overhead", where),
				       at, &ov, &nov)) < 0)
			return r;
		one = (struct res_vec){ ov, nov, nov };
		if ((r = vec_add(d, &main, &one)) < 0)
			return r;
	}
	*ret = main.r;
	*n = main.n;
	return 0;
}

static int affinity_terms(struct decoder *d, const json_t *arr, const char *where,
			  struct proto_pod_affinity_term **ret, uint32_t *n)
{
	const json_t *e;
	char at[256];
	size_t i;
	int r;

	r = decode_list(d, arr, where, PROTO_MAX_AFFINITY_TERMS, "terms", sizeof(**ret), (void **)ret);
	*n = 0;
	if (r <= 0)
		return r;
	json_array_foreach(arr, i, e) {
		struct proto_pod_affinity_term *t = &(*ret)[i];
		const json_t *nss = json_object_get(e, "namespaceSelector");

		decode_path(at, sizeof(at), "%s[%zu]", where, i);
		if ((r = decode_string(d, e, "topologyKey", at, &t->topology_key)) < 0)
			return r;
		if (!t->topology_key || !*t->topology_key)
			return decode_fail(d, "%s.topologyKey: is required", at);
		decode_path(at, sizeof(at), "%s[%zu].labelSelector", where, i);
		if ((r = decode_label_selector(d, json_object_get(e, "labelSelector"), at,
					       &t->selector)) < 0)
			return r;
		decode_path(at, sizeof(at), "%s[%zu].namespaces", where, i);
		if ((r = decode_strings(d, json_object_get(e, "namespaces"), at, &t->namespaces,
					&t->n_namespaces)) < 0)
			return r;
		if (json_is_object(nss)) {
			t->has_namespace_selector = true;
			decode_path(at, sizeof(at), "%s[%zu].namespaceSelector", where, i);
			if ((r = decode_label_selector(d, nss, at, &t->namespace_selector)) < 0)
				return r;
		}
		decode_path(at, sizeof(at), "%s[%zu].matchLabelKeys", where, i);
		if ((r = decode_strings(d, json_object_get(e, "matchLabelKeys"), at,
					&t->match_label_keys, &t->n_match_label_keys)) < 0)
			return r;
	}
	*n = (uint32_t)json_array_size(arr);
	return 0;
}

static int weighted_terms(struct decoder *d, const json_t *arr, const char *where,
			  struct proto_weighted_affinity_term **ret, uint32_t *n)
{
	const json_t *e;
	char at[256];
	size_t i;
	int r;

	r = decode_list(d, arr, where, PROTO_MAX_AFFINITY_TERMS, "terms", sizeof(**ret), (void **)ret);
	*n = 0;
	if (r <= 0)
		return r;
	json_array_foreach(arr, i, e) {
		struct proto_pod_affinity_term *one;
		uint32_t k;
		json_t *wrap = json_array();

		decode_path(at, sizeof(at), "%s[%zu].podAffinityTerm", where, i);
		if (!wrap)
			return -ENOMEM;
		if (!json_is_object(json_object_get(e, "podAffinityTerm"))) {
			json_decref(wrap);
			return decode_fail(d, "%s: is required", at);
		}
		json_array_append(wrap, json_object_get(e, "podAffinityTerm"));
		r = affinity_terms(d, wrap, at, &one, &k);
		json_decref(wrap);
		if (r < 0)
			return r;
		(*ret)[i].weight = (int32_t)json_integer_value(json_object_get(e, "weight"));
		(*ret)[i].term = one[0];
	}
	*n = (uint32_t)json_array_size(arr);
	return 0;
}

static int spread_constraints(struct decoder *d, const json_t *arr, const char *where,
			      struct proto_pod_template *p)
{
	const json_t *e;
	char at[256];
	size_t i;
	int r;

	r = decode_list(d, arr, where, PROTO_MAX_SPREAD, "constraints", sizeof(*p->topology_spread),
			(void **)&p->topology_spread);
	if (r <= 0)
		return r;
	json_array_foreach(arr, i, e) {
		struct proto_spread_constraint *c = &p->topology_spread[i];
		const char *when = json_string_value(json_object_get(e, "whenUnsatisfiable"));
		const char *pol;

		decode_path(at, sizeof(at), "%s[%zu]", where, i);
		c->max_skew = (int32_t)json_integer_value(json_object_get(e, "maxSkew"));
		if (c->max_skew < 1)
			return decode_fail(d, "%s.maxSkew: must be at least 1", at);
		if ((r = decode_string(d, e, "topologyKey", at, &c->topology_key)) < 0)
			return r;
		if (!c->topology_key)
			return decode_fail(d, "%s.topologyKey: is required", at);
		c->when_unsatisfiable = when && streq(when, "ScheduleAnyway") ?
						PROTO_UNSATISFIABLE_SCHEDULE_ANYWAY :
						PROTO_UNSATISFIABLE_DO_NOT_SCHEDULE;
		c->min_domains = (int32_t)json_integer_value(json_object_get(e, "minDomains"));
		pol = json_string_value(json_object_get(e, "nodeAffinityPolicy"));
		c->node_affinity_policy = !pol ? PROTO_POLICY_UNSET :
					  streq(pol, "Ignore") ? PROTO_POLICY_IGNORE : PROTO_POLICY_HONOR;
		pol = json_string_value(json_object_get(e, "nodeTaintsPolicy"));
		c->node_taints_policy = !pol ? PROTO_POLICY_UNSET :
					streq(pol, "Honor") ? PROTO_POLICY_HONOR : PROTO_POLICY_IGNORE;
		decode_path(at, sizeof(at), "%s[%zu].labelSelector", where, i);
		if ((r = decode_label_selector(d, json_object_get(e, "labelSelector"), at,
					       &c->selector)) < 0)
			return r;
		decode_path(at, sizeof(at), "%s[%zu].matchLabelKeys", where, i);
		if ((r = decode_strings(d, json_object_get(e, "matchLabelKeys"), at,
					&c->match_label_keys, &c->n_match_label_keys)) < 0)
			return r;
	}
	p->n_topology_spread = (uint32_t)json_array_size(arr);
	return 0;
}

static int node_affinity(struct decoder *d, const json_t *spec, const char *where,
			 struct proto_node_selector_term **req, uint32_t *n_req,
			 struct proto_preferred_term **pref, uint32_t *n_pref)
{
	const json_t *na = json_path(spec, "affinity.nodeAffinity"), *e;
	char at[256];
	size_t i;
	int r;

	if (pref) {
		*pref = NULL;
		*n_pref = 0;
	}
	decode_path(at, sizeof(at), "%s.affinity.nodeAffinity.required…nodeSelectorTerms", where);
	r = decode_node_selector_terms(
		d, json_path(na, "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"), at,
		req, n_req);
	if (r < 0 || !pref)
		return r;
	e = json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution");
	if (!json_is_array(e))
		return 0;
	*pref = arena_calloc(d->arena, json_array_size(e) + 1, sizeof(**pref));
	if (!*pref)
		return -ENOMEM;
	const json_t *arr = e;
	json_array_foreach(arr, i, e) {
		decode_path(at, sizeof(at), "%s.affinity.nodeAffinity.preferred…[%zu].preference", where, i);
		(*pref)[i].weight = (int32_t)json_integer_value(json_object_get(e, "weight"));
		r = decode_requirements(d, json_path(e, "preference.matchExpressions"), at,
					&(*pref)[i].term.requirements, &(*pref)[i].term.n_requirements);
		if (r < 0)
			return r;
	}
	*n_pref = (uint32_t)json_array_size(arr);
	return 0;
}

static int pod_volumes(struct decoder *d, const json_t *spec, const char *pod_name,
		       struct proto_pod_template *p)
{
	const json_t *vols = json_object_get(spec, "volumes"), *v;
	size_t i;
	uint32_t k = 0;

	p->pvc_names = arena_calloc(d->arena, json_array_size(vols) + 1, sizeof(char *));
	if (!p->pvc_names)
		return -ENOMEM;
	json_array_foreach(vols, i, v) {
		const char *claim = json_string_value(json_path(v, "persistentVolumeClaim.claimName"));
		char buf[PROTO_MAX_NAME_LEN + 1];

		if (!claim && json_is_object(json_object_get(v, "ephemeral"))) {
			/* Generic ephemeral volume: the claim is named <pod>-<volume>. */
			snprintf(buf, sizeof(buf), "%s-%s", pod_name,
				 json_string_value(json_object_get(v, "name")) ?: "");
			claim = buf;
		}
		if (!claim)
			continue;
		if (k == PROTO_MAX_VOLUMES)
			return decode_fail(d, "spec.volumes: more than %u claims", PROTO_MAX_VOLUMES);
		p->pvc_names[k] = arena_strdup(d->arena, claim);
		if (!p->pvc_names[k++])
			return -ENOMEM;
	}
	p->n_pvc_names = k;
	return 0;
}

static int pod_host_ports(struct decoder *d, const json_t *spec, struct proto_pod_template *p)
{
	const json_t *c, *port;
	size_t i, j;
	uint32_t k = 0;

	p->host_ports = arena_calloc(d->arena, PROTO_MAX_HOST_PORTS, sizeof(*p->host_ports));
	if (!p->host_ports)
		return -ENOMEM;
	json_array_foreach(json_object_get(spec, "containers"), i, c) {
		json_array_foreach(json_object_get(c, "ports"), j, port) {
			json_int_t hp = json_integer_value(json_object_get(port, "hostPort"));
			const char *proto = json_string_value(json_object_get(port, "protocol"));
			const char *ip = json_string_value(json_object_get(port, "hostIP"));

			if (hp <= 0)
				continue;
			if (k == PROTO_MAX_HOST_PORTS)
				return decode_fail(d, "spec.containers: more than %u host ports",
						   PROTO_MAX_HOST_PORTS);
			p->host_ports[k].port = (uint32_t)hp;
			p->host_ports[k].protocol = !proto || streq(proto, "TCP") ? PROTO_PROTOCOL_TCP :
						    streq(proto, "UDP") ? PROTO_PROTOCOL_UDP :
									  PROTO_PROTOCOL_SCTP;
			if (ip && !(p->host_ports[k].host_ip = arena_strdup(d->arena, ip)))
				return -ENOMEM;
			k++;
		}
	}
	p->n_host_ports = k;
	return 0;
}

/* What the spec asks of nodes and neighbours. */
static int pod_constraints(struct decoder *d, const json_t *spec, const char *where,
			   const char *pod_name, struct proto_pod_template *p)
{
	const json_t *aff = json_object_get(spec, "affinity");
	char at[256];
	int r;

	if ((r = decode_kv(d, decode_path_of(json_object_get(spec, "nodeSelector"), at, sizeof(at),
					     "%s.nodeSelector", where),
			   at, PROTO_MAX_LABELS, PROTO_MAX_LABEL_VALUE_LEN, &p->node_selector,
			   &p->n_node_selector)) < 0)
		return r;
	if ((r = node_affinity(d, spec, where, &p->node_affinity_required,
			       &p->n_node_affinity_required, &p->node_affinity_preferred,
			       &p->n_node_affinity_preferred)) < 0)
		return r;
	if ((r = decode_tolerations(d, decode_path_of(json_object_get(spec, "tolerations"), at,
						      sizeof(at), "%s.tolerations", where),
				    at, &p->tolerations, &p->n_tolerations)) < 0)
		return r;
	if ((r = spread_constraints(d, decode_path_of(json_object_get(spec, "topologySpreadConstraints"),
						      at, sizeof(at), "%s.topologySpreadConstraints",
						      where),
				    at, p)) < 0)
		return r;
#define AFF(path, fn, field)                                                          \
	if ((r = fn(d, decode_path_of(json_path(aff, path), at, sizeof(at), "%s.affinity." path,  \
				      where),                                             \
		    at, &p->field, &p->n_##field)) < 0)                                   \
		return r;
	AFF("podAffinity.requiredDuringSchedulingIgnoredDuringExecution", affinity_terms,
	    pod_affinity_required)
	AFF("podAffinity.preferredDuringSchedulingIgnoredDuringExecution", weighted_terms,
	    pod_affinity_preferred)
	AFF("podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution", affinity_terms,
	    pod_anti_affinity_required)
	AFF("podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution", weighted_terms,
	    pod_anti_affinity_preferred)
#undef AFF
	if ((r = pod_volumes(d, spec, pod_name, p)) < 0)
		return r;
	return pod_host_ports(d, spec, p);
}

static int pod_owner_refs(struct decoder *d, const json_t *obj, struct proto_pod_template *p)
{
	const json_t *owners = json_path(obj, "metadata.ownerReferences"), *o;
	size_t i;
	int r;

	if (json_array_size(owners) > PROTO_MAX_OWNER_REFS)
		return decode_fail(d, "metadata.ownerReferences: more than %u", PROTO_MAX_OWNER_REFS);
	p->owner_refs = arena_calloc(d->arena, json_array_size(owners) + 1, sizeof(*p->owner_refs));
	if (!p->owner_refs)
		return -ENOMEM;
	json_array_foreach(owners, i, o) {
		struct proto_owner_ref *ref = &p->owner_refs[p->n_owner_refs];
		if ((r = decode_string(d, o, "kind", "metadata.ownerReferences", &ref->kind)) < 0 ||
		    (r = decode_string(d, o, "name", "metadata.ownerReferences", &ref->name)) < 0 ||
		    (r = decode_string(d, o, "uid", "metadata.ownerReferences", &ref->uid)) < 0)
			return r;
		if (!ref->kind || !ref->name)
			continue;
		ref->controller = json_is_true(json_object_get(o, "controller"));
		if (ref->controller && streq(ref->kind, "DaemonSet"))
			p->daemonset_owned = true;
		p->n_owner_refs++;
	}
	return 0;
}

/* The parts of the pod its workload's template decides, on pod->template
 * only when there are some (see proto_fields_pod_template: a store shares
 * equal templates). */
static int pod_template(struct decoder *d, const json_t *obj, const json_t *labels,
			const json_t *spec, struct proto_pod *pod)
{
	struct proto_pod_template *p = arena_calloc(d->arena, 1, sizeof(*p));
	const json_t *grace = json_object_get(spec, "terminationGracePeriodSeconds");
	int r;

	if (!p)
		return -ENOMEM;
	if ((r = decode_kv(d, labels, "metadata.labels", PROTO_MAX_LABELS, PROTO_MAX_LABEL_VALUE_LEN,
			   &p->labels, &p->n_labels)) < 0 ||
	    (r = pod_owner_refs(d, obj, p)) < 0 ||
	    (r = pod_requests(d, spec, "spec", &p->requests, &p->n_requests)) < 0 ||
	    (r = pod_constraints(d, spec, "spec", pod->name, p)) < 0 ||
	    (r = decode_string(d, spec, "schedulerName", "spec", &p->scheduler_name)) < 0)
		return r;
	p->priority = (int32_t)json_integer_value(json_object_get(spec, "priority"));
	/* The API server defaults it to 30 s; kanna-sim and old objects may omit it. */
	p->termination_grace_s = json_is_integer(grace) ? json_integer_value(grace) : 30;
	pod->template = p;
	pod->n_template = !proto_struct_is_default(&proto_desc_pod_template, p);
	return 0;
}

static int pod_phase(const char *s)
{
	static const char *const phases[] = { "Pending", "Running", "Succeeded", "Failed", "Unknown" };

	for (size_t i = 0; s && i < ARRAY_SIZE(phases); i++)
		if (streq(s, phases[i]))
			return (int)i;
	return PROTO_PHASE_PENDING;
}

double decode_pod_deletion_cost(const char *s)
{
	char *end;
	double v;

	/* strtod() takes what ParseFloat does not: leading space, and a hex
	 * mantissa without its p exponent. */
	if (!s || !*s || isspace((unsigned char)*s) ||
	    (strpbrk(s, "xX") && !strpbrk(s, "pP")))
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || isnan(v) || (errno == ERANGE && isinf(v)))
		return 0;
	return v > POD_DELETION_COST_MAX ? POD_DELETION_COST_MAX
	       : v < -POD_DELETION_COST_MAX ? -POD_DELETION_COST_MAX
					    : v;
}

int decode_pod(struct decoder *d, const json_t *obj, struct proto_pod *p)
{
	const json_t *spec = json_object_get(obj, "spec"), *status = json_object_get(obj, "status");
	const json_t *c;
	struct decoded_meta m;
	size_t i;
	int r;

	*p = (struct proto_pod){ 0 };
	if ((r = decode_metadata(d, obj, "Pod", true, &m)) < 0)
		return r;
	p->ns = m.ns;
	p->name = m.name;
	p->uid = m.uid;
	p->resource_version = m.resource_version;
	p->creation_time = m.creation_ms;
	p->deletion_time = m.deletion_ms;
	p->do_not_disrupt = streq_ptr(json_string_value(json_object_get(m.annotations,
									ANNOTATION_DO_NOT_DISRUPT)), "true");
	p->mirror = json_object_get(m.annotations, ANNOTATION_MIRROR_POD) != NULL;
	p->deletion_cost = decode_pod_deletion_cost(
		json_string_value(json_object_get(m.annotations, ANNOTATION_POD_DELETION_COST)));
	if (!json_is_object(spec)) {
		r = decode_fail(d, "spec is missing");
		goto fail;
	}
	if ((r = pod_template(d, obj, m.labels, spec, p)) < 0 ||
	    (r = decode_string(d, spec, "nodeName", "spec", &p->node_name)) < 0)
		goto fail;
	p->phase = (uint8_t)pod_phase(json_string_value(json_object_get(status, "phase")));
	p->scheduled = PROTO_COND_UNKNOWN;
	json_array_foreach(json_object_get(status, "conditions"), i, c) {
		if (!streq_ptr(json_string_value(json_object_get(c, "type")), "PodScheduled"))
			continue;
		p->scheduled = (uint8_t)decode_condition_status(
			json_string_value(json_object_get(c, "status")));
		if ((r = decode_string(d, c, "reason", "status.conditions", &p->scheduled_reason)) < 0)
			goto fail;
		/* When it was bound (the reaper's pod events, reaper/pod-events.c). */
		if (p->scheduled == PROTO_COND_TRUE)
			p->scheduled_time = decode_time_ms(json_object_get(c, "lastTransitionTime"));
	}
	return 0;
fail:
	return decode_prefix(d, "pod", m.ns, m.name, r);
}

int decode_daemonset(struct decoder *d, const json_t *obj, struct proto_daemonset *ds)
{
	const json_t *spec = json_path(obj, "spec.template.spec");
	struct decoded_meta m;
	int r;

	*ds = (struct proto_daemonset){ 0 };
	if ((r = decode_metadata(d, obj, "DaemonSet", true, &m)) < 0)
		return r;
	if (!json_is_object(spec))
		return decode_fail(d, "daemonset %s/%s: spec.template.spec is missing", m.ns, m.name);
	r = pod_requests(d, spec, "spec.template.spec", &ds->requests, &ds->n_requests);
	if (r >= 0)
		r = decode_kv(d, json_object_get(spec, "nodeSelector"), "spec.template.spec.nodeSelector",
			      PROTO_MAX_LABELS, PROTO_MAX_LABEL_VALUE_LEN, &ds->node_selector, &ds->n_node_selector);
	if (r >= 0)
		r = node_affinity(d, spec, "spec.template.spec", &ds->node_affinity_required,
				  &ds->n_node_affinity_required, NULL, NULL);
	if (r >= 0)
		r = decode_tolerations(d, json_object_get(spec, "tolerations"),
				       "spec.template.spec.tolerations", &ds->tolerations,
				       &ds->n_tolerations);
	if (r >= 0) {
		/* Its host ports are taken on every node it runs on. */
		struct proto_pod_template ports = { 0 };
		r = pod_host_ports(d, spec, &ports);
		ds->host_ports = ports.host_ports;
		ds->n_host_ports = ports.n_host_ports;
	}
	if (r < 0)
		return decode_prefix(d, "daemonset", m.ns, m.name, r);
	ds->ns = m.ns;
	ds->name = m.name;
	ds->uid = m.uid;
	ds->resource_version = m.resource_version;
	ds->priority = (int32_t)json_integer_value(json_object_get(spec, "priority"));
	return 0;
}
