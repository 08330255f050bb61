/*
 * One informer per collection the watcher reads: LIST+WATCH it, decode each
 * object once, and feed the publisher; after every (re)list, objects the
 * informer held that did not come back are deleted (mark and sweep), so the
 * published state equals the API's. Objects that fail to decode are
 * reported (log line, Event on the object) and change nothing.
 */
#ifndef KANNA_WATCHER_INFORMER_H
#define KANNA_WATCHER_INFORMER_H

#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/metrics.h"
#include "watcher/publish.h"

struct informer_def {
	const char *collection;  /* "/api/v1/pods" */
	const char *api_version; /* "v1": set on items (LIST omits it) */
	const char *kind;        /* "Pod" */
	const char *resource;    /* "pods": for logs and metrics */
};

/* Every collection the watcher can read, in a fixed order. */
extern const struct informer_def informer_defs[];
extern const size_t informer_n_defs;

struct informer_metrics {
	struct metrics_counter *events;        /* kanna_watcher_events_total{resource} */
	struct metrics_counter *decode_errors; /* kanna_watcher_decode_errors_total{resource} */
};

struct informer;

int informer_new(struct informer **ret, const struct informer_def *def, struct kube_client *c,
		 struct publisher *pub, struct kube_events *events,
		 const struct informer_metrics *metrics);
struct informer *informer_free(struct informer *inf);
/* True once the first LIST completed. */
bool informer_synced(const struct informer *inf);
const struct informer_def *informer_def_of(const struct informer *inf);

#endif
