/*
 * Fault injection on kanna-sim's Kubernetes side: added latency, 500s and
 * 429s at a rate, watch streams cut after N events, 410 Gone on the next
 * resumed watches, 500 on the next pods/binding requests (a bind that
 * fails while the rest of the API works), and CRD versions answered as not installed (so that
 * clients can be tested against a cluster without v1beta1 NodePools, or
 * one whose CRDs appear later). Set from the config (k8s-faults) or at run
 * time with GET/POST /_sim/faults on the API port (same token). Draws come
 * from a fixed-seed xorshift generator held in struct k8s_api.
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
	api->reg = reg;
	api->store = store;
	api->fault_rng = K8S_FAULT_SEED;
	pthread_mutex_init(&api->faults_lock, NULL);
}

void k8s_api_done(struct k8s_api *api)
{
	pthread_mutex_destroy(&api->faults_lock);
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
		else
			ok = false;
		if (!ok) {
			snprintf(err, errlen, "invalid fault \"%s\" (rates are 0..1, counts >= 0, latencyMs <= %d, "
				 "unservedVersions at most %d \"group/version\" strings)",
				 key, K8S_FAULT_MAX_LATENCY_MS, K8S_FAULT_MAX_UNSERVED);
			return -EINVAL;
		}
	}
	*ret = f;
	return 0;
}

json_t *k8s_faults_to_json(const struct k8s_faults *f)
{
	json_t *unserved = json_array();

	for (unsigned i = 0; unserved && i < f->n_unserved; i++)
		json_array_append_new(unserved, json_string(f->unserved[i]));
	return json_pack("{s:f, s:f, s:i, s:i, s:i, s:i, s:o*}", "error5xxRate", f->error_5xx_rate,
			 "throttleRate", f->throttle_rate, "latencyMs", (int)f->latency_ms,
			 "watchCutAfterEvents", (int)f->watch_cut_after, "watchGone",
			 (int)f->watch_gone, "bindingErrors", (int)f->binding_errors,
			 "unservedVersions", unserved);
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
		body = json_loadb(req->body ? req->body : "", req->body_len, 0, NULL);
		if (!body || k8s_faults_from_json(body, &f, msg, sizeof(msg)) < 0) {
			json_decref(body);
			k8s_error_set(&err, 400, "BadRequest", "%s", body ? msg : "faults must be JSON");
			return k8s_reply_error(resp, &err);
		}
		json_decref(body);
		pthread_mutex_lock(&api->faults_lock);
		api->faults = f;
		pthread_mutex_unlock(&api->faults_lock);
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

	return w && (streq(w, "1") || streq(w, "true")) && rv && *rv && !streq(rv, "0");
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
	} else if (api->faults.binding_errors > 0 && is_binding(req)) {
		api->faults.binding_errors--;
		fault = 500;
	} else if (api->faults.throttle_rate > 0 && draw(api) < api->faults.throttle_rate)
		fault = 429;
	else if (api->faults.error_5xx_rate > 0 && draw(api) < api->faults.error_5xx_rate)
		fault = 500;
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

unsigned k8s_faults_watch_cut(struct k8s_api *api)
{
	unsigned n;

	pthread_mutex_lock(&api->faults_lock);
	n = api->faults.watch_cut_after;
	pthread_mutex_unlock(&api->faults_lock);
	return n;
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
