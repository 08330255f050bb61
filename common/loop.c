/*
 * The loop core (see loop.h): one sd-event loop per process with its signal
 * handling (SIGTERM/SIGINT -> on_shutdown, SIGHUP -> on_reload), sd_notify
 * and watchdog pings, lifetime and the accessors. Every daemon's main.c
 * creates one; loop-zsock.c adds ZeroMQ sockets, loop-timer.c periodic
 * jobs and timers, loop-curl.c libcurl. Nothing here may block.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "common/log.h"
#include "common/loop-internal.h"
#include "common/loop.h"

sd_event *loop_event(struct loop *loop)
{
	return loop->event;
}

const char *loop_process(const struct loop *loop)
{
	return loop->process;
}

bool loop_is_stopping(const struct loop *loop)
{
	return loop->stopping;
}

int loop_shutdown_signal(const struct loop *loop)
{
	return loop->shutdown_signal;
}

struct loop_curl *loop_get_curl(const struct loop *loop)
{
	return loop->curl;
}

/* libcurl and OpenSSL start with the first transfer: a process that never
 * speaks HTTP (a subscriber that only replicates state, kanna-tap) does not
 * pay their initialization (~2 MB of library pages made resident). */
int loop_get_curl_started(struct loop *loop, struct loop_curl **ret)
{
	int r;

	if (!loop->curl && (r = loop_curl_new(&loop->curl, loop)) < 0)
		return r;
	*ret = loop->curl;
	return 0;
}

uint64_t loop_watchdog_usec(const struct loop *loop)
{
	return loop->watchdog_usec;
}

void loop_set_hooks(struct loop *loop, const struct loop_hooks *hooks)
{
	loop->hooks = *hooks;
}

void loop_exit(struct loop *loop, int code)
{
	loop->stopping = true;
	loop->exiting = true;
	(void)sd_event_exit(loop->event, code);
}

/* ---- signals ------------------------------------------------------------ */

static int on_grace_expired(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct loop *loop = userdata;

	log_warn("In-flight work not finished within %llu s of the stop request, exiting",
		 (unsigned long long)((loop->hooks.shutdown_grace_usec ?: LOOP_SHUTDOWN_GRACE_USEC) /
				      1000000));
	loop_exit(loop, 0);
	return 0;
}

static void loop_shutdown(struct loop *loop, int signo)
{
	int r = 0;

	if (loop->shutdown_requested) {
		log_info("Received %s again, exiting now", strsignal(signo));
		loop_exit(loop, 0);
		return;
	}
	loop->shutdown_requested = true;
	loop->shutdown_signal = signo;
	loop->stopping = true;
	log_info("Received %s, stopping", strsignal(signo));
	(void)sd_notify(0, "STOPPING=1");
	if (loop->hooks.on_shutdown)
		r = loop->hooks.on_shutdown(loop, loop->hooks.userdata);
	if (r < 0) {
		log_error_errno(r, "Failed to hand back in-flight work: %m");
		loop_exit(loop, EXIT_FAILURE);
		return;
	}
	if (r != LOOP_SHUTDOWN_PENDING) {
		loop_exit(loop, 0);
		return;
	}
	if (loop->hooks.shutdown_grace_usec == LOOP_SHUTDOWN_GRACE_NONE)
		return;
	r = sd_event_add_time_relative(loop->event, &loop->grace, CLOCK_MONOTONIC,
				       loop->hooks.shutdown_grace_usec ?: LOOP_SHUTDOWN_GRACE_USEC,
				       LOOP_TIMER_ACCURACY_USEC, on_grace_expired,
				       loop);
	if (r < 0) {
		log_error_errno(r, "Failed to arm the shutdown grace timer: %m");
		loop_exit(loop, 0);
	}
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si,
		     void *userdata)
{
	struct loop *loop = userdata;
	int r;

	if (si->ssi_signo != SIGHUP) {
		loop_shutdown(loop, (int)si->ssi_signo);
		return 0;
	}
	log_info("Received SIGHUP, reloading configuration");
	if (!loop->hooks.on_reload)
		return 0;
	(void)sd_notify(0, "RELOADING=1");
	r = loop->hooks.on_reload(loop, loop->hooks.userdata);
	if (r < 0)
		log_error_errno(r, "Failed to reload configuration, keeping the old one: %m");
	if (loop->ready)
		(void)sd_notify(0, "READY=1");
	return 0;
}

/* The signals the loop takes over from their default dispositions. */
static const int loop_signals[] = { SIGTERM, SIGINT, SIGHUP };
_Static_assert(ARRAY_SIZE(loop_signals) == ARRAY_SIZE(((struct loop *)0)->signals),
	       "one sd-event source per handled signal");

int loop_child_reset_signals(void)
{
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	for (size_t i = 0; i < ARRAY_SIZE(loop_signals); i++)
		sigaddset(&mask, loop_signals[i]);
	r = pthread_sigmask(SIG_UNBLOCK, &mask, NULL);
	if (r > 0)
		return -r;
	if (signal(SIGPIPE, SIG_DFL) == SIG_ERR)
		return -errno;
	return 0;
}

static int loop_setup_signals(struct loop *loop)
{
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	for (size_t i = 0; i < ARRAY_SIZE(loop_signals); i++)
		sigaddset(&mask, loop_signals[i]);
	/* sd-event reads them from a signalfd; they must not be delivered. */
	r = pthread_sigmask(SIG_BLOCK, &mask, NULL);
	if (r > 0)
		return -r;
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(loop_signals); i++) {
		r = sd_event_add_signal(loop->event, &loop->signals[i],
					loop_signals[i], on_signal, loop);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- sd_notify and the watchdog ------------------------------------------ */

/* STATUS= is one line: a newline would smuggle in another assignment. */
static char *status_line(const char *status)
{
	char *line = strdup(status);

	if (line)
		for (char *p = line; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
	return line;
}

int loop_notify_ready(struct loop *loop, const char *status)
{
	_cleanup_free_ char *line = NULL;
	int r;

	if (status) {
		line = status_line(status);
		if (!line)
			return -ENOMEM;
		r = sd_notifyf(0, "READY=1\nSTATUS=%s", line);
	} else {
		r = sd_notify(0, "READY=1");
	}
	if (r < 0)
		return r;
	loop->ready = true;
	return 0;
}

int loop_notify_status(struct loop *loop, const char *status)
{
	_cleanup_free_ char *line = status_line(status);
	int r;

	if (!line)
		return -ENOMEM;
	r = sd_notifyf(0, "STATUS=%s", line);
	return r < 0 ? r : 0;
}

static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct loop *loop = userdata;
	int r;

	/* Runs only when the loop turns: a stuck handler stops the pings. */
	r = sd_notify(0, "WATCHDOG=1");
	if (r < 0)
		log_warn_errno(r, "Failed to ping the service manager's watchdog: %m");
	r = sd_event_source_set_time_relative(
		s, loop->watchdog_usec / LOOP_WATCHDOG_DIVISOR);
	if (r < 0)
		return log_error_errno(r, "Failed to re-arm the watchdog timer: %m");
	return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

static int loop_setup_watchdog(struct loop *loop)
{
	uint64_t usec = 0, interval;
	int r;

	r = sd_watchdog_enabled(0, &usec);
	if (r < 0)
		log_warn_errno(r, "Failed to parse WATCHDOG_USEC, running without watchdog: %m");
	if (r <= 0 || usec == 0)
		return 0;
	loop->watchdog_usec = usec;
	interval = usec / LOOP_WATCHDOG_DIVISOR;
	r = sd_event_add_time_relative(loop->event, &loop->watchdog,
				       CLOCK_MONOTONIC, interval,
				       MAX(interval / 10, 1), on_watchdog, loop);
	if (r < 0)
		return r;
	r = sd_event_source_set_priority(loop->watchdog,
					 SD_EVENT_PRIORITY_IMPORTANT);
	if (r < 0)
		return r;
	return sd_event_source_set_enabled(loop->watchdog, SD_EVENT_ON);
}

/* ---- lifetime ------------------------------------------------------------ */

int loop_new(struct loop **ret, const char *process)
{
	_cleanup_(loop_freep) struct loop *loop = NULL;
	int r;

	/* Our work runs on this thread; the others (ZeroMQ's I/O thread,
	 * libmicrohttpd's, curl's resolver) mostly move buffers this thread
	 * frees. In malloc arenas of their own those frees would stay resident
	 * apart from the heap the state store reuses (watcher bench, 100,000
	 * pods: a replica's peak RSS -0.6 to -1.0 MB). */
	if (!mallopt(M_ARENA_MAX, 1))
		log_debug("mallopt(M_ARENA_MAX, 1) failed: threads keep malloc arenas of their own");
	loop = calloc(1, sizeof(*loop));
	if (!loop)
		return -ENOMEM;
	loop->process = strdup(process);
	if (!loop->process)
		return -ENOMEM;
	r = sd_event_new(&loop->event);
	if (r < 0)
		return r;
	r = loop_setup_signals(loop);
	if (r < 0)
		return r;
	r = loop_setup_watchdog(loop);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(loop);
	return 0;
}

struct loop *loop_free(struct loop *loop)
{
	if (!loop)
		return NULL;
	loop->curl = loop_curl_free(loop->curl);
	loop_zsocks_free(loop);
	loop_timers_free(loop);
	sd_event_source_disable_unref(loop->watchdog);
	sd_event_source_disable_unref(loop->grace);
	for (size_t i = 0; i < ARRAY_SIZE(loop->signals); i++)
		sd_event_source_disable_unref(loop->signals[i]);
	sd_event_unref(loop->event);
	free(loop->process);
	free(loop);
	return NULL;
}

int loop_run(struct loop *loop)
{
	return sd_event_loop(loop->event);
}
