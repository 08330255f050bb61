/* Metrics registry: exposition format, label handling, limits, threads. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/metrics.h"

static struct metrics_registry *reg;

static void setup(void)
{
	cr_assert_eq(metrics_registry_new(&reg), 0);
}

static void teardown(void)
{
	metrics_registry_free(reg);
}

TestSuite(metrics, .init = setup, .fini = teardown);

static char *render(void)
{
	char *text;
	size_t len;
	cr_assert_eq(metrics_registry_render(reg, &text, &len), 0);
	cr_assert_eq(strlen(text), len);
	return text;
}

static void assert_rendered(const char *expected)
{
	char *text = render();
	cr_assert_str_eq(text, expected);
	free(text);
}

Test(metrics, renders_counters_and_gauges_sorted_by_name_then_label_values)
{
	struct metrics_counter *c;
	struct metrics_gauge *g;

	cr_assert_eq(metrics_counter_new(reg, &c, "karpenter_nodeclaims_created_total",
					 "Number of nodeclaims created.", "reason", "nodepool",
					 NULL), 0);
	cr_assert_eq(metrics_gauge_new(reg, &g, "karpenter_nodepools_usage",
				       "Resources used by a nodepool.", "nodepool",
				       "resource_type", NULL), 0);
	cr_assert_eq(metrics_counter_add(c, 1, "provisioned", "spot", NULL), 0);
	cr_assert_eq(metrics_counter_add(c, 2, "provisioned", "default", NULL), 0);
	cr_assert_eq(metrics_counter_add(c, 0.5, "expired", "default", NULL), 0);
	cr_assert_eq(metrics_gauge_set(g, 16, "default", "cpu", NULL), 0);
	cr_assert_eq(metrics_gauge_add(g, -4, "default", "cpu", NULL), 0);
	cr_assert_eq(metrics_gauge_set(g, 6.8719476736e10, "default", "memory", NULL), 0);

	assert_rendered(
		"# HELP karpenter_nodeclaims_created_total Number of nodeclaims created.\n"
		"# TYPE karpenter_nodeclaims_created_total counter\n"
		"karpenter_nodeclaims_created_total{reason=\"expired\",nodepool=\"default\"} 0.5\n"
		"karpenter_nodeclaims_created_total{reason=\"provisioned\",nodepool=\"default\"} 2\n"
		"karpenter_nodeclaims_created_total{reason=\"provisioned\",nodepool=\"spot\"} 1\n"
		"# HELP karpenter_nodepools_usage Resources used by a nodepool.\n"
		"# TYPE karpenter_nodepools_usage gauge\n"
		"karpenter_nodepools_usage{nodepool=\"default\",resource_type=\"cpu\"} 12\n"
		"karpenter_nodepools_usage{nodepool=\"default\",resource_type=\"memory\"} 68719476736\n");
}

Test(metrics, renders_histogram_buckets_cumulative_with_inf_sum_and_count)
{
	static const double bounds[] = { 0.1, 1, 2.5 };
	struct metrics_histogram *h;

	cr_assert_eq(metrics_histogram_new(reg, &h, "karpenter_scheduler_scheduling_duration_seconds",
					   "Duration of scheduling simulations.", bounds, 3,
					   "nodepool", NULL), 0);
	cr_assert_eq(metrics_histogram_observe(h, 0.05, "default", NULL), 0);
	cr_assert_eq(metrics_histogram_observe(h, 1, "default", NULL), 0); /* le is inclusive */
	cr_assert_eq(metrics_histogram_observe(h, 0.75, "default", NULL), 0);
	cr_assert_eq(metrics_histogram_observe(h, 30, "default", NULL), 0);

	assert_rendered(
		"# HELP karpenter_scheduler_scheduling_duration_seconds Duration of scheduling simulations.\n"
		"# TYPE karpenter_scheduler_scheduling_duration_seconds histogram\n"
		"karpenter_scheduler_scheduling_duration_seconds_bucket{nodepool=\"default\",le=\"0.1\"} 1\n"
		"karpenter_scheduler_scheduling_duration_seconds_bucket{nodepool=\"default\",le=\"1\"} 3\n"
		"karpenter_scheduler_scheduling_duration_seconds_bucket{nodepool=\"default\",le=\"2.5\"} 3\n"
		"karpenter_scheduler_scheduling_duration_seconds_bucket{nodepool=\"default\",le=\"+Inf\"} 4\n"
		"karpenter_scheduler_scheduling_duration_seconds_sum{nodepool=\"default\"} 31.8\n"
		"karpenter_scheduler_scheduling_duration_seconds_count{nodepool=\"default\"} 4\n");
}

Test(metrics, unlabelled_metrics_render_at_zero_without_braces)
{
	struct metrics_counter *c;
	struct metrics_histogram *h;
	static const double bounds[] = { 1 };

	cr_assert_eq(metrics_counter_new(reg, &c, "kanna_messages_dropped_total",
					 "Malformed messages dropped.", NULL), 0);
	cr_assert_eq(metrics_histogram_new(reg, &h, "kanna_batch_pods", "Pods per batch.",
					   bounds, 1, NULL), 0);
	assert_rendered("# HELP kanna_batch_pods Pods per batch.\n"
			"# TYPE kanna_batch_pods histogram\n"
			"kanna_batch_pods_bucket{le=\"1\"} 0\n"
			"kanna_batch_pods_bucket{le=\"+Inf\"} 0\n"
			"kanna_batch_pods_sum 0\n"
			"kanna_batch_pods_count 0\n"
			"# HELP kanna_messages_dropped_total Malformed messages dropped.\n"
			"# TYPE kanna_messages_dropped_total counter\n"
			"kanna_messages_dropped_total 0\n");
}

Test(metrics, labelled_family_without_series_is_not_rendered)
{
	struct metrics_counter *c;
	cr_assert_eq(metrics_counter_new(reg, &c, "kanna_a_total", "A.", "nodepool", NULL), 0);
	assert_rendered("");
}

Test(metrics, escapes_label_values_and_help_text)
{
	struct metrics_gauge *g;

	cr_assert_eq(metrics_gauge_new(reg, &g, "kanna_escape", "Back\\slash and\nnewline \"kept\".",
				       "nodepool", NULL), 0);
	cr_assert_eq(metrics_gauge_set(g, 1, "a\\b\"c\nd", NULL), 0);
	assert_rendered("# HELP kanna_escape Back\\\\slash and\\nnewline \"kept\".\n"
			"# TYPE kanna_escape gauge\n"
			"kanna_escape{nodepool=\"a\\\\b\\\"c\\nd\"} 1\n");
}

Test(metrics, formats_special_and_fractional_values_like_prometheus)
{
	static const struct {
		double value;
		const char *text;
	} cases[] = {
		{ 0, "0" },          { -0.0, "0" },          { 1, "1" },
		{ -3, "-3" },        { 0.1, "0.1" },          { 1.0 / 3, "0.3333333333333333" },
		{ 1e-7, "1e-07" },   { 1e300, "1e+300" },     { INFINITY, "+Inf" },
		{ -INFINITY, "-Inf" }, { NAN, "NaN" },        { 123456789012.5, "123456789012.5" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		metrics_format_value(f, cases[i].value);
		fclose(f);
		cr_expect_str_eq(buf, cases[i].text, "case %zu", i);
		free(buf);
	}
}

Test(metrics, rejects_invalid_names_labels_and_buckets)
{
	struct metrics_counter *c;
	struct metrics_histogram *h;
	static const double unsorted[] = { 1, 0.5 };
	static const double with_inf[] = { 1, INFINITY };

	cr_assert_eq(metrics_counter_new(reg, &c, "9starts_with_digit", "x", NULL), -EINVAL);
	cr_assert_eq(metrics_counter_new(reg, &c, "has-dash", "x", NULL), -EINVAL);
	cr_assert_eq(metrics_counter_new(reg, &c, "ok_total", "x", "__reserved", NULL), -EINVAL);
	cr_assert_eq(metrics_counter_new(reg, &c, "ok_total", "x", "a:b", NULL), -EINVAL);
	cr_assert_eq(metrics_counter_new(reg, &c, "ok_total", "x", "dup", "dup", NULL), -EINVAL);
	cr_assert_eq(metrics_counter_new(reg, &c, "ok_total", "x", "a", "b", "c", "d", "e", "f",
					 "g", "h", "i", NULL), -EINVAL);
	cr_assert_eq(metrics_histogram_new(reg, &h, "h1", "x", NULL, 0, "le", NULL), -EINVAL);
	cr_assert_eq(metrics_histogram_new(reg, &h, "h2", "x", unsorted, 2, NULL), -EINVAL);
	cr_assert_eq(metrics_histogram_new(reg, &h, "h3", "x", with_inf, 2, NULL), -EINVAL);
	cr_assert_eq(metrics_counter_new(reg, &c, "colon:ok_total", "x", NULL), 0);
	cr_assert_eq(metrics_counter_new(reg, &c, "colon:ok_total", "x", NULL), -EEXIST);
}

Test(metrics, rejects_wrong_label_count_negative_increment_and_nan)
{
	struct metrics_counter *c;
	struct metrics_histogram *h;

	cr_assert_eq(metrics_counter_new(reg, &c, "c_total", "x", "nodepool", "capacity_type",
					 NULL), 0);
	cr_assert_eq(metrics_counter_add(c, 1, "default", NULL), -EINVAL);
	cr_assert_eq(metrics_counter_add(c, 1, "default", "spot", "extra", NULL), -EINVAL);
	cr_assert_eq(metrics_counter_add(c, -1, "default", "spot", NULL), -EINVAL);
	cr_assert_eq(metrics_counter_add(c, NAN, "default", "spot", NULL), -EINVAL);
	cr_assert_eq(metrics_histogram_new(reg, &h, "h", "x", metrics_duration_buckets,
					   metrics_duration_buckets_len, NULL), 0);
	cr_assert_eq(metrics_histogram_observe(h, NAN, NULL), -EINVAL);
	assert_rendered("# HELP h x\n# TYPE h histogram\n"
			"h_bucket{le=\"0.005\"} 0\nh_bucket{le=\"0.01\"} 0\nh_bucket{le=\"0.025\"} 0\n"
			"h_bucket{le=\"0.05\"} 0\nh_bucket{le=\"0.1\"} 0\nh_bucket{le=\"0.15\"} 0\n"
			"h_bucket{le=\"0.2\"} 0\nh_bucket{le=\"0.25\"} 0\nh_bucket{le=\"0.3\"} 0\n"
			"h_bucket{le=\"0.35\"} 0\nh_bucket{le=\"0.4\"} 0\nh_bucket{le=\"0.45\"} 0\n"
			"h_bucket{le=\"0.5\"} 0\nh_bucket{le=\"0.6\"} 0\nh_bucket{le=\"0.7\"} 0\n"
			"h_bucket{le=\"0.8\"} 0\nh_bucket{le=\"0.9\"} 0\nh_bucket{le=\"1\"} 0\n"
			"h_bucket{le=\"1.25\"} 0\nh_bucket{le=\"1.5\"} 0\nh_bucket{le=\"1.75\"} 0\n"
			"h_bucket{le=\"2\"} 0\nh_bucket{le=\"2.5\"} 0\nh_bucket{le=\"3\"} 0\n"
			"h_bucket{le=\"3.5\"} 0\nh_bucket{le=\"4\"} 0\nh_bucket{le=\"4.5\"} 0\n"
			"h_bucket{le=\"5\"} 0\nh_bucket{le=\"6\"} 0\nh_bucket{le=\"7\"} 0\n"
			"h_bucket{le=\"8\"} 0\nh_bucket{le=\"9\"} 0\nh_bucket{le=\"10\"} 0\n"
			"h_bucket{le=\"15\"} 0\nh_bucket{le=\"20\"} 0\nh_bucket{le=\"25\"} 0\n"
			"h_bucket{le=\"30\"} 0\nh_bucket{le=\"40\"} 0\nh_bucket{le=\"50\"} 0\n"
			"h_bucket{le=\"60\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
}

Test(metrics, caps_the_number_of_series_per_family)
{
	struct metrics_gauge *g;
	char value[32];

	cr_assert_eq(metrics_gauge_new(reg, &g, "kanna_many", "x", "pod", NULL), 0);
	for (int i = 0; i < METRICS_MAX_SERIES; i++) {
		snprintf(value, sizeof(value), "pod-%d", i);
		cr_assert_eq(metrics_gauge_set(g, i, value, NULL), 0);
	}
	cr_assert_eq(metrics_gauge_set(g, 1, "one-too-many", NULL), -E2BIG);
	cr_assert_eq(metrics_gauge_set(g, 7, "pod-5", NULL), 0, "existing series still update");
}

Test(metrics, removed_gauge_series_disappears_from_output)
{
	struct metrics_gauge *g;
	const char *const values[] = { "gone" };

	cr_assert_eq(metrics_gauge_new(reg, &g, "karpenter_nodepools_limit", "Limit.", "nodepool",
				       NULL), 0);
	cr_assert_eq(metrics_gauge_setv(g, 10, values, 1), 0);
	cr_assert_eq(metrics_gauge_set(g, 20, "kept", NULL), 0);
	cr_assert_eq(metrics_gauge_remove(g, "gone", NULL), 0);
	cr_assert_eq(metrics_gauge_remove(g, "gone", NULL), -ENOENT);
	assert_rendered("# HELP karpenter_nodepools_limit Limit.\n"
			"# TYPE karpenter_nodepools_limit gauge\n"
			"karpenter_nodepools_limit{nodepool=\"kept\"} 20\n");
}

#define THREAD_UPDATES 100000

struct updater {
	struct metrics_counter *c;
	struct metrics_histogram *h;
	const char *nodepool;
};

static void *update_many(void *arg)
{
	struct updater *u = arg;
	for (int i = 0; i < THREAD_UPDATES; i++) {
		metrics_counter_add(u->c, 1, u->nodepool, NULL);
		metrics_histogram_observe(u->h, 0.5, "shared", NULL);
	}
	return NULL;
}

Test(metrics, concurrent_updates_from_two_threads_while_scraping_lose_nothing)
{
	static const double bounds[] = { 1 };
	struct metrics_counter *c;
	struct metrics_histogram *h;
	pthread_t t[2];

	cr_assert_eq(metrics_counter_new(reg, &c, "kanna_updates_total", "x", "nodepool", NULL), 0);
	cr_assert_eq(metrics_histogram_new(reg, &h, "kanna_obs", "x", bounds, 1, "nodepool", NULL), 0);
	struct updater u[2] = { { c, h, "a" }, { c, h, "b" } };
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, update_many, &u[i]), 0);
	int scrapes = 0;
	for (; scrapes < 50; scrapes++)
		free(render());
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);

	char *text = render();
	cr_assert(strstr(text, "kanna_updates_total{nodepool=\"a\"} 100000\n"), "%s", text);
	cr_assert(strstr(text, "kanna_updates_total{nodepool=\"b\"} 100000\n"), "%s", text);
	cr_assert(strstr(text, "kanna_obs_bucket{nodepool=\"shared\",le=\"1\"} 200000\n"), "%s", text);
	cr_assert(strstr(text, "kanna_obs_sum{nodepool=\"shared\"} 100000\n"), "%s", text);
	cr_assert(strstr(text, "kanna_obs_count{nodepool=\"shared\"} 200000\n"), "%s", text);
	free(text);
}
