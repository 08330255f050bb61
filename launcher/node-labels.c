/* SPDX-License-Identifier: MIT */
/* The well-known label set of a Node the launcher creates for a launched
 * NodeClaim (instance type, zone, region, capacity type, NodePool, arch, os,
 * hostname; provisioner-name for v1alpha5). Pure; called when building the
 * Node object; never invents a value: a missing fact is an error. */
#include <errno.h>

#include "launcher/node-labels.h"

int node_well_known_labels(const node_facts *f, node_label out[static NODE_WELL_KNOWN_LABELS_MAX], size_t *ret_n) {
        size_t n = 0;

        if (!f || !ret_n || !f->instance_type || !f->zone || !f->region || !f->capacity_type ||
            !f->nodepool || !f->arch || !f->os || !f->hostname)
                return -EINVAL;
        out[n++] = (node_label) { "node.kubernetes.io/instance-type", f->instance_type };
        out[n++] = (node_label) { "topology.kubernetes.io/zone", f->zone };
        out[n++] = (node_label) { "topology.kubernetes.io/region", f->region };
        out[n++] = (node_label) { "karpenter.sh/capacity-type", f->capacity_type };
        out[n++] = (node_label) { "karpenter.sh/nodepool", f->nodepool };
        out[n++] = (node_label) { "kubernetes.io/arch", f->arch };
        out[n++] = (node_label) { "kubernetes.io/os", f->os };
        out[n++] = (node_label) { "kubernetes.io/hostname", f->hostname };
        if (f->v1alpha5)
                out[n++] = (node_label) { "karpenter.sh/provisioner-name", f->nodepool };
        *ret_n = n;
        return 0;
}
