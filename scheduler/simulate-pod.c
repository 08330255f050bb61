/*
 * A Kubernetes PodSpec (with its metadata) into the solver's pod: requests
 * (max of init containers vs sum of containers, plus overhead; limits
 * stand in for missing requests), nodeSelector, node affinity, tolerations,
 * topology spread, pod (anti-)affinity, host ports. Volumes are resolved by
 * simulate-load.c. Called for Pods, workload templates and DaemonSets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/simulate-internal.h"

/* Terms of one kind a pod may carry (the API allows more; nobody does). */
#define POD_MAX_TERMS 64
#define POD_MAX_PORTS 64

static int container_requests(struct yctx *y, const yaml_node_t *c, struct resources *ret)
{
	const yaml_node_t *res = yget(y, c, "resources");
	struct resources req = { { 0 } }, lim = { { 0 } };
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!res)
		return 0;
	if ((r = yexpect(y, res, YAML_MAPPING_NODE, "resources {requests, limits}")) < 0 ||
	    (r = yresources(y, yget(y, res, "requests"), &req)) < 0 ||
	    (r = yresources(y, yget(y, res, "limits"), &lim)) < 0)
		return r;
	for (int i = 0; i < SCHED_MAX_RESOURCES; i++) /* API defaulting: requests = limits */
		ret->v[i] = req.v[i] ? req.v[i] : lim.v[i];
	return 0;
}

static int pod_containers(struct yctx *y, const yaml_node_t *spec, struct pod *p)
{
	const yaml_node_t *cs = yget(y, spec, "containers"), *ic = yget(y, spec, "initContainers");
	struct resources sum = { { 0 } }, init = { { 0 } }, one, over = { { 0 } };
	uint16_t ports[POD_MAX_PORTS];
	yaml_node_t *c, *port;
	int r;

	if (cs && (r = yexpect(y, cs, YAML_SEQUENCE_NODE, "a list of containers")) < 0)
		return r;
	if (ic && (r = yexpect(y, ic, YAML_SEQUENCE_NODE, "a list of containers")) < 0)
		return r;
	if (cs)
		YSEQ_FOREACH(y, cs, c) {
			if ((r = yexpect(y, c, YAML_MAPPING_NODE, "a container")) < 0 ||
			    (r = container_requests(y, c, &one)) < 0)
				return r;
			resources_add(&sum, &one, SCHED_MAX_RESOURCES);
			const yaml_node_t *pl = yget(y, c, "ports");
			if (pl && (r = yexpect(y, pl, YAML_SEQUENCE_NODE, "a list of ports")) < 0)
				return r;
			if (pl)
				YSEQ_FOREACH(y, pl, port) {
					int64_t hp = 0;
					if ((r = yint(y, yget(y, port, "hostPort"), &hp)) < 0)
						return r;
					if (hp < 0 || hp > 65535)
						return yerr(y, port, "hostPort %lld out of range", (long long)hp);
					if (hp && p->n_host_ports < POD_MAX_PORTS)
						ports[p->n_host_ports++] = (uint16_t)hp;
				}
		}
	if (ic)
		YSEQ_FOREACH(y, ic, c) {
			if ((r = yexpect(y, c, YAML_MAPPING_NODE, "a container")) < 0 ||
			    (r = container_requests(y, c, &one)) < 0)
				return r;
			for (int i = 0; i < SCHED_MAX_RESOURCES; i++)
				init.v[i] = MAX(init.v[i], one.v[i]);
		}
	if ((r = yresources(y, yget(y, spec, "overhead"), &over)) < 0)
		return r;
	for (int i = 0; i < SCHED_MAX_RESOURCES; i++)
		p->req.v[i] = MAX(sum.v[i], init.v[i]) + over.v[i];
	p->req.v[RES_PODS] = 1;
	if (p->n_host_ports) {
		p->host_ports = arena_memdup(&y->c->arena, ports, p->n_host_ports * sizeof(*ports));
		if (!p->host_ports)
			return -ENOMEM;
	}
	return 0;
}

static int pod_node_affinity(struct yctx *y, const yaml_node_t *na, struct pod *p)
{
	const yaml_node_t *req = yget(y, na, "requiredDuringSchedulingIgnoredDuringExecution");
	const yaml_node_t *pref = yget(y, na, "preferredDuringSchedulingIgnoredDuringExecution");
	yaml_node_t *t;
	int r;

	if (req) {
		const yaml_node_t *terms = yget(y, req, "nodeSelectorTerms");
		if ((r = yexpect(y, terms, YAML_SEQUENCE_NODE, "nodeSelectorTerms")) < 0)
			return r;
		size_t n = (size_t)(terms->data.sequence.items.top - terms->data.sequence.items.start);
		p->terms = calloc(n ? n : 1, sizeof(*p->terms));
		if (!p->terms)
			return -ENOMEM;
		YSEQ_FOREACH(y, terms, t) {
			if ((r = yexpect(y, t, YAML_MAPPING_NODE, "a node selector term")) < 0)
				return r;
			r = yrequirements(y, yget(y, t, "matchExpressions"), &p->terms[p->n_terms++]);
			if (r < 0)
				return r;
		}
	}
	if (pref) {
		if ((r = yexpect(y, pref, YAML_SEQUENCE_NODE, "a list of preferred terms")) < 0)
			return r;
		size_t n = (size_t)(pref->data.sequence.items.top - pref->data.sequence.items.start);
		p->prefs = calloc(n ? n : 1, sizeof(*p->prefs));
		if (!p->prefs)
			return -ENOMEM;
		YSEQ_FOREACH(y, pref, t) {
			struct preferred_term *pt = &p->prefs[p->n_prefs++];
			int64_t w = 1;
			if ((r = yint(y, yget(y, t, "weight"), &w)) < 0 ||
			    (r = yrequirements(y, yget(y, yget(y, t, "preference"), "matchExpressions"),
					       &pt->reqs)) < 0)
				return r;
			pt->weight = (int32_t)w;
		}
		/* Heaviest first (stable): Karpenter tries them in this order. */
		for (uint32_t i = 1; i < p->n_prefs; i++)
			for (uint32_t j = i; j > 0 && p->prefs[j - 1].weight < p->prefs[j].weight; j--) {
				struct preferred_term x = p->prefs[j];
				p->prefs[j] = p->prefs[j - 1];
				p->prefs[j - 1] = x;
			}
	}
	return 0;
}

static int add_group(struct yctx *y, const yaml_node_t *at, struct topo_group *g, uint32_t ns,
		     const struct pod *p, const yaml_node_t *match_label_keys)
{
	const yaml_node_t *nss = at ? yget(y, at, "namespaces") : NULL;
	const yaml_node_t *nsel = at ? yget(y, at, "namespaceSelector") : NULL;
	yaml_node_t *item;
	uint32_t list[POD_MAX_TERMS];
	int r;

	g->n_namespaces = 0;
	if (nss) {
		if ((r = yexpect(y, nss, YAML_SEQUENCE_NODE, "a list of namespaces")) < 0)
			return r;
		YSEQ_FOREACH(y, nss, item) {
			const char *s = NULL;
			if ((r = ystr(y, item, &s)) < 0)
				return r;
			if (s && g->n_namespaces < POD_MAX_TERMS)
				list[g->n_namespaces++] = yintern(y, s);
		}
	}
	/* namespaceSelector: we have no Namespace labels; any selector means all. */
	g->has_ns_selector = nsel != NULL; /* no selector requirements: all namespaces */
	if (!g->n_namespaces)
		list[g->n_namespaces++] = ns;
	g->namespaces = arena_memdup(&y->c->arena, list, g->n_namespaces * sizeof(*list));
	if (!g->namespaces)
		return -ENOMEM;
	if (match_label_keys) {
		if ((r = yexpect(y, match_label_keys, YAML_SEQUENCE_NODE, "a list of label keys")) < 0)
			return r;
		YSEQ_FOREACH(y, match_label_keys, item) {
			const char *k = NULL;
			if ((r = ystr(y, item, &k)) < 0)
				return r;
			uint32_t key = yintern(y, k ? k : ""), v = labels_get(p->labels, p->n_labels, key);
			if (v != STR_NONE && (r = requirements_add(&g->selector, &y->c->st, key, REQ_IN, &v, 1, 0)) < 0)
				return r;
		}
	}
	return cluster_group(y->c, g);
}

static int affinity_terms(struct yctx *y, const yaml_node_t *pa, enum topo_kind kind, uint32_t ns,
			  const struct pod *p, struct topo_term *out, uint32_t *n)
{
	const char *which[2] = { "requiredDuringSchedulingIgnoredDuringExecution",
				 "preferredDuringSchedulingIgnoredDuringExecution" };
	yaml_node_t *t;
	int r;

	for (int soft = 0; soft < 2; soft++) {
		const yaml_node_t *list = yget(y, pa, which[soft]);
		if (!list)
			continue;
		if ((r = yexpect(y, list, YAML_SEQUENCE_NODE, "a list of pod affinity terms")) < 0)
			return r;
		YSEQ_FOREACH(y, list, t) {
			const yaml_node_t *at = soft ? yget(y, t, "podAffinityTerm") : t;
			struct topo_group g = { .kind = kind };
			const char *key = NULL;
			int64_t w = 0;
			if (soft && (r = yint(y, yget(y, t, "weight"), &w)) < 0)
				return r;
			if ((r = yexpect(y, at, YAML_MAPPING_NODE, "a pod affinity term")) < 0 ||
			    (r = ystr(y, yget(y, at, "topologyKey"), &key)) < 0)
				return r;
			if (!key || !*key)
				return yerr(y, at, "pod affinity term without topologyKey");
			g.key = yintern(y, key);
			if ((r = yselector(y, yget(y, at, "labelSelector"), &g.selector)) < 0) {
				requirements_free(&g.selector);
				return r;
			}
			if ((r = add_group(y, at, &g, ns, p, NULL)) < 0)
				return r;
			if (*n >= POD_MAX_TERMS)
				return yerr(y, t, "more than %d pod affinity terms", POD_MAX_TERMS);
			out[(*n)++] = (struct topo_term){ { (uint32_t)r, soft, (int32_t)w },
						     soft ? (kind == TOPO_AFFINITY ? 1 : 2) : 0 };
		}
	}
	return 0;
}

static int spread_terms(struct yctx *y, const yaml_node_t *list, uint32_t ns, const struct pod *p,
			struct topo_term *out, uint32_t *n)
{
	yaml_node_t *t;
	int r;

	if ((r = yexpect(y, list, YAML_SEQUENCE_NODE, "a list of topology spread constraints")) < 0)
		return r;
	YSEQ_FOREACH(y, list, t) {
		struct topo_group g = { .kind = TOPO_SPREAD, .max_skew = 1 };
		const char *key = NULL, *when = NULL;
		int64_t skew = 1, min_domains = 0;
		if ((r = yexpect(y, t, YAML_MAPPING_NODE, "a topology spread constraint")) < 0 ||
		    (r = ystr(y, yget(y, t, "topologyKey"), &key)) < 0 ||
		    (r = ystr(y, yget(y, t, "whenUnsatisfiable"), &when)) < 0 ||
		    (r = yint(y, yget(y, t, "maxSkew"), &skew)) < 0 ||
		    (r = yint(y, yget(y, t, "minDomains"), &min_domains)) < 0)
			return r;
		if (!key || !*key)
			return yerr(y, t, "topology spread constraint without topologyKey");
		if (skew < 1 || skew > INT32_MAX || min_domains < 0 || min_domains > INT32_MAX)
			return yerr(y, t, "maxSkew must be at least 1 and minDomains not negative");
		if (when && !streq(when, "DoNotSchedule") && !streq(when, "ScheduleAnyway"))
			return yerr(y, yget(y, t, "whenUnsatisfiable"),
				    "whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway");
		g.key = yintern(y, key);
		g.max_skew = (int32_t)skew;
		g.min_domains = (int32_t)min_domains;
		if ((r = yselector(y, yget(y, t, "labelSelector"), &g.selector)) < 0) {
			requirements_free(&g.selector);
			return r;
		}
		if ((r = add_group(y, NULL, &g, ns, p, yget(y, t, "matchLabelKeys"))) < 0)
			return r;
		bool soft = when && streq(when, "ScheduleAnyway");
		if (*n >= POD_MAX_TERMS)
			return yerr(y, t, "more than %d topology spread constraints", POD_MAX_TERMS);
		out[(*n)++] = (struct topo_term){ { (uint32_t)r, soft, 0 }, soft ? 3 : 0 };
	}
	return 0;
}

static int pod_topology(struct yctx *y, const yaml_node_t *spec, uint32_t ns, struct pod *p)
{
	const yaml_node_t *aff = yget(y, spec, "affinity"), *tsc = yget(y, spec, "topologySpreadConstraints");
	struct topo_term terms[POD_MAX_TERMS * 3];
	uint32_t n = 0;
	int r;

	if (aff && (r = affinity_terms(y, yget(y, aff, "podAffinity"), TOPO_AFFINITY, ns, p, terms, &n)) < 0)
		return r;
	if (aff && (r = affinity_terms(y, yget(y, aff, "podAntiAffinity"), TOPO_ANTI_AFFINITY, ns, p,
				       terms, &n)) < 0)
		return r;
	if (tsc && (r = spread_terms(y, tsc, ns, p, terms, &n)) < 0)
		return r;
	return cluster_pod_set_topology(y->c, p, terms, n);
}

static int pod_tolerations(struct yctx *y, const yaml_node_t *list, struct pod *p)
{
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute" };
	yaml_node_t *t;
	int r;

	if (!list)
		return 0;
	if ((r = yexpect(y, list, YAML_SEQUENCE_NODE, "a list of tolerations")) < 0)
		return r;
	size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
	p->tols = arena_alloc(&y->c->arena, (n ? n : 1) * sizeof(*p->tols));
	if (!p->tols)
		return -ENOMEM;
	YSEQ_FOREACH(y, list, t) {
		const char *key = NULL, *op = NULL, *value = NULL, *effect = NULL;
		struct toleration *o = &p->tols[p->n_tols];
		if ((r = yexpect(y, t, YAML_MAPPING_NODE, "a toleration")) < 0 ||
		    (r = ystr(y, yget(y, t, "key"), &key)) < 0 ||
		    (r = ystr(y, yget(y, t, "operator"), &op)) < 0 ||
		    (r = ystr(y, yget(y, t, "value"), &value)) < 0 ||
		    (r = ystr(y, yget(y, t, "effect"), &effect)) < 0)
			return r;
		if (op && !streq(op, "Exists") && !streq(op, "Equal"))
			return yerr(y, yget(y, t, "operator"), "toleration operator must be Exists or Equal");
		o->key = key && *key ? yintern(y, key) : STR_NONE;
		o->exists = op && streq(op, "Exists");
		o->value = o->exists ? STR_NONE : yintern(y, value ? value : "");
		o->effect = -1;
		for (int i = 0; effect && *effect && i < 3; i++)
			if (streq(effect, effects[i]))
				o->effect = (int8_t)i;
		if (effect && *effect && o->effect < 0)
			return yerr(y, yget(y, t, "effect"), "unknown taint effect \"%s\"", effect);
		if (o->key == STR_NONE && !o->exists)
			return yerr(y, t, "a toleration without key needs operator Exists");
		p->n_tols++;
	}
	return 0;
}

int ypod(struct yctx *y, const yaml_node_t *meta, const yaml_node_t *spec, uint32_t ns,
	 struct pod *p)
{
	const yaml_node_t *sel, *aff;
	yaml_node_pair_t *pair;
	int r;

	p->ns = ns;
	if ((r = ylabels(y, yget(y, meta, "labels"), &p->labels, &p->n_labels)) < 0)
		return r;
	if ((r = yexpect(y, spec, YAML_MAPPING_NODE, "a pod spec")) < 0 ||
	    (r = pod_containers(y, spec, p)) < 0)
		return r;
	sel = yget(y, spec, "nodeSelector");
	if (sel) {
		if ((r = yexpect(y, sel, YAML_MAPPING_NODE, "a nodeSelector map")) < 0)
			return r;
		YMAP_FOREACH(y, sel, pair) {
			const char *k = NULL, *v = NULL;
			if ((r = ystr(y, yaml_document_get_node(y->doc, pair->key), &k)) < 0 ||
			    (r = ystr(y, yaml_document_get_node(y->doc, pair->value), &v)) < 0)
				return r;
			uint32_t vid = yintern(y, v ? v : "");
			if ((r = requirements_add(&p->reqs, &y->c->st, yintern(y, k ? k : ""), REQ_IN, &vid, 1, 0)) < 0)
				return r;
		}
	}
	aff = yget(y, spec, "affinity");
	if (aff && (r = yexpect(y, aff, YAML_MAPPING_NODE, "an affinity")) < 0)
		return r;
	if (aff && yget(y, aff, "nodeAffinity") &&
	    (r = pod_node_affinity(y, yget(y, aff, "nodeAffinity"), p)) < 0)
		return r;
	if ((r = pod_topology(y, spec, ns, p)) < 0)
		return r;
	return pod_tolerations(y, yget(y, spec, "tolerations"), p);
}
