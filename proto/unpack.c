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

/* A first record for this many objects: a frame that has more is
 * unpacked again into one for as many objects as it has bytes. Growing
 * the record instead would put a call in the unpacker's loop, which costs
 * every frame more than the second pass costs the large ones. */
#define RECORD_FIRST 4096

struct unpack_user {
	struct proto_value *tape; /* the next record */
	uint64_t room;            /* objects the record holds */
	uint64_t declared;        /* children declared by every container so far */
	uint64_t max_declared;    /* frame length - 1: one byte per object at least */
	enum proto_error_code code; /* why a callback refused, PROTO_OK if none did */
	bool full;                /* refused: the record is too small */
	char *padding;            /* the zero bytes after the frame copy */
};

/*
 * Every object is recorded when msgpack-c has read it, in the order of the
 * frame. The unpacker's own object (msgpack_unpack_object), which it
 * copies around its stack, carries nothing: the item callbacks have
 * nothing to do. It is a 32-bit zero: a byte would alias the record
 * cursor for the compiler and a 16-bit store costs length-changing
 * prefixes in the unpacker's loop (5 % of a decode, bench/proto.sh); a
 * 64-bit one, or none at all (an empty struct), saved instructions but
 * took 3 % and 7 % more time per pending pod.
 */
static inline int put(struct unpack_user *u, uint64_t head, uint64_t value, uint32_t *o)
{
	struct proto_value *t = u->tape++;

	t->head = head;
	t->u = value;
	*o = 0;
	return 0;
}

static inline uint32_t unpack_cb_root(struct unpack_user *u)
{
	return 0;
}

/* msgpack-c reports a non-negative signed int as a positive integer. */
#define UNPACK_INT_(bits)                                                       \
	static inline int unpack_cb_uint##bits(struct unpack_user *u, uint##bits##_t d, \
					       uint32_t *o)                      \
	{                                                                       \
		return put(u, PROTO_VALUE_UINT, d, o);                          \
	}                                                                       \
	static inline int unpack_cb_int##bits(struct unpack_user *u, int##bits##_t d, \
					      uint32_t *o)                       \
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

static inline int unpack_cb_float(struct unpack_user *u, float d, uint32_t *o)
{
	return put(u, PROTO_VALUE_F32, f64_bits(d), o);
}

static inline int unpack_cb_double(struct unpack_user *u, double d, uint32_t *o)
{
	return put(u, PROTO_VALUE_F64, f64_bits(d), o);
}

static inline int unpack_cb_nil(struct unpack_user *u, uint32_t *o)
{
	return put(u, PROTO_VALUE_NIL, 0, o);
}

static inline int unpack_cb_true(struct unpack_user *u, uint32_t *o)
{
	return put(u, PROTO_VALUE_BOOL, true, o);
}

static inline int unpack_cb_false(struct unpack_user *u, uint32_t *o)
{
	return put(u, PROTO_VALUE_BOOL, false, o);
}

/* p points into our own copy of the frame (proto_unpack_frame()). For an
 * empty string the unpacker passes a stale pointer (to the last value it
 * took bytes from): an empty string points at the padding. */
static inline int unpack_cb_str(struct unpack_user *u, const char *base, const char *p,
				unsigned len, uint32_t *o)
{
	return put(u, PROTO_VALUE_STR | (uint64_t)len << 8, (uintptr_t)(len ? p : u->padding), o);
}

static inline int unpack_cb_bin(struct unpack_user *u, const char *base, const char *p,
				unsigned len, uint32_t *o)
{
	return put(u, PROTO_VALUE_BIN | (uint64_t)len << 8, (uintptr_t)p, o);
}

/* len counts the type byte, so it is never 0, except when msgpack-c adds
 * that byte to an ext32 length of 0xffffffff in 32 bits and gets 0: that
 * ext would need 4 GiB, more than any frame holds. */
static inline int unpack_cb_ext(struct unpack_user *u, const char *base, const char *p,
				unsigned len, uint32_t *o)
{
	if (_unlikely_(len == 0)) {
		u->code = PROTO_E_TRUNCATED;
		return -1;
	}
	return put(u, PROTO_VALUE_EXT | (uint64_t)len << 8, (uintptr_t)p, o);
}

/* A container of n entries taking `slots` objects (a map: key and value),
 * recorded before its children. */
static inline int open_container(struct unpack_user *u, unsigned type, unsigned n,
				  uint64_t slots, uint32_t *o)
{
	u->declared += slots;
	/* room ≤ MIN(frame length, PROTO_MAX_FRAME_OBJECTS): below it, the
	 * frame has bytes left for every child and the count is fine. */
	if (_unlikely_(u->declared >= u->room)) {
		if (u->declared > u->max_declared)
			u->code = PROTO_E_TRUNCATED;
		else if (u->declared >= PROTO_MAX_FRAME_OBJECTS) /* + the root */
			u->code = PROTO_E_TOO_MANY;
		else /* no room for the root and every child */
			u->full = true;
		return -1;
	}
	return put(u, type | (uint64_t)n << 8, 0, o);
}

static inline int unpack_cb_array(struct unpack_user *u, unsigned n, uint32_t *o)
{
	return open_container(u, PROTO_VALUE_ARRAY, n, n, o);
}

static inline int unpack_cb_map(struct unpack_user *u, unsigned n, uint32_t *o)
{
	return open_container(u, PROTO_VALUE_MAP, n, 2 * (uint64_t)n, o);
}

static inline int unpack_cb_array_item(struct unpack_user *u, uint32_t *c, uint32_t o)
{
	return 0;
}

static inline int unpack_cb_map_item(struct unpack_user *u, uint32_t *c, uint32_t k, uint32_t v)
{
	return 0;
}

#define msgpack_unpack_struct(name) struct unpack##name
#define msgpack_unpack_func(ret, name) static inline __attribute__((always_inline)) ret unpack##name
#define msgpack_unpack_callback(name) unpack_cb##name
#define msgpack_unpack_object uint32_t
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
	if (b->first)
		b->spilled = true;
	else
		b->first = p;
	b->pos = p + size;
	b->end = p + chunk;
	return p;
}

static int truncated(struct proto_error *err, size_t len)
{
	return proto_fail(err, NULL, PROTO_E_TRUNCATED,
			  "message truncated: %zu bytes end inside an object", len);
}

/* One pass of the unpacker over the frame copy, into a record of room
 * objects at first. Returns the unpacker's result; *off where it stopped,
 * *user the callbacks' state. The unpacker is inlined here with its
 * context a local: the compiler lays its loop out for this one caller (a
 * fixstr goes straight to its callback) and reaches its state off the
 * stack pointer. Out of line it took 4 % more instructions and 9 % more
 * time per pending pod (bench/proto.sh). */
static __attribute__((noinline)) int unpack_pass(const char *copy, size_t len,
						 struct proto_value *first, uint64_t room,
						 size_t *off, struct unpack_user *user)
{
	struct unpack_context ctx;
	int r;

	unpack_init(&ctx);
	ctx.user = (struct unpack_user){ .tape = first, .room = room,
					 .max_declared = len ? len - 1 : 0,
					 .padding = (char *)copy + len };
	*off = 0;
	r = unpack_execute(&ctx, copy, len, off);
	*user = ctx.user;
	return r;
}

int proto_unpack_frame(const void *buf, size_t len, struct proto_bump *bump,
		       const struct proto_value **tape, struct proto_error *err)
{
	/* Every object but the root is a declared child: at most one per byte
	 * of the frame, and fewer than PROTO_MAX_FRAME_OBJECTS. */
	uint64_t max_room = MAX(MIN(len, (size_t)PROTO_MAX_FRAME_OBJECTS), (size_t)1);
	uint64_t room = MIN(max_room, (uint64_t)RECORD_FIRST);
	struct unpack_user user;
	struct proto_value *first;
	size_t off;
	char *copy;
	int r;

	if (len > PROTO_MAX_FRAME_BYTES)
		return proto_fail(err, NULL, PROTO_E_FRAME_SIZE, "frame of %zu bytes exceeds limit %u",
				  len, PROTO_MAX_FRAME_BYTES);
	copy = proto_bump_take(bump, (len + PROTO_FRAME_PADDING + PROTO_BUMP_ALIGN - 1) &
					     ~(size_t)(PROTO_BUMP_ALIGN - 1));
	first = copy ? proto_bump_take(bump, room * sizeof(*first)) : NULL;
	if (!first)
		return proto_fail(err, NULL, PROTO_E_NOMEM, "out of memory");
	if (len)
		memcpy(copy, buf, len);
	memset(copy + len, 0, PROTO_FRAME_PADDING);
	r = unpack_pass(copy, len, first, room, &off, &user);
	if (r < 0 && user.full) {
		first = proto_bump_take(bump, max_room * sizeof(*first));
		if (!first)
			return proto_fail(err, NULL, PROTO_E_NOMEM, "out of memory");
		r = unpack_pass(copy, len, first, max_room, &off, &user);
	}
	if (r == 0)
		return truncated(err, len);
	if (r < 0)
		switch (user.code) {
		case PROTO_E_TRUNCATED:
			return truncated(err, len);
		case PROTO_E_TOO_MANY:
			return proto_fail(err, NULL, PROTO_E_TOO_MANY,
					  "message of more than %u msgpack objects",
					  PROTO_MAX_FRAME_OBJECTS);
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
	*tape = first;
	return 0;
}
