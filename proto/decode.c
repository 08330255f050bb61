/*
 * The strict decoder: proto/scan.c checks the frame, msgpack-c unpacks it
 * into a reused zone, and this file walks the object tree with the schema
 * descriptors into structs allocated from the decoder's arena. Every type,
 * range and limit is checked and each error names the field path. Called by
 * every daemon's receive path (and kanna-tap); never trusts a count before
 * checking it against its limit, never reads outside the frame.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "proto/scan.h"
#include "proto/schema.h"

/* msgpack-c zone chunk: holds the object tree of a typical message. */
#define DECODER_ZONE_CHUNK 16384

struct proto_decoder {
	msgpack_zone zone;
	struct arena arena;
	struct proto_path path;
	struct proto_error *err;
	size_t decoded;     /* arena bytes handed out for this frame */
	size_t max_decoded; /* PROTO_MAX_DECODED_BYTES unless lowered */
	bool over_budget;   /* the last failed allocation hit max_decoded */
};

struct proto_decoder *proto_decoder_new(void)
{
	struct proto_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (!msgpack_zone_init(&d->zone, DECODER_ZONE_CHUNK)) {
		free(d);
		return NULL;
	}
	d->max_decoded = PROTO_MAX_DECODED_BYTES;
	return d;
}

void proto_decoder_set_max_decoded(struct proto_decoder *d, size_t max_bytes)
{
	d->max_decoded = MIN(max_bytes, (size_t)PROTO_MAX_DECODED_BYTES);
}

void proto_decoder_free(struct proto_decoder *d)
{
	if (!d)
		return;
	msgpack_zone_destroy(&d->zone);
	arena_done(&d->arena);
	free(d);
}

static const char *object_type_name(msgpack_object_type t)
{
	switch (t) {
	case MSGPACK_OBJECT_NIL: return "nil";
	case MSGPACK_OBJECT_BOOLEAN: return "bool";
	case MSGPACK_OBJECT_POSITIVE_INTEGER: return "uint";
	case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "int";
	case MSGPACK_OBJECT_FLOAT32: return "float32";
	case MSGPACK_OBJECT_FLOAT64: return "float64";
	case MSGPACK_OBJECT_STR: return "str";
	case MSGPACK_OBJECT_ARRAY: return "array";
	case MSGPACK_OBJECT_MAP: return "map";
	case MSGPACK_OBJECT_BIN: return "bin";
	case MSGPACK_OBJECT_EXT: return "ext";
	}
	return "?";
}

static int wrong_type(struct proto_decoder *d, const char *want, const msgpack_object *o)
{
	return proto_fail(d->err, &d->path, PROTO_E_TYPE, "expected %s, got %s", want,
			  object_type_name(o->type));
}

/* Every allocation of a decode goes through here, against the budget. */
static void *decoder_alloc(struct proto_decoder *d, size_t size, bool zero)
{
	if (size > d->max_decoded - d->decoded) {
		d->over_budget = true;
		return NULL;
	}
	d->decoded += size;
	return zero ? arena_alloc(&d->arena, size) : arena_alloc_raw(&d->arena, size);
}

static int nomem(struct proto_decoder *d)
{
	if (d->over_budget)
		return proto_fail(d->err, &d->path, PROTO_E_TOO_MANY,
				  "message decodes to more than %zu bytes", d->max_decoded);
	return proto_fail(d->err, &d->path, PROTO_E_NOMEM, "out of memory");
}

static int expect(struct proto_decoder *d, const msgpack_object *o, msgpack_object_type t)
{
	return o->type == t ? 0 : wrong_type(d, object_type_name(t), o);
}

static int check_count(struct proto_decoder *d, const char *what, uint32_t n, uint32_t max)
{
	if (n > max)
		return proto_fail(d->err, &d->path, PROTO_E_TOO_MANY,
				  "%s of %" PRIu32 " exceeds limit %" PRIu32, what, n, max);
	return 0;
}

static int decode_str(struct proto_decoder *d, const msgpack_object *o, uint32_t max, char **ret)
{
	int r = expect(d, o, MSGPACK_OBJECT_STR);

	if (r < 0)
		return r;
	if (o->via.str.size > max)
		return proto_fail(d->err, &d->path, PROTO_E_TOO_LONG,
				  "string of %" PRIu32 " bytes exceeds limit %" PRIu32,
				  o->via.str.size, max);
	if (o->via.str.size && memchr(o->via.str.ptr, '\0', o->via.str.size))
		return proto_fail(d->err, &d->path, PROTO_E_RANGE, "string contains a NUL byte");
	*ret = decoder_alloc(d, (size_t)o->via.str.size + 1, false);
	if (!*ret)
		return nomem(d);
	if (o->via.str.size)
		memcpy(*ret, o->via.str.ptr, o->via.str.size);
	(*ret)[o->via.str.size] = '\0';
	return 0;
}

/* Any integer in [min, max]; msgpack-c stores both signs in a union. */
static int decode_int(struct proto_decoder *d, const msgpack_object *o, int64_t min,
		      uint64_t max, int64_t *ret)
{
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		if (o->via.u64 > max)
			return proto_fail(d->err, &d->path, PROTO_E_RANGE,
					  "%" PRIu64 " exceeds maximum %" PRIu64, o->via.u64, max);
		*ret = (int64_t)o->via.u64;
		return 0;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		if (o->via.i64 < min)
			return proto_fail(d->err, &d->path, PROTO_E_RANGE,
					  "%" PRId64 " is below minimum %" PRId64, o->via.i64, min);
		*ret = o->via.i64;
		return 0;
	}
	return wrong_type(d, "integer", o);
}

static int decode_struct(struct proto_decoder *d, const struct proto_struct_desc *sd,
			 const msgpack_object *o, void *out);

static void *alloc_array(struct proto_decoder *d, uint32_t n, size_t size)
{
	return decoder_alloc(d, n ? (size_t)n * size : 1, true);
}

static int decode_strs(struct proto_decoder *d, const struct proto_field_desc *f,
		       const msgpack_object *o, void *s)
{
	int r = expect(d, o, MSGPACK_OBJECT_ARRAY);
	char **v;

	if (r < 0 || (r = check_count(d, "array", o->via.array.size, f->max)) < 0)
		return r;
	v = alloc_array(d, o->via.array.size, sizeof(char *));
	if (!v)
		return nomem(d);
	for (uint32_t i = 0; i < o->via.array.size; i++) {
		proto_path_push(&d->path, NULL, i);
		r = decode_str(d, &o->via.array.ptr[i], f->elem_len, &v[i]);
		if (r < 0)
			return r;
		proto_path_pop(&d->path);
	}
	*(char ***)proto_field_ptr(f, s) = v;
	*proto_field_count(f, s) = o->via.array.size;
	return 0;
}

/* KV and RES: a map with string keys, string or int64 values. */
static int decode_map(struct proto_decoder *d, const struct proto_field_desc *f,
		      const msgpack_object *o, void *s)
{
	bool kv = f->kind == PROTO_KIND_KV;
	int r = expect(d, o, MSGPACK_OBJECT_MAP);
	void *v;

	if (r < 0 || (r = check_count(d, "map", o->via.map.size, f->max)) < 0)
		return r;
	v = alloc_array(d, o->via.map.size, kv ? sizeof(struct proto_kv) : sizeof(struct proto_resource));
	if (!v)
		return nomem(d);
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object_kv *e = &o->via.map.ptr[i];

		proto_path_push(&d->path, NULL, i);
		if (kv) {
			struct proto_kv *x = (struct proto_kv *)v + i;
			r = decode_str(d, &e->key, PROTO_MAX_KEY_LEN, &x->key);
			if (r >= 0)
				r = decode_str(d, &e->val, f->elem_len, &x->value);
		} else {
			struct proto_resource *x = (struct proto_resource *)v + i;
			r = decode_str(d, &e->key, PROTO_MAX_KEY_LEN, &x->name);
			if (r >= 0)
				r = decode_int(d, &e->val, INT64_MIN, INT64_MAX, &x->value);
		}
		if (r < 0)
			return r;
		proto_path_pop(&d->path);
	}
	*(void **)proto_field_ptr(f, s) = v;
	*proto_field_count(f, s) = o->via.map.size;
	return 0;
}

static int decode_objs(struct proto_decoder *d, const struct proto_field_desc *f,
		       const msgpack_object *o, void *s)
{
	int r = expect(d, o, MSGPACK_OBJECT_ARRAY);
	char *v;

	if (r < 0 || (r = check_count(d, "array", o->via.array.size, f->max)) < 0)
		return r;
	v = alloc_array(d, o->via.array.size, f->sub->size);
	if (!v)
		return nomem(d);
	for (uint32_t i = 0; i < o->via.array.size; i++) {
		proto_path_push(&d->path, NULL, i);
		r = decode_struct(d, f->sub, &o->via.array.ptr[i], v + (size_t)i * f->sub->size);
		if (r < 0)
			return r;
		proto_path_pop(&d->path);
	}
	*(void **)proto_field_ptr(f, s) = v;
	*proto_field_count(f, s) = o->via.array.size;
	return 0;
}

static int decode_object(struct proto_decoder *d, const msgpack_object *o, struct proto_object *out)
{
	const struct proto_struct_desc *sd;
	int64_t kind;
	int r = expect(d, o, MSGPACK_OBJECT_ARRAY);

	if (r < 0)
		return r;
	if (o->via.array.size != 2)
		return proto_fail(d->err, &d->path, PROTO_E_TYPE,
				  "expected array of 2 [kind, object], got %" PRIu32 " entries",
				  o->via.array.size);
	r = decode_int(d, &o->via.array.ptr[0], 0, UINT8_MAX, &kind);
	if (r < 0)
		return r;
	if ((uint64_t)kind >= proto_n_object_kinds)
		return proto_fail(d->err, &d->path, PROTO_E_UNKNOWN_TYPE,
				  "unknown object kind %" PRId64, kind);
	sd = proto_object_descs[kind];
	out->kind = (uint8_t)kind;
	out->ptr = decoder_alloc(d, sd->size, true);
	if (!out->ptr)
		return nomem(d);
	proto_path_push(&d->path, sd->name, 0);
	r = decode_struct(d, sd, &o->via.array.ptr[1], out->ptr);
	if (r < 0)
		return r;
	proto_path_pop(&d->path);
	return 0;
}

static int decode_enum(struct proto_decoder *d, const struct proto_field_desc *f,
		       const msgpack_object *o, uint8_t *out)
{
	int64_t v;
	int r = decode_int(d, o, 0, UINT8_MAX, &v);

	if (r < 0)
		return r;
	if (v >= f->enumd->n_values)
		return proto_fail(d->err, &d->path,
				  f->enumd == &proto_enum_desc_msg_type ? PROTO_E_UNKNOWN_TYPE : PROTO_E_RANGE,
				  "unknown value %" PRId64 " for enum %s", v, f->enumd->name);
	*out = (uint8_t)v;
	return 0;
}

static int decode_field(struct proto_decoder *d, const struct proto_field_desc *f,
			const msgpack_object *o, void *s)
{
	void *p = proto_field_ptr(f, s);
	int64_t v;
	int r;

	switch (f->kind) {
	case PROTO_KIND_BOOL:
		if ((r = expect(d, o, MSGPACK_OBJECT_BOOLEAN)) < 0)
			return r;
		*(bool *)p = o->via.boolean;
		return 0;
	case PROTO_KIND_U32:
		if ((r = decode_int(d, o, 0, UINT32_MAX, &v)) < 0)
			return r;
		*(uint32_t *)p = (uint32_t)v;
		return 0;
	case PROTO_KIND_U64:
		if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
			return wrong_type(d, "uint", o);
		*(uint64_t *)p = o->via.u64;
		return 0;
	case PROTO_KIND_I32:
		if ((r = decode_int(d, o, INT32_MIN, INT32_MAX, &v)) < 0)
			return r;
		*(int32_t *)p = (int32_t)v;
		return 0;
	case PROTO_KIND_I64:
		return decode_int(d, o, INT64_MIN, INT64_MAX, (int64_t *)p);
	case PROTO_KIND_F64:
		if (o->type != MSGPACK_OBJECT_FLOAT64 && o->type != MSGPACK_OBJECT_FLOAT32)
			return wrong_type(d, "float", o);
		*(double *)p = o->via.f64;
		return 0;
	case PROTO_KIND_ENUM:
		return decode_enum(d, f, o, p);
	case PROTO_KIND_STR:
		return decode_str(d, o, f->max, (char **)p);
	case PROTO_KIND_STRS:
		return decode_strs(d, f, o, s);
	case PROTO_KIND_KV:
	case PROTO_KIND_RES:
		return decode_map(d, f, o, s);
	case PROTO_KIND_OBJ:
		return decode_struct(d, f->sub, o, p);
	case PROTO_KIND_OBJS:
		return decode_objs(d, f, o, s);
	case PROTO_KIND_OBJECT:
		return decode_object(d, o, p);
	}
	return proto_fail(d->err, &d->path, PROTO_E_TYPE, "unknown field kind %u", f->kind);
}

/* A map {field id: value}; unknown ids are skipped (a newer minor version). */
static int decode_struct(struct proto_decoder *d, const struct proto_struct_desc *sd,
			 const msgpack_object *o, void *out)
{
	uint64_t seen = 0; /* bit id-1; every struct has ≤ 64 fields (tested) */
	int r = expect(d, o, MSGPACK_OBJECT_MAP);

	if (r < 0)
		return r;
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object_kv *e = &o->via.map.ptr[i];
		const struct proto_field_desc *f;
		uint64_t id;

		if (e->key.type != MSGPACK_OBJECT_POSITIVE_INTEGER)
			return proto_fail(d->err, &d->path, PROTO_E_TYPE,
					  "field key: expected uint field id, got %s",
					  object_type_name(e->key.type));
		id = e->key.via.u64;
		if (id == 0 || id > sd->n_fields)
			continue;
		f = &sd->fields[id - 1];
		proto_path_push(&d->path, f->name, 0);
		if (seen & (UINT64_C(1) << (id - 1)))
			return proto_fail(d->err, &d->path, PROTO_E_DUPLICATE, "field id %" PRIu64 " given twice", id);
		seen |= UINT64_C(1) << (id - 1);
		r = decode_field(d, f, &e->val, out);
		if (r < 0)
			return r;
		proto_path_pop(&d->path);
	}
	for (uint32_t i = 0; i < sd->n_fields; i++)
		if (sd->fields[i].required && !(seen & (UINT64_C(1) << i))) {
			proto_path_push(&d->path, sd->fields[i].name, 0);
			return proto_fail(d->err, &d->path, PROTO_E_MISSING, "required field missing");
		}
	return 0;
}

static int decode_tree(struct proto_decoder *d, const msgpack_object *o, struct proto_msg *m)
{
	const msgpack_object *a;
	int64_t major, minor;
	int r;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 4)
		return proto_fail(d->err, NULL, PROTO_E_TYPE,
				  "message: expected array of 4 [major, minor, envelope, body], got %s",
				  object_type_name(o->type));
	a = o->via.array.ptr;
	proto_path_push(&d->path, "version", 0);
	if ((r = decode_int(d, &a[0], 0, UINT8_MAX, &major)) < 0 ||
	    (r = decode_int(d, &a[1], 0, UINT8_MAX, &minor)) < 0)
		return r;
	if (major != PROTO_VERSION_MAJOR)
		return proto_fail(d->err, &d->path, PROTO_E_VERSION,
				  "protocol major %" PRId64 " not supported (this build speaks %d.%d)",
				  major, PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR);
	proto_path_pop(&d->path);
	m->version_major = (uint8_t)major;
	m->version_minor = (uint8_t)minor;
	proto_path_push(&d->path, "envelope", 0);
	r = decode_struct(d, &proto_desc_envelope, &a[2], &m->env);
	if (r < 0)
		return r;
	proto_path_pop(&d->path);
	proto_path_push(&d->path, proto_msg_descs[m->env.type]->name, 0);
	r = decode_struct(d, proto_msg_descs[m->env.type], &a[3], &m->body);
	if (r < 0)
		return r;
	proto_path_pop(&d->path);
	return 0;
}

int proto_decode(struct proto_decoder *d, const void *buf, size_t len,
		 const struct proto_msg **ret, struct proto_error *err)
{
	msgpack_object root;
	struct proto_msg *m;
	size_t off = 0;
	int r;

	*ret = NULL;
	d->err = err;
	d->path.depth = 0;
	d->decoded = 0;
	d->over_budget = false;
	msgpack_zone_clear(&d->zone);
	arena_reset(&d->arena);

	r = proto_scan_frame(buf, len, err);
	if (r < 0)
		return r;
	switch (msgpack_unpack(buf, len, &off, &d->zone, &root)) {
	case MSGPACK_UNPACK_SUCCESS:
		break;
	case MSGPACK_UNPACK_NOMEM_ERROR:
		return nomem(d);
	default: /* the scan accepted it, so msgpack-c must too */
		return proto_fail(err, NULL, PROTO_E_MALFORMED, "msgpack-c refused the frame");
	}
	m = decoder_alloc(d, sizeof(*m), true);
	if (!m)
		return nomem(d);
	r = decode_tree(d, &root, m);
	if (r < 0)
		return r;
	if (err)
		err->code = PROTO_OK, err->text[0] = '\0';
	*ret = m;
	return 0;
}
