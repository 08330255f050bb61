/*
 * The last step of a launch, and of the reconcile pass's retries of it
 * (launch.c drives the chain): the planned pods still waiting are checked
 * against the Node as it is now (bind-check.h), each counting the ones
 * before it, and those that fit are bound (pods/binding). One that does
 * not fit — it does not tolerate a taint the Node has (a startup taint:
 * Karpenter only nominates, and the kube-scheduler binds once the taint is
 * gone), the default scheduler filled the Node meanwhile, or its binding
 * failed and this is the retry — is not bound: a FailedScheduling
 * Event on the pod and a log line say why, and it leaves the NodeClaim's
 * planned-pods annotation so that the schedulers plan it again (DESIGN §2
 * rule 4) instead of after the NodeClaim's nomination lapses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/log.h"
#include "common/metrics.h"
#include "state/state-store.h"
#include "launcher/bind-check.h"
#include "launcher/catalog.h"
#include "launcher/launcher.h"
#include "launcher/objects.h"
#include "model/solver.h"

/* One pods/binding request in flight. */
struct bind_call {
	struct launch *la;
	char ns[PROTO_MAX_NAME_LEN + 1];
	char name[PROTO_MAX_NAME_LEN + 1];
};

/* Every planned pod bound or released: the Node is the scheduler's now
 * (once the replica shows it; else the reconcile pass sees to it). */
static void release_hold(struct launch *la)
{
	const struct state_store *st = launcher_store(la->l);
	const struct state_entry *nc = state_store_get(st, PROTO_OBJECT_NODECLAIM, "", la->name);
	const struct state_entry *node = state_store_get(st, PROTO_OBJECT_NODE, "", la->node_name);

	if (nc && node)
		launcher_release_hold(la->l, nc->obj.nodeclaim, node->obj.node);
}

static void binds_finished(struct launch *la)
{
	struct launcher *l = la->l;

	launch_resume(la);
	if (la->bound > 0) {
		log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }),
			    "bound %u pod(s) to node %s", la->bound, la->node_name);
		metrics_counter_add(l->m.pods_bound, la->bound, la->planned->nodepool, NULL);
	}
	launcher_publish_result(l, la, PROTO_LAUNCH_BOUND, NULL);
	release_hold(la);
	if (la->needs_tag) {
		la->needs_tag = false;
		launcher_tag_instance(l, la->launched.instance_id, la->name);
	}
	metrics_histogram_observe(l->m.launch_seconds, (double)(clock_monotonic_usec() - la->t_received) / 1e6,
				  NULL);
	launch_finish(la, true);
}

static void on_bound(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct bind_call *call = userdata;
	struct launch *la = call->la;

	(void)c;
	if (resp->status >= 200 && resp->status < 300) {
		la->bound++;
	} else {
		/* Not on our Node after all (409: bound meanwhile; the replica
		 * will say where): it no longer counts there. */
		bind_recent_forget_pod(&la->l->recent, call->ns, call->name);
		if (resp->status != 409 && resp->status != 404)
			log_warn_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }),
				    "Failed to bind pod %s/%s to node %s: %s", call->ns, call->name,
				    la->node_name, resp->error ?: "HTTP error");
	}
	if (--la->binds_outstanding == 0)
		binds_finished(la);
}

/* The pod of a planned key while it waits for a node: in the replica,
 * unbound, not being deleted, and not bound by us moments ago. */
static const struct proto_pod *pod_bindable(struct launcher *l, const char *key)
{
	const char *slash = strchr(key, '/');
	char ns[PROTO_MAX_NAME_LEN + 1];
	const struct state_entry *e;

	if (!slash || (size_t)(slash - key) >= sizeof(ns))
		return NULL;
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = 0;
	e = state_store_get(launcher_store(l), PROTO_OBJECT_POD, ns, slash + 1);
	if (!e || (e->obj.pod->node_name && *e->obj.pod->node_name) || e->obj.pod->deletion_time ||
	    bind_recent_has_pod(&l->recent, ns, slash + 1) ||
	    bind_pod_has_unbound_claim(launcher_store(l), e->obj.pod))
		return NULL;
	return e->obj.pod;
}

static void send_bind(struct launch *la, const struct proto_pod *p)
{
	struct bind_call *call = calloc(1, sizeof(*call));
	json_t *b = binding_json(p->name, la->node_name);
	char path[700], *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	int r = -ENOMEM;

	json_decref(b);
	if (call && text) {
		call->la = la;
		snprintf(call->ns, sizeof(call->ns), "%s", p->ns);
		snprintf(call->name, sizeof(call->name), "%s", p->name);
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", p->ns, p->name);
		/* Counted on the Node from now on: the next check, which may
		 * come before the answer or the replica, must not give its
		 * room away again. */
		r = bind_recent_note_pod(&la->l->recent, p, la->node_name, clock_monotonic_usec() / 1000);
		if (r >= 0) {
			la->binds_outstanding++;
			r = kube_request_owned(la->l->d->kube, true, "POST", path, NULL, text, on_bound,
					       call);
			call = NULL; /* the client's now */
			if (r < 0) {
				la->binds_outstanding--;
				bind_recent_forget_pod(&la->l->recent, p->ns, p->name);
			}
		}
	}
	free(text);
	if (r < 0) {
		log_warn_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }),
			    "Failed to bind pod %s/%s to node %s: %s", p->ns, p->name, la->node_name,
			    strerror(-r));
		free(call);
	}
}

static void refuse_bind(struct launch *la, const struct proto_pod *p, const char *key,
			const char *reason)
{
	struct launcher *l = la->l;

	log_warn_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }, { "pod", key }),
		    "Failed to bind pod %s to node %s: %s; it stays pending, for the kube-scheduler "
		    "once the node takes it, or to be planned again", key, la->node_name, reason);
	kube_event_record(l->d->events, &(struct kube_object_ref){ "v1", "Pod", p->ns, p->name, p->uid },
			  KUBE_EVENT_WARNING, "FailedScheduling",
			  "Failed to bind pod to node %s of nodeclaim %s: %s; the pod stays pending, for "
			  "the kube-scheduler once the node takes it, or to be planned again",
			  la->node_name, la->name, reason);
	metrics_counter_add(l->m.binds_refused, 1, la->planned->nodepool, NULL);
}

static void on_released(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	char *name = userdata;

	(void)c;
	if ((resp->status < 200 || resp->status >= 300) && resp->status != 404)
		log_warn_kv(LOG_KV({ "nodeclaim", name }),
			    "Failed to release the pods that no longer fit from nodeclaim %s: %s (they "
			    "are planned again once its nomination lapses)", name,
			    resp->error ?: "HTTP error");
}

/* The refused pods leave the NodeClaim's planned-pods annotation: the
 * watcher hands them to the schedulers now, not STATE_NOMINATION_GRACE_MS
 * after the NodeClaim turns Ready, and the reconcile pass stops retrying. */
static void release_refused(struct launch *la, char *const *refused, size_t n)
{
	const struct state_entry *e = state_store_get(launcher_store(la->l), PROTO_OBJECT_NODECLAIM, "",
						      la->name);
	char *const *planned = e ? e->obj.nodeclaim->planned_pods : la->planned->pods;
	size_t n_planned = e ? e->obj.nodeclaim->n_planned_pods : la->planned->n_pods;
	json_t *patch = nodeclaim_planned_pods_patch(planned, n_planned, refused, n);
	char path[512], *text = patch ? json_dumps(patch, JSON_COMPACT) : NULL, *name = strdup(la->name);

	json_decref(patch);
	snprintf(path, sizeof(path), NODECLAIMS_PATH "/%s", la->name);
	if (!text || !name) {
		free(name);
		name = NULL;
	}
	if (!name || kube_request_owned(la->l->d->kube, false, "PATCH", path, MERGE_PATCH, text,
					on_released, name) < 0)
		log_warn_kv(LOG_KV({ "nodeclaim", la->name }),
			    "Failed to release the pods that no longer fit from nodeclaim %s: out of memory",
			    la->name);
	free(text);
}

/*
 * Checks the waiting pods against the Node and binds those that fit;
 * fills refused with the keys of the others. Returns how many it looked
 * at, or a negative errno when it could not check (nothing bound then).
 */
static int check_and_bind(struct launch *la, const struct proto_pod **pods, char **keys,
			  struct sched_node_fit *fit, char **refused, size_t *n_refused)
{
	struct launcher *l = la->l;
	const struct state_store *st = launcher_store(l);
	struct bind_check_input in = { .replica = st, .recent = &l->recent, .region = l->region,
				       .node = la->node_name, .now_ms = clock_realtime_ms() };
	struct proto_msg catalog;
	char err[512];
	size_t n = 0;
	int r;

	for (uint32_t i = 0; i < la->planned->n_pods; i++)
		if ((pods[n] = pod_bindable(l, la->planned->pods[i])))
			keys[n++] = la->planned->pods[i];
	if (!n)
		return 0;
	bind_recent_purge(&l->recent, st, clock_monotonic_usec() / 1000);
	/* Just created or labelled: the replica may show no Node yet, or the
	 * kubelet's registration without our labels (launch_note_node()). */
	(void)launch_note_node(la);
	if (l->catalog) {
		proto_msg_init(&catalog, PROTO_MSG_CATALOG, PROTO_PROCESS_LAUNCHER, 0, 0);
		launcher_catalog_msg(l->catalog, &catalog);
		in.catalog = &catalog.body.catalog;
	}
	r = bind_check(&in, pods, n, fit, err, sizeof(err));
	if (r < 0) {
		log_warn_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }),
			    "Failed to check %zu planned pod(s) against node %s: %s; binding none of them "
			    "now (the reconcile pass tries again)", n, la->node_name,
			    err[0] ? err : strerror(-r));
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		if (fit[i].fits) {
			send_bind(la, pods[i]);
		} else {
			refuse_bind(la, pods[i], keys[i], fit[i].reason);
			refused[(*n_refused)++] = keys[i];
		}
	}
	return (int)n;
}

void launch_bind_pods(struct launch *la)
{
	uint32_t n = la->planned->n_pods;
	const struct proto_pod **pods = NULL;
	struct sched_node_fit *fit = NULL;
	char **keys = NULL, **refused = NULL;
	size_t n_refused = 0;

	la->bound = 0;
	la->binds_outstanding = 1; /* held while requests are issued */
	la->busy = true;
	if (la->l->cfg->bind_pods && n) {
		pods = calloc(n, sizeof(*pods));
		fit = calloc(n, sizeof(*fit));
		keys = calloc(n, sizeof(*keys));
		refused = calloc(n, sizeof(*refused));
		if (!pods || !fit || !keys || !refused)
			log_warn_kv(LOG_KV({ "nodeclaim", la->name }, { "node", la->node_name }),
				    "Failed to bind the planned pods to node %s: out of memory (the "
				    "reconcile pass tries again)", la->node_name);
		else if (check_and_bind(la, pods, keys, fit, refused, &n_refused) > 0 && n_refused)
			release_refused(la, refused, n_refused);
	}
	free(pods);
	free(fit);
	free(keys);
	free(refused);
	if (--la->binds_outstanding == 0)
		binds_finished(la);
}
