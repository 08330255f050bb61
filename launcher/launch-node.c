/*
 * The Kubernetes side of a launched NodeClaim (launch.c drives the chain):
 * its status and labels recorded, the Node created with the well-known
 * labels, the NodePool's labels, the NodeClaim's taints and the termination finalizer
 * (the binds that follow: launch-bind.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/aws.h"
#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/log.h"
#include "common/metrics.h"
#include "state/state-store.h"
#include "launcher/bind-check.h"
#include "launcher/catalog.h"
#include "launcher/fleet-request.h"
#include "launcher/fleet.h"
#include "launcher/launcher.h"
#include "launcher/objects.h"
#include "proto/schema.h"
#include "model/kubelet.h"

/* ---- record the launch on the NodeClaim ---------------------------------------- */

static void launched_instance_of(const struct launch *la, struct launched_instance *li)
{
	const struct state_store *st = launcher_store(la->l);
	const struct state_entry *pe = state_store_get(st, PROTO_OBJECT_NODEPOOL, "", la->planned->nodepool);
	const char *ncname = la->planned->nodeclass ?: (pe ? pe->obj.nodepool->nodeclass_ref.name : NULL);
	const struct state_entry *ce = ncname ? state_store_get(st, PROTO_OBJECT_NODECLASS, "", ncname) : NULL;

	*li = (struct launched_instance){
		.instance_id = la->launched.instance_id, .instance_type = la->launched.instance_type,
		.zone = la->launched.zone, .capacity_type = la->launched.capacity_type,
		.image_id = *la->image_id ? la->image_id : NULL, .node_name = la->node_name,
		.type = launcher_catalog_find(la->l->catalog, la->launched.instance_type),
		/* What the node holds under these, as the scheduler planned it. */
		.kubelet = kubelet_of(ce ? ce->obj.nodeclass : NULL, pe ? pe->obj.nodepool : NULL),
		.windows_build = nodeclass_windows_build(ce ? ce->obj.nodeclass : NULL),
	};
}

static int launch_labels(const struct launch *la, node_label *out, size_t *n)
{
	const struct state_entry *pe = state_store_get(launcher_store(la->l), PROTO_OBJECT_NODEPOOL, "",
						       la->planned->nodepool);
	struct launched_instance li;
	struct proto_nodepool fallback = { .name = la->planned->nodepool };

	launched_instance_of(la, &li);
	return node_labels_collect(&li, pe ? pe->obj.nodepool : &fallback, la->planned->requirements,
				   la->planned->n_requirements, la->l->region, out, LAUNCH_MAX_LABELS, n);
}

static void on_status_recorded(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct launch *la = userdata;
	struct launcher *l = la->l;

	(void)c;
	launch_resume(la);
	if (resp->status == 404) {
		/* Deleted under us: what we launched for it is undone. */
		la->deleted = true;
		launch_advance(la);
		return;
	}
	if (resp->status < 200 || resp->status >= 300) {
		launch_retry_later(la, "record the launch on the NodeClaim", resp->error ?: "HTTP error");
		return;
	}
	log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "nodepool", la->planned->nodepool },
			   { "provider-id", la->launched.instance_id },
			   { "instance-type", la->launched.instance_type }, { "zone", la->launched.zone },
			   { "capacity-type", la->launched.capacity_type }),
		    "launched nodeclaim %s: instance %s, type %s, zone %s, capacity type %s", la->name,
		    la->launched.instance_id, la->launched.instance_type, la->launched.zone,
		    la->launched.capacity_type);
	kube_event_record(l->d->events,
			  &(struct kube_object_ref){ "karpenter.sh/v1", "NodeClaim", NULL, la->name, la->uid },
			  KUBE_EVENT_NORMAL, "Launched", "Launched instance: %s, type: %s, zone: %s, capacityType: %s",
			  la->launched.instance_id, la->launched.instance_type, la->launched.zone,
			  la->launched.capacity_type);
	metrics_counter_add(l->m.launched, 1, la->planned->nodepool, la->launched.capacity_type, NULL);
	launcher_publish_result(l, la, PROTO_LAUNCH_LAUNCHED, NULL);
	la->step = STEP_NODE;
	launch_advance(la);
}

static void on_labels_recorded(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct launch *la = userdata;
	struct launched_instance li;
	char path[512], now[32], *text;
	json_t *status;
	int r;

	(void)c;
	launch_resume(la);
	if (resp->status == 404) {
		on_status_recorded(c, resp, la);
		return;
	}
	if (resp->status < 200 || resp->status >= 300) {
		launch_retry_later(la, "label the NodeClaim", resp->error ?: "HTTP error");
		return;
	}
	launched_instance_of(la, &li);
	rfc3339_now(now);
	status = nodeclaim_launched_status(&li, now);
	text = status ? json_dumps(status, JSON_COMPACT) : NULL;
	json_decref(status);
	if (!text) {
		launch_retry_later(la, "record the launch on the NodeClaim", "out of memory");
		return;
	}
	snprintf(path, sizeof(path), NODECLAIMS_PATH "/%s/status", la->name);
	launch_account_busy(la);
	la->busy = true;
	r = kube_request(la->l->d->kube, "PATCH", path, MERGE_PATCH, text, on_status_recorded, la);
	free(text);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "record the launch on the NodeClaim", strerror(-r));
	}
}

void launch_record(struct launch *la)
{
	node_label labels[LAUNCH_MAX_LABELS];
	size_t n;
	json_t *patch;
	char path[512], *text;
	int r;

	r = launch_labels(la, labels, &n);
	patch = r >= 0 ? nodeclaim_labels_patch(labels, n) : NULL;
	text = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
	json_decref(patch);
	if (!text) {
		launch_retry_later(la, "label the NodeClaim", r < 0 ? strerror(-r) : "out of memory");
		return;
	}
	snprintf(path, sizeof(path), NODECLAIMS_PATH "/%s", la->name);
	launch_account_busy(la);
	la->busy = true;
	r = kube_request(la->l->d->kube, "PATCH", path, MERGE_PATCH, text, on_labels_recorded, la);
	free(text);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "label the NodeClaim", strerror(-r));
	}
}

/* ---- create the Node ------------------------------------------------------------------ */

/*
 * The taints the Node registers with: its NodeClaim's (Karpenter's
 * registration, lifecycle/registration.go), as the replica shows the claim;
 * before it does, the NodePool's, which nodeclaim_json() wrote on the claim.
 */
static void claim_taints(struct launch *la, const struct proto_nodepool *np, struct proto_nodeclaim *claim)
{
	const struct state_entry *ce = state_store_get(launcher_store(la->l), PROTO_OBJECT_NODECLAIM, "",
						       la->name);
	const struct proto_nodeclaim *c = ce ? ce->obj.nodeclaim : NULL;

	if (c) {
		claim->taints = c->taints;
		claim->n_taints = c->n_taints;
		claim->startup_taints = c->startup_taints;
		claim->n_startup_taints = c->n_startup_taints;
	} else if (np) {
		claim->taints = np->taints;
		claim->n_taints = np->n_taints;
		claim->startup_taints = np->startup_taints;
		claim->n_startup_taints = np->n_startup_taints;
	}
}

static json_t *launch_node_json(struct launch *la)
{
	const struct state_entry *pe = state_store_get(launcher_store(la->l), PROTO_OBJECT_NODEPOOL, "",
						       la->planned->nodepool);
	const struct proto_nodepool *np = pe ? pe->obj.nodepool : NULL;
	struct proto_nodeclaim claim = { .name = la->name, .uid = la->uid };
	node_label labels[LAUNCH_MAX_LABELS];
	struct launched_instance li;
	size_t n;

	if (launch_labels(la, labels, &n) < 0)
		return NULL;
	launched_instance_of(la, &li);
	claim_taints(la, np, &claim);
	return node_json(&li, &claim, np, labels, n);
}

static void on_node_created(struct kube_client *c, const struct kube_response *resp, void *userdata);

static void on_node_patched(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct launch *la = userdata;

	(void)c;
	launch_resume(la);
	if (resp->status < 200 || resp->status >= 300) {
		launch_retry_later(la, "label the existing Node", resp->error ?: "HTTP error");
		return;
	}
	/* The counterpart of "created node …": tests and operators map
	 * nodes to NodeClaims from one of the two lines. */
	log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }),
		    "adopted node %s for nodeclaim %s: its kubelet registered it first", la->node_name,
		    la->name);
	la->step = STEP_BIND;
	launch_advance(la);
}

static void on_node_created(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct launch *la = userdata;

	(void)c;
	launch_resume(la);
	if (resp->status == 409) {
		/* The kubelet registered first: give its Node our labels,
		 * taints and finalizer (a merge patch keeps its status). */
		json_t *node = launch_node_json(la), *patch;
		char path[512], *text = NULL;
		int r = -ENOMEM;

		if (node) {
			patch = json_pack("{s:O, s:O}", "metadata", json_object_get(node, "metadata"), "spec",
					  json_object_get(node, "spec"));
			json_object_del(json_object_get(patch, "metadata"), "name");
			text = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
			json_decref(patch);
			json_decref(node);
		}
		snprintf(path, sizeof(path), "/api/v1/nodes/%s", la->node_name);
		if (text) {
			la->busy = true;
			r = kube_request(la->l->d->kube, "PATCH", path, MERGE_PATCH, text, on_node_patched, la);
			free(text);
		}
		if (r < 0) {
			la->busy = false;
			launch_retry_later(la, "label the existing Node", strerror(-r));
		}
		return;
	}
	if (resp->status < 200 || resp->status >= 300) {
		launch_retry_later(la, "create the Node", resp->error ?: "HTTP error");
		return;
	}
	metrics_counter_add(la->l->m.nodes_created, 1, la->planned->nodepool, NULL);
	log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }),
		    "created node %s for nodeclaim %s", la->node_name, la->name);
	la->step = STEP_BIND;
	launch_advance(la);
}

void launch_create_node(struct launch *la)
{
	json_t *node = launch_node_json(la);
	char *text = node ? json_dumps(node, JSON_COMPACT) : NULL;
	int r;

	json_decref(node);
	if (!text) {
		launch_retry_later(la, "create the Node", "out of memory or too many labels");
		return;
	}
	la->busy = true;
	r = kube_request(la->l->d->kube, "POST", "/api/v1/nodes", NULL, text, on_node_created, la);
	free(text);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "create the Node", strerror(-r));
	}
}

/* The Node as the replica will show it: the labels, the NodeClaim's taints
 * and startup taints, and resources launch_node_json() gives it (the hold left
 * out: it refuses no pod, see bind-check.h). Noted only while
 * the replica does not show those labels (bind_recent_note_node()). */
int launch_note_node(struct launch *la)
{
	const struct state_entry *pe = state_store_get(launcher_store(la->l), PROTO_OBJECT_NODEPOOL, "",
						       la->planned->nodepool);
	struct proto_resource cap[PROTO_MAX_RESOURCES], alloc[PROTO_MAX_RESOURCES];
	struct proto_taint taints[PROTO_MAX_TAINTS];
	struct proto_nodeclaim claim = { 0 };
	uint32_t n_taints = 0;
	node_label labels[LAUNCH_MAX_LABELS];
	struct proto_kv kv[LAUNCH_MAX_LABELS];
	struct launched_instance li;
	struct proto_node node;
	uint32_t n_cap, n_alloc;
	size_t n;
	int r;

	launched_instance_of(la, &li);
	if (!*la->launched.instance_type || !li.type)
		return -ENOENT;
	if ((r = launch_labels(la, labels, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		kv[i] = (struct proto_kv){ (char *)labels[i].key, (char *)labels[i].value };
	node = (struct proto_node){ .name = la->node_name, .uid = la->uid ?: "", .labels = kv,
				    .n_labels = (uint32_t)n, .nodeclaim = la->name,
				    .capacity = li.type->capacity, .n_capacity = li.type->n_capacity,
				    .allocatable = li.type->allocatable,
				    .n_allocatable = li.type->n_allocatable };
	if (kubelet_type_resources(li.kubelet, li.windows_build != NULL, li.type, cap, &n_cap, alloc, &n_alloc) >= 0) {
		node.capacity = cap;
		node.n_capacity = n_cap;
		node.allocatable = alloc;
		node.n_allocatable = n_alloc;
	}
	claim_taints(la, pe ? pe->obj.nodepool : NULL, &claim);
	for (uint32_t i = 0; i < claim.n_taints && n_taints < PROTO_MAX_TAINTS; i++)
		taints[n_taints++] = claim.taints[i];
	for (uint32_t i = 0; i < claim.n_startup_taints && n_taints < PROTO_MAX_TAINTS; i++)
		taints[n_taints++] = claim.startup_taints[i];
	node.taints = taints;
	node.n_taints = n_taints;
	r = bind_recent_note_node(&la->l->recent, launcher_store(la->l), &node, clock_monotonic_usec() / 1000);
	return r < 0 ? r : 0;
}
