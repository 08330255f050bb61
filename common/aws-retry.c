/*
 * Retry policy of the AWS client as pure functions: which outcomes are
 * retried (throttling codes, HTTP 429/5xx, network errors), how many
 * attempts, and the full-jitter exponential backoff. The random source is
 * injected so tests pin the delays. Never sleeps: the client turns the
 * delay into a loop timer.
 */
#include "config.h"

#include "common/aws.h"

/* Error codes AWS services use for "slow down" (botocore's and the Go
 * SDK's throttling lists). */
static const char *const throttling_codes[] = {
	"Throttling",
	"ThrottlingException",
	"ThrottledException",
	"RequestThrottledException",
	"TooManyRequestsException",
	"ProvisionedThroughputExceededException",
	"TransactionInProgressException",
	"RequestLimitExceeded",
	"BandwidthLimitExceeded",
	"LimitExceededException",
	"RequestThrottled",
	"SlowDown",
	"PriorRequestNotComplete",
	"EC2ThrottledException",
};

/* Server-side faults worth another attempt even with a 4xx status. */
static const char *const transient_codes[] = {
	"RequestTimeout",
	"RequestTimeoutException",
	"InternalError",
	"InternalFailure",
	"ServiceUnavailable",
	"Unavailable",
	"IDPCommunicationError",
};

/* Final answers even when EC2 sends them with HTTP 500: another attempt
 * cannot help, the caller must pick another offering. */
static const char *const final_codes[] = {
	"InsufficientInstanceCapacity",
	"InsufficientHostCapacity",
	"InsufficientReservedInstanceCapacity",
	"InsufficientCapacity",
	"UnfulfillableCapacity",
	"MaxSpotInstanceCountExceeded",
	"VcpuLimitExceeded",
};

static bool code_in(const char *code, const char *const *list, size_t n)
{
	if (!code)
		return false;
	for (size_t i = 0; i < n; i++)
		if (streq(code, list[i]))
			return true;
	return false;
}

void aws_retry_policy_default(struct aws_retry_policy *p)
{
	p->max_attempts = AWS_RETRY_MAX_ATTEMPTS;
	p->base_usec = AWS_RETRY_BASE_USEC;
	p->cap_usec = AWS_RETRY_CAP_USEC;
}

bool aws_error_code_is_throttling(const char *code)
{
	return code_in(code, throttling_codes, ARRAY_SIZE(throttling_codes));
}

enum aws_retry_class aws_retry_classify(CURLcode transport, long http_status,
					const char *error_code)
{
	switch (transport) {
	case CURLE_OK:
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return AWS_RETRY_TRANSIENT;
	default:
		return AWS_RETRY_NONE;
	}
	if (aws_error_code_is_throttling(error_code) || http_status == 429)
		return AWS_RETRY_THROTTLE;
	if (code_in(error_code, final_codes, ARRAY_SIZE(final_codes)))
		return AWS_RETRY_NONE;
	if (http_status >= 500 && http_status <= 599)
		return AWS_RETRY_TRANSIENT;
	if (code_in(error_code, transient_codes, ARRAY_SIZE(transient_codes)))
		return AWS_RETRY_TRANSIENT;
	return AWS_RETRY_NONE;
}

bool aws_retry_should_retry(const struct aws_retry_policy *p, enum aws_retry_class c,
			    unsigned failed_attempts)
{
	return c != AWS_RETRY_NONE && failed_attempts < p->max_attempts;
}

uint64_t aws_retry_backoff_usec(const struct aws_retry_policy *p, unsigned failed_attempts,
				aws_rng_fn rng, void *rng_userdata)
{
	uint64_t ceiling = p->base_usec;

	/* base * 2^(n-1), saturating at the cap */
	for (unsigned i = 1; i < failed_attempts && ceiling < p->cap_usec; i++)
		ceiling *= 2;
	if (ceiling > p->cap_usec)
		ceiling = p->cap_usec;
	if (ceiling == 0)
		return 0;
	return rng(rng_userdata) % (ceiling + 1);
}
