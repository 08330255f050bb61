/*
 * Voluntary disruption other than consolidation: emptiness, expiry, drift.
 *  - Empty: a NodeClaim of a NodePool whose consolidationPolicy removes
 *    empty nodes (v1 WhenEmpty and WhenEmptyOrUnderutilized, v1beta1
 *    WhenEmpty, v1alpha5 ttlSecondsAfterEmpty) whose Node has carried no
 *    pod but DaemonSet, mirror and finished ones for consolidateAfter. The
 *    clock starts again when a pod lands (and, after a restart, when the
 *    reaper first sees the node empty: late, never early).
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
 * scenario S1 shows: it is tainted, the solver's what-if (the scheduler's
 * own code, model/what-if.h) places its pods on the other nodes and on new
 * NodeClaims, those go to the launcher as a plan, and the node is deleted
 * only once the what-if places every pod on Nodes that are Ready. A node
 * whose replacements do not come in replacement-timeout is untainted and
 * tried again later. Deleting starts termination (termination.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "model/budget.h"
#include "model/from-state.h"
#include "model/karpenter.h"
#include "model/plan.h"
#include "model/what-if.h"
#include "proto/schema.h"
#include "reaper/drift.h"
#include "reaper/reaper.h"

/* A replacement is planned for at most this many new NodeClaims. */
#define REPLACEMENT_MAX_NODECLAIMS 10
/* A plan's NodeClaims reach the replica within a pass or two; one that has
 * not shown in this long failed and never will: stop waiting for it. */
#define REPLACEMENT_VISIBLE_WAIT_USEC (10ULL * 1000 * 1000)

static const char REASON_EMPTY[] = "Empty";
static const char REASON_EXPIRED[] = "Expired";
static const char REASON_DRIFTED[] = "Drifted";

/* A pool's budgets, per reason (model/budget.h). */
enum { ALLOW_EMPTY, ALLOW_EXPIRED, ALLOW_DRIFTED, _ALLOW_MAX };

struct pool_count {
	uint32_t total, disrupting;
	uint32_t allowed[_ALLOW_MAX];
	uint32_t eligible[_ALLOW_MAX]; /* candidates nothing but a budget holds */
	bool invalid;
};

static unsigned allow_index(const char *reason)
{
	return reason == REASON_EMPTY ? ALLOW_EMPTY : reason == REASON_EXPIRED ? ALLOW_EXPIRED
									       : ALLOW_DRIFTED;
}

static const struct proto_nodepool *nodepool_named(struct reaper *r, const char *name)
{
	const struct state_entry *e = name ? state_store_get(reaper_store(r), PROTO_OBJECT_NODEPOOL,
							     "", name)
					   : NULL;

	return e ? e->obj.nodepool : NULL;
}

static const struct proto_node *node_of(struct reaper *r, const struct proto_nodeclaim *nc)
{
	const struct state_entry *e = nc->node_name && *nc->node_name
					      ? state_store_get(reaper_store(r), PROTO_OBJECT_NODE, "",
								nc->node_name)
					      : NULL;

	return e ? e->obj.node : NULL;
}

static bool node_has_taint(const struct proto_node *n, const char *key)
{
	for (uint32_t i = 0; n && i < n->n_taints; i++)
		if (streq(n->taints[i].key, key))
			return true;
	return false;
}

static bool disrupting(struct reaper *r, const struct proto_nodeclaim *nc)
{
	const struct proto_node *n = node_of(r, nc);
	const struct claim_work *w = hashmap_get(&r->work, nc->name);

	return nc->deletion_time || (n && n->deletion_time) ||
	       node_has_taint(n, KARPENTER_DISRUPTED_TAINT_KEY) || (w && w->disrupting);
}

/* Pods that would have to move; *blocker names one with do-not-disrupt. */
static unsigned movable_pods(struct reaper *r, const struct proto_node *n,
			     const struct proto_pod **blocker)
{
	const struct state_pod_set *set = state_store_pods_on(reaper_store(r), n->name);
	unsigned k = 0;

	*blocker = NULL;
	for (uint32_t i = 0; set && i < set->n; i++) {
		const struct proto_pod *p = set->pods[i];
		if (drain_pod_stays(p) || p->deletion_time)
			continue;
		k++;
		if (p->do_not_disrupt && !*blocker)
			*blocker = p;
	}
	return k;
}

/* Budgets per NodePool, for every reason, once a pass. */
static int count_pools(struct reaper *r, struct hashmap *pools, int64_t now_s)
{
	const struct state_entry *e;
	size_t it = 0;
	char err[256];

	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;
		struct pool_count *pc;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || !nc->nodepool)
			continue;
		if (!(pc = hashmap_get(pools, nc->nodepool))) {
			if (!(pc = calloc(1, sizeof(*pc))) || hashmap_put(pools, nc->nodepool, pc, NULL) < 0) {
				free(pc);
				return -ENOMEM;
			}
		}
		pc->total++;
		pc->disrupting += disrupting(r, nc);
	}
	it = 0;
	const char *name;
	void *v;
	while (hashmap_next(pools, &it, &name, &v)) {
		struct pool_count *pc = v;
		const struct proto_nodepool *np = nodepool_named(r, name);

		if (!np)
			continue;
		/* v1 made expiry forceful: its budgets do not apply (their reasons
		 * are Empty, Drifted, Underutilized); before v1 they did. */
		pc->allowed[ALLOW_EXPIRED] = pc->total;
		if (budget_allowed_disruptions(np->budgets, np->n_budgets, REASON_EMPTY, now_s, pc->total,
					       pc->disrupting, &pc->allowed[ALLOW_EMPTY], err,
					       sizeof(err)) < 0 ||
		    budget_allowed_disruptions(np->budgets, np->n_budgets, REASON_DRIFTED, now_s,
					       pc->total, pc->disrupting, &pc->allowed[ALLOW_DRIFTED],
					       err, sizeof(err)) < 0 ||
		    (np->source_api != PROTO_API_V1 &&
		     budget_allowed_disruptions(np->budgets, np->n_budgets, REASON_EXPIRED, now_s,
						pc->total, pc->disrupting, &pc->allowed[ALLOW_EXPIRED],
						err, sizeof(err)) < 0)) {
			pc->invalid = true; /* the watcher reports it on the NodePool */
			continue;
		}
		metrics_gauge_set(r->m.allowed_disruptions, pc->allowed[ALLOW_EMPTY], name, REASON_EMPTY,
				  NULL);
		metrics_gauge_set(r->m.allowed_disruptions, pc->allowed[ALLOW_DRIFTED], name,
				  REASON_DRIFTED, NULL);
	}
	return 0;
}

/* Once per disrupted NodeClaim, when it is decided (Karpenter counts at
 * executeCommand): "replace" when replacements were launched for it,
 * else "delete". */
static void record_decision(struct reaper *r, const struct proto_nodeclaim *nc, const char *reason,
			    const char *how)
{
	metrics_counter_add(r->m.decisions, 1, how, reason, NULL);
	metrics_counter_add(r->m.disrupted, 1, nc->nodepool ?: "", reason, NULL);
}

static void delete_candidate(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
			     const char *reason, unsigned pods)
{
	struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, nc->name, nc->uid };

	if (w->claim_delete_sent)
		return;
	log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "nodepool", nc->nodepool ?: "" },
			   { "reason", reason }),
		    "disrupting nodeclaim(s) via delete, terminating 1 nodes (%u pods) %s/%s/%s, reason %s",
		    pods, nc->node_name ?: nc->name, nc->instance_type ?: "?",
		    proto_capacity_type_name(nc->capacity_type), reason);
	kube_event_record(r->d->events, &ref, KUBE_EVENT_NORMAL, "DisruptionTerminating",
			  "Disrupting NodeClaim: %s", reason);
	if (!w->plan_sent) /* counted as "replace" when its replacements went out */
		record_decision(r, nc, reason, "delete");
	termination_delete_claim(r, nc->name, w);
}

static const char *nodeclass_of(const char *nodepool, void *userdata)
{
	const struct proto_nodepool *np = nodepool_named(userdata, nodepool);

	return np ? np->nodeclass_ref.name : NULL;
}

static int send_replacement(struct reaper *r, const struct cluster *c, const struct sched_result *res,
			    const struct proto_nodeclaim *nc, struct claim_work *w)
{
	struct arena a = { 0 };
	struct plan_context ctx = { .batch_id = ++r->plan_seq,
				    .state_seq = reaper_store(r)->seq,
				    .nonce = ((uint64_t)clock_realtime_ms() << 16) ^ (uint64_t)getpid(),
				    .nodeclass_of = nodeclass_of, .userdata = r };
	struct proto_msg m = { .env.type = PROTO_MSG_LAUNCH_PLAN };
	int k = plan_build(&a, c, res, &ctx, &m.body.launch_plan);

	if (k >= 0)
		k = msg_send(&r->io, r->plans_tx, &m, ZMQ_DONTWAIT);
	if (k >= 0) {
		struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, nc->name, nc->uid };
		for (uint32_t i = 0; i < m.body.launch_plan.n_nodeclaims; i++) {
			const struct proto_planned_nodeclaim *o = &m.body.launch_plan.nodeclaims[i];
			char **v = realloc(w->replacements, (w->n_replacements + 1) * sizeof(*v));

			if (v && (v[w->n_replacements] = strdup(o->id)))
				w->n_replacements++;
			if (v)
				w->replacements = v;
			log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "replacement", o->id }),
				    "launching replacement nodeclaim %s for %u pod(s) of %s (%u instance "
				    "type option(s), cheapest %s)", o->id, o->n_pods, nc->name,
				    o->n_instance_types,
				    o->n_instance_types ? o->instance_types[0].name : "-");
			kube_event_record(r->d->events, &ref, KUBE_EVENT_NORMAL, "DisruptionLaunching",
					  "Launching NodeClaim: %s", o->id);
		}
	}
	arena_done(&a);
	return k;
}

/* Is the node being disrupted (tainted karpenter.sh/disrupted, deleting,
 * or chosen by this reaper)? *w: its claim's work record, if any. */
static bool node_disrupting(struct reaper *r, const char *name, const struct claim_work **w)
{
	const struct state_entry *e = state_store_get(reaper_store(r), PROTO_OBJECT_NODE, "", name);
	const struct proto_node *n = e ? e->obj.node : NULL;

	*w = n && n->nodeclaim ? hashmap_get(&r->work, n->nodeclaim) : NULL;
	return n && (n->deletion_time || node_has_taint(n, KARPENTER_DISRUPTED_TAINT_KEY) ||
		     (*w && (*w)->disrupting));
}

/*
 * The nodes the what-if takes away: node idx and every other node being
 * disrupted, whose pods need places too (Karpenter adds the pods of nodes
 * marked for deletion to every simulation): two nodes replaced at once
 * must not each count on the room the other's replacement brings.
 * -EAGAIN while another's replacements are asked for but not yet in the
 * replica (a plan made now would launch for its pods again).
 */
static int removal_set(struct reaper *r, const struct cluster *c, uint32_t idx, bool planning,
		       uint64_t now_usec, uint32_t *out, uint32_t *n)
{
	*n = 0;
	out[(*n)++] = idx;
	for (uint32_t i = 0; i < c->n_nodes; i++) {
		const struct claim_work *o;

		if (i == idx || c->nodes[i].in_flight ||
		    !node_disrupting(r, strtab_str(&c->st, c->nodes[i].name), &o))
			continue;
		out[(*n)++] = i;
		if (!planning || !o || now_usec - o->disrupting_since_usec > REPLACEMENT_VISIBLE_WAIT_USEC)
			continue;
		for (uint32_t k = 0; k < o->n_replacements; k++)
			if (!state_store_get(reaper_store(r), PROTO_OBJECT_NODECLAIM, "", o->replacements[k]))
				return -EAGAIN;
	}
	return 0;
}

/*
 * Where would the node's pods go? 1: every pod on a Ready node (delete
 * now); 0: not yet (replacements planned or coming up); < 0 an error.
 */
static int replace(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		   const struct proto_node *node, uint64_t now_usec)
{
	struct from_state_options fo = { .region = r->region, .catalog_path = r->cfg->catalog,
					 .now_ms = clock_realtime_ms() };
	struct cluster *c = NULL;
	struct what_if wi = { .max_new_claims = w->plan_sent ? 0 : REPLACEMENT_MAX_NODECLAIMS,
			      .max_new_price = -1 };
	struct what_if_result res = { 0 };
	uint32_t idx = UINT32_MAX, *remove = NULL, n_remove;
	bool *mine = NULL;
	char err[512];
	int k;

	k = cluster_from_state(reaper_store(r), NULL, 0, &fo, &c, err, sizeof(err));
	if (k < 0) {
		log_error("Failed to model the cluster to replace %s: %s", nc->name, err);
		return k;
	}
	for (uint32_t i = 0; i < c->n_nodes; i++)
		if (streq(strtab_str(&c->st, c->nodes[i].name), node->name))
			idx = i;
	remove = calloc(c->n_nodes + 1, sizeof(*remove));
	mine = calloc(c->n_pods + 1, sizeof(*mine));
	if (idx == UINT32_MAX || !remove || !mine ||
	    removal_set(r, c, idx, !w->plan_sent, now_usec, remove, &n_remove) < 0) {
		k = idx == UINT32_MAX || (remove && mine) ? 0 : -ENOMEM;
		goto out;
	}
	for (uint32_t p = 0; p < c->n_pods; p++)
		mine[p] = c->pods[p].node == c->nodes[idx].name;
	wi.remove = remove;
	wi.n_remove = n_remove;
	k = what_if_solve(c, &wi, &res);
	if (k >= 0 && res.fits) {
		bool ready = true;
		/* On a replacement still coming up (a NodeClaim, or a Node the
		 * launcher made that is not Ready yet): wait for it. The other
		 * disrupted nodes' pods only need a place, Ready or not. */
		for (uint32_t i = 0; i < res.n_moved && ready; i++) {
			int32_t b = res.placement->pod_bin[res.moved[i]];
			const struct state_entry *ne;

			if (!mine[res.moved[i]])
				continue;
			if (b < 0 || (uint32_t)b >= c->n_nodes || c->nodes[b].in_flight) {
				ready = false;
				continue;
			}
			ne = state_store_get(reaper_store(r), PROTO_OBJECT_NODE, "",
					     strtab_str(&c->st, c->nodes[b].name));
			ready = ne && ne->obj.node->ready == PROTO_COND_TRUE;
		}
		k = ready && res.placement->n_claims == 0;
		if (!k && res.placement->n_claims && !w->plan_sent) {
			if (send_replacement(r, c, res.placement, nc, w) >= 0) {
				w->plan_sent = true;
				record_decision(r, nc, w->disrupting, "replace");
			}
		}
	} else if (k >= 0) {
		if (now_usec - w->disrupting_since_usec > 10ULL * 1000 * 1000 && res.reason)
			log_debug("replacing %s: not every pod has a place yet: %s", nc->name, res.reason);
		k = 0;
	}
	what_if_result_done(&res);
out:
	free(remove);
	free(mine);
	cluster_free(c);
	return k;
}

static void untaint(struct reaper *r, const struct proto_node *n)
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
static void abandon(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		    const struct proto_node *node, const char *why)
{
	struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, nc->name, nc->uid };

	log_warn_kv(LOG_KV({ "nodeclaim", nc->name }), "abandoning the disruption of %s (%s): %s",
		    nc->name, w->disrupting, why);
	kube_event_record(r->d->events, &ref, KUBE_EVENT_WARNING, "DisruptionBlocked",
			  "Cannot disrupt NodeClaim: %s", why);
	if (node)
		untaint(r, node);
	w->disrupting = NULL;
	w->plan_sent = false;
	w->taint_sent = false;
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
	/* The NodeClaim's own (-1: Never), else its NodePool's. */
	int64_t expire_s = nc->expire_after_s ? nc->expire_after_s : np->expire_after_s;
	bool empties = np->consolidation_policy == PROTO_CONSOLIDATE_WHEN_EMPTY ||
		       (np->source_api == PROTO_API_V1 &&
			np->consolidation_policy == PROTO_CONSOLIDATE_WHEN_EMPTY_OR_UNDERUTILIZED);

	if (pods)
		w->empty_since_usec = 0;
	else if (!w->empty_since_usec)
		w->empty_since_usec = now_usec;
	if (expire_s > 0 && clock_realtime_ms() - nc->creation_time >= expire_s * 1000)
		return REASON_EXPIRED;
	if (empties && np->consolidate_after_s >= 0 && !pods &&
	    now_usec - w->empty_since_usec >= (uint64_t)np->consolidate_after_s * 1000000)
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
	const struct proto_nodepool *np = nodepool_named(r, nc->nodepool);
	const struct proto_node *node = node_of(r, nc);
	const struct proto_pod *blocker;
	struct pool_count *pc = hashmap_get(pools, nc->nodepool ?: "");
	struct claim_work *w;
	enum drift_reason drift = DRIFT_NONE;
	const char *reason;
	char why[64];
	unsigned pods;
	int k;

	if (!np || !node || node->ready != PROTO_COND_TRUE || nc->deletion_time || node->deletion_time ||
	    !(w = reaper_work(r, nc->name)))
		return;
	pods = movable_pods(r, node, &blocker);
	if (w->disrupting) {
		if (now_usec - w->disrupting_since_usec > r->cfg->replacement_timeout_usec) {
			abandon(r, w, nc, node, "its replacements did not become Ready in time");
			return;
		}
		termination_taint_node(r, w, node);
		k = pods ? replace(r, w, nc, node, now_usec) : 1;
		if (k > 0)
			delete_candidate(r, w, nc, w->disrupting, pods);
		return;
	}
	reason = candidate_reason(r, w, nc, np, pods, now_usec, &drift);
	/* "Drifted (AMIDrift)": the drift's kind in logs and Events. */
	snprintf(why, sizeof(why), "%s%s%s%s", reason ?: "", drift ? " (" : "",
		 drift_reason_name(drift), drift ? ")" : "");
	/* Tainted by a reaper before this one (killed mid-disruption): go on
	 * with it — it is counted as disrupting already — or, when it is no
	 * longer a candidate, give the node back. */
	if (node_has_taint(node, KARPENTER_DISRUPTED_TAINT_KEY)) {
		if (!reason) {
			log_info_kv(LOG_KV({ "nodeclaim", nc->name }),
				    "nodeclaim %s is tainted for disruption but no longer a candidate: "
				    "untainting its node", nc->name);
			untaint(r, node);
			return;
		}
		w->disrupting = reason;
		w->disrupting_since_usec = now_usec;
		return;
	}
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
		struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, nc->name, nc->uid };
		kube_event_record(r->d->events, &ref, KUBE_EVENT_NORMAL, "DisruptionBlocked",
				  "Cannot disrupt NodeClaim (%s): no allowed disruptions due to the "
				  "budgets of nodepool %s", why, nc->nodepool);
		return;
	}
	/* One more node disrupting: every reason's room shrinks with it (a
	 * budget counts the pool's disrupting nodes, whatever their reason). */
	for (unsigned i = 0; i < _ALLOW_MAX; i++)
		pc->allowed[i] -= pc->allowed[i] > 0;
	if (drift)
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "nodepool", nc->nodepool ?: "" },
				   { "drift", drift_reason_name(drift) }),
			    "nodeclaim %s has drifted: %s", nc->name, drift_reason_name(drift));
	w->disrupting = reason;
	w->disrupting_since_usec = now_usec;
	if (!pods) {
		delete_candidate(r, w, nc, reason, 0);
		return;
	}
	log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "reason", reason }),
		    "disrupting nodeclaim %s (%s): %u pod(s) need a place first", nc->name, why, pods);
	termination_taint_node(r, w, node);
}

void disruption_pass(struct reaper *r, uint64_t now_usec)
{
	static const char *const reasons[_ALLOW_MAX] = { REASON_EMPTY, REASON_EXPIRED, REASON_DRIFTED };
	uint32_t eligible[_ALLOW_MAX] = { 0 };
	struct hashmap pools = { 0 };
	const struct state_entry *e;
	const char *name;
	void *v;
	size_t it = 0;

	if (count_pools(r, &pools, clock_realtime_ms() / 1000) >= 0)
		while ((e = state_store_next(reaper_store(r), &it)))
			if (e->obj.kind == PROTO_OBJECT_NODECLAIM && e->obj.nodeclaim->provider_id &&
			    *e->obj.nodeclaim->provider_id)
				consider(r, e->obj.nodeclaim, &pools, now_usec);
	it = 0;
	while (hashmap_next(&pools, &it, &name, &v)) {
		const struct pool_count *pc = v;

		for (unsigned i = 0; i < _ALLOW_MAX; i++)
			eligible[i] += pc->eligible[i];
		free(v);
	}
	hashmap_done(&pools);
	for (unsigned i = 0; i < _ALLOW_MAX; i++)
		metrics_gauge_set(r->m.eligible, eligible[i], reasons[i], NULL);
}
