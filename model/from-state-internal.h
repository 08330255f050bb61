/*
 * Private to the from-state*.c files: the builder that turns replicated
 * proto objects into a struct cluster (from-state.c), and the volume
 * topology it asks about each pending pod (from-state-volumes.c).
 */
#ifndef KANNA_SCHEDULER_FROM_STATE_INTERNAL_H
#define KANNA_SCHEDULER_FROM_STATE_INTERNAL_H

#include "model/from-state.h"

/* A model array built from a proto array, by the proto array's address. */
struct array_memo {
	const void *key;
	void *value;
	uint32_t n;
};

struct builder {
	struct cluster *c;
	const struct state_store *s;
	const struct state_store *overlay; /* NULL, or amends s (from_state_options) */
	const char *scope;                 /* NULL, or the one Node built (ditto) */
	bool startup_taints_block;         /* from_state_options */
	bool slots_full;                   /* a resource found no slot left */
	char *err;
	size_t errlen;
	/* Pods' label and toleration arrays, built once per proto array: the
	 * store holds one of each for all the pods that repeat it (proto/
	 * share.c), and a model of 100,000 pods had 100,000 copies. Open
	 * addressing; the arrays are in the model's arena, read-only. */
	struct array_memo *memo;
	size_t memo_cap, memo_n;
};

static inline uint32_t intern(struct builder *b, const char *s)
{
	return cluster_intern(b->c, s ? s : "");
}

/* from-state-view.c: the objects of the model. An iterator starts zeroed;
 * it yields the objects in scope (pods: those bound, not finished), the
 * store's the overlay does not replace, then the overlay's. */
struct from_state_iter {
	size_t it;
	unsigned phase;
	struct proto_object pod; /* what a pod of the store's node index is yielded as */
};
const struct proto_object *from_state_next(const struct builder *b, struct from_state_iter *v);
/* An object by name, the overlay's first. */
const struct state_entry *from_state_get(const struct builder *b, enum proto_object_kind kind,
					const char *ns, const char *name);
/* Can b->scope's Node alone answer a check of these pending pods (no
 * pod's hard terms count pods beyond the node it is on)? */
bool from_state_scope_suffices(const struct builder *b, const struct proto_pod *const *pending,
			       size_t n_pending);

/* Intersects the proto requirements q[0..n) into r. */
int from_state_requirements(struct builder *b, struct requirements *r,
			    const struct proto_requirement *q, uint32_t n);
/*
 * Volume topology of a pending pod (bound PVs' node affinity, unbound
 * WaitForFirstConsumer classes' allowed topologies) ANDed into its node
 * requirements; a missing claim, volume or class marks it unplaceable.
 */
int from_state_pod_volumes(struct builder *b, const struct proto_pod *pp, struct pod *p);

#endif
