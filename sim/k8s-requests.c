/*
 * What each client of kanna-sim's Kubernetes API asked for, as an
 * authorizer sees it: every request (but /_sim/) is turned into the
 * attributes kube-apiserver's RequestInfoFactory derives from the URL
 * (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go NewRequestInfo:
 * GET on a collection is list, or watch with ?watch=1; DELETE on one is
 * deletecollection; POST create, PUT update, PATCH patch; the namespace,
 * resource, name and subresource from the path, before any routing) and
 * counted per (User-Agent, verb, API group, resource, subresource,
 * namespace), or per (User-Agent, verb, path) for non-resource URLs, with
 * up to K8S_REQUEST_NAMES object names each (rules with resourceNames need
 * them). An end-to-end test checks each daemon's requests against its
 * RBAC (tests/e2e/rbac.sh). Thread-safe: requests_lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/util.h"
#include "sim/k8s-api.h"

/* Distinct tuples kept; more are counted in "dropped" only. */
#define K8S_REQUEST_SLOTS 4096
#define K8S_REQUEST_MAX (K8S_REQUEST_SLOTS * 3 / 4)
#define K8S_REQUEST_NAMES 4
#define K8S_REQUEST_PARTS 7

enum part { UA, VERB, GROUP, RESOURCE, SUBRESOURCE, NAMESPACE, PATH };

struct request_count {
	char *parts[K8S_REQUEST_PARTS]; /* NULL: empty */
	uint64_t hash, n;
	char *names[K8S_REQUEST_NAMES];
	bool more_names;
};

struct k8s_request_counts {
	struct request_count slots[K8S_REQUEST_SLOTS];
	size_t used;
	uint64_t dropped;
};

static const char *const part_keys[K8S_REQUEST_PARTS] = {
	"userAgent", "verb", "apiGroup", "resource", "subresource", "namespace", "nonResourceURL",
};

/* Up to 8 path segments, as requestinfo.go's splitPath (longer paths are
 * cut: nothing kanna sends has more). */
struct segments {
	char s[K8S_ROUTE_MAX_SEGMENTS][K8S_ROUTE_SEGMENT_MAX];
	size_t n;
};

static void split(const char *path, struct segments *out)
{
	out->n = 0;
	while (path && *path && out->n < K8S_ROUTE_MAX_SEGMENTS) {
		size_t len;

		while (*path == '/')
			path++;
		if (!*path)
			break;
		len = strcspn(path, "/");
		snprintf(out->s[out->n++], K8S_ROUTE_SEGMENT_MAX, "%.*s",
			 (int)MIN(len, (size_t)K8S_ROUTE_SEGMENT_MAX - 1), path);
		path += len;
	}
}

static void lower(char *out, size_t size, const char *s)
{
	size_t i;

	for (i = 0; s && s[i] && i + 1 < size; i++)
		out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
	out[i] = '\0';
}

/* NewRequestInfo, less fieldSelector names and the /watch/ and /proxy/
 * path verbs (no kanna client sends them): parts[] point into seg. */
static void request_info(const struct k8s_request *req, struct segments *seg,
			 const char *parts[K8S_REQUEST_PARTS], const char **name, char verb[24])
{
	const char *m = req->method ?: "";
	size_t i = 0;

	lower(verb, 24, m);
	split(req->path, seg);
	parts[PATH] = req->path;
	if (seg->n < 3 || !(streq(seg->s[0], "api") || streq(seg->s[0], "apis")))
		return;
	i = 1;
	if (streq(seg->s[0], "apis")) {
		if (seg->n < 4)
			return;
		parts[GROUP] = seg->s[i++];
	}
	i++; /* the version */
	parts[PATH] = NULL;
	strcpy(verb, streq(m, "POST") ? "create" : streq(m, "GET") || streq(m, "HEAD") ? "get"
		     : streq(m, "PUT") ? "update" : streq(m, "PATCH") ? "patch"
		     : streq(m, "DELETE") ? "delete" : "");
	if (i < seg->n && streq(seg->s[i], "namespaces") && i + 1 < seg->n) {
		parts[NAMESPACE] = seg->s[i + 1];
		if (i + 2 < seg->n && !streq(seg->s[i + 2], "status") &&
		    !streq(seg->s[i + 2], "finalize"))
			i += 2;
	}
	if (i < seg->n)
		parts[RESOURCE] = seg->s[i];
	if (i + 1 < seg->n)
		*name = seg->s[i + 1];
	if (i + 2 < seg->n)
		parts[SUBRESOURCE] = seg->s[i + 2];
	if (!*name && streq(verb, "get"))
		strcpy(verb, req->arg && k8s_query_bool(req->arg(req->arg_cls, "watch")) ? "watch"
											 : "list");
	if (!*name && streq(verb, "delete"))
		strcpy(verb, "deletecollection");
}

static bool same(const struct request_count *c, const char *const parts[K8S_REQUEST_PARTS])
{
	for (size_t i = 0; i < K8S_REQUEST_PARTS; i++)
		if (!streq_ptr(c->parts[i], parts[i]))
			return false;
	return true;
}

static void add_name(struct request_count *c, const char *name)
{
	size_t i;

	if (!name)
		return;
	for (i = 0; i < K8S_REQUEST_NAMES && c->names[i]; i++)
		if (streq(c->names[i], name))
			return;
	if (i == K8S_REQUEST_NAMES || !(c->names[i] = strdup(name)))
		c->more_names = true;
}

static void count(struct k8s_request_counts *t, const char *const parts[K8S_REQUEST_PARTS],
		  const char *name)
{
	uint64_t h = HASH_FNV1A64_OFFSET;
	size_t at;

	for (size_t i = 0; i < K8S_REQUEST_PARTS; i++)
		h = hash_fnv1a64_field(h, parts[i] ?: "");
	for (at = h % K8S_REQUEST_SLOTS; t->slots[at].n; at = (at + 1) % K8S_REQUEST_SLOTS)
		if (t->slots[at].hash == h && same(&t->slots[at], parts)) {
			t->slots[at].n++;
			add_name(&t->slots[at], name);
			return;
		}
	if (t->used >= K8S_REQUEST_MAX) {
		t->dropped++;
		return;
	}
	for (size_t i = 0; i < K8S_REQUEST_PARTS; i++)
		if (parts[i] && *parts[i] && !(t->slots[at].parts[i] = strdup(parts[i]))) {
			while (i--)
				free(t->slots[at].parts[i]), t->slots[at].parts[i] = NULL;
			t->dropped++;
			return;
		}
	t->slots[at].hash = h;
	t->slots[at].n = 1;
	t->used++;
	add_name(&t->slots[at], name);
}

void k8s_requests_record(struct k8s_api *api, const struct k8s_request *req)
{
	struct segments *seg;
	const char *parts[K8S_REQUEST_PARTS] = { 0 }, *name = NULL;
	char verb[24];

	if (!req->path || strncmp(req->path, "/_sim/", 6) == 0)
		return;
	seg = malloc(sizeof(*seg));
	if (!seg)
		return;
	request_info(req, seg, parts, &name, verb);
	parts[UA] = req->user_agent;
	parts[VERB] = verb;
	pthread_mutex_lock(&api->requests_lock);
	if (!api->requests)
		api->requests = calloc(1, sizeof(*api->requests));
	if (api->requests)
		count(api->requests, parts, name);
	pthread_mutex_unlock(&api->requests_lock);
	free(seg);
}

json_t *k8s_requests_json(struct k8s_api *api)
{
	json_t *list = json_array(), *out;
	uint64_t dropped = 0;

	if (!list)
		return NULL;
	pthread_mutex_lock(&api->requests_lock);
	for (size_t i = 0; api->requests && i < K8S_REQUEST_SLOTS; i++) {
		const struct request_count *c = &api->requests->slots[i];
		json_t *e, *names;

		if (!c->n)
			continue;
		e = json_pack("{s:I}", "count", (json_int_t)c->n);
		for (size_t k = 0; e && k < K8S_REQUEST_PARTS; k++)
			if (c->parts[k])
				json_object_set_new(e, part_keys[k], json_string(c->parts[k]));
		names = c->names[0] ? json_array() : NULL;
		for (size_t k = 0; names && k < K8S_REQUEST_NAMES && c->names[k]; k++)
			json_array_append_new(names, json_string(c->names[k]));
		if (e && names)
			json_object_set_new(e, "names", names);
		else
			json_decref(names);
		if (e && c->more_names)
			json_object_set_new(e, "moreNames", json_true());
		if (e)
			json_array_append_new(list, e);
	}
	if (api->requests)
		dropped = api->requests->dropped;
	pthread_mutex_unlock(&api->requests_lock);
	out = json_pack("{s:o, s:I}", "counts", list, "dropped", (json_int_t)dropped);
	return out;
}

void k8s_requests_done(struct k8s_api *api)
{
	struct k8s_request_counts *t = api->requests;

	if (!t)
		return;
	for (size_t i = 0; i < K8S_REQUEST_SLOTS; i++) {
		for (size_t k = 0; k < K8S_REQUEST_PARTS; k++)
			free(t->slots[i].parts[k]);
		for (size_t k = 0; k < K8S_REQUEST_NAMES; k++)
			free(t->slots[i].names[k]);
	}
	free(t);
	api->requests = NULL;
}
