/*
 * Fault injection on kanna-sim's Kubernetes side: added latency, 500s and
 * 429s at a rate, 500s at a rate of their own for named resources
 * ("pods/binding", "events"), 500 on the next N pods/binding requests (a
 * bind that fails while the rest of the API works), watch streams cut after
 * N events, 410 Gone on the next resumed watches, and CRD versions answered
 * as not installed (so that clients can be tested against a cluster without
 * v1beta1 NodePools, or one whose CRDs appear later). Set from the config
 * (k8s-faults) or at run time with GET/POST /_sim/faults on the API port
 * (same token); a cut applies to open streams as to new ones, as a dropped
 * connection would. Draws come from a fixed-seed xorshift generator held in
 * struct k8s_api; every fault injected is counted (struct k8s_fault_counts,
 * shown by GET /_sim/status).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "sim/k8s-api.h"

/* The generator's seed: the same faults hit the same requests every run. */
#define K8S_FAULT_SEED 0x6b616e6e61u

void k8s_api_init(struct k8s_api *api, struct k8s_registry *reg, struct k8s_store *store)
{
	memset(&api->faults, 0, sizeof(api->faults));
	memset(&api->injected, 0, sizeof(api->injected));
	memset(&api->watch_cut, 0, sizeof(api->watch_cut));
	api->reg = reg;
	api->store = store;
	api->fault_rng = K8S_FAULT_SEED;
	pthread_mutex_init(&api->faults_lock, NULL);
	pthread_mutex_init(&api->requests_lock, NULL);
	api->requests = NULL;
}

void k8s_api_done(struct k8s_api *api)
{
	pthread_mutex_destroy(&api->faults_lock);
	k8s_requests_done(api);
	pthread_mutex_destroy(&api->requests_lock);
}

static double rate_of(const json_t *v, bool *ok)
{
	double d = json_number_value(v);

	*ok = *ok && json_is_number(v) && d >= 0 && d <= 1;
	return d;
}

static unsigned count_of(const json_t *v, unsigned max, bool *ok)
{
	json_int_t i = json_integer_value(v);

	*ok = *ok && json_is_integer(v) && i >= 0 && i <= (json_int_t)max;
	return (unsigned)i;
}

/* ["karpenter.sh/v1beta1", …]: named groups only (the core group stays). */
static bool unserved_of(const json_t *v, struct k8s_faults *f)
{
	const json_t *e;
	size_t i;

	if (!json_is_array(v) || json_array_size(v) > K8S_FAULT_MAX_UNSERVED)
		return false;
	json_array_foreach(v, i, e) {
		const char *gv = json_string_value(e);
		const char *slash = gv ? strchr(gv, '/') : NULL;

		if (!slash || slash == gv || !slash[1] || strchr(slash + 1, '/') ||
		    strlen(gv) >= K8S_FAULT_GROUP_VERSION_MAX)
			return false;
		snprintf(f->unserved[f->n_unserved++], K8S_FAULT_GROUP_VERSION_MAX, "%s", gv);
	}
	return true;
}

/* A resource name as RBAC writes it: "pods", "pods/binding". */
static bool resource_name_ok(const char *name)
{
	const char *slash = strchr(name, '/');

	if (!*name || strlen(name) >= K8S_FAULT_RESOURCE_MAX || slash == name ||
	    (slash && (!slash[1] || strchr(slash + 1, '/'))))
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' ||
		      *c == '.' || *c == '/'))
			return false;
	return true;
}

/* {"pods/binding": 0.3, "events": 0.3} */
static bool error_rates_of(const json_t *v, struct k8s_faults *f)
{
	const char *name;
	json_t *rate;

	if (!json_is_object(v) || json_object_size(v) > K8S_FAULT_MAX_ERROR_RATES)
		return false;
	json_object_foreach((json_t *)v, name, rate) {
		struct k8s_fault_error_rate *e = &f->error_rates[f->n_error_rates];
		bool ok = true;

		if (!resource_name_ok(name))
			return false;
		e->rate = rate_of(rate, &ok);
		if (!ok)
			return false;
		snprintf(e->resource, sizeof(e->resource), "%s", name);
		f->n_error_rates++;
	}
	return true;
}

int k8s_faults_from_json(const json_t *j, struct k8s_faults *ret, char *err, size_t errlen)
{
	struct k8s_faults f = {};
	const char *key;
	json_t *v;

	if (!json_is_object(j)) {
		snprintf(err, errlen, "faults must be a JSON object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)j, key, v) {
		bool ok = true;

		if (streq(key, "error5xxRate"))
			f.error_5xx_rate = rate_of(v, &ok);
		else if (streq(key, "throttleRate"))
			f.throttle_rate = rate_of(v, &ok);
		else if (streq(key, "latencyMs"))
			f.latency_ms = count_of(v, K8S_FAULT_MAX_LATENCY_MS, &ok);
		else if (streq(key, "watchCutAfterEvents"))
			f.watch_cut_after = count_of(v, 1u << 30, &ok);
		else if (streq(key, "watchGone"))
			f.watch_gone = count_of(v, 1u << 30, &ok);
		else if (streq(key, "bindingErrors"))
			f.binding_errors = count_of(v, 1u << 30, &ok);
		else if (streq(key, "unservedVersions"))
			ok = unserved_of(v, &f);
		else if (streq(key, "errorRates"))
			ok = error_rates_of(v, &f);
		else
			ok = false;
		if (!ok) {
			snprintf(err, errlen, "invalid fault \"%s\" (rates are 0..1, counts >= 0, latencyMs <= %d, "
				 "unservedVersions at most %d \"group/version\" strings, errorRates at most %d "
				 "\"resource\" or \"resource/subresource\" keys with rates)",
				 key, K8S_FAULT_MAX_LATENCY_MS, K8S_FAULT_MAX_UNSERVED,
				 K8S_FAULT_MAX_ERROR_RATES);
			return -EINVAL;
		}
	}
	*ret = f;
	return 0;
}

static bool has_subresource(const struct k8s_resource *r, const char *sub)
{
	static const struct {
		const char *name;
		unsigned flag;
	} subs[] = { { "status", K8S_SUB_STATUS }, { "scale", K8S_SUB_SCALE },
		     { "binding", K8S_SUB_BINDING }, { "eviction", K8S_SUB_EVICTION } };

	for (size_t i = 0; i < ARRAY_SIZE(subs); i++)
		if (streq(sub, subs[i].name))
			return r->subresources & subs[i].flag;
	return false;
}

int k8s_faults_validate(const struct k8s_registry *reg, const struct k8s_faults *f,
			char *err, size_t errlen)
{
	for (unsigned i = 0; i < f->n_error_rates; i++) {
		char plural[K8S_FAULT_RESOURCE_MAX];
		const char *sub;
		bool found = false;

		snprintf(plural, sizeof(plural), "%s", f->error_rates[i].resource);
		sub = strchr(plural, '/');
		if (sub)
			plural[sub - plural] = '\0';
		sub = sub ? f->error_rates[i].resource + (sub - plural) + 1 : NULL;
		for (size_t k = 0; !found && k < reg->n_resources; k++)
			found = streq(reg->resources[k].plural, plural) &&
				(!sub || has_subresource(&reg->resources[k], sub));
		if (!found) {
			snprintf(err, errlen, "invalid fault \"errorRates\": the server has no resource \"%s\"",
				 f->error_rates[i].resource);
			return -EINVAL;
		}
	}
	return 0;
}

json_t *k8s_faults_to_json(const struct k8s_faults *f)
{
	json_t *unserved = json_array(), *rates = json_object();

	for (unsigned i = 0; unserved && i < f->n_unserved; i++)
		json_array_append_new(unserved, json_string(f->unserved[i]));
	for (unsigned i = 0; rates && i < f->n_error_rates; i++)
		json_object_set_new(rates, f->error_rates[i].resource, json_real(f->error_rates[i].rate));
	return json_pack("{s:f, s:f, s:i, s:i, s:i, s:i, s:o*, s:o*}", "error5xxRate", f->error_5xx_rate,
			 "throttleRate", f->throttle_rate, "latencyMs", (int)f->latency_ms,
			 "watchCutAfterEvents", (int)f->watch_cut_after, "watchGone",
			 (int)f->watch_gone, "bindingErrors", (int)f->binding_errors,
			 "unservedVersions", unserved, "errorRates", rates);
}

json_t *k8s_faults_injected_json(struct k8s_api *api)
{
	json_t *rates = json_object(), *out;
	struct k8s_fault_counts *c = &api->injected;

	pthread_mutex_lock(&api->faults_lock);
	for (unsigned i = 0; rates && i < c->n_resource_errors; i++)
		json_object_set_new(rates, c->resource_errors[i].resource,
				    json_integer((json_int_t)c->resource_errors[i].n));
	if (rates && c->resource_errors_other)
		json_object_set_new(rates, "other", json_integer((json_int_t)c->resource_errors_other));
	out = json_pack("{s:I, s:I, s:I, s:I, s:I, s:o*}", "error5xx", (json_int_t)c->error_5xx,
			"throttle", (json_int_t)c->throttle, "latency", (json_int_t)c->latency,
			"watchGone", (json_int_t)c->watch_gone,
			"watchCut", (json_int_t)__atomic_load_n(&api->watch_cut.count, __ATOMIC_RELAXED),
			"errorRates", rates);
	pthread_mutex_unlock(&api->faults_lock);
	return out;
}

/* Lock held. Uniform in [0, 1). */
static double draw(struct k8s_api *api)
{
	uint64_t x = api->fault_rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	api->fault_rng = x;
	return (double)(x >> 11) / (double)(1ULL << 53);
}

static int admin(struct k8s_api *api, const struct k8s_request *req, struct k8s_response *resp)
{
	struct k8s_error err = {};
	struct k8s_faults f;
	char msg[256];
	json_t *body;

	if (streq(req->method, "POST")) {
		body = json_loadb(req->body ? req->body : "", req->body_len, JSON_REJECT_DUPLICATES, NULL);
		if (!body || k8s_faults_from_json(body, &f, msg, sizeof(msg)) < 0 ||
		    k8s_faults_validate(api->reg, &f, msg, sizeof(msg)) < 0) {
			json_decref(body);
			k8s_error_set(&err, 400, "BadRequest", "%s", body ? msg : "faults must be JSON");
			return k8s_reply_error(resp, &err);
		}
		json_decref(body);
		k8s_faults_set(api, &f);
	} else if (!streq(req->method, "GET")) {
		k8s_error_set(&err, 405, "MethodNotAllowed", "GET or POST /_sim/faults");
		return k8s_reply_error(resp, &err);
	}
	pthread_mutex_lock(&api->faults_lock);
	f = api->faults;
	pthread_mutex_unlock(&api->faults_lock);
	return k8s_reply_json(resp, 200, k8s_faults_to_json(&f));
}

static bool is_binding(const struct k8s_request *req)
{
	size_t n = req->path ? strlen(req->path) : 0;

	return streq_ptr(req->method, "POST") && n > 8 && streq(req->path + n - 8, "/binding");
}

static bool is_resumed_watch(const struct k8s_request *req)
{
	const char *w = req->arg ? req->arg(req->arg_cls, "watch") : NULL;
	const char *rv = req->arg ? req->arg(req->arg_cls, "resourceVersion") : NULL;

	return k8s_query_bool(w) && rv && *rv && !streq(rv, "0");
}

int k8s_faults_apply(struct k8s_api *api, const struct k8s_request *req,
		     struct k8s_response *resp)
{
	struct k8s_error err = {};
	unsigned latency;
	int fault = 0;

	if (req->path && streq(req->path, "/_sim/faults"))
		return admin(api, req, resp) < 0 ? -ENOMEM : 1;
	if (req->path && streq(req->path, "/_sim/status"))
		return k8s_admin_status(api, req, resp) < 0 ? -ENOMEM : 1;
	pthread_mutex_lock(&api->faults_lock);
	latency = api->faults.latency_ms;
	if (api->faults.watch_gone > 0 && is_resumed_watch(req)) {
		api->faults.watch_gone--;
		fault = 410;
		api->injected.watch_gone++;
	} else if (api->faults.binding_errors > 0 && is_binding(req)) {
		api->faults.binding_errors--;
		fault = 500;
		api->injected.error_5xx++;
	} else if (api->faults.throttle_rate > 0 && draw(api) < api->faults.throttle_rate) {
		fault = 429;
		api->injected.throttle++;
	} else if (api->faults.error_5xx_rate > 0 && draw(api) < api->faults.error_5xx_rate) {
		fault = 500;
		api->injected.error_5xx++;
	}
	if (latency)
		api->injected.latency++;
	pthread_mutex_unlock(&api->faults_lock);
	if (latency) {
		struct timespec ts = { .tv_sec = latency / 1000, .tv_nsec = (long)(latency % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
	if (fault == 410)
		k8s_error_set(&err, 410, "Expired", "too old resource version (injected fault)");
	else if (fault == 429) {
		k8s_error_set(&err, 429, "TooManyRequests",
			      "Too many requests, please try again later. (injected fault)");
		err.details = json_pack("{s:i}", "retryAfterSeconds", 1);
		resp->retry_after = 1;
	} else if (fault == 500)
		k8s_error_set(&err, 500, "InternalError", "Internal error occurred: injected fault");
	else
		return 0;
	return k8s_reply_error(resp, &err) < 0 ? -ENOMEM : 1;
}

/* Lock held. */
static void count_resource_error(struct k8s_fault_counts *c, const char *resource)
{
	unsigned i;

	for (i = 0; i < c->n_resource_errors; i++)
		if (streq(c->resource_errors[i].resource, resource))
			break;
	if (i == c->n_resource_errors) {
		if (i == ARRAY_SIZE(c->resource_errors)) {
			c->resource_errors_other++;
			return;
		}
		snprintf(c->resource_errors[i].resource, sizeof(c->resource_errors[i].resource), "%s",
			 resource);
		c->n_resource_errors++;
	}
	c->resource_errors[i].n++;
}

int k8s_faults_apply_route(struct k8s_api *api, const struct k8s_route *route,
			   struct k8s_response *resp)
{
	char resource[2 * K8S_ROUTE_SEGMENT_MAX + 2];
	struct k8s_error err = {};
	bool fault = false;

	if (!route->res)
		return 0;
	snprintf(resource, sizeof(resource), "%s%s%s", route->res->plural,
		 route->subresource[0] ? "/" : "", route->subresource);
	pthread_mutex_lock(&api->faults_lock);
	for (unsigned i = 0; i < api->faults.n_error_rates; i++) {
		const struct k8s_fault_error_rate *e = &api->faults.error_rates[i];

		if (!streq(e->resource, resource))
			continue;
		fault = e->rate > 0 && draw(api) < e->rate;
		if (fault)
			count_resource_error(&api->injected, e->resource);
		break;
	}
	pthread_mutex_unlock(&api->faults_lock);
	if (!fault)
		return 0;
	k8s_error_set(&err, 500, "InternalError", "Internal error occurred: injected fault (%s)",
		      resource);
	return k8s_reply_error(resp, &err) < 0 ? -ENOMEM : 1;
}

void k8s_faults_set(struct k8s_api *api, const struct k8s_faults *f)
{
	pthread_mutex_lock(&api->faults_lock);
	api->faults = *f;
	k8s_watch_cut_set(&api->watch_cut, f->watch_cut_after);
	pthread_mutex_unlock(&api->faults_lock);
}

static bool hidden(const struct k8s_faults *f, const char *group, const char *version)
{
	char gv[K8S_FAULT_GROUP_VERSION_MAX];

	snprintf(gv, sizeof(gv), "%s/%s", group, version);
	for (unsigned i = 0; i < f->n_unserved; i++)
		if (streq(f->unserved[i], gv))
			return true;
	return false;
}

bool k8s_faults_unserved(struct k8s_api *api, const char *group, const char *version)
{
	bool ret = false, any = false;

	if (!group || !*group)
		return false;
	pthread_mutex_lock(&api->faults_lock);
	if (api->faults.n_unserved == 0) {
		ret = false;
	} else if (version) {
		ret = hidden(&api->faults, group, version);
	} else {
		ret = true;
		for (size_t i = 0; i < api->reg->n_resources; i++) {
			const struct k8s_resource *r = &api->reg->resources[i];

			if (!streq(r->group, group))
				continue;
			any = true;
			ret = ret && hidden(&api->faults, group, r->version);
		}
		ret = ret && any;
	}
	pthread_mutex_unlock(&api->faults_lock);
	return ret;
}
