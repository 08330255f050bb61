/*
 * The cluster-state store (see state-store.h). Each entry is one block:
 * the entry, then the object as proto_object_dup_shared() lays it out.
 * An open-addressing index over the entries finds them by kind, namespace
 * and name (no key strings kept: 100,000 keys and their slots cost ~12 MB
 * in a string-keyed map); deletes leave tombstones, so entries keep their
 * slots until the index is rebuilt, and a walk by slot (a snapshot being
 * sent) misses nothing that stays. A second map indexes bound pods by node name and
 * is kept in step on every change. Identical updates are detected with
 * proto's equality so that replicas and the wire see only real changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/state-store.h"
#include "common/util.h"

void state_object_name(const struct proto_object *o, const char **ns, const char **name)
{
	*ns = "";
	*name = "";
	switch (o->kind) {
	case PROTO_OBJECT_POD: *ns = o->pod->ns; *name = o->pod->name; break;
	case PROTO_OBJECT_NODE: *name = o->node->name; break;
	case PROTO_OBJECT_NODEPOOL: *name = o->nodepool->name; break;
	case PROTO_OBJECT_NODECLAIM: *name = o->nodeclaim->name; break;
	case PROTO_OBJECT_NODECLASS: *name = o->nodeclass->name; break;
	case PROTO_OBJECT_PDB: *ns = o->pdb->ns; *name = o->pdb->name; break;
	case PROTO_OBJECT_PVC: *ns = o->pvc->ns; *name = o->pvc->name; break;
	case PROTO_OBJECT_PV: *name = o->pv->name; break;
	case PROTO_OBJECT_STORAGECLASS: *name = o->storageclass->name; break;
	case PROTO_OBJECT_DAEMONSET: *ns = o->daemonset->ns; *name = o->daemonset->name; break;
	case PROTO_OBJECT_NAMESPACE: *name = o->namespace->name; break;
	case PROTO_OBJECT_NODEOVERLAY: *name = o->nodeoverlay->name; break;
	}
	if (!*ns)
		*ns = "";
	if (!*name)
		*name = "";
}

int state_key_of(enum proto_object_kind kind, const char *ns, const char *name, char *buf,
		 size_t size)
{
	int n = snprintf(buf, size, "%s/%s/%s", proto_object_kind_name(kind), ns ? ns : "", name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int state_key(const struct proto_object *obj, char *buf, size_t size)
{
	const char *ns, *name;

	if (obj->kind > PROTO_OBJECT_NODEOVERLAY || !obj->ptr)
		return -EINVAL;
	state_object_name(obj, &ns, &name);
	return state_key_of(obj->kind, ns, name, buf, size);
}

#define STATE_INDEX_MIN_CAP 16

static uint64_t hash_more(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

/*
 * hashmap_hash() of the object's key string ("pod/default/inflate-1"),
 * from its parts: finding by key and by parts agree whatever the names
 * hold. The hash, the probing and the growth are the string-keyed map's
 * that the store used before, so iteration visits objects in the same
 * order as it did (the scheduler's first fit over existing nodes follows
 * it, and its scenario tests were written against it).
 */
static uint64_t index_hash(enum proto_object_kind kind, const char *ns, const char *name)
{
	uint64_t h = hash_more(14695981039346656037ULL, proto_object_kind_name(kind));

	h = hash_more((h ^ '/') * 1099511628211ULL, ns);
	return hash_more((h ^ '/') * 1099511628211ULL, name);
}

/* Whether key is "<part>/" followed by the rest, which *rest then points to. */
static bool key_part(const char **key, const char *part, bool last)
{
	size_t n = strlen(part);

	if (strncmp(*key, part, n) != 0)
		return false;
	*key += n;
	if (last)
		return **key == '\0';
	if (**key != '/')
		return false;
	(*key)++;
	return true;
}

static bool entry_has_key(const struct state_entry *e, const char *key)
{
	const char *ns, *name;

	state_object_name(&e->obj, &ns, &name);
	return key_part(&key, proto_object_kind_name(e->obj.kind), false) &&
	       key_part(&key, ns, false) && key_part(&key, name, true);
}

static bool entry_is(const struct state_entry *e, enum proto_object_kind kind, const char *ns,
		     const char *name)
{
	const char *ens, *ename;

	if (e->obj.kind != kind)
		return false;
	state_object_name(&e->obj, &ens, &ename);
	return streq(ens, ns) && streq(ename, name);
}

/* A deleted entry's slot: probes go on past it, inserts may reuse it, and
 * no entry moves (see state_store_next()). */
static char tombstone_marker;
#define TOMBSTONE ((struct state_entry *)&tombstone_marker)

static bool slot_live(const struct state_entry *e)
{
	return e && e != TOMBSTONE;
}

/*
 * The slot holding kind/ns/name (or key, when given), or -1 when there is
 * none; then *free_slot (when given) is where it would go: the first
 * tombstone on the way, else the empty slot that ended the probe.
 */
static ssize_t index_find(const struct state_index *ix, enum proto_object_kind kind, const char *ns,
			  const char *name, const char *key, uint64_t h, size_t *free_slot)
{
	size_t mask = ix->cap - 1, j;
	ssize_t first_free = -1;

	for (j = h & mask; ix->slots[j]; j = (j + 1) & mask) {
		const struct state_entry *e = ix->slots[j];
		if (e == TOMBSTONE) {
			if (first_free < 0)
				first_free = (ssize_t)j;
			continue;
		}
		if (e->hash == (uint32_t)h &&
		    (key ? entry_has_key(e, key) : entry_is(e, kind, ns, name)))
			return (ssize_t)j;
	}
	if (free_slot)
		*free_slot = first_free >= 0 ? (size_t)first_free : j;
	return -1;
}

static int index_grow(struct state_index *ix)
{
	size_t cap = ix->cap ? ix->cap * 2 : STATE_INDEX_MIN_CAP;
	struct state_entry **slots;

	/* As the old map: double only when entries need it, else rehash
	 * away the tombstones. */
	if (ix->cap && ix->n * 2 < ix->cap)
		cap = ix->cap;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < ix->cap; i++) {
		struct state_entry *e = ix->slots[i];
		size_t j;
		if (!slot_live(e))
			continue;
		for (j = e->hash & (cap - 1); slots[j]; j = (j + 1) & (cap - 1))
			;
		slots[j] = e;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->cap = cap;
	ix->used = ix->n;
	ix->layout++;
	return 0;
}

void state_store_init(struct state_store *s)
{
	*s = (struct state_store){ 0 };
}

int state_store_share_with(struct state_store *s, struct state_store *other)
{
	int r;

	if (!other->share && (r = proto_share_new(&other->share)) < 0)
		return r;
	proto_share_unref(s->share);
	s->share = proto_share_ref(other->share);
	return 0;
}

static void pod_index_remove(struct state_store *s, const struct proto_pod *p)
{
	struct state_pod_set *set;

	if (!p->node_name || !(set = hashmap_get(&s->pods_by_node, p->node_name)))
		return;
	for (uint32_t i = 0; i < set->n; i++)
		if (set->pods[i] == p) {
			set->pods[i] = set->pods[--set->n];
			break;
		}
	if (set->n == 0) {
		hashmap_remove(&s->pods_by_node, p->node_name);
		free(set->pods);
		free(set);
	}
}

static int pod_index_add(struct state_store *s, const struct proto_pod *p)
{
	struct state_pod_set *set;
	int r;

	if (!p->node_name || !*p->node_name)
		return 0;
	set = hashmap_get(&s->pods_by_node, p->node_name);
	if (!set) {
		set = calloc(1, sizeof(*set));
		if (!set)
			return -ENOMEM;
		r = hashmap_put(&s->pods_by_node, p->node_name, set, NULL);
		if (r < 0) {
			free(set);
			return r;
		}
	}
	if (set->n == set->cap) {
		uint32_t cap = set->cap ? set->cap * 2 : 8;
		const struct proto_pod **n = realloc(set->pods, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		set->pods = n;
		set->cap = cap;
	}
	set->pods[set->n++] = p;
	return 0;
}

static void entry_free(struct state_store *s, struct state_entry *e)
{
	if (e->obj.kind == PROTO_OBJECT_POD)
		pod_index_remove(s, e->obj.pod);
	if (e->obj.kind <= PROTO_OBJECT_NODEOVERLAY)
		s->count[e->obj.kind]--;
	proto_object_free_shared(s->share, e, &e->obj);
}

static bool object_equal(const struct proto_object *a, const struct proto_object *b)
{
	struct proto_msg ma = { .env.type = PROTO_MSG_SNAPSHOT_ITEM };
	struct proto_msg mb = { .env.type = PROTO_MSG_SNAPSHOT_ITEM };

	/* proto's deep equality works on messages: wrap both objects alike. */
	ma.body.snapshot_item.object = *a;
	mb.body.snapshot_item.object = *b;
	return proto_msg_equal(&ma, &mb);
}

int state_store_apply(struct state_store *s, enum proto_delta_op op,
		      const struct proto_object *obj, uint64_t seq)
{
	struct state_index *ix = &s->objects;
	const char *ns, *name;
	struct state_entry *old, *se;
	struct proto_object copy;
	void *block;
	uint64_t h;
	size_t slot;
	ssize_t at;
	int r;

	if (obj->kind > PROTO_OBJECT_NODEOVERLAY || !obj->ptr)
		return -EINVAL;
	state_object_name(obj, &ns, &name);
	h = index_hash(obj->kind, ns, name);
	if ((ix->used + 1) * 10 >= ix->cap * 7 && (r = index_grow(ix)) < 0)
		return r;
	at = index_find(ix, obj->kind, ns, name, NULL, h, &slot);
	old = at >= 0 ? ix->slots[at] : NULL;
	if (at >= 0)
		slot = (size_t)at;
	if (op == PROTO_DELTA_DELETE) {
		if (!old)
			return 0;
		ix->slots[slot] = TOMBSTONE;
		ix->n--;
		entry_free(s, old);
		s->seq = MAX(s->seq, seq);
		return 1;
	}
	if (old && object_equal(&old->obj, obj))
		return 0;
	if (!s->share && (r = proto_share_new(&s->share)) < 0)
		return r;
	r = proto_object_dup_shared(s->share, obj, sizeof(*se), &block, &copy);
	if (r < 0)
		return r;
	se = block;
	/* Slots never number 2^32: the hash's low bits suffice. */
	*se = (struct state_entry){ .obj = copy, .seq = seq, .hash = (uint32_t)h };
	if (old) {
		se->owners = old->owners;
		se->listed = old->listed;
	}
	if (copy.kind == PROTO_OBJECT_POD && (r = pod_index_add(s, copy.pod)) < 0) {
		proto_object_free_shared(s->share, block, &copy);
		return r;
	}
	if (!old) {
		ix->used += ix->slots[slot] == NULL;
		ix->n++;
	}
	ix->slots[slot] = se;
	s->count[copy.kind]++;
	if (old)
		entry_free(s, old);
	s->seq = MAX(s->seq, seq);
	return 1;
}

const struct state_entry *state_store_get(const struct state_store *s, enum proto_object_kind kind,
					  const char *ns, const char *name)
{
	const struct state_index *ix = &s->objects;

	if (!ix->cap)
		return NULL;
	ssize_t at;

	if (!ns)
		ns = "";
	at = index_find(ix, kind, ns, name, NULL, index_hash(kind, ns, name), NULL);
	return at >= 0 ? ix->slots[at] : NULL;
}

struct state_entry *state_store_find(struct state_store *s, const struct proto_object *obj)
{
	const char *ns, *name;

	if (obj->kind > PROTO_OBJECT_NODEOVERLAY || !obj->ptr)
		return NULL;
	state_object_name(obj, &ns, &name);
	return (struct state_entry *)state_store_get(s, obj->kind, ns, name);
}

const struct state_entry *state_store_get_key(const struct state_store *s, const char *key)
{
	const struct state_index *ix = &s->objects;
	ssize_t at;

	if (!ix->cap)
		return NULL;
	at = index_find(ix, 0, NULL, NULL, key, hash_more(14695981039346656037ULL, key), NULL);
	return at >= 0 ? ix->slots[at] : NULL;
}

const struct state_entry *state_store_next(const struct state_store *s, size_t *iter)
{
	for (; *iter < s->objects.cap; (*iter)++)
		if (slot_live(s->objects.slots[*iter]))
			return s->objects.slots[(*iter)++];
	return NULL;
}

const struct state_pod_set *state_store_pods_on(const struct state_store *s, const char *node)
{
	return hashmap_get(&s->pods_by_node, node);
}

void state_store_clear(struct state_store *s)
{
	size_t i = 0;
	void *v;

	for (i = 0; i < s->objects.cap; i++)
		if (slot_live(s->objects.slots[i]))
			entry_free(s, s->objects.slots[i]);
	free(s->objects.slots);
	s->objects = (struct state_index){ .layout = s->objects.layout + 1 };
	i = 0;
	while (hashmap_next(&s->pods_by_node, &i, NULL, &v)) {
		struct state_pod_set *set = v;
		free(set->pods);
		free(set);
	}
	hashmap_done(&s->pods_by_node);
	memset(s->count, 0, sizeof(s->count));
	s->seq = 0;
}

void state_store_done(struct state_store *s)
{
	state_store_clear(s);
	s->share = proto_share_unref(s->share);
}

bool state_pod_is_unschedulable(const struct proto_pod *p)
{
	return p->phase == PROTO_PHASE_PENDING && p->scheduled == PROTO_COND_FALSE &&
	       streq_ptr(p->scheduled_reason, "Unschedulable") && (!p->node_name || !*p->node_name) &&
	       p->deletion_time == 0 && !proto_pod_template_of(p)->daemonset_owned && !p->mirror;
}

static const struct proto_condition *nodeclaim_condition(const struct proto_nodeclaim *nc,
							 const char *type)
{
	for (uint32_t i = 0; i < nc->n_conditions; i++)
		if (streq_ptr(nc->conditions[i].type, type))
			return &nc->conditions[i];
	return NULL;
}

bool state_nodeclaim_holds_planned_pods(const struct proto_nodeclaim *nc, int64_t now_ms)
{
	const struct proto_condition *launched = nodeclaim_condition(nc, "Launched");
	const struct proto_condition *ready = nodeclaim_condition(nc, "Ready");

	if (nc->deletion_time)
		return false; /* failing or going away: its pods need a new plan */
	if (launched && launched->status == PROTO_COND_FALSE)
		return false;
	if (ready && ready->status == PROTO_COND_TRUE)
		return ready->last_transition > 0 &&
		       now_ms - ready->last_transition < STATE_NOMINATION_GRACE_MS;
	return true;
}

bool state_pod_awaits_binding(const struct proto_pod *p)
{
	return (!p->node_name || !*p->node_name) && p->deletion_time == 0 &&
	       p->phase != PROTO_PHASE_SUCCEEDED && p->phase != PROTO_PHASE_FAILED;
}
