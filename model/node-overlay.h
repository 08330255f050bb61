/*
 * NodeOverlays (karpenter.sh/v1alpha1) applied to the instance-type
 * catalog: offering prices and instance types' extended resources, before
 * the catalog is finalized. The scheduler's and the reaper's models both
 * load their catalog through model_catalog_load(), so both plan with the
 * same prices.
 */
#ifndef KANNA_MODEL_NODE_OVERLAY_H
#define KANNA_MODEL_NODE_OVERLAY_H

#include "model/catalog.h"
#include "proto/proto.h"
#include "state/state-store.h"

/* The valid NodeOverlays of s in the order they take precedence: weight
 * descending, then name ascending (upstream merges overlays of equal weight
 * alphabetically). *ret points into s; free() it. */
int node_overlays_collect(const struct state_store *s, const struct proto_nodeoverlay ***ret,
			  size_t *n);
/* What the catalog built with them depends on: "name\tresourceVersion\n"
 * each, in order (NULL on ENOMEM; "" for none). */
char *node_overlays_key(const struct proto_nodeoverlay *const *ov, size_t n);
/*
 * Per offering, the first overlay (in the order above) whose requirements
 * the offering meets and that sets price or priceAdjustment decides its
 * price; per instance type and extended resource, the first that meets one
 * of its offerings and names the resource sets its capacity and
 * allocatable. Call before catalog_finalize().
 */
int catalog_apply_overlays(struct catalog *cat, const struct proto_nodeoverlay *const *ov, size_t n);

#endif
