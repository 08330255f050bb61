/*
 * The execution every voluntary disruption ends in (disruption.h), shared
 * by emptiness, expiry and drift (disruption.c) and consolidation
 * (consolidation.c): the node is tainted, the solver's what-if (the
 * scheduler's own code, model/what-if.h) places its pods on the other
 * nodes and on new NodeClaims, those go to the launcher as one plan once
 * the taint shows, and the NodeClaim is deleted only once the what-if
 * places every pod of the node on Nodes that are Ready. A disruption whose
 * replacements do not come in replacement-timeout, or whose pods have no
 * place once they are Ready (its command no longer valid), is abandoned:
 * untainted, DisruptionBlocked (disruption-resume.c, which also takes up again the
 * disruption of a reaper restarted mid-way). Deleting starts termination
 * (termination.c). Also the replica lookups the methods share.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "model/from-state.h"
#include "proto/karpenter.h"
#include "proto/schema.h"
#include "model/plan.h"
#include "model/what-if.h"
#include "reaper/candidate.h"
#include "reaper/disruption.h"

/* A replacement is planned for at most this many new NodeClaims. */
#define REPLACEMENT_MAX_NODECLAIMS 10
/* Every replacement Ready, and still the what-if finds no place for the
 * pods this long: the cluster changed since the decision (a pod took the
 * replacement's room, another node went) and the command no longer holds.
 * Longer than a sibling's drain takes to settle (an evicted pod counts
 * twice while it terminates and its successor is placed). */
#define REPLACEMENT_READY_GRACE_USEC (30ULL * 1000 * 1000)

const char REASON_EMPTY[] = "Empty";
const char REASON_EXPIRED[] = "Expired";
const char REASON_DRIFTED[] = "Drifted";
const char REASON_UNDERUTILIZED[] = "Underutilized";

void pool_count_take(struct pool_count *pc)
{
	for (unsigned i = 0; i < _ALLOW_MAX; i++)
		pc->allowed[i] -= pc->allowed[i] > 0;
	pc->disrupting++;
}

const struct proto_nodepool *disruption_nodepool(struct reaper *r, const char *name)
{
	const struct state_entry *e = name ? state_store_get(reaper_store(r), PROTO_OBJECT_NODEPOOL,
							     "", name)
					   : NULL;

	return e ? e->obj.nodepool : NULL;
}

const struct proto_node *disruption_node_of(struct reaper *r, const struct proto_nodeclaim *nc)
{
	const struct state_entry *e = nc->node_name && *nc->node_name
					      ? state_store_get(reaper_store(r), PROTO_OBJECT_NODE, "",
								nc->node_name)
					      : NULL;

	return e ? e->obj.node : NULL;
}

bool node_has_taint(const struct proto_node *n, const char *key)
{
	for (uint32_t i = 0; n && i < n->n_taints; i++)
		if (streq(n->taints[i].key, key))
			return true;
	return false;
}

bool claim_disrupting(struct reaper *r, const struct proto_nodeclaim *nc)
{
	const struct proto_node *n = disruption_node_of(r, nc);
	const struct claim_work *w = hashmap_get(&r->work, nc->name);

	return nc->deletion_time || (n && n->deletion_time) ||
	       node_has_taint(n, KARPENTER_DISRUPTED_TAINT_KEY) || (w && w->disrupting);
}

/* How long after its Node was made a NodeClaim's planned pods still
 * pending keep it out of disruption (Karpenter's nomination window is
 * twice the batch window, 20 s; longer here, for a launcher restarting
 * between its binds). */
#define NOMINATION_WINDOW_MS (60 * 1000)

/* The pod nc->planned_pods[i] names ("ns/name"), if the replica has it. */
static const struct proto_pod *planned_pod(struct reaper *r, const struct proto_nodeclaim *nc,
					   uint32_t i)
{
	const char *key = nc->planned_pods[i], *slash = strchr(key, '/');
	const struct state_entry *e;
	char ns[PROTO_MAX_NAME_LEN + 1];

	if (!slash || (size_t)(slash - key) > PROTO_MAX_NAME_LEN)
		return NULL;
	snprintf(ns, sizeof(ns), "%.*s", (int)(slash - key), key);
	e = state_store_get(reaper_store(r), PROTO_OBJECT_POD, ns, slash + 1);
	return e ? e->obj.pod : NULL;
}

const char *disruption_planned_pod_elsewhere(struct reaper *r, const struct proto_nodeclaim *x,
					    uint32_t i)
{
	const struct proto_pod *p = planned_pod(r, x, i);

	if (!p || !p->node_name || !*p->node_name || p->deletion_time ||
	    streq_ptr(p->node_name, x->node_name))
		return NULL;
	return p->node_name;
}

/* Is x a replacement whose node is still being disrupted (tainted
 * karpenter.sh/disrupted or deleting, some of its pods planned onto x)? */
static bool replacing(struct reaper *r, const struct proto_nodeclaim *x)
{
	for (uint32_t i = 0; i < x->n_planned_pods; i++) {
		const char *name = disruption_planned_pod_elsewhere(r, x, i);
		const struct state_entry *e = name ? state_store_get(reaper_store(r), PROTO_OBJECT_NODE,
								     "", name)
						   : NULL;

		if (e && (e->obj.node->deletion_time ||
			  node_has_taint(e->obj.node, KARPENTER_DISRUPTED_TAINT_KEY)))
			return true;
	}
	return false;
}

bool disruption_nominated(struct reaper *r, const struct proto_nodeclaim *nc, const struct proto_node *n)
{
	/* The launcher holds the Node until its planned pods are bound. */
	if (node_has_taint(n, KARPENTER_UNREGISTERED_TAINT_KEY))
		return true;
	/* A replacement waits, empty, for the pods of the node it replaces
	 * until that node drains (a PDB may make it long): it is no more
	 * empty than a node whose pods are pending (Karpenter's 15 s
	 * validation of emptiness covers only the usual case). */
	if (replacing(r, nc))
		return true;
	if (!n->creation_time || clock_realtime_ms() - n->creation_time >= NOMINATION_WINDOW_MS)
		return false;
	for (uint32_t i = 0; i < nc->n_planned_pods; i++) {
		const struct proto_pod *p = planned_pod(r, nc, i);

		if (p && (!p->node_name || !*p->node_name) && !p->deletion_time)
			return true;
	}
	return false;
}

/* Pods that would have to move; *blocker names one with do-not-disrupt. */
unsigned disruption_movable_pods(struct reaper *r, const struct proto_node *n,
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


/* Once per disrupted NodeClaim, when it is decided (Karpenter counts at
 * executeCommand): "replace" when replacements were launched for it,
 * else "delete". */
void disruption_record(struct reaper *r, const struct proto_nodeclaim *nc, const char *reason,
		       const char *how)
{
	metrics_counter_add(r->m.decisions, 1, how, reason, NULL);
	metrics_counter_add(r->m.disrupted, 1, nc->nodepool ?: "", reason, NULL);
}

void disruption_delete(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		       const char *reason, unsigned pods)
{
	struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, nc->name, nc->uid };

	if (w->claim_delete_sent)
		return;
	/* The decision's line, unless a consolidation command logged it
	 * already ("via delete/replace, terminating N nodes", consolidation-
	 * execute.c: mark() sets plan_sent): it was there twice, the second
	 * time as a delete of one node. An expiry or drift logs it here. */
	if (!w->plan_sent || reason != REASON_UNDERUTILIZED)
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "nodepool", nc->nodepool ?: "" },
				   { "reason", reason }),
			    "disrupting nodeclaim(s) via delete, terminating 1 nodes (%u pods) %s/%s/%s, "
			    "reason %s", pods, nc->node_name ?: nc->name, nc->instance_type ?: "?",
			    proto_capacity_type_name(nc->capacity_type), reason);
	else
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "nodepool", nc->nodepool ?: "" },
				   { "reason", reason }),
			    "deleting nodeclaim %s (%s), as decided: its %u pod(s) have a place on "
			    "Ready nodes", nc->name, reason, pods);
	kube_event_record(r->d->events, &ref, KUBE_EVENT_NORMAL, "DisruptionTerminating",
			  "Disrupting NodeClaim: %s", reason);
	if (!w->plan_sent) /* counted as "replace" when its replacements went out */
		disruption_record(r, nc, reason, "delete");
	termination_delete_claim(r, nc->name, w);
}

static const char *nodeclass_of(const char *nodepool, void *userdata)
{
	const struct proto_nodepool *np = disruption_nodepool(userdata, nodepool);

	return np ? np->nodeclass_ref.name : NULL;
}

/*
 * A replacement plan goes to the launcher only once every node it
 * replaces shows the karpenter.sh/disrupted taint in the replica, as
 * Karpenter taints candidates before it launches their replacements
 * (pkg/controllers/disruption/queue.go StartCommand). A reaper restarted
 * after a SIGKILL resumes a disruption by its taint (disruption_resume()):
 * a node the kill left untainted would be replaced twice. Until then the
 * plan waits, encoded, on the work record of the first node it replaces
 * (sent by disruption_replace() on a later pass).
 */
struct held_plan {
	void *bytes;
	size_t len;
	uint32_t n_nodes;
	char *nodes[]; /* the Nodes that must be tainted first */
};

void held_plan_free(struct held_plan *h)
{
	if (!h)
		return;
	for (uint32_t i = 0; i < h->n_nodes; i++)
		free(h->nodes[i]);
	free(h->bytes);
	free(h);
}

/* Sends w's held plan if its nodes are tainted: 1 sent (or none held),
 * 0 still held, < 0 the socket's error (tried again next pass). */
static int send_held(struct reaper *r, struct claim_work *w)
{
	struct held_plan *h = w->held_plan;
	int k;

	if (!h)
		return 1;
	for (uint32_t i = 0; i < h->n_nodes; i++) {
		const struct state_entry *e = state_store_get(reaper_store(r), PROTO_OBJECT_NODE, "",
							      h->nodes[i]);
		if (e && !node_has_taint(e->obj.node, KARPENTER_DISRUPTED_TAINT_KEY))
			return 0;
	}
	if ((k = sock_send(r->plans_tx, h->bytes, h->len, ZMQ_DONTWAIT)) < 0)
		return k;
	r->io.sent++;
	log_info_kv(LOG_KV({ "nodeclaim", w->name }),
		    "asked the launcher for the replacement(s) of %s%s: tainted, waiting for them to "
		    "become Ready", w->name, h->n_nodes > 1 ? " and others" : "");
	held_plan_free(h);
	w->held_plan = NULL;
	return 1;
}

/* Encodes m and holds it on w until the nodes of ncs are tainted. */
static int hold_plan(struct reaper *r, struct claim_work *w, struct proto_msg *m,
		     const struct proto_nodeclaim *const *ncs, uint32_t n)
{
	struct held_plan *h = calloc(1, sizeof(*h) + n * sizeof(h->nodes[0]));
	int k = h ? msg_encode(&r->io, m) : -ENOMEM;

	if (k >= 0 && !(h->bytes = malloc(r->io.buf.size ? r->io.buf.size : 1)))
		k = -ENOMEM;
	for (uint32_t i = 0; k >= 0 && i < n; i++)
		if (ncs[i]->node_name && !(h->nodes[h->n_nodes++] = strdup(ncs[i]->node_name)))
			k = -ENOMEM;
	if (k < 0) {
		held_plan_free(h);
		return k;
	}
	memcpy(h->bytes, r->io.buf.data, r->io.buf.size);
	h->len = r->io.buf.size;
	held_plan_free(w->held_plan);
	w->held_plan = h;
	return 0;
}

int disruption_send_plan(struct reaper *r, struct arena *a, const struct cluster *c,
			 const struct sched_result *res, const struct proto_nodeclaim *const *ncs,
			 struct claim_work *const *ws, uint32_t n, struct proto_launch_plan *plan)
{
	struct plan_context ctx = { .batch_id = ++r->plan_seq,
				    .state_seq = reaper_store(r)->seq,
				    .nonce = ((uint64_t)clock_realtime_ms() << 16) ^ (uint64_t)getpid(),
				    .nodeclass_of = nodeclass_of, .userdata = r };
	struct proto_msg m = { .env.type = PROTO_MSG_LAUNCH_PLAN };
	int k = plan_build(a, c, res, &ctx, &m.body.launch_plan);

	if (k >= 0)
		k = hold_plan(r, ws[0], &m, ncs, n);
	if (k < 0)
		return k;
	(void)send_held(r, ws[0]); /* at once when the taints are there already */
	*plan = m.body.launch_plan;
	for (uint32_t i = 0; i < plan->n_nodeclaims; i++) {
		const struct proto_planned_nodeclaim *o = &plan->nodeclaims[i];

		for (uint32_t j = 0; j < n; j++) {
			struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, ncs[j]->name,
						       ncs[j]->uid };
			struct claim_work *w = ws[j];
			char **v = realloc(w->replacements, (w->n_replacements + 1) * sizeof(*v));

			if (v && (v[w->n_replacements] = strdup(o->id)))
				w->n_replacements++;
			if (v)
				w->replacements = v;
			kube_event_record(r->d->events, &ref, KUBE_EVENT_NORMAL, "DisruptionLaunching",
					  "Launching NodeClaim: %s", o->id);
		}
		log_info_kv(LOG_KV({ "nodeclaim", ncs[0]->name }, { "replacement", o->id }),
			    "launching replacement nodeclaim %s for %u pod(s) of %s%s (%u instance "
			    "type option(s), cheapest %s)", o->id, o->n_pods, ncs[0]->name,
			    n > 1 ? " and others" : "", o->n_instance_types,
			    o->n_instance_types ? o->instance_types[0].name : "-");
	}
	return 0;
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
/*
 * The plan just sent placed the pods of every node in the removal set,
 * the other disrupting nodes' too: those must not plan for them again (two
 * nodes replaced at once got two replacements each). They wait for these
 * replacements, as a node whose own plan was sent does.
 */
static void covered_by_plan(struct reaper *r, const struct cluster *c, const uint32_t *remove,
			    uint32_t n_remove, uint32_t idx)
{
	for (uint32_t i = 0; i < n_remove; i++) {
		const struct state_entry *ne, *ce;
		struct claim_work *o;

		if (remove[i] == idx ||
		    !(ne = state_store_get(reaper_store(r), PROTO_OBJECT_NODE, "",
					   strtab_str(&c->st, c->nodes[remove[i]].name))) ||
		    !ne->obj.node->nodeclaim ||
		    !(o = hashmap_get(&r->work, ne->obj.node->nodeclaim)) || !o->disrupting ||
		    o->plan_sent)
			continue;
		o->plan_sent = true;
		if ((ce = state_store_get(reaper_store(r), PROTO_OBJECT_NODECLAIM, "", o->name)))
			disruption_record(r, ce->obj.nodeclaim, o->disrupting, "replace");
	}
}

const char *disruption_replacement_pending(struct reaper *r, const struct claim_work *w)
{
	for (uint32_t i = 0; i < w->n_replacements; i++) {
		const struct state_entry *e = state_store_get(reaper_store(r), PROTO_OBJECT_NODECLAIM, "",
							      w->replacements[i]);
		const struct proto_node *n = e ? disruption_node_of(r, e->obj.nodeclaim) : NULL;

		if (!n || n->ready != PROTO_COND_TRUE)
			return w->replacements[i];
	}
	return NULL;
}

/*
 * The what-if found no place for some pod of the nodes being disrupted.
 * While a replacement is still coming that is the plan (a NodeClaim not
 * launched yet takes no pod); once every one is a Ready Node it is not:
 * the cluster changed since the decision (a pod took the replacement's
 * room, the nodes the plan counted on are no longer what they were).
 * Karpenter does not look again: its queue deletes the candidates once
 * the replacements are initialized, and gives a command up — the
 * candidates untainted, the replacements left to be consolidated like any
 * node — when a replacement fails or the command times out (kubernetes-
 * sigs/karpenter pkg/controllers/disruption/queue.go, Reconcile and
 * waitOrTerminate). kanna looks again so that a replace leaves no pod
 * pending; a command that no longer fits is given up the same way: said
 * at once, done after REPLACEMENT_READY_GRACE_USEC (before, it waited
 * replacement-timeout without a word, and then blamed the replacements).
 */
static void no_place(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		     const struct proto_node *node, const char *reason, uint64_t now_usec)
{
	char why[512], what[64 + PROTO_MAX_NAME_LEN];

	/* A consolidation delete has no replacement to wait for (its command
	 * is all candidates, mark() in consolidation-execute.c); a node whose
	 * pods another's plan covers (covered_by_plan()) waits for that one's. */
	if (!w->plan_sent || disruption_replacement_pending(r, w) ||
	    (!w->n_replacements && w->disrupting != REASON_UNDERUTILIZED)) {
		w->ready_unplaced_usec = 0;
		if (now_usec - w->disrupting_since_usec > REPLACEMENT_VISIBLE_WAIT_USEC && reason)
			log_debug("replacing %s: not every pod has a place yet: %s", nc->name, reason);
		return;
	}
	if (!w->ready_unplaced_usec) {
		w->ready_unplaced_usec = now_usec;
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "reason", w->disrupting }),
			    "%s nodeclaim %s %s, but not every pod has a place: %s; giving the "
			    "disruption up in %.0f s unless one frees",
			    w->n_replacements ? "the replacement(s) of" : "deleting", nc->name,
			    w->n_replacements ? "are Ready" : "was decided", reason ?: "-",
			    (double)REPLACEMENT_READY_GRACE_USEC / 1e6);
		return;
	}
	if (now_usec - w->ready_unplaced_usec < REPLACEMENT_READY_GRACE_USEC)
		return;
	if (w->n_replacements)
		snprintf(what, sizeof(what), "its replacement nodeclaim(s) %s%s are Ready, but ",
			 w->replacements[0], w->n_replacements > 1 ? " and others" : "");
	else
		what[0] = '\0';
	snprintf(why, sizeof(why), "command is no longer valid: %snot every pod has a place: %s",
		 what, reason ?: "-");
	disruption_abandon(r, w, nc, node, why);
}

int disruption_replace(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		       const struct proto_node *node, uint64_t now_usec)
{
	struct from_state_options fo = { .region = r->region, .catalog_path = r->cfg->catalog,
					 .now_ms = clock_realtime_ms() };
	struct cluster *c = NULL;
	struct what_if wi = { .max_new_claims = w->plan_sent ? 0 : REPLACEMENT_MAX_NODECLAIMS,
			      .max_new_price = -1, .pending_first = true };
	struct what_if_result res = { 0 };
	const struct proto_pod **pending = NULL;
	size_t n_pending = 0;
	uint32_t idx = UINT32_MAX, *remove = NULL, n_remove;
	bool *mine = NULL;
	char err[512];
	int k;

	/* Its plan, held until the taint shows: nothing to place before. */
	if (send_held(r, w) <= 0)
		return 0;
	/* Pending pods first (candidate_pending_pods): room they are about
	 * to take is not the candidate's pods' to count on. */
	k = candidate_pending_pods(reaper_store(r), fo.now_ms, &pending, &n_pending);
	if (k >= 0)
		k = cluster_from_state(reaper_store(r), pending, n_pending, &fo, &c, err, sizeof(err));
	free(pending);
	if (k < 0) {
		log_error("Failed to model the cluster to replace %s: %s", nc->name,
			  k == -ENOMEM ? "out of memory" : err);
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

		w->ready_unplaced_usec = 0;
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
			struct arena a = { 0 };
			struct proto_launch_plan plan;

			if (disruption_send_plan(r, &a, c, res.placement, &nc, &w, 1, &plan) >= 0) {
				w->plan_sent = true;
				disruption_record(r, nc, w->disrupting, "replace");
				covered_by_plan(r, c, remove, n_remove, idx);
			}
			arena_done(&a);
		}
	} else if (k >= 0) {
		const struct pod *p = res.unplaced_pod >= 0 && (uint64_t)res.unplaced_pod < c->n_pods
					      ? &c->pods[res.unplaced_pod]
					      : NULL;
		char why[512];

		snprintf(why, sizeof(why), "%s%s%s%s%s", p ? "pod " : "",
			 p ? strtab_str(&c->st, p->ns) : "", p ? "/" : "",
			 p ? strtab_str(&c->st, p->name) : "", p ? ": " : "");
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s",
			 res.reason ?: "no place found");
		no_place(r, w, nc, node, why, now_usec);
		k = 0;
	}
	what_if_result_done(&res);
out:
	free(remove);
	free(mine);
	cluster_free(c);
	return k;
}
