/*
 * kanna-tap's message filters: which lines (tools/tap-format.h's JSON
 * objects) are shown. Types, processes and field filters combine as
 *   (any --type) AND (any --process) AND (any --pod/--nodeclaim/--nodepool)
 * where an empty group lets everything through. Every pattern is an
 * fnmatch(3) glob ("default-*"), so a plain name matches itself only. A
 * message matches a field filter when one of its decoded fields names that
 * object (see tap_filter_match_fields() for where those live). Pure: no I/O,
 * used by kanna-tap and its unit tests.
 */
#ifndef KANNA_TOOLS_TAP_FILTER_H
#define KANNA_TOOLS_TAP_FILTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* NodeClaim names remembered as belonging to a --nodepool: a launch
 * result names only its NodeClaim, so it matches when an earlier plan or
 * state delta tied that NodeClaim to the NodePool. The oldest is
 * forgotten first; far more than the NodeClaims launching at once. */
#define TAP_FILTER_MAX_LEARNED 1024

struct tap_patterns {
	char **items; /* point into argv; the array itself is owned */
	size_t n;
};

struct tap_filter {
	struct tap_patterns types;      /* --type: the line's "type" */
	struct tap_patterns processes;  /* --process: the tap file's process */
	struct tap_patterns pods;       /* --pod: NAME or NS/NAME */
	struct tap_patterns nodeclaims; /* --nodeclaim: NodeClaim names */
	struct tap_patterns nodepools;  /* --nodepool: NodePool names */
	char *learned[TAP_FILTER_MAX_LEARNED]; /* NodeClaims of those NodePools (owned) */
	size_t n_learned, next_learned;
};

/* Appends a pattern (not copied). Returns 0 or -ENOMEM. */
int tap_patterns_add(struct tap_patterns *p, char *pattern);
/* An empty set matches everything; otherwise any pattern matching s. */
bool tap_patterns_match(const struct tap_patterns *p, const char *s);
void tap_filter_done(struct tap_filter *f);

/* True when a field filter (--pod, --nodeclaim, --nodepool) is set. */
bool tap_filter_has_fields(const struct tap_filter *f);

/*
 * Whether a decoded message refers to a pod, NodeClaim or NodePool the
 * filter names (true when it has no field filter). A NodeClaim a message
 * ties to a --nodepool (a plan's, a NodeClaim's state) is remembered, so
 * that later messages naming only the NodeClaim (launch results, Node
 * deltas) match that NodePool too. Looks at:
 *   pending_pods          pods[] (ns/name), their nominated_nodeclaim
 *   launch_plan           nodeclaims[]: id (the NodeClaim), nodepool, pods[]
 *   launch_result         nodeclaim, pods[]
 *   disruption_decision   candidates[]: nodeclaim, nodepool, pods[];
 *                         replacements[] as a plan's nodeclaims
 *   state_delta,          the object: a pod (ns/name, nominated_nodeclaim),
 *   snapshot_item           a NodeClaim (name, nodepool, planned_pods), a
 *                           NodePool (name), a Node (nodeclaim, label
 *                           karpenter.sh/nodepool)
 * Other types carry none of them and never match a field filter.
 */
bool tap_filter_match_fields(struct tap_filter *f, json_t *line);

/* The whole filter on a line from `process`: type, process and fields. */
bool tap_filter_match(struct tap_filter *f, const char *process, json_t *line);

#endif
