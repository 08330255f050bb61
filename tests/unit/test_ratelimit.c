/* Token bucket: burst, steady rate, queued reservations, skipping without debt, unlimited. */
#include <criterion/criterion.h>

#include "common/ratelimit.h"

Test(ratelimit, a_full_bucket_lets_a_burst_through_then_paces_at_the_rate)
{
	struct ratelimit rl;
	ratelimit_init(&rl, 10.0, 3, 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(ratelimit_reserve(&rl, 0), 0);
	uint64_t wait = ratelimit_reserve(&rl, 0);
	cr_assert(wait > 99000 && wait <= 100001, "4th waits one token time (100ms), got %lu", wait);
	/* a second waiter queues behind the first */
	wait = ratelimit_reserve(&rl, 0);
	cr_assert(wait > 199000 && wait <= 200001, "got %lu", wait);
}

Test(ratelimit, tokens_refill_with_time_but_never_beyond_the_burst)
{
	struct ratelimit rl;
	ratelimit_init(&rl, 100.0, 2, 0);
	cr_assert_eq(ratelimit_reserve(&rl, 0), 0);
	cr_assert_eq(ratelimit_reserve(&rl, 0), 0);
	cr_assert_gt(ratelimit_reserve(&rl, 0), 0);
	/* ten seconds later: only 2 tokens, not 1000 */
	cr_assert_eq(ratelimit_reserve(&rl, 10000000), 0);
	cr_assert_eq(ratelimit_reserve(&rl, 10000000), 0);
	cr_assert_gt(ratelimit_reserve(&rl, 10000000), 0);
}

Test(ratelimit, zero_rate_means_unlimited)
{
	struct ratelimit rl;
	ratelimit_init(&rl, 0, 1, 0);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(ratelimit_reserve(&rl, 0), 0);
}

Test(ratelimit, a_caller_that_skips_when_refused_runs_up_no_debt)
{
	struct ratelimit rl;
	ratelimit_init(&rl, 1.0, 2, 0);
	cr_assert(ratelimit_try(&rl, 0));
	cr_assert(ratelimit_try(&rl, 0));
	/* a flood of refusals takes nothing from the bucket... */
	for (int i = 0; i < 1000; i++)
		cr_assert_not(ratelimit_try(&rl, 0));
	/* ...so one token time later the next caller goes */
	cr_assert_not(ratelimit_try(&rl, 999000));
	cr_assert(ratelimit_try(&rl, 1000000));
	cr_assert_not(ratelimit_try(&rl, 1000000));
}
