/*
 * Acting on a validated consolidation command (consolidation.c calls
 * consolidation_execute() on the loop thread, with the validation's model):
 * every candidate is marked disrupting for reason Underutilized and
 * tainted karpenter.sh/disrupted; a replace sends ONE launch plan for all
 * of their pods (replace.c); from then on disruption.c's pass advances
 * them like any replaced node — deleted once every pod has a Ready node,
 * abandoned (untainted, DisruptionBlocked) after replacement-timeout.
 * The decision is logged in Karpenter's words (pkg/controllers/disruption/
 * types.go Command.String: "delete, terminating 2 nodes (5 pods)
 * node/type/capacity, … and replacing with on-demand node from types a,
 * b"), counted, and published as disruption_decision on ENDPOINT_DECISIONS.
 * Cleanup style: one arena per call, released at the end.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/karpenter.h"
#include "proto/schema.h"
#include "reaper/consolidation.h"
#include "reaper/disruption.h"

/* The log line and the decision's explanation hold at most this much. */
#define DECISION_TEXT_LEN 2048
/* Instance types named in the log line (Karpenter's InstanceTypeList
 * prints a handful too). */
#define DECISION_LOG_TYPES 5

struct target {
	const struct proto_nodeclaim *nc;
	const struct proto_node *node;
	struct claim_work *w;
	uint32_t node_index;
};

static size_t append(char *buf, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static size_t append(char *buf, size_t at, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (at >= DECISION_TEXT_LEN)
		return at;
	va_start(ap, fmt);
	k = vsnprintf(buf + at, DECISION_TEXT_LEN - at, fmt, ap);
	va_end(ap);
	return k < 0 ? at : at + (size_t)k;
}

/* The pods of the model's node that would move ("ns/name"), in a. */
static char **node_pods(struct arena *a, const struct cluster *c, uint32_t node, uint32_t *n)
{
	char **v = arena_calloc(a, c->n_pods + 1, sizeof(*v));
	char key[2 * PROTO_MAX_NAME_LEN + 2];

	*n = 0;
	for (uint32_t p = 0; v && p < c->n_pods && *n < PROTO_MAX_POD_KEYS; p++) {
		const struct pod *pod = &c->pods[p];
		if (pod->node != c->nodes[node].name || pod->dies_with_node)
			continue;
		snprintf(key, sizeof(key), "%s/%s", strtab_str(&c->st, pod->ns),
			 strtab_str(&c->st, pod->name));
		v[(*n)++] = arena_strdup(a, key);
	}
	return v;
}

/* Command.String, and ", savings $X/h" for a replace. */
static void describe(char *buf, const struct target *t, uint32_t n, unsigned pods,
		     const struct proto_launch_plan *plan, const struct consolidation_command *cmd)
{
	size_t at = append(buf, 0, "%s, terminating %u nodes (%u pods) ",
			   plan ? "replace" : "delete", n, pods);

	for (uint32_t i = 0; i < n; i++)
		at = append(buf, at, "%s%s/%s/%s", i ? ", " : "", t[i].node->name,
			    t[i].nc->instance_type ?: "?", proto_capacity_type_name(t[i].nc->capacity_type));
	if (!plan || !plan->n_nodeclaims) {
		if (cmd->savings > 0)
			at = append(buf, at, ", savings $%.4f/h", cmd->savings);
		return;
	}
	const struct proto_planned_nodeclaim *o = &plan->nodeclaims[0];
	unsigned cts = cmd->res.placement->claims[0].capacity_types;
	const char *kind = cts == 1u << CT_SPOT		? "spot node"
			   : cts == 1u << CT_ON_DEMAND ? "on-demand node"
						       : "node";
	if (plan->n_nodeclaims > 1) /* 1→N (ConsolidationSplit): the first of them */
		at = append(buf, at, " and replacing with %u nodes, the first: %s from types ",
			    plan->n_nodeclaims, kind);
	else
		at = append(buf, at, " and replacing with %s from types ", kind);
	for (uint32_t i = 0; i < o->n_instance_types && i < DECISION_LOG_TYPES; i++)
		at = append(buf, at, "%s%s", i ? ", " : "", o->instance_types[i].name);
	if (o->n_instance_types > DECISION_LOG_TYPES)
		at = append(buf, at, " and %u other(s)", o->n_instance_types - DECISION_LOG_TYPES);
	append(buf, at, ", savings $%.4f/h", cmd->savings);
}

/* Publishes the decision for kanna-tap (and anyone subscribed). */
static void publish(struct reaper *r, struct arena *a, const struct cluster *c, const struct target *t,
		    uint32_t n, const struct consolidation_candidate *v,
		    const struct consolidation_command *cmd, const struct proto_launch_plan *plan,
		    const char *text)
{
	struct proto_msg m = { .env.type = PROTO_MSG_DISRUPTION_DECISION };
	struct proto_disruption_decision *d = &m.body.disruption_decision;
	char id[64];
	int k;

	if (!r->decisions_tx)
		return;
	snprintf(id, sizeof(id), "consolidation-%llu-%llu", (unsigned long long)clock_realtime_ms(),
		 (unsigned long long)r->pass);
	d->id = arena_strdup(a, id);
	d->reason = plan ? PROTO_DISRUPT_CONSOLIDATION_REPLACE : PROTO_DISRUPT_CONSOLIDATION_DELETE;
	d->candidates = arena_calloc(a, n + 1, sizeof(*d->candidates));
	if (!d->id || !d->candidates)
		return;
	for (uint32_t i = 0; i < n && i < PROTO_MAX_DISRUPTION_NODES; i++) {
		struct proto_disruption_candidate *x = &d->candidates[d->n_candidates++];
		x->node = (char *)t[i].node->name;
		x->nodeclaim = (char *)t[i].nc->name;
		x->nodepool = (char *)t[i].nc->nodepool;
		x->instance_type = (char *)t[i].nc->instance_type;
		x->capacity_type = t[i].nc->capacity_type;
		x->price = v[cmd->candidates[i]].price > 0 ? v[cmd->candidates[i]].price : 0;
		x->pods = node_pods(a, c, t[i].node_index, &x->n_pods);
	}
	if (plan) {
		d->replacements = plan->nodeclaims;
		d->n_replacements = plan->n_nodeclaims;
	}
	d->savings = cmd->savings;
	d->explanation = (char *)text;
	if ((k = msg_send(&r->io, r->decisions_tx, &m, ZMQ_DONTWAIT)) < 0)
		log_debug("Failed to publish a disruption decision: %s", strerror(-k));
}

/* Marks, taints and counts every candidate (the plan comes after). */
static void mark(struct reaper *r, struct target *t, uint32_t n, bool replace, uint64_t now)
{
	for (uint32_t i = 0; i < n; i++) {
		t[i].w->disrupting = REASON_UNDERUTILIZED;
		t[i].w->disrupting_since_usec = now;
		/* Nothing more is planned for them: the command's plan is theirs. */
		t[i].w->plan_sent = true;
		termination_taint_node(r, t[i].w, t[i].node);
		disruption_record(r, t[i].nc, REASON_UNDERUTILIZED, replace ? "replace" : "delete");
	}
}

static void unmark(struct reaper *r, struct target *t, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		disruption_abandon(r, t[i].w, t[i].nc, t[i].node,
				   "its replacement could not be sent to the launcher");
}

/* The candidates' objects now; false when one is gone. */
static bool resolve(struct reaper *r, const struct cluster *c, const struct consolidation_candidate *v,
		    const char *const *claims, const struct consolidation_command *cmd,
		    struct target *t, unsigned *pods)
{
	*pods = 0;
	for (uint32_t i = 0; i < cmd->n_candidates; i++) {
		uint32_t k = cmd->candidates[i];
		const struct state_entry *e = state_store_get(reaper_store(r), PROTO_OBJECT_NODECLAIM,
							      "", claims[k]);
		const struct proto_pod *blocker;

		if (!e || !(t[i].node = disruption_node_of(r, e->obj.nodeclaim)) ||
		    !(t[i].w = reaper_work(r, claims[k])))
			return false;
		t[i].nc = e->obj.nodeclaim;
		t[i].node_index = v[k].node;
		*pods += disruption_movable_pods(r, t[i].node, &blocker);
		(void)c;
	}
	return true;
}

void consolidation_execute(struct reaper *r, const struct cluster *c,
			   const struct consolidation_candidate *v, const char *const *claims,
			   const struct consolidation_command *cmd)
{
	uint32_t n = cmd->n_candidates;
	struct target *t = calloc(n + 1, sizeof(*t));
	bool replace = cmd->res.placement && cmd->res.placement->n_claims > 0;
	struct proto_launch_plan plan = { 0 };
	struct arena a = { 0 };
	char *text = malloc(DECISION_TEXT_LEN);
	unsigned pods;

	if (!t || !text || !resolve(r, c, v, claims, cmd, t, &pods)) {
		log_info("abandoning consolidation attempt: a candidate is gone");
		goto out;
	}
	mark(r, t, n, replace, clock_monotonic_usec());
	if (replace) {
		const struct proto_nodeclaim **ncs = calloc(n, sizeof(*ncs));
		struct claim_work **ws = calloc(n, sizeof(*ws));
		int k = -ENOMEM;

		for (uint32_t i = 0; ncs && ws && i < n; i++) {
			ncs[i] = t[i].nc;
			ws[i] = t[i].w;
		}
		if (ncs && ws)
			k = disruption_send_plan(r, &a, c, cmd->res.placement, ncs, ws, n, &plan);
		free(ncs);
		free(ws);
		if (k < 0) {
			log_error_errno(k, "Failed to send the replacement for %u underutilized node(s) "
					"to the launcher: %m", n);
			unmark(r, t, n);
			goto out;
		}
	}
	describe(text, t, n, pods, replace ? &plan : NULL, cmd);
	log_info_kv(LOG_KV({ "nodeclaim", t[0].nc->name }, { "nodepool", t[0].nc->nodepool ?: "" },
			   { "reason", REASON_UNDERUTILIZED }),
		    "disrupting nodeclaim(s) via %s", text);
	for (uint32_t i = 0; replace && i < n; i++) {
		struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, t[i].nc->name,
					       t[i].nc->uid };
		kube_event_record(r->d->events, &ref, KUBE_EVENT_NORMAL, "DisruptionWaitingReadiness",
				  "Waiting on readiness to continue disruption");
	}
	publish(r, &a, c, t, n, v, cmd, replace ? &plan : NULL, text);
out:
	arena_done(&a);
	free(text);
	free(t);
}
