/*
 * Request dispatch for kanna-sim's Kubernetes API: routes a request, decodes
 * its body and query (selectors, paging, watch, delete options), calls the
 * store and turns results and errors into JSON bodies with the status codes
 * kube-apiserver uses. Subresources live in k8s-subresource.c, discovery in
 * k8s-discovery.c. Knows nothing about HTTP libraries.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "common/yaml-json.h"
#include "sim/k8s-api.h"
#include "sim/k8s-patch.h"
#include "sim/k8s-protobuf.h"

void k8s_response_clear(struct k8s_response *resp)
{
	free(resp->body);
	k8s_watch_free(resp->watch);
	k8s_list_stream_free(resp->list);
	json_decref(resp->warnings);
	memset(resp, 0, sizeof(*resp));
}

int k8s_reply_json(struct k8s_response *resp, int status, json_t *obj)
{
	if (!obj)
		return -ENOMEM;
	resp->status = status;
	resp->body = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	if (!resp->body)
		return -ENOMEM;
	resp->len = strlen(resp->body);
	return 0;
}

int k8s_reply_error(struct k8s_response *resp, struct k8s_error *err)
{
	int r;

	if (err->code == 0)
		k8s_error_set(err, 500, "InternalError", "Internal error occurred: out of memory");
	r = k8s_reply_json(resp, err->code, k8s_status_new(err));
	k8s_error_clear(err);
	return r;
}

static const char *arg(const struct k8s_request *req, const char *name)
{
	return req->arg ? req->arg(req->arg_cls, name) : NULL;
}

bool k8s_query_bool(const char *v)
{
	return v && !streq(v, "0") && strcasecmp(v, "false") != 0;
}

static bool arg_true(const struct k8s_request *req, const char *name)
{
	return k8s_query_bool(arg(req, name));
}

/* A YAML body (Content-Type application/yaml): exactly one document. */
static int parse_yaml_body(const struct k8s_request *req, json_t **ret, struct k8s_error *err)
{
	struct yaml_docs *docs = NULL;
	char msg[512] = "";

	if (yaml_docs_load_buffer(req->body ? req->body : "", req->body_len, "body", &docs, msg,
				  sizeof(msg)) < 0 || docs->n_docs != 1) {
		yaml_docs_free(docs);
		*ret = NULL;
		k8s_error_set(err, 400, "BadRequest", "error decoding YAML: %s",
			      *msg ? msg : "expected exactly one document");
		return -EINVAL;
	}
	*ret = json_incref(docs->docs[0]);
	yaml_docs_free(docs);
	return 0;
}

static int parse_body(const struct k8s_request *req, const struct k8s_resource *res,
		      json_t **ret, struct k8s_error *err)
{
	const char *ct = req->content_type;
	json_error_t jerr;
	int r;

	/*
	 * client-go's typed clients, and so kubectl's `create <generator>`
	 * subcommands (namespace, deployment, configmap, ...), send built-in
	 * kinds as protobuf and fall back to JSON after a 415 for CBOR only:
	 * kube-apiserver decodes protobuf for built-in kinds, so kanna-sim
	 * decodes it for the kinds those clients send (k8s-protobuf.c).
	 */
	if (ct && strstr(ct, "application/vnd.kubernetes.protobuf")) {
		r = k8s_protobuf_decode(req->body ? req->body : "", req->body_len, res, ret, err);
		return r == -ENOMEM ? r : r < 0 ? -EINVAL : 0;
	}
	if (ct && strstr(ct, "cbor")) {
		*ret = NULL;
		k8s_error_set(err, 415, "UnsupportedMediaType",
			      "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf");
		return -EINVAL;
	}
	if (ct && strstr(ct, "yaml"))
		return parse_yaml_body(req, ret, err);
	*ret = json_loadb(req->body ? req->body : "", req->body_len,
			  JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	if (!*ret) {
		k8s_error_set(err, 400, "BadRequest",
			      "the body of the request was in an unknown format: %s", jerr.text);
		return -EINVAL;
	}
	return 0;
}

static int parse_selectors(const struct k8s_api *api, const struct k8s_request *req,
			   const struct k8s_route *route, struct k8s_selector **labels,
			   struct k8s_selector **fields, struct k8s_error *err)
{
	const char *ls = arg(req, "labelSelector"), *fs = arg(req, "fieldSelector");
	char msg[256] = "";
	int r;

	*labels = *fields = NULL;
	if (ls && k8s_label_selector_parse(ls, labels, msg, sizeof(msg)) < 0) {
		k8s_error_set(err, 400, "BadRequest", "unable to parse requirement: %s", msg);
		return -EINVAL;
	}
	if (fs && k8s_field_selector_parse(fs, fields, msg, sizeof(msg)) < 0) {
		*labels = k8s_selector_free(*labels);
		k8s_error_set(err, 400, "BadRequest", "invalid field selector: %s", msg);
		return -EINVAL;
	}
	r = k8s_field_selector_prepare(api->reg, route->res, *fields, msg, sizeof(msg));
	if (r < 0) {
		*labels = k8s_selector_free(*labels);
		*fields = k8s_selector_free(*fields);
		if (r == -ENOMEM)
			return r;
		k8s_error_set(err, 400, "BadRequest", "%s", msg);
		return -EINVAL;
	}
	return 0;
}

/* cls is the API, which outlives every watch stream. */
static json_t *table_of_one(void *cls, const struct k8s_resource *res, const json_t *obj)
{
	json_t *items = json_pack("[O]", obj), *table;

	table = items ? k8s_table_new(cls, res, items, NULL) : NULL;
	json_decref(items);
	return table;
}

/* A Table for a List body, when kubectl asked for one. */
static int reply_table(struct k8s_api *api, const struct k8s_resource *res,
		       struct k8s_response *resp)
{
	json_t *list = json_loadb(resp->body, resp->len, 0, NULL);
	json_t *table;

	if (!list)
		return -ENOMEM;
	table = k8s_table_new(api, res, json_object_get(list, "items"),
			      json_object_get(list, "metadata"));
	json_decref(list);
	free(resp->body);
	resp->body = NULL;
	return k8s_reply_json(resp, 200, table);
}

/* ListOptions.meta.k8s.io validation of resourceVersionMatch
 * (apimachinery ValidateListOptions), answered as the API server does: 422
 * Invalid. The sim keeps no history, so an Exact list of any version but the
 * current one is refused (410 Expired) rather than served from now. */
static int check_rv_match(struct k8s_api *api, const struct k8s_request *req, bool watch,
			  struct k8s_error *err)
{
	const char *m = arg(req, "resourceVersionMatch"), *rv = arg(req, "resourceVersion");
	const char *why = NULL;
	uint64_t current;

	if (!m || !*m)
		return 0;
	if (!streq(m, "Exact") && !streq(m, "NotOlderThan")) {
		k8s_error_set(err, 422, "Invalid",
			      "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported "
			      "value: \"%.64s\": supported values: \"Exact\", \"NotOlderThan\"", m);
		return -EINVAL;
	}
	if (watch && !(streq(m, "NotOlderThan") && arg_true(req, "sendInitialEvents")))
		why = "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided";
	else if (!rv || !*rv)
		why = "resourceVersionMatch is forbidden unless resourceVersion is provided";
	else if (streq(m, "Exact") && streq(rv, "0"))
		why = "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"";
	if (why) {
		k8s_error_set(err, 422, "Invalid",
			      "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: %s",
			      why);
		return -EINVAL;
	}
	pthread_mutex_lock(&api->store->lock);
	current = api->store->rv;
	pthread_mutex_unlock(&api->store->lock);
	if (streq(m, "Exact") && strtoull(rv, NULL, 10) != current) {
		k8s_error_set(err, 410, "Expired", "The resourceVersion for the provided list is too old.");
		return -ESTALE;
	}
	return 0;
}

static int handle_watch(struct k8s_api *api, const struct k8s_request *req,
			const struct k8s_route *route, struct k8s_response *resp)
{
	struct k8s_watch_options opts = {
		.resource_version = arg(req, "resourceVersion"),
		.bookmarks = arg_true(req, "allowWatchBookmarks"),
		.send_initial_events = arg_true(req, "sendInitialEvents"),
	};
	struct k8s_selector *labels, *fields;
	struct k8s_error err = {};
	long long timeout;
	int r;

	if (k8s_query_int(req, "timeoutSeconds", &timeout, &err) < 0 || check_rv_match(api, req, true, &err) < 0)
		return k8s_reply_error(resp, &err);
	opts.timeout_seconds = timeout > 0 ? (long)MIN(timeout, (long long)INT32_MAX) : 0;
	opts.cut = &api->watch_cut;
	if (k8s_accepts_table(req->accept)) {
		opts.transform = table_of_one;
		opts.transform_cls = api;
	}
	if (parse_selectors(api, req, route, &labels, &fields, &err) < 0)
		return k8s_reply_error(resp, &err);
	r = k8s_watch_new(api->store, route->res, route->ns, labels, fields, &opts,
			  &resp->watch, &err);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	resp->status = 200;
	return 0;
}

static int handle_list(struct k8s_api *api, const struct k8s_request *req,
		       const struct k8s_route *route, struct k8s_response *resp)
{
	struct k8s_selector *labels, *fields;
	struct k8s_list_options opts = { .continue_token = arg(req, "continue") };
	struct k8s_error err = {};
	long long limit;
	int r;

	if (arg_true(req, "watch"))
		return handle_watch(api, req, route, resp);
	if (k8s_query_int(req, "limit", &limit, &err) < 0 || check_rv_match(api, req, false, &err) < 0)
		return k8s_reply_error(resp, &err);
	if (parse_selectors(api, req, route, &labels, &fields, &err) < 0)
		return k8s_reply_error(resp, &err);
	opts.labels = labels;
	opts.fields = fields;
	opts.limit = limit > 0 ? (long)limit : 0;
	/* Tables are built from the whole body; plain Lists stream. */
	if (req->stream_lists && !k8s_accepts_table(req->accept))
		r = k8s_store_list_stream(api->store, route->res, route->ns, &opts, &resp->list,
					  &err);
	else
		r = k8s_store_list(api->store, route->res, route->ns, &opts, &resp->body,
				   &resp->len, &err);
	k8s_selector_free(labels);
	k8s_selector_free(fields);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	resp->status = 200;
	if (k8s_accepts_table(req->accept))
		return reply_table(api, route->res, resp);
	return 0;
}

/* DeleteOptions from the body when there is one, else from the query. */
static int delete_options(const struct k8s_request *req, const struct k8s_resource *res,
			  json_t **body, struct k8s_delete_options *opts, struct k8s_error *err)
{
	*body = NULL;
	k8s_delete_options_init(opts);
	if (req->body_len > 0 && parse_body(req, res, body, err) < 0)
		return -EINVAL;
	return k8s_delete_options_parse(req, *body, opts, err);
}

static int handle_delete(struct k8s_api *api, const struct k8s_request *req,
			 const struct k8s_route *route, struct k8s_response *resp)
{
	struct k8s_delete_options opts;
	struct k8s_error err = {};
	json_t *body = NULL, *obj = NULL;
	bool gone = false;
	int r;

	r = delete_options(req, route->res, &body, &opts, &err);
	if (r >= 0)
		r = k8s_store_delete_gone(api->store, route->res, route->ns, route->name, &opts,
					  &obj, &gone, &err);
	json_decref(body);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	return k8s_reply_json(resp, 200, k8s_delete_answer(route->res, obj, gone));
}

static int handle_delete_collection(struct k8s_api *api, const struct k8s_request *req,
				    const struct k8s_route *route, struct k8s_response *resp)
{
	struct k8s_selector *labels = NULL, *fields = NULL;
	struct k8s_delete_options opts;
	struct k8s_list_options selected = {};
	struct k8s_error err = {};
	json_t *body = NULL;
	int r;

	/* ListOptions first, then DeleteOptions (handlers/delete.go DeleteCollection). */
	r = parse_selectors(api, req, route, &labels, &fields, &err);
	if (r >= 0)
		r = delete_options(req, route->res, &body, &opts, &err);
	if (r >= 0) {
		selected.labels = labels;
		selected.fields = fields;
		r = k8s_store_delete_collection(api->store, route->res, route->ns, &selected,
						&opts, &err);
	}
	k8s_selector_free(labels);
	k8s_selector_free(fields);
	json_decref(body);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	return k8s_reply_json(resp, 200, k8s_status_new(NULL));
}

struct patch_ctx {
	enum k8s_patch_type type;
	json_t *patch;
};

static json_t *apply_patch(const json_t *cur, void *userdata, struct k8s_error *err)
{
	struct patch_ctx *p = userdata;
	char msg[256] = "";
	json_t *out = NULL;
	int r;

	r = k8s_patch_apply(p->type, cur, p->patch, &out, msg, sizeof(msg));
	if (r == -EPROTO)
		k8s_error_set(err, 422, "Invalid", "%s", msg);
	else if (r < 0)
		k8s_error_set(err, 400, "BadRequest", "%s", msg);
	return r < 0 ? NULL : out;
}

/* The patch body of type p->type. */
static int decode_patch(const struct k8s_request *req, const struct k8s_resource *res,
			struct patch_ctx *p, struct k8s_error *err)
{
	struct yaml_docs *docs = NULL;
	char msg[512];

	if (p->type != K8S_PATCH_APPLY)
		return parse_body(req, res, &p->patch, err);
	if (yaml_docs_load_buffer(req->body ? req->body : "", req->body_len, "body", &docs,
				  msg, sizeof(msg)) < 0 || docs->n_docs != 1) {
		yaml_docs_free(docs);
		k8s_error_set(err, 400, "BadRequest", "error decoding YAML: %s", msg);
		return -EINVAL;
	}
	p->patch = json_incref(docs->docs[0]);
	yaml_docs_free(docs);
	return 0;
}

/* Warn's warnings: collected by the write, answered as headers. */
static int collect_warnings(struct k8s_write_options *opts, struct k8s_response *resp)
{
	opts->warnings = resp->warnings ? resp->warnings : json_array();
	resp->warnings = opts->warnings;
	return opts->warnings ? 0 : -ENOMEM;
}

static int handle_patch(struct k8s_api *api, const struct k8s_request *req,
			const struct k8s_route *route, enum k8s_write_mode mode,
			struct k8s_response *resp)
{
	struct k8s_write_options opts;
	struct patch_ctx p = {};
	struct k8s_error err = {};
	json_t *obj = NULL;
	int r;

	/* handlers/patch.go: the patch type, then PatchOptions, then the body. */
	if (k8s_patch_type_from_content_type(req->content_type, &p.type) < 0) {
		k8s_error_set(&err, 415, "UnsupportedMediaType",
			      "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json");
		return k8s_reply_error(resp, &err);
	}
	r = k8s_write_options_parse(req, p.type == K8S_PATCH_APPLY ? K8S_OPTIONS_APPLY
								   : K8S_OPTIONS_PATCH, &opts, &err);
	if (r >= 0 && streq(route->subresource, "scale"))
		return k8s_scale_handle(api, req, route, NULL, &opts, resp);
	if (r >= 0 && collect_warnings(&opts, resp) < 0)
		return -ENOMEM;
	opts.patch = true;
	opts.apply = p.type == K8S_PATCH_APPLY;
	if (r >= 0)
		r = decode_patch(req, route->res, &p, &err);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	r = k8s_store_mutate_opts(api->store, route->res, route->ns, route->name, mode, &opts,
				  apply_patch, &p, &obj, &err);
	/* Server-side apply creates what does not exist yet. */
	if (r == -ENOENT && p.type == K8S_PATCH_APPLY && mode == K8S_WRITE_MAIN) {
		k8s_error_clear(&err);
		r = k8s_store_create_opts(api->store, route->res, route->ns, p.patch, &opts, &obj,
					  &err);
		json_decref(p.patch);
		if (r < 0)
			return k8s_reply_error(resp, &err);
		return k8s_reply_json(resp, 201, obj);
	}
	json_decref(p.patch);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	return k8s_reply_json(resp, 200, obj);
}

static int handle_object(struct k8s_api *api, const struct k8s_request *req,
			 const struct k8s_route *route, struct k8s_response *resp)
{
	const char *sub = route->subresource;
	enum k8s_write_mode mode = streq(sub, "status") ? K8S_WRITE_STATUS : K8S_WRITE_MAIN;
	bool put = streq(req->method, "PUT"), post = streq(req->method, "POST");
	bool create_only = streq(sub, "binding") || streq(sub, "eviction");
	struct k8s_write_options opts = {};
	struct k8s_error err = {};
	json_t *body = NULL, *obj = NULL;
	int r;

	if (streq(req->method, "PATCH"))
		return handle_patch(api, req, route, mode, resp);
	/* The options come before the body: UpdateOptions for a PUT, and
	 * CreateOptions for the subresources that only create (handlers
	 * create.go and update.go). */
	if (((put && !create_only) || (post && create_only)) &&
	    k8s_write_options_parse(req, put ? K8S_OPTIONS_UPDATE : K8S_OPTIONS_CREATE, &opts,
				    &err) < 0)
		return k8s_reply_error(resp, &err);
	if (streq(sub, "scale")) {
		if (req->body_len > 0 && parse_body(req, route->res, &body, &err) < 0)
			return k8s_reply_error(resp, &err);
		r = k8s_scale_handle(api, req, route, body, put ? &opts : NULL, resp);
		json_decref(body);
		return r;
	}
	if (streq(req->method, "GET")) {
		r = k8s_store_get(api->store, route->res, route->ns, route->name, &obj, &err);
		if (r >= 0 && !*sub && k8s_accepts_table(req->accept)) {
			json_t *table = table_of_one(api, route->res, obj);

			json_decref(obj);
			return k8s_reply_json(resp, 200, table);
		}
	} else if (streq(req->method, "DELETE") && !*sub)
		return handle_delete(api, req, route, resp);
	else if (streq(req->method, "PUT") || streq(req->method, "POST")) {
		r = parse_body(req, route->res, &body, &err);
		if (r >= 0 && post && streq(sub, "binding"))
			r = k8s_pod_binding(api, route, body, &opts, resp);
		else if (r >= 0 && post && streq(sub, "eviction"))
			r = k8s_pod_eviction(api, route, body, &opts, resp);
		else if (r >= 0 && put && !create_only) {
			opts.require_resource_version = route->res->custom;
			if (collect_warnings(&opts, resp) < 0) {
				json_decref(body);
				return -ENOMEM;
			}
			r = k8s_store_update_opts(api->store, route->res, route->ns, route->name,
						  body, mode, &opts, &obj, &err);
		} else if (r >= 0) {
			k8s_error_set(&err, 405, "MethodNotAllowed",
				      "the server does not allow this method on the requested resource");
			r = -EINVAL;
		}
		json_decref(body);
		if (r >= 0 && !obj)
			return r;
	} else {
		k8s_error_set(&err, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		r = -EINVAL;
	}
	if (r < 0)
		return k8s_reply_error(resp, &err);
	return k8s_reply_json(resp, 200, obj);
}

static int handle_collection(struct k8s_api *api, const struct k8s_request *req,
			     const struct k8s_route *route, struct k8s_response *resp)
{
	struct k8s_write_options opts;
	struct k8s_error err = {};
	json_t *body = NULL, *obj = NULL;
	int r;

	if (streq(req->method, "GET"))
		return handle_list(api, req, route, resp);
	if (streq(req->method, "DELETE"))
		return handle_delete_collection(api, req, route, resp);
	if (!streq(req->method, "POST")) {
		k8s_error_set(&err, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return k8s_reply_error(resp, &err);
	}
	r = k8s_write_options_parse(req, K8S_OPTIONS_CREATE, &opts, &err);
	if (r >= 0 && collect_warnings(&opts, resp) < 0)
		return -ENOMEM;
	if (r >= 0)
		r = parse_body(req, route->res, &body, &err);
	if (r >= 0)
		r = k8s_store_create_opts(api->store, route->res, route->ns[0] ? route->ns : NULL,
					  body, &opts, &obj, &err);
	json_decref(body);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	return k8s_reply_json(resp, 201, obj);
}

static int dispatch(struct k8s_api *api, const struct k8s_request *req,
		    struct k8s_response *resp)
{
	struct k8s_route route;
	struct k8s_error err = {};
	int r;

	memset(resp, 0, sizeof(*resp));
	k8s_requests_record(api, req);
	r = k8s_faults_apply(api, req, resp);
	if (r != 0)
		return r < 0 ? r : 0;
	if (req->path && streq(req->method, "GET")) {
		r = k8s_openapi_handle(api, req->path, resp);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	if (k8s_route_parse(api->reg, req->path, &route, &err) < 0)
		return k8s_reply_error(resp, &err);
	if ((route.kind == K8S_ROUTE_GROUP &&
	     k8s_faults_unserved(api, route.group, NULL)) ||
	    (route.kind != K8S_ROUTE_GROUP && route.version[0] &&
	     k8s_faults_unserved(api, route.group, route.version))) {
		k8s_error_set(&err, 404, "NotFound", "the server could not find the requested resource");
		return k8s_reply_error(resp, &err);
	}
	r = k8s_faults_apply_route(api, &route, resp);
	if (r != 0)
		return r < 0 ? r : 0;
	if (route.res && route.res->namespaced && !route.ns[0] &&
	    route.kind == K8S_ROUTE_OBJECT) {
		k8s_error_set(&err, 404, "NotFound", "the server could not find the requested resource");
		return k8s_reply_error(resp, &err);
	}
	switch (route.kind) {
	case K8S_ROUTE_HEALTH:
		resp->status = 200;
		resp->body = strdup("\"ok\"");
		resp->len = resp->body ? 4 : 0;
		return resp->body ? 0 : -ENOMEM;
	case K8S_ROUTE_COLLECTION:
		return handle_collection(api, req, &route, resp);
	case K8S_ROUTE_OBJECT:
		return handle_object(api, req, &route, resp);
	default:
		if (!streq(req->method, "GET")) {
			k8s_error_set(&err, 405, "MethodNotAllowed",
				      "the server does not allow this method on the requested resource");
			return k8s_reply_error(resp, &err);
		}
		return k8s_discovery_handle(api, &route, resp);
	}
}

int k8s_api_handle(struct k8s_api *api, const struct k8s_request *req,
		   struct k8s_response *resp)
{
	struct k8s_request r = *req;
	bool pretty = k8s_request_pretty(req);
	int ret;

	/* A pretty answer is printed whole; watch streams never are (the
	 * stream serializer has no pretty form). OpenAPI documents are served
	 * as they are. */
	r.stream_lists = req->stream_lists && !pretty;
	ret = dispatch(api, &r, resp);
	if (ret < 0 || !pretty || resp->watch || (req->path && strncmp(req->path, "/openapi/", 9) == 0))
		return ret;
	return k8s_response_pretty(resp);
}
