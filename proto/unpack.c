/*
 * The first step of every decode: one untrusted frame becomes a tree of
 * proto_values (proto/unpack.h), with the frame-level checks on the way.
 * msgpack-c does the parsing: its unpacker is a state machine shipped as
 * a template (msgpack/unpack_template.h) that its own msgpack_unpack()
 * instantiates with callbacks building a msgpack_object tree. We
 * instantiate the same template with callbacks that build 16-byte values in
 * the decoder's arena and check limits as they go. That is 3× faster than
 * the library's compiled msgpack_unpack(), whose object copies stall
 * store forwarding on every value (bench/proto.sh).
 *
 * msgpack-c sizes every array and map from its header and has no limits
 * API, so the container callback refuses a header that declares more
 * children than the frame has bytes left for (every object takes at least
 * one byte): all containers together can then never claim more values than
 * the frame has bytes. Called only by proto/decode.c; reads nothing
 * outside [buf, buf+len).
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

struct unpack_user {
	struct proto_bump *bump;
	uint64_t declared;     /* children declared by every container so far */
	uint64_t max_declared; /* frame length - 1: one byte per object at least */
	enum proto_error_code code; /* why a callback refused, PROTO_OK if none did */
	char *padding;         /* the zero bytes after the frame copy */
};

static inline struct proto_value unpack_cb_root(struct unpack_user *u)
{
	return (struct proto_value){ .head = PROTO_VALUE_NIL };
}

static inline void set_uint(struct proto_value *o, uint64_t v)
{
	o->head = PROTO_VALUE_UINT;
	o->u = v;
}

/* msgpack-c reports a non-negative signed int as a positive integer. */
static inline void set_int(struct proto_value *o, int64_t v)
{
	o->head = v >= 0 ? PROTO_VALUE_UINT : PROTO_VALUE_INT;
	o->i = v;
}

#define UNPACK_UINT_(bits)                                                      \
	static inline int unpack_cb_uint##bits(struct unpack_user *u, uint##bits##_t d, \
					       struct proto_value *o)            \
	{                                                                       \
		set_uint(o, d);                                                 \
		return 0;                                                       \
	}                                                                       \
	static inline int unpack_cb_int##bits(struct unpack_user *u, int##bits##_t d, \
					      struct proto_value *o)             \
	{                                                                       \
		set_int(o, d);                                                  \
		return 0;                                                       \
	}
UNPACK_UINT_(8)
UNPACK_UINT_(16)
UNPACK_UINT_(32)
UNPACK_UINT_(64)

static inline int unpack_cb_float(struct unpack_user *u, float d, struct proto_value *o)
{
	o->head = PROTO_VALUE_F32;
	o->f = d;
	return 0;
}

static inline int unpack_cb_double(struct unpack_user *u, double d, struct proto_value *o)
{
	o->head = PROTO_VALUE_F64;
	o->f = d;
	return 0;
}

static inline int unpack_cb_nil(struct unpack_user *u, struct proto_value *o)
{
	o->head = PROTO_VALUE_NIL;
	o->u = 0;
	return 0;
}

static inline int unpack_cb_true(struct unpack_user *u, struct proto_value *o)
{
	o->head = PROTO_VALUE_BOOL;
	o->u = 0;
	o->b = true;
	return 0;
}

static inline int unpack_cb_false(struct unpack_user *u, struct proto_value *o)
{
	o->head = PROTO_VALUE_BOOL;
	o->u = 0;
	return 0;
}

/* p points into our own copy of the frame (proto_unpack_frame()). */
static inline void set_bytes(struct proto_value *o, unsigned type, const char *p, unsigned len)
{
	o->head = type | (uint64_t)len << 8;
	o->str = (char *)p;
}

/* For an empty string the unpacker passes a stale pointer (to the last
 * value it took bytes from): an empty string points at the padding. */
static inline int unpack_cb_str(struct unpack_user *u, const char *base, const char *p,
				unsigned len, struct proto_value *o)
{
	set_bytes(o, PROTO_VALUE_STR, len ? p : u->padding, len);
	return 0;
}

static inline int unpack_cb_bin(struct unpack_user *u, const char *base, const char *p,
				unsigned len, struct proto_value *o)
{
	set_bytes(o, PROTO_VALUE_BIN, p, len);
	return 0;
}

/* len counts the type byte, so it is never 0, except when msgpack-c adds
 * that byte to an ext32 length of 0xffffffff in 32 bits and gets 0: that
 * ext would need 4 GiB, more than any frame holds. */
static inline int unpack_cb_ext(struct unpack_user *u, const char *base, const char *p,
				unsigned len, struct proto_value *o)
{
	if (_unlikely_(len == 0)) {
		u->code = PROTO_E_TRUNCATED;
		return -1;
	}
	set_bytes(o, PROTO_VALUE_EXT, p, len);
	return 0;
}

/*
 * A container of n entries taking `slots` values (a map: key and value).
 * items[-1] counts the slots filled so far: keeping that count off the
 * container value means the value, copied around by the unpacker, is
 * written once and never partially.
 */
static inline int open_container(struct unpack_user *u, unsigned type, unsigned n,
				  uint64_t slots, struct proto_value *o)
{
	struct proto_value *items;

	u->declared += slots;
	if (u->declared > u->max_declared) {
		u->code = PROTO_E_TRUNCATED;
		return -1;
	}
	if (u->declared >= PROTO_MAX_FRAME_OBJECTS) { /* + the root */
		u->code = PROTO_E_TOO_MANY;
		return -1;
	}
	o->head = type | (uint64_t)n << 8;
	o->items = NULL;
	if (n == 0)
		return 0;
	items = proto_bump_take(u->bump, (slots + 1) * sizeof(*items));
	if (!items) {
		u->code = PROTO_E_NOMEM;
		return -1;
	}
	items[0].u = 0;
	o->items = items + 1;
	return 0;
}

static inline int unpack_cb_array(struct unpack_user *u, unsigned n, struct proto_value *o)
{
	return open_container(u, PROTO_VALUE_ARRAY, n, n, o);
}

static inline int unpack_cb_map(struct unpack_user *u, unsigned n, struct proto_value *o)
{
	return open_container(u, PROTO_VALUE_MAP, n, 2 * (uint64_t)n, o);
}

static inline int unpack_cb_array_item(struct unpack_user *u, struct proto_value *c,
				       struct proto_value o)
{
	struct proto_value *items = c->items; /* read once: the stores below may alias c */

	items[items[-1].u++] = o;
	return 0;
}

/*
 * The unpacker keeps the key in its stack, written as two 8-byte stores;
 * copying it as one 16-byte value loads across both and stalls store
 * forwarding (that was half the unpacker's time). The empty asm makes the
 * compiler take the two halves apart, into general registers, instead of
 * merging them into one vector load again.
 */
static inline int unpack_cb_map_item(struct unpack_user *u, struct proto_value *c,
				     struct proto_value k, struct proto_value v)
{
	struct proto_value *items = c->items; /* read once: the stores below may alias c */
	uint64_t i = items[-1].u, head = k.head, value = k.u;

	__asm__("" : "+r"(head), "+r"(value));
	items[i].head = head;
	items[i].u = value;
	items[i + 1] = v;
	items[-1].u = i + 2;
	return 0;
}

#define msgpack_unpack_struct(name) struct unpack##name
#define msgpack_unpack_func(ret, name) static inline ret unpack##name
#define msgpack_unpack_callback(name) unpack_cb##name
#define msgpack_unpack_object struct proto_value
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
		       const struct proto_value **root, struct proto_error *err)
{
	struct unpack_context ctx;
	struct proto_value *top;
	size_t off = 0;
	char *copy;
	int r;

	if (len > PROTO_MAX_FRAME_BYTES)
		return proto_fail(err, NULL, PROTO_E_FRAME_SIZE, "frame of %zu bytes exceeds limit %u",
				  len, PROTO_MAX_FRAME_BYTES);
	copy = proto_bump_take(bump, (len + PROTO_FRAME_PADDING + PROTO_BUMP_ALIGN - 1) &
					     ~(size_t)(PROTO_BUMP_ALIGN - 1));
	if (!copy)
		return proto_fail(err, NULL, PROTO_E_NOMEM, "out of memory");
	if (len)
		memcpy(copy, buf, len);
	memset(copy + len, 0, PROTO_FRAME_PADDING);
	unpack_init(&ctx);
	ctx.user = (struct unpack_user){ .bump = bump, .max_declared = len ? len - 1 : 0,
					 .padding = copy + len };
	r = unpack_execute(&ctx, copy, len, &off);
	if (r == 0)
		return truncated(err, len);
	if (r < 0)
		switch (ctx.user.code) {
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
	top = proto_bump_take(bump, sizeof(*top));
	if (!top)
		return proto_fail(err, NULL, PROTO_E_NOMEM, "out of memory");
	*top = unpack_data(&ctx);
	*root = top;
	return 0;
}
