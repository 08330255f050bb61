/*
 * What the scheduler says about the pods it cannot place. A pending pod is
 * announced and solved again every batch, so logging its reason each time
 * wrote the same warning for every pending pod every few seconds (56,527
 * lines in 40 minutes). Each pod's reason is remembered by uid and logged
 * only when it changes; a periodic summary counts the pods still waiting by
 * reason. A pod placed, bound or deleted is forgotten, so a later failure
 * is news again. (Its FailedScheduling Event is recorded every time: the
 * recorder folds repeats into one object.)
 */
#ifndef KANNA_SCHEDULER_UNSCHEDULABLE_H
#define KANNA_SCHEDULER_UNSCHEDULABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/hashmap.h"
#include "proto/proto.h"

/* Reasons a summary line names; pods of the others are counted together. */
#define UNSCHEDULABLE_SUMMARY_REASONS 3

struct unschedulable {
	struct hashmap pods; /* uid → struct unschedulable_pod * */
};

void unschedulable_init(struct unschedulable *u);
void unschedulable_done(struct unschedulable *u);
/* Remembers p's reason: 1 when it is new or changed (say it), 0 when it is
 * the one said already, -ENOMEM. */
int unschedulable_note(struct unschedulable *u, const struct proto_pod *p, const char *reason);
/* The pod was placed. */
void unschedulable_forget(struct unschedulable *u, const char *uid);
/* Forgets every pod still_pending() denies (bound, deleted, recreated). */
void unschedulable_sweep(struct unschedulable *u,
			 bool (*still_pending)(const char *ns, const char *name, const char *uid,
					       void *userdata),
			 void *userdata);
size_t unschedulable_count(const struct unschedulable *u);
/*
 * "5 pod(s) unschedulable: 3 for <reason>; 2 for <reason>", the commonest
 * reasons first (a reason is its leading NodePool's, up to the first "; "),
 * the rest counted; cut to size. Returns how many pods it counts.
 */
size_t unschedulable_summary(const struct unschedulable *u, char *buf, size_t size);

#endif
