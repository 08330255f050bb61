/*
 * A minimal OpenAPI v3 for kanna-sim: the root (/openapi/v3) lists every
 * group version and each group version document (/openapi/v3/apis/g/v)
 * declares, per kind, the PATCH operation with its fieldValidation query
 * parameter. That is what kubectl reads to choose server-side field
 * validation instead of downloading schemas; no schemas are served.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-api.h"

static json_t *root_doc(const struct k8s_registry *reg)
{
	json_t *paths = json_object();

	for (size_t i = 0; i < reg->n_resources; i++) {
		const struct k8s_resource *r = &reg->resources[i];
		char key[512], url[600];

		if (*r->group)
			snprintf(key, sizeof(key), "apis/%s/%s", r->group, r->version);
		else
			snprintf(key, sizeof(key), "api/%s", r->version);
		snprintf(url, sizeof(url), "/openapi/v3/%s", key);
		json_object_set_new(paths, key, json_pack("{s:s}", "serverRelativeURL", url));
	}
	return json_pack("{s:o}", "paths", paths);
}

static json_t *patch_operation(const struct k8s_resource *r)
{
	return json_pack("{s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:{s:s}},"
			 " {s:s, s:s, s:{s:s}}, {s:s, s:s, s:{s:s}}], s:{s:{s:s}}}",
			 "x-kubernetes-group-version-kind", "group", r->group, "version",
			 r->version, "kind", r->kind, "parameters", "name", "fieldValidation",
			 "in", "query", "schema", "type", "string", "name", "fieldManager",
			 "in", "query", "schema", "type", "string", "name", "dryRun", "in",
			 "query", "schema", "type", "string", "responses", "200",
			 "description", "OK");
}

static json_t *group_version_doc(const struct k8s_registry *reg, const char *group,
				 const char *version)
{
	json_t *paths = json_object();

	for (size_t i = 0; i < reg->n_resources; i++) {
		const struct k8s_resource *r = &reg->resources[i];
		char path[700], prefix[512];

		if (!streq(r->group, group) || !streq(r->version, version))
			continue;
		if (*r->group)
			snprintf(prefix, sizeof(prefix), "/apis/%s/%s", r->group, r->version);
		else
			snprintf(prefix, sizeof(prefix), "/api/%s", r->version);
		snprintf(path, sizeof(path), "%s%s/%s/{name}", prefix,
			 r->namespaced ? "/namespaces/{namespace}" : "", r->plural);
		json_object_set_new(paths, path, json_pack("{s:o}", "patch", patch_operation(r)));
	}
	return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:{}}}", "openapi", "3.0.0", "info",
			 "title", "Kubernetes (kanna-sim)", "version", "v1.32.0", "paths",
			 paths, "components", "schemas");
}

/* Returns 1 when path was an OpenAPI path and resp is filled. */
int k8s_openapi_handle(struct k8s_api *api, const char *path,
		       struct k8s_response *resp)
{
	char group[K8S_ROUTE_SEGMENT_MAX] = "", version[K8S_ROUTE_SEGMENT_MAX] = "";
	struct k8s_error err = {};
	const char *p;
	int r;

	if (strncmp(path, "/openapi/v3", 11) != 0)
		return 0;
	p = path + 11;
	if (!*p || streq(p, "/"))
		return k8s_reply_json(resp, 200, root_doc(api->reg)) < 0 ? -ENOMEM : 1;
	if (sscanf(p, "/api/%255[^/]", version) == 1 && !strchr(p + 5, '/'))
		;
	else if (sscanf(p, "/apis/%255[^/]/%255[^/]", group, version) != 2 ||
		 strchr(p + 6 + strlen(group) + 1, '/')) {
		k8s_error_set(&err, 404, "NotFound", "the server could not find the requested resource");
		r = k8s_reply_error(resp, &err);
		return r < 0 ? r : 1;
	}
	for (size_t i = 0; i < api->reg->n_resources; i++)
		if (streq(api->reg->resources[i].group, group) &&
		    streq(api->reg->resources[i].version, version))
			return k8s_reply_json(resp, 200,
					      group_version_doc(api->reg, group, version)) < 0 ?
				       -ENOMEM : 1;
	k8s_error_set(&err, 404, "NotFound", "the server could not find the requested resource");
	r = k8s_reply_error(resp, &err);
	return r < 0 ? r : 1;
}
