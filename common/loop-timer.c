/*
 * Timers on the loop: periodic jobs hang off one cron timer that points at
 * the earliest due job (Redis serverCron / run_with_period), and one-shot
 * timers are sd-event time sources with a small trampoline. Jobs may add or
 * remove jobs (themselves included) while they run. Never blocks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/loop-internal.h"

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

void loop_timers_free(struct loop *loop)
{
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
	loop->cron = NULL;
}
