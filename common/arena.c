/*
 * Bump allocator (see arena.h). Chunks are a singly linked list, newest
 * first; allocation only ever looks at the newest chunk.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"

struct arena_chunk {
	struct arena_chunk *next;
	size_t size, used;
	max_align_t data[];
};

void *arena_alloc(struct arena *a, size_t size)
{
	const size_t align = _Alignof(max_align_t);
	struct arena_chunk *c = a->chunks;
	size_t need = (size + align - 1) & ~(align - 1);
	void *p;

	if (size == 0)
		need = align;
	if (need < size)
		return NULL; /* overflow */
	if (!c || c->size - c->used < need) {
		size_t sz = need > ARENA_CHUNK_BYTES ? need : ARENA_CHUNK_BYTES;
		c = malloc(sizeof(*c) + sz);
		if (!c)
			return NULL;
		c->size = sz;
		c->used = 0;
		c->next = a->chunks;
		a->chunks = c;
	}
	p = (char *)c->data + c->used;
	c->used += need;
	a->used_total += need;
	memset(p, 0, size);
	return p;
}

void *arena_calloc(struct arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return arena_alloc(a, n * size);
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);

	if (!p)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return s ? arena_strndup(a, s, strlen(s)) : NULL;
}

void arena_reset(struct arena *a)
{
	struct arena_chunk *c = a->chunks;

	if (!c)
		return;
	/* Keep the oldest chunk (the last in the list) for reuse. */
	while (c->next) {
		struct arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	c->used = 0;
	a->chunks = c;
	a->used_total = 0;
}

void arena_done(struct arena *a)
{
	while (a->chunks) {
		struct arena_chunk *next = a->chunks->next;
		free(a->chunks);
		a->chunks = next;
	}
	a->used_total = 0;
}
