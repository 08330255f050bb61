/*
 * Getting a daemon's AWS client going, as the launcher and the reaper both
 * need it: resolve credentials (the standard chain), create the client,
 * and prove the credentials with STS GetCallerIdentity before anything
 * real is asked. Until then /readyz says what is missing, and every step
 * that fails is retried every AWS_START_RETRY_USEC with a log line naming
 * where the credentials came from and what AWS said.
 */
#ifndef KANNA_COMMON_AWS_START_H
#define KANNA_COMMON_AWS_START_H

#include "common/aws.h"
#include "common/health.h"
#include "common/loop.h"

/* Missing or refused credentials are tried again this often: a user fixing
 * them sees the daemon pick them up soon, an outage is not hammered. */
#define AWS_START_RETRY_USEC (15ULL * 1000 * 1000)

struct aws_start_hooks {
	/* The client exists (once): start what calls AWS. A failure ends the
	 * daemon (loop_exit(1)). May be NULL. */
	int (*created)(struct aws_client *aws, void *userdata);
	/* STS accepted the credentials (once). */
	void (*verified)(struct aws_client *aws, void *userdata);
	void *userdata;
};

struct aws_start;

/* Starts at once; *ret_client is set when the client exists (the caller
 * frees it, after aws_start_free()). ao is copied (its strings must live
 * on). */
int aws_start_new(struct aws_start **ret, struct loop *loop, struct health_server *health,
		  const struct aws_client_options *ao, const struct aws_start_hooks *h,
		  struct aws_client **ret_client);
struct aws_start *aws_start_free(struct aws_start *s);

#endif
