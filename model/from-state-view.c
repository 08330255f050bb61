/*
 * What the cluster model is built from (from-state.c): the replicated
 * store as an overlay of this process's own recent writes amends it, and,
 * for a check of one Node (from_state_options.scope_node), only what that
 * check can depend on. Which objects a scoped build can leave out follows
 * from what sched_check_node() counts: see counts_beyond_node().
 */
#include <string.h>

#include "model/from-state-internal.h"

/*
 * Do these hard terms count pods on other nodes than the one the pod goes
 * to? Anti-affinity and spread on keys other than the hostname do (their
 * domains hold other nodes); pod affinity does on any key, because the
 * first pod of a group may go anywhere only while no pod matches anywhere
 * (topology_host_ok()). For a pod already placed (own false), only its
 * anti-affinity matters: it repels pending pods in its whole domain.
 */
static bool counts_beyond_node(const struct proto_pod *p, bool own)
{
	const struct proto_pod_template *t = proto_pod_template_of(p);

	for (uint32_t i = 0; i < t->n_pod_anti_affinity_required; i++)
		if (!streq_ptr(t->pod_anti_affinity_required[i].topology_key, "kubernetes.io/hostname"))
			return true;
	if (!own)
		return false;
	if (t->n_pod_affinity_required)
		return true;
	for (uint32_t i = 0; i < t->n_topology_spread; i++)
		if (t->topology_spread[i].when_unsatisfiable != PROTO_UNSATISFIABLE_SCHEDULE_ANYWAY &&
		    !streq_ptr(t->topology_spread[i].topology_key, "kubernetes.io/hostname"))
			return true;
	return false;
}

bool from_state_scope_suffices(const struct builder *b, const struct proto_pod *const *pending,
			       size_t n_pending)
{
	const struct state_store *stores[] = { b->s, b->overlay };
	const struct state_entry *e;

	for (size_t i = 0; i < n_pending; i++)
		if (counts_beyond_node(pending[i], true))
			return false;
	for (size_t k = 0; k < ARRAY_SIZE(stores); k++)
		for (size_t it = 0; stores[k] && (e = state_store_next(stores[k], &it));)
			if (e->obj.kind == PROTO_OBJECT_POD && counts_beyond_node(e->obj.pod, false))
				return false;
	return true;
}

/* Is the object part of the model? Pods: those that occupy a node. */
static bool in_scope(const struct builder *b, const struct proto_object *o)
{
	const struct proto_pod *p;

	switch (o->kind) {
	case PROTO_OBJECT_NODE:
		return !b->scope || streq(o->node->name, b->scope);
	case PROTO_OBJECT_NODECLAIM:
		return !b->scope || streq_ptr(o->nodeclaim->node_name, b->scope);
	case PROTO_OBJECT_POD:
		p = o->pod;
		return p->node_name && *p->node_name && p->phase != PROTO_PHASE_SUCCEEDED &&
		       p->phase != PROTO_PHASE_FAILED && (!b->scope || streq(p->node_name, b->scope));
	default:
		return true;
	}
}

static bool replaced(const struct builder *b, const struct proto_object *o)
{
	const char *ns, *name;

	if (!b->overlay)
		return false;
	state_object_name(o, &ns, &name);
	return state_store_get(b->overlay, o->kind, ns, name) != NULL;
}

/*
 * Phase 0 walks the store; 1, with a scope, the store's index of the pods
 * on the scope Node instead of every pod (a replica holds 100,000 of them:
 * reading each costs more than the check); 2 the overlay.
 */
const struct proto_object *from_state_next(const struct builder *b, struct from_state_iter *v)
{
	const struct state_pod_set *set;
	const struct state_entry *e;

	while (v->phase == 0) {
		if (!(e = state_store_next(b->s, &v->it))) {
			v->phase = 1;
			v->it = 0;
		} else if ((!b->scope || e->obj.kind != PROTO_OBJECT_POD) && in_scope(b, &e->obj) &&
			   !replaced(b, &e->obj)) {
			return &e->obj;
		}
	}
	while (v->phase == 1) {
		set = b->scope ? state_store_pods_on(b->s, b->scope) : NULL;
		if (!set || v->it >= set->n) {
			v->phase = 2;
			v->it = 0;
			break;
		}
		v->pod = (struct proto_object){ .kind = PROTO_OBJECT_POD,
						.pod = (struct proto_pod *)set->pods[v->it++] };
		if (in_scope(b, &v->pod) && !replaced(b, &v->pod))
			return &v->pod;
	}
	while (b->overlay && (e = state_store_next(b->overlay, &v->it)))
		if (in_scope(b, &e->obj))
			return &e->obj;
	return NULL;
}

const struct state_entry *from_state_get(const struct builder *b, enum proto_object_kind kind,
					const char *ns, const char *name)
{
	const struct state_entry *e = b->overlay ? state_store_get(b->overlay, kind, ns, name) : NULL;

	return e ? e : state_store_get(b->s, kind, ns, name);
}
