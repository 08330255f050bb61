/*
 * Writes the wire-format field tables of proto/README.md from the schema
 * descriptors (proto_schema_markdown), so the documentation is generated
 * from the same declaration as the codec; test_proto fails when README.md
 * is stale. Called by proto/proto-gen and the tests only.
 */
#include "config.h"

#include <stdio.h>

#include "proto/schema.h"

static void limit_text(const struct proto_field_desc *f, char *buf, size_t size)
{
	switch (f->kind) {
	case PROTO_KIND_STR:
		snprintf(buf, size, "≤ %u bytes", f->max);
		break;
	case PROTO_KIND_STRS:
		snprintf(buf, size, "≤ %u × ≤ %u bytes", f->max, f->elem_len);
		break;
	case PROTO_KIND_KV:
		snprintf(buf, size, "≤ %u entries, key ≤ %u, value ≤ %u bytes", f->max,
			 PROTO_MAX_KEY_LEN, f->elem_len);
		break;
	case PROTO_KIND_RES:
		snprintf(buf, size, "≤ %u entries, key ≤ %u bytes", f->max, PROTO_MAX_KEY_LEN);
		break;
	case PROTO_KIND_OBJS:
		snprintf(buf, size, "≤ %u", f->max);
		break;
	default:
		buf[0] = '\0';
	}
}

static void type_text(const struct proto_field_desc *f, char *buf, size_t size)
{
	switch (f->kind) {
	case PROTO_KIND_ENUM:
		snprintf(buf, size, "enum `%s`", f->enumd->name);
		break;
	case PROTO_KIND_OBJ:
		snprintf(buf, size, "`%s`", f->sub->name);
		break;
	case PROTO_KIND_OBJS:
		snprintf(buf, size, "array of `%s`", f->sub->name);
		break;
	case PROTO_KIND_OBJECT:
		snprintf(buf, size, "[object_kind, map]");
		break;
	default:
		snprintf(buf, size, "%s", proto_kind_name(f->kind));
	}
}

void proto_schema_markdown(FILE *out)
{
	fprintf(out, "### Messages (envelope.type)\n\n| value | message |\n|---|---|\n");
	for (unsigned i = 0; i < proto_n_msg_types; i++)
		fprintf(out, "| %u | `%s` |\n", i, proto_type_name(i));
	fprintf(out, "\n### Object kinds (state_delta, snapshot_item)\n\n| value | object |\n|---|---|\n");
	for (unsigned i = 0; i < proto_n_object_kinds; i++)
		fprintf(out, "| %u | `%s` |\n", i, proto_object_kind_name(i));
	fprintf(out, "\n### Structs\n");
	for (unsigned i = 0; i < proto_n_structs; i++) {
		const struct proto_struct_desc *sd = proto_all_structs[i];

		fprintf(out, "\n#### `%s`\n\n| id | field | type | limit | required |\n|---|---|---|---|---|\n",
			sd->name);
		for (unsigned j = 0; j < sd->n_fields; j++) {
			const struct proto_field_desc *f = &sd->fields[j];
			char type[64], limit[96];

			type_text(f, type, sizeof(type));
			limit_text(f, limit, sizeof(limit));
			fprintf(out, "| %u | `%s` | %s | %s | %s |\n", f->id, f->name, type, limit,
				f->required ? "yes" : "");
		}
	}
	fprintf(out, "\n### Enums\n\n| enum | values (0, 1, …) |\n|---|---|\n");
	for (unsigned i = 0; i < proto_n_enums; i++) {
		const struct proto_enum_desc *e = proto_all_enums[i];

		fprintf(out, "| `%s` |", e->name);
		for (unsigned v = 0; v < e->n_values; v++)
			fprintf(out, "%s %u `%s`", v ? "," : "", v, e->values[v][0] ? e->values[v] : "(empty)");
		fprintf(out, " |\n");
	}
}
