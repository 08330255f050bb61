/*
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection does it: acquire when the Lease is absent or its holder
 * has not renewed within leaseDurationSeconds, renew every retry period,
 * and give up leadership when renewal has failed for the renew deadline.
 * Writes are optimistic (resourceVersion), so two candidates never both
 * win. Karpenter exits when it loses the lease; so do we (the supervisor
 * restarts the daemon as a standby).
 */
#ifndef KANNA_COMMON_LEASE_H
#define KANNA_COMMON_LEASE_H

#include "common/kube-client.h"

/* client-go / Karpenter defaults. */
#define LEASE_DEFAULT_DURATION_SEC 15
#define LEASE_DEFAULT_RENEW_DEADLINE_SEC 10
#define LEASE_DEFAULT_RETRY_PERIOD_SEC 2

struct lease_options {
	const char *name;      /* "karpenter-leader-election"-style */
	const char *namespace;
	const char *identity;  /* holderIdentity: hostname_pid */
	unsigned duration_sec, renew_deadline_sec, retry_period_sec; /* 0 → defaults */
};

struct lease_handlers {
	void (*on_started_leading)(void *userdata);
	void (*on_stopped_leading)(void *userdata);
	void *userdata;
};

struct lease;

int lease_new(struct lease **ret, struct kube_client *c, const struct lease_options *opts,
	      const struct lease_handlers *h);
struct lease *lease_free(struct lease *l);
bool lease_is_leader(const struct lease *l);
/* The current holder as last seen (may be NULL). */
const char *lease_holder(const struct lease *l);

#endif
