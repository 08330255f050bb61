/*
 * Token bucket for client-side rate limits (Kubernetes QPS/burst, AWS API
 * request rates). Pure arithmetic on a caller-supplied monotonic clock, so
 * it is trivially testable; callers turn "wait N usec" into a loop timer.
 */
#ifndef KANNA_COMMON_RATELIMIT_H
#define KANNA_COMMON_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct ratelimit {
	double rate;      /* tokens per second; <= 0 means unlimited */
	double burst;     /* bucket size */
	double tokens;
	uint64_t last_usec;
};

void ratelimit_init(struct ratelimit *rl, double rate, unsigned burst, uint64_t now_usec);
/*
 * Takes one token. Returns 0 when the caller may go now, else how many usec
 * to wait; the token is already reserved (the bucket goes negative), so the
 * caller must go after the wait without asking again.
 */
uint64_t ratelimit_reserve(struct ratelimit *rl, uint64_t now_usec);
/*
 * Takes one token if there is one and returns true; otherwise returns false
 * and takes nothing, so a caller that gives up (a log line not written)
 * runs up no debt and is let through again as soon as a token refills.
 */
bool ratelimit_try(struct ratelimit *rl, uint64_t now_usec);

#endif
