/* SPDX-License-Identifier: MIT */
/* Unit tests for launcher/limits.c: the NodePool limits re-check. */
#include <criterion/criterion.h>
#include <errno.h>

#include "launcher/limits.h"

Test(launcher_limits, admits_claim_exactly_at_the_limit) {
        nodepool_limits l = { .set[NODEPOOL_RESOURCE_CPU_MILLIS] = true, .max[NODEPOOL_RESOURCE_CPU_MILLIS] = 8000 };
        resource_vector used = { .v[NODEPOOL_RESOURCE_CPU_MILLIS] = 6000 };
        resource_vector claim = { .v[NODEPOOL_RESOURCE_CPU_MILLIS] = 2000 };

        cr_assert_eq(nodepool_limits_admit(&l, &used, &claim, NULL), 0);
}

Test(launcher_limits, second_racing_claim_is_refused_once_first_is_in_flight) {
        nodepool_limits l = { .set[NODEPOOL_RESOURCE_CPU_MILLIS] = true, .max[NODEPOOL_RESOURCE_CPU_MILLIS] = 4000 };
        resource_vector used = { 0 };
        resource_vector claim = { .v[NODEPOOL_RESOURCE_CPU_MILLIS] = 4000 };
        nodepool_resource which = _NODEPOOL_RESOURCE_MAX;

        cr_assert_eq(nodepool_limits_admit(&l, &used, &claim, NULL), 0);
        resource_vector_add(&used, &claim);
        cr_assert_eq(nodepool_limits_admit(&l, &used, &claim, &which), -EDQUOT);
        cr_assert_eq(which, NODEPOOL_RESOURCE_CPU_MILLIS);
}

Test(launcher_limits, unset_resources_are_unlimited_and_memory_is_checked) {
        nodepool_limits l = { .set[NODEPOOL_RESOURCE_MEMORY_BYTES] = true,
                              .max[NODEPOOL_RESOURCE_MEMORY_BYTES] = 1ull << 30 };
        resource_vector used = { .v[NODEPOOL_RESOURCE_CPU_MILLIS] = UINT64_MAX };
        resource_vector claim = { .v[NODEPOOL_RESOURCE_CPU_MILLIS] = 1000,
                                  .v[NODEPOOL_RESOURCE_MEMORY_BYTES] = (1ull << 30) + 1 };
        nodepool_resource which = _NODEPOOL_RESOURCE_MAX;

        cr_assert_eq(nodepool_limits_admit(&l, &used, &claim, &which), -EDQUOT);
        cr_assert_eq(which, NODEPOOL_RESOURCE_MEMORY_BYTES);
}

Test(launcher_limits, sums_saturate_instead_of_wrapping) {
        nodepool_limits l = { .set[NODEPOOL_RESOURCE_GPUS] = true, .max[NODEPOOL_RESOURCE_GPUS] = 4 };
        resource_vector used = { .v[NODEPOOL_RESOURCE_GPUS] = UINT64_MAX - 1 };
        resource_vector claim = { .v[NODEPOOL_RESOURCE_GPUS] = 5 };

        resource_vector_add(&used, &claim);
        cr_assert_eq(used.v[NODEPOOL_RESOURCE_GPUS], UINT64_MAX);
        cr_assert_eq(nodepool_limits_admit(&l, &used, &claim, NULL), -EDQUOT);
}
