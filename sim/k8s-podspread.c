/*
 * Pod topology spread for kanna-sim's scheduler-lite, as kube-scheduler's
 * PodTopologySpread filter: for each constraint whenUnsatisfiable
 * DoNotSchedule (the default here, as the stricter reading), the domains
 * are the topology values of the nodes the pod's nodeSelector and required
 * node affinity select (nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore:
 * upstream's defaults) that carry every key the pod spreads on; a domain
 * counts the bound, live pods of the pod's namespace its labelSelector
 * matches. A node fits when it has the key and its domain's count, plus one
 * when the pod matches its own selector, exceeds the smallest count
 * (0 when there are fewer domains than minDomains) by at most maxSkew.
 * Without this the sim would bind where a real cluster never would.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-store-internal.h"

struct spread_constraint {
	struct k8s_selector *sel; /* NULL: a null selector matches no pod */
	const char *key;          /* topologyKey, borrowed from the pod */
	json_t *counts;           /* topology value → matching pods there */
	long max_skew, min_domains;
	bool self_match;
};

struct k8s_pod_spread {
	struct spread_constraint *c;
	size_t n;
};

struct k8s_pod_spread *k8s_pod_spread_free(struct k8s_pod_spread *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n; i++) {
		k8s_selector_free(s->c[i].sel);
		json_decref(s->c[i].counts);
	}
	free(s->c);
	free(s);
	return NULL;
}

static const json_t *node_labels(const json_t *node)
{
	return json_object_get(json_object_get(node, "metadata"), "labels");
}

/* Upstream counts only nodes that carry every key the pod spreads on. */
static bool has_every_key(const struct k8s_pod_spread *s, const json_t *node)
{
	for (size_t i = 0; i < s->n; i++)
		if (!json_string_value(json_object_get(node_labels(node), s->c[i].key)))
			return false;
	return true;
}

struct spread_scan {
	struct k8s_pod_spread *s;
	const json_t *pod;
	const json_t *nodes_by_name;
};

static void count_pod(struct k8s_object *o, void *userdata)
{
	struct spread_scan *scan = userdata;
	const json_t *node;

	if (!o->node_name || o->deleting || streq_ptr(o->phase, "Succeeded") ||
	    streq_ptr(o->phase, "Failed"))
		return;
	node = json_object_get(scan->nodes_by_name, o->node_name);
	if (!node || !k8s_pod_selects_node(scan->pod, node) || !has_every_key(scan->s, node))
		return;
	for (size_t i = 0; i < scan->s->n; i++) {
		struct spread_constraint *c = &scan->s->c[i];
		const char *v = json_string_value(json_object_get(node_labels(node), c->key));

		if (c->sel && k8s_label_selector_matches(c->sel, o->labels))
			json_object_set_new(c->counts, v,
					    json_integer(json_integer_value(json_object_get(c->counts, v)) + 1));
	}
}

static int add_constraint(struct k8s_pod_spread *s, const json_t *pod, const json_t *tsc)
{
	const char *when = json_string_value(json_object_get(tsc, "whenUnsatisfiable"));
	const json_t *sel = json_object_get(tsc, "labelSelector");
	struct spread_constraint *c;
	char msg[128];

	if (when && !streq(when, "DoNotSchedule"))
		return 0;
	c = &s->c[s->n];
	*c = (struct spread_constraint){
		.key = json_string_value(json_object_get(tsc, "topologyKey")),
		.max_skew = json_integer_value(json_object_get(tsc, "maxSkew")),
		.min_domains = json_integer_value(json_object_get(tsc, "minDomains")),
		.counts = json_object(),
	};
	if (!c->counts)
		return -ENOMEM;
	if (!c->key || c->max_skew < 1 ||
	    (sel && !json_is_null(sel) && k8s_label_selector_from_json(sel, &c->sel, msg, sizeof(msg)) < 0)) {
		/* The API server refuses such pods; one that got in fits nowhere. */
		c->key = c->key ?: "";
		c->max_skew = -1;
	}
	c->self_match = c->sel && k8s_label_selector_matches(c->sel, json_object_get(json_object_get(pod, "metadata"), "labels"));
	s->n++;
	return 0;
}

int k8s_pod_spread_new(struct k8s_store *store, const json_t *pod, const json_t *nodes_by_name,
		       struct k8s_pod_spread **ret)
{
	const struct k8s_resource *pods = k8s_registry_find(store->reg, "", "v1", "pods");
	const json_t *tscs = json_object_get(json_object_get(pod, "spec"), "topologySpreadConstraints");
	const char *ns = json_string_value(json_object_get(json_object_get(pod, "metadata"), "namespace"));
	struct k8s_pod_spread *s = calloc(1, sizeof(*s));
	const json_t *tsc, *node;
	const char *name;
	size_t i;

	if (!s || !(s->c = calloc(json_array_size(tscs) + 1, sizeof(*s->c)))) {
		free(s);
		return -ENOMEM;
	}
	json_array_foreach(tscs, i, tsc)
		if (add_constraint(s, pod, tsc) < 0) {
			k8s_pod_spread_free(s);
			return -ENOMEM;
		}
	if (s->n > 0) {
		struct spread_scan scan = { .s = s, .pod = pod, .nodes_by_name = nodes_by_name };

		/* Every eligible node's value is a domain, with or without pods. */
		json_object_foreach((json_t *)nodes_by_name, name, node) {
			if (!k8s_pod_selects_node(pod, node) || !has_every_key(s, node))
				continue;
			for (size_t k = 0; k < s->n; k++) {
				const char *v = json_string_value(json_object_get(node_labels(node), s->c[k].key));

				if (!json_object_get(s->c[k].counts, v))
					json_object_set_new(s->c[k].counts, v, json_integer(0));
			}
		}
		if (pods)
			k8s_store_foreach(store, pods, ns ?: "", count_pod, &scan);
	}
	*ret = s;
	return 0;
}

bool k8s_pod_spread_fits(const struct k8s_pod_spread *s, const json_t *node)
{
	for (size_t i = 0; s && i < s->n; i++) {
		const struct spread_constraint *c = &s->c[i];
		const char *v = json_string_value(json_object_get(node_labels(node), c->key));
		json_int_t min = -1;
		const char *value;
		const json_t *n;

		if (!v || c->max_skew < 1)
			return false;
		json_object_foreach((json_t *)c->counts, value, n)
			if (min < 0 || json_integer_value(n) < min)
				min = json_integer_value(n);
		if (min < 0 || (c->min_domains > 0 && (long)json_object_size(c->counts) < c->min_domains))
			min = 0;
		if (json_integer_value(json_object_get(c->counts, v)) + (c->self_match ? 1 : 0) - min >
		    c->max_skew)
			return false;
	}
	return true;
}
