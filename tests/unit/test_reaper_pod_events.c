/*
 * The last pod event of a NodeClaim (reaper/pod-events.h): what a reaper
 * takes from the NodeClaim's status.lastPodEventTime when it first sees it,
 * when the pods change, and when it writes the time back (Karpenter's 10 s
 * dedupe), on fake clocks: wall ms and monotonic usec apart.
 */
#include <criterion/criterion.h>

#include "reaper/pod-events.h"

/* 2026-11-27T13:05:07Z, and a monotonic clock that started long before. */
#define T0_MS 1795784707000LL
#define MONO0_USEC (1000ULL * 1000 * 1000 * 1000)

static struct pod_event_sight at(int64_t offset_ms, int64_t recorded_ms, uint64_t pods)
{
	return (struct pod_event_sight){ .recorded_ms = recorded_ms, .pods_hash = pods,
					 .now_ms = T0_MS + offset_ms,
					 .now_usec = MONO0_USEC + (uint64_t)offset_ms * 1000 };
}

static uint64_t age_s(const struct pod_event_clock *c, int64_t offset_ms)
{
	return pod_event_age_usec(c, MONO0_USEC + (uint64_t)offset_ms * 1000) / 1000000;
}

Test(pod_events, a_restarted_reaper_counts_from_the_recorded_event_not_from_its_start)
{
	struct pod_event_clock first = { 0 }, second = { 0 };
	struct pod_event_sight s = at(-60000, T0_MS - 60000, 1);

	cr_assert_not(pod_event_observe(&first, &s), "the record is the event: nothing to write");
	/* The node's pods leave at T0: recorded. */
	s = at(0, T0_MS - 60000, 2);
	cr_assert(pod_event_observe(&first, &s));
	cr_assert_eq(first.last_ms, T0_MS);
	/* Killed 8 s later; the next reaper reads T0 and counts from it. */
	s = at(8000, T0_MS, 2);
	cr_assert_not(pod_event_observe(&second, &s));
	cr_assert_eq(age_s(&second, 8000), 8, "counts from the record: %llu s",
		     (unsigned long long)age_s(&second, 8000));
	cr_assert_eq(age_s(&second, 31000), 31);
	cr_assert_eq(second.last_ms, T0_MS);
}

Test(pod_events, without_a_record_the_event_is_now_and_is_written_once)
{
	struct pod_event_clock c = { 0 };
	struct pod_event_sight s = at(400, 0, 7);

	cr_assert_eq(pod_event_age_usec(&c, MONO0_USEC), 0, "never looked at: no age");

	cr_assert(pod_event_observe(&c, &s));
	cr_assert_eq(c.last_ms, T0_MS + 1000, "whole seconds, rounded up: late, not early");
	cr_assert_eq(age_s(&c, 400), 0);
	c.patch_sent = true;
	s = at(500, 0, 7);
	cr_assert_not(pod_event_observe(&c, &s), "one PATCH in flight at a time");
	c.patch_sent = false;
	c.written_ms = c.last_ms;
	s = at(60000, 0, 7);
	cr_assert_not(pod_event_observe(&c, &s), "nothing changed");
	cr_assert_eq(age_s(&c, 60000), 59);
}

Test(pod_events, changes_inside_the_dedupe_window_are_written_once_it_ends_latest_first)
{
	struct pod_event_clock c = { 0 };
	struct pod_event_sight s = at(0, T0_MS, 1);

	cr_assert_not(pod_event_observe(&c, &s));
	s = at(20000, T0_MS, 2);
	cr_assert(pod_event_observe(&c, &s), "a change, the record 20 s old");
	cr_assert_eq(c.last_ms, T0_MS + 20000);
	c.written_ms = c.last_ms;
	s = at(23000, T0_MS + 20000, 3);
	cr_assert_not(pod_event_observe(&c, &s), "3 s after the last write");
	cr_assert_eq(age_s(&c, 23000), 0, "in memory at once");
	s = at(29000, T0_MS + 20000, 3);
	cr_assert_not(pod_event_observe(&c, &s));
	s = at(30000, T0_MS + 20000, 3);
	cr_assert(pod_event_observe(&c, &s), "the window is over");
	cr_assert_eq(c.last_ms, T0_MS + 23000, "the event's own time, not the write's");
}

Test(pod_events, a_pod_bound_while_no_reaper_ran_moves_the_record_to_its_bind_time)
{
	struct pod_event_clock c = { 0 };
	struct pod_event_sight s = at(60000, T0_MS, 5);

	s.newest_bind_ms = T0_MS + 45000;
	cr_assert(pod_event_observe(&c, &s));
	cr_assert_eq(c.last_ms, T0_MS + 45000);
	cr_assert_eq(age_s(&c, 60000), 15);
	/* A pod bound before the record changes nothing. */
	c = (struct pod_event_clock){ 0 };
	s.newest_bind_ms = T0_MS - 5000;
	cr_assert_not(pod_event_observe(&c, &s));
	cr_assert_eq(age_s(&c, 60000), 60);
}

Test(pod_events, pods_on_their_way_are_an_event_every_pass_written_once_they_stop_coming)
{
	struct pod_event_clock c = { 0 };
	struct pod_event_sight s = at(0, T0_MS - 600000, 0);

	cr_assert_not(pod_event_observe(&c, &s));
	cr_assert_eq(age_s(&c, 0), 600);
	for (int64_t t = 5000; t <= 65000; t += 500) {
		s = at(t, T0_MS - 600000, 0);
		s.nominated = true;
		cr_assert_not(pod_event_observe(&c, &s), "no write while they come (%lld ms)",
			      (long long)t);
		cr_assert_eq(age_s(&c, t), 0);
	}
	s = at(65500, T0_MS - 600000, 0);
	cr_assert(pod_event_observe(&c, &s), "they stopped coming: written");
	cr_assert_eq(c.last_ms, T0_MS + 65000, "the last pass that saw them coming");
	cr_assert_eq(age_s(&c, 65500), 0);
}

Test(pod_events, a_record_older_than_the_monotonic_clock_counts_from_its_start_not_below_zero)
{
	struct pod_event_clock c = { 0 };
	struct pod_event_sight s = { .recorded_ms = T0_MS - 3600000, .now_ms = T0_MS,
				     .now_usec = 5000000 };

	cr_assert_not(pod_event_observe(&c, &s));
	cr_assert_eq(pod_event_age_usec(&c, 5000000), 5000000);
	/* A record in the future (another node's clock): no negative age. */
	c = (struct pod_event_clock){ 0 };
	s = at(0, T0_MS + 30000, 1);
	cr_assert_not(pod_event_observe(&c, &s));
	cr_assert_eq(age_s(&c, 0), 0);
}
