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

#include "scheduler/solver-internal.h"

/* Distinct values a topology key may take that we consider as domains. */
#define TOPO_MAX_DOMAINS 256

int topology_init(struct solver *s)
{
	struct cluster *c = s->c;

	s->gs = calloc(c->n_groups ? c->n_groups : 1, sizeof(*s->gs));
	s->matched = calloc(c->n_pods ? c->n_pods : 1, sizeof(*s->matched));
	s->n_matched = calloc(c->n_pods ? c->n_pods : 1, sizeof(*s->n_matched));
	if (!s->gs || !s->matched || !s->n_matched)
		return -ENOMEM;
	/* Zones (capacity types) where some NodePool has an offering. */
	for (uint32_t i = 0; i < c->n_nodepools; i++) {
		uint64_t zones = catalog_zone_mask(s->cat, &c->nodepools[i].reqs);
		unsigned cts = catalog_ct_mask(&c->nodepools[i].reqs, s->st);
		catalog_filter(s->cat, &c->nodepools[i].reqs, s->scratch);
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
	for (uint32_t p = 0; p < c->n_pods; p++) {
		uint32_t n = 0, buf[64];
		uint32_t *dyn = NULL;

		for (uint32_t g = 0; g < c->n_groups; g++) {
			if (!topo_group_selects(c, &c->groups[g], &c->pods[p]))
				continue;
			if (n < ARRAY_SIZE(buf) && !dyn) {
				buf[n++] = g;
				continue;
			}
			if (!dyn) {
				dyn = malloc(c->n_groups * sizeof(*dyn));
				if (!dyn)
					return -ENOMEM;
				memcpy(dyn, buf, n * sizeof(*dyn));
			}
			dyn[n++] = g;
		}
		if (!n)
			continue;
		if (!dyn) {
			dyn = malloc(n * sizeof(*dyn));
			if (!dyn)
				return -ENOMEM;
			memcpy(dyn, buf, n * sizeof(*dyn));
		}
		s->matched[p] = dyn;
		s->n_matched[p] = n;
	}
	return 0;
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

/* The domains a pod with these requirements could land in, for key. */
static uint32_t domains(struct solver *s, const struct requirements *reqs, uint32_t g,
			uint32_t *d)
{
	const struct cluster *c = s->c;
	uint32_t key = c->groups[g].key, n = 0;
	const struct requirement *r = requirements_get(reqs, key);

	/* Domains are what NodePools can launch into (Karpenter builds them from
	 * every NodePool's requirements) plus what existing nodes have. */
	if (key == K_ZONE) {
		uint64_t m = catalog_zone_mask(s->cat, reqs) & s->pool_zones;
		for (uint32_t z = 0; z < s->cat->n_zones; z++)
			if (m >> z & 1)
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
	for (uint32_t i = 0; i < s->gs[g].n_dom; i++)
		add_domain(d, &n, s->gs[g].dom[i]);
	/* Only domains the pod's own node selection allows (nodeAffinityPolicy: Honor). */
	uint32_t k = 0;
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
	uint32_t d[TOPO_MAX_DOMAINS], ok[TOPO_MAX_DOMAINS], n = domains(s, &sh->reqs, g, d), k = 0;
	uint32_t self = pod_matches(s, pi, g), min = UINT32_MAX;
	const char *key = strtab_str(s->st, tg->key);

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
	int r = requirements_add(dyn, s->st, tg->key, REQ_IN, ok, k, 0);
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

bool topology_host_ok(struct solver *s, uint32_t pi, const struct shape *sh, uint32_t b)
{
	for (uint32_t i = 0; i < sh->n_topo; i++) {
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
				return false;
			break;
		case TOPO_AFFINITY:
			if (gs->total == 0 ? !pod_matches(s, pi, g) : cnt == 0)
				return false;
			break;
		case TOPO_ANTI_AFFINITY:
			if (cnt)
				return false;
			break;
		}
	}
	for (uint32_t i = 0; b < s->n_bins && i < s->n_matched[pi]; i++) {
		uint32_t g = s->matched[pi][i];
		if (s->c->groups[g].kind == TOPO_ANTI_AFFINITY && s->c->groups[g].key == K_HOSTNAME &&
		    s->gs[g].bin_owners[b])
			return false;
	}
	return true;
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
