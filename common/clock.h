/*
 * The clocks, read one way everywhere. Monotonic for intervals, timeouts
 * and deadlines inside a process; realtime for what other processes and
 * the API see (creation times, Event names, message send times).
 */
#ifndef KANNA_COMMON_CLOCK_H
#define KANNA_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_monotonic_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline uint64_t clock_monotonic_ms(void)
{
	return clock_monotonic_usec() / 1000u;
}

static inline int64_t clock_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline uint64_t clock_realtime_usec(void)
{
	return (uint64_t)(clock_realtime_ns() / 1000);
}

/* Signed: compared with API timestamps, which may lie in the past of 1970
 * only in a broken cluster, but are int64 in the wire format. */
static inline int64_t clock_realtime_ms(void)
{
	return clock_realtime_ns() / 1000000;
}

/* The realtime instant ms from now, for pthread_cond_timedwait(). */
static inline struct timespec clock_realtime_in_ms(uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#endif
