/*
 * The strict decoder: proto/unpack.c records the frame's objects with
 * msgpack-c's unpacker, and this file walks that record into structs
 * carved from the decoder's arena, checking every type, range and limit;
 * each error names the field path. The walk is generated from
 * proto/proto.h's field lists: one function per struct that takes its
 * fields in id order and decodes each with its limits as constants
 * (walking the descriptor tables instead cost a third of every decode).
 * Every decode_* step takes the cursor at its value and returns the
 * cursor after it, NULL on error. Called by every daemon's receive
 * path (and kanna-tap); never trusts a count before checking it against
 * its limit, never reads outside the frame.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "proto/unpack.h"

/* A cursor into the record of the frame's objects. */
typedef const struct proto_value *cursor;

struct proto_decoder {
	struct arena arena;
	struct proto_bump bump; /* objects' record and decoded message, from arena */
	struct proto_path path; /* where the error is, collected while unwinding */
	struct proto_error *err;
	int r;              /* the error's errno */
	size_t left;        /* of max_decoded, for the rest of this frame's message */
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

void proto_decoder_release(struct proto_decoder *d)
{
	proto_bump_reset(&d->bump);
}

void proto_decoder_free(struct proto_decoder *d)
{
	if (!d)
		return;
	arena_done(&d->arena);
	free(d);
}

/* ---- errors: the message here, the path added while unwinding ---- */
#define cold_ __attribute__((cold, noinline))
/* The field decoders: the compiler inlines them where it pays; forcing
 * it grew decode.o by a sixth for no measured gain (bench/proto.sh). */
#define inline_ inline

static cold_ _printf_(3, 4) cursor fail(struct proto_decoder *d, enum proto_error_code code,
					const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	d->r = proto_vfail(d->err, NULL, code, fmt, ap);
	va_end(ap);
	return NULL;
}

static cold_ cursor unwind_field(struct proto_decoder *d, const char *name)
{
	proto_path_push(&d->path, name, 0);
	return NULL;
}

static cold_ cursor unwind_index(struct proto_decoder *d, uint32_t i)
{
	proto_path_push(&d->path, NULL, i);
	return NULL;
}

static cold_ cursor wrong_type(struct proto_decoder *d, const char *want, cursor o)
{
	return fail(d, PROTO_E_TYPE, "expected %s, got %s", want,
		    proto_value_type_name(proto_value_type(o)));
}

static cold_ cursor too_many(struct proto_decoder *d, const char *what, uint32_t n, uint32_t max)
{
	return fail(d, PROTO_E_TOO_MANY, "%s of %" PRIu32 " exceeds limit %" PRIu32, what, n, max);
}

static cold_ cursor nomem(struct proto_decoder *d)
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

	if (_unlikely_(size > d->left)) {
		d->over_budget = true;
		return NULL;
	}
	d->left -= size;
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

/* The value at o and everything inside it: an unknown field's. */
static cursor skip(cursor o)
{
	uint64_t left = 1;

	do {
		if (proto_value_type(o) == PROTO_VALUE_ARRAY)
			left += proto_value_len(o);
		else if (proto_value_type(o) == PROTO_VALUE_MAP)
			left += 2 * (uint64_t)proto_value_len(o);
		o++;
	} while (--left);
	return o;
}

/* ---- scalars ---- */

static cold_ cursor int_error(struct proto_decoder *d, cursor o, int64_t min, uint64_t max)
{
	switch (proto_value_type(o)) {
	case PROTO_VALUE_UINT:
		return fail(d, PROTO_E_RANGE, "%" PRIu64 " exceeds maximum %" PRIu64, o->u, max);
	case PROTO_VALUE_INT:
		return fail(d, PROTO_E_RANGE, "%" PRId64 " is below minimum %" PRId64, o->i, min);
	default:
		return wrong_type(d, "integer", o);
	}
}

/* Any integer in [min, max]. */
static inline_ cursor decode_int(struct proto_decoder *d, cursor o, int64_t min, uint64_t max,
				int64_t *ret)
{
	if (_likely_(o->head == PROTO_VALUE_UINT && o->u <= max))
		*ret = (int64_t)o->u;
	else if (o->head == PROTO_VALUE_INT && o->i >= min)
		*ret = o->i;
	else
		return int_error(d, o, min, max);
	return o + 1;
}

static inline_ cursor decode_bool(struct proto_decoder *d, cursor o, bool *out)
{
	if (_unlikely_(o->head != PROTO_VALUE_BOOL))
		return wrong_type(d, "bool", o);
	*out = o->b;
	return o + 1;
}

static inline_ cursor decode_u32(struct proto_decoder *d, cursor o, uint32_t *out)
{
	int64_t v = 0;

	o = decode_int(d, o, 0, UINT32_MAX, &v);
	*out = (uint32_t)v;
	return o;
}

static inline_ cursor decode_i32(struct proto_decoder *d, cursor o, int32_t *out)
{
	int64_t v = 0;

	o = decode_int(d, o, INT32_MIN, INT32_MAX, &v);
	*out = (int32_t)v;
	return o;
}

static inline_ cursor decode_i64(struct proto_decoder *d, cursor o, int64_t *out)
{
	return decode_int(d, o, INT64_MIN, INT64_MAX, out);
}

static inline_ cursor decode_u64(struct proto_decoder *d, cursor o, uint64_t *out)
{
	if (_unlikely_(o->head != PROTO_VALUE_UINT))
		return wrong_type(d, "uint", o);
	*out = o->u;
	return o + 1;
}

static inline_ cursor decode_f64(struct proto_decoder *d, cursor o, double *out)
{
	if (_unlikely_(o->head != PROTO_VALUE_F64 && o->head != PROTO_VALUE_F32))
		return wrong_type(d, "float", o);
	*out = o->f;
	return o + 1;
}

/* An integer in [0, 255] first; an unknown message type has its own code. */
static cold_ cursor enum_error(struct proto_decoder *d, cursor o, const char *name)
{
	if (o->head != PROTO_VALUE_UINT || o->u > UINT8_MAX)
		return int_error(d, o, 0, UINT8_MAX);
	return fail(d, strcmp(name, "msg_type") == 0 ? PROTO_E_UNKNOWN_TYPE : PROTO_E_RANGE,
		    "unknown value %" PRIu64 " for enum %s", o->u, name);
}

/* n_values and name are the enum's. */
static inline_ cursor decode_enum(struct proto_decoder *d, cursor o, unsigned n_values,
				 const char *name, uint8_t *out)
{
	if (_unlikely_(o->head != PROTO_VALUE_UINT || o->u >= n_values))
		return enum_error(d, o, name);
	*out = (uint8_t)o->u;
	return o + 1;
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
	for (uint32_t i = 0;; i += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		unsigned zero = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()));

		if (n - i <= 16)
			return (zero & ((1u << (n - i)) - 1)) != 0;
		if (zero)
			return true;
	}
#else
	return n && memchr(s, '\0', n);
#endif
}

/* The same for n ≤ SHORT_STR bytes, without a loop. */
#define SHORT_STR 32
static inline_ bool has_nul_short(const char *s, uint32_t n)
{
#ifdef __SSE2__
	const __m128i *v = (const __m128i *)(const void *)s;
	uint64_t zero = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(v), _mm_setzero_si128())) |
			(uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(v + 1),
									      _mm_setzero_si128())) << 16;

	return (zero & ((UINT64_C(1) << n) - 1)) != 0;
#else
	return n && memchr(s, '\0', n);
#endif
}

static cold_ cursor str_error(struct proto_decoder *d, cursor o, uint32_t max)
{
	uint32_t n = proto_value_len(o);

	if (proto_value_type(o) != PROTO_VALUE_STR)
		return wrong_type(d, "str", o);
	if (n > max)
		return fail(d, PROTO_E_TOO_LONG, "string of %" PRIu32 " bytes exceeds limit %" PRIu32,
			    n, max);
	if (memchr(o->str, '\0', n))
		return fail(d, PROTO_E_RANGE, "string contains a NUL byte");
	d->over_budget = true;
	return nomem(d);
}

/* In place: the string is terminated in the decoder's copy of the frame,
 * its size counted against the budget as if copied. */
static inline_ cursor decode_str(struct proto_decoder *d, cursor o, uint32_t max, char **ret)
{
	uint64_t h = o->head ^ PROTO_VALUE_STR;
	uint64_t type_len = h >> 8 | h << 56; /* the type byte, zero if str, on top of the length */
	uint32_t n = (uint32_t)(h >> 8);

	if (_likely_(type_len <= MIN(max, (uint32_t)SHORT_STR))) {
		if (_unlikely_(has_nul_short(o->str, n)))
			return str_error(d, o, max);
	} else if (type_len > max || has_nul(o->str, n)) {
		return str_error(d, o, max);
	}
	if (_unlikely_((size_t)n + 1 > d->left))
		return str_error(d, o, max);
	d->left -= (size_t)n + 1;
	o->str[n] = '\0';
	*ret = o->str;
	return o + 1;
}

static cursor decode_strs(struct proto_decoder *d, cursor o, uint32_t max, uint32_t elem_len,
			  char ***ret, uint32_t *ret_n)
{
	uint32_t n = proto_value_len(o);
	char **v;

	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_ARRAY))
		return wrong_type(d, "array", o);
	if (_unlikely_(n > max))
		return too_many(d, "array", n, max);
	v = alloc_array(d, n, sizeof(*v), false);
	if (!v)
		return nomem(d);
	o++;
	for (uint32_t i = 0; i < n; i++) {
		o = decode_str(d, o, elem_len, &v[i]);
		if (!o)
			return unwind_index(d, i);
	}
	*ret = v;
	*ret_n = n;
	return o;
}

/* string→string maps (labels, selectors, tags) */
static cursor decode_kv(struct proto_decoder *d, cursor o, uint32_t max, uint32_t value_len,
			struct proto_kv **ret, uint32_t *ret_n)
{
	uint32_t n = proto_value_len(o);
	struct proto_kv *v;

	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_MAP))
		return wrong_type(d, "map", o);
	if (_unlikely_(n > max))
		return too_many(d, "map", n, max);
	v = alloc_array(d, n, sizeof(*v), false);
	if (!v)
		return nomem(d);
	o++;
	for (uint32_t i = 0; i < n; i++) {
		o = decode_str(d, o, PROTO_MAX_KEY_LEN, &v[i].key);
		if (o)
			o = decode_str(d, o, value_len, &v[i].value);
		if (!o)
			return unwind_index(d, i);
	}
	*ret = v;
	*ret_n = n;
	return o;
}

/* resource name→int64 maps */
static cursor decode_res(struct proto_decoder *d, cursor o, uint32_t max,
			 struct proto_resource **ret, uint32_t *ret_n)
{
	uint32_t n = proto_value_len(o);
	struct proto_resource *v;

	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_MAP))
		return wrong_type(d, "map", o);
	if (_unlikely_(n > max))
		return too_many(d, "map", n, max);
	v = alloc_array(d, n, sizeof(*v), false);
	if (!v)
		return nomem(d);
	o++;
	for (uint32_t i = 0; i < n; i++) {
		o = decode_str(d, o, PROTO_MAX_KEY_LEN, &v[i].name);
		if (o)
			o = decode_i64(d, o, &v[i].value);
		if (!o)
			return unwind_index(d, i);
	}
	*ret = v;
	*ret_n = n;
	return o;
}

/* ---- structs, generated from the field lists ---- */

#define DEC_FLAG_REQ 1
#define DEC_FLAG_OPT 0
#define DEC_REQUIRED_BIT_(S, id, name, kind, arg, max, flags)                  \
	| (DEC_FLAG_##flags ? UINT64_C(1) << ((id) - 1) : 0)
#define DEC_KNOWN_BIT_(S, id, name, kind, arg, max, flags) | UINT64_C(1) << ((id) - 1)
#define DEC_ENUM_COUNT_(c, s) +1

#define DEC_BOOL(name, arg, max) decode_bool(d, o, &out->name)
#define DEC_U32(name, arg, max) decode_u32(d, o, &out->name)
#define DEC_U64(name, arg, max) decode_u64(d, o, &out->name)
#define DEC_I32(name, arg, max) decode_i32(d, o, &out->name)
#define DEC_I64(name, arg, max) decode_i64(d, o, &out->name)
#define DEC_F64(name, arg, max) decode_f64(d, o, &out->name)
#define DEC_ENUM(name, arg, max)                                               \
	decode_enum(d, o, 0 proto_values_##arg(DEC_ENUM_COUNT_), #arg, &out->name)
#define DEC_STR(name, arg, max) decode_str(d, o, (max), &out->name)
#define DEC_STRS(name, arg, max) decode_strs(d, o, (max), (arg), &out->name, &out->n_##name)
#define DEC_KV(name, arg, max) decode_kv(d, o, (max), (arg), &out->name, &out->n_##name)
#define DEC_RES(name, arg, max) decode_res(d, o, (max), &out->name, &out->n_##name)
#define DEC_OBJ(name, arg, max) decode_##arg(d, o, &out->name)
#define DEC_OBJS(name, arg, max) decode_objs_##arg(d, o, (max), &out->name, &out->n_##name)
#define DEC_OBJECT(name, arg, max) decode_object(d, o, &out->name)
/* A field's block: taken when the key at o is its id (next). */
#define DEC_FIELD_(S, id, name, kind, arg, max, flags)                         \
	if (next == (id)) {                                                   \
		if (_unlikely_(seen & UINT64_C(1) << ((id) - 1))) {           \
			fail(d, PROTO_E_DUPLICATE, "field id %d given twice", id); \
			return unwind_field(d, #name);                        \
		}                                                             \
		seen |= UINT64_C(1) << ((id) - 1);                            \
		o++;                                                          \
		o = DEC_##kind(name, arg, max);                               \
		if (_unlikely_(!o))                                           \
			return unwind_field(d, #name);                        \
		next = next_id(o, --n);                                       \
	}

/* The field id of the key at o, n pairs left; 0 (no field) when none is
 * left or the key is no uint. */
static inline uint64_t next_id(cursor o, uint32_t n)
{
	return n && o->head == PROTO_VALUE_UINT ? o->u : 0;
}

#define DEC_DECLARE_(s)                                                        \
	static cursor decode_##s(struct proto_decoder *d, cursor o, struct proto_##s *out); \
	static cursor decode_objs_##s(struct proto_decoder *d, cursor o, uint32_t max, \
				      struct proto_##s **ret, uint32_t *ret_n);
PROTO_STRUCTS(DEC_DECLARE_)
static cursor decode_object(struct proto_decoder *d, cursor o, struct proto_object *out);

static cold_ cursor field_key_type(struct proto_decoder *d, cursor key)
{
	return fail(d, PROTO_E_TYPE, "field key: expected uint field id, got %s",
		    proto_value_type_name(proto_value_type(key)));
}

/* The first required field of sd that is not in seen. */
static cold_ cursor missing(struct proto_decoder *d, const struct proto_struct_desc *sd,
			    uint64_t absent)
{
	uint8_t id = (uint8_t)(__builtin_ctzll(absent) + 1);
	uint32_t i = 0;

	/* Ids have gaps where fields were retired: find it by id. */
	while (i + 1 < sd->n_fields && sd->fields[i].id != id)
		i++;
	fail(d, PROTO_E_MISSING, "required field missing");
	return unwind_field(d, sd->fields[i].name);
}

/*
 * A map {field id: value}; unknown ids are skipped (a newer minor
 * version's, or a retired field's), a repeated id is refused. out is zeroed: absent fields keep
 * their default. Every struct has ≤ 64 fields (tested), one bit each.
 *
 * The fields' blocks follow in id order, each taken when the next key is
 * its id: kanna's encoder sends fields in that order, so a struct is
 * decoded in one pass of direct branches, which predict better than one
 * jump through a table per field. A known field out of order starts the
 * pass again (at most once per field: a second time it is a duplicate);
 * an unknown one is skipped.
 */
#define DEC_STRUCT_(s)                                                         \
	static cursor decode_##s(struct proto_decoder *d, cursor o, struct proto_##s *out) \
	{                                                                     \
		const uint64_t required = 0 proto_fields_##s(DEC_REQUIRED_BIT_, s); \
		const uint64_t known = 0 proto_fields_##s(DEC_KNOWN_BIT_, s); \
		uint64_t seen = 0, next;                                      \
		uint32_t n = proto_value_len(o);                              \
                                                                              \
		if (_unlikely_(proto_value_type(o) != PROTO_VALUE_MAP))       \
			return wrong_type(d, "map", o);                       \
		o++;                                                          \
	again:                                                                \
		next = next_id(o, n);                                         \
		proto_fields_##s(DEC_FIELD_, s)                               \
		if (_unlikely_(n > 0)) { /* a key out of order, unknown or no uint */ \
			if (o->head != PROTO_VALUE_UINT)                      \
				return field_key_type(d, o);                  \
			if (o->u - 1 >= 64 || !(known & UINT64_C(1) << (o->u - 1))) { \
				/* a newer minor version's field, or a retired one */ \
				o = skip(o + 1);                              \
				n--;                                          \
			}                                                     \
			goto again;                                           \
		}                                                             \
		if (_unlikely_((seen & required) != required))                \
			return missing(d, &proto_desc_##s, required & ~seen); \
		return o;                                                     \
	}
PROTO_STRUCTS(DEC_STRUCT_)

/* Arrays of structs, for every struct (most are unused). */
#define DEC_OBJS_(s)                                                           \
	static _unused_ cursor decode_objs_##s(struct proto_decoder *d, cursor o, uint32_t max, \
					       struct proto_##s **ret, uint32_t *ret_n) \
	{                                                                     \
		uint32_t n = proto_value_len(o);                              \
		struct proto_##s *v;                                          \
                                                                              \
		if (_unlikely_(proto_value_type(o) != PROTO_VALUE_ARRAY))       \
			return wrong_type(d, "array", o);                     \
		if (_unlikely_(n > max))                                      \
			return too_many(d, "array", n, max);                  \
		v = alloc_array(d, n, sizeof(*v), true);                      \
		if (!v)                                                       \
			return nomem(d);                                      \
		o++;                                                          \
		for (uint32_t i = 0; i < n; i++) {                            \
			o = decode_##s(d, o, &v[i]);                          \
			if (!o)                                               \
				return unwind_index(d, i);                    \
		}                                                             \
		*ret = v;                                                     \
		*ret_n = n;                                                   \
		return o;                                                     \
	}
PROTO_STRUCTS(DEC_OBJS_)

/* A cluster-state object: [kind, map]; the kind names the path step. */
static cursor decode_object(struct proto_decoder *d, cursor o, struct proto_object *out)
{
	int64_t kind = 0;

	if (_unlikely_(proto_value_type(o) != PROTO_VALUE_ARRAY))
		return wrong_type(d, "array", o);
	if (_unlikely_(proto_value_len(o) != 2))
		return fail(d, PROTO_E_TYPE, "expected array of 2 [kind, object], got %" PRIu32 " entries",
			    proto_value_len(o));
	o = decode_int(d, o + 1, 0, UINT8_MAX, &kind);
	if (!o)
		return NULL;
	if ((uint64_t)kind >= proto_n_object_kinds)
		return fail(d, PROTO_E_UNKNOWN_TYPE, "unknown object kind %" PRId64, kind);
	out->kind = (uint8_t)kind;
	switch (kind) {
#define DEC_OBJECT_CASE_(a, c, s)                                              \
	case c:                                                               \
		out->s = decoder_alloc(d, sizeof(*out->s), true);             \
		if (!out->s)                                                  \
			return nomem(d);                                      \
		o = decode_##s(d, o, out->s);                                 \
		break;
		PROTO_OBJECTS(DEC_OBJECT_CASE_, _)
#undef DEC_OBJECT_CASE_
	}
	return o ? o : unwind_field(d, proto_object_descs[kind]->name);
}

/* ---- the frame ---- */

static cursor decode_body(struct proto_decoder *d, cursor o, struct proto_msg *m)
{
	switch (m->env.type) {
#define DEC_BODY_CASE_(a, c, s)                                                \
	case c:                                                               \
		memset(&m->body.s, 0, sizeof(m->body.s));                     \
		return decode_##s(d, o, &m->body.s);
		PROTO_MESSAGES(DEC_BODY_CASE_, _)
#undef DEC_BODY_CASE_
	}
	return fail(d, PROTO_E_UNKNOWN_TYPE, "unknown message type %u", m->env.type);
}

/* hello_any_major: decode a hello whatever its major (proto_decode_hello()). */
static cursor decode_message(struct proto_decoder *d, cursor o, struct proto_msg *m,
			     bool hello_any_major)
{
	int64_t major = 0, minor = 0;

	if (proto_value_type(o) != PROTO_VALUE_ARRAY || proto_value_len(o) != 4)
		return fail(d, PROTO_E_TYPE,
			    "message: expected array of 4 [major, minor, envelope, body], got %s",
			    proto_value_type_name(proto_value_type(o)));
	o = decode_int(d, o + 1, 0, UINT8_MAX, &major);
	if (o)
		o = decode_int(d, o, 0, UINT8_MAX, &minor);
	if (!o)
		return unwind_field(d, "version");
	if (major != PROTO_VERSION_MAJOR && !hello_any_major) {
		fail(d, PROTO_E_VERSION, "protocol major %" PRId64 " not supported (this build speaks %d.%d)",
		     major, PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR);
		return unwind_field(d, "version");
	}
	m->version_major = (uint8_t)major;
	m->version_minor = (uint8_t)minor;
	m->env = (struct proto_envelope){ 0 };
	o = decode_envelope(d, o, &m->env);
	if (!o)
		return unwind_field(d, "envelope");
	if (hello_any_major && m->env.type != PROTO_MSG_HELLO) {
		if (major != PROTO_VERSION_MAJOR)
			fail(d, PROTO_E_VERSION, "protocol major %" PRId64 " not supported (this build "
			     "speaks %d.%d)", major, PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR);
		else
			fail(d, PROTO_E_TYPE, "expected a hello, got %s",
			     proto_type_name(m->env.type) ?: "an unknown type");
		return unwind_field(d, "envelope");
	}
	o = decode_body(d, o, m);
	if (!o)
		return unwind_field(d, proto_msg_descs[m->env.type]->name);
	return o;
}

static int decode_frame(struct proto_decoder *d, const void *buf, size_t len,
			const struct proto_msg **ret, struct proto_error *err, bool hello_any_major)
{
	const struct proto_value *tape;
	struct proto_msg *m;
	int r;

	*ret = NULL;
	d->err = err;
	d->path.depth = 0;
	d->left = d->max_decoded;
	d->over_budget = false;
	proto_bump_reset(&d->bump);

	r = proto_unpack_frame(buf, len, &d->bump, &tape, err);
	if (r < 0)
		return r;
	/* Zeroed in parts: the envelope here, the body by its type
	 * (decode_body()); zeroing the union whole costs every message
	 * the largest body's size. */
	m = decoder_alloc(d, sizeof(*m), false);
	if (!m) {
		nomem(d);
		return d->r;
	}
	if (!decode_message(d, tape, m, hello_any_major)) {
		proto_error_add_path(err, &d->path);
		return d->r;
	}
	if (err)
		err->code = PROTO_OK, err->text[0] = '\0';
	*ret = m;
	return 0;
}

int proto_decode(struct proto_decoder *d, const void *buf, size_t len,
		 const struct proto_msg **ret, struct proto_error *err)
{
	return decode_frame(d, buf, len, ret, err, false);
}

int proto_decode_hello(struct proto_decoder *d, const void *buf, size_t len,
		       const struct proto_msg **ret, struct proto_error *err)
{
	return decode_frame(d, buf, len, ret, err, true);
}
