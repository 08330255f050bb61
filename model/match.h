/*
 * Matching on proto structs, for the daemons that do not build a cluster
 * model: label selectors against an object's labels (the watcher's shard
 * routing), and whether a set of node requirements allows a label value
 * (the launcher's recovery of a NodeClaim's candidates).
 */
#ifndef KANNA_MODEL_MATCH_H
#define KANNA_MODEL_MATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/proto.h"

/* The value of key in labels[0..n), or NULL. */
const char *proto_labels_get(const struct proto_kv *labels, uint32_t n, const char *key);
/*
 * Does sel select an object with these labels? As Kubernetes' label
 * selectors: matchLabels and every matchExpression (In, NotIn, Exists,
 * DoesNotExist; Gt and Lt are not selector operators and match nothing).
 * An empty selector selects nothing here: in a spread or affinity term it
 * counts no pod that matters.
 */
bool label_selector_matches(const struct proto_label_selector *sel, const struct proto_kv *labels,
			    uint32_t n);
/* Do requirements reqs[0..n) allow a node labelled key=value? Those on other
 * keys say nothing; In needs value listed, NotIn not listed, DoesNotExist
 * refuses it, Exists allows it; Gt and Lt compare it as an integer. */
bool requirements_allow(const struct proto_requirement *reqs, uint32_t n, const char *key,
			const char *value);

#endif
