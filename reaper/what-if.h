/*
 * kanna-reaper --what-if FILE.yaml [--json]: what would the reaper's
 * disruption methods do to this cluster now? Offline, over a cluster dump,
 * the scheduler's --simulate input (dump/dump.h loads it, with its
 * positioned errors): emptiness, expiration, drift, then consolidation (the pure
 * search of consolidation-search.c), each method's removals taken away
 * before the next looks, within the NodePools' budgets. No daemon, no
 * network. what-if.c decides; what-if-main.c reads the command line and
 * prints.
 */
#ifndef KANNA_REAPER_WHAT_IF_H
#define KANNA_REAPER_WHAT_IF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/solver.h"
#include "state/state-store.h"

/* The methods, in the order the reaper runs them. */
enum wi_method { WI_EMPTINESS, WI_EXPIRATION, WI_DRIFT, WI_CONSOLIDATION, _WI_METHOD_MAX };

/* Room for one replacement's instance types, cheapest first, in output. */
#define WI_MAX_TYPES_SHOWN 5

struct wi_replacement {
	char *types[WI_MAX_TYPES_SHOWN];
	uint32_t n_types, n_more; /* shown, and left out */
	double price;             /* $/hour */
};

/* One decision: nodes removed (deleted, or replaced by the replacements). */
struct wi_decision {
	enum wi_method method;
	const char *detail; /* "single-node", "multi-node", a drift reason … or "" */
	char **nodes;
	uint32_t n_nodes;
	struct wi_replacement *replacements;
	uint32_t n_replacements;
	double before, after; /* $/hour of the nodes removed, of the replacements */
};

/* A node a method looked at and left, and why. */
struct wi_blocked {
	enum wi_method method;
	char *node, *why;
};

struct wi_report {
	struct wi_decision *decisions;
	uint32_t n_decisions;
	struct wi_blocked *blocked;
	uint32_t n_blocked;
	double cluster_before, cluster_after; /* $/hour of every node of a NodePool */
};

/* "emptiness", "expiration", "drift", "consolidation". */
const char *wi_method_name(enum wi_method m);

/* Decides over the loaded cluster c and its objects in store, at now_ms
 * (Unix ms). spot_to_spot, split: the SpotToSpotConsolidation and
 * ConsolidationSplit (1→N) feature gates. */
int wi_compute(struct cluster *c, const struct state_store *store, int64_t now_ms,
	       bool spot_to_spot, bool split, struct wi_report *ret);
void wi_report_done(struct wi_report *r);

void wi_print_table(FILE *out, const struct wi_report *r);
int wi_print_json(FILE *out, const struct wi_report *r);

/* The command line (main.c calls it when --what-if is given). */
int what_if_main(int argc, char **argv);

#endif
