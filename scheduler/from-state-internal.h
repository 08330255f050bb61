/*
 * Private to the from-state*.c files: the builder that turns replicated
 * proto objects into a struct cluster (from-state.c), and the volume
 * topology it asks about each pending pod (from-state-volumes.c).
 */
#ifndef KANNA_SCHEDULER_FROM_STATE_INTERNAL_H
#define KANNA_SCHEDULER_FROM_STATE_INTERNAL_H

#include "scheduler/from-state.h"

struct builder {
	struct cluster *c;
	const struct state_store *s;
	char *err;
	size_t errlen;
};

static inline uint32_t intern(struct builder *b, const char *s)
{
	return cluster_intern(b->c, s ? s : "");
}

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
