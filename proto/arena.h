/*
 * A bump allocator for decoded messages: every string and array of one
 * decoded frame lives in the decoder's arena and is released at once when
 * the next frame is decoded. Internal to proto/ and its tests.
 */
#ifndef KANNA_PROTO_ARENA_H
#define KANNA_PROTO_ARENA_H

#include <stddef.h>

struct proto_arena_chunk;

struct proto_arena {
	struct proto_arena_chunk *chunk; /* newest first */
	size_t used;                     /* bytes used in chunk */
};

/* NULL on ENOMEM. alloc0 zeroes. Memory is aligned for any type. */
void *proto_arena_alloc(struct proto_arena *a, size_t size);
void *proto_arena_alloc0(struct proto_arena *a, size_t size);
/* Forget everything allocated; keeps (at most) one chunk big enough for
 * what the arena held, so that steady-state decoding never calls malloc. */
void proto_arena_reset(struct proto_arena *a);
void proto_arena_done(struct proto_arena *a);

#endif
