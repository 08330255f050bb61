/*
 * kanna-sim's Kubernetes API, independent of the HTTP library: a request
 * (method, path, query, content type, body) in, a status code and a JSON
 * body or a watch stream out. k8s-server.c feeds it from libmicrohttpd; the
 * fuzz target and unit tests call it directly.
 */
#ifndef KANNA_SIM_K8S_API_H
#define KANNA_SIM_K8S_API_H

#include <stdbool.h>
#include <stddef.h>

#include "sim/k8s-resource.h"
#include "sim/k8s-store.h"
#include "sim/k8s-watch.h"

/* Path segments longer than this cannot be Kubernetes names. */
#define K8S_ROUTE_SEGMENT_MAX 256
/* The deepest API path: /apis/g/v/namespaces/ns/plural/name/sub. */
#define K8S_ROUTE_MAX_SEGMENTS 8

enum k8s_route_kind {
	K8S_ROUTE_VERSION,     /* /version */
	K8S_ROUTE_HEALTH,      /* /healthz /readyz /livez */
	K8S_ROUTE_CORE_GROUP,  /* /api */
	K8S_ROUTE_GROUPS,      /* /apis */
	K8S_ROUTE_GROUP,       /* /apis/<group> */
	K8S_ROUTE_RESOURCES,   /* /api/v1, /apis/<group>/<version> */
	K8S_ROUTE_COLLECTION,  /* .../<plural> */
	K8S_ROUTE_OBJECT,      /* .../<plural>/<name>[/<subresource>] */
};

struct k8s_route {
	enum k8s_route_kind kind;
	char group[K8S_ROUTE_SEGMENT_MAX];
	char version[K8S_ROUTE_SEGMENT_MAX];
	char ns[K8S_ROUTE_SEGMENT_MAX]; /* "" when not namespaced */
	char name[K8S_ROUTE_SEGMENT_MAX];
	char subresource[K8S_ROUTE_SEGMENT_MAX];
	struct k8s_resource *res;
};

/* 404 NotFound for unknown paths and resources. */
int k8s_route_parse(const struct k8s_registry *reg, const char *path,
		    struct k8s_route *ret, struct k8s_error *err);

struct k8s_api {
	struct k8s_registry *reg;
	struct k8s_store *store;
	char server_address[64]; /* "127.0.0.1:6443" for discovery */
};

struct k8s_request {
	const char *method;
	const char *path;
	const char *content_type;
	const char *accept; /* kubectl asks for meta.k8s.io Tables */
	const char *body;
	size_t body_len;
	/* Query parameters by name, NULL when absent. */
	const char *(*arg)(void *cls, const char *name);
	void *arg_cls;
};

struct k8s_response {
	int status;
	char *body; /* JSON, malloc'ed */
	size_t len;
	struct k8s_watch *watch; /* instead of body: stream this */
};

/* Always fills resp (errors become Status bodies); returns 0 or -ENOMEM. */
int k8s_api_handle(struct k8s_api *api, const struct k8s_request *req,
		   struct k8s_response *resp);
void k8s_response_clear(struct k8s_response *resp);

/* Helpers shared by the handler files. */
int k8s_reply_json(struct k8s_response *resp, int status, json_t *obj);
int k8s_reply_error(struct k8s_response *resp, struct k8s_error *err);
int k8s_discovery_handle(struct k8s_api *api, const struct k8s_route *route,
			 struct k8s_response *resp);
/* Server-side printing (k8s-table.c). */
bool k8s_accepts_table(const char *accept);
json_t *k8s_table_new(const struct k8s_api *api, const struct k8s_resource *res,
		      const json_t *items, const json_t *list_meta);

/* /openapi/v3 paths: 1 when handled (resp filled), 0 when not OpenAPI. */
int k8s_openapi_handle(struct k8s_api *api, const char *path,
		       struct k8s_response *resp);
/* Mutation for k8s_store_mutate(): binds the pod to node (a char *). */
json_t *k8s_pod_bind(const json_t *pod, void *node, struct k8s_error *err);
int k8s_pod_binding(struct k8s_api *api, const struct k8s_route *route,
		    json_t *body, struct k8s_response *resp);
int k8s_pod_eviction(struct k8s_api *api, const struct k8s_route *route,
		     json_t *body, struct k8s_response *resp);
int k8s_scale_handle(struct k8s_api *api, const struct k8s_request *req,
		     const struct k8s_route *route, json_t *body,
		     struct k8s_response *resp);

#endif
