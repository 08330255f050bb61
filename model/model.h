/*
 * The solver's in-memory model: interned strings, label requirements,
 * resource vectors, the instance-type catalog with its offerings and
 * indexes, NodePools, pods, nodes and topology groups. Filled from the
 * replicated cluster state (from-state.c), which the daemons and the
 * cluster dump loader (dump/load.c) both feed; it depends on no wire format. Nothing here does I/O
 * except catalog_load_tsv().
 *
 * Design notes (behaviour follows Karpenter's provisioning/scheduling):
 * - Every label key and value is a small integer id from one string table,
 *   so requirement algebra compares integers, never strings.
 * - A requirement is a value set per key: an explicit set (In) or a
 *   complement (NotIn, Exists), optional integer bounds (Gt, Lt) and a flag
 *   saying whether a node WITHOUT the label satisfies it (NotIn,
 *   DoesNotExist). Intersection intersects sets, tightens bounds and ANDs
 *   the flag; two requirements are compatible when the intersection is
 *   non-empty or both accept an absent label.
 * - The catalog keeps types sorted by (cpu, memory) ascending and indexes
 *   them as bitsets: per label key/value, per (zone, capacity type) with an
 *   available offering. A requirement set becomes a bitset of compatible
 *   types with a few word-wise ORs/ANDs.
 */
#ifndef KANNA_SCHEDULER_MODEL_H
#define KANNA_SCHEDULER_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/quantity.h"
#include "common/util.h"

/* Resource slots: the built-in ones, then extended names interned at load. */
#define SCHED_MAX_RESOURCES 16
/* A region has at most a handful of zones; 64 lets a zone set be one word. */
#define SCHED_MAX_ZONES 64
/* spot, on-demand, reserved: room for one more without changing layouts. */
#define SCHED_MAX_CAPACITY_TYPES 4
/* Karpenter truncates a NodeClaim's instance-type options to 60 (fleet limit). */
#define SCHED_MAX_CANDIDATE_TYPES 60
/* Eviction threshold Karpenter assumes by default (memory.available<100Mi). */
#define SCHED_EVICTION_THRESHOLD_BYTES (100LL << 20)
/* Karpenter's default VM_MEMORY_OVERHEAD_PERCENT: the hypervisor's share. */
#define SCHED_VM_MEMORY_OVERHEAD 0.075
/* "no string": absent label value, unset name. */
#define STR_NONE UINT32_MAX

enum resource_id {
	RES_CPU,               /* millicores */
	RES_MEMORY,            /* bytes */
	RES_PODS,
	RES_EPHEMERAL_STORAGE, /* bytes */
	RES_NVIDIA_GPU,
	RES_NEURON,
	RES_POD_ENI,
	RES_N_BUILTIN,
};

struct resources {
	int64_t v[SCHED_MAX_RESOURCES];
};

/* Every load-time object lives in an arena (common/arena.h) until model_free(). */

/* ---- string table ---- */
struct strtab {
	struct arena arena;
	char **strs;
	int64_t *num;      /* parsed integer value, when is_num */
	uint8_t *is_num;
	uint32_t n, cap;
	uint32_t *slots;   /* open addressing: id+1, 0 = empty */
	uint32_t n_slots;
};
int strtab_init(struct strtab *t);
/* dst := a table with src's ids; its strings are src's own (src must
 * outlive it and intern nothing more meanwhile), new ones go to dst's. */
int strtab_copy(struct strtab *dst, const struct strtab *src);
void strtab_done(struct strtab *t);
/* Returns the id (>= 0) or -ENOMEM. */
int64_t strtab_intern_len(struct strtab *t, const char *s, size_t len);
int64_t strtab_intern(struct strtab *t, const char *s);
/* Returns the id or STR_NONE when s was never interned. */
uint32_t strtab_lookup(const struct strtab *t, const char *s);
const char *strtab_str(const struct strtab *t, uint32_t id);
bool strtab_int(const struct strtab *t, uint32_t id, int64_t *ret);

/* ---- bitsets over the catalog ---- */
static inline bool bit_test(const uint64_t *b, uint32_t i)
{
	return (b[i >> 6] >> (i & 63)) & 1;
}
static inline void bit_set(uint64_t *b, uint32_t i)
{
	b[i >> 6] |= 1ULL << (i & 63);
}
static inline void bit_clear(uint64_t *b, uint32_t i)
{
	b[i >> 6] &= ~(1ULL << (i & 63));
}
static inline bool bits_any(const uint64_t *b, uint32_t words)
{
	for (uint32_t i = 0; i < words; i++)
		if (b[i])
			return true;
	return false;
}
static inline void bits_and(uint64_t *d, const uint64_t *s, uint32_t words)
{
	for (uint32_t i = 0; i < words; i++)
		d[i] &= s[i];
}
static inline void bits_or(uint64_t *d, const uint64_t *s, uint32_t words)
{
	for (uint32_t i = 0; i < words; i++)
		d[i] |= s[i];
}
uint32_t bits_count(const uint64_t *b, uint32_t words);

/* ---- labels and requirements ---- */
struct label {
	uint32_t key, value;
};

enum req_op {
	REQ_IN,
	REQ_NOT_IN,
	REQ_EXISTS,
	REQ_DOES_NOT_EXIST,
	REQ_GT,
	REQ_LT,
	REQ_GTE, /* Karpenter's inclusive bounds (NodePools, NodeClaims only) */
	REQ_LTE,
};

struct requirement {
	uint32_t key;
	bool complement; /* values are excluded (NotIn/Exists) instead of allowed */
	bool absent_ok;  /* a node without the label satisfies it */
	int64_t gt, lt;  /* exclusive integer bounds; INT64_MIN/INT64_MAX = none */
	uint32_t min_values;
	uint32_t n_values;
	uint32_t *values; /* sorted string ids (malloc'd) */
};

struct requirements {
	struct requirement *v; /* sorted by key */
	uint32_t n, cap;
};

int req_op_from_string(const char *s, enum req_op *ret);
void requirements_free(struct requirements *r);
int requirements_copy(struct requirements *dst, const struct requirements *src);
const struct requirement *requirements_get(const struct requirements *r, uint32_t key);
/* Intersects "key op values" into r (values need not be sorted). */
int requirements_add(struct requirements *r, const struct strtab *st, uint32_t key,
		     enum req_op op, const uint32_t *values, size_t n_values,
		     uint32_t min_values);
bool requirements_equal(const struct requirements *a, const struct requirements *b);
/* r := r ∩ other. */
int requirements_intersect(struct requirements *r, const struct requirements *other,
			   const struct strtab *st);
/* Does the value (or STR_NONE for "label absent") satisfy req? */
bool requirement_allows(const struct requirement *req, const struct strtab *st, uint32_t value);
/* Is no value (and no absence) left? */
bool requirement_is_empty(const struct requirement *req);
/* Can a and b both hold for one node? */
bool requirement_intersects(const struct requirement *a, const struct requirement *b,
			    const struct strtab *st);
/*
 * Karpenter's Requirements.Compatible: node-side requirements (NodePool,
 * NodeClaim) against a pod's. Keys both define must intersect; a key only
 * the pod defines must be well known (instance types supply it) or accept
 * absence. Well-known keys are the string ids below n_well_known (the model
 * interns them first). On failure returns false and the offending key.
 */
bool requirements_compatible(const struct requirements *node_side,
			     const struct requirements *pod, const struct strtab *st,
			     uint32_t n_well_known, uint32_t *ret_key);
/* Do the labels (sorted by key) satisfy every requirement? */
bool requirements_match_labels(const struct requirements *r, const struct label *labels,
			       uint32_t n_labels, const struct strtab *st);
uint32_t labels_get(const struct label *labels, uint32_t n, uint32_t key);
void labels_sort(struct label *labels, uint32_t n);
/* Appends "key In [v1 v2]" readable text; returns bytes written (snprintf-like). */
int requirement_format(const struct requirement *req, const struct strtab *st, char *buf,
		       size_t size);

/* ---- quantities ---- */
/* Hot path of the solver: cpu and memory decide almost every call. */
static inline bool resources_fit(const struct resources *need, const struct resources *have,
				 uint32_t n)
{
	if (need->v[RES_CPU] > have->v[RES_CPU] || need->v[RES_MEMORY] > have->v[RES_MEMORY])
		return false;
	for (uint32_t i = RES_PODS; i < n; i++)
		if (need->v[i] > have->v[i])
			return false;
	return true;
}
void resources_add(struct resources *a, const struct resources *b, uint32_t n);

#endif
