/*
 * Which field selectors each resource supports, as kube-apiserver's field
 * label conversion functions decide: metadata.name and metadata.namespace
 * everywhere, plus the fields upstream indexes for pods, nodes, namespaces,
 * events, ReplicaSets and services, and a CRD version's selectableFields.
 * Anything else is refused with upstream's "field label not supported"
 * (400 BadRequest) instead of silently matching nothing. Called by
 * k8s-api.c once per LIST, WATCH or DELETE collection; rewrites a label to
 * the JSON path of its value (spec.host is spec.nodeName, an Event's
 * source is source.component) and gives booleans upstream's "false" when
 * the field is absent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-api.h"

struct field_label {
	const char *label;
	const char *path;   /* JSON path of the value; NULL: the label itself */
	const char *absent; /* the value when the field is absent; NULL: "" */
};

static const struct field_label meta_labels[] = {
	{ "metadata.name", NULL, NULL },
	{ "metadata.namespace", NULL, NULL },
	{ NULL, NULL, NULL },
};

static const struct field_label pod_labels[] = {
	{ "metadata.name", NULL, NULL },
	{ "metadata.namespace", NULL, NULL },
	{ "spec.nodeName", NULL, NULL },
	{ "spec.host", "spec.nodeName", NULL }, /* old v1 clients */
	{ "spec.restartPolicy", NULL, NULL },
	{ "spec.schedulerName", NULL, NULL },
	{ "spec.serviceAccountName", NULL, NULL },
	{ "spec.hostNetwork", NULL, "false" },
	{ "status.phase", NULL, NULL },
	{ "status.podIP", NULL, NULL },
	{ "status.nominatedNodeName", NULL, NULL },
	{ NULL, NULL, NULL },
};

/* Upstream's Node conversion knows no metadata.namespace. */
static const struct field_label node_labels[] = {
	{ "metadata.name", NULL, NULL },
	{ "spec.unschedulable", NULL, "false" },
	{ NULL, NULL, NULL },
};

static const struct field_label namespace_labels[] = {
	{ "metadata.name", NULL, NULL },
	{ "metadata.namespace", NULL, NULL },
	{ "status.phase", NULL, NULL },
	{ NULL, NULL, NULL },
};

static const struct field_label core_event_labels[] = {
	{ "metadata.name", NULL, NULL },
	{ "metadata.namespace", NULL, NULL },
	{ "involvedObject.kind", NULL, NULL },
	{ "involvedObject.namespace", NULL, NULL },
	{ "involvedObject.name", NULL, NULL },
	{ "involvedObject.uid", NULL, NULL },
	{ "involvedObject.apiVersion", NULL, NULL },
	{ "involvedObject.resourceVersion", NULL, NULL },
	{ "involvedObject.fieldPath", NULL, NULL },
	{ "reason", NULL, NULL },
	{ "reportingComponent", NULL, NULL },
	{ "source", "source.component", NULL },
	{ "type", NULL, NULL },
	{ NULL, NULL, NULL },
};

static const struct field_label events_v1_labels[] = {
	{ "metadata.name", NULL, NULL },
	{ "metadata.namespace", NULL, NULL },
	{ "regarding.kind", NULL, NULL },
	{ "regarding.namespace", NULL, NULL },
	{ "regarding.name", NULL, NULL },
	{ "regarding.uid", NULL, NULL },
	{ "regarding.apiVersion", NULL, NULL },
	{ "regarding.resourceVersion", NULL, NULL },
	{ "regarding.fieldPath", NULL, NULL },
	{ "reason", NULL, NULL },
	{ "reportingController", NULL, NULL },
	{ "type", NULL, NULL },
	{ NULL, NULL, NULL },
};

static const struct field_label replicaset_labels[] = {
	{ "metadata.name", NULL, NULL },
	{ "metadata.namespace", NULL, NULL },
	{ "status.replicas", NULL, "0" },
	{ NULL, NULL, NULL },
};

static const struct field_label service_labels[] = {
	{ "metadata.name", NULL, NULL },
	{ "metadata.namespace", NULL, NULL },
	{ "spec.clusterIP", NULL, NULL },
	{ "spec.type", NULL, NULL },
	{ NULL, NULL, NULL },
};

static const struct {
	const char *group, *plural;
	const struct field_label *labels;
} builtin_labels[] = {
	{ "", "pods", pod_labels },
	{ "", "nodes", node_labels },
	{ "", "namespaces", namespace_labels },
	{ "", "events", core_event_labels },
	{ "", "services", service_labels },
	{ "events.k8s.io", "events", events_v1_labels },
	{ "apps", "replicasets", replicaset_labels },
};

static const struct field_label *labels_of(const struct k8s_resource *res)
{
	if (res->custom)
		return meta_labels;
	for (size_t i = 0; i < ARRAY_SIZE(builtin_labels); i++)
		if (streq(res->group, builtin_labels[i].group) &&
		    streq(res->plural, builtin_labels[i].plural))
			return builtin_labels[i].labels;
	return meta_labels;
}

/* A CRD version's selectableFields: jsonPath ".spec.color" selects as spec.color. */
static bool crd_selectable(const struct k8s_registry *reg, const struct k8s_resource *res,
			   const char *label)
{
	char name[512];
	const json_t *v, *f;
	size_t i, j;

	snprintf(name, sizeof(name), "%s.%s", res->plural, res->group);
	json_array_foreach(json_object_get(json_object_get(json_object_get(reg->crds, name), "spec"),
					   "versions"), i, v) {
		if (!streq_ptr(json_string_value(json_object_get(v, "name")), res->version))
			continue;
		json_array_foreach(json_object_get(v, "selectableFields"), j, f) {
			const char *path = json_string_value(json_object_get(f, "jsonPath"));

			if (path && path[0] == '.' && streq(path + 1, label))
				return true;
		}
	}
	return false;
}

int k8s_field_selector_prepare(const struct k8s_registry *reg, const struct k8s_resource *res,
			       struct k8s_selector *sel, char *err, size_t errlen)
{
	const struct field_label *labels = labels_of(res);

	for (size_t i = 0; sel && i < sel->n_reqs; i++) {
		struct k8s_requirement *req = &sel->reqs[i];
		const struct field_label *l = labels;

		while (l->label && !streq(l->label, req->key))
			l++;
		if (!l->label) {
			if (res->custom && crd_selectable(reg, res, req->key))
				continue;
			snprintf(err, errlen, "field label not supported: %s", req->key);
			return -EINVAL;
		}
		if (l->path) {
			char *path = strdup(l->path);

			if (!path)
				return -ENOMEM;
			free(req->key);
			req->key = path;
		}
		req->absent = l->absent;
	}
	return 0;
}
