/*
 * Bump allocator (see arena.h). Chunks double in size; a reset folds them
 * into one of at most ARENA_KEEP_MAX bytes.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/util.h"

struct arena_chunk {
	struct arena_chunk *next;
	size_t size;
	alignas(max_align_t) unsigned char data[];
};

static size_t align_up(size_t n)
{
	return (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
}

static struct arena_chunk *chunk_new(size_t size)
{
	struct arena_chunk *c;

	if (size > SIZE_MAX - sizeof(*c))
		return NULL;
	c = malloc(sizeof(*c) + size);
	if (!c)
		return NULL;
	c->next = NULL;
	c->size = size;
	return c;
}

void *arena_alloc_raw(struct arena *a, size_t size)
{
	struct arena_chunk *c;
	void *p;

	if (size > SIZE_MAX / 2)
		return NULL;
	size = align_up(size ? size : 1);
	if (!a->chunk || a->chunk->size - a->used < size) {
		size_t want = a->chunk ? a->chunk->size * 2 : ARENA_MIN_CHUNK;

		if (want < size)
			want = size;
		c = chunk_new(want);
		if (!c)
			return NULL;
		c->next = a->chunk;
		a->chunk = c;
		a->used = 0;
	}
	p = a->chunk->data + a->used;
	a->used += size;
	return p;
}

void *arena_alloc(struct arena *a, size_t size)
{
	void *p = arena_alloc_raw(a, size);

	if (p)
		memset(p, 0, size);
	return p;
}

void *arena_calloc(struct arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return arena_alloc(a, n * size);
}

void *arena_memdup(struct arena *a, const void *p, size_t size)
{
	void *d = arena_alloc_raw(a, size);

	if (d && size)
		memcpy(d, p, size);
	return d;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc_raw(a, n + 1);

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
	struct arena_chunk *c, *next;
	size_t total = 0;

	a->used = 0;
	if (!a->chunk || (!a->chunk->next && a->chunk->size <= ARENA_KEEP_MAX))
		return;
	for (c = a->chunk; c; c = next) {
		next = c->next;
		total += c->size;
		free(c);
	}
	/* On ENOMEM the arena simply starts empty again. */
	a->chunk = chunk_new(MIN(total, (size_t)ARENA_KEEP_MAX));
}

void arena_done(struct arena *a)
{
	struct arena_chunk *c, *next;

	for (c = a->chunk; c; c = next) {
		next = c->next;
		free(c);
	}
	a->chunk = NULL;
	a->used = 0;
}

bool arena_owns(const struct arena *a, const void *p)
{
	/* Compared as integers: relational operators on pointers into
	 * different objects are undefined. */
	uintptr_t x = (uintptr_t)p;

	for (const struct arena_chunk *c = a->chunk; c; c = c->next)
		if (x >= (uintptr_t)c->data && x < (uintptr_t)c->data + c->size)
			return true;
	return false;
}
