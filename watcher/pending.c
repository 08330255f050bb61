/*
 * Pending pods → scheduler shards (see pending.h). Grouping is a union-find
 * over the pending pods: pods of one controller start in one group; a pod
 * whose affinity or spread selector matches a group's pods (by that
 * group's first pod's labels, as pods of one controller share them) joins
 * it. The group's root key is hashed to pick the shard.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"
#include "common/log.h"
#include "model/match.h"
#include "watcher/pending.h"

struct pending_router {
	struct sock **shards;
	unsigned n_shards;
	struct pending_stats stats;
};

int pending_router_new(struct pending_router **ret, struct sock_ctx *ctx, struct msg_io *io,
		       unsigned n_shards)
{
	struct pending_router *pr = calloc(1, sizeof(*pr));
	char name[64];
	int r;

	if (!pr)
		return -ENOMEM;
	pr->n_shards = n_shards ? n_shards : 1;
	pr->shards = calloc(pr->n_shards, sizeof(*pr->shards));
	if (!pr->shards) {
		free(pr);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < pr->n_shards; i++) {
		snprintf(name, sizeof(name), ENDPOINT_PENDING_PREFIX ".%u", i);
		if ((r = sock_new(&pr->shards[i], ctx, ZMQ_PUSH, name)) < 0 ||
		    (r = msg_hello_on_connect(io, pr->shards[i], pr->n_shards)) < 0 ||
		    (r = sock_admit(pr->shards[i], ENDPOINT_PENDING_PEERS)) < 0 ||
		    (r = sock_bind(pr->shards[i], name)) < 0) {
			pending_router_free(pr);
			return r;
		}
	}
	*ret = pr;
	return 0;
}

struct pending_router *pending_router_free(struct pending_router *pr)
{
	if (!pr)
		return NULL;
	for (unsigned i = 0; i < pr->n_shards; i++)
		sock_free(pr->shards[i]);
	free(pr->shards);
	free(pr);
	return NULL;
}


/* Does sel select pod p (by its template's labels)? */
static bool selector_matches(const struct proto_label_selector *sel, const struct proto_pod *p)
{
	const struct proto_pod_template *t = proto_pod_template_of(p);

	return label_selector_matches(sel, t->labels, t->n_labels);
}

/* Does any selector of a (spread, affinity, anti-affinity) select b? */
static bool pod_selects(const struct proto_pod *pa, const struct proto_pod *b)
{
	const struct proto_pod_template *a = proto_pod_template_of(pa);

	if (!streq(pa->ns, b->ns))
		return false; /* terms with explicit namespaces: scheduler's concern */
	for (uint32_t i = 0; i < a->n_topology_spread; i++)
		if (selector_matches(&a->topology_spread[i].selector, b))
			return true;
#define TERMS(list, get)                                                              \
	for (uint32_t i = 0; i < a->n_##list; i++)                                    \
		if (selector_matches(&a->list[i] get.selector, b))                    \
			return true;
	TERMS(pod_affinity_required, )
	TERMS(pod_anti_affinity_required, )
	TERMS(pod_affinity_preferred, .term)
	TERMS(pod_anti_affinity_preferred, .term)
#undef TERMS
	return false;
}

static bool pod_has_selectors(const struct proto_pod *pod)
{
	const struct proto_pod_template *p = proto_pod_template_of(pod);

	return p->n_topology_spread || p->n_pod_affinity_required || p->n_pod_anti_affinity_required ||
	       p->n_pod_affinity_preferred || p->n_pod_anti_affinity_preferred;
}

static size_t uf_find(size_t *parent, size_t i)
{
	while (parent[i] != i) {
		parent[i] = parent[parent[i]];
		i = parent[i];
	}
	return i;
}

static const char *group_key(const struct proto_pod *p)
{
	const struct proto_pod_template *t = proto_pod_template_of(p);

	for (uint32_t i = 0; i < t->n_owner_refs; i++)
		if (t->owner_refs[i].controller && t->owner_refs[i].uid)
			return t->owner_refs[i].uid;
	return p->uid;
}

int pending_assign_shards(const struct proto_pod *const *pods, size_t n, unsigned n_shards,
			  unsigned *out)
{
	size_t *parent = calloc(n + 1, sizeof(size_t)), *reps = calloc(n + 1, sizeof(size_t));
	struct hashmap by_owner = { 0 };
	size_t n_reps = 0;
	int r = 0;

	if (!parent || !reps) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		void *first;
		parent[i] = i;
		first = hashmap_get(&by_owner, group_key(pods[i]));
		if (first) {
			parent[i] = (size_t)(uintptr_t)first - 1;
			continue;
		}
		if ((r = hashmap_put(&by_owner, group_key(pods[i]), (void *)(uintptr_t)(i + 1), NULL)) < 0)
			goto out;
		reps[n_reps++] = i;
	}
	/* Join groups whose pods select one another: O(groups²), groups ≈ controllers. */
	for (size_t a = 0; a < n_reps; a++) {
		const struct proto_pod *pa = pods[reps[a]];
		if (!pod_has_selectors(pa))
			continue;
		for (size_t b = 0; b < n_reps; b++) {
			if (a == b || !pod_selects(pa, pods[reps[b]]))
				continue;
			size_t ra = uf_find(parent, reps[a]), rb = uf_find(parent, reps[b]);
			if (ra != rb)
				parent[MAX(ra, rb)] = MIN(ra, rb);
		}
	}
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned)(hashmap_hash(group_key(pods[uf_find(parent, i)])) %
				    (n_shards ? n_shards : 1));
out:
	hashmap_done(&by_owner);
	free(parent);
	free(reps);
	return r;
}

/* Keys ("ns/name") of pods planned for NodeClaims that still speak for them
 * (state_nodeclaim_holds_planned_pods: launching, joining, or Ready for less
 * than the grace period; not deleted, not failed). */
static int planned_pods(const struct state_store *s, int64_t now_ms, struct hashmap *planned)
{
	const struct state_entry *e;
	size_t it = 0;
	int r;

	while ((e = state_store_next(s, &it))) {
		const struct proto_nodeclaim *nc;
		if (e->obj.kind != PROTO_OBJECT_NODECLAIM)
			continue;
		nc = e->obj.nodeclaim;
		if (!state_nodeclaim_holds_planned_pods(nc, now_ms))
			continue;
		for (uint32_t i = 0; i < nc->n_planned_pods; i++)
			if ((r = hashmap_put(planned, nc->planned_pods[i], (void *)1, NULL)) < 0)
				return r;
	}
	return 0;
}

int pending_collect(const struct state_store *s, int64_t now_ms, const struct proto_pod ***ret,
		    size_t *n_ret)
{
	struct hashmap planned = { 0 };
	const struct proto_pod **pods = NULL;
	const struct state_entry *e;
	size_t n = 0, cap = 0, it = 0;
	char key[2 * PROTO_MAX_NAME_LEN + 2];
	int r;

	if ((r = planned_pods(s, now_ms, &planned)) < 0)
		goto out;
	while ((e = state_store_next(s, &it))) {
		const struct proto_pod *p;
		if (e->obj.kind != PROTO_OBJECT_POD || !state_pod_is_unschedulable(e->obj.pod))
			continue;
		p = e->obj.pod;
		snprintf(key, sizeof(key), "%s/%s", p->ns, p->name);
		if (hashmap_get(&planned, key))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			const struct proto_pod **np = realloc(pods, ncap * sizeof(*np));
			if (!np) {
				r = -ENOMEM;
				goto out;
			}
			pods = np;
			cap = ncap;
		}
		pods[n++] = p;
	}
	*ret = pods;
	*n_ret = n;
	pods = NULL;
	r = 0;
out:
	hashmap_done(&planned);
	free(pods);
	return r;
}

static int send_shard(struct pending_router *pr, struct msg_io *io, unsigned shard,
		      struct proto_pod *pods, size_t n, uint64_t state_seq)
{
	for (size_t off = 0; off < n; off += PROTO_MAX_PENDING_PODS) {
		struct proto_msg m = { .env.type = PROTO_MSG_PENDING_PODS };
		size_t k = MIN(n - off, (size_t)PROTO_MAX_PENDING_PODS);
		int r;

		m.body.pending_pods.shard = shard;
		m.body.pending_pods.n_shards = pr->n_shards;
		m.body.pending_pods.state_seq = state_seq;
		m.body.pending_pods.pods = pods + off;
		m.body.pending_pods.n_pods = (uint32_t)k;
		r = msg_send(io, pr->shards[shard], &m, ZMQ_DONTWAIT);
		if (r < 0) {
			/* No scheduler on this shard yet, or it is behind: next announce. */
			pr->stats.send_failures++;
			return r == -EAGAIN ? 0 : r;
		}
		pr->stats.pods_sent += k;
	}
	return 0;
}

int pending_router_announce(struct pending_router *pr, struct msg_io *io,
			    const struct state_store *s, uint64_t state_seq, int64_t now_ms)
{
	const struct proto_pod **pods = NULL;
	struct proto_pod *by_shard = NULL;
	unsigned *shard = NULL;
	size_t n = 0, *counts = NULL;
	int r;

	if ((r = pending_collect(s, now_ms, &pods, &n)) < 0)
		goto out;
	shard = calloc(n + 1, sizeof(*shard));
	by_shard = calloc(n + 1, sizeof(*by_shard));
	counts = calloc(pr->n_shards + 1, sizeof(*counts));
	if (!shard || !by_shard || !counts) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = pending_assign_shards(pods, n, pr->n_shards, shard)) < 0)
		goto out;
	pr->stats.announcements++;
	pr->stats.last_pending = n;
	/* Lay pods out shard by shard so each shard's batch is contiguous. */
	for (unsigned sh = 0, at = 0; sh < pr->n_shards; sh++) {
		size_t start = at;
		for (size_t i = 0; i < n; i++)
			if (shard[i] == sh)
				by_shard[at++] = *pods[i];
		counts[sh] = at - start;
		if (counts[sh] > 0 && (r = send_shard(pr, io, sh, by_shard + start, counts[sh],
						      state_seq)) < 0)
			goto out;
	}
	r = 0;
out:
	free(pods);
	free(shard);
	free(by_shard);
	free(counts);
	return r;
}

int pending_router_announce_now(struct pending_router *pr, struct msg_io *io,
				const struct state_store *s, char *const *keys, size_t n_keys,
				uint64_t state_seq, int64_t now_ms)
{
	struct proto_pod *pods;
	size_t n = 0;
	int r;

	if (pr->n_shards > 1)
		return pending_router_announce(pr, io, s, state_seq, now_ms);
	pods = calloc(n_keys + 1, sizeof(*pods));
	if (!pods)
		return -ENOMEM;
	for (size_t i = 0; i < n_keys; i++) {
		const char *slash = strchr(keys[i], '/');
		char ns[PROTO_MAX_NAME_LEN + 1];
		const struct state_entry *e;

		if (!slash || (size_t)(slash - keys[i]) > PROTO_MAX_NAME_LEN)
			continue;
		memcpy(ns, keys[i], (size_t)(slash - keys[i]));
		ns[slash - keys[i]] = '\0';
		e = state_store_get(s, PROTO_OBJECT_POD, ns, slash + 1);
		if (e && state_pod_is_unschedulable(e->obj.pod))
			pods[n++] = *e->obj.pod;
	}
	r = n ? send_shard(pr, io, 0, pods, n, state_seq) : 0;
	free(pods);
	return r;
}

void pending_router_get_stats(const struct pending_router *pr, struct pending_stats *ret)
{
	*ret = pr->stats;
}
