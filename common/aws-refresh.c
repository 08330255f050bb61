/*
 * Background refresh of temporary AWS credentials: the credential chain
 * (aws_credentials_resolve(), blocking HTTP with short timeouts) runs on
 * one worker thread so the event loop never waits on STS, the container
 * agent or IMDS; an eventfd wakes the loop, which takes the result. Used
 * only by aws-client.c. The worker touches nothing but its own job.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/aws-internal.h"
#include "common/loop.h"

struct aws_refresh {
	pthread_t thread;
	bool joined;
	int efd;
	sd_event_source *io;
	/* inputs, owned copies */
	struct aws_credentials_options opts;
	char *profile;
	char *region;
	/* outputs, written by the worker before it signals efd */
	int result;
	struct aws_credentials *creds;
	char *why;
	aws_refresh_done_fn done;
	void *userdata;
};

static void *refresh_worker(void *userdata)
{
	struct aws_refresh *job = userdata;
	uint64_t one = 1;

	job->result = aws_credentials_resolve(&job->opts, &job->creds, &job->why);
	/* the loop reads it; a failed write would only delay the wake-up */
	if (write(job->efd, &one, sizeof(one)) != sizeof(one))
		job->result = job->result < 0 ? job->result : -EIO;
	return NULL;
}

static void refresh_join(struct aws_refresh *job)
{
	if (!job->joined) {
		pthread_join(job->thread, NULL);
		job->joined = true;
	}
}

void aws_refresh_free(struct aws_refresh *job)
{
	if (!job)
		return;
	refresh_join(job);
	sd_event_source_disable_unref(job->io);
	if (job->efd >= 0)
		close(job->efd);
	aws_credentials_free(job->creds);
	free(job->why);
	free(job->profile);
	free(job->region);
	free(job);
}

static int on_refresh_ready(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct aws_refresh *job = userdata;
	struct aws_credentials *creds;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno == EAGAIN)
		return 0;
	refresh_join(job);
	creds = job->creds;
	job->creds = NULL;
	job->done(job->result, creds, job->why, job->userdata);
	aws_refresh_free(job);
	return 0;
}

int aws_refresh_start(struct loop *loop, const struct aws_credentials_options *opts,
		      aws_refresh_done_fn done, void *userdata, struct aws_refresh **ret)
{
	struct aws_refresh *job;
	int r;

	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->joined = true; /* nothing to join until the thread exists */
	job->done = done;
	job->userdata = userdata;
	job->opts = *opts;
	job->profile = opts->profile ? strdup(opts->profile) : NULL;
	job->region = opts->region ? strdup(opts->region) : NULL;
	job->opts.profile = job->profile;
	job->opts.region = job->region;
	job->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if ((opts->profile && !job->profile) || (opts->region && !job->region) || job->efd < 0) {
		r = job->efd < 0 ? -errno : -ENOMEM;
		aws_refresh_free(job);
		return r;
	}
	r = sd_event_add_io(loop_event(loop), &job->io, job->efd, EPOLLIN, on_refresh_ready, job);
	if (r < 0) {
		aws_refresh_free(job);
		return r;
	}
	r = -pthread_create(&job->thread, NULL, refresh_worker, job);
	if (r < 0) {
		aws_refresh_free(job);
		return r;
	}
	job->joined = false;
	*ret = job;
	return 0;
}
