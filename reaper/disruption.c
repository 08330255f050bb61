/*
 * Voluntary disruption other than consolidation: emptiness, expiry, drift.
 *  - Empty: a NodeClaim of a NodePool whose consolidationPolicy removes
 *    empty nodes (v1 WhenEmpty and WhenEmptyOrUnderutilized, v1beta1
 *    WhenEmpty, v1alpha5 ttlSecondsAfterEmpty) whose Node has carried no
 *    pod but DaemonSet, mirror and finished ones for consolidateAfter,
 *    counted from its last pod event (pod-events.h: Karpenter's
 *    lastPodEventTime, on the NodeClaim, so that a restart keeps it).
 *  - Expired: older than its expireAfter (the NodeClaim's, else its
 *    NodePool's; v1alpha5 ttlSecondsUntilExpired).
 *  - Drifted: no longer what its NodePool and EC2NodeClass would launch
 *    (reaper/drift.h: hashes, requirements, AMI, subnet, security groups).
 *    Checked after emptiness, as Karpenter v1 orders its methods
 *    (pkg/controllers/disruption/controller.go: emptiness, drift, then
 *    consolidation): an empty drifted node simply goes as Empty.
 * karpenter.sh/do-not-disrupt on the NodeClaim, its Node or one of its pods
 * holds all three. The NodePool's disruption budgets (model/budget.h) cap how
 * many of its nodes disrupt at once; Nodes being deleted or tainted
 * karpenter.sh/disrupted count as disrupting.
 *
 * A node whose pods must go somewhere is replaced first, as the seed
 * scenario S1 shows (replace.c: taint, plan replacements with the solver's
 * what-if, delete once every pod has a Ready node, or give up after
 * replacement-timeout). Called by daemon.c once a pass; consolidation
 * (consolidation.c) follows in the same pass, within what the budgets
 * have left.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "model/budget.h"
#include "proto/karpenter.h"
#include "proto/schema.h"
#include "reaper/disruption.h"
#include "reaper/drift.h"
#include "reaper/static.h"

/* By ALLOW_* index. */
static const char *const reasons[_ALLOW_MAX] = { REASON_EMPTY, REASON_EXPIRED, REASON_DRIFTED,
						 REASON_UNDERUTILIZED };

static unsigned allow_index(const char *reason)
{
	for (unsigned k = 0; k < _ALLOW_MAX; k++)
		if (reason == reasons[k])
			return k;
	return ALLOW_DRIFTED;
}

/* The NodeClaim's Initialized condition is True (the launcher sets it
 * once the Node is Ready and registered: launcher/reconcile.c). */
bool claim_initialized(const struct proto_nodeclaim *nc)
{
	for (uint32_t i = 0; i < nc->n_conditions; i++)
		if (streq_ptr(nc->conditions[i].type, "Initialized"))
			return nc->conditions[i].status == PROTO_COND_TRUE;
	return false;
}

/* Budgets per NodePool, for every reason, once a pass. */
static int count_pools(struct reaper *r, struct hashmap *pools, int64_t now_s)
{
	const struct state_entry *e;
	size_t it = 0;
	char err[256];

	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;
		const struct proto_node *n;
		struct pool_count *pc;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || !nc->nodepool)
			continue;
		if (!(pc = hashmap_get(pools, nc->nodepool))) {
			if (!(pc = calloc(1, sizeof(*pc))) || hashmap_put(pools, nc->nodepool, pc, NULL) < 0) {
				free(pc);
				return -ENOMEM;
			}
		}
		/* Karpenter's BuildDisruptionBudgetMapping: only initialized nodes
		 * count towards the total — a replacement still coming up must not
		 * raise a percentage's round-up (10% of 10 nodes + 1 launching
		 * would allow 2) — and a node that is not Ready is disrupting. */
		n = disruption_node_of(r, nc);
		if (!claim_initialized(nc) || (!n && !nc->deletion_time))
			continue;
		pc->total++;
		pc->disrupting += claim_disrupting(r, nc) || !n || n->ready != PROTO_COND_TRUE;
	}
	it = 0;
	const char *name;
	void *v;
	while (hashmap_next(pools, &it, &name, &v)) {
		struct pool_count *pc = v;
		const struct proto_nodepool *np = disruption_nodepool(r, name);

		if (!np)
			continue;
		/* v1 made expiry forceful: its budgets do not apply (their reasons
		 * are Empty, Drifted, Underutilized); before v1 they did. */
		pc->allowed[ALLOW_EXPIRED] = pc->total;
		for (unsigned k = 0; k < _ALLOW_MAX && !pc->invalid; k++) {
			struct budget_binding *b = &pc->binding[k];

			if (k == ALLOW_EXPIRED && np->source_api == PROTO_API_V1)
				continue;
			/* the watcher reports a malformed budget on the NodePool */
			if (budget_binding_find(np->budgets, np->n_budgets, reasons[k], now_s, pc->total,
						b, err, sizeof(err)) < 0) {
				pc->invalid = true;
				break;
			}
			if (b->index == BUDGET_BINDING_NONE)
				pc->allowed[k] = pc->total;
			else
				pc->allowed[k] = b->nodes > pc->disrupting
							 ? (uint32_t)MIN(b->nodes - pc->disrupting,
									 UINT32_MAX)
							 : 0;
			if (k != ALLOW_EXPIRED)
				metrics_gauge_set(r->m.allowed_disruptions, pc->allowed[k], name,
						  reasons[k], NULL);
		}
	}
	return 0;
}

/* Karpenter's disruption Blocked Event goes on the Node and the NodeClaim. */
void disruption_blocked_by_budget(struct reaper *r, const struct proto_nodeclaim *nc,
				  const struct proto_node *node, const struct proto_nodepool *np,
				  const struct pool_count *pc, const char *reason, const char *why)
{
	struct kube_object_ref cref = { "karpenter.sh/v1", "NodeClaim", NULL, nc->name, nc->uid };
	struct kube_object_ref nref = { "v1", "Node", NULL, node->name, node->uid };
	char budget[512];

	budget_binding_describe(np->budgets, &pc->binding[allow_index(reason)], pc->total, budget,
				sizeof(budget));
	kube_event_record(r->d->events, &cref, KUBE_EVENT_NORMAL, "DisruptionBlocked",
			  "Cannot disrupt NodeClaim (%s): no allowed disruptions due to the budgets of "
			  "nodepool %s: %s, %u disrupting", why, np->name, budget, pc->disrupting);
	kube_event_record(r->d->events, &nref, KUBE_EVENT_NORMAL, "DisruptionBlocked",
			  "Cannot disrupt Node (%s): no allowed disruptions due to the budgets of "
			  "nodepool %s: %s, %u disrupting", why, np->name, budget, pc->disrupting);
}

/* Karpenter's NodePoolBlockedForDisruptionReason (pkg/controllers/
 * disruption/events/events.go, published by helpers.go BuildDisruption-
 * BudgetMapping when a pool with nodes allows a reason none at all), with
 * the binding budget added. Karpenter publishes it whenever the method has
 * candidates anywhere; kanna only when one of this pool's is held, so an
 * idle pool under a zero budget stays quiet. Repeats fold into one Event
 * (common/kube-events.h; Karpenter dedupes for 1 minute). */
static void pool_blocked(struct reaper *r, const char *name, const struct pool_count *pc)
{
	const struct proto_nodepool *np = disruption_nodepool(r, name);
	struct kube_object_ref ref = { "karpenter.sh/v1", "NodePool", NULL, name, NULL };
	char budget[512];

	if (!np || pc->invalid || !pc->total)
		return;
	ref.uid = np->uid;
	if (np->source_api == PROTO_API_V1BETA1)
		ref.api_version = "karpenter.sh/v1beta1";
	else if (np->source_api == PROTO_API_V1ALPHA5)
		ref = (struct kube_object_ref){ "karpenter.sh/v1alpha5", "Provisioner", NULL, name,
						np->uid };
	for (unsigned k = 0; k < _ALLOW_MAX; k++) {
		const struct budget_binding *b = &pc->binding[k];

		if (k == ALLOW_EXPIRED || !pc->eligible[k] || b->index == BUDGET_BINDING_NONE ||
		    b->nodes)
			continue;
		budget_binding_describe(np->budgets, b, pc->total, budget, sizeof(budget));
		kube_event_record(r->d->events, &ref, KUBE_EVENT_NORMAL, "DisruptionBlocked",
				  "No allowed disruptions for disruption reason %s due to blocking budget: "
				  "%s", reasons[k], budget);
	}
}

/* The EC2NodeClass of a NodeClaim (its nodeClassRef, else its NodePool's). */
static const struct proto_nodeclass *nodeclass_named(struct reaper *r,
						     const struct proto_nodeclaim *nc,
						     const struct proto_nodepool *np)
{
	const char *name = nc->nodeclass ?: np->nodeclass_ref.name;
	const struct state_entry *e = name ? state_store_get(reaper_store(r), PROTO_OBJECT_NODECLASS,
							     "", name)
					   : NULL;

	return e ? e->obj.nodeclass : NULL;
}

/* Why the NodeClaim should go (NULL: it stays), given its movable pods;
 * *drift says how it drifted when the reason is Drifted. */
static const char *candidate_reason(struct reaper *r, struct claim_work *w,
				    const struct proto_nodeclaim *nc, const struct proto_nodepool *np,
				    unsigned pods, uint64_t now_usec, enum drift_reason *drift)
{
	const char *instance_id = provider_instance_id(nc->provider_id);
	/* v1: the NodeClaim's own (-1: Never; stamped from the template at
	 * launch), else its NodePool's. Before v1 expiry was the pool's,
	 * read live (v1alpha5 ttlSecondsUntilExpired, v1beta1
	 * disruption.expireAfter): changing it reaches existing nodes, and the
	 * launcher's stamp (launcher/objects.c) — or the v1 CRD's 720h default
	 * when there is none — must not override it. */
	int64_t expire_s = np->source_api == PROTO_API_V1 && nc->expire_after_s ? nc->expire_after_s
										: np->expire_after_s;
	/* v1beta1 WhenUnderutilized and v1alpha5 consolidation.enabled delete
	 * empty nodes too, at once (they know no consolidateAfter for it). */
	/* A static pool (spec.replicas) ignores its consolidation policy:
	 * its nodes stay, empty or not (upstream emptiness.go ShouldDisrupt:
	 * OwnedByStaticNodePool); expiry and drift still replace them. */
	bool empties = !np->static_capacity &&
		       (np->consolidation_policy == PROTO_CONSOLIDATE_WHEN_EMPTY ||
		       (np->source_api == PROTO_API_V1 &&
			(np->consolidation_policy == PROTO_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED ||
			 np->consolidation_policy == PROTO_CONSOLIDATE_BALANCED)));
	bool empties_now = np->source_api != PROTO_API_V1 &&
			   np->consolidation_policy == PROTO_CONSOLIDATE_WHEN_UNDERUTILIZED;

	if (expire_s > 0 && clock_realtime_ms() - nc->creation_time >= expire_s * 1000)
		return REASON_EXPIRED;
	/* Empty since its last pod event (the pods counted there are these). */
	if (!pods && (empties_now || (empties && np->consolidate_after_s >= 0 &&
				      pod_event_age_usec(&w->pod_events, now_usec) >=
					      (uint64_t)np->consolidate_after_s * 1000000)))
		return REASON_EMPTY;
	/* The instance as EC2 last described it (NULL until the inventory has
	 * it: no subnet or security group drift until then). */
	*drift = drift_check(nc, np, nodeclass_named(r, nc, np),
			     instance_id ? inventory_instance(r, instance_id) : NULL);
	return *drift != DRIFT_NONE ? REASON_DRIFTED : NULL;
}

static void consider(struct reaper *r, const struct proto_nodeclaim *nc, struct hashmap *pools,
		     uint64_t now_usec)
{
	const struct proto_nodepool *np = disruption_nodepool(r, nc->nodepool);
	const struct proto_node *node = disruption_node_of(r, nc);
	const struct proto_pod *blocker;
	struct pool_count *pc = hashmap_get(pools, nc->nodepool ?: "");
	struct claim_work *w;
	enum drift_reason drift = DRIFT_NONE;
	const char *reason;
	char why[64];
	unsigned pods;
	int k;

	/* Karpenter's NewCandidate skips a node not initialized ("state node
	 * isn't initialized", kubernetes-sigs/karpenter
	 * pkg/controllers/disruption/types.go): the budgets do not count it
	 * (count_pools), so disrupting it would go past them. */
	if (!np || !node || node->ready != PROTO_COND_TRUE || nc->deletion_time || node->deletion_time ||
	    !claim_initialized(nc) || !(w = reaper_work(r, nc->name)))
		return;
	pods = disruption_movable_pods(r, node, &blocker);
	if (w->disrupting) {
		if (now_usec - w->disrupting_since_usec > r->cfg->replacement_timeout_usec) {
			disruption_abandon(r, w, nc, node,
					   w->n_replacements && !disruption_replacement_pending(r, w)
						   ? "its pods found no place on Ready nodes in time"
						   : "its replacements did not become Ready in time");
			return;
		}
		termination_taint_node(r, w, node);
		k = np->static_capacity ? static_replaced(r, np, nc)
		    : pods		? disruption_replace(r, w, nc, node, now_usec)
					: 1;
		if (k > 0)
			disruption_delete(r, w, nc, w->disrupting, pods);
		return;
	}
	if (disruption_nominated(r, nc, node)) /* its pods are on their way: a pod event */
		return;
	reason = candidate_reason(r, w, nc, np, pods, now_usec, &drift);
	/* "Drifted (AMIDrift)": the drift's kind in logs and Events. */
	snprintf(why, sizeof(why), "%s%s%s%s", reason ?: "", drift ? " (" : "",
		 drift_reason_name(drift), drift ? ")" : "");
	/* Tainted by a reaper before this one (killed mid-disruption): go on
	 * with it — it is counted as disrupting already — or, when it is no
	 * longer a candidate, give the node back (replace.c). */
	if (node_has_taint(node, KARPENTER_DISRUPTED_TAINT_KEY)) {
		disruption_resume(r, w, nc, node, reason, now_usec);
		return;
	}
	w->abandoned_usec = 0; /* a disruption given up: its untaint went through */
	if (!reason || !pc || pc->invalid)
		return;
	if (nc->do_not_disrupt || node->do_not_disrupt || blocker) {
		struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, nc->name, nc->uid };
		char who[2 * PROTO_MAX_NAME_LEN + 16];

		if (blocker)
			snprintf(who, sizeof(who), "pod %s/%s", blocker->ns, blocker->name);
		else
			snprintf(who, sizeof(who), "%s %s", nc->do_not_disrupt ? "nodeclaim" : "node",
				 nc->do_not_disrupt ? nc->name : node->name);
		kube_event_record(r->d->events, &ref, KUBE_EVENT_NORMAL, "DisruptionBlocked",
				  "Cannot disrupt NodeClaim (%s): %s has the \"%s\" annotation", why,
				  who, KARPENTER_DO_NOT_DISRUPT_ANNOTATION);
		return;
	}
	pc->eligible[allow_index(reason)]++;
	if (pc->allowed[allow_index(reason)] == 0) {
		disruption_blocked_by_budget(r, nc, node, np, pc, reason, why);
		return;
	}
	pool_count_take(pc);
	if (drift)
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "nodepool", nc->nodepool ?: "" },
				   { "drift", drift_reason_name(drift) }),
			    "nodeclaim %s has drifted: %s", nc->name, drift_reason_name(drift));
	w->disrupting = reason;
	w->disrupting_since_usec = now_usec;
	/* A static pool's node is replaced by the launcher (launcher/static.c
	 * keeps the count), never through a what-if: the replacement is the
	 * pool's own. Expired: deleted at once, then replaced (upstream's
	 * expiry is forceful). Drifted: tainted, so that the launcher stops
	 * counting it and launches its replacement; deleted once that is
	 * Ready (static_replaced(); upstream disruption/staticdrift.go). */
	if (np->static_capacity ? reason == REASON_EXPIRED : !pods) {
		disruption_delete(r, w, nc, reason, 0);
		return;
	}
	if (np->static_capacity)
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "reason", reason }),
			    "disrupting nodeclaim %s (%s): static nodepool %s replaces it first",
			    nc->name, why, np->name);
	else
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "reason", reason }),
			    "disrupting nodeclaim %s (%s): %u pod(s) need a place first", nc->name,
			    why, pods);
	termination_taint_node(r, w, node);
}

void disruption_pass(struct reaper *r, uint64_t now_usec)
{
	uint32_t eligible[_ALLOW_MAX] = { 0 };
	struct hashmap pools = { 0 };
	const struct state_entry *e;
	const char *name;
	void *v;
	size_t it = 0;

	pod_events_pass(r, now_usec);
	if (count_pools(r, &pools, clock_realtime_ms() / 1000) >= 0) {
		while ((e = state_store_next(reaper_store(r), &it)))
			if (e->obj.kind == PROTO_OBJECT_NODECLAIM && e->obj.nodeclaim->provider_id &&
			    *e->obj.nodeclaim->provider_id)
				consider(r, e->obj.nodeclaim, &pools, now_usec);
		consolidation_pass(r, &pools, now_usec);
	}
	it = 0;
	while (hashmap_next(&pools, &it, &name, &v)) {
		const struct pool_count *pc = v;

		pool_blocked(r, name, pc);
		for (unsigned i = 0; i < _ALLOW_MAX; i++)
			eligible[i] += pc->eligible[i];
		free(v);
	}
	hashmap_done(&pools);
	for (unsigned i = 0; i < _ALLOW_MAX; i++)
		metrics_gauge_set(r->m.eligible, eligible[i], reasons[i], NULL);
}
