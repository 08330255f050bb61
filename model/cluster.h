/*
 * What the solver is asked about: NodePools, existing Nodes, pods (pending
 * and bound), DaemonSet templates and the topology groups that pods' spread
 * and (anti-)affinity terms define, over one string table and catalog.
 * Filled by model/from-state.c from proto objects (the daemon's
 * replica, or --simulate's decoded YAML) and by tests and benchmarks
 * directly; owns all of its memory, released by cluster_free().
 */
#ifndef KANNA_SCHEDULER_CLUSTER_H
#define KANNA_SCHEDULER_CLUSTER_H

#include "model/catalog.h"
#include "model/kubelet.h"

enum taint_effect {
	TAINT_NO_SCHEDULE,
	TAINT_PREFER_NO_SCHEDULE,
	TAINT_NO_EXECUTE,
};

struct taint {
	uint32_t key, value;
	uint8_t effect;
};

struct toleration {
	uint32_t key;   /* STR_NONE: every key (operator Exists, empty key) */
	uint32_t value; /* STR_NONE with exists */
	bool exists;
	int8_t effect;  /* -1: every effect */
};

struct nodepool {
	uint32_t name;
	int32_t weight;
	struct requirements reqs; /* requirements, labels, karpenter.sh/nodepool */
	struct taint *taints;     /* startupTaints are not here: they never block */
	uint32_t n_taints;
	struct resources limits;  /* INT64_MAX: no limit */
	int64_t node_limit;       /* INT64_MAX: no limit */
	const char *not_ready;    /* why no NodeClaim may be opened (its node class, or a
				   * static pool), or NULL */
	uint32_t windows_build;   /* its EC2NodeClass's Windows build (os windows); STR_NONE: Linux */
	struct resources daemon_overhead; /* requests of DaemonSets that run there */
	struct resources in_use;  /* capacity of existing nodes of this pool */
	int64_t nodes_in_use;
	struct kubelet_settings kubelet; /* set: its nodes hold other than the catalog says */
	/* With kubelet.set, after cluster_apply_kubelet(): per catalog type what
	 * a node of this pool has, and the running maximum of type_alloc in
	 * catalog order (the solver's upper bound); NULL: the catalog's own. */
	struct resources *type_capacity, *type_alloc, *type_prefix_max;
};

enum topo_kind {
	TOPO_SPREAD,
	TOPO_AFFINITY,
	TOPO_ANTI_AFFINITY,
};

/* One distinct spread or (anti-)affinity term; pods of one owner share it. */
struct topo_group {
	enum topo_kind kind;
	uint32_t key;
	struct requirements selector; /* over pod labels */
	uint32_t *namespaces;         /* pods of these namespaces count, */
	uint32_t n_namespaces;
	bool has_ns_selector;         /* and, with a namespaceSelector, pods of */
	struct requirements ns_selector; /* namespaces it matches (none: all) */
	int32_t max_skew, min_domains;
};

/* A pod's reference to a group: hard, or a preference relaxed when needed. */
struct pod_topo {
	uint32_t group;
	bool soft;
	int32_t weight;
};

struct preferred_term {
	int32_t weight;
	struct requirements reqs;
};

/* One per pod of the cluster (100,000 in a big one): the counts sit apart
 * from their arrays so that no padding comes between (240 bytes, not 264). */
struct pod {
	uint32_t ns, name;
	uint32_t node; /* bound node name, STR_NONE when pending */
	uint32_t n_labels;
	struct label *labels; /* sorted by key */
	struct resources req; /* max(init containers) vs sum(containers) + overhead */
	struct requirements reqs;  /* nodeSelector ∩ volume topology */
	struct requirements *terms; /* required node affinity: OR of terms */
	struct preferred_term *prefs; /* heaviest first */
	struct toleration *tols;
	struct pod_topo *topo; /* hard first, then soft by weight, heaviest first */
	uint16_t *host_ports;
	const char *invalid; /* why the pod can never be placed (missing PVC...) */
	uint32_t n_terms, n_prefs, n_tols, n_topo, n_host_ports;
	bool dies_with_node; /* DaemonSet or mirror pod: never re-placed elsewhere */
};

struct node {
	uint32_t name;
	struct label *labels; /* sorted by key */
	uint32_t n_labels;
	struct taint *taints;
	uint32_t n_taints;
	struct resources allocatable, capacity;
	int32_t nodepool; /* index, or -1 when not ours */
	bool unschedulable;
	bool removed;     /* a what-if takes it away (model/what-if.h) */
	bool in_flight;   /* a NodeClaim launched but without its Node yet */
	uint32_t launched_as; /* in flight: the Node name it reports, or STR_NONE */
};

/* A Namespace's labels, for namespaceSelectors; kubernetes.io/metadata.name
 * (the API server sets it on every namespace) is always among them. */
struct namespace_labels {
	uint32_t ns;
	struct label *labels; /* sorted by key */
	uint32_t n_labels;
};

struct model_base;

struct cluster {
	struct strtab st;
	struct catalog cat;
	/* Set: st starts as a copy of the base's and cat is the base's, read
	 * in place (model/model-base.h); only cat's resource slots and arena
	 * are the cluster's own. */
	struct model_base *base;
	struct arena arena;
	struct nodepool *nodepools;
	uint32_t n_nodepools, cap_nodepools;
	struct node *nodes;
	uint32_t n_nodes, cap_nodes;
	struct pod *pods;
	uint32_t n_pods, cap_pods;
	struct pod *daemonsets; /* pod templates of DaemonSets */
	uint32_t n_daemonsets, cap_daemonsets;
	struct topo_group *groups;
	uint32_t n_groups, cap_groups;
	struct namespace_labels *namespaces; /* sorted by ns */
	uint32_t n_namespaces, cap_namespaces;
};

/* A pod's topology term before ordering (see cluster_pod_set_topology). */
struct topo_term {
	struct pod_topo t;
	int order; /* 0 hard, 1 soft affinity, 2 soft anti-affinity, 3 soft spread */
};

int cluster_new(struct cluster **ret);
/* A model over base's string table and final catalog (takes a reference). */
int cluster_new_from_base(struct cluster **ret, struct model_base *base);
void cluster_free(struct cluster *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct cluster *, cluster_free);

/* Append a zeroed element; returns NULL on ENOMEM. */
struct nodepool *cluster_add_nodepool(struct cluster *c);
struct node *cluster_add_node(struct cluster *c);
struct pod *cluster_add_pod(struct cluster *c);
struct pod *cluster_add_daemonset(struct cluster *c);
/* Records a Namespace's labels (copied; n_labels may be 0). */
int cluster_add_namespace(struct cluster *c, uint32_t ns, const struct label *labels,
			  uint32_t n_labels);
/* The id of an equal group, adding it (taking ownership of g's memory). */
int cluster_group(struct cluster *c, struct topo_group *g);
uint32_t cluster_intern(struct cluster *c, const char *s); /* STR_NONE on ENOMEM */

/* Does the pod tolerate every NoSchedule/NoExecute taint? (PreferNoSchedule
 * never blocks.) Sets *ret_taint to the first one it does not tolerate. */
bool tolerates(const struct toleration *tols, uint32_t n_tols, const struct taint *taints,
	       uint32_t n_taints, const struct taint **ret_taint);
/* Does the group count this pod (namespace and label selector)? A
 * namespace the cluster has no record of has just its name label. */
bool topo_group_selects(const struct cluster *c, const struct topo_group *g,
			const struct pod *p);
/*
 * Orders a pod's terms as Karpenter tries them — hard first, then soft
 * affinity, soft anti-affinity (heaviest first), soft spread — and stores
 * them on the pod. terms is reordered in place.
 */
int cluster_pod_set_topology(struct cluster *c, struct pod *p, struct topo_term *terms, uint32_t n);
/*
 * Adds a NodeClaim that has no Node yet as in-flight capacity: its labels
 * are its own plus its single-valued requirements (taints and size are the
 * caller's to fill). launched_as: the Node name it reports, or STR_NONE.
 */
struct node *cluster_add_in_flight(struct cluster *c, uint32_t name, const struct label *labels,
				   uint32_t n_labels, const struct requirements *reqs,
				   uint32_t launched_as);
/*
 * After the catalog is final: in-flight NodeClaims (nodes with in_flight)
 * whose Node is known are dropped, the rest sized from their instance type
 * (unschedulable when they name none: they only count their planned pods)
 * and ordered after the real nodes, which the solver tries first.
 */
int cluster_settle_in_flight(struct cluster *c);
/*
 * After the catalog is final: each NodePool with kubelet settings gets its
 * own capacity and allocatable per type (kubelet_node_resources()).
 */
int cluster_apply_kubelet(struct cluster *c);
/* A type's allocatable / capacity on nodes of NodePool np (-1: the catalog's). */
static inline const struct resources *pool_type_alloc(const struct cluster *c, int32_t np, uint32_t t)
{
	return np >= 0 && c->nodepools[np].type_alloc ? &c->nodepools[np].type_alloc[t]
						       : &c->cat.types[t].allocatable;
}
static inline const struct resources *pool_type_capacity(const struct cluster *c, int32_t np, uint32_t t)
{
	return np >= 0 && c->nodepools[np].type_capacity ? &c->nodepools[np].type_capacity[t]
							  : &c->cat.types[t].capacity;
}
static inline const struct resources *pool_type_prefix_max(const struct cluster *c, int32_t np,
							   uint32_t t)
{
	return np >= 0 && c->nodepools[np].type_prefix_max ? &c->nodepools[np].type_prefix_max[t]
							    : &c->cat.prefix_max[t];
}
/* --preference-policy=Ignore: drops every pod's preferred node affinity,
 * preferred pod (anti-)affinity and ScheduleAnyway spread (after the
 * pods are in; before a solve). */
void cluster_ignore_preferences(struct cluster *c);
/* Sets node->nodepool from its labels and adds up each pool's usage. */
void cluster_assign_nodepools(struct cluster *c);
/* Sum of DaemonSet requests that would run on nodes of this NodePool. */
void cluster_compute_daemon_overhead(struct cluster *c);
/* Would the DaemonSet (its pod template) run on nodes of this NodePool? */
bool cluster_daemonset_runs_on(const struct cluster *c, const struct pod *ds,
			       const struct nodepool *np);
/*
 * The first host port of p that a DaemonSet running on nodes of np takes
 * there (and *ret_ds that DaemonSet), or 0: a new node of np has it taken
 * before any pod is placed, as Karpenter's NewNodeClaim starts from the
 * template's daemon HostPortUsage (kubernetes-sigs/karpenter
 * pkg/controllers/provisioning/scheduling/scheduler.go
 * getDaemonHostPortUsage).
 */
uint16_t cluster_daemon_port_conflict(const struct cluster *c, const struct nodepool *np,
				      const struct pod *p, const struct pod **ret_ds);

#endif
