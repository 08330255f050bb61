/*
 * kanna-tap's message filters (tools/tap-filter.h): --type, --process and
 * the field filters --pod, --nodeclaim, --nodepool, matched with fnmatch(3)
 * against the decoded JSON line (tools/tap-format.c), where the proto
 * messages keep those names (proto/proto.h). Reads only what it is given;
 * a field of the wrong JSON type is simply not a match.
 */
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tools/tap-filter.h"

/* The label a Node carries naming its NodePool (Karpenter's
 * karpenter.sh/nodepool, pkg/apis/v1 NodePoolLabelKey). */
#define TAP_NODEPOOL_LABEL "karpenter.sh/nodepool"

int tap_patterns_add(struct tap_patterns *p, char *pattern)
{
	char **a = realloc(p->items, (p->n + 1) * sizeof(char *));
	if (!a)
		return -ENOMEM;
	a[p->n++] = pattern;
	p->items = a;
	return 0;
}

bool tap_patterns_match(const struct tap_patterns *p, const char *s)
{
	if (p->n == 0)
		return true;
	for (size_t i = 0; s && i < p->n; i++)
		if (fnmatch(p->items[i], s, 0) == 0)
			return true;
	return false;
}

void tap_filter_done(struct tap_filter *f)
{
	free(f->types.items);
	free(f->processes.items);
	free(f->pods.items);
	free(f->nodeclaims.items);
	free(f->nodepools.items);
	for (size_t i = 0; i < f->n_learned; i++)
		free(f->learned[i]);
	*f = (struct tap_filter){ 0 };
}

bool tap_filter_has_fields(const struct tap_filter *f)
{
	return f->pods.n > 0 || f->nodeclaims.n > 0 || f->nodepools.n > 0;
}

static const char *get_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* Any pattern matching s; none when the set is empty (a field filter of
 * another kind is what the user asked for). */
static bool any_match(const struct tap_patterns *p, const char *s)
{
	return p->n > 0 && s && tap_patterns_match(p, s);
}

/* A pod named by namespace and name: "NS/NAME" patterns match both parts,
 * a pattern without '/' the name in any namespace. */
static bool pod_matches(const struct tap_patterns *p, const char *ns, const char *name)
{
	if (!name)
		return false;
	for (size_t i = 0; i < p->n; i++) {
		const char *pat = p->items[i], *slash = strchr(pat, '/');
		if (!slash) {
			if (fnmatch(pat, name, 0) == 0)
				return true;
			continue;
		}
		_cleanup_free_ char *pat_ns = strndup(pat, (size_t)(slash - pat));
		if (pat_ns && ns && fnmatch(pat_ns, ns, 0) == 0 && fnmatch(slash + 1, name, 0) == 0)
			return true;
	}
	return false;
}

/* A pod key as plans and results carry it: "ns/name". */
static bool pod_key_matches(const struct tap_patterns *p, const char *key)
{
	const char *slash = key ? strchr(key, '/') : NULL;
	if (!key)
		return false;
	if (!slash)
		return pod_matches(p, NULL, key);
	_cleanup_free_ char *ns = strndup(key, (size_t)(slash - key));
	return ns && pod_matches(p, ns, slash + 1);
}

static bool pod_keys_match(const struct tap_patterns *p, json_t *keys)
{
	size_t i;
	json_t *k;

	if (p->n == 0)
		return false;
	json_array_foreach(keys, i, k)
		if (pod_key_matches(p, json_string_value(k)))
			return true;
	return false;
}

static bool is_learned(const struct tap_filter *f, const char *nodeclaim)
{
	for (size_t i = 0; nodeclaim && i < f->n_learned; i++)
		if (streq(f->learned[i], nodeclaim))
			return true;
	return false;
}

/* Remembers that nodeclaim belongs to a --nodepool (out of memory: it is
 * not remembered, and later results of it are not shown). */
static void learn(struct tap_filter *f, const char *nodeclaim)
{
	char *copy;

	if (!nodeclaim || is_learned(f, nodeclaim) || !(copy = strdup(nodeclaim)))
		return;
	if (f->n_learned < TAP_FILTER_MAX_LEARNED)
		f->n_learned++;
	else
		free(f->learned[f->next_learned]);
	f->learned[f->next_learned] = copy;
	f->next_learned = (f->next_learned + 1) % TAP_FILTER_MAX_LEARNED;
}

/* A NodeClaim by name: a --nodeclaim, or one of a --nodepool seen before. */
static bool nodeclaim_matches(const struct tap_filter *f, const char *nodeclaim)
{
	return any_match(&f->nodeclaims, nodeclaim) || is_learned(f, nodeclaim);
}

/* A NodeClaim tied to its NodePool: matches by either, and is learned
 * when the NodePool matches. */
static bool owned_nodeclaim_matches(struct tap_filter *f, const char *nodeclaim,
				    const char *nodepool)
{
	if (any_match(&f->nodepools, nodepool)) {
		learn(f, nodeclaim);
		return true;
	}
	return nodeclaim_matches(f, nodeclaim);
}

/* A pod object (pending_pods.pods[], a state object of kind pod). */
static bool pod_object_matches(struct tap_filter *f, json_t *pod)
{
	return (f->pods.n > 0 && pod_matches(&f->pods, get_str(pod, "ns"), get_str(pod, "name"))) ||
	       nodeclaim_matches(f, get_str(pod, "nominated_nodeclaim"));
}

/* A planned_nodeclaim: launch_plan.nodeclaims[], disruption replacements. */
static bool planned_matches(struct tap_filter *f, json_t *planned)
{
	return owned_nodeclaim_matches(f, get_str(planned, "id"), get_str(planned, "nodepool")) ||
	       pod_keys_match(&f->pods, json_object_get(planned, "pods"));
}

static bool candidate_matches(struct tap_filter *f, json_t *c)
{
	return owned_nodeclaim_matches(f, get_str(c, "nodeclaim"), get_str(c, "nodepool")) ||
	       pod_keys_match(&f->pods, json_object_get(c, "pods"));
}

/* The {"kind": ..., "object": {...}} of state_delta and snapshot_item. */
static bool state_object_matches(struct tap_filter *f, json_t *wrapped)
{
	const char *kind = get_str(wrapped, "kind");
	json_t *o = json_object_get(wrapped, "object");

	if (!kind || !json_is_object(o))
		return false;
	if (streq(kind, "pod"))
		return pod_object_matches(f, o);
	if (streq(kind, "nodeclaim"))
		return owned_nodeclaim_matches(f, get_str(o, "name"), get_str(o, "nodepool")) ||
		       pod_keys_match(&f->pods, json_object_get(o, "planned_pods"));
	if (streq(kind, "nodepool"))
		return any_match(&f->nodepools, get_str(o, "name"));
	if (streq(kind, "node"))
		return owned_nodeclaim_matches(f, get_str(o, "nodeclaim"),
					       get_str(json_object_get(o, "labels"), TAP_NODEPOOL_LABEL));
	return false;
}

/* True when pred holds for any element of array. */
static bool any_element(struct tap_filter *f, json_t *array,
			bool (*pred)(struct tap_filter *, json_t *))
{
	bool any = false;
	size_t i;
	json_t *e;

	/* Every element, not only up to the first match: each may teach a
	 * NodeClaim of a --nodepool. */
	json_array_foreach(array, i, e)
		if (pred(f, e))
			any = true;
	return any;
}

bool tap_filter_match_fields(struct tap_filter *f, json_t *line)
{
	const char *type = get_str(line, "type");
	json_t *body = json_object_get(json_object_get(line, "fields"), "body");

	if (!tap_filter_has_fields(f))
		return true;
	if (!type || !json_is_object(body))
		return false;
	if (streq(type, "pending_pods"))
		return any_element(f, json_object_get(body, "pods"), pod_object_matches);
	if (streq(type, "launch_plan"))
		return any_element(f, json_object_get(body, "nodeclaims"), planned_matches);
	if (streq(type, "launch_result"))
		return nodeclaim_matches(f, get_str(body, "nodeclaim")) ||
		       pod_keys_match(&f->pods, json_object_get(body, "pods"));
	if (streq(type, "disruption_decision")) {
		bool candidates = any_element(f, json_object_get(body, "candidates"), candidate_matches);
		bool replacements = any_element(f, json_object_get(body, "replacements"), planned_matches);
		return candidates || replacements;
	}
	if (streq(type, "state_delta") || streq(type, "snapshot_item"))
		return state_object_matches(f, json_object_get(body, "object"));
	return false;
}

bool tap_filter_match(struct tap_filter *f, const char *process, json_t *line)
{
	const char *type = get_str(line, "type");
	/* Fields first: a message of a type not shown may still teach a
	 * NodeClaim of a --nodepool. */
	bool fields = tap_filter_match_fields(f, line);

	return fields && tap_patterns_match(&f->types, type ? type : "") &&
	       tap_patterns_match(&f->processes, process ? process : "");
}
