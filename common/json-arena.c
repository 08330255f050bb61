/*
 * JSON trees in an arena (see json-arena.h). Two thread-local facts steer
 * the process-wide jansson allocator: the arena being parsed into (if any)
 * and the arenas whose trees are live. Allocation goes to the first, a free
 * of memory owned by the second is left to the arena's reset, and anything
 * else is plain malloc/free.
 */
#include <pthread.h>
#include <stdlib.h>

#include "common/json-arena.h"

static _Thread_local struct json_arena *parsing;
static _Thread_local struct json_arena *live_arenas;
/* jansson values malloc'd while a tree was live: that tree may hold some. */
static _Thread_local unsigned long heap_allocs_while_live;
static pthread_once_t alloc_funcs_once = PTHREAD_ONCE_INIT;

static void *json_arena_malloc(size_t size)
{
	if (parsing)
		return arena_alloc_raw(&parsing->arena, size);
	if (live_arenas)
		heap_allocs_while_live++;
	return malloc(size);
}

static void json_arena_free(void *p)
{
	for (const struct json_arena *ja = live_arenas; ja; ja = ja->next_live)
		if (arena_owns(&ja->arena, p))
			return; /* goes back with the arena's reset */
	free(p);
}

static void install_alloc_funcs(void)
{
	/* Values malloc'd before this are freed by json_arena_free(), which
	 * hands them to free(): switching at any time is safe. */
	json_set_alloc_funcs(json_arena_malloc, json_arena_free);
}

static void unlink_live(struct json_arena *ja)
{
	for (struct json_arena **p = &live_arenas; *p; p = &(*p)->next_live)
		if (*p == ja) {
			*p = ja->next_live;
			break;
		}
	ja->next_live = NULL;
	ja->live = false;
}

json_t *json_arena_load(struct json_arena *ja, const char *buf, size_t len, size_t flags,
			json_error_t *err)
{
	json_t *root;

	if (ja->live)
		return json_loadb(buf, len, flags, err);
	pthread_once(&alloc_funcs_once, install_alloc_funcs);
	ja->live = true;
	ja->next_live = live_arenas;
	live_arenas = ja;
	ja->heap_allocs_at_load = heap_allocs_while_live;
	parsing = ja;
	root = json_loadb(buf, len, flags, err);
	parsing = NULL;
	if (!root) {
		unlink_live(ja);
		arena_reset(&ja->arena);
	}
	return root;
}

void json_arena_release(struct json_arena *ja, json_t *root)
{
	if (!root)
		return;
	if (!ja->live || !arena_owns(&ja->arena, root)) {
		json_decref(root); /* the fallback of a nested load */
		return;
	}
	/* Values added after the load are malloc'd and must be freed by a
	 * walk; when jansson malloc'd nothing since, the tree is all arena. */
	if (heap_allocs_while_live != ja->heap_allocs_at_load)
		json_decref(root);
	unlink_live(ja);
	arena_reset(&ja->arena);
}

void json_arena_done(struct json_arena *ja)
{
	if (ja->live)
		unlink_live(ja);
	arena_done(&ja->arena);
}
