/*
 * Out of memory while a replica is built (state/replica.c): every
 * allocation replica_new() makes is failed in turn, and each failure must
 * come back as -ENOMEM with nothing it allocated left behind — a daemon
 * that retries construction under memory pressure must not leak a little
 * more each time. tests/unit/alloc-fail.h does the failing and counting.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc-fail.h"
#include "common/log.h"
#include "state/endpoints.h"
#include "state/replica.h"

/* Far more than replica_new() makes: the loop ends when one succeeds. */
#define MAX_ALLOCATIONS 2000

static char dir[64];
static struct loop *loop;
static struct sock_ctx *ctx;

static void setup(void)
{
	log_setup("test-replica-oom", LOG_FORMAT_TEXT, LOG_LEVEL_ERROR);
	strcpy(dir, "/tmp/kanna-replica-oom-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(loop_new(&loop, "test"), 0);
	cr_assert_eq(sock_ctx_new(&ctx, loop, "scheduler-0", dir), 0);
}

static void teardown(void)
{
	char cmd[128];

	sock_ctx_free(ctx);
	loop_free(loop);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

TestSuite(replica_oom, .init = setup, .fini = teardown, .timeout = 60);

Test(replica_oom, each_failed_allocation_is_reported_and_leaks_nothing)
{
	long n;

	for (n = 0; n < MAX_ALLOCATIONS; n++) {
		struct replica *r = NULL;
		int k;

		alloc_fail_arm(n);
		k = replica_new(&r, ctx, loop, PROTO_PROCESS_SCHEDULER, ENDPOINT_STATE_PUB,
				ENDPOINT_STATE_SYNC, NULL);
		if (k >= 0) {
			bool reached;

			replica_free(r);
			reached = alloc_fail_disarm();
			cr_expect_not(reached, "replica_new() succeeded past failed allocation %ld", n);
			cr_expect_eq(alloc_fail.live, 0, "replica_free() left %ld block(s)", alloc_fail.live);
			break;
		}
		alloc_fail_disarm();
		cr_expect_eq(k, -ENOMEM, "allocation %ld failed, replica_new() said %d", n, k);
		cr_expect_eq(alloc_fail.live, 0, "allocation %ld failed: %ld block(s) left behind", n,
			     alloc_fail.live);
		cr_assert_eq(alloc_fail.lost, 0);
	}
	cr_assert_lt(n, MAX_ALLOCATIONS, "replica_new() never succeeded");
	cr_expect_gt(n, 3, "only %ld allocation(s) tried: is the wrapping linked in?", n);
}
