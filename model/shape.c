/*
 * Pod shapes: everything placement depends on (requests, effective node
 * requirements, tolerations, active topology terms, groups that count the
 * pod, host ports), serialized, hashed and interned so that the pods of one
 * Deployment share one shape and its per-NodePool compatibility, type
 * bitsets and first-fit cursors. Called by solver.c only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/solver-internal.h"

/* Serialized shape keys are short; pods with more than this are not cached
 * together (they still get a shape of their own). */
#define SHAPE_KEY_MAX 4096
/* Topology terms per pod we accept (real pods have a handful). */
#define SHAPE_MAX_TOPO 256

struct keybuf {
	uint64_t w[SHAPE_KEY_MAX];
	uint32_t n;
	bool overflow;
};

static void put(struct keybuf *k, uint64_t v)
{
	if (k->n < SHAPE_KEY_MAX)
		k->w[k->n++] = v;
	else
		k->overflow = true;
}

static void put_reqs(struct keybuf *k, const struct requirements *r)
{
	put(k, r->n);
	for (uint32_t i = 0; i < r->n; i++) {
		const struct requirement *q = &r->v[i];
		put(k, (uint64_t)q->key << 32 | (uint64_t)q->complement << 1 | q->absent_ok);
		put(k, (uint64_t)q->gt);
		put(k, (uint64_t)q->lt);
		put(k, (uint64_t)q->min_values << 32 | q->n_values);
		for (uint32_t j = 0; j < q->n_values; j++)
			put(k, q->values[j]);
	}
}

static uint64_t hash_words(const uint64_t *w, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL;

	for (uint32_t i = 0; i < n; i++) {
		h ^= w[i] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
		h *= 0xff51afd7ed558ccdULL;
	}
	return h ^ (h >> 33);
}

void shape_free(struct shape *sh, uint32_t n_nodepools)
{
	if (!sh)
		return;
	requirements_free(&sh->reqs);
	for (uint32_t i = 0; sh->np_reason && i < n_nodepools; i++)
		free(sh->np_reason[i]);
	free(sh->np_reason);
	free(sh->np_state);
	free(sh->np_types);
	free(sh->topo);
	free(sh->key);
	free(sh);
}

/* Active topology terms under this relaxation: hard ones, then soft ones
 * not yet dropped. */
static uint32_t active_topo(const struct pod *p, const struct relax *rx, uint32_t *out)
{
	uint32_t n = 0, soft = 0;

	for (uint32_t i = 0; i < p->n_topo; i++) {
		if (p->topo[i].soft && soft++ < rx->soft)
			continue;
		out[n++] = p->topo[i].group;
	}
	return n;
}

static int shape_reqs(const struct solver *s, const struct pod *p, const struct relax *rx,
		      struct requirements *out)
{
	int r = requirements_copy(out, &p->reqs);

	if (r >= 0 && p->n_terms)
		r = requirements_intersect(out, &p->terms[rx->term], s->st);
	if (r >= 0 && rx->node_pref < p->n_prefs)
		r = requirements_intersect(out, &p->prefs[rx->node_pref].reqs, s->st);
	return r;
}

static void np_reason(struct solver *s, struct shape *sh, uint32_t np, const char *why)
{
	char buf[SCHED_REASON_MAX];

	snprintf(buf, sizeof(buf), "incompatible with nodepool %s: %s",
		 strtab_str(s->st, s->c->nodepools[np].name), why);
	sh->np_reason[np] = strdup(buf);
}

/* Per NodePool: taints, requirement compatibility and the compatible types. */
static int shape_nodepools(struct solver *s, struct shape *sh, const struct pod *p)
{
	uint32_t n = s->c->n_nodepools;
	char why[SCHED_REASON_MAX], a[SCHED_REASON_MAX / 2], b[SCHED_REASON_MAX / 2];

	sh->np_state = calloc(n ? n : 1, sizeof(*sh->np_state));
	sh->np_reason = calloc(n ? n : 1, sizeof(*sh->np_reason));
	sh->np_types = calloc((size_t)(n ? n : 1) * s->words, sizeof(uint64_t));
	if (!sh->np_state || !sh->np_reason || !sh->np_types)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct nodepool *np = &s->c->nodepools[i];
		const struct taint *t = NULL;
		struct requirements both;
		uint32_t key = 0;
		int r;

		sh->np_state[i] = -1;
		if (!tolerates(p->tols, p->n_tols, np->taints, np->n_taints, &t)) {
			static const char *const eff[] = { "NoSchedule", "PreferNoSchedule", "NoExecute" };
			snprintf(why, sizeof(why), "did not tolerate taint %s%s%s:%s",
				 strtab_str(s->st, t->key), t->value != STR_NONE ? "=" : "",
				 t->value != STR_NONE ? strtab_str(s->st, t->value) : "", eff[t->effect]);
			np_reason(s, sh, i, why);
			continue;
		}
		const struct pod *ds = NULL;
		uint16_t port = cluster_daemon_port_conflict(s->c, np, p, &ds);
		if (port) {
			snprintf(why, sizeof(why), "host port %u is taken by daemonset %s/%s",
				 port, strtab_str(s->st, ds->ns), strtab_str(s->st, ds->name));
			np_reason(s, sh, i, why);
			continue;
		}
		if (!requirements_compatible(&np->reqs, &sh->reqs, s->st, K_N_WELL_KNOWN, &key)) {
			const struct requirement *q = requirements_get(&np->reqs, key);
			if (!q)
				snprintf(why, sizeof(why), "label \"%s\" does not have known values",
					 strtab_str(s->st, key));
			else {
				requirement_format(requirements_get(&sh->reqs, key), s->st, a, sizeof(a));
				requirement_format(q, s->st, b, sizeof(b));
				if (snprintf(why, sizeof(why), "pod requires %s, nodepool allows %s", a, b) < 0)
					return -EINVAL;
			}
			np_reason(s, sh, i, why);
			continue;
		}
		r = requirements_copy(&both, &np->reqs);
		if (r >= 0)
			r = requirements_intersect(&both, &sh->reqs, s->st);
		if (r < 0) {
			requirements_free(&both);
			return r;
		}
		catalog_filter_pool(s->cat, &both, np->windows_build != STR_NONE,
				    &sh->np_types[(size_t)i * s->words]);
		for (uint32_t k = 0; k < both.n; k++) {
			const struct requirement *q = &both.v[k];
			if (!q->min_values)
				continue;
			/* minValues: enough distinct values among the compatible types. */
			uint32_t distinct = 0;
			for (uint32_t x = 0; x < s->cat->n_index; x++)
				if (s->cat->index[x].key == q->key)
					for (uint32_t v = 0; v < s->cat->index[x].n_values; v++) {
						uint64_t tmp[SCHED_MAX_TYPE_WORDS];
						memcpy(tmp, s->cat->index[x].sets[v], s->words * 8);
						bits_and(tmp, &sh->np_types[(size_t)i * s->words], s->words);
						distinct += bits_any(tmp, s->words);
					}
			if (distinct < q->min_values) {
				snprintf(why, sizeof(why), "minValues %u of %s not satisfied (%u values)",
					 q->min_values, strtab_str(s->st, q->key), distinct);
				np_reason(s, sh, i, why);
				memset(&sh->np_types[(size_t)i * s->words], 0, s->words * 8);
				break;
			}
		}
		requirements_free(&both);
		if (!sh->np_reason[i])
			sh->np_state[i] = 1;
	}
	return 0;
}

static void shape_flags(struct solver *s, struct shape *sh, uint32_t pi)
{
	sh->dyn_zone_only = true;
	for (uint32_t i = 0; i < sh->n_topo; i++) {
		const struct topo_group *g = &s->c->groups[sh->topo[i]];
		if (g->key == K_HOSTNAME) {
			sh->host_affinity |= g->kind == TOPO_AFFINITY;
			continue;
		}
		sh->dyn = true;
		if (g->key != K_ZONE)
			sh->dyn_zone_only = false;
	}
	for (uint32_t i = 0; i < s->n_matched[pi]; i++) {
		const struct topo_group *g = &s->c->groups[s->matched[pi][i]];
		if (g->key != K_HOSTNAME && g->kind == TOPO_ANTI_AFFINITY)
			sh->inv_anti = true;
	}
	/* Keys a NodeClaim must be pinned on so that the pod is counted exactly. */
	for (uint32_t pass = 0; pass < 2; pass++) {
		uint32_t n = pass ? s->n_matched[pi] : sh->n_topo;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t key = s->c->groups[pass ? s->matched[pi][i] : sh->topo[i]].key;
			bool seen = key == K_HOSTNAME;
			for (uint32_t j = 0; !seen && j < sh->n_pin_keys; j++)
				seen = sh->pin_keys[j] == key;
			if (!seen && sh->n_pin_keys < ARRAY_SIZE(sh->pin_keys))
				sh->pin_keys[sh->n_pin_keys++] = key;
		}
	}
}

static int shapes_grow(struct solver *s)
{
	uint32_t cap = s->cap_shapes ? s->cap_shapes * 2 : 256;
	struct shape **t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->cap_shapes; i++) {
		struct shape *sh = s->shapes[i];
		if (!sh)
			continue;
		uint32_t h = (uint32_t)sh->hash & (cap - 1);
		while (t[h])
			h = (h + 1) & (cap - 1);
		t[h] = sh;
	}
	free(s->shapes);
	s->shapes = t;
	s->cap_shapes = cap;
	return 0;
}

int shape_get(struct solver *s, uint32_t pi, const struct relax *rx, struct shape **ret)
{
	const struct pod *p = &s->c->pods[pi];
	struct keybuf *k = (struct keybuf *)s->keybuf;
	struct requirements reqs;
	uint32_t topo[SHAPE_MAX_TOPO], n_topo;
	struct shape *sh;
	int r;

	if (p->n_topo > ARRAY_SIZE(topo))
		return -E2BIG;
	n_topo = active_topo(p, rx, topo);
	k->n = 0;
	k->overflow = false;
	for (uint32_t i = 0; i < s->n_res; i++)
		put(k, (uint64_t)p->req.v[i]);
	/* The parts of the effective requirements identify it; their
	 * intersection is computed only for a new shape. */
	put_reqs(k, &p->reqs);
	if (p->n_terms)
		put_reqs(k, &p->terms[rx->term]);
	put(k, 0x5EED);
	if (rx->node_pref < p->n_prefs)
		put_reqs(k, &p->prefs[rx->node_pref].reqs);
	put(k, p->n_tols);
	for (uint32_t i = 0; i < p->n_tols; i++)
		put(k, (uint64_t)p->tols[i].key << 32 | p->tols[i].value),
			put(k, (uint64_t)p->tols[i].exists << 8 | (uint8_t)p->tols[i].effect);
	put(k, n_topo);
	for (uint32_t i = 0; i < n_topo; i++)
		put(k, topo[i]);
	/* Of the groups counting the pod, placement depends only on: whether it
	 * counts towards its own terms, the anti-affinity groups (inverse
	 * check), and which keys a NodeClaim must be pinned on. Keeping the
	 * rest out lets pods with different labels share a shape. */
	for (uint32_t i = 0; i < n_topo; i++) {
		bool self = false;
		for (uint32_t j = 0; j < s->n_matched[pi]; j++)
			self |= s->matched[pi][j] == topo[i];
		put(k, self);
	}
	uint32_t pin[8], n_pin = 0;
	for (uint32_t j = 0; j < s->n_matched[pi]; j++) {
		const struct topo_group *g = &s->c->groups[s->matched[pi][j]];
		uint32_t x = 0;
		if (g->kind == TOPO_ANTI_AFFINITY)
			put(k, 1ULL << 62 | s->matched[pi][j]);
		if (g->key == K_HOSTNAME)
			continue;
		while (x < n_pin && pin[x] != g->key)
			x++;
		if (x == n_pin && n_pin < ARRAY_SIZE(pin))
			pin[n_pin++] = g->key;
	}
	for (uint32_t x = 0; x < n_pin; x++) /* keys: few, insertion order is by group id */
		put(k, 1ULL << 61 | pin[x]);
	put(k, p->n_host_ports);
	for (uint32_t i = 0; i < p->n_host_ports; i++)
		put(k, p->host_ports[i]);
	if (k->overflow)
		put(k, 0x8000000000000000ULL | pi); /* unique: never shared */
	uint64_t h = hash_words(k->w, k->n);

	if ((s->n_shapes + 1) * 2 > s->cap_shapes && (r = shapes_grow(s)) < 0)
		return r;
	uint32_t slot = (uint32_t)h & (s->cap_shapes - 1);
	for (; (sh = s->shapes[slot]); slot = (slot + 1) & (s->cap_shapes - 1))
		if (sh->hash == h && sh->key_len == k->n && !memcmp(sh->key, k->w, k->n * 8)) {
			*ret = sh;
			return 0;
		}
	r = shape_reqs(s, p, rx, &reqs);
	if (r < 0) {
		requirements_free(&reqs);
		return r;
	}
	sh = calloc(1, sizeof(*sh));
	if (!sh) {
		requirements_free(&reqs);
		return -ENOMEM;
	}
	sh->reqs = reqs;
	sh->hash = h;
	sh->key_len = k->n;
	sh->key = malloc(k->n * 8);
	sh->topo = malloc((n_topo ? n_topo : 1) * sizeof(*sh->topo));
	if (!sh->key || !sh->topo) {
		shape_free(sh, 0);
		return -ENOMEM;
	}
	memcpy(sh->key, k->w, k->n * 8);
	memcpy(sh->topo, topo, n_topo * sizeof(*topo));
	sh->n_topo = n_topo;
	shape_flags(s, sh, pi);
	sh->zones = catalog_zone_mask(s->cat, &sh->reqs);
	sh->cts = catalog_ct_mask(&sh->reqs, s->st);
	r = shape_nodepools(s, sh, p);
	if (r < 0) {
		shape_free(sh, s->c->n_nodepools);
		return r;
	}
	s->shapes[slot] = sh;
	s->n_shapes++;
	*ret = sh;
	return 0;
}

size_t shape_keybuf_size(void)
{
	return sizeof(struct keybuf);
}
