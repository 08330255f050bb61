/*
 * kube-scheduler-lite for kanna-sim: binds each pending pod (no nodeName,
 * default scheduler, not terminating) to the first Ready, schedulable node
 * whose free allocatable cpu/memory/pods fit its requests, whose labels
 * satisfy its nodeSelector and required node affinity, whose
 * NoSchedule/NoExecute taints it tolerates, and that keeps its required
 * pod (anti-)affinity and DoNotSchedule topology spread. Otherwise it sets
 * PodScheduled=False reason Unschedulable — the signal kanna acts on.
 * Writes the Events kube-scheduler writes: Scheduled, and FailedScheduling
 * whenever the reason changes.
 */
#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/util.h"
#include "sim/k8s-api.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"

int k8s_quantity_parse_milli(const char *s, int64_t *ret)
{
	static const struct {
		const char *suffix;
		double factor;
	} suffixes[] = {
		{ "Ki", 1024.0 }, { "Mi", 1048576.0 }, { "Gi", 1073741824.0 },
		{ "Ti", 1099511627776.0 }, { "Pi", 1125899906842624.0 },
		{ "m", 0.001 }, { "k", 1e3 }, { "M", 1e6 }, { "G", 1e9 }, { "T", 1e12 },
		{ "P", 1e15 }, { "", 1.0 },
	};
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++)
		if (streq(end, suffixes[i].suffix)) {
			double milli = ceil(v * suffixes[i].factor * 1000.0);

			if (milli > 9.0e18)
				return -ERANGE;
			*ret = (int64_t)milli;
			return 0;
		}
	return -EINVAL;
}

static int64_t quantity(const json_t *list, const char *name)
{
	int64_t v = 0;

	(void)k8s_quantity_parse_milli(json_string_value(json_object_get(list, name)), &v);
	if (json_is_integer(json_object_get(list, name)))
		v = json_integer_value(json_object_get(list, name)) * 1000;
	return v;
}

struct requests {
	int64_t cpu, memory; /* milli-units */
};

static struct requests pod_requests(const json_t *pod)
{
	struct requests r = {};
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, c) {
		const json_t *req = json_object_get(json_object_get(c, "resources"), "requests");

		r.cpu += quantity(req, "cpu");
		r.memory += quantity(req, "memory");
	}
	return r;
}

struct node_fit {
	const json_t *node;
	const char *name;
	int64_t free_cpu, free_memory, free_pods;
};

enum misfit {
	MISFIT_NOT_READY,
	MISFIT_UNSCHEDULABLE,
	MISFIT_SELECTOR,
	MISFIT_TAINT,
	MISFIT_CPU,
	MISFIT_MEMORY,
	MISFIT_PODS,
	MISFIT_VOLUME,
	MISFIT_POD_AFFINITY,
	MISFIT_POD_ANTI_AFFINITY,
	MISFIT_SPREAD,
	_MISFIT_MAX,
};

static const char *const misfit_text[] = {
	[MISFIT_NOT_READY] = "node(s) were not ready",
	[MISFIT_UNSCHEDULABLE] = "node(s) were unschedulable",
	[MISFIT_SELECTOR] = "node(s) didn't match Pod's node affinity/selector",
	[MISFIT_TAINT] = "node(s) had untolerated taint",
	[MISFIT_CPU] = "Insufficient cpu",
	[MISFIT_MEMORY] = "Insufficient memory",
	[MISFIT_PODS] = "Too many pods",
	[MISFIT_VOLUME] = "node(s) had volume node affinity conflict",
	[MISFIT_POD_AFFINITY] = "node(s) didn't match pod affinity rules",
	[MISFIT_POD_ANTI_AFFINITY] = "node(s) didn't match pod anti-affinity rules",
	[MISFIT_SPREAD] = "node(s) didn't match pod topology spread constraints",
};

static bool node_ready(const json_t *node)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), "Ready"))
			return streq_ptr(json_string_value(json_object_get(c, "status")), "True");
	return false;
}

static bool tolerates(const json_t *pod, const json_t *taint)
{
	const char *key = json_string_value(json_object_get(taint, "key"));
	const char *value = json_string_value(json_object_get(taint, "value"));
	const char *effect = json_string_value(json_object_get(taint, "effect"));
	const json_t *t;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(pod, "spec"), "tolerations"), i, t) {
		const char *tk = json_string_value(json_object_get(t, "key"));
		const char *op = json_string_value(json_object_get(t, "operator")) ?: "Equal";
		const char *te = json_string_value(json_object_get(t, "effect"));

		if (te && *te && !streq_ptr(te, effect))
			continue;
		if ((!tk || !*tk) && streq(op, "Exists"))
			return true;
		if (streq_ptr(tk, key) &&
		    (streq(op, "Exists") ||
		     streq(json_string_value(json_object_get(t, "value")) ?: "", value ?: "")))
			return true;
	}
	return false;
}

const json_t *k8s_pod_untolerated_taint(const json_t *pod, const json_t *node, bool no_execute_only)
{
	const json_t *taint;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(node, "spec"), "taints"), i, taint) {
		const char *effect = json_string_value(json_object_get(taint, "effect"));

		if (((!no_execute_only && streq_ptr(effect, "NoSchedule")) ||
		     streq_ptr(effect, "NoExecute")) &&
		    !tolerates(pod, taint))
			return taint;
	}
	return NULL;
}

bool k8s_pod_tolerates_node(const json_t *pod, const json_t *node)
{
	return !k8s_pod_untolerated_taint(pod, node, false);
}

static bool expression_matches(const json_t *e, const json_t *labels)
{
	const char *key = json_string_value(json_object_get(e, "key"));
	const char *op = json_string_value(json_object_get(e, "operator"));
	const char *v = key ? json_string_value(json_object_get(labels, key)) : NULL;
	const json_t *values = json_object_get(e, "values"), *x;
	bool in = false;
	size_t i;

	json_array_foreach(values, i, x)
		in = in || streq_ptr(json_string_value(x), v);
	if (streq_ptr(op, "In"))
		return v && in;
	if (streq_ptr(op, "NotIn"))
		return !v || !in;
	if (streq_ptr(op, "Exists"))
		return v != NULL;
	if (streq_ptr(op, "DoesNotExist"))
		return v == NULL;
	if ((streq_ptr(op, "Gt") || streq_ptr(op, "Lt")) && v && json_array_size(values) == 1) {
		long a = strtol(v, NULL, 10);
		long b = strtol(json_string_value(json_array_get(values, 0)) ?: "0", NULL, 10);

		return streq(op, "Gt") ? a > b : a < b;
	}
	return false;
}

bool k8s_node_matches_terms(const json_t *terms, const json_t *node)
{
	const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
	const json_t *term;
	size_t i;

	if (json_array_size(terms) == 0)
		return true;
	json_array_foreach(terms, i, term) {
		const json_t *e;
		size_t j;
		bool all = true;

		json_array_foreach(json_object_get(term, "matchExpressions"), j, e)
			all = all && expression_matches(e, labels);
		if (all)
			return true;
	}
	return false;
}

bool k8s_pod_selects_node(const json_t *pod, const json_t *node)
{
	const json_t *spec = json_object_get(pod, "spec");
	const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
	const json_t *v;
	const char *key;

	json_object_foreach((json_t *)json_object_get(spec, "nodeSelector"), key, v)
		if (!streq_ptr(json_string_value(json_object_get(labels, key)), json_string_value(v)))
			return false;
	return k8s_node_matches_terms(
		json_object_get(json_object_get(json_object_get(json_object_get(spec, "affinity"),
								 "nodeAffinity"),
						 "requiredDuringSchedulingIgnoredDuringExecution"),
				"nodeSelectorTerms"),
		node);
}

static int node_misfit(const json_t *pod, const struct node_fit *n, struct requests req,
		       const json_t *volume_terms, const struct k8s_pod_affinity *affinity,
		       const struct k8s_pod_spread *spread)
{
	int a;

	if (!node_ready(n->node))
		return MISFIT_NOT_READY;
	if (json_is_true(json_object_get(json_object_get(n->node, "spec"), "unschedulable")))
		return MISFIT_UNSCHEDULABLE;
	if (!k8s_pod_selects_node(pod, n->node))
		return MISFIT_SELECTOR;
	if (!k8s_pod_tolerates_node(pod, n->node))
		return MISFIT_TAINT;
	if (req.cpu > n->free_cpu)
		return MISFIT_CPU;
	if (req.memory > n->free_memory)
		return MISFIT_MEMORY;
	if (n->free_pods < 1000)
		return MISFIT_PODS;
	for (size_t i = 0; i < json_array_size(volume_terms); i++)
		if (!k8s_node_matches_terms(json_array_get(volume_terms, i), n->node))
			return MISFIT_VOLUME;
	a = k8s_pod_affinity_check(affinity, n->node);
	if (a == K8S_AFFINITY_MISFIT)
		return MISFIT_POD_AFFINITY;
	if (a == K8S_AFFINITY_ANTI_MISFIT)
		return MISFIT_POD_ANTI_AFFINITY;
	if (!k8s_pod_spread_fits(spread, n->node))
		return MISFIT_SPREAD;
	return -1;
}

static int fit_cmp(const void *a, const void *b)
{
	const struct node_fit *x = a, *y = b;

	return strcmp(x->name ?: "", y->name ?: "");
}

static struct node_fit *nodes_from(const json_t *nodes, size_t *n_ret)
{
	struct node_fit *fits = calloc(json_array_size(nodes) + 1, sizeof(*fits));
	const json_t *node;
	size_t i, n = 0;

	if (!fits)
		return NULL;
	json_array_foreach(nodes, i, node) {
		const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");

		if (json_object_get(json_object_get(node, "metadata"), "deletionTimestamp"))
			continue;
		if (!alloc)
			alloc = json_object_get(json_object_get(node, "status"), "capacity");
		fits[n].node = node;
		fits[n].name = json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
		fits[n].free_cpu = quantity(alloc, "cpu");
		fits[n].free_memory = quantity(alloc, "memory");
		fits[n].free_pods = json_object_get(alloc, "pods") ? quantity(alloc, "pods") : 110000;
		n++;
	}
	qsort(fits, n, sizeof(*fits), fit_cmp);
	*n_ret = n;
	return fits;
}

struct pod_scan {
	struct k8s_object **pending;
	size_t n_pending;
	struct node_fit *fits; /* sorted by name; NULL on the first pass */
	size_t n_fits;
};

/* First pass: pending pods. Second pass: what bound pods use per node. */
static void scan_pod(struct k8s_object *o, void *userdata)
{
	struct pod_scan *s = userdata;

	if (!s->fits) {
		struct k8s_object **v;

		if (o->node_name || o->deleting || !streq_ptr(o->phase, "Pending"))
			return;
		v = realloc(s->pending, (s->n_pending + 1) * sizeof(*v));
		if (!v)
			return;
		s->pending = v;
		v[s->n_pending++] = k8s_object_ref(o);
	} else if (o->node_name && !streq_ptr(o->phase, "Succeeded") &&
		   !streq_ptr(o->phase, "Failed")) {
		struct node_fit key = { .name = o->node_name };
		struct node_fit *f = bsearch(&key, s->fits, s->n_fits, sizeof(key), fit_cmp);

		if (f) {
			f->free_cpu -= o->cpu_milli;
			f->free_memory -= o->memory_milli;
			f->free_pods -= 1000;
		}
	}
}

static bool is_pending(const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec");
	const char *sched = json_string_value(json_object_get(spec, "schedulerName"));

	return !json_object_get(spec, "nodeName") &&
	       !json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") &&
	       (!sched || streq(sched, "default-scheduler")) &&
	       streq_ptr(json_string_value(json_object_get(json_object_get(pod, "status"), "phase")),
			 "Pending");
}

/* The scheduler's name in Events, as kube-scheduler's default profile. */
static const struct k8s_event_source scheduler_source = { .component = "default-scheduler" };

struct unschedulable {
	const char *message;
	bool changed; /* the condition was written, not already there */
};

static json_t *mark_unschedulable(const json_t *cur, void *userdata, struct k8s_error *err)
{
	struct unschedulable *u = userdata;
	json_t *out = json_deep_copy(cur), *status, *conds, *c;
	char now[32];
	size_t i;

	status = json_object_get(out, "status");
	if (!json_is_object(status))
		json_object_set_new(out, "status", status = json_object());
	conds = json_object_get(status, "conditions");
	if (!json_is_array(conds))
		json_object_set_new(status, "conditions", conds = json_array());
	json_array_foreach(conds, i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), "PodScheduled")) {
			if (streq_ptr(json_string_value(json_object_get(c, "message")), u->message) &&
			    streq_ptr(json_string_value(json_object_get(c, "status")), "False"))
				return out;
			json_array_remove(conds, i);
			break;
		}
	k8s_timestamp(now, 0);
	json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:n, s:s}", "type",
					       "PodScheduled", "status", "False", "reason",
					       "Unschedulable", "message", u->message,
					       "lastProbeTime", "lastTransitionTime", now));
	u->changed = true;
	return out;
}

struct scheduled_bind {
	struct k8s_store *store;
	const char *node;
};

/* k8s_pod_bind() that puts the decision on the timeline before the bind. */
static json_t *bind_scheduled(const json_t *cur, void *userdata, struct k8s_error *err)
{
	struct scheduled_bind *b = userdata;
	const json_t *meta = json_object_get(cur, "metadata");
	json_t *out = k8s_pod_bind(cur, (void *)b->node, err);

	if (out)
		k8s_timeline_add(b->store, "pod-scheduled", "%s/%s %s",
				 json_string_value(json_object_get(meta, "namespace")) ?: "",
				 json_string_value(json_object_get(meta, "name")) ?: "", b->node);
	return out;
}

static void unschedulable_message(char *buf, size_t len, size_t n_nodes,
				  const unsigned counts[_MISFIT_MAX])
{
	size_t off = (size_t)snprintf(buf, len, "0/%zu nodes are available", n_nodes);
	bool first = true;

	for (int m = 0; m < _MISFIT_MAX && off < len; m++) {
		if (!counts[m])
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s %u %s", first ? ":" : ",",
					counts[m], misfit_text[m]);
		first = false;
	}
	if (off < len)
		snprintf(buf + off, len - off, ".");
}

static int schedule_one(struct k8s_store *store, const json_t *pod, struct node_fit *fits,
			size_t n, const json_t *nodes_by_name)
{
	struct k8s_pod_affinity *affinity = NULL;
	struct k8s_pod_spread *spread = NULL;
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	const json_t *meta = json_object_get(pod, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	struct requests req = pod_requests(pod);
	unsigned counts[_MISFIT_MAX] = {};
	struct k8s_error err = {};
	struct unschedulable u = {};
	struct k8s_event_ref ref;
	json_t *volume_terms;
	char msg[512];
	int r;

	k8s_event_ref_of(pod, &ref);

	volume_terms = k8s_pod_volume_terms(store, pod, msg, sizeof(msg));
	if (!volume_terms)
		goto unschedulable;
	if (k8s_pod_affinity_new(store, pod, nodes_by_name, &affinity) < 0 ||
	    k8s_pod_spread_new(store, pod, nodes_by_name, &spread) < 0) {
		k8s_pod_affinity_free(affinity);
		json_decref(volume_terms);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		int m = node_misfit(pod, &fits[i], req, volume_terms, affinity, spread);

		if (m >= 0) {
			counts[m]++;
			continue;
		}
		struct scheduled_bind bind = { .store = store, .node = fits[i].name };

		r = k8s_store_mutate(store, pods, ns, name, K8S_WRITE_ALL, bind_scheduled, &bind,
				     NULL, &err);
		k8s_error_clear(&err);
		json_decref(volume_terms);
		k8s_pod_affinity_free(affinity);
		k8s_pod_spread_free(spread);
		if (r < 0)
			return 0;
		(void)k8s_event_record(store, &ref, &scheduler_source, K8S_EVENT_NORMAL, "Scheduled",
				       "Successfully assigned %s/%s to %s", ns, name, fits[i].name);
		fits[i].free_cpu -= req.cpu;
		fits[i].free_memory -= req.memory;
		fits[i].free_pods -= 1000;
		return 1 + k8s_volumes_bind_for_pod(store, pod, fits[i].node);
	}
	json_decref(volume_terms);
	k8s_pod_affinity_free(affinity);
	k8s_pod_spread_free(spread);
	unschedulable_message(msg, sizeof(msg), n, counts);
unschedulable:
	u.message = msg;
	r = k8s_store_mutate(store, pods, ns, name, K8S_WRITE_STATUS, mark_unschedulable, &u,
			     NULL, &err);
	k8s_error_clear(&err);
	/* Once per distinct reason: the pass repeats every few hundred ms. */
	if (r >= 0 && u.changed)
		(void)k8s_event_record(store, &ref, &scheduler_source, K8S_EVENT_WARNING,
				       "FailedScheduling", "%s", msg);
	return r < 0 ? 0 : 1;
}

static int scheduler_pass(struct k8s_store *store);

/*
 * One pass over the pending pods, as one decision against one view of the
 * cluster: the store's lock (recursive) is held throughout, so that no Node
 * or binding written meanwhile through the API is missing from the view a
 * bind is decided on (a Node created between the snapshot and a bind would
 * leave its zone out of a spread constraint's domains).
 */
int k8s_scheduler_reconcile(struct k8s_store *store)
{
	static const char *const inputs[] = { "pods", "nodes", "persistentvolumeclaims",
					       "persistentvolumes" };
	uint64_t inputs_rv = 0, now = clock_monotonic_ms();
	int r = 0;

	pthread_mutex_lock(&store->lock);
	for (size_t i = 0; i < ARRAY_SIZE(inputs); i++) {
		const struct k8s_resource *res = k8s_registry_find(store->reg, "", "v1", inputs[i]);

		if (res && res->write_rv > inputs_rv)
			inputs_rv = res->write_rv;
	}
	/* Nothing it reads was written since its last pass (only Events,
	 * Leases, NodeClaims…): the pass would decide and write the same,
	 * while holding the API's writes up. Still one pass a tick. */
	if (inputs_rv != store->sched_inputs_rv || now - store->sched_pass_ms >= K8S_CONTROLLER_TICK_MS) {
		r = scheduler_pass(store);
		store->sched_inputs_rv = inputs_rv;
		store->sched_pass_ms = now;
	}
	pthread_mutex_unlock(&store->lock);
	return r;
}

static int scheduler_pass(struct k8s_store *store)
{
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	struct pod_scan scan = {};
	json_t *nodes = NULL, *by_name = NULL;
	int writes = 0;

	k8s_store_foreach(store, pods, NULL, scan_pod, &scan);
	if (scan.n_pending == 0)
		return 0;
	nodes = k8s_controller_snapshot(store, "", "nodes");
	scan.fits = nodes ? nodes_from(nodes, &scan.n_fits) : NULL;
	if (!scan.fits) {
		writes = -ENOMEM;
		goto out;
	}
	k8s_store_foreach(store, pods, NULL, scan_pod, &scan);
	by_name = json_object();
	for (size_t i = 0; by_name && i < scan.n_fits; i++)
		if (scan.fits[i].name)
			json_object_set(by_name, scan.fits[i].name, (json_t *)scan.fits[i].node);
	for (size_t i = 0; by_name && i < scan.n_pending; i++) {
		json_t *pod = k8s_object_parse(scan.pending[i]);

		if (pod && is_pending(pod))
			writes += schedule_one(store, pod, scan.fits, scan.n_fits, by_name);
		json_decref(pod);
	}
	json_decref(by_name);
out:
	for (size_t i = 0; i < scan.n_pending; i++)
		k8s_object_unref(scan.pending[i]);
	free(scan.pending);
	free(scan.fits);
	json_decref(nodes);
	return writes;
}
