/*
 * Deletion in kanna-sim's store: preconditions, finalizers (the object
 * stays with a deletionTimestamp until they are gone), graceful deletion of
 * bound pods (completed by k8s_store_sweep(), standing in for the kubelet),
 * namespace deletion (its contents go with it) and garbage collection of
 * dependents through ownerReferences (Background and Foreground delete
 * them, Orphan strips the reference), and what a DELETE answers (the
 * object or a Status, per registry). Never does I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/util.h"
#include "sim/k8s-store-internal.h"

struct victim {
	struct k8s_resource *res;
	char *ns, *name;
};

struct victims {
	struct victim *v;
	size_t n;
};

static int victims_add(struct victims *vs, struct k8s_resource *res,
		       const struct k8s_object *o)
{
	struct victim *v = realloc(vs->v, (vs->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	vs->v = v;
	v = &vs->v[vs->n];
	v->res = res;
	v->ns = strdup(o->ns);
	v->name = strdup(o->name);
	if (!v->ns || !v->name) {
		free(v->ns);
		free(v->name);
		return -ENOMEM;
	}
	vs->n++;
	return 0;
}

static void victims_clear(struct victims *vs)
{
	for (size_t i = 0; i < vs->n; i++) {
		free(vs->v[i].ns);
		free(vs->v[i].name);
	}
	free(vs->v);
	vs->v = NULL;
	vs->n = 0;
}

struct collect {
	struct victims *vs;
	struct k8s_resource *res;
	const char *owner_uid; /* dependents of this uid, or */
	const char *ns;        /* everything in this namespace, or */
	bool pods_due;         /* graceful deletions that are due, or */
	const struct k8s_list_options *selected; /* what selectors select */
	uint64_t now_ms;
};

static void collect_one(struct k8s_object *o, void *userdata)
{
	struct collect *c = userdata;
	bool hit = false;

	if (c->owner_uid) {
		for (size_t i = 0; i < o->n_owners; i++)
			hit = hit || streq(o->owners[i], c->owner_uid);
	} else if (c->ns)
		hit = streq(o->ns, c->ns);
	else if (c->pods_due)
		hit = o->delete_at_ms && o->delete_at_ms <= c->now_ms &&
		      o->n_finalizers == 0;
	else if (c->selected)
		hit = k8s_object_matches(o, NULL, c->selected->labels, c->selected->fields);
	if (hit)
		victims_add(c->vs, c->res, o);
}

static void collect_all(struct k8s_store *store, struct collect *c)
{
	for (size_t i = 0; i < store->reg->n_resources; i++) {
		struct k8s_resource *res = &store->reg->resources[i];

		if (c->ns && !res->namespaced)
			continue;
		c->res = res;
		k8s_store_foreach(store, res, NULL, collect_one, c);
	}
}

static json_t *strip_owner(const json_t *cur, void *userdata, struct k8s_error *err)
{
	const char *uid = userdata;
	json_t *out = json_deep_copy(cur);
	json_t *refs = json_object_get(json_object_get(out, "metadata"), "ownerReferences");

	for (size_t i = json_array_size(refs); i-- > 0;)
		if (streq_ptr(json_string_value(json_object_get(json_array_get(refs, i), "uid")),
			      uid))
			json_array_remove(refs, i);
	return out;
}

static void delete_victims(struct k8s_store *store, struct victims *vs,
			   const char *orphan_uid)
{
	struct k8s_delete_options opts;

	k8s_delete_options_init(&opts);
	for (size_t i = 0; i < vs->n; i++) {
		struct k8s_error err = {};

		if (orphan_uid)
			(void)k8s_store_mutate(store, vs->v[i].res, vs->v[i].ns,
					       vs->v[i].name, K8S_WRITE_MAIN, strip_owner,
					       (void *)orphan_uid, NULL, &err);
		else
			(void)k8s_store_delete(store, vs->v[i].res, vs->v[i].ns,
					       vs->v[i].name, &opts, NULL, &err);
		k8s_error_clear(&err);
	}
}

int k8s_store_finish_delete(struct k8s_store *store, struct k8s_resource *res,
			    json_t *obj, enum k8s_propagation propagation)
{
	json_t *meta = json_object_get(obj, "metadata");
	char *uid = strdup(json_string_value(json_object_get(meta, "uid")) ?: "");
	char *name = strdup(json_string_value(json_object_get(meta, "name")) ?: "");
	struct victims vs = {};
	struct collect c = { .vs = &vs };
	int r = -ENOMEM;

	if (!uid || !name)
		goto out;
	if (!*res->group && streq(res->kind, "Namespace")) {
		c.ns = name;
		collect_all(store, &c);
		delete_victims(store, &vs, NULL);
		victims_clear(&vs);
		c.ns = NULL;
	}
	r = k8s_store_commit(store, res, obj, K8S_EVENT_DELETED, NULL);
	if (r < 0)
		goto out;
	c.owner_uid = uid;
	collect_all(store, &c);
	delete_victims(store, &vs, propagation == K8S_PROPAGATE_ORPHAN ? uid : NULL);
	victims_clear(&vs);
out:
	free(uid);
	free(name);
	return r;
}

/* A bound pod terminates gracefully: deletionTimestamp now + grace. */
static long pod_grace_seconds(const struct k8s_resource *res,
			      const struct k8s_object *o, const json_t *obj,
			      const struct k8s_delete_options *opts)
{
	if (*res->group || !streq(res->kind, "Pod") || !o->node_name)
		return 0;
	if (opts->grace_period_seconds >= 0)
		return opts->grace_period_seconds;
	return (long)json_integer_value(json_object_get(
		json_object_get(obj, "spec"), "terminationGracePeriodSeconds"));
}

static int check_preconditions(const struct k8s_resource *res,
			       const struct k8s_object *o,
			       const struct k8s_delete_options *opts,
			       struct k8s_error *err)
{
	char rv[32];

	snprintf(rv, sizeof(rv), "%" PRIu64, o->rv);
	if (opts->precondition_uid && !streq(opts->precondition_uid, o->uid)) {
		k8s_error_set(err, 409, "Conflict",
			      "Operation cannot be fulfilled on %s \"%s\": Precondition failed: UID in precondition: %s, UID in object meta: %s",
			      k8s_resource_qualified(res), o->name, opts->precondition_uid, o->uid);
		return -ESTALE;
	}
	if (opts->precondition_rv && !streq(opts->precondition_rv, rv)) {
		k8s_error_set(err, 409, "Conflict",
			      "Operation cannot be fulfilled on %s \"%s\": Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s",
			      k8s_resource_qualified(res), o->name, opts->precondition_rv, rv);
		return -ESTALE;
	}
	return 0;
}

/*
 * Stamps obj as being deleted: deletionTimestamp (now + grace, first time
 * only, when generation also moves on, as upstream's rest.BeforeDelete and
 * registry store.go markAsDeleting do) and deletionGracePeriodSeconds.
 * False when obj is already being deleted and this delete changes nothing.
 */
static bool stamp_deleting(json_t *obj, long grace, uint64_t due)
{
	json_t *meta = json_object_get(obj, "metadata");
	json_int_t generation = json_integer_value(json_object_get(meta, "generation"));
	char when[32];

	if (json_object_get(meta, "deletionTimestamp") && (grace > 0 || !due))
		return false;
	k8s_timestamp(when, grace);
	if (!json_object_get(meta, "deletionTimestamp")) {
		json_object_set_new(meta, "deletionTimestamp", json_string(when));
		if (generation > 0)
			json_object_set_new(meta, "generation", json_integer(generation + 1));
	}
	json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(grace));
	return true;
}

/* Marks obj as being deleted (first time only) and commits it. */
static int mark_deleting(struct k8s_store *store, struct k8s_resource *res,
			 struct k8s_object *old, json_t *obj, long grace)
{
	struct k8s_object *o = NULL;
	uint64_t due = old->delete_at_ms;
	int r;

	if (!stamp_deleting(obj, grace, due))
		return 0;
	if (grace > 0)
		due = clock_monotonic_ms() + MIN((uint64_t)grace * 1000, K8S_POD_TERMINATION_MS);
	else if (due)
		due = clock_monotonic_ms();
	r = k8s_store_commit(store, res, obj, K8S_EVENT_MODIFIED, &o);
	if (r < 0)
		return r;
	o->delete_at_ms = due;
	k8s_object_unref(o);
	return 0;
}

int k8s_store_delete(struct k8s_store *store, const struct k8s_resource *res,
		     const char *ns, const char *name,
		     const struct k8s_delete_options *opts, json_t **ret,
		     struct k8s_error *err)
{
	bool gone;

	return k8s_store_delete_gone(store, res, ns, name, opts, ret, &gone, err);
}

int k8s_store_delete_gone(struct k8s_store *store, const struct k8s_resource *cres,
			  const char *ns, const char *name,
			  const struct k8s_delete_options *opts, json_t **ret, bool *ret_gone,
			  struct k8s_error *err)
{
	struct k8s_resource *res = (struct k8s_resource *)cres;
	struct k8s_object *o;
	json_t *obj = NULL;
	long grace;
	int r;

	*ret_gone = false;
	k8s_store_lock(store);
	o = k8s_store_lookup(res, res->namespaced ? ns : "", name);
	if (!o) {
		k8s_error_set(err, 404, "NotFound", "%s \"%s\" not found",
			      k8s_resource_qualified(res), name);
		r = -ENOENT;
		goto out;
	}
	r = check_preconditions(res, o, opts, err);
	if (r < 0)
		goto out;
	obj = k8s_object_parse(o);
	if (!obj) {
		r = -ENOMEM;
		goto out;
	}
	grace = pod_grace_seconds(res, o, obj, opts);
	*ret_gone = o->n_finalizers == 0 && grace == 0;
	if (opts->dry_run) {
		/* Nothing changes; the answer is the object as the delete would
		 * leave it: marked when finalizers or a grace period hold it,
		 * else as stored (registry store.go Delete with DryRunnableStorage). */
		if (o->n_finalizers > 0 || grace > 0)
			(void)stamp_deleting(obj, grace, o->delete_at_ms);
	} else if (o->n_finalizers > 0 || grace > 0) {
		/* mark_deleting() may free o: decide before. */
		bool finish_now = o->n_finalizers == 0 && grace == 0;

		r = mark_deleting(store, res, o, obj, grace);
		if (r >= 0 && finish_now)
			r = k8s_store_finish_delete(store, res, obj, opts->propagation);
	} else {
		if (opts->propagation == K8S_PROPAGATE_FOREGROUND) {
			/* Dependents go first; kanna never waits on them. */
			struct victims vs = {};
			struct collect c = { .vs = &vs, .owner_uid = o->uid };

			collect_all(store, &c);
			delete_victims(store, &vs, NULL);
			victims_clear(&vs);
		}
		r = k8s_store_finish_delete(store, res, obj, opts->propagation);
	}
	if (r >= 0 && ret)
		*ret = TAKE_PTR(obj);
out:
	json_decref(obj);
	k8s_store_unlock(store);
	return r;
}

/*
 * Whether a DELETE that removes the object at once answers with it: the
 * registries that set ReturnDeletedObject (kubernetes pkg/registry/.../
 * storage/storage.go: pods, namespaces, services, serviceaccounts,
 * persistentvolumes, persistentvolumeclaims, storageclasses). Every other
 * (nodes, events, configmaps, leases, apps, policy, and custom resources,
 * apiextensions-apiserver registry/customresource/etcd.go) answers
 * registry store.go finalizeDelete's Status: status Success and details
 * name, group, kind (the resource's plural: "Yes we set Kind field to
 * resource") and uid, no code. A delete that only marks the object
 * (finalizers, grace) answers the object either way.
 */
static bool returns_deleted_object(const struct k8s_resource *res)
{
	static const char *const core[] = {
		"pods", "namespaces", "services", "serviceaccounts", "persistentvolumes",
		"persistentvolumeclaims",
	};

	if (res->custom)
		return false;
	if (streq(res->group, "storage.k8s.io"))
		return streq(res->plural, "storageclasses");
	for (size_t i = 0; *res->group == '\0' && i < ARRAY_SIZE(core); i++)
		if (streq(res->plural, core[i]))
			return true;
	return false;
}

static json_t *deleted_status(const struct k8s_resource *res, const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");

	return json_pack("{s:s, s:s, s:{}, s:s, s:{s:O?, s:s*, s:s, s:O?}}", "kind", "Status",
			 "apiVersion", "v1", "metadata", "status", "Success", "details", "name",
			 json_object_get(meta, "name"), "group", *res->group ? res->group : NULL,
			 "kind", res->plural, "uid", json_object_get(meta, "uid"));
}

json_t *k8s_delete_answer(const struct k8s_resource *res, json_t *obj, bool gone)
{
	json_t *st;

	if (!obj || !gone || returns_deleted_object(res))
		return obj;
	st = deleted_status(res, obj);
	json_decref(obj);
	return st;
}

int k8s_store_sweep(struct k8s_store *store, uint64_t now_ms)
{
	struct victims vs = {};
	struct collect c = { .vs = &vs, .pods_due = true, .now_ms = now_ms };
	int n = 0;

	k8s_store_lock(store);
	collect_all(store, &c);
	for (size_t i = 0; i < vs.n; i++) {
		struct k8s_object *o = k8s_store_lookup(vs.v[i].res, vs.v[i].ns, vs.v[i].name);
		json_t *obj = o ? k8s_object_parse(o) : NULL;

		if (obj && k8s_store_finish_delete(store, vs.v[i].res, obj,
						   K8S_PROPAGATE_BACKGROUND) >= 0)
			n++;
		json_decref(obj);
	}
	victims_clear(&vs);
	k8s_store_unlock(store);
	return n;
}

int k8s_store_delete_collection(struct k8s_store *store, const struct k8s_resource *res,
				const char *ns, const struct k8s_list_options *selected,
				const struct k8s_delete_options *opts, struct k8s_error *err)
{
	struct victims vs = {};
	struct collect c = { .vs = &vs, .res = (struct k8s_resource *)res, .selected = selected };
	int n = 0;

	k8s_store_lock(store);
	k8s_store_foreach(store, res, ns, collect_one, &c);
	for (size_t i = 0; i < vs.n; i++) {
		struct k8s_error e = {};

		if (k8s_store_delete(store, vs.v[i].res, vs.v[i].ns, vs.v[i].name, opts, NULL, &e) >= 0)
			n++;
		k8s_error_clear(&e);
	}
	victims_clear(&vs);
	k8s_store_unlock(store);
	return n;
}
