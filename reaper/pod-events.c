/*
 * The last pod event of each NodeClaim (pod-events.h): looked at once a
 * pass for every launched NodeClaim with a Node, before the disruption
 * methods read it, and recorded in the NodeClaim's status.lastPodEventTime
 * with a merge patch of the status subresource (that field alone, as
 * Karpenter's podevents controller patches it), at most once per
 * POD_EVENT_DEDUPE_MS.
 *
 * What a restarted reaper cannot know: a pod that left while no reaper
 * ran. Its NodeClaim keeps the time of the event before; emptiness may
 * then come sooner than consolidateAfter after that pod left, as it does
 * for Karpenter restarted meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "proto/karpenter.h"
#include "reaper/disruption.h"
#include "reaper/pod-events.h"

/* RFC 3339 has whole seconds here: round up, late rather than early. */
static int64_t whole_second_after(int64_t ms)
{
	return (ms + 999) / 1000 * 1000;
}

static void event_now(struct pod_event_clock *c, const struct pod_event_sight *s)
{
	c->last_usec = s->now_usec;
	c->last_ms = whole_second_after(s->now_ms);
}

bool pod_event_observe(struct pod_event_clock *c, const struct pod_event_sight *s)
{
	if (!c->seen) {
		c->seen = true;
		c->pods_hash = s->pods_hash;
		c->written_ms = s->recorded_ms;
		if (!s->recorded_ms) {
			/* Karpenter falls back to the Initialized time; a NodeClaim
			 * of a kanna before 2.6, or whose pods came and went while
			 * no reaper ran, may have emptied a moment ago. Now is at
			 * most one consolidateAfter late, once: it is written. */
			event_now(c, s);
		} else {
			int64_t at = s->newest_bind_ms > s->recorded_ms ? s->newest_bind_ms
									: s->recorded_ms;
			uint64_t age_usec = s->now_ms > at ? (uint64_t)(s->now_ms - at) * 1000 : 0;

			c->last_ms = whole_second_after(at);
			c->last_usec = s->now_usec > age_usec ? s->now_usec - age_usec : 0;
		}
	} else if (s->pods_hash != c->pods_hash) {
		c->pods_hash = s->pods_hash;
		event_now(c, s);
	}
	if (s->recorded_ms > c->written_ms)
		c->written_ms = s->recorded_ms;
	if (s->nominated) {
		event_now(c, s);
		return false;
	}
	return !c->patch_sent && c->last_ms > c->written_ms &&
	       (!c->written_ms || s->now_ms - c->written_ms >= POD_EVENT_DEDUPE_MS);
}

uint64_t pod_event_age_usec(const struct pod_event_clock *c, uint64_t now_usec)
{
	return c->seen && now_usec > c->last_usec ? now_usec - c->last_usec : 0;
}

/* ---- the pass --------------------------------------------------------------------------- */

static void on_patched(struct kube_client *kc, const struct kube_response *resp, void *userdata)
{
	struct claim_work *w = userdata;

	(void)kc;
	w->in_flight--;
	w->pod_events.patch_sent = false;
	if (resp->status >= 200 && resp->status < 300) {
		if (w->pod_events.sending_ms > w->pod_events.written_ms)
			w->pod_events.written_ms = w->pod_events.sending_ms;
	} else if (resp->status != 404) { /* gone: nothing to record */
		log_warn_kv(LOG_KV({ "nodeclaim", w->name }),
			    "Failed to record the last pod event of nodeclaim %s: HTTP %ld: %s",
			    w->name, resp->status, resp->error ?: "no reason given");
	}
}

/* The claim_work is the callback's userdata, nothing allocated: a request
 * cancelled at teardown calls nothing back and so leaves nothing behind. */
static void patch_claim(struct reaper *r, struct claim_work *w)
{
	time_t t = (time_t)(w->pod_events.last_ms / 1000);
	char path[512], body[96], ts[32];
	struct tm tm;

	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	snprintf(path, sizeof(path), KARPENTER_NODECLAIMS_PATH "/%s/status", w->name);
	snprintf(body, sizeof(body), "{\"status\":{\"lastPodEventTime\":\"%s\"}}", ts);
	if (kube_request(r->d->kube, "PATCH", path, KUBE_MERGE_PATCH, body, on_patched, w) < 0)
		return;
	log_debug_kv(LOG_KV({ "nodeclaim", w->name }), "nodeclaim %s: last pod event %s", w->name, ts);
	w->pod_events.sending_ms = w->pod_events.last_ms;
	w->pod_events.patch_sent = true;
	w->in_flight++;
}

uint64_t pod_events_pods_on(const struct state_store *store, const char *node, int64_t *newest_bind_ms)
{
	const struct state_pod_set *set = state_store_pods_on(store, node);
	uint64_t h = HASH_FNV1A64_OFFSET;

	*newest_bind_ms = 0;
	for (uint32_t i = 0; set && i < set->n; i++) {
		const struct proto_pod *p = set->pods[i];
		int64_t bound = p->scheduled_time ?: p->creation_time;

		if (drain_pod_stays(p) || p->deletion_time)
			continue;
		h ^= hash_fnv1a64_field(hash_fnv1a64(p->ns), p->name);
		if (bound > *newest_bind_ms)
			*newest_bind_ms = bound;
	}
	return h;
}

void pod_events_pass(struct reaper *r, uint64_t now_usec)
{
	const struct state_entry *e;
	size_t it = 0;

	while ((e = state_store_next(reaper_store(r), &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;
		const struct proto_node *node;
		struct pod_event_sight s;
		struct claim_work *w;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || nc->deletion_time || !nc->provider_id ||
		    !*nc->provider_id || !(node = disruption_node_of(r, nc)) || node->deletion_time ||
		    !(w = reaper_work(r, nc->name)))
			continue;
		s = (struct pod_event_sight){ .recorded_ms = nc->last_pod_event_time,
					      .nominated = disruption_nominated(r, nc, node),
					      .now_ms = clock_realtime_ms(),
					      .now_usec = now_usec };
		s.pods_hash = pod_events_pods_on(reaper_store(r), node->name, &s.newest_bind_ms);
		if (pod_event_observe(&w->pod_events, &s))
			patch_claim(r, w);
	}
}
