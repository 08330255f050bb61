/*
 * The restart policy's arithmetic, pure so that it is unit-tested alone:
 * the exponential backoff before a crashed daemon is restarted, its reset
 * once the daemon ran stably, and the give-up decision over a sliding
 * window of failures. supervise.c calls it with the loop's clock.
 */
#include "init/init.h"

uint64_t init_backoff_delay(const struct init_restart_policy *p, unsigned consecutive)
{
	uint64_t delay = p->backoff_initial_usec;

	for (unsigned i = 1; i < consecutive && delay < p->backoff_max_usec; i++)
		delay = delay > UINT64_MAX / 2 ? UINT64_MAX : delay * 2;
	return delay < p->backoff_max_usec ? delay : p->backoff_max_usec;
}

/* client-go's flowcontrol.Backoff (the kubelet's container backoff) forgets
 * an entry not updated for 2 × its maximum duration (hasExpired()). */
uint64_t init_backoff_reset_usec(const struct init_restart_policy *p)
{
	return p->backoff_max_usec > UINT64_MAX / 2 ? UINT64_MAX : 2 * p->backoff_max_usec;
}

int init_restarts_record(struct init_restarts *r, const struct init_restart_policy *p,
			 uint64_t now_usec, uint64_t ran_usec, uint64_t *ret_delay_usec)
{
	size_t cap = ARRAY_SIZE(r->exits);

	if (ran_usec >= init_backoff_reset_usec(p))
		r->consecutive = 0;
	if (r->consecutive < UINT32_MAX)
		r->consecutive++;
	r->exits[r->next] = now_usec;
	r->next = (r->next + 1) % cap;
	if (r->count < cap)
		r->count++;
	if (p->give_up_after > 0 && p->give_up_after < cap && r->count > p->give_up_after) {
		/* The exit give_up_after places before this one: within the
		 * window, this is failure give_up_after + 1 inside it. */
		size_t back = (size_t)p->give_up_after;
		uint64_t then = r->exits[(r->next + cap - 1 - back) % cap];

		if (now_usec - then < p->give_up_window_usec)
			return 1;
	}
	*ret_delay_usec = init_backoff_delay(p, r->consecutive);
	return 0;
}
