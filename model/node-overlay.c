/*
 * NodeOverlays on the catalog (see node-overlay.h). Upstream's
 * kubernetes-sigs/karpenter pkg/controllers/nodeoverlay keeps an instance
 * type store with the overlays applied; kanna applies them where the
 * catalog part of the model is built (model-base.c), keyed by the
 * overlays' resource versions so that a change rebuilds it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/node-overlay.h"

static int overlay_order(const void *a, const void *b)
{
	const struct proto_nodeoverlay *x = *(const struct proto_nodeoverlay *const *)a;
	const struct proto_nodeoverlay *y = *(const struct proto_nodeoverlay *const *)b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return strcmp(x->name, y->name);
}

int node_overlays_collect(const struct state_store *s, const struct proto_nodeoverlay ***ret,
			  size_t *n)
{
	const struct proto_nodeoverlay **all = NULL;
	const struct state_entry *e;
	size_t k = 0, cap = 0;

	*ret = NULL;
	*n = 0;
	for (size_t it = 0; s && (e = state_store_next(s, &it));) {
		if (e->obj.kind != PROTO_OBJECT_NODEOVERLAY || e->obj.nodeoverlay->invalid)
			continue;
		if (k == cap) {
			const struct proto_nodeoverlay **grown;

			cap = cap ? 2 * cap : 8;
			grown = realloc(all, cap * sizeof(*all));
			if (!grown) {
				free(all);
				return -ENOMEM;
			}
			all = grown;
		}
		all[k++] = e->obj.nodeoverlay;
	}
	if (k)
		qsort(all, k, sizeof(*all), overlay_order);
	*ret = all;
	*n = k;
	return 0;
}

char *node_overlays_key(const struct proto_nodeoverlay *const *ov, size_t n)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return NULL;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\t%s\n", ov[i]->name, ov[i]->resource_version ?: "");
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The value of key on type t's offering f, or NULL when it has none. */
static const char *offering_label(const struct catalog *cat, const struct instance_type *t,
				  const struct offering *f, const char *key)
{
	uint32_t id;

	if (streq(key, "topology.kubernetes.io/zone"))
		return strtab_str(cat->st, cat->zones[f->zone]);
	if (streq(key, "topology.kubernetes.io/region"))
		return strtab_str(cat->st, cat->zone_region[f->zone]);
	if (streq(key, "karpenter.sh/capacity-type"))
		return f->capacity_type == CT_SPOT ? "spot" : "on-demand";
	id = strtab_lookup(cat->st, key);
	if (id == STR_NONE || (id = labels_get(t->labels, t->n_labels, id)) == STR_NONE)
		return NULL;
	return strtab_str(cat->st, id);
}

static bool requirement_met(const struct proto_requirement *r, const char *v)
{
	long long have, want;
	char *end;

	switch (r->op) {
	case PROTO_OP_IN:
	case PROTO_OP_NOT_IN:
		for (uint32_t i = 0; v && i < r->n_values; i++)
			if (streq(r->values[i], v))
				return r->op == PROTO_OP_IN;
		return r->op == PROTO_OP_NOT_IN;
	case PROTO_OP_EXISTS:
		return v != NULL;
	case PROTO_OP_DOES_NOT_EXIST:
		return v == NULL;
	default:
		break;
	}
	if (!v || r->n_values != 1)
		return false;
	have = strtoll(v, &end, 10);
	if (*end || end == v)
		return false;
	want = strtoll(r->values[0], &end, 10);
	if (*end)
		return false;
	switch (r->op) {
	case PROTO_OP_GT: return have > want;
	case PROTO_OP_LT: return have < want;
	case PROTO_OP_GTE: return have >= want;
	case PROTO_OP_LTE: return have <= want;
	default: return false;
	}
}

static bool overlay_matches(const struct catalog *cat, const struct instance_type *t,
			    const struct offering *f, const struct proto_nodeoverlay *o)
{
	for (uint32_t i = 0; i < o->n_requirements; i++)
		if (!requirement_met(&o->requirements[i],
				     offering_label(cat, t, f, o->requirements[i].key)))
			return false;
	return true;
}

static double overlay_price(const struct proto_nodeoverlay *o, double price)
{
	double p = o->has_price ? o->price :
		   o->adjustment_percent ? price * (1 + o->adjustment / 100) : price + o->adjustment;

	return p < 0 ? 0 : p; /* a discount beyond the price is free, never paid for */
}

/* The extended resources of t: for each, the first overlay that names it. */
static int apply_capacity(struct catalog *cat, struct instance_type *t,
			  const struct proto_nodeoverlay *const *ov, size_t n)
{
	bool *matched = calloc(n ? n : 1, sizeof(*matched));
	uint32_t done[SCHED_MAX_RESOURCES];
	uint32_t n_done = 0;
	int r = 0;

	if (!matched)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		for (uint32_t f = 0; !matched[i] && ov[i]->n_capacity && f < t->n_offerings; f++)
			matched[i] = overlay_matches(cat, t, &t->offerings[f], ov[i]);
	for (size_t i = 0; i < n && r >= 0; i++) {
		for (uint32_t c = 0; matched[i] && c < ov[i]->n_capacity; c++) {
			int slot = catalog_resource(cat, ov[i]->capacity[c].name, true);
			bool seen = false;

			if (slot < 0) {
				r = slot;
				break;
			}
			for (uint32_t d = 0; d < n_done; d++)
				seen = seen || done[d] == (uint32_t)slot;
			if (seen)
				continue; /* a weightier overlay set it */
			done[n_done++] = (uint32_t)slot;
			t->capacity.v[slot] = ov[i]->capacity[c].value;
			t->allocatable.v[slot] = ov[i]->capacity[c].value;
		}
	}
	free(matched);
	return r;
}

int catalog_apply_overlays(struct catalog *cat, const struct proto_nodeoverlay *const *ov, size_t n)
{
	int r;

	for (uint32_t t = 0; n && t < cat->n_types; t++) {
		struct instance_type *it = &cat->types[t];

		for (uint32_t f = 0; f < it->n_offerings; f++)
			for (size_t i = 0; i < n; i++)
				if ((ov[i]->has_price || ov[i]->has_adjustment) &&
				    overlay_matches(cat, it, &it->offerings[f], ov[i])) {
					it->offerings[f].price = overlay_price(ov[i], it->offerings[f].price);
					break;
				}
		if ((r = apply_capacity(cat, it, ov, n)) < 0)
			return r;
	}
	return 0;
}
