/*
 * kanna-probe's field-by-field comparison of a replica with the API (see
 * probe.h). The API side is read straight from the Kubernetes JSON with
 * its own small rules (a pod's request is the sum of its containers', a
 * limit standing in for a missing request), not through the watcher's
 * decoders, so that a decoder that drops or mangles a field shows here.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantity.h"
#include "tests/e2e/probe.h"

struct cmp {
	FILE *out;
	const char *key;
	int diffs;
};

static void diff(struct cmp *c, const char *field, const char *fmt, ...) _printf_(3, 4);

static void diff(struct cmp *c, const char *field, const char *fmt, ...)
{
	va_list ap;

	if (c->out && c->diffs < PROBE_MAX_PRINTED_DIFFS) {
		fprintf(c->out, "%s: %s: ", c->key, field);
		va_start(ap, fmt);
		vfprintf(c->out, fmt, ap);
		va_end(ap);
		fputc('\n', c->out);
	}
	c->diffs++;
}

static const json_t *at(const json_t *o, const char *a, const char *b)
{
	o = json_object_get(o, a);
	return b ? json_object_get(o, b) : o;
}

/* Absent and "" are the same to a consumer. */
static void same_cstr(struct cmp *c, const char *field, const char *api, const char *rep)
{
	if (strcmp(api ? api : "", rep ? rep : ""))
		diff(c, field, "API '%s', replica '%s'", api ? api : "", rep ? rep : "");
}

static void same_str(struct cmp *c, const char *field, const json_t *api, const char *rep)
{
	same_cstr(c, field, json_string_value(api), rep);
}

static void same_int(struct cmp *c, const char *field, long long api, long long rep)
{
	if (api != rep)
		diff(c, field, "API %lld, replica %lld", api, rep);
}

static void same_kv(struct cmp *c, const char *field, const json_t *api,
		    const struct proto_kv *kv, uint32_t n)
{
	const char *k;
	const json_t *v;

	if (json_object_size(api) != n) {
		diff(c, field, "API has %zu, replica %u", json_object_size(api), n);
		return;
	}
	json_object_foreach((json_t *)api, k, v) {
		uint32_t i;

		for (i = 0; i < n && strcmp(kv[i].key, k); i++)
			;
		if (i == n || strcmp(kv[i].value, json_string_value(v) ?: ""))
			diff(c, field, "%s: API '%s', replica '%s'", k, json_string_value(v) ?: "",
			     i < n ? kv[i].value : "(none)");
	}
}

/* name → quantity, summed into sums (cpu in millicores). */
static int add_resources(const json_t *map, const json_t *also, json_t *sums)
{
	const char *k;
	const json_t *v;

	json_object_foreach((json_t *)map, k, v) {
		int64_t q;

		if (quantity_parse(json_string_value(v) ?: "", streq(k, "cpu"), &q) < 0)
			return -EINVAL;
		json_object_set_new(sums, k, json_integer(json_integer_value(json_object_get(sums, k)) + q));
	}
	/* A limit without its request stands in for it. */
	json_object_foreach((json_t *)also, k, v) {
		int64_t q;

		if (json_object_get(map, k))
			continue;
		if (quantity_parse(json_string_value(v) ?: "", streq(k, "cpu"), &q) < 0)
			return -EINVAL;
		json_object_set_new(sums, k, json_integer(json_integer_value(json_object_get(sums, k)) + q));
	}
	return 0;
}

static void same_resources(struct cmp *c, const char *field, const json_t *sums,
			   const struct proto_resource *r, uint32_t n)
{
	const char *k;
	const json_t *v;

	if (json_object_size(sums) != n) {
		diff(c, field, "API has %zu resources, replica %u", json_object_size(sums), n);
		return;
	}
	json_object_foreach((json_t *)sums, k, v) {
		uint32_t i;

		for (i = 0; i < n && strcmp(r[i].name, k); i++)
			;
		if (i == n || r[i].value != json_integer_value(v))
			diff(c, field, "%s: API %lld, replica %lld", k, (long long)json_integer_value(v),
			     i < n ? (long long)r[i].value : -1LL);
	}
}

static void same_quantities(struct cmp *c, const char *field, const json_t *api,
			    const struct proto_resource *r, uint32_t n)
{
	json_t *sums = json_object();

	if (add_resources(api, NULL, sums) < 0)
		diff(c, field, "the API's quantities do not parse");
	else
		same_resources(c, field, sums, r, n);
	json_decref(sums);
}

static const char *const phases[] = { "Pending", "Running", "Succeeded", "Failed", "Unknown" };
static const char *const cond_status[] = { "Unknown", "True", "False" };
static const char *const effects[] = { "", "NoSchedule", "PreferNoSchedule", "NoExecute" };
static const char *const req_ops[] = { "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt",
					"Gte", "Lte" };

static void same_taints(struct cmp *c, const char *field, const json_t *api,
			const struct proto_taint *t, uint32_t n)
{
	const json_t *e;
	size_t i;

	if (json_array_size(api) != n) {
		diff(c, field, "API has %zu, replica %u", json_array_size(api), n);
		return;
	}
	json_array_foreach(api, i, e) {
		same_str(c, field, json_object_get(e, "key"), t[i].key);
		same_str(c, field, json_object_get(e, "value"), t[i].value);
		same_str(c, field, json_object_get(e, "effect"),
			 t[i].effect < ARRAY_SIZE(effects) ? effects[t[i].effect] : "?");
	}
}

static void compare_pod(struct cmp *c, const json_t *o, const struct proto_pod *p)
{
	const json_t *spec = json_object_get(o, "spec"), *status = json_object_get(o, "status");
	const json_t *e, *sched = NULL, *owners = at(o, "metadata", "ownerReferences");
	const char *phase = json_string_value(json_object_get(status, "phase"));
	const struct proto_pod_template *t = proto_pod_template_of(p);
	const json_t *grace = json_object_get(spec, "terminationGracePeriodSeconds");
	size_t i;

	same_kv(c, "labels", at(o, "metadata", "labels"), t->labels, t->n_labels);
	same_str(c, "nodeName", json_object_get(spec, "nodeName"), p->node_name);
	same_str(c, "schedulerName", json_object_get(spec, "schedulerName"), t->scheduler_name);
	same_int(c, "priority", json_integer_value(json_object_get(spec, "priority")), t->priority);
	same_int(c, "terminationGracePeriodSeconds", json_is_integer(grace) ? json_integer_value(grace) : 30,
		 t->termination_grace_s);
	same_cstr(c, "phase", phase ? phase : "Pending",
		  p->phase < ARRAY_SIZE(phases) ? phases[p->phase] : "?");
	same_int(c, "deletionTimestamp", at(o, "metadata", "deletionTimestamp") != NULL,
		 p->deletion_time != 0);
	json_array_foreach(json_object_get(status, "conditions"), i, e)
		if (streq_ptr(json_string_value(json_object_get(e, "type")), "PodScheduled"))
			sched = e;
	same_cstr(c, "PodScheduled", json_string_value(json_object_get(sched, "status")) ?: "Unknown",
		  p->scheduled < ARRAY_SIZE(cond_status) ? cond_status[p->scheduled] : "?");
	same_str(c, "PodScheduled.reason", json_object_get(sched, "reason"), p->scheduled_reason);
	if (json_array_size(owners) != t->n_owner_refs)
		diff(c, "ownerReferences", "API has %zu, replica %u", json_array_size(owners),
		     t->n_owner_refs);
	else
		json_array_foreach(owners, i, e) {
			same_str(c, "ownerReferences.kind", json_object_get(e, "kind"), t->owner_refs[i].kind);
			same_str(c, "ownerReferences.name", json_object_get(e, "name"), t->owner_refs[i].name);
		}
	/* Init containers and overhead have rules of their own: plain pods only. */
	if (!json_array_size(json_object_get(spec, "initContainers")) &&
	    !json_object_get(spec, "overhead")) {
		json_t *sums = json_object();
		int r = 0;

		json_array_foreach(json_object_get(spec, "containers"), i, e)
			if (r >= 0)
				r = add_resources(at(e, "resources", "requests"), at(e, "resources", "limits"),
						  sums);
		if (r < 0)
			diff(c, "requests", "the API's quantities do not parse");
		else
			same_resources(c, "requests", sums, t->requests, t->n_requests);
		json_decref(sums);
	}
}

static void compare_node(struct cmp *c, const json_t *o, const struct proto_node *n)
{
	const json_t *e, *ready = NULL;
	size_t i;

	same_kv(c, "labels", at(o, "metadata", "labels"), n->labels, n->n_labels);
	same_str(c, "providerID", at(o, "spec", "providerID"), n->provider_id);
	same_int(c, "unschedulable", json_is_true(at(o, "spec", "unschedulable")), n->unschedulable);
	same_taints(c, "taints", at(o, "spec", "taints"), n->taints, n->n_taints);
	same_quantities(c, "capacity", at(o, "status", "capacity"), n->capacity, n->n_capacity);
	same_quantities(c, "allocatable", at(o, "status", "allocatable"), n->allocatable,
			n->n_allocatable);
	json_array_foreach(at(o, "status", "conditions"), i, e)
		if (streq_ptr(json_string_value(json_object_get(e, "type")), "Ready"))
			ready = e;
	same_cstr(c, "Ready", json_string_value(json_object_get(ready, "status")) ?: "Unknown",
		  n->ready < ARRAY_SIZE(cond_status) ? cond_status[n->ready] : "?");
}

static void compare_nodepool(struct cmp *c, const json_t *o, const struct proto_nodepool *np)
{
	const json_t *tmpl = at(o, "spec", "template"), *e, *v;
	size_t i, k;

	/* An invalid NodePool is published as a name and a reason only. */
	if (np->status != PROTO_NODEPOOL_OK)
		return;
	same_int(c, "weight", json_integer_value(at(o, "spec", "weight")), np->weight);
	same_kv(c, "template.labels", at(tmpl, "metadata", "labels"), np->labels, np->n_labels);
	same_str(c, "nodeClassRef.name", at(at(tmpl, "spec", "nodeClassRef"), "name", NULL),
		 np->nodeclass_ref.name);
	same_taints(c, "taints", at(tmpl, "spec", "taints"), np->taints, np->n_taints);
	same_quantities(c, "limits", at(o, "spec", "limits"), np->limits, np->n_limits);
	/* Every requirement given, as given (the watcher may add defaults). */
	json_array_foreach(at(tmpl, "spec", "requirements"), i, e) {
		const char *key = json_string_value(json_object_get(e, "key")) ?: "";
		const struct proto_requirement *q = NULL;

		for (uint32_t j = 0; j < np->n_requirements && !q; j++)
			if (streq(np->requirements[j].key, key))
				q = &np->requirements[j];
		if (!q) {
			diff(c, "requirements", "%s: missing in the replica", key);
			continue;
		}
		same_str(c, "requirements.operator", json_object_get(e, "operator"),
			 q->op < ARRAY_SIZE(req_ops) ? req_ops[q->op] : "?");
		if (json_array_size(json_object_get(e, "values")) != q->n_values) {
			diff(c, "requirements.values", "%s: API has %zu, replica %u", key,
			     json_array_size(json_object_get(e, "values")), q->n_values);
			continue;
		}
		json_array_foreach(json_object_get(e, "values"), k, v)
			same_str(c, "requirements.values", v, q->values[k]);
	}
}

static void compare_pvc(struct cmp *c, const json_t *o, const struct proto_pvc *p)
{
	const char *phase = json_string_value(at(o, "status", "phase"));
	const char *storage = json_string_value(at(at(o, "spec", "resources"), "requests", "storage"));
	int64_t bytes = 0;

	same_str(c, "storageClassName", at(o, "spec", "storageClassName"), p->storage_class);
	same_str(c, "volumeName", at(o, "spec", "volumeName"), p->volume_name);
	same_cstr(c, "phase",
		  phase && (streq(phase, "Bound") || streq(phase, "Lost")) ? phase : "Pending",
		  p->phase == PROTO_PVC_BOUND ? "Bound" : p->phase == PROTO_PVC_LOST ? "Lost" : "Pending");
	if (storage && quantity_parse(storage, false, &bytes) < 0)
		diff(c, "storage", "the API's '%s' does not parse", storage);
	same_int(c, "storage", bytes, p->storage_bytes);
}

/* The kinds compared, and how an API item names its replica object. */
static int kind_of(const json_t *o, enum proto_object_kind *ret)
{
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *api = json_string_value(json_object_get(o, "apiVersion"));

	if (streq_ptr(kind, "Pod"))
		*ret = PROTO_OBJECT_POD;
	else if (streq_ptr(kind, "Node"))
		*ret = PROTO_OBJECT_NODE;
	else if (streq_ptr(kind, "NodePool") && streq_ptr(api, "karpenter.sh/v1"))
		*ret = PROTO_OBJECT_NODEPOOL;
	else if (streq_ptr(kind, "PersistentVolumeClaim"))
		*ret = PROTO_OBJECT_PVC;
	else if (streq_ptr(kind, "Namespace"))
		*ret = PROTO_OBJECT_NAMESPACE;
	else
		return -ENOENT;
	return 0;
}

static bool compared_kind(const struct proto_object *o)
{
	switch (o->kind) {
	case PROTO_OBJECT_POD: case PROTO_OBJECT_NODE: case PROTO_OBJECT_PVC:
	case PROTO_OBJECT_NAMESPACE:
		return true;
	case PROTO_OBJECT_NODEPOOL:
		return o->nodepool->source_api == PROTO_API_V1;
	default:
		return false;
	}
}

int probe_compare(const struct state_store *replica, const json_t *api, FILE *out,
		  size_t *compared)
{
	struct hashmap seen = { 0 };
	struct cmp c = { .out = out };
	const struct state_entry *e;
	const json_t *o;
	char key[STATE_KEY_MAX];
	size_t i, it = 0;
	int r = 0;

	*compared = 0;
	if (!json_is_array(json_object_get(api, "items")))
		return -EINVAL;
	json_array_foreach(json_object_get(api, "items"), i, o) {
		const json_t *meta = json_object_get(o, "metadata");
		const char *ns = json_string_value(json_object_get(meta, "namespace"));
		const char *name = json_string_value(json_object_get(meta, "name"));
		enum proto_object_kind kind;

		if (kind_of(o, &kind) < 0 || !name)
			continue;
		if (kind == PROTO_OBJECT_NODE || kind == PROTO_OBJECT_NODEPOOL || kind == PROTO_OBJECT_NAMESPACE)
			ns = "";
		if (state_key_of(kind, ns, name, key, sizeof(key)) < 0 ||
		    (r = hashmap_put(&seen, key, (void *)1, NULL)) < 0)
			break;
		(*compared)++;
		c.key = key;
		e = state_store_get(replica, kind, ns, name);
		if (!e) {
			diff(&c, "object", "in the API, not in the replica");
			continue;
		}
		{
			const char *ns_, *name_;
			const char *uid = NULL, *rv = NULL;

			state_object_name(&e->obj, &ns_, &name_);
			switch (kind) {
			case PROTO_OBJECT_POD: uid = e->obj.pod->uid; rv = e->obj.pod->resource_version; break;
			case PROTO_OBJECT_NODE: uid = e->obj.node->uid; rv = e->obj.node->resource_version; break;
			case PROTO_OBJECT_NODEPOOL: uid = e->obj.nodepool->uid; rv = e->obj.nodepool->resource_version; break;
			case PROTO_OBJECT_PVC: uid = e->obj.pvc->uid; rv = e->obj.pvc->resource_version; break;
			case PROTO_OBJECT_NAMESPACE: uid = e->obj.namespace->uid; rv = e->obj.namespace->resource_version; break;
			default: break;
			}
			same_str(&c, "uid", json_object_get(meta, "uid"), uid);
			same_str(&c, "resourceVersion", json_object_get(meta, "resourceVersion"), rv);
		}
		switch (kind) {
		case PROTO_OBJECT_POD: compare_pod(&c, o, e->obj.pod); break;
		case PROTO_OBJECT_NODE: compare_node(&c, o, e->obj.node); break;
		case PROTO_OBJECT_NODEPOOL: compare_nodepool(&c, o, e->obj.nodepool); break;
		case PROTO_OBJECT_PVC: compare_pvc(&c, o, e->obj.pvc); break;
		case PROTO_OBJECT_NAMESPACE:
			same_kv(&c, "labels", at(o, "metadata", "labels"), e->obj.namespace->labels,
				e->obj.namespace->n_labels);
			break;
		default: break;
		}
	}
	while (r >= 0 && (e = state_store_next(replica, &it)))
		if (compared_kind(&e->obj) && state_key(&e->obj, key, sizeof(key)) >= 0 &&
		    !hashmap_get(&seen, key)) {
			c.key = key;
			diff(&c, "object", "in the replica, not in the API");
		}
	hashmap_done(&seen);
	return r < 0 ? r : c.diffs;
}
