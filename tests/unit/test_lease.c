/* Leader election's decisions (common/lease.c), apart from the API: the
 * options client-go refuses, taking over, standing by, and the renew
 * deadline of a replica whose daemons (same identity) renew for each other. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/lease.h"

#define S 1000000ull

static const struct lease_options opts = {
	.name = "kanna-leader-election", .namespace = "kube-system", .identity = "replica-a",
	.duration_usec = 15 * S, .renew_deadline_usec = 10 * S, .retry_period_usec = 2 * S,
};

static int check(uint64_t duration, uint64_t renew, uint64_t retry, const char *identity,
		 char err[128])
{
	struct lease_options o = opts;

	o.duration_usec = duration;
	o.renew_deadline_usec = renew;
	o.retry_period_usec = retry;
	o.identity = identity;
	err[0] = 0;
	return lease_options_check(&o, err, 128);
}

Test(lease, client_go_defaults_are_accepted)
{
	char err[128];

	cr_assert_eq(check(15 * S, 10 * S, 2 * S, "a", err), 0, "%s", err);
	cr_assert_eq(check(6 * S, 4 * S, 1 * S, "a", err), 0, "%s", err);
}

Test(lease, a_renew_deadline_not_below_the_duration_is_refused)
{
	char err[128];

	cr_assert_eq(check(10 * S, 10 * S, 2 * S, "a", err), -EINVAL);
	cr_assert(strstr(err, "lease-duration must be greater than lease-renew-deadline"), "%s", err);
	cr_assert_eq(check(10 * S, 12 * S, 2 * S, "a", err), -EINVAL);
}

Test(lease, a_renew_deadline_within_the_jittered_retry_period_is_refused)
{
	char err[128];

	/* client-go: renewDeadline > JitterFactor (1.2) * retryPeriod. */
	cr_assert_eq(check(15 * S, 2400000, 2 * S, "a", err), -EINVAL);
	cr_assert(strstr(err, "lease-retry-period"), "%s", err);
	cr_assert_eq(check(15 * S, 2 * S, 3 * S, "a", err), -EINVAL);
	cr_assert_eq(check(15 * S, 2500000, 2 * S, "a", err), 0, "%s", err);
}

Test(lease, zero_times_and_an_empty_identity_are_refused)
{
	char err[128];

	cr_assert_eq(check(15 * S, 10 * S, 0, "a", err), -EINVAL);
	cr_assert_eq(check(15 * S, 10 * S, 2 * S, "", err), -EINVAL);
	cr_assert(strstr(err, "identity"), "%s", err);
	cr_assert_eq(check(15 * S, 10 * S, 2 * S, NULL, err), -EINVAL);
}

static const struct lease_seen theirs = { .held = true, .mine = false, .renew_age_usec = -1 };

Test(lease, a_free_lease_is_acquired)
{
	struct lease_memory m = { 0 };
	struct lease_seen free_lease = { .held = false, .changed = true, .renew_age_usec = -1 };

	cr_assert_eq(lease_decide(&opts, &m, &free_lease, 100 * S), LEASE_ACQUIRE);
}

Test(lease, a_live_holder_keeps_us_standing_by_while_it_renews)
{
	struct lease_memory m = { 0 };
	struct lease_seen s = theirs;
	uint64_t t;

	/* It renews every 2 s for a minute: each change restarts our clock. */
	for (t = 100 * S; t < 160 * S; t += 2 * S) {
		s.changed = true;
		cr_assert_eq(lease_decide(&opts, &m, &s, t), LEASE_STAND_BY, "at %llu s",
			     (unsigned long long)(t / S));
	}
	cr_assert_eq(m.observed_usec, 158 * S);
}

Test(lease, a_silent_holder_is_taken_over_after_the_lease_duration_of_our_clock)
{
	struct lease_memory m = { 0 };
	struct lease_seen s = theirs;

	s.changed = true;
	cr_assert_eq(lease_decide(&opts, &m, &s, 100 * S), LEASE_STAND_BY);
	s.changed = false;
	cr_assert_eq(lease_decide(&opts, &m, &s, 114 * S), LEASE_STAND_BY);
	cr_assert_eq(lease_decide(&opts, &m, &s, 115 * S), LEASE_STAND_BY);
	cr_assert_eq(lease_decide(&opts, &m, &s, 115 * S + 1), LEASE_ACQUIRE);
}

Test(lease, a_standby_looks_again_right_after_an_expiry_that_precedes_its_next_look)
{
	struct lease_memory m = { .observed_usec = 100 * S };
	uint64_t delay;

	/* Expiry at 115 s: far off, then due before the next look (2 s). */
	cr_assert_eq(lease_expiry_check_delay(&opts, &m, 110 * S), 0);
	cr_assert_eq(lease_expiry_check_delay(&opts, &m, 113 * S), 0);
	delay = lease_expiry_check_delay(&opts, &m, 113500000);
	cr_assert(delay > 1500000 && delay <= 1502000, "delay %llu µs", (unsigned long long)delay);
	/* Its look then finds it expired. */
	cr_assert_eq(lease_decide(&opts, &m, &theirs, 113500000 + delay), LEASE_ACQUIRE);
	/* Already expired: the look now decides, no timer. */
	cr_assert_eq(lease_expiry_check_delay(&opts, &m, 116 * S), 0);
}

Test(lease, ours_renewed_by_a_sibling_within_a_retry_period_needs_no_write)
{
	struct lease_memory m = { .leader = true, .observed_usec = 90 * S, .renewed_usec = 90 * S };
	struct lease_seen s = { .held = true, .mine = true, .changed = true,
				.renew_age_usec = 1500000 };

	cr_assert_eq(lease_decide(&opts, &m, &s, 100 * S), LEASE_SIBLING_RENEWED);
	/* Known renewed when the sibling wrote it, not when we read it. */
	cr_assert_eq(m.renewed_usec, 100 * S - 1500000);
}

Test(lease, ours_renewed_a_retry_period_ago_or_at_an_unknown_time_is_renewed)
{
	struct lease_memory m = { .leader = true, .renewed_usec = 90 * S };
	struct lease_seen s = { .held = true, .mine = true, .renew_age_usec = 2 * S };

	cr_assert_eq(lease_decide(&opts, &m, &s, 100 * S), LEASE_RENEW);
	s.renew_age_usec = -1; /* unparsable, or ahead of our clock */
	cr_assert_eq(lease_decide(&opts, &m, &s, 100 * S), LEASE_RENEW);
	/* Renewing ours needs no expiry: a stale Lease of ours is renewed too. */
	s.renew_age_usec = 60 * S;
	cr_assert_eq(lease_decide(&opts, &m, &s, 100 * S), LEASE_RENEW);
	cr_assert_eq(m.renewed_usec, 90 * S, "a write not yet made renews nothing");
}

Test(lease, a_restarted_daemon_of_the_leading_replica_leads_at_once)
{
	struct lease_memory fresh = { 0 };
	struct lease_seen s = { .held = true, .mine = true, .changed = true,
				.renew_age_usec = 300000 };

	cr_assert_eq(lease_decide(&opts, &fresh, &s, 5 * S), LEASE_SIBLING_RENEWED);
	fresh.leader = true; /* what lease.c does on LEASE_SIBLING_RENEWED */
	cr_assert_not(lease_renew_deadline_passed(&opts, &fresh, 5 * S));
	cr_assert_not(lease_renew_deadline_passed(&opts, &fresh, 14 * S));
}

/*
 * Three daemons of one replica: this one's writes all lose the race (409)
 * for a minute, but a sibling renews every 2 s, so the renew deadline never
 * passes. Then the siblings die and this one's writes keep failing: it
 * stops leading once the renew deadline has passed since the last renewal
 * it saw, before a standby replica (which saw that renewal too) may take
 * over — never two leaders.
 */
Test(lease, sibling_renewals_hold_the_renew_deadline_and_their_end_lets_it_pass_first)
{
	struct lease_memory m = { .leader = true, .renewed_usec = 100 * S };
	struct lease_memory standby = { 0 };
	struct lease_seen s = { .held = true, .mine = true, .changed = true };
	struct lease_seen to_standby = theirs;
	uint64_t t, last_renewal = 0, stopped = 0, standby_takes = 0;

	for (t = 101 * S; t <= 160 * S; t += 2 * S) {
		last_renewal = t - 700000; /* a sibling wrote 0.7 s before our read */
		s.renew_age_usec = (int64_t)(t - last_renewal);
		cr_assert_eq(lease_decide(&opts, &m, &s, t), LEASE_SIBLING_RENEWED);
		cr_assert_not(lease_renew_deadline_passed(&opts, &m, t), "at %llu s",
			      (unsigned long long)(t / S));
		to_standby.changed = true;
		cr_assert_eq(lease_decide(&opts, &standby, &to_standby, t), LEASE_STAND_BY);
	}
	/* The siblings are gone: the record stops changing; our reads see
	 * it growing older and our writes fail. */
	s.changed = to_standby.changed = false;
	for (; t <= 200 * S && (!stopped || !standby_takes); t += 100000) {
		s.renew_age_usec = (int64_t)(t - last_renewal);
		if (!stopped && lease_renew_deadline_passed(&opts, &m, t))
			stopped = t;
		if (!stopped)
			cr_assert_eq(lease_decide(&opts, &m, &s, t), LEASE_RENEW);
		if (!standby_takes && lease_decide(&opts, &standby, &to_standby, t) == LEASE_ACQUIRE)
			standby_takes = t;
	}
	cr_assert(stopped && standby_takes);
	cr_assert_leq(stopped, last_renewal + 10 * S + 100000, "stopped %llu µs after the last renewal",
		      (unsigned long long)(stopped - last_renewal));
	cr_assert_gt(stopped, last_renewal + 10 * S);
	cr_assert_lt(stopped, standby_takes, "the standby took over before the leader stopped");
}

Test(lease, a_standby_never_passes_a_renew_deadline)
{
	struct lease_memory m = { .leader = false, .renewed_usec = 0 };

	cr_assert_not(lease_renew_deadline_passed(&opts, &m, 1000 * S));
}
