/*
 * Draining a Node that is being terminated, in Karpenter's order: the pods
 * that are not critical go first, the critical ones (priority of
 * system-cluster-critical or more) once the others are gone. DaemonSet and
 * mirror pods stay (they go with the Node), so do finished pods and pods
 * that tolerate karpenter.sh/disrupted:NoSchedule. Each pod is evicted
 * through the Eviction API, so its PodDisruptionBudget decides; a refusal
 * (429) is retried per pod with backoff and the Node gets a FailedDraining
 * Event naming the budget. A pod with karpenter.sh/do-not-disrupt is not
 * evicted. When the NodeClaim has a terminationGracePeriod, each pod still
 * there is deleted (budget and annotation notwithstanding) early enough
 * that its own grace period ends by the deadline, as Karpenter does.
 *
 * Called by termination.c for each draining Node on every pass; the
 * per-pod retry state lives in reaper->evictions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/karpenter.h"
#include "model/match.h"
#include "reaper/reaper.h"

/* One pod's eviction; the userdata of its requests, so that it is never
 * freed while one is in flight (a request cancelled at teardown calls
 * nothing back and leaves nothing to free). */
struct eviction {
	struct reaper *r;
	char *key;
	uint64_t next_try_usec, backoff_usec;
	uint64_t seen_pass;
	bool in_flight, deleted;
	char *blocked; /* why the last eviction was refused */
};

bool drain_pod_stays(const struct proto_pod *p)
{
	const struct proto_pod_template *t = proto_pod_template_of(p);

	if (p->mirror || t->daemonset_owned || p->phase == PROTO_PHASE_SUCCEEDED ||
	    p->phase == PROTO_PHASE_FAILED)
		return true;
	/* Does it tolerate karpenter.sh/disrupted:NoSchedule (no value)? */
	for (uint32_t i = 0; i < t->n_tolerations; i++) {
		const struct proto_toleration *tol = &t->tolerations[i];

		if (tol->effect != PROTO_EFFECT_ANY && tol->effect != PROTO_EFFECT_NO_SCHEDULE)
			continue;
		if (!tol->key || !*tol->key) {
			if (tol->op == PROTO_TOLERATION_EXISTS)
				return true; /* every taint */
			continue;
		}
		if (streq(tol->key, KARPENTER_DISRUPTED_TAINT_KEY) &&
		    (tol->op == PROTO_TOLERATION_EXISTS || !tol->value || !*tol->value))
			return true;
	}
	return false;
}

static bool pod_is_critical(const struct proto_pod *p)
{
	return proto_pod_template_of(p)->priority >= CRITICAL_POD_PRIORITY;
}

unsigned drain_noncritical_left(const struct proto_pod *const *pods, uint32_t n)
{
	unsigned k = 0;

	for (uint32_t i = 0; i < n; i++)
		k += !drain_pod_stays(pods[i]) && !pod_is_critical(pods[i]);
	return k;
}

enum drain_action drain_pod_action(const struct proto_pod *p, unsigned noncritical_left,
				   int64_t left_s, bool deleted_for_deadline)
{
	if (drain_pod_stays(p))
		return DRAIN_STAYS;
	/* The deadline first: past it nothing (budget, annotation, order)
	 * holds a pod, and its own grace period must end by then. */
	if (left_s != DRAIN_NO_DEADLINE && left_s <= proto_pod_template_of(p)->termination_grace_s &&
	    !(deleted_for_deadline && p->deletion_time))
		return DRAIN_DELETE_FOR_DEADLINE;
	if (p->deletion_time)
		return DRAIN_LEAVING;
	if (noncritical_left && pod_is_critical(p))
		return DRAIN_AFTER_NONCRITICAL;
	if (p->do_not_disrupt)
		return DRAIN_DO_NOT_DISRUPT;
	return DRAIN_EVICT;
}

/* The PodDisruptionBudget that selects the pod (for messages), or NULL. */
static const struct proto_pdb *pdb_of(struct reaper *r, const struct proto_pod *p)
{
	const struct proto_pod_template *t = proto_pod_template_of(p);
	const struct state_entry *e;
	size_t it = 0;

	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_pdb *b = e->obj.pdb;
		if (e->obj.kind != PROTO_OBJECT_PDB || !streq(b->ns, p->ns))
			continue;
		/* policy/v1: an empty selector selects every pod of the namespace. */
		if ((!b->selector.n_match_labels && !b->selector.n_match_expressions) ||
		    label_selector_matches(&b->selector, t->labels, t->n_labels))
			return b;
	}
	return NULL;
}

static void eviction_free(struct eviction *ev)
{
	if (!ev)
		return;
	free(ev->blocked);
	free(ev->key);
	free(ev);
}

static struct eviction *eviction_get(struct reaper *r, const char *key)
{
	struct eviction *ev = hashmap_get(&r->evictions, key);

	if (ev)
		return ev;
	if (!(ev = calloc(1, sizeof(*ev))) || !(ev->key = strdup(key)) ||
	    hashmap_put(&r->evictions, key, ev, NULL) < 0) {
		eviction_free(ev);
		return NULL;
	}
	ev->r = r;
	return ev;
}

static void eviction_backoff(struct eviction *ev, uint64_t now_usec)
{
	ev->backoff_usec = ev->backoff_usec ? ev->backoff_usec * 2 : EVICTION_BACKOFF_BASE_USEC;
	if (ev->backoff_usec > EVICTION_BACKOFF_CAP_USEC)
		ev->backoff_usec = EVICTION_BACKOFF_CAP_USEC;
	ev->next_try_usec = now_usec + ev->backoff_usec;
}

static void on_evicted(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct eviction *ev = userdata;
	struct reaper *r = ev->r;
	char code[16];

	(void)c;
	snprintf(code, sizeof(code), "%ld", resp->status);
	metrics_counter_add(r->m.eviction_requests, 1, code, NULL);
	ev->in_flight = false;
	if (resp->status >= 200 && resp->status < 300) {
		free(ev->blocked);
		ev->blocked = NULL;
		ev->deleted = true;
		metrics_counter_add(r->m.pods_evicted, 1, NULL);
		log_info_kv(LOG_KV({ "pod", ev->key }), "evicted pod %s", ev->key);
	} else if (resp->status == 404) {
		ev->deleted = true;
	} else {
		free(ev->blocked);
		ev->blocked = strdup(resp->error ?: "eviction refused");
		if (resp->status != 429)
			log_warn_kv(LOG_KV({ "pod", ev->key }), "Failed to evict pod %s: HTTP %ld: %s",
				    ev->key, resp->status, resp->error ?: "no reason given");
		eviction_backoff(ev, clock_monotonic_usec());
	}
}

static void evict(struct reaper *r, const struct proto_pod *p, struct eviction *ev)
{
	char path[640], body[640];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", p->ns, p->name);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":"
		 "{\"name\":\"%s\",\"namespace\":\"%s\"}}", p->name, p->ns);
	if (kube_request(r->d->kube, "POST", path, NULL, body, on_evicted, ev) >= 0)
		ev->in_flight = true;
}

static void on_pod_deleted(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct eviction *ev = userdata;

	(void)c;
	ev->in_flight = false;
	if ((resp->status >= 200 && resp->status < 300) || resp->status == 404)
		ev->deleted = true;
	else
		eviction_backoff(ev, clock_monotonic_usec());
}

/* The terminationGracePeriod is running out: delete the pod with what is left. */
static void delete_for_deadline(struct reaper *r, const struct proto_node *node,
				const struct proto_pod *p, struct eviction *ev, int64_t grace_s)
{
	struct kube_object_ref ref = { "v1", "Pod", p->ns, p->name, p->uid };
	const char *key = ev->key;
	char path[640], body[96];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", p->ns, p->name);
	snprintf(body, sizeof(body), "{\"gracePeriodSeconds\":%lld}", (long long)grace_s);
	if (kube_request(r->d->kube, "DELETE", path, NULL, body, on_pod_deleted, ev) < 0)
		return;
	ev->in_flight = true;
	metrics_counter_add(r->m.pods_deleted, 1, NULL);
	log_info_kv(LOG_KV({ "pod", key }, { "node", node->name }),
		    "deleting pod %s to meet node %s's terminationGracePeriod (%lld s of grace left)",
		    key, node->name, (long long)grace_s);
	kube_event_record(r->d->events, &ref, KUBE_EVENT_NORMAL, "Disrupted",
			  "Deleting the pod to accommodate the terminationTime of node %s. The pod "
			  "was granted %lld seconds of grace-period of its %lld "
			  "terminationGracePeriodSeconds. This bypasses the PDB of the pod and the "
			  "do-not-disrupt annotation.", node->name, (long long)grace_s,
			  (long long)proto_pod_template_of(p)->termination_grace_s);
}

unsigned drain_node(struct reaper *r, const struct proto_node *node,
		    const struct proto_nodeclaim *nc, struct claim_work *w, uint64_t now_usec)
{
	const struct state_pod_set *set = state_store_pods_on(reaper_store(r), node->name);
	int64_t now_ms = clock_realtime_ms(), deadline_ms = 0;
	unsigned waiting = 0, noncritical, blocked = 0;
	const char *why = NULL;
	char key[2 * PROTO_MAX_NAME_LEN + 2], text[512];

	if (!set)
		return 0;
	if (nc && nc->termination_grace_period_s > 0 && nc->deletion_time)
		deadline_ms = nc->deletion_time + nc->termination_grace_period_s * 1000;
	noncritical = drain_noncritical_left(set->pods, set->n);
	for (uint32_t i = 0; i < set->n; i++) {
		const struct proto_pod *p = set->pods[i];
		int64_t left_s = deadline_ms ? (deadline_ms - now_ms) / 1000 : DRAIN_NO_DEADLINE;
		struct eviction *ev;

		if (drain_pod_stays(p))
			continue;
		waiting++;
		snprintf(key, sizeof(key), "%s/%s", p->ns, p->name);
		if (!(ev = eviction_get(r, key)))
			continue;
		ev->seen_pass = r->pass;
		if (ev->in_flight)
			continue;
		switch (drain_pod_action(p, noncritical, left_s, ev->deleted)) {
		case DRAIN_STAYS:
		case DRAIN_AFTER_NONCRITICAL:
			continue;
		case DRAIN_DELETE_FOR_DEADLINE:
			delete_for_deadline(r, node, p, ev, left_s > 0 ? left_s : 0);
			continue;
		case DRAIN_LEAVING:
			goto note_blocked;
		case DRAIN_DO_NOT_DISRUPT:
			blocked++;
			why = "has the karpenter.sh/do-not-disrupt annotation";
			continue;
		case DRAIN_EVICT:
			break;
		}
		if (now_usec < ev->next_try_usec)
			goto note_blocked; /* waiting to retry */
		evict(r, p, ev);
		continue;
note_blocked:
		if (ev->blocked && !p->deletion_time) {
			const struct proto_pdb *b = pdb_of(r, p);

			blocked++;
			if (b)
				snprintf(text, sizeof(text), "is protected by PodDisruptionBudget %s/%s (%d "
					 "disruption(s) allowed): %s", b->ns, b->name,
					 b->disruptions_allowed, ev->blocked);
			else
				snprintf(text, sizeof(text), "could not be evicted: %s", ev->blocked);
			why = text;
		}
	}
	if (blocked && now_usec - w->last_drain_event_usec >= DRAIN_EVENT_PERIOD_USEC) {
		struct kube_object_ref ref = { "v1", "Node", NULL, node->name, node->uid };

		w->last_drain_event_usec = now_usec;
		kube_event_record(r->d->events, &ref, KUBE_EVENT_WARNING, "FailedDraining",
				  "Failed to drain node, %u pods are waiting to be evicted; a pod %s",
				  waiting, why);
		log_warn_kv(LOG_KV({ "node", node->name }),
			    "Failed to drain node %s, %u pod(s) waiting to be evicted; a pod %s",
			    node->name, waiting, why);
	}
	return waiting;
}

static bool eviction_stale(const char *key, void *value, void *userdata)
{
	struct eviction *ev = value;
	const struct reaper *r = userdata;

	(void)key;
	if (r && (ev->seen_pass == r->pass || ev->in_flight))
		return false;
	eviction_free(ev);
	return true;
}

/* Forgets the retry state of pods no drain looked at this pass. */
void drain_forget(struct reaper *r, bool all)
{
	hashmap_remove_if(&r->evictions, eviction_stale, all ? NULL : r);
	if (all)
		hashmap_done(&r->evictions);
}
