/*
 * Static NodePools (v1 spec.replicas): the launcher, the one writer of
 * NodeClaims, keeps each at replicas NodeClaims whatever the pods, as
 * upstream's static provisioning controller does
 * (kubernetes-sigs/karpenter pkg/controllers/static/provisioning). Called
 * at the end of every reconcile pass (reconcile.c), once the recovery pass
 * has run on a synced replica. Scale-down is the reaper's (reaper/static.c),
 * so this file only ever adds.
 *
 *   count = the pool's NodeClaims not being deleted (the replica) + our
 *           launches the replica does not show yet. A node the reaper
 *           has tainted karpenter.sh/disrupted (a drift) does not count:
 *           its replacement is launched here first and the reaper deletes
 *           it once the replacement is Ready, as upstream's static drift
 *           does (disruption/staticdrift.go); an expired one is deleted
 *           at once and replaced (upstream's expiry is forceful).
 *   limits.nodes caps every NodeClaim of the pool, those being deleted
 *           included (they still have an instance): upstream's advice is
 *           limits.nodes above replicas so replacements can overlap.
 *
 * The claim: the NodePool's requirements and every catalog type, admitted
 * like a plan (admit.c: requirements, EC2NodeClass, unavailable
 * offerings, the cheapest 60), so ICE falls back as for any claim.
 *
 * Never twice (DESIGN §2 rule 1): a NodeClaim is named <pool>-static-<n>,
 * n the smallest index no NodeClaim of the replica nor launch here holds.
 * After a SIGKILL the replica may lag the API server by the last POST;
 * the same name is then chosen again and the POST answers AlreadyExists,
 * which launches nothing (launch.c). Random names would launch a second.
 *
 * Upstream runs these controllers only with its alpha StaticCapacity
 * feature gate (off by default; the scheduler and consolidation skip static
 * pools either way). kanna needs no gate: the CRD it ships has
 * spec.replicas, and a user who sets it asks for that many nodes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/hashmap.h"
#include "common/log.h"
#include "proto/karpenter.h"
#include "state/replica.h"
#include "state/state-store.h"
#include "launcher/catalog.h"
#include "launcher/launcher.h"

/* Upstream requeues a pool after 30 s when its node limit is reached; a
 * pool whose claim was refused (limits, no compatible type, no offering
 * with capacity) waits as long, rather than an Event every pass. */
#define STATIC_REFUSED_RETRY_USEC (30ULL * 1000 * 1000)
/* Claims queued per pool and pass: a pass stays short; the next adds more. */
#define STATIC_MAX_PER_PASS 50
/* A replicas change is acted on this soon, not at the next reconcile
 * pass (10 s by default); the delay folds a burst of updates into one. */
#define STATIC_SOON_USEC (100ULL * 1000)
/* "<pool>-static-<n>" within a Kubernetes name (253). */
#define STATIC_POOL_PREFIX_MAX 230

struct pool_count {
	uint32_t active;  /* not being deleted nor tainted for a drift */
	uint32_t total;   /* all, being deleted included: what limits.nodes caps */
};

static bool claim_of(const struct proto_nodeclaim *nc, const char *pool)
{
	return streq_ptr(nc->nodepool, pool);
}

/* Its Node is tainted karpenter.sh/disrupted: the reaper is taking it out. */
static bool disrupted(const struct state_store *st, const struct proto_nodeclaim *nc)
{
	const struct state_entry *ne = nc->node_name
		? state_store_get(st, PROTO_OBJECT_NODE, "", nc->node_name) : NULL;

	for (uint32_t i = 0; ne && i < ne->obj.node->n_taints; i++)
		if (streq(ne->obj.node->taints[i].key, KARPENTER_DISRUPTED_TAINT_KEY))
			return true;
	return false;
}

static void count_pool(struct launcher *l, const char *pool, struct pool_count *ret)
{
	const struct state_store *st = launcher_store(l);
	const struct state_entry *e;
	const char *key;
	void *value;
	size_t it = 0;

	*ret = (struct pool_count){ 0 };
	while ((e = state_store_next(st, &it))) {
		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || !claim_of(e->obj.nodeclaim, pool))
			continue;
		ret->total++;
		if (!e->obj.nodeclaim->deletion_time && !disrupted(st, e->obj.nodeclaim))
			ret->active++;
	}
	it = 0;
	while (hashmap_next(&l->launches, &it, &key, &value)) {
		const struct launch *la = value;

		if (streq(la->planned->nodepool, pool) && !la->deleted && !la->undoing &&
		    !state_store_get(st, PROTO_OBJECT_NODECLAIM, "", la->name)) {
			ret->total++;
			ret->active++;
		}
	}
}

/* The pool's limits.nodes, or -1. */
static int64_t node_limit(const struct proto_nodepool *np)
{
	for (uint32_t i = 0; i < np->n_limits; i++)
		if (streq(np->limits[i].name, "nodes"))
			return np->limits[i].value;
	return -1;
}

/* The smallest free "<pool>-static-<n>" at or after *next. */
static void next_name(struct launcher *l, const char *pool, unsigned *next, char *buf, size_t size)
{
	const struct state_store *st = launcher_store(l);

	for (;; (*next)++) {
		snprintf(buf, size, "%.*s-static-%u", STATIC_POOL_PREFIX_MAX, pool, *next);
		if (!state_store_get(st, PROTO_OBJECT_NODECLAIM, "", buf) &&
		    !hashmap_get(&l->launches, buf))
			return;
	}
}

/* Why no claim may be opened for np now (its EC2NodeClass), or NULL. */
static const char *not_ready(struct launcher *l, const struct proto_nodepool *np)
{
	const struct state_entry *ce = np->nodeclass_ref.name
		? state_store_get(launcher_store(l), PROTO_OBJECT_NODECLASS, "", np->nodeclass_ref.name) : NULL;

	if (np->status == PROTO_NODEPOOL_INVALID)
		return np->status_reason ?: "it is invalid";
	if (!ce)
		return "its EC2NodeClass does not exist";
	if (ce->obj.nodeclass->unsupported)
		return ce->obj.nodeclass->unsupported;
	if (ce->obj.nodeclass->ready == PROTO_COND_FALSE)
		return ce->obj.nodeclass->ready_reason ?: "its EC2NodeClass is not ready";
	return NULL;
}

static bool waiting(struct launcher *l, const char *pool, uint64_t now)
{
	uint64_t *until = hashmap_get(&l->static_refused, pool);

	if (!until)
		return false;
	if (now < *until)
		return true;
	free(hashmap_remove(&l->static_refused, pool));
	return false;
}

static void wait_before_retry(struct launcher *l, const char *pool, uint64_t now)
{
	uint64_t *until = malloc(sizeof(*until));
	void *old = NULL;

	if (!until)
		return;
	*until = now + STATIC_REFUSED_RETRY_USEC;
	if (hashmap_put(&l->static_refused, pool, until, &old) < 0)
		free(until);
	free(old);
}

/*
 * What a NodeClaim of np requires, as Karpenter's NodeClaimTemplate has it
 * (and the solver, model/from-state.c nodepool_requirements()): the
 * template's requirements, its labels as In requirements, the pool's own
 * label, and on-demand when no capacity type is named (the AWS default).
 * Pointers into np; *ret to free.
 */
static int claim_requirements(const struct proto_nodepool *np, struct proto_requirement **ret,
			      uint32_t *n_ret)
{
	static char *on_demand[] = { "on-demand" };
	struct proto_requirement *q = calloc(np->n_requirements + np->n_labels + 2, sizeof(*q));
	bool capacity_type = false;
	uint32_t n = 0;

	if (!q)
		return -ENOMEM;
	for (uint32_t i = 0; i < np->n_requirements; i++) {
		q[n++] = np->requirements[i];
		capacity_type |= streq(np->requirements[i].key, "karpenter.sh/capacity-type");
	}
	for (uint32_t i = 0; i < np->n_labels; i++)
		q[n++] = (struct proto_requirement){ .key = np->labels[i].key, .op = PROTO_OP_IN,
						     .values = &np->labels[i].value, .n_values = 1 };
	q[n++] = (struct proto_requirement){ .key = "karpenter.sh/nodepool", .op = PROTO_OP_IN,
					     .values = (char **)&np->name, .n_values = 1 };
	if (!capacity_type)
		q[n++] = (struct proto_requirement){ .key = "karpenter.sh/capacity-type",
						     .op = PROTO_OP_IN, .values = on_demand, .n_values = 1 };
	*ret = q;
	*n_ret = n;
	return 0;
}

/* The claim that keeps np at its count: every catalog type, pointers into
 * the catalog (launcher_admit copies what it keeps). */
static int launch_one(struct launcher *l, const struct proto_nodepool *np, const char *name)
{
	struct proto_msg cat;
	const struct proto_catalog *c = &cat.body.catalog;
	struct proto_candidate *cands;
	struct proto_requirement *reqs;
	uint32_t n_reqs;
	char plan_id[PROTO_MAX_NAME_LEN + 16];
	int r;

	proto_msg_init(&cat, PROTO_MSG_CATALOG, PROTO_PROCESS_LAUNCHER, 0, 0);
	launcher_catalog_msg(l->catalog, &cat);
	if (c->n_instance_types == 0)
		return -EAGAIN;
	if ((r = claim_requirements(np, &reqs, &n_reqs)) < 0)
		return r;
	cands = calloc(c->n_instance_types, sizeof(*cands));
	if (!cands) {
		free(reqs);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->n_instance_types; i++)
		cands[i] = (struct proto_candidate){ .name = c->instance_types[i].name,
						     .offerings = c->instance_types[i].offerings,
						     .n_offerings = c->instance_types[i].n_offerings };
	snprintf(plan_id, sizeof(plan_id), "static-%.*s", STATIC_POOL_PREFIX_MAX, np->name);
	r = launcher_admit(l, plan_id,
			   &(struct proto_planned_nodeclaim){
				   .id = (char *)name, .nodepool = np->name,
				   .nodeclass = np->nodeclass_ref.name,
				   .requirements = reqs, .n_requirements = n_reqs,
				   .instance_types = cands, .n_instance_types = c->n_instance_types });
	free(cands);
	free(reqs);
	return r;
}

static void reconcile_pool(struct launcher *l, const struct proto_nodepool *np, uint64_t now)
{
	struct pool_count n;
	int64_t limit = node_limit(np), want;
	const char *why;
	unsigned next = 0;
	char name[PROTO_MAX_NAME_LEN + 1];

	count_pool(l, np->name, &n);
	if ((int64_t)n.active >= np->replicas)
		return;
	/* Checked every pass, without waiting: the EC2NodeClass's own status
	 * and Events say why it is not ready; the pool goes once it is. */
	if ((why = not_ready(l, np))) {
		log_debug("not provisioning nodeclaims of static nodepool %s: %s", np->name, why);
		return;
	}
	if (waiting(l, np->name, now))
		return;
	want = np->replicas - (int64_t)n.active;
	if (limit >= 0 && want > limit - (int64_t)n.total)
		want = limit - (int64_t)n.total;
	if (want <= 0) {
		log_info_kv(LOG_KV({ "nodepool", np->name }),
			    "nodepool %s node limit reached (%" PRId64 " nodeclaim(s), limit %" PRId64
			    ", %" PRId64 " replica(s))", np->name, (int64_t)n.total, limit, np->replicas);
		wait_before_retry(l, np->name, now);
		return;
	}
	if (want > STATIC_MAX_PER_PASS)
		want = STATIC_MAX_PER_PASS;
	log_info_kv(LOG_KV({ "nodepool", np->name }),
		    "provisioning %" PRId64 " nodeclaim(s) to satisfy replica count of nodepool %s "
		    "(current %u, desired %" PRId64 ")", want, np->name, n.active, np->replicas);
	for (int64_t i = 0; i < want; i++) {
		int r;

		next_name(l, np->name, &next, name, sizeof(name));
		r = launch_one(l, np, name);
		if (r < 0) {
			/* Refused: admit.c told why (Event, log); the pool waits. */
			wait_before_retry(l, np->name, now);
			return;
		}
	}
}

void launcher_static_reconcile(struct launcher *l)
{
	const struct state_store *st = launcher_store(l);
	const struct state_entry *e;
	uint64_t now = clock_monotonic_usec();
	size_t it = 0;

	if (!st || !l->catalog)
		return;
	while ((e = state_store_next(st, &it)))
		if (e->obj.kind == PROTO_OBJECT_NODEPOOL && e->obj.nodepool->static_capacity)
			reconcile_pool(l, e->obj.nodepool, now);
}

static int on_soon(struct loop *loop, void *userdata)
{
	struct launcher *l = userdata;

	(void)loop;
	l->static_soon = sd_event_source_disable_unref(l->static_soon);
	if (l->working && l->aws_ok && l->reconciled_once && l->replica && replica_synced(l->replica))
		launcher_static_reconcile(l);
	return 0;
}

/* A pass soon for pool, without its wait (a new count, or one of its
 * NodeClaims on its way out), as upstream reconciles on those events. */
static void soon(struct launcher *l, const char *pool)
{
	int r;

	free(hashmap_remove(&l->static_refused, pool));
	if (l->static_soon)
		return;
	r = loop_add_timer(l->d->loop, STATIC_SOON_USEC, on_soon, l, &l->static_soon);
	if (r < 0) /* the next reconcile pass does it */
		log_debug("Failed to schedule the static nodepool pass: %s", strerror(-r));
}

static bool node_disrupted(const struct proto_node *n)
{
	for (uint32_t i = 0; n && i < n->n_taints; i++)
		if (streq(n->taints[i].key, KARPENTER_DISRUPTED_TAINT_KEY))
			return true;
	return false;
}

void launcher_static_observe(struct launcher *l, const struct proto_object *old,
			     const struct proto_object *now)
{
	const struct state_store *st = launcher_store(l);
	const struct state_entry *pe = NULL;
	const char *pool = NULL;

	if (now && now->kind == PROTO_OBJECT_NODEPOOL) {
		if (now->nodepool->static_capacity &&
		    !(old && old->nodepool->static_capacity &&
		      old->nodepool->replicas == now->nodepool->replicas))
			soon(l, now->nodepool->name);
		return;
	}
	if (old && old->kind == PROTO_OBJECT_NODECLAIM &&
	    (!now || (now->nodeclaim->deletion_time && !old->nodeclaim->deletion_time)))
		pool = old->nodeclaim->nodepool; /* deleted, or its deletion began */
	else if (now && now->kind == PROTO_OBJECT_NODE && now->node->nodeclaim &&
		 node_disrupted(now->node) && !(old && node_disrupted(old->node))) {
		const struct state_entry *ce = st ? state_store_get(st, PROTO_OBJECT_NODECLAIM, "",
								    now->node->nodeclaim) : NULL;

		pool = ce ? ce->obj.nodeclaim->nodepool : NULL; /* tainted for a drift */
	}
	if (pool && st)
		pe = state_store_get(st, PROTO_OBJECT_NODEPOOL, "", pool);
	if (pe && pe->obj.nodepool->static_capacity)
		soon(l, pool);
}

void launcher_static_done(struct launcher *l)
{
	l->static_soon = sd_event_source_disable_unref(l->static_soon);
}
