/*
 * The proto schema as data: one descriptor per struct and enum, generated
 * from the X-macro lists of proto/proto.h. Everything generic in proto/ —
 * encoder, decoder, copy, equality, JSON, the random generator, gen-doc —
 * walks these tables, so no field list is ever written twice. Internal to
 * proto/ and its tests.
 */
#ifndef KANNA_PROTO_SCHEMA_H
#define KANNA_PROTO_SCHEMA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/util.h"
#include "proto/proto.h"

enum proto_kind {
	PROTO_KIND_BOOL,
	PROTO_KIND_U32,
	PROTO_KIND_U64,
	PROTO_KIND_I32,
	PROTO_KIND_I64,
	PROTO_KIND_F64,
	PROTO_KIND_ENUM,
	PROTO_KIND_STR,
	PROTO_KIND_STRS,
	PROTO_KIND_KV,
	PROTO_KIND_RES,
	PROTO_KIND_OBJ,
	PROTO_KIND_OBJS,
	PROTO_KIND_OBJECT,
	_PROTO_KIND_MAX,
};

struct proto_enum_desc {
	const char *name;
	const char *const *values;
	uint8_t n_values;
};

struct proto_struct_desc;

struct proto_field_desc {
	const char *name;
	uint32_t max;          /* STR: bytes; STRS/KV/RES/OBJS: entries */
	uint32_t elem_len;     /* STRS: element bytes; KV: value bytes */
	uint16_t offset;       /* of the member in its struct */
	uint16_t count_offset; /* of n_<member>, for STRS/KV/RES/OBJS */
	uint8_t id;            /* wire key */
	uint8_t kind;          /* enum proto_kind */
	bool required;
	const struct proto_struct_desc *sub;  /* OBJ, OBJS */
	const struct proto_enum_desc *enumd;  /* ENUM */
};

struct proto_struct_desc {
	const char *name;
	uint32_t size;
	uint32_t n_fields;
	const struct proto_field_desc *fields; /* in id order; retired ids leave gaps */
};

#define PROTO_DECLARE_STRUCT_DESC_(s) extern const struct proto_struct_desc proto_desc_##s;
PROTO_STRUCTS(PROTO_DECLARE_STRUCT_DESC_)
#define PROTO_DECLARE_ENUM_DESC_(e) extern const struct proto_enum_desc proto_enum_desc_##e;
PROTO_ENUMS(PROTO_DECLARE_ENUM_DESC_)

/* Indexed by enum proto_msg_type / enum proto_object_kind. */
extern const struct proto_struct_desc *const proto_msg_descs[];
extern const unsigned proto_n_msg_types;
extern const struct proto_struct_desc *const proto_object_descs[];
extern const unsigned proto_n_object_kinds;
extern const struct proto_enum_desc *const proto_all_enums[];
extern const unsigned proto_n_enums;
extern const struct proto_struct_desc *const proto_all_structs[];
extern const unsigned proto_n_structs;

const char *proto_kind_name(enum proto_kind kind);
/* The wire and API name of value v of enum d ("spot", "NoSchedule"); "" when
 * v is not one of its values. */
const char *proto_enum_name(const struct proto_enum_desc *d, uint8_t v);
/* The capacity type ct as Kubernetes and EC2 spell it. */
static inline const char *proto_capacity_type_name(uint8_t ct)
{
	return proto_enum_name(&proto_enum_desc_capacity_type, ct);
}

/* The field tables of proto/README.md (proto/doc.c). */
void proto_schema_markdown(FILE *out);

/* Member access. */
static inline void *proto_field_ptr(const struct proto_field_desc *f, const void *s)
{
	return (char *)s + f->offset;
}
static inline uint32_t *proto_field_count(const struct proto_field_desc *f, const void *s)
{
	return (uint32_t *)((char *)s + f->count_offset);
}

/* True when an optional field holds its default and is left off the wire:
 * false/0/NULL/empty array, an OBJ all of whose fields are absent. */
bool proto_field_is_default(const struct proto_field_desc *f, const void *s);
bool proto_struct_is_default(const struct proto_struct_desc *sd, const void *s);

/* Deep equality; strings NULL only equal NULL, F64 compared bitwise. */
bool proto_struct_equal(const struct proto_struct_desc *sd, const void *a, const void *b);

/* Where a codec error happened: "launch_plan.nodeclaims[3].instance_types". */
struct proto_path {
	unsigned depth;
	struct {
		const char *name; /* field name, or NULL for an index step */
		uint32_t index;
	} step[PROTO_MAX_DEPTH + 2];
};

static inline void proto_path_push(struct proto_path *p, const char *name, uint32_t index)
{
	if (p->depth < PROTO_MAX_DEPTH + 2) {
		p->step[p->depth].name = name;
		p->step[p->depth].index = index;
	}
	p->depth++;
}

/* The codecs build an error's path while unwinding, so the way down costs
 * nothing: each level adds its step, innermost first, and passes r on. */
static inline int proto_unwind(struct proto_path *p, const char *name, uint32_t index, int r)
{
	proto_path_push(p, name, index);
	return r;
}

/* Fills err (if not NULL) with code and "<path>: <message>"; returns the
 * errno that goes with the code. */
int proto_fail(struct proto_error *err, const struct proto_path *path,
	       enum proto_error_code code, const char *fmt, ...) _printf_(4, 5);
int proto_vfail(struct proto_error *err, const struct proto_path *path,
		enum proto_error_code code, const char *fmt, va_list ap) _printf_(4, 0);
/* Turns err->text "<message>" into "<path>: <message>", the path given
 * innermost step first (as proto_unwind() collects it). err may be NULL. */
void proto_error_add_path(struct proto_error *err, const struct proto_path *unwound);

#endif
