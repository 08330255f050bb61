/*
 * Cluster state as every kanna process holds it: compact proto objects by
 * kind/namespace/name, each with the sequence number of its last change
 * (the ZeroMQ guide's Clone pattern). The watcher owns the authoritative
 * store and numbers the changes; replicas in other processes apply the same
 * changes in order. Objects are copies owned by the store, read-only: the
 * strings and arrays that objects repeat (namespaces, node names, labels,
 * requests) are stored once and shared (proto_object_dup_shared()).
 */
#ifndef KANNA_COMMON_STATE_STORE_H
#define KANNA_COMMON_STATE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/hashmap.h"
#include "proto/proto.h"

/* "pod/default/inflate-1", "node//ip-10-0-0-1": kind/namespace/name. */
#define STATE_KEY_MAX (PROTO_MAX_NAME_LEN * 2 + 32)

struct state_entry {
	struct proto_object obj;
	uint64_t seq;        /* sequence number of the last change */
	/* The watcher's mark and sweep (informer.c), a bit per informer:
	 * which informers published this object, and which of them found it
	 * again in their current LIST. Kept across updates. 16 bits: the
	 * entry, hash included, is 32 bytes (100,000 of them in a replica). */
	uint16_t owners, listed;
	uint32_t hash; /* the store's: low bits of its index hash */
};

/* kind/namespace/name → entry: open addressing over the entries, which
 * hold their names, so the index copies no key (8 bytes a slot). */
struct state_index {
	struct state_entry **slots;
	size_t cap;      /* power of two, or 0 */
	size_t n;        /* entries */
	size_t used;     /* entries and tombstones */
	uint64_t layout; /* changes when entries move to other slots */
};

struct state_store {
	struct state_index objects;
	struct hashmap pods_by_node; /* node name → struct state_pod_set * */
	/* Strings and arrays the objects share (proto_object_dup_shared()):
	 * one entry is one block, its struct and the strings naming it. */
	struct proto_share *share;
	uint64_t seq;                /* last change applied */
	uint64_t count[PROTO_OBJECT_NODEOVERLAY + 1];
};

/* The pods bound to one node (an index the reaper and scheduler need). */
struct state_pod_set {
	const struct proto_pod **pods;
	uint32_t n, cap;
};

int state_key(const struct proto_object *obj, char *buf, size_t size);
/* The same key from its parts (ns "" or NULL for cluster-scoped kinds). */
int state_key_of(enum proto_object_kind kind, const char *ns, const char *name, char *buf,
		 size_t size);
/* Namespace and name of any object (ns "" for cluster-scoped). */
void state_object_name(const struct proto_object *obj, const char **ns, const char **name);

void state_store_init(struct state_store *s);
void state_store_done(struct state_store *s);
/* Makes s share its values with other's (a replica's incoming snapshot
 * with its live store): values both hold are stored once. s is empty. */
int state_store_share_with(struct state_store *s, struct state_store *other);

/*
 * Stores a copy of obj (add/update) or drops it (delete) as change `seq`.
 * Returns 1 when the store changed, 0 when the change was a no-op (same
 * object, or deleting what is absent), negative errno on failure.
 */
int state_store_apply(struct state_store *s, enum proto_delta_op op,
		      const struct proto_object *obj, uint64_t seq);
const struct state_entry *state_store_get(const struct state_store *s, enum proto_object_kind kind,
					  const char *ns, const char *name);
/* The same by key ("pod/default/inflate-1"). */
const struct state_entry *state_store_get_key(const struct state_store *s, const char *key);
/* The entry of obj's key, for its owner's marks (owners, listed) only. */
struct state_entry *state_store_find(struct state_store *s, const struct proto_object *obj);
/* Iterate: for (size_t i = 0; (e = state_store_next(s, &i)); ). Between
 * calls the store may change: an entry that stays is still visited once
 * unless objects.layout changes meanwhile (then start again at 0). */
const struct state_entry *state_store_next(const struct state_store *s, size_t *iter);
const struct state_pod_set *state_store_pods_on(const struct state_store *s, const char *node);
/* Removes everything (a replica about to load a snapshot). */
void state_store_clear(struct state_store *s);

/*
 * A pod kanna should find capacity for: the Kubernetes scheduler marked it
 * PodScheduled=False/Unschedulable, it is unbound, alive, and neither a
 * DaemonSet's nor a mirror pod. (Whether an in-flight NodeClaim already has
 * it planned is the watcher's separate check.)
 */
bool state_pod_is_unschedulable(const struct proto_pod *p);

/*
 * How long a NodeClaim that turned Ready keeps speaking for its planned
 * pods (the kanna.dev/planned-pods annotation) that are still unbound. The
 * launcher binds them as it creates the Node, and its reconcile pass (every
 * 10 s by default) binds any it missed: three such periods leave room for
 * replica lag on a busy host. A pod still unbound after that did not fit
 * (or kube-scheduler put it elsewhere, or its binding was refused): it is
 * pending again and gets planned anew, as Karpenter's pod nominations
 * expire (its nomination window is 2 x the batch max duration, 20 s).
 */
#define STATE_NOMINATION_GRACE_MS (30LL * 1000)

/*
 * Does this NodeClaim still speak for its planned pods (DESIGN §2 rule 4)?
 * Yes while it is launching and while its Node joins; no once it is being
 * deleted, its launch failed (Launched=False), or it has been Ready for
 * STATE_NOMINATION_GRACE_MS (a Ready condition without a time counts as
 * long Ready). now_ms: wall-clock milliseconds, as conditions carry.
 * The watcher withholds such pods from the schedulers and the scheduler
 * counts them against the NodeClaim's free capacity, with this one rule.
 */
bool state_nodeclaim_holds_planned_pods(const struct proto_nodeclaim *nc, int64_t now_ms);

/* A planned pod that still needs its place: unbound, alive, not finished. */
bool state_pod_awaits_binding(const struct proto_pod *p);

#endif
