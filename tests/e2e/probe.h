/*
 * Pieces of kanna-probe (tests/e2e/kanna-probe.c) shared between its files:
 * comparing a replica with the API's own JSON, and churning objects.
 */
#ifndef KANNA_TESTS_PROBE_H
#define KANNA_TESTS_PROBE_H

#include <jansson.h>
#include <stdio.h>

#include "common/loop.h"
#include "state/state-store.h"

/* Differences printed before the rest are only counted. */
#define PROBE_MAX_PRINTED_DIFFS 20

/*
 * Compares a replica with what the API returned (the List of
 * `kubectl get pods,nodes,nodepools.v1.karpenter.sh,pvc,namespaces -A -o
 * json`), field by field, for the fields the compact objects carry, read
 * from the API's JSON here independently of the watcher's decoders; and
 * finds objects of those kinds in the replica that the API does not have.
 * Prints a line per difference to out (may be NULL); returns how many, or
 * a negative errno. *compared: API objects looked at.
 */
int probe_compare(const struct state_store *replica, const json_t *api, FILE *out,
		  size_t *compared);

/*
 * Creates, updates and deletes objects of several kinds through the API
 * ($KUBECONFIG): `count` pods bound to count/10 nodes, count/50 NodePools
 * and count/5 PVCs, then updates a third and deletes a fifth of each.
 * Returns 0, or a negative errno when a request failed.
 */
int probe_churn(struct loop *loop, unsigned count, const char *prefix);

#endif
