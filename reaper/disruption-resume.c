/*
 * A disruption given up, and one taken up again (disruption.h): abandoned
 * — its replacements not Ready in replacement-timeout, or its command no
 * longer valid once they are (replace.c) — the node is untainted and takes
 * pods again, the replacements stay as nodes of their own, and this
 * reaper does not mistake its own taint, still in the replica, for a
 * disruption to resume; tainted by a reaper before this one (killed
 * mid-disruption), it is resumed from its replacements' planned pods or
 * untainted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/karpenter.h"
#include "proto/schema.h"
#include "reaper/disruption.h"

void disruption_untaint(struct reaper *r, const struct proto_node *n)
{
	char path[512], body[512];

	for (uint32_t i = 0; i < n->n_taints; i++) {
		if (!streq(n->taints[i].key, KARPENTER_DISRUPTED_TAINT_KEY))
			continue;
		snprintf(path, sizeof(path), KUBE_NODES_PATH "/%s", n->name);
		snprintf(body, sizeof(body),
			 "[{\"op\":\"test\",\"path\":\"/spec/taints/%u/key\",\"value\":\"%s\"},"
			 "{\"op\":\"remove\",\"path\":\"/spec/taints/%u\"}]", i,
			 KARPENTER_DISRUPTED_TAINT_KEY, i);
		(void)kube_request(r->d->kube, "PATCH", path, KUBE_JSON_PATCH, body, NULL, NULL);
		return;
	}
}

/* Gives a disruption up: the node takes pods again and is tried later. */
void disruption_abandon(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
			const struct proto_node *node, const char *why)
{
	struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, nc->name, nc->uid };

	log_warn_kv(LOG_KV({ "nodeclaim", nc->name }), "abandoning the disruption of %s (%s): %s",
		    nc->name, w->disrupting, why);
	kube_event_record(r->d->events, &ref, KUBE_EVENT_WARNING, "DisruptionBlocked",
			  "Cannot disrupt NodeClaim: %s", why);
	if (node)
		disruption_untaint(r, node);
	w->disrupting = NULL;
	w->plan_sent = false;
	w->taint_sent = false;
	w->ready_unplaced_usec = 0;
	w->abandoned_usec = clock_monotonic_usec();
	held_plan_free(w->held_plan); /* never sent: nothing was launched */
	w->held_plan = NULL;
	/* The replacements stay, as nodes of their own (Karpenter's too). */
	for (uint32_t i = 0; i < w->n_replacements; i++)
		free(w->replacements[i]);
	w->n_replacements = 0;
}

/* Launched, or on its way (not failed: Launched=False). */
static bool claim_launch_failed(const struct proto_nodeclaim *x)
{
	for (uint32_t i = 0; i < x->n_conditions; i++)
		if (streq_ptr(x->conditions[i].type, "Launched"))
			return x->conditions[i].status == PROTO_COND_FALSE;
	return false;
}

/* w->replacements := the live NodeClaims that hold a pod of node as
 * planned (DESIGN §2 rule 4); returns how many. */
static uint32_t find_replacements(struct reaper *r, struct claim_work *w,
				  const struct proto_nodeclaim *nc, const struct proto_node *node)
{
	const struct state_entry *e;
	size_t it = 0;

	for (uint32_t i = 0; i < w->n_replacements; i++)
		free(w->replacements[i]);
	w->n_replacements = 0;
	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_nodeclaim *x = e->obj.nodeclaim;
		bool holds = false;
		char **v;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || streq(x->name, nc->name) ||
		    x->deletion_time || claim_launch_failed(x))
			continue;
		for (uint32_t i = 0; i < x->n_planned_pods && !holds; i++)
			holds = streq_ptr(disruption_planned_pod_elsewhere(r, x, i), node->name);
		if (!holds || !(v = realloc(w->replacements, (w->n_replacements + 1) * sizeof(*v))))
			continue;
		w->replacements = v;
		if ((v[w->n_replacements] = strdup(x->name)))
			w->n_replacements++;
	}
	return w->n_replacements;
}

/*
 * A node tainted karpenter.sh/disrupted that this reaper did not choose:
 * one before it was killed mid-disruption. Karpenter removes such taints
 * ("If Karpenter restarts or fails with an error during a disruption
 * action, some nodes can be left tainted. Idempotently remove this taint
 * from candidates that are not in the orchestration queue", kubernetes-
 * sigs/karpenter pkg/controllers/disruption/controller.go); the
 * replacements it launched come up empty, are removed as empty, and the
 * node is replaced again. kanna reads the disruption back instead: the
 * replacements are the NodeClaims that hold the node's pods as planned;
 * the reason is the one still visible (expired, drifted) or else
 * consolidation's (its command lived in the killed reaper's memory). With
 * replacements it waits for them and plans nothing more (one not launched
 * yet takes no pods in a what-if, and would be launched twice); without,
 * a candidate still is replaced afresh, another untainted — after
 * REPLACEMENT_VISIBLE_WAIT_USEC: a plan sent just before the kill reaches
 * the replica as a NodeClaim a moment later.
 */
void disruption_resume(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		       const struct proto_node *node, const char *reason, uint64_t now_usec)
{
	uint32_t n;
	char names[256] = "";

	/* Given up by this reaper, its untaint not in the replica yet: not a
	 * disruption to take up (its replacements would be found again). Asked
	 * again should it have been lost. */
	if (w->abandoned_usec) {
		if (now_usec - w->abandoned_usec >= REPLACEMENT_VISIBLE_WAIT_USEC) {
			disruption_untaint(r, node);
			w->abandoned_usec = now_usec;
		}
		return;
	}
	n = find_replacements(r, w, nc, node);
	if (!n && !reason) {
		if (!w->taint_seen_usec)
			w->taint_seen_usec = now_usec;
		if (now_usec - w->taint_seen_usec < REPLACEMENT_VISIBLE_WAIT_USEC)
			return;
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }),
			    "nodeclaim %s is tainted for disruption but no longer a candidate: "
			    "untainting its node", nc->name);
		disruption_untaint(r, node);
		return;
	}
	w->disrupting = reason ?: REASON_UNDERUTILIZED;
	w->disrupting_since_usec = now_usec;
	w->plan_sent = n > 0;
	for (uint32_t i = 0, at = 0; i < n && at < sizeof(names); i++)
		at += (uint32_t)snprintf(names + at, sizeof(names) - at, "%s%s", i ? ", " : "",
					 w->replacements[i]);
	log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "reason", w->disrupting }),
		    "resuming the disruption of nodeclaim %s (%s): %s%s", nc->name, w->disrupting,
		    n ? "waiting for its replacement(s) " : "its pods need a place first",
		    names);
}
