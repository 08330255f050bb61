/*
 * kanna-sim's Kubernetes API, independent of the HTTP library: a request
 * (method, path, query, content type, body) in, a status code and a JSON
 * body or a watch stream out. k8s-server.c feeds it from libmicrohttpd; the
 * fuzz target and unit tests call it directly.
 */
#ifndef KANNA_SIM_K8S_API_H
#define KANNA_SIM_K8S_API_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/*
 * Faults the Kubernetes side injects (GET/POST /_sim/faults, or the
 * config's k8s-faults), so that clients' retry paths can be tested.
 */
/* Group versions a fault set may hide: a cluster's Karpenter CRDs have a
 * handful (karpenter.sh v1/v1beta1/v1alpha5, karpenter.k8s.aws …). */
#define K8S_FAULT_MAX_UNSERVED 16
#define K8S_FAULT_GROUP_VERSION_MAX 128
/* Resources with an error rate of their own ("pods/binding", "events"):
 * a test aims at a few writes, not at every resource the sim serves. */
#define K8S_FAULT_MAX_ERROR_RATES 16
#define K8S_FAULT_RESOURCE_MAX 128

/* "plural" or "plural/subresource", as RBAC names resources (any group). */
struct k8s_fault_error_rate {
	char resource[K8S_FAULT_RESOURCE_MAX];
	double rate; /* share of its requests answered 500 */
};

struct k8s_faults {
	double error_5xx_rate;    /* share of requests answered 500 */
	double throttle_rate;     /* share answered 429 TooManyRequests */
	unsigned latency_ms;      /* added before every answer */
	unsigned watch_cut_after; /* events per watch stream (open ones too), 0: never cut */
	unsigned watch_gone;      /* the next N resumed watches get 410 */
	unsigned binding_errors;  /* the next N pods/binding requests get 500 */
	/* "group/version"s answered as if their CRD version were not
	 * installed: 404 on every path under them, absent from discovery. */
	char unserved[K8S_FAULT_MAX_UNSERVED][K8S_FAULT_GROUP_VERSION_MAX];
	unsigned n_unserved;
	struct k8s_fault_error_rate error_rates[K8S_FAULT_MAX_ERROR_RATES];
	unsigned n_error_rates;
};

/*
 * What was injected since the sim started (a POST of new faults does not
 * reset it), for GET /_sim/status: a test reports the faults that hit,
 * not the ones it asked for. Guarded by faults_lock; watch cuts are
 * counted by the streams themselves (struct k8s_watch_cut).
 */
struct k8s_fault_counts {
	uint64_t error_5xx, throttle, latency, watch_gone;
	/* Per errorRates resource; names beyond the table count in other. */
	struct {
		char resource[K8S_FAULT_RESOURCE_MAX];
		uint64_t n;
	} resource_errors[2 * K8S_FAULT_MAX_ERROR_RATES];
	unsigned n_resource_errors;
	uint64_t resource_errors_other;
};

/* Largest added latency, so a typo cannot hang every client. */
#define K8S_FAULT_MAX_LATENCY_MS 60000

struct k8s_api {
	struct k8s_registry *reg;
	struct k8s_store *store;
	char server_address[64]; /* "127.0.0.1:6443" for discovery */
	pthread_mutex_t faults_lock;
	struct k8s_faults faults;
	struct k8s_fault_counts injected;
	struct k8s_watch_cut watch_cut; /* faults.watch_cut_after, for open streams */
	uint64_t fault_rng; /* xorshift64 state; fixed seed: runs repeat */
	/* What each client asked for, as RBAC sees it (k8s-requests.c). */
	pthread_mutex_t requests_lock;
	struct k8s_request_counts *requests;
};

int k8s_faults_from_json(const json_t *j, struct k8s_faults *ret, char *err, size_t errlen);
/* Replaces the fault set (the config's, or a POST's). */
void k8s_faults_set(struct k8s_api *api, const struct k8s_faults *f);
/* Refuses an errorRates resource reg does not serve (or a subresource it
 * does not have): a typo would otherwise inject nothing, silently. */
int k8s_faults_validate(const struct k8s_registry *reg, const struct k8s_faults *f,
			char *err, size_t errlen);
json_t *k8s_faults_to_json(const struct k8s_faults *f);
/* The counts of struct k8s_fault_counts as a JSON object. */
json_t *k8s_faults_injected_json(struct k8s_api *api);
/* Sets up the lock and the generator; k8s_api_done() releases them. */
void k8s_api_init(struct k8s_api *api, struct k8s_registry *reg, struct k8s_store *store);
void k8s_api_done(struct k8s_api *api);

struct k8s_request {
	const char *method;
	const char *path;
	const char *content_type;
	const char *accept; /* kubectl asks for meta.k8s.io Tables */
	const char *user_agent; /* NULL when the client sent none */
	const char *body;
	size_t body_len;
	/* The HTTP server streams LIST bodies (resp.list); tests take them whole. */
	bool stream_lists;
	/* Query parameters by name, NULL when absent. */
	const char *(*arg)(void *cls, const char *name);
	/* Every value of a repeated parameter (dryRun=All&dryRun=x), in order:
	 * fills up to max, returns how many there are. NULL: arg()'s only. */
	size_t (*arg_values)(void *cls, const char *name, const char **values, size_t max);
	void *arg_cls;
};

struct k8s_response {
	int status;
	unsigned retry_after; /* seconds, for a Retry-After header; 0: none */
	char *body; /* JSON, malloc'ed */
	size_t len;
	struct k8s_watch *watch; /* instead of body: stream this */
	struct k8s_list_stream *list; /* instead of body: a LIST to stream */
	json_t *warnings; /* strings for Warning: 299 headers, NULL: none */
};

/* Always fills resp (errors become Status bodies); returns 0 or -ENOMEM. */
int k8s_api_handle(struct k8s_api *api, const struct k8s_request *req,
		   struct k8s_response *resp);
void k8s_response_clear(struct k8s_response *resp);

/* Helpers shared by the handler files. */
int k8s_reply_json(struct k8s_response *resp, int status, json_t *obj);
/*
 * Every API request counted by (User-Agent, verb, API group, resource,
 * subresource, namespace), or (User-Agent, verb, non-resource path), with
 * the verb and parts kube-apiserver's RequestInfoFactory gives the
 * authorizer (k8s-requests.c); up to a few object names per tuple, for
 * rules with resourceNames. k8s_requests_json() is /_sim/status's
 * "requests"; k8s_requests_done() frees the table.
 */
void k8s_requests_record(struct k8s_api *api, const struct k8s_request *req);
json_t *k8s_requests_json(struct k8s_api *api);
void k8s_requests_done(struct k8s_api *api);
/* GET /_sim/status: nodes and pods now (sim/k8s-admin.c). */
int k8s_admin_status(struct k8s_api *api, const struct k8s_request *req,
		     struct k8s_response *resp);
int k8s_reply_error(struct k8s_response *resp, struct k8s_error *err);
/* A boolean query parameter (watch, allowWatchBookmarks, sendInitialEvents)
 * as the API server reads one (k8s.io/apimachinery/pkg/runtime
 * Convert_Slice_string_To_bool): absent, "0" or "false" in any case is
 * false; anything else, even "" or "True", is true. */
bool k8s_query_bool(const char *v);
/*
 * Write options (k8s-options.c), decoded and validated as kube-apiserver's
 * handlers do before they read the body; 0, or upstream's 400/422 in err.
 */
enum k8s_options_kind {
	K8S_OPTIONS_CREATE, /* POST: CreateOptions (bindings and evictions too) */
	K8S_OPTIONS_UPDATE, /* PUT: UpdateOptions */
	K8S_OPTIONS_PATCH,  /* PATCH but apply: PatchOptions */
	K8S_OPTIONS_APPLY,  /* server-side apply: PatchOptions, fieldManager required */
};
int k8s_write_options_parse(const struct k8s_request *req, enum k8s_options_kind kind,
			    struct k8s_write_options *opts, struct k8s_error *err);
/* DeleteOptions from body (the parsed request body, NULL when there was
 * none) or else from the query, validated (ValidateDeleteOptions). */
int k8s_delete_options_parse(const struct k8s_request *req, const json_t *body,
			     struct k8s_delete_options *opts, struct k8s_error *err);
/* An integer query parameter (limit, timeoutSeconds, gracePeriodSeconds)
 * as strconv.ParseInt reads one: absent is 0, anything but a decimal
 * integer a 400 with ParseInt's words. */
int k8s_query_int(const struct k8s_request *req, const char *name, long long *ret,
		  struct k8s_error *err);
/* Whether the answer is pretty-printed (pretty=true, Accept ...;pretty=1),
 * and the printing: a JSON body indented as upstream's pretty serializer. */
bool k8s_request_pretty(const struct k8s_request *req);
int k8s_response_pretty(struct k8s_response *resp);
int k8s_discovery_handle(struct k8s_api *api, const struct k8s_route *route,
			 struct k8s_response *resp);
/* Fault injection (k8s-faults.c): 1 when the request was answered. */
int k8s_faults_apply(struct k8s_api *api, const struct k8s_request *req,
		     struct k8s_response *resp);
/* The errorRates of route's resource (and subresource): 1 when answered. */
int k8s_faults_apply_route(struct k8s_api *api, const struct k8s_route *route,
			   struct k8s_response *resp);
/* Whether group/version is hidden by unservedVersions; with version NULL,
 * whether every version the registry has of group is. */
bool k8s_faults_unserved(struct k8s_api *api, const char *group, const char *version);

/*
 * Field selectors (k8s-fields.c): refuses a label res does not support
 * (-EINVAL, err "field label not supported: <label>") and turns the others
 * into the JSON paths and absent values the store matches against.
 */
int k8s_field_selector_prepare(const struct k8s_registry *reg, const struct k8s_resource *res,
			       struct k8s_selector *sel, char *err, size_t errlen);

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
		    json_t *body, const struct k8s_write_options *opts,
		    struct k8s_response *resp);
int k8s_pod_eviction(struct k8s_api *api, const struct k8s_route *route,
		     json_t *body, const struct k8s_write_options *opts,
		     struct k8s_response *resp);
/* opts: the request's UpdateOptions or PatchOptions; NULL for GET. */
int k8s_scale_handle(struct k8s_api *api, const struct k8s_request *req,
		     const struct k8s_route *route, json_t *body,
		     const struct k8s_write_options *opts, struct k8s_response *resp);

#endif
