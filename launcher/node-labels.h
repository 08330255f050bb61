/* SPDX-License-Identifier: MIT */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Upper bound on well-known labels a launched Node carries. */
#define NODE_WELL_KNOWN_LABELS_MAX 10

typedef struct node_label {
        const char *key;
        const char *value;
} node_label;

typedef struct node_facts {
        const char *instance_type, *zone, *region, *capacity_type;
        const char *nodepool, *arch, *os, *hostname;
        bool v1alpha5;  /* also set karpenter.sh/provisioner-name */
} node_facts;

int node_well_known_labels(const node_facts *f, node_label out[static NODE_WELL_KNOWN_LABELS_MAX], size_t *ret_n);
