/* Tests build pods field by field: fx_constraints(p) gives the pod's
 * constraints to fill in, attaching a fresh zeroed set the first time. */
#ifndef KANNA_TESTS_POD_CONSTRAINTS_FIXTURE_H
#define KANNA_TESTS_POD_CONSTRAINTS_FIXTURE_H

#include <criterion/criterion.h>

#include "proto/proto.h"

static inline struct proto_pod_constraints *fx_constraints(struct proto_pod *p)
{
	/* Static, not malloc'd: tests do not free their pods (and the leak
	 * checker would then fail them). */
	static struct proto_pod_constraints pool[256];
	static unsigned used;

	if (!p->n_constraints) {
		cr_assert_lt(used, sizeof(pool) / sizeof(pool[0]), "fx_constraints: pool exhausted");
		p->constraints = &pool[used++];
		p->n_constraints = 1;
	}
	return p->constraints;
}

#endif
