/*
 * The random message generator of proto/random.h. Walks the schema like
 * the codec does, so a new field is exercised by every round-trip test the
 * moment it is declared. Test/bench support only; daemons never call it.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "proto/random.h"
#include "proto/schema.h"

struct gen {
	struct proto_rng *rng;
	struct arena *a;
	uint32_t breadth;
};

static uint64_t rnd(struct gen *g, uint64_t n)
{
	return n ? proto_rng_next(g->rng) % n : 0;
}

/* Sizes: mostly small, sometimes exactly the limit, to hit the edges. */
static uint32_t pick_count(struct gen *g, uint32_t max)
{
	if (max <= 64 && rnd(g, 64) == 0)
		return max;
	return (uint32_t)rnd(g, MIN(max, g->breadth) + 1);
}

static char *random_str(struct gen *g, uint32_t max)
{
	uint32_t n = rnd(g, 32) == 0 ? max : (uint32_t)rnd(g, MIN(max, g->breadth * 8) + 1);
	char *s = arena_alloc_raw(g->a, (size_t)n + 1);

	if (!s)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		s[i] = rnd(g, 4) ? (char)('a' + rnd(g, 26)) : (char)(1 + rnd(g, 255));
	s[n] = '\0';
	return s;
}

static int64_t random_int(struct gen *g, int64_t lo, int64_t hi)
{
	switch (rnd(g, 8)) {
	case 0: return lo;
	case 1: return hi;
	case 2: return 0;
	case 3: return (int64_t)rnd(g, 100);
	default: return (int64_t)((uint64_t)lo + rnd(g, (uint64_t)hi - (uint64_t)lo));
	}
}

static int random_struct(struct gen *g, const struct proto_struct_desc *sd, void *s);

static int random_array(struct gen *g, const struct proto_field_desc *f, void *s)
{
	uint32_t n = pick_count(g, f->max);
	size_t size = f->kind == PROTO_KIND_STRS ? sizeof(char *) :
		      f->kind == PROTO_KIND_KV ? sizeof(struct proto_kv) :
		      f->kind == PROTO_KIND_RES ? sizeof(struct proto_resource) : f->sub->size;
	char *v = arena_alloc(g->a, (size_t)n * size);

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		void *e = v + (size_t)i * size;
		switch (f->kind) {
		case PROTO_KIND_STRS:
			if (!(*(char **)e = random_str(g, f->elem_len)))
				return -ENOMEM;
			break;
		case PROTO_KIND_KV:
			((struct proto_kv *)e)->key = random_str(g, PROTO_MAX_KEY_LEN);
			((struct proto_kv *)e)->value = random_str(g, f->elem_len);
			if (!((struct proto_kv *)e)->key || !((struct proto_kv *)e)->value)
				return -ENOMEM;
			break;
		case PROTO_KIND_RES:
			((struct proto_resource *)e)->name = random_str(g, PROTO_MAX_KEY_LEN);
			((struct proto_resource *)e)->value = random_int(g, INT64_MIN, INT64_MAX);
			if (!((struct proto_resource *)e)->name)
				return -ENOMEM;
			break;
		default:
			if (random_struct(g, f->sub, e) < 0)
				return -ENOMEM;
		}
	}
	*(void **)proto_field_ptr(f, s) = v;
	*proto_field_count(f, s) = n;
	return 0;
}

static int random_field(struct gen *g, const struct proto_field_desc *f, void *s)
{
	void *p = proto_field_ptr(f, s);

	switch (f->kind) {
	case PROTO_KIND_BOOL:
		*(bool *)p = rnd(g, 2);
		return 0;
	case PROTO_KIND_U32:
		*(uint32_t *)p = (uint32_t)random_int(g, 0, UINT32_MAX);
		return 0;
	case PROTO_KIND_U64:
		*(uint64_t *)p = rnd(g, 4) ? proto_rng_next(g->rng) : rnd(g, 1000);
		return 0;
	case PROTO_KIND_I32:
		*(int32_t *)p = (int32_t)random_int(g, INT32_MIN, INT32_MAX);
		return 0;
	case PROTO_KIND_I64:
		*(int64_t *)p = random_int(g, INT64_MIN, INT64_MAX);
		return 0;
	case PROTO_KIND_F64:
		*(double *)p = rnd(g, 4) ? (double)random_int(g, -1000000, 1000000) / 997.0 : 0.0;
		return 0;
	case PROTO_KIND_ENUM:
		*(uint8_t *)p = (uint8_t)rnd(g, f->enumd->n_values);
		return 0;
	case PROTO_KIND_STR:
		if (!f->required && rnd(g, 3) == 0)
			return 0; /* absent */
		*(char **)p = random_str(g, f->max);
		return *(char **)p ? 0 : -ENOMEM;
	case PROTO_KIND_STRS:
	case PROTO_KIND_KV:
	case PROTO_KIND_RES:
	case PROTO_KIND_OBJS:
		return random_array(g, f, s);
	case PROTO_KIND_OBJ:
		if (!f->required && rnd(g, 3) == 0)
			return 0;
		return random_struct(g, f->sub, p);
	case PROTO_KIND_OBJECT: {
		struct proto_object *o = p;
		o->kind = (uint8_t)rnd(g, proto_n_object_kinds);
		o->ptr = arena_alloc(g->a, proto_object_descs[o->kind]->size);
		if (!o->ptr)
			return -ENOMEM;
		return random_struct(g, proto_object_descs[o->kind], o->ptr);
	}
	}
	return -EINVAL;
}

static int random_struct(struct gen *g, const struct proto_struct_desc *sd, void *s)
{
	for (uint32_t i = 0; i < sd->n_fields; i++) {
		int r = random_field(g, &sd->fields[i], s);
		if (r < 0)
			return r;
	}
	return 0;
}

int proto_random_msg(struct proto_rng *rng, struct arena *a, enum proto_msg_type type,
		     uint32_t breadth, struct proto_msg *out)
{
	struct gen g = { .rng = rng, .a = a, .breadth = breadth };
	int r;

	if ((unsigned)type >= proto_n_msg_types)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->version_major = PROTO_VERSION_MAJOR;
	out->version_minor = PROTO_VERSION_MINOR;
	r = random_struct(&g, &proto_desc_envelope, &out->env);
	if (r < 0)
		return r;
	out->env.type = (uint8_t)type;
	return random_struct(&g, proto_msg_descs[type], &out->body);
}
