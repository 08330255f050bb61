/*
 * NodePool disruption budgets (model/budget.h) against Karpenter v1's
 * nodepool.go and robfig/cron v3: schedules parsed as robfig's standard
 * parser does, the last fire time on awkward dates (checked against a
 * minute-by-minute search built on libc's timegm), budget windows, the
 * allowed counts per reason, and the validation messages users see.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "model/budget.h"

#define HOUR 3600
#define DAY 86400

/* Unix seconds of a UTC date: libc, independent of the code under test. */
static int64_t utc(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
			 .tm_hour = h, .tm_min = mi, .tm_sec = s };

	return (int64_t)timegm(&tm);
}

static struct cron_schedule parsed(const char *expr)
{
	struct cron_schedule c;
	char err[256] = "";

	cr_assert_eq(cron_parse(expr, &c, err, sizeof(err)), 0, "%s: %s", expr, err);
	return c;
}

static int64_t prev(const char *expr, int64_t now)
{
	struct cron_schedule c = parsed(expr);
	int64_t t = -1;

	cr_assert_eq(cron_prev(&c, now, &t), 0, "%s has no fire time before %lld", expr,
		     (long long)now);
	return t;
}

/* The brute force cron_prev must agree with: every minute back from now,
 * the fields read by gmtime_r. */
static bool naive_matches(const struct cron_schedule *c, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	bool dom, dow;

	gmtime_r(&tt, &tm);
	dom = c->dom & (1u << tm.tm_mday);
	dow = c->dow & (1u << tm.tm_wday);
	return (c->minutes >> tm.tm_min & 1) && (c->hours >> tm.tm_hour & 1) &&
	       (c->months >> (tm.tm_mon + 1) & 1) &&
	       ((c->dom_star || c->dow_star) ? dom && dow : dom || dow);
}

static int64_t naive_prev(const struct cron_schedule *c, int64_t now, int64_t window)
{
	for (int64_t t = now - now % 60; t > now - window; t -= 60)
		if (naive_matches(c, t))
			return t;
	return INT64_MIN;
}

/* ---- parsing ------------------------------------------------------------ */

Test(cron, every_star_fires_at_every_value_and_is_a_star)
{
	struct cron_schedule c = parsed("* * * * *");

	cr_assert_eq(c.minutes, (UINT64_C(1) << 60) - 1);
	cr_assert_eq(c.hours, (1u << 24) - 1);
	cr_assert_eq(c.dom, 0xfffffffeu);
	cr_assert_eq(c.months, 0x1ffe);
	cr_assert_eq(c.dow, 0x7f);
	cr_assert(c.dom_star && c.dow_star);
}

Test(cron, lists_ranges_and_steps_select_those_values)
{
	struct cron_schedule c = parsed("0,30,45 1-5/2 */10 2,4-5 1-3,5");

	cr_assert_eq(c.minutes, (UINT64_C(1) << 0) | (UINT64_C(1) << 30) | (UINT64_C(1) << 45));
	cr_assert_eq(c.hours, (1u << 1) | (1u << 3) | (1u << 5));
	cr_assert_eq(c.dom, (1u << 1) | (1u << 11) | (1u << 21) | (1u << 31));
	cr_assert_eq(c.months, (1u << 2) | (1u << 4) | (1u << 5));
	cr_assert_eq(c.dow, (1u << 1) | (1u << 2) | (1u << 3) | (1u << 5));
	cr_assert(!c.dom_star && !c.dow_star);
}

Test(cron, a_single_value_with_a_step_runs_to_the_field_maximum)
{
	struct cron_schedule c = parsed("5/20 22/1 * * *");

	cr_assert_eq(c.minutes, (UINT64_C(1) << 5) | (UINT64_C(1) << 25) | (UINT64_C(1) << 45));
	cr_assert_eq(c.hours, (1u << 22) | (1u << 23));
}

Test(cron, month_and_weekday_names_are_case_insensitive)
{
	struct cron_schedule c = parsed("0 9 * jan-Mar,DEC MON-fri");

	cr_assert_eq(c.months, (1u << 1) | (1u << 2) | (1u << 3) | (1u << 12));
	cr_assert_eq(c.dow, 0x3e);
	cr_assert(c.dom_star && !c.dow_star);
	cr_assert_eq(parsed("0 0 * * sun").dow, 1);
	cr_assert_eq(parsed("0 0 * * SAT").dow, 1u << 6);
}

Test(cron, a_star_with_a_step_above_one_is_no_longer_a_star)
{
	cr_assert(!parsed("0 0 */2 * 1").dom_star);
	cr_assert(parsed("0 0 */1 * 1").dom_star);
	cr_assert(parsed("0 0 ? * 1").dom_star);
	cr_assert(!parsed("0 0 1-31 * 1").dom_star);
}

Test(cron, descriptors_are_their_five_field_equivalents)
{
	static const char *const pairs[][2] = {
		{ "@yearly", "0 0 1 1 *" },   { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
		{ "@weekly", "0 0 * * 0" },   { "@daily", "0 0 * * *" },    { "@midnight", "0 0 * * *" },
		{ "@hourly", "0 * * * *" },   { " @daily ", "0 0 * * *" },
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct cron_schedule a = parsed(pairs[i][0]), b = parsed(pairs[i][1]);

		cr_assert(a.minutes == b.minutes && a.hours == b.hours && a.dom == b.dom &&
			  a.months == b.months && a.dow == b.dow && a.dom_star == b.dom_star &&
			  a.dow_star == b.dow_star, "%s", pairs[i][0]);
	}
	cr_assert_neq(parsed("@hourly").hours, parsed("@daily").hours);
}

Test(cron, spaces_and_tabs_separate_fields)
{
	struct cron_schedule c = parsed("  0\t9   * *  1 ");

	cr_assert_eq(c.minutes, 1);
	cr_assert_eq(c.hours, 1u << 9);
	cr_assert_eq(c.dow, 1u << 1);
}

Test(cron, day_of_week_7_is_out_of_range_as_in_robfig)
{
	struct cron_schedule c;
	char err[256] = "";

	cr_assert_eq(cron_parse("0 0 * * 7", &c, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "day-of-week 7 out of range 0-6");
	cr_assert_eq(cron_parse("0 0 * * 5-7", &c, err, sizeof(err)), -EINVAL);
}

Test(cron, malformed_schedules_are_refused_with_the_reason)
{
	static const char *const cases[][2] = {
		{ "61 * * * *", "minute 61 out of range 0-59" },
		{ "* 24 * * *", "hour 24 out of range 0-23" },
		{ "* * 0 * *", "day-of-month 0 out of range 1-31" },
		{ "* * 32 * *", "day-of-month 32 out of range 1-31" },
		{ "* * * 13 *", "month 13 out of range 1-12" },
		{ "70/5 * * * *", "minute 70 out of range 0-59" },
		{ "1-99999999 * * * *", "minute 99999999 out of range 0-59" },
		{ "5-3 * * * *", "minute range 5-3 is backwards" },
		{ "*/0 * * * *", "minute step 0 in \"*/0\" must be positive" },
		{ "*/x * * * *", "minute step \"x\" is not a number" },
		{ "1-2-3 * * * *", "minute \"1-2-3\" has too many hyphens" },
		{ "*/2/3 * * * *", "minute \"*/2/3\" has too many slashes" },
		{ "x * * * *", "minute \"x\" is not a number" },
		{ "-5 * * * *", "minute has an empty value" },
		{ "* * * foo *", "month \"foo\" is not a number or a name" },
		{ "* * * * monday", "day-of-week \"monday\" is not a number or a name" },
		{ ", * * * *", "minute \",\" has no values" },
		{ "* * * *",
		  "expected exactly 5 fields (minute hour day-of-month month day-of-week), found 4" },
		{ "0 * * * * *",
		  "expected exactly 5 fields (minute hour day-of-month month day-of-week), found 6" },
		{ "TZ=Asia/Tokyo 0 9 * * *",
		  "expected exactly 5 fields (minute hour day-of-month month day-of-week), found 6" },
		{ "", "expected exactly 5 fields (minute hour day-of-month month day-of-week), found 0" },
		{ "@every 1h", "unknown descriptor \"@every 1h\" (expected @yearly, @annually, "
			       "@monthly, @weekly, @daily, @midnight or @hourly)" },
		{ "@Hourly", "unknown descriptor \"@Hourly\" (expected @yearly, @annually, "
			     "@monthly, @weekly, @daily, @midnight or @hourly)" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cron_schedule c;
		char err[256] = "";

		cr_assert_eq(cron_parse(cases[i][0], &c, err, sizeof(err)), -EINVAL, "%s", cases[i][0]);
		cr_assert_str_eq(err, cases[i][1], "%s", cases[i][0]);
	}
}

Test(cron, an_error_may_go_nowhere_or_be_cut_short)
{
	struct cron_schedule c;
	char err[8];

	cr_assert_eq(cron_parse("61 * * * *", &c, NULL, 0), -EINVAL);
	cr_assert_eq(cron_parse("61 * * * *", &c, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "minute ");
}

/* ---- the last fire time ------------------------------------------------- */

Test(cron_prev, a_schedule_that_fired_a_minute_ago_vs_one_that_fires_in_a_minute)
{
	cr_assert_eq(prev("30 10 * * *", utc(2025, 6, 12, 10, 31, 0)), utc(2025, 6, 12, 10, 30, 0));
	cr_assert_eq(prev("30 10 * * *", utc(2025, 6, 12, 10, 29, 0)), utc(2025, 6, 11, 10, 30, 0));
}

Test(cron_prev, an_earlier_hour_is_searched_from_its_last_minute)
{
	cr_assert_eq(prev("45 9-17 * * *", utc(2025, 6, 12, 10, 31, 0)), utc(2025, 6, 12, 9, 45, 0));
	cr_assert_eq(prev("45 9-17 * * *", utc(2025, 6, 12, 9, 31, 0)), utc(2025, 6, 11, 17, 45, 0));
}

Test(cron_prev, the_fire_minute_itself_counts_to_its_last_second)
{
	cr_assert_eq(prev("30 10 * * *", utc(2025, 6, 12, 10, 30, 0)), utc(2025, 6, 12, 10, 30, 0));
	cr_assert_eq(prev("30 10 * * *", utc(2025, 6, 12, 10, 30, 59)), utc(2025, 6, 12, 10, 30, 0));
}

Test(cron_prev, month_ends_skip_months_without_the_day)
{
	/* April has no 31st: back to March. */
	cr_assert_eq(prev("0 0 31 * *", utc(2025, 5, 15, 0, 0, 0)), utc(2025, 3, 31, 0, 0, 0));
	cr_assert_eq(prev("59 23 * * *", utc(2025, 3, 1, 0, 0, 30)), utc(2025, 2, 28, 23, 59, 0));
	cr_assert_eq(prev("0 0 1 1 *", utc(2025, 1, 1, 0, 0, 0)), utc(2025, 1, 1, 0, 0, 0));
	cr_assert_eq(prev("0 0 1 1 *", utc(2024, 12, 31, 23, 59, 0)), utc(2024, 1, 1, 0, 0, 0));
	cr_assert_eq(prev("@monthly", utc(2025, 3, 1, 0, 0, 0) - 1), utc(2025, 2, 1, 0, 0, 0));
}

Test(cron_prev, a_leap_day_schedule_reaches_back_four_years)
{
	cr_assert_eq(prev("0 0 29 2 *", utc(2029, 6, 1, 0, 0, 0)), utc(2028, 2, 29, 0, 0, 0));
	cr_assert_eq(prev("0 0 29 2 *", utc(2028, 2, 28, 23, 59, 0)), utc(2024, 2, 29, 0, 0, 0));
	cr_assert_eq(prev("0 12 * * *", utc(2028, 3, 1, 6, 0, 0)), utc(2028, 2, 29, 12, 0, 0));
}

Test(cron_prev, a_restricted_day_of_month_or_day_of_week_fires_on_either)
{
	/* Thursday 2025-06-12: the 13th of May or last Friday, the 6th. */
	cr_assert_eq(prev("0 0 13 * 5", utc(2025, 6, 12, 12, 0, 0)), utc(2025, 6, 6, 0, 0, 0));
	/* Wednesday 2025-05-14: the 13th, a Tuesday, counts. */
	cr_assert_eq(prev("0 0 13 * 5", utc(2025, 5, 14, 12, 0, 0)), utc(2025, 5, 13, 0, 0, 0));
	/* Either field a star: both must match. */
	cr_assert_eq(prev("0 0 13 * *", utc(2025, 6, 12, 12, 0, 0)), utc(2025, 5, 13, 0, 0, 0));
	cr_assert_eq(prev("0 0 * * 5", utc(2025, 5, 14, 12, 0, 0)), utc(2025, 5, 9, 0, 0, 0));
	/* A stepped day-of-month is no star: odd days or Fridays. */
	cr_assert_eq(prev("0 0 */2 * 5", utc(2025, 6, 12, 12, 0, 0)), utc(2025, 6, 11, 0, 0, 0));
}

Test(cron_prev, weekly_fires_at_midnight_on_sunday)
{
	cr_assert_eq(prev("@weekly", utc(2025, 6, 12, 9, 0, 0)), utc(2025, 6, 8, 0, 0, 0));
	cr_assert_eq(prev("@weekly", utc(2025, 6, 8, 0, 0, 0)), utc(2025, 6, 8, 0, 0, 0));
	cr_assert_eq(prev("@weekly", utc(2025, 6, 7, 23, 59, 59)), utc(2025, 6, 1, 0, 0, 0));
}

Test(cron_prev, a_schedule_that_never_fires_has_no_previous_time)
{
	struct cron_schedule c = parsed("0 0 30 2 *");
	int64_t t = 42;

	cr_assert_eq(cron_prev(&c, utc(2025, 6, 12, 0, 0, 0), &t), -ENOENT);
	cr_assert_eq(t, 42);
}

Test(cron_prev, agrees_with_a_minute_by_minute_search)
{
	static const char *const exprs[] = {
		"*/7 3-5 * * *", "15,45 */6 1,15 * 1-5", "@monthly", "59 23 31 * *",
		"45 9-17 * * MON-FRI", "*/13 * 29 2 *", "0 0 * * 0", "1-5/2 22 */3 jan,jul *",
	};
	const int64_t starts[] = {
		utc(2025, 1, 1, 0, 0, 0),   utc(2024, 2, 29, 23, 59, 30), utc(2025, 6, 12, 10, 31, 7),
		utc(2027, 12, 31, 23, 0, 0), utc(2028, 3, 1, 0, 0, 0),    utc(1970, 1, 3, 0, 0, 0),
	};
	const int64_t window = 62 * DAY;

	for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
		struct cron_schedule c = parsed(exprs[e]);

		for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
			int64_t want = naive_prev(&c, starts[s], window), got = -1;
			int r = cron_prev(&c, starts[s], &got);

			if (want == INT64_MIN) /* not in the window: only check it is earlier */
				cr_assert(r == -ENOENT || got <= starts[s] - window, "%s at %lld: got %lld",
					  exprs[e], (long long)starts[s], (long long)got);
			else
				cr_assert(r == 0 && got == want, "%s at %lld: got %lld want %lld",
					  exprs[e], (long long)starts[s], (long long)got,
					  (long long)want);
		}
	}
}

/* ---- budget windows ----------------------------------------------------- */

static bool active(const char *schedule, int64_t duration_s, int64_t now)
{
	struct proto_budget b = { .nodes = "1", .schedule = (char *)schedule,
				  .duration_s = duration_s };
	char err[256] = "";
	bool on = false;

	cr_assert_eq(budget_is_active(&b, now, &on, err, sizeof(err)), 0, "%s", err);
	return on;
}

Test(budget_window, a_budget_without_a_schedule_is_always_active)
{
	cr_assert(active(NULL, 0, utc(2025, 6, 12, 3, 0, 0)));
}

Test(budget_window, opens_at_the_fire_time_and_closes_after_the_duration)
{
	cr_assert(!active("0 9 * * *", 8 * HOUR, utc(2025, 6, 12, 8, 59, 59)));
	cr_assert(active("0 9 * * *", 8 * HOUR, utc(2025, 6, 12, 9, 0, 0)));
	cr_assert(active("0 9 * * *", 8 * HOUR, utc(2025, 6, 12, 12, 0, 0)));
	cr_assert(active("0 9 * * *", 8 * HOUR, utc(2025, 6, 12, 16, 59, 59)));
	cr_assert(!active("0 9 * * *", 8 * HOUR, utc(2025, 6, 12, 17, 0, 0)));
}

Test(budget_window, a_window_may_run_past_midnight_and_fires_overlap)
{
	cr_assert(active("0 22 * * *", 4 * HOUR, utc(2025, 6, 13, 1, 30, 0)));
	cr_assert(!active("0 22 * * *", 4 * HOUR, utc(2025, 6, 13, 2, 0, 0)));
	cr_assert(active("0 * * * *", 2 * HOUR, utc(2025, 6, 13, 7, 59, 59)));
}

Test(budget_window, a_schedule_that_never_fires_is_active_as_upstream)
{
	/* robfig's Next finds nothing, returns the zero time, and IsActive
	 * reads "not after now" as a hit. */
	cr_assert(active("0 0 30 2 *", HOUR, utc(2025, 6, 12, 0, 0, 0)));
}

/* ---- allowed disruptions ------------------------------------------------ */

static uint32_t allowed(const struct proto_budget *b, uint32_t n, const char *reason, int64_t now,
			uint32_t total, uint32_t disrupting)
{
	uint32_t ret = 12345;
	char err[256] = "";

	cr_assert_eq(budget_allowed_disruptions(b, n, reason, now, total, disrupting, &ret, err,
						sizeof(err)), 0, "%s", err);
	return ret;
}

static const int64_t thursday_noon = 1749729600; /* 2025-06-12T12:00:00Z */

Test(budget_allowed, no_budgets_default_to_ten_percent_rounded_up)
{
	cr_assert_eq(thursday_noon, utc(2025, 6, 12, 12, 0, 0));
	cr_assert_eq(allowed(NULL, 0, "Empty", thursday_noon, 25, 0), 3);
	cr_assert_eq(allowed(NULL, 0, "Drifted", thursday_noon, 10, 0), 1);
	cr_assert_eq(allowed(NULL, 0, "Drifted", thursday_noon, 0, 0), 0);
}

Test(budget_allowed, a_percentage_budget_rounds_up)
{
	struct proto_budget five = { .nodes = "5%" }, half = { .nodes = "50%" },
			    none = { .nodes = "0%" }, all = { .nodes = "100%" };

	cr_assert_eq(allowed(&five, 1, "Empty", thursday_noon, 10, 0), 1);
	cr_assert_eq(allowed(&five, 1, "Empty", thursday_noon, 40, 0), 2);
	cr_assert_eq(allowed(&five, 1, "Empty", thursday_noon, 41, 0), 3);
	cr_assert_eq(allowed(&half, 1, "Empty", thursday_noon, 3, 0), 2);
	cr_assert_eq(allowed(&none, 1, "Empty", thursday_noon, 100, 0), 0);
	cr_assert_eq(allowed(&all, 1, "Empty", thursday_noon, 7, 0), 7);
}

Test(budget_allowed, a_zero_budget_blocks_disruption)
{
	struct proto_budget zero = { .nodes = "0" };

	cr_assert_eq(allowed(&zero, 1, "Underutilized", thursday_noon, 50, 0), 0);
}

Test(budget_allowed, two_active_budgets_take_the_minimum)
{
	struct proto_budget b[] = { { .nodes = "20%" }, { .nodes = "5" } };

	cr_assert_eq(allowed(b, 2, "Empty", thursday_noon, 50, 0), 5);
	cr_assert_eq(allowed(b, 2, "Empty", thursday_noon, 20, 0), 4);
}

Test(budget_allowed, a_budget_with_reasons_applies_only_to_them)
{
	char *drifted[] = { "Drifted" };
	struct proto_budget b[] = {
		{ .nodes = "0", .reasons = drifted, .n_reasons = 1 },
		{ .nodes = "10" },
	};

	cr_assert_eq(allowed(b, 2, "Drifted", thursday_noon, 50, 0), 0);
	cr_assert_eq(allowed(b, 2, "Empty", thursday_noon, 50, 0), 10);
	cr_assert_eq(allowed(b, 2, "Underutilized", thursday_noon, 50, 0), 10);
}

Test(budget_allowed, nodes_already_disrupting_are_subtracted_down_to_zero)
{
	struct proto_budget three = { .nodes = "3" };

	cr_assert_eq(allowed(&three, 1, "Empty", thursday_noon, 30, 1), 2);
	cr_assert_eq(allowed(&three, 1, "Empty", thursday_noon, 30, 3), 0);
	cr_assert_eq(allowed(&three, 1, "Empty", thursday_noon, 30, 5), 0);
}

Test(budget_allowed, an_inactive_scheduled_budget_leaves_disruption_unlimited)
{
	/* No disruption during working hours on weekdays. */
	struct proto_budget b = { .nodes = "0", .schedule = "0 9 * * mon-fri",
				  .duration_s = 8 * HOUR };

	cr_assert_eq(allowed(&b, 1, "Empty", utc(2025, 6, 14, 12, 0, 0), 25, 0), 25);
	cr_assert_eq(allowed(&b, 1, "Empty", utc(2025, 6, 12, 8, 0, 0), 25, 0), 25);
	cr_assert_eq(allowed(&b, 1, "Empty", thursday_noon, 25, 0), 0);
}

Test(budget_allowed, no_budget_for_the_reason_leaves_it_unlimited)
{
	char *drifted[] = { "Drifted" };
	struct proto_budget b = { .nodes = "1", .reasons = drifted, .n_reasons = 1 };

	cr_assert_eq(allowed(&b, 1, "Empty", thursday_noon, 25, 0), 25);
	cr_assert_eq(allowed(&b, 1, "Drifted", thursday_noon, 25, 0), 1);
}

Test(budget_allowed, a_malformed_budget_blocks_every_reason)
{
	char *drifted[] = { "Drifted" };
	struct proto_budget b[] = {
		{ .nodes = "10" },
		{ .nodes = "1", .schedule = "61 * * * *", .duration_s = HOUR,
		  .reasons = drifted, .n_reasons = 1 },
	};
	uint32_t ret = 99;
	char err[256] = "";

	cr_assert_eq(budget_allowed_disruptions(b, 2, "Empty", thursday_noon, 50, 0, &ret, err,
						sizeof(err)), -EINVAL);
	cr_assert_eq(ret, 0);
	cr_assert_str_eq(err, "spec.disruption.budgets[1].schedule: \"61 * * * *\": minute 61 out "
			      "of range 0-59");
}

/* ---- the binding budget ------------------------------------------------- */

static struct budget_binding binding(const struct proto_budget *b, uint32_t n, const char *reason,
				     int64_t now, uint32_t total)
{
	struct budget_binding ret = { .index = 99 };
	char err[256] = "";

	cr_assert_eq(budget_binding_find(b, n, reason, now, total, &ret, err, sizeof(err)), 0,
		     "%s", err);
	return ret;
}

Test(budget_binding, the_budget_with_the_fewest_nodes_binds)
{
	struct proto_budget b[] = { { .nodes = "20%" }, { .nodes = "5" }, { .nodes = "3" } };
	struct budget_binding got = binding(b, 3, "Empty", thursday_noon, 50);

	cr_assert_eq(got.index, 2);
	cr_assert_eq(got.nodes, 3);
	/* 20% of 10 nodes is 2, fewer than 3 or 5. */
	got = binding(b, 3, "Empty", thursday_noon, 10);
	cr_assert_eq(got.index, 0);
	cr_assert_eq(got.nodes, 2);
}

Test(budget_binding, on_a_tie_the_first_listed_binds)
{
	struct proto_budget b[] = { { .nodes = "10" }, { .nodes = "50%" }, { .nodes = "5" } };
	struct budget_binding got = binding(b, 3, "Drifted", thursday_noon, 10);

	cr_assert_eq(got.index, 1, "50%% of 10 and 5 tie at 5; got budgets[%d]", got.index);
	cr_assert_eq(got.nodes, 5);
}

Test(budget_binding, budgets_for_other_reasons_or_closed_windows_never_bind)
{
	char *drifted[] = { "Drifted" };
	struct proto_budget b[] = {
		{ .nodes = "0", .reasons = drifted, .n_reasons = 1 },
		{ .nodes = "0", .schedule = "0 9 * * mon-fri", .duration_s = 8 * HOUR },
		{ .nodes = "4" },
	};

	/* Saturday noon: the weekday window is closed. */
	cr_assert_eq(binding(b, 3, "Empty", utc(2025, 6, 14, 12, 0, 0), 10).index, 2);
	cr_assert_eq(binding(b, 3, "Empty", thursday_noon, 10).index, 1);
	cr_assert_eq(binding(b, 3, "Drifted", utc(2025, 6, 14, 12, 0, 0), 10).index, 0);
}

Test(budget_binding, a_scheduled_budget_reports_the_window_it_is_open_in)
{
	struct proto_budget b = { .nodes = "0", .schedule = "0 9 * * mon-fri", .duration_s = 8 * HOUR };
	struct budget_binding got = binding(&b, 1, "Underutilized", thursday_noon, 4);

	cr_assert_eq(got.index, 0);
	cr_assert_eq(got.window_start, utc(2025, 6, 12, 9, 0, 0));
	cr_assert_eq(got.window_end, utc(2025, 6, 12, 17, 0, 0));
	got = binding(&(struct proto_budget){ .nodes = "1" }, 1, "Empty", thursday_noon, 4);
	cr_assert_eq(got.window_start, 0);
	cr_assert_eq(got.window_end, 0);
}

Test(budget_binding, none_active_is_unlimited_and_no_budgets_is_the_default)
{
	struct proto_budget b = { .nodes = "0", .schedule = "0 9 * * mon-fri", .duration_s = 8 * HOUR };

	cr_assert_eq(binding(&b, 1, "Empty", utc(2025, 6, 14, 12, 0, 0), 7).index, BUDGET_BINDING_NONE);
	cr_assert_eq(binding(NULL, 0, "Empty", thursday_noon, 25).index, BUDGET_BINDING_DEFAULT);
	cr_assert_eq(binding(NULL, 0, "Empty", thursday_noon, 25).nodes, 3);
}

Test(budget_binding, the_binding_budget_sets_the_allowed_count)
{
	/* Each of the three binds somewhere over these totals and hours. */
	struct proto_budget b[] = {
		{ .nodes = "30%" },
		{ .nodes = "2" },
		{ .nodes = "1", .schedule = "0 9 * * mon-fri", .duration_s = 8 * HOUR },
	};
	bool bound[3] = { false };

	for (uint32_t total = 0; total <= 20; total++)
		for (int64_t now = thursday_noon - 6 * HOUR; now <= thursday_noon + 6 * HOUR;
		     now += HOUR) {
			struct budget_binding got = binding(b, 3, "Empty", now, total);

			cr_assert(got.index >= 0 && got.index < 3, "budgets[%d]", got.index);
			bound[got.index] = true;
			cr_assert_eq(allowed(b, 3, "Empty", now, total, 0), got.nodes, "total %u",
				     total);
			if (total)
				cr_assert_eq(allowed(b, 3, "Empty", now, total, 1), got.nodes - 1);
		}
	cr_assert(bound[0] && bound[1] && bound[2]);
}

Test(budget_binding, a_malformed_budget_is_an_error)
{
	struct proto_budget b[] = { { .nodes = "10" }, { .nodes = "ten" } };
	struct budget_binding got;
	char err[256] = "";

	cr_assert_eq(budget_binding_find(b, 2, "Empty", thursday_noon, 5, &got, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "budgets[1].nodes"), "%s", err);
}

Test(budget_binding, the_description_names_the_budget_its_reasons_and_window)
{
	char *reasons[] = { "Underutilized", "Drifted" };
	struct proto_budget b[] = {
		{ .nodes = "50%" },
		{ .nodes = "0", .schedule = "30 8 * * *", .duration_s = 90 * 60, .reasons = reasons,
		  .n_reasons = 2 },
	};
	struct budget_binding got = binding(b, 2, "Underutilized", utc(2025, 6, 12, 9, 0, 0), 4);
	char buf[512];

	budget_binding_describe(b, &got, 4, buf, sizeof(buf));
	cr_assert_str_eq(buf, "budgets[1] (nodes \"0\", reasons [Underutilized, Drifted], schedule "
			      "\"30 8 * * *\", duration 1h30m, window 2025-06-12T08:30:00Z to "
			      "2025-06-12T10:00:00Z) allows 0 of 4 node(s)");
	got = binding(b, 2, "Empty", utc(2025, 6, 12, 9, 0, 0), 3);
	budget_binding_describe(b, &got, 3, buf, sizeof(buf));
	cr_assert_str_eq(buf, "budgets[0] (nodes \"50%\") allows 2 of 3 node(s)");
	got = binding(NULL, 0, "Empty", thursday_noon, 4);
	budget_binding_describe(NULL, &got, 4, buf, sizeof(buf));
	cr_assert_str_eq(buf, "the default budget (nodes \"10%\") allows 1 of 4 node(s)");
	/* Cut short, still a string. */
	got = binding(b, 2, "Underutilized", utc(2025, 6, 12, 9, 0, 0), 4);
	budget_binding_describe(b, &got, 4, buf, 20);
	cr_assert_eq(strlen(buf), 19);
}

/* ---- validation --------------------------------------------------------- */

static const char *invalid(const struct proto_budget *b, uint32_t index)
{
	static char err[256];

	err[0] = 0;
	cr_assert_eq(budget_validate(b, index, err, sizeof(err)), -EINVAL, "budget passed");
	return err;
}

Test(budget_validate, well_formed_budgets_pass)
{
	char *all[] = { "Underutilized", "Empty", "Drifted" };
	const struct proto_budget ok[] = {
		{ .nodes = "10%" }, { .nodes = "100%" }, { .nodes = "0" }, { .nodes = "05%" },
		{ .nodes = "1000" },
		{ .nodes = "0", .schedule = "@daily", .duration_s = 10 * HOUR },
		{ .nodes = "1", .schedule = "0 9 * * 1-5", .duration_s = 90 * 60, .reasons = all,
		  .n_reasons = 3 },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char err[256] = "";

		cr_assert_eq(budget_validate(&ok[i], (uint32_t)i, err, sizeof(err)), 0, "%s", err);
	}
}

Test(budget_validate, nodes_must_be_a_count_or_a_percentage_up_to_100)
{
	struct proto_budget b = { .nodes = "abc" };

	cr_assert_str_eq(invalid(&b, 0),
			 "spec.disruption.budgets[0].nodes: \"abc\" is neither a count nor a percentage");
	b.nodes = "-1";
	cr_assert_str_eq(invalid(&b, 2),
			 "spec.disruption.budgets[2].nodes: \"-1\" is neither a count nor a percentage");
	b.nodes = "%";
	cr_assert_str_eq(invalid(&b, 0),
			 "spec.disruption.budgets[0].nodes: \"%\" is neither a count nor a percentage");
	b.nodes = "101%";
	cr_assert_str_eq(invalid(&b, 0),
			 "spec.disruption.budgets[0].nodes: \"101%\" is not a percentage from 0% to 100%");
	b.nodes = "007%";
	cr_assert_str_eq(invalid(&b, 0),
			 "spec.disruption.budgets[0].nodes: \"007%\" is not a percentage from 0% to 100%");
	b.nodes = "99999999999999999999";
	cr_assert_str_eq(invalid(&b, 0), "spec.disruption.budgets[0].nodes: "
					 "\"99999999999999999999\" is too large a count");
	b.nodes = NULL;
	cr_assert_str_eq(invalid(&b, 0), "spec.disruption.budgets[0].nodes: is required");
}

Test(budget_validate, a_bad_schedule_names_the_budget_and_the_cron_error)
{
	struct proto_budget b = { .nodes = "1", .schedule = "61 * * * *", .duration_s = HOUR };

	cr_assert_str_eq(invalid(&b, 1), "spec.disruption.budgets[1].schedule: \"61 * * * *\": "
					 "minute 61 out of range 0-59");
}

Test(budget_validate, schedule_and_duration_come_together)
{
	struct proto_budget b = { .nodes = "1", .schedule = "@daily" };

	cr_assert_str_eq(invalid(&b, 0),
			 "spec.disruption.budgets[0].duration: required when schedule is set");
	b = (struct proto_budget){ .nodes = "1", .duration_s = HOUR };
	cr_assert_str_eq(invalid(&b, 3),
			 "spec.disruption.budgets[3].schedule: required when duration is set");
}

Test(budget_validate, duration_is_positive_whole_minutes)
{
	struct proto_budget b = { .nodes = "1", .schedule = "@daily", .duration_s = -60 };

	cr_assert_str_eq(invalid(&b, 0), "spec.disruption.budgets[0].duration: -60s is negative");
	b.duration_s = -1; /* "Never" */
	cr_assert_str_eq(invalid(&b, 0), "spec.disruption.budgets[0].duration: -1s is negative");
	b.duration_s = 90;
	cr_assert_str_eq(invalid(&b, 0),
			 "spec.disruption.budgets[0].duration: 90s is not a whole number of minutes");
}

Test(budget_validate, reasons_are_the_crd_enum_once_each)
{
	char *unknown[] = { "Empty", "Expired" }, *lower[] = { "empty" },
	     *twice[] = { "Empty", "Drifted", "Empty" };
	struct proto_budget b = { .nodes = "1", .reasons = unknown, .n_reasons = 2 };

	cr_assert_str_eq(invalid(&b, 0), "spec.disruption.budgets[0].reasons[1]: \"Expired\" is "
					 "not Underutilized, Empty or Drifted");
	b.reasons = lower, b.n_reasons = 1;
	cr_assert_str_eq(invalid(&b, 0), "spec.disruption.budgets[0].reasons[0]: \"empty\" is "
					 "not Underutilized, Empty or Drifted");
	b.reasons = twice, b.n_reasons = 3;
	cr_assert_str_eq(invalid(&b, 4),
			 "spec.disruption.budgets[4].reasons[2]: \"Empty\" is listed twice");
}
