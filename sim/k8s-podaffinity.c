/*
 * Required inter-pod affinity and anti-affinity for kanna-sim's
 * scheduler-lite: each term's labelSelector is evaluated once against the
 * bound pods of its namespaces, giving the set of topology values (zone,
 * hostname, ...) where matching pods run; a node then fits an affinity term
 * when its value is in the set (or, as upstream, when nothing matches yet
 * and the pod matches its own term), and an anti-affinity term when not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"

struct affinity_term {
	struct k8s_selector *sel;
	const char *key;  /* topologyKey, borrowed from the pod */
	json_t *values;   /* topology value → true where matching pods run */
	bool anti;
	bool self_match;  /* the pod matches its own term */
};

struct k8s_pod_affinity {
	struct affinity_term *terms;
	size_t n;
};

struct k8s_pod_affinity *k8s_pod_affinity_free(struct k8s_pod_affinity *a)
{
	if (!a)
		return NULL;
	for (size_t i = 0; i < a->n; i++) {
		k8s_selector_free(a->terms[i].sel);
		json_decref(a->terms[i].values);
	}
	free(a->terms);
	free(a);
	return NULL;
}

struct term_scan {
	struct affinity_term *t;
	const json_t *nodes_by_name;
	const char *self_ns, *self_name;
};

static void scan_pod(struct k8s_object *o, void *userdata)
{
	struct term_scan *s = userdata;
	const char *v;

	if (!o->node_name || o->deleting || (streq(o->ns, s->self_ns) && streq(o->name, s->self_name)) ||
	    !k8s_label_selector_matches(s->t->sel, o->labels))
		return;
	v = json_string_value(json_object_get(json_object_get(json_object_get(
		json_object_get(s->nodes_by_name, o->node_name), "metadata"), "labels"), s->t->key));
	if (v)
		json_object_set_new(s->t->values, v, json_true());
}

static int add_term(struct k8s_store *store, struct k8s_pod_affinity *a, const json_t *pod,
		    const json_t *term, bool anti, const json_t *nodes_by_name)
{
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	const json_t *meta = json_object_get(pod, "metadata"), *nsv;
	const json_t *namespaces = json_object_get(term, "namespaces");
	struct affinity_term *t;
	struct term_scan s;
	char msg[128];
	size_t i;

	t = realloc(a->terms, (a->n + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	a->terms = t;
	t = &a->terms[a->n];
	memset(t, 0, sizeof(*t));
	t->key = json_string_value(json_object_get(term, "topologyKey"));
	t->anti = anti;
	t->values = json_object();
	if (!t->key || !t->values ||
	    k8s_label_selector_from_json(json_object_get(term, "labelSelector"), &t->sel, msg,
					 sizeof(msg)) < 0) {
		json_decref(t->values);
		return -EINVAL;
	}
	a->n++;
	t->self_match = k8s_label_selector_matches(t->sel, json_object_get(meta, "labels"));
	s = (struct term_scan){ .t = t, .nodes_by_name = nodes_by_name,
				.self_ns = json_string_value(json_object_get(meta, "namespace")) ?: "",
				.self_name = json_string_value(json_object_get(meta, "name")) ?: "" };
	if (json_array_size(namespaces) == 0)
		k8s_store_foreach(store, pods, s.self_ns, scan_pod, &s);
	json_array_foreach(namespaces, i, nsv)
		if (json_string_value(nsv))
			k8s_store_foreach(store, pods, json_string_value(nsv), scan_pod, &s);
	return 0;
}

int k8s_pod_affinity_new(struct k8s_store *store, const json_t *pod, const json_t *nodes_by_name,
			 struct k8s_pod_affinity **ret)
{
	const json_t *aff = json_object_get(json_object_get(pod, "spec"), "affinity"), *term;
	static const char *const kinds[] = { "podAffinity", "podAntiAffinity" };
	struct k8s_pod_affinity *a = calloc(1, sizeof(*a));
	size_t i;
	int r;

	if (!a)
		return -ENOMEM;
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
		json_array_foreach(json_object_get(json_object_get(aff, kinds[k]),
						   "requiredDuringSchedulingIgnoredDuringExecution"), i, term) {
			r = add_term(store, a, pod, term, k == 1, nodes_by_name);
			if (r == -ENOMEM) {
				k8s_pod_affinity_free(a);
				return r;
			}
		}
	*ret = a;
	return 0;
}

int k8s_pod_affinity_check(const struct k8s_pod_affinity *a, const json_t *node)
{
	const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");

	for (size_t i = 0; a && i < a->n; i++) {
		const struct affinity_term *t = &a->terms[i];
		const char *v = json_string_value(json_object_get(labels, t->key));
		bool present = v && json_object_get(t->values, v);

		if (t->anti && present)
			return K8S_AFFINITY_ANTI_MISFIT;
		if (!t->anti && !present &&
		    !(json_object_size(t->values) == 0 && t->self_match && v))
			return K8S_AFFINITY_MISFIT;
	}
	return 0;
}
