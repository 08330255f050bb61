/*
 * One WATCH stream: events of one resource after a resourceVersion (or the
 * current objects as ADDED first), filtered by namespace and selectors,
 * with periodic BOOKMARKs and a timeout. The HTTP layer pulls bytes with
 * k8s_watch_read(), which blocks (thread-per-connection) until there are.
 */
#ifndef KANNA_SIM_K8S_WATCH_H
#define KANNA_SIM_K8S_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sim/k8s-store.h"

/* A BOOKMARK every this often when asked for (upstream: about a minute;
 * shorter here so that tests see them). */
#define K8S_WATCH_BOOKMARK_MS 5000
/* Watches without timeoutSeconds end after this, as --min-request-timeout. */
#define K8S_WATCH_DEFAULT_TIMEOUT_S 1800
/* Longer timeoutSeconds are cut to this, so no stream lives forever. */
#define K8S_WATCH_MAX_TIMEOUT_S (24 * 3600)
/* Events formatted per wake-up, so a slow client never holds the lock long. */
#define K8S_WATCH_BATCH 256

struct k8s_watch;

/*
 * An injected cut that open streams follow too, as a dropped connection
 * would: a stream ends after `after` events (0: never), counted from its
 * start or from the latest change of the cut (generation), whichever came
 * last. Shared by the streams and the fault setter; every field is read
 * and written atomically (after before generation).
 */
struct k8s_watch_cut {
	unsigned after;
	uint64_t generation;
	uint64_t count; /* streams cut so far */
};
void k8s_watch_cut_set(struct k8s_watch_cut *cut, unsigned after);

/* Rewrites each event's object (e.g. into a Table); returns a new value. */
typedef json_t *(*k8s_watch_transform)(void *cls, const struct k8s_resource *res,
				       const json_t *obj);

struct k8s_watch_options {
	k8s_watch_transform transform; /* NULL: objects as stored */
	void *transform_cls;
	const char *resource_version; /* NULL or "0": current objects first */
	bool bookmarks;
	bool send_initial_events;
	struct k8s_watch_cut *cut; /* NULL: never cut */
	long timeout_seconds; /* 0: K8S_WATCH_DEFAULT_TIMEOUT_S */
};

/* Takes ownership of the selectors. 410 Gone when rv left the window. */
int k8s_watch_new(struct k8s_store *store, const struct k8s_resource *res,
		  const char *ns, struct k8s_selector *labels,
		  struct k8s_selector *fields, const struct k8s_watch_options *opts,
		  struct k8s_watch **ret, struct k8s_error *err);
/* Copies up to max bytes; 0 means the stream has ended. */
ssize_t k8s_watch_read(struct k8s_watch *w, char *out, size_t max);
struct k8s_watch *k8s_watch_free(struct k8s_watch *w);

#endif
