/*
 * Cluster model from replicated state (see from-state.h), for the daemon
 * and for --simulate alike: NodePools with their labels, taints, limits and
 * defaults; Nodes and in-flight NodeClaims as capacity; bound pods (they
 * count for spread, affinity and limits); DaemonSet templates; volume
 * topology from PVCs, PVs and StorageClasses; Namespace labels for
 * namespaceSelectors; kubelet settings per NodePool (volume topology:
 * from-state-volumes.c; which objects, with the launcher's overlay and
 * scope: from-state-view.c). Called by the scheduler daemon once per batch,
 * by --simulate once and by the launcher before it binds; owns no state.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"
#include "model/catalog-proto.h"
#include "model/from-state-internal.h"
#include "model/model-base.h"
#include "model/node-overlay.h"

/* Pod (anti-)affinity and spread terms one pod may carry. */
#define POD_MAX_TOPO_TERMS 64

int from_state_requirements(struct builder *b, struct requirements *r,
			    const struct proto_requirement *q, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t *values = calloc(q[i].n_values + 1, sizeof(*values));
		int k;

		if (!values)
			return -ENOMEM;
		for (uint32_t v = 0; v < q[i].n_values; v++)
			values[v] = intern(b, q[i].values[v]);
		/* proto's requirement_op and the solver's req_op share one order. */
		k = requirements_add(r, &b->c->st, intern(b, q[i].key), (enum req_op)q[i].op, values,
				     q[i].n_values, q[i].min_values);
		free(values);
		if (k < 0)
			return k;
	}
	return 0;
}

static int kv_requirements(struct builder *b, struct requirements *r, const struct proto_kv *kv,
			   uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = intern(b, kv[i].value);
		int k = requirements_add(r, &b->c->st, intern(b, kv[i].key), REQ_IN, &v, 1, 0);
		if (k < 0)
			return k;
	}
	return 0;
}

int cluster_requirements_from_proto(struct cluster *c, struct requirements *r,
				    const struct proto_requirement *q, uint32_t n)
{
	struct builder b = { .c = c };

	return from_state_requirements(&b, r, q, n);
}

int nodeclass_os_requirements(struct cluster *c, const struct proto_nodeclass *nc,
			      struct requirements *ret, uint32_t *windows_build)
{
	struct builder b = { .c = c };
	const char *build = nodeclass_windows_build(nc);
	uint32_t windows, amd64;
	int r;

	*windows_build = STR_NONE;
	if (!build)
		return 0;
	windows = intern(&b, "windows");
	amd64 = intern(&b, "amd64");
	*windows_build = intern(&b, build);
	if (windows == STR_NONE || amd64 == STR_NONE || *windows_build == STR_NONE)
		return -ENOMEM;
	if ((r = requirements_add(ret, &c->st, K_OS, REQ_IN, &windows, 1, 0)) < 0 ||
	    (r = requirements_add(ret, &c->st, K_WINDOWS_BUILD, REQ_IN, windows_build, 1, 0)) < 0)
		return r;
	return requirements_add(ret, &c->st, K_ARCH, REQ_IN, &amd64, 1, 0);
}

int nodepool_requirements(struct cluster *c, const struct proto_nodepool *p, struct requirements *ret)
{
	struct builder b = { .c = c };
	uint32_t name = intern(&b, p->name), od = V_ON_DEMAND;
	int r;

	if (name == STR_NONE)
		return -ENOMEM;
	if ((r = from_state_requirements(&b, ret, p->requirements, p->n_requirements)) < 0 ||
	    (r = kv_requirements(&b, ret, p->labels, p->n_labels)) < 0 ||
	    (r = requirements_add(ret, &c->st, K_NODEPOOL, REQ_IN, &name, 1, 0)) < 0)
		return r;
	if (p->source_api == PROTO_API_V1ALPHA5 &&
	    (r = requirements_add(ret, &c->st, K_PROVISIONER_NAME, REQ_IN, &name, 1, 0)) < 0)
		return r;
	/* Karpenter's AWS defaulting: on-demand unless capacity types are given. */
	if (!requirements_get(ret, K_CAPACITY_TYPE) &&
	    (r = requirements_add(ret, &c->st, K_CAPACITY_TYPE, REQ_IN, &od, 1, 0)) < 0)
		return r;
	return 0;
}

static size_t memo_slot(const struct array_memo *m, size_t cap, const void *key)
{
	size_t h = (size_t)(((uintptr_t)key >> 3) * 0x9E3779B97F4A7C15ULL);

	for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!m[i].key || m[i].key == key)
			return i;
}

/* The model array built from key, or NULL. */
static void *memo_get(const struct builder *b, const void *key, uint32_t *n)
{
	const struct array_memo *e;

	if (!b->memo_cap || !key)
		return NULL;
	e = &b->memo[memo_slot(b->memo, b->memo_cap, key)];
	*n = e->n;
	return e->key ? e->value : NULL;
}

/* Remembers value (n entries) as built from key; losing it to ENOMEM only
 * costs a copy, so failures are not errors. */
static void memo_put(struct builder *b, const void *key, void *value, uint32_t n)
{
	if (!key)
		return;
	if (2 * (b->memo_n + 1) > b->memo_cap) {
		size_t cap = b->memo_cap ? 2 * b->memo_cap : 64;
		struct array_memo *m = calloc(cap, sizeof(*m));

		if (!m)
			return;
		for (size_t i = 0; i < b->memo_cap; i++)
			if (b->memo[i].key)
				m[memo_slot(m, cap, b->memo[i].key)] = b->memo[i];
		free(b->memo);
		b->memo = m;
		b->memo_cap = cap;
	}
	b->memo[memo_slot(b->memo, b->memo_cap, key)] = (struct array_memo){ key, value, n };
	b->memo_n++;
}

static int labels(struct builder *b, const struct proto_kv *kv, uint32_t n, struct label **ret,
		  uint32_t *n_ret)
{
	struct label *l = arena_alloc(&b->c->arena, (n + 1) * sizeof(*l));

	if (!l)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		l[i] = (struct label){ intern(b, kv[i].key), intern(b, kv[i].value) };
	labels_sort(l, n);
	*ret = l;
	*n_ret = n;
	return 0;
}

/*
 * Taints a Node carries while it boots and joins, which Karpenter does not
 * hold against pods (scheduling.KnownEphemeralTaints): the node lifecycle
 * controller's, the cloud provider's, and karpenter.sh/unregistered — the
 * kubelet registers with it as NoExecute, and the launcher holds a Node it
 * launched with it as NoSchedule until the pods planned for the Node are
 * bound (launcher/objects.h). Same key and effect; same value when the
 * list's has one.
 */
static const struct proto_taint ephemeral_taints[] = {
	{ .key = "node.kubernetes.io/not-ready", .effect = PROTO_EFFECT_NO_SCHEDULE },
	{ .key = "node.kubernetes.io/not-ready", .effect = PROTO_EFFECT_NO_EXECUTE },
	{ .key = "node.kubernetes.io/unreachable", .effect = PROTO_EFFECT_NO_SCHEDULE },
	{ .key = "node.cloudprovider.kubernetes.io/uninitialized", .value = "true",
	  .effect = PROTO_EFFECT_NO_SCHEDULE },
	{ .key = "karpenter.sh/unregistered", .effect = PROTO_EFFECT_NO_EXECUTE },
	{ .key = "karpenter.sh/unregistered", .effect = PROTO_EFFECT_NO_SCHEDULE },
};

bool from_state_taint_is_ephemeral(const struct proto_taint *t)
{
	for (size_t i = 0; i < ARRAY_SIZE(ephemeral_taints); i++)
		if (streq(t->key, ephemeral_taints[i].key) && t->effect == ephemeral_taints[i].effect &&
		    (!ephemeral_taints[i].value || streq_ptr(t->value, ephemeral_taints[i].value)))
			return true;
	return false;
}

/* Is t one of list[0..n) (same key and effect; same value when the list's
 * has one)? */
static bool taint_listed(const struct proto_taint *t, const struct proto_taint *list, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (streq(t->key, list[i].key) && t->effect == list[i].effect &&
		    (!list[i].value || !*list[i].value || streq_ptr(t->value, list[i].value)))
			return true;
	return false;
}

/* A Node's taints leave out the ephemeral ones (skip_ephemeral) and
 * skip[0..n_skip) (its startup taints, from_state_options). */
static int taints(struct builder *b, const struct proto_taint *t, uint32_t n, bool skip_ephemeral,
		  const struct proto_taint *skip, uint32_t n_skip, struct taint **ret, uint32_t *n_ret)
{
	struct taint *o = arena_alloc(&b->c->arena, (n + 1) * sizeof(*o));
	uint32_t k = 0;

	if (!o)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		if (t[i].effect == PROTO_EFFECT_ANY || (skip_ephemeral && from_state_taint_is_ephemeral(&t[i])) ||
		    taint_listed(&t[i], skip, n_skip))
			continue;
		/* proto: NoSchedule 1, PreferNoSchedule 2, NoExecute 3; solver: 0, 1, 2. */
		o[k++] = (struct taint){ intern(b, t[i].key), t[i].value ? intern(b, t[i].value) : STR_NONE,
					 (uint8_t)(t[i].effect - 1) };
	}
	*ret = o;
	*n_ret = k;
	return 0;
}

static int resources(struct builder *b, const struct proto_resource *r, uint32_t n,
		     struct resources *ret)
{
	for (uint32_t i = 0; i < n; i++) {
		int slot;

		if (streq(r[i].name, "nodes") || !strncmp(r[i].name, "attachable-volumes-", 19))
			continue;
		slot = catalog_resource(&b->c->cat, r[i].name, true);
		if (slot == -E2BIG)
			b->slots_full = true;
		if (slot < 0)
			return slot == -E2BIG ? 0 : slot; /* past the slots: nothing asks for it */
		ret->v[slot] = r[i].value;
	}
	return 0;
}

static int add_nodepool(struct builder *b, const struct proto_nodepool *p)
{
	const struct state_entry *nc;
	struct nodepool *np;
	int r;

	if (p->status == PROTO_NODEPOOL_INVALID)
		return 0; /* reported by the watcher; never launched into */
	np = cluster_add_nodepool(b->c);
	if (!np)
		return -ENOMEM;
	np->name = intern(b, p->name);
	np->weight = p->weight;
	if ((r = nodepool_requirements(b->c, p, &np->reqs)) < 0)
		return r;
	if ((r = taints(b, p->taints, p->n_taints, false, NULL, 0, &np->taints, &np->n_taints)) < 0)
		return r;
	/* Kubelet settings (v1: its EC2NodeClass's) change what its nodes hold.
	 * The watcher refuses malformed evictionHard values, so a failure here
	 * cannot happen from its replica; the defaults would stand. */
	nc = p->nodeclass_ref.name ? state_store_get(b->s, PROTO_OBJECT_NODECLASS, "",
						      p->nodeclass_ref.name) : NULL;
	if (kubelet_settings_from_proto(kubelet_of(nc ? nc->obj.nodeclass : NULL, p), &np->kubelet) < 0)
		np->kubelet = (struct kubelet_settings){ 0 };
	/* A Windows AMI family's pool; catalog_filter_pool() takes its os as given. */
	if ((r = nodeclass_os_requirements(b->c, nc ? nc->obj.nodeclass : NULL, &np->reqs,
					   &np->windows_build)) < 0)
		return r;
	kubelet_settings_windows(&np->kubelet, np->windows_build != STR_NONE);
	/* Karpenter v1's provisioner plans into Ready NodePools only, and one
	 * whose EC2NodeClass is not Ready is not (NodeClassReady): a NodeClaim
	 * there could only fail to launch. Its nodes stay the pool's. */
	/* A class with a field kanna does not implement is refused as soon as
	 * the watcher decodes it, before the launcher writes its condition. */
	if (nc && (nc->obj.nodeclass->ready == PROTO_COND_FALSE || nc->obj.nodeclass->unsupported)) {
		char why[PROTO_MAX_TEXT_LEN + PROTO_MAX_NAME_LEN + 40];
		const char *reason = nc->obj.nodeclass->unsupported ?: nc->obj.nodeclass->ready_reason;

		snprintf(why, sizeof(why), "EC2NodeClass %s is not ready%s%s", p->nodeclass_ref.name,
			 reason ? ": " : "", reason ? reason : "");
		np->not_ready = arena_strdup(&b->c->arena, why);
		if (!np->not_ready)
			return -ENOMEM;
	}
	/* A static NodePool (spec.replicas) keeps its count whatever the
	 * pods: the launcher alone opens its NodeClaims (launcher/static.c),
	 * as upstream's provisioner leaves static pools out of its scheduler
	 * (provisioner.go NewScheduler: nodepoolutils.IsStatic). Its nodes
	 * stay existing capacity for pods and for consolidation's what-if. */
	if (p->static_capacity && !np->not_ready)
		np->not_ready = "it is static (spec.replicas): its node count is fixed, pods add no node";
	for (uint32_t i = 0; i < p->n_limits; i++) {
		int slot;
		if (streq(p->limits[i].name, "nodes")) {
			np->node_limit = p->limits[i].value;
			continue;
		}
		slot = catalog_resource(&b->c->cat, p->limits[i].name, true);
		if (slot == -E2BIG)
			b->slots_full = true;
		if (slot >= 0)
			np->limits.v[slot] = p->limits[i].value;
	}
	return 0;
}

static int add_node(struct builder *b, const struct proto_node *p)
{
	const struct state_entry *nc = NULL;
	const struct proto_taint *startup = NULL;
	uint32_t n_startup = 0;
	struct node *n = cluster_add_node(b->c);
	int r;

	if (!n)
		return -ENOMEM;
	n->name = intern(b, p->name);
	/* Its NodeClaim's startup taints, unless they count (see
	 * from_state_options.startup_taints_block). */
	if (!b->startup_taints_block && p->nodeclaim && *p->nodeclaim)
		nc = from_state_get(b, PROTO_OBJECT_NODECLAIM, "", p->nodeclaim);
	if (nc) {
		startup = nc->obj.nodeclaim->startup_taints;
		n_startup = nc->obj.nodeclaim->n_startup_taints;
	}
	if ((r = labels(b, p->labels, p->n_labels, &n->labels, &n->n_labels)) < 0 ||
	    (r = taints(b, p->taints, p->n_taints, true, startup, n_startup, &n->taints, &n->n_taints)) < 0 ||
	    (r = resources(b, p->allocatable, p->n_allocatable, &n->allocatable)) < 0 ||
	    (r = resources(b, p->capacity, p->n_capacity, &n->capacity)) < 0)
		return r;
	if (!p->n_capacity)
		n->capacity = n->allocatable;
	/* A node being deleted or cordoned takes no new pods. */
	n->unschedulable = p->unschedulable || p->deletion_time != 0;
	return 0;
}

/* A NodeClaim without its Node yet: capacity in flight (see cluster.h). */
static int add_nodeclaim(struct builder *b, const struct proto_nodeclaim *p)
{
	struct requirements reqs = { 0 };
	struct label *l;
	uint32_t n_l;
	struct node *nd;
	int r;

	if (p->deletion_time)
		return 0;
	if ((r = labels(b, p->labels, p->n_labels, &l, &n_l)) < 0 ||
	    (r = from_state_requirements(b, &reqs, p->requirements, p->n_requirements)) < 0)
		goto out;
	r = -ENOMEM;
	nd = cluster_add_in_flight(b->c, intern(b, p->name), l, n_l, &reqs,
				   p->node_name ? intern(b, p->node_name) : STR_NONE);
	if (!nd)
		goto out;
	if ((r = taints(b, p->taints, p->n_taints, false, NULL, 0, &nd->taints, &nd->n_taints)) < 0 ||
	    (r = resources(b, p->allocatable, p->n_allocatable, &nd->allocatable)) < 0 ||
	    (r = resources(b, p->capacity, p->n_capacity, &nd->capacity)) < 0)
		goto out;
	r = 0;
out:
	requirements_free(&reqs);
	return r;
}

static int selector(struct builder *b, const struct proto_label_selector *sel, struct requirements *r)
{
	int k;

	if (!sel->n_match_labels && !sel->n_match_expressions)
		return requirements_add(r, &b->c->st, K_HOSTNAME, REQ_IN, NULL, 0, 0); /* selects nothing */
	if ((k = kv_requirements(b, r, sel->match_labels, sel->n_match_labels)) < 0)
		return k;
	return from_state_requirements(b, r, sel->match_expressions, sel->n_match_expressions);
}

/* A namespaceSelector: {} selects every namespace (no requirement). */
static int namespace_selector(struct builder *b, const struct proto_label_selector *sel,
			      struct requirements *r)
{
	int k = kv_requirements(b, r, sel->match_labels, sel->n_match_labels);

	return k < 0 ? k : from_state_requirements(b, r, sel->match_expressions, sel->n_match_expressions);
}

/* Which pods the group counts: those of the namespaces listed and of those
 * its namespaceSelector matches; neither given, the pod's own namespace. */
static int topo_group(struct builder *b, struct topo_group *g, const struct pod *p,
		      char *const *namespaces, uint32_t n_namespaces,
		      const struct proto_label_selector *ns_selector,
		      char *const *match_label_keys, uint32_t n_keys)
{
	uint32_t *ns = arena_alloc(&b->c->arena, (n_namespaces + 1) * sizeof(*ns));
	int r;

	if (!ns)
		return -ENOMEM;
	for (uint32_t i = 0; i < n_namespaces; i++)
		ns[i] = intern(b, namespaces[i]);
	if (!n_namespaces && !ns_selector)
		ns[n_namespaces++] = p->ns;
	g->namespaces = ns;
	g->n_namespaces = n_namespaces;
	g->has_ns_selector = ns_selector != NULL;
	if (ns_selector && (r = namespace_selector(b, ns_selector, &g->ns_selector)) < 0)
		return r;
	for (uint32_t i = 0; i < n_keys; i++) {
		uint32_t key = intern(b, match_label_keys[i]), v = labels_get(p->labels, p->n_labels, key);
		if (v != STR_NONE && (r = requirements_add(&g->selector, &b->c->st, key, REQ_IN, &v, 1, 0)) < 0)
			return r;
	}
	return cluster_group(b->c, g);
}

static int affinity_term(struct builder *b, const struct proto_pod_affinity_term *t,
			 enum topo_kind kind, bool soft, int32_t weight, const struct pod *p,
			 struct topo_term *out, uint32_t *n)
{
	struct topo_group g = { .kind = kind, .key = intern(b, t->topology_key) };
	int r;

	if (*n >= POD_MAX_TOPO_TERMS)
		return 0;
	if ((r = selector(b, &t->selector, &g.selector)) < 0 ||
	    (r = topo_group(b, &g, p, t->namespaces, t->n_namespaces,
			    t->has_namespace_selector ? &t->namespace_selector : NULL,
			    t->match_label_keys, t->n_match_label_keys)) < 0) {
		requirements_free(&g.selector);
		requirements_free(&g.ns_selector);
		return r;
	}
	out[(*n)++] = (struct topo_term){ { (uint32_t)r, soft, weight },
				     soft ? (kind == TOPO_AFFINITY ? 1 : 2) : 0 };
	return 0;
}

static int pod_topology(struct builder *b, const struct proto_pod *pp, struct pod *p)
{
	const struct proto_pod_template *pc = proto_pod_template_of(pp);
	struct topo_term terms[POD_MAX_TOPO_TERMS];
	uint32_t n = 0;
	int r;

#define TERMS(list, kind, soft, get, w)                                                     \
	for (uint32_t i = 0; i < pc->n_##list; i++)                                         \
		if ((r = affinity_term(b, &pc->list[i] get, kind, soft, w, p, terms, &n)) < 0) \
			return r;
	TERMS(pod_affinity_required, TOPO_AFFINITY, false, , 0)
	TERMS(pod_anti_affinity_required, TOPO_ANTI_AFFINITY, false, , 0)
	TERMS(pod_affinity_preferred, TOPO_AFFINITY, true, .term, pc->pod_affinity_preferred[i].weight)
	TERMS(pod_anti_affinity_preferred, TOPO_ANTI_AFFINITY, true, .term,
	      pc->pod_anti_affinity_preferred[i].weight)
#undef TERMS
	for (uint32_t i = 0; i < pc->n_topology_spread && n < POD_MAX_TOPO_TERMS; i++) {
		const struct proto_spread_constraint *sc = &pc->topology_spread[i];
		struct topo_group g = { .kind = TOPO_SPREAD, .key = intern(b, sc->topology_key),
					.max_skew = sc->max_skew, .min_domains = sc->min_domains };
		bool soft = sc->when_unsatisfiable == PROTO_UNSATISFIABLE_SCHEDULE_ANYWAY;
		if ((r = selector(b, &sc->selector, &g.selector)) < 0 ||
		    (r = topo_group(b, &g, p, NULL, 0, NULL, sc->match_label_keys,
				    sc->n_match_label_keys)) < 0) {
			requirements_free(&g.selector);
			return r;
		}
		terms[n++] = (struct topo_term){ { (uint32_t)r, soft, 0 }, soft ? 3 : 0 };
	}
	return cluster_pod_set_topology(b->c, p, terms, n);
}

static int pod_spec(struct builder *b, const struct proto_pod *pp, struct pod *p)
{
	const struct proto_pod_template *pc = proto_pod_template_of(pp);
	int r;

	if ((p->labels = memo_get(b, pc->labels, &p->n_labels))) {
		/* another pod's, the same proto array */
	} else if ((r = labels(b, pc->labels, pc->n_labels, &p->labels, &p->n_labels)) < 0) {
		return r;
	} else {
		memo_put(b, pc->labels, p->labels, p->n_labels);
	}
	if ((r = resources(b, pc->requests, pc->n_requests, &p->req)) < 0 ||
	    (r = kv_requirements(b, &p->reqs, pc->node_selector, pc->n_node_selector)) < 0)
		return r;
	p->req.v[RES_PODS] = 1;
	if (pc->n_node_affinity_required) {
		p->terms = calloc(pc->n_node_affinity_required, sizeof(*p->terms));
		if (!p->terms)
			return -ENOMEM;
		for (uint32_t i = 0; i < pc->n_node_affinity_required; i++) {
			const struct proto_node_selector_term *t = &pc->node_affinity_required[i];
			if ((r = from_state_requirements(b, &p->terms[p->n_terms++], t->requirements,
						  t->n_requirements)) < 0)
				return r;
		}
	}
	if (pc->n_node_affinity_preferred) {
		p->prefs = calloc(pc->n_node_affinity_preferred, sizeof(*p->prefs));
		if (!p->prefs)
			return -ENOMEM;
		for (uint32_t i = 0; i < pc->n_node_affinity_preferred; i++) {
			const struct proto_preferred_term *t = &pc->node_affinity_preferred[i];
			struct preferred_term *o = &p->prefs[p->n_prefs++];
			o->weight = t->weight;
			if ((r = from_state_requirements(b, &o->reqs, t->term.requirements,
						  t->term.n_requirements)) < 0)
				return r;
		}
		/* Heaviest first (stable): Karpenter tries them in this order. */
		for (uint32_t i = 1; i < p->n_prefs; i++)
			for (uint32_t j = i; j > 0 && p->prefs[j - 1].weight < p->prefs[j].weight; j--) {
				struct preferred_term x = p->prefs[j];
				p->prefs[j] = p->prefs[j - 1];
				p->prefs[j - 1] = x;
			}
	}
	if (!(p->tols = memo_get(b, pc->tolerations, &p->n_tols))) {
		p->tols = arena_alloc(&b->c->arena, (pc->n_tolerations + 1) * sizeof(*p->tols));
		if (!p->tols)
			return -ENOMEM;
		for (uint32_t i = 0; i < pc->n_tolerations; i++) {
			const struct proto_toleration *t = &pc->tolerations[i];
			struct toleration *o = &p->tols[p->n_tols++];
			o->key = t->key && *t->key ? intern(b, t->key) : STR_NONE;
			o->exists = t->op == PROTO_TOLERATION_EXISTS;
			o->value = o->exists ? STR_NONE : intern(b, t->value);
			o->effect = t->effect == PROTO_EFFECT_ANY ? -1 : (int8_t)(t->effect - 1);
		}
		memo_put(b, pc->tolerations, p->tols, p->n_tols);
	}
	if (pc->n_host_ports) {
		p->host_ports = arena_alloc(&b->c->arena, pc->n_host_ports * sizeof(*p->host_ports));
		if (!p->host_ports)
			return -ENOMEM;
		for (uint32_t i = 0; i < pc->n_host_ports; i++)
			p->host_ports[p->n_host_ports++] = (uint16_t)pc->host_ports[i].port;
	}
	return 0;
}

/* A pod bound to (or counted on) node, or pending when node is NULL. */
static int add_pod(struct builder *b, const struct proto_pod *pp, const char *node)
{
	struct pod *p = cluster_add_pod(b->c);
	int r;

	if (!p)
		return -ENOMEM;
	p->ns = intern(b, pp->ns);
	p->name = intern(b, pp->name);
	p->node = node ? intern(b, node) : STR_NONE;
	p->dies_with_node = pp->mirror || proto_pod_template_of(pp)->daemonset_owned;
	if ((r = pod_spec(b, pp, p)) < 0 || (r = pod_topology(b, pp, p)) < 0)
		return r;
	return node ? 0 : from_state_pod_volumes(b, pp, p);
}

/*
 * DESIGN §2 rule 4: a pod planned for a NodeClaim that still speaks for it
 * (state_nodeclaim_holds_planned_pods, the rule by which the watcher
 * withholds it) and not bound yet occupies that NodeClaim as if bound
 * there — requests, host ports, spread and (anti-)affinity counts — as
 * Karpenter counts pods nominated to in-flight capacity. Once the NodeClaim
 * names its Node the pod sits on that name (the Node, or the NodeClaim
 * until the Node shows up). A pod of this very batch is the batch's to
 * place, and a bound pod is its Node's (the POD case of
 * cluster_from_state): neither is counted twice.
 */
static int add_planned_pods(struct builder *b, const struct proto_pod *const *pending,
			    size_t n_pending, int64_t now_ms)
{
	struct hashmap seen = { 0 }; /* "ns/name": in the batch, or counted already */
	bool indexed = false;
	const struct proto_object *o;
	char key[STATE_KEY_MAX], ns[PROTO_MAX_NAME_LEN + 1];
	struct from_state_iter it = { 0 };
	int r = 0;

	while (r >= 0 && (o = from_state_next(b, &it))) {
		const struct proto_nodeclaim *nc = o->nodeclaim;

		if (o->kind != PROTO_OBJECT_NODECLAIM || !nc->n_planned_pods ||
		    !state_nodeclaim_holds_planned_pods(nc, now_ms))
			continue;
		for (size_t i = 0; !indexed && i < n_pending && r >= 0; i++) {
			snprintf(key, sizeof(key), "%s/%s", pending[i]->ns, pending[i]->name);
			r = hashmap_put(&seen, key, (void *)1, NULL);
		}
		indexed = true;
		for (uint32_t i = 0; i < nc->n_planned_pods && r >= 0; i++) {
			const char *k = nc->planned_pods[i], *slash = strchr(k, '/');
			const struct state_entry *pe;

			if (!slash || (size_t)(slash - k) >= sizeof(ns) || hashmap_get(&seen, k))
				continue;
			memcpy(ns, k, (size_t)(slash - k));
			ns[slash - k] = '\0';
			pe = from_state_get(b, PROTO_OBJECT_POD, ns, slash + 1);
			if (!pe || !state_pod_awaits_binding(pe->obj.pod))
				continue;
			if ((r = hashmap_put(&seen, k, (void *)1, NULL)) >= 0)
				r = add_pod(b, pe->obj.pod,
					    nc->node_name && *nc->node_name ? nc->node_name : nc->name);
		}
	}
	hashmap_done(&seen);
	return r;
}

static int add_namespace(struct builder *b, const struct proto_namespace *ns)
{
	struct label *l;
	uint32_t n;
	int r = labels(b, ns->labels, ns->n_labels, &l, &n);

	return r < 0 ? r : cluster_add_namespace(b->c, intern(b, ns->name), l, n);
}

static int add_daemonset(struct builder *b, const struct proto_daemonset *ds)
{
	struct proto_pod_template c = {
		.requests = ds->requests, .n_requests = ds->n_requests,
		.node_selector = ds->node_selector, .n_node_selector = ds->n_node_selector,
		.node_affinity_required = ds->node_affinity_required,
		.n_node_affinity_required = ds->n_node_affinity_required,
		.tolerations = ds->tolerations, .n_tolerations = ds->n_tolerations,
		.host_ports = ds->host_ports, .n_host_ports = ds->n_host_ports,
	};
	struct proto_pod tmpl = {
		.ns = ds->ns, .name = ds->name, .template = &c, .n_template = 1,
	};
	struct pod *p = cluster_add_daemonset(b->c);

	if (!p)
		return -ENOMEM;
	p->ns = intern(b, ds->ns);
	p->name = intern(b, ds->name);
	p->node = STR_NONE;
	return pod_spec(b, &tmpl, p);
}

/* A dump's catalog, with the NodeOverlays as model_catalog_load() applies them. */
static int fill_catalog(struct catalog *cat, const struct from_state_options *opts, char *err,
			size_t errlen)
{
	int r = opts->fill_catalog(cat, opts->userdata, err, errlen);

	if (r >= 0 && (r = catalog_apply_overlays(cat, opts->node_overlays, opts->n_node_overlays)) < 0)
		snprintf(err, errlen, "Failed to apply the NodeOverlays to the instance-type catalog: %s",
			 strerror(-r));
	return r < 0 ? r : catalog_finalize(cat);
}

static int cluster_from_state_with(const struct state_store *s, const struct proto_pod *const *pending,
				   size_t n_pending, const struct from_state_options *opts,
				   struct cluster **ret, char *err, size_t errlen);

/* The store's NodeOverlays go into the catalog (model/node-overlay.h)
 * unless the caller passed its own. */
int cluster_from_state(const struct state_store *s, const struct proto_pod *const *pending,
		       size_t n_pending, const struct from_state_options *opts,
		       struct cluster **ret, char *err, size_t errlen)
{
	struct from_state_options with = *opts;
	const struct proto_nodeoverlay **ov = NULL;
	size_t n = 0;
	int r;

	if (opts->node_overlays)
		return cluster_from_state_with(s, pending, n_pending, opts, ret, err, errlen);
	if ((r = node_overlays_collect(s, &ov, &n)) < 0)
		return r;
	with.node_overlays = ov;
	with.n_node_overlays = n;
	r = cluster_from_state_with(s, pending, n_pending, &with, ret, err, errlen);
	free(ov);
	return r;
}

static int cluster_from_state_with(const struct state_store *s, const struct proto_pod *const *pending,
				   size_t n_pending, const struct from_state_options *opts,
				   struct cluster **ret, char *err, size_t errlen)
{
	struct builder b = { .s = s, .err = err, .errlen = errlen,
			     .startup_taints_block = opts->startup_taints_block };
	const struct proto_object *o;
	struct from_state_iter it = { 0 };
	struct model_base *base = NULL;
	int r;

	err[0] = '\0';
	if (opts->overlay && opts->overlay->objects.n)
		b.overlay = opts->overlay;
	if (opts->scope_node && from_state_scope_suffices(&b, pending, n_pending))
		b.scope = opts->scope_node;
	if (opts->base_cache && !b.scope && !opts->fill_catalog) {
		r = model_base_get(opts->base_cache, opts, &base, err, errlen);
		if (r < 0)
			return r;
		r = cluster_new_from_base(&b.c, base);
		model_base_unref(base);
	} else {
		r = cluster_new(&b.c);
	}
	if (r < 0)
		return r;
	/* Pending pods first, so that c->pods[i] is pending[i]. */
	for (size_t i = 0; i < n_pending && r >= 0; i++)
		r = add_pod(&b, pending[i], NULL);
	while (r >= 0 && (o = from_state_next(&b, &it))) {
		switch (o->kind) {
		case PROTO_OBJECT_NODEPOOL:
			r = add_nodepool(&b, o->nodepool);
			break;
		case PROTO_OBJECT_NODE:
			r = add_node(&b, o->node);
			break;
		case PROTO_OBJECT_NODECLAIM:
			r = add_nodeclaim(&b, o->nodeclaim);
			break;
		case PROTO_OBJECT_POD: /* in_scope(): bound, not finished */
			r = add_pod(&b, o->pod, o->pod->node_name);
			break;
		case PROTO_OBJECT_DAEMONSET:
			r = add_daemonset(&b, o->daemonset);
			break;
		case PROTO_OBJECT_NAMESPACE:
			r = add_namespace(&b, o->namespace);
			break;
		default:
			break;
		}
	}
	if (r >= 0)
		r = add_planned_pods(&b, pending, n_pending, opts->now_ms);
	free(b.memo); /* what it points at stays, in the model */
	b.memo = NULL;
	if (r >= 0 && b.c->base && b.slots_full) {
		/* The catalog's resources took the slots a batch's resource
		 * needed, which it would have had loading the catalog after it. */
		struct from_state_options uncached = *opts;

		cluster_free(b.c);
		uncached.base_cache = NULL;
		return cluster_from_state_with(s, pending, n_pending, &uncached, ret, err, errlen);
	}
	/* A check of one Node opens no NodeClaim and, scoped, counts no zone
	 * domains: the instance types (~1,400, the bulk of a small build)
	 * would go unread. */
	if (r >= 0 && b.scope)
		r = catalog_finalize(&b.c->cat);
	else if (r >= 0 && !b.c->base)
		r = opts->fill_catalog ? fill_catalog(&b.c->cat, opts, err, errlen) :
					 model_catalog_load(&b.c->cat, opts, err, errlen);
	if (r >= 0)
		r = cluster_apply_kubelet(b.c);
	if (r >= 0)
		r = cluster_settle_in_flight(b.c);
	if (r >= 0) {
		cluster_assign_nodepools(b.c);
		cluster_compute_daemon_overhead(b.c);
		if (opts->ignore_preferences)
			cluster_ignore_preferences(b.c);
	}
	if (r < 0) {
		if (!err[0])
			snprintf(err, errlen, "Failed to build the cluster model: %s", strerror(-r));
		cluster_free(b.c);
		return r;
	}
	*ret = b.c;
	return 0;
}
