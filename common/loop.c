/*
 * The loop core (see loop.h): one sd-event loop per process with its signal
 * handling (SIGTERM/SIGINT -> on_shutdown, SIGHUP -> on_reload), sd_notify
 * and watchdog pings, the periodic-job timer (Redis serverCron style),
 * one-shot timers and edge-triggered ZeroMQ sockets drained in bounded
 * batches. Every daemon's main.c creates one; loop-curl.c adds libcurl.
 * Nothing here may block or call back into a handler recursively.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>
#include <zmq.h>

#include "common/log.h"
#include "common/loop-internal.h"
#include "common/loop.h"

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

struct loop_curl *loop_get_curl(const struct loop *loop)
{
	return loop->curl;
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
		 (unsigned long long)(LOOP_SHUTDOWN_GRACE_USEC / 1000000));
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
	r = sd_event_add_time_relative(loop->event, &loop->grace, CLOCK_MONOTONIC,
				       LOOP_SHUTDOWN_GRACE_USEC,
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

static int loop_setup_signals(struct loop *loop)
{
	static const int signals[] = { SIGTERM, SIGINT, SIGHUP };
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
		sigaddset(&mask, signals[i]);
	/* sd-event reads them from a signalfd; they must not be delivered. */
	r = pthread_sigmask(SIG_BLOCK, &mask, NULL);
	if (r > 0)
		return -r;
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++) {
		r = sd_event_add_signal(loop->event, &loop->signals[i],
					signals[i], on_signal, loop);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- sd_notify and the watchdog ------------------------------------------ */

int loop_notify_ready(struct loop *loop, const char *status)
{
	int r;

	if (status)
		r = sd_notifyf(0, "READY=1\nSTATUS=%s", status);
	else
		r = sd_notify(0, "READY=1");
	if (r < 0)
		return r;
	loop->ready = true;
	return 0;
}

int loop_notify_status(struct loop *loop, const char *status)
{
	int r = sd_notifyf(0, "STATUS=%s", status);

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

static void zsock_free(struct loop_zsock *z);
static void loop_periodic_free(struct loop_periodic *job);

int loop_new(struct loop **ret, const char *process)
{
	_cleanup_(loop_freep) struct loop *loop = NULL;
	int r;

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
	r = loop_curl_new(&loop->curl, loop);
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
	while (loop->zsocks) {
		struct loop_zsock *z = loop->zsocks;

		loop->zsocks = z->next;
		zsock_free(z);
	}
	while (loop->jobs) {
		struct loop_periodic *job = loop->jobs;

		loop->jobs = job->next;
		loop_periodic_free(job);
	}
	while (loop->timers) {
		struct loop_timer *t = loop->timers;

		loop->timers = t->next;
		t->owned_by_loop = false;
		sd_event_source_disable_unref(t->source);
	}
	sd_event_source_disable_unref(loop->cron);
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

/* ---- ZeroMQ sockets ------------------------------------------------------ */

static void zsock_free(struct loop_zsock *z)
{
	sd_event_source_disable_unref(z->io);
	sd_event_source_disable_unref(z->more);
	free(z);
}

static struct loop_zsock *loop_find_zsock(struct loop *loop, void *zsock)
{
	for (struct loop_zsock *z = loop->zsocks; z; z = z->next)
		if (z->zsock == zsock && !z->removed)
			return z;
	return NULL;
}

static int zsock_has_input(void *zsock)
{
	int events = 0;
	size_t size = sizeof(events);

	/* Also processes ZeroMQ's pending commands and resets ZMQ_FD. */
	if (zmq_getsockopt(zsock, ZMQ_EVENTS, &events, &size) < 0)
		return -errno;
	return !!(events & ZMQ_POLLIN);
}

static void zsock_unlink(struct loop *loop, struct loop_zsock *z)
{
	for (struct loop_zsock **p = &loop->zsocks; *p; p = &(*p)->next)
		if (*p == z) {
			*p = z->next;
			return;
		}
}

/* Hands pending messages to the handler, at most LOOP_ZSOCK_DRAIN_MAX. */
static int zsock_drain(struct loop_zsock *z)
{
	int r = 0;

	z->dispatching = true;
	for (unsigned n = 0; !z->removed && !z->loop->exiting; n++) {
		r = zsock_has_input(z->zsock);
		if (r <= 0) {
			if (r < 0)
				log_error_errno(r, "Failed to poll a ZeroMQ socket: %m");
			break;
		}
		if (n == LOOP_ZSOCK_DRAIN_MAX) {
			r = sd_event_source_set_enabled(z->more, SD_EVENT_ONESHOT);
			if (r < 0)
				log_error_errno(r, "Failed to re-arm a busy ZeroMQ socket: %m");
			break;
		}
		r = z->fn(z->zsock, z->userdata);
		if (r < 0)
			log_warn_errno(r, "Failed to handle a message, dropped it: %m");
	}
	z->dispatching = false;
	if (z->removed) {
		zsock_unlink(z->loop, z);
		zsock_free(z);
	}
	return 0;
}

static int on_zsock_io(sd_event_source *s, int fd, uint32_t revents,
		       void *userdata)
{
	return zsock_drain(userdata);
}

static int on_zsock_more(sd_event_source *s, void *userdata)
{
	return zsock_drain(userdata);
}

int loop_add_zsock(struct loop *loop, void *zsock, loop_zsock_fn on_readable,
		   void *userdata)
{
	struct loop_zsock *z;
	size_t size = sizeof(int);
	int fd, r;

	if (!zsock || !on_readable)
		return -EINVAL;
	if (loop_find_zsock(loop, zsock))
		return -EEXIST;
	if (zmq_getsockopt(zsock, ZMQ_FD, &fd, &size) < 0)
		return -errno;
	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	*z = (struct loop_zsock){ .loop = loop, .zsock = zsock,
				  .fn = on_readable, .userdata = userdata };
	r = sd_event_add_io(loop->event, &z->io, fd, EPOLLIN, on_zsock_io, z);
	if (r >= 0)
		r = sd_event_add_defer(loop->event, &z->more, on_zsock_more, z);
	if (r >= 0)
		r = sd_event_source_set_priority(z->more,
						 LOOP_ZSOCK_CONTINUE_PRIORITY);
	/* Messages may already be queued: their edge has passed, so look now. */
	if (r >= 0)
		r = sd_event_source_set_enabled(z->more, SD_EVENT_ONESHOT);
	if (r < 0) {
		zsock_free(z);
		return r;
	}
	z->next = loop->zsocks;
	loop->zsocks = z;
	return 0;
}

int loop_remove_zsock(struct loop *loop, void *zsock)
{
	struct loop_zsock *z = loop_find_zsock(loop, zsock);

	if (!z)
		return -ENOENT;
	if (z->dispatching) {
		/* zsock_drain() frees it when the handler returns. */
		z->removed = true;
		(void)sd_event_source_set_enabled(z->io, SD_EVENT_OFF);
		(void)sd_event_source_set_enabled(z->more, SD_EVENT_OFF);
		return 0;
	}
	zsock_unlink(loop, z);
	zsock_free(z);
	return 0;
}

int loop_zsock_check(struct loop *loop, void *zsock)
{
	struct loop_zsock *z;
	int r;

	r = zsock_has_input(zsock);
	if (r <= 0)
		return r;
	z = loop_find_zsock(loop, zsock);
	if (!z)
		return -ENOENT;
	return sd_event_source_set_enabled(z->more, SD_EVENT_ONESHOT);
}

/* ---- periodic jobs ----------------------------------------------------- */

static void loop_periodic_free(struct loop_periodic *job)
{
	free(job->name);
	free(job);
}

static int loop_cron_arm(struct loop *loop);

static void loop_cron_run_due(struct loop *loop, uint64_t now)
{
	for (struct loop_periodic *job = loop->jobs; job; job = job->next) {
		int r;

		if (job->removed || job->next_usec > now)
			continue;
		r = job->fn(loop, job->userdata);
		if (r < 0)
			log_warn_errno(r, "Failed to run periodic job %s: %m",
				       job->name);
		job->next_usec += job->period_usec;
		/* A late loop skips missed runs instead of bursting them. */
		if (job->next_usec <= now)
			job->next_usec = now + job->period_usec;
	}
}

static void loop_cron_sweep(struct loop *loop)
{
	struct loop_periodic **p = &loop->jobs;

	while (*p) {
		struct loop_periodic *job = *p;

		if (job->removed) {
			*p = job->next;
			loop_periodic_free(job);
		} else {
			p = &job->next;
		}
	}
}

static int on_cron(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct loop *loop = userdata;
	uint64_t now;
	int r;

	r = sd_event_now(loop->event, CLOCK_MONOTONIC, &now);
	if (r < 0)
		return log_error_errno(r, "Failed to read the loop's clock: %m");
	loop->cron_running = true;
	loop_cron_run_due(loop, now);
	loop->cron_running = false;
	loop_cron_sweep(loop);
	r = loop_cron_arm(loop);
	if (r < 0)
		return log_error_errno(r, "Failed to re-arm the periodic job timer: %m");
	return 0;
}

/* Points the one cron timer at the earliest due job. */
static int loop_cron_arm(struct loop *loop)
{
	uint64_t next = UINT64_MAX;
	int r;

	for (struct loop_periodic *job = loop->jobs; job; job = job->next)
		if (!job->removed)
			next = MIN(next, job->next_usec);
	if (next == UINT64_MAX)
		return loop->cron ? sd_event_source_set_enabled(loop->cron, SD_EVENT_OFF) : 0;
	if (!loop->cron) {
		r = sd_event_add_time(loop->event, &loop->cron, CLOCK_MONOTONIC,
				      next, LOOP_TIMER_ACCURACY_USEC, on_cron, loop);
		if (r < 0)
			return r;
	} else {
		r = sd_event_source_set_time(loop->cron, next);
		if (r < 0)
			return r;
	}
	return sd_event_source_set_enabled(loop->cron, SD_EVENT_ON);
}

static struct loop_periodic *loop_find_periodic(struct loop *loop, const char *name)
{
	for (struct loop_periodic *job = loop->jobs; job; job = job->next)
		if (!job->removed && streq(job->name, name))
			return job;
	return NULL;
}

int loop_add_periodic(struct loop *loop, const char *name, uint64_t period_usec,
		      loop_timer_fn fn, void *userdata)
{
	struct loop_periodic *job;
	uint64_t now;
	int r;

	if (!name || !fn || period_usec == 0)
		return -EINVAL;
	if (loop_find_periodic(loop, name))
		return -EEXIST;
	r = sd_event_now(loop->event, CLOCK_MONOTONIC, &now);
	if (r < 0)
		return r;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->name = strdup(name);
	if (!job->name) {
		free(job);
		return -ENOMEM;
	}
	job->period_usec = period_usec;
	job->next_usec = now + period_usec;
	job->fn = fn;
	job->userdata = userdata;
	job->next = loop->jobs;
	loop->jobs = job;
	if (!loop->cron_running) /* on_cron() re-arms when it is done */
		return loop_cron_arm(loop);
	return 0;
}

int loop_remove_periodic(struct loop *loop, const char *name)
{
	struct loop_periodic *job = loop_find_periodic(loop, name);

	if (!job)
		return -ENOENT;
	job->removed = true;
	if (loop->cron_running)
		return 0;
	loop_cron_sweep(loop);
	return loop_cron_arm(loop);
}

/* ---- one-shot timers ----------------------------------------------------- */

static void loop_timer_unlink(struct loop_timer *t)
{
	if (!t->owned_by_loop)
		return;
	if (t->prev)
		t->prev->next = t->next;
	else
		t->loop->timers = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->owned_by_loop = false;
}

static void loop_timer_destroy(void *userdata)
{
	struct loop_timer *t = userdata;

	loop_timer_unlink(t);
	free(t);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct loop_timer *t = userdata;
	bool owned = t->owned_by_loop;
	int r;

	r = t->fn(t->loop, t->userdata);
	if (r < 0)
		log_warn_errno(r, "Failed to run a timer: %m");
	/* The loop's own reference goes now; sd-event frees t after we return. */
	if (owned && t->owned_by_loop) {
		loop_timer_unlink(t);
		sd_event_source_disable_unref(s);
	}
	return 0;
}

int loop_add_timer(struct loop *loop, uint64_t delay_usec, loop_timer_fn fn,
		   void *userdata, sd_event_source **ret)
{
	struct loop_timer *t;
	int r;

	if (!fn)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = (struct loop_timer){ .loop = loop, .fn = fn, .userdata = userdata };
	r = sd_event_add_time_relative(loop->event, &t->source, CLOCK_MONOTONIC,
				       delay_usec, LOOP_TIMER_ACCURACY_USEC,
				       on_timer, t);
	if (r < 0) {
		free(t);
		return r;
	}
	r = sd_event_source_set_destroy_callback(t->source, loop_timer_destroy);
	if (r < 0) {
		sd_event_source_disable_unref(t->source);
		free(t);
		return r;
	}
	if (ret) {
		*ret = t->source;
		return 0;
	}
	t->owned_by_loop = true;
	t->next = loop->timers;
	if (loop->timers)
		loop->timers->prev = t;
	loop->timers = t;
	return 0;
}
