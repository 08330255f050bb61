/*
 * The decoder's bump allocator (proto/arena.h). Chunks double in size; a
 * reset folds them into one (of at most ARENA_KEEP_MAX). Never frees individual allocations; callers
 * bound what they allocate (proto/limits.h) before asking.
 */
#include "config.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/arena.h"

/* First chunk: a typical pending-pod or plan message fits. */
#define ARENA_MIN_CHUNK 16384
/* A reset keeps at most this much, so one huge frame (a snapshot batch)
 * does not pin its memory for the life of the process. */
#define ARENA_KEEP_MAX (1024 * 1024)

struct proto_arena_chunk {
	struct proto_arena_chunk *next;
	size_t size;
	alignas(max_align_t) unsigned char data[];
};

static size_t align_up(size_t n)
{
	return (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
}

static struct proto_arena_chunk *chunk_new(size_t size)
{
	struct proto_arena_chunk *c;

	if (size > SIZE_MAX - sizeof(*c))
		return NULL;
	c = malloc(sizeof(*c) + size);
	if (!c)
		return NULL;
	c->next = NULL;
	c->size = size;
	return c;
}

void *proto_arena_alloc(struct proto_arena *a, size_t size)
{
	struct proto_arena_chunk *c;
	void *p;

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

void *proto_arena_alloc0(struct proto_arena *a, size_t size)
{
	void *p = proto_arena_alloc(a, size);

	if (p)
		memset(p, 0, size);
	return p;
}

void proto_arena_reset(struct proto_arena *a)
{
	struct proto_arena_chunk *c, *next;
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

void proto_arena_done(struct proto_arena *a)
{
	struct proto_arena_chunk *c, *next;

	for (c = a->chunk; c; c = next) {
		next = c->next;
		free(c);
	}
	a->chunk = NULL;
	a->used = 0;
}
