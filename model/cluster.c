/*
 * Construction and teardown of the solver's cluster model, plus the small
 * predicates every placement needs (taints vs tolerations, group selection,
 * DaemonSet overhead). Called by the loaders and the solver; holds no state
 * outside struct cluster.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/cluster.h"
#include "model/model-base.h"

int cluster_new(struct cluster **ret)
{
	struct cluster *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	r = strtab_init(&c->st);
	if (r >= 0)
		r = wellknown_intern(&c->st);
	if (r >= 0)
		r = catalog_init(&c->cat, &c->st);
	if (r < 0) {
		cluster_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

int cluster_new_from_base(struct cluster **ret, struct model_base *base)
{
	struct cluster *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	r = strtab_copy(&c->st, &base->st);
	if (r < 0) {
		free(c);
		return r;
	}
	c->base = model_base_ref(base);
	c->cat = base->cat;
	c->cat.st = &c->st;
	c->cat.arena = (struct arena){ 0 };
	*ret = c;
	return 0;
}

static void pod_done(struct pod *p)
{
	requirements_free(&p->reqs);
	for (uint32_t i = 0; i < p->n_terms; i++)
		requirements_free(&p->terms[i]);
	for (uint32_t i = 0; i < p->n_prefs; i++)
		requirements_free(&p->prefs[i].reqs);
	free(p->terms);
	free(p->prefs);
}

/* Karpenter's --preference-policy=Ignore (pkg/controllers/provisioning/
 * scheduling: NewStrictPodRequirements, newForTopologies/newForAffinities
 * skip ScheduleAnyway spread and preferred pod (anti-)affinity, and the
 * inverse anti-affinity counts required terms only): every pod loses its
 * preferred node affinity and its soft topology terms. */
void cluster_ignore_preferences(struct cluster *c)
{
	for (uint32_t i = 0; i < c->n_pods; i++) {
		struct pod *p = &c->pods[i];
		uint32_t hard = 0;
		for (uint32_t j = 0; j < p->n_prefs; j++)
			requirements_free(&p->prefs[j].reqs);
		free(p->prefs);
		p->prefs = NULL;
		p->n_prefs = 0;
		for (uint32_t j = 0; j < p->n_topo; j++) /* the required terms, in order */
			if (!p->topo[j].soft)
				p->topo[hard++] = p->topo[j];
		p->n_topo = hard;
	}
}

void cluster_free(struct cluster *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->n_nodepools; i++)
		requirements_free(&c->nodepools[i].reqs);
	for (uint32_t i = 0; i < c->n_pods; i++)
		pod_done(&c->pods[i]);
	for (uint32_t i = 0; i < c->n_daemonsets; i++)
		pod_done(&c->daemonsets[i]);
	for (uint32_t i = 0; i < c->n_groups; i++) {
		requirements_free(&c->groups[i].selector);
		requirements_free(&c->groups[i].ns_selector);
	}
	free(c->nodepools);
	free(c->nodes);
	free(c->pods);
	free(c->daemonsets);
	free(c->groups);
	free(c->namespaces);
	if (c->base)
		arena_done(&c->cat.arena); /* the types are the base's */
	else
		catalog_done(&c->cat);
	arena_done(&c->arena);
	strtab_done(&c->st);
	model_base_unref(c->base);
	free(c);
}

static void *grow(void **v, uint32_t *n, uint32_t *cap, size_t size)
{
	if (*n == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 16;
		void *nv = realloc(*v, nc * size);
		if (!nv)
			return NULL;
		*v = nv;
		*cap = nc;
	}
	void *e = (char *)*v + (size_t)(*n)++ * size;
	memset(e, 0, size);
	return e;
}

struct nodepool *cluster_add_nodepool(struct cluster *c)
{
	struct nodepool *np = grow((void **)&c->nodepools, &c->n_nodepools, &c->cap_nodepools,
				   sizeof(*np));
	if (np) {
		for (int i = 0; i < SCHED_MAX_RESOURCES; i++)
			np->limits.v[i] = INT64_MAX;
		np->node_limit = INT64_MAX;
		np->windows_build = STR_NONE;
	}
	return np;
}

struct node *cluster_add_node(struct cluster *c)
{
	struct node *n = grow((void **)&c->nodes, &c->n_nodes, &c->cap_nodes, sizeof(*n));
	if (n)
		n->nodepool = -1;
	return n;
}

static void pod_init(struct pod *p)
{
	if (p)
		p->node = STR_NONE;
}

struct pod *cluster_add_pod(struct cluster *c)
{
	struct pod *p = grow((void **)&c->pods, &c->n_pods, &c->cap_pods, sizeof(*p));
	pod_init(p);
	return p;
}

struct pod *cluster_add_daemonset(struct cluster *c)
{
	struct pod *p = grow((void **)&c->daemonsets, &c->n_daemonsets, &c->cap_daemonsets,
			     sizeof(*p));
	pod_init(p);
	return p;
}

int cluster_group(struct cluster *c, struct topo_group *g)
{
	for (uint32_t i = 0; i < c->n_groups; i++) {
		const struct topo_group *o = &c->groups[i];
		if (o->kind == g->kind && o->key == g->key && o->max_skew == g->max_skew &&
		    o->min_domains == g->min_domains && o->has_ns_selector == g->has_ns_selector &&
		    o->n_namespaces == g->n_namespaces &&
		    (!g->n_namespaces ||
		     !memcmp(o->namespaces, g->namespaces, g->n_namespaces * sizeof(uint32_t))) &&
		    requirements_equal(&o->selector, &g->selector) &&
		    requirements_equal(&o->ns_selector, &g->ns_selector)) {
			requirements_free(&g->selector);
			requirements_free(&g->ns_selector);
			return (int)i;
		}
	}
	struct topo_group *n = grow((void **)&c->groups, &c->n_groups, &c->cap_groups, sizeof(*n));
	if (!n)
		return -ENOMEM;
	*n = *g;
	return (int)(c->n_groups - 1);
}

static int32_t namespace_find(const struct cluster *c, uint32_t ns, uint32_t *at)
{
	uint32_t lo = 0, hi = c->n_namespaces;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (c->namespaces[mid].ns < ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (at)
		*at = lo;
	return lo < c->n_namespaces && c->namespaces[lo].ns == ns ? (int32_t)lo : -1;
}

int cluster_add_namespace(struct cluster *c, uint32_t ns, const struct label *labels,
			  uint32_t n_labels)
{
	uint32_t name_key = cluster_intern(c, "kubernetes.io/metadata.name"), at;
	struct namespace_labels *e;
	struct label *l;
	uint32_t n = n_labels;

	if (name_key == STR_NONE || !(l = arena_alloc(&c->arena, (n_labels + 1) * sizeof(*l))))
		return -ENOMEM;
	if (n_labels)
		memcpy(l, labels, n_labels * sizeof(*l));
	if (labels_get(labels, n_labels, name_key) == STR_NONE)
		l[n++] = (struct label){ name_key, ns };
	labels_sort(l, n);
	if (namespace_find(c, ns, &at) < 0) {
		if (!grow((void **)&c->namespaces, &c->n_namespaces, &c->cap_namespaces, sizeof(*e)))
			return -ENOMEM;
		memmove(&c->namespaces[at + 1], &c->namespaces[at],
			(c->n_namespaces - 1 - at) * sizeof(*e));
	}
	c->namespaces[at] = (struct namespace_labels){ ns, l, n };
	return 0;
}

/* Kubernetes: a namespaceSelector matches namespaces by their labels; {} all. */
static bool namespace_selected(const struct cluster *c, const struct requirements *sel, uint32_t ns)
{
	struct label name;
	int32_t i;

	if (!sel->n)
		return true;
	i = namespace_find(c, ns, NULL);
	if (i >= 0)
		return requirements_match_labels(sel, c->namespaces[i].labels,
						 c->namespaces[i].n_labels, &c->st);
	/* Unknown to us: it still has the name label every namespace has. If
	 * nothing interned the key, no selector can mention it. */
	name = (struct label){ strtab_lookup(&c->st, "kubernetes.io/metadata.name"), ns };
	return requirements_match_labels(sel, &name, name.key != STR_NONE, &c->st);
}

uint32_t cluster_intern(struct cluster *c, const char *s)
{
	int64_t id = strtab_intern(&c->st, s);
	return id < 0 ? STR_NONE : (uint32_t)id;
}

bool tolerates(const struct toleration *tols, uint32_t n_tols, const struct taint *taints,
	       uint32_t n_taints, const struct taint **ret_taint)
{
	for (uint32_t i = 0; i < n_taints; i++) {
		const struct taint *t = &taints[i];
		bool ok = t->effect == TAINT_PREFER_NO_SCHEDULE;

		for (uint32_t j = 0; !ok && j < n_tols; j++) {
			const struct toleration *o = &tols[j];
			if (o->effect >= 0 && o->effect != t->effect)
				continue;
			if (o->key != STR_NONE && o->key != t->key)
				continue;
			ok = o->exists || o->value == t->value;
		}
		if (!ok) {
			if (ret_taint)
				*ret_taint = t;
			return false;
		}
	}
	return true;
}

bool topo_group_selects(const struct cluster *c, const struct topo_group *g,
			const struct pod *p)
{
	bool ns = false;

	for (uint32_t i = 0; !ns && i < g->n_namespaces; i++)
		ns = g->namespaces[i] == p->ns;
	if (!ns && g->has_ns_selector)
		ns = namespace_selected(c, &g->ns_selector, p->ns);
	return ns && requirements_match_labels(&g->selector, p->labels, p->n_labels, &c->st);
}

/* Could a DaemonSet pod run on nodes of this NodePool? (taints, and its
 * node selection compatible with the pool's requirements) */
static bool daemonset_runs_on(const struct cluster *c, const struct pod *ds,
			      const struct nodepool *np)
{
	if (!tolerates(ds->tols, ds->n_tols, np->taints, np->n_taints, NULL))
		return false;
	if (!requirements_compatible(&np->reqs, &ds->reqs, &c->st, K_N_WELL_KNOWN, NULL))
		return false;
	if (ds->n_terms) {
		for (uint32_t t = 0; t < ds->n_terms; t++)
			if (requirements_compatible(&np->reqs, &ds->terms[t], &c->st,
						    K_N_WELL_KNOWN, NULL))
				return true;
		return false;
	}
	return true;
}

bool cluster_daemonset_runs_on(const struct cluster *c, const struct pod *ds,
			       const struct nodepool *np)
{
	return daemonset_runs_on(c, ds, np);
}

uint16_t cluster_daemon_port_conflict(const struct cluster *c, const struct nodepool *np,
				      const struct pod *p, const struct pod **ret_ds)
{
	for (uint32_t d = 0; p->n_host_ports && d < c->n_daemonsets; d++) {
		const struct pod *ds = &c->daemonsets[d];
		for (uint32_t i = 0; i < ds->n_host_ports; i++)
			for (uint32_t j = 0; j < p->n_host_ports; j++)
				if (ds->host_ports[i] == p->host_ports[j] &&
				    daemonset_runs_on(c, ds, np)) {
					if (ret_ds)
						*ret_ds = ds;
					return p->host_ports[j];
				}
	}
	return 0;
}

void cluster_compute_daemon_overhead(struct cluster *c)
{
	for (uint32_t n = 0; n < c->n_nodepools; n++) {
		struct nodepool *np = &c->nodepools[n];
		memset(&np->daemon_overhead, 0, sizeof(np->daemon_overhead));
		for (uint32_t d = 0; d < c->n_daemonsets; d++)
			if (daemonset_runs_on(c, &c->daemonsets[d], np))
				resources_add(&np->daemon_overhead, &c->daemonsets[d].req,
					      c->cat.n_resources);
	}
}

int cluster_apply_kubelet(struct cluster *c)
{
	uint32_t n = c->cat.n_types;

	for (uint32_t p = 0; p < c->n_nodepools; p++) {
		struct nodepool *np = &c->nodepools[p];
		if (!np->kubelet.set || !n)
			continue;
		np->type_capacity = arena_alloc(&c->arena, n * sizeof(*np->type_capacity));
		np->type_alloc = arena_alloc(&c->arena, n * sizeof(*np->type_alloc));
		np->type_prefix_max = arena_alloc(&c->arena, n * sizeof(*np->type_prefix_max));
		if (!np->type_capacity || !np->type_alloc || !np->type_prefix_max)
			return -ENOMEM;
		for (uint32_t t = 0; t < n; t++) {
			kubelet_node_resources(&np->kubelet, &c->cat.types[t].capacity,
					       &c->cat.types[t].allocatable, &np->type_capacity[t],
					       &np->type_alloc[t]);
			for (uint32_t r = 0; r < SCHED_MAX_RESOURCES; r++)
				np->type_prefix_max[t].v[r] = MAX(t ? np->type_prefix_max[t - 1].v[r] : 0,
								  np->type_alloc[t].v[r]);
		}
	}
	return 0;
}

static int32_t nodepool_named(const struct cluster *c, const struct node *n)
{
	uint32_t pool = labels_get(n->labels, n->n_labels, K_NODEPOOL);

	if (pool == STR_NONE)
		pool = labels_get(n->labels, n->n_labels, K_PROVISIONER_NAME);
	for (uint32_t p = 0; pool != STR_NONE && p < c->n_nodepools; p++)
		if (c->nodepools[p].name == pool)
			return (int32_t)p;
	return -1;
}

/* After the catalog is loaded: drop in-flight NodeClaims whose Node is
 * known, size the others from their instance type (one that cannot be
 * sized takes no pods), and order them after the Nodes (existing nodes
 * are tried first). */
int cluster_settle_in_flight(struct cluster *c)
{
	struct node *sorted = malloc((c->n_nodes ? c->n_nodes : 1) * sizeof(*sorted));
	uint32_t k = 0;

	if (!sorted)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < c->n_nodes; i++) {
			struct node *n = &c->nodes[i];
			bool seen = false;
			if (n->in_flight != (pass == 1))
				continue;
			for (uint32_t j = 0; n->in_flight && n->launched_as != STR_NONE && j < c->n_nodes; j++)
				seen |= !c->nodes[j].in_flight && c->nodes[j].name == n->launched_as;
			if (seen)
				continue;
			if (n->in_flight && !n->allocatable.v[RES_CPU]) {
				uint32_t type = labels_get(n->labels, n->n_labels, K_INSTANCE_TYPE);
				int32_t pool = nodepool_named(c, n);
				for (uint32_t t = 0; type != STR_NONE && t < c->cat.n_types; t++)
					if (c->cat.types[t].name == type) {
						n->allocatable = *pool_type_alloc(c, pool, t);
						n->capacity = *pool_type_capacity(c, pool, t);
					}
			}
			/* Nothing known about its size (not launched, several
			 * candidate types): it takes no new pod, but stays, so
			 * that the pods planned for it count in its zone and on
			 * its host for spread and (anti-)affinity (DESIGN §2
			 * rule 4); dropped, consecutive batches saw its zone
			 * empty and piled a spread Deployment into it. */
			if (n->in_flight && !n->allocatable.v[RES_CPU])
				n->unschedulable = true;
			sorted[k++] = *n;
		}
	free(c->nodes);
	c->nodes = sorted;
	c->n_nodes = c->cap_nodes = k;
	return 0;
}

/* Which NodePool each node belongs to (karpenter.sh/nodepool or the v1alpha5
 * provisioner-name label), and what each pool already has in use. */
void cluster_assign_nodepools(struct cluster *c)
{
	for (uint32_t i = 0; i < c->n_nodes; i++) {
		struct node *n = &c->nodes[i];
		int32_t p = nodepool_named(c, n);
		if (p < 0)
			continue;
		n->nodepool = p;
		resources_add(&c->nodepools[p].in_use, &n->capacity, c->cat.n_resources);
		c->nodepools[p].nodes_in_use++;
	}
}

int cluster_pod_set_topology(struct cluster *c, struct pod *p, struct topo_term *terms, uint32_t n)
{
	if (!n)
		return 0;
	for (uint32_t i = 1; i < n; i++)
		for (uint32_t j = i; j > 0; j--) {
			struct topo_term *a = &terms[j - 1], *b = &terms[j];
			if (a->order < b->order || (a->order == b->order && a->t.weight >= b->t.weight))
				break;
			struct topo_term x = *a;
			*a = *b;
			*b = x;
		}
	p->topo = arena_alloc(&c->arena, n * sizeof(*p->topo));
	if (!p->topo)
		return -ENOMEM;
	/* Field by field: the solver compares these arrays with memcmp, and the
	 * arena's zeroed padding must stay zero. */
	for (uint32_t i = 0; i < n; i++) {
		p->topo[i].group = terms[i].t.group;
		p->topo[i].soft = terms[i].t.soft;
		p->topo[i].weight = terms[i].t.weight;
	}
	p->n_topo = n;
	return 0;
}

struct node *cluster_add_in_flight(struct cluster *c, uint32_t name, const struct label *labels,
				   uint32_t n_labels, const struct requirements *reqs,
				   uint32_t launched_as)
{
	struct label *all = arena_alloc(&c->arena, (n_labels + reqs->n + 1) * sizeof(*all));
	struct node *nd;
	uint32_t n = 0;

	if (!all || !(nd = cluster_add_node(c)))
		return NULL;
	for (uint32_t i = 0; i < reqs->n; i++)
		if (!reqs->v[i].complement && reqs->v[i].n_values == 1 &&
		    labels_get(labels, n_labels, reqs->v[i].key) == STR_NONE)
			all[n++] = (struct label){ reqs->v[i].key, reqs->v[i].values[0] };
	if (n_labels)
		memcpy(all + n, labels, n_labels * sizeof(*labels));
	n += n_labels;
	labels_sort(all, n);
	nd->name = name;
	nd->labels = all;
	nd->n_labels = n;
	nd->in_flight = true;
	nd->launched_as = launched_as;
	return nd;
}
