/* Tests build pods field by field: fx_template(p) gives the pod's
 * template to fill in, attaching a fresh zeroed one the first time (a copy
 * of the pod shares it). */
#ifndef KANNA_TESTS_POD_TEMPLATE_FIXTURE_H
#define KANNA_TESTS_POD_TEMPLATE_FIXTURE_H

#include <criterion/criterion.h>

#include "proto/proto.h"

static inline struct proto_pod_template *fx_template(struct proto_pod *p)
{
	/* Static, not malloc'd: tests do not free their pods (and the leak
	 * checker would then fail them). */
	static struct proto_pod_template pool[4096];
	static unsigned used;

	if (!p->n_template) {
		cr_assert_lt(used, sizeof(pool) / sizeof(pool[0]), "fx_template: pool exhausted");
		p->template = &pool[used++];
		p->n_template = 1;
	}
	return p->template;
}

#endif
