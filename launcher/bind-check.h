/*
 * The check just before the launcher binds planned pods to a Node: do they
 * still fit it as it is now? Between the plan and the bind the cluster
 * moves on — the default scheduler places pods on a Node as soon as it is
 * Ready, and a binding that failed or was postponed by a restart is
 * retried by the reconcile pass later — so a bind trusted to the plan
 * alone overcommits the Node or breaks anti-affinity. The check is the
 * scheduler's own (sched_check_node() over cluster_from_state()), against
 * the best knowledge there is: the replica, amended by what this launcher
 * wrote moments ago that the replica may not show yet (`recent`: the Nodes
 * it created, the pods it bound). Pure functions over stores, so that
 * every rule is unit-tested; launch-node.c acts on the verdicts.
 */
#ifndef KANNA_LAUNCHER_BIND_CHECK_H
#define KANNA_LAUNCHER_BIND_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "state/state-store.h"
#include "proto/proto.h"

struct sched_node_fit; /* model/solver.h */

/* An entry of `recent` the replica never catches up with (a Node deleted
 * before it was seen, a binding whose pod vanished) is dropped after this:
 * the replica lags by seconds, not minutes. */
#define BIND_RECENT_KEEP_MS (2LL * 60 * 1000)

struct bind_check_input {
	const struct state_store *replica;
	/* What this launcher wrote moments ago; entries' seq is the monotonic
	 * ms of the write (bind_recent_*). May be NULL. */
	const struct state_store *recent;
	const char *region;
	const struct proto_catalog *catalog; /* the launcher's live catalog; NULL: the shipped one */
	const char *node;                    /* the Node's name */
	int64_t now_ms; /* wall clock, for planned-pod nominations */
};

/*
 * Would pods[0..n), bound to in->node in this order, each fit it? Every
 * pod bound there (replica and recent) and every pod accepted before it
 * count; so do the pods planned for the Node's NodeClaim that are not
 * among these. Taints a booting Node carries for a while (Karpenter's
 * ephemeral taints: not-ready, unreachable, uninitialized, unregistered —
 * the launcher's own hold among them) are not held against the pods; its
 * startup taints are, as the kube-scheduler holds them: Karpenter binds
 * nothing, it nominates, and a pod lands on the Node only once every
 * NoSchedule/NoExecute taint it does not tolerate is gone. Fills ret[0..n).
 * Returns 0; -ENOENT when neither store has the Node; another negative
 * errno with err filled when the model cannot be built.
 */
int bind_check(const struct bind_check_input *in, const struct proto_pod *const *pods, size_t n,
	       struct sched_node_fit *ret, char *err, size_t errlen);

/*
 * Has the pod a claim not bound to a volume yet (or not there)? Binding
 * such a pod is kube-scheduler's: its VolumeBinding binds the claim (for a
 * WaitForFirstConsumer class: has it provisioned in the chosen node's
 * zone) before the pod, and a pods/binding from the launcher would skip
 * that and leave the pod waiting for its volume for ever. Karpenter binds
 * no pod at all (it nominates): the launcher leaves such a pod nominated to
 * its NodeClaim, does not hold the Node for it, and the kube-scheduler
 * places it once the Node is Ready.
 */
bool bind_pod_has_unbound_claim(const struct state_store *replica, const struct proto_pod *p);

/*
 * Has the NodeClaim planned pods still to bind: pending and Unschedulable,
 * none of its claims unbound (bind_pod_has_unbound_claim()),
 * not bound by us moments ago — while it speaks for them (DESIGN §2 rule
 * 4, state_nodeclaim_holds_planned_pods() at now_ms)? Once its nomination
 * lapses they are the schedulers' to plan again, and binding them here too
 * would race that new plan (a NodeClaim launched for a pod bound elsewhere).
 */
bool bind_claim_has_waiting_pods(const struct state_store *replica, const struct state_store *recent,
				 const struct proto_nodeclaim *nc, int64_t now_ms);

/* recent: pod bound to node by us at now_ms (a copy, with nodeName set). */
int bind_recent_note_pod(struct state_store *recent, const struct proto_pod *pod, const char *node,
			 uint64_t now_ms);
/* recent: a Node we created or labelled, as the replica will show it.
 * Returns 0, noting nothing, when the replica shows it with these labels
 * already; it may show an earlier version without them (the kubelet
 * registered it before our POST, which met 409 and became a PATCH), and
 * a check against that version refuses every pod that selects a label of
 * the NodePool's template. */
int bind_recent_note_node(struct state_store *recent, const struct state_store *replica,
			  const struct proto_node *node, uint64_t now_ms);
/* recent: the binding of ns/name failed; nothing of it is ours to count. */
void bind_recent_forget_pod(struct state_store *recent, const char *ns, const char *name);
/* Did we bind ns/name moments ago (the replica may not show it yet)? */
bool bind_recent_has_pod(const struct state_store *recent, const char *ns, const char *name);
/* Drops what the replica shows now (a pod bound or gone, a Node with the
 * labels we gave it) and what is older than BIND_RECENT_KEEP_MS. */
void bind_recent_purge(struct state_store *recent, const struct state_store *replica, uint64_t now_ms);

#endif
