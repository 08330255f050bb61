/*
 * Informers (see informer.h). Each keeps the keys it has published with the
 * generation of the LIST that last confirmed them; when a LIST completes,
 * keys of older generations are gone from the API and are deleted. The
 * same sweep empties an informer whose collection turns out not to be
 * served, and completes a switch from one version to another. A v1alpha5
 * Provisioner yields two objects: the NodePool and, from its inline
 * provider, the node class named after it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "watcher/decode.h"
#include "watcher/informer.h"

#define CORE(res, plural, kind, ok, ns) \
	{ res, "", plural, kind, ok, ns, false, { "v1" } }
#define GROUP(res, group, plural, kind, ok, ns, crd, ...) \
	{ res, group, plural, kind, ok, ns, crd, { __VA_ARGS__ } }

const struct informer_def informer_defs[] = {
	CORE("pods", "pods", "Pod", PROTO_OBJECT_POD, true),
	CORE("nodes", "nodes", "Node", PROTO_OBJECT_NODE, false),
	/* One CRD serves both versions of the same NodePools: v1 where served. */
	GROUP("nodepools", "karpenter.sh", "nodepools", "NodePool", PROTO_OBJECT_NODEPOOL, false,
	      true, "v1", "v1beta1"),
	GROUP("nodepools.v1beta1", "karpenter.sh", "nodepools", "NodePool", PROTO_OBJECT_NODEPOOL,
	      false, true, "v1beta1"),
	GROUP("provisioners", "karpenter.sh", "provisioners", "Provisioner", PROTO_OBJECT_NODEPOOL,
	      false, true, "v1alpha5"),
	GROUP("nodeclaims", "karpenter.sh", "nodeclaims", "NodeClaim", PROTO_OBJECT_NODECLAIM,
	      false, true, "v1"),
	GROUP("ec2nodeclasses", "karpenter.k8s.aws", "ec2nodeclasses", "EC2NodeClass",
	      PROTO_OBJECT_NODECLASS, false, true, "v1", "v1beta1"),
	GROUP("ec2nodeclasses.v1beta1", "karpenter.k8s.aws", "ec2nodeclasses", "EC2NodeClass",
	      PROTO_OBJECT_NODECLASS, false, true, "v1beta1"),
	GROUP("awsnodetemplates", "karpenter.k8s.aws", "awsnodetemplates", "AWSNodeTemplate",
	      PROTO_OBJECT_NODECLASS, false, true, "v1alpha1"),
	GROUP("poddisruptionbudgets", "policy", "poddisruptionbudgets", "PodDisruptionBudget",
	      PROTO_OBJECT_PDB, true, false, "v1"),
	CORE("persistentvolumeclaims", "persistentvolumeclaims", "PersistentVolumeClaim",
	     PROTO_OBJECT_PVC, true),
	CORE("persistentvolumes", "persistentvolumes", "PersistentVolume", PROTO_OBJECT_PV, false),
	GROUP("storageclasses", "storage.k8s.io", "storageclasses", "StorageClass",
	      PROTO_OBJECT_STORAGECLASS, false, false, "v1"),
	GROUP("daemonsets", "apps", "daemonsets", "DaemonSet", PROTO_OBJECT_DAEMONSET, true, false,
	      "v1"),
	CORE("namespaces", "namespaces", "Namespace", PROTO_OBJECT_NAMESPACE, false),
};
const size_t informer_n_defs = ARRAY_SIZE(informer_defs);

/* "/apis/karpenter.sh/v1beta1/nodepools": group, version and plural. */
#define INFORMER_COLLECTION_MAX 256

struct informer {
	const struct informer_def *def;
	struct informer_env env;
	struct informer_metrics metrics;
	const char *version; /* one of def->versions, or NULL */
	char collection[INFORMER_COLLECTION_MAX];
	char api_version[INFORMER_COLLECTION_MAX]; /* "karpenter.sh/v1beta1" */
	struct kube_watch *watch;
	struct hashmap seen; /* state key → (void *)generation */
	/* Keys a legacy informer yielded to a newer API's object (below). */
	struct hashmap shadowed;
	sd_event_source *relist_timer; /* a restore's relist, run from the loop */
	uintptr_t generation;
	unsigned lists; /* LISTs of the current watch: the first, then 410 relists */
	bool synced, absent;
	struct arena arena;
};

static void report_invalid(struct informer *inf, const json_t *obj, const char *why)
{
	const json_t *meta = json_object_get(obj, "metadata");
	struct kube_object_ref ref = {
		.api_version = inf->api_version,
		.kind = inf->def->kind,
		.namespace = json_string_value(json_object_get(meta, "namespace")),
		.name = json_string_value(json_object_get(meta, "name")),
		.uid = json_string_value(json_object_get(meta, "uid")),
	};

	metrics_counter_add(inf->metrics.decode_errors, 1, inf->def->resource, NULL);
	log_warn_kv(LOG_KV({ "resource", inf->def->resource }), "Failed to decode %s: %s",
		    inf->def->kind, why);
	if (ref.name && inf->env.events)
		kube_event_record(inf->env.events, &ref, KUBE_EVENT_WARNING, "FailedValidation", "%s",
				  why);
}

/* The NodePool condition the watcher owns (Karpenter v1's name for it). */
#define CONDITION_VALIDATION "ValidationSucceeded"

static const json_t *find_condition(const json_t *obj, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_path(obj, "status.conditions"), i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), type))
			return c;
	return NULL;
}

static void on_status_written(struct kube_client *c, const struct kube_response *resp,
			      void *userdata)
{
	(void)c;
	(void)userdata;
	if (resp->status != 200)
		log_warn("Failed to update a NodePool's status: %s",
			 resp->error ? resp->error : "no response");
}

/*
 * Sets ValidationSucceeded on a NodePool's status when it differs from what
 * the object already says (so our own write, echoed back, changes nothing).
 * Other conditions are kept: the patch carries the whole list.
 */
static void nodepool_set_validation(struct informer *inf, const json_t *obj, bool valid,
				    const char *why)
{
	const json_t *cur = find_condition(obj, CONDITION_VALIDATION);
	const char *name = json_string_value(json_path(obj, "metadata.name"));
	const char *want_status = valid ? "True" : "False";
	const char *want_msg = valid ? "" : why;
	_cleanup_free_ char *path = NULL, *body = NULL;
	json_t *conds, *patch, *c;
	size_t i;
	char now[32];
	time_t t = time(NULL);
	struct tm tm;

	if (!name || !inf->env.client)
		return;
	if (cur && streq_ptr(json_string_value(json_object_get(cur, "status")), want_status) &&
	    streq_ptr(json_string_value(json_object_get(cur, "message")) ?: "", want_msg))
		return;
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	conds = json_array();
	json_array_foreach(json_path(obj, "status.conditions"), i, c)
		if (!streq_ptr(json_string_value(json_object_get(c, "type")), CONDITION_VALIDATION))
			json_array_append(conds, c);
	json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type",
					       CONDITION_VALIDATION, "status", want_status, "reason",
					       valid ? "ValidationSucceeded" : "ValidationFailed",
					       "message", want_msg, "lastTransitionTime", now,
					       "observedGeneration",
					       json_integer_value(json_path(obj, "metadata.generation"))));
	patch = json_pack("{s:{s:o}}", "status", "conditions", conds);
	body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
	json_decref(patch);
	if (!body || asprintf(&path, "%s/%s/status", inf->collection, name) < 0)
		return;
	kube_request(inf->env.client, "PATCH", path, "application/merge-patch+json", body,
		     on_status_written, inf);
}

/*
 * A v1alpha5 Provisioner and a NodePool of the same name, or an
 * AWSNodeTemplate (or a Provisioner's inline provider) and an EC2NodeClass,
 * share one state key; both exist while a cluster migrates. The newer API
 * wins: a legacy informer yields the key (and never deletes what the newer
 * one published under it), and takes it back with a relist once the newer
 * object is deleted (informer_restore()).
 */
static bool object_is_legacy(const struct proto_object *o)
{
	return (o->kind == PROTO_OBJECT_NODEPOOL && o->nodepool->source_api == PROTO_API_V1ALPHA5) ||
	       (o->kind == PROTO_OBJECT_NODECLASS && o->nodeclass->source_api == PROTO_API_V1ALPHA5);
}

static bool informer_is_legacy(const struct informer *inf)
{
	return streq(inf->def->versions[0], "v1alpha5") || streq(inf->def->versions[0], "v1alpha1");
}

/* The entry under key was published by a newer API than this informer's. */
static bool key_held_by_newer_api(const struct informer *inf, const char *key)
{
	const struct state_entry *e = hashmap_get(&publisher_store(inf->env.pub)->objects, key);

	return informer_is_legacy(inf) && e && !object_is_legacy(&e->obj);
}

/* Publishes one decoded object and remembers its key for the sweep. */
static int publish(struct informer *inf, enum proto_delta_op op, const struct proto_object *o)
{
	char key[STATE_KEY_MAX];
	const char *ns, *name;
	int r;

	r = state_key(o, key, sizeof(key));
	if (r < 0)
		return r;
	if (object_is_legacy(o) && key_held_by_newer_api(inf, key)) {
		state_object_name(o, &ns, &name);
		if (!hashmap_get(&inf->shadowed, key))
			log_warn_kv(LOG_KV({ "resource", inf->def->resource }),
				    "%s %s is not used: a %s of the same name takes precedence",
				    inf->def->kind, name,
				    o->kind == PROTO_OBJECT_NODEPOOL ? "NodePool" : "EC2NodeClass");
		hashmap_remove(&inf->seen, key);
		return hashmap_put(&inf->shadowed, key, (void *)inf->generation, NULL);
	}
	r = publisher_apply(inf->env.pub, op, o);
	if (r < 0)
		return r;
	hashmap_remove(&inf->shadowed, key);
	return hashmap_put(&inf->seen, key, (void *)inf->generation, NULL);
}

/*
 * Deletes what this informer published under key, unless a newer API's
 * object holds the key now. A newer API's delete lets a legacy informer
 * that yielded the key take it back (env.on_released).
 */
static int release(struct informer *inf, const char *key)
{
	bool newer = key_held_by_newer_api(inf, key);
	int r = 0;

	hashmap_remove(&inf->shadowed, key);
	if (!newer && (r = publisher_delete(inf->env.pub, key)) < 0)
		return r;
	hashmap_remove(&inf->seen, key);
	if (!newer && r > 0 && !informer_is_legacy(inf) && inf->env.on_released)
		inf->env.on_released(inf, key, inf->env.userdata);
	return 0;
}

/* Deletes what this informer published under kind/ns/name, if anything. */
static int forget(struct informer *inf, enum proto_object_kind kind, const char *ns,
		  const char *name)
{
	char key[STATE_KEY_MAX];
	int r;

	r = state_key_of(kind, ns, name, key, sizeof(key));
	if (r < 0)
		return r;
	hashmap_remove(&inf->shadowed, key);
	return hashmap_get(&inf->seen, key) ? release(inf, key) : 0;
}

/*
 * A NodePool that cannot be decoded is invalid, as one with impossible
 * requirements is: published with status invalid and the reason, so that
 * a valid version published before stops being planned with (Karpenter
 * stops using a NodePool that fails validation).
 */
static int publish_invalid_nodepool(struct informer *inf, enum proto_delta_op op,
				    const json_t *obj, const char *why)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *version = strchr(inf->api_version, '/');
	struct proto_nodepool np = {
		.name = (char *)json_string_value(json_object_get(meta, "name")),
		.uid = (char *)(json_string_value(json_object_get(meta, "uid")) ?: ""),
		.resource_version = (char *)json_string_value(json_object_get(meta, "resourceVersion")),
		.source_api = streq_ptr(version, "/v1beta1") ? PROTO_API_V1BETA1 :
			      streq_ptr(version, "/v1alpha5") ? PROTO_API_V1ALPHA5 : PROTO_API_V1,
		.status = PROTO_NODEPOOL_INVALID,
		.status_reason = (char *)why,
	};

	if (!np.name || !*np.name)
		return 0; /* no key to publish it under */
	return publish(inf, op, &(struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL,
							 .nodepool = &np });
}

/* The node class a v1alpha5 Provisioner carries inline, or none any more. */
static int publish_provider(struct informer *inf, enum proto_delta_op op, const json_t *obj,
			    const char *name)
{
	struct decoder d = { .arena = &inf->arena };
	struct proto_object o;
	int r;

	if (!json_is_object(json_path(obj, "spec.provider")))
		return forget(inf, PROTO_OBJECT_NODECLASS, "", name);
	r = decode_object(&d, "AWSNodeTemplate", obj, &o);
	if (r == -EINVAL) {
		report_invalid(inf, obj, d.error);
		return 0;
	}
	return r < 0 ? r : publish(inf, op, &o);
}

/*
 * DELETED: the key is all it takes. The body may not decode (it is the
 * object's last state, which may be invalid); the object must go anyway,
 * or it would stay in every replica.
 */
static void on_deleted(struct informer *inf, const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = inf->def->namespaced ? json_string_value(json_object_get(meta, "namespace")) :
						"";
	int r;

	if (!name || !ns) {
		log_warn_kv(LOG_KV({ "resource", inf->def->resource }),
			    "Failed to delete a %s: its DELETED event names no object", inf->def->kind);
		return;
	}
	r = forget(inf, inf->def->object_kind, ns, name);
	if (r >= 0 && streq(inf->def->kind, "Provisioner"))
		r = forget(inf, PROTO_OBJECT_NODECLASS, "", name);
	if (r < 0)
		log_error_errno(r, "Failed to delete %s %s%s%s: %m", inf->def->kind, ns, *ns ? "/" : "",
				name);
}

static void on_event(enum kube_event_type type, json_t *obj, void *userdata)
{
	struct informer *inf = userdata;
	struct decoder d = { .arena = &inf->arena };
	struct proto_object o;
	enum proto_delta_op op = type == KUBE_EVENT_ADDED ? PROTO_DELTA_ADD : PROTO_DELTA_UPDATE;
	bool nodepool = inf->def->object_kind == PROTO_OBJECT_NODEPOOL;
	int r;

	metrics_counter_add(inf->metrics.events, 1, inf->def->resource, NULL);
	if (type == KUBE_EVENT_DELETED) {
		on_deleted(inf, obj);
		return;
	}
	/* LIST items carry no apiVersion/kind; the decoders need them. */
	json_object_set_new(obj, "apiVersion", json_string(inf->api_version));
	json_object_set_new(obj, "kind", json_string(inf->def->kind));
	r = decode_object(&d, inf->def->kind, obj, &o);
	if (streq(inf->def->kind, "NodePool") && r != -ENOMEM) {
		bool valid = r >= 0 && o.nodepool->status == PROTO_NODEPOOL_OK;
		nodepool_set_validation(inf, obj, valid,
					r < 0 ? d.error : valid ? "" : o.nodepool->status_reason);
	}
	if (nodepool && r >= 0 && o.nodepool->status != PROTO_NODEPOOL_OK) {
		struct kube_object_ref ref = { inf->api_version, inf->def->kind, NULL,
					       o.nodepool->name, o.nodepool->uid };
		log_warn_kv(LOG_KV({ "nodepool", o.nodepool->name }), "nodepool %s is invalid: %s",
			    o.nodepool->name, o.nodepool->status_reason);
		if (inf->env.events)
			kube_event_record(inf->env.events, &ref, KUBE_EVENT_WARNING, "FailedValidation",
					  "%s", o.nodepool->status_reason);
	}
	if (r == -EINVAL) {
		report_invalid(inf, obj, d.error);
		r = nodepool ? publish_invalid_nodepool(inf, op, obj, d.error) : 0;
	} else if (r >= 0) {
		r = publish(inf, op, &o);
		if (r >= 0 && streq(inf->def->kind, "Provisioner"))
			r = publish_provider(inf, op, obj, o.nodepool->name);
	}
	if (r == -EBADMSG || r == -EMSGSIZE)
		metrics_counter_add(inf->metrics.decode_errors, 1, inf->def->resource, NULL);
	else if (r < 0)
		log_error_errno(r, "Failed to publish %s: %m", inf->def->kind);
	arena_reset(&inf->arena);
}

/* Yielded keys whose legacy object did not come back in the last list. */
static void sweep_shadowed(struct informer *inf)
{
	const char *key;
	void *gen;
	size_t it = 0;

	while (hashmap_next(&inf->shadowed, &it, &key, &gen))
		if ((uintptr_t)gen != inf->generation) {
			hashmap_remove(&inf->shadowed, key);
			it = 0; /* the map changed under the iterator: start over */
		}
}

/* Deletes every key that the current generation has not confirmed. */
static size_t sweep(struct informer *inf)
{
	const char *key;
	void *gen;
	size_t it = 0, gone = 0;
	/* Collect first: deleting while iterating would disturb the map. */
	char **stale = calloc(inf->seen.n + 1, sizeof(char *));

	if (!stale) {
		log_error("Failed to sweep %s after a list: out of memory", inf->def->resource);
		return 0;
	}
	while (hashmap_next(&inf->seen, &it, &key, &gen))
		if ((uintptr_t)gen != inf->generation && !(stale[gone++] = strdup(key)))
			gone--;
	for (size_t i = 0; i < gone; i++) {
		int r = release(inf, stale[i]);
		if (r < 0)
			log_error_errno(r, "Failed to delete %s: %m", stale[i]);
		hashmap_remove(&inf->seen, stale[i]);
		free(stale[i]);
	}
	free(stale);
	sweep_shadowed(inf);
	return gone;
}

static void on_relist(void *userdata)
{
	struct informer *inf = userdata;

	inf->generation++;
	/* Relists the watch started on its own (410 Gone), not the first. */
	if (++inf->lists > 1 && inf->env.on_relist)
		inf->env.on_relist(inf, inf->env.userdata);
}

static void on_synced(const char *rv, void *userdata)
{
	struct informer *inf = userdata;
	size_t gone = sweep(inf);

	if (!inf->synced || inf->absent)
		log_info_kv(LOG_KV({ "resource", inf->def->resource }, { "resourceVersion", rv }),
			    "synced %s from %s: %zu object(s)", inf->def->resource, inf->collection,
			    inf->seen.n);
	else if (gone)
		log_info("relisted %s: %zu object(s) gone", inf->def->resource, gone);
	inf->synced = true;
	inf->absent = false;
}

/* Not served: the collection is empty. Said once per absence. */
static void become_absent(struct informer *inf, const char *why)
{
	bool was = inf->absent;
	size_t gone;

	inf->generation++;
	gone = sweep(inf);
	inf->synced = true;
	inf->absent = true;
	if (!was)
		log_info_kv(LOG_KV({ "resource", inf->def->resource }),
			    "%s: %s; treating it as empty (%zu object(s) deleted) and checking again",
			    inf->def->resource, why, gone);
}

static void on_absent(void *userdata)
{
	struct informer *inf = userdata;
	char why[INFORMER_COLLECTION_MAX + 64];

	snprintf(why, sizeof(why), "the API server does not serve %s (404)", inf->collection);
	become_absent(inf, why);
}

static void on_error(const char *what, void *userdata)
{
	struct informer *inf = userdata;

	log_warn_kv(LOG_KV({ "resource", inf->def->resource }), "%s", what);
}

/* LIST+WATCH inf->collection afresh. */
static int start_watch(struct informer *inf)
{
	struct kube_watch_handlers h = { .on_relist = on_relist, .on_event = on_event,
					 .on_synced = on_synced, .on_error = on_error,
					 .on_absent = on_absent, .userdata = inf };

	inf->watch = kube_watch_free(inf->watch);
	inf->lists = 0;
	return kube_watch_start(inf->env.client, inf->collection, NULL, &h, &inf->watch);
}

int informer_set_version(struct informer *inf, const char *version)
{
	const struct informer_def *def = inf->def;
	const char *was = inf->version;
	const char *const *v;
	char why[256];

	if (!version) {
		inf->watch = kube_watch_free(inf->watch);
		inf->version = NULL;
		snprintf(why, sizeof(why), "the API server serves no version of %s%s%s that kanna reads",
			 def->plural, *def->group ? "." : "", def->group);
		become_absent(inf, why);
		return 0;
	}
	for (v = def->versions; *v && !streq(*v, version); v++)
		;
	if (!*v)
		return -EINVAL;
	if (was == *v && inf->watch && !inf->absent)
		return 0;
	inf->watch = kube_watch_free(inf->watch);
	inf->version = *v;
	snprintf(inf->collection, sizeof(inf->collection), "/api%s%s/%s/%s", *def->group ? "s/" : "",
		 def->group, *v, def->plural);
	snprintf(inf->api_version, sizeof(inf->api_version), "%s%s%s", def->group,
		 *def->group ? "/" : "", *v);
	if (was && was != *v)
		log_info_kv(LOG_KV({ "resource", def->resource }), "%s: watching %s instead of %s",
			    def->resource, inf->api_version, was);
	return start_watch(inf);
}

int informer_new(struct informer **ret, const struct informer_def *def,
		 const struct informer_env *env)
{
	struct informer *inf = calloc(1, sizeof(*inf));

	if (!inf)
		return -ENOMEM;
	inf->def = def;
	inf->env = *env;
	inf->metrics = *env->metrics;
	inf->env.metrics = &inf->metrics;
	*ret = inf;
	return 0;
}

struct informer *informer_free(struct informer *inf)
{
	if (!inf)
		return NULL;
	sd_event_source_disable_unref(inf->relist_timer);
	kube_watch_free(inf->watch);
	hashmap_done(&inf->seen);
	hashmap_done(&inf->shadowed);
	arena_done(&inf->arena);
	free(inf);
	return NULL;
}

static int on_relist_timer(struct loop *loop, void *userdata)
{
	struct informer *inf = userdata;
	int r;

	(void)loop;
	inf->relist_timer = sd_event_source_disable_unref(inf->relist_timer);
	r = start_watch(inf);
	if (r < 0)
		log_error_errno(r, "Failed to list %s again: %m", inf->def->resource);
	return 0;
}

int informer_restore(struct informer *inf, const char *key)
{
	/* Yielded, or overwritten by the newer object after we published. */
	if (!informer_is_legacy(inf) || !inf->version ||
	    (!hashmap_get(&inf->shadowed, key) && !hashmap_get(&inf->seen, key)))
		return 0;
	log_info_kv(LOG_KV({ "resource", inf->def->resource }),
		    "%s: the newer object under %s is gone; listing again to use ours", inf->def->resource,
		    key);
	/* Called from inside another watch's transfer, where libcurl refuses
	 * to stop ours: relist from the loop. */
	if (inf->relist_timer)
		return 0;
	return loop_add_timer(kube_client_loop(inf->env.client), 0, on_relist_timer, inf,
			      &inf->relist_timer);
}

const char *informer_version(const struct informer *inf)
{
	return inf->version;
}

bool informer_synced(const struct informer *inf)
{
	return inf->synced;
}

bool informer_absent(const struct informer *inf)
{
	return inf->absent;
}

const struct informer_def *informer_def_of(const struct informer *inf)
{
	return inf->def;
}
