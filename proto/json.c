/*
 * proto_to_json(): renders any message as a jansson object for kanna-tap and
 * debug logs, driven by the schema descriptors (field names, enum names).
 * Fields left off the wire (defaults) are left out here too. Never fails
 * on odd bytes: strings that are not UTF-8 are shown with '?' for bad bytes.
 */
#include "config.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "proto/schema.h"

static json_t *json_from_str(const char *s)
{
	json_t *j = json_string(s);
	char *copy;

	if (j)
		return j;
	/* Not UTF-8: keep ASCII, mark the rest. */
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

static json_t *struct_to_json(const struct proto_struct_desc *sd, const void *s, json_t *into);

static json_t *objs_to_json(const struct proto_field_desc *f, const void *s)
{
	const char *v = *(char *const *)proto_field_ptr(f, s);
	uint32_t n = *proto_field_count(f, s);
	json_t *a = json_array();

	for (uint32_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, struct_to_json(f->sub, v + (size_t)i * f->sub->size, NULL)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *field_to_json(const struct proto_field_desc *f, const void *s)
{
	const void *p = proto_field_ptr(f, s);
	uint32_t n = f->count_offset ? *proto_field_count(f, s) : 0;
	json_t *j = NULL;

	switch (f->kind) {
	case PROTO_KIND_BOOL:
		return json_boolean(*(const bool *)p);
	case PROTO_KIND_U32:
		return json_integer(*(const uint32_t *)p);
	case PROTO_KIND_U64: {
		uint64_t v = *(const uint64_t *)p;
		return v <= INT64_MAX ? json_integer((json_int_t)v) : json_real((double)v);
	}
	case PROTO_KIND_I32:
		return json_integer(*(const int32_t *)p);
	case PROTO_KIND_I64:
		return json_integer(*(const int64_t *)p);
	case PROTO_KIND_F64:
		return json_real(*(const double *)p); /* NaN/Inf: NULL, field left out */
	case PROTO_KIND_ENUM: {
		uint8_t v = *(const uint8_t *)p;
		return v < f->enumd->n_values ? json_string(f->enumd->values[v]) : json_integer(v);
	}
	case PROTO_KIND_STR:
		return *(char *const *)p ? json_from_str(*(char *const *)p) : json_null();
	case PROTO_KIND_STRS:
		j = json_array();
		for (uint32_t i = 0; j && i < n; i++)
			json_array_append_new(j, json_from_str((*(char *const *const *)p)[i]));
		return j;
	case PROTO_KIND_KV:
		j = json_object();
		for (uint32_t i = 0; j && i < n; i++) {
			const struct proto_kv *kv = &(*(struct proto_kv *const *)p)[i];
			json_object_set_new(j, kv->key, json_from_str(kv->value));
		}
		return j;
	case PROTO_KIND_RES:
		j = json_object();
		for (uint32_t i = 0; j && i < n; i++) {
			const struct proto_resource *r = &(*(struct proto_resource *const *)p)[i];
			json_object_set_new(j, r->name, json_integer(r->value));
		}
		return j;
	case PROTO_KIND_OBJ:
		return struct_to_json(f->sub, p, NULL);
	case PROTO_KIND_OBJS:
		return objs_to_json(f, s);
	case PROTO_KIND_OBJECT: {
		const struct proto_object *o = p;
		if (!o->ptr || o->kind >= proto_n_object_kinds)
			return json_null();
		return json_pack("{s:s, s:o}", "kind", proto_object_kind_name(o->kind), "object",
				 struct_to_json(proto_object_descs[o->kind], o->ptr, NULL));
	}
	}
	return NULL;
}

/* Adds the non-default fields of s to into (a new object when NULL). */
static json_t *struct_to_json(const struct proto_struct_desc *sd, const void *s, json_t *into)
{
	json_t *o = into ? into : json_object();

	if (!o)
		return NULL;
	for (uint32_t i = 0; i < sd->n_fields; i++) {
		const struct proto_field_desc *f = &sd->fields[i];
		json_t *v;

		if (!f->required && proto_field_is_default(f, s))
			continue;
		v = field_to_json(f, s);
		if (v && json_object_set_new(o, f->name, v) < 0) {
			if (!into)
				json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *proto_to_json(const struct proto_msg *msg)
{
	char version[16];
	json_t *o;

	if (msg->env.type >= proto_n_msg_types)
		return NULL;
	snprintf(version, sizeof(version), "%u.%u", msg->version_major, msg->version_minor);
	o = json_pack("{s:s}", "version", version);
	if (!o || !struct_to_json(&proto_desc_envelope, &msg->env, o) ||
	    json_object_set_new(o, "body", struct_to_json(proto_msg_descs[msg->env.type], &msg->body, NULL)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}
