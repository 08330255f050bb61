/*
 * The msgpack encoder: walks a message with the schema descriptors and
 * packs it with msgpack-c into the caller's msgpack_sbuffer. Checks every
 * limit the decoder checks, so kanna never sends what a peer would reject.
 * Called by every daemon's send path; never allocates beyond the buffer.
 */
#include "config.h"

#include <errno.h>
#include <msgpack.h>
#include <string.h>

#include "proto/schema.h"

struct enc {
	msgpack_packer pk;
	struct proto_path path;
	struct proto_error *err;
};

#define PACK(call)                                                            \
	do {                                                                  \
		if ((call) != 0)                                              \
			return proto_fail(e->err, &e->path, PROTO_E_NOMEM,    \
					  "failed to grow the output buffer"); \
	} while (0)

static int encode_struct(struct enc *e, const struct proto_struct_desc *sd, const void *s);

static int encode_str(struct enc *e, const char *s, uint32_t max)
{
	size_t n = strlen(s);

	if (n > max)
		return proto_fail(e->err, &e->path, PROTO_E_TOO_LONG,
				  "string of %zu bytes exceeds limit %u", n, max);
	PACK(msgpack_pack_str(&e->pk, n));
	PACK(msgpack_pack_str_body(&e->pk, s, n));
	return 0;
}

static int check_count(struct enc *e, const char *what, uint32_t n, uint32_t max)
{
	if (n > max)
		return proto_fail(e->err, &e->path, PROTO_E_TOO_MANY,
				  "%s of %u exceeds limit %u", what, n, max);
	return 0;
}

static int encode_strs(struct enc *e, const struct proto_field_desc *f, const void *s)
{
	char *const *v = *(char *const *const *)proto_field_ptr(f, s);
	uint32_t n = *proto_field_count(f, s);
	int r = check_count(e, "array", n, f->max);

	if (r < 0)
		return r;
	PACK(msgpack_pack_array(&e->pk, n));
	for (uint32_t i = 0; i < n; i++) {
		proto_path_push(&e->path, NULL, i);
		if (!v[i])
			return proto_fail(e->err, &e->path, PROTO_E_MISSING, "NULL string in array");
		r = encode_str(e, v[i], f->elem_len);
		if (r < 0)
			return r;
		proto_path_pop(&e->path);
	}
	return 0;
}

static int encode_kv(struct enc *e, const struct proto_field_desc *f, const void *s)
{
	const struct proto_kv *v = *(struct proto_kv *const *)proto_field_ptr(f, s);
	uint32_t n = *proto_field_count(f, s);
	int r = check_count(e, "map", n, f->max);

	if (r < 0)
		return r;
	PACK(msgpack_pack_map(&e->pk, n));
	for (uint32_t i = 0; i < n; i++) {
		proto_path_push(&e->path, NULL, i);
		if (!v[i].key || !v[i].value)
			return proto_fail(e->err, &e->path, PROTO_E_MISSING, "NULL key or value");
		r = encode_str(e, v[i].key, PROTO_MAX_KEY_LEN);
		if (r >= 0)
			r = encode_str(e, v[i].value, f->elem_len);
		if (r < 0)
			return r;
		proto_path_pop(&e->path);
	}
	return 0;
}

static int encode_res(struct enc *e, const struct proto_field_desc *f, const void *s)
{
	const struct proto_resource *v = *(struct proto_resource *const *)proto_field_ptr(f, s);
	uint32_t n = *proto_field_count(f, s);
	int r = check_count(e, "map", n, f->max);

	if (r < 0)
		return r;
	PACK(msgpack_pack_map(&e->pk, n));
	for (uint32_t i = 0; i < n; i++) {
		proto_path_push(&e->path, NULL, i);
		if (!v[i].name)
			return proto_fail(e->err, &e->path, PROTO_E_MISSING, "NULL resource name");
		r = encode_str(e, v[i].name, PROTO_MAX_KEY_LEN);
		if (r < 0)
			return r;
		PACK(msgpack_pack_int64(&e->pk, v[i].value));
		proto_path_pop(&e->path);
	}
	return 0;
}

static int encode_objs(struct enc *e, const struct proto_field_desc *f, const void *s)
{
	const char *v = *(char *const *)proto_field_ptr(f, s);
	uint32_t n = *proto_field_count(f, s);
	int r = check_count(e, "array", n, f->max);

	if (r < 0)
		return r;
	PACK(msgpack_pack_array(&e->pk, n));
	for (uint32_t i = 0; i < n; i++) {
		proto_path_push(&e->path, NULL, i);
		r = encode_struct(e, f->sub, v + (size_t)i * f->sub->size);
		if (r < 0)
			return r;
		proto_path_pop(&e->path);
	}
	return 0;
}

/* A cluster-state object: [kind, map]. */
static int encode_object(struct enc *e, const struct proto_object *o)
{
	if (o->kind >= proto_n_object_kinds)
		return proto_fail(e->err, &e->path, PROTO_E_UNKNOWN_TYPE,
				  "unknown object kind %u", o->kind);
	if (!o->ptr)
		return proto_fail(e->err, &e->path, PROTO_E_MISSING, "NULL object");
	PACK(msgpack_pack_array(&e->pk, 2));
	PACK(msgpack_pack_uint8(&e->pk, o->kind));
	return encode_struct(e, proto_object_descs[o->kind], o->ptr);
}

static int encode_field(struct enc *e, const struct proto_field_desc *f, const void *s)
{
	const void *p = proto_field_ptr(f, s);

	switch (f->kind) {
	case PROTO_KIND_BOOL:
		PACK(*(const bool *)p ? msgpack_pack_true(&e->pk) : msgpack_pack_false(&e->pk));
		return 0;
	case PROTO_KIND_U32:
		PACK(msgpack_pack_uint32(&e->pk, *(const uint32_t *)p));
		return 0;
	case PROTO_KIND_U64:
		PACK(msgpack_pack_uint64(&e->pk, *(const uint64_t *)p));
		return 0;
	case PROTO_KIND_I32:
		PACK(msgpack_pack_int32(&e->pk, *(const int32_t *)p));
		return 0;
	case PROTO_KIND_I64:
		PACK(msgpack_pack_int64(&e->pk, *(const int64_t *)p));
		return 0;
	case PROTO_KIND_F64:
		PACK(msgpack_pack_double(&e->pk, *(const double *)p));
		return 0;
	case PROTO_KIND_ENUM: {
		uint8_t v = *(const uint8_t *)p;
		if (v >= f->enumd->n_values)
			return proto_fail(e->err, &e->path, PROTO_E_RANGE,
					  "unknown value %u for enum %s", v, f->enumd->name);
		PACK(msgpack_pack_uint8(&e->pk, v));
		return 0;
	}
	case PROTO_KIND_STR: {
		const char *v = *(char *const *)p;
		if (!v)
			return proto_fail(e->err, &e->path, PROTO_E_MISSING, "required field missing");
		return encode_str(e, v, f->max);
	}
	case PROTO_KIND_STRS:
		return encode_strs(e, f, s);
	case PROTO_KIND_KV:
		return encode_kv(e, f, s);
	case PROTO_KIND_RES:
		return encode_res(e, f, s);
	case PROTO_KIND_OBJ:
		return encode_struct(e, f->sub, p);
	case PROTO_KIND_OBJS:
		return encode_objs(e, f, s);
	case PROTO_KIND_OBJECT:
		return encode_object(e, p);
	}
	return proto_fail(e->err, &e->path, PROTO_E_TYPE, "unknown field kind %u", f->kind);
}

/* A struct is a map {field id: value} of its required and non-default fields. */
static int encode_struct(struct enc *e, const struct proto_struct_desc *sd, const void *s)
{
	uint64_t present = 0; /* bit i: fields[i] goes on the wire (≤ 64 fields, tested) */
	size_t n = 0;

	if (e->path.depth > PROTO_MAX_DEPTH)
		return proto_fail(e->err, &e->path, PROTO_E_MALFORMED, "nesting deeper than %d",
				  PROTO_MAX_DEPTH);
	for (uint32_t i = 0; i < sd->n_fields; i++)
		if (sd->fields[i].required || !proto_field_is_default(&sd->fields[i], s)) {
			present |= UINT64_C(1) << i;
			n++;
		}
	PACK(msgpack_pack_map(&e->pk, n));
	for (; present; present &= present - 1) {
		const struct proto_field_desc *f = &sd->fields[__builtin_ctzll(present)];
		int r;

		PACK(msgpack_pack_uint8(&e->pk, f->id));
		proto_path_push(&e->path, f->name, 0);
		r = encode_field(e, f, s);
		if (r < 0)
			return r;
		proto_path_pop(&e->path);
	}
	return 0;
}

/* msgpack-c's packer writes a few bytes per call; copying those inline
 * instead of through memcpy() halves the encoder's time. Same buffer
 * semantics as msgpack_sbuffer_write(), which handles growth. */
static int sbuffer_append(void *data, const char *buf, size_t len)
{
	msgpack_sbuffer *sb = data;
	char *p;

	if (_unlikely_(sb->alloc - sb->size < len))
		return msgpack_sbuffer_write(data, buf, len);
	p = sb->data + sb->size;
	/* Fixed-size memcpy()s compile to single moves; the pairs overlap. */
	if (len >= 8 && len <= 16) {
		memcpy(p, buf, 8);
		memcpy(p + len - 8, buf + len - 8, 8);
	} else if (len >= 4 && len < 8) {
		memcpy(p, buf, 4);
		memcpy(p + len - 4, buf + len - 4, 4);
	} else if (len < 4) {
		for (size_t i = 0; i < len; i++)
			p[i] = buf[i];
	} else {
		memcpy(p, buf, len);
	}
	sb->size += len;
	return 0;
}

int proto_encode(const struct proto_msg *msg, struct msgpack_sbuffer *out,
		 struct proto_error *err)
{
	struct enc e = { .err = err };
	size_t start = out->size;
	unsigned type = msg->env.type;
	int r;

	msgpack_packer_init(&e.pk, out, sbuffer_append);
	if (type >= proto_n_msg_types)
		return proto_fail(err, NULL, PROTO_E_UNKNOWN_TYPE, "envelope.type: unknown message type %u", type);
	if (msgpack_pack_array(&e.pk, 4) != 0 ||
	    msgpack_pack_uint8(&e.pk, PROTO_VERSION_MAJOR) != 0 ||
	    msgpack_pack_uint8(&e.pk, PROTO_VERSION_MINOR) != 0)
		return proto_fail(err, NULL, PROTO_E_NOMEM, "failed to grow the output buffer");
	proto_path_push(&e.path, "envelope", 0);
	r = encode_struct(&e, &proto_desc_envelope, &msg->env);
	if (r < 0)
		goto fail;
	proto_path_pop(&e.path);
	proto_path_push(&e.path, proto_msg_descs[type]->name, 0);
	r = encode_struct(&e, proto_msg_descs[type], &msg->body);
	if (r < 0)
		goto fail;
	if (out->size - start > PROTO_MAX_FRAME_BYTES) {
		r = proto_fail(err, NULL, PROTO_E_FRAME_SIZE, "frame of %zu bytes exceeds limit %u",
			       out->size - start, PROTO_MAX_FRAME_BYTES);
		goto fail;
	}
	if (err)
		err->code = PROTO_OK, err->text[0] = '\0';
	return 0;
fail:
	out->size = start; /* leave the buffer as it was */
	return r;
}
