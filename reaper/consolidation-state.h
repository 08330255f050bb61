/*
 * Whether consolidation may skip its search: Karpenter's IsConsolidated
 * and markConsolidated (pkg/controllers/disruption/consolidation.go) over
 * its cluster's ConsolidationState (pkg/controllers/state/cluster.go). A
 * search that found nothing to do, over all the candidates (not held back
 * by a budget) and to its end (no deadline), marks the state it searched;
 * while the state stays the same the next passes do not search again. The
 * mark expires after CONSOLIDATION_STATE_TIMEOUT_USEC, as Karpenter's state
 * resets every 5 minutes, for what the state does not show (an instance
 * type or offering available again, a price).
 *
 * kanna's state is what a search reads: the replica's sequence number (any
 * change of a replicated object: pods, nodes, NodeClaims, NodePools, PDBs
 * …) with its snapshot count (a resync numbers changes anew), and the
 * candidates with their pools' budgets — a node that becomes
 * consolidatable (consolidateAfter passed, measured by the reaper, not in
 * the objects) or a budget window that opens changes them without any
 * object changing. Pure: consolidation.c holds one and passes the clock.
 */
#ifndef KANNA_REAPER_CONSOLIDATION_STATE_H
#define KANNA_REAPER_CONSOLIDATION_STATE_H

#include <stdbool.h>
#include <stdint.h>

/* Karpenter's ConsolidationState: at least one search every 5 minutes. */
#define CONSOLIDATION_STATE_TIMEOUT_USEC (5ULL * 60 * 1000 * 1000)

struct consolidation_state {
	uint64_t seq;        /* the replica's last change applied */
	uint64_t snapshots;  /* snapshots the replica loaded */
	uint64_t candidates; /* consolidation_state_add_candidate() over every candidate */
};

/* Adds a candidate (its NodeClaim's name, what its pool's budgets allow)
 * to s->candidates; the order of the calls does not matter. */
void consolidation_state_add_candidate(struct consolidation_state *s, const char *claim,
				       uint32_t allowed);

struct consolidation_mark {
	struct consolidation_state state;
	uint64_t until_usec; /* CLOCK_MONOTONIC; 0: not marked */
};

/* IsConsolidated: was a search over exactly state found empty-handed, less
 * than the timeout before now_usec? */
bool consolidation_is_consolidated(const struct consolidation_mark *m,
				   const struct consolidation_state *state, uint64_t now_usec);
/* markConsolidated: a search over state, started at started_usec, found
 * nothing. */
void consolidation_mark_consolidated(struct consolidation_mark *m,
				     const struct consolidation_state *state, uint64_t started_usec);

#endif
