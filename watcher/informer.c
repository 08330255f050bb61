/*
 * Informers (see informer.h). Each keeps the keys it has published with the
 * generation of the LIST that last confirmed them; when a LIST completes,
 * keys of older generations are gone from the API and are deleted. A v1alpha5
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

const struct informer_def informer_defs[] = {
	{ "/api/v1/pods", "v1", "Pod", "pods" },
	{ "/api/v1/nodes", "v1", "Node", "nodes" },
	{ "/apis/karpenter.sh/v1/nodepools", "karpenter.sh/v1", "NodePool", "nodepools" },
	{ "/apis/karpenter.sh/v1beta1/nodepools", "karpenter.sh/v1beta1", "NodePool",
	  "nodepools.v1beta1" },
	{ "/apis/karpenter.sh/v1alpha5/provisioners", "karpenter.sh/v1alpha5", "Provisioner",
	  "provisioners" },
	{ "/apis/karpenter.sh/v1/nodeclaims", "karpenter.sh/v1", "NodeClaim", "nodeclaims" },
	{ "/apis/karpenter.k8s.aws/v1/ec2nodeclasses", "karpenter.k8s.aws/v1", "EC2NodeClass",
	  "ec2nodeclasses" },
	{ "/apis/karpenter.k8s.aws/v1beta1/ec2nodeclasses", "karpenter.k8s.aws/v1beta1",
	  "EC2NodeClass", "ec2nodeclasses.v1beta1" },
	{ "/apis/karpenter.k8s.aws/v1alpha1/awsnodetemplates", "karpenter.k8s.aws/v1alpha1",
	  "AWSNodeTemplate", "awsnodetemplates" },
	{ "/apis/policy/v1/poddisruptionbudgets", "policy/v1", "PodDisruptionBudget",
	  "poddisruptionbudgets" },
	{ "/api/v1/persistentvolumeclaims", "v1", "PersistentVolumeClaim", "persistentvolumeclaims" },
	{ "/api/v1/persistentvolumes", "v1", "PersistentVolume", "persistentvolumes" },
	{ "/apis/storage.k8s.io/v1/storageclasses", "storage.k8s.io/v1", "StorageClass",
	  "storageclasses" },
	{ "/apis/apps/v1/daemonsets", "apps/v1", "DaemonSet", "daemonsets" },
	{ "/api/v1/namespaces", "v1", "Namespace", "namespaces" },
};
const size_t informer_n_defs = ARRAY_SIZE(informer_defs);

struct informer {
	const struct informer_def *def;
	struct kube_client *client;
	struct publisher *pub;
	struct kube_events *events;
	struct informer_metrics metrics;
	struct kube_watch *watch;
	struct hashmap seen; /* state key → (void *)generation */
	uintptr_t generation;
	bool synced;
	struct arena arena;
};

static void report_invalid(struct informer *inf, const json_t *obj, const char *why)
{
	const json_t *meta = json_object_get(obj, "metadata");
	struct kube_object_ref ref = {
		.api_version = inf->def->api_version,
		.kind = inf->def->kind,
		.namespace = json_string_value(json_object_get(meta, "namespace")),
		.name = json_string_value(json_object_get(meta, "name")),
		.uid = json_string_value(json_object_get(meta, "uid")),
	};

	metrics_counter_add(inf->metrics.decode_errors, 1, inf->def->resource, NULL);
	log_warn_kv(LOG_KV({ "resource", inf->def->resource }), "Failed to decode %s: %s",
		    inf->def->kind, why);
	if (ref.name && inf->events)
		kube_event_record(inf->events, &ref, KUBE_EVENT_WARNING, "FailedValidation", "%s", why);
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

	if (!name || !inf->client)
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
	if (!body || asprintf(&path, "%s/%s/status", inf->def->collection, name) < 0)
		return;
	kube_request(inf->client, "PATCH", path, "application/merge-patch+json", body,
		     on_status_written, inf);
}

/* Publishes one decoded object and remembers its key for the sweep. */
static int publish(struct informer *inf, enum proto_delta_op op, const struct proto_object *o)
{
	char key[STATE_KEY_MAX];
	int r;

	r = state_key(o, key, sizeof(key));
	if (r < 0)
		return r;
	r = publisher_apply(inf->pub, op, o);
	if (r < 0)
		return r;
	if (op == PROTO_DELTA_DELETE) {
		hashmap_remove(&inf->seen, key);
		return 0;
	}
	return hashmap_put(&inf->seen, key, (void *)inf->generation, NULL);
}

static void on_event(enum kube_event_type type, json_t *obj, void *userdata)
{
	struct informer *inf = userdata;
	struct decoder d = { .arena = &inf->arena };
	struct proto_object o;
	enum proto_delta_op op = type == KUBE_EVENT_DELETED ? PROTO_DELTA_DELETE :
				 type == KUBE_EVENT_ADDED ? PROTO_DELTA_ADD : PROTO_DELTA_UPDATE;
	int r;

	metrics_counter_add(inf->metrics.events, 1, inf->def->resource, NULL);
	/* LIST items carry no apiVersion/kind; the decoders need them. */
	json_object_set_new(obj, "apiVersion", json_string(inf->def->api_version));
	json_object_set_new(obj, "kind", json_string(inf->def->kind));
	r = decode_object(&d, inf->def->kind, obj, &o);
	if (op != PROTO_DELTA_DELETE && streq(inf->def->kind, "NodePool") && r != -ENOMEM) {
		bool valid = r >= 0 && o.nodepool->status == PROTO_NODEPOOL_OK;
		nodepool_set_validation(inf, obj, valid,
					r < 0 ? d.error : valid ? "" : o.nodepool->status_reason);
		if (r >= 0 && !valid) {
			struct kube_object_ref ref = { inf->def->api_version, inf->def->kind, NULL,
						       o.nodepool->name, o.nodepool->uid };
			log_warn_kv(LOG_KV({ "nodepool", o.nodepool->name }), "nodepool %s is invalid: %s",
				    o.nodepool->name, o.nodepool->status_reason);
			if (inf->events)
				kube_event_record(inf->events, &ref, KUBE_EVENT_WARNING, "FailedValidation",
						  "%s", o.nodepool->status_reason);
		}
	}
	if (r == -EINVAL) {
		if (op != PROTO_DELTA_DELETE)
			report_invalid(inf, obj, d.error);
	} else if (r < 0) {
		log_error_errno(r, "Failed to decode %s: %m", inf->def->kind);
	} else {
		r = publish(inf, op, &o);
		if (r >= 0 && streq(inf->def->kind, "Provisioner") &&
		    json_is_object(json_path(obj, "spec.provider"))) {
			struct proto_nodeclass *nc = arena_alloc(&inf->arena, sizeof(*nc));
			r = nc ? decode_nodeclass(&d, obj, nc) : -ENOMEM;
			if (r == -EINVAL)
				report_invalid(inf, obj, d.error);
			else if (r >= 0)
				r = publish(inf, op, &(struct proto_object){ .kind = PROTO_OBJECT_NODECLASS,
									     .nodeclass = nc });
		}
		if (r < 0 && r != -EINVAL)
			log_error_errno(r, "Failed to publish %s: %m", inf->def->kind);
	}
	arena_reset(&inf->arena);
}

static void on_relist(void *userdata)
{
	struct informer *inf = userdata;

	inf->generation++;
}

static void on_synced(const char *rv, void *userdata)
{
	struct informer *inf = userdata;
	struct state_store *store = publisher_store(inf->pub);
	const char *key;
	void *gen;
	size_t it = 0, gone = 0;

	/* Collect first: deleting while iterating would disturb the map. */
	char **stale = calloc(inf->seen.n + 1, sizeof(char *));
	if (!stale) {
		log_error("Failed to sweep %s after a list: out of memory", inf->def->resource);
		return;
	}
	while (hashmap_next(&inf->seen, &it, &key, &gen))
		if ((uintptr_t)gen != inf->generation && !(stale[gone++] = strdup(key)))
			gone--;
	for (size_t i = 0; i < gone; i++) {
		struct state_entry *e = hashmap_get(&store->objects, stale[i]);
		if (e) {
			struct proto_object copy;
			if (proto_object_dup(&e->obj, &copy) >= 0) {
				publisher_apply(inf->pub, PROTO_DELTA_DELETE, &copy);
				proto_object_free(&copy);
			}
		}
		hashmap_remove(&inf->seen, stale[i]);
		free(stale[i]);
	}
	free(stale);
	if (!inf->synced)
		log_info_kv(LOG_KV({ "resource", inf->def->resource }, { "resourceVersion", rv }),
			    "synced %s: %zu object(s)", inf->def->resource, inf->seen.n);
	else if (gone)
		log_info("relisted %s: %zu object(s) gone", inf->def->resource, gone);
	inf->synced = true;
}

static void on_error(const char *what, void *userdata)
{
	struct informer *inf = userdata;

	log_warn_kv(LOG_KV({ "resource", inf->def->resource }), "%s", what);
}

int informer_new(struct informer **ret, const struct informer_def *def, struct kube_client *c,
		 struct publisher *pub, struct kube_events *events,
		 const struct informer_metrics *metrics)
{
	struct informer *inf = calloc(1, sizeof(*inf));
	struct kube_watch_handlers h = { .on_relist = on_relist, .on_event = on_event,
					 .on_synced = on_synced, .on_error = on_error, .userdata = inf };
	int r;

	if (!inf)
		return -ENOMEM;
	inf->def = def;
	inf->client = c;
	inf->pub = pub;
	inf->events = events;
	inf->metrics = *metrics;
	r = kube_watch_start(c, def->collection, NULL, &h, &inf->watch);
	if (r < 0) {
		informer_free(inf);
		return r;
	}
	*ret = inf;
	return 0;
}

struct informer *informer_free(struct informer *inf)
{
	if (!inf)
		return NULL;
	kube_watch_free(inf->watch);
	hashmap_done(&inf->seen);
	arena_done(&inf->arena);
	free(inf);
	return NULL;
}

bool informer_synced(const struct informer *inf)
{
	return inf->synced;
}

const struct informer_def *informer_def_of(const struct informer *inf)
{
	return inf->def;
}
