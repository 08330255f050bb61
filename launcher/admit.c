/*
 * Plans in: each planned NodeClaim is checked against its NodePool's limits
 * before anything is written. Usage counts every NodeClaim of the pool the
 * replica knows plus every launch in flight here; a launch not yet started
 * counts as its largest remaining candidate. The launcher is the one place
 * all shards' plans meet and it admits them one at a time on its loop, so
 * parallel scheduler shards can never overshoot a limit together.
 * Candidates that would exceed the limit are dropped (Karpenter does the
 * same); a claim with none left is refused with an Event and its pods are
 * handed back to the schedulers. Before the limits, every candidate
 * offering is re-checked against the NodePool's requirements, its
 * EC2NodeClass and the unavailable offerings (admit-requirements.c): a
 * plan is a claim to check, never an order.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/schema.h"
#include "common/clock.h"
#include "common/kube-events.h"
#include "common/log.h"
#include "common/metrics.h"
#include "state/state-store.h"
#include "launcher/admit-requirements.h"
#include "launcher/catalog.h"
#include "launcher/fleet.h"
#include "launcher/launcher.h"

static const char *const resource_names[_NODEPOOL_RESOURCE_MAX] = {
	[NODEPOOL_RESOURCE_CPU_MILLIS] = "cpu",
	[NODEPOOL_RESOURCE_MEMORY_BYTES] = "memory",
	[NODEPOOL_RESOURCE_GPUS] = "nvidia.com/gpu",
};

void resource_vector_from(const struct proto_resource *res, uint32_t n, resource_vector *ret)
{
	*ret = (resource_vector){ 0 };
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = res[i].value > 0 ? (uint64_t)res[i].value : 0;

		if (streq(res[i].name, "cpu"))
			ret->v[NODEPOOL_RESOURCE_CPU_MILLIS] = v;
		else if (streq(res[i].name, "memory"))
			ret->v[NODEPOOL_RESOURCE_MEMORY_BYTES] = v;
		else if (streq(res[i].name, "nvidia.com/gpu") || streq(res[i].name, "amd.com/gpu") ||
			 streq(res[i].name, "aws.amazon.com/neuron"))
			ret->v[NODEPOOL_RESOURCE_GPUS] += v;
	}
}

static void limits_of(const struct proto_nodepool *np, nodepool_limits *ret)
{
	*ret = (nodepool_limits){ 0 };
	for (uint32_t i = 0; i < np->n_limits; i++) {
		resource_vector v;

		resource_vector_from(&np->limits[i], 1, &v);
		for (int k = 0; k < _NODEPOOL_RESOURCE_MAX; k++)
			if (streq(np->limits[i].name, resource_names[k]) ||
			    (k == NODEPOOL_RESOURCE_GPUS && v.v[k])) {
				ret->set[k] = true;
				ret->max[k] = v.v[k];
			}
	}
}

static void type_capacity(struct launcher *l, const char *type, resource_vector *ret)
{
	const struct proto_instance_type *it = launcher_catalog_find(l->catalog, type);

	if (it)
		resource_vector_from(it->capacity, it->n_capacity, ret);
	else
		*ret = (resource_vector){ 0 };
}

static void vector_max(resource_vector *acc, const resource_vector *v)
{
	for (int k = 0; k < _NODEPOOL_RESOURCE_MAX; k++)
		acc->v[k] = MAX(acc->v[k], v->v[k]);
}

/* What a NodeClaim in the replica counts for: its capacity once launched,
 * else the largest type it may still become. */
static void claim_usage(struct launcher *l, const struct proto_nodeclaim *nc, resource_vector *ret)
{
	*ret = (resource_vector){ 0 };
	if (nc->n_capacity) {
		resource_vector_from(nc->capacity, nc->n_capacity, ret);
		return;
	}
	if (nc->instance_type) {
		type_capacity(l, nc->instance_type, ret);
		return;
	}
	for (uint32_t i = 0; i < nc->n_requirements; i++) {
		const struct proto_requirement *r = &nc->requirements[i];

		if (!streq(r->key, "node.kubernetes.io/instance-type") || r->op != PROTO_OP_IN)
			continue;
		for (uint32_t v = 0; v < r->n_values; v++) {
			resource_vector c;

			type_capacity(l, r->values[v], &c);
			vector_max(ret, &c);
		}
	}
}

void launcher_nodepool_usage(struct launcher *l, const char *nodepool, resource_vector *ret)
{
	const struct state_store *st = launcher_store(l);
	const struct state_entry *e;
	const struct launch *la;
	const char *key;
	void *value;
	size_t it = 0;

	*ret = (resource_vector){ 0 };
	while ((e = state_store_next(st, &it))) {
		const struct proto_nodeclaim *nc;
		resource_vector u;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM)
			continue;
		nc = e->obj.nodeclaim;
		if (!streq_ptr(nc->nodepool, nodepool))
			continue;
		claim_usage(l, nc, &u);
		/* A launch of ours for it counts once, for the larger of the
		 * two: a launch resumed after a restart reserved nothing at
		 * admission, and counting it as zero let a new plan through
		 * beside it (the chaos test saw 18 of 16 CPUs launched). */
		la = hashmap_get(&l->launches, nc->name);
		if (la)
			vector_max(&u, &la->reserved);
		resource_vector_add(ret, &u);
	}
	it = 0;
	while (hashmap_next(&l->launches, &it, &key, &value)) {
		la = value;
		if (streq(la->planned->nodepool, nodepool) &&
		    !state_store_get(st, PROTO_OBJECT_NODECLAIM, "", la->name))
			resource_vector_add(ret, &la->reserved);
	}
}

void launcher_update_usage_metrics(struct launcher *l)
{
	const struct state_store *st = launcher_store(l);
	const struct state_entry *e;
	size_t it = 0;

	if (!st)
		return;
	while ((e = state_store_next(st, &it))) {
		resource_vector u;
		nodepool_limits lim;

		if (e->obj.kind != PROTO_OBJECT_NODEPOOL)
			continue;
		launcher_nodepool_usage(l, e->obj.nodepool->name, &u);
		limits_of(e->obj.nodepool, &lim);
		metrics_gauge_set(l->m.usage, (double)u.v[NODEPOOL_RESOURCE_CPU_MILLIS] / 1000.0,
				  e->obj.nodepool->name, "cpu", NULL);
		metrics_gauge_set(l->m.usage, (double)u.v[NODEPOOL_RESOURCE_MEMORY_BYTES],
				  e->obj.nodepool->name, "memory", NULL);
		if (lim.set[NODEPOOL_RESOURCE_CPU_MILLIS])
			metrics_gauge_set(l->m.limit, (double)lim.max[NODEPOOL_RESOURCE_CPU_MILLIS] / 1000.0,
					  e->obj.nodepool->name, "cpu", NULL);
		if (lim.set[NODEPOOL_RESOURCE_MEMORY_BYTES])
			metrics_gauge_set(l->m.limit, (double)lim.max[NODEPOOL_RESOURCE_MEMORY_BYTES],
					  e->obj.nodepool->name, "memory", NULL);
	}
}

/* ---- offerings without capacity ------------------------------------------ */

bool launcher_offering_unavailable(struct launcher *l, const char *type, const char *zone,
				   uint8_t capacity_type)
{
	return unavailable_has(&l->unavailable, type, zone, capacity_type, clock_realtime_ms());
}

void launcher_mark_unavailable(struct launcher *l, const char *type, const char *zone,
			       uint8_t capacity_type, const char *reason)
{
	int64_t now = clock_realtime_ms();
	int64_t until = now + (int64_t)(l->cfg->unavailable_ttl_usec / 1000);

	if (unavailable_add(&l->unavailable, type, zone, capacity_type, until, now) < 0) {
		log_warn("Failed to mark offering %s/%s/%s unavailable: out of memory", type, zone,
			 proto_capacity_type_name(capacity_type));
		return;
	}
	metrics_counter_add(l->m.offerings_unavailable, 1, type, zone,
			    proto_capacity_type_name(capacity_type), NULL);
	log_info_kv(LOG_KV({ "instance-type", type }, { "zone", zone }),
		    "marking offering %s/%s/%s unavailable for %" PRIu64 " s: %s", type, zone,
		    proto_capacity_type_name(capacity_type), l->cfg->unavailable_ttl_usec / 1000000,
		    reason);
	launcher_publish_unavailable(l, type, zone, capacity_type, until, reason);
}

/*
 * A scheduler that started after an offering was marked never heard of it
 * and plans it again; the launch then fails at once without asking EC2, so
 * nothing would ever tell it. Each failure for want of offerings tells it
 * again about the ones p names.
 */
void launcher_republish_unavailable(struct launcher *l, const struct proto_planned_nodeclaim *p)
{
	int64_t now = clock_realtime_ms();

	for (size_t i = 0; i < l->unavailable.n; i++) {
		const struct unavailable_offering *u = &l->unavailable.v[i];
		bool named = false;

		if (u->until_ms <= now)
			continue;
		for (uint32_t t = 0; t < p->n_instance_types && !named; t++) {
			const struct proto_candidate *c = &p->instance_types[t];

			if (!streq(c->name, u->instance_type))
				continue;
			for (uint32_t k = 0; k < c->n_offerings && !named; k++)
				named = streq_ptr(c->offerings[k].zone, u->zone) &&
					c->offerings[k].capacity_type == u->capacity_type;
		}
		if (named)
			launcher_publish_unavailable(l, u->instance_type, u->zone, u->capacity_type,
						     u->until_ms, "still without capacity");
	}
}

/* ---- admission ------------------------------------------------------------- */

static void refuse(struct launcher *l, const char *plan_id, const struct proto_planned_nodeclaim *p,
		   enum proto_launch_outcome outcome, const char *reason, const char *why)
{
	struct launch tmp = { .l = l, .name = p->id, .plan_id = (char *)plan_id,
			      .planned = (struct proto_planned_nodeclaim *)p };
	const struct state_entry *pe = state_store_get(launcher_store(l), PROTO_OBJECT_NODEPOOL, "",
						       p->nodepool);

	log_warn_kv(LOG_KV({ "nodeclaim", p->id }, { "nodepool", p->nodepool }),
		    "not launching nodeclaim %s for %u pod(s): %s", p->id, p->n_pods, why);
	if (pe)
		kube_event_record(l->d->events,
				  &(struct kube_object_ref){ "karpenter.sh/v1", "NodePool", NULL,
							     p->nodepool, pe->obj.nodepool->uid },
				  KUBE_EVENT_WARNING, reason, "%s", why);
	launcher_publish_result(l, &tmp, outcome, why);
}

/*
 * Keeps the candidates (and offerings) that may still be launched: known
 * to the catalog, offering not marked unavailable, capacity within what the
 * limits leave. *ret_reserved gets the largest capacity kept.
 */
static void filter_candidates(struct launcher *l, struct proto_planned_nodeclaim *p,
			      const nodepool_limits *lim, const resource_vector *in_use,
			      resource_vector *ret_reserved, nodepool_resource *ret_exceeded,
			      uint32_t *ret_over_limit)
{
	uint32_t keep = 0;

	*ret_reserved = (resource_vector){ 0 };
	*ret_over_limit = 0;
	for (uint32_t t = 0; t < p->n_instance_types; t++) {
		struct proto_candidate *c = &p->instance_types[t];
		uint32_t k2 = 0;
		resource_vector cap;

		type_capacity(l, c->name, &cap);
		if (nodepool_limits_admit(lim, in_use, &cap, ret_exceeded) != 0) {
			(*ret_over_limit)++;
			continue;
		}
		for (uint32_t k = 0; k < c->n_offerings; k++)
			if (c->offerings[k].available &&
			    !launcher_offering_unavailable(l, c->name, c->offerings[k].zone,
							   c->offerings[k].capacity_type))
				c->offerings[k2++] = c->offerings[k];
		c->n_offerings = k2;
		if (k2 == 0)
			continue;
		vector_max(ret_reserved, &cap);
		p->instance_types[keep++] = *c;
	}
	p->n_instance_types = keep;
}

/* ---- the requirements re-check (admit-requirements.c) ------------------------------------- */

/* The callbacks' userdata: the launcher and the NodeClaim being checked. */
struct drop_ctx {
	struct launcher *l;
	const struct proto_planned_nodeclaim *p;
	/* A static pool's claim starts from the whole catalog (static.c):
	 * what its requirements leave out is no mistake of a plan's. */
	bool whole_catalog;
};

static const struct proto_instance_type *find_type(const char *name, void *userdata)
{
	const struct drop_ctx *x = userdata;

	return launcher_catalog_find(x->l->catalog, name);
}

static bool offering_unavailable(const char *type, const char *zone, uint8_t capacity_type,
				 void *userdata)
{
	const struct drop_ctx *x = userdata;

	return launcher_offering_unavailable(x->l, type, zone, capacity_type);
}

/* A plan naming what its NodePool forbids is logged as a warning; the
 * schedulers know neither subnets, AMIs nor (until told) the capacity
 * errors, so those drops are routine. */
static void on_dropped(const struct admit_drop *d, void *userdata)
{
	const struct drop_ctx *x = userdata;
	const struct log_kv kv[] = { { "nodeclaim", x->p->id }, { "nodepool", x->p->nodepool },
				     { "instance-type", d->instance_type } };
	bool routine = d->reason == ADMIT_DROP_NODECLASS || d->reason == ADMIT_DROP_UNAVAILABLE;
	char what[256];

	if (x->whole_catalog && d->reason == ADMIT_DROP_REQUIREMENTS)
		return;

	if (d->zone)
		snprintf(what, sizeof(what), "offering %s/%s/%s", d->instance_type, d->zone,
			 proto_capacity_type_name(d->capacity_type));
	else
		snprintf(what, sizeof(what), "instance type %s", d->instance_type);
	metrics_counter_add(x->l->m.offerings_dropped, 1, x->p->nodepool, admit_drop_reason_name(d->reason),
			    NULL);
	log_at(routine ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARN, 0, kv, ARRAY_SIZE(kv),
	       "dropping %s from nodeclaim %s of nodepool %s: %s", what, x->p->id, x->p->nodepool, d->why);
}

/* 0 with la's candidates pruned, or -EPERM with why (refuse it). */
static int recheck_requirements(struct launcher *l, const struct proto_nodepool *np, struct launch *la,
				char *why, size_t size)
{
	const struct state_entry *ce = np->nodeclass_ref.name
		? state_store_get(launcher_store(l), PROTO_OBJECT_NODECLASS, "", np->nodeclass_ref.name) : NULL;
	struct drop_ctx x = { l, la->planned, np->static_capacity };
	struct admit_requirements_input in = {
		.nodepool = np, .nodeclass = ce ? ce->obj.nodeclass : NULL, .region = l->region,
		.find_type = find_type, .unavailable = offering_unavailable, .dropped = on_dropped,
		.userdata = &x,
	};
	struct admit_requirements_result res;
	int r;

	r = admit_requirements(&in, la->planned, &res, why, size);
	if (r == -ENOMEM)
		snprintf(why, size, "out of memory re-checking its requirements");
	return r < 0 ? -EPERM : 0;
}

static double cheapest_offering(const struct proto_candidate *c)
{
	double best = -1;

	for (uint32_t k = 0; k < c->n_offerings; k++)
		if (best < 0 || c->offerings[k].price < best)
			best = c->offerings[k].price;
	return best < 0 ? 1e18 : best;
}

static int by_cheapest_offering(const void *a, const void *b)
{
	const struct proto_candidate *x = a, *y = b;
	double px = cheapest_offering(x), py = cheapest_offering(y);

	if (px != py)
		return px < py ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* A static NodePool's claim (static.c) starts from the whole catalog: once
 * the requirements have pruned it, the cheapest PROTO_MAX_CANDIDATES types
 * stay, as Karpenter orders by price and keeps MaxInstanceTypes (60). A
 * scheduler's plan never has more, cheapest first already. */
static void keep_cheapest(struct proto_planned_nodeclaim *p)
{
	if (p->n_instance_types <= PROTO_MAX_CANDIDATES)
		return;
	qsort(p->instance_types, p->n_instance_types, sizeof(*p->instance_types), by_cheapest_offering);
	p->n_instance_types = PROTO_MAX_CANDIDATES;
}

int launcher_admit(struct launcher *l, const char *plan_id, const struct proto_planned_nodeclaim *p)
{
	const struct state_store *st = launcher_store(l);
	const struct state_entry *pe = state_store_get(st, PROTO_OBJECT_NODEPOOL, "", p->nodepool);
	nodepool_limits lim;
	resource_vector in_use;
	nodepool_resource exceeded = NODEPOOL_RESOURCE_CPU_MILLIS;
	uint32_t over_limit;
	struct launch *la;
	char why[512];

	if (hashmap_get(&l->launches, p->id) || state_store_get(st, PROTO_OBJECT_NODECLAIM, "", p->id)) {
		log_debug("nodeclaim %s of plan %s is already launching; ignoring the replay", p->id,
			  plan_id);
		return -EEXIST;
	}
	if (!pe) {
		snprintf(why, sizeof(why), "NodePool %s does not exist", p->nodepool);
		refuse(l, plan_id, p, PROTO_LAUNCH_FAILED, "FailedScheduling", why);
		return -ENOENT;
	}
	if (pe->obj.nodepool->status == PROTO_NODEPOOL_INVALID) {
		snprintf(why, sizeof(why), "NodePool %s is invalid: %s", p->nodepool,
			 pe->obj.nodepool->status_reason ?: "see its status");
		refuse(l, plan_id, p, PROTO_LAUNCH_FAILED, "FailedScheduling", why);
		return -ENOENT;
	}
	la = launch_new(l, p->id, plan_id, p);
	if (!la) {
		log_error("Failed to admit nodeclaim %s: out of memory", p->id);
		return -ENOMEM;
	}
	if (recheck_requirements(l, pe->obj.nodepool, la, why, sizeof(why)) < 0) {
		refuse(l, plan_id, p, PROTO_LAUNCH_FAILED, "NoCompatibleInstanceTypes", why);
		launch_free(la);
		return -EPERM;
	}
	keep_cheapest(la->planned);
	limits_of(pe->obj.nodepool, &lim);
	launcher_nodepool_usage(l, p->nodepool, &in_use);
	filter_candidates(l, la->planned, &lim, &in_use, &la->reserved, &exceeded, &over_limit);
	if (la->planned->n_instance_types == 0) {
		if (over_limit > 0)
			snprintf(why, sizeof(why),
				 "all available instance types exceed limits for nodepool %s (%s: limit "
				 "%" PRIu64 ", in use %" PRIu64 ")",
				 p->nodepool, resource_names[exceeded], lim.max[exceeded],
				 in_use.v[exceeded]);
		else
			snprintf(why, sizeof(why), "no offering of its %u instance type option(s) is "
				 "available", p->n_instance_types);
		if (!over_limit)
			launcher_republish_unavailable(l, p);
		refuse(l, plan_id, p, over_limit ? PROTO_LAUNCH_LIMIT_EXCEEDED
						 : PROTO_LAUNCH_INSUFFICIENT_CAPACITY,
		       over_limit ? "LimitExceeded" : "InsufficientCapacityError", why);
		launch_free(la);
		return over_limit ? -EDQUOT : -EAGAIN;
	}
	if (launch_enqueue(l, la) < 0) {
		log_error("Failed to admit nodeclaim %s: out of memory", p->id);
		launch_free(la);
		return -ENOMEM;
	}
	launcher_update_usage_metrics(l);
	return 0;
}

void launcher_handle_plan(struct launcher *l, const struct proto_launch_plan *plan)
{
	metrics_counter_add(l->m.plans, 1, NULL);
	log_info("received plan %s: %u nodeclaim(s) from shard %u", plan->plan_id, plan->n_nodeclaims,
		 plan->shard);
	for (uint32_t i = 0; i < plan->n_nodeclaims; i++)
		(void)launcher_admit(l, plan->plan_id, &plan->nodeclaims[i]);
}
