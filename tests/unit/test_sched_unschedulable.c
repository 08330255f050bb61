/*
 * The scheduler's memory of unschedulable pods: a reason is news once per
 * change, placed and vanished pods are forgotten, and the summary counts
 * pods by their leading reason.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/unschedulable.h"

static struct unschedulable u;

static void setup(void)
{
	unschedulable_init(&u);
}

static void teardown(void)
{
	unschedulable_done(&u);
}

TestSuite(unschedulable, .init = setup, .fini = teardown);

static struct proto_pod pod(const char *name)
{
	return (struct proto_pod){ .ns = "default", .name = (char *)name, .uid = (char *)name };
}

#define TOO_BIG "incompatible with nodepool default: no instance type with 96 cpu in zones [a b]"
#define NO_GPU "incompatible with nodepool gpu: no instance type with 1 nvidia.com/gpu in zones [a b]"

Test(unschedulable, a_reason_is_news_once_until_it_changes)
{
	struct proto_pod a = pod("a");

	cr_assert_eq(unschedulable_note(&u, &a, TOO_BIG), 1);
	for (int batch = 0; batch < 100; batch++)
		cr_assert_eq(unschedulable_note(&u, &a, TOO_BIG), 0, "said again in batch %d", batch);
	cr_assert_eq(unschedulable_note(&u, &a, NO_GPU), 1, "a changed reason was not news");
	cr_assert_eq(unschedulable_note(&u, &a, NO_GPU), 0);
	cr_assert_eq(unschedulable_count(&u), 1);
}

Test(unschedulable, a_pod_placed_then_stuck_again_is_news_again)
{
	struct proto_pod a = pod("a");

	cr_assert_eq(unschedulable_note(&u, &a, TOO_BIG), 1);
	unschedulable_forget(&u, "a");
	cr_assert_eq(unschedulable_count(&u), 0);
	cr_assert_eq(unschedulable_note(&u, &a, TOO_BIG), 1);
}

static bool only_b_pending(const char *ns, const char *name, const char *uid, void *userdata)
{
	(void)ns;
	(void)uid;
	(*(int *)userdata)++;
	return strcmp(name, "b") == 0;
}

Test(unschedulable, pods_no_longer_pending_are_forgotten)
{
	struct proto_pod a = pod("a"), b = pod("b"), c = pod("c");
	int asked = 0;

	unschedulable_note(&u, &a, TOO_BIG);
	unschedulable_note(&u, &b, TOO_BIG);
	unschedulable_note(&u, &c, NO_GPU);
	unschedulable_sweep(&u, only_b_pending, &asked);
	cr_assert_eq(asked, 3);
	cr_assert_eq(unschedulable_count(&u), 1);
	cr_assert_eq(unschedulable_note(&u, &b, TOO_BIG), 0, "b was forgotten");
	cr_assert_eq(unschedulable_note(&u, &a, TOO_BIG), 1, "a was remembered");
}

Test(unschedulable, the_summary_counts_pods_by_leading_reason_commonest_first)
{
	char buf[1024], name[8][4];
	struct proto_pod p;

	cr_assert_eq(unschedulable_summary(&u, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "");
	for (int i = 0; i < 8; i++) {
		snprintf(name[i], sizeof(name[i]), "p%d", i);
		p = pod(name[i]);
		/* Pods of one reason may differ after it (the other NodePools). */
		unschedulable_note(&u, &p, i < 3 ? TOO_BIG "; incompatible with nodepool x: …" :
					i < 5 ? NO_GPU :
					i == 5 ? "r1" : i == 6 ? "r2" : "r3");
	}
	cr_assert_eq(unschedulable_summary(&u, buf, sizeof(buf)), 8);
	cr_assert_str_eq(buf, "8 pod(s) unschedulable: 3 for " TOO_BIG "; 2 for " NO_GPU
			      "; 1 for r1; and 2 for 2 other reason(s)");
	/* Cut to size, never past it. */
	cr_assert_eq(unschedulable_summary(&u, buf, 40), 8);
	cr_assert_eq(strlen(buf), 39);
}
