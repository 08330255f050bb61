/* Retry policy: what is retried, how many times, and full-jitter backoff
 * with a pinned random source. */
#include <criterion/criterion.h>

#include "common/aws.h"

static uint64_t rng_max(void *userdata)
{
	return UINT64_MAX; /* the largest random value */
}

static uint64_t rng_fixed(void *userdata)
{
	return *(uint64_t *)userdata;
}

Test(aws_retry, classifies_throttling_codes_and_429_as_throttle)
{
	static const char *const codes[] = { "RequestLimitExceeded", "Throttling", "ThrottlingException",
					     "TooManyRequestsException", "RequestThrottled" };

	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		cr_expect_eq(aws_retry_classify(CURLE_OK, 400, codes[i]), AWS_RETRY_THROTTLE, "%s", codes[i]);
	cr_assert_eq(aws_retry_classify(CURLE_OK, 429, "HTTP429"), AWS_RETRY_THROTTLE);
	cr_assert_eq(aws_retry_classify(CURLE_OK, 503, "RequestLimitExceeded"), AWS_RETRY_THROTTLE);
}

Test(aws_retry, classifies_5xx_and_network_errors_as_transient)
{
	cr_assert_eq(aws_retry_classify(CURLE_OK, 500, "InternalError"), AWS_RETRY_TRANSIENT);
	cr_assert_eq(aws_retry_classify(CURLE_OK, 503, "Unavailable"), AWS_RETRY_TRANSIENT);
	cr_assert_eq(aws_retry_classify(CURLE_OK, 502, "HTTP502"), AWS_RETRY_TRANSIENT);
	cr_assert_eq(aws_retry_classify(CURLE_COULDNT_CONNECT, 0, NULL), AWS_RETRY_TRANSIENT);
	cr_assert_eq(aws_retry_classify(CURLE_OPERATION_TIMEDOUT, 0, NULL), AWS_RETRY_TRANSIENT);
	cr_assert_eq(aws_retry_classify(CURLE_RECV_ERROR, 0, NULL), AWS_RETRY_TRANSIENT);
}

Test(aws_retry, does_not_retry_client_errors)
{
	cr_assert_eq(aws_retry_classify(CURLE_OK, 400, "InsufficientInstanceCapacity"), AWS_RETRY_NONE);
	/* EC2 sends capacity errors as HTTP 500: still final */
	cr_assert_eq(aws_retry_classify(CURLE_OK, 500, "InsufficientInstanceCapacity"), AWS_RETRY_NONE);
	cr_assert_eq(aws_retry_classify(CURLE_OK, 500, "UnfulfillableCapacity"), AWS_RETRY_NONE);
	cr_assert_eq(aws_retry_classify(CURLE_OK, 403, "AuthFailure"), AWS_RETRY_NONE);
	cr_assert_eq(aws_retry_classify(CURLE_OK, 400, "InvalidParameterValue"), AWS_RETRY_NONE);
	cr_assert_eq(aws_retry_classify(CURLE_OK, 200, NULL), AWS_RETRY_NONE);
	cr_assert_eq(aws_retry_classify(CURLE_URL_MALFORMAT, 0, NULL), AWS_RETRY_NONE);
}

Test(aws_retry, bounds_the_number_of_attempts)
{
	struct aws_retry_policy p;

	aws_retry_policy_default(&p);
	cr_assert_eq(p.max_attempts, AWS_RETRY_MAX_ATTEMPTS);
	for (unsigned a = 1; a < p.max_attempts; a++)
		cr_assert(aws_retry_should_retry(&p, AWS_RETRY_THROTTLE, a));
	cr_assert_not(aws_retry_should_retry(&p, AWS_RETRY_THROTTLE, p.max_attempts));
	cr_assert_not(aws_retry_should_retry(&p, AWS_RETRY_NONE, 1));
}

Test(aws_retry, backoff_ceiling_doubles_up_to_the_cap)
{
	struct aws_retry_policy p = { .max_attempts = 20, .base_usec = 100, .cap_usec = 1000 };
	/* rng = ceiling gives exactly the ceiling (ceiling % (ceiling + 1)) */
	uint64_t v;

	v = 100;
	cr_assert_eq(aws_retry_backoff_usec(&p, 1, rng_fixed, &v), 100);
	v = 200;
	cr_assert_eq(aws_retry_backoff_usec(&p, 2, rng_fixed, &v), 200);
	v = 400;
	cr_assert_eq(aws_retry_backoff_usec(&p, 3, rng_fixed, &v), 400);
	v = 800;
	cr_assert_eq(aws_retry_backoff_usec(&p, 4, rng_fixed, &v), 800);
	v = 1000;
	cr_assert_eq(aws_retry_backoff_usec(&p, 5, rng_fixed, &v), 1000);
	cr_assert_eq(aws_retry_backoff_usec(&p, 19, rng_fixed, &v), 1000);
}

Test(aws_retry, backoff_is_full_jitter_between_zero_and_the_ceiling)
{
	struct aws_retry_policy p;
	uint64_t v = 0;

	aws_retry_policy_default(&p);
	cr_assert_eq(aws_retry_backoff_usec(&p, 3, rng_fixed, &v), 0);
	v = 12345;
	cr_assert_eq(aws_retry_backoff_usec(&p, 3, rng_fixed, &v), 12345);
	/* never above min(cap, base * 2^(n-1)) whatever the random value */
	for (unsigned a = 1; a < 40; a++) {
		uint64_t ceiling = AWS_RETRY_BASE_USEC << (a - 1 < 20 ? a - 1 : 20);
		uint64_t d = aws_retry_backoff_usec(&p, a, rng_max, NULL);

		if (ceiling > AWS_RETRY_CAP_USEC)
			ceiling = AWS_RETRY_CAP_USEC;
		cr_assert_leq(d, ceiling, "attempt %u: %llu", a, (unsigned long long)d);
	}
}
