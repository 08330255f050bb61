/*
 * NodePool disruption budgets (Karpenter v1 Budget, GetAllowedDisruptions-
 * ByReason): how many of a NodePool's nodes a disruption reason may take
 * now, and the cron schedules that open a budget's window. Pure functions
 * of their arguments and a clock value the caller passes: the reaper asks
 * before each disruption, the watcher's NodePool validation reports the
 * errors. Schedules follow robfig/cron v3's standard parser in UTC, which
 * Karpenter uses (`cron.ParseStandard("TZ=UTC " + schedule)`).
 */
#ifndef KANNA_MODEL_BUDGET_H
#define KANNA_MODEL_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

/* Karpenter's default when a NodePool lists no budgets (CRD default). */
#define BUDGET_DEFAULT_NODES "10%"

/* How far back cron_prev() looks. The longest gap between two fire times of
 * a schedule that fires at all is Feb 29 across a non-leap century year
 * (2096-02-29 to 2104-02-29): 8 years, plus a day of slack. */
#define CRON_LOOKBACK_DAYS (8 * 366 + 1)

/* A parsed 5-field schedule: bit n set = value n fires. The *_star flags are
 * robfig's star bit (field was "*" or "?", bare or "/1"): when either day
 * field has it a day must match both, otherwise either (cron's OR rule). */
struct cron_schedule {
	uint64_t minutes; /* bits 0-59 */
	uint32_t hours;   /* bits 0-23 */
	uint32_t dom;     /* bits 1-31 */
	uint16_t months;  /* bits 1-12 */
	uint8_t dow;      /* bits 0-6, 0 = Sunday */
	bool dom_star, dow_star;
};

/* Parses "minute hour day-of-month month day-of-week" or one of @yearly
 * @annually @monthly @weekly @daily @midnight @hourly. 0, or -EINVAL with
 * a message in err such as `minute 61 out of range 0-59`. */
int cron_parse(const char *expr, struct cron_schedule *ret, char *err, size_t errlen);

/* The latest fire time <= now (Unix seconds, UTC) into *ret; -ENOENT when
 * it did not fire within CRON_LOOKBACK_DAYS (a schedule that never fires,
 * such as "0 0 30 2 *"). Walks back by month, day, hour, then minute. */
int cron_prev(const struct cron_schedule *c, int64_t now, int64_t *ret);

/* Checks one budget as Karpenter's CRD does, the cron as robfig parses it.
 * 0, or -EINVAL with err naming the field, e.g.
 * `spec.disruption.budgets[1].schedule: "61 * * * *": minute 61 out of range 0-59`. */
int budget_validate(const struct proto_budget *b, uint32_t index, char *err, size_t errlen);

/* Karpenter's Budget.IsActive: true without a schedule, else when the
 * schedule fired at some t with t <= now < t + duration. A valid schedule
 * that never fires is active, as upstream (robfig's Next gives up and
 * returns the zero time, which IsActive reads as a hit). 0, or -EINVAL
 * (err as budget_validate, index 0). */
int budget_is_active(const struct proto_budget *b, int64_t now, bool *ret, char *err, size_t errlen);

/* Nodes of a NodePool of total_nodes that `reason` (Underutilized, Empty,
 * Drifted) may disrupt at now, disrupting of them already being disrupted:
 * the smallest "nodes" among the budgets that are active and list the
 * reason or no reasons (a percentage of total_nodes, rounded up), minus
 * disrupting, floored at 0. No budgets at all: Karpenter's default 10%. No
 * budget active for the reason: unlimited, *ret = total_nodes. 0, or
 * -EINVAL when a budget is malformed: then *ret = 0 for every reason (fail
 * closed, as Karpenter's MustGetAllowedDisruptions) and err names it.
 * budget_binding_find() says which budget decided. */
int budget_allowed_disruptions(const struct proto_budget *budgets, uint32_t n_budgets,
			       const char *reason, int64_t now, uint32_t total_nodes,
			       uint32_t disrupting, uint32_t *ret, char *err, size_t errlen);

/* The budget that sets budget_allowed_disruptions()'s answer for a reason
 * (Karpenter's GetAllowedDisruptionsByReason takes the minimum): the active
 * budget listing the reason, or none, with the fewest nodes (a percentage
 * of total_nodes, rounded up), the first listed on a tie. */
#define BUDGET_BINDING_NONE (-1)    /* no budget active for the reason: unlimited */
#define BUDGET_BINDING_DEFAULT (-2) /* the NodePool lists none: BUDGET_DEFAULT_NODES */
struct budget_binding {
	int32_t index;  /* into the NodePool's budgets, or one of the two above */
	uint64_t nodes; /* what it allows of total_nodes, before disrupting ones */
	/* Unix s: the window its schedule opened at its latest run and the
	 * duration closes; both 0 without a schedule (or one that never runs). */
	int64_t window_start, window_end;
};
/* 0, or -EINVAL as budget_allowed_disruptions() (*ret then names none). */
int budget_binding_find(const struct proto_budget *budgets, uint32_t n_budgets, const char *reason,
			int64_t now, uint32_t total_nodes, struct budget_binding *ret, char *err,
			size_t errlen);
/* For Events: `budgets[0] (nodes "0", reasons [Underutilized], schedule
 * "0 9 * * mon-fri", duration 8h, window 2025-06-12T09:00:00Z to
 * 2025-06-12T17:00:00Z) allows 0 of 4 node(s)`, or `the default budget
 * (nodes "10%") allows 1 of 4 node(s)`. budgets: those b was found in. */
void budget_binding_describe(const struct proto_budget *budgets, const struct budget_binding *b,
			     uint32_t total_nodes, char *buf, size_t len);

/* Consolidation's minimum savings of a NodePool (kanna's annotations
 * kanna.dev/consolidation-min-savings-per-hour, a $/hour amount, and
 * -percent, of the replaced nodes' price, 0-100): 0 when absent. */
struct min_savings {
	double per_hour, percent;
};
/* Reads both; 0, or -EINVAL with err naming the first malformed one (that
 * one reads as 0: ignored, the other still applies). */
int min_savings_parse(const struct proto_nodepool *np, struct min_savings *ret, char *err,
		      size_t errlen);

#endif
