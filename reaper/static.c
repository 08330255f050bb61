/*
 * Static NodePools scaled down: the surplus NodeClaims deleted in
 * upstream's order (static.h). static_running() and static_surplus() are
 * pure over the replica, for the unit test; static_pass() is the daemon's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/karpenter.h"
#include "reaper/candidate.h"
#include "reaper/consolidation.h"
#include "reaper/disruption.h"
#include "reaper/reaper.h"
#include "reaper/static.h"

/* Deletes per pool and pass: each starts a drain; the next pass does more. */
#define STATIC_MAX_DELETES_PER_PASS 50

static bool counts(const struct proto_nodeclaim *nc, const struct proto_nodepool *np,
		   static_leaving_fn leaving, void *userdata)
{
	return streq_ptr(nc->nodepool, np->name) && !nc->deletion_time &&
	       !(leaving && leaving(nc, userdata));
}

uint32_t static_running(const struct state_store *st, const struct proto_nodepool *np,
			static_leaving_fn leaving, void *userdata)
{
	const struct state_entry *e;
	uint32_t n = 0;
	size_t it = 0;

	while ((e = state_store_next(st, &it)))
		n += e->obj.kind == PROTO_OBJECT_NODECLAIM && counts(e->obj.nodeclaim, np, leaving, userdata);
	return n;
}

struct ranked {
	const struct proto_nodeclaim *nc;
	int tier;    /* 0 unlaunched, 1 empty, 2 others, 3 with do-not-disrupt */
	double cost; /* tiers 2 and 3 */
};

static int by_rank(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->tier != y->tier)
		return x->tier < y->tier ? -1 : 1;
	if (x->cost != y->cost)
		return x->cost < y->cost ? -1 : 1;
	return strcmp(x->nc->name, y->nc->name);
}

static void rank(const struct state_store *st, const struct proto_nodepool *np, int64_t now_ms,
		 struct ranked *r)
{
	const struct state_entry *ne = r->nc->node_name
		? state_store_get(st, PROTO_OBJECT_NODE, "", r->nc->node_name) : NULL;
	const struct proto_node *node = ne ? ne->obj.node : NULL;
	const struct state_pod_set *set = node ? state_store_pods_on(st, node->name) : NULL;
	bool do_not_disrupt = r->nc->do_not_disrupt || (node && node->do_not_disrupt);
	unsigned movable = 0;
	int64_t expire = r->nc->expire_after_s ?: np->expire_after_s;

	if (!r->nc->provider_id || !*r->nc->provider_id) {
		r->tier = 0;
		return;
	}
	for (uint32_t i = 0; set && i < set->n; i++) {
		const struct proto_pod *p = set->pods[i];

		if (p->deletion_time)
			continue;
		do_not_disrupt |= p->do_not_disrupt;
		movable += !drain_pod_stays(p);
	}
	if (!movable && !do_not_disrupt) {
		r->tier = 1;
		return;
	}
	r->tier = do_not_disrupt ? 3 : 2;
	r->cost = (node ? candidate_reschedule_cost(st, node->name) : 1.0) *
		  consolidation_lifetime_remaining((now_ms - r->nc->creation_time) / 1000, expire);
}

int static_surplus(const struct state_store *st, const struct proto_nodepool *np, int64_t now_ms,
		   static_leaving_fn leaving, void *userdata, const struct proto_nodeclaim **ret,
		   size_t max)
{
	uint32_t running = static_running(st, np, leaving, userdata), k = 0;
	const struct state_entry *e;
	struct ranked *v;
	size_t it = 0, n;

	if (!np->static_capacity || (int64_t)running <= np->replicas || max == 0)
		return 0;
	v = calloc(running, sizeof(*v));
	if (!v)
		return -ENOMEM;
	while ((e = state_store_next(st, &it)) && k < running)
		if (e->obj.kind == PROTO_OBJECT_NODECLAIM && counts(e->obj.nodeclaim, np, leaving, userdata)) {
			v[k].nc = e->obj.nodeclaim;
			rank(st, np, now_ms, &v[k++]);
		}
	qsort(v, k, sizeof(*v), by_rank);
	n = (size_t)((int64_t)running - np->replicas);
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		ret[i] = v[i].nc;
	free(v);
	return (int)n;
}

/* On its way out already: a delete of ours sent, or a disruption (drift,
 * expiry) that will delete it, ours or (its taint) a reaper's before us. */
static bool leaving(const struct proto_nodeclaim *nc, void *userdata)
{
	struct reaper *r = userdata;
	struct claim_work *w = hashmap_get(&r->work, nc->name);

	if (node_has_taint(disruption_node_of(r, nc), KARPENTER_DISRUPTED_TAINT_KEY))
		return true;
	if (!w || !(w->claim_delete_sent || w->disrupting))
		return false;
	w->seen_pass = r->pass; /* kept until the replica shows the delete */
	return true;
}

int static_replaced(struct reaper *r, const struct proto_nodepool *np,
		    const struct proto_nodeclaim *nc)
{
	const struct state_entry *e;
	int64_t ready = 0, active = 0, total = 0, limit = -1;
	size_t it = 0;

	for (uint32_t i = 0; i < np->n_limits; i++)
		if (streq(np->limits[i].name, "nodes"))
			limit = np->limits[i].value;
	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_nodeclaim *x = e->obj.nodeclaim;
		const struct proto_node *n;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || !streq_ptr(x->nodepool, np->name))
			continue;
		total++;
		n = disruption_node_of(r, x);
		if (x->deletion_time || streq(x->name, nc->name) ||
		    node_has_taint(n, KARPENTER_DISRUPTED_TAINT_KEY))
			continue;
		active++;
		ready += n && n->ready == PROTO_COND_TRUE && claim_initialized(x);
	}
	if (ready >= np->replicas)
		return 1;
	/* No replacement can come: the launcher counts this one against
	 * limits.nodes until it is gone. Delete, then replace. */
	return active < np->replicas && limit >= 0 && total >= limit;
}

static void scale_down(struct reaper *r, const struct proto_nodepool *np)
{
	const struct proto_nodeclaim *v[STATIC_MAX_DELETES_PER_PASS];
	uint32_t running;
	int n;

	n = static_surplus(reaper_store(r), np, clock_realtime_ms(), leaving, r, v, ARRAY_SIZE(v));
	if (n < 0) {
		log_error("Failed to choose nodeclaims of static nodepool %s to remove: out of memory",
			  np->name);
		return;
	}
	if (n == 0)
		return;
	running = static_running(reaper_store(r), np, leaving, r);
	log_info_kv(LOG_KV({ "nodepool", np->name }),
		    "deprovisioning %d nodeclaim(s) to satisfy replica count of nodepool %s "
		    "(current %u, desired %" PRId64 ")", n, np->name, running, np->replicas);
	for (int i = 0; i < n; i++) {
		struct claim_work *w = reaper_work(r, v[i]->name);
		struct kube_object_ref ref = { "karpenter.sh/v1", "NodeClaim", NULL, v[i]->name,
					       v[i]->uid };

		if (!w)
			return;
		log_info_kv(LOG_KV({ "nodeclaim", v[i]->name }, { "nodepool", np->name }),
			    "deleting nodeclaim %s: nodepool %s is over its %" PRId64 " replica(s)",
			    v[i]->name, np->name, np->replicas);
		kube_event_record(r->d->events, &ref, KUBE_EVENT_NORMAL, "DisruptionTerminating",
				  "Disrupting NodeClaim: overprovisioned (nodepool %s has %" PRId64
				  " replica(s))", np->name, np->replicas);
		metrics_counter_add(r->m.disrupted, 1, np->name, "overprovisioned", NULL);
		termination_delete_claim(r, v[i]->name, w);
	}
}

void static_pass(struct reaper *r)
{
	const struct state_store *st = reaper_store(r);
	const struct state_entry *e;
	size_t it = 0;

	while ((e = state_store_next(st, &it)))
		if (e->obj.kind == PROTO_OBJECT_NODEPOOL && e->obj.nodepool->static_capacity &&
		    e->obj.nodepool->status != PROTO_NODEPOOL_INVALID)
			scale_down(r, e->obj.nodepool);
}
