/*
 * String-keyed hash map (open addressing, linear probing, FNV-1a). Keys are
 * copied; values are the caller's. Used for cluster-state objects by
 * "kind/namespace/name" and for the replica's indexes. Not thread-safe.
 */
#ifndef KANNA_COMMON_HASHMAP_H
#define KANNA_COMMON_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap_slot {
	char *key; /* NULL: empty; HASHMAP_TOMBSTONE: deleted */
	uint64_t hash;
	void *value;
};

struct hashmap {
	struct hashmap_slot *slots;
	size_t cap;   /* power of two, or 0 */
	size_t n;     /* live entries */
	size_t used;  /* live + tombstones */
};

uint64_t hashmap_hash(const char *key);
/* Inserts or replaces; the previous value (or NULL) goes to *old if given. */
int hashmap_put(struct hashmap *m, const char *key, void *value, void **old);
void *hashmap_get(const struct hashmap *m, const char *key);
/* Removes key; returns its value or NULL. */
void *hashmap_remove(struct hashmap *m, const char *key);
/* Removes every entry drop() says to (it may free the value, not the key);
 * returns how many. Removing never moves the other entries. */
size_t hashmap_remove_if(struct hashmap *m, bool (*drop)(const char *key, void *value, void *userdata),
			 void *userdata);
/* Frees keys and the table; values are the caller's. */
void hashmap_done(struct hashmap *m);

/* Iteration: for (size_t i = 0; hashmap_next(m, &i, &key, &value); ) */
bool hashmap_next(const struct hashmap *m, size_t *iter, const char **key, void **value);

#endif
