/*
 * Consolidation of underutilized nodes (Karpenter v1 WhenEmptyOrUnderutilized,
 * v1beta1 WhenUnderutilized, v1alpha5 consolidation.enabled), after
 * emptiness, expiry and drift in each pass (disruption.c calls
 * consolidation_pass() with the budgets they left). Empty nodes are
 * emptiness's; this file takes the nodes that still carry pods:
 *  1. candidates, on the loop thread: initialized (Ready) nodes of a
 *     NodePool, not disrupting, consolidatable (consolidateAfter passed
 *     since a pod last landed on or left it: Karpenter's Consolidatable
 *     condition, pkg/controllers/nodeclaim/disruption/consolidation.go; v1
 *     only, before v1 at once), then candidate.c's verdict (the policy, no
 *     karpenter.sh/do-not-disrupt, every pod evictable under its PDB) and
 *     disruption cost — the same as --what-if's;
 *  2. the search (consolidation-search.c: multi-node, then single-node) on
 *     the worker thread (common/worker.h), so that /healthz and the Lease
 *     never wait; a pass that finds it busy starts nothing, nor does one
 *     whose state is that of the last search that found nothing
 *     (Karpenter's IsConsolidated, consolidation-state.h);
 *  3. after consolidation-validation-delay the command is checked again
 *     the same way (Karpenter's validation, consolidationTTL 15s) and only
 *     then executed through replace.c: taint, one launch plan for all the
 *     candidates' pods, delete once every pod has a Ready node.
 * One consolidation command at a time, as Karpenter's orchestration queue
 * admits one per method. Decisions go out as disruption_decision on
 * ENDPOINT_DECISIONS (kanna-tap shows them) and in Karpenter's log wording.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/worker.h"
#include "model/from-state.h"
#include "reaper/candidate.h"
#include "reaper/consolidation-state.h"
#include "reaper/consolidation.h"
#include "reaper/disruption.h"

/* The search gives up after this (Karpenter: multi-node 1 min, single-node
 * 3 min, MultiNodeConsolidationTimeoutDuration); a stopped search decides
 * nothing and the next pass starts again. */
#define CONSOLIDATION_SEARCH_DEADLINE_USEC (60ULL * 1000 * 1000)

struct candidate_info {
	char *claim, *node;
};

/* One search or validation, handed to the worker and back. */
struct job {
	struct reaper *r;
	struct cluster *c;
	struct consolidation_candidate *v;
	struct candidate_info *info; /* by cluster node index */
	uint32_t n, *also, n_also, *budget, n_pools;
	struct min_savings *min_savings; /* per pool, as budget */
	struct consolidation_balanced *balanced; /* per pool, as budget */
	struct consolidation_options o;
	atomic_bool cancel;
	bool validating, want_replace;
	/* The feature gates, read on the loop thread when the job is
	 * submitted: a reload (SIGHUP) frees the string the config held. */
	bool spot_to_spot, split;
	struct consolidation_command cmd;
	int error;
	uint64_t started_usec;
	/* What the search reads (consolidation-state.h), and whether a
	 * budget held some candidates back from it. */
	struct consolidation_state state;
	bool held_by_budgets;
};

struct consolidation {
	struct worker *worker;
	struct job *running;
	/* The command chosen, waiting for its validation (n == 0: none). */
	char **claims;
	uint32_t n;
	bool replace;
	uint64_t due_usec;
	bool stopping;
	/* The last search that found nothing (Karpenter's IsConsolidated);
	 * what was said about it since a search last found a command. */
	struct consolidation_mark mark;
	bool idle_logged, skip_logged;
};

static void job_free(struct job *j)
{
	if (!j)
		return;
	for (uint32_t i = 0; j->info && j->c && i < j->c->n_nodes; i++) {
		free(j->info[i].claim);
		free(j->info[i].node);
	}
	free(j->info);
	free(j->v);
	free(j->also);
	free(j->budget);
	free(j->min_savings);
	free(j->balanced);
	consolidation_command_done(&j->cmd);
	cluster_free(j->c);
	free(j);
}

static void pending_clear(struct consolidation *k)
{
	for (uint32_t i = 0; i < k->n; i++)
		free(k->claims[i]);
	free(k->claims);
	k->claims = NULL;
	k->n = 0;
}

static bool gate_enabled(const char *gates, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = gates; p && (p = strstr(p, name)); p += len)
		if ((p == gates || p[-1] == ',' || p[-1] == ' ') && p[len] == '=')
			return strncmp(p + len + 1, "true", 4) == 0;
	return false;
}

/* Once per node and reason: Unconsolidatable or DisruptionBlocked on the
 * Node and its NodeClaim (Karpenter's disruption events publish both). */
static void tell(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		 const char *node, const char *reason, const char *msg)
{
	struct kube_object_ref cref = { "karpenter.sh/v1", "NodeClaim", NULL, nc->name, nc->uid };
	struct kube_object_ref nref = { "v1", "Node", NULL, node, NULL };
	uint64_t h = hash_fnv1a64_field(hash_fnv1a64(reason), msg);

	if (w->unconsolidatable_hash == h)
		return;
	w->unconsolidatable_hash = h;
	kube_event_record(r->d->events, &cref, KUBE_EVENT_NORMAL, reason, "%s", msg);
	kube_event_record(r->d->events, &nref, KUBE_EVENT_NORMAL, reason, "%s", msg);
}

static int job_add(struct job *j, uint32_t node, uint32_t pool, const struct proto_nodeclaim *nc,
		   unsigned pods, double cost, double reschedule_cost)
{
	struct consolidation_candidate *x = &j->v[j->n++];

	*x = (struct consolidation_candidate){ .node = node, .pool = pool, .n_pods = pods,
					       .cost = cost, .price = cluster_node_price(j->c, node),
					       .reschedule_cost = reschedule_cost,
					       .spot = nc->capacity_type == PROTO_CAPACITY_SPOT };
	j->info[node].claim = strdup(nc->name);
	j->info[node].node = strdup(nc->node_name);
	return j->info[node].claim && j->info[node].node ? 0 : -ENOMEM;
}

/* The pool's index in the job's budgets, added when new (a malformed
 * minimum savings reads as none: the watcher reports it). */
static uint32_t job_pool(struct job *j, char **names, const struct proto_nodepool *np,
			 uint32_t allowed)
{
	char err[256];

	for (uint32_t i = 0; i < j->n_pools; i++)
		if (streq(names[i], np->name))
			return i;
	names[j->n_pools] = np->name;
	j->budget[j->n_pools] = allowed;
	(void)min_savings_parse(np, &j->min_savings[j->n_pools], err, sizeof(err));
	j->balanced[j->n_pools].on = np->consolidation_policy == PROTO_CONSOLIDATE_BALANCED;
	return j->n_pools++;
}

/* What makes a NodeClaim no candidate before the model has a say: no
 * pool, no Ready Node, not initialized or launched, disrupting already. */
static bool not_candidate(struct reaper *r, struct hashmap *pools, const struct proto_nodeclaim *nc,
			  const struct proto_nodepool *np, const struct proto_node *node)
{
	struct pool_count *pc = nc->nodepool ? hashmap_get(pools, nc->nodepool) : NULL;

	return !np || !pc || pc->invalid || !node || node->ready != PROTO_COND_TRUE ||
	       !claim_initialized(nc) || !nc->provider_id || !*nc->provider_id ||
	       claim_disrupting(r, nc);
}

/* No pods to move (emptiness's), or still filling. */
static bool nothing_to_move(struct reaper *r, const struct proto_nodeclaim *nc,
			    const struct proto_node *node, unsigned *pods)
{
	const struct proto_pod *blocker;

	*pods = disruption_movable_pods(r, node, &blocker);
	return !*pods || disruption_nominated(r, nc, node);
}

/* Could any NodeClaim be a candidate? gather_one()'s tests that need no
 * model, with its one side effect (the claims' work records marked seen):
 * when none passes, the model (30 MB at 100,000 pods, built every pass)
 * would only have found no candidate. */
static bool any_may_be_candidate(struct reaper *r, struct hashmap *pools)
{
	const struct state_entry *e;
	bool any = false;
	size_t it = 0;

	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;
		const struct proto_node *node;
		unsigned pods;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM)
			continue;
		node = disruption_node_of(r, nc);
		if (not_candidate(r, pools, nc, disruption_nodepool(r, nc->nodepool), node) ||
		    !reaper_work(r, nc->name))
			continue;
		if (!nothing_to_move(r, nc, node, &pods))
			any = true;
	}
	return any;
}

/* Looks at one NodeClaim: a candidate added to j, or told why not. */
static int gather_one(struct reaper *r, struct job *j, struct hashmap *pools, char **pool_names,
		      const struct hashmap *node_index, const struct candidate_pdbs *pdbs,
		      const struct proto_nodeclaim *nc, uint64_t now)
{
	const struct proto_nodepool *np = disruption_nodepool(r, nc->nodepool);
	const struct proto_node *node = disruption_node_of(r, nc);
	struct pool_count *pc = nc->nodepool ? hashmap_get(pools, nc->nodepool) : NULL;
	const char *why, *event;
	struct claim_work *w;
	char buf[512];
	double cost = 0;
	int64_t after_s;
	unsigned pods;
	void *idx;

	if (not_candidate(r, pools, nc, np, node) || !(idx = hashmap_get(node_index, node->name)) ||
	    !(w = reaper_work(r, nc->name)))
		return 0;
	if (nothing_to_move(r, nc, node, &pods))
		return 0;
	/* Consolidatable: consolidateAfter passed since its last pod event
	 * (pod-events.h; not yet: nothing to tell). */
	after_s = candidate_consolidate_after_s(np);
	if (after_s >= 0 && pod_event_age_usec(&w->pod_events, now) < (uint64_t)after_s * 1000000)
		return 0;
	if ((why = candidate_check(reaper_store(r), pdbs, nc, np, node, clock_realtime_ms(), &event,
				   &cost, buf, sizeof(buf)))) {
		tell(r, w, nc, node->name, event, why);
		return 0;
	}
	pc->eligible[ALLOW_UNDERUTILIZED]++;
	/* Held by a budget: no candidate (multi-node would leave it out and
	 * single-node pass it by), told which budget and till when. */
	if (!pc->allowed[ALLOW_UNDERUTILIZED]) {
		disruption_blocked_by_budget(r, nc, node, np, pc, REASON_UNDERUTILIZED,
					     REASON_UNDERUTILIZED);
		return 0;
	}
	return job_add(j, (uint32_t)(uintptr_t)idx - 1,
		       job_pool(j, pool_names, np, pc->allowed[ALLOW_UNDERUTILIZED]), nc,
		       pods, cost, candidate_reschedule_cost(reaper_store(r), node->name));
}

/* The Balanced pools' totals, over all their launched nodes, candidates or
 * not (computeNodePoolTotals: the pool's cost, ClusterCost's, and the sum
 * of its nodes' reschedule costs). */
static void balanced_totals(struct reaper *r, struct job *j, char **pool_names,
			    const struct hashmap *node_index)
{
	const struct state_entry *e;
	size_t it = 0;
	void *idx;

	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;
		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || !nc->nodepool || !nc->node_name ||
		    !(idx = hashmap_get(node_index, nc->node_name)))
			continue;
		for (uint32_t p = 0; p < j->n_pools; p++) {
			double price = cluster_node_price(j->c, (uint32_t)(uintptr_t)idx - 1);
			if (!j->balanced[p].on || !streq(pool_names[p], nc->nodepool))
				continue;
			j->balanced[p].total_cost += fmax(price, 0);
			j->balanced[p].total_disruption +=
				candidate_reschedule_cost(reaper_store(r), nc->node_name);
		}
	}
}

/* Nodes of the model whose NodeClaim is disrupting already. */
static int gather_disrupting(struct reaper *r, struct job *j, const struct hashmap *node_index)
{
	const struct state_entry *e;
	size_t it = 0;
	void *idx;

	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;
		if (e->obj.kind == PROTO_OBJECT_NODECLAIM && nc->node_name && claim_disrupting(r, nc) &&
		    (idx = hashmap_get(node_index, nc->node_name)))
			j->also[j->n_also++] = (uint32_t)(uintptr_t)idx - 1;
	}
	return 0;
}

/* A job over the candidates now (only those named in only[], when given). */
static int gather(struct reaper *r, struct hashmap *pools, char *const *only, uint32_t n_only,
		  uint64_t now, struct job **ret)
{
	struct from_state_options fo = { .region = r->region, .catalog_path = r->cfg->catalog,
					 .now_ms = clock_realtime_ms() };
	struct hashmap node_index = { 0 };
	struct candidate_pdbs pdbs = { 0 };
	const struct proto_pod **pending = NULL;
	const struct state_entry *e;
	struct job *j = calloc(1, sizeof(*j));
	size_t n_pending = 0;
	char err[512], **pool_names = NULL;
	size_t it = 0;
	int k = -ENOMEM;

	if (!j)
		return -ENOMEM;
	/* A search, not a validation, with no candidate possible: an empty
	 * job, without the model. */
	if (!only && !any_may_be_candidate(r, pools)) {
		*ret = j;
		return 0;
	}
	/* The pending pods too: every what-if places them first. */
	k = candidate_pending_pods(reaper_store(r), fo.now_ms, &pending, &n_pending);
	if (k >= 0)
		k = cluster_from_state(reaper_store(r), pending, n_pending, &fo, &j->c, err, sizeof(err));
	free(pending);
	if (k < 0) {
		log_error("Failed to model the cluster for consolidation: %s",
			  k == -ENOMEM ? "out of memory" : err);
		goto fail;
	}
	k = -ENOMEM;
	j->v = calloc(j->c->n_nodes + 1, sizeof(*j->v));
	j->info = calloc(j->c->n_nodes + 1, sizeof(*j->info));
	j->also = calloc(j->c->n_nodes + 1, sizeof(*j->also));
	j->budget = calloc(j->c->n_nodes + 1, sizeof(*j->budget));
	j->min_savings = calloc(j->c->n_nodes + 1, sizeof(*j->min_savings));
	j->balanced = calloc(j->c->n_nodes + 1, sizeof(*j->balanced));
	pool_names = calloc(j->c->n_nodes + 1, sizeof(*pool_names));
	if (!j->v || !j->info || !j->also || !j->budget || !j->min_savings || !j->balanced ||
	    !pool_names)
		goto fail;
	if (candidate_node_index(j->c, &node_index) < 0 ||
	    candidate_pdbs_collect(reaper_store(r), &pdbs) < 0)
		goto fail;
	while ((e = state_store_next(reaper_store(r), &it))) {
		if (e->obj.kind != PROTO_OBJECT_NODECLAIM ||
		    (only && !has_string(only, n_only, e->obj.nodeclaim->name)))
			continue;
		if ((k = gather_one(r, j, pools, pool_names, &node_index, &pdbs, e->obj.nodeclaim,
				    now)) < 0)
			goto fail;
	}
	balanced_totals(r, j, pool_names, &node_index);
	k = gather_disrupting(r, j, &node_index);
fail:
	hashmap_done(&node_index);
	candidate_pdbs_done(&pdbs);
	free(pool_names);
	if (k < 0) {
		job_free(j);
		return k;
	}
	*ret = j;
	return 0;
}

static void job_run(void *data)
{
	struct job *j = data;

	j->o = (struct consolidation_options){ .also_removed = j->also, .n_also_removed = j->n_also,
					       .budget = j->budget, .n_pools = j->n_pools,
					       .min_savings = j->min_savings,
					       .balanced = j->balanced,
					       .spot_to_spot = j->spot_to_spot,
					       .max_split = j->split ? CONSOLIDATION_MAX_SPLIT : 1,
					       .deadline_usec = clock_monotonic_usec() +
								CONSOLIDATION_SEARCH_DEADLINE_USEC,
					       .cancel = &j->cancel };
	if (j->validating)
		j->error = consolidation_validate(j->c, j->v, j->n, &j->o, &j->cmd);
	else
		j->error = consolidation_compute(j->c, j->v, j->n, &j->o, &j->cmd);
}

static int submit(struct reaper *r, struct job *j, bool validating)
{
	int k;

	j->r = r;
	j->validating = validating;
	j->spot_to_spot = gate_enabled(r->cfg->feature_gates, "SpotToSpotConsolidation");
	j->split = gate_enabled(r->cfg->feature_gates, "ConsolidationSplit");
	j->started_usec = clock_monotonic_usec();
	if (!validating)
		consolidation_sort(j->v, j->n);
	if ((k = worker_submit(r->consolidation->worker, job_run, j)) < 0)
		return k;
	r->consolidation->running = j;
	return 0;
}

/* A command chosen: remembered until its validation is due. */
static void on_computed(struct reaper *r, struct job *j)
{
	struct consolidation *k = r->consolidation;
	const struct state_entry *e;

	for (uint32_t i = 0; i < j->n && j->cmd.why; i++) {
		const struct candidate_info *ci = &j->info[j->v[i].node];
		struct claim_work *w = reaper_work(r, ci->claim);
		if (j->cmd.why[i][0] && w &&
		    (e = state_store_get(reaper_store(r), PROTO_OBJECT_NODECLAIM, "", ci->claim)))
			tell(r, w, e->obj.nodeclaim, ci->node, "Unconsolidatable", j->cmd.why[i]);
	}
	if (j->cmd.method == CONSOLIDATION_NONE) {
		/* Karpenter marks consolidated only when no budget held a
		 * candidate back: once it allows more, a command may appear. */
		if (j->held_by_budgets)
			return;
		consolidation_mark_consolidated(&k->mark, &j->state, j->started_usec);
		if (!k->idle_logged)
			log_debug("consolidation found nothing to do over %u candidate(s); searching "
				  "again only once the cluster changes (state seq %" PRIu64 ") or "
				  "every %.0f s", j->n, j->state.seq,
				  (double)CONSOLIDATION_STATE_TIMEOUT_USEC / 1e6);
		k->idle_logged = true;
		return;
	}
	k->idle_logged = k->skip_logged = false;
	pending_clear(k);
	if (!(k->claims = calloc(j->cmd.n_candidates, sizeof(*k->claims))))
		return;
	for (uint32_t i = 0; i < j->cmd.n_candidates; i++)
		if ((k->claims[k->n] = strdup(j->info[j->v[j->cmd.candidates[i]].node].claim)))
			k->n++;
	k->replace = j->cmd.res.placement && j->cmd.res.placement->n_claims > 0;
	k->due_usec = clock_monotonic_usec() + r->cfg->consolidation_validation_delay_usec;
	log_debug("%s-node consolidation found a command (%u candidate(s), %s, savings $%.4f/h); "
		  "validating it in %.1f s", j->cmd.method == CONSOLIDATION_MULTI ? "multi" : "single",
		  k->n, k->replace ? "replace" : "delete", j->cmd.savings,
		  (double)r->cfg->consolidation_validation_delay_usec / 1e6);
}

/* Validated: still the same decision (delete stays delete, replace
 * replace)? Then act; either way the command is done with. */
static void on_validated(struct reaper *r, struct job *j)
{
	struct consolidation *k = r->consolidation;
	const char **claims = calloc(j->n + 1, sizeof(*claims));
	bool replace = j->cmd.res.placement && j->cmd.res.placement->n_claims > 0;

	if (j->cmd.method == CONSOLIDATION_NONE || replace != k->replace) {
		log_info("abandoning consolidation attempt due to pod churn, command is no longer "
			 "valid: %s", j->cmd.method == CONSOLIDATION_NONE && j->cmd.why && j->cmd.why[0][0]
					      ? j->cmd.why[0]
					      : replace ? "it would need a replacement now"
							: "it would be a delete now");
	} else if (claims) {
		for (uint32_t i = 0; i < j->n; i++)
			claims[i] = j->info[j->v[i].node].claim;
		consolidation_execute(r, j->c, j->v, claims, &j->cmd);
	}
	free(claims);
	pending_clear(k);
}

static void on_done(void *data, void *userdata)
{
	struct reaper *r = userdata;
	struct job *j = data;

	r->consolidation->running = NULL;
	metrics_histogram_observe(r->m.decision_seconds,
				  (double)(clock_monotonic_usec() - j->started_usec) / 1e6, NULL);
	if (j->error < 0)
		log_error_errno(j->error, "Failed to compute a consolidation: %m");
	else if (!r->consolidation->stopping && !j->cmd.stopped && j->validating)
		on_validated(r, j);
	else if (!r->consolidation->stopping && !j->cmd.stopped)
		on_computed(r, j);
	job_free(j);
}

/* What a search over j would read (consolidation-state.h): the replica's
 * changes, the candidates and their pools' budgets; and whether a budget
 * held candidates back (more eligible in a pool than it allows). */
static void observe(struct reaper *r, struct hashmap *pools, struct job *j)
{
	struct replica_stats st = { 0 };
	const char *name;
	size_t it = 0;
	void *v;

	replica_get_stats(r->replica, &st);
	j->state = (struct consolidation_state){ .seq = reaper_store(r)->seq,
						 .snapshots = st.snapshots };
	for (uint32_t i = 0; i < j->n; i++)
		consolidation_state_add_candidate(&j->state, j->info[j->v[i].node].claim,
						  j->budget[j->v[i].pool]);
	/* The search reads the feature gates too (SpotToSpotConsolidation,
	 * ConsolidationSplit), and a reload (SIGHUP) may change them. */
	consolidation_state_add_candidate(&j->state, r->cfg->feature_gates ?: "", 0);
	while (hashmap_next(pools, &it, &name, &v)) {
		const struct pool_count *pc = v;
		if (pc->eligible[ALLOW_UNDERUTILIZED] > pc->allowed[ALLOW_UNDERUTILIZED])
			j->held_by_budgets = true;
	}
}

/* The chosen command, due: still candidates, within budgets? Then the
 * what-if again, on the worker. */
static void validate(struct reaper *r, struct hashmap *pools, uint64_t now)
{
	struct consolidation *k = r->consolidation;
	struct job *j = NULL;

	if (gather(r, pools, k->claims, k->n, now, &j) < 0)
		goto drop;
	if (j->n != k->n) {
		log_info("abandoning consolidation attempt, %u of %u candidate(s) no longer "
			 "candidates", k->n - j->n, k->n);
		goto drop;
	}
	for (uint32_t i = 0; i < j->n; i++)
		if (j->budget[j->v[i].pool]-- == 0) {
			log_info("abandoning consolidation attempt, the budgets of nodepool(s) no "
				 "longer allow it");
			goto drop;
		}
	if (submit(r, j, true) >= 0)
		return;
drop:
	job_free(j);
	pending_clear(k);
}

void consolidation_pass(struct reaper *r, struct hashmap *pools, uint64_t now_usec)
{
	struct consolidation *k = r->consolidation;
	struct job *j = NULL;
	const char *name;
	void *v;
	size_t it = 0;

	if (!k || worker_busy(k->worker))
		return;
	if (k->n) {
		if (now_usec >= k->due_usec)
			validate(r, pools, now_usec);
		return;
	}
	/* One command at a time: wait for the last one's nodes to go. */
	while (hashmap_next(&r->work, &it, &name, &v))
		if (((struct claim_work *)v)->disrupting == REASON_UNDERUTILIZED)
			return;
	if (gather(r, pools, NULL, 0, now_usec, &j) < 0)
		return;
	observe(r, pools, j);
	if (j->n && consolidation_is_consolidated(&k->mark, &j->state, now_usec)) {
		if (!k->skip_logged)
			log_debug("skipping consolidation: nothing changed since the last search found "
				  "nothing to do (state seq %" PRIu64 ", %u candidate(s))",
				  j->state.seq, j->n);
		k->skip_logged = true;
		job_free(j);
		return;
	}
	if (j->n == 0 || submit(r, j, false) < 0)
		job_free(j);
}

int consolidation_init(struct reaper *r)
{
	struct consolidation *k = calloc(1, sizeof(*k));
	int e;

	if (!k)
		return -ENOMEM;
	if ((e = worker_new(&k->worker, r->d->loop, "consolidation", on_done, r)) < 0) {
		free(k);
		return e;
	}
	r->consolidation = k;
	return 0;
}

void consolidation_done(struct reaper *r)
{
	struct consolidation *k = r->consolidation;

	if (!k)
		return;
	if (k->running)
		atomic_store(&k->running->cancel, true);
	k->stopping = true;
	k->worker = worker_free(k->worker); /* hands the last job to on_done() */
	pending_clear(k);
	free(k);
	r->consolidation = NULL;
}
