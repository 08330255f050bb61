/*
 * The first step of every decode: one untrusted frame becomes a record of
 * its objects, 16 bytes each, in frame order (proto/unpack.h), with the
 * frame-level checks on the way. msgpack-c does the parsing: its unpacker
 * is a state machine shipped as a template (msgpack/unpack_template.h)
 * that its own msgpack_unpack() instantiates with callbacks building a
 * msgpack_object tree. We instantiate the same template with callbacks
 * that append each object to the record as msgpack-c reads it, and check
 * limits as they go; proto/decode.c then walks the record once, in the
 * same order. Nothing is linked or copied into containers: that tree
 * building was a third of the decode's time, and decoding inside the
 * callbacks, from the unpacker's loop, was slower still (bench/proto.sh).
 *
 * msgpack-c sizes every array and map from its header and has no limits
 * API, so the container callback refuses a header that declares more
 * children than the frame has bytes left for (every object takes at least
 * one byte): all containers together can then never claim more objects
 * than the frame has bytes, and the record is sized for that. Called only
 * by proto/decode.c; reads nothing outside [buf, buf+len).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "proto/limits.h"

/* The unpacker's container stack is the nesting limit; this must come
 * before anything includes unpack_define.h (checked below). */
#define MSGPACK_EMBED_STACK_SIZE PROTO_MAX_DEPTH
#include <msgpack/unpack_define.h>
#include <msgpack/unpack.h>

#include "proto/unpack.h"

/* The record starts small and grows before a container declares more
 * objects than it holds; scalars never check. */
#define RECORD_FIRST 4096

struct unpack_user {
	struct proto_value *tape; /* the next record */
	struct proto_value *first; /* the record's first object, the root */
	uint64_t room;            /* objects the record holds */
	uint64_t max_room;        /* the most a frame can have: MIN(len, PROTO_MAX_FRAME_OBJECTS) */
	struct proto_bump *bump;
	uint64_t declared;        /* children declared by every container so far */
	uint64_t max_declared;    /* frame length - 1: one byte per object at least */
	enum proto_error_code code; /* why a callback refused, PROTO_OK if none did */
	char *padding;            /* the zero bytes after the frame copy */
};

/*
 * Every object is recorded when msgpack-c has read it, in the order of the
 * frame. The unpacker's own object (msgpack_unpack_object, a byte here:
 * it copies it around its stack) carries nothing: the item callbacks have
 * nothing to do.
 */
static inline int put(struct unpack_user *u, uint64_t head, uint64_t value, uint16_t *o)
{
	struct proto_value *t = u->tape++;

	t->head = head;
	t->u = value;
	*o = 0;
	return 0;
}

static inline uint16_t unpack_cb_root(struct unpack_user *u)
{
	return 0;
}

/* msgpack-c reports a non-negative signed int as a positive integer. */
#define UNPACK_INT_(bits)                                                       \
	static inline int unpack_cb_uint##bits(struct unpack_user *u, uint##bits##_t d, \
					       uint16_t *o)                      \
	{                                                                       \
		return put(u, PROTO_VALUE_UINT, d, o);                          \
	}                                                                       \
	static inline int unpack_cb_int##bits(struct unpack_user *u, int##bits##_t d, \
					      uint16_t *o)                       \
	{                                                                       \
		return put(u, d >= 0 ? PROTO_VALUE_UINT : PROTO_VALUE_INT, (uint64_t)(int64_t)d, o); \
	}
UNPACK_INT_(8)
UNPACK_INT_(16)
UNPACK_INT_(32)
UNPACK_INT_(64)

static inline uint64_t f64_bits(double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(bits));
	return bits;
}

static inline int unpack_cb_float(struct unpack_user *u, float d, uint16_t *o)
{
	return put(u, PROTO_VALUE_F32, f64_bits(d), o);
}

static inline int unpack_cb_double(struct unpack_user *u, double d, uint16_t *o)
{
	return put(u, PROTO_VALUE_F64, f64_bits(d), o);
}

static inline int unpack_cb_nil(struct unpack_user *u, uint16_t *o)
{
	return put(u, PROTO_VALUE_NIL, 0, o);
}

static inline int unpack_cb_true(struct unpack_user *u, uint16_t *o)
{
	return put(u, PROTO_VALUE_BOOL, true, o);
}

static inline int unpack_cb_false(struct unpack_user *u, uint16_t *o)
{
	return put(u, PROTO_VALUE_BOOL, false, o);
}

/* p points into our own copy of the frame (proto_unpack_frame()). For an
 * empty string the unpacker passes a stale pointer (to the last value it
 * took bytes from): an empty string points at the padding. */
static inline int unpack_cb_str(struct unpack_user *u, const char *base, const char *p,
				unsigned len, uint16_t *o)
{
	return put(u, PROTO_VALUE_STR | (uint64_t)len << 8, (uintptr_t)(len ? p : u->padding), o);
}

static inline int unpack_cb_bin(struct unpack_user *u, const char *base, const char *p,
				unsigned len, uint16_t *o)
{
	return put(u, PROTO_VALUE_BIN | (uint64_t)len << 8, (uintptr_t)p, o);
}

/* len counts the type byte, so it is never 0, except when msgpack-c adds
 * that byte to an ext32 length of 0xffffffff in 32 bits and gets 0: that
 * ext would need 4 GiB, more than any frame holds. */
static inline int unpack_cb_ext(struct unpack_user *u, const char *base, const char *p,
				unsigned len, uint16_t *o)
{
	if (_unlikely_(len == 0)) {
		u->code = PROTO_E_TRUNCATED;
		return -1;
	}
	return put(u, PROTO_VALUE_EXT | (uint64_t)len << 8, (uintptr_t)p, o);
}

/* Room for the root and every declared child: a bigger record, the
 * objects so far copied over. */
static __attribute__((noinline)) int grow_record(struct unpack_user *u)
{
	uint64_t used = (uint64_t)(u->tape - u->first);
	uint64_t room = MIN(MAX(2 * u->room, u->declared + 1), u->max_room);
	struct proto_value *first = proto_bump_take(u->bump, room * sizeof(*first));

	if (!first) {
		u->code = PROTO_E_NOMEM;
		return -1;
	}
	memcpy(first, u->first, used * sizeof(*first));
	u->first = first;
	u->tape = first + used;
	u->room = room;
	return 0;
}

/* A container of n entries taking `slots` objects (a map: key and value),
 * recorded before its children. */
static inline int open_container(struct unpack_user *u, unsigned type, unsigned n,
				  uint64_t slots, uint16_t *o)
{
	u->declared += slots;
	if (u->declared > u->max_declared) {
		u->code = PROTO_E_TRUNCATED;
		return -1;
	}
	if (u->declared >= PROTO_MAX_FRAME_OBJECTS) { /* + the root */
		u->code = PROTO_E_TOO_MANY;
		return -1;
	}
	if (_unlikely_(u->declared >= u->room) && grow_record(u) < 0)
		return -1;
	return put(u, type | (uint64_t)n << 8, 0, o);
}

static inline int unpack_cb_array(struct unpack_user *u, unsigned n, uint16_t *o)
{
	return open_container(u, PROTO_VALUE_ARRAY, n, n, o);
}

static inline int unpack_cb_map(struct unpack_user *u, unsigned n, uint16_t *o)
{
	return open_container(u, PROTO_VALUE_MAP, n, 2 * (uint64_t)n, o);
}

static inline int unpack_cb_array_item(struct unpack_user *u, uint16_t *c, uint16_t o)
{
	return 0;
}

static inline int unpack_cb_map_item(struct unpack_user *u, uint16_t *c, uint16_t k, uint16_t v)
{
	return 0;
}

#define msgpack_unpack_struct(name) struct unpack##name
#define msgpack_unpack_func(ret, name) static inline ret unpack##name
#define msgpack_unpack_callback(name) unpack_cb##name
#define msgpack_unpack_object uint16_t
#define msgpack_unpack_user struct unpack_user
#include <msgpack/unpack_template.h>

_Static_assert(sizeof(((struct unpack_context *)0)->stack) ==
		       PROTO_MAX_DEPTH * sizeof(struct unpack_stack),
	       "msgpack/unpack_define.h was included before MSGPACK_EMBED_STACK_SIZE was set");

const char *proto_value_type_name(unsigned type)
{
	static const char *const names[] = {
		[PROTO_VALUE_NIL] = "nil",     [PROTO_VALUE_BOOL] = "bool",
		[PROTO_VALUE_UINT] = "uint",   [PROTO_VALUE_INT] = "int",
		[PROTO_VALUE_F32] = "float32", [PROTO_VALUE_F64] = "float64",
		[PROTO_VALUE_STR] = "str",     [PROTO_VALUE_BIN] = "bin",
		[PROTO_VALUE_EXT] = "ext",     [PROTO_VALUE_ARRAY] = "array",
		[PROTO_VALUE_MAP] = "map",
	};
	return type < ARRAY_SIZE(names) ? names[type] : "?";
}

void *proto_bump_refill(struct proto_bump *b, size_t size)
{
	size_t chunk = MAX(size, (size_t)PROTO_BUMP_CHUNK);
	char *p = arena_alloc_raw(b->arena, chunk);

	if (!p)
		return NULL;
	b->pos = p + size;
	b->end = p + chunk;
	return p;
}

static int truncated(struct proto_error *err, size_t len)
{
	return proto_fail(err, NULL, PROTO_E_TRUNCATED,
			  "message truncated: %zu bytes end inside an object", len);
}

int proto_unpack_frame(const void *buf, size_t len, struct proto_bump *bump,
		       const struct proto_value **tape, struct proto_error *err)
{
	struct unpack_context ctx;
	struct unpack_user *u = &ctx.user;
	size_t off = 0;
	char *copy;
	int r;

	if (len > PROTO_MAX_FRAME_BYTES)
		return proto_fail(err, NULL, PROTO_E_FRAME_SIZE, "frame of %zu bytes exceeds limit %u",
				  len, PROTO_MAX_FRAME_BYTES);
	unpack_init(&ctx);
	*u = (struct unpack_user){ .bump = bump, .max_declared = len ? len - 1 : 0 };
	/* Every object but the root is a declared child: at most one per byte
	 * of the frame, and fewer than PROTO_MAX_FRAME_OBJECTS. */
	u->max_room = MAX(MIN(len, (size_t)PROTO_MAX_FRAME_OBJECTS), (size_t)1);
	u->room = MIN(u->max_room, (uint64_t)RECORD_FIRST);
	copy = proto_bump_take(bump, (len + PROTO_FRAME_PADDING + PROTO_BUMP_ALIGN - 1) &
					     ~(size_t)(PROTO_BUMP_ALIGN - 1));
	u->first = u->tape = copy ? proto_bump_take(bump, u->room * sizeof(*u->tape)) : NULL;
	if (!u->first)
		return proto_fail(err, NULL, PROTO_E_NOMEM, "out of memory");
	if (len)
		memcpy(copy, buf, len);
	memset(copy + len, 0, PROTO_FRAME_PADDING);
	u->padding = copy + len;
	r = unpack_execute(&ctx, copy, len, &off);
	if (r == 0)
		return truncated(err, len);
	if (r < 0)
		switch (u->code) {
		case PROTO_E_TRUNCATED:
			return truncated(err, len);
		case PROTO_E_TOO_MANY:
			return proto_fail(err, NULL, PROTO_E_TOO_MANY,
					  "message of more than %u msgpack objects",
					  PROTO_MAX_FRAME_OBJECTS);
		case PROTO_E_NOMEM:
			return proto_fail(err, NULL, PROTO_E_NOMEM, "out of memory");
		default: /* the unpacker's own refusals */
			if (r == MSGPACK_UNPACK_NOMEM_ERROR) /* its container stack is full */
				return proto_fail(err, NULL, PROTO_E_MALFORMED,
						  "nesting deeper than %d levels at offset %zu",
						  PROTO_MAX_DEPTH, off);
			return proto_fail(err, NULL, PROTO_E_MALFORMED,
					  "reserved byte 0xc1 at offset %zu", off);
		}
	if (off != len)
		return proto_fail(err, NULL, PROTO_E_TRAILING,
				  "%zu bytes of trailing garbage after the message", len - off);
	*tape = u->first;
	return 0;
}
