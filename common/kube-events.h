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
/* Failed writes logged one by one before they are only counted. */
#define KUBE_EVENT_FAILURES_LOGGED 10

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
struct kube_events *kube_events_free(struct kube_events *e);

/* Records (or folds) one event; failures to write are counted, not fatal. */
int kube_event_record(struct kube_events *e, const struct kube_object_ref *obj,
		      enum kube_event_kind kind, const char *reason, const char *fmt, ...)
	_printf_(5, 6);

struct kube_events_stats {
	uint64_t created, updated, suppressed, failed;
};
void kube_events_get_stats(const struct kube_events *e, struct kube_events_stats *ret);

#endif
