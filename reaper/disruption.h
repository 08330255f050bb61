/*
 * What the reaper's voluntary disruption methods share (replace.c):
 * lookups in the replica, and the execution every method ends in — taint,
 * plan the replacements with the solver's what-if and send them to the
 * launcher as one launch plan, delete the NodeClaim once every moved pod
 * has a Ready node, or give up and untaint. disruption.c (emptiness,
 * expiry, drift) and consolidation.c (underutilized nodes) call it; the
 * budgets they both respect are counted once a pass (struct pool_count).
 */
#ifndef KANNA_REAPER_DISRUPTION_H
#define KANNA_REAPER_DISRUPTION_H

#include "common/arena.h"
#include "common/hashmap.h"
#include "model/budget.h"
#include "model/cluster.h"
#include "model/solver.h"
#include "proto/proto.h"
#include "reaper/reaper.h"

/* A plan's NodeClaims reach the replica within a pass or two; one that has
 * not shown in this long failed and never will: stop waiting for it. */
#define REPLACEMENT_VISIBLE_WAIT_USEC (10ULL * 1000 * 1000)

/* Karpenter's disruption reasons (v1 DisruptionReason; budget reasons). */
extern const char REASON_EMPTY[], REASON_EXPIRED[], REASON_DRIFTED[], REASON_UNDERUTILIZED[];

/* A pool's budgets, per reason (model/budget.h). */
enum { ALLOW_EMPTY, ALLOW_EXPIRED, ALLOW_DRIFTED, ALLOW_UNDERUTILIZED, _ALLOW_MAX };

struct pool_count {
	uint32_t total, disrupting;
	uint32_t allowed[_ALLOW_MAX];
	uint32_t eligible[_ALLOW_MAX]; /* candidates nothing but a budget holds */
	struct budget_binding binding[_ALLOW_MAX]; /* the budget behind allowed[] */
	bool invalid;
};

/* One more node of the pool disrupting: every reason's room shrinks (a
 * budget counts the pool's disrupting nodes, whatever their reason). */
void pool_count_take(struct pool_count *pc);
/* The DisruptionBlocked Events on nc and its node when the pool's budgets
 * leave reason no room: the binding budget, its window, the nodes
 * disrupting; why: the reason as the Event shows it. */
void disruption_blocked_by_budget(struct reaper *r, const struct proto_nodeclaim *nc,
				  const struct proto_node *node, const struct proto_nodepool *np,
				  const struct pool_count *pc, const char *reason, const char *why);

const struct proto_nodepool *disruption_nodepool(struct reaper *r, const char *name);
const struct proto_node *disruption_node_of(struct reaper *r, const struct proto_nodeclaim *nc);
bool node_has_taint(const struct proto_node *n, const char *key);
/* Is x's planned pod i (alive) bound to a node other than x's own (its
 * name, else NULL)? It was planned onto x as the pod of a node x was
 * launched to replace. */
const char *disruption_planned_pod_elsewhere(struct reaper *r, const struct proto_nodeclaim *x,
					    uint32_t i);
/* Its Initialized condition is True: only then is it a disruption
 * candidate, and counted in its NodePool's budgets. */
bool claim_initialized(const struct proto_nodeclaim *nc);
/* Being deleted, tainted karpenter.sh/disrupted, or chosen by this reaper. */
bool claim_disrupting(struct reaper *r, const struct proto_nodeclaim *nc);
/* Are pods still coming to it (its Node held by the launcher, or a pod
 * planned for it pending yet, shortly after the Node was made)? Such a
 * node is no candidate for any voluntary disruption: it only looks empty. */
bool disruption_nominated(struct reaper *r, const struct proto_nodeclaim *nc, const struct proto_node *n);
/* Pods that would have to move; *blocker names one with do-not-disrupt. */
unsigned disruption_movable_pods(struct reaper *r, const struct proto_node *n,
				 const struct proto_pod **blocker);

/* Counts the decision (Karpenter: at executeCommand) and the NodeClaim. */
void disruption_record(struct reaper *r, const struct proto_nodeclaim *nc, const char *reason,
		       const char *how);
/* Deletes the NodeClaim (once): its termination follows. */
void disruption_delete(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		       const char *reason, unsigned pods);
/* Sends res's new NodeClaims to the launcher as one launch plan, built in
 * a, for the pods of the n NodeClaims ncs (their work records ws remember
 * the replacements); *plan is what went. */
int disruption_send_plan(struct reaper *r, struct arena *a, const struct cluster *c,
			 const struct sched_result *res, const struct proto_nodeclaim *const *ncs,
			 struct claim_work *const *ws, uint32_t n, struct proto_launch_plan *plan);
/* Where would the node's pods go? 1: every pod on a Ready node (delete
 * now); 0: not yet (replacements planned or coming up); < 0 an error. */
int disruption_replace(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		       const struct proto_node *node, uint64_t now_usec);
/* The first of w's replacements that is not a Ready Node yet, NULL when
 * every one is (or it has none). */
const char *disruption_replacement_pending(struct reaper *r, const struct claim_work *w);
/* Removes the karpenter.sh/disrupted taint (once asked). */
void disruption_untaint(struct reaper *r, const struct proto_node *n);
/* Takes up the disruption of a node tainted karpenter.sh/disrupted by a
 * reaper before this one (killed mid-disruption): waits for the
 * replacements it launched, found again in the objects, with the reason
 * still visible (NULL: none, consolidation's was); or untaints the node. */
void disruption_resume(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		       const struct proto_node *node, const char *reason, uint64_t now_usec);
/* Gives a disruption up: DisruptionBlocked, the node untainted, tried later. */
void disruption_abandon(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
			const struct proto_node *node, const char *why);

/* consolidation.c: underutilized nodes, after emptiness, expiry and drift
 * took their share of pools' budgets this pass. */
void consolidation_pass(struct reaper *r, struct hashmap *pools, uint64_t now_usec);
/* consolidation-execute.c: acts on a validated command over candidates
 * v (claims[i]: v[i]'s NodeClaim) of the model c; logs, Events, metrics
 * and the disruption_decision message. */
struct consolidation_candidate;
struct consolidation_command;
void consolidation_execute(struct reaper *r, const struct cluster *c,
			   const struct consolidation_candidate *v, const char *const *claims,
			   const struct consolidation_command *cmd);
int consolidation_init(struct reaper *r);
void consolidation_done(struct reaper *r);

#endif
