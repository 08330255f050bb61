/*
 * The launcher's shared state (daemon.c wires it; admit.c, launch.c and
 * reconcile.c work on it). One struct launch per NodeClaim being launched;
 * the table holds every launch in flight, keyed by NodeClaim name, so that
 * a replayed plan or a reconcile pass never starts a second one.
 */
#ifndef KANNA_LAUNCHER_LAUNCHER_H
#define KANNA_LAUNCHER_LAUNCHER_H

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "common/daemon.h"
#include "common/hashmap.h"
#include "common/kube-events.h"
#include "state/msg.h"
#include "state/state-store.h"
#include "launcher/config.h"
#include "proto/karpenter.h"
#include "model/unavailable.h"
#include "launcher/fleet-request.h"
#include "launcher/fleet-response.h"
#include "launcher/fleet.h"
#include "launcher/limits.h"
#include "launcher/nodeclass.h"
#include "proto/proto.h"

struct aws_client;
struct health_server;
struct kube_client;
struct kube_config;
struct kube_events;
struct launcher_catalog;
struct loop;
struct metrics_counter;
struct metrics_gauge;
struct metrics_histogram;
struct metrics_registry;
struct replica;
struct sock;
struct sock_ctx;
struct state_store;

/* Launch groups a NodeClaim's candidates may span, one launch template
 * each: 2 architectures × 3 AMI variants (standard, nvidia, neuron). */
#define LAUNCH_MAX_GROUPS 6

enum launch_step {
	STEP_QUEUED,
	STEP_CREATE_CLAIM,
	STEP_RESOLVE,
	STEP_FIND_INSTANCE,
	STEP_FLEET,
	STEP_DESCRIBE,
	STEP_RECORD,
	STEP_NODE,
	STEP_BIND,
	STEP_DONE,
};

struct launch_arch {
	char arch[16]; /* the launch group: "amd64", "arm64/nvidia" (launch_type_group) */
	struct launch_config cfg; /* deep copy; cfg.launch_template_name NULL until resolved */
	int error;
	char *why;
};

struct launch {
	struct launcher *l;
	char *name;
	char *uid;
	char *plan_id;
	struct proto_planned_nodeclaim *planned; /* owned; offerings pruned as ICE arrives */
	enum launch_step step;
	bool claim_existed;    /* the NodeClaim was there before us: look for its instance */
	bool needs_tag;        /* launched in a batch: karpenter.sh/nodeclaim tag still to add */
	bool busy;             /* a request or timer of ours is outstanding */
	bool deleted;          /* its NodeClaim was deleted: launch-undo.c takes over */
	bool undoing;          /* launch-undo.c has taken over */
	bool fleet_in_doubt;   /* a CreateFleet of ours may have launched what we never heard of */
	bool before_batcher;   /* counted in l->launches_before_batcher */
	unsigned attempt;      /* ClientToken attempt */
	uint8_t fleet_capacity_type; /* of the last CreateFleet */
	uint64_t finished_at;  /* monotonic µs when it reached STEP_DONE */
	unsigned failures;     /* consecutive non-capacity failures, for backoff */
	resource_vector reserved;
	uint64_t t_received;   /* monotonic µs */
	uint64_t t_mark;       /* start of our current stretch of work */
	uint64_t busy_usec;    /* our own processing time before CreateFleet */
	uint64_t deadline;     /* monotonic µs: give up (delete the NodeClaim) */
	struct launch_arch arches[LAUNCH_MAX_GROUPS];
	unsigned n_arches, n_resolving;
	fleet_launched launched;
	char fleet_batch[FLEET_CLIENT_TOKEN_MAX + 1]; /* token of its batched CreateFleet, or "" */
	char image_id[64];
	char node_name[256];
	unsigned binds_outstanding, bound;
	struct launch *next_queued;
	struct launch *next_describe; /* batch.c: waiting for DescribeInstances */
	sd_event_source *timer;
};

struct launcher {
	struct launcher_config *cfg;
	const struct kube_config *kcfg; /* the client's (kube_client_config), not ours to free */
	char *region;
	char *cluster_ca_b64;
	struct daemon *d; /* the skeleton's loop, clients and sockets (common/daemon.h) */
	struct replica *replica;
	struct sock *plans_rx, *results_tx;
	struct msg_io io;
	struct msg_dispatch plans_dispatch;
	struct aws_client *aws;
	struct aws_start *aws_start; /* credentials → client → STS (common/aws-start.h) */
	struct launcher_catalog *catalog;
	struct nodeclass_resolver *resolver;
	struct hashmap launches;      /* name → struct launch */
	struct hashmap registering;   /* NodeClaim name → uint64_t µs of the Ready patch */
	struct registering_call *registering_calls; /* reconcile.c: Ready patches in flight */
	struct hashmap releasing;     /* Node name → uint64_t µs of the patch taking its hold off */
	struct hashmap static_refused; /* static.c: NodePool → uint64_t µs before its next try */
	sd_event_source *static_soon;  /* static.c: a pass soon after a replicas change */
	struct launch *queue_head, *queue_tail;
	unsigned n_running;
	/* Launches that may still reach the CreateFleet batcher (queued, or
	 * before STEP_FLEET): none left, a batch goes without waiting. */
	unsigned launches_before_batcher;
	bool stopping; /* teardown under way */
	struct hashmap fleet_batches; /* batch.c: query text → struct fleet_batch */
	struct launch *describe_head;  /* batch.c: launches waiting for DescribeInstances */
	sd_event_source *batch_timer, *batch_soon;
	uint64_t batch_first_usec, batch_last_usec;
	struct unavailable_offerings unavailable; /* model/unavailable.h */
	/* bind-check.h: Nodes created and pods bound moments ago, until the
	 * replica shows them (entries' seq: monotonic ms of the write). */
	struct state_store recent;
	bool aws_ok, working, reconciled_once;
	struct {
		struct metrics_counter *plans, *nodeclaims_created, *nodes_created, *launched,
			*launch_failures, *pods_bound, *binds_refused, *offerings_unavailable,
			*messages_dropped, *offerings_dropped;
		struct metrics_gauge *inflight, *queued, *usage, *limit;
		struct metrics_histogram *plan_to_fleet, *launch_seconds;
	} m;
};

/* daemon.c */
const struct state_store *launcher_store(const struct launcher *l);
void launcher_publish_result(struct launcher *l, const struct launch *la,
			     enum proto_launch_outcome outcome, const char *error);
void launcher_publish_unavailable(struct launcher *l, const char *type, const char *zone,
				  uint8_t capacity_type, int64_t until_ms, const char *reason);

/* reconcile.c: frees the Ready patches still unanswered at a stop (the
 * Kubernetes client runs no callback once it is freed). */
void launcher_registering_calls_free(struct launcher *l);

/* admit.c: plans in, requirements and limits re-checked, launches queued. */
void launcher_handle_plan(struct launcher *l, const struct proto_launch_plan *plan);
/* One planned NodeClaim: 0 queued; < 0 refused (reported by Event and
 * launch result): -EEXIST already launching, -ENOENT / -EPERM its NodePool
 * or requirements, -EDQUOT limits, -EAGAIN no offering available, -ENOMEM. */
int launcher_admit(struct launcher *l, const char *plan_id, const struct proto_planned_nodeclaim *p);
bool launcher_offering_unavailable(struct launcher *l, const char *type, const char *zone,
				   uint8_t capacity_type);
void launcher_mark_unavailable(struct launcher *l, const char *type, const char *zone,
			       uint8_t capacity_type, const char *reason);
/* Publishes again the offerings of p still marked unavailable. */
void launcher_republish_unavailable(struct launcher *l, const struct proto_planned_nodeclaim *p);
/* In-use resources of a NodePool: NodeClaims in the replica plus launches. */
void launcher_nodepool_usage(struct launcher *l, const char *nodepool, resource_vector *ret);
void resource_vector_from(const struct proto_resource *res, uint32_t n, resource_vector *ret);
void launcher_update_usage_metrics(struct launcher *l);
/* launch.c: the launch templates np's launches will want, made ahead. */
void launcher_prewarm_templates(struct launcher *l, const struct proto_nodepool *np);

/* reconcile.c: takes the hold (objects.h) off nc's Node, written by us,
 * once no pod planned for it waits to be bound. */
void launcher_release_hold(struct launcher *l, const struct proto_nodeclaim *nc,
			   const struct proto_node *node);

#define NODECLAIMS_PATH KARPENTER_NODECLAIMS_PATH
#define MERGE_PATCH KUBE_MERGE_PATCH
/* Labels a Node and NodeClaim may carry (catalog ~25 + pool + well-known). */
#define LAUNCH_MAX_LABELS 96

/* launch.c: the chain of steps and the launch's lifecycle. */
struct launch *launch_new(struct launcher *l, const char *name, const char *plan_id,
			  const struct proto_planned_nodeclaim *planned);
void launch_free(struct launch *la);
/* Adds to the table and the queue; starts it when a slot is free. */
int launch_enqueue(struct launcher *l, struct launch *la);
/* It is past the batcher (added to a batch, past STEP_FLEET, or ended):
 * no longer counted in launches_before_batcher. */
void launch_reached_batcher(struct launch *la);
/* Starts queued launches while fewer than max-concurrent-launches run. */
void launcher_pump(struct launcher *l);

/* Everything one CreateFleet call needs, built from a launch. */
#define FLEET_CALL_MAX_TAGS 72
struct fleet_call {
	struct fleet_input in;
	const char *arches[LAUNCH_MAX_GROUPS];
	struct launch_config configs[LAUNCH_MAX_GROUPS];
	struct fleet_tag tags[FLEET_CALL_MAX_TAGS];
	char cluster_tag[300];
	char token[FLEET_CLIENT_TOKEN_MAX + 1];
};

/* launch.c, for the step files */
/* The launch leaves the run slots (done or given up). */
void launch_finish(struct launch *la, bool keep_reservation);
void launch_event(struct launch *la, enum kube_event_kind kind, const char *reason,
		  const char *text);
/* launch-fleet.c: the EC2 steps. */
void launch_find_instance(struct launch *la);
void launch_fleet(struct launch *la);
/* launch-node.c: the Kubernetes steps after the launch. */
void launch_record(struct launch *la);
void launch_create_node(struct launch *la);
/* The Node it creates, into l->recent for the bind check until the replica
 * shows it; -ENOENT when the launch does not know its instance type. */
int launch_note_node(struct launch *la);
/* launch-bind.c: the planned pods that still fit the Node, bound. */
void launch_bind_pods(struct launch *la);

/* launch.c and launch-fleet.c, for batch.c */
struct ec2_instance;
struct aws_client;
struct aws_response;
void launch_advance(struct launch *la);
void launch_account_busy(struct launch *la);
void launch_resume(struct launch *la);
void launch_give_up(struct launch *la, enum proto_launch_outcome outcome, const char *why);
void launch_retry_later(struct launch *la, const char *what, const char *why);
int launch_adopt_instance(struct launch *la, const struct ec2_instance *e);
/* The launch group of a catalog type: its architecture, "/nvidia" when it
 * has GPUs, "/neuron" when it has accelerators (the AMI variant it boots;
 * Karpenter's launch templates are per AMI); NULL for an unknown type. */
const char *launch_type_group(const char *type, void *userdata);
bool launch_offering_is_unavailable(const char *type, const char *zone, uint8_t ct, void *userdata);
/* per_claim: with the karpenter.sh/nodeclaim and Name tags (one instance). */
void launch_fleet_call(struct launch *la, struct fleet_call *fc, bool per_claim);
/* Sends the launch's own CreateFleet (ClientToken from its UID). */
void launch_send_fleet(struct launch *la);
void launch_note_fleet_sent(struct launch *la, uint8_t ct, size_t n_overrides, const char *token);
void launch_described(struct launch *la, const struct ec2_instance *e, const char *error);
/* Gives the launch up: no candidate offering is left to try. */
void launch_no_candidate_left(struct launch *la);
/* EC2 refused a CreateFleet as a whole (a final error, not throttling or a
 * fault of its own): nothing was launched under its token. */
bool launch_fleet_refused(const struct aws_response *resp);
/* Reads a CreateFleet 200 answer, zones placed from la's subnets where the
 * overrides echo none; < 0 when it cannot be read (nothing to release). */
int launch_fleet_read(struct launch *la, const struct aws_response *resp, fleet_result *fr);
/* Did EC2 answer 2xx with a body that could not be read (cut off, or not
 * the document it should be)? The call was carried out. */
bool launch_fleet_answer_unreadable(const struct aws_response *resp);
/* A 200 answer that cannot be read: the call may have launched, so the
 * launch looks for its instance (by tag, by batch) before any new call. */
void launch_fleet_unreadable(struct launch *la);
/* Capacity errors of a CreateFleet answer: marked unavailable and pruned
 * from la's candidates. Returns how many; *first gets the first error. */
size_t launch_fleet_errors(struct launch *la, const fleet_result *fr, char *first, size_t size);

/* batch.c: identical CreateFleet calls become one (TotalTargetCapacity N,
 * ClientToken from the members' UIDs, recorded on each NodeClaim first);
 * DescribeInstances calls become one per batch of instances. */
int fleet_batcher_add(struct launcher *l, struct launch *la, const char *key);
int describe_batcher_add(struct launcher *l, struct launch *la);
void batcher_done(struct launcher *l);
/* karpenter.sh/nodeclaim and Name tags on an instance launched in a batch. */
void launcher_tag_instance(struct launcher *l, const char *instance_id, const char *nodeclaim);
/* Recovery of a NodeClaim launched in a batch: which instance is its. */
void launch_find_batched_instance(struct launch *la);

/* launch-undo.c: a NodeClaim deleted while it is being launched. */
void launcher_nodeclaim_deleted(struct launcher *l, const char *name, const char *uid);
void launch_undo(struct launch *la);
/* launch.c: runs la's chain again after delay_usec, whatever its deadline. */
int launch_retry_in(struct launch *la, uint64_t delay_usec);

/* reconcile.c: recovery on start and the periodic level-triggered pass. */
int launcher_reconcile(struct loop *loop, void *userdata);
/* static.c: static NodePools (spec.replicas) brought up to their count;
 * observe: every replica change (daemon.c), so that a new count, a
 * NodeClaim deleted or a Node tainted for a drift is acted on at once;
 * done: at teardown. */
void launcher_static_reconcile(struct launcher *l);
void launcher_static_observe(struct launcher *l, const struct proto_object *old,
			     const struct proto_object *now);
void launcher_static_done(struct launcher *l);

#endif
