/*
 * One background thread for long work that must not hold up the event
 * loop (a big solve), so that health probes, the watchdog, Lease renewal
 * and message intake go on meanwhile (STYLE 14). One job at a time: the
 * loop thread submits a job, the worker thread runs it, and the job's
 * completion comes back on the loop thread through an eventfd. The job
 * must touch nothing the loop thread uses while it runs; what it needs is
 * handed over with it and comes back with it.
 */
#ifndef KANNA_COMMON_WORKER_H
#define KANNA_COMMON_WORKER_H

#include <stdbool.h>

#include "common/loop.h"
#include "common/util.h"

struct worker;

/* Runs on the worker thread. */
typedef void (*worker_run_fn)(void *job);
/* Runs on the loop thread once run() returned. */
typedef void (*worker_done_fn)(void *job, void *userdata);

int worker_new(struct worker **ret, struct loop *loop, const char *name, worker_done_fn done,
	       void *userdata);
/* Hands job to the thread; -EBUSY while another job is out. */
int worker_submit(struct worker *w, worker_run_fn run, void *job);
/* A job submitted whose done() has not run yet. */
bool worker_busy(const struct worker *w);
/*
 * Waits for the job that runs (ask it to stop first: the worker cannot
 * interrupt it), then stops the thread. A job finished but not yet
 * delivered is handed to done() here, so that its owner can free it.
 */
struct worker *worker_free(struct worker *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct worker *, worker_free);

#endif
