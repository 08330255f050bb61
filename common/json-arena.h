/*
 * Large JSON documents (LIST pages of thousands of objects) parsed into an
 * arena. While json_arena_load() parses, jansson's allocator takes memory
 * from the arena, so building the tree costs bump allocations instead of a
 * malloc per value, and dropping it costs a reset instead of a free per
 * value (both dominated the watcher's initial LIST under a profiler).
 *
 * Values added to such a tree later come from malloc as usual, and frees of
 * arena memory are ignored while the arena is live, so the tree can be read
 * and changed with every jansson call. The rules: nothing may keep a
 * reference into the tree past json_arena_release(), which is where its
 * memory goes back, and values put into the tree are made while it is live
 * (json_object_set_new(o, k, json_string(…)), as usual), since a tree that
 * jansson malloc'd nothing for since its load is dropped without a walk.
 *
 * jansson's allocator is process-wide; it is replaced once, on first use,
 * by one that forwards to malloc/free whenever the calling thread has no
 * arena parsing, so every other jansson user is unaffected.
 */
#ifndef KANNA_COMMON_JSON_ARENA_H
#define KANNA_COMMON_JSON_ARENA_H

#include <jansson.h>
#include <stdbool.h>

#include "common/arena.h"

struct json_arena {
	struct arena arena;
	struct json_arena *next_live; /* this thread's live arenas */
	bool live;                    /* a tree from it is in use */
	unsigned long heap_allocs_at_load; /* see json_arena_release() */
};

/*
 * Parses buf like json_loadb(). NULL with err set (when given) on a parse
 * error or ENOMEM. One tree per arena at a time: while a tree is live, a
 * second load falls back to an ordinary (malloc'd) json_loadb().
 */
json_t *json_arena_load(struct json_arena *ja, const char *buf, size_t len, size_t flags,
			json_error_t *err);
/* Drops root (json_arena_load()'s result, or NULL) and recycles the arena;
 * the tree is walked only if jansson malloc'd anything since the load. */
void json_arena_release(struct json_arena *ja, json_t *root);
/* Frees the arena's memory; no tree may be live. */
void json_arena_done(struct json_arena *ja);

#endif
