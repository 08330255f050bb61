/*
 * The scheduler daemon's batcher (Karpenter's provisioner batcher): pending
 * pods arriving from the watcher collect in a batch that is solved once no
 * new pod arrived for the idle window, or the max window has passed since
 * the first. Pods sent in a plan are held back (not batched again) until
 * their NodeClaim shows up, the launch fails, or the plan times out.
 */
#ifndef KANNA_SCHEDULER_BATCH_H
#define KANNA_SCHEDULER_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/hashmap.h"
#include "proto/proto.h"

struct batch {
	struct hashmap pods;     /* "ns/name" → struct proto_pod * (owned copy) */
	struct hashmap held;     /* "ns/name" → (void *)(uintptr_t) expiry usec */
	uint64_t first_usec, last_new_usec;
	uint64_t idle_usec, max_usec;
};

void batch_init(struct batch *b, uint64_t idle_usec, uint64_t max_usec);
/* New windows (SIGHUP); they apply to the batch being collected too. */
void batch_set_windows(struct batch *b, uint64_t idle_usec, uint64_t max_usec);
void batch_done(struct batch *b);
/* Adds (or refreshes) a pod; ignored while the pod is held. */
int batch_add(struct batch *b, const struct proto_pod *p, uint64_t now_usec);
/* Is the batch due for solving now? */
bool batch_due(const struct batch *b, uint64_t now_usec);
/* Takes every pod out: an array of owned copies (free each, then the array). */
int batch_take(struct batch *b, struct proto_pod ***ret, size_t *n);
/* Holds a planned pod until expiry; releases one (failed launch). */
int batch_hold(struct batch *b, const char *key, uint64_t until_usec);
void batch_release(struct batch *b, const char *key);
/* The same for pods[0..n) by their namespace and name: the pods of a solve
 * still running are held (until UINT64_MAX) so that their re-announcements
 * do not put them in the next batch too. */
int batch_hold_pods(struct batch *b, struct proto_pod *const *pods, size_t n, uint64_t until_usec);
void batch_release_pods(struct batch *b, struct proto_pod *const *pods, size_t n);
/* Drops holds that expired. Returns how many. */
size_t batch_expire(struct batch *b, uint64_t now_usec);

#endif
