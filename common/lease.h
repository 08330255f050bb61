/*
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection does it: acquire when the Lease is absent or its holder
 * has not renewed within leaseDurationSeconds, renew every retry period,
 * and give up leadership when renewal has failed for the renew deadline.
 * Writes are optimistic (resourceVersion), so two candidates never both
 * win. Karpenter exits when it loses the lease; so do we (the supervisor
 * restarts the daemon as a standby).
 *
 * The identity is a replica's, shared by its daemons (watcher, launcher,
 * reaper: one pod or one host): holderIdentity == ours means we lead, as in
 * client-go, so siblings lead together, a restarted one resumes at once,
 * and a renewal by any of them keeps the Lease for all.
 */
#ifndef KANNA_COMMON_LEASE_H
#define KANNA_COMMON_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/kube-client.h"

/* client-go / Karpenter defaults. */
#define LEASE_DEFAULT_DURATION_USEC 15000000u
#define LEASE_DEFAULT_RENEW_DEADLINE_USEC 10000000u
#define LEASE_DEFAULT_RETRY_PERIOD_USEC 2000000u

struct lease_options {
	const char *name;      /* "karpenter-leader-election"-style */
	const char *namespace;
	const char *identity;  /* holderIdentity: the replica's (hostname, pod name) */
	/* 0 → defaults; lease_options_check() must accept them. */
	uint64_t duration_usec, renew_deadline_usec, retry_period_usec;
};

struct lease_handlers {
	void (*on_started_leading)(void *userdata);
	void (*on_stopped_leading)(void *userdata);
	void *userdata;
};

struct lease;

/*
 * client-go's NewLeaderElector refuses what would let two leaders overlap
 * (k8s.io/client-go/tools/leaderelection/leaderelection.go):
 * leaseDuration > renewDeadline, renewDeadline > JitterFactor(1.2) *
 * retryPeriod, all positive, and a non-empty identity. -EINVAL with err
 * saying which.
 */
int lease_options_check(const struct lease_options *o, char *err, size_t size);

/* -EINVAL when lease_options_check() refuses opts. */
int lease_new(struct lease **ret, struct kube_client *c, const struct lease_options *opts,
	      const struct lease_handlers *h);
struct lease *lease_free(struct lease *l);
bool lease_is_leader(const struct lease *l);
/* The current holder as last seen (may be NULL). */
const char *lease_holder(const struct lease *l);

/*
 * The decision itself, apart from I/O (tests/unit/test_lease.c). Times are
 * our monotonic clock in µs, except renew_age_usec: our realtime minus the
 * Lease's renewTime, which only siblings (same host, same clock) are
 * trusted with.
 */
struct lease_seen {
	bool held;              /* a non-empty holderIdentity */
	bool mine;              /* holderIdentity is our identity */
	bool changed;           /* resourceVersion differs from the last read */
	int64_t renew_age_usec; /* < 0: unknown or in the future */
};

struct lease_memory {
	bool leader;
	uint64_t observed_usec; /* when we last saw the record change */
	uint64_t renewed_usec;  /* when the Lease last held for our identity */
};

enum lease_step {
	LEASE_STAND_BY,         /* another holder, not yet expired */
	LEASE_ACQUIRE,          /* free or expired: take it (leaseTransitions + 1) */
	LEASE_RENEW,            /* ours: write a new renewTime */
	LEASE_SIBLING_RENEWED,  /* ours, renewed by a sibling within a retry period: no write */
};

/* After a successful read: what to do; updates m's times (not m->leader). */
enum lease_step lease_decide(const struct lease_options *o, struct lease_memory *m,
			     const struct lease_seen *s, uint64_t now);
/* A standby's next look when the holder's Lease expires before the next
 * retry period: the delay until just after it does (0: the periodic look
 * is soon enough). Without it a takeover comes up to a retry period after
 * the expiry. */
uint64_t lease_expiry_check_delay(const struct lease_options *o, const struct lease_memory *m,
				  uint64_t now);
/* A leader whose Lease has not held for the renew deadline stops leading. */
bool lease_renew_deadline_passed(const struct lease_options *o, const struct lease_memory *m,
				 uint64_t now);

#endif
