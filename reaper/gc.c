/*
 * Garbage collection and liveness, as Karpenter's controllers do them:
 *  - an instance of this cluster launched by kanna (tags
 *    kubernetes.io/cluster/<name> and karpenter.sh/nodepool) that no
 *    NodeClaim speaks for, older than gc-grace, is terminated (its Node,
 *    if one was made, is deleted and drained first) — aws/karpenter-
 *    provider-aws pkg/controllers/nodeclaim/garbagecollection. An
 *    instance whose karpenter.sh/nodeclaim tag names a NodeClaim that is
 *    still launching is that NodeClaim's (the launcher adopts it after a
 *    restart), not an orphan;
 *  - a Node of ours (the termination finalizer) that no NodeClaim speaks
 *    for and whose instance is gone (shutting-down, terminated, or not
 *    listed) in a description taken gc-grace after the Node was created is
 *    deleted; its termination (termination.c) removes the finalizer. A
 *    NodeClaim terminated before the launcher had created its Node (a
 *    launcher killed between the two, or a NodeClaim deleted mid-launch)
 *    would otherwise leave that Node behind for good, as Karpenter's Node
 *    would not (its owner reference to the NodeClaim deletes it);
 *  - a launched NodeClaim whose instance EC2 no longer lists is deleted,
 *    its Node with it, without a drain (nothing runs there any more) —
 *    kubernetes-sigs/karpenter pkg/controllers/nodeclaim/garbagecollection;
 *  - a launched NodeClaim not Registered within registration-ttl (15 min,
 *    Karpenter's registrationTimeout in pkg/controllers/nodeclaim/
 *    lifecycle/liveness.go) is deleted, and its instance terminated;
 *  - a NodeClaim deleted before it had an instance is the launcher's to
 *    release; if it has not after UNLAUNCHED_HANDOFF_GRACES, because no launcher
 *    ran then, termination.c releases it once a description taken after
 *    that shows what (if anything) was launched for it.
 * Everything is decided from a complete description (inventory.c) taken
 * after the objects it judges could have been seen in it, never from a
 * missing page or a stale list.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/karpenter.h"
#include "reaper/reaper.h"

/* How long the launcher has to release a NodeClaim deleted mid-launch
 * (launch-undo.c) before the reaper does it in its place: twice gc-grace
 * (a minute by default), longer than any launch step takes. */
#define UNLAUNCHED_HANDOFF_GRACES 2

static const char GC_REASON[] = "garbage_collected";
static const char REGISTRATION_REASON[] = "registration_timeout";

/* The cluster state must have been current this recently for the GC to
 * act on what it lacks: a replica whose watcher is gone still looks
 * synced, and a NodeClaim created meanwhile would look absent. */
#define GC_REPLICA_CURRENT_USEC (5ULL * 1000 * 1000)

struct gc {
	struct hashmap orphans;       /* instance id → (void *)1: being terminated */
	uint64_t orphans_checked_usec; /* the description last looked through */
};

static bool replica_current(const struct reaper *r, uint64_t now_usec)
{
	uint64_t at = r->replica ? replica_current_usec(r->replica) : 0;

	return at && now_usec - at < GC_REPLICA_CURRENT_USEC;
}

/* When the NodeClaim's instance was launched (its Launched condition, else
 * its creation), Unix ms. */
static int64_t launched_ms(const struct proto_nodeclaim *nc)
{
	for (uint32_t i = 0; i < nc->n_conditions; i++)
		if (streq(nc->conditions[i].type, "Launched") && nc->conditions[i].last_transition)
			return nc->conditions[i].last_transition;
	return nc->creation_time;
}

static bool condition_true(const struct proto_nodeclaim *nc, const char *type)
{
	for (uint32_t i = 0; i < nc->n_conditions; i++)
		if (streq(nc->conditions[i].type, type))
			return nc->conditions[i].status == PROTO_COND_TRUE;
	return false;
}

/* Has a complete description, taken long enough after t_ms that anything
 * launched by then is in it, come in? */
static bool described_after(const struct reaper *r, int64_t t_ms)
{
	int64_t at = inventory_described_wall_ms(r);

	return at && t_ms && at - t_ms >= (int64_t)(r->cfg->gc_grace_usec / 1000);
}

bool gc_instance_gone(const struct reaper *r, const struct proto_nodeclaim *nc)
{
	const char *id = provider_instance_id(nc->provider_id);
	const struct ec2_instance *e;

	if (!id || !described_after(r, launched_ms(nc)))
		return false;
	e = inventory_instance(r, id);
	return !e || streq(e->state, "shutting-down");
}

int gc_unlaunched_instance(const struct reaper *r, const struct proto_nodeclaim *nc,
			   const char **instance_id)
{
	const struct ec2_instance *e;
	size_t it = 0;

	*instance_id = NULL;
	if (clock_realtime_ms() - nc->deletion_time <
		    UNLAUNCHED_HANDOFF_GRACES * (int64_t)(r->cfg->gc_grace_usec / 1000) ||
	    !described_after(r, nc->deletion_time))
		return -EAGAIN;
	while (inventory_next(r, &it, &e))
		if (streq(e->nodeclaim, nc->name) && !streq(e->state, "shutting-down")) {
			*instance_id = e->instance_id;
			return 1;
		}
	return 0;
}

/* Instance ids the NodeClaims speak for, and NodeClaims still launching. */
static int index_claims(struct reaper *r, struct hashmap *owned, struct hashmap *launching)
{
	const struct state_entry *e;
	size_t it = 0;

	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;
		const char *id;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM)
			continue;
		id = provider_instance_id(nc->provider_id);
		if ((id && hashmap_put(owned, id, (void *)nc, NULL) < 0) ||
		    (!id && hashmap_put(launching, nc->name, (void *)nc, NULL) < 0))
			return -ENOMEM;
	}
	return 0;
}

static bool node_ready(const struct proto_node *n)
{
	return n && n->ready == PROTO_COND_TRUE;
}

static const struct proto_node *node_of_instance(struct reaper *r, const char *instance_id)
{
	const struct state_entry *e;
	size_t it = 0;

	while ((e = state_store_next(reaper_store(r), &it)))
		if (e->obj.kind == PROTO_OBJECT_NODE &&
		    streq_ptr(provider_instance_id(e->obj.node->provider_id), instance_id))
			return e->obj.node;
	return NULL;
}

/* Terminated like any instance (instances.c); its Node, if its kubelet
 * registered one, deleted too (a kubelet that still runs would register
 * it again: the instance goes first or together, never after). */
static void collect_orphan(struct reaper *r, const struct ec2_instance *e)
{
	const struct proto_node *node;

	if (hashmap_get(&r->gc->orphans, e->instance_id))
		return;
	node = node_of_instance(r, e->instance_id);
	log_info_kv(LOG_KV({ "instance", e->instance_id }, { "nodepool", e->nodepool },
			   { "nodeclaim", *e->nodeclaim ? e->nodeclaim : "-" }),
		    "garbage collecting instance %s of nodepool %s: no nodeclaim %s%s%s", e->instance_id,
		    e->nodepool, *e->nodeclaim ? e->nodeclaim : "(untagged)",
		    node ? ", and its node " : "", node ? node->name : "");
	metrics_counter_add(r->m.instances_collected, 1, e->nodepool, NULL);
	if (hashmap_put(&r->gc->orphans, e->instance_id, (void *)1, NULL) < 0) {
		log_error("Failed to garbage collect instance %s: out of memory", e->instance_id);
		return;
	}
	if (node && !node->deletion_time) {
		char key[PROTO_MAX_NAME_LEN + 8];
		struct claim_work *w;

		snprintf(key, sizeof(key), "node/%s", node->name);
		if ((w = reaper_work(r, key)))
			termination_delete_node(r, w, node);
	}
}

static bool has_finalizer(const struct proto_node *n)
{
	return has_string(n->finalizers, n->n_finalizers, KARPENTER_TERMINATION_FINALIZER);
}

/* Nodes of ours left behind by a NodeClaim that is gone, whose instance
 * is gone too (from the same description as collect_orphans()). */
static void collect_orphan_nodes(struct reaper *r, const struct hashmap *owned)
{
	int64_t old_before_ms = inventory_described_wall_ms(r) - (int64_t)(r->cfg->gc_grace_usec / 1000);
	const struct state_entry *e;
	size_t it = 0;

	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_node *node = e->obj.node;
		const struct ec2_instance *inst;
		const char *id;
		char key[PROTO_MAX_NAME_LEN + 8];
		struct claim_work *w;

		if (e->obj.kind != PROTO_OBJECT_NODE || node->deletion_time || !has_finalizer(node) ||
		    !(id = provider_instance_id(node->provider_id)) || hashmap_get(owned, id) ||
		    !node->creation_time || node->creation_time > old_before_ms)
			continue;
		inst = inventory_instance(r, id);
		if (inst && !streq(inst->state, "shutting-down") && !streq(inst->state, "terminated"))
			continue; /* live: collect_orphans()'s */
		snprintf(key, sizeof(key), "node/%s", node->name);
		if (!(w = reaper_work(r, key)) || w->node_delete_sent)
			continue;
		log_info_kv(LOG_KV({ "node", node->name }, { "instance", id }),
			    "garbage collecting node %s: no nodeclaim, and its instance %s is %s", node->name,
			    id, inst ? inst->state : "gone");
		termination_delete_node(r, w, node);
	}
}

/* Orphans, from the last description, once the cluster state was current
 * after it was taken. */
static void collect_orphans(struct reaper *r)
{
	struct hashmap owned = { 0 }, launching = { 0 };
	int64_t young_after_s = (inventory_described_wall_ms(r) - (int64_t)(r->cfg->gc_grace_usec / 1000)) / 1000;
	const struct ec2_instance *e;
	size_t it = 0;

	if (index_claims(r, &owned, &launching) < 0) {
		log_error("Failed to look for orphaned instances: out of memory");
		goto out;
	}
	while (inventory_next(r, &it, &e)) {
		const struct proto_nodeclaim *tagged = *e->nodeclaim ? hashmap_get(&launching, e->nodeclaim)
								       : NULL;

		/* Not kanna's (no nodepool tag: another node group of the
		 * cluster), on its way out, young, or spoken for. */
		if (!*e->nodepool || streq(e->state, "shutting-down") || !e->launch_time_s ||
		    e->launch_time_s > young_after_s || hashmap_get(&owned, e->instance_id) || tagged)
			continue;
		collect_orphan(r, e);
	}
	collect_orphan_nodes(r, &owned);
out:
	hashmap_done(&owned);
	hashmap_done(&launching);
}

static bool orphan_done(const char *key, void *value, void *userdata)
{
	struct reaper *r = userdata;

	(void)value;
	if (instance_terminate(r, key, clock_monotonic_usec()) != INSTANCE_GONE)
		return false;
	instance_forget(r, key);
	return true;
}

/* A NodeClaim to delete for GC or liveness (its termination follows). */
static void delete_claim(struct reaper *r, const struct proto_nodeclaim *nc, const char *reason)
{
	struct claim_work *w = reaper_work(r, nc->name);

	if (!w || w->claim_delete_sent)
		return;
	if (reason == GC_REASON)
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "provider-id", nc->provider_id }),
			    "garbage collecting nodeclaim with no cloudprovider representation: %s "
			    "(instance %s)", nc->name, provider_instance_id(nc->provider_id) ?: "-");
	else
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "reason", reason },
				   { "timeout", "registration-ttl" }),
			    "terminating due to timeout: nodeclaim %s did not register within %.0f s "
			    "of its launch", nc->name, (double)r->cfg->registration_ttl_usec / 1e6);
	metrics_counter_add(r->m.disrupted, 1, nc->nodepool ?: "", reason, NULL);
	termination_delete_claim(r, nc->name, w);
}

void gc_pass(struct reaper *r, uint64_t now_usec)
{
	struct hashmap nodes = { 0 }; /* instance id → Node */
	const struct state_entry *e;
	int64_t now_ms = clock_realtime_ms();
	size_t it = 0;

	if (!r->gc)
		return;
	inventory_refresh(r, now_usec);
	hashmap_remove_if(&r->gc->orphans, orphan_done, r);
	if (!replica_current(r, now_usec))
		return; /* judge nothing by a cluster state that may be stale */
	if (inventory_described_usec(r) > r->gc->orphans_checked_usec &&
	    replica_current_usec(r->replica) >= inventory_described_usec(r)) {
		r->gc->orphans_checked_usec = inventory_described_usec(r);
		collect_orphans(r);
	}
	while ((e = state_store_next(reaper_store(r), &it)))
		if (e->obj.kind == PROTO_OBJECT_NODE && provider_instance_id(e->obj.node->provider_id) &&
		    hashmap_put(&nodes, provider_instance_id(e->obj.node->provider_id),
				(void *)e->obj.node, NULL) < 0) {
			log_error("Failed to check the nodeclaims' registration: out of memory");
			hashmap_done(&nodes);
			return;
		}
	it = 0;
	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || nc->deletion_time ||
		    !provider_instance_id(nc->provider_id))
			continue;
		if (gc_instance_gone(r, nc))
			delete_claim(r, nc, GC_REASON);
		/* Registered: its Node joined (the launcher marks the condition;
		 * a Node with its providerID that is Ready counts even while no
		 * launcher runs to mark it). */
		else if (!condition_true(nc, "Registered") &&
			 !node_ready(hashmap_get(&nodes, provider_instance_id(nc->provider_id))) &&
			 now_ms - launched_ms(nc) >= (int64_t)(r->cfg->registration_ttl_usec / 1000))
			delete_claim(r, nc, REGISTRATION_REASON);
	}
	hashmap_done(&nodes);
}

int gc_init(struct reaper *r)
{
	int k;

	if (!(r->gc = calloc(1, sizeof(*r->gc))))
		return -ENOMEM;
	if ((k = inventory_init(r)) < 0) {
		free(r->gc);
		r->gc = NULL;
	}
	return k;
}

void gc_done(struct reaper *r)
{
	if (!r->gc)
		return;
	hashmap_done(&r->gc->orphans);
	free(r->gc);
	r->gc = NULL;
	inventory_done(r);
}
