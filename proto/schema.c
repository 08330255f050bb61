/*
 * The descriptor tables of proto/schema.h, generated from proto/proto.h's
 * X-macros, plus the small helpers every codec pass shares (names, default
 * detection, error paths). Pure data and pure functions; no allocation.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proto/schema.h"

/* ---- enums ---- */
#define ENUM_NAME_(c, s) s,
#define ENUM_DESC_(e)                                                         \
	static const char *const enum_names_##e[] = { proto_values_##e(ENUM_NAME_) }; \
	const struct proto_enum_desc proto_enum_desc_##e = {                  \
		#e, enum_names_##e, ARRAY_SIZE(enum_names_##e)                \
	};
PROTO_ENUMS(ENUM_DESC_)

#define ENUM_PTR_(e) &proto_enum_desc_##e,
const struct proto_enum_desc *const proto_all_enums[] = { PROTO_ENUMS(ENUM_PTR_) };
const unsigned proto_n_enums = ARRAY_SIZE(proto_all_enums);

/* ---- structs ---- */
#define PROTO_FLAG_REQ true
#define PROTO_FLAG_OPT false
#define COUNT_AT_(S, name) .count_offset = offsetof(struct proto_##S, n_##name)
#define EXTRA_BOOL(S, name, arg)
#define EXTRA_U32(S, name, arg)
#define EXTRA_U64(S, name, arg)
#define EXTRA_I32(S, name, arg)
#define EXTRA_I64(S, name, arg)
#define EXTRA_F64(S, name, arg)
#define EXTRA_STR(S, name, arg)
#define EXTRA_OBJECT(S, name, arg)
#define EXTRA_ENUM(S, name, arg) .enumd = &proto_enum_desc_##arg,
#define EXTRA_STRS(S, name, arg) COUNT_AT_(S, name), .elem_len = (arg),
#define EXTRA_KV(S, name, arg) COUNT_AT_(S, name), .elem_len = (arg),
#define EXTRA_RES(S, name, arg) COUNT_AT_(S, name),
#define EXTRA_OBJ(S, name, arg) .sub = &proto_desc_##arg,
#define EXTRA_OBJS(S, name, arg) COUNT_AT_(S, name), .sub = &proto_desc_##arg,

#define FIELD_DESC_(S, id_, name_, kind_, arg, max_, flags)                  \
	{ .name = #name_, .id = (id_), .kind = PROTO_KIND_##kind_,            \
	  .required = PROTO_FLAG_##flags, .max = (max_),                      \
	  .offset = offsetof(struct proto_##S, name_),                        \
	  EXTRA_##kind_(S, name_, arg) },

#define STRUCT_DESC_(s)                                                       \
	static const struct proto_field_desc fields_##s[] = {                 \
		proto_fields_##s(FIELD_DESC_, s)                              \
	};                                                                    \
	const struct proto_struct_desc proto_desc_##s = {                     \
		#s, sizeof(struct proto_##s), ARRAY_SIZE(fields_##s), fields_##s \
	};
PROTO_STRUCTS(STRUCT_DESC_)

#define STRUCT_PTR_(s) &proto_desc_##s,
const struct proto_struct_desc *const proto_all_structs[] = { PROTO_STRUCTS(STRUCT_PTR_) };
const unsigned proto_n_structs = ARRAY_SIZE(proto_all_structs);

#define TABLE_PTR_(a, c, s) [c] = &proto_desc_##s,
const struct proto_struct_desc *const proto_msg_descs[] = { PROTO_MESSAGES(TABLE_PTR_, _) };
const unsigned proto_n_msg_types = ARRAY_SIZE(proto_msg_descs);
const struct proto_struct_desc *const proto_object_descs[] = { PROTO_OBJECTS(TABLE_PTR_, _) };
const unsigned proto_n_object_kinds = ARRAY_SIZE(proto_object_descs);

/* ---- names ---- */
static const char *enum_value_name(const struct proto_enum_desc *e, unsigned v)
{
	return v < e->n_values ? e->values[v] : NULL;
}

const char *proto_type_name(enum proto_msg_type type)
{
	return enum_value_name(&proto_enum_desc_msg_type, type);
}

const char *proto_process_name(enum proto_process process)
{
	return enum_value_name(&proto_enum_desc_process, process);
}

const char *proto_object_kind_name(enum proto_object_kind kind)
{
	return enum_value_name(&proto_enum_desc_object_kind, kind);
}

const char *proto_enum_name(const struct proto_enum_desc *d, uint8_t v)
{
	return v < d->n_values ? d->values[v] : "";
}

const char *proto_kind_name(enum proto_kind kind)
{
	static const char *const names[_PROTO_KIND_MAX] = {
		[PROTO_KIND_BOOL] = "bool", [PROTO_KIND_U32] = "uint32",
		[PROTO_KIND_U64] = "uint64", [PROTO_KIND_I32] = "int32",
		[PROTO_KIND_I64] = "int64", [PROTO_KIND_F64] = "float64",
		[PROTO_KIND_ENUM] = "enum", [PROTO_KIND_STR] = "string",
		[PROTO_KIND_STRS] = "array of string",
		[PROTO_KIND_KV] = "map string→string",
		[PROTO_KIND_RES] = "map string→int64", [PROTO_KIND_OBJ] = "map",
		[PROTO_KIND_OBJS] = "array of map", [PROTO_KIND_OBJECT] = "object",
	};
	return kind < _PROTO_KIND_MAX ? names[kind] : "?";
}

const char *proto_error_code_name(enum proto_error_code code)
{
	static const char *const names[] = {
		[PROTO_OK] = "ok", [PROTO_E_TRUNCATED] = "truncated",
		[PROTO_E_TRAILING] = "trailing-garbage",
		[PROTO_E_MALFORMED] = "malformed",
		[PROTO_E_FRAME_SIZE] = "frame-too-large",
		[PROTO_E_VERSION] = "unsupported-version",
		[PROTO_E_TYPE] = "wrong-type", [PROTO_E_RANGE] = "out-of-range",
		[PROTO_E_TOO_LONG] = "string-too-long",
		[PROTO_E_TOO_MANY] = "too-many-entries",
		[PROTO_E_MISSING] = "missing-field",
		[PROTO_E_DUPLICATE] = "duplicate-field",
		[PROTO_E_UNKNOWN_TYPE] = "unknown-type", [PROTO_E_NOMEM] = "no-memory",
	};
	return (size_t)code < ARRAY_SIZE(names) && names[code] ? names[code] : "?";
}

/* ---- defaults ---- */
bool proto_field_is_default(const struct proto_field_desc *f, const void *s)
{
	const void *p = proto_field_ptr(f, s);

	switch (f->kind) {
	case PROTO_KIND_BOOL:
		return !*(const bool *)p;
	case PROTO_KIND_U32:
		return *(const uint32_t *)p == 0;
	case PROTO_KIND_U64:
		return *(const uint64_t *)p == 0;
	case PROTO_KIND_I32:
		return *(const int32_t *)p == 0;
	case PROTO_KIND_I64:
		return *(const int64_t *)p == 0;
	case PROTO_KIND_F64: {
		/* Bitwise: -0.0 and NaN are values worth sending. */
		double zero = 0.0;
		return memcmp(p, &zero, sizeof(zero)) == 0;
	}
	case PROTO_KIND_ENUM:
		return *(const uint8_t *)p == 0;
	case PROTO_KIND_STR:
		return *(char *const *)p == NULL;
	case PROTO_KIND_STRS:
	case PROTO_KIND_KV:
	case PROTO_KIND_RES:
	case PROTO_KIND_OBJS:
		return *proto_field_count(f, s) == 0;
	case PROTO_KIND_OBJ:
		return proto_struct_is_default(f->sub, p);
	case PROTO_KIND_OBJECT:
		return ((const struct proto_object *)p)->ptr == NULL;
	}
	return true;
}

bool proto_struct_is_default(const struct proto_struct_desc *sd, const void *s)
{
	for (uint32_t i = 0; i < sd->n_fields; i++)
		if (!proto_field_is_default(&sd->fields[i], s))
			return false;
	return true;
}

/* ---- errors ---- */
static size_t path_format(const struct proto_path *path, char *buf, size_t size)
{
	size_t n = 0;
	unsigned depth = MIN(path->depth, (unsigned)ARRAY_SIZE(path->step));

	buf[0] = '\0';
	for (unsigned i = 0; i < depth && n < size; i++) {
		int k;
		if (path->step[i].name)
			k = snprintf(buf + n, size - n, "%s%s", i ? "." : "", path->step[i].name);
		else
			k = snprintf(buf + n, size - n, "[%u]", path->step[i].index);
		if (k < 0)
			break;
		n += (size_t)k;
	}
	return MIN(n, size - 1);
}

void proto_error_add_path(struct proto_error *err, const struct proto_path *unwound)
{
	char message[PROTO_ERROR_TEXT_MAX];
	struct proto_path path = { 0 };
	size_t n;

	if (!err || unwound->depth == 0)
		return;
	path.depth = MIN(unwound->depth, (unsigned)ARRAY_SIZE(path.step));
	for (unsigned i = 0; i < path.depth; i++)
		path.step[i] = unwound->step[path.depth - 1 - i];
	memcpy(message, err->text, sizeof(message));
	n = path_format(&path, err->text, sizeof(err->text));
	if (n + 2 < sizeof(err->text)) {
		memcpy(err->text + n, ": ", 3);
		n += 2;
	}
	snprintf(err->text + n, sizeof(err->text) - n, "%s", message);
}

int proto_fail(struct proto_error *err, const struct proto_path *path,
	       enum proto_error_code code, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = proto_vfail(err, path, code, fmt, ap);
	va_end(ap);
	return r;
}

int proto_vfail(struct proto_error *err, const struct proto_path *path,
		enum proto_error_code code, const char *fmt, va_list ap)
{
	if (err) {
		size_t n = 0;

		err->code = code;
		err->text[0] = '\0';
		if (path && path->depth > 0) {
			n = path_format(path, err->text, sizeof(err->text));
			if (n + 2 < sizeof(err->text)) {
				memcpy(err->text + n, ": ", 3);
				n += 2;
			}
		}
		vsnprintf(err->text + n, sizeof(err->text) - n, fmt, ap);
	}
	switch (code) {
	case PROTO_OK:
		return 0;
	case PROTO_E_VERSION:
		return -EPROTONOSUPPORT;
	case PROTO_E_NOMEM:
		return -ENOMEM;
	case PROTO_E_FRAME_SIZE:
		return -EMSGSIZE;
	default:
		return -EBADMSG;
	}
}
