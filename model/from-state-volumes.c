/*
 * Volume topology for the cluster model (from-state.c asks for each pending
 * pod): what kube-scheduler's VolumeBinding and VolumeZone would hold the
 * pod to, as node requirements the solver understands. No state.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/from-state-internal.h"

/* Node-selector terms a pod's volumes may multiply its required node
 * affinity into (several multi-zone volumes); further combinations are not
 * tried, as a pod never lists that many alternatives in practice. */
#define POD_MAX_VOLUME_TERMS 64

static int pod_unplaceable(struct builder *b, struct pod *p, const char *fmt, ...) _printf_(3, 4);

static int pod_unplaceable(struct builder *b, struct pod *p, const char *fmt, ...)
{
	char why[PROTO_MAX_NAME_LEN * 2 + 96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	p->invalid = arena_strdup(&b->c->arena, why);
	return p->invalid ? 0 : -ENOMEM;
}

/* p := p ∧ (alt[0] ∨ alt[1] ∨ …), consuming alt. One alternative joins
 * p->reqs; several multiply the pod's required node affinity terms, which
 * the solver tries in order (as it tries the terms a pod lists). */
static int and_any_of(struct builder *b, struct pod *p, struct requirements *alt, uint32_t n_alt)
{
	uint32_t have = p->n_terms ? p->n_terms : 1, k = 0;
	struct requirements *out;
	int r = 0;

	if (n_alt == 1)
		return requirements_intersect(&p->reqs, &alt[0], &b->c->st);
	out = calloc(MIN(have * n_alt, POD_MAX_VOLUME_TERMS), sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (uint32_t i = 0; i < have && r >= 0; i++)
		for (uint32_t j = 0; j < n_alt && k < POD_MAX_VOLUME_TERMS && r >= 0; j++) {
			if (p->n_terms && (r = requirements_copy(&out[k], &p->terms[i])) < 0)
				break;
			r = requirements_intersect(&out[k++], &alt[j], &b->c->st);
		}
	if (r < 0) {
		for (uint32_t i = 0; i < k; i++)
			requirements_free(&out[i]);
		free(out);
		return r;
	}
	for (uint32_t i = 0; i < p->n_terms; i++)
		requirements_free(&p->terms[i]);
	free(p->terms);
	p->terms = out;
	p->n_terms = k;
	return 0;
}

/* Node selector terms → alternatives. A term without requirements selects
 * no node (Kubernetes' MatchNodeSelectorTerms), so it is left out. */
static int terms_to_alternatives(struct builder *b, const struct proto_node_selector_term *t,
				 uint32_t n, struct requirements *alt, uint32_t *n_alt)
{
	int r;

	*n_alt = 0;
	for (uint32_t i = 0; i < n && *n_alt < PROTO_MAX_TERMS; i++) {
		if (!t[i].n_requirements)
			continue;
		if ((r = from_state_requirements(b, &alt[(*n_alt)++], t[i].requirements, t[i].n_requirements)) < 0)
			return r;
	}
	return 0;
}

/* A PV with no node affinity but zone labels (in-tree volumes) is held to
 * them, as kube-scheduler's VolumeZone does: "a__b" lists several zones. */
static int zone_label_alternative(struct builder *b, const char *zone, struct requirements *alt)
{
	uint32_t values[16], n = 0;
	const char *z = zone;
	int64_t id;

	while (*z && n < ARRAY_SIZE(values)) {
		const char *end = strstr(z, "__");
		size_t len = end ? (size_t)(end - z) : strlen(z);
		if ((id = strtab_intern_len(&b->c->st, z, len)) < 0)
			return (int)id;
		values[n++] = (uint32_t)id;
		z += len + (end ? 2 : 0);
	}
	return requirements_add(alt, &b->c->st, K_ZONE, REQ_IN, values, n, 0);
}

/*
 * Volume topology as kube-scheduler's VolumeBinding checks it: a claim bound
 * to a PersistentVolume holds the pod to the PV's node affinity (its terms
 * ORed) or zone labels; an unbound claim of a WaitForFirstConsumer
 * StorageClass holds it to the class's allowedTopologies (terms ORed), since
 * the volume will be provisioned where the pod lands. Claims AND with each
 * other and with the pod's own node affinity. An unbound claim of an
 * Immediate class is the provisioner's to bind and adds nothing here. A
 * missing claim, volume or class leaves the pod unplaceable, as it stays
 * Pending in Kubernetes.
 */
int from_state_pod_volumes(struct builder *b, const struct proto_pod *pp, struct pod *p)
{
	const struct proto_pod_template *pc = proto_pod_template_of(pp);
	struct requirements alt[PROTO_MAX_TERMS];
	uint32_t n_alt = 0;
	int r = 0;

	memset(alt, 0, sizeof(alt));
	for (uint32_t i = 0; i < pc->n_pvc_names && r >= 0 && !p->invalid; i++) {
		const struct state_entry *e = state_store_get(b->s, PROTO_OBJECT_PVC, pp->ns,
							      pc->pvc_names[i]);
		const struct state_entry *pv, *sc;
		const struct proto_pvc *pvc;

		if (!e) {
			r = pod_unplaceable(b, p, "persistentvolumeclaim \"%s\" not found", pc->pvc_names[i]);
			break;
		}
		pvc = e->obj.pvc;
		n_alt = 0;
		if (pvc->volume_name && *pvc->volume_name) {
			pv = state_store_get(b->s, PROTO_OBJECT_PV, "", pvc->volume_name);
			if (!pv)
				r = pod_unplaceable(b, p, "persistentvolume \"%s\" not found", pvc->volume_name);
			else if (pv->obj.pv->n_node_affinity) {
				r = terms_to_alternatives(b, pv->obj.pv->node_affinity,
							  pv->obj.pv->n_node_affinity, alt, &n_alt);
				if (r >= 0 && !n_alt)
					r = pod_unplaceable(b, p, "persistentvolume \"%s\" node affinity matches no node",
							    pvc->volume_name);
			} else if (pv->obj.pv->zone && *pv->obj.pv->zone) {
				r = zone_label_alternative(b, pv->obj.pv->zone, &alt[0]);
				n_alt = 1;
			}
		} else if (pvc->storage_class && *pvc->storage_class) {
			sc = state_store_get(b->s, PROTO_OBJECT_STORAGECLASS, "", pvc->storage_class);
			if (!sc)
				r = pod_unplaceable(b, p, "storageclass.storage.k8s.io \"%s\" not found",
						    pvc->storage_class);
			else if (sc->obj.storageclass->binding_mode == PROTO_BINDING_WAIT_FOR_FIRST_CONSUMER &&
				 sc->obj.storageclass->n_allowed_topologies) {
				r = terms_to_alternatives(b, sc->obj.storageclass->allowed_topologies,
							  sc->obj.storageclass->n_allowed_topologies, alt,
							  &n_alt);
				if (r >= 0 && !n_alt)
					r = pod_unplaceable(b, p, "storageclass \"%s\" allowed topologies match no node",
							    pvc->storage_class);
			}
		}
		if (r >= 0 && n_alt && !p->invalid)
			r = and_any_of(b, p, alt, n_alt);
		for (uint32_t k = 0; k < ARRAY_SIZE(alt); k++)
			requirements_free(&alt[k]);
	}
	return r;
}

