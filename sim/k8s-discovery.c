/*
 * Discovery documents for kanna-sim: /version, /api (APIVersions), /apis
 * (APIGroupList), /apis/<group> (APIGroup) and the APIResourceList of each
 * group version, built from the resource registry, so that kubectl's
 * RESTMapper finds every kind, short name and subresource. Group versions
 * the unservedVersions fault hides are left out, as a cluster without
 * that CRD version would. Read-only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-api.h"

/* The Kubernetes minor version whose API kanna-sim imitates. */
#define K8S_SIM_MAJOR "1"
#define K8S_SIM_MINOR "32"

/* Kubernetes version priority: GA > beta > alpha, then higher numbers. */
static long version_priority(const char *v)
{
	long major = 0, minor = 0, level = 3;
	const char *p;

	if (v[0] != 'v')
		return -1;
	major = strtol(v + 1, (char **)&p, 10);
	if (strncmp(p, "beta", 4) == 0) {
		level = 2;
		minor = strtol(p + 4, NULL, 10);
	} else if (strncmp(p, "alpha", 5) == 0) {
		level = 1;
		minor = strtol(p + 5, NULL, 10);
	}
	return level * 1000000 + major * 1000 + minor;
}

static json_t *split_list(const char *csv)
{
	json_t *arr = json_array();
	const char *p = csv;

	while (arr && *p) {
		size_t n = strcspn(p, ",");

		json_array_append_new(arr, json_stringn(p, n));
		p += n;
		if (*p == ',')
			p++;
	}
	return arr;
}

static json_t *verbs(const char *const *v)
{
	json_t *arr = json_array();

	for (; *v; v++)
		json_array_append_new(arr, json_string(*v));
	return arr;
}

static void add_subresource(json_t *list, const struct k8s_resource *r,
			    const char *sub, const char *group, const char *version,
			    const char *kind, const char *const *vb)
{
	char name[512];
	json_t *e;

	snprintf(name, sizeof(name), "%s/%s", r->plural, sub);
	e = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", name, "singularName", "",
		      "namespaced", r->namespaced, "kind", kind, "verbs", verbs(vb));
	if (group) {
		json_object_set_new(e, "group", json_string(group));
		json_object_set_new(e, "version", json_string(version));
	}
	json_array_append_new(list, e);
}

static json_t *resource_list(const struct k8s_registry *reg, const char *group,
			     const char *version)
{
	static const char *const all_verbs[] = { "create", "delete", "deletecollection",
						 "get", "list", "patch", "update",
						 "watch", NULL };
	static const char *const status_verbs[] = { "get", "patch", "update", NULL };
	static const char *const create_verb[] = { "create", NULL };
	char gv[512];
	json_t *list = json_array();

	for (size_t i = 0; i < reg->n_resources; i++) {
		const struct k8s_resource *r = &reg->resources[i];
		json_t *e;

		if (!streq(r->group, group) || !streq(r->version, version))
			continue;
		e = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", r->plural,
			      "singularName", r->singular, "namespaced", r->namespaced,
			      "kind", r->kind, "verbs", verbs(all_verbs));
		if (*r->short_names)
			json_object_set_new(e, "shortNames", split_list(r->short_names));
		if (*r->categories)
			json_object_set_new(e, "categories", split_list(r->categories));
		json_array_append_new(list, e);
		if (r->subresources & K8S_SUB_STATUS)
			add_subresource(list, r, "status", NULL, NULL, r->kind, status_verbs);
		if (r->subresources & K8S_SUB_SCALE)
			add_subresource(list, r, "scale", "autoscaling", "v1", "Scale",
					status_verbs);
		if (r->subresources & K8S_SUB_BINDING)
			add_subresource(list, r, "binding", NULL, NULL, "Binding", create_verb);
		if (r->subresources & K8S_SUB_EVICTION)
			add_subresource(list, r, "eviction", "policy", "v1", "Eviction",
					create_verb);
	}
	snprintf(gv, sizeof(gv), "%s%s%s", group, *group ? "/" : "", version);
	return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion",
			 "v1", "groupVersion", gv, "resources", list);
}

static json_t *group_entry(struct k8s_api *api, const char *group)
{
	const struct k8s_registry *reg = api->reg;
	json_t *versions = json_array();
	const char *best = NULL;

	for (size_t i = 0; i < reg->n_resources; i++) {
		const struct k8s_resource *r = &reg->resources[i];
		char gv[512];
		bool seen = false;
		size_t j;
		json_t *v;

		if (!streq(r->group, group) || k8s_faults_unserved(api, group, r->version))
			continue;
		json_array_foreach(versions, j, v)
			seen = seen || streq(json_string_value(json_object_get(v, "version")),
					     r->version);
		if (seen)
			continue;
		snprintf(gv, sizeof(gv), "%s/%s", group, r->version);
		json_array_append_new(versions, json_pack("{s:s, s:s}", "groupVersion", gv,
							  "version", r->version));
		if (!best || version_priority(r->version) > version_priority(best))
			best = r->version;
	}
	if (!best) {
		json_decref(versions);
		return NULL;
	}
	char pref[512];
	snprintf(pref, sizeof(pref), "%s/%s", group, best);
	return json_pack("{s:s, s:o, s:{s:s, s:s}}", "name", group, "versions", versions,
			 "preferredVersion", "groupVersion", pref, "version", best);
}

static json_t *group_list(struct k8s_api *api)
{
	const struct k8s_registry *reg = api->reg;
	json_t *groups = json_array();

	for (size_t i = 0; i < reg->n_resources; i++) {
		const char *g = reg->resources[i].group;
		bool seen = false;
		size_t j;
		json_t *e;

		if (!*g || k8s_faults_unserved(api, g, NULL))
			continue;
		json_array_foreach(groups, j, e)
			seen = seen || streq(json_string_value(json_object_get(e, "name")), g);
		if (!seen)
			json_array_append_new(groups, group_entry(api, g));
	}
	return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1",
			 "groups", groups);
}

int k8s_discovery_handle(struct k8s_api *api, const struct k8s_route *route,
			 struct k8s_response *resp)
{
	json_t *doc = NULL;

	switch (route->kind) {
	case K8S_ROUTE_VERSION:
		doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major",
				K8S_SIM_MAJOR, "minor", K8S_SIM_MINOR, "gitVersion",
				"v" K8S_SIM_MAJOR "." K8S_SIM_MINOR ".0-kanna-sim", "gitCommit",
				"", "gitTreeState", "clean", "buildDate", "1970-01-01T00:00:00Z",
				"goVersion", "none", "compiler", "kanna-sim", "platform",
				"linux/amd64");
		break;
	case K8S_ROUTE_CORE_GROUP:
		doc = json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions",
				"versions", "v1", "serverAddressByClientCIDRs", "clientCIDR",
				"0.0.0.0/0", "serverAddress", api->server_address);
		break;
	case K8S_ROUTE_GROUPS:
		doc = group_list(api);
		break;
	case K8S_ROUTE_GROUP:
		doc = group_entry(api, route->group);
		if (doc) {
			json_object_set_new(doc, "kind", json_string("APIGroup"));
			json_object_set_new(doc, "apiVersion", json_string("v1"));
		}
		break;
	case K8S_ROUTE_RESOURCES:
		doc = resource_list(api->reg, route->group, route->version);
		break;
	default:
		return -EINVAL;
	}
	if (!doc)
		return -ENOMEM;
	return k8s_reply_json(resp, 200, doc);
}
