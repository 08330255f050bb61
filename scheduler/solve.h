/*
 * One solve as a job for the scheduler's worker thread (common/worker.h):
 * the cluster model and the batch's pods go over with it, the result comes
 * back with it, and nothing in between touches the loop thread's state —
 * the replica goes on taking deltas, the batch goes on taking pods, and
 * the watchdog and the probes go on being answered.
 */
#ifndef KANNA_SCHEDULER_SOLVE_H
#define KANNA_SCHEDULER_SOLVE_H

#include <stdatomic.h>
#include <stddef.h>

#include "model/solver.h"
#include "proto/proto.h"

/*
 * Fault injection for tests (kanna-scheduler(1), ENVIRONMENT): every solve
 * takes at least this many milliseconds more, so that a test can watch the
 * daemon stay responsive during a long solve without building a huge one.
 */
#define SOLVE_DELAY_ENV "KANNA_FAULT_SOLVE_DELAY_MS"

struct solve_job {
	struct cluster *c;
	struct proto_pod **pods; /* the batch's: c->pods[i] is pods[i] for i < n_pods */
	size_t n_pods;
	struct sched_options opts; /* opts.cancel points at cancel */
	atomic_bool cancel;
	uint64_t delay_usec;       /* SOLVE_DELAY_ENV */
	uint64_t queued_usec;      /* CLOCK_MONOTONIC: batch taken */
	uint64_t solve_usec;       /* how long the solve itself ran */
	struct sched_result *res;  /* on success */
	int r;                     /* sched_solve_with()'s answer */
};

/* Takes c and pods[0..n) (freed with the job). deadline_usec: from now. */
int solve_job_new(struct solve_job **ret, struct cluster *c, struct proto_pod **pods, size_t n,
		  uint64_t deadline_usec);
/* Runs on the worker thread. */
void solve_job_run(void *job);
void solve_job_free(struct solve_job *j);

#endif
