/*
 * Termination, as Karpenter v1's NodeClaim and Node termination
 * controllers do it, for every NodeClaim and Node that carries the
 * karpenter.sh/termination finalizer and is being deleted — by kanna's
 * disruption, `kubectl delete node` or `kubectl delete nodeclaim`:
 *   1. the other object of the pair is deleted too (a Node deleted by hand
 *      takes its NodeClaim along, and the other way round);
 *   2. the Node is tainted karpenter.sh/disrupted:NoSchedule;
 *   3. it is drained (drain.c);
 *   4. the instance is terminated (instances.c) and confirmed
 *      shutting-down or terminated;
 *   5. the Node's finalizer comes off, then the NodeClaim's.
 * Each step is read back from the objects on the next pass, so a reaper
 * killed between any two resumes where the objects say it was.
 *
 * A NodeClaim whose instance EC2 no longer lists (gc.c) is not drained:
 * nothing runs there any more, and a PodDisruptionBudget would only hold
 * the finalizers of a node that is already gone.
 *
 * A NodeClaim without a providerID has no instance yet: it is the
 * launcher's (launcher/launch-undo.c stops the launch and removes its
 * finalizer). Only when no launcher did so in time (gc.c says when) is it
 * released here: any instance tagged for it terminated, then the
 * finalizer removed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/karpenter.h"
#include "proto/schema.h"
#include "reaper/reaper.h"

/* Which request a callback answers: its claim_call in the claim_work is
 * the userdata. */
enum claim_request { REQ_DELETE_CLAIM, REQ_DELETE_NODE, REQ_TAINT, REQ_NODE_FINALIZER,
		     REQ_CLAIM_FINALIZER };
_Static_assert(REQ_CLAIM_FINALIZER < CLAIM_CALLS, "one claim_call a request");

static bool *request_flag(struct claim_work *w, enum claim_request what)
{
	switch (what) {
	case REQ_DELETE_CLAIM:
		return &w->claim_delete_sent;
	case REQ_DELETE_NODE:
		return &w->node_delete_sent;
	case REQ_TAINT:
		return &w->taint_sent;
	case REQ_NODE_FINALIZER:
		return &w->node_finalizer_sent;
	case REQ_CLAIM_FINALIZER:
		return &w->claim_finalizer_sent;
	}
	return &w->claim_delete_sent;
}

static const char *const request_names[] = {
	[REQ_DELETE_CLAIM] = "delete nodeclaim", [REQ_DELETE_NODE] = "delete node",
	[REQ_TAINT] = "taint node", [REQ_NODE_FINALIZER] = "remove the finalizer of node",
	[REQ_CLAIM_FINALIZER] = "remove the finalizer of nodeclaim",
};

static void on_answer(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct claim_call *call = userdata;
	struct claim_work *w = call->w;
	bool ok = (resp->status >= 200 && resp->status < 300) || resp->status == 404;

	(void)c;
	w->in_flight--;
	/* Done: the next pass sees it in the objects. Refused (a conflict, a
	 * stale view): the next pass sends it again from a fresher one. */
	if (!ok) {
		*request_flag(w, call->what) = false;
		if (resp->status != 409 && resp->status != 422)
			log_warn_kv(LOG_KV({ "nodeclaim", w->name }), "Failed to %s for %s: HTTP %ld: %s",
				    request_names[call->what], w->name, resp->status,
				    resp->error ?: "no reason given");
	}
}

static void send_request(struct reaper *r, struct claim_work *w, enum claim_request what,
			 const char *method, const char *path, const char *content_type,
			 const char *body)
{
	struct claim_call *call = &w->calls[what];
	bool *flag = request_flag(w, what);

	if (*flag)
		return;
	/* The same for a request sent again while one is in flight. */
	*call = (struct claim_call){ w, what };
	if (kube_request(r->d->kube, method, path, content_type, body, on_answer, call) < 0)
		return;
	*flag = true;
	w->in_flight++;
}

int termination_delete_claim(struct reaper *r, const char *name, struct claim_work *w)
{
	char path[512];

	snprintf(path, sizeof(path), KARPENTER_NODECLAIMS_PATH "/%s", name);
	send_request(r, w, REQ_DELETE_CLAIM, "DELETE", path, NULL, NULL);
	return w->claim_delete_sent ? 0 : -ENOMEM;
}

static int finalizer_index(char *const *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (streq(v[i], KARPENTER_TERMINATION_FINALIZER))
			return (int)i;
	return -1;
}

/* JSON patch: remove our finalizer where it is, if it still is there. */
static void remove_finalizer(struct reaper *r, struct claim_work *w, enum claim_request what,
			     const char *path, int index)
{
	char body[256];

	snprintf(body, sizeof(body),
		 "[{\"op\":\"test\",\"path\":\"/metadata/finalizers/%d\",\"value\":\"%s\"},"
		 "{\"op\":\"remove\",\"path\":\"/metadata/finalizers/%d\"}]",
		 index, KARPENTER_TERMINATION_FINALIZER, index);
	send_request(r, w, what, "PATCH", path, KUBE_JSON_PATCH, body);
}

static bool node_tainted(const struct proto_node *n)
{
	for (uint32_t i = 0; i < n->n_taints; i++)
		if (streq(n->taints[i].key, KARPENTER_DISRUPTED_TAINT_KEY))
			return true;
	return false;
}

/* karpenter.sh/disrupted:NoSchedule, added to the taints as they are now
 * (resourceVersion as precondition: never a stale list written back). */
void termination_taint_node(struct reaper *r, struct claim_work *w, const struct proto_node *n)
{
	char path[512], body[512];

	if (node_tainted(n))
		return;
	snprintf(path, sizeof(path), KUBE_NODES_PATH "/%s", n->name);
	snprintf(body, sizeof(body),
		 "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"%s\"},"
		 "{\"op\":\"add\",\"path\":\"/spec/taints%s\",\"value\":%s{\"key\":\"%s\","
		 "\"effect\":\"NoSchedule\"}%s}]",
		 n->resource_version ?: "", n->n_taints ? "/-" : "", n->n_taints ? "" : "[",
		 KARPENTER_DISRUPTED_TAINT_KEY, n->n_taints ? "" : "]");
	send_request(r, w, REQ_TAINT, "PATCH", path, KUBE_JSON_PATCH, body);
}

static const struct proto_node *node_named(struct reaper *r, const char *name)
{
	const struct state_entry *e;

	if (!name || !*name)
		return NULL;
	e = state_store_get(reaper_store(r), PROTO_OBJECT_NODE, "", name);
	return e ? e->obj.node : NULL;
}

/* Drains and terminates; the finalizers come off once the instance is gone.
 * nc may be NULL (a Node of ours whose NodeClaim is gone). */
static void terminate(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
		      const struct proto_node *node, uint64_t now_usec)
{
	const char *provider_id = nc ? nc->provider_id : node->provider_id;
	const char *instance = provider_instance_id(provider_id);
	bool node_ours = node && finalizer_index(node->finalizers, node->n_finalizers) >= 0;
	char path[512];

	if (!w->logged_terminating) {
		w->logged_terminating = true;
		log_info_kv(LOG_KV({ "nodeclaim", nc ? nc->name : "-" }, { "node", node ? node->name : "-" }),
			    "terminating nodeclaim %s (node %s, instance %s)", nc ? nc->name : "-",
			    node ? node->name : "-", instance ?: "-");
	}
	if (node_ours) {
		if (!node->deletion_time) {
			snprintf(path, sizeof(path), KUBE_NODES_PATH "/%s", node->name);
			send_request(r, w, REQ_DELETE_NODE, "DELETE", path, NULL, NULL);
		}
		termination_taint_node(r, w, node);
		if (nc && gc_instance_gone(r, nc)) {
			if (!w->drained_logged)
				log_info_kv(LOG_KV({ "node", node->name }),
					    "not draining node %s: its instance %s is gone", node->name,
					    instance ?: "-");
			w->drained_logged = true;
		} else if (!node_tainted(node) || drain_node(r, node, nc, w, now_usec) > 0) {
			return;
		}
		if (!w->drained_logged) {
			w->drained_logged = true;
			metrics_counter_add(r->m.nodes_drained, 1, nc ? nc->nodepool : "", NULL);
			log_info_kv(LOG_KV({ "node", node->name }), "drained node %s", node->name);
		}
	}
	/* An instance EC2 no longer lists is not asked to terminate again. */
	if (instance && !(nc && gc_instance_gone(r, nc)) &&
	    instance_terminate(r, instance, now_usec) != INSTANCE_GONE)
		return;
	if (node_ours) {
		snprintf(path, sizeof(path), KUBE_NODES_PATH "/%s", node->name);
		remove_finalizer(r, w, REQ_NODE_FINALIZER, path,
				 finalizer_index(node->finalizers, node->n_finalizers));
		return; /* the NodeClaim's comes off once the Node is gone */
	}
	if (!nc) {
		if (instance)
			instance_forget(r, instance);
		return;
	}
	if (finalizer_index(nc->finalizers, nc->n_finalizers) < 0)
		return; /* taken off already: the API server removes the NodeClaim */
	snprintf(path, sizeof(path), KARPENTER_NODECLAIMS_PATH "/%s", nc->name);
	if (!w->claim_finalizer_sent) {
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }), "deleted nodeclaim %s", nc->name);
		metrics_counter_add(r->m.nodeclaims_terminated, 1, nc->nodepool ?: "",
				    proto_capacity_type_name(nc->capacity_type), NULL);
		if (node || nc->node_name)
			metrics_counter_add(r->m.nodes_terminated, 1, nc->nodepool ?: "", NULL);
		metrics_histogram_observe(r->m.termination_seconds,
					  (double)(clock_realtime_ms() - nc->deletion_time) / 1000.0, NULL);
	}
	remove_finalizer(r, w, REQ_CLAIM_FINALIZER, path,
			 finalizer_index(nc->finalizers, nc->n_finalizers));
	if (instance)
		instance_forget(r, instance);
}

void termination_delete_node(struct reaper *r, struct claim_work *w, const struct proto_node *n)
{
	char path[512];

	snprintf(path, sizeof(path), KUBE_NODES_PATH "/%s", n->name);
	send_request(r, w, REQ_DELETE_NODE, "DELETE", path, NULL, NULL);
}

/* A NodeClaim deleted before it had an instance, that no launcher released. */
static void release_unlaunched(struct reaper *r, struct claim_work *w, const struct proto_nodeclaim *nc,
			       uint64_t now_usec)
{
	const char *instance = NULL;
	char path[512];
	int k = gc_unlaunched_instance(r, nc, &instance);

	if (k < 0)
		return;
	if (!w->logged_terminating) {
		w->logged_terminating = true;
		log_info_kv(LOG_KV({ "nodeclaim", nc->name }),
			    "releasing nodeclaim %s, deleted before its launch was recorded (%s)", nc->name,
			    instance ? instance : "no instance was launched for it");
	}
	if (instance && instance_terminate(r, instance, now_usec) != INSTANCE_GONE)
		return;
	snprintf(path, sizeof(path), KARPENTER_NODECLAIMS_PATH "/%s", nc->name);
	remove_finalizer(r, w, REQ_CLAIM_FINALIZER, path,
			 finalizer_index(nc->finalizers, nc->n_finalizers));
}

static bool claim_ours_deleting(const struct proto_nodeclaim *nc)
{
	return nc->deletion_time && finalizer_index(nc->finalizers, nc->n_finalizers) >= 0;
}

void termination_pass(struct reaper *r, uint64_t now_usec)
{
	const struct state_store *s = reaper_store(r);
	struct hashmap claimed = { 0 }; /* Node names a NodeClaim speaks for */
	const struct state_entry *e;
	char key[PROTO_MAX_NAME_LEN + 8];
	size_t it = 0;

	while ((e = state_store_next(s, &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;
		const struct proto_node *node;
		struct claim_work *w;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM)
			continue;
		node = node_named(r, nc->node_name);
		if (node)
			(void)hashmap_put(&claimed, node->name, (void *)1, NULL);
		/* Not launched yet: the launcher's to stop (launch-undo.c),
		 * unless it did not in time. */
		if (!nc->provider_id || !*nc->provider_id) {
			if (claim_ours_deleting(nc) && (w = reaper_work(r, nc->name)))
				release_unlaunched(r, w, nc, now_usec);
			continue;
		}
		if (claim_ours_deleting(nc)) {
			if ((w = reaper_work(r, nc->name)))
				terminate(r, w, nc, node, now_usec);
		} else if (!nc->deletion_time && node && node->deletion_time &&
			   finalizer_index(node->finalizers, node->n_finalizers) >= 0) {
			/* kubectl delete node: the NodeClaim goes too, and its
			 * termination drains the Node. */
			if ((w = reaper_work(r, nc->name)) && !w->claim_delete_sent)
				log_info_kv(LOG_KV({ "nodeclaim", nc->name }, { "node", node->name }),
					    "node %s was deleted: deleting its nodeclaim %s", node->name,
					    nc->name);
			if (w)
				termination_delete_claim(r, nc->name, w);
		}
	}
	/* A Node of ours being deleted that no NodeClaim speaks for. */
	it = 0;
	while ((e = state_store_next(s, &it))) {
		const struct proto_node *node = e->obj.node;
		struct claim_work *w;

		if (e->obj.kind != PROTO_OBJECT_NODE || !node->deletion_time ||
		    finalizer_index(node->finalizers, node->n_finalizers) < 0 ||
		    hashmap_get(&claimed, node->name))
			continue;
		snprintf(key, sizeof(key), "node/%s", node->name);
		if ((w = reaper_work(r, key)))
			terminate(r, w, NULL, node, now_usec);
	}
	hashmap_done(&claimed);
}
