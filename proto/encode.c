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
 * appends to the sbuffer in place, so a value costs a few stores instead
 * of an indirect call. The wire bytes are those of msgpack/pack.h.
 */
#include "config.h"

#include <errno.h>
#include <msgpack/pack_define.h>
#include <msgpack/sbuffer.h>
#include <msgpack/timestamp.h>
#include <string.h>

#include "proto/schema.h"

#ifdef MSGPACK_PACK_H
#error "msgpack/pack.h would clash with the msgpack_pack_* functions instantiated here"
#endif

/* Room made before packing, so the buffer is never NULL while we do. */
#define ENCODER_MIN_ROOM 256

struct enc {
	char *pos; /* next byte of sb's data */
	char *end; /* sb->data + sb->alloc */
	msgpack_sbuffer *sb;
	struct proto_path path; /* where the error is, collected while unwinding */
	struct proto_error *err;
};

/* Slow path: msgpack_sbuffer_write() grows the buffer. */
static int enc_grow(struct enc *e, const char *buf, size_t len)
{
	int r;

	e->sb->size = (size_t)(e->pos - e->sb->data);
	r = msgpack_sbuffer_write(e->sb, buf, len);
	e->pos = e->sb->data + e->sb->size;
	e->end = e->sb->data + e->sb->alloc;
	return r;
}

/*
 * Every msgpack_pack_* builds its value in a small stack buffer, a type
 * byte then (most often) one wider store, and appends it with a constant
 * len. Copying the two parts apart lets each load take its bytes from one
 * store; a single load spanning both stalls store forwarding, which cost
 * a fifth of the encoder's time. Other lengths are string bodies, mostly
 * short: overlapping words instead of a memcpy() call.
 */
static inline __attribute__((always_inline)) int enc_append(struct enc *e, const char *buf,
							    size_t len)
{
	char *p = e->pos;

	if (_unlikely_((size_t)(e->end - p) < len))
		return enc_grow(e, buf, len);
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
	} else {
		memcpy(p, buf, len);
	}
	e->pos = p + len;
	return 0;
}

/* Inlined everywhere: with the value and length known at the call, a
 * field id or a header packs to a store or two. */
#define msgpack_pack_inline_func(name)                                         \
	static inline __attribute__((always_inline)) int msgpack_pack##name
#define msgpack_pack_user struct enc *
#define msgpack_pack_append_buffer(x, buf, len) return enc_append(x, (const char *)(buf), len)
#include <msgpack/pack_template.h>

/* ---- errors: the message here, the path added while unwinding ---- */
#define fail(e, code, ...) proto_fail((e)->err, NULL, (code), __VA_ARGS__)

static int nomem(struct enc *e)
{
	return fail(e, PROTO_E_NOMEM, "failed to grow the output buffer");
}

/* A msgpack_pack_* result: 0, or -1 when the buffer could not grow. */
#define PACKED(e, call) (_likely_((call) == 0) ? 0 : nomem(e))

static int unwind_field(struct enc *e, const char *name, int r)
{
	return proto_unwind(&e->path, name, 0, r);
}

static int unwind_index(struct enc *e, uint32_t i, int r)
{
	return proto_unwind(&e->path, NULL, i, r);
}

static int too_many(struct enc *e, const char *what, uint32_t n, uint32_t max)
{
	return fail(e, PROTO_E_TOO_MANY, "%s of %u exceeds limit %u", what, n, max);
}

/* ---- values ---- */

static inline __attribute__((always_inline)) int encode_str(struct enc *e, const char *s,
							    uint32_t max)
{
	size_t n = strlen(s);

	if (_unlikely_(n > max))
		return fail(e, PROTO_E_TOO_LONG, "string of %zu bytes exceeds limit %u", n, max);
	if (_unlikely_(msgpack_pack_str(e, n) != 0 || msgpack_pack_str_body(e, s, n) != 0))
		return nomem(e);
	return 0;
}

static inline int encode_required_str(struct enc *e, const char *s, uint32_t max)
{
	if (_unlikely_(!s))
		return fail(e, PROTO_E_MISSING, "required field missing");
	return encode_str(e, s, max);
}

static inline int encode_enum(struct enc *e, uint8_t v, unsigned n_values, const char *name)
{
	if (_unlikely_(v >= n_values))
		return fail(e, PROTO_E_RANGE, "unknown value %u for enum %s", v, name);
	return PACKED(e, msgpack_pack_uint8(e, v));
}

static int encode_strs(struct enc *e, char *const *v, uint32_t n, uint32_t max, uint32_t elem_len)
{
	if (_unlikely_(n > max))
		return too_many(e, "array", n, max);
	if (_unlikely_(msgpack_pack_array(e, n) != 0))
		return nomem(e);
	for (uint32_t i = 0; i < n; i++) {
		int r = v[i] ? encode_str(e, v[i], elem_len)
			     : fail(e, PROTO_E_MISSING, "NULL string in array");

		if (r < 0)
			return unwind_index(e, i, r);
	}
	return 0;
}

static int encode_kv(struct enc *e, const struct proto_kv *v, uint32_t n, uint32_t max,
		     uint32_t value_len)
{
	if (_unlikely_(n > max))
		return too_many(e, "map", n, max);
	if (_unlikely_(msgpack_pack_map(e, n) != 0))
		return nomem(e);
	for (uint32_t i = 0; i < n; i++) {
		int r;

		if (!v[i].key || !v[i].value)
			r = fail(e, PROTO_E_MISSING, "NULL key or value");
		else if ((r = encode_str(e, v[i].key, PROTO_MAX_KEY_LEN)) >= 0)
			r = encode_str(e, v[i].value, value_len);
		if (r < 0)
			return unwind_index(e, i, r);
	}
	return 0;
}

static int encode_res(struct enc *e, const struct proto_resource *v, uint32_t n, uint32_t max)
{
	if (_unlikely_(n > max))
		return too_many(e, "map", n, max);
	if (_unlikely_(msgpack_pack_map(e, n) != 0))
		return nomem(e);
	for (uint32_t i = 0; i < n; i++) {
		int r;

		if (!v[i].name)
			r = fail(e, PROTO_E_MISSING, "NULL resource name");
		else if ((r = encode_str(e, v[i].name, PROTO_MAX_KEY_LEN)) >= 0)
			r = PACKED(e, msgpack_pack_int64(e, v[i].value));
		if (r < 0)
			return unwind_index(e, i, r);
	}
	return 0;
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

#define ENC_BOOL(name, arg, max) PACKED(e, s->name ? msgpack_pack_true(e) : msgpack_pack_false(e))
#define ENC_U32(name, arg, max) PACKED(e, msgpack_pack_uint32(e, s->name))
#define ENC_U64(name, arg, max) PACKED(e, msgpack_pack_uint64(e, s->name))
#define ENC_I32(name, arg, max) PACKED(e, msgpack_pack_int32(e, s->name))
#define ENC_I64(name, arg, max) PACKED(e, msgpack_pack_int64(e, s->name))
#define ENC_F64(name, arg, max) PACKED(e, msgpack_pack_double(e, s->name))
#define ENC_ENUM(name, arg, max)                                               \
	encode_enum(e, s->name, 0 proto_values_##arg(ENC_ENUM_COUNT_), #arg)
#define ENC_STR(name, arg, max) encode_required_str(e, s->name, (max))
#define ENC_STRS(name, arg, max) encode_strs(e, s->name, s->n_##name, (max), (arg))
#define ENC_KV(name, arg, max) encode_kv(e, s->name, s->n_##name, (max), (arg))
#define ENC_RES(name, arg, max) encode_res(e, s->name, s->n_##name, (max))
#define ENC_OBJ(name, arg, max) encode_##arg(e, &s->name)
#define ENC_OBJS(name, arg, max) encode_objs_##arg(e, s->name, s->n_##name, (max))
#define ENC_OBJECT(name, arg, max) encode_object(e, &s->name)

#define IS_DEFAULT_FIELD_(S, id, name, kind, arg, max, flags) &&IS_DEFAULT_##kind(name, arg)
#define ENC_COUNT_(S, id, name, kind, arg, max, flags) +ON_WIRE_(flags, kind, name, arg)
#define ENC_FIELD_(S, id, name, kind, arg, max, flags)                         \
	if (ON_WIRE_(flags, kind, name, arg)) {                               \
		int r = PACKED(e, msgpack_pack_uint8(e, id));                 \
                                                                              \
		if (r >= 0)                                                   \
			r = ENC_##kind(name, arg, max);                       \
		if (_unlikely_(r < 0))                                        \
			return unwind_field(e, #name, r);                     \
	}

/* True when every field holds its default (an embedded struct left off). */
#define ENC_IS_DEFAULT_(S)                                                     \
	static inline _unused_ bool is_default_##S(const struct proto_##S *s) \
	{                                                                     \
		return true proto_fields_##S(IS_DEFAULT_FIELD_, S);           \
	}
PROTO_STRUCTS(ENC_IS_DEFAULT_)

#define ENC_DECLARE_(S)                                                        \
	static int encode_##S(struct enc *e, const struct proto_##S *s);      \
	static int encode_objs_##S(struct enc *e, const struct proto_##S *v, uint32_t n, \
				   uint32_t max);
PROTO_STRUCTS(ENC_DECLARE_)
static int encode_object(struct enc *e, const struct proto_object *o);

/* A struct is a map {field id: value} of its required and non-default fields. */
#define ENC_STRUCT_(S)                                                         \
	static int encode_##S(struct enc *e, const struct proto_##S *s)       \
	{                                                                     \
		uint32_t n = 0 proto_fields_##S(ENC_COUNT_, S);               \
                                                                              \
		if (_unlikely_(msgpack_pack_map(e, n) != 0))                  \
			return nomem(e);                                      \
		proto_fields_##S(ENC_FIELD_, S)                               \
		return 0;                                                     \
	}
PROTO_STRUCTS(ENC_STRUCT_)

/* Arrays of structs, for every struct (most are unused). */
#define ENC_OBJS_(S)                                                           \
	static _unused_ int encode_objs_##S(struct enc *e, const struct proto_##S *v, \
					     uint32_t n, uint32_t max)        \
	{                                                                     \
		if (_unlikely_(n > max))                                      \
			return too_many(e, "array", n, max);                  \
		if (_unlikely_(msgpack_pack_array(e, n) != 0))                \
			return nomem(e);                                      \
		for (uint32_t i = 0; i < n; i++) {                            \
			int r = encode_##S(e, &v[i]);                         \
                                                                              \
			if (r < 0)                                            \
				return unwind_index(e, i, r);                 \
		}                                                             \
		return 0;                                                     \
	}
PROTO_STRUCTS(ENC_OBJS_)

/* A cluster-state object: [kind, map]. */
static int encode_object(struct enc *e, const struct proto_object *o)
{
	if (o->kind >= proto_n_object_kinds)
		return fail(e, PROTO_E_UNKNOWN_TYPE, "unknown object kind %u", o->kind);
	if (!o->ptr)
		return fail(e, PROTO_E_MISSING, "NULL object");
	if (msgpack_pack_array(e, 2) != 0 || msgpack_pack_uint8(e, o->kind) != 0)
		return nomem(e);
	switch (o->kind) {
#define ENC_OBJECT_CASE_(a, c, s)                                              \
	case c:                                                               \
		return encode_##s(e, o->s);
		PROTO_OBJECTS(ENC_OBJECT_CASE_, _)
#undef ENC_OBJECT_CASE_
	}
	return 0;
}

static int encode_body(struct enc *e, const struct proto_msg *msg)
{
	switch (msg->env.type) {
#define ENC_BODY_CASE_(a, c, s)                                                \
	case c:                                                               \
		return encode_##s(e, &msg->body.s);
		PROTO_MESSAGES(ENC_BODY_CASE_, _)
#undef ENC_BODY_CASE_
	}
	return fail(e, PROTO_E_UNKNOWN_TYPE, "unknown message type %u", msg->env.type);
}

int proto_encode(const struct proto_msg *msg, struct msgpack_sbuffer *out,
		 struct proto_error *err)
{
	struct enc e = { .sb = out, .err = err };
	size_t start = out->size;
	unsigned type = msg->env.type;
	int r;

	if (type >= proto_n_msg_types)
		return proto_fail(err, NULL, PROTO_E_UNKNOWN_TYPE, "envelope.type: unknown message type %u", type);
	if (out->alloc - out->size < ENCODER_MIN_ROOM) {
		static const char room[ENCODER_MIN_ROOM];

		if (msgpack_sbuffer_write(out, room, sizeof(room)) != 0)
			return proto_fail(err, NULL, PROTO_E_NOMEM, "failed to grow the output buffer");
		out->size = start;
	}
	e.pos = out->data + out->size;
	e.end = out->data + out->alloc;
	if (msgpack_pack_array(&e, 4) != 0 || msgpack_pack_uint8(&e, PROTO_VERSION_MAJOR) != 0 ||
	    msgpack_pack_uint8(&e, PROTO_VERSION_MINOR) != 0) {
		r = nomem(&e);
		goto fail;
	}
	r = encode_envelope(&e, &msg->env);
	if (r < 0) {
		unwind_field(&e, "envelope", r);
		goto fail;
	}
	r = encode_body(&e, msg);
	if (r < 0) {
		unwind_field(&e, proto_msg_descs[type]->name, r);
		goto fail;
	}
	out->size = (size_t)(e.pos - out->data);
	if (out->size - start > PROTO_MAX_FRAME_BYTES) {
		r = proto_fail(err, NULL, PROTO_E_FRAME_SIZE, "frame of %zu bytes exceeds limit %u",
			       out->size - start, PROTO_MAX_FRAME_BYTES);
		goto fail;
	}
	if (err)
		err->code = PROTO_OK, err->text[0] = '\0';
	return 0;
fail:
	proto_error_add_path(err, &e.path);
	out->size = start; /* leave the buffer as it was */
	return r;
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
