/*
 * The strict decoder: proto/unpack.c turns the frame into a value tree with
 * msgpack-c's unpacker, and this file walks it into structs carved from
 * the decoder's arena, checking every type, range and limit; each error
 * names the field path. The walk is generated from proto/proto.h's field
 * lists: one function per struct that dispatches a field id with a switch
 * and decodes each field with its limits as constants (walking the
 * descriptor tables instead cost a third of every decode). Called by every
 * daemon's receive path (and kanna-tap); never trusts a count before
 * checking it against its limit, never reads outside the frame.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "proto/unpack.h"

struct proto_decoder {
	struct arena arena;
	struct proto_bump bump; /* value tree and decoded message, from arena */
	struct proto_path path; /* where the error is, collected while unwinding */
	struct proto_error *err;
	size_t decoded;     /* bytes handed out for the message of this frame */
	size_t max_decoded; /* PROTO_MAX_DECODED_BYTES unless lowered */
	bool over_budget;   /* the last failed allocation hit max_decoded */
};

struct proto_decoder *proto_decoder_new(void)
{
	struct proto_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->bump.arena = &d->arena;
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
	arena_done(&d->arena);
	free(d);
}

/* ---- errors: the message here, the path added while unwinding ---- */
#define fail(d, code, ...) proto_fail((d)->err, NULL, (code), __VA_ARGS__)

static int unwind_field(struct proto_decoder *d, const char *name, int r)
{
	return proto_unwind(&d->path, name, 0, r);
}

static int unwind_index(struct proto_decoder *d, uint32_t i, int r)
{
	return proto_unwind(&d->path, NULL, i, r);
}

static int wrong_type(struct proto_decoder *d, const char *want, const struct proto_value *o)
{
	return fail(d, PROTO_E_TYPE, "expected %s, got %s", want,
		    proto_value_type_name(proto_value_type(o)));
}

static int too_many(struct proto_decoder *d, const char *what, uint32_t n, uint32_t max)
{
	return fail(d, PROTO_E_TOO_MANY, "%s of %" PRIu32 " exceeds limit %" PRIu32, what, n, max);
}

static int nomem(struct proto_decoder *d)
{
	if (d->over_budget)
		return fail(d, PROTO_E_TOO_MANY, "message decodes to more than %zu bytes",
			    d->max_decoded);
	return fail(d, PROTO_E_NOMEM, "out of memory");
}

/* Every allocation of the decoded message goes through here, against the
 * budget. Requested sizes are what is counted. */
static inline void *decoder_alloc(struct proto_decoder *d, size_t size, bool zero)
{
	void *p;

	if (_unlikely_(size > d->max_decoded - d->decoded)) {
		d->over_budget = true;
		return NULL;
	}
	d->decoded += size;
	p = proto_bump_take(&d->bump, (size + PROTO_BUMP_ALIGN - 1) & ~(size_t)(PROTO_BUMP_ALIGN - 1));
	if (p && zero)
		memset(p, 0, size);
	return p;
}

/* Arrays: counted at one byte when empty, and never NULL, as always. */
static inline void *alloc_array(struct proto_decoder *d, uint32_t n, size_t size, bool zero)
{
	return decoder_alloc(d, n ? (size_t)n * size : 1, zero);
}

/* ---- scalars ---- */

/* Any integer in [min, max]. */
static inline int decode_int(struct proto_decoder *d, const struct proto_value *o, int64_t min,
			     uint64_t max, int64_t *ret)
{
	switch (proto_value_type(o)) {
	case PROTO_VALUE_UINT:
		if (_unlikely_(o->u > max))
			return fail(d, PROTO_E_RANGE, "%" PRIu64 " exceeds maximum %" PRIu64, o->u, max);
		*ret = (int64_t)o->u;
		return 0;
	case PROTO_VALUE_INT:
		if (_unlikely_(o->i < min))
			return fail(d, PROTO_E_RANGE, "%" PRId64 " is below minimum %" PRId64, o->i, min);
		*ret = o->i;
		return 0;
	default:
		return wrong_type(d, "integer", o);
	}
}

static inline int decode_bool(struct proto_decoder *d, const struct proto_value *o, bool *out)
{
	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_BOOL))
		return wrong_type(d, "bool", o);
	*out = o->b;
	return 0;
}

static inline int decode_u32(struct proto_decoder *d, const struct proto_value *o, uint32_t *out)
{
	int64_t v = 0;
	int r = decode_int(d, o, 0, UINT32_MAX, &v);

	*out = (uint32_t)v;
	return r;
}

static inline int decode_i32(struct proto_decoder *d, const struct proto_value *o, int32_t *out)
{
	int64_t v = 0;
	int r = decode_int(d, o, INT32_MIN, INT32_MAX, &v);

	*out = (int32_t)v;
	return r;
}

static inline int decode_i64(struct proto_decoder *d, const struct proto_value *o, int64_t *out)
{
	return decode_int(d, o, INT64_MIN, INT64_MAX, out);
}

static inline int decode_u64(struct proto_decoder *d, const struct proto_value *o, uint64_t *out)
{
	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_UINT))
		return wrong_type(d, "uint", o);
	*out = o->u;
	return 0;
}

static inline int decode_f64(struct proto_decoder *d, const struct proto_value *o, double *out)
{
	unsigned t = proto_value_type(o);

	if (_unlikely_(t != PROTO_VALUE_F64 && t != PROTO_VALUE_F32))
		return wrong_type(d, "float", o);
	*out = o->f;
	return 0;
}

/* n_values and name are the enum's; an unknown message type has its own code. */
static inline int decode_enum(struct proto_decoder *d, const struct proto_value *o,
			      unsigned n_values, const char *name, uint8_t *out)
{
	int64_t v = 0;
	int r = decode_int(d, o, 0, UINT8_MAX, &v);

	if (r < 0)
		return r;
	if (_unlikely_(v >= n_values))
		return fail(d, strcmp(name, "msg_type") == 0 ? PROTO_E_UNKNOWN_TYPE : PROTO_E_RANGE,
			    "unknown value %" PRId64 " for enum %s", v, name);
	*out = (uint8_t)v;
	return 0;
}

/* ---- strings ---- */

/*
 * Whether s[0..n) holds a NUL byte. Most strings are names of a few dozen
 * bytes: 16 at a time beats a memchr() call. The frame copy is padded
 * (PROTO_FRAME_PADDING), so the last block may read past the string.
 */
static inline bool has_nul(const char *s, uint32_t n)
{
#ifdef __SSE2__
	for (uint32_t i = 0; i < n; i += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		unsigned zero = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()));

		if (n - i < 16)
			zero &= (1u << (n - i)) - 1;
		if (zero)
			return true;
	}
	return false;
#else
	return n && memchr(s, '\0', n);
#endif
}

/* In place: the string is terminated in the decoder's copy of the frame,
 * its size counted against the budget as if copied. */
static inline int decode_str(struct proto_decoder *d, const struct proto_value *o, uint32_t max,
			     char **ret)
{
	uint32_t n;

	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_STR))
		return wrong_type(d, "str", o);
	n = proto_value_len(o);
	if (_unlikely_(n > max))
		return fail(d, PROTO_E_TOO_LONG, "string of %" PRIu32 " bytes exceeds limit %" PRIu32,
			    n, max);
	if (_unlikely_(has_nul(o->str, n)))
		return fail(d, PROTO_E_RANGE, "string contains a NUL byte");
	if (_unlikely_((size_t)n + 1 > d->max_decoded - d->decoded)) {
		d->over_budget = true;
		return nomem(d);
	}
	d->decoded += (size_t)n + 1;
	o->str[n] = '\0';
	*ret = o->str;
	return 0;
}

static int decode_strs(struct proto_decoder *d, const struct proto_value *o, uint32_t max,
		       uint32_t elem_len, char ***ret, uint32_t *ret_n)
{
	uint32_t n;
	char **v;

	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_ARRAY))
		return wrong_type(d, "array", o);
	n = proto_value_len(o);
	if (_unlikely_(n > max))
		return too_many(d, "array", n, max);
	v = alloc_array(d, n, sizeof(*v), false);
	if (!v)
		return nomem(d);
	for (uint32_t i = 0; i < n; i++) {
		int r = decode_str(d, &o->items[i], elem_len, &v[i]);

		if (r < 0)
			return unwind_index(d, i, r);
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* string→string maps (labels, selectors, tags) */
static int decode_kv(struct proto_decoder *d, const struct proto_value *o, uint32_t max,
		     uint32_t value_len, struct proto_kv **ret, uint32_t *ret_n)
{
	struct proto_kv *v;
	uint32_t n;

	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_MAP))
		return wrong_type(d, "map", o);
	n = proto_value_len(o);
	if (_unlikely_(n > max))
		return too_many(d, "map", n, max);
	v = alloc_array(d, n, sizeof(*v), false);
	if (!v)
		return nomem(d);
	for (uint32_t i = 0; i < n; i++) {
		const struct proto_value *e = &o->items[2 * (size_t)i];
		int r = decode_str(d, e, PROTO_MAX_KEY_LEN, &v[i].key);

		if (r >= 0)
			r = decode_str(d, e + 1, value_len, &v[i].value);
		if (r < 0)
			return unwind_index(d, i, r);
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* resource name→int64 maps */
static int decode_res(struct proto_decoder *d, const struct proto_value *o, uint32_t max,
		      struct proto_resource **ret, uint32_t *ret_n)
{
	struct proto_resource *v;
	uint32_t n;

	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_MAP))
		return wrong_type(d, "map", o);
	n = proto_value_len(o);
	if (_unlikely_(n > max))
		return too_many(d, "map", n, max);
	v = alloc_array(d, n, sizeof(*v), false);
	if (!v)
		return nomem(d);
	for (uint32_t i = 0; i < n; i++) {
		const struct proto_value *e = &o->items[2 * (size_t)i];
		int r = decode_str(d, e, PROTO_MAX_KEY_LEN, &v[i].name);

		if (r >= 0)
			r = decode_i64(d, e + 1, &v[i].value);
		if (r < 0)
			return unwind_index(d, i, r);
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* ---- structs, generated from the field lists ---- */

#define DEC_FLAG_REQ 1
#define DEC_FLAG_OPT 0
#define DEC_REQUIRED_BIT_(S, id, name, kind, arg, max, flags)                  \
	| (DEC_FLAG_##flags ? UINT64_C(1) << ((id) - 1) : 0)
#define DEC_ENUM_COUNT_(c, s) +1

#define DEC_BOOL(name, arg, max) decode_bool(d, v, &out->name)
#define DEC_U32(name, arg, max) decode_u32(d, v, &out->name)
#define DEC_U64(name, arg, max) decode_u64(d, v, &out->name)
#define DEC_I32(name, arg, max) decode_i32(d, v, &out->name)
#define DEC_I64(name, arg, max) decode_i64(d, v, &out->name)
#define DEC_F64(name, arg, max) decode_f64(d, v, &out->name)
#define DEC_ENUM(name, arg, max)                                               \
	decode_enum(d, v, 0 proto_values_##arg(DEC_ENUM_COUNT_), #arg, &out->name)
#define DEC_STR(name, arg, max) decode_str(d, v, (max), &out->name)
#define DEC_STRS(name, arg, max) decode_strs(d, v, (max), (arg), &out->name, &out->n_##name)
#define DEC_KV(name, arg, max) decode_kv(d, v, (max), (arg), &out->name, &out->n_##name)
#define DEC_RES(name, arg, max) decode_res(d, v, (max), &out->name, &out->n_##name)
#define DEC_OBJ(name, arg, max) decode_##arg(d, v, &out->name)
#define DEC_OBJS(name, arg, max) decode_objs_##arg(d, v, (max), &out->name, &out->n_##name)
#define DEC_OBJECT(name, arg, max) decode_object(d, v, &out->name)
#define DEC_CASE_(S, id, name, kind, arg, max, flags)                          \
	case id:                                                              \
		if (_unlikely_(seen & UINT64_C(1) << ((id) - 1))) {           \
			r = fail(d, PROTO_E_DUPLICATE, "field id %d given twice", id); \
			break;                                                \
		}                                                             \
		seen |= UINT64_C(1) << ((id) - 1);                            \
		r = DEC_##kind(name, arg, max);                               \
		break;

#define DEC_DECLARE_(s)                                                        \
	static int decode_##s(struct proto_decoder *d, const struct proto_value *o, \
			      struct proto_##s *out);                         \
	static int decode_objs_##s(struct proto_decoder *d, const struct proto_value *o, \
				   uint32_t max, struct proto_##s **ret, uint32_t *ret_n);
PROTO_STRUCTS(DEC_DECLARE_)
static int decode_object(struct proto_decoder *d, const struct proto_value *o,
			 struct proto_object *out);

static int field_key_type(struct proto_decoder *d, const struct proto_value *key)
{
	return fail(d, PROTO_E_TYPE, "field key: expected uint field id, got %s",
		    proto_value_type_name(proto_value_type(key)));
}

/* The first required field of sd that is not in seen. */
static int missing(struct proto_decoder *d, const struct proto_struct_desc *sd, uint64_t absent)
{
	fail(d, PROTO_E_MISSING, "required field missing");
	return unwind_field(d, sd->fields[__builtin_ctzll(absent)].name, -EBADMSG);
}

/*
 * A map {field id: value}; unknown ids are skipped (a newer minor
 * version), a repeated id is refused. out is zeroed: absent fields keep
 * their default. Every struct has ≤ 64 fields (tested), one bit each.
 */
#define DEC_STRUCT_(s)                                                         \
	static int decode_##s(struct proto_decoder *d, const struct proto_value *o, \
			      struct proto_##s *out)                          \
	{                                                                     \
		const uint64_t required = 0 proto_fields_##s(DEC_REQUIRED_BIT_, s); \
		const struct proto_value *e;                                  \
		uint64_t seen = 0;                                            \
                                                                              \
		if (_unlikely_(proto_value_type(o) != PROTO_VALUE_MAP))       \
			return wrong_type(d, "map", o);                       \
		e = o->items;                                                 \
		for (uint32_t n = proto_value_len(o); n > 0; n--, e += 2) {   \
			const struct proto_value *v = e + 1;                  \
			int r;                                                \
                                                                              \
			if (_unlikely_(proto_value_type(e) != PROTO_VALUE_UINT)) \
				return field_key_type(d, e);                  \
			switch (e->u) {                                       \
				proto_fields_##s(DEC_CASE_, s)                \
			default:                                              \
				continue; /* a newer minor version's field */ \
			}                                                     \
			if (_unlikely_(r < 0))                                \
				return unwind_field(d, proto_desc_##s.fields[e->u - 1].name, r); \
		}                                                             \
		if (_unlikely_((seen & required) != required))                \
			return missing(d, &proto_desc_##s, required & ~seen); \
		return 0;                                                     \
	}
PROTO_STRUCTS(DEC_STRUCT_)

/* Arrays of structs, for every struct (most are unused). */
#define DEC_OBJS_(s)                                                           \
	static _unused_ int decode_objs_##s(struct proto_decoder *d,          \
					     const struct proto_value *o, uint32_t max, \
					     struct proto_##s **ret, uint32_t *ret_n) \
	{                                                                     \
		struct proto_##s *v;                                          \
		uint32_t n;                                                   \
                                                                              \
		if (_unlikely_(proto_value_type(o) != PROTO_VALUE_ARRAY))       \
			return wrong_type(d, "array", o);                     \
		n = proto_value_len(o);                                        \
		if (_unlikely_(n > max))                                      \
			return too_many(d, "array", n, max);                  \
		v = alloc_array(d, n, sizeof(*v), true);                      \
		if (!v)                                                       \
			return nomem(d);                                      \
		for (uint32_t i = 0; i < n; i++) {                            \
			int r = decode_##s(d, &o->items[i], &v[i]);           \
                                                                              \
			if (r < 0)                                            \
				return unwind_index(d, i, r);                 \
		}                                                             \
		*ret = v;                                                     \
		*ret_n = n;                                                   \
		return 0;                                                     \
	}
PROTO_STRUCTS(DEC_OBJS_)

/* A cluster-state object: [kind, map]; the kind names the path step. */
static int decode_object(struct proto_decoder *d, const struct proto_value *o,
			 struct proto_object *out)
{
	int64_t kind = 0;
	int r;

	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_ARRAY))
		return wrong_type(d, "array", o);
	if (_unlikely_(proto_value_len(o) != 2))
		return fail(d, PROTO_E_TYPE, "expected array of 2 [kind, object], got %" PRIu32 " entries",
			    proto_value_len(o));
	r = decode_int(d, &o->items[0], 0, UINT8_MAX, &kind);
	if (r < 0)
		return r;
	if ((uint64_t)kind >= proto_n_object_kinds)
		return fail(d, PROTO_E_UNKNOWN_TYPE, "unknown object kind %" PRId64, kind);
	out->kind = (uint8_t)kind;
	switch (kind) {
#define DEC_OBJECT_CASE_(a, c, s)                                              \
	case c:                                                               \
		out->s = decoder_alloc(d, sizeof(*out->s), true);             \
		if (!out->s)                                                  \
			return nomem(d);                                      \
		r = decode_##s(d, &o->items[1], out->s);                      \
		break;
		PROTO_OBJECTS(DEC_OBJECT_CASE_, _)
#undef DEC_OBJECT_CASE_
	}
	return r < 0 ? unwind_field(d, proto_object_descs[kind]->name, r) : 0;
}

/* ---- the frame ---- */

static int decode_body(struct proto_decoder *d, const struct proto_value *o, struct proto_msg *m)
{
	switch (m->env.type) {
#define DEC_BODY_CASE_(a, c, s)                                                \
	case c:                                                               \
		return decode_##s(d, o, &m->body.s);
		PROTO_MESSAGES(DEC_BODY_CASE_, _)
#undef DEC_BODY_CASE_
	}
	return fail(d, PROTO_E_UNKNOWN_TYPE, "unknown message type %u", m->env.type);
}

static int decode_tree(struct proto_decoder *d, const struct proto_value *o, struct proto_msg *m)
{
	const struct proto_value *a;
	int64_t major = 0, minor = 0;
	int r;

	if (proto_value_type(o) != PROTO_VALUE_ARRAY || proto_value_len(o) != 4)
		return fail(d, PROTO_E_TYPE,
			    "message: expected array of 4 [major, minor, envelope, body], got %s",
			    proto_value_type_name(proto_value_type(o)));
	a = o->items;
	if ((r = decode_int(d, &a[0], 0, UINT8_MAX, &major)) < 0 ||
	    (r = decode_int(d, &a[1], 0, UINT8_MAX, &minor)) < 0)
		return unwind_field(d, "version", r);
	if (major != PROTO_VERSION_MAJOR)
		return unwind_field(d, "version",
				    fail(d, PROTO_E_VERSION,
					 "protocol major %" PRId64 " not supported (this build speaks %d.%d)",
					 major, PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR));
	m->version_major = (uint8_t)major;
	m->version_minor = (uint8_t)minor;
	r = decode_envelope(d, &a[2], &m->env);
	if (r < 0)
		return unwind_field(d, "envelope", r);
	r = decode_body(d, &a[3], m);
	if (r < 0)
		return unwind_field(d, proto_msg_descs[m->env.type]->name, r);
	return 0;
}

int proto_decode(struct proto_decoder *d, const void *buf, size_t len,
		 const struct proto_msg **ret, struct proto_error *err)
{
	const struct proto_value *root;
	struct proto_msg *m;
	int r;

	*ret = NULL;
	d->err = err;
	d->path.depth = 0;
	d->decoded = 0;
	d->over_budget = false;
	arena_reset(&d->arena);
	proto_bump_reset(&d->bump);

	r = proto_unpack_frame(buf, len, &d->bump, &root, err);
	if (r < 0)
		return r;
	m = decoder_alloc(d, sizeof(*m), true);
	if (!m)
		return nomem(d);
	r = decode_tree(d, root, m);
	if (r < 0) {
		proto_error_add_path(err, &d->path);
		return r;
	}
	if (err)
		err->code = PROTO_OK, err->text[0] = '\0';
	*ret = m;
	return 0;
}
