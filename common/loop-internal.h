/*
 * Private glue between the loop's files: loop.c (core, signals, notify),
 * loop-zsock.c (ZeroMQ), loop-timer.c (periodic jobs, timers) and
 * loop-curl.c (libcurl). Nothing outside common/loop*.c includes this.
 */
#ifndef KANNA_COMMON_LOOP_INTERNAL_H
#define KANNA_COMMON_LOOP_INTERNAL_H

#include "common/loop.h"

struct loop_curl;

/*
 * Timer slack for periodic jobs and one-shot timers: 1 ms lets the kernel
 * coalesce wake-ups without visibly shifting our second-scale periods.
 */
#define LOOP_TIMER_ACCURACY_USEC 1000ULL
/* Watchdog pings every WATCHDOG_USEC / 2, as sd_watchdog_enabled(3) advises. */
#define LOOP_WATCHDOG_DIVISOR 2
/*
 * The continuation of a socket that hit LOOP_ZSOCK_DRAIN_MAX runs one step
 * below normal priority: every pending timer, signal and other socket goes
 * first, then the busy socket gets its next batch.
 */
#define LOOP_ZSOCK_CONTINUE_PRIORITY (SD_EVENT_PRIORITY_NORMAL + 1)

struct loop_zsock {
	struct loop *loop;
	void *zsock;
	loop_zsock_fn fn;
	void *userdata;
	sd_event_source *io;
	sd_event_source *more; /* deferred continuation after a full batch */
	bool dispatching;
	bool removed;
	struct loop_zsock *next;
};

struct loop_periodic {
	char *name;
	uint64_t period_usec;
	uint64_t next_usec; /* CLOCK_MONOTONIC */
	loop_timer_fn fn;
	void *userdata;
	bool removed;
	struct loop_periodic *next;
};

struct loop_timer {
	struct loop *loop;
	loop_timer_fn fn;
	void *userdata;
	sd_event_source *source;
	bool owned_by_loop;
	struct loop_timer *prev, *next; /* loop-owned timers only */
};

struct loop {
	char *process;
	sd_event *event;
	struct loop_hooks hooks;
	bool stopping;  /* shutdown requested or loop_exit() called */
	bool exiting;   /* loop_exit() called: dispatch nothing more */
	bool ready;     /* READY=1 sent */
	bool shutdown_requested;
	int shutdown_signal; /* the SIGTERM or SIGINT that asked, 0 before */
	sd_event_source *signals[3];
	sd_event_source *grace;
	sd_event_source *watchdog;
	uint64_t watchdog_usec;
	struct loop_zsock *zsocks;
	struct loop_periodic *jobs;
	sd_event_source *cron;
	bool cron_running;
	struct loop_timer *timers;
	struct loop_curl *curl;
};

void loop_zsock_free(struct loop_zsock *z);
void loop_zsocks_free(struct loop *loop);
void loop_timers_free(struct loop *loop);

/* Creates the multi handle and hooks its sockets and timer onto the loop. */
int loop_curl_new(struct loop_curl **ret, struct loop *loop);
/* Aborts every transfer still running (done() sees CURLE_ABORTED_BY_CALLBACK). */
struct loop_curl *loop_curl_free(struct loop_curl *c);
struct loop_curl *loop_get_curl(const struct loop *loop); /* NULL before the first transfer */
int loop_get_curl_started(struct loop *loop, struct loop_curl **ret);

#endif
