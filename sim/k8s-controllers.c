/*
 * The Deployment controller-lite and the thread that runs kanna-sim's
 * controllers. A Deployment owns its pods directly (no ReplicaSet layer):
 * it creates pods from spec.template until spec.replicas exist, deletes the
 * least useful ones (unbound, then not ready, then newest) when scaled down,
 * reports status (with upstream's Available and Progressing conditions) and
 * writes ScalingReplicaSet Events. Writes go through the store API only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/util.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"

struct k8s_controllers {
	struct k8s_store *store;
	k8s_controller_fn extra;
	void *extra_userdata;
	uint64_t pod_gc_quarantine_ms;
	json_t *pod_gc_missing;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
};

static void snapshot_one(struct k8s_object *o, void *userdata)
{
	json_t *obj = k8s_object_parse(o);

	if (obj)
		json_array_append_new(userdata, obj);
}

json_t *k8s_controller_snapshot(struct k8s_store *store, const char *group,
				const char *plural)
{
	const struct k8s_resource *res = k8s_registry_find(store->reg, group, "v1", plural);
	json_t *arr = json_array();

	if (res && arr)
		k8s_store_foreach(store, res, NULL, snapshot_one, arr);
	return arr;
}

static const char *meta(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

struct owned_pod {
	char *name;
	int usefulness; /* lower is deleted first, as ReplicaSet's ActivePods */
	uint64_t rv;
};

struct owned_scan {
	const char *uid;
	struct owned_pod *pods;
	size_t n, ready;
};

static void scan_owned(struct k8s_object *o, void *userdata)
{
	struct owned_scan *s = userdata;
	struct owned_pod *v;

	if (o->deleting)
		return;
	for (size_t i = 0; i < o->n_owners; i++) {
		if (!streq(o->owners[i], s->uid))
			continue;
		v = realloc(s->pods, (s->n + 1) * sizeof(*v));
		if (!v)
			return;
		s->pods = v;
		v[s->n].name = strdup(o->name);
		if (!v[s->n].name)
			return;
		v[s->n].usefulness = !o->node_name ? 0 : !o->pod_ready ? 1 : 2;
		v[s->n].rv = o->rv;
		s->ready += o->pod_ready;
		s->n++;
		return;
	}
}

uint32_t k8s_template_hash(const json_t *tmpl)
{
	char *s = json_dumps(tmpl, JSON_COMPACT | JSON_SORT_KEYS);
	uint32_t h = 2166136261u; /* FNV-1a */

	for (const char *p = s; p && *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	free(s);
	return h;
}

static json_t *pod_from_template(const json_t *d, const char *hash)
{
	const json_t *tmpl = json_object_get(json_object_get(d, "spec"), "template");
	const json_t *tmeta = json_object_get(tmpl, "metadata");
	json_t *labels = json_deep_copy(json_object_get(tmeta, "labels"));
	char gen[300];

	if (!labels)
		labels = json_object();
	json_object_set_new(labels, "pod-template-hash", json_string(hash));
	snprintf(gen, sizeof(gen), "%s-%s-", meta(d, "name"), hash);
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:O?, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]},"
			 " s:O}",
			 "apiVersion", "v1", "kind", "Pod", "metadata", "generateName", gen,
			 "namespace", meta(d, "namespace"), "labels", labels, "annotations",
			 json_object_get(tmeta, "annotations"), "ownerReferences", "apiVersion",
			 "apps/v1", "kind", "Deployment", "name", meta(d, "name"), "uid",
			 meta(d, "uid"), "controller", 1, "blockOwnerDeletion", 1, "spec",
			 json_object_get(tmpl, "spec") ?: json_object());
}

static int cmp_usefulness(const void *a, const void *b)
{
	const struct owned_pod *x = a, *y = b;

	if (x->usefulness != y->usefulness)
		return x->usefulness - y->usefulness;
	/* Most recently written first among equals. */
	return x->rv < y->rv ? 1 : x->rv > y->rv ? -1 : 0;
}

static json_t *set_status(const json_t *cur, void *userdata, struct k8s_error *err)
{
	json_t *out = json_deep_copy(cur);

	json_object_set(out, "status", userdata);
	return out;
}

/* Creates or deletes pods until want exist; *have: how many exist after. */
static int scale_pods(struct k8s_store *store, const json_t *d, struct owned_scan *s,
		      json_int_t want, size_t *have)
{
	const struct k8s_resource *pod_res = k8s_registry_find(store->reg, "", "v1", "pods");
	const char *ns = meta(d, "namespace");
	char hash[16];
	int writes = 0;
	size_t i;

	if (s->n > 0)
		qsort(s->pods, s->n, sizeof(*s->pods), cmp_usefulness);
	for (i = 0; i + (size_t)want < s->n; i++) {
		struct k8s_delete_options opts;
		struct k8s_error err = {};

		k8s_delete_options_init(&opts);
		if (k8s_store_delete(store, pod_res, ns, s->pods[i].name, &opts, NULL, &err) >= 0) {
			writes++;
			(*have)--;
		}
		k8s_error_clear(&err);
	}
	snprintf(hash, sizeof(hash), "%08x",
		 k8s_template_hash(json_object_get(json_object_get(d, "spec"), "template")));
	for (i = s->n; i < (size_t)want; i++) {
		json_t *pod = pod_from_template(d, hash);
		struct k8s_error err = {};

		if (pod && k8s_store_create(store, pod_res, ns, pod, NULL, &err) >= 0) {
			writes++;
			(*have)++;
		} else
			log_warn("Failed to create pod for deployment %s/%s: %s", ns, meta(d, "name"),
				 err.message);
		k8s_error_clear(&err);
		json_decref(pod);
	}
	return writes;
}

/*
 * ScalingReplicaSet, as the Deployment controller words it, when spec.replicas
 * moved away from what status last reported (replacing a lost pod is not a
 * scaling). The "replica set" is the pods' name prefix: the sim keeps no
 * ReplicaSet objects, but its pods are named as if it did.
 */
static void record_scaling(struct k8s_store *store, const json_t *d, json_int_t from,
			   json_int_t want)
{
	static const struct k8s_event_source source = { .component = "deployment-controller" };
	struct k8s_event_ref ref;

	if (from == want)
		return;
	k8s_event_ref_of(d, &ref);
	(void)k8s_event_record(store, &ref, &source, K8S_EVENT_NORMAL, "ScalingReplicaSet",
			       "Scaled %s replica set %s-%08x from %lld to %lld",
			       want > from ? "up" : "down", meta(d, "name"),
			       k8s_template_hash(json_object_get(json_object_get(d, "spec"), "template")),
			       (long long)from, (long long)want);
}

/*
 * The Available condition's threshold: spec.replicas less maxUnavailable
 * (RollingUpdate, default 25% rounded down; Recreate: 0), as upstream.
 */
static json_int_t min_available(const json_t *d, json_int_t want)
{
	const json_t *strategy = json_object_get(json_object_get(d, "spec"), "strategy");
	const json_t *max = json_object_get(json_object_get(strategy, "rollingUpdate"),
					    "maxUnavailable");
	const char *pct = json_string_value(max);
	json_int_t unavailable = want / 4;

	if (streq_ptr(json_string_value(json_object_get(strategy, "type")), "Recreate"))
		unavailable = 0;
	else if (json_is_integer(max))
		unavailable = json_integer_value(max);
	else if (pct)
		unavailable = want * strtoll(pct, NULL, 10) / 100;
	return want - MIN(MAX(unavailable, 0), want);
}

/*
 * One DeploymentCondition; the old one stays as it is while its status and
 * reason do (upstream's SetDeploymentCondition), and a new one keeps the old
 * lastTransitionTime when only the reason changed.
 */
static json_t *deployment_condition(const json_t *d, const char *type, bool ok,
				    const char *reason, const char *message, const char *now)
{
	const json_t *c, *old = NULL;
	const char *status = ok ? "True" : "False";
	size_t i;

	json_array_foreach(json_object_get(json_object_get(d, "status"), "conditions"), i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), type))
			old = c;
	if (old && streq_ptr(json_string_value(json_object_get(old, "status")), status) &&
	    streq_ptr(json_string_value(json_object_get(old, "reason")), reason))
		return json_deep_copy(old);
	if (old && streq_ptr(json_string_value(json_object_get(old, "status")), status))
		now = json_string_value(json_object_get(old, "lastTransitionTime")) ?: now;
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status,
			 "lastUpdateTime", now, "lastTransitionTime", now, "reason", reason,
			 "message", message);
}

/* DeploymentStatus as upstream reports it (zero counts are omitted there too). */
static json_t *deployment_status(const json_t *d, json_int_t want, json_int_t have,
				 json_int_t ready)
{
	json_int_t gen = json_integer_value(json_object_get(json_object_get(d, "metadata"),
							    "generation"));
	bool complete = have == want && ready == want;
	char now[32], rs[300], progress[400];
	json_t *status, *conditions;

	k8s_timestamp(now, 0);
	snprintf(rs, sizeof(rs), "%s-%08x", meta(d, "name"),
		 k8s_template_hash(json_object_get(json_object_get(d, "spec"), "template")));
	snprintf(progress, sizeof(progress), "ReplicaSet \"%s\" %s.", rs,
		 complete ? "has successfully progressed" : "is progressing");
	conditions = json_pack("[o, o]",
			       deployment_condition(d, "Available", ready >= min_available(d, want),
						    ready >= min_available(d, want)
							    ? "MinimumReplicasAvailable"
							    : "MinimumReplicasUnavailable",
						    ready >= min_available(d, want)
							    ? "Deployment has minimum availability."
							    : "Deployment does not have minimum availability.",
						    now),
			       deployment_condition(d, "Progressing", true,
						    complete ? "NewReplicaSetAvailable" : "ReplicaSetUpdated",
						    progress, now));
	status = json_pack("{s:I, s:I, s:I, s:I, s:I, s:o}", "observedGeneration", gen, "replicas",
			   have, "updatedReplicas", have, "readyReplicas", ready, "availableReplicas",
			   ready, "conditions", conditions);
	if (status && want > ready)
		json_object_set_new(status, "unavailableReplicas", json_integer(want - ready));
	return status;
}

static int reconcile_one(struct k8s_store *store, const json_t *d)
{
	const struct k8s_resource *pod_res = k8s_registry_find(store->reg, "", "v1", "pods");
	const struct k8s_resource *dep_res = k8s_registry_find(store->reg, "apps", "v1", "deployments");
	json_int_t want = json_integer_value(json_object_get(json_object_get(d, "spec"), "replicas"));
	const json_t *reported = json_object_get(json_object_get(d, "status"), "replicas");
	struct owned_scan s = { .uid = meta(d, "uid") };
	size_t have;
	int writes;
	json_t *status;

	if (!s.uid)
		return 0;
	k8s_store_foreach(store, pod_res, meta(d, "namespace"), scan_owned, &s);
	have = s.n;
	writes = scale_pods(store, d, &s, want, &have);
	if (writes > 0)
		record_scaling(store, d, reported ? json_integer_value(reported) : (json_int_t)s.n,
			       want);
	status = deployment_status(d, want, (json_int_t)have, (json_int_t)s.ready);
	if (status && !json_equal(status, json_object_get(d, "status"))) {
		struct k8s_error err = {};

		if (k8s_store_mutate(store, dep_res, meta(d, "namespace"), meta(d, "name"),
				     K8S_WRITE_STATUS, set_status, status, NULL, &err) >= 0)
			writes++;
		k8s_error_clear(&err);
	}
	json_decref(status);
	for (size_t i = 0; i < s.n; i++)
		free(s.pods[i].name);
	free(s.pods);
	return writes;
}

int k8s_deployments_reconcile(struct k8s_store *store)
{
	json_t *deps = k8s_controller_snapshot(store, "apps", "deployments");
	const json_t *d;
	size_t i;
	int writes = 0;

	if (!deps)
		return -ENOMEM;
	json_array_foreach(deps, i, d)
		if (!meta(d, "deletionTimestamp")) {
			int r = reconcile_one(store, d);

			writes += r > 0 ? r : 0;
		}
	json_decref(deps);
	return writes;
}

static void *controllers_main(void *userdata)
{
	struct k8s_controllers *c = userdata;
	uint64_t seen = 0, last_pass = 0;

	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		struct timespec ts;
		uint64_t rv;

		pthread_mutex_unlock(&c->lock);
		k8s_store_lock(c->store);
		rv = c->store->rv;
		k8s_store_unlock(c->store);
		if (rv != seen || clock_monotonic_ms() - last_pass >= K8S_CONTROLLER_TICK_MS) {
			seen = rv;
			last_pass = clock_monotonic_ms();
			(void)k8s_deployments_reconcile(c->store);
			(void)k8s_statefulsets_reconcile(c->store);
			(void)k8s_daemonsets_reconcile(c->store);
			(void)k8s_disruption_reconcile(c->store);
			(void)k8s_podgc_reconcile(c->store, c->pod_gc_missing, c->pod_gc_quarantine_ms,
						  clock_monotonic_ms());
			(void)k8s_scheduler_reconcile(c->store);
			if (c->extra)
				c->extra(c->extra_userdata);
		}
		pthread_mutex_lock(&c->lock);
		ts = clock_realtime_in_ms(K8S_CONTROLLER_INTERVAL_MS);
		if (!c->stop)
			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int k8s_controllers_start(struct k8s_store *store, k8s_controller_fn extra,
			  void *extra_userdata, uint64_t pod_gc_quarantine_ms,
			  struct k8s_controllers **ret)
{
	struct k8s_controllers *c = calloc(1, sizeof(*c));

	if (!c || !(c->pod_gc_missing = json_object())) {
		free(c);
		return -ENOMEM;
	}
	c->pod_gc_quarantine_ms = pod_gc_quarantine_ms;
	c->store = store;
	c->extra = extra;
	c->extra_userdata = extra_userdata;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (pthread_create(&c->thread, NULL, controllers_main, c) != 0) {
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->cond);
		json_decref(c->pod_gc_missing);
		free(c);
		return -EAGAIN;
	}
	*ret = c;
	return 0;
}

struct k8s_controllers *k8s_controllers_free(struct k8s_controllers *c)
{
	if (!c)
		return NULL;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	json_decref(c->pod_gc_missing);
	free(c);
	return NULL;
}
