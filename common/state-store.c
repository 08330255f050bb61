/*
 * The cluster-state store (see state-store.h). Objects live in one hash map
 * by key; a second map indexes bound pods by node name and is kept in step
 * on every change. Identical updates are detected with proto's equality so
 * that replicas and the wire see only real changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/state-store.h"
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

	if (obj->kind > PROTO_OBJECT_NAMESPACE || !obj->ptr)
		return -EINVAL;
	state_object_name(obj, &ns, &name);
	return state_key_of(obj->kind, ns, name, buf, size);
}

void state_store_init(struct state_store *s)
{
	*s = (struct state_store){ 0 };
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
	if (e->obj.kind <= PROTO_OBJECT_NAMESPACE)
		s->count[e->obj.kind]--;
	proto_object_free(&e->obj);
	free(e);
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
	char key[STATE_KEY_MAX];
	struct state_entry *old, *e;
	int r;

	r = state_key(obj, key, sizeof(key));
	if (r < 0)
		return r;
	old = hashmap_get(&s->objects, key);
	if (op == PROTO_DELTA_DELETE) {
		if (!old)
			return 0;
		hashmap_remove(&s->objects, key);
		entry_free(s, old);
		s->seq = MAX(s->seq, seq);
		return 1;
	}
	if (old && object_equal(&old->obj, obj))
		return 0;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	r = proto_object_dup(obj, &e->obj);
	if (r < 0) {
		free(e);
		return r;
	}
	e->seq = seq;
	if (old)
		e->generation = old->generation;
	if (e->obj.kind == PROTO_OBJECT_POD && (r = pod_index_add(s, e->obj.pod)) < 0) {
		proto_object_free(&e->obj);
		free(e);
		return r;
	}
	r = hashmap_put(&s->objects, key, e, NULL);
	if (r < 0) {
		if (e->obj.kind == PROTO_OBJECT_POD)
			pod_index_remove(s, e->obj.pod);
		proto_object_free(&e->obj);
		free(e);
		return r;
	}
	s->count[e->obj.kind]++;
	if (old)
		entry_free(s, old);
	s->seq = MAX(s->seq, seq);
	return 1;
}

const struct state_entry *state_store_get(const struct state_store *s, enum proto_object_kind kind,
					  const char *ns, const char *name)
{
	char key[STATE_KEY_MAX];

	if (state_key_of(kind, ns, name, key, sizeof(key)) < 0)
		return NULL;
	return hashmap_get(&s->objects, key);
}

const struct state_entry *state_store_next(const struct state_store *s, size_t *iter)
{
	void *v;

	return hashmap_next(&s->objects, iter, NULL, &v) ? v : NULL;
}

const struct state_pod_set *state_store_pods_on(const struct state_store *s, const char *node)
{
	return hashmap_get(&s->pods_by_node, node);
}

void state_store_clear(struct state_store *s)
{
	size_t i = 0;
	void *v;

	while (hashmap_next(&s->objects, &i, NULL, &v))
		entry_free(s, v);
	hashmap_done(&s->objects);
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
}

bool state_pod_is_unschedulable(const struct proto_pod *p)
{
	return p->phase == PROTO_PHASE_PENDING && p->scheduled == PROTO_COND_FALSE &&
	       streq_ptr(p->scheduled_reason, "Unschedulable") && (!p->node_name || !*p->node_name) &&
	       p->deletion_time == 0 && !p->daemonset_owned && !p->mirror;
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
