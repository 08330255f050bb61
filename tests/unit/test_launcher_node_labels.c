/* SPDX-License-Identifier: MIT */
/* Unit tests for launcher/node-labels.c: a launched Node's well-known labels. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "launcher/node-labels.h"

static const char *find(const node_label *l, size_t n, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(l[i].key, key) == 0)
                        return l[i].value;
        return NULL;
}

static node_facts facts(void) {
        return (node_facts) { "m5.large", "us-west-2a", "us-west-2", "spot", "default",
                              "amd64", "linux", "ip-10-0-1-2.us-west-2.compute.internal", false };
}

Test(launcher_node_labels, carries_every_well_known_label) {
        node_label l[NODE_WELL_KNOWN_LABELS_MAX];
        node_facts f = facts();
        size_t n = 0;

        cr_assert_eq(node_well_known_labels(&f, l, &n), 0);
        cr_assert_eq(n, 8);
        cr_assert_str_eq(find(l, n, "node.kubernetes.io/instance-type"), "m5.large");
        cr_assert_str_eq(find(l, n, "topology.kubernetes.io/zone"), "us-west-2a");
        cr_assert_str_eq(find(l, n, "topology.kubernetes.io/region"), "us-west-2");
        cr_assert_str_eq(find(l, n, "karpenter.sh/capacity-type"), "spot");
        cr_assert_str_eq(find(l, n, "karpenter.sh/nodepool"), "default");
        cr_assert_str_eq(find(l, n, "kubernetes.io/arch"), "amd64");
        cr_assert_str_eq(find(l, n, "kubernetes.io/os"), "linux");
        cr_assert_null(find(l, n, "karpenter.sh/provisioner-name"));
}

Test(launcher_node_labels, v1alpha5_adds_provisioner_name) {
        node_label l[NODE_WELL_KNOWN_LABELS_MAX];
        node_facts f = facts();
        size_t n = 0;

        f.v1alpha5 = true;
        cr_assert_eq(node_well_known_labels(&f, l, &n), 0);
        cr_assert_str_eq(find(l, n, "karpenter.sh/provisioner-name"), "default");
}

Test(launcher_node_labels, missing_fact_is_an_error) {
        node_label l[NODE_WELL_KNOWN_LABELS_MAX];
        node_facts f = facts();
        size_t n = 0;

        f.zone = NULL;
        cr_assert_eq(node_well_known_labels(&f, l, &n), -EINVAL);
}
