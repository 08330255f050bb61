/*
 * The check before each bind (see bind-check.h): a cluster model scoped to
 * the one Node (from_state_options.scope_node), with the launcher's recent
 * writes laid over the replica, asked with sched_check_node(); and the
 * book of those recent writes. Called by launch-node.c and reconcile.c;
 * writes nothing to the API server.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/bind-check.h"
#include "model/from-state.h"
#include "model/solver.h"

/* The Node's index in the model (a Node, not an in-flight NodeClaim), or -1. */
static int32_t node_index(const struct cluster *c, const char *name)
{
	uint32_t id = strtab_lookup(&c->st, name);

	for (uint32_t i = 0; id != STR_NONE && i < c->n_nodes; i++)
		if (c->nodes[i].name == id && !c->nodes[i].in_flight)
			return (int32_t)i;
	return -1;
}

int bind_check(const struct bind_check_input *in, const struct proto_pod *const *pods, size_t n,
	       struct sched_node_fit *ret, char *err, size_t errlen)
{
	struct from_state_options fo = { .region = in->region, .catalog = in->catalog,
					 .now_ms = in->now_ms, .overlay = in->recent,
					 .scope_node = in->node, .startup_taints_block = true };
	struct cluster *c = NULL;
	uint32_t *idx = NULL;
	int32_t node;
	int r;

	err[0] = '\0';
	if (n == 0)
		return 0;
	if (n > UINT32_MAX)
		return -E2BIG;
	r = cluster_from_state(in->replica, pods, n, &fo, &c, err, errlen);
	if (r < 0)
		return r;
	node = node_index(c, in->node);
	idx = malloc(n * sizeof(*idx));
	if (node < 0) {
		snprintf(err, errlen, "Node %s is not known yet", in->node);
		r = -ENOENT;
	} else if (!idx) {
		r = -ENOMEM;
	} else {
		/* cluster_from_state() puts the pending pods first, in order. */
		for (size_t i = 0; i < n; i++)
			idx[i] = (uint32_t)i;
		r = sched_check_node(c, (uint32_t)node, idx, (uint32_t)n, ret);
		if (r < 0)
			snprintf(err, errlen, "Failed to check the pods against node %s: %s", in->node,
				 strerror(-r));
	}
	free(idx);
	cluster_free(c);
	return r;
}

bool bind_pod_has_unbound_claim(const struct state_store *replica, const struct proto_pod *p)
{
	const struct proto_pod_template *t = proto_pod_template_of(p);

	for (uint32_t i = 0; t && i < t->n_pvc_names; i++) {
		const struct state_entry *e = state_store_get(replica, PROTO_OBJECT_PVC, p->ns, t->pvc_names[i]);

		if (!e || !e->obj.pvc->volume_name || !*e->obj.pvc->volume_name)
			return true;
	}
	return false;
}

bool bind_claim_has_waiting_pods(const struct state_store *replica, const struct state_store *recent,
				 const struct proto_nodeclaim *nc, int64_t now_ms)
{
	if (!state_nodeclaim_holds_planned_pods(nc, now_ms))
		return false;
	for (uint32_t i = 0; i < nc->n_planned_pods; i++) {
		const char *key = nc->planned_pods[i], *slash = strchr(key, '/');
		char ns[PROTO_MAX_NAME_LEN + 1];
		const struct state_entry *e;

		if (!slash || (size_t)(slash - key) >= sizeof(ns))
			continue;
		memcpy(ns, key, (size_t)(slash - key));
		ns[slash - key] = 0;
		e = state_store_get(replica, PROTO_OBJECT_POD, ns, slash + 1);
		if (e && state_pod_is_unschedulable(e->obj.pod) && !bind_recent_has_pod(recent, ns, slash + 1) &&
		    !bind_pod_has_unbound_claim(replica, e->obj.pod))
			return true;
	}
	return false;
}

/* ---- what this launcher wrote moments ago ------------------------------------ */

int bind_recent_note_pod(struct state_store *recent, const struct proto_pod *pod, const char *node,
			 uint64_t now_ms)
{
	struct proto_pod bound = *pod;

	bound.node_name = (char *)node;
	return state_store_apply(recent, PROTO_DELTA_ADD,
				 &(struct proto_object){ .kind = PROTO_OBJECT_POD, .pod = &bound }, now_ms);
}

/* Does node carry every one of labels[0..n), with the same values? */
static bool node_has_labels(const struct proto_node *node, const struct proto_kv *labels, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		bool found = false;

		for (uint32_t k = 0; k < node->n_labels && !found; k++)
			found = streq(node->labels[k].key, labels[i].key) &&
				streq_ptr(node->labels[k].value, labels[i].value);
		if (!found)
			return false;
	}
	return true;
}

/* Does the replica show node with the labels we gave it? Before then it
 * shows none, or an earlier version: the kubelet's registration, which
 * carries the well-known labels but not the NodePool's. */
static bool replica_shows_node(const struct state_store *replica, const struct proto_node *node)
{
	const struct state_entry *e = state_store_get(replica, PROTO_OBJECT_NODE, "", node->name);

	return e && node_has_labels(e->obj.node, node->labels, node->n_labels);
}

int bind_recent_note_node(struct state_store *recent, const struct state_store *replica,
			  const struct proto_node *node, uint64_t now_ms)
{
	if (replica_shows_node(replica, node))
		return 0;
	return state_store_apply(recent, PROTO_DELTA_ADD,
				 &(struct proto_object){ .kind = PROTO_OBJECT_NODE,
							 .node = (struct proto_node *)node },
				 now_ms);
}

/* Deletes kind ns/name from s (names copied first: they may be the entry's). */
static void forget(struct state_store *s, enum proto_object_kind kind, const char *ns,
		   const char *name)
{
	char n[PROTO_MAX_NAME_LEN + 1], m[PROTO_MAX_NAME_LEN + 1];
	struct proto_pod pod = { .ns = n, .name = m };
	struct proto_node node = { .name = m };

	snprintf(n, sizeof(n), "%s", ns ? ns : "");
	snprintf(m, sizeof(m), "%s", name);
	(void)state_store_apply(s, PROTO_DELTA_DELETE,
				kind == PROTO_OBJECT_POD
					? &(struct proto_object){ .kind = kind, .pod = &pod }
					: &(struct proto_object){ .kind = kind, .node = &node },
				0);
}

void bind_recent_forget_pod(struct state_store *recent, const char *ns, const char *name)
{
	forget(recent, PROTO_OBJECT_POD, ns, name);
}

bool bind_recent_has_pod(const struct state_store *recent, const char *ns, const char *name)
{
	return recent && state_store_get(recent, PROTO_OBJECT_POD, ns, name) != NULL;
}

void bind_recent_purge(struct state_store *recent, const struct state_store *replica, uint64_t now_ms)
{
	const struct state_entry *e, *now;
	size_t it = 0;

	/* Deleting leaves a tombstone in its slot: the walk goes on unmoved. */
	while ((e = state_store_next(recent, &it))) {
		bool drop = now_ms - e->seq > (uint64_t)BIND_RECENT_KEEP_MS;

		if (e->obj.kind == PROTO_OBJECT_POD) {
			now = state_store_get(replica, PROTO_OBJECT_POD, e->obj.pod->ns, e->obj.pod->name);
			drop |= !now || (now->obj.pod->node_name && *now->obj.pod->node_name);
			if (drop)
				forget(recent, PROTO_OBJECT_POD, e->obj.pod->ns, e->obj.pod->name);
		} else if (e->obj.kind == PROTO_OBJECT_NODE) {
			drop |= replica_shows_node(replica, e->obj.node);
			if (drop)
				forget(recent, PROTO_OBJECT_NODE, "", e->obj.node->name);
		}
	}
}
