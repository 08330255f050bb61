/*
 * Static NodePools (v1 spec.replicas), the removal side: when a pool has
 * more NodeClaims than replicas (it was scaled down), the reaper deletes the
 * surplus, as upstream's static deprovisioning controller does
 * (kubernetes-sigs/karpenter pkg/controllers/static/deprovisioning). The
 * launcher adds (launcher/static.c); this only removes.
 *
 * Order, upstream's: NodeClaims not launched yet (no providerID) first,
 * then empty nodes (no pod but DaemonSet, mirror or finished ones, none
 * with karpenter.sh/do-not-disrupt), then the others, those without
 * do-not-disrupt first, cheapest first by reschedule cost × lifetime
 * remaining (as consolidation ranks them). A scale-down bypasses the
 * disruption budgets; its drain honours PodDisruptionBudgets
 * (termination.c), as upstream's does. Those with do-not-disrupt go last
 * but do go: the user asked for fewer nodes.
 *
 * Drift of a static node (disruption.c) is replace-first, as upstream's
 * static drift: tainted karpenter.sh/disrupted, the launcher stops counting
 * it and launches its replacement; static_replaced() says when it may go.
 */
#ifndef KANNA_REAPER_STATIC_H
#define KANNA_REAPER_STATIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"
#include "state/state-store.h"

struct reaper;

/* Leaves out a NodeClaim already on its way out (a delete sent, a
 * disruption under way); NULL: none. */
typedef bool (*static_leaving_fn)(const struct proto_nodeclaim *nc, void *userdata);

/* The NodeClaims of np that count: not being deleted, not leaving. */
uint32_t static_running(const struct state_store *st, const struct proto_nodepool *np,
			static_leaving_fn leaving, void *userdata);

/*
 * Up to max NodeClaims of np to delete, in the order above, into ret
 * (pointers into st). Pure over its inputs (now_ms: Unix ms, for the
 * lifetime remaining). Returns how many; -ENOMEM.
 */
int static_surplus(const struct state_store *st, const struct proto_nodepool *np, int64_t now_ms,
		   static_leaving_fn leaving, void *userdata, const struct proto_nodeclaim **ret,
		   size_t max);

/* A drifted node of static pool np (disruption.c, once tainted): 1 when
 * its NodeClaim nc may be deleted, the pool having replicas others Ready
 * (the launcher's replacement among them), or no replacement being able to
 * come (limits.nodes reached: then delete, then replace); 0: wait. */
int static_replaced(struct reaper *r, const struct proto_nodepool *np,
		    const struct proto_nodeclaim *nc);

/* One pass (daemon.c, before disruption): every static pool's surplus
 * deleted. */
void static_pass(struct reaper *r);

#endif
