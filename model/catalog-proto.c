/*
 * Converts the solver's catalog to and from proto_instance_type (see
 * catalog-proto.h). Called by kanna-launcher when it publishes its live
 * catalog and by kanna-scheduler for every batch once a catalog message
 * arrived. Checks what it loads: a message is outside input, and a bad one
 * must be refused whole rather than half-applied.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog-proto.h"

static const char *str(const struct catalog *cat, uint32_t id)
{
	return strtab_str(cat->st, id);
}

/* One conversion: every distinct string of the catalog is copied into the
 * arena once (label keys, zones and resource names repeat on every type:
 * copied each time they took ~1.2 MB of the ~900 types' 2.5 MB). */
struct to_proto {
	const struct catalog *cat;
	struct arena *a;
	char **copied; /* by strtab id */
};

static char *copy_str(struct to_proto *tp, uint32_t id)
{
	if (id >= tp->cat->st->n)
		return arena_strdup(tp->a, str(tp->cat, id));
	if (!tp->copied[id])
		tp->copied[id] = arena_strdup(tp->a, str(tp->cat, id));
	return tp->copied[id];
}

static int resources_to_proto(struct to_proto *tp, const struct resources *res,
			      struct proto_resource **ret, uint32_t *n_ret)
{
	const struct catalog *cat = tp->cat;
	struct proto_resource *out = arena_calloc(tp->a, cat->n_resources + 1, sizeof(*out));
	uint32_t n = 0;

	if (!out)
		return -ENOMEM;
	for (uint32_t r = 0; r < cat->n_resources; r++) {
		if (res->v[r] == 0 && r > RES_EPHEMERAL_STORAGE)
			continue;
		out[n].name = copy_str(tp, cat->resource_names[r]);
		out[n].value = res->v[r];
		if (!out[n++].name)
			return -ENOMEM;
	}
	*ret = out;
	*n_ret = n;
	return 0;
}

static int type_to_proto(struct to_proto *tp, const struct instance_type *it,
			 struct proto_instance_type *pt)
{
	const struct catalog *cat = tp->cat;
	int r;

	pt->name = copy_str(tp, it->name);
	pt->labels = arena_calloc(tp->a, it->n_labels + 1, sizeof(*pt->labels));
	pt->offerings = arena_calloc(tp->a, it->n_offerings + 1, sizeof(*pt->offerings));
	if (!pt->name || !pt->labels || !pt->offerings)
		return -ENOMEM;
	for (uint32_t l = 0; l < it->n_labels; l++) {
		pt->labels[l].key = copy_str(tp, it->labels[l].key);
		pt->labels[l].value = copy_str(tp, it->labels[l].value);
		if (!pt->labels[l].key || !pt->labels[l].value)
			return -ENOMEM;
	}
	pt->n_labels = it->n_labels;
	for (uint32_t o = 0; o < it->n_offerings; o++) {
		const struct offering *of = &it->offerings[o];
		struct proto_offering *po = &pt->offerings[o];

		po->zone = copy_str(tp, cat->zones[of->zone]);
		if (!po->zone)
			return -ENOMEM;
		po->capacity_type = of->capacity_type == CT_SPOT ? PROTO_CAPACITY_SPOT :
								   PROTO_CAPACITY_ON_DEMAND;
		po->price = of->price;
		po->available = of->available;
	}
	pt->n_offerings = it->n_offerings;
	if ((r = resources_to_proto(tp, &it->capacity, &pt->capacity, &pt->n_capacity)) < 0)
		return r;
	return resources_to_proto(tp, &it->allocatable, &pt->allocatable, &pt->n_allocatable);
}

int catalog_to_proto(const struct catalog *cat, struct arena *a, bool offered_only,
		     struct proto_instance_type **ret, uint32_t *n_ret)
{
	struct to_proto tp = { .cat = cat, .a = a };
	struct proto_instance_type *out = arena_calloc(a, cat->n_types + 1, sizeof(*out));
	uint32_t n = 0;
	int r = 0;

	tp.copied = calloc(cat->st->n + 1, sizeof(*tp.copied));
	if (!out || !tp.copied) {
		free(tp.copied);
		return -ENOMEM;
	}
	for (uint32_t t = 0; t < cat->n_types; t++) {
		if (offered_only && !cat->types[t].n_offerings)
			continue;
		if ((r = type_to_proto(&tp, &cat->types[t], &out[n++])) < 0)
			break;
	}
	free(tp.copied);
	if (r < 0)
		return r;
	*ret = out;
	*n_ret = n;
	return 0;
}

/* ---- loading a message ------------------------------------------------------ */

struct loader {
	struct catalog *cat;
	uint32_t region;
	char *err;
	size_t errlen;
};

static int intern(struct loader *l, const char *s, uint32_t *ret)
{
	int64_t id = strtab_intern(l->cat->st, s ? s : "");

	*ret = id < 0 ? STR_NONE : (uint32_t)id;
	return id < 0 ? (int)id : 0;
}

static int fail(struct loader *l, int r, const char *type, const char *what)
{
	snprintf(l->err, l->errlen, "instance type %s: %s", type && *type ? type : "(unnamed)", what);
	return r;
}

static int load_labels(struct loader *l, const struct proto_instance_type *pt, uint32_t name,
		       struct label *labels, uint32_t *n_ret, bool *metal)
{
	uint32_t n = 0;
	int r;

	*metal = false;
	for (uint32_t i = 0; i < pt->n_labels; i++) {
		if ((r = intern(l, pt->labels[i].key, &labels[n].key)) < 0 ||
		    (r = intern(l, pt->labels[i].value, &labels[n].value)) < 0)
			return r;
		if (labels[n].key == K_INSTANCE_SIZE && strstr(pt->labels[i].value, "metal"))
			*metal = true;
		n++;
	}
	if (labels_get(labels, n, K_INSTANCE_TYPE) == STR_NONE)
		labels[n++] = (struct label){ K_INSTANCE_TYPE, name };
	labels_sort(labels, n);
	for (uint32_t i = 1; i < n; i++)
		if (labels[i].key == labels[i - 1].key)
			return fail(l, -EINVAL, pt->name, "a label key is given twice");
	if (labels_get(labels, n, K_INSTANCE_TYPE) != name)
		return fail(l, -EINVAL, pt->name, "its instance-type label names another type");
	*n_ret = n;
	return 0;
}

static int load_resources(struct loader *l, const char *type, const struct proto_resource *res,
			  uint32_t n, struct resources *ret)
{
	for (uint32_t i = 0; i < n; i++) {
		int slot;

		if (res[i].value < 0)
			return fail(l, -EINVAL, type, "a resource quantity is negative");
		slot = catalog_resource(l->cat, res[i].name, true);
		if (slot == -E2BIG)
			continue; /* past the slots: no pod of this batch asks for it */
		if (slot < 0)
			return slot;
		ret->v[slot] = res[i].value;
	}
	if (ret->v[RES_CPU] <= 0 || ret->v[RES_MEMORY] <= 0)
		return fail(l, -EINVAL, type, "no cpu or no memory");
	return 0;
}

static int load_offerings(struct loader *l, const struct proto_instance_type *pt,
			  struct offering *out, uint32_t *n_ret)
{
	uint32_t n = 0, zone = 0;
	int r;

	for (uint32_t i = 0; i < pt->n_offerings; i++) {
		const struct proto_offering *po = &pt->offerings[i];

		if (po->capacity_type == PROTO_CAPACITY_RESERVED)
			continue;
		if (!po->zone || !*po->zone)
			return fail(l, -EINVAL, pt->name, "an offering has no zone");
		if (!isfinite(po->price) || po->price < 0)
			return fail(l, -EINVAL, pt->name, "an offering has a negative or non-finite price");
		if ((r = intern(l, po->zone, &zone)) < 0)
			return r;
		r = catalog_zone(l->cat, zone, l->region);
		if (r == -E2BIG)
			return fail(l, r, pt->name, "its zone is one more than the solver holds");
		if (r < 0)
			return r;
		out[n++] = (struct offering){
			.zone = (uint8_t)r,
			.capacity_type = po->capacity_type == PROTO_CAPACITY_SPOT ? CT_SPOT : CT_ON_DEMAND,
			.available = po->available,
			.price = po->price,
		};
	}
	*n_ret = n;
	return 0;
}

static int load_type(struct loader *l, const struct proto_instance_type *pt)
{
	struct label labels[PROTO_MAX_LABELS + 1];
	struct offering offerings[PROTO_MAX_OFFERINGS];
	struct instance_type it = { .labels = labels, .offerings = offerings };
	int r;

	if (!pt->name || !*pt->name)
		return fail(l, -EINVAL, NULL, "no name");
	if (pt->n_labels > PROTO_MAX_LABELS || pt->n_offerings > PROTO_MAX_OFFERINGS)
		return fail(l, -E2BIG, pt->name, "more labels or offerings than a message may carry");
	if ((r = intern(l, pt->name, &it.name)) < 0 ||
	    (r = load_labels(l, pt, it.name, labels, &it.n_labels, &it.metal)) < 0 ||
	    (r = load_resources(l, pt->name, pt->capacity, pt->n_capacity, &it.capacity)) < 0 ||
	    (r = load_resources(l, pt->name, pt->allocatable, pt->n_allocatable, &it.allocatable)) < 0 ||
	    (r = load_offerings(l, pt, offerings, &it.n_offerings)) < 0)
		return r;
	r = catalog_add_type(l->cat, &it);
	if (r == -E2BIG)
		return fail(l, r, pt->name, "more types than the solver's catalog holds");
	return r;
}

static int uint32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int catalog_load_proto(struct catalog *cat, const struct proto_catalog *m, char *err,
		       size_t errlen)
{
	struct loader l = { .cat = cat, .err = err, .errlen = errlen };
	uint32_t first = cat->n_types, *names;
	int r;

	err[0] = '\0';
	if (!m->n_instance_types) {
		snprintf(err, errlen, "the catalog has no instance types");
		return -EINVAL;
	}
	if ((r = intern(&l, m->region, &l.region)) < 0)
		return r;
	for (uint32_t i = 0; i < m->n_instance_types; i++)
		if ((r = load_type(&l, &m->instance_types[i])) < 0)
			return r;
	names = malloc((cat->n_types - first + 1) * sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (uint32_t t = first; t < cat->n_types; t++)
		names[t - first] = cat->types[t].name;
	qsort(names, cat->n_types - first, sizeof(*names), uint32_cmp);
	for (uint32_t i = 1; i < cat->n_types - first && r >= 0; i++)
		if (names[i] == names[i - 1])
			r = fail(&l, -EINVAL, str(cat, names[i]), "listed twice");
	free(names);
	return r;
}

int catalog_proto_check(const struct proto_catalog *m, char *err, size_t errlen)
{
	struct strtab st;
	struct catalog cat;
	int r;

	err[0] = '\0';
	if ((r = strtab_init(&st)) < 0)
		return r;
	if ((r = wellknown_intern(&st)) >= 0 && (r = catalog_init(&cat, &st)) >= 0) {
		r = catalog_load_proto(&cat, m, err, errlen);
		if (r >= 0)
			r = catalog_finalize(&cat);
		catalog_done(&cat);
	}
	strtab_done(&st);
	if (r < 0 && !err[0])
		snprintf(err, errlen, "%s", strerror(-r));
	return r;
}
