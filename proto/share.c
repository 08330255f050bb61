/*
 * Copies of cluster-state objects for the state stores, where 100,000 pods
 * live at once (see proto_object_dup_shared() in proto.h). An object's
 * block holds its struct and the strings that tell it apart (name, uid,
 * resource_version); every other string (namespace, node name, reasons…)
 * and every array (labels, requests, tolerations…) is one shared value,
 * counted by reference, in a table that all objects of a store use. A
 * cluster's pods repeat those values: the watcher bench's 100,000 pods
 * hold 4 namespaces, 100 label sets, one request list and 5,000 node
 * names. Shared values are read-only; the table is not thread-safe.
 */
#include "config.h"

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "proto/schema.h"

/* Arrays hold pointers and 64-bit integers: this alignment suits all. */
#define SHARE_ALIGN alignof(int64_t)
#define SHARE_MIN_CAP 64

/* One shared value: a string, or an array of kind/sub with its contents. */
struct shared {
	uint32_t refs;
	uint32_t hash;
	uint32_t n;  /* array entries (strings: 0) */
	uint8_t kind; /* PROTO_KIND_STR, _STRS, _KV, _RES, _OBJS */
	const struct proto_struct_desc *sub;
	alignas(SHARE_ALIGN) char data[];
};

struct proto_share {
	unsigned refs;
	struct shared **slots; /* open addressing, linear probing */
	size_t cap, n;
};

/* ---- packing: two passes, measure (base NULL) then copy ----------------- */

struct pack {
	char *base;
	size_t used;
};

static void *pack_take(struct pack *p, size_t n, size_t align)
{
	void *r;

	p->used = (p->used + align - 1) & ~(align - 1);
	r = p->base ? p->base + p->used : NULL;
	p->used += n;
	return r;
}

static char *pack_str(struct pack *p, const char *s)
{
	size_t n;
	char *d;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	d = pack_take(p, n, 1);
	if (d)
		memcpy(d, s, n);
	return d;
}

static void pack_struct(struct pack *p, const struct proto_struct_desc *sd, void *dst,
			const void *src);

/* The elements of an array field and everything they point to. */
static void *pack_array(struct pack *p, uint8_t kind, const struct proto_struct_desc *sub,
			const void *v, uint32_t n)
{
	size_t elem = kind == PROTO_KIND_STRS ? sizeof(char *) :
		      kind == PROTO_KIND_KV ? sizeof(struct proto_kv) :
		      kind == PROTO_KIND_RES ? sizeof(struct proto_resource) : sub->size;
	char *d = pack_take(p, (size_t)n * elem, SHARE_ALIGN);

	if (d && n)
		memcpy(d, v, (size_t)n * elem);
	for (uint32_t i = 0; i < n; i++) {
		switch (kind) {
		case PROTO_KIND_STRS: {
			char *s = pack_str(p, ((char *const *)v)[i]);
			if (d)
				((char **)d)[i] = s;
			break;
		}
		case PROTO_KIND_KV: {
			const struct proto_kv *kv = &((const struct proto_kv *)v)[i];
			char *k = pack_str(p, kv->key), *x = pack_str(p, kv->value);
			if (d)
				((struct proto_kv *)d)[i] = (struct proto_kv){ k, x };
			break;
		}
		case PROTO_KIND_RES: {
			char *k = pack_str(p, ((const struct proto_resource *)v)[i].name);
			if (d)
				((struct proto_resource *)d)[i].name = k;
			break;
		}
		default:
			pack_struct(p, sub, d ? d + i * elem : NULL, (const char *)v + i * elem);
		}
	}
	return n ? d : NULL;
}

static void pack_field(struct pack *p, const struct proto_field_desc *f, void *dst, const void *src)
{
	const void *sp = proto_field_ptr(f, src);
	void *dp = dst ? proto_field_ptr(f, dst) : NULL;
	void *d;

	switch (f->kind) {
	case PROTO_KIND_STR:
		d = pack_str(p, *(char *const *)sp);
		break;
	case PROTO_KIND_STRS:
	case PROTO_KIND_KV:
	case PROTO_KIND_RES:
	case PROTO_KIND_OBJS:
		d = pack_array(p, f->kind, f->sub, *(void *const *)sp, *proto_field_count(f, src));
		break;
	case PROTO_KIND_OBJ:
		pack_struct(p, f->sub, dp, sp);
		return;
	default: /* scalars come with the struct; OBJECT is not in objects */
		return;
	}
	if (dp)
		*(void **)dp = d;
}

/* dst already holds a byte copy of src (or is NULL while measuring). */
static void pack_struct(struct pack *p, const struct proto_struct_desc *sd, void *dst,
			const void *src)
{
	for (uint32_t i = 0; i < sd->n_fields; i++)
		pack_field(p, &sd->fields[i], dst, src);
}

/* ---- hashing and equality of values -------------------------------------- */

static uint32_t mix(uint32_t h, const void *data, size_t n)
{
	const unsigned char *b = data;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static uint32_t mix_str(uint32_t h, const char *s)
{
	/* NULL and "" differ, as they do for proto_struct_equal(). */
	return s ? mix(h, s, strlen(s) + 1) : mix(h, "\xff", 1);
}

static uint32_t hash_struct(uint32_t h, const struct proto_struct_desc *sd, const void *s);

static uint32_t hash_array(uint32_t h, uint8_t kind, const struct proto_struct_desc *sub,
			   const void *v, uint32_t n)
{
	h = mix(h, &kind, 1);
	h = mix(h, &n, sizeof(n));
	for (uint32_t i = 0; i < n; i++) {
		switch (kind) {
		case PROTO_KIND_STRS:
			h = mix_str(h, ((char *const *)v)[i]);
			break;
		case PROTO_KIND_KV:
			h = mix_str(h, ((const struct proto_kv *)v)[i].key);
			h = mix_str(h, ((const struct proto_kv *)v)[i].value);
			break;
		case PROTO_KIND_RES:
			h = mix_str(h, ((const struct proto_resource *)v)[i].name);
			h = mix(h, &((const struct proto_resource *)v)[i].value, sizeof(int64_t));
			break;
		default:
			h = hash_struct(h, sub, (const char *)v + (size_t)i * sub->size);
		}
	}
	return h;
}

static uint32_t hash_struct(uint32_t h, const struct proto_struct_desc *sd, const void *s)
{
	for (uint32_t i = 0; i < sd->n_fields; i++) {
		const struct proto_field_desc *f = &sd->fields[i];
		const void *p = proto_field_ptr(f, s);

		switch (f->kind) {
		case PROTO_KIND_BOOL:
		case PROTO_KIND_ENUM:
			h = mix(h, p, 1);
			break;
		case PROTO_KIND_U32:
		case PROTO_KIND_I32:
			h = mix(h, p, 4);
			break;
		case PROTO_KIND_U64:
		case PROTO_KIND_I64:
		case PROTO_KIND_F64:
			h = mix(h, p, 8);
			break;
		case PROTO_KIND_STR:
			h = mix_str(h, *(char *const *)p);
			break;
		case PROTO_KIND_OBJ:
			h = hash_struct(h, f->sub, p);
			break;
		case PROTO_KIND_OBJECT:
			break;
		default:
			h = hash_array(h, f->kind, f->sub, *(void *const *)p, *proto_field_count(f, s));
		}
	}
	return h;
}

static bool str_eq(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

static bool array_equal(uint8_t kind, const struct proto_struct_desc *sub, const void *a,
			const void *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		switch (kind) {
		case PROTO_KIND_STRS:
			if (!str_eq(((char *const *)a)[i], ((char *const *)b)[i]))
				return false;
			break;
		case PROTO_KIND_KV: {
			const struct proto_kv *x = &((const struct proto_kv *)a)[i];
			const struct proto_kv *y = &((const struct proto_kv *)b)[i];
			if (!str_eq(x->key, y->key) || !str_eq(x->value, y->value))
				return false;
			break;
		}
		case PROTO_KIND_RES: {
			const struct proto_resource *x = &((const struct proto_resource *)a)[i];
			const struct proto_resource *y = &((const struct proto_resource *)b)[i];
			if (x->value != y->value || !str_eq(x->name, y->name))
				return false;
			break;
		}
		default:
			if (!proto_struct_equal(sub, (const char *)a + (size_t)i * sub->size,
						(const char *)b + (size_t)i * sub->size))
				return false;
		}
	}
	return true;
}

/* ---- the table ------------------------------------------------------------ */

static int share_grow(struct proto_share *sh)
{
	size_t cap = sh->cap ? sh->cap * 2 : SHARE_MIN_CAP;
	struct shared **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < sh->cap; i++) {
		struct shared *v = sh->slots[i];
		size_t j;
		if (!v)
			continue;
		for (j = v->hash & (cap - 1); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = v;
	}
	free(sh->slots);
	sh->slots = slots;
	sh->cap = cap;
	return 0;
}

/* Removes v's slot, shifting back the entries that probed past it. */
static void share_remove(struct proto_share *sh, struct shared *v)
{
	size_t mask = sh->cap - 1, i = v->hash & mask, j, k;

	while (sh->slots[i] != v)
		i = (i + 1) & mask;
	for (j = i;;) {
		sh->slots[i] = NULL;
		for (;;) {
			j = (j + 1) & mask;
			if (!sh->slots[j])
				goto done;
			k = sh->slots[j]->hash & mask;
			/* Stays unless its home lies cyclically in (i, j]. */
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		sh->slots[i] = sh->slots[j];
		i = j;
	}
done:
	sh->n--;
}

static void release(struct proto_share *sh, const void *data)
{
	struct shared *v;

	if (!data)
		return;
	v = (struct shared *)((char *)data - offsetof(struct shared, data));
	if (--v->refs > 0)
		return;
	share_remove(sh, v);
	free(v);
}

/* The shared copy of a string (kind STR, v the string) or of an array. */
static const void *acquire(struct proto_share *sh, uint8_t kind,
			   const struct proto_struct_desc *sub, const void *v, uint32_t n)
{
	uint32_t h = kind == PROTO_KIND_STR ? mix_str(2166136261u, v) :
					       hash_array(2166136261u, kind, sub, v, n);
	struct pack p = { 0 };
	struct shared *s;
	size_t j;

	for (j = sh->cap ? h & (sh->cap - 1) : 0; sh->cap && (s = sh->slots[j]);
	     j = (j + 1) & (sh->cap - 1)) {
		if (s->hash != h || s->kind != kind || s->sub != sub || s->n != n)
			continue;
		if (kind == PROTO_KIND_STR ? strcmp(s->data, v) == 0 :
					     array_equal(kind, sub, s->data, v, n)) {
			s->refs++;
			return s->data;
		}
	}
	if ((sh->n + 1) * 10 >= sh->cap * 7 && share_grow(sh) < 0)
		return NULL;
	if (kind == PROTO_KIND_STR)
		pack_str(&p, v);
	else
		pack_array(&p, kind, sub, v, n);
	s = malloc(sizeof(*s) + p.used);
	if (!s)
		return NULL;
	*s = (struct shared){ .refs = 1, .hash = h, .n = n, .kind = kind, .sub = sub };
	p = (struct pack){ .base = s->data };
	if (kind == PROTO_KIND_STR)
		pack_str(&p, v);
	else
		pack_array(&p, kind, sub, v, n);
	for (j = h & (sh->cap - 1); sh->slots[j]; j = (j + 1) & (sh->cap - 1))
		;
	sh->slots[j] = s;
	sh->n++;
	return s->data;
}

/* ---- objects ----------------------------------------------------------------- */

/* Strings that tell objects apart are kept in the object's own block. */
static bool field_is_own(const struct proto_field_desc *f)
{
	return f->kind == PROTO_KIND_STR &&
	       (streq(f->name, "name") || streq(f->name, "uid") || streq(f->name, "resource_version"));
}

static bool field_is_shared(const struct proto_field_desc *f)
{
	switch (f->kind) {
	case PROTO_KIND_STR:
		return !field_is_own(f);
	case PROTO_KIND_STRS:
	case PROTO_KIND_KV:
	case PROTO_KIND_RES:
	case PROTO_KIND_OBJS:
		return true;
	default:
		return false;
	}
}

/* Releases the shared values of fields [0, upto) of an object copy. */
static void release_fields(struct proto_share *sh, const struct proto_struct_desc *sd,
			   const void *obj, uint32_t upto)
{
	for (uint32_t i = 0; i < upto; i++)
		if (field_is_shared(&sd->fields[i]))
			release(sh, *(void *const *)proto_field_ptr(&sd->fields[i], obj));
}

int proto_share_new(struct proto_share **ret)
{
	struct proto_share *sh = calloc(1, sizeof(*sh));

	if (!sh)
		return -ENOMEM;
	sh->refs = 1;
	*ret = sh;
	return 0;
}

struct proto_share *proto_share_ref(struct proto_share *sh)
{
	if (sh)
		sh->refs++;
	return sh;
}

struct proto_share *proto_share_unref(struct proto_share *sh)
{
	if (!sh || --sh->refs > 0)
		return NULL;
	/* Objects release their values before the table goes: any left are
	 * a caller's leak, freed here all the same. */
	for (size_t i = 0; i < sh->cap; i++)
		free(sh->slots[i]);
	free(sh->slots);
	free(sh);
	return NULL;
}

size_t proto_share_count(const struct proto_share *sh)
{
	return sh ? sh->n : 0;
}

int proto_object_dup_shared(struct proto_share *sh, const struct proto_object *src, size_t header,
			    void **block, struct proto_object *dst)
{
	const struct proto_struct_desc *sd;
	struct pack p = { 0 };
	char *obj;
	uint32_t i;

	if (src->kind >= proto_n_object_kinds || !src->ptr)
		return -EINVAL;
	sd = proto_object_descs[src->kind];
	/* Measure: header, struct, then the object's own strings and the
	 * contents of its embedded structs. */
	pack_take(&p, header, SHARE_ALIGN);
	pack_take(&p, sd->size, SHARE_ALIGN);
	for (i = 0; i < sd->n_fields; i++)
		if (!field_is_shared(&sd->fields[i]))
			pack_field(&p, &sd->fields[i], NULL, src->ptr);
	*block = malloc(p.used);
	if (!*block)
		return -ENOMEM;
	p = (struct pack){ .base = *block };
	pack_take(&p, header, SHARE_ALIGN);
	obj = pack_take(&p, sd->size, SHARE_ALIGN);
	memcpy(obj, src->ptr, sd->size);
	for (i = 0; i < sd->n_fields; i++) {
		const struct proto_field_desc *f = &sd->fields[i];
		void *dp = proto_field_ptr(f, obj);
		const void *v;

		if (!field_is_shared(f)) {
			pack_field(&p, f, obj, src->ptr);
			continue;
		}
		v = *(void *const *)proto_field_ptr(f, src->ptr);
		if (f->kind != PROTO_KIND_STR && *proto_field_count(f, src->ptr) == 0)
			v = NULL;
		if (v && !(v = acquire(sh, f->kind, f->kind == PROTO_KIND_STR ? NULL : f->sub, v,
					f->kind == PROTO_KIND_STR ? 0 : *proto_field_count(f, src->ptr)))) {
			release_fields(sh, sd, obj, i);
			free(*block);
			*block = NULL;
			return -ENOMEM;
		}
		*(const void **)dp = v;
	}
	dst->kind = src->kind;
	dst->ptr = obj;
	return 0;
}

void proto_object_free_shared(struct proto_share *sh, void *block, const struct proto_object *obj)
{
	if (!block)
		return;
	if (obj->kind < proto_n_object_kinds && obj->ptr)
		release_fields(sh, proto_object_descs[obj->kind], obj->ptr,
			       proto_object_descs[obj->kind]->n_fields);
	free(block);
}
