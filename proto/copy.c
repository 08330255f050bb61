/*
 * Deep copy and deep equality of any proto struct, driven by the schema
 * descriptors. A copy is ONE malloc'd block (struct first, then its strings
 * and arrays), so free() releases it; daemons use it to keep a decoded
 * object (e.g. a replica's pod) beyond the decoder's next frame. Called by
 * replicas and tests; never allocates more than one block per copy.
 */
#include "config.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "proto/schema.h"

/* Two passes over the same code: first with base == NULL to measure. */
struct bump {
	char *base;
	size_t used;
};

static void *bump_take(struct bump *b, size_t n)
{
	void *p = b->base ? b->base + b->used : NULL;

	b->used += (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
	return p;
}

static char *copy_str(struct bump *b, const char *s)
{
	size_t n;
	char *p;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	p = bump_take(b, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

static void copy_struct(struct bump *b, const struct proto_struct_desc *sd, void *dst,
			const void *src);

static void copy_field(struct bump *b, const struct proto_field_desc *f, void *dst, const void *src)
{
	const void *sp = proto_field_ptr(f, src);
	void *dp = dst ? proto_field_ptr(f, dst) : NULL;
	uint32_t n = f->count_offset ? *proto_field_count(f, src) : 0;

	switch (f->kind) {
	case PROTO_KIND_STR: {
		char *s = copy_str(b, *(char *const *)sp);
		if (b->base)
			*(char **)dp = s;
		return;
	}
	case PROTO_KIND_STRS: {
		char *const *v = *(char *const *const *)sp;
		char **d = bump_take(b, (size_t)n * sizeof(char *));
		for (uint32_t i = 0; i < n; i++) {
			char *s = copy_str(b, v[i]);
			if (d)
				d[i] = s;
		}
		if (b->base)
			*(char ***)dp = n ? d : NULL;
		return;
	}
	case PROTO_KIND_KV: {
		const struct proto_kv *v = *(struct proto_kv *const *)sp;
		struct proto_kv *d = bump_take(b, (size_t)n * sizeof(*d));
		for (uint32_t i = 0; i < n; i++) {
			char *k = copy_str(b, v[i].key), *x = copy_str(b, v[i].value);
			if (d)
				d[i] = (struct proto_kv){ k, x };
		}
		if (b->base)
			*(struct proto_kv **)dp = n ? d : NULL;
		return;
	}
	case PROTO_KIND_RES: {
		const struct proto_resource *v = *(struct proto_resource *const *)sp;
		struct proto_resource *d = bump_take(b, (size_t)n * sizeof(*d));
		for (uint32_t i = 0; i < n; i++) {
			char *k = copy_str(b, v[i].name);
			if (d)
				d[i] = (struct proto_resource){ k, v[i].value };
		}
		if (b->base)
			*(struct proto_resource **)dp = n ? d : NULL;
		return;
	}
	case PROTO_KIND_OBJ:
		copy_struct(b, f->sub, dp, sp);
		return;
	case PROTO_KIND_OBJS: {
		const char *v = *(char *const *)sp;
		char *d = bump_take(b, (size_t)n * f->sub->size);
		for (uint32_t i = 0; i < n; i++)
			copy_struct(b, f->sub, d ? d + (size_t)i * f->sub->size : NULL,
				    v + (size_t)i * f->sub->size);
		if (b->base)
			*(char **)dp = n ? d : NULL;
		return;
	}
	case PROTO_KIND_OBJECT: {
		const struct proto_object *o = sp;
		const struct proto_struct_desc *osd;
		void *d;
		if (!o->ptr || o->kind >= proto_n_object_kinds)
			return;
		osd = proto_object_descs[o->kind];
		d = bump_take(b, osd->size);
		copy_struct(b, osd, d, o->ptr);
		if (b->base)
			((struct proto_object *)dp)->ptr = d;
		return;
	}
	default: /* scalars: copied with the struct */
		return;
	}
}

/* dst already holds a byte copy of src (or is NULL while measuring). */
static void copy_struct(struct bump *b, const struct proto_struct_desc *sd, void *dst,
			const void *src)
{
	if (dst)
		memcpy(dst, src, sd->size);
	for (uint32_t i = 0; i < sd->n_fields; i++)
		copy_field(b, &sd->fields[i], dst, src);
}

static void *dup_struct(const struct proto_struct_desc *sd, const void *src)
{
	struct bump b = { 0 };
	void *top;

	bump_take(&b, sd->size);
	copy_struct(&b, sd, NULL, src);
	b.base = malloc(b.used);
	if (!b.base)
		return NULL;
	b.used = 0;
	top = bump_take(&b, sd->size);
	copy_struct(&b, sd, top, src);
	return top;
}

#define DEFINE_DUP_(s)                                                        \
	struct proto_##s *proto_##s##_dup(const struct proto_##s *src)       \
	{                                                                     \
		return dup_struct(&proto_desc_##s, src);                      \
	}                                                                     \
	void proto_##s##_free(struct proto_##s *p)                            \
	{                                                                     \
		free(p);                                                      \
	}
PROTO_STRUCTS(DEFINE_DUP_)

int proto_object_dup(const struct proto_object *src, struct proto_object *dst)
{
	if (src->kind >= proto_n_object_kinds || !src->ptr)
		return -EINVAL;
	dst->kind = src->kind;
	dst->ptr = dup_struct(proto_object_descs[src->kind], src->ptr);
	return dst->ptr ? 0 : -ENOMEM;
}

void proto_object_free(struct proto_object *obj)
{
	free(obj->ptr);
	obj->ptr = NULL;
}

struct proto_msg *proto_msg_dup(const struct proto_msg *msg)
{
	const struct proto_struct_desc *body;
	struct bump b = { 0 };
	struct proto_msg *m;

	if (msg->env.type >= proto_n_msg_types)
		return NULL;
	body = proto_msg_descs[msg->env.type];
	bump_take(&b, sizeof(*m));
	copy_struct(&b, body, NULL, &msg->body);
	b.base = malloc(b.used);
	if (!b.base)
		return NULL;
	b.used = 0;
	m = bump_take(&b, sizeof(*m));
	*m = *msg;
	copy_struct(&b, body, &m->body, &msg->body);
	return m;
}

void proto_msg_free(struct proto_msg *msg)
{
	free(msg);
}

/* ---- equality (NULL string == absent; F64 compared bitwise) ---- */
static bool str_equal(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}



static bool field_equal(const struct proto_field_desc *f, const void *a, const void *b)
{
	const void *pa = proto_field_ptr(f, a), *pb = proto_field_ptr(f, b);
	uint32_t n = f->count_offset ? *proto_field_count(f, a) : 0;

	if (f->count_offset && n != *proto_field_count(f, b))
		return false;
	switch (f->kind) {
	case PROTO_KIND_BOOL:
		return *(const bool *)pa == *(const bool *)pb;
	case PROTO_KIND_U32:
	case PROTO_KIND_I32:
		return *(const uint32_t *)pa == *(const uint32_t *)pb;
	case PROTO_KIND_U64:
	case PROTO_KIND_I64:
	case PROTO_KIND_F64:
		return memcmp(pa, pb, 8) == 0;
	case PROTO_KIND_ENUM:
		return *(const uint8_t *)pa == *(const uint8_t *)pb;
	case PROTO_KIND_STR:
		return str_equal(*(char *const *)pa, *(char *const *)pb);
	case PROTO_KIND_STRS:
		for (uint32_t i = 0; i < n; i++)
			if (!str_equal((*(char *const *const *)pa)[i], (*(char *const *const *)pb)[i]))
				return false;
		return true;
	case PROTO_KIND_KV:
		for (uint32_t i = 0; i < n; i++) {
			const struct proto_kv *x = &(*(struct proto_kv *const *)pa)[i];
			const struct proto_kv *y = &(*(struct proto_kv *const *)pb)[i];
			if (!str_equal(x->key, y->key) || !str_equal(x->value, y->value))
				return false;
		}
		return true;
	case PROTO_KIND_RES:
		for (uint32_t i = 0; i < n; i++) {
			const struct proto_resource *x = &(*(struct proto_resource *const *)pa)[i];
			const struct proto_resource *y = &(*(struct proto_resource *const *)pb)[i];
			if (!str_equal(x->name, y->name) || x->value != y->value)
				return false;
		}
		return true;
	case PROTO_KIND_OBJ:
		return proto_struct_equal(f->sub, pa, pb);
	case PROTO_KIND_OBJS:
		for (uint32_t i = 0; i < n; i++)
			if (!proto_struct_equal(f->sub, *(char *const *)pa + (size_t)i * f->sub->size,
						*(char *const *)pb + (size_t)i * f->sub->size))
				return false;
		return true;
	case PROTO_KIND_OBJECT: {
		const struct proto_object *x = pa, *y = pb;
		if (x->kind != y->kind || !x->ptr || !y->ptr)
			return x->kind == y->kind && x->ptr == y->ptr;
		if (x->kind >= proto_n_object_kinds)
			return false;
		return proto_struct_equal(proto_object_descs[x->kind], x->ptr, y->ptr);
	}
	}
	return false;
}

bool proto_struct_equal(const struct proto_struct_desc *sd, const void *a, const void *b)
{
	for (uint32_t i = 0; i < sd->n_fields; i++)
		if (!field_equal(&sd->fields[i], a, b))
			return false;
	return true;
}

bool proto_msg_equal(const struct proto_msg *a, const struct proto_msg *b)
{
	if (!proto_struct_equal(&proto_desc_envelope, &a->env, &b->env))
		return false;
	if (a->env.type >= proto_n_msg_types)
		return false;
	return proto_struct_equal(proto_msg_descs[a->env.type], &a->body, &b->body);
}
