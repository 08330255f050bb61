/*
 * Volumes and disruption budgets: PersistentVolumeClaims, PersistentVolumes
 * (and the zone their node affinity pins), StorageClasses (binding mode,
 * allowed topologies) and PodDisruptionBudgets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantity.h"
#include "decode/decode.h"

#define LABEL_ZONE "topology.kubernetes.io/zone"
#define LABEL_ZONE_BETA "failure-domain.beta.kubernetes.io/zone"

int decode_pvc(struct decoder *d, const json_t *obj, struct proto_pvc *p)
{
	const json_t *spec = json_object_get(obj, "spec");
	const char *phase = json_string_value(json_path(obj, "status.phase"));
	const char *storage = json_string_value(json_path(spec, "resources.requests.storage"));
	struct decoded_meta m;
	int r;

	*p = (struct proto_pvc){ 0 };
	if ((r = decode_metadata(d, obj, "PersistentVolumeClaim", true, &m)) < 0)
		return r;
	p->ns = m.ns;
	p->name = m.name;
	p->uid = m.uid;
	p->resource_version = m.resource_version;
	if ((r = decode_string(d, spec, "storageClassName", "spec", &p->storage_class)) < 0 ||
	    (r = decode_string(d, spec, "volumeName", "spec", &p->volume_name)) < 0 ||
	    (r = decode_string(d, m.annotations, ANNOTATION_SELECTED_NODE, "metadata.annotations",
			       &p->selected_node)) < 0)
		return decode_prefix(d, "persistentvolumeclaim", m.ns, m.name, r);
	if (storage && quantity_parse(storage, false, &p->storage_bytes) < 0)
		return decode_prefix(d, "persistentvolumeclaim", m.ns, m.name,
			      decode_fail(d, "spec.resources.requests.storage: '%s' is not a quantity",
					  storage));
	p->phase = phase && streq(phase, "Bound") ? PROTO_PVC_BOUND :
		   phase && streq(phase, "Lost") ? PROTO_PVC_LOST : PROTO_PVC_PENDING;
	return 0;
}

/* The single zone a PV's node affinity allows, if it allows exactly one. */
static const char *pv_zone(const struct proto_pv *pv)
{
	const char *zone = NULL;

	for (uint32_t t = 0; t < pv->n_node_affinity; t++)
		for (uint32_t i = 0; i < pv->node_affinity[t].n_requirements; i++) {
			const struct proto_requirement *q = &pv->node_affinity[t].requirements[i];
			if ((streq(q->key, LABEL_ZONE) || streq(q->key, LABEL_ZONE_BETA)) &&
			    q->op == PROTO_OP_IN && q->n_values == 1) {
				if (zone && !streq(zone, q->values[0]))
					return NULL;
				zone = q->values[0];
			}
		}
	return zone;
}

int decode_pv(struct decoder *d, const json_t *obj, struct proto_pv *p)
{
	const json_t *spec = json_object_get(obj, "spec"), *claim = json_object_get(spec, "claimRef");
	const char *zone;
	struct decoded_meta m;
	int r;

	*p = (struct proto_pv){ 0 };
	if ((r = decode_metadata(d, obj, "PersistentVolume", false, &m)) < 0)
		return r;
	p->name = m.name;
	p->uid = m.uid;
	p->resource_version = m.resource_version;
	if ((r = decode_node_selector_terms(d, json_path(spec, "nodeAffinity.required.nodeSelectorTerms"),
					    "spec.nodeAffinity.required.nodeSelectorTerms",
					    &p->node_affinity, &p->n_node_affinity)) < 0 ||
	    (r = decode_string(d, spec, "storageClassName", "spec", &p->storage_class)) < 0 ||
	    (r = decode_string(d, claim, "namespace", "spec.claimRef", &p->claim_ns)) < 0 ||
	    (r = decode_string(d, claim, "name", "spec.claimRef", &p->claim_name)) < 0)
		return decode_prefix(d, "persistentvolume", NULL, m.name, r);
	zone = json_string_value(json_object_get(m.labels, LABEL_ZONE));
	if (!zone)
		zone = json_string_value(json_object_get(m.labels, LABEL_ZONE_BETA));
	if (!zone)
		zone = pv_zone(p);
	if (zone && !(p->zone = arena_strdup(d->arena, zone)))
		return -ENOMEM;
	return 0;
}

int decode_storageclass(struct decoder *d, const json_t *obj, struct proto_storageclass *sc)
{
	const char *mode = json_string_value(json_object_get(obj, "volumeBindingMode"));
	const json_t *topo = json_object_get(obj, "allowedTopologies"), *t, *e;
	struct decoded_meta m;
	char at[128];
	size_t i, j;
	int r;

	*sc = (struct proto_storageclass){ 0 };
	if ((r = decode_metadata(d, obj, "StorageClass", false, &m)) < 0)
		return r;
	sc->name = m.name;
	sc->uid = m.uid;
	sc->resource_version = m.resource_version;
	if ((r = decode_string(d, obj, "provisioner", "", &sc->provisioner)) < 0)
		return decode_prefix(d, "storageclass", NULL, m.name, r);
	sc->binding_mode = mode && streq(mode, "WaitForFirstConsumer") ?
				   PROTO_BINDING_WAIT_FOR_FIRST_CONSUMER : PROTO_BINDING_IMMEDIATE;
	if (!json_is_array(topo))
		return 0;
	if (json_array_size(topo) > PROTO_MAX_TERMS)
		return decode_prefix(d, "storageclass", NULL, m.name,
			      decode_fail(d, "allowedTopologies: more than %u terms", PROTO_MAX_TERMS));
	sc->allowed_topologies = arena_calloc(d->arena, json_array_size(topo) + 1,
					      sizeof(*sc->allowed_topologies));
	if (!sc->allowed_topologies)
		return -ENOMEM;
	json_array_foreach(topo, i, t) {
		const json_t *exprs = json_object_get(t, "matchLabelExpressions");
		struct proto_node_selector_term *term = &sc->allowed_topologies[i];

		/* {key, values} means "key In values". */
		term->requirements = arena_calloc(d->arena, json_array_size(exprs) + 1,
						  sizeof(*term->requirements));
		if (!term->requirements)
			return -ENOMEM;
		json_array_foreach(exprs, j, e) {
			struct proto_requirement *q = &term->requirements[j];
			decode_path(at, sizeof(at), "allowedTopologies[%zu].matchLabelExpressions[%zu]", i, j);
			if ((r = decode_string(d, e, "key", at, &q->key)) < 0 ||
			    (r = decode_strings(d, json_object_get(e, "values"), at, &q->values,
						&q->n_values)) < 0)
				return decode_prefix(d, "storageclass", NULL, m.name, r);
			if (!q->key)
				return decode_prefix(d, "storageclass", NULL, m.name,
					      decode_fail(d, "%s.key: is required", at));
			q->op = PROTO_OP_IN;
		}
		term->n_requirements = (uint32_t)json_array_size(exprs);
	}
	sc->n_allowed_topologies = (uint32_t)json_array_size(topo);
	return 0;
}

static int int_or_percent(struct decoder *d, const json_t *v, const char *where,
			  struct proto_int_or_percent *ret)
{
	const char *s = json_string_value(v);
	char *end;
	long n;

	*ret = (struct proto_int_or_percent){ .kind = PROTO_IOP_UNSET };
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		ret->kind = PROTO_IOP_INT;
		ret->value = (int32_t)json_integer_value(v);
		return 0;
	}
	if (s) {
		n = strtol(s, &end, 10);
		if (end != s && streq(end, "%") && n >= 0 && n <= 100) {
			ret->kind = PROTO_IOP_PERCENT;
			ret->value = (int32_t)n;
			return 0;
		}
		if (end != s && *end == '\0' && n >= 0) {
			ret->kind = PROTO_IOP_INT;
			ret->value = (int32_t)n;
			return 0;
		}
	}
	return decode_fail(d, "%s: expected an integer or a percentage like 50%%", where);
}

int decode_pdb(struct decoder *d, const json_t *obj, struct proto_pdb *p)
{
	const json_t *spec = json_object_get(obj, "spec");
	struct decoded_meta m;
	int r;

	*p = (struct proto_pdb){ 0 };
	if ((r = decode_metadata(d, obj, "PodDisruptionBudget", true, &m)) < 0)
		return r;
	p->ns = m.ns;
	p->name = m.name;
	p->uid = m.uid;
	p->resource_version = m.resource_version;
	if ((r = decode_label_selector(d, json_object_get(spec, "selector"), "spec.selector",
				       &p->selector)) < 0 ||
	    (r = int_or_percent(d, json_object_get(spec, "minAvailable"), "spec.minAvailable",
				&p->min_available)) < 0 ||
	    (r = int_or_percent(d, json_object_get(spec, "maxUnavailable"), "spec.maxUnavailable",
				&p->max_unavailable)) < 0)
		return decode_prefix(d, "poddisruptionbudget", m.ns, m.name, r);
	p->disruptions_allowed =
		(int32_t)json_integer_value(json_path(obj, "status.disruptionsAllowed"));
	return 0;
}
