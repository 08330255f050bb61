/*
 * Private state of one solve, shared by solver.c (placement), topology.c
 * (spread and pod (anti-)affinity counting) and finish.c (NodeClaim
 * finishing, results). Never used outside scheduler/.
 */
#ifndef KANNA_SCHEDULER_SOLVER_INTERNAL_H
#define KANNA_SCHEDULER_SOLVER_INTERNAL_H

#include "model/solver.h"

/* Reasons are short sentences; longer ones are cut. */
#define SCHED_REASON_MAX 512
/* Distinct (zones, capacity types) combinations whose prices are cached:
 * NodeClaims are pinned to one zone or open to all, so a handful. */
#define SCHED_PRICE_CACHE 32

/* A place pods can go: an existing node or a NodeClaim opened in this solve. */
struct bin {
	int32_t node;     /* existing node index, -1 for a new NodeClaim */
	int32_t nodepool; /* -1 for nodes that are not ours */
	struct requirements reqs; /* NodeClaims: NodePool ∩ pods' requirements */
	uint64_t *cands;  /* NodeClaims: types that may still hold every pod (superset) */
	uint64_t zones;   /* NodeClaims: zone and capacity-type masks of reqs */
	unsigned cts;
	bool min_values;  /* NodeClaims: some requirement has minValues */
	struct resources used, max_alloc, reserved;
	uint32_t *pods;
	uint32_t n_pods, cap_pods;
	uint16_t *ports;
	uint32_t n_ports, cap_ports;
};

/* Topology counts of one group: per domain value, and per bin for hostname. */
struct group_state {
	uint32_t *dom, *count, *owners;
	uint32_t n_dom, cap_dom;
	uint32_t *bin_count, *bin_owners;
	uint32_t cap_bins;
	uint32_t *hit_bins; /* hostname keys: bins holding a matching pod, in order of arrival */
	uint32_t n_hit, cap_hit;
	uint32_t *static_dom; /* domains NodePools and nodes offer (topology.c) */
	uint32_t n_static;
	bool static_done;
	uint64_t total;
	/* Hostname pod affinity (host-group.c): requests of the pending pods
	 * the term binds not yet placed, and whether they select one another. */
	struct resources host_pending;
	bool host_self;
};

/* The relaxation state of a pod (Karpenter's preferences.go order). */
struct relax {
	uint16_t term;      /* required node affinity term in use */
	uint16_t node_pref; /* preferred node affinity terms dropped */
	uint16_t soft;      /* soft topology terms dropped (heaviest first) */
};

/* Everything about a pod that placement depends on; pods of one template share one. */
struct shape {
	uint64_t hash;
	uint64_t *key;
	uint32_t key_len;
	struct requirements reqs;  /* static: nodeSelector ∩ term ∩ preference */
	uint64_t zones;            /* zone and capacity-type masks of reqs */
	unsigned cts;
	uint32_t *topo;            /* active groups the pod is constrained by */
	uint32_t n_topo;
	bool dyn;                  /* has a non-hostname constraint (allowed set per pod) */
	bool dyn_zone_only;        /* ... and only on the zone key */
	bool host_affinity;        /* has a hostname pod affinity (not monotonic) */
	bool inv_anti;             /* matched by a non-hostname anti-affinity term */
	uint32_t pin_keys[8];      /* non-hostname keys a NodeClaim must be pinned on */
	uint32_t n_pin_keys;
	int8_t *np_state;          /* per NodePool: 1 compatible, -1 not */
	char **np_reason;
	uint64_t *np_types;        /* per NodePool: words each */
	uint32_t cursor;           /* bins before it reject this shape for good */
	uint32_t zone_cursor[SCHED_MAX_ZONES];
};

/*
 * Why no NodePool took a pod, one reason per NodePool. With twenty
 * NodePools, listing them in weight order cut the message off before the
 * one that mattered, so the reason of the NodePool that got furthest
 * through the checks leads: a pool whose requirements and taints admit the
 * pod (say, only too small) is the one its user meant, far more than pools
 * it never selected. Among equals the first in weight order leads (the
 * pool Karpenter would have used). The others follow in weight order while
 * they fit, then a count of those left out.
 */
enum np_check {
	NP_CHECK_SHAPE,    /* requirements, taints: shape's np_reason */
	NP_CHECK_HOSTNAME, /* hostname pod affinity */
	NP_CHECK_DOMAIN,   /* topology domains */
	NP_CHECK_CAPACITY, /* types that hold the pod within limits, minValues */
};

/* One pod's reasons, in NodePool order (the solver keeps one, reused). */
struct np_reasons {
	char *text; /* '\0'-terminated reasons one after the other */
	size_t len, cap;
	struct {
		size_t off;
		uint8_t check;
	} *at;
	uint32_t n, cap_n;
};

struct solver {
	struct cluster *c;
	const struct strtab *st;
	const struct catalog *cat;
	uint32_t words, n_res;
	struct bin *bins;
	uint32_t n_bins, cap_bins;
	struct shape **shapes;     /* open-addressing table */
	uint32_t n_shapes, cap_shapes;
	struct group_state *gs;
	uint64_t pool_zones;       /* zones and capacity types some NodePool allows: */
	unsigned pool_cts;         /* the topology domains new capacity can add */
	uint32_t **matched;        /* per pod: groups whose selector counts it */
	uint32_t *n_matched;
	uint32_t *np_order;        /* NodePools by weight desc, name */
	/* Per NodePool, per catalog type: allocatable, capacity and the running
	 * maximum of allocatable on its nodes (kubelet settings), contiguous
	 * for the fit scans; pools without settings share the catalog's. */
	const struct resources **np_alloc, **np_cap, **np_prefix_max;
	struct resources *cat_alloc, *cat_cap;
	struct resources *np_reserved;
	int64_t *np_claims;
	int32_t *pod_bin;
	char **reasons;            /* per pod, last failure */
	uint64_t *scratch, *scratch2; /* words each */
	void *keybuf;              /* shape key serialization buffer */
	int64_t last_pod;          /* the previous pod placed unrelaxed, and its shape: */
	struct shape *last_shape;  /* pods of one Deployment come one after the other */
	struct {                   /* type prices per (zones, capacity types) */
		uint64_t zones;
		unsigned cts;
		double *prices;
	} price_cache[SCHED_PRICE_CACHE];
	uint32_t n_price_cache;
	struct np_reasons np_reasons; /* try_new_claim()'s, reused */
	struct sched_options opts;    /* zeroed: no deadline, no limit */
	uint64_t *under_price;        /* with opts.max_new_price: types offered below it */
	uint8_t *deferred;            /* per pod, when the solve stopped: not tried */
	uint32_t n_deferred;
};

/* solve.c: a solver over c with a bin per node holding its bound pods
 * (solver_done() afterwards, also on failure). */
int solver_setup(struct solver *s, struct cluster *c);
void solver_done(struct solver *s);

/* solver.c: place one pending pod; 1 placed, 0 not (reason kept), < 0 error. */
int solver_place(struct solver *s, uint32_t pi);
/* Would existing node bin bi take pod pi under shape sh and requirements
 * eff? When it would not and why is not NULL, why says so. */
bool solver_node_accepts(struct solver *s, uint32_t bi, uint32_t pi, const struct shape *sh,
			 const struct requirements *eff, char *why, size_t size);
/* Puts pod pi in bin bi: requests, host ports, topology counts. pl: how a
 * NodeClaim bin takes it (from the accepting check; unused for a node). */
struct plan;
int solver_commit(struct solver *s, uint32_t bi, uint32_t pi, const struct shape *sh,
		  const struct requirements *eff, const struct plan *pl);

/* shape.c */
int shape_get(struct solver *s, uint32_t pi, const struct relax *rx, struct shape **ret);
void shape_free(struct shape *sh, uint32_t n_nodepools);
size_t shape_keybuf_size(void);

/* topology.c */
int topology_init(struct solver *s);
void topology_done(struct solver *s);
int topology_grow_bins(struct solver *s);
/* Adds "key In allowed" terms for the pod's non-hostname constraints (and
 * inverse anti-affinity) to dyn. Returns false with a reason when a term
 * leaves no domain. */
int topology_allowed(struct solver *s, uint32_t pi, const struct shape *sh,
		     struct requirements *dyn, char *reason, size_t size);
/* For hostname pod affinity: the bins holding a matching pod of the
 * shape's first such term with any match (NULL: none yet, scan all). */
const uint32_t *topology_affinity_bins(const struct solver *s, const struct shape *sh, uint32_t *n);
/* Hostname-scoped checks for bin b (b == n_bins: a new NodeClaim); when
 * they fail and why is not NULL, why says which. */
bool topology_host_ok(struct solver *s, uint32_t pi, const struct shape *sh, uint32_t b,
		      char *why, size_t size);
/* Value to pin key to on bin b: the least-loaded allowed domain. */
uint32_t topology_pick(struct solver *s, uint32_t pi, uint32_t key, const uint32_t *cands,
		       uint32_t n);
int topology_record(struct solver *s, uint32_t pi, uint32_t b);
/* The domain of bin b for key (STR_NONE when not yet decided). */
uint32_t bin_domain(const struct solver *s, uint32_t b, uint32_t key);

/* host-group.c: a self-selecting hostname pod-affinity group kept whole.
 * Moves each such group's pending pods in order[0..n) to its first's turn
 * (and counts their requests). */
int host_groups_order(struct solver *s, uint32_t *order, uint32_t n);
/* Pod pi would start its group (none of it placed yet): the requests of
 * the group's pods still pending, it included; else NULL. */
const struct resources *host_group_demand(const struct solver *s, uint32_t pi);
/* Could bin bi hold demand besides what it holds (its largest type)? */
bool host_group_room(const struct solver *s, uint32_t bi, const struct resources *demand);
/* Pod pi was placed: no longer pending in its group. */
void host_group_placed(struct solver *s, uint32_t pi);

/* finish.c */
int finish_result(struct solver *s, struct sched_result **ret);
void np_reasons_reset(struct np_reasons *rs);
int np_reasons_add(struct np_reasons *rs, enum np_check check, const char *why);
/* "<lead>; <others>; and N more nodepool(s)" into buf, at most size bytes. */
void np_reasons_text(const struct np_reasons *rs, char *buf, size_t size);
void np_reasons_done(struct np_reasons *rs);
/* "96 cpu", "512Mi memory": resource r's quantity v as reasons name it. */
void resource_text(const struct solver *s, uint32_t r, int64_t v, char *buf, size_t size);
int reason_no_type(struct solver *s, const struct shape *sh, uint32_t np, const struct resources *need,
		   uint64_t zones, char *buf, size_t size);

#endif
