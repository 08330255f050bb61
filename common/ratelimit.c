/*
 * Token bucket (see ratelimit.h). Reservation lets waiting callers queue in
 * order: each one takes a token now and is told how long the debt lasts;
 * ratelimit_try() is for callers that skip instead of waiting.
 */
#include "common/ratelimit.h"

void ratelimit_init(struct ratelimit *rl, double rate, unsigned burst, uint64_t now_usec)
{
	rl->rate = rate;
	rl->burst = burst > 0 ? burst : 1;
	rl->tokens = rl->burst;
	rl->last_usec = now_usec;
}

static void ratelimit_refill(struct ratelimit *rl, uint64_t now_usec)
{
	if (now_usec > rl->last_usec) {
		rl->tokens += (double)(now_usec - rl->last_usec) * rl->rate / 1e6;
		if (rl->tokens > rl->burst)
			rl->tokens = rl->burst;
		rl->last_usec = now_usec;
	}
}

bool ratelimit_try(struct ratelimit *rl, uint64_t now_usec)
{
	if (rl->rate <= 0)
		return true;
	ratelimit_refill(rl, now_usec);
	if (rl->tokens < 1.0)
		return false;
	rl->tokens -= 1.0;
	return true;
}

uint64_t ratelimit_reserve(struct ratelimit *rl, uint64_t now_usec)
{
	if (rl->rate <= 0)
		return 0;
	ratelimit_refill(rl, now_usec);
	rl->tokens -= 1.0;
	if (rl->tokens >= 0)
		return 0;
	return (uint64_t)(-rl->tokens * 1e6 / rl->rate) + 1;
}
