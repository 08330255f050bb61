/*
 * A bump allocator for building one message's worth of structs: decoders
 * allocate freely from it, the result is deep-copied into its final home,
 * and arena_reset() frees everything at once. Not thread-safe.
 */
#ifndef KANNA_COMMON_ARENA_H
#define KANNA_COMMON_ARENA_H

#include <stddef.h>

/* Chunks grow to at least this; big requests get a chunk of their own. */
#define ARENA_CHUNK_BYTES (64u * 1024)

struct arena_chunk;
struct arena {
	struct arena_chunk *chunks;
	size_t used_total;
};

void *arena_alloc(struct arena *a, size_t size);      /* zeroed, max-aligned */
void *arena_calloc(struct arena *a, size_t n, size_t size);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
/* Frees every chunk but the first, and rewinds it. */
void arena_reset(struct arena *a);
void arena_done(struct arena *a);

#endif
