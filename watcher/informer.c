/*
 * Informers (see informer.h). Each marks the store entries it publishes
 * with its bit (state_entry owners), and those its current LIST has found
 * again (listed): a LIST starts by clearing its listed bits, and when it
 * completes, the entries it owns but has not listed are gone from the API
 * and are deleted. The marks live in the entries, so the informers keep no
 * copy of 100,000 keys (a key map cost the watcher ~9 MB). The same sweep
 * empties an informer whose collection turns out not to be served, and
 * completes a switch from one version to another. A v1alpha5 Provisioner
 * yields two objects: the NodePool and, from its inline provider, the node
 * class named after it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "decode/decode.h"
#include "model/budget.h"
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
	GROUP("nodeoverlays", "karpenter.sh", "nodeoverlays", "NodeOverlay", PROTO_OBJECT_NODEOVERLAY,
	      false, true, "v1alpha1"),
};
const size_t informer_n_defs = ARRAY_SIZE(informer_defs);
/* An informer's mark is a bit of the entries' 16-bit owners and listed. */
_Static_assert(ARRAY_SIZE(informer_defs) <= 16, "one owner bit per informer");

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
	uint32_t bit; /* its mark in state entries: 1 << its index in informer_defs */
	/* Keys a legacy informer yielded to a newer API's object (below), with
	 * the generation of the LIST that last found them. */
	struct hashmap shadowed;
	uintptr_t generation; /* LISTs started, for shadowed */
	sd_event_source *relist_timer; /* a restore's relist, run from the loop */
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
	char prefix[2 * PROTO_MAX_NAME_LEN + 8];

	metrics_counter_add(inf->metrics.decode_errors, 1, inf->def->resource, NULL);
	log_warn_kv(LOG_KV({ "resource", inf->def->resource }), "Failed to decode %s: %s",
		    inf->def->kind, why);
	if (!ref.name || !inf->env.events)
		return;
	/* A pod waiting for a node is never scheduled by us while it does not
	 * decode: say so where its user looks, as Karpenter's FailedScheduling
	 * does (the Event is on the pod, so the message need not name it). */
	if (inf->def->object_kind == PROTO_OBJECT_POD &&
	    !json_string_value(json_path(obj, "spec.nodeName"))) {
		snprintf(prefix, sizeof(prefix), "pod %s/%s: ", ref.namespace ? ref.namespace : "",
			 ref.name);
		if (!strncmp(why, prefix, strlen(prefix)))
			why += strlen(prefix);
		kube_event_record(inf->env.events, &ref, KUBE_EVENT_WARNING, "FailedScheduling",
				  "Failed to schedule pod, %s", why);
		return;
	}
	kube_event_record(inf->env.events, &ref, KUBE_EVENT_WARNING, "FailedValidation", "%s", why);
}

/* The NodePool conditions the informer decides: Karpenter v1's
 * ValidationSucceeded, and ours for the disruption budgets (Karpenter
 * leaves these to its CRD's CEL rules; an API server without them, or a
 * schedule CEL cannot check, would otherwise fail silently in the reaper).
 * nodepool-status.c writes them with the rest of the status. */
#define CONDITION_VALIDATION "ValidationSucceeded"
#define CONDITION_BUDGETS "DisruptionBudgetsValid"

static enum proto_api_version informer_api(const struct informer *inf)
{
	return streq_ptr(inf->version, "v1beta1")  ? PROTO_API_V1BETA1 :
	       streq_ptr(inf->version, "v1alpha5") ? PROTO_API_V1ALPHA5 : PROTO_API_V1;
}

/* Hands the pool's status as seen, and what its decode says, to the
 * status writer. */
static void nodepool_observe(struct informer *inf, const json_t *obj, const struct proto_nodepool *np,
			     const struct nodepool_condition *want, size_t n)
{
	const char *nodeclass = json_string_value(json_path(obj, "spec.template.spec.nodeClassRef.name"));
	int r;

	if (!inf->env.nodepool_status)
		return;
	/* A reference to another kind of node class finds none, whatever its
	 * name: NodeClassReady=False NodeClassNotFound, as Karpenter's. */
	if (np && !decode_nodeclass_ref_supported(np->nodeclass_ref.group, np->nodeclass_ref.kind,
						   np->source_api == PROTO_API_V1ALPHA5))
		nodeclass = NULL;
	r = nodepool_status_observe(inf->env.nodepool_status, inf->def->kind, inf->collection,
				    informer_api(inf), obj, nodeclass, want, n);
	if (r < 0)
		log_warn_errno(r, "Failed to note the status of %s: %m", inf->def->kind);
}

/* The first malformed budget of a decoded NodePool, in err (false: none). */
static bool nodepool_budget_problem(const struct proto_nodepool *np, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < np->n_budgets; i++)
		if (budget_validate(&np->budgets[i], i, err, errlen) < 0)
			return true;
	return false;
}

/* A malformed min-savings annotation: a warning and a FailedValidation
 * Event naming it; the reaper ignores that threshold, nothing else stops. */
static void report_min_savings(struct informer *inf, const struct proto_nodepool *np)
{
	struct kube_object_ref ref = { inf->api_version, inf->def->kind, NULL, np->name, np->uid };
	struct min_savings ms;
	char err[512];

	if (min_savings_parse(np, &ms, err, sizeof(err)) >= 0)
		return;
	log_warn_kv(LOG_KV({ "nodepool", np->name }), "nodepool %s has a malformed minimum "
		    "savings, that threshold is ignored: %s", np->name, err);
	if (inf->env.events)
		kube_event_record(inf->env.events, &ref, KUBE_EVENT_WARNING, "FailedValidation",
				  "Consolidation minimum savings: %s", err);
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

/* e holds an object of a newer API than this informer's. */
static bool entry_held_by_newer_api(const struct informer *inf, const struct state_entry *e)
{
	return e && informer_is_legacy(inf) && !object_is_legacy(&e->obj);
}

/* A legacy object leaves the key to the newer one in e, and says so once. */
static int yield(struct informer *inf, const struct proto_object *o, struct state_entry *e)
{
	char key[STATE_KEY_MAX];
	const char *ns, *name;
	int r;

	r = state_key(o, key, sizeof(key));
	if (r < 0)
		return r;
	e->owners &= ~inf->bit;
	e->listed &= ~inf->bit;
	if (!hashmap_get(&inf->shadowed, key)) {
		state_object_name(o, &ns, &name);
		log_warn_kv(LOG_KV({ "resource", inf->def->resource }),
			    "%s %s is not used: a %s of the same name takes precedence", inf->def->kind,
			    name, o->kind == PROTO_OBJECT_NODEPOOL ? "NodePool" : "EC2NodeClass");
	}
	return hashmap_put(&inf->shadowed, key, (void *)inf->generation, NULL);
}

/* Publishes one decoded object and marks it as this list's, for the sweep. */
static int publish(struct informer *inf, enum proto_delta_op op, const struct proto_object *o)
{
	struct state_store *s = publisher_store(inf->env.pub);
	struct state_entry *e;
	char key[STATE_KEY_MAX];
	int r;

	bool was_pending = false;

	if (object_is_legacy(o) && entry_held_by_newer_api(inf, e = state_store_find(s, o)))
		return yield(inf, o, e);
	if (o->kind == PROTO_OBJECT_POD && inf->env.on_pending) {
		e = state_store_find(s, o);
		was_pending = e && state_pod_is_unschedulable(e->obj.pod);
	}
	r = publisher_apply(inf->env.pub, op, o);
	if (r < 0)
		return r;
	e = state_store_find(s, o);
	if (e) {
		e->owners |= inf->bit;
		e->listed |= inf->bit;
	}
	if (e && !was_pending && o->kind == PROTO_OBJECT_POD && inf->env.on_pending &&
	    state_pod_is_unschedulable(e->obj.pod))
		inf->env.on_pending(e->obj.pod, inf->env.userdata);
	if (inf->shadowed.n && state_key(o, key, sizeof(key)) >= 0)
		hashmap_remove(&inf->shadowed, key);
	return 0;
}

/*
 * Deletes what this informer published under key (e), unless a newer API's
 * object holds the key now. A newer API's delete lets a legacy informer
 * that yielded or had published the key take it back (env.on_released).
 */
static int release(struct informer *inf, struct state_entry *e, const char *key)
{
	uint32_t others = e->owners & ~inf->bit;
	/* e is gone after the delete */
	bool pool_or_class = e->obj.kind == PROTO_OBJECT_NODEPOOL || e->obj.kind == PROTO_OBJECT_NODECLASS;
	int r;

	if (entry_held_by_newer_api(inf, e)) {
		e->owners &= ~inf->bit;
		e->listed &= ~inf->bit;
		return 0;
	}
	/* a pool a relist did not find again: no status to write any more */
	if (e->obj.kind == PROTO_OBJECT_NODEPOOL && inf->env.nodepool_status)
		nodepool_status_forget(inf->env.nodepool_status, inf->def->kind, e->obj.nodepool->name);
	r = publisher_delete(inf->env.pub, key);
	if (r > 0 && pool_or_class && !informer_is_legacy(inf) && inf->env.on_released)
		inf->env.on_released(inf, key, others, inf->env.userdata);
	return r < 0 ? r : 0;
}

/* Deletes what this informer published under kind/ns/name, if anything. */
static int forget(struct informer *inf, enum proto_object_kind kind, const char *ns,
		  const char *name)
{
	struct state_entry *e = (struct state_entry *)state_store_get(publisher_store(inf->env.pub),
								      kind, ns, name);
	bool owned = e && (e->owners & inf->bit);
	char key[STATE_KEY_MAX];
	int r;

	if (!owned && !inf->shadowed.n)
		return 0;
	r = state_key_of(kind, ns, name, key, sizeof(key));
	if (r < 0)
		return r;
	hashmap_remove(&inf->shadowed, key);
	return owned ? release(inf, e, key) : 0;
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

/*
 * A NodeOverlay: ValidationSucceeded (and the Ready over it) says whether
 * kanna applies it, naming the field when not; one that does not decode is
 * published invalid, so that a valid version before it stops applying.
 */
static int nodeoverlay_event(struct informer *inf, enum proto_delta_op op, const json_t *obj,
			     struct decoder *d, struct proto_object *o, int r)
{
	const json_t *meta = json_object_get(obj, "metadata");
	struct proto_nodeoverlay stub = {
		.name = (char *)json_string_value(json_object_get(meta, "name")),
		.uid = (char *)json_string_value(json_object_get(meta, "uid")),
		.resource_version = (char *)json_string_value(json_object_get(meta, "resourceVersion")),
		.invalid = d->error,
	};
	const char *why = r < 0 ? d->error : o->nodeoverlay->invalid;
	const struct nodepool_condition want[] = {
		{ CONDITION_VALIDATION, !why, "ValidationSucceeded",
		  why && strstr(why, " supported by kanna") ? "UnsupportedField" : "ValidationFailed",
		  why },
	};

	if (inf->env.nodepool_status &&
	    nodepool_status_observe(inf->env.nodepool_status, inf->def->kind, inf->collection,
				    PROTO_API_V1, obj, NULL, want, ARRAY_SIZE(want)) < 0)
		log_warn("Failed to note the status of a NodeOverlay: out of memory");
	if (why)
		log_warn_kv(LOG_KV({ "nodeoverlay", stub.name ?: "" }),
			    "nodeoverlay %s is not applied: %s", stub.name ?: "", why);
	if (r >= 0)
		return publish(inf, op, o);
	report_invalid(inf, obj, d->error);
	if (!stub.name || !*stub.name)
		return 0;
	return publish(inf, op, &(struct proto_object){ .kind = PROTO_OBJECT_NODEOVERLAY,
							 .nodeoverlay = &stub });
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
	if ((inf->def->object_kind == PROTO_OBJECT_NODEPOOL ||
	     inf->def->object_kind == PROTO_OBJECT_NODEOVERLAY) && inf->env.nodepool_status)
		nodepool_status_forget(inf->env.nodepool_status, inf->def->kind, name);
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
	/* LIST items carry no apiVersion/kind; the NodePool and node class
	 * decoders convert by them (the others never look: a pod's item is
	 * left as it came, so its tree is dropped without a walk). */
	if (nodepool || inf->def->object_kind == PROTO_OBJECT_NODECLASS) {
		json_object_set_new(obj, "apiVersion", json_string(inf->api_version));
		json_object_set_new(obj, "kind", json_string(inf->def->kind));
	}
	r = decode_object(&d, inf->def->kind, obj, &o);
	if (inf->def->object_kind == PROTO_OBJECT_NODEOVERLAY && r != -ENOMEM) {
		r = nodeoverlay_event(inf, op, obj, &d, &o, r);
		goto done;
	}
	if (nodepool && r != -ENOMEM) {
		bool valid = r >= 0 && o.nodepool->status == PROTO_NODEPOOL_OK;
		char budget_err[512] = "";
		bool budget_bad = r >= 0 && nodepool_budget_problem(o.nodepool, budget_err,
								    sizeof(budget_err));
		/* kanna's refusal of a field it does not implement reads as
		 * the EC2NodeClass's does (UnsupportedField). */
		bool unsupported = !valid && r >= 0 &&
				   strstr(o.nodepool->status_reason ?: "", " supported by kanna");
		const struct nodepool_condition want[] = {
			{ CONDITION_VALIDATION, valid, "ValidationSucceeded",
			  unsupported ? "UnsupportedField" : "ValidationFailed",
			  r < 0 ? d.error : valid ? "" : o.nodepool->status_reason },
			{ CONDITION_BUDGETS, !budget_bad, "BudgetsValid", "InvalidBudget", budget_err },
		};

		/* A bad budget stops disruption only (the reaper leaves the
		 * NodePool's nodes alone); provisioning goes on. A
		 * Provisioner has no budgets. */
		nodepool_observe(inf, obj, r >= 0 ? o.nodepool : NULL, want,
				 r < 0 || streq(inf->def->kind, "Provisioner") ? 1 : ARRAY_SIZE(want));
		if (budget_bad) {
			struct kube_object_ref ref = { inf->api_version, inf->def->kind, NULL,
						       o.nodepool->name, o.nodepool->uid };
			log_warn_kv(LOG_KV({ "nodepool", o.nodepool->name }),
				    "nodepool %s has a malformed disruption budget, its nodes are not "
				    "disrupted: %s", o.nodepool->name, budget_err);
			if (inf->env.events)
				kube_event_record(inf->env.events, &ref, KUBE_EVENT_WARNING,
						  "FailedValidation", "Disruption budgets: %s", budget_err);
		}
		if (r >= 0)
			report_min_savings(inf, o.nodepool);
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
done:
	if (r == -EBADMSG || r == -EMSGSIZE)
		metrics_counter_add(inf->metrics.decode_errors, 1, inf->def->resource, NULL);
	else if (r < 0)
		log_error_errno(r, "Failed to publish %s: %m", inf->def->kind);
	arena_reset(&inf->arena);
}

/* A LIST starts: nothing of this informer's is listed yet. */
static void unmark_listed(struct informer *inf)
{
	struct state_store *s = publisher_store(inf->env.pub);
	const struct state_entry *e;
	size_t it = 0;

	while ((e = state_store_next(s, &it)))
		if (e->listed & inf->bit)
			state_store_find(s, &e->obj)->listed &= ~inf->bit;
}

/* How many objects this informer has published and not deleted. */
static size_t count_owned(struct informer *inf)
{
	const struct state_entry *e;
	size_t it = 0, n = 0;

	while ((e = state_store_next(publisher_store(inf->env.pub), &it)))
		n += (e->owners & inf->bit) != 0;
	return n;
}

/* Forgets yielded keys whose legacy object the last LIST did not find. */
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

/* Deletes what this informer published and its current LIST did not find. */
static size_t sweep(struct informer *inf)
{
	struct state_store *s = publisher_store(inf->env.pub);
	const struct state_entry *e;
	size_t it = 0, gone = 0, n = 0, cap = 0;
	/* Collect first: deleting while iterating would disturb the index. */
	char **stale = NULL, key[STATE_KEY_MAX];

	while ((e = state_store_next(s, &it))) {
		if (!(e->owners & inf->bit) || (e->listed & inf->bit) ||
		    state_key(&e->obj, key, sizeof(key)) < 0)
			continue;
		if (n == cap) {
			char **more = realloc(stale, (cap = cap ? 2 * cap : 64) * sizeof(*stale));
			if (!more)
				break;
			stale = more;
		}
		if ((stale[n] = strdup(key)))
			n++;
	}
	if (e)
		log_error("Failed to sweep %s after a list: out of memory", inf->def->resource);
	for (size_t i = 0; i < n; i++) {
		struct state_entry *stale_entry = (struct state_entry *)state_store_get_key(s, stale[i]);
		int r = stale_entry ? release(inf, stale_entry, stale[i]) : 0;

		if (r < 0)
			log_error_errno(r, "Failed to delete %s: %m", stale[i]);
		else if (stale_entry)
			gone++;
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
	unmark_listed(inf);
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
			    count_owned(inf));
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
	unmark_listed(inf);
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
	inf->bit = 1u << (def - informer_defs);
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

int informer_restore(struct informer *inf, const char *key, uint32_t owners)
{
	/* Yielded, or overwritten by the newer object after we published. */
	if (!informer_is_legacy(inf) || !inf->version ||
	    (!(owners & inf->bit) && !hashmap_get(&inf->shadowed, key)))
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
