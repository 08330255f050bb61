/*
 * The catalog part of the scheduler's model, kept between batches (see
 * model-base.h). Built by the scheduler's loop thread; read by its solver
 * thread through the models that hold a reference.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog-proto.h"
#include "model/model-base.h"
#include "model/node-overlay.h"

int model_catalog_load(struct catalog *cat, const struct from_state_options *o, char *err,
		       size_t errlen)
{
	char path[4096], zone_buf[3][64];
	const char *zones[3];
	int r;

	for (int i = 0; i < 3; i++) {
		snprintf(zone_buf[i], sizeof(zone_buf[i]), "%s%c", o->region, 'a' + i);
		zones[i] = zone_buf[i];
	}
	if (o->catalog) {
		char why[256];
		r = catalog_load_proto(cat, o->catalog, why, sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "Failed to load the launcher's instance-type catalog "
				 "(generation %" PRIu64 "): %s", o->catalog->generation, why);
			return r;
		}
	} else {
		if (o->catalog_path)
			snprintf(path, sizeof(path), "%s", o->catalog_path);
		else
			catalog_default_path(path, sizeof(path));
		r = catalog_load_tsv(cat, path, o->region, zones, 3);
		if (r < 0) {
			snprintf(err, errlen, "Failed to load the instance-type catalog %s: %s", path,
				 strerror(-r));
			return r;
		}
	}
	/* Offerings the launcher found without capacity are not offered. */
	for (size_t u = 0; u < o->n_unavailable; u++) {
		const struct unavailable_offering *x = &o->unavailable[u];
		uint32_t type = strtab_lookup(cat->st, x->instance_type);
		uint32_t zone = strtab_lookup(cat->st, x->zone);
		uint8_t ct = x->capacity_type == PROTO_CAPACITY_SPOT ? CT_SPOT : CT_ON_DEMAND;

		if (x->until_ms <= o->now_ms || type == STR_NONE || zone == STR_NONE)
			continue;
		for (uint32_t t = 0; t < cat->n_types; t++) {
			struct instance_type *it = &cat->types[t];
			if (it->name != type)
				continue;
			for (uint32_t f = 0; f < it->n_offerings; f++)
				if (cat->zones[it->offerings[f].zone] == zone &&
				    it->offerings[f].capacity_type == ct)
					it->offerings[f].available = false;
		}
	}
	if ((r = catalog_apply_overlays(cat, o->node_overlays, o->n_node_overlays)) < 0) {
		snprintf(err, errlen, "Failed to apply the NodeOverlays to the instance-type catalog: %s",
			 strerror(-r));
		return r;
	}
	return catalog_finalize(cat);
}

/* The offerings unavailable at o->now_ms, one "type\tzone\tct\n" each, in
 * the table's order (NULL on ENOMEM). */
static char *unavailable_key(const struct from_state_options *o)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return NULL;
	for (size_t u = 0; u < o->n_unavailable; u++) {
		const struct unavailable_offering *x = &o->unavailable[u];

		if (x->until_ms > o->now_ms)
			fprintf(f, "%s\t%s\t%u\n", x->instance_type, x->zone, x->capacity_type);
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static bool key_matches(const struct model_base *b, const struct from_state_options *o,
			const char *path, const char *unavailable, const char *overlays)
{
	if (o->catalog ? (b->msg != o->catalog || b->generation != o->catalog->generation)
		       : (b->msg || !streq_ptr(b->path, path)))
		return false;
	return streq_ptr(b->region, o->region) && streq(b->unavailable, unavailable) &&
	       streq(b->overlays, overlays);
}

static int base_new(const struct from_state_options *o, const char *path, char *unavailable,
		    char *overlays, struct model_base **ret, char *err, size_t errlen)
{
	struct model_base *b = calloc(1, sizeof(*b));
	int r;

	if (!b) {
		free(unavailable);
		free(overlays);
		return -ENOMEM;
	}
	atomic_init(&b->refs, 1);
	b->unavailable = unavailable;
	b->overlays = overlays;
	b->msg = o->catalog;
	b->generation = o->catalog ? o->catalog->generation : 0;
	if ((r = strtab_init(&b->st)) < 0 || (r = wellknown_intern(&b->st)) < 0 ||
	    (r = catalog_init(&b->cat, &b->st)) < 0)
		goto fail;
	r = -ENOMEM;
	if ((path && !(b->path = strdup(path))) || (o->region && !(b->region = strdup(o->region))))
		goto fail;
	if ((r = model_catalog_load(&b->cat, o, err, errlen)) < 0)
		goto fail;
	*ret = b;
	return 0;
fail:
	model_base_unref(b);
	return r;
}

int model_base_get(struct model_base_cache *cache, const struct from_state_options *o,
		   struct model_base **ret, char *err, size_t errlen)
{
	char path[4096];
	char *unavailable = unavailable_key(o);
	char *overlays = node_overlays_key(o->node_overlays, o->n_node_overlays);
	struct model_base *b;
	int r;

	err[0] = '\0';
	if (!unavailable || !overlays) {
		free(unavailable);
		free(overlays);
		return -ENOMEM;
	}
	if (o->catalog_path)
		snprintf(path, sizeof(path), "%s", o->catalog_path);
	else
		catalog_default_path(path, sizeof(path));
	if (cache->cur && key_matches(cache->cur, o, o->catalog ? NULL : path, unavailable, overlays)) {
		free(unavailable);
		free(overlays);
		cache->reuses++;
		*ret = model_base_ref(cache->cur);
		return 0;
	}
	r = base_new(o, o->catalog ? NULL : path, unavailable, overlays, &b, err, errlen);
	if (r < 0)
		return r;
	cache->builds++;
	model_base_unref(cache->cur);
	cache->cur = b;
	*ret = model_base_ref(b);
	return 0;
}

struct model_base *model_base_ref(struct model_base *b)
{
	if (b)
		atomic_fetch_add(&b->refs, 1);
	return b;
}

void model_base_unref(struct model_base *b)
{
	if (!b || atomic_fetch_sub(&b->refs, 1) > 1)
		return;
	catalog_done(&b->cat);
	strtab_done(&b->st);
	free(b->path);
	free(b->region);
	free(b->unavailable);
	free(b->overlays);
	free(b);
}

void model_base_cache_done(struct model_base_cache *cache)
{
	model_base_unref(cache->cur);
	cache->cur = NULL;
}
