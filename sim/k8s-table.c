/*
 * Server-side printing for kubectl: when a GET, LIST or WATCH asks for
 * `application/json;as=Table;g=meta.k8s.io;v=v1`, objects are answered as a
 * meta.k8s.io/v1 Table with the columns kube-apiserver prints for pods,
 * nodes, deployments and events, the additionalPrinterColumns of a CRD (simple
 * JSONPath: .a.b and .a[?(@.k=="v")].b), and Name/Age otherwise. Read-only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "sim/k8s-api.h"

bool k8s_accepts_table(const char *accept)
{
	return accept && strstr(accept, "as=Table") && strstr(accept, "g=meta.k8s.io");
}

/* kubectl's duration.HumanDuration. */
static void human_age(const char *timestamp, char *buf, size_t len)
{
	struct tm tm = {};
	long s, m, h, d;

	if (!timestamp || !strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
		snprintf(buf, len, "<unknown>");
		return;
	}
	s = (long)difftime(time(NULL), timegm(&tm));
	s = s < 0 ? 0 : s;
	m = s / 60, h = s / 3600, d = s / 86400;
	if (s < 120)
		snprintf(buf, len, "%lds", s);
	else if (m < 10)
		snprintf(buf, len, "%ldm%lds", m, s % 60);
	else if (m < 180)
		snprintf(buf, len, "%ldm", m);
	else if (h < 8)
		snprintf(buf, len, "%ldh%ldm", h, m % 60);
	else if (h < 48)
		snprintf(buf, len, "%ldh", h);
	else if (h < 192)
		snprintf(buf, len, "%ldd%ldh", d, h % 24);
	else
		snprintf(buf, len, "%ldd", d);
}

static const json_t *path_get(const json_t *obj, const char *path)
{
	return json_object_get(obj, path);
}

#define GET2(o, a, b) path_get(path_get((o), (a)), (b))

/* .a.b or .a[?(@.key=="value")].b over obj; NULL when absent. */
static const json_t *jsonpath_eval(const json_t *obj, const char *expr)
{
	const json_t *cur = obj;
	const char *p = expr;

	while (cur && *p == '.') {
		char key[128], fkey[64], fval[128];
		size_t n = strcspn(++p, ".[");

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		cur = json_object_get(cur, key);
		p += n;
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

static json_t *cell_of(const json_t *v)
{
	if (!v || json_is_null(v))
		return json_string("");
	if (json_is_object(v) || json_is_array(v)) {
		char *s = json_dumps(v, JSON_COMPACT);
		json_t *out = json_string(s ? s : "");

		free(s);
		return out;
	}
	return json_copy((json_t *)v);
}

struct column {
	const char *name, *type, *path;
	int priority;
};

static const struct column pod_columns[] = {
	{ "Name", "string", NULL, 0 }, { "Ready", "string", NULL, 0 },
	{ "Status", "string", NULL, 0 }, { "Restarts", "string", NULL, 0 },
	{ "Age", "string", NULL, 0 }, { "IP", "string", ".status.podIP", 1 },
	{ "Node", "string", ".spec.nodeName", 1 },
};
static const struct column node_columns[] = {
	{ "Name", "string", NULL, 0 }, { "Status", "string", NULL, 0 },
	{ "Roles", "string", NULL, 0 }, { "Age", "string", NULL, 0 },
	{ "Version", "string", ".status.nodeInfo.kubeletVersion", 0 },
	{ "Instance-Type", "string", NULL, 1 }, { "Zone", "string", NULL, 1 },
};
static const struct column deployment_columns[] = {
	{ "Name", "string", NULL, 0 }, { "Ready", "string", NULL, 0 },
	{ "Up-to-date", "integer", ".status.updatedReplicas", 0 },
	{ "Available", "integer", ".status.availableReplicas", 0 },
	{ "Age", "string", NULL, 0 },
};
/* Upstream's Event printer: the name comes last, not first. */
static const struct column event_columns[] = {
	{ "Last Seen", "string", NULL, 0 }, { "Type", "string", ".type", 0 },
	{ "Reason", "string", ".reason", 0 }, { "Object", "string", NULL, 0 },
	{ "Subobject", "string", ".involvedObject.fieldPath", 1 },
	{ "Source", "string", NULL, 1 }, { "Message", "string", ".message", 0 },
	{ "First Seen", "string", NULL, 1 }, { "Count", "integer", ".count", 1 },
	{ "Name", "string", ".metadata.name", 1 },
};
static const struct column default_columns[] = {
	{ "Name", "string", NULL, 0 }, { "Age", "string", NULL, 0 },
};

static void pod_cells(const json_t *pod, json_t *cells)
{
	const json_t *spec = path_get(pod, "spec"), *st;
	size_t total = json_array_size(path_get(spec, "containers")), ready = 0, i;
	long restarts = 0;
	const char *phase = json_string_value(GET2(pod, "status", "phase"));
	char buf[64];

	json_array_foreach(GET2(pod, "status", "containerStatuses"), i, st) {
		ready += json_is_true(path_get(st, "ready"));
		restarts += (long)json_integer_value(path_get(st, "restartCount"));
	}
	snprintf(buf, sizeof(buf), "%zu/%zu", ready, total);
	json_array_append_new(cells, json_string(buf));
	if (GET2(pod, "metadata", "deletionTimestamp"))
		phase = "Terminating";
	json_array_append_new(cells, json_string(phase ? phase : "Unknown"));
	json_array_append_new(cells, json_integer(restarts));
}

static void node_cells(const json_t *node, json_t *cells)
{
	const json_t *c;
	const char *status = "Unknown";
	char buf[128];
	size_t i;

	json_array_foreach(GET2(node, "status", "conditions"), i, c)
		if (streq_ptr(json_string_value(path_get(c, "type")), "Ready"))
			status = streq_ptr(json_string_value(path_get(c, "status")), "True") ? "Ready"
											      : "NotReady";
	snprintf(buf, sizeof(buf), "%s%s", status,
		 json_is_true(GET2(node, "spec", "unschedulable")) ? ",SchedulingDisabled" : "");
	json_array_append_new(cells, json_string(buf));
	json_array_append_new(cells, json_string("<none>"));
}

/* printEvent: "5s (x3 over 2m)" once repeated; kind/name; "component, host". */
static json_t *event_cells(const json_t *ev)
{
	const json_t *involved = path_get(ev, "involvedObject"), *source = path_get(ev, "source");
	const char *kind = json_string_value(path_get(involved, "kind")) ?: "";
	const char *host = json_string_value(path_get(source, "host"));
	json_int_t count = json_integer_value(path_get(ev, "count"));
	const char *last = json_string_value(path_get(ev, "lastTimestamp"));
	json_t *cells = json_array();
	char first_age[32], last_age[32], seen[96], object[512], from[300];
	size_t i;

	human_age(json_string_value(path_get(ev, "firstTimestamp")), first_age, sizeof(first_age));
	human_age(last, last_age, sizeof(last_age));
	if (!last)
		snprintf(last_age, sizeof(last_age), "%s", first_age);
	if (count > 1)
		snprintf(seen, sizeof(seen), "%s (x%lld over %s)", last_age, (long long)count, first_age);
	else
		snprintf(seen, sizeof(seen), "%s", last_age);
	for (i = 0; kind[i] && i < 100; i++)
		object[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] - 'A' + 'a' : kind[i]);
	snprintf(object + i, sizeof(object) - i, "/%s",
		 json_string_value(path_get(involved, "name")) ?: "");
	snprintf(from, sizeof(from), "%s%s%s",
		 json_string_value(path_get(source, "component")) ?: "", host ? ", " : "", host ?: "");
	json_array_append_new(cells, json_string(seen));
	json_array_append_new(cells, cell_of(path_get(ev, "type")));
	json_array_append_new(cells, cell_of(path_get(ev, "reason")));
	json_array_append_new(cells, json_string(object));
	json_array_append_new(cells, cell_of(path_get(involved, "fieldPath")));
	json_array_append_new(cells, json_string(from));
	json_array_append_new(cells, cell_of(path_get(ev, "message")));
	json_array_append_new(cells, json_string(first_age));
	json_array_append_new(cells, json_integer(count));
	json_array_append_new(cells, cell_of(GET2(ev, "metadata", "name")));
	return cells;
}

static json_t *row_cells(const struct k8s_resource *res, const json_t *obj,
			 const struct column *cols, size_t n_cols, const json_t *printer)
{
	const json_t *labels = GET2(obj, "metadata", "labels");
	json_t *cells;
	char age[32];
	size_t i;

	if (!*res->group && streq(res->kind, "Event"))
		return event_cells(obj);
	cells = json_array();
	human_age(json_string_value(GET2(obj, "metadata", "creationTimestamp")), age, sizeof(age));
	json_array_append_new(cells, json_string(json_string_value(GET2(obj, "metadata", "name")) ?: ""));
	if (printer) {
		const json_t *col;

		json_array_foreach(printer, i, col) {
			const char *path = json_string_value(path_get(col, "jsonPath"));

			if (streq_ptr(json_string_value(path_get(col, "type")), "date") &&
			    streq_ptr(path, ".metadata.creationTimestamp"))
				json_array_append_new(cells, json_string(age));
			else
				json_array_append_new(cells, cell_of(path ? jsonpath_eval(obj, path) : NULL));
		}
		return cells;
	}
	if (streq(res->kind, "Pod"))
		pod_cells(obj, cells);
	else if (streq(res->kind, "Node"))
		node_cells(obj, cells);
	else if (streq(res->kind, "Deployment")) {
		char ready[64];

		snprintf(ready, sizeof(ready), "%lld/%lld",
			 (long long)json_integer_value(GET2(obj, "status", "readyReplicas")),
			 (long long)json_integer_value(GET2(obj, "spec", "replicas")));
		json_array_append_new(cells, json_string(ready));
	}
	for (i = json_array_size(cells); i < n_cols; i++) {
		if (streq(cols[i].name, "Age"))
			json_array_append_new(cells, json_string(age));
		else if (streq(cols[i].name, "Instance-Type"))
			json_array_append_new(cells, cell_of(path_get(labels, "node.kubernetes.io/instance-type")));
		else if (streq(cols[i].name, "Zone"))
			json_array_append_new(cells, cell_of(path_get(labels, "topology.kubernetes.io/zone")));
		else if (streq(cols[i].type, "integer"))
			json_array_append_new(cells, json_integer(json_integer_value(jsonpath_eval(obj, cols[i].path))));
		else
			json_array_append_new(cells, cell_of(cols[i].path ? jsonpath_eval(obj, cols[i].path) : NULL));
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

static json_t *column_definitions(const struct k8s_api *api, const struct k8s_resource *res,
				  const struct column **cols, size_t *n_cols)
{
	const json_t *printer = printer_columns(api, res), *col;
	json_t *defs = json_array();
	size_t i;

	*cols = default_columns;
	*n_cols = ARRAY_SIZE(default_columns);
	if (!*res->group && streq(res->kind, "Pod"))
		*cols = pod_columns, *n_cols = ARRAY_SIZE(pod_columns);
	else if (!*res->group && streq(res->kind, "Node"))
		*cols = node_columns, *n_cols = ARRAY_SIZE(node_columns);
	else if (streq(res->group, "apps") && streq(res->kind, "Deployment"))
		*cols = deployment_columns, *n_cols = ARRAY_SIZE(deployment_columns);
	else if (!*res->group && streq(res->kind, "Event"))
		*cols = event_columns, *n_cols = ARRAY_SIZE(event_columns);
	if (printer) {
		json_array_append_new(defs, json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", "Name",
						      "type", "string", "format", "name",
						      "description", "Name", "priority", 0));
		json_array_foreach(printer, i, col)
			json_array_append_new(defs, json_pack("{s:s, s:s, s:s, s:s, s:I}", "name",
				json_string_value(path_get(col, "name")) ?: "", "type",
				streq_ptr(json_string_value(path_get(col, "type")), "date") ? "string"
					: json_string_value(path_get(col, "type")) ?: "string",
				"format", "", "description", "", "priority",
				json_integer_value(path_get(col, "priority"))));
		return defs;
	}
	for (i = 0; i < *n_cols; i++)
		json_array_append_new(defs, json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", (*cols)[i].name,
						      "type", (*cols)[i].type, "format",
						      streq((*cols)[i].name, "Name") ? "name" : "",
						      "description", (*cols)[i].name,
						      "priority", (*cols)[i].priority));
	return defs;
}

json_t *k8s_table_new(const struct k8s_api *api, const struct k8s_resource *res,
		      const json_t *items, const json_t *list_meta)
{
	const struct column *cols;
	size_t n_cols, i;
	json_t *defs = column_definitions(api, res, &cols, &n_cols);
	const json_t *printer = printer_columns(api, res), *obj;
	json_t *rows = json_array();

	json_array_foreach(items, i, obj)
		json_array_append_new(rows, json_pack("{s:o, s:{s:s, s:s, s:O}}", "cells",
			row_cells(res, obj, cols, n_cols, printer), "object", "kind",
			"PartialObjectMetadata", "apiVersion", "meta.k8s.io/v1", "metadata",
			path_get(obj, "metadata")));
	return json_pack("{s:s, s:s, s:o, s:o, s:o}", "kind", "Table", "apiVersion",
			 "meta.k8s.io/v1", "metadata",
			 list_meta ? json_deep_copy(list_meta) : json_object(),
			 "columnDefinitions", defs, "rows", rows);
}
