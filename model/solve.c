/*
 * sched_solve(): sets up one solve (bins for existing nodes with their
 * bound pods, topology counts, NodePool order), runs first-fit decreasing
 * passes over the pending pods until no pass places anything more, and
 * hands the result to finish.c. Its setup (solver_setup()) is shared with
 * sched_check_node() in node-check.c, the solver's other entry point.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "model/solver-internal.h"

/* The per-NodePool type views (solver-internal.h): kubelet settings'
 * arrays where a pool has them, else contiguous copies of the catalog's. */
static int pool_views_init(struct solver *s)
{
	const struct cluster *c = s->c;
	uint32_t n = c->cat.n_types ? c->cat.n_types : 1, pools = c->n_nodepools ? c->n_nodepools : 1;

	s->cat_alloc = malloc(n * sizeof(*s->cat_alloc));
	s->cat_cap = malloc(n * sizeof(*s->cat_cap));
	s->np_alloc = malloc(pools * sizeof(*s->np_alloc));
	s->np_cap = malloc(pools * sizeof(*s->np_cap));
	s->np_prefix_max = malloc(pools * sizeof(*s->np_prefix_max));
	if (!s->cat_alloc || !s->cat_cap || !s->np_alloc || !s->np_cap || !s->np_prefix_max)
		return -ENOMEM;
	for (uint32_t t = 0; t < c->cat.n_types; t++) {
		s->cat_alloc[t] = c->cat.types[t].allocatable;
		s->cat_cap[t] = c->cat.types[t].capacity;
	}
	for (uint32_t p = 0; p < c->n_nodepools; p++) {
		const struct nodepool *np = &c->nodepools[p];
		s->np_alloc[p] = np->type_alloc ? np->type_alloc : s->cat_alloc;
		s->np_cap[p] = np->type_capacity ? np->type_capacity : s->cat_cap;
		s->np_prefix_max[p] = np->type_prefix_max ? np->type_prefix_max : c->cat.prefix_max;
	}
	return 0;
}

static int solver_init(struct solver *s, struct cluster *c)
{
	int r;

	memset(s, 0, sizeof(*s));
	s->c = c;
	s->st = &c->st;
	s->cat = &c->cat;
	s->words = c->cat.words ? c->cat.words : 1;
	s->n_res = c->cat.n_resources;
	s->pod_bin = malloc((c->n_pods ? c->n_pods : 1) * sizeof(*s->pod_bin));
	s->reasons = calloc(c->n_pods ? c->n_pods : 1, sizeof(*s->reasons));
	s->np_order = malloc((c->n_nodepools ? c->n_nodepools : 1) * sizeof(*s->np_order));
	s->np_reserved = calloc(c->n_nodepools ? c->n_nodepools : 1, sizeof(*s->np_reserved));
	s->np_claims = calloc(c->n_nodepools ? c->n_nodepools : 1, sizeof(*s->np_claims));
	s->scratch = calloc(SCHED_MAX_TYPE_WORDS, 8);
	s->scratch2 = calloc(SCHED_MAX_TYPE_WORDS, 8);
	s->keybuf = malloc(shape_keybuf_size());
	if (!s->pod_bin || !s->reasons || !s->np_order || !s->np_reserved || !s->np_claims ||
	    !s->scratch || !s->scratch2 || !s->keybuf)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->n_pods; i++)
		s->pod_bin[i] = -1;
	s->last_pod = -1;
	if ((r = pool_views_init(s)) < 0)
		return r;
	return topology_init(s);
}

void solver_done(struct solver *s)
{
	for (uint32_t i = 0; i < s->n_bins; i++) {
		requirements_free(&s->bins[i].reqs);
		free(s->bins[i].cands);
		free(s->bins[i].pods);
		free(s->bins[i].ports);
	}
	free(s->bins);
	for (uint32_t i = 0; i < s->cap_shapes; i++)
		shape_free(s->shapes[i], s->c->n_nodepools);
	free(s->shapes);
	topology_done(s);
	for (uint32_t i = 0; s->reasons && i < s->c->n_pods; i++)
		free(s->reasons[i]);
	free(s->reasons);
	free(s->pod_bin);
	free(s->np_order);
	free(s->np_reserved);
	free(s->np_claims);
	free(s->np_alloc);
	free(s->np_cap);
	free(s->np_prefix_max);
	free(s->cat_alloc);
	free(s->cat_cap);
	free(s->scratch);
	free(s->scratch2);
	free(s->keybuf);
	free(s->under_price);
	free(s->deferred);
	np_reasons_done(&s->np_reasons);
	for (uint32_t i = 0; i < s->n_price_cache; i++)
		free(s->price_cache[i].prices);
}

static int np_cmp(const void *a, const void *b, void *userdata)
{
	const struct cluster *sort_cluster = userdata;
	const struct nodepool *x = &sort_cluster->nodepools[*(const uint32_t *)a];
	const struct nodepool *y = &sort_cluster->nodepools[*(const uint32_t *)b];

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return strcmp(strtab_str(&sort_cluster->st, x->name), strtab_str(&sort_cluster->st, y->name));
}

struct pod_key {
	int64_t cpu, memory;
	uint32_t pod;
};

static int pod_key_cmp(const void *a, const void *b)
{
	const struct pod_key *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu > y->cpu ? -1 : 1;
	if (x->memory != y->memory)
		return x->memory > y->memory ? -1 : 1;
	return 0;
}

/* cpu, then memory, descending. */
static inline bool key_before(const struct pod_key *a, const struct pod_key *b)
{
	if (a->cpu != b->cpu)
		return a->cpu > b->cpu;
	return a->memory > b->memory;
}

/*
 * Sorts pods by size, descending, keeping pod order among equal sizes:
 * pods are bucketed by (cpu, memory) with a hash table — a batch has few
 * distinct sizes — then the buckets are sorted and emitted in order.
 * O(pods + sizes × log sizes).
 */
static int pod_keys_sort(struct pod_key *v, uint32_t n, uint32_t *order)
{
	uint32_t cap = 16, n_b = 0;
	while (cap < n * 2)
		cap *= 2;
	uint32_t *slot = malloc(cap * sizeof(*slot));       /* bucket + 1, 0 empty */
	struct pod_key *bk = malloc((n ? n : 1) * sizeof(*bk)); /* bucket key, .pod = count */
	uint32_t *of = malloc((n ? n : 1) * sizeof(*of));     /* bucket of each pod */
	int r = -ENOMEM;

	if (!slot || !bk || !of)
		goto out;
	memset(slot, 0, cap * sizeof(*slot));
	for (uint32_t i = 0; i < n; i++) {
		uint64_t h = ((uint64_t)v[i].cpu * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)v[i].memory * 0xc2b2ae3d27d4eb4fULL);
		uint32_t j = (uint32_t)(h >> 32) & (cap - 1);
		while (slot[j] && (bk[slot[j] - 1].cpu != v[i].cpu || bk[slot[j] - 1].memory != v[i].memory))
			j = (j + 1) & (cap - 1);
		if (!slot[j]) {
			bk[n_b] = (struct pod_key){ v[i].cpu, v[i].memory, 0 };
			slot[j] = ++n_b;
		}
		of[i] = slot[j] - 1;
		bk[of[i]].pod++;
	}
	/* Sort bucket indexes by size (insertion sort is fine for a few sizes). */
	uint32_t *idx = slot; /* reuse: cap >= n_b */
	for (uint32_t b = 0; b < n_b; b++) {
		uint32_t j = b;
		if (n_b > 64)
			idx[j] = b;
		else {
			for (; j > 0 && key_before(&bk[b], &bk[idx[j - 1]]); j--)
				idx[j] = idx[j - 1];
			idx[j] = b;
		}
	}
	if (n_b > 64) {
		/* Many sizes: sort (size, bucket) pairs with qsort. */
		struct pod_key *tmp = malloc(n_b * sizeof(*tmp));
		if (!tmp)
			goto out;
		for (uint32_t b = 0; b < n_b; b++)
			tmp[b] = (struct pod_key){ bk[b].cpu, bk[b].memory, b };
		qsort(tmp, n_b, sizeof(*tmp), pod_key_cmp);
		for (uint32_t b = 0; b < n_b; b++)
			idx[b] = tmp[b].pod;
		free(tmp);
	}
	/* Prefix offsets, then a stable scatter. */
	uint32_t off = 0;
	for (uint32_t b = 0; b < n_b; b++) {
		uint32_t cnt = bk[idx[b]].pod;
		bk[idx[b]].pod = off;
		off += cnt;
	}
	for (uint32_t i = 0; i < n; i++)
		order[bk[of[i]].pod++] = v[i].pod;
	r = 0;
out:
	free(slot);
	free(bk);
	free(of);
	return r;
}

static int bin_reserve(struct bin *b)
{
	if (b->n_pods == b->cap_pods) {
		uint32_t cap = b->cap_pods ? b->cap_pods * 2 : 8;
		uint32_t *v = realloc(b->pods, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->pods = v;
		b->cap_pods = cap;
	}
	return 0;
}

/* Existing nodes become the first bins, holding their bound pods. */
static int add_nodes(struct solver *s)
{
	struct cluster *c = s->c;

	for (uint32_t n = 0; n < c->n_nodes; n++) {
		if (s->n_bins == s->cap_bins) {
			uint32_t cap = s->cap_bins ? s->cap_bins * 2 : 64;
			struct bin *v = realloc(s->bins, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			s->bins = v;
			s->cap_bins = cap;
		}
		struct bin *b = &s->bins[s->n_bins++];
		memset(b, 0, sizeof(*b));
		b->node = (int32_t)n;
		b->nodepool = c->nodes[n].nodepool;
		b->max_alloc = c->nodes[n].allocatable;
		if (topology_grow_bins(s) < 0)
			return -ENOMEM;
	}
	return 0;
}

static bool node_named(const struct node *n, uint32_t name)
{
	return n->name == name || (n->in_flight && n->launched_as == name);
}

/* Bound pods occupy their nodes: requests, host ports, topology counts. */
static int bind_existing_pods(struct solver *s)
{
	struct cluster *c = s->c;
	/* Node name → index, so that binding pods costs O(pods). */
	uint32_t cap = 16;
	while (cap < c->n_nodes * 4)
		cap *= 2;
	uint32_t *slot = malloc(cap * sizeof(*slot)); /* index + 1, 0 empty */
	if (!slot)
		return -ENOMEM;
	memset(slot, 0, cap * sizeof(*slot));
	for (uint32_t n = 0; n < c->n_nodes; n++)
		for (int alias = 0; alias < 2; alias++) {
			/* An in-flight NodeClaim is also known by the Node name it
			 * reported (pods bound before the Node object arrived). */
			uint32_t name = alias ? c->nodes[n].launched_as : c->nodes[n].name, h;
			if (name == STR_NONE || (alias && !c->nodes[n].in_flight))
				continue;
			for (h = (name * 2654435761u) & (cap - 1); slot[h] && !node_named(&c->nodes[slot[h] - 1], name);)
				h = (h + 1) & (cap - 1);
			if (!slot[h])
				slot[h] = n + 1;
		}
	for (uint32_t p = 0; p < c->n_pods; p++) {
		const struct pod *pod = &c->pods[p];
		uint32_t h, n;
		if (pod->node == STR_NONE)
			continue;
		for (h = (pod->node * 2654435761u) & (cap - 1); slot[h] && !node_named(&c->nodes[slot[h] - 1], pod->node);)
			h = (h + 1) & (cap - 1);
		if (!slot[h])
			continue; /* bound to a node not in the input: uses nothing we know */
		n = slot[h] - 1;
		struct bin *b = &s->bins[n];
		if (bin_reserve(b) < 0) {
			free(slot);
			return -ENOMEM;
		}
		b->pods[b->n_pods++] = p;
		for (uint32_t i = 0; i < pod->n_host_ports; i++) {
			uint16_t *v = realloc(b->ports, (b->n_ports + 1) * sizeof(*v));
			if (!v) {
				free(slot);
				return -ENOMEM;
			}
			b->ports = v;
			b->ports[b->n_ports++] = pod->host_ports[i];
			b->cap_ports = b->n_ports;
		}
		resources_add(&b->used, &pod->req, s->n_res);
		s->pod_bin[p] = (int32_t)n;
		if (topology_record(s, p, n) < 0) {
			free(slot);
			return -ENOMEM;
		}
	}
	free(slot);
	return 0;
}

/*
 * A negative request is invalid input: the API server refuses it and the
 * watcher does not publish it, but packed it would make room that is not
 * there (a -30 cpu pod once pulled eight 4-cpu pods onto a 7.91-cpu node).
 * A pending pod with one is never placed, with the reason; elsewhere (a
 * pod bound or planned to a node, a DaemonSet) a negative request counts
 * as nothing, so that it never frees capacity.
 */
static int refuse_negative_requests(struct solver *s)
{
	struct cluster *c = s->c;
	bool daemonsets = false;
	char what[128], why[192];

	for (uint32_t p = 0; p < c->n_pods; p++) {
		struct pod *pod = &c->pods[p];

		for (uint32_t r = 0; r < s->n_res; r++) {
			if (pod->req.v[r] >= 0)
				continue;
			if (pod->node == STR_NONE && !pod->invalid) {
				resource_text(s, r, pod->req.v[r], what, sizeof(what));
				snprintf(why, sizeof(why), "invalid request of %s: requests must not be negative",
					 what);
				pod->invalid = arena_strdup(&c->arena, why);
				if (!pod->invalid)
					return -ENOMEM;
			}
			pod->req.v[r] = 0;
		}
	}
	for (uint32_t d = 0; d < c->n_daemonsets; d++)
		for (uint32_t r = 0; r < s->n_res; r++)
			if (c->daemonsets[d].req.v[r] < 0) {
				c->daemonsets[d].req.v[r] = 0;
				daemonsets = true;
			}
	if (daemonsets)
		cluster_compute_daemon_overhead(c);
	return 0;
}

int solver_setup(struct solver *s, struct cluster *c)
{
	int r = solver_init(s, c);

	if (r >= 0)
		r = refuse_negative_requests(s);
	if (r >= 0)
		r = add_nodes(s);
	if (r >= 0)
		r = bind_existing_pods(s);
	return r;
}

/* The clock is read every this many placements (a placement is a few
 * microseconds; reading the clock for each cost ~2% of a 20k-pod solve). */
#define SOLVE_CLOCK_EVERY 32

/* Deadline passed or cancelled? Checked between pods, so a solve overruns
 * its deadline by at most SOLVE_CLOCK_EVERY placements. */
static bool solve_should_stop(const struct sched_options *o, uint32_t placed)
{
	if (o->cancel && atomic_load_explicit(o->cancel, memory_order_relaxed))
		return true;
	return o->deadline_usec && placed % SOLVE_CLOCK_EVERY == 0 &&
	       clock_monotonic_usec() >= o->deadline_usec;
}

/* The pods still queued when the solve stopped: not tried, not unschedulable. */
static int solve_defer(struct solver *s, const uint32_t *queued, uint32_t n)
{
	s->deferred = calloc(s->c->n_pods ? s->c->n_pods : 1, 1);
	if (!s->deferred)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		s->deferred[queued[i]] = 1;
	s->n_deferred = n;
	return 0;
}

/* With a price cap: the types that have some offering cheaper than it. */
static int solve_price_filter(struct solver *s)
{
	if (s->opts.max_new_price <= 0)
		return 0;
	s->under_price = calloc(s->words, 8);
	if (!s->under_price)
		return -ENOMEM;
	for (uint32_t t = 0; t < s->cat->n_types; t++)
	{
		double price = catalog_type_price(s->cat, t, UINT64_MAX, ~0u);
		if (price >= 0 && price < s->opts.max_new_price)
			bit_set(s->under_price, t);
	}
	return 0;
}

int sched_solve(struct cluster *c, struct sched_result **ret)
{
	static const struct sched_options none;

	return sched_solve_with(c, &none, ret);
}

int sched_solve_with(struct cluster *c, const struct sched_options *o, struct sched_result **ret)
{
	struct solver s;
	uint32_t *order = NULL, n = 0;
	int r;

	r = solver_setup(&s, c);
	s.opts = *o;
	if (r >= 0)
		r = solve_price_filter(&s);
	if (r < 0)
		goto out;
	for (uint32_t i = 0; i < c->n_nodepools; i++)
		s.np_order[i] = i;
	qsort_r(s.np_order, c->n_nodepools, sizeof(uint32_t), np_cmp, c);
	order = malloc((c->n_pods ? c->n_pods : 1) * sizeof(*order));
	if (!order) {
		r = -ENOMEM;
		goto out;
	}
	struct pod_key *keys = malloc((c->n_pods ? c->n_pods : 1) * sizeof(*keys));
	if (!keys) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < c->n_pods; i++)
		if (c->pods[i].node == STR_NONE && !c->pods[i].invalid)
			keys[n++] = (struct pod_key){ c->pods[i].req.v[RES_CPU], c->pods[i].req.v[RES_MEMORY], i };
	r = pod_keys_sort(keys, n, order);
	free(keys);
	/* Pods a hostname self-affinity binds together go at their largest's
	 * turn, one after the other (host-group.c). */
	if (r >= 0)
		r = host_groups_order(&s, order, n);
	if (r < 0)
		goto out;
	/* Pass after pass, as Karpenter's queue does: a pod that failed may fit
	 * once others are placed (pod affinity); stop when a pass places none. */
	uint32_t tried = 0;
	for (bool progress = true; progress && n;) {
		uint32_t left = 0;
		progress = false;
		for (uint32_t i = 0; i < n; i++) {
			if (solve_should_stop(&s.opts, tried++)) {
				/* order[0..left) failed this pass, order[i..n) wait. */
				memmove(order + left, order + i, (n - i) * sizeof(*order));
				r = solve_defer(&s, order, left + (n - i));
				if (r < 0)
					goto out;
				n = 0;
				break;
			}
			r = solver_place(&s, order[i]);
			if (r < 0)
				goto out;
			if (r)
				progress = true;
			else
				order[left++] = order[i];
		}
		if (n)
			n = left;
	}
	r = finish_result(&s, ret);
out:
	free(order);
	solver_done(&s);
	return r;
}
