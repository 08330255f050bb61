/*
 * First-fit-decreasing placement. Pending pods are sorted by cpu then
 * memory, descending; each goes to the first bin that takes it (existing
 * nodes, then NodeClaims opened in this solve), else to a new NodeClaim of
 * the heaviest compatible NodePool within its limits (the pods of a
 * hostname self-affinity group go together, at their largest's turn, to a
 * bin with room for all of them: host-group.c). A NodeClaim keeps the
 * bitset of types that can still hold all its pods and narrows it as pods
 * join. Per-shape cursors skip bins that rejected that shape for good
 * (rejection is monotonic for everything but pod affinity), so a batch
 * costs O(pods + shapes × bins). Preferences are relaxed one at a time on
 * failure, in Karpenter's order; failed pods are retried while any pass
 * places something. Called through sched_solve(); node-check.c asks its
 * node predicate (with the reason a node refuses) and commits through it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/solver-internal.h"

struct plan {
	uint64_t zones;
	unsigned cts;
	int32_t fit; /* a type that holds the bin with the pod */
};

/* Highest type in bits that holds need on nodes of pool np, clearing
 * nothing. -1 when none. */
static int32_t find_fit(const struct solver *s, uint32_t np, const uint64_t *bits,
			const struct resources *need)
{
	const struct resources *alloc = s->np_alloc[np];

	for (int32_t w = (int32_t)s->words - 1; w >= 0; w--) {
		uint64_t x = bits[w];
		while (x) {
			int hi = 63 - __builtin_clzll(x);
			uint32_t t = (uint32_t)w * 64 + (uint32_t)hi;
			if (resources_fit(need, &alloc[t], s->n_res))
				return (int32_t)t;
			x &= ~(1ULL << hi);
		}
	}
	return -1;
}

static void offers(const struct solver *s, uint64_t zones, unsigned cts, uint64_t *out)
{
	memset(out, 0, s->words * 8);
	for (uint32_t z = 0; z < s->cat->n_zones; z++)
		for (unsigned c = 0; c < CT_N; c++)
			if ((zones >> z & 1) && (cts >> c & 1))
				bits_or(out, s->cat->offer[z * CT_N + c], s->words);
}

/* An upper bound of what any candidate type can hold: the running maximum
 * of the catalog (sorted by size) up to the largest candidate. O(words). */
static void bin_max_alloc(struct solver *s, struct bin *b)
{
	memset(&b->max_alloc, 0, sizeof(b->max_alloc));
	for (int32_t w = (int32_t)s->words - 1; w >= 0; w--)
		if (b->cands[w]) {
			uint32_t top = (uint32_t)w * 64 + 63 - (uint32_t)__builtin_clzll(b->cands[w]);
			b->max_alloc = s->np_prefix_max[b->nodepool][top];
			return;
		}
}

static int bin_take_port(struct bin *b, uint16_t port)
{
	if (b->n_ports == b->cap_ports) {
		uint32_t cap = b->cap_ports ? b->cap_ports * 2 : 8;
		uint16_t *v = realloc(b->ports, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->ports = v;
		b->cap_ports = cap;
	}
	b->ports[b->n_ports++] = port;
	return 0;
}

/* A new node of pool has its DaemonSets' host ports taken from the start
 * (see cluster_daemon_port_conflict()). */
static int bin_take_daemon_ports(const struct solver *s, struct bin *b,
				 const struct nodepool *pool)
{
	for (uint32_t d = 0; d < s->c->n_daemonsets; d++) {
		const struct pod *ds = &s->c->daemonsets[d];
		if (!ds->n_host_ports || !cluster_daemonset_runs_on(s->c, ds, pool))
			continue;
		for (uint32_t i = 0; i < ds->n_host_ports; i++)
			if (bin_take_port(b, ds->host_ports[i]) < 0)
				return -ENOMEM;
	}
	return 0;
}

static bool ports_conflict(const struct bin *b, const struct pod *p)
{
	for (uint32_t i = 0; i < p->n_host_ports; i++)
		for (uint32_t j = 0; j < b->n_ports; j++)
			if (b->ports[j] == p->host_ports[i])
				return true;
	return false;
}

/* Says why a node refuses a pod, when the caller asked (why != NULL). */
static bool _printf_(3, 4) refuse(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (why) {
		va_start(ap, fmt);
		vsnprintf(why, size, fmt, ap);
		va_end(ap);
	}
	return false;
}

/* The first of reqs the labels do not satisfy, as text. */
static void unmet_requirement(const struct solver *s, const struct requirements *reqs,
			      const struct node *n, char *buf, size_t size)
{
	buf[0] = '\0';
	for (uint32_t i = 0; i < reqs->n; i++)
		if (!requirement_allows(&reqs->v[i], s->st,
					labels_get(n->labels, n->n_labels, reqs->v[i].key))) {
			requirement_format(&reqs->v[i], s->st, buf, size);
			return;
		}
}

static bool refuse_resources(const struct solver *s, const struct node *n, const struct bin *b,
			     const struct pod *p, const struct resources *need, char *why, size_t size)
{
	char req[64], free_[64], alloc[64];

	for (uint32_t r = 0; why && r < s->n_res; r++) {
		bool milli = r == RES_CPU, bytes = r == RES_MEMORY || r == RES_EPHEMERAL_STORAGE;

		if (need->v[r] <= n->allocatable.v[r])
			continue;
		quantity_format(p->req.v[r], milli, bytes, req, sizeof(req));
		quantity_format(MAX(n->allocatable.v[r] - b->used.v[r], 0), milli, bytes, free_,
				sizeof(free_));
		quantity_format(n->allocatable.v[r], milli, bytes, alloc, sizeof(alloc));
		return refuse(why, size, "Insufficient %s on node %s: the pod requests %s, %s of its %s "
			      "allocatable is free", strtab_str(s->st, s->cat->resource_names[r]),
			      strtab_str(s->st, n->name), req, free_, alloc);
	}
	return false;
}

bool solver_node_accepts(struct solver *s, uint32_t bi, uint32_t pi, const struct shape *sh,
			 const struct requirements *eff, char *why, size_t size)
{
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute" };
	const struct bin *b = &s->bins[bi];
	const struct node *n = &s->c->nodes[b->node];
	const struct pod *p = &s->c->pods[pi];
	const char *name = strtab_str(s->st, n->name);
	struct resources need = b->used;
	const struct taint *t;
	char text[SCHED_REASON_MAX / 2];

	if (n->removed)
		return refuse(why, size, "node %s is being removed", name);
	if (n->unschedulable)
		return refuse(why, size, "node %s is unschedulable or being deleted", name);
	resources_add(&need, &p->req, s->n_res);
	if (!resources_fit(&need, &n->allocatable, s->n_res))
		return refuse_resources(s, n, b, p, &need, why, size);
	if (ports_conflict(b, p))
		return refuse(why, size, "node %s has no free host port the pod asks for", name);
	if (!tolerates(p->tols, p->n_tols, n->taints, n->n_taints, &t))
		return refuse(why, size, "node %s has taint %s%s%s:%s that the pod does not tolerate", name,
			      strtab_str(s->st, t->key), t->value != STR_NONE ? "=" : "",
			      t->value != STR_NONE ? strtab_str(s->st, t->value) : "",
			      effects[t->effect < ARRAY_SIZE(effects) ? t->effect : 0]);
	if (!requirements_match_labels(eff, n->labels, n->n_labels, s->st)) {
		if (!why)
			return false;
		if (!requirements_match_labels(&sh->reqs, n->labels, n->n_labels, s->st)) {
			unmet_requirement(s, &sh->reqs, n, text, sizeof(text));
			return refuse(why, size, "node %s does not match the pod's node selector or affinity (%s)",
				      name, text);
		}
		unmet_requirement(s, eff, n, text, sizeof(text));
		return refuse(why, size, "node %s is outside the domains the pod's topology spread or pod "
			      "(anti-)affinity allows (%s)", name, text);
	}
	return topology_host_ok(s, pi, sh, bi, why, size);
}

/* Pick the zone (and capacity type) a pinned NodeClaim gets: the least
 * loaded allowed domain where the fitting type has an offering. */
static void pin_offering(struct solver *s, uint32_t pi, const struct shape *sh, int32_t t,
			 struct plan *pl)
{
	const struct instance_type *it = &s->cat->types[t];
	bool pin_zone = false, pin_ct = false;
	uint32_t cands[SCHED_MAX_ZONES], n = 0;

	for (uint32_t i = 0; i < sh->n_pin_keys; i++) {
		pin_zone |= sh->pin_keys[i] == K_ZONE;
		pin_ct |= sh->pin_keys[i] == K_CAPACITY_TYPE;
	}
	if (pin_zone && __builtin_popcountll(pl->zones) > 1) {
		for (uint32_t z = 0; z < s->cat->n_zones; z++) {
			if (!(pl->zones >> z & 1))
				continue;
			for (uint32_t o = 0; o < it->n_offerings; o++)
				if (it->offerings[o].zone == z && it->offerings[o].available &&
				    (pl->cts >> it->offerings[o].capacity_type & 1)) {
					cands[n++] = s->cat->zones[z];
					break;
				}
		}
		uint32_t z = (uint32_t)catalog_zone_find(s->cat, topology_pick(s, pi, K_ZONE, cands, n));
		pl->zones = 1ULL << z;
	}
	if (pin_ct && __builtin_popcount(pl->cts) > 1) {
		n = 0;
		for (unsigned c = 0; c < CT_N; c++)
			for (uint32_t o = 0; o < it->n_offerings; o++)
				if (it->offerings[o].capacity_type == c && it->offerings[o].available &&
				    (pl->zones >> it->offerings[o].zone & 1) && (pl->cts >> c & 1)) {
					cands[n++] = c == CT_SPOT ? V_SPOT : V_ON_DEMAND;
					break;
				}
		pl->cts = topology_pick(s, pi, K_CAPACITY_TYPE, cands, n) == V_SPOT ? 1u << CT_SPOT
										    : 1u << CT_ON_DEMAND;
	}
}

/* The first requirement asking for minValues distinct values that the
 * types of bits holding need no longer offer, or NULL when all are met. */
static const struct requirement *min_values_unmet(const struct solver *s, uint32_t np,
						  const struct requirements *reqs, const uint64_t *bits,
						  const struct resources *need)
{
	for (uint32_t q = 0; q < reqs->n; q++) {
		const struct requirement *req = &reqs->v[q];
		uint32_t seen[SCHED_MAX_CANDIDATE_TYPES], n = 0;

		if (!req->min_values)
			continue;
		for (uint32_t w = 0; w < s->words && n < req->min_values; w++)
			for (uint64_t x = bits[w]; x && n < req->min_values; x &= x - 1) {
				uint32_t t = w * 64 + (uint32_t)__builtin_ctzll(x);
				const struct instance_type *it = &s->cat->types[t];
				uint32_t v = labels_get(it->labels, it->n_labels, req->key), j;
				if (!resources_fit(need, &s->np_alloc[np][t], s->n_res))
					continue;
				for (j = 0; j < n && seen[j] != v; j++)
					;
				if (j == n && n < ARRAY_SIZE(seen))
					seen[n++] = v;
			}
		if (n < req->min_values)
			return req;
	}
	return NULL;
}

/* Would NodeClaim bin bi take pod pi? Leaves the candidate types in s->scratch. */
static bool claim_accepts(struct solver *s, uint32_t bi, uint32_t pi, const struct shape *sh,
			  const struct requirements *eff, uint64_t eff_zones, unsigned eff_cts,
			  int32_t force_zone, struct plan *pl)
{
	const struct bin *b = &s->bins[bi];
	const struct pod *p = &s->c->pods[pi];
	struct resources need = b->used;
	uint32_t np = (uint32_t)b->nodepool;

	if (sh->np_state[np] <= 0)
		return false;
	resources_add(&need, &p->req, s->n_res);
	if (!resources_fit(&need, &b->max_alloc, s->n_res) || ports_conflict(b, p))
		return false;
	if (!topology_host_ok(s, pi, sh, bi, NULL, 0))
		return false;
	pl->zones = b->zones & eff_zones;
	pl->cts = b->cts & eff_cts;
	if (force_zone >= 0)
		pl->zones &= 1ULL << force_zone;
	if (!pl->zones || !pl->cts)
		return false;
	if (eff->n && !requirements_compatible(&b->reqs, eff, s->st, K_N_WELL_KNOWN, NULL))
		return false;
	memcpy(s->scratch, b->cands, s->words * 8);
	bits_and(s->scratch, &sh->np_types[(size_t)np * s->words], s->words);
	if (pl->zones != b->zones || pl->cts != b->cts) {
		offers(s, pl->zones, pl->cts, s->scratch2);
		bits_and(s->scratch, s->scratch2, s->words);
	}
	pl->fit = find_fit(s, np, s->scratch, &need);
	if (pl->fit < 0)
		return false;
	if (b->min_values && min_values_unmet(s, np, &b->reqs, s->scratch, &need))
		return false;
	pin_offering(s, pi, sh, pl->fit, pl);
	return true;
}

static int bin_add_pod(struct bin *b, const struct pod *p, uint32_t pi)
{
	if (b->n_pods == b->cap_pods) {
		uint32_t cap = b->cap_pods ? b->cap_pods * 2 : 8;
		uint32_t *v = realloc(b->pods, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->pods = v;
		b->cap_pods = cap;
	}
	b->pods[b->n_pods++] = pi;
	for (uint32_t i = 0; i < p->n_host_ports; i++)
		if (bin_take_port(b, p->host_ports[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* Pin a custom (non zone / capacity-type) key of the claim to one value. */
static int pin_label(struct solver *s, uint32_t pi, struct bin *b, uint32_t key)
{
	const struct requirement *q = requirements_get(&b->reqs, key);
	uint32_t v;

	if (!q || q->complement || q->n_values <= 1)
		return 0;
	v = topology_pick(s, pi, key, q->values, q->n_values);
	return requirements_add(&b->reqs, s->st, key, REQ_IN, &v, 1, 0);
}

static int claim_commit(struct solver *s, uint32_t bi, uint32_t pi, const struct shape *sh,
			const struct requirements *eff, const struct plan *pl)
{
	struct bin *b = &s->bins[bi];
	int r = 0;

	if (eff->n) {
		r = requirements_intersect(&b->reqs, eff, s->st);
		for (uint32_t q = 0; q < b->reqs.n; q++)
			b->min_values |= b->reqs.v[q].min_values > 0;
	}
	if (r >= 0 && pl->zones != b->zones && __builtin_popcountll(pl->zones) == 1) {
		uint32_t z = s->cat->zones[__builtin_ctzll(pl->zones)];
		r = requirements_add(&b->reqs, s->st, K_ZONE, REQ_IN, &z, 1, 0);
	}
	if (r >= 0 && pl->cts != b->cts && __builtin_popcount(pl->cts) == 1) {
		uint32_t c = pl->cts == 1u << CT_SPOT ? V_SPOT : V_ON_DEMAND;
		r = requirements_add(&b->reqs, s->st, K_CAPACITY_TYPE, REQ_IN, &c, 1, 0);
	}
	for (uint32_t i = 0; r >= 0 && i < sh->n_pin_keys; i++)
		if (sh->pin_keys[i] != K_ZONE && sh->pin_keys[i] != K_CAPACITY_TYPE)
			r = pin_label(s, pi, b, sh->pin_keys[i]);
	if (r < 0)
		return r;
	if (pl->zones != b->zones || pl->cts != b->cts) {
		offers(s, pl->zones, pl->cts, s->scratch2);
		bits_and(s->scratch, s->scratch2, s->words);
	}
	bool narrowed = memcmp(s->scratch, b->cands, s->words * 8) != 0;
	/* Types above the fitting one were just found too small: drop them. */
	uint32_t fw = (uint32_t)pl->fit / 64;
	uint64_t keep = (uint32_t)pl->fit % 64 == 63 ? ~0ULL : (2ULL << (pl->fit % 64)) - 1;
	bool dropped = (s->scratch[fw] & ~keep) != 0;
	s->scratch[fw] &= keep;
	for (uint32_t w = fw + 1; w < s->words; w++) {
		dropped |= s->scratch[w] != 0;
		s->scratch[w] = 0;
	}
	memcpy(b->cands, s->scratch, s->words * 8);
	b->zones = pl->zones;
	b->cts = pl->cts;
	/* max_alloc only has to stay an upper bound; recomputing is O(words). */
	if (narrowed || dropped)
		bin_max_alloc(s, b);
	return 0;
}

int solver_commit(struct solver *s, uint32_t bi, uint32_t pi, const struct shape *sh,
		  const struct requirements *eff, const struct plan *pl)
{
	struct bin *b = &s->bins[bi];
	const struct pod *p = &s->c->pods[pi];
	int r;

	if (b->node < 0 && (r = claim_commit(s, bi, pi, sh, eff, pl)) < 0)
		return r;
	resources_add(&b->used, &p->req, s->n_res);
	r = bin_add_pod(b, p, pi);
	if (r < 0)
		return r;
	s->pod_bin[pi] = (int32_t)bi;
	host_group_placed(s, pi);
	return topology_record(s, pi, bi);
}

static bool bin_accepts(struct solver *s, uint32_t bi, uint32_t pi, const struct shape *sh,
			const struct requirements *eff, uint64_t zones, unsigned cts,
			int32_t force_zone, struct plan *pl)
{
	if (s->bins[bi].node >= 0)
		return solver_node_accepts(s, bi, pi, sh, eff, NULL, 0);
	return claim_accepts(s, bi, pi, sh, eff, zones, cts, force_zone, pl);
}

/* First fit over existing bins. Returns 1 when placed. */
static int try_bins(struct solver *s, uint32_t pi, struct shape *sh, const struct requirements *eff)
{
	bool dyn = eff != &sh->reqs;
	uint64_t zones = dyn ? catalog_zone_mask(s->cat, eff) : sh->zones;
	unsigned cts = dyn ? catalog_ct_mask(eff, s->st) : sh->cts;
	struct plan pl;

	if (!sh->dyn && !sh->inv_anti && !sh->host_affinity) {
		for (uint32_t b = sh->cursor; b < s->n_bins; b++) {
			if (bin_accepts(s, b, pi, sh, eff, zones, cts, -1, &pl))
				return solver_commit(s, b, pi, sh, eff, &pl) < 0 ? -ENOMEM : 1;
			if (b == sh->cursor)
				sh->cursor++;
		}
		return 0;
	}
	if (sh->dyn_zone_only && !sh->inv_anti && !sh->host_affinity) {
		uint32_t best = UINT32_MAX;
		for (uint32_t z = 0; z < s->cat->n_zones; z++) {
			if (!(zones >> z & 1))
				continue;
			for (uint32_t b = sh->zone_cursor[z]; b < s->n_bins && b < best; b++) {
				if (bin_accepts(s, b, pi, sh, eff, zones, cts, (int32_t)z, &pl)) {
					best = b;
					break;
				}
				if (b == sh->zone_cursor[z])
					sh->zone_cursor[z]++;
			}
		}
		if (best == UINT32_MAX || !bin_accepts(s, best, pi, sh, eff, zones, cts, -1, &pl))
			return 0;
		return solver_commit(s, best, pi, sh, eff, &pl) < 0 ? -ENOMEM : 1;
	}
	if (sh->host_affinity) {
		/* Only bins that already hold a pod the term selects can qualify. */
		uint32_t n;
		const uint32_t *hits = topology_affinity_bins(s, sh, &n);
		for (uint32_t i = 0; hits && i < n; i++)
			if (bin_accepts(s, hits[i], pi, sh, eff, zones, cts, -1, &pl))
				return solver_commit(s, hits[i], pi, sh, eff, &pl) < 0 ? -ENOMEM : 1;
		if (hits)
			return 0;
		/* The group's first pod: a bin that can hold all of it, else a
		 * new NodeClaim (host-group.c). */
		const struct resources *demand = host_group_demand(s, pi);
		for (uint32_t b = 0; demand && b < s->n_bins; b++)
			if (host_group_room(s, b, demand) && bin_accepts(s, b, pi, sh, eff, zones, cts, -1, &pl))
				return solver_commit(s, b, pi, sh, eff, &pl) < 0 ? -ENOMEM : 1;
		if (demand)
			return 0;
	}
	for (uint32_t b = 0; b < s->n_bins; b++)
		if (bin_accepts(s, b, pi, sh, eff, zones, cts, -1, &pl))
			return solver_commit(s, b, pi, sh, eff, &pl) < 0 ? -ENOMEM : 1;
	return 0;
}

static struct bin *bin_new(struct solver *s)
{
	if (s->n_bins == s->cap_bins) {
		uint32_t cap = s->cap_bins ? s->cap_bins * 2 : 64;
		struct bin *v = realloc(s->bins, cap * sizeof(*v));
		if (!v)
			return NULL;
		s->bins = v;
		s->cap_bins = cap;
	}
	struct bin *b = &s->bins[s->n_bins];
	memset(b, 0, sizeof(*b));
	b->node = -1;
	b->nodepool = -1;
	s->n_bins++;
	if (topology_grow_bins(s) < 0) {
		s->n_bins--;
		return NULL;
	}
	return b;
}

/* Types of NodePool np that hold need and fit its remaining limits. */
static int open_claim_types(struct solver *s, uint32_t np, const struct shape *sh,
			    const struct resources *need, uint64_t zones, unsigned cts, char *why,
			    size_t size)
{
	const struct nodepool *pool = &s->c->nodepools[np];
	struct resources remaining;
	bool any_fit = false, limited = false;

	for (uint32_t r = 0; r < s->n_res; r++)
		remaining.v[r] = pool->limits.v[r] == INT64_MAX
					 ? INT64_MAX
					 : pool->limits.v[r] - pool->in_use.v[r] - s->np_reserved[np].v[r];
	if (pool->not_ready) {
		snprintf(why, size, "incompatible with nodepool %s: %s", strtab_str(s->st, pool->name),
			 pool->not_ready);
		return 0;
	}
	if (pool->node_limit != INT64_MAX &&
	    pool->nodes_in_use + s->np_claims[np] >= pool->node_limit) {
		snprintf(why, size, "incompatible with nodepool %s: node limit %lld reached",
			 strtab_str(s->st, pool->name), (long long)pool->node_limit);
		return 0;
	}
	memcpy(s->scratch, &sh->np_types[(size_t)np * s->words], s->words * 8);
	offers(s, zones, cts, s->scratch2);
	bits_and(s->scratch, s->scratch2, s->words);
	for (uint32_t w = 0; w < s->words; w++)
		for (uint64_t x = s->scratch[w]; x; x &= x - 1) {
			uint32_t t = w * 64 + (uint32_t)__builtin_ctzll(x);
			if (!resources_fit(need, &s->np_alloc[np][t], s->n_res)) {
				bit_clear(s->scratch, t);
				continue;
			}
			any_fit = true;
			if (!resources_fit(&s->np_cap[np][t], &remaining, s->n_res)) {
				bit_clear(s->scratch, t);
				limited = true;
			}
		}
	if (s->under_price && bits_any(s->scratch, s->words)) {
		bits_and(s->scratch, s->under_price, s->words);
		/* under_price counts any offering; the claim pays for one in
		 * its own zones and capacity types (a type under the cap only
		 * as spot is no cheaper for an on-demand NodePool). */
		for (uint32_t w = 0; w < s->words; w++)
			for (uint64_t x = s->scratch[w]; x; x &= x - 1) {
				uint32_t t = w * 64 + (uint32_t)__builtin_ctzll(x);
				double p = catalog_type_price(s->cat, t, zones, cts);
				if (p < 0 || p >= s->opts.max_new_price)
					bit_clear(s->scratch, t);
			}
		if (!bits_any(s->scratch, s->words)) {
			snprintf(why, size, "incompatible with nodepool %s: no instance type that fits "
				 "costs less than $%.4f/h", strtab_str(s->st, pool->name),
				 s->opts.max_new_price);
			return 0;
		}
	}
	if (bits_any(s->scratch, s->words)) {
		/* The types left must still give minValues distinct values. */
		const struct requirement *q = min_values_unmet(s, np, &pool->reqs, s->scratch, need);
		if (!q)
			return 1;
		snprintf(why, size, "incompatible with nodepool %s: minValues %u of %s not satisfied by "
			 "the instance types that fit%s", strtab_str(s->st, pool->name), q->min_values,
			 strtab_str(s->st, q->key), limited ? " within its limits" : "");
		return 0;
	}
	if (any_fit && limited)
		snprintf(why, size, "incompatible with nodepool %s: all instance types exceed nodepool limits",
			 strtab_str(s->st, pool->name));
	else
		reason_no_type(s, sh, np, need, zones, why, size);
	return 0;
}

static int try_new_claim(struct solver *s, uint32_t pi, struct shape *sh,
			 const struct requirements *eff, char *reason, size_t size)
{
	const struct pod *p = &s->c->pods[pi];
	bool dyn = eff != &sh->reqs;
	uint64_t zones = dyn ? catalog_zone_mask(s->cat, eff) : sh->zones;
	unsigned cts = dyn ? catalog_ct_mask(eff, s->st) : sh->cts;
	char why[SCHED_REASON_MAX];
	struct np_reasons *rs = &s->np_reasons;
	struct plan pl;
	int r;

	reason[0] = '\0';
	if (s->opts.limit_new_claims && s->n_bins - s->c->n_nodes >= s->opts.max_new_claims) {
		snprintf(reason, size, "no new nodeclaim allowed beyond %u", s->opts.max_new_claims);
		return 0;
	}
	if (!s->c->n_nodepools)
		snprintf(reason, size, "no nodepool defined");
	np_reasons_reset(rs);
	for (uint32_t i = 0; i < s->c->n_nodepools; i++) {
		uint32_t np = s->np_order[i];
		const struct nodepool *pool = &s->c->nodepools[np];
		struct resources need = pool->daemon_overhead;

		if (sh->np_state[np] <= 0) {
			if (np_reasons_add(rs, NP_CHECK_SHAPE, sh->np_reason[np]) < 0)
				return -ENOMEM;
			continue;
		}
		if (!topology_host_ok(s, pi, sh, s->n_bins, NULL, 0)) {
			snprintf(why, sizeof(why), "incompatible with nodepool %s: pod affinity on %s needs a node with a matching pod",
				 strtab_str(s->st, pool->name), strtab_str(s->st, K_HOSTNAME));
			if (np_reasons_add(rs, NP_CHECK_HOSTNAME, why) < 0)
				return -ENOMEM;
			continue;
		}
		if ((sh->dyn || sh->inv_anti) &&
		    !requirements_compatible(&pool->reqs, eff, s->st, K_N_WELL_KNOWN, NULL)) {
			snprintf(why, sizeof(why), "incompatible with nodepool %s: no allowed topology domain",
				 strtab_str(s->st, pool->name));
			if (np_reasons_add(rs, NP_CHECK_DOMAIN, why) < 0)
				return -ENOMEM;
			continue;
		}
		resources_add(&need, &p->req, s->n_res);
		uint64_t pool_zones = zones & catalog_zone_mask(s->cat, &pool->reqs);
		unsigned pool_cts = cts & catalog_ct_mask(&pool->reqs, s->st);
		if (!open_claim_types(s, np, sh, &need, pool_zones, pool_cts, why, sizeof(why))) {
			if (np_reasons_add(rs, NP_CHECK_CAPACITY, why) < 0)
				return -ENOMEM;
			continue;
		}
		struct bin *b = bin_new(s);
		if (!b)
			return -ENOMEM;
		uint32_t bi = s->n_bins - 1;
		b->nodepool = (int32_t)np;
		b->cands = calloc(s->words, 8);
		if (!b->cands || (r = requirements_copy(&b->reqs, &pool->reqs)) < 0)
			return -ENOMEM;
		memcpy(b->cands, s->scratch, s->words * 8);
		b->zones = catalog_zone_mask(s->cat, &b->reqs);
		b->cts = catalog_ct_mask(&b->reqs, s->st);
		for (uint32_t q = 0; q < b->reqs.n; q++)
			b->min_values |= b->reqs.v[q].min_values > 0;
		b->used = pool->daemon_overhead;
		if (bin_take_daemon_ports(s, b, pool) < 0)
			return -ENOMEM;
		bin_max_alloc(s, b);
		for (uint32_t w = 0; w < s->words; w++)
			for (uint64_t x = b->cands[w]; x; x &= x - 1) {
				const struct resources *cap =
					&s->np_cap[np][w * 64 + (uint32_t)__builtin_ctzll(x)];
				for (uint32_t q = 0; q < s->n_res; q++)
					b->reserved.v[q] = MAX(b->reserved.v[q], cap->v[q]);
			}
		resources_add(&s->np_reserved[np], &b->reserved, s->n_res);
		s->np_claims[np]++;
		if (!claim_accepts(s, bi, pi, sh, eff, zones, cts, -1, &pl))
			return -EINVAL; /* cannot happen: the types were chosen for this pod */
		return solver_commit(s, bi, pi, sh, eff, &pl) < 0 ? -ENOMEM : 1;
	}
	np_reasons_text(rs, reason, size);
	return 0;
}

static bool relax_next(const struct solver *s, const struct pod *p, struct relax *rx)
{
	uint32_t soft_affinity = 0, soft = 0;

	/* The loader orders soft terms: (anti-)affinity first, then spread. */
	for (uint32_t i = 0; i < p->n_topo; i++)
		if (p->topo[i].soft) {
			soft++;
			soft_affinity += s->c->groups[p->topo[i].group].kind != TOPO_SPREAD;
		}
	if (rx->term + 1u < p->n_terms)
		rx->term++;
	else if (rx->soft < soft_affinity)
		rx->soft++;
	else if (rx->node_pref < p->n_prefs)
		rx->node_pref++;
	else if (rx->soft < soft)
		rx->soft++;
	else
		return false;
	return true;
}

static bool same_array(const void *a, const void *b, size_t n, size_t size)
{
	return n == 0 || a == b || !memcmp(a, b, n * size);
}

/* Would pod b get pod a's (unrelaxed) shape? Cheaper than building its key. */
static bool same_shape(const struct solver *s, uint32_t a, uint32_t b)
{
	const struct pod *x = &s->c->pods[a], *y = &s->c->pods[b];

	return !memcmp(x->req.v, y->req.v, s->n_res * sizeof(int64_t)) &&
	       requirements_equal(&x->reqs, &y->reqs) && x->n_terms == y->n_terms &&
	       (!x->n_terms || requirements_equal(&x->terms[0], &y->terms[0])) &&
	       x->n_prefs == y->n_prefs && (!x->n_prefs || requirements_equal(&x->prefs[0].reqs, &y->prefs[0].reqs)) &&
	       x->n_tols == y->n_tols && same_array(x->tols, y->tols, x->n_tols, sizeof(*x->tols)) &&
	       x->n_topo == y->n_topo && same_array(x->topo, y->topo, x->n_topo, sizeof(*x->topo)) &&
	       x->n_host_ports == y->n_host_ports &&
	       same_array(x->host_ports, y->host_ports, x->n_host_ports, sizeof(*x->host_ports)) &&
	       s->n_matched[a] == s->n_matched[b] &&
	       same_array(s->matched[a], s->matched[b], s->n_matched[a], sizeof(uint32_t));
}

/* Place one pod, relaxing preferences as needed. 1 placed, 0 not, < 0 error. */
int solver_place(struct solver *s, uint32_t pi)
{
	struct relax rx = { 0 };
	char reason[SCHED_REASON_MAX];
	int r;

	for (;;) {
		struct shape *sh;
		struct requirements dyn = { 0 };
		const struct requirements *eff;

		bool unrelaxed = !rx.term && !rx.node_pref && !rx.soft;
		if (unrelaxed && s->last_shape && same_shape(s, (uint32_t)s->last_pod, pi))
			sh = s->last_shape;
		else if ((r = shape_get(s, pi, &rx, &sh)) < 0)
			return r;
		if (unrelaxed) {
			s->last_pod = pi;
			s->last_shape = sh;
		}
		eff = &sh->reqs;
		r = 1;
		if (sh->dyn || sh->inv_anti) {
			r = topology_allowed(s, pi, sh, &dyn, reason, sizeof(reason));
			if (r > 0)
				r = requirements_intersect(&dyn, &sh->reqs, s->st) < 0 ? -ENOMEM : 1;
			eff = &dyn;
		}
		if (r > 0) {
			r = try_bins(s, pi, sh, eff);
			if (r == 0)
				r = try_new_claim(s, pi, sh, eff, reason, sizeof(reason));
		}
		requirements_free(&dyn);
		if (r != 0)
			return r;
		if (!relax_next(s, &s->c->pods[pi], &rx))
			break;
	}
	free(s->reasons[pi]);
	s->reasons[pi] = strdup(reason);
	return s->reasons[pi] ? 0 : -ENOMEM;
}
