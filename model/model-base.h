/*
 * The catalog part of the scheduler's model, built once and shared by the
 * models of every batch until it would come out different: the string
 * table's well-known ids and the catalog's strings, and the instance types
 * loaded (the launcher's catalog message or the shipped table), with the
 * offerings found without capacity marked, finalized (sorted, indexed).
 * A batch's model (cluster_new_from_base()) starts from a copy of the
 * string table and reads the catalog in place; only its pods, NodePools,
 * Nodes and NodeClaims are built per batch.
 *
 * Reused while the key is the same: the catalog message (pointer and
 * generation) or the shipped table's path, the region, and the offerings
 * unavailable at the batch's time (an entry that expires changes it).
 * One string-table order follows: the catalog's strings are interned
 * before the batch's, so the types' order among equal sizes (by name id)
 * no longer depends on which names a batch's Nodes or pods carried first.
 *
 * A base is reference-counted: the cache holds one, each model built from
 * it one, so a solve on the worker thread keeps the base it started with
 * while the loop thread builds the next.
 */
#ifndef KANNA_MODEL_BASE_H
#define KANNA_MODEL_BASE_H

#include <stdatomic.h>

#include "model/from-state.h"

struct model_base {
	_Atomic unsigned refs;
	struct strtab st;
	struct catalog cat; /* final; cat.st is &st */
	/* The key. */
	const struct proto_catalog *msg;
	uint64_t generation;
	char *path;   /* the shipped table's, when msg is NULL */
	char *region;
	char *unavailable; /* "type\tzone\tct\n" of each offering marked */
	char *overlays;    /* node_overlays_key() of the NodeOverlays applied */
};

/* The cache a daemon keeps between batches (zeroed to start). */
struct model_base_cache {
	struct model_base *cur;
	uint64_t builds, reuses;
};

/*
 * The base for o (its catalog, catalog_path, region, unavailable and
 * now_ms): the cache's when its key matches, else a new one that replaces
 * it. *ret is a new reference. 0, or a negative errno with err filled.
 */
int model_base_get(struct model_base_cache *cache, const struct from_state_options *o,
		   struct model_base **ret, char *err, size_t errlen);
struct model_base *model_base_ref(struct model_base *b);
void model_base_unref(struct model_base *b);
void model_base_cache_done(struct model_base_cache *cache);

/* Loads o's catalog into cat (over st), marks the offerings unavailable at
 * o->now_ms and finalizes it. 0, or a negative errno with err filled. */
int model_catalog_load(struct catalog *cat, const struct from_state_options *o, char *err,
		       size_t errlen);

#endif
