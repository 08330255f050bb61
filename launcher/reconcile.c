/*
 * The level-triggered pass (DESIGN §2 rules 1 and 4), run once the replica
 * is synced and then every reconcile-period: every NodeClaim of ours is
 * compared with what exists and the missing step is done again.
 *
 *   no providerID       → launch it (first looking for an instance tagged
 *                          with its name, then CreateFleet with the same
 *                          ClientToken): recovery after a crash between
 *                          creating the NodeClaim and recording the launch;
 *   providerID, no Node → create the Node and bind its pods;
 *   Node not written by us (the kubelet registered it while we were
 *                          down) → label and taint it, then bind;
 *   Node, planned pods still pending → bind those that still fit it
 *                          (launch-bind.c), while the NodeClaim speaks
 *                          for them;
 *   Node Ready, NodeClaim not yet → conditions Registered, Initialized
 *                          and Ready on the NodeClaim ("registered
 *                          nodeclaim", "initialized nodeclaim").
 *
 * Then static NodePools are brought up to their replicas (static.c).
 *
 * Launches that finished are dropped from the table once the replica shows
 * their NodeClaim launched, so the limits count them exactly once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/schema.h"
#include "common/clock.h"
#include "common/kube-client.h"
#include "common/log.h"
#include "state/replica.h"
#include "state/state-store.h"
#include "launcher/bind-check.h"
#include "launcher/catalog.h"
#include "launcher/launcher.h"
#include "launcher/objects.h"
#include "model/match.h"

/* A finished launch whose NodeClaim the replica never shows is dropped. */
#define FINISHED_KEEP_USEC (120ULL * 1000 * 1000)

static void purge_finished(struct launcher *l)
{
	const struct state_store *st = launcher_store(l);
	const char *key;
	void *value;
	size_t it = 0;
	uint64_t now = clock_monotonic_usec();

	while (hashmap_next(&l->launches, &it, &key, &value)) {
		struct launch *la = value;
		const struct state_entry *e;

		if (la->step != STEP_DONE)
			continue;
		e = state_store_get(st, PROTO_OBJECT_NODECLAIM, "", la->name);
		if ((e && e->obj.nodeclaim->provider_id) || now - la->finished_at > FINISHED_KEEP_USEC) {
			hashmap_remove(&l->launches, la->name);
			launch_free(la);
		}
	}
}

/*
 * The plan of an existing NodeClaim, read back from what it recorded: its
 * candidates are its instance-type requirement, their offerings what the
 * catalog has in the zones and capacity types its requirements allow.
 */
static struct proto_planned_nodeclaim *planned_from_claim(struct launcher *l,
							  const struct proto_nodeclaim *nc)
{
	struct proto_planned_nodeclaim tmp = {
		.id = nc->name, .nodepool = nc->nodepool, .nodeclass = nc->nodeclass,
		.requirements = nc->requirements, .n_requirements = nc->n_requirements,
		.requests = nc->requests, .n_requests = nc->n_requests,
		.pods = nc->planned_pods, .n_pods = nc->n_planned_pods,
	};
	const struct proto_requirement *types = NULL;
	struct proto_planned_nodeclaim *out = NULL;
	struct proto_candidate *cands;
	struct proto_offering *offs = NULL;
	size_t n_offs = 0;

	for (uint32_t i = 0; i < nc->n_requirements; i++)
		if (streq(nc->requirements[i].key, "node.kubernetes.io/instance-type") &&
		    nc->requirements[i].op == PROTO_OP_IN)
			types = &nc->requirements[i];
	if (!types)
		return NULL;
	cands = calloc(types->n_values + 1, sizeof(*cands));
	for (uint32_t v = 0; cands && v < types->n_values; v++) {
		const struct proto_instance_type *it = launcher_catalog_find(l->catalog, types->values[v]);

		n_offs += it ? it->n_offerings : 0;
	}
	offs = calloc(n_offs + 1, sizeof(*offs));
	if (!cands || !offs)
		goto out;
	n_offs = 0;
	for (uint32_t v = 0; v < types->n_values; v++) {
		const struct proto_instance_type *it = launcher_catalog_find(l->catalog, types->values[v]);
		struct proto_candidate *c = &cands[tmp.n_instance_types];

		if (!it)
			continue;
		c->name = types->values[v];
		c->offerings = &offs[n_offs];
		for (uint32_t k = 0; k < it->n_offerings; k++) {
			const struct proto_offering *o = &it->offerings[k];
			const char *ct = proto_capacity_type_name(o->capacity_type);

			if (!requirements_allow(nc->requirements, nc->n_requirements,
						"topology.kubernetes.io/zone", o->zone) ||
			    !requirements_allow(nc->requirements, nc->n_requirements,
						"karpenter.sh/capacity-type", ct))
				continue;
			offs[n_offs++] = *o;
			c->n_offerings++;
		}
		if (c->n_offerings)
			tmp.n_instance_types++;
	}
	tmp.instance_types = cands;
	out = proto_planned_nodeclaim_dup(&tmp);
out:
	free(cands);
	free(offs);
	return out;
}

static struct launch *launch_for_claim(struct launcher *l, const struct proto_nodeclaim *nc)
{
	struct proto_planned_nodeclaim *p = planned_from_claim(l, nc);
	struct proto_planned_nodeclaim empty = { .id = nc->name, .nodepool = nc->nodepool,
						 .nodeclass = nc->nodeclass, .pods = nc->planned_pods,
						 .n_pods = nc->n_planned_pods };
	struct launch *la = launch_new(l, nc->name, NULL, p ? p : &empty);
	int64_t left_ms = nc->creation_time + (int64_t)(l->cfg->launch_timeout_usec / 1000) -
			  clock_realtime_ms();

	proto_planned_nodeclaim_free(p);
	if (!la)
		return NULL;
	la->uid = strdup(nc->uid);
	if (!la->uid) {
		launch_free(la);
		return NULL;
	}
	la->claim_existed = true;
	if (nc->fleet_batch)
		snprintf(la->fleet_batch, sizeof(la->fleet_batch), "%s", nc->fleet_batch);
	if (nc->creation_time > 0)
		la->deadline = clock_monotonic_usec() + (uint64_t)MAX(left_ms, 0) * 1000;
	return la;
}

/* Has the launcher written this Node (created it, or patched the
 * kubelet's registration)? Both give it the termination finalizer, which
 * no kubelet sets and only the reaper removes, once the Node is being
 * deleted. (Not its labels against the NodeClaim's: those the NodeClaim
 * was created with stay on it when its NodePool's template changes, and
 * the Node, labelled from the template of now, would never match.) */
static bool node_written_by_us(const struct proto_node *node)
{
	for (uint32_t i = 0; i < node->n_finalizers; i++)
		if (streq(node->finalizers[i], KARPENTER_TERMINATION_FINALIZER))
			return true;
	return false;
}

/* A launch of nc resumed at its recorded instance: described again, then
 * recorded, its Node created or labelled, its pods bound. */
static struct launch *launch_for_instance(struct launcher *l, const struct proto_nodeclaim *nc)
{
	char zone[64], id[64];
	struct launch *la;

	if (provider_id_parse(nc->provider_id, zone, sizeof(zone), id, sizeof(id)) < 0)
		return NULL;
	la = launch_for_claim(l, nc);
	if (!la)
		return NULL;
	snprintf(la->launched.instance_id, sizeof(la->launched.instance_id), "%s", id);
	snprintf(la->launched.zone, sizeof(la->launched.zone), "%s", zone);
	if (nc->instance_type)
		snprintf(la->launched.instance_type, sizeof(la->launched.instance_type), "%s",
			 nc->instance_type);
	la->step = STEP_DESCRIBE;
	return la;
}

/* A registration patch is not sent again for this long (replica lag). */
#define REGISTER_RETRY_USEC (30ULL * 1000 * 1000)
/* Nor the patch that takes a Node's hold off: a refusal (409, another
 * writer changed the Node) is tried again on a newer replica. */
#define RELEASE_RETRY_USEC (3ULL * 1000 * 1000)

/* Was a patch for key sent less than retry_usec ago? If not, records that
 * one is sent now (the caller sends it); true also when that cannot be
 * recorded, so that nothing is sent without a record. */
static bool sent_recently(struct hashmap *sent_at, const char *key, uint64_t retry_usec)
{
	uint64_t *sent = hashmap_get(sent_at, key), now = clock_monotonic_usec();

	if (sent && now - *sent < retry_usec)
		return true;
	if (!sent) {
		sent = malloc(sizeof(*sent));
		if (!sent || hashmap_put(sent_at, key, sent, NULL) < 0) {
			free(sent);
			return true;
		}
	}
	*sent = now;
	return false;
}

/* Forgets the patches sent for keys that settled(l, key) says are done. */
static void purge_sent(struct launcher *l, struct hashmap *sent_at,
		       bool (*settled)(struct launcher *l, const char *key))
{
	const char *key;
	void *value;
	size_t it = 0;

	while (hashmap_next(sent_at, &it, &key, &value)) {
		if (settled(l, key)) {
			char name[256];

			snprintf(name, sizeof(name), "%s", key);
			free(hashmap_remove(sent_at, name));
		}
	}
}

static bool claim_condition_true(const struct proto_nodeclaim *nc, const char *type)
{
	for (uint32_t i = 0; i < nc->n_conditions; i++)
		if (streq(nc->conditions[i].type, type))
			return nc->conditions[i].status == PROTO_COND_TRUE;
	return false;
}

/* A Ready patch in flight, on l->registering_calls: a stop with it
 * unanswered frees it (launcher_registering_calls_free). */
struct registering_call {
	struct registering_call *next, **pprev;
	char name[];
};

static void registering_call_free(struct registering_call *rc)
{
	*rc->pprev = rc->next;
	if (rc->next)
		rc->next->pprev = rc->pprev;
	free(rc);
}

void launcher_registering_calls_free(struct launcher *l)
{
	while (l->registering_calls)
		registering_call_free(l->registering_calls);
}

static void on_registered(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct registering_call *rc = userdata;
	const char *name = rc->name;

	(void)c;
	if (resp->status >= 200 && resp->status < 300) {
		log_info_kv(LOG_KV({ "nodeclaim", name }), "registered nodeclaim %s", name);
		log_info_kv(LOG_KV({ "nodeclaim", name }), "initialized nodeclaim %s", name);
	} else if (resp->status != 404) {
		log_warn_kv(LOG_KV({ "nodeclaim", name }), "Failed to mark nodeclaim %s registered: %s",
			    name, resp->error ?: "HTTP error");
	}
	registering_call_free(rc);
}

/* The Node joined and is Ready: so is the NodeClaim (Karpenter's
 * Registered → Initialized → Ready lifecycle, in one step here because
 * the launcher created the Node with its labels and taints itself). */
static void mark_registered(struct launcher *l, const struct proto_nodeclaim *nc,
			    const struct proto_node *node)
{
	char path[512], ts[32], *body = NULL;
	struct registering_call *rc;
	size_t len = strlen(nc->name) + 1;
	json_t *patch;

	if (sent_recently(&l->registering, nc->name, REGISTER_RETRY_USEC))
		return;
	rfc3339_now(ts);
	patch = json_pack("{s:{s:s, s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}, "
			  "{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}]}}",
			  "status", "nodeName", node->name, "conditions",
			  "type", "Launched", "status", "True", "reason", "Launched", "lastTransitionTime", ts,
			  "type", "Registered", "status", "True", "reason", "Registered", "lastTransitionTime", ts,
			  "type", "Initialized", "status", "True", "reason", "Initialized", "lastTransitionTime", ts,
			  "type", "Ready", "status", "True", "reason", "Ready", "lastTransitionTime", ts);
	body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
	json_decref(patch);
	rc = malloc(sizeof(*rc) + len);
	if (rc) {
		memcpy(rc->name, nc->name, len);
		rc->next = l->registering_calls;
		rc->pprev = &l->registering_calls;
		if (rc->next)
			rc->next->pprev = &rc->next;
		l->registering_calls = rc;
	}
	snprintf(path, sizeof(path), "/apis/karpenter.sh/v1/nodeclaims/%s/status", nc->name);
	if (rc && (!body || kube_request(l->d->kube, "PATCH", path, "application/merge-patch+json", body,
					 on_registered, rc) < 0))
		registering_call_free(rc);
	free(body);
}

static bool claim_registered(struct launcher *l, const char *name)
{
	const struct state_entry *e = state_store_get(launcher_store(l), PROTO_OBJECT_NODECLAIM, "", name);

	return !e || claim_condition_true(e->obj.nodeclaim, "Ready");
}

static bool node_released(struct launcher *l, const char *name)
{
	const struct state_entry *e = state_store_get(launcher_store(l), PROTO_OBJECT_NODE, "", name);

	return !e || !node_held(e->obj.node);
}

static void on_hold_released(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	char *name = userdata;

	(void)c;
	if (resp->status >= 200 && resp->status < 300)
		log_debug_kv(LOG_KV({ "node", name }), "released node %s to the scheduler (%s taken off)",
			     name, KARPENTER_UNREGISTERED_TAINT_KEY);
	else if (resp->status != 404 && resp->status != 409)
		log_warn_kv(LOG_KV({ "node", name }),
			    "Failed to take the %s taint off node %s: %s (tried again shortly)",
			    KARPENTER_UNREGISTERED_TAINT_KEY, name, resp->error ?: "HTTP error");
}

void launcher_release_hold(struct launcher *l, const struct proto_nodeclaim *nc,
			   const struct proto_node *node)
{
	char path[512], *body = NULL, *name = NULL;
	json_t *patch;

	if (node->deletion_time || !node_written_by_us(node) || !node_held(node) ||
	    (l->cfg->bind_pods &&
	     bind_claim_has_waiting_pods(launcher_store(l), &l->recent, nc, clock_realtime_ms())) ||
	    sent_recently(&l->releasing, node->name, RELEASE_RETRY_USEC))
		return;
	patch = node_release_hold_patch(node);
	body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
	json_decref(patch);
	name = strdup(node->name);
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node->name);
	if (!body || !name) {
		free(name);
		name = NULL;
	}
	if (!name || kube_request_owned(l->d->kube, false, "PATCH", path, MERGE_PATCH, body,
					on_hold_released, name) < 0)
		log_warn_kv(LOG_KV({ "node", node->name }),
			    "Failed to take the %s taint off node %s: out of memory (tried again shortly)",
			    KARPENTER_UNREGISTERED_TAINT_KEY, node->name);
	free(body);
}

static void reconcile_claim(struct launcher *l, const struct proto_nodeclaim *nc,
			    const struct hashmap *nodes_by_provider)
{
	bool young = nc->creation_time == 0 ||
		     clock_realtime_ms() - nc->creation_time < (int64_t)(l->cfg->launch_timeout_usec / 1000);
	const struct proto_node *node;
	struct launch *la;

	if (nc->deletion_time || !nc->nodepool || hashmap_get(&l->launches, nc->name))
		return;
	node = nc->provider_id ? hashmap_get(nodes_by_provider, nc->provider_id) : NULL;
	if (node)
		launcher_release_hold(l, nc, node);
	if (!nc->provider_id) {
		la = launch_for_claim(l, nc);
		if (!la)
			return;
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }),
			    "resuming the launch of nodeclaim %s (no instance recorded)", nc->name);
		la->step = STEP_RESOLVE;
	} else if (!node) {
		/* Past launch-timeout a NodeClaim whose Node never came is the
		 * reaper's to collect, not to be given a Node now. */
		if (!young || !(la = launch_for_instance(l, nc)))
			return;
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }),
			    "nodeclaim %s has instance %s but no node; creating it", nc->name,
			    la->launched.instance_id);
	} else if (!node->deletion_time && !node_written_by_us(node)) {
		/* The kubelet registered the Node while we were down, between
		 * recording the launch and creating the Node: it has neither
		 * the NodePool's labels nor its taints, and binding to it
		 * would refuse (or misplace) every pod that selects them. The
		 * Node step labels it (its POST meets 409 and patches). This is
		 * registration, done at any age as Karpenter's registration
		 * controller does: past launch-timeout nobody else would, and
		 * the Node kept karpenter.sh/unregistered for good. */
		if (!(la = launch_for_instance(l, nc)))
			return;
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "node", node->name }),
			    "nodeclaim %s has node %s as the kubelet registered it, without the "
			    "NodePool's labels and taints; labelling it", nc->name, node->name);
	} else if (node->ready == PROTO_COND_TRUE && !claim_condition_true(nc, "Ready") &&
		   !hashmap_get(&l->launches, nc->name)) {
		mark_registered(l, nc, node);
		return;
	} else if (l->cfg->bind_pods &&
		   bind_claim_has_waiting_pods(launcher_store(l), &l->recent, nc, clock_realtime_ms())) {
		la = launch_for_claim(l, nc);
		if (!la)
			return;
		snprintf(la->node_name, sizeof(la->node_name), "%s", node->name);
		la->step = STEP_BIND;
	} else {
		return;
	}
	if (launch_enqueue(l, la) < 0)
		launch_free(la);
}

int launcher_reconcile(struct loop *loop, void *userdata)
{
	struct launcher *l = userdata;
	const struct state_store *st;
	const struct state_entry *e;
	struct hashmap nodes = { 0 };
	size_t it = 0;

	(void)loop;
	if (!l->working || !l->aws_ok || !l->replica || !replica_synced(l->replica))
		return 0;
	st = launcher_store(l);
	purge_finished(l);
	purge_sent(l, &l->registering, claim_registered);
	purge_sent(l, &l->releasing, node_released);
	bind_recent_purge(&l->recent, st, clock_monotonic_usec() / 1000);
	while ((e = state_store_next(st, &it)))
		if (e->obj.kind == PROTO_OBJECT_NODE && e->obj.node->provider_id)
			hashmap_put(&nodes, e->obj.node->provider_id, e->obj.node, NULL);
	it = 0;
	while ((e = state_store_next(st, &it)))
		if (e->obj.kind == PROTO_OBJECT_NODECLAIM)
			reconcile_claim(l, e->obj.nodeclaim, &nodes);
	hashmap_done(&nodes);
	if (!l->reconciled_once) {
		l->reconciled_once = true;
		log_info("recovery pass done: %zu nodeclaim(s) being launched or completed", l->launches.n);
	}
	launcher_static_reconcile(l);
	launcher_update_usage_metrics(l);
	return 0;
}
