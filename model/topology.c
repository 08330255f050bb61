/*
 * Topology spread and pod (anti-)affinity for one solve: counts of matching
 * pods per domain (zone, capacity type, any label) and per bin (hostname),
 * the per-pod allowed domain sets, hostname checks and the choice of the
 * domain a NodeClaim is pinned to. Mirrors Karpenter's topology.go: a pod
 * is counted once its bin's domain is decided, so NodeClaims are pinned to
 * one domain of every key a placed pod is counted or constrained on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/solver-internal.h"

/* Distinct values a topology key may take that we consider as domains. */
#define TOPO_MAX_DOMAINS 256

/* Groups indexed by one (key, value) their selector requires, so that a
 * pod is tested only against groups that can select it. */
struct group_index {
	uint64_t *keys;      /* key << 32 | value; 0 = empty slot (ids are < 2^32 - 1) */
	uint32_t *start, *count;
	uint32_t cap;
	uint32_t *ids;       /* group ids, bucket after bucket */
	uint32_t *unindexed; /* groups without an In requirement: tried on every pod */
	uint32_t n_unindexed;
};

static uint64_t gi_key(uint32_t key, uint32_t value)
{
	return ((uint64_t)key << 32 | value) + 1;
}

static uint32_t gi_slot(const struct group_index *gi, uint64_t k)
{
	uint32_t h = (uint32_t)((k * 0x9e3779b97f4a7c15ULL) >> 32) & (gi->cap - 1);

	while (gi->keys[h] && gi->keys[h] != k)
		h = (h + 1) & (gi->cap - 1);
	return h;
}

static const struct requirement *anchor(const struct topo_group *g)
{
	for (uint32_t i = 0; i < g->selector.n; i++)
		if (!g->selector.v[i].complement && g->selector.v[i].n_values)
			return &g->selector.v[i];
	return NULL;
}

static void group_index_free(struct group_index *gi)
{
	free(gi->keys);
	free(gi->start);
	free(gi->count);
	free(gi->ids);
	free(gi->unindexed);
}

static int group_index_build(const struct cluster *c, struct group_index *gi)
{
	uint32_t n_entries = 0, off = 0;

	for (uint32_t g = 0; g < c->n_groups; g++) {
		const struct requirement *a = anchor(&c->groups[g]);
		n_entries += a ? a->n_values : 0;
	}
	gi->cap = 16;
	while (gi->cap < n_entries * 2)
		gi->cap *= 2;
	gi->keys = calloc(gi->cap, sizeof(*gi->keys));
	gi->start = calloc(gi->cap, sizeof(*gi->start));
	gi->count = calloc(gi->cap, sizeof(*gi->count));
	gi->ids = malloc((n_entries ? n_entries : 1) * sizeof(*gi->ids));
	gi->unindexed = malloc((c->n_groups ? c->n_groups : 1) * sizeof(*gi->unindexed));
	if (!gi->keys || !gi->start || !gi->count || !gi->ids || !gi->unindexed)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t g = 0; g < c->n_groups; g++) {
			const struct requirement *a = anchor(&c->groups[g]);
			if (!a) {
				if (pass)
					gi->unindexed[gi->n_unindexed++] = g;
				continue;
			}
			for (uint32_t v = 0; v < a->n_values; v++) {
				uint64_t k = gi_key(a->key, a->values[v]);
				uint32_t h = gi_slot(gi, k);
				gi->keys[h] = k;
				if (pass)
					gi->ids[gi->start[h] + gi->count[h]++] = g;
				else
					gi->count[h]++;
			}
		}
		if (pass)
			break;
		for (uint32_t h = 0; h < gi->cap; h++) {
			gi->start[h] = off;
			off += gi->count[h];
			gi->count[h] = 0;
		}
	}
	return 0;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The groups that count pod p, ascending. */
static int pod_matches_compute(struct solver *s, const struct group_index *gi, uint32_t p,
			       uint32_t *buf)
{
	const struct cluster *c = s->c;
	const struct pod *pod = &c->pods[p];
	uint32_t n = 0;

	for (uint32_t i = 0; i < gi->n_unindexed; i++)
		if (topo_group_selects(c, &c->groups[gi->unindexed[i]], pod))
			buf[n++] = gi->unindexed[i];
	for (uint32_t l = 0; l < pod->n_labels; l++) {
		uint32_t h = gi_slot(gi, gi_key(pod->labels[l].key, pod->labels[l].value));
		if (!gi->keys[h])
			continue;
		for (uint32_t i = 0; i < gi->count[h]; i++) {
			uint32_t g = gi->ids[gi->start[h] + i];
			if (topo_group_selects(c, &c->groups[g], pod))
				buf[n++] = g;
		}
	}
	if (!n)
		return 0;
	if (n > 1)
		qsort(buf, n, sizeof(*buf), u32_cmp);
	s->matched[p] = malloc(n * sizeof(*buf));
	if (!s->matched[p])
		return -ENOMEM;
	memcpy(s->matched[p], buf, n * sizeof(*buf));
	s->n_matched[p] = n;
	return 0;
}

int topology_init(struct solver *s)
{
	struct cluster *c = s->c;
	struct group_index gi = { 0 };
	uint32_t *buf;
	int r = 0;

	s->gs = calloc(c->n_groups ? c->n_groups : 1, sizeof(*s->gs));
	s->matched = calloc(c->n_pods ? c->n_pods : 1, sizeof(*s->matched));
	s->n_matched = calloc(c->n_pods ? c->n_pods : 1, sizeof(*s->n_matched));
	if (!s->gs || !s->matched || !s->n_matched)
		return -ENOMEM;
	/* Zones (capacity types) where some NodePool has an offering. */
	for (uint32_t i = 0; i < c->n_nodepools; i++) {
		uint64_t zones = catalog_zone_mask(s->cat, &c->nodepools[i].reqs);
		unsigned cts = catalog_ct_mask(&c->nodepools[i].reqs, s->st);
		catalog_filter_pool(s->cat, &c->nodepools[i].reqs, c->nodepools[i].windows_build != STR_NONE,
				    s->scratch);
		for (uint32_t z = 0; z < s->cat->n_zones; z++)
			for (unsigned ct = 0; ct < CT_N; ct++) {
				if (!(zones >> z & 1) || !(cts >> ct & 1))
					continue;
				memcpy(s->scratch2, s->scratch, s->words * 8);
				bits_and(s->scratch2, s->cat->offer[z * CT_N + ct], s->words);
				if (bits_any(s->scratch2, s->words)) {
					s->pool_zones |= 1ULL << z;
					s->pool_cts |= 1u << ct;
				}
			}
	}
	if (!c->n_groups)
		return 0;
	buf = malloc(c->n_groups * sizeof(*buf));
	r = buf ? group_index_build(c, &gi) : -ENOMEM;
	for (uint32_t p = 0; r >= 0 && p < c->n_pods; p++)
		r = pod_matches_compute(s, &gi, p, buf);
	free(buf);
	group_index_free(&gi);
	return r;
}

void topology_done(struct solver *s)
{
	for (uint32_t g = 0; s->gs && g < s->c->n_groups; g++) {
		free(s->gs[g].dom);
		free(s->gs[g].count);
		free(s->gs[g].owners);
		free(s->gs[g].bin_count);
		free(s->gs[g].bin_owners);
		free(s->gs[g].hit_bins);
		free(s->gs[g].static_dom);
	}
	free(s->gs);
	for (uint32_t p = 0; s->matched && p < s->c->n_pods; p++)
		free(s->matched[p]);
	free(s->matched);
	free(s->n_matched);
}

int topology_grow_bins(struct solver *s)
{
	for (uint32_t g = 0; g < s->c->n_groups; g++) {
		struct group_state *gs = &s->gs[g];
		uint32_t cap;

		if (s->c->groups[g].key != K_HOSTNAME || gs->cap_bins > s->n_bins)
			continue;
		cap = gs->cap_bins ? gs->cap_bins * 2 : 64;
		while (cap <= s->n_bins)
			cap *= 2;
		uint32_t *a = realloc(gs->bin_count, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		gs->bin_count = a;
		uint32_t *b = realloc(gs->bin_owners, cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		gs->bin_owners = b;
		memset(a + gs->cap_bins, 0, (cap - gs->cap_bins) * sizeof(*a));
		memset(b + gs->cap_bins, 0, (cap - gs->cap_bins) * sizeof(*b));
		gs->cap_bins = cap;
	}
	return 0;
}

static bool pod_matches(const struct solver *s, uint32_t pi, uint32_t g)
{
	for (uint32_t i = 0; i < s->n_matched[pi]; i++)
		if (s->matched[pi][i] == g)
			return true;
	return false;
}

static int32_t dom_find(const struct group_state *gs, uint32_t v)
{
	for (uint32_t i = 0; i < gs->n_dom; i++)
		if (gs->dom[i] == v)
			return (int32_t)i;
	return -1;
}

static uint32_t dom_count(const struct group_state *gs, uint32_t v, bool owners)
{
	int32_t i = dom_find(gs, v);

	return i < 0 ? 0 : owners ? gs->owners[i] : gs->count[i];
}

static int dom_bump(struct group_state *gs, uint32_t v, bool owner)
{
	int32_t i = dom_find(gs, v);

	if (i < 0) {
		if (gs->n_dom == gs->cap_dom) {
			uint32_t cap = gs->cap_dom ? gs->cap_dom * 2 : 8;
			uint32_t *d = realloc(gs->dom, cap * sizeof(*d));
			if (!d)
				return -ENOMEM;
			gs->dom = d;
			uint32_t *c = realloc(gs->count, cap * sizeof(*c));
			if (!c)
				return -ENOMEM;
			gs->count = c;
			uint32_t *o = realloc(gs->owners, cap * sizeof(*o));
			if (!o)
				return -ENOMEM;
			gs->owners = o;
			gs->cap_dom = cap;
		}
		i = (int32_t)gs->n_dom++;
		gs->dom[i] = v;
		gs->count[i] = gs->owners[i] = 0;
	}
	if (owner)
		gs->owners[i]++;
	else
		gs->count[i]++;
	return 0;
}

uint32_t bin_domain(const struct solver *s, uint32_t b, uint32_t key)
{
	const struct bin *bin = &s->bins[b];
	const struct requirement *r;

	if (bin->node >= 0) {
		const struct node *n = &s->c->nodes[bin->node];
		return labels_get(n->labels, n->n_labels, key);
	}
	if (key == K_ZONE)
		return __builtin_popcountll(bin->zones) == 1 ? s->cat->zones[__builtin_ctzll(bin->zones)]
							     : STR_NONE;
	if (key == K_CAPACITY_TYPE)
		return bin->cts == 1u << CT_SPOT ? V_SPOT : bin->cts == 1u << CT_ON_DEMAND ? V_ON_DEMAND : STR_NONE;
	r = requirements_get(&bin->reqs, key);
	return r && !r->complement && r->n_values == 1 ? r->values[0] : STR_NONE;
}

static void add_domain(uint32_t *d, uint32_t *n, uint32_t v)
{
	for (uint32_t i = 0; i < *n; i++)
		if (d[i] == v)
			return;
	if (*n < TOPO_MAX_DOMAINS)
		d[(*n)++] = v;
}

/* The domains new capacity or existing nodes offer for the group's key:
 * what NodePools can launch into (Karpenter builds them from every
 * NodePool's requirements and offerings) plus existing nodes' labels.
 * Computed once per group and solve. */
static int static_domains(struct solver *s, uint32_t g)
{
	const struct cluster *c = s->c;
	struct group_state *gs = &s->gs[g];
	uint32_t key = c->groups[g].key, d[TOPO_MAX_DOMAINS], n = 0;

	if (gs->static_done)
		return 0;
	if (key == K_ZONE) {
		for (uint32_t z = 0; z < s->cat->n_zones; z++)
			if (s->pool_zones >> z & 1)
				add_domain(d, &n, s->cat->zones[z]);
	} else if (key == K_CAPACITY_TYPE) {
		if (s->pool_cts & 1u << CT_SPOT)
			add_domain(d, &n, V_SPOT);
		if (s->pool_cts & 1u << CT_ON_DEMAND)
			add_domain(d, &n, V_ON_DEMAND);
	} else {
		for (uint32_t p = 0; p < c->n_nodepools; p++) {
			const struct requirement *q = requirements_get(&c->nodepools[p].reqs, key);
			for (uint32_t i = 0; q && !q->complement && i < q->n_values; i++)
				add_domain(d, &n, q->values[i]);
		}
	}
	for (uint32_t i = 0; i < c->n_nodes; i++) {
		uint32_t v = labels_get(c->nodes[i].labels, c->nodes[i].n_labels, key);
		if (v != STR_NONE)
			add_domain(d, &n, v);
	}
	gs->static_dom = malloc((n ? n : 1) * sizeof(*gs->static_dom));
	if (!gs->static_dom)
		return -ENOMEM;
	memcpy(gs->static_dom, d, n * sizeof(*d));
	gs->n_static = n;
	gs->static_done = true;
	return 0;
}

/* The domains a pod with these requirements could land in, for key. */
static uint32_t domains(struct solver *s, const struct requirements *reqs, uint32_t g,
			uint32_t *d)
{
	const struct group_state *gs = &s->gs[g];
	const struct requirement *r = requirements_get(reqs, s->c->groups[g].key);
	uint32_t n = 0, k = 0;

	memcpy(d, gs->static_dom, gs->n_static * sizeof(*d));
	n = gs->n_static;
	for (uint32_t i = 0; i < gs->n_dom; i++)
		add_domain(d, &n, gs->dom[i]);
	/* Only domains the pod's own node selection allows (nodeAffinityPolicy: Honor). */
	for (uint32_t i = 0; i < n; i++)
		if (!r || requirement_allows(r, s->st, d[i]))
			d[k++] = d[i];
	return k;
}

static int allowed_for_group(struct solver *s, uint32_t pi, const struct shape *sh, uint32_t g,
			     struct requirements *dyn, char *reason, size_t size)
{
	const struct topo_group *tg = &s->c->groups[g];
	const struct group_state *gs = &s->gs[g];
	uint32_t d[TOPO_MAX_DOMAINS], ok[TOPO_MAX_DOMAINS], n, k = 0;
	uint32_t self = pod_matches(s, pi, g), min = UINT32_MAX;
	const char *key = strtab_str(s->st, tg->key);
	int r = static_domains(s, g);

	if (r < 0)
		return r;
	n = domains(s, &sh->reqs, g, d);
	switch (tg->kind) {
	case TOPO_SPREAD:
		for (uint32_t i = 0; i < n; i++)
			min = MIN(min, dom_count(gs, d[i], false));
		if (n < (uint32_t)tg->min_domains || min == UINT32_MAX)
			min = 0;
		for (uint32_t i = 0; i < n; i++)
			if (dom_count(gs, d[i], false) + self - min <= (uint32_t)tg->max_skew)
				ok[k++] = d[i];
		if (!k)
			snprintf(reason, size, "would violate topology spread on %s (maxSkew %d)", key,
				 tg->max_skew);
		break;
	case TOPO_AFFINITY:
		for (uint32_t i = 0; i < n; i++)
			if (dom_count(gs, d[i], false) > 0 || (gs->total == 0 && self))
				ok[k++] = d[i];
		if (!k)
			snprintf(reason, size, "no pod matching its pod affinity on %s", key);
		break;
	case TOPO_ANTI_AFFINITY:
		for (uint32_t i = 0; i < n; i++)
			if (dom_count(gs, d[i], false) == 0)
				ok[k++] = d[i];
		if (!k)
			snprintf(reason, size, "pod anti-affinity on %s excludes every domain", key);
		break;
	}
	if (!k)
		return 0;
	r = requirements_add(dyn, s->st, tg->key, REQ_IN, ok, k, 0);
	return r < 0 ? r : 1;
}

int topology_allowed(struct solver *s, uint32_t pi, const struct shape *sh,
		     struct requirements *dyn, char *reason, size_t size)
{
	int r;

	for (uint32_t i = 0; i < sh->n_topo; i++) {
		uint32_t g = sh->topo[i];
		if (s->c->groups[g].key == K_HOSTNAME)
			continue;
		r = allowed_for_group(s, pi, sh, g, dyn, reason, size);
		if (r <= 0)
			return r;
	}
	/* Inverse anti-affinity: stay out of domains whose pods repel us. */
	for (uint32_t i = 0; i < s->n_matched[pi]; i++) {
		uint32_t g = s->matched[pi][i], ex[TOPO_MAX_DOMAINS], k = 0;
		const struct group_state *gs = &s->gs[g];

		if (s->c->groups[g].kind != TOPO_ANTI_AFFINITY || s->c->groups[g].key == K_HOSTNAME)
			continue;
		for (uint32_t j = 0; j < gs->n_dom && k < TOPO_MAX_DOMAINS; j++)
			if (gs->owners[j])
				ex[k++] = gs->dom[j];
		if (k && (r = requirements_add(dyn, s->st, s->c->groups[g].key, REQ_NOT_IN, ex, k, 0)) < 0)
			return r;
		const struct requirement *q = requirements_get(dyn, s->c->groups[g].key);
		if (q && requirement_is_empty(q)) {
			snprintf(reason, size, "a pod's anti-affinity on %s excludes every domain",
				 strtab_str(s->st, s->c->groups[g].key));
			return 0;
		}
	}
	return 1;
}

bool topology_host_ok(struct solver *s, uint32_t pi, const struct shape *sh, uint32_t b,
		      char *why, size_t size)
{
	const char *what = NULL;

	for (uint32_t i = 0; i < sh->n_topo && !what; i++) {
		uint32_t g = sh->topo[i];
		const struct topo_group *tg = &s->c->groups[g];
		const struct group_state *gs = &s->gs[g];
		uint32_t cnt;

		if (tg->key != K_HOSTNAME)
			continue;
		cnt = b < s->n_bins ? gs->bin_count[b] : 0;
		switch (tg->kind) {
		case TOPO_SPREAD:
			/* A new node is always a hostname domain with 0 pods: min is 0. */
			if (cnt + pod_matches(s, pi, g) > (uint32_t)tg->max_skew)
				what = "would violate its topology spread";
			break;
		case TOPO_AFFINITY:
			if (gs->total == 0 ? !pod_matches(s, pi, g) : cnt == 0)
				what = "has no pod its pod affinity asks for";
			break;
		case TOPO_ANTI_AFFINITY:
			if (cnt)
				what = "already runs a pod its pod anti-affinity excludes";
			break;
		}
	}
	for (uint32_t i = 0; b < s->n_bins && i < s->n_matched[pi] && !what; i++) {
		uint32_t g = s->matched[pi][i];
		if (s->c->groups[g].kind == TOPO_ANTI_AFFINITY && s->c->groups[g].key == K_HOSTNAME &&
		    s->gs[g].bin_owners[b])
			what = "runs a pod whose pod anti-affinity excludes this one";
	}
	if (what && why)
		snprintf(why, size, "node %s %s (on %s)",
			 b < s->n_bins && s->bins[b].node >= 0
				 ? strtab_str(s->st, s->c->nodes[s->bins[b].node].name) : "(new)",
			 what, strtab_str(s->st, K_HOSTNAME));
	return !what;
}

uint32_t topology_pick(struct solver *s, uint32_t pi, uint32_t key, const uint32_t *cands,
		       uint32_t n)
{
	for (uint32_t i = 0; i < s->n_matched[pi]; i++) {
		uint32_t g = s->matched[pi][i], best = cands[0], best_n = UINT32_MAX;
		if (s->c->groups[g].key != key || s->c->groups[g].kind != TOPO_SPREAD)
			continue;
		for (uint32_t j = 0; j < n; j++) {
			uint32_t cnt = dom_count(&s->gs[g], cands[j], false);
			if (cnt < best_n) {
				best_n = cnt;
				best = cands[j];
			}
		}
		return best;
	}
	return cands[0];
}

int topology_record(struct solver *s, uint32_t pi, uint32_t b)
{
	const struct pod *p = &s->c->pods[pi];
	int r;

	for (uint32_t i = 0; i < s->n_matched[pi]; i++) {
		uint32_t g = s->matched[pi][i], key = s->c->groups[g].key, d;
		struct group_state *gs = &s->gs[g];

		gs->total++;
		if (key == K_HOSTNAME && gs->bin_count[b]++ == 0) {
			if (gs->n_hit == gs->cap_hit) {
				uint32_t cap = gs->cap_hit ? gs->cap_hit * 2 : 16;
				uint32_t *v = realloc(gs->hit_bins, cap * sizeof(*v));
				if (!v)
					return -ENOMEM;
				gs->hit_bins = v;
				gs->cap_hit = cap;
			}
			gs->hit_bins[gs->n_hit++] = b;
		}
		else if ((d = bin_domain(s, b, key)) != STR_NONE && (r = dom_bump(gs, d, false)) < 0)
			return r;
	}
	/* Owners of required anti-affinity terms repel matching pods (the
	 * inverse check); preferred ones do not, as in Karpenter. */
	for (uint32_t i = 0; i < p->n_topo; i++) {
		uint32_t g = p->topo[i].group, key = s->c->groups[g].key, d;
		if (p->topo[i].soft || s->c->groups[g].kind != TOPO_ANTI_AFFINITY)
			continue;
		if (key == K_HOSTNAME)
			s->gs[g].bin_owners[b]++;
		else if ((d = bin_domain(s, b, key)) != STR_NONE &&
			 (r = dom_bump(&s->gs[g], d, true)) < 0)
			return r;
	}
	return 0;
}

const uint32_t *topology_affinity_bins(const struct solver *s, const struct shape *sh, uint32_t *n)
{
	for (uint32_t i = 0; i < sh->n_topo; i++) {
		const struct topo_group *g = &s->c->groups[sh->topo[i]];
		if (g->key == K_HOSTNAME && g->kind == TOPO_AFFINITY && s->gs[sh->topo[i]].total) {
			*n = s->gs[sh->topo[i]].n_hit;
			return s->gs[sh->topo[i]].hit_bins;
		}
	}
	return NULL;
}
