/*
 * kanna-reaper's state, shared by its files: daemon.c (start-up, the
 * periodic pass), termination.c (a deleted NodeClaim or Node: taint,
 * drain, terminate, finalizers), drain.c (which pods go, in what order,
 * through the Eviction API), instances.c (batched TerminateInstances) and
 * disruption.c (emptiness, expiry and drift — drift.h decides it: which
 * NodeClaims to remove, within budgets, replacements first), consolidation.c
 * (underutilized nodes) and replace.c (their shared execution, disruption.h).
 *
 * Everything here is derived again from the cluster state on every pass
 * (DESIGN §2 rule 4): what the reaper keeps in memory only avoids sending
 * a request twice and remembers when it may retry. A reaper killed at any
 * moment starts again from the objects: a deleting NodeClaim with its
 * finalizer is still to be terminated, a tainted Node still to be drained.
 */
#ifndef KANNA_REAPER_REAPER_H
#define KANNA_REAPER_REAPER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/aws.h"
#include "common/aws-ec2.h"
#include "common/daemon.h"
#include "common/hashmap.h"
#include "common/metrics.h"
#include "state/msg.h"
#include "state/replica.h"
#include "reaper/config.h"
#include "reaper/pod-events.h"

/* Eviction retries (a PodDisruptionBudget said no: 429): Karpenter's
 * eviction queue backs off exponentially from 100 ms to 10 s per pod. */
#define EVICTION_BACKOFF_BASE_USEC (100ULL * 1000)
#define EVICTION_BACKOFF_CAP_USEC (10ULL * 1000 * 1000)
/* A FailedDraining Event per Node at most this often (the recorder folds
 * repeats too; this keeps the API quiet while a PDB holds for hours). */
#define DRAIN_EVENT_PERIOD_USEC (30ULL * 1000 * 1000)
/* Pods of priority this high or more are critical (system-cluster-critical
 * is 2000000000, system-node-critical 2000001000): evicted last. */
#define CRITICAL_POD_PRIORITY 2000000000

/* How a claim's instance stands (instances.c). */
enum instance_state {
	INSTANCE_UNKNOWN,  /* nothing asked yet */
	INSTANCE_ASKED,    /* TerminateInstances queued or in flight */
	INSTANCE_GONE,     /* shutting-down, terminated or not found */
};

/* What the reaper is doing for one NodeClaim (or a Node without one), by name. */
/* termination.c: the userdata of one kind of request, so nothing is
 * allocated for it — a request cancelled at teardown calls nothing back. */
#define CLAIM_CALLS 5
struct claim_call {
	struct claim_work *w;
	unsigned what;
};

struct claim_work {
	char *name;
	uint64_t seen_pass;
	/* The last pod event (pod-events.c): emptiness and consolidateAfter
	 * count from it. */
	struct pod_event_clock pod_events;
	/* Voluntary disruption (disruption.c). */
	const char *disrupting;      /* reason ("Empty", "Expired") once decided */
	uint64_t disrupting_since_usec;
	char **replacements;         /* NodeClaims launched to take its pods */
	uint32_t n_replacements;
	bool plan_sent;
	uint64_t taint_seen_usec;    /* first seen tainted by a reaper before this one */
	struct held_plan *held_plan; /* replace.c: its replacements' plan, sent once tainted */
	/* replace.c: since when every replacement is Ready and the what-if
	 * still finds no place for the pods (0: not so); disruption-resume.c:
	 * when this reaper last gave the disruption up (its untaint on its
	 * way; 0: not since). */
	uint64_t ready_unplaced_usec, abandoned_usec;
	/* Consolidation (consolidation.c): the last Unconsolidatable reason
	 * told (a hash: once per change). */
	uint64_t unconsolidatable_hash;
	/* Termination (termination.c): requests in flight. */
	bool claim_delete_sent, node_delete_sent, taint_sent, node_finalizer_sent,
		claim_finalizer_sent;
	struct claim_call calls[CLAIM_CALLS];
	uint64_t last_drain_event_usec;
	bool drained_logged, logged_terminating;
	unsigned in_flight;          /* requests whose answer has not come */
};

struct reaper_metrics {
	struct metrics_counter *nodeclaims_terminated, *nodes_terminated, *nodes_drained,
		*pods_evicted, *eviction_requests, *pods_deleted, *disrupted, *decisions,
		*messages_dropped, *instances_terminated, *instances_collected;
	struct metrics_histogram *termination_seconds, *decision_seconds;
	struct metrics_gauge *allowed_disruptions, *eligible;
};

struct reaper {
	struct reaper_config *cfg; /* replaced in place by a reload */
	struct daemon *d;
	struct replica *replica;
	char *region;
	struct aws_client *aws;
	struct aws_start *aws_start;
	bool aws_ok, working;
	struct msg_io io;
	struct sock *plans_tx;       /* replacements go to the launcher as plans */
	struct hashmap work;         /* claim name → struct claim_work */
	struct hashmap evictions;    /* "ns/name" → struct eviction (drain.c) */
	struct hashmap instances;    /* instance id → struct instance (instances.c) */
	struct instance_batch *batch;
	struct inventory *inventory; /* inventory.c */
	struct gc *gc;               /* gc.c */
	struct interruption *interruption; /* interruption.c (NULL until its metrics exist) */
	struct consolidation *consolidation; /* consolidation.c */
	struct sock *decisions_tx;   /* disruption decisions, for kanna-tap (ENDPOINT_DECISIONS) */
	uint64_t pass;
	uint64_t plan_seq;
	struct reaper_metrics m;
};

/* work.c */
const struct state_store *reaper_store(const struct reaper *r);
/* The work record of a claim, made when missing (NULL: out of memory). */
struct claim_work *reaper_work(struct reaper *r, const char *name);
/* Forgets the records no pass looked at (all: every one, at teardown). */
void reaper_forget_work(struct reaper *r, bool all);

/* replace.c: releases a launch plan held back (NULL: nothing). */
struct held_plan;
void held_plan_free(struct held_plan *h);

/* termination.c: advance every termination; one pass. */
void termination_pass(struct reaper *r, uint64_t now_usec);
/* Deletes a NodeClaim for removal (disruption.c): its termination follows. */
int termination_delete_claim(struct reaper *r, const char *name, struct claim_work *w);
/* Deletes a Node (once); its termination follows. */
void termination_delete_node(struct reaper *r, struct claim_work *w, const struct proto_node *n);
/* Taints the Node karpenter.sh/disrupted:NoSchedule (once). */
void termination_taint_node(struct reaper *r, struct claim_work *w, const struct proto_node *n);

/* drain.c: evicts what must go from node (taints are termination.c's).
 * Returns the number of pods the drain still waits for (0: drained). */
unsigned drain_node(struct reaper *r, const struct proto_node *node,
		    const struct proto_nodeclaim *nc, struct claim_work *w, uint64_t now_usec);
/* Forgets the retry state of pods no drain looked at this pass (all:
 * every one, at teardown). */
void drain_forget(struct reaper *r, bool all);
/* Does the pod stay on a draining node (DaemonSet, mirror, finished, or
 * tolerates karpenter.sh/disrupted:NoSchedule)? */
bool drain_pod_stays(const struct proto_pod *p);
/* What a drain does with one pod now (Karpenter's order). */
enum drain_action {
	DRAIN_STAYS,               /* goes with the Node */
	DRAIN_DELETE_FOR_DEADLINE, /* terminationGracePeriod: delete it now */
	DRAIN_LEAVING,             /* being deleted already: wait */
	DRAIN_AFTER_NONCRITICAL,   /* critical: waits for the others to go */
	DRAIN_DO_NOT_DISRUPT,      /* karpenter.sh/do-not-disrupt holds it */
	DRAIN_EVICT,               /* through the Eviction API */
};
#define DRAIN_NO_DEADLINE INT64_MAX
/* left_s: seconds to the NodeClaim's termination deadline (or
 * DRAIN_NO_DEADLINE); noncritical_left: drain_noncritical_left() of the
 * Node's pods; deleted_for_deadline: a deadline deletion was sent. */
enum drain_action drain_pod_action(const struct proto_pod *p, unsigned noncritical_left,
				   int64_t left_s, bool deleted_for_deadline);
/* How many of the pods must go and are not critical. */
unsigned drain_noncritical_left(const struct proto_pod *const *pods, uint32_t n);

/* instances.c: asks for the instance to be terminated (batched, retried)
 * and says how it stands. */
enum instance_state instance_terminate(struct reaper *r, const char *instance_id,
				       uint64_t now_usec);
void instance_forget(struct reaper *r, const char *instance_id);
int instances_init(struct reaper *r);
void instances_done(struct reaper *r);

/* inventory.c: the cluster's instances as EC2 last described them
 * (DescribeInstances filtered on the tag kubernetes.io/cluster/<name>),
 * refreshed every gc-period; the garbage collection (gc.c) and drift
 * (subnet, security groups) read it. struct ec2_instance: common/aws-ec2.h
 * (instance_id, state, subnet_id, image_id, security_groups[] sorted,
 * n_security_groups, launch_time_s, nodeclaim and nodepool tags). */
/* NULL: not among the instances of the last complete description (or no
 * description has completed yet: see inventory_described_usec()). */
const struct ec2_instance *inventory_instance(const struct reaper *r, const char *instance_id);
/* Monotonic time the last complete description started (0: none yet). */
uint64_t inventory_described_usec(const struct reaper *r);
/* The same on the wall clock, Unix ms (0: none yet). */
int64_t inventory_described_wall_ms(const struct reaper *r);
/* Iteration over the last complete description: while (inventory_next(r, &it, &e)). */
size_t inventory_next(const struct reaper *r, size_t *it, const struct ec2_instance **ret);
/* Starts a description when gc-period has passed since the last one. */
void inventory_refresh(struct reaper *r, uint64_t now_usec);
int inventory_init(struct reaper *r);
void inventory_done(struct reaper *r);

/* gc.c: orphaned instances, NodeClaims whose instance is gone, NodeClaims
 * that never registered; every pass. */
void gc_pass(struct reaper *r, uint64_t now_usec);
/* Does EC2 no longer list the NodeClaim's instance (or list it
 * shutting-down), in a description taken well after its launch? */
bool gc_instance_gone(const struct reaper *r, const struct proto_nodeclaim *nc);
/* For a NodeClaim deleted before it recorded an instance, once the
 * launcher had its time to release it: 1 with *instance_id (an instance
 * tagged for it still runs), 0 (none), -EAGAIN (too early to say). */
int gc_unlaunched_instance(const struct reaper *r, const struct proto_nodeclaim *nc,
			   const char **instance_id);
int gc_init(struct reaper *r);
void gc_done(struct reaper *r);

/* interruption.c: the interruption queue (--interruption-queue): spot
 * interruption warnings, rebalance recommendations, scheduled changes and
 * instance state changes from SQS; the NodeClaims they name are deleted
 * (and so tainted, drained and terminated) at once. _new() with the
 * metrics, _start() once AWS accepted the credentials (a no-op without a
 * queue), _free() at teardown (idempotent). */
int interruption_new(struct reaper *r, struct metrics_registry *m);
int interruption_start(struct reaper *r);
void interruption_free(struct reaper *r);

/* disruption.c: emptiness, expiry and drift; one pass. */
void disruption_pass(struct reaper *r, uint64_t now_usec);
/* pod-events.c: every NodeClaim's last pod event, looked at and recorded
 * on the NodeClaim; one pass (disruption_pass() calls it first). */
void pod_events_pass(struct reaper *r, uint64_t now_usec);

/* "aws:///us-west-2a/i-0123" → "i-0123" (NULL when it is not one). */
const char *provider_instance_id(const char *provider_id);
bool has_string(char *const *v, uint32_t n, const char *s);

#endif
