/*
 * Server-side printing for kubectl: when a GET, LIST or WATCH asks for
 * `application/json;as=Table;g=meta.k8s.io;v=v1`, objects are answered as a
 * meta.k8s.io/v1 Table: built-in kinds with the columns kube-apiserver
 * prints (sim/k8s-printers.c), custom resources with their CRD version's
 * additionalPrinterColumns (JSONPath .a.b, escaped dots as in
 * .metadata.labels.karpenter\.sh/nodepool, and .a[?(@.k=="v")].b; date
 * columns shown as ages, missing values as null cells, as upstream's CRD
 * table convertor), and Name/Age otherwise. Read-only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-api.h"
#include "sim/k8s-printers.h"

/* A JSONPath key longer than this cannot be a Kubernetes field or label key. */
#define TABLE_PATH_KEY_MAX 320

bool k8s_accepts_table(const char *accept)
{
	return accept && strstr(accept, "as=Table") && strstr(accept, "g=meta.k8s.io");
}

static const json_t *path_get(const json_t *obj, const char *path)
{
	return json_object_get(obj, path);
}

#define GET2(o, a, b) path_get(path_get((o), (a)), (b))

/* One key of a JSONPath: up to an unescaped '.' or '['; "\." is a dot. */
static const char *path_key(const char *p, char *key, size_t len)
{
	size_t n = 0;

	while (*p && *p != '.' && *p != '[') {
		if (p[0] == '\\' && p[1])
			p++;
		if (n + 1 >= len)
			return NULL;
		key[n++] = *p++;
	}
	key[n] = '\0';
	return p;
}

/* .a.b or .a[?(@.key=="value")].b over obj; NULL when absent. */
static const json_t *jsonpath_eval(const json_t *obj, const char *expr)
{
	const json_t *cur = obj;
	const char *p = expr;

	while (cur && *p == '.') {
		char key[TABLE_PATH_KEY_MAX], fkey[64], fval[128];

		p = path_key(p + 1, key, sizeof(key));
		if (!p)
			return NULL;
		cur = json_object_get(cur, key);
		if (*p == '[') {
			const json_t *e, *hit = NULL;
			size_t i;
			int used = 0;

			if (sscanf(p, "[?(@.%63[^=]==\"%127[^\"]\")]%n", fkey, fval, &used) != 2 || !used)
				return NULL;
			json_array_foreach(cur, i, e)
				if (!hit && streq_ptr(json_string_value(json_object_get(e, fkey)), fval))
					hit = e;
			cur = hit;
			p += used;
		}
	}
	return *p ? NULL : cur;
}

/* A CRD column's cell: null when absent, a date as its age, objects as JSON. */
static json_t *crd_cell(const json_t *v, const char *type)
{
	if (!v || json_is_null(v))
		return json_null();
	if (streq_ptr(type, "date") && json_is_string(v)) {
		char age[32];

		k8s_human_age(json_string_value(v), age, sizeof(age));
		return json_string(age);
	}
	if (json_is_object(v) || json_is_array(v)) {
		char *s = json_dumps(v, JSON_COMPACT);
		json_t *out = json_string(s ? s : "");

		free(s);
		return out;
	}
	return json_copy((json_t *)v);
}

static json_t *row_cells(const struct k8s_printer *printer, const json_t *obj,
			 const json_t *crd_columns)
{
	json_t *cells = json_array();
	const json_t *col;
	char age[32];
	size_t i;

	if (printer) {
		printer->cells(obj, cells);
		return cells;
	}
	json_array_append_new(cells, json_string(json_string_value(GET2(obj, "metadata", "name")) ?: ""));
	json_array_foreach(crd_columns, i, col) {
		const char *path = json_string_value(path_get(col, "jsonPath"));

		json_array_append_new(cells, crd_cell(path ? jsonpath_eval(obj, path) : NULL,
						      json_string_value(path_get(col, "type"))));
	}
	if (!crd_columns) {
		k8s_human_age(json_string_value(GET2(obj, "metadata", "creationTimestamp")), age,
			      sizeof(age));
		json_array_append_new(cells, json_string(age));
	}
	return cells;
}

/* The CRD version's additionalPrinterColumns, without Name (always first). */
static const json_t *printer_columns(const struct k8s_api *api, const struct k8s_resource *res)
{
	char name[512];
	const json_t *v;
	size_t i;

	if (!res->custom)
		return NULL;
	snprintf(name, sizeof(name), "%s.%s", res->plural, res->group);
	json_array_foreach(GET2(json_object_get(api->reg->crds, name), "spec", "versions"), i, v)
		if (streq_ptr(json_string_value(path_get(v, "name")), res->version))
			return path_get(v, "additionalPrinterColumns");
	return NULL;
}

static json_t *column(const char *name, const char *type, json_int_t priority)
{
	/* Upstream declares date columns as such; kubectl prints them as given. */
	return json_pack("{s:s, s:s, s:s, s:s, s:I}", "name", name, "type", type, "format",
			 streq(name, "Name") ? "name" : "", "description", name, "priority", priority);
}

static json_t *column_definitions(const struct k8s_printer *printer, const json_t *crd_columns)
{
	json_t *defs = json_array();
	const json_t *col;
	size_t i;

	if (printer) {
		for (i = 0; i < printer->n_columns; i++)
			json_array_append_new(defs, column(printer->columns[i].name,
							   printer->columns[i].type,
							   printer->columns[i].priority));
		return defs;
	}
	json_array_append_new(defs, column("Name", "string", 0));
	json_array_foreach(crd_columns, i, col)
		json_array_append_new(defs, column(json_string_value(path_get(col, "name")) ?: "",
						   json_string_value(path_get(col, "type")) ?: "string",
						   json_integer_value(path_get(col, "priority"))));
	if (!crd_columns)
		json_array_append_new(defs, column("Age", "date", 0));
	return defs;
}

json_t *k8s_table_new(const struct k8s_api *api, const struct k8s_resource *res,
		      const json_t *items, const json_t *list_meta)
{
	const struct k8s_printer *printer = k8s_printer_find(res);
	const json_t *crd_columns = printer ? NULL : printer_columns(api, res), *obj;
	json_t *rows = json_array();
	size_t i;

	json_array_foreach(items, i, obj)
		json_array_append_new(rows, json_pack("{s:o, s:{s:s, s:s, s:O}}", "cells",
			row_cells(printer, obj, crd_columns), "object", "kind",
			"PartialObjectMetadata", "apiVersion", "meta.k8s.io/v1", "metadata",
			path_get(obj, "metadata")));
	return json_pack("{s:s, s:s, s:o, s:o, s:o}", "kind", "Table", "apiVersion",
			 "meta.k8s.io/v1", "metadata",
			 list_meta ? json_deep_copy(list_meta) : json_object(),
			 "columnDefinitions", column_definitions(printer, crd_columns), "rows", rows);
}
