/*
 * The bump allocator every decoder and loader uses: allocate freely while
 * building one message, one object graph or one model, then release it all
 * at once. arena_reset() keeps one chunk (at most ARENA_KEEP_MAX) so steady
 * decoding does not call malloc. Never frees single allocations; callers
 * bound what they allocate. Not thread-safe.
 */
#ifndef KANNA_COMMON_ARENA_H
#define KANNA_COMMON_ARENA_H

#include <stdbool.h>
#include <stddef.h>

/* First chunk: a typical pending-pod or plan message fits. */
#define ARENA_MIN_CHUNK 16384
/* A reset keeps at most this much, so one huge frame (a snapshot batch)
 * does not pin its memory for the life of the process. */
#define ARENA_KEEP_MAX (1024 * 1024)

struct arena_chunk;
struct arena {
	struct arena_chunk *chunk; /* newest first */
	size_t used;               /* bytes used in chunk */
};

/* NULL on ENOMEM. Memory is aligned for any type. */
void *arena_alloc_raw(struct arena *a, size_t size); /* uninitialised */
void *arena_alloc(struct arena *a, size_t size);     /* zeroed */
void *arena_calloc(struct arena *a, size_t n, size_t size);
void *arena_memdup(struct arena *a, const void *p, size_t size);
char *arena_strdup(struct arena *a, const char *s);  /* NULL stays NULL */
char *arena_strndup(struct arena *a, const char *s, size_t n);
void arena_reset(struct arena *a);
void arena_done(struct arena *a);
/* True when p points into memory a handed out (a free() hook's question). */
bool arena_owns(const struct arena *a, const void *p);

#endif
