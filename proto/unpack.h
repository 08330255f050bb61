/*
 * One msgpack frame as a record of its objects in frame order
 * (proto/unpack.c), and the bump allocator the decoder carves it and the
 * decoded message from. Internal to proto/.
 */
#ifndef KANNA_PROTO_UNPACK_H
#define KANNA_PROTO_UNPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/util.h"
#include "proto/schema.h"

/* Bump allocation from an arena with the fast path inlined: a decode makes
 * one allocation per struct, struct array, string array and map. */
#define PROTO_BUMP_CHUNK 16384
#define PROTO_BUMP_ALIGN 8 /* no proto struct needs more */

struct proto_bump {
	char *pos;
	char *end;
	char *first;  /* the first block since the arena's reset, NULL if none */
	bool spilled; /* a second block was taken since */
	struct arena *arena;
};

/* Slow path: a new block from the arena; NULL on ENOMEM. */
void *proto_bump_refill(struct proto_bump *b, size_t size);

/* size must be a multiple of PROTO_BUMP_ALIGN; memory is uninitialised. */
static inline void *proto_bump_take(struct proto_bump *b, size_t size)
{
	char *p = b->pos;

	if (_unlikely_((size_t)(b->end - p) < size))
		return proto_bump_refill(b, size);
	b->pos = p + size;
	return p;
}

/*
 * Empties b for the next message. When the last one fitted in the first
 * block, that block is used again as it is, as arena_reset() would keep
 * it (one chunk, at most ARENA_KEEP_MAX): no call into the arena per
 * message.
 */
static inline void proto_bump_reset(struct proto_bump *b)
{
	if (_likely_(b->first && !b->spilled && b->end - b->first <= ARENA_KEEP_MAX)) {
		b->pos = b->first;
		return;
	}
	arena_reset(b->arena);
	b->pos = b->end = b->first = NULL;
	b->spilled = false;
}

/* The msgpack types a value can hold; the names of the error messages. */
enum proto_value_type {
	PROTO_VALUE_NIL,
	PROTO_VALUE_BOOL,
	PROTO_VALUE_UINT, /* any non-negative integer, as msgpack-c reports it */
	PROTO_VALUE_INT,  /* a negative integer */
	PROTO_VALUE_F32,
	PROTO_VALUE_F64,
	PROTO_VALUE_STR,
	PROTO_VALUE_BIN,
	PROTO_VALUE_EXT,
	PROTO_VALUE_ARRAY,
	PROTO_VALUE_MAP,
};

/*
 * One msgpack object, 16 bytes. head holds the type in its low byte and
 * the length (string bytes, array entries, map pairs) above it, so one
 * 8-byte store writes both: a byte store followed by a wider load of the
 * same word stalls store forwarding. A container is followed by its
 * children, each with everything inside it (a map's: key, value, key,
 * value…): the frame's objects in their order.
 */
struct proto_value {
	uint64_t head;
	union {
		uint64_t u;
		int64_t i;
		double f;
		bool b;
		char *str; /* into the decoder's copy of the frame */
	};
};

static inline unsigned proto_value_type(const struct proto_value *n)
{
	return (unsigned)(n->head & 0xff);
}

static inline uint32_t proto_value_len(const struct proto_value *n)
{
	return (uint32_t)(n->head >> 8);
}

const char *proto_value_type_name(unsigned type);

/* Bytes after the copy of the frame: a string can be read 32 at a time. */
#define PROTO_FRAME_PADDING 32

/*
 * Parses exactly one msgpack value from [buf, buf+len) with msgpack-c's
 * unpacker and records its objects in frame order, in *tape (the root
 * first), taken from bump. Strings point into a copy of the frame, also
 * taken from bump and followed by PROTO_FRAME_PADDING zero bytes, so that
 * the decoder can NUL-terminate them in place: the byte after a string's
 * content is the next object's header or the padding, never another
 * string's content, and once unpacked it is no longer needed. Rejects,
 * with err filled: frame over PROTO_MAX_FRAME_BYTES, truncation, the
 * reserved byte 0xc1, nesting deeper than PROTO_MAX_DEPTH, more than
 * PROTO_MAX_FRAME_OBJECTS objects, trailing bytes. Returns 0, -EBADMSG,
 * -EMSGSIZE or -ENOMEM.
 */
int proto_unpack_frame(const void *buf, size_t len, struct proto_bump *bump,
		       const struct proto_value **tape, struct proto_error *err);

#endif
