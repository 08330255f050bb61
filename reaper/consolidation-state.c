/*
 * Karpenter's IsConsolidated / markConsolidated (consolidation-state.h):
 * the state a search that found nothing was over, and whether the next
 * pass's state is the same one, within the timeout. Called by
 * consolidation.c; pure.
 */
#include "common/hash.h"
#include "reaper/consolidation-state.h"

/* splitmix64's finalizer: candidates' hashes are summed, so each must
 * spread over all 64 bits first. */
static uint64_t mix(uint64_t h)
{
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

void consolidation_state_add_candidate(struct consolidation_state *s, const char *claim,
				       uint32_t allowed)
{
	s->candidates += mix((hash_fnv1a64_field(HASH_FNV1A64_OFFSET, claim) ^ allowed) *
			     HASH_FNV1A64_PRIME);
}

bool consolidation_is_consolidated(const struct consolidation_mark *m,
				   const struct consolidation_state *state, uint64_t now_usec)
{
	return m->until_usec && now_usec < m->until_usec && m->state.seq == state->seq &&
	       m->state.snapshots == state->snapshots && m->state.candidates == state->candidates;
}

void consolidation_mark_consolidated(struct consolidation_mark *m,
				     const struct consolidation_state *state, uint64_t started_usec)
{
	m->state = *state;
	m->until_usec = started_usec + CONSOLIDATION_STATE_TIMEOUT_USEC;
}
