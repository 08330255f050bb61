/*
 * A minimal OpenAPI v3 for kanna-sim: the root (/openapi/v3) lists every
 * group version and each group version document (/openapi/v3/apis/g/v)
 * declares, per kind, the PATCH operation with its fieldValidation query
 * parameter (what kubectl reads to choose server-side field validation)
 * and, for custom resources, the CRD's schema (what `kubectl explain`
 * reads). Built-in kinds get no schemas.
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

/* "sh.karpenter.v1.NodePool": the group reversed, as upstream names CRD schemas. */
static void schema_name(const struct k8s_resource *r, char *buf, size_t len)
{
	const char *end = r->group + strlen(r->group), *dot;
	size_t off = 0;

	while (end > r->group && off < len) {
		for (dot = end; dot > r->group && dot[-1] != '.'; dot--)
			;
		off += (size_t)snprintf(buf + off, len - off, "%.*s.", (int)(end - dot), dot);
		end = dot > r->group ? dot - 1 : dot;
	}
	if (off < len)
		snprintf(buf + off, len - off, "%s.%s", r->version, r->kind);
}

/*
 * A custom resource's schema from its CRD, tagged with its group, version
 * and kind as kube-apiserver publishes it: what `kubectl explain` reads.
 */
static json_t *crd_schema(const struct k8s_registry *reg, const struct k8s_resource *r)
{
	char crd_name[512];
	const json_t *v;
	json_t *schema;
	size_t i;

	snprintf(crd_name, sizeof(crd_name), "%s.%s", r->plural, r->group);
	json_array_foreach(json_object_get(json_object_get(json_object_get(reg->crds, crd_name),
							   "spec"), "versions"), i, v) {
		if (!streq_ptr(json_string_value(json_object_get(v, "name")), r->version))
			continue;
		schema = json_deep_copy(json_object_get(json_object_get(v, "schema"),
							"openAPIV3Schema"));
		if (!json_is_object(schema))
			break;
		json_object_set_new(schema, "x-kubernetes-group-version-kind",
				    json_pack("[{s:s, s:s, s:s}]", "group", r->group, "kind",
					      r->kind, "version", r->version));
		return schema;
	}
	return NULL;
}

static json_t *group_version_doc(const struct k8s_registry *reg, const char *group,
				 const char *version)
{
	json_t *paths = json_object(), *schemas = json_object();

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
		if (r->custom) {
			json_t *schema = crd_schema(reg, r);
			char name[600];

			schema_name(r, name, sizeof(name));
			if (schema)
				json_object_set_new(schemas, name, schema);
		}
	}
	return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o}}", "openapi", "3.0.0", "info",
			 "title", "Kubernetes (kanna-sim)", "version", "v1.32.0", "paths",
			 paths, "components", "schemas", schemas);
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
