/*
 * The solve job (solve.h): built on the loop thread from a batch, run on
 * the worker thread, handed back to the daemon (scheduler/daemon.c), which
 * reports, plans and frees it.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/clock.h"
#include "scheduler/solve.h"

/* The delay of SOLVE_DELAY_ENV, slept in slices so that a cancel (SIGTERM)
 * is not kept waiting. */
#define SOLVE_DELAY_SLICE_USEC (20ULL * 1000)

static uint64_t solve_delay_usec(void)
{
	const char *v = getenv(SOLVE_DELAY_ENV);
	char *end;
	unsigned long long ms;

	if (!v || !*v)
		return 0;
	ms = strtoull(v, &end, 10);
	return *end ? 0 : ms * 1000;
}

int solve_job_new(struct solve_job **ret, struct cluster *c, struct proto_pod **pods, size_t n,
		  uint64_t deadline_usec)
{
	struct solve_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->c = c;
	j->pods = pods;
	j->n_pods = n;
	j->queued_usec = clock_monotonic_usec();
	atomic_init(&j->cancel, false);
	j->opts.cancel = &j->cancel;
	j->opts.deadline_usec = j->queued_usec + deadline_usec;
	j->delay_usec = solve_delay_usec();
	*ret = j;
	return 0;
}

void solve_job_run(void *job)
{
	struct solve_job *j = job;
	uint64_t t0 = clock_monotonic_usec();

	for (uint64_t slept = 0; slept < j->delay_usec && !atomic_load(&j->cancel);
	     slept += SOLVE_DELAY_SLICE_USEC)
		usleep(SOLVE_DELAY_SLICE_USEC);
	j->r = sched_solve_with(j->c, &j->opts, &j->res);
	j->solve_usec = clock_monotonic_usec() - t0;
}

void solve_job_free(struct solve_job *j)
{
	if (!j)
		return;
	sched_result_free(j->res);
	cluster_free(j->c);
	for (size_t i = 0; i < j->n_pods; i++)
		free(j->pods[i]);
	free(j->pods);
	free(j);
}
