/*
 * The subresources with behaviour of their own: pods/binding (sets
 * spec.nodeName and PodScheduled=True, 409 when already bound),
 * pods/eviction (honours PodDisruptionBudgets, 429 when evicting would
 * violate one; the timeline's pod-evicted notes the budget's state) and <workload>/scale (autoscaling/v1 Scale over
 * spec.replicas). Called from k8s-api.c; atomic under the store lock.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-api.h"
#include "sim/k8s-patch.h"
#include "sim/k8s-store-internal.h"

json_t *k8s_pod_bind(const json_t *cur, void *userdata, struct k8s_error *err)
{
	const char *node = userdata;
	const json_t *meta = json_object_get(cur, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *bound = json_string_value(
		json_object_get(json_object_get(cur, "spec"), "nodeName"));
	json_t *out, *status, *conds, *c;
	char now[32];
	size_t i;

	if (json_object_get(meta, "deletionTimestamp")) {
		k8s_error_set(err, 409, "Conflict",
			      "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is being deleted, cannot be assigned to a host",
			      name, name);
		return NULL;
	}
	if (bound && *bound) {
		k8s_error_set(err, 409, "Conflict",
			      "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is already assigned to node \"%s\"",
			      name, name, bound);
		return NULL;
	}
	out = json_deep_copy(cur);
	json_object_set_new(json_object_get(out, "spec"), "nodeName", json_string(node));
	status = json_object_get(out, "status");
	if (!status)
		json_object_set_new(out, "status", status = json_object());
	conds = json_object_get(status, "conditions");
	if (!json_is_array(conds))
		json_object_set_new(status, "conditions", conds = json_array());
	json_array_foreach(conds, i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), "PodScheduled")) {
			json_array_remove(conds, i);
			break;
		}
	k8s_timestamp(now, 0);
	json_array_append_new(conds, json_pack("{s:s, s:s, s:n, s:s}", "type", "PodScheduled",
					       "status", "True", "lastProbeTime",
					       "lastTransitionTime", now));
	return out;
}

/*
 * A Binding or Eviction names the pod it is for, and it must be the pod of
 * the URL: upstream's BindingREST.Create and EvictionREST.Create (pkg/
 * registry/core/pod/storage storage.go, eviction.go) answer 400 BadRequest
 * "name in URL does not match name in <Kind> object" before anything else,
 * a body without metadata.name included.
 */
static bool name_mismatch(const struct k8s_route *route, const json_t *body, const char *kind,
			  struct k8s_error *err)
{
	const char *name = json_string_value(json_object_get(json_object_get(body, "metadata"),
							      "name"));

	if (streq(name ?: "", route->name))
		return false;
	k8s_error_set(err, 400, "BadRequest", "name in URL does not match name in %s object", kind);
	return true;
}

int k8s_pod_binding(struct k8s_api *api, const struct k8s_route *route,
		    json_t *body, const struct k8s_write_options *opts,
		    struct k8s_response *resp)
{
	const json_t *target = json_object_get(body, "target");
	const char *node = json_string_value(json_object_get(target, "name"));
	const char *kind = json_string_value(json_object_get(target, "kind"));
	struct k8s_error err = {};
	int r;

	if (name_mismatch(route, body, "Binding", &err))
		return k8s_reply_error(resp, &err);
	if (!node || !*node || (kind && !streq(kind, "Node"))) {
		k8s_error_set(&err, 422, "Invalid",
			      "Binding.target.name: Required value: a Node name is required");
		return k8s_reply_error(resp, &err);
	}
	/* A dry run checks the binding and binds nothing (pkg/registry/core/pod
	 * storage BindingREST.Create: assignPod with dryrun.IsDryRun). */
	r = k8s_store_mutate_opts(api->store, route->res, route->ns, route->name, K8S_WRITE_ALL,
				  opts, k8s_pod_bind, (void *)node, NULL, &err);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	err.code = 201;
	return k8s_reply_json(resp, 201, k8s_status_new(&err));
}

/* ---- eviction ---------------------------------------------------------- */

static bool pod_is_ready(const json_t *pod)
{
	const json_t *c;
	size_t i;

	if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
		return false;
	json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), "Ready"))
			return streq_ptr(json_string_value(json_object_get(c, "status")), "True");
	return false;
}

struct pdb_scan {
	const json_t *labels; /* the pod's labels, to find its PDBs */
	json_t *pdbs;         /* PDBs selecting the pod */
	struct k8s_selector *sel; /* counting: pods selected by the PDB */
	long expected, healthy;
};

static void find_pdbs(struct k8s_object *o, void *userdata)
{
	struct pdb_scan *s = userdata;
	json_t *pdb = k8s_object_parse(o);
	struct k8s_selector *sel = NULL;
	char msg[128];

	if (pdb && k8s_label_selector_from_json(json_object_get(json_object_get(pdb, "spec"),
								"selector"),
						&sel, msg, sizeof(msg)) >= 0 &&
	    k8s_label_selector_matches(sel, s->labels))
		json_array_append(s->pdbs, pdb);
	k8s_selector_free(sel);
	json_decref(pdb);
}

static void count_pods(struct k8s_object *o, void *userdata)
{
	struct pdb_scan *s = userdata;
	json_t *pod;

	if (!k8s_label_selector_matches(s->sel, o->labels))
		return;
	s->expected++;
	pod = k8s_object_parse(o);
	if (pod && pod_is_ready(pod))
		s->healthy++;
	json_decref(pod);
}

/* An int or a percentage of total, rounded up as upstream does. */
static long int_or_percent(const json_t *v, long total)
{
	const char *s = json_string_value(v);

	if (json_is_integer(v))
		return (long)json_integer_value(v);
	if (s && strchr(s, '%'))
		return (long)ceil(strtod(s, NULL) * (double)total / 100.0);
	return s ? strtol(s, NULL, 10) : 0;
}

/* What an eviction met, for the timeline: the budget that covers the pod
 * (if one does), the disruptions it allowed just before (upstream's
 * status.disruptionsAllowed: healthy less desired, at least 0), and why
 * the eviction did not count against it (NULL: it did). */
struct eviction_note {
	char pdb[2 * 254 + 2];
	long allowed;
	const char *exempt;
};

/* Lock held. 0 when the PDB allows one more disruption, else 429 in err;
 * the budget's state goes into note either way. */
static int pdb_allows(struct k8s_api *api, const struct k8s_resource *pods,
		      const char *ns, const json_t *pdb, bool pod_ready,
		      struct eviction_note *note, struct k8s_error *err)
{
	const json_t *spec = json_object_get(pdb, "spec");
	const json_t *min = json_object_get(spec, "minAvailable");
	const json_t *max = json_object_get(spec, "maxUnavailable");
	const char *name = json_string_value(json_object_get(json_object_get(pdb, "metadata"), "name"));
	struct pdb_scan s = {};
	char msg[128];
	long desired;

	snprintf(note->pdb, sizeof(note->pdb), "%s/%s", ns, name ?: "");
	note->allowed = -1; /* unknown: a budget that decides nothing */
	if (k8s_label_selector_from_json(json_object_get(spec, "selector"), &s.sel, msg,
					 sizeof(msg)) < 0)
		return 0;
	k8s_store_foreach(api->store, pods, ns, count_pods, &s);
	k8s_selector_free(s.sel);
	if (min)
		desired = int_or_percent(min, s.expected);
	else if (max)
		desired = s.expected - int_or_percent(max, s.expected);
	else
		return 0;
	note->allowed = s.healthy - desired > 0 ? s.healthy - desired : 0;
	/* An unready pod costs nothing while the budget is met (IfHealthyBudget). */
	if (pod_ready ? s.healthy - desired >= 1 : s.healthy >= desired) {
		if (!pod_ready)
			note->exempt = "unready";
		return 0;
	}
	k8s_error_set(err, 429, "TooManyRequests",
		      "Cannot evict pod as it would violate the pod's disruption budget.");
	snprintf(msg, sizeof(msg), "The disruption budget %s needs %ld healthy pods and has %ld currently",
		 name, desired, s.healthy);
	err->details = json_pack("{s:[{s:s, s:s}]}", "causes", "reason", "DisruptionBudget",
				 "message", msg);
	return -EBUSY;
}

static int eviction_check(struct k8s_api *api, const struct k8s_route *route,
			  const json_t *pod, struct eviction_note *note, struct k8s_error *err)
{
	const struct k8s_resource *pdbs = k8s_registry_find(api->reg, "policy", "v1",
							    "poddisruptionbudgets");
	const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
	struct pdb_scan s = {
		.labels = json_object_get(json_object_get(pod, "metadata"), "labels"),
		.pdbs = json_array(),
	};
	struct k8s_error ignored = {};
	const char *exempt = NULL;
	int r = 0;

	/* Pending, finished or terminating pods never count against a budget. */
	if (streq_ptr(phase, "Pending"))
		exempt = "pending";
	else if (streq_ptr(phase, "Succeeded") || streq_ptr(phase, "Failed"))
		exempt = "finished";
	else if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
		exempt = "terminating";
	k8s_store_foreach(api->store, pdbs, route->ns, find_pdbs, &s);
	if (exempt) {
		/* Not asked, but noted: the budget's state all the same. */
		if (json_array_size(s.pdbs) == 1)
			(void)pdb_allows(api, route->res, route->ns, json_array_get(s.pdbs, 0),
					 false, note, &ignored);
		k8s_error_clear(&ignored);
		note->exempt = exempt;
	} else if (json_array_size(s.pdbs) > 1) {
		k8s_error_set(err, 500, "InternalError",
			      "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.");
		r = -EINVAL;
	} else if (json_array_size(s.pdbs) == 1)
		r = pdb_allows(api, route->res, route->ns, json_array_get(s.pdbs, 0),
			       pod_is_ready(pod), note, err);
	json_decref(s.pdbs);
	return r;
}

int k8s_pod_eviction(struct k8s_api *api, const struct k8s_route *route,
		     json_t *body, const struct k8s_write_options *create,
		     struct k8s_response *resp)
{
	struct k8s_delete_options opts;
	struct eviction_note note = { .allowed = -1 };
	struct k8s_error err = {};
	json_t *pod = NULL;
	int r;

	if (name_mismatch(route, body, "Eviction", &err))
		return k8s_reply_error(resp, &err);
	/* kanna-sim checks the Eviction's deleteOptions as a DELETE's, which
	 * upstream's EvictionREST does not (stricter, never kinder). */
	k8s_delete_options_init(&opts);
	r = k8s_delete_options_from_json(&opts, json_object_get(body, "deleteOptions"), &err);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	/* propagateDryRun (pod storage eviction.go): the request's dryRun
	 * counts when the Eviction's deleteOptions carry none. A dry run
	 * checks the budget, then deletes nothing and notes nothing; the
	 * budget's status is not touched either way (checkAndDecrement). */
	opts.dry_run = opts.dry_run || (create && create->dry_run);
	k8s_store_lock(api->store);
	r = k8s_store_get(api->store, route->res, route->ns, route->name, &pod, &err);
	if (r >= 0)
		r = eviction_check(api, route, pod, &note, &err);
	if (r >= 0)
		r = k8s_store_delete(api->store, route->res, route->ns, route->name, &opts,
				     NULL, &err);
	/* The API server writes no Event for an eviction; the timeline notes it,
	 * with the budget's state when one covers the pod:
	 * "NS/POD [NODE] [pdb NS/NAME allowed N [exempt WHY]]" (allowed -1: the
	 * budget sets neither minAvailable nor maxUnavailable). */
	if (r >= 0 && !opts.dry_run) {
		const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"),
								     "nodeName"));

		if (*note.pdb)
			k8s_timeline_add(api->store, "pod-evicted", "%s/%s%s%s pdb %s allowed %ld%s%s",
					 route->ns, route->name, node ? " " : "", node ?: "", note.pdb,
					 note.allowed, note.exempt ? " exempt " : "", note.exempt ?: "");
		else
			k8s_timeline_add(api->store, "pod-evicted", "%s/%s%s%s", route->ns, route->name,
					 node ? " " : "", node ?: "");
	}
	k8s_store_unlock(api->store);
	json_decref(pod);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	err.code = 201;
	return k8s_reply_json(resp, 201, k8s_status_new(&err));
}

/* ---- scale ------------------------------------------------------------- */

static json_t *scale_of(const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *status = json_object_get(obj, "status");
	const json_t *ml = json_object_get(json_object_get(spec, "selector"), "matchLabels");
	json_t *scale;
	char sel[1024] = "";
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)ml, k, v)
		snprintf(sel + strlen(sel), sizeof(sel) - strlen(sel), "%s%s=%s",
			 *sel ? "," : "", k, json_string_value(v) ?: "");
	scale = json_pack("{s:s, s:s, s:{s:O, s:O, s:O, s:O, s:O}, s:{s:I}, s:{s:I, s:s}}",
			  "kind", "Scale", "apiVersion", "autoscaling/v1", "metadata", "name",
			  json_object_get(meta, "name"), "namespace", json_object_get(meta, "namespace"),
			  "uid", json_object_get(meta, "uid"), "resourceVersion",
			  json_object_get(meta, "resourceVersion"), "creationTimestamp",
			  json_object_get(meta, "creationTimestamp"), "spec", "replicas",
			  json_integer_value(json_object_get(spec, "replicas")), "status",
			  "replicas", json_integer_value(json_object_get(status, "replicas")),
			  "selector", sel);
	return scale;
}

struct scale_ctx {
	enum k8s_patch_type type;
	const json_t *patch; /* PATCH */
	const json_t *body;  /* PUT */
};

static json_t *rescale(const json_t *cur, void *userdata, struct k8s_error *err)
{
	struct scale_ctx *c = userdata;
	json_t *scale = scale_of(cur), *next = NULL, *out;
	const json_t *replicas, *rv;
	char msg[256] = "";
	int r = 0;

	if (c->patch)
		r = k8s_patch_apply(c->type, scale, c->patch, &next, msg, sizeof(msg));
	else
		next = json_incref((json_t *)c->body);
	json_decref(scale);
	replicas = json_object_get(json_object_get(next, "spec"), "replicas");
	if (r < 0 || !json_is_integer(replicas) || json_integer_value(replicas) < 0) {
		k8s_error_set(err, 422, "Invalid", "Scale.spec.replicas: Invalid value: %s",
			      *msg ? msg : "must be a non-negative integer");
		json_decref(next);
		return NULL;
	}
	out = json_deep_copy(cur);
	json_object_set(json_object_get(out, "spec"), "replicas", (json_t *)replicas);
	rv = json_object_get(json_object_get(next, "metadata"), "resourceVersion");
	if (rv)
		json_object_set(json_object_get(out, "metadata"), "resourceVersion", (json_t *)rv);
	json_decref(next);
	return out;
}

int k8s_scale_handle(struct k8s_api *api, const struct k8s_request *req,
		     const struct k8s_route *route, json_t *body,
		     const struct k8s_write_options *opts, struct k8s_response *resp)
{
	struct scale_ctx c = { .body = body };
	struct k8s_error err = {};
	json_t *obj = NULL, *patch = NULL;
	int r;

	if (streq(req->method, "PATCH")) {
		if (k8s_patch_type_from_content_type(req->content_type, &c.type) < 0 ||
		    !(patch = json_loadb(req->body ? req->body : "", req->body_len,
					 JSON_DECODE_ANY, NULL))) {
			k8s_error_set(&err, 400, "BadRequest", "the patch is not valid JSON");
			return k8s_reply_error(resp, &err);
		}
		c.patch = patch;
	} else if (streq(req->method, "PUT") && !body) {
		k8s_error_set(&err, 400, "BadRequest", "a Scale body is required");
		return k8s_reply_error(resp, &err);
	}
	if (streq(req->method, "GET"))
		r = k8s_store_get(api->store, route->res, route->ns, route->name, &obj, &err);
	else if (streq(req->method, "PUT") || streq(req->method, "PATCH"))
		r = k8s_store_mutate_opts(api->store, route->res, route->ns, route->name,
					  K8S_WRITE_MAIN, opts, rescale, &c, &obj, &err);
	else {
		k8s_error_set(&err, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		r = -EINVAL;
	}
	json_decref(patch);
	if (r < 0)
		return k8s_reply_error(resp, &err);
	r = k8s_reply_json(resp, 200, scale_of(obj));
	json_decref(obj);
	return r;
}
