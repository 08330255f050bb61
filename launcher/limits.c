/* SPDX-License-Identifier: MIT */
/* NodePool limits re-check: before a planned NodeClaim is created, the
 * capacity of every existing and in-flight NodeClaim of the NodePool plus the
 * new claim must stay within spec.limits, so that parallel scheduler shards
 * never overshoot. Pure arithmetic, called by the plan consumer; never does
 * I/O and never wraps around (sums saturate). */
#include <errno.h>
#include <stddef.h>

#include "launcher/limits.h"

static uint64_t add_saturating(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void resource_vector_add(resource_vector *sum, const resource_vector *add) {
        for (size_t i = 0; i < _NODEPOOL_RESOURCE_MAX; i++)
                sum->v[i] = add_saturating(sum->v[i], add->v[i]);
}

/* Returns 0 when the claim fits, -EDQUOT naming the first exceeded resource
 * otherwise. */
int nodepool_limits_admit(const nodepool_limits *limits, const resource_vector *in_use,
                          const resource_vector *claim, nodepool_resource *ret_exceeded) {
        if (!limits || !in_use || !claim)
                return -EINVAL;
        for (size_t i = 0; i < _NODEPOOL_RESOURCE_MAX; i++) {
                if (!limits->set[i])
                        continue;
                if (add_saturating(in_use->v[i], claim->v[i]) > limits->max[i]) {
                        if (ret_exceeded)
                                *ret_exceeded = (nodepool_resource) i;
                        return -EDQUOT;
                }
        }
        return 0;
}
