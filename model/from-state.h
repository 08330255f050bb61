/*
 * The daemon's way into the solver: a cluster model built from the
 * replicated cluster state (proto objects kept in step by kanna-watcher)
 * and the batch of pending pods to place. The cluster dump loader (dump/,
 * for --simulate and --what-if) decodes its YAML with the watcher's
 * decoders into the same objects and comes through here too, so offline
 * and live answers cannot differ.
 */
#ifndef KANNA_SCHEDULER_FROM_STATE_H
#define KANNA_SCHEDULER_FROM_STATE_H

#include "state/state-store.h"
#include "model/unavailable.h"
#include "model/cluster.h"

struct model_base_cache;

/* An offering the launcher found without capacity, until a time. */
struct from_state_options {
	const char *region;       /* catalog region, e.g. us-west-2 */
	const char *catalog_path; /* NULL: the shipped catalog */
	/* The launcher's published catalog (checked with catalog_proto_check());
	 * NULL: the shipped table at catalog_path. */
	const struct proto_catalog *catalog;
	const struct unavailable_offering *unavailable;
	size_t n_unavailable;
	int64_t now_ms;
	/* When set, fills the catalog instead of the one above (--simulate:
	 * its InstanceType objects, or the zones its input names), which
	 * cluster_from_state() then amends with the NodeOverlays and
	 * finalizes; returns 0 or a negative errno with err filled. */
	int (*fill_catalog)(struct catalog *cat, void *userdata, char *err, size_t errlen);
	void *userdata;
	/* Objects this process wrote moments ago that s may not show yet (the
	 * launcher's new Nodes and bindings): one here replaces the object of
	 * the same key in s. NULL: none. */
	const struct state_store *overlay;
	/*
	 * For sched_check_node() on this one Node: the Nodes, in-flight
	 * NodeClaims and bound or planned pods elsewhere are left out, unless
	 * a pending pod's hard constraints or a pod's anti-affinity could
	 * count pods beyond that Node (see counts_beyond_node()); then the
	 * whole cluster is built. Scoped, the model has no instance types.
	 * NULL: the whole cluster (sched_solve()).
	 */
	const char *scope_node;
	/*
	 * A Node's startup taints (its NodeClaim's spec.startupTaints that it
	 * still carries) count against pods like any taint: the launcher's
	 * bind check, standing in for the kube-scheduler. Otherwise they are
	 * left out, as Karpenter's scheduler leaves them out of a Node not yet
	 * initialized (StateNode.Taints(), pkg/controllers/state/statenode.go):
	 * the pods waiting for the taint to go are not planned another node.
	 */
	bool startup_taints_block;
	/* --preference-policy=Ignore: every pod's preferred node affinity,
	 * preferred pod (anti-)affinity and ScheduleAnyway spread are left
	 * out (cluster_ignore_preferences()). */
	bool ignore_preferences;
	/* The scheduler's: the catalog part is taken from (or built into) this
	 * cache (model/model-base.h) rather than loaded for this model alone.
	 * Not with fill_catalog or a scoped model. NULL: loaded here. */
	struct model_base_cache *base_cache;
	/* The NodeOverlays applied to the catalog, in precedence order
	 * (node_overlays_collect()). cluster_from_state() takes them from its
	 * store; whoever calls model_base_get() or model_catalog_load()
	 * directly passes them here. */
	const struct proto_nodeoverlay *const *node_overlays;
	size_t n_node_overlays;
};

/*
 * Builds a model of NodePools (valid ones), Nodes, NodeClaims still without
 * their Node (in flight), bound pods, DaemonSets and volumes from s, plus
 * the pending pods given. Pending pods come first in c->pods (index i is
 * pending[i]). Returns 0, or a negative errno with err filled.
 */
int cluster_from_state(const struct state_store *s, const struct proto_pod *const *pending,
		       size_t n_pending, const struct from_state_options *opts,
		       struct cluster **ret, char *err, size_t errlen);

/*
 * A NodePool's node requirements as the solver plans with them: its
 * requirements, its template labels, karpenter.sh/nodepool (and, for a
 * v1alpha5 Provisioner, karpenter.sh/provisioner-name) and Karpenter's AWS
 * default of on-demand capacity, interned into c's string table and
 * intersected into *ret (zeroed by the caller). The launcher re-checks
 * plans with it (launcher/admit-requirements.c). 0 or a negative errno.
 */
int nodepool_requirements(struct cluster *c, const struct proto_nodepool *p, struct requirements *ret);
/*
 * What an EC2NodeClass's AMI family adds to its NodePools' requirements: a
 * Windows family's nodes are kubernetes.io/os windows with its
 * node.kubernetes.io/windows-build, amd64 only (aws/karpenter-provider-aws
 * pkg/providers/instancetype/types.go getOS); *windows_build is that build
 * (interned), or STR_NONE for a Linux family (nothing added). nc may be NULL.
 */
int nodeclass_os_requirements(struct cluster *c, const struct proto_nodeclass *nc,
			      struct requirements *ret, uint32_t *windows_build);
/* Intersects the proto requirements q[0..n) into r, interned into c's table. */
int cluster_requirements_from_proto(struct cluster *c, struct requirements *r,
				    const struct proto_requirement *q, uint32_t n);

/* Is t one of the taints a Node carries while it boots and joins, which
 * no pod is refused for (Karpenter's KnownEphemeralTaints, and the
 * launcher's NoSchedule hold: from-state.c)? A Node's model leaves them out. */
bool from_state_taint_is_ephemeral(const struct proto_taint *t);

#endif
