/*
 * Kubernetes Events (core/v1), as Karpenter records them: every blocked or
 * refused action gets an Event with a specific reason (Nominated,
 * FailedScheduling, DisruptionBlocked, …) on the object concerned. Repeats
 * of the same event are folded into one object whose count grows, as
 * client-go's correlator does, so a pod that stays unschedulable for an
 * hour does not write thousands of objects.
 */
#ifndef KANNA_COMMON_KUBE_EVENTS_H
#define KANNA_COMMON_KUBE_EVENTS_H

#include "common/kube-client.h"

/* Identical events inside this window update one object (client-go: 10 min). */
#define KUBE_EVENT_AGGREGATE_WINDOW_USEC (10ULL * 60 * 1000 * 1000)
/* A repeating event updates its object at most this often. */
#define KUBE_EVENT_UPDATE_INTERVAL_USEC (10ULL * 1000 * 1000)
/* Distinct events remembered for folding; older ones are forgotten first. */
#define KUBE_EVENT_CACHE_SIZE 4096
#define KUBE_EVENT_MESSAGE_MAX 1024
/* Failed writes of one kind (transport, refused, throttled, server error, …)
 * are logged at most this often; the others in between are counted into the
 * next line, so a storm of one kind neither floods the log nor hides another. */
#define KUBE_EVENT_FAILURE_LOG_INTERVAL_USEC (60ULL * 1000 * 1000)

struct kube_object_ref {
	const char *api_version; /* "v1", "karpenter.sh/v1", … */
	const char *kind;
	const char *namespace;   /* NULL for cluster-scoped objects */
	const char *name;
	const char *uid;
};

enum kube_event_kind {
	KUBE_EVENT_NORMAL,
	KUBE_EVENT_WARNING,
};

struct kube_events;

int kube_events_new(struct kube_events **ret, struct kube_client *c, const char *component,
		    const char *instance);
/* Free it before its client: the writes still in flight are cancelled. */
struct kube_events *kube_events_free(struct kube_events *e);

/*
 * Records (or folds) one event; failures to write are counted and logged,
 * not fatal. A create that fails is forgotten, so the next repeat creates
 * the Event again instead of updating one that does not exist; an update
 * answered 404 (the Event expired or was deleted) creates it again at once.
 */
int kube_event_record(struct kube_events *e, const struct kube_object_ref *obj,
		      enum kube_event_kind kind, const char *reason, const char *fmt, ...)
	_printf_(5, 6);

struct kube_events_stats {
	/* recreated: updates answered 404 that created the Event again;
	 * in_flight: writes sent and not answered yet */
	uint64_t created, updated, suppressed, failed, recreated, in_flight;
};
void kube_events_get_stats(const struct kube_events *e, struct kube_events_stats *ret);
/* The monotonic clock (µs) the folding windows are measured on; tests
 * replace it. NULL restores the real one. */
void kube_events_set_clock(struct kube_events *e, uint64_t (*now_usec)(void));

#endif
