/*
 * kanna-init's restart policy (init/backoff.c): the delay doubles from
 * restart-backoff-initial up to restart-backoff-max, resets once a daemon
 * ran stably for twice the maximum, and a daemon failing more than
 * give-up-after times within give-up-window makes init give up.
 */
#include <criterion/criterion.h>

#include "init/init.h"

#define SEC 1000000ULL

static const struct init_restart_policy policy = {
	.backoff_initial_usec = 1 * SEC,
	.backoff_max_usec = 300 * SEC,
	.give_up_after = 5,
	.give_up_window_usec = 600 * SEC,
};

Test(init_backoff, the_delay_doubles_from_the_initial_delay_up_to_the_maximum)
{
	cr_assert_eq(init_backoff_delay(&policy, 1), 1 * SEC);
	cr_assert_eq(init_backoff_delay(&policy, 2), 2 * SEC);
	cr_assert_eq(init_backoff_delay(&policy, 3), 4 * SEC);
	cr_assert_eq(init_backoff_delay(&policy, 9), 256 * SEC);
	cr_assert_eq(init_backoff_delay(&policy, 10), 300 * SEC, "capped at the maximum");
	cr_assert_eq(init_backoff_delay(&policy, 4000000000u), 300 * SEC, "no overflow");
}

Test(init_backoff, a_huge_maximum_does_not_overflow)
{
	struct init_restart_policy p = { .backoff_initial_usec = UINT64_MAX / 3,
					 .backoff_max_usec = UINT64_MAX };

	cr_assert_eq(init_backoff_delay(&p, 1), UINT64_MAX / 3);
	cr_assert_eq(init_backoff_delay(&p, 64), UINT64_MAX);
	cr_assert_eq(init_backoff_reset_usec(&p), UINT64_MAX);
}

Test(init_backoff, quick_failures_get_growing_delays)
{
	struct init_restarts r = { 0 };
	uint64_t now = 1000 * SEC, delay = 0;

	for (unsigned i = 0; i < 4; i++) {
		cr_assert_eq(init_restarts_record(&r, &policy, now, SEC / 10, &delay), 0);
		cr_assert_eq(delay, (1ULL << i) * SEC, "failure %u waits %llu us", i + 1,
			     (unsigned long long)delay);
		now += delay + SEC / 10;
	}
}

Test(init_backoff, a_daemon_that_ran_twice_the_maximum_starts_again_from_the_initial_delay)
{
	struct init_restart_policy p = policy;
	struct init_restarts r = { 0 };
	uint64_t now = 0, delay = 0;

	p.give_up_after = 0;
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(init_restarts_record(&r, &p, now += SEC, SEC, &delay), 0);
	cr_assert_eq(delay, 4 * SEC);
	cr_assert_eq(init_restarts_record(&r, &p, now += 599 * SEC, 599 * SEC, &delay), 0);
	cr_assert_eq(delay, 8 * SEC, "599 s is short of 2 x 5 m: still backing off");
	cr_assert_eq(init_restarts_record(&r, &p, now += 600 * SEC, 600 * SEC, &delay), 0);
	cr_assert_eq(delay, 1 * SEC, "600 s = 2 x 5 m of stable running resets the backoff");
}

Test(init_backoff, more_failures_than_give_up_after_within_the_window_give_up)
{
	struct init_restarts r = { 0 };
	uint64_t now = 0, delay = 0;

	for (unsigned i = 0; i < 5; i++)
		cr_assert_eq(init_restarts_record(&r, &policy, now += SEC, SEC, &delay), 0,
			     "failure %u of 5 is restarted", i + 1);
	cr_assert_eq(init_restarts_record(&r, &policy, now += SEC, SEC, &delay), 1,
		     "the 6th failure within 10 m gives up");
}

Test(init_backoff, failures_spread_wider_than_the_window_never_give_up)
{
	struct init_restarts r = { 0 };
	uint64_t now = 0, delay = 0;

	/* One failure every 2.5 minutes: 4 in any 10 minutes, never 6. */
	for (unsigned i = 0; i < 200; i++)
		cr_assert_eq(init_restarts_record(&r, &policy, now += 150 * SEC, 150 * SEC, &delay), 0,
			     "failure %u", i + 1);
	/* Five failures at 0 s: a sixth at 600 s is outside their window, at
	 * 599 s inside it. */
	struct init_restarts edge = { 0 }, inside;
	for (unsigned i = 0; i < 5; i++)
		cr_assert_eq(init_restarts_record(&edge, &policy, 0, 0, &delay), 0);
	inside = edge;
	cr_assert_eq(init_restarts_record(&edge, &policy, 600 * SEC, 0, &delay), 0,
		     "the window is [now - 10m, now): failures 10 m ago no longer count");
	cr_assert_eq(init_restarts_record(&inside, &policy, 599 * SEC, 0, &delay), 1,
		     "six failures within 599 s give up");
}

Test(init_backoff, give_up_after_zero_restarts_forever)
{
	struct init_restart_policy p = policy;
	struct init_restarts r = { 0 };
	uint64_t delay = 0;

	p.give_up_after = 0;
	for (unsigned i = 0; i < 1000; i++)
		cr_assert_eq(init_restarts_record(&r, &p, i, 0, &delay), 0);
	cr_assert_eq(delay, 300 * SEC);
}

Test(init_backoff, give_up_after_the_largest_setting_counts_every_failure_in_the_ring)
{
	struct init_restart_policy p = policy;
	struct init_restarts r = { 0 };
	uint64_t delay = 0;

	p.give_up_after = INIT_GIVE_UP_MAX;
	for (unsigned i = 0; i < INIT_GIVE_UP_MAX; i++)
		cr_assert_eq(init_restarts_record(&r, &p, i * SEC, 0, &delay), 0);
	cr_assert_eq(init_restarts_record(&r, &p, INIT_GIVE_UP_MAX * SEC, 0, &delay), 1);
}
