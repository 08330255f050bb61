/*
 * Karpenter's IsConsolidated for the reaper (reaper/consolidation-state.h):
 * a search that found nothing is not run again while the state it read is
 * the same, and is run again once anything it reads changes or the
 * timeout has passed.
 */
#include <criterion/criterion.h>

#include "reaper/consolidation-state.h"

#define T0 1000000000ULL

static struct consolidation_state state(uint64_t seq, uint64_t snapshots, uint32_t budget,
					const char *const *claims, int n)
{
	struct consolidation_state s = { .seq = seq, .snapshots = snapshots };

	for (int i = 0; i < n; i++)
		consolidation_state_add_candidate(&s, claims[i], budget);
	return s;
}

static const char *const two[] = { "default-a", "default-b" };
static const char *const two_reversed[] = { "default-b", "default-a" };
static const char *const three[] = { "default-a", "default-b", "default-c" };
static const char *const other_two[] = { "default-a", "default-c" };

Test(consolidation_state, nothing_is_consolidated_before_a_search_found_nothing)
{
	struct consolidation_mark m = { 0 };
	struct consolidation_state s = state(7, 1, 1, two, 2);

	cr_expect_not(consolidation_is_consolidated(&m, &s, T0));
}

/* A search over searched found nothing at T0: is a pass after_usec later,
 * over now, still consolidated? */
static bool consolidated(struct consolidation_state searched, struct consolidation_state now,
			 uint64_t after_usec)
{
	struct consolidation_mark m = { 0 };

	consolidation_mark_consolidated(&m, &searched, T0);
	return consolidation_is_consolidated(&m, &now, T0 + after_usec);
}

Test(consolidation_state, the_same_state_is_consolidated_until_the_timeout)
{
	struct consolidation_state s = state(7, 1, 1, two, 2), again = state(7, 1, 1, two_reversed, 2);

	cr_expect(consolidated(s, again, 1000000), "candidates in any order");
	cr_expect(consolidated(s, again, CONSOLIDATION_STATE_TIMEOUT_USEC - 1));
	cr_expect_not(consolidated(s, again, CONSOLIDATION_STATE_TIMEOUT_USEC),
		      "Karpenter searches again after 5 minutes whatever happened");
	cr_expect_eq(CONSOLIDATION_STATE_TIMEOUT_USEC, 300ULL * 1000 * 1000);
}

Test(consolidation_state, a_change_to_any_replicated_object_ends_it)
{
	cr_expect_not(consolidated(state(7, 1, 1, two, 2), state(8, 1, 1, two, 2), 1));
}

Test(consolidation_state, a_resynced_replica_ends_it_even_at_the_same_sequence_number)
{
	cr_expect_not(consolidated(state(7, 1, 1, two, 2), state(7, 2, 1, two, 2), 1));
}

Test(consolidation_state, a_node_becoming_a_candidate_ends_it_without_any_object_changing)
{
	cr_expect_not(consolidated(state(7, 1, 5, two, 2), state(7, 1, 5, three, 3), 1),
		      "consolidateAfter passed for a third node");
	cr_expect_not(consolidated(state(7, 1, 5, two, 2), state(7, 1, 5, other_two, 2), 1));
}

Test(consolidation_state, a_budget_allowing_more_ends_it)
{
	cr_expect_not(consolidated(state(7, 1, 1, two, 2), state(7, 1, 2, two, 2), 1));
}

Test(consolidation_state, a_new_mark_replaces_the_old_one)
{
	struct consolidation_mark m = { 0 };
	struct consolidation_state s = state(7, 1, 1, two, 2), later = state(9, 1, 1, two, 2);

	consolidation_mark_consolidated(&m, &s, T0);
	consolidation_mark_consolidated(&m, &later, T0 + 10);
	cr_expect_not(consolidation_is_consolidated(&m, &s, T0 + 20));
	cr_expect(consolidation_is_consolidated(&m, &later, T0 + 20));
}
