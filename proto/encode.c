/*
 * The msgpack encoder: packs a message into the caller's msgpack_sbuffer,
 * checking every limit the decoder checks, so kanna never sends what a
 * peer would reject. Called by every daemon's send path; never allocates
 * beyond the buffer.
 *
 * Generated from proto/proto.h's field lists: one function per struct,
 * each field's kind and limits compiled in. msgpack-c does the packing:
 * its msgpack_pack_* functions are a template (msgpack/pack_template.h)
 * that msgpack/pack.h instantiates for a packer calling a write callback
 * per value; this file instantiates the same template for a packer that
 * writes at a cursor into the sbuffer's memory, room made once per field,
 * so a value costs a store or two instead of an indirect call. The wire
 * bytes are those of msgpack/pack.h.
 */
#include "config.h"

#include <errno.h>
#include <msgpack/pack_define.h>
#include <msgpack/sbuffer.h>
#include <msgpack/timestamp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "proto/schema.h"

#ifdef MSGPACK_PACK_H
#error "msgpack/pack.h would clash with the msgpack_pack_* functions instantiated here"
#endif

/*
 * The output cursor is a local of every encode_* function, passed along
 * and returned (NULL on error): stores into the buffer cannot clobber it,
 * so it stays in a register. Room is made where a struct begins, after
 * each container value and before each string body: from below lim, the
 * slack takes everything of fixed size a struct writes in between — its
 * map header and, for each field, the id and a scalar or a container's
 * header.
 */
#define ENC_FIELD_MAX 10 /* id 1 + the largest scalar 9 (uint64, int64, double) */
#define ENC_SLACK (5 + 64 * ENC_FIELD_MAX + 5) /* map header, ≤ 64 fields, a string header */
#define ENC_INITIAL_ROOM 1024 /* a pending pod or a small plan without growing */

struct enc {
	char *lim; /* sb->data + sb->alloc - ENC_SLACK */
	msgpack_sbuffer *sb;
	struct proto_error *err;
	int r;
	struct proto_path path; /* where the error is, collected while unwinding */
};

/*
 * Every msgpack_pack_* builds its value in a small stack buffer, a type
 * byte then (most often) one wider store, and appends it with a constant
 * len. Copying the two parts apart lets each load take its bytes from one
 * store; a single load spanning both stalls store forwarding, which cost
 * a fifth of the encoder's time. Other lengths are string bodies, mostly
 * short: overlapping words instead of a memcpy() call. Never reads past
 * buf + len.
 */
static inline __attribute__((always_inline)) int enc_put(char **x, const char *buf, size_t len)
{
	char *p = *x;

	if (__builtin_constant_p(len) && len > 1) {
		p[0] = buf[0];
		memcpy(p + 1, buf + 1, len - 1);
	} else if (len <= 16 && len >= 8) {
		uint64_t a, b; /* two overlapping words */

		memcpy(&a, buf, 8);
		memcpy(&b, buf + len - 8, 8);
		memcpy(p, &a, 8);
		memcpy(p + len - 8, &b, 8);
	} else if (len < 8 && len >= 4) {
		uint32_t a, b;

		memcpy(&a, buf, 4);
		memcpy(&b, buf + len - 4, 4);
		memcpy(p, &a, 4);
		memcpy(p + len - 4, &b, 4);
	} else if (len < 4) {
		for (size_t i = 0; i < len; i++)
			p[i] = buf[i];
	} else if (len <= 32) { /* the first and the last 16 bytes, overlapping */
		memcpy(p, buf, 16);
		memcpy(p + len - 16, buf + len - 16, 16);
	} else if (len <= 64) {
		memcpy(p, buf, 32);
		memcpy(p + len - 32, buf + len - 32, 32);
	} else {
		memcpy(p, buf, len);
	}
	*x = p + len;
	return 0;
}

/* Inlined everywhere: with the value and length known at the call, a
 * field id or a header packs to a store or two. The caller made room. */
#define msgpack_pack_inline_func(name)                                         \
	static inline __attribute__((always_inline)) int msgpack_pack##name
#define msgpack_pack_user char **
#define msgpack_pack_append_buffer(x, buf, len) return enc_put(x, (const char *)(buf), len)
#include <msgpack/pack_template.h>

/* ---- errors: the message here, the path added while unwinding ---- */
#define cold_ __attribute__((cold, noinline))

static cold_ _printf_(3, 4) char *fail(struct enc *e, enum proto_error_code code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	e->r = proto_vfail(e->err, NULL, code, fmt, ap);
	va_end(ap);
	return NULL;
}

static cold_ char *unwind_field(struct enc *e, const char *name)
{
	proto_path_push(&e->path, name, 0);
	return NULL;
}

static cold_ char *unwind_index(struct enc *e, uint32_t i)
{
	proto_path_push(&e->path, NULL, i);
	return NULL;
}

static cold_ char *too_many(struct enc *e, const char *what, uint32_t n, uint32_t max)
{
	return fail(e, PROTO_E_TOO_MANY, "%s of %u exceeds limit %u", what, n, max);
}

/*
 * Slow path: room for need bytes and the slack after the first used bytes
 * of sb's data. msgpack_sbuffer_write() grows the buffer (doubling) to
 * take zeros that are then dropped again; sb->size stays where the
 * message began until proto_encode() is done. Returns the cursor at used.
 */
static cold_ char *enc_reserve(struct enc *e, size_t used, size_t need)
{
	static const char zeros[4096];
	msgpack_sbuffer *sb = e->sb;
	size_t size = sb->size, want = need + ENC_SLACK;

	sb->size = used;
	for (size_t w = 0; w < want;) {
		size_t k = MIN(sizeof(zeros), want - w);

		if (msgpack_sbuffer_write(sb, zeros, k) != 0) {
			sb->size = size;
			return fail(e, PROTO_E_NOMEM, "failed to grow the output buffer");
		}
		w += k;
	}
	sb->size = size;
	e->lim = sb->data + sb->alloc - ENC_SLACK;
	return sb->data + used;
}

/* Room for need bytes and the slack after p, which moves with the buffer. */
static cold_ char *enc_grow(struct enc *e, char *p, size_t need)
{
	return enc_reserve(e, (size_t)(p - e->sb->data), need);
}

/* Room for everything of fixed size (ENC_SLACK). */
static inline char *enc_room(struct enc *e, char *p)
{
	return _likely_(p <= e->lim) ? p : enc_grow(e, p, 0);
}

/* ---- values ---- */

static inline __attribute__((always_inline)) char *encode_str(struct enc *e, char *p,
							      const char *s, uint32_t max)
{
	size_t n = strlen(s);

	if (_unlikely_(n > max))
		return fail(e, PROTO_E_TOO_LONG, "string of %zu bytes exceeds limit %u", n, max);
	if (_unlikely_(e->lim - p < (ptrdiff_t)n) && !(p = enc_grow(e, p, n)))
		return NULL;
	msgpack_pack_str(&p, n);
	msgpack_pack_str_body(&p, s, n);
	return p;
}

static inline char *encode_required_str(struct enc *e, char *p, const char *s, uint32_t max)
{
	if (_unlikely_(!s))
		return fail(e, PROTO_E_MISSING, "required field missing");
	return encode_str(e, p, s, max);
}

static inline char *encode_enum(struct enc *e, char *p, uint8_t v, unsigned n_values, const char *name)
{
	if (_unlikely_(v >= n_values))
		return fail(e, PROTO_E_RANGE, "unknown value %u for enum %s", v, name);
	msgpack_pack_uint8(&p, v);
	return p;
}

static char *encode_strs(struct enc *e, char *p, char *const *v, uint32_t n, uint32_t max,
			 uint32_t elem_len)
{
	if (_unlikely_(n > max))
		return too_many(e, "array", n, max);
	msgpack_pack_array(&p, n);
	for (uint32_t i = 0; i < n; i++) {
		p = v[i] ? encode_str(e, p, v[i], elem_len) : fail(e, PROTO_E_MISSING, "NULL string in array");
		if (_unlikely_(!p))
			return unwind_index(e, i);
	}
	return p;
}

static char *encode_kv(struct enc *e, char *p, const struct proto_kv *v, uint32_t n, uint32_t max,
		       uint32_t value_len)
{
	if (_unlikely_(n > max))
		return too_many(e, "map", n, max);
	msgpack_pack_map(&p, n);
	for (uint32_t i = 0; i < n; i++) {
		if (_unlikely_(!v[i].key || !v[i].value))
			p = fail(e, PROTO_E_MISSING, "NULL key or value");
		else if ((p = encode_str(e, p, v[i].key, PROTO_MAX_KEY_LEN)))
			p = encode_str(e, p, v[i].value, value_len);
		if (_unlikely_(!p))
			return unwind_index(e, i);
	}
	return p;
}

static char *encode_res(struct enc *e, char *p, const struct proto_resource *v, uint32_t n,
			uint32_t max)
{
	if (_unlikely_(n > max))
		return too_many(e, "map", n, max);
	msgpack_pack_map(&p, n);
	for (uint32_t i = 0; i < n; i++) {
		if (_unlikely_(!v[i].name))
			p = fail(e, PROTO_E_MISSING, "NULL resource name");
		else if ((p = encode_str(e, p, v[i].name, PROTO_MAX_KEY_LEN)))
			msgpack_pack_int64(&p, v[i].value); /* in the slack the name left */
		if (_unlikely_(!p))
			return unwind_index(e, i);
	}
	return p;
}

/* Bitwise: -0.0 and NaN are values worth sending. */
static inline bool f64_is_zero(double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return bits == 0;
}

/* ---- structs, generated from the field lists ---- */

#define ENC_FLAG_REQ 1
#define ENC_FLAG_OPT 0
#define ENC_ENUM_COUNT_(c, s) +1

/* An optional field holding its default stays off the wire. */
#define IS_DEFAULT_BOOL(name, arg) (!s->name)
#define IS_DEFAULT_U32(name, arg) (s->name == 0)
#define IS_DEFAULT_U64(name, arg) (s->name == 0)
#define IS_DEFAULT_I32(name, arg) (s->name == 0)
#define IS_DEFAULT_I64(name, arg) (s->name == 0)
#define IS_DEFAULT_F64(name, arg) f64_is_zero(s->name)
#define IS_DEFAULT_ENUM(name, arg) (s->name == 0)
#define IS_DEFAULT_STR(name, arg) (s->name == NULL)
#define IS_DEFAULT_STRS(name, arg) (s->n_##name == 0)
#define IS_DEFAULT_KV(name, arg) (s->n_##name == 0)
#define IS_DEFAULT_RES(name, arg) (s->n_##name == 0)
#define IS_DEFAULT_OBJ(name, arg) is_default_##arg(&s->name)
#define IS_DEFAULT_OBJS(name, arg) (s->n_##name == 0)
#define IS_DEFAULT_OBJECT(name, arg) (s->name.ptr == NULL)
#define ON_WIRE_(flags, kind, name, arg) (ENC_FLAG_##flags || !IS_DEFAULT_##kind(name, arg))

/* Each packs field `name` of s at p and leaves p after it (NULL on error). */
#define ENC_BOOL(name, arg, max) s->name ? msgpack_pack_true(&p) : msgpack_pack_false(&p)
#define ENC_U32(name, arg, max) msgpack_pack_uint32(&p, s->name)
#define ENC_U64(name, arg, max) msgpack_pack_uint64(&p, s->name)
#define ENC_I32(name, arg, max) msgpack_pack_int32(&p, s->name)
#define ENC_I64(name, arg, max) msgpack_pack_int64(&p, s->name)
#define ENC_F64(name, arg, max) msgpack_pack_double(&p, s->name)
#define ENC_ENUM(name, arg, max)                                               \
	p = encode_enum(e, p, s->name, 0 proto_values_##arg(ENC_ENUM_COUNT_), #arg)
#define ENC_STR(name, arg, max) p = encode_required_str(e, p, s->name, (max))
#define ENC_STRS(name, arg, max) p = encode_strs(e, p, s->name, s->n_##name, (max), (arg))
#define ENC_KV(name, arg, max) p = encode_kv(e, p, s->name, s->n_##name, (max), (arg))
#define ENC_RES(name, arg, max) p = encode_res(e, p, s->name, s->n_##name, (max))
#define ENC_OBJ(name, arg, max) p = encode_##arg(e, p, &s->name)
#define ENC_OBJS(name, arg, max) p = encode_objs_##arg(e, p, s->name, s->n_##name, (max))
#define ENC_OBJECT(name, arg, max) p = encode_object(e, p, &s->name)

#define IS_DEFAULT_FIELD_(S, id, name, kind, arg, max, flags) &&IS_DEFAULT_##kind(name, arg)
/* After a container value, room again for the rest of the struct. */
#define ENC_AFTER_KIND_(kind) (PROTO_KIND_##kind >= PROTO_KIND_STRS)
#define ENC_FIELD_(S, id, name, kind, arg, max, flags)                         \
	if (ON_WIRE_(flags, kind, name, arg)) {                               \
		msgpack_pack_uint8(&p, id);                                   \
		ENC_##kind(name, arg, max);                                   \
		if (ENC_AFTER_KIND_(kind) && _likely_(p != NULL))             \
			p = enc_room(e, p);                                   \
		if (_unlikely_(!p))                                           \
			return unwind_field(e, #name);                        \
		n++;                                                          \
	}

/* True when every field holds its default (an embedded struct left off). */
#define ENC_IS_DEFAULT_(S)                                                     \
	static inline _unused_ bool is_default_##S(const struct proto_##S *s) \
	{                                                                     \
		return true proto_fields_##S(IS_DEFAULT_FIELD_, S);           \
	}
PROTO_STRUCTS(ENC_IS_DEFAULT_)

#define ENC_DECLARE_(S)                                                        \
	static char *encode_##S(struct enc *e, char *p, const struct proto_##S *s); \
	static char *encode_objs_##S(struct enc *e, char *p, const struct proto_##S *v, \
				     uint32_t n, uint32_t max);
PROTO_STRUCTS(ENC_DECLARE_)
static char *encode_object(struct enc *e, char *p, const struct proto_object *o);

/*
 * The map header goes in the byte left for it: msgpack-c's fixmap for
 * ≤ 15 pairs. A map16 (3 bytes, for more) moves the fields 2 bytes on,
 * into the slack.
 */
static inline char *enc_map_head(struct enc *e, size_t head, char *p, uint32_t n)
{
	char *h = e->sb->data + head, *q = h;

	if (_unlikely_(n > 15)) {
		memmove(h + 3, h + 1, (size_t)(p - h) - 1);
		p += 2;
	}
	msgpack_pack_map(&q, n);
	return p;
}

/* A struct is a map {field id: value} of its required and non-default fields. */
#define ENC_STRUCT_(S)                                                         \
	static char *encode_##S(struct enc *e, char *p, const struct proto_##S *s) \
	{                                                                     \
		uint32_t n = 0;                                               \
		size_t head;                                                  \
                                                                              \
		p = enc_room(e, p);                                           \
		if (_unlikely_(!p))                                           \
			return NULL;                                          \
		head = (size_t)(p - e->sb->data);                             \
		p++;                                                          \
		proto_fields_##S(ENC_FIELD_, S)                               \
		return enc_map_head(e, head, p, n);                           \
	}
PROTO_STRUCTS(ENC_STRUCT_)

/* Arrays of structs, for every struct (most are unused). */
#define ENC_OBJS_(S)                                                           \
	static _unused_ char *encode_objs_##S(struct enc *e, char *p, const struct proto_##S *v, \
					      uint32_t n, uint32_t max)       \
	{                                                                     \
		if (_unlikely_(n > max))                                      \
			return too_many(e, "array", n, max);                  \
		msgpack_pack_array(&p, n);                                    \
		for (uint32_t i = 0; i < n; i++) {                            \
			p = encode_##S(e, p, &v[i]);                          \
			if (_unlikely_(!p))                                   \
				return unwind_index(e, i);                    \
		}                                                             \
		return p;                                                     \
	}
PROTO_STRUCTS(ENC_OBJS_)

/* A cluster-state object: [kind, map]. */
static char *encode_object(struct enc *e, char *p, const struct proto_object *o)
{
	if (o->kind >= proto_n_object_kinds)
		return fail(e, PROTO_E_UNKNOWN_TYPE, "unknown object kind %u", o->kind);
	if (!o->ptr)
		return fail(e, PROTO_E_MISSING, "NULL object");
	msgpack_pack_array(&p, 2);
	msgpack_pack_uint8(&p, o->kind);
	switch (o->kind) {
#define ENC_OBJECT_CASE_(a, c, s)                                              \
	case c:                                                               \
		return encode_##s(e, p, o->s);
		PROTO_OBJECTS(ENC_OBJECT_CASE_, _)
#undef ENC_OBJECT_CASE_
	}
	return p;
}

static char *encode_body(struct enc *e, char *p, const struct proto_msg *msg)
{
	switch (msg->env.type) {
#define ENC_BODY_CASE_(a, c, s)                                                \
	case c:                                                               \
		return encode_##s(e, p, &msg->body.s);
		PROTO_MESSAGES(ENC_BODY_CASE_, _)
#undef ENC_BODY_CASE_
	}
	return fail(e, PROTO_E_UNKNOWN_TYPE, "unknown message type %u", msg->env.type);
}

int proto_encode(const struct proto_msg *msg, struct msgpack_sbuffer *out,
		 struct proto_error *err)
{
	struct enc e; /* not zeroed whole: the path's steps are written before read */
	size_t start = out->size;
	unsigned type = msg->env.type;
	char *p;

	e.sb = out;
	e.err = err;
	e.r = 0;
	e.path.depth = 0;
	if (type >= proto_n_msg_types)
		return proto_fail(err, NULL, PROTO_E_UNKNOWN_TYPE, "envelope.type: unknown message type %u", type);
	if (out->alloc - start < ENC_INITIAL_ROOM + ENC_SLACK) {
		p = enc_reserve(&e, start, ENC_INITIAL_ROOM);
		if (!p)
			return e.r;
	} else {
		p = out->data + start;
		e.lim = out->data + out->alloc - ENC_SLACK;
	}
	msgpack_pack_array(&p, 4);
	msgpack_pack_uint8(&p, PROTO_VERSION_MAJOR);
	msgpack_pack_uint8(&p, PROTO_VERSION_MINOR);
	p = encode_envelope(&e, p, &msg->env);
	if (!p) {
		unwind_field(&e, "envelope");
		goto fail;
	}
	p = encode_body(&e, p, msg);
	if (!p) {
		unwind_field(&e, proto_msg_descs[type]->name);
		goto fail;
	}
	if ((size_t)(p - out->data) - start > PROTO_MAX_FRAME_BYTES) {
		e.r = proto_fail(err, NULL, PROTO_E_FRAME_SIZE, "frame of %zu bytes exceeds limit %u",
				 (size_t)(p - out->data) - start, PROTO_MAX_FRAME_BYTES);
		goto fail;
	}
	out->size = (size_t)(p - out->data);
	if (err)
		err->code = PROTO_OK, err->text[0] = '\0';
	return 0;
fail:
	proto_error_add_path(err, &e.path);
	out->size = start; /* leave the buffer as it was */
	return e.r;
}

int proto_object_check(const struct proto_object *obj, struct proto_error *err)
{
	/* The widest message an object travels in: snapshot_item carries a
	 * seq and the object, state_delta a seq, an op and the object. */
	struct proto_msg m = {
		.env = { .type = PROTO_MSG_STATE_DELTA, .seq = UINT64_MAX,
			 .sender = PROTO_PROCESS_WATCHER, .sender_shard = UINT32_MAX,
			 .send_time_ns = INT64_MAX, .trace_id = UINT64_MAX },
		.body.state_delta = { .seq = UINT64_MAX, .op = PROTO_DELTA_DELETE, .object = *obj },
	};
	static const char prefix[] = "state_delta.object";
	msgpack_sbuffer sb;
	int r;

	msgpack_sbuffer_init(&sb);
	r = proto_encode(&m, &sb, err);
	msgpack_sbuffer_destroy(&sb);
	/* The path from the object down is the one its owner knows. */
	if (r < 0 && err && strncmp(err->text, prefix, sizeof(prefix) - 1) == 0) {
		size_t skip = sizeof(prefix) - 1;

		skip += err->text[skip] == '.' ? 1 : err->text[skip] == ':' ? 2 : 0;
		memmove(err->text, err->text + skip, strlen(err->text + skip) + 1);
	}
	return r;
}
