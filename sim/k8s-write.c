/*
 * Create and update for kanna-sim's store: identity (uid, creationTimestamp,
 * generation), kind/apiVersion/namespace/name checks, per-kind defaults,
 * optimistic concurrency (stale resourceVersion → 409 Conflict), the status
 * subresource split, no-op detection, finalizer rules and upstream's
 * admission checks (k8s-validate.c). Callers: the HTTP handlers and
 * controllers through k8s-store.h. Never does I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/clock.h"
#include "common/util.h"
#include "sim/k8s-store-internal.h"

/* Kubernetes names are DNS-1123 subdomains of at most this many bytes. */
#define K8S_NAME_MAX 253
/* generateName gets this many random characters, as upstream. */
#define K8S_GENERATE_NAME_SUFFIX 5

static bool name_is_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > K8S_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && c != '-' && c != '.')
			return false;
		if ((i == 0 || i == n - 1) && !alnum)
			return false;
	}
	return true;
}

static int check_type(const struct k8s_resource *res, json_t *body,
		      struct k8s_error *err)
{
	const char *kind = json_string_value(json_object_get(body, "kind"));
	const char *api = json_string_value(json_object_get(body, "apiVersion"));
	char want[128];

	k8s_resource_api_version(res, want, sizeof(want));
	if (!json_is_object(body) || !json_is_object(json_object_get(body, "metadata"))) {
		k8s_error_set(err, 400, "BadRequest",
			      "the body of the request was in an unknown format - object with metadata expected");
		return -EINVAL;
	}
	if (kind && !streq(kind, res->kind)) {
		k8s_error_set(err, 400, "BadRequest",
			      "the kind in the data (%s) does not match the expected kind (%s)",
			      kind, res->kind);
		return -EINVAL;
	}
	if (api && !streq(api, want)) {
		k8s_error_set(err, 400, "BadRequest",
			      "the API version in the data (%s) does not match the expected API version (%s)",
			      api, want);
		return -EINVAL;
	}
	json_object_set_new(body, "kind", json_string(res->kind));
	json_object_set_new(body, "apiVersion", json_string(want));
	return 0;
}

static int pick_name(json_t *meta, struct k8s_error *err)
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *gen = json_string_value(json_object_get(meta, "generateName"));
	char buf[K8S_NAME_MAX + 1];
	uint8_t rnd[K8S_GENERATE_NAME_SUFFIX];

	if (!name && gen) {
		if (strlen(gen) > K8S_NAME_MAX - K8S_GENERATE_NAME_SUFFIX)
			gen = "";
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			memset(rnd, 7, sizeof(rnd));
		snprintf(buf, sizeof(buf), "%s", gen);
		for (size_t i = 0; i < sizeof(rnd); i++) {
			size_t n = strlen(buf);

			buf[n] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
			buf[n + 1] = '\0';
		}
		json_object_set_new(meta, "name", json_string(buf));
		name = json_string_value(json_object_get(meta, "name"));
	}
	if (!name) {
		k8s_error_set(err, 422, "Invalid",
			      "metadata.name: Required value: name or generateName is required");
		return -EINVAL;
	}
	if (!name_is_valid(name)) {
		k8s_error_set(err, 422, "Invalid",
			      "metadata.name: Invalid value: \"%.64s\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
			      name);
		return -EINVAL;
	}
	return 0;
}

static json_t *child(json_t *obj, const char *key)
{
	json_t *c = json_object_get(obj, key);

	if (!json_is_object(c)) {
		c = json_object();
		json_object_set_new(obj, key, c);
	}
	return c;
}

/* The defaults kube-apiserver fills in a PodSpec that kubectl shows. */
static void pod_spec_defaults(json_t *spec)
{
	json_t *c, *port;
	size_t i, j;

	if (!json_object_get(spec, "restartPolicy"))
		json_object_set_new(spec, "restartPolicy", json_string("Always"));
	if (!json_object_get(spec, "dnsPolicy"))
		json_object_set_new(spec, "dnsPolicy", json_string("ClusterFirst"));
	json_array_foreach(json_object_get(spec, "containers"), i, c) {
		if (json_is_object(c) && !json_object_get(c, "terminationMessagePolicy"))
			json_object_set_new(c, "terminationMessagePolicy", json_string("File"));
		json_array_foreach(json_object_get(c, "ports"), j, port)
			if (json_is_object(port) && !json_object_get(port, "protocol"))
				json_object_set_new(port, "protocol", json_string("TCP"));
	}
}

/* What the real registry strategies do on create for the kinds we serve. */
static void apply_create_defaults(const struct k8s_resource *res, json_t *obj)
{
	bool core = !*res->group;
	char now[32];

	if ((res->subresources & K8S_SUB_STATUS) && !(core && streq(res->kind, "Node")) &&
	    !(core && streq(res->kind, "Namespace")) &&
	    !(core && streq(res->kind, "PersistentVolume")) &&
	    !(core && streq(res->kind, "PersistentVolumeClaim")))
		json_object_del(obj, "status");
	if (core && streq(res->kind, "Namespace")) {
		json_object_set_new(child(obj, "status"), "phase", json_string("Active"));
	} else if (core && streq(res->kind, "Pod")) {
		json_t *status = child(obj, "status");
		json_t *spec = child(obj, "spec");

		json_object_set_new(status, "phase", json_string("Pending"));
		if (!json_object_get(spec, "schedulerName"))
			json_object_set_new(spec, "schedulerName", json_string("default-scheduler"));
		if (!json_object_get(spec, "terminationGracePeriodSeconds"))
			json_object_set_new(spec, "terminationGracePeriodSeconds", json_integer(30));
		pod_spec_defaults(spec);
		if (json_object_get(spec, "nodeName")) {
			k8s_timestamp(now, 0);
			json_object_set_new(status, "conditions",
					    json_pack("[{s:s, s:s, s:s}]", "type", "PodScheduled",
						      "status", "True", "lastTransitionTime", now));
		}
	} else if (core && streq(res->kind, "Secret")) {
		/* pkg/apis/core/v1/defaults.go SetDefaults_Secret. */
		if (!json_string_length(json_object_get(obj, "type")))
			json_object_set_new(obj, "type", json_string("Opaque"));
	} else if (streq(res->group, "apps") &&
		   (streq(res->kind, "Deployment") || streq(res->kind, "StatefulSet") ||
		    streq(res->kind, "ReplicaSet"))) {
		json_t *spec = child(obj, "spec");

		if (!json_object_get(spec, "replicas"))
			json_object_set_new(spec, "replicas", json_integer(1));
		if (streq(res->kind, "Deployment") && !json_object_get(spec, "strategy"))
			json_object_set_new(spec, "strategy",
					    json_pack("{s:s, s:{s:s, s:s}}", "type", "RollingUpdate",
						      "rollingUpdate", "maxUnavailable", "25%",
						      "maxSurge", "25%"));
	}
}

/* When an object written now is removed unasked: Events expire, as upstream. */
static uint64_t expiry_ms(const struct k8s_resource *res)
{
	bool event = streq(res->kind, "Event") &&
		     (!*res->group || streq(res->group, "events.k8s.io"));

	return event ? clock_monotonic_ms() + K8S_EVENT_TTL_MS : 0;
}

/*
 * A resourceVersion on an object to be created: upstream's etcd3 store
 * refuses any that parses as a non-zero version with a plain error, which
 * the API server answers 500 with no reason (apiserver pkg/storage/etcd3
 * store.go Create, storage.ErrResourceVersionSetOnCreate; responsewriters
 * ErrorToAPIStatus). A dry run never reaches that store and keeps it
 * (dryrun.go DryRunnableStorage.Create copies the object as sent).
 */
static bool resource_version_set(const json_t *meta)
{
	const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
	char *end;

	if (!rv || !*rv)
		return false;
	return strtoull(rv, &end, 10) != 0 && !*end;
}

int k8s_store_create(struct k8s_store *store, const struct k8s_resource *res,
		     const char *ns, json_t *body, json_t **ret,
		     struct k8s_error *err)
{
	return k8s_store_create_opts(store, res, ns, body, NULL, ret, err);
}

int k8s_store_create_opts(struct k8s_store *store, const struct k8s_resource *cres,
			  const char *ns, json_t *body, const struct k8s_write_options *opts,
			  json_t **ret, struct k8s_error *err)
{
	bool dry_run = opts && opts->dry_run;
	struct k8s_resource *res = (struct k8s_resource *)cres;
	struct k8s_resource *ns_res;
	struct k8s_object *o = NULL;
	json_t *obj, *meta;
	const char *body_ns, *name;
	char now[32], uid[37];
	int r;

	obj = json_deep_copy(body);
	if (!obj)
		return -ENOMEM;
	r = check_type(res, obj, err);
	if (r < 0)
		goto out;
	meta = json_object_get(obj, "metadata");
	body_ns = json_string_value(json_object_get(meta, "namespace"));
	if (res->namespaced) {
		if (!ns)
			ns = body_ns ? body_ns : "default";
		if (body_ns && !streq(body_ns, ns)) {
			k8s_error_set(err, 400, "BadRequest",
				      "the namespace of the provided object does not match the namespace sent on the request");
			r = -EINVAL;
			goto out;
		}
		json_object_set_new(meta, "namespace", json_string(ns));
	} else {
		json_object_del(meta, "namespace");
		ns = "";
	}
	r = pick_name(meta, err);
	if (r < 0)
		goto out;
	name = json_string_value(json_object_get(meta, "name"));
	r = k8s_validate(store->reg, res, name, obj, NULL, err);
	if (r < 0)
		goto out;
	k8s_store_lock(store);
	ns_res = k8s_registry_find(store->reg, "", "v1", "namespaces");
	if (res->namespaced) {
		struct k8s_object *nso = k8s_store_lookup(ns_res, "", ns);

		if (!nso || nso->deleting) {
			k8s_error_set(err, nso ? 403 : 404, nso ? "Forbidden" : "NotFound",
				      nso ? "unable to create new content in namespace %s because it is being terminated"
					  : "namespaces \"%s\" not found", ns);
			r = nso ? -EPERM : -ENOENT;
			goto unlock;
		}
	}
	if (k8s_store_lookup(res, ns, name)) {
		k8s_error_set(err, 409, "AlreadyExists", "%s \"%s\" already exists",
			      k8s_resource_qualified(res), name);
		r = -EEXIST;
		goto unlock;
	}
	if (opts && !dry_run && resource_version_set(meta)) {
		k8s_error_set(err, 500, NULL, "resourceVersion should not be set on objects to be created");
		r = -EINVAL;
		goto unlock;
	}
	k8s_random_uid(uid);
	k8s_timestamp(now, 0);
	json_object_set_new(meta, "uid", json_string(uid));
	json_object_set_new(meta, "creationTimestamp", json_string(now));
	json_object_set_new(meta, "generation", json_integer(1));
	json_object_del(meta, "deletionTimestamp");
	json_object_del(meta, "deletionGracePeriodSeconds");
	json_object_del(meta, "managedFields");
	apply_create_defaults(res, obj);
	if (dry_run) {
		/* What would be stored, with the uid, creationTimestamp and
		 * generated name it would get; the resourceVersion as sent. */
		if (ret)
			*ret = TAKE_PTR(obj);
		goto unlock;
	}
	r = k8s_store_commit(store, res, obj, K8S_EVENT_ADDED, &o);
	if (r >= 0)
		o->delete_at_ms = expiry_ms(res);
	if (r >= 0 && ret)
		*ret = k8s_object_parse(o);
	k8s_object_unref(o);
unlock:
	k8s_store_unlock(store);
out:
	json_decref(obj);
	return r;
}

/* The object without metadata and status: what generation counts. */
static bool spec_changed(const json_t *a, const json_t *b)
{
	json_t *x = json_copy((json_t *)a), *y = json_copy((json_t *)b);
	bool changed;

	json_object_del(x, "metadata");
	json_object_del(x, "status");
	json_object_del(y, "metadata");
	json_object_del(y, "status");
	changed = !json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return changed;
}

static bool finalizer_added(const json_t *old_meta, const json_t *new_meta)
{
	const json_t *have = json_object_get(old_meta, "finalizers"), *f;
	size_t i;

	json_array_foreach(json_object_get(new_meta, "finalizers"), i, f) {
		bool found = false;
		size_t j;
		json_t *g;

		json_array_foreach(have, j, g)
			found = found || json_equal(f, g);
		if (!found)
			return true;
	}
	return false;
}

static const char *const preserved_meta[] = {
	"uid", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "generation", "namespace", "name",
};

/* Builds the object an update would store; NULL + err when refused. */
static json_t *build_update(const struct k8s_resource *res, const json_t *old,
			    json_t *body, enum k8s_write_mode mode,
			    struct k8s_error *err)
{
	json_t *old_meta = json_object_get(old, "metadata"), *out, *meta;
	const json_t *status;

	if (mode == K8S_WRITE_STATUS) {
		out = json_deep_copy(old);
		status = json_object_get(body, "status");
		if (status)
			json_object_set(out, "status", (json_t *)status);
		else
			json_object_del(out, "status");
		return out;
	}
	out = json_deep_copy(body);
	meta = json_object_get(out, "metadata");
	for (size_t i = 0; i < ARRAY_SIZE(preserved_meta); i++) {
		json_t *v = json_object_get(old_meta, preserved_meta[i]);

		if (v)
			json_object_set(meta, preserved_meta[i], v);
		else
			json_object_del(meta, preserved_meta[i]);
	}
	json_object_del(meta, "managedFields");
	if ((res->subresources & K8S_SUB_STATUS) && mode == K8S_WRITE_MAIN) {
		status = json_object_get(old, "status");
		if (status)
			json_object_set(out, "status", (json_t *)status);
		else
			json_object_del(out, "status");
	}
	if (json_object_get(old_meta, "deletionTimestamp") &&
	    finalizer_added(old_meta, meta)) {
		k8s_error_set(err, 422, "Invalid",
			      "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted");
		json_decref(out);
		return NULL;
	}
	return out;
}

/*
 * An update without resourceVersion where the strategy allows none:
 * upstream's registry store.go Update answers
 * NewInvalid(GroupKind{Group, Kind: <resource>}, name,
 * field.Invalid(metadata.resourceVersion, 0, "must be specified for an
 * update")), the resource's plural standing for its kind.
 */
static int unconditional_update_refused(const struct k8s_resource *res, const char *name,
					struct k8s_error *err)
{
	k8s_error_set(err, 422, "Invalid",
		      "%s \"%s\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
		      k8s_resource_qualified(res), name);
	if (err) {
		json_decref(err->details);
		err->details = json_pack("{s:s, s:s*, s:s, s:[{s:s, s:s, s:s}]}", "name", name,
					 "group", *res->group ? res->group : NULL, "kind",
					 res->plural, "causes", "reason", "FieldValueInvalid",
					 "message", "Invalid value: 0x0: must be specified for an update",
					 "field", "metadata.resourceVersion");
	}
	return -EINVAL;
}

/* Lock held; old is the current snapshot. */
static int store_write(struct k8s_store *store, struct k8s_resource *res,
		       struct k8s_object *old, json_t *body,
		       enum k8s_write_mode mode, const struct k8s_write_options *opts,
		       json_t **ret, struct k8s_error *err)
{
	const char *rv = json_string_value(
		json_object_get(json_object_get(body, "metadata"), "resourceVersion"));
	const char *name = json_string_value(
		json_object_get(json_object_get(body, "metadata"), "name"));
	json_t *cur = NULL, *next = NULL, *meta;
	struct k8s_object *o = NULL;
	char rvbuf[32];
	uint64_t due;
	int r;

	r = check_type(res, body, err);
	if (r < 0)
		return r;
	if (name && !streq(name, old->name)) {
		k8s_error_set(err, 400, "BadRequest",
			      "the name of the object (%s) does not match the name on the URL (%s)",
			      name, old->name);
		return -EINVAL;
	}
	snprintf(rvbuf, sizeof(rvbuf), "%" PRIu64, old->rv);
	if ((!rv || !*rv) && opts && opts->require_resource_version)
		return unconditional_update_refused(res, old->name, err);
	if (rv && *rv && !streq(rv, rvbuf)) {
		k8s_error_set(err, 409, "Conflict",
			      "Operation cannot be fulfilled on %s \"%s\": the object has been modified; please apply your changes to the latest version and try again",
			      k8s_resource_qualified(res), old->name);
		return -ESTALE;
	}
	cur = k8s_object_parse(old);
	if (!cur)
		return -ENOMEM;
	next = build_update(res, cur, body, mode, err);
	if (!next) {
		r = -EINVAL;
		goto out;
	}
	if (mode != K8S_WRITE_STATUS && (r = k8s_validate(store->reg, res, old->name, next, cur, err)) < 0)
		goto out;
	meta = json_object_get(next, "metadata");
	json_object_set_new(meta, "resourceVersion", json_string(rvbuf));
	if (spec_changed(cur, next))
		json_object_set_new(meta, "generation",
				    json_integer(json_integer_value(json_object_get(
						 json_object_get(cur, "metadata"), "generation")) + 1));
	if (json_equal(cur, next)) {
		if (ret)
			*ret = TAKE_PTR(cur);
		goto out;
	}
	if (json_object_get(meta, "deletionTimestamp") &&
	    json_array_size(json_object_get(meta, "finalizers")) == 0 &&
	    (!old->delete_at_ms || old->delete_at_ms <= clock_monotonic_ms())) {
		/* A dry run answers the object as stored, as upstream's
		 * deleteWithoutFinalizers does (registry store.go Update). */
		if (opts && opts->dry_run) {
			if (ret)
				*ret = TAKE_PTR(cur);
			goto out;
		}
		r = k8s_store_finish_delete(store, res, next, K8S_PROPAGATE_BACKGROUND);
		if (r >= 0 && ret)
			*ret = TAKE_PTR(next);
		goto out;
	}
	/* A dry run answers what would be stored, at the stored
	 * resourceVersion: upstream's tryUpdate output (store.go Update sets
	 * it on an unconditional update; a conditional one already has it). */
	if (opts && opts->dry_run) {
		if (ret)
			*ret = TAKE_PTR(next);
		goto out;
	}
	/* The commit may free old: keep what is needed of it first. */
	due = old->delete_at_ms;
	if (!json_object_get(meta, "deletionTimestamp") && expiry_ms(res))
		due = expiry_ms(res);
	r = k8s_store_commit(store, res, next, K8S_EVENT_MODIFIED, &o);
	if (r >= 0) {
		o->delete_at_ms = due;
		if (ret)
			*ret = TAKE_PTR(next);
	}
	k8s_object_unref(o);
out:
	json_decref(cur);
	json_decref(next);
	return r;
}

static struct k8s_object *lookup_or_404(const struct k8s_resource *res,
					const char *ns, const char *name,
					struct k8s_error *err)
{
	struct k8s_object *o = k8s_store_lookup(res, res->namespaced ? ns : "", name);

	if (!o)
		k8s_error_set(err, 404, "NotFound", "%s \"%s\" not found",
			      k8s_resource_qualified(res), name);
	return o;
}

int k8s_store_update(struct k8s_store *store, const struct k8s_resource *res,
		     const char *ns, const char *name, json_t *body,
		     enum k8s_write_mode mode, json_t **ret, struct k8s_error *err)
{
	return k8s_store_update_opts(store, res, ns, name, body, mode, NULL, ret, err);
}

int k8s_store_update_opts(struct k8s_store *store, const struct k8s_resource *res,
			  const char *ns, const char *name, json_t *body,
			  enum k8s_write_mode mode, const struct k8s_write_options *opts,
			  json_t **ret, struct k8s_error *err)
{
	struct k8s_object *old;
	int r = -ENOENT;

	if (!json_is_object(body)) {
		k8s_error_set(err, 400, "BadRequest", "the body must be a JSON object");
		return -EINVAL;
	}
	k8s_store_lock(store);
	old = lookup_or_404(res, ns, name, err);
	if (old)
		r = store_write(store, (struct k8s_resource *)res, old, body, mode, opts, ret, err);
	k8s_store_unlock(store);
	return r;
}

int k8s_store_mutate(struct k8s_store *store, const struct k8s_resource *res,
		     const char *ns, const char *name, enum k8s_write_mode mode,
		     k8s_mutate_fn mutate, void *userdata, json_t **ret,
		     struct k8s_error *err)
{
	return k8s_store_mutate_opts(store, res, ns, name, mode, NULL, mutate, userdata, ret, err);
}

int k8s_store_mutate_opts(struct k8s_store *store, const struct k8s_resource *res,
			  const char *ns, const char *name, enum k8s_write_mode mode,
			  const struct k8s_write_options *opts, k8s_mutate_fn mutate,
			  void *userdata, json_t **ret, struct k8s_error *err)
{
	struct k8s_object *old;
	json_t *cur, *next;
	int r = -ENOENT;

	k8s_store_lock(store);
	old = lookup_or_404(res, ns, name, err);
	if (!old)
		goto out;
	cur = k8s_object_parse(old);
	if (!cur) {
		r = -ENOMEM;
		goto out;
	}
	next = mutate(cur, userdata, err);
	json_decref(cur);
	if (!next) {
		r = -EINVAL;
		goto out;
	}
	r = store_write(store, (struct k8s_resource *)res, old, next, mode, opts, ret, err);
	json_decref(next);
out:
	k8s_store_unlock(store);
	return r;
}
