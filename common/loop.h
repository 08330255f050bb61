/*
 * The event loop every kanna process runs: one sd-event loop that owns the
 * process's timers, signals, sd_notify/watchdog traffic, ZeroMQ sockets and
 * libcurl transfers. Nothing in a daemon blocks; everything it does is a
 * callback from here. Single-threaded: call these from the loop's thread.
 *
 * Callbacks return 0 (or positive) on success, a negative errno on failure;
 * the loop logs a failure once at warning level (periodic jobs with their
 * name; handlers should log their own context first) and keeps running:
 * bad input must never stop a daemon. Call loop_exit() to stop on purpose.
 */
#ifndef KANNA_COMMON_LOOP_H
#define KANNA_COMMON_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>
#include <systemd/sd-event.h>

#include "common/util.h"

struct loop;

/*
 * Most messages one ZeroMQ socket may hand to its handler per wake-up. Past
 * this the socket re-arms through a deferred source and yields, so one busy
 * peer cannot starve timers, other sockets, health probes or the watchdog.
 * 256 keeps a wake-up well under a millisecond for small messages while
 * amortising the sd-event iteration over many messages.
 */
#define LOOP_ZSOCK_DRAIN_MAX 256

/*
 * Longest a daemon may take to finish or hand back in-flight work after
 * SIGTERM when its on_shutdown hook asked for time (returned
 * LOOP_SHUTDOWN_PENDING). Well inside systemd's default TimeoutStopSec=90s
 * and Kubernetes' default terminationGracePeriodSeconds=30.
 */
#define LOOP_SHUTDOWN_GRACE_USEC (20ULL * 1000 * 1000)

/* Returned by on_shutdown: "I will call loop_exit(loop, 0) when done". */
#define LOOP_SHUTDOWN_PENDING 1

struct loop_hooks {
	/*
	 * SIGTERM/SIGINT: stop taking work, finish or hand back in-flight
	 * work. Return 0 to exit(0) now, LOOP_SHUTDOWN_PENDING to keep the
	 * loop turning until loop_exit() or the grace period, negative to
	 * exit with status 1. A second signal exits at once.
	 */
	int (*on_shutdown)(struct loop *loop, void *userdata);
	/* SIGHUP: reload configuration (all of it or none). Failure is logged. */
	int (*on_reload)(struct loop *loop, void *userdata);
	void *userdata;
	/* How long the loop waits after LOOP_SHUTDOWN_PENDING before it exits
	 * by itself: 0 means LOOP_SHUTDOWN_GRACE_USEC, LOOP_SHUTDOWN_GRACE_NONE
	 * never (kanna-init, whose own grace period ends in SIGKILL). */
	uint64_t shutdown_grace_usec;
};
#define LOOP_SHUTDOWN_GRACE_NONE UINT64_MAX

/*
 * Creates the loop for process `process` (used in logs): blocks SIGTERM,
 * SIGINT and SIGHUP and handles them through sd-event, ignores SIGPIPE
 * (a peer that went away is an error return, not a death); sets up the
 * watchdog timer if WATCHDOG_USEC asks for one (the libcurl multi handle
 * comes with the first loop_http_start()); keeps malloc to one arena. Call
 * it first in main(), before anything starts a thread (e.g. libmicrohttpd):
 * threads inherit the blocked signals only from then on.
 * One loop per process; it runs once (loop_run() cannot be restarted).
 */
int loop_new(struct loop **ret, const char *process);
/* Aborts unfinished HTTP transfers (their done() sees CURLE_ABORTED_BY_CALLBACK). */
struct loop *loop_free(struct loop *loop);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct loop *, loop_free);

/*
 * For a forked child before exec(): unblocks the signals loop_new() blocked
 * and restores SIGPIPE, so the new program starts with default signals.
 */
int loop_child_reset_signals(void);

/* Runs until loop_exit(); returns the exit code (>= 0) or a negative errno. */
int loop_run(struct loop *loop);
void loop_exit(struct loop *loop, int code);
/* True once SIGTERM/SIGINT arrived or loop_exit() was called. */
bool loop_is_stopping(const struct loop *loop);
/* The signal (SIGTERM, SIGINT) behind the stop request; 0 without one. */
int loop_shutdown_signal(const struct loop *loop);
sd_event *loop_event(struct loop *loop);
const char *loop_process(const struct loop *loop);
/* Hooks are copied. */
void loop_set_hooks(struct loop *loop, const struct loop_hooks *hooks);

/* ---- ZeroMQ sockets ---------------------------------------------------- */

/*
 * Watches a ZeroMQ socket. on_readable is called once per pending message
 * (ZMQ_EVENTS has ZMQ_POLLIN) and must receive exactly one whole message
 * (all frames) with ZMQ_DONTWAIT. The loop drains up to LOOP_ZSOCK_DRAIN_MAX
 * messages per wake-up and re-arms itself for the rest. The loop does not
 * own zsock; call loop_remove_zsock() before zmq_close().
 */
typedef int (*loop_zsock_fn)(void *zsock, void *userdata);
int loop_add_zsock(struct loop *loop, void *zsock, loop_zsock_fn on_readable,
		   void *userdata);
/* Safe from inside the socket's own handler. -ENOENT if not watched. */
int loop_remove_zsock(struct loop *loop, void *zsock);
/*
 * Call after sending on a watched socket (sock_send*() does this for you):
 * a send may consume the ZMQ_FD edge that announced incoming messages, so
 * the loop re-checks ZMQ_EVENTS and schedules a drain if input is pending.
 */
int loop_zsock_check(struct loop *loop, void *zsock);

/* ---- timers ------------------------------------------------------------ */

typedef int (*loop_timer_fn)(struct loop *loop, void *userdata);

/*
 * Periodic job (Redis serverCron): all jobs hang off one timer; job `name`
 * runs every period_usec (first run one period from now). `name` must be
 * unique in the loop (-EEXIST otherwise) and is copied.
 */
int loop_add_periodic(struct loop *loop, const char *name, uint64_t period_usec,
		      loop_timer_fn fn, void *userdata);
int loop_remove_periodic(struct loop *loop, const char *name);

/*
 * One-shot timer delay_usec from now (CLOCK_MONOTONIC). With ret == NULL the
 * timer belongs to the loop; otherwise the caller holds a reference and
 * cancels with sd_event_source_disable_unref(*ret) (also after it fired).
 */
int loop_add_timer(struct loop *loop, uint64_t delay_usec, loop_timer_fn fn,
		   void *userdata, sd_event_source **ret);

/* ---- sd_notify ----------------------------------------------------------- */

/* READY=1 plus STATUS=<status> (status may be NULL). */
int loop_notify_ready(struct loop *loop, const char *status);
int loop_notify_status(struct loop *loop, const char *status);
/* Watchdog period in usec (0 when WATCHDOG_USEC is not set for us). */
uint64_t loop_watchdog_usec(const struct loop *loop);

/* ---- libcurl (multi-socket API on sd-event) ---------------------------- */

/*
 * Runs a prepared easy handle on the loop. done() is called exactly once,
 * from the loop (never from inside loop_http_start), with the transfer's
 * result — also when the transfer is cancelled or the loop is freed
 * (CURLE_ABORTED_BY_CALLBACK). The loop never frees `easy`; done() may free
 * it, reuse it, or start new transfers. -EEXIST if easy is already running.
 * When loop_http_start() fails (negative return) done() is never called.
 */
typedef void (*loop_http_done_fn)(CURL *easy, CURLcode result, void *userdata);
int loop_http_start(struct loop *loop, CURL *easy, loop_http_done_fn done,
		    void *userdata);
/*
 * Stops a running transfer; done() runs before this returns. -ENOENT if
 * unknown. Not from inside that transfer's own curl callbacks (write,
 * header, progress): make those return an error instead.
 */
int loop_http_cancel(struct loop *loop, CURL *easy);
/* Number of transfers in flight. */
unsigned loop_http_running(const struct loop *loop);
/* Starts libcurl (and its TLS library) now, as the first loop_http_start()
 * would: for a client that will make requests, so that their setup happens
 * at start-up, not during the first request. */
int loop_http_init(struct loop *loop);

#endif
