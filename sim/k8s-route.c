/*
 * URL path routing for kanna-sim's Kubernetes API: splits a request path
 * into group, version, namespace, resource, name and subresource, as
 * kube-apiserver's RequestInfoFactory does, and resolves the resource in
 * the registry. Pure function of the path; fuzzed by fuzz_sim_request.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-api.h"

static int split(const char *path, char seg[][K8S_ROUTE_SEGMENT_MAX], size_t *n)
{
	const char *p = path;

	*n = 0;
	while (*p) {
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		len = strcspn(p, "/");
		if (len >= K8S_ROUTE_SEGMENT_MAX || *n >= K8S_ROUTE_MAX_SEGMENTS + 1)
			return -EINVAL;
		memcpy(seg[*n], p, len);
		seg[*n][len] = '\0';
		(*n)++;
		p += len;
	}
	return 0;
}

static int not_found(struct k8s_error *err)
{
	k8s_error_set(err, 404, "NotFound", "the server could not find the requested resource");
	return -ENOENT;
}

/* segs after the group/version prefix: [namespaces/<ns>/]<plural>[/<name>[/<sub>]] */
static int route_resource(const struct k8s_registry *reg, char seg[][K8S_ROUTE_SEGMENT_MAX],
			  size_t n, struct k8s_route *r, struct k8s_error *err)
{
	size_t i = 0;

	if (n == 0) {
		r->kind = K8S_ROUTE_RESOURCES;
		return 0;
	}
	/* /namespaces/<ns>/<plural>...: but /namespaces/<name>[/status] is
	 * the Namespace object itself. */
	if (streq(seg[0], "namespaces") && n >= 3 &&
	    k8s_registry_find(reg, r->group, r->version, seg[2]) &&
	    k8s_registry_find(reg, r->group, r->version, seg[2])->namespaced) {
		snprintf(r->ns, sizeof(r->ns), "%s", seg[1]);
		i = 2;
	}
	r->res = k8s_registry_find(reg, r->group, r->version, seg[i]);
	if (!r->res || n - i > 3)
		return not_found(err);
	if (n - i == 1) {
		r->kind = K8S_ROUTE_COLLECTION;
		return 0;
	}
	r->kind = K8S_ROUTE_OBJECT;
	snprintf(r->name, sizeof(r->name), "%s", seg[i + 1]);
	if (n - i == 3) {
		const char *sub = seg[i + 2];
		unsigned flags = r->res->subresources;

		if (!((streq(sub, "status") && (flags & K8S_SUB_STATUS)) ||
		      (streq(sub, "scale") && (flags & K8S_SUB_SCALE)) ||
		      (streq(sub, "binding") && (flags & K8S_SUB_BINDING)) ||
		      (streq(sub, "eviction") && (flags & K8S_SUB_EVICTION))))
			return not_found(err);
		snprintf(r->subresource, sizeof(r->subresource), "%s", sub);
	}
	return 0;
}

int k8s_route_parse(const struct k8s_registry *reg, const char *path,
		    struct k8s_route *r, struct k8s_error *err)
{
	char seg[K8S_ROUTE_MAX_SEGMENTS + 1][K8S_ROUTE_SEGMENT_MAX];
	size_t n;

	memset(r, 0, sizeof(*r));
	if (!path || split(path, seg, &n) < 0 || n == 0)
		return not_found(err);
	if (n == 1 && streq(seg[0], "version")) {
		r->kind = K8S_ROUTE_VERSION;
		return 0;
	}
	if (n == 1 && (streq(seg[0], "healthz") || streq(seg[0], "readyz") ||
		       streq(seg[0], "livez"))) {
		r->kind = K8S_ROUTE_HEALTH;
		return 0;
	}
	if (streq(seg[0], "api")) {
		if (n == 1) {
			r->kind = K8S_ROUTE_CORE_GROUP;
			return 0;
		}
		if (!streq(seg[1], "v1"))
			return not_found(err);
		strcpy(r->version, "v1");
		return route_resource(reg, seg + 2, n - 2, r, err);
	}
	if (!streq(seg[0], "apis"))
		return not_found(err);
	if (n == 1) {
		r->kind = K8S_ROUTE_GROUPS;
		return 0;
	}
	snprintf(r->group, sizeof(r->group), "%s", seg[1]);
	if (n == 2) {
		r->kind = K8S_ROUTE_GROUP;
		for (size_t i = 0; i < reg->n_resources; i++)
			if (streq(reg->resources[i].group, r->group))
				return 0;
		return not_found(err);
	}
	snprintf(r->version, sizeof(r->version), "%s", seg[2]);
	for (size_t i = 0; i < reg->n_resources; i++)
		if (streq(reg->resources[i].group, r->group) &&
		    streq(reg->resources[i].version, r->version))
			return route_resource(reg, seg + 3, n - 3, r, err);
	return not_found(err);
}
