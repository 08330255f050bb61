/*
 * The background worker (worker.h): a thread that sleeps on a condition
 * variable until the loop hands it a job, runs it, and wakes the loop by
 * writing an eventfd that an sd-event I/O source watches. The mutex guards
 * the hand-over only; the job itself runs unlocked.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop-internal.h"
#include "common/memory.h"
#include "common/worker.h"

struct worker {
	struct loop *loop;
	char *name;
	worker_done_fn done;
	void *userdata;
	int efd;
	sd_event_source *io;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* Under lock: */
	worker_run_fn run;
	void *job;         /* submitted, not yet delivered to done() */
	bool finished;     /* run(job) returned */
	bool quit;
};

static void *worker_main(void *userdata)
{
	struct worker *w = userdata;
	uint64_t one = 1;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->quit && (!w->job || w->finished))
			pthread_cond_wait(&w->wake, &w->lock);
		/* A job handed over is run even when quitting, so that it always
		 * reaches done() as run (its owner cancels it to make it short). */
		if (!w->job || w->finished)
			break;
		worker_run_fn run = w->run;
		void *job = w->job;
		pthread_mutex_unlock(&w->lock);
		run(job);
		pthread_mutex_lock(&w->lock);
		w->finished = true;
		/* Cannot fail short of a full counter (2^64 - 1 wake-ups). */
		if (write(w->efd, &one, sizeof(one)) < 0)
			log_error_errno(-errno, "Failed to wake the loop for worker %s: %m", w->name);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* On the loop thread: hands a finished job to done(). */
static void worker_deliver(struct worker *w)
{
	void *job = NULL;

	pthread_mutex_lock(&w->lock);
	if (w->job && w->finished) {
		job = w->job;
		w->job = NULL;
		w->finished = false;
	}
	pthread_mutex_unlock(&w->lock);
	if (job) {
		w->done(job, w->userdata);
		/* A job is big work (a model, a solve): what it freed goes back. */
		memory_trim();
	}
}

static int on_worker_event(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	uint64_t n;

	(void)s;
	(void)revents;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn_errno(-errno, "Failed to read a worker's wake-up: %m");
	worker_deliver(userdata);
	return 0;
}

int worker_new(struct worker **ret, struct loop *loop, const char *name, worker_done_fn done,
	       void *userdata)
{
	struct worker *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	w->loop = loop;
	w->done = done;
	w->userdata = userdata;
	w->efd = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	if (!(w->name = strdup(name))) {
		r = -ENOMEM;
		goto fail;
	}
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0) {
		r = -errno;
		goto fail;
	}
	r = sd_event_add_io(loop->event, &w->io, w->efd, EPOLLIN, on_worker_event, w);
	if (r < 0)
		goto fail;
	(void)sd_event_source_set_description(w->io, w->name);
	r = -pthread_create(&w->thread, NULL, worker_main, w);
	if (r < 0)
		goto fail;
	w->started = true;
	*ret = w;
	return 0;
fail:
	worker_free(w);
	return r;
}

int worker_submit(struct worker *w, worker_run_fn run, void *job)
{
	int r = 0;

	pthread_mutex_lock(&w->lock);
	if (w->job) {
		r = -EBUSY;
	} else {
		w->run = run;
		w->job = job;
		w->finished = false;
		pthread_cond_signal(&w->wake);
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

bool worker_busy(const struct worker *w)
{
	bool busy;

	pthread_mutex_lock((pthread_mutex_t *)&w->lock);
	busy = w->job != NULL;
	pthread_mutex_unlock((pthread_mutex_t *)&w->lock);
	return busy;
}

struct worker *worker_free(struct worker *w)
{
	if (!w)
		return NULL;
	if (w->started) {
		pthread_mutex_lock(&w->lock);
		w->quit = true;
		pthread_cond_signal(&w->wake);
		pthread_mutex_unlock(&w->lock);
		pthread_join(w->thread, NULL);
		worker_deliver(w);
	}
	sd_event_source_disable_unref(w->io);
	if (w->efd >= 0)
		close(w->efd);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w->name);
	free(w);
	return NULL;
}
