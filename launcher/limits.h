/* SPDX-License-Identifier: MIT */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* The resources a NodePool may limit (spec.limits). */
typedef enum nodepool_resource {
        NODEPOOL_RESOURCE_CPU_MILLIS,
        NODEPOOL_RESOURCE_MEMORY_BYTES,
        NODEPOOL_RESOURCE_GPUS,
        _NODEPOOL_RESOURCE_MAX,
} nodepool_resource;

typedef struct nodepool_limits {
        bool set[_NODEPOOL_RESOURCE_MAX];  /* false: that resource is unlimited */
        uint64_t max[_NODEPOOL_RESOURCE_MAX];
} nodepool_limits;

typedef struct resource_vector {
        uint64_t v[_NODEPOOL_RESOURCE_MAX];
} resource_vector;

void resource_vector_add(resource_vector *sum, const resource_vector *add);
int nodepool_limits_admit(const nodepool_limits *limits, const resource_vector *in_use,
                          const resource_vector *claim, nodepool_resource *ret_exceeded);
