/*
 * Turning a solve into its result: each NodeClaim's final candidate types
 * (those that hold all its pods, cheapest first, at most 60, keeping
 * minValues satisfied), zones and capacity types with offerings, price; the
 * bin of every pod; and precise reasons for pods that stay pending.
 * Called by solve.c at the end of sched_solve().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/solver-internal.h"

struct priced {
	uint32_t type;
	double price;
};

/* Price, then catalog order (smaller first) breaks ties deterministically. */
static int priced_cmp(const void *a, const void *b)
{
	const struct priced *x = a, *y = b;

	if (x->price != y->price)
		return x->price < y->price ? -1 : 1;
	return x->type < y->type ? -1 : x->type > y->type;
}

static void priced_sort(struct priced *v, uint32_t n)
{
	if (n > 64) {
		qsort(v, n, sizeof(*v), priced_cmp);
		return;
	}
	for (uint32_t i = 1; i < n; i++) { /* insertion sort: n ≤ 60 here */
		struct priced x = v[i];
		uint32_t j = i;
		for (; j > 0 && priced_cmp(&v[j - 1], &x) > 0; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

static void zones_text(const struct solver *s, uint64_t zones, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (uint32_t z = 0; z < s->cat->n_zones && off < size; z++)
		if (zones >> z & 1)
			off += (size_t)snprintf(buf + off, size - off, "%s%s", off ? " " : "",
						strtab_str(s->st, s->cat->zones[z]));
}

void resource_text(const struct solver *s, uint32_t r, int64_t v, char *buf, size_t size)
{
	char q[64];

	quantity_format(v, r == RES_CPU, r == RES_MEMORY || r == RES_EPHEMERAL_STORAGE, q, sizeof(q));
	if (snprintf(buf, size, "%s %s", q, strtab_str(s->st, s->cat->resource_names[r])) < 0)
		buf[0] = '\0';
}

/* Room kept for "; and N more nodepool(s)". */
#define NP_REASONS_TAIL 48

void np_reasons_reset(struct np_reasons *rs)
{
	rs->len = 0;
	rs->n = 0;
}

int np_reasons_add(struct np_reasons *rs, enum np_check check, const char *why)
{
	size_t n = strlen(why) + 1;

	if (rs->n == rs->cap_n) {
		uint32_t cap = rs->cap_n ? rs->cap_n * 2 : 16;
		void *at = realloc(rs->at, cap * sizeof(*rs->at));

		if (!at)
			return -ENOMEM;
		rs->at = at;
		rs->cap_n = cap;
	}
	if (rs->len + n > rs->cap) {
		size_t cap = MAX(rs->cap * 2, rs->len + n + 1024);
		char *text = realloc(rs->text, cap);

		if (!text)
			return -ENOMEM;
		rs->text = text;
		rs->cap = cap;
	}
	memcpy(rs->text + rs->len, why, n);
	rs->at[rs->n].off = rs->len;
	rs->at[rs->n].check = (uint8_t)check;
	rs->n++;
	rs->len += n;
	return 0;
}

void np_reasons_text(const struct np_reasons *rs, char *buf, size_t size)
{
	uint32_t lead = 0, left_out = 0;
	size_t len;

	if (!rs->n || !size)
		return;
	for (uint32_t i = 1; i < rs->n; i++)
		if (rs->at[i].check > rs->at[lead].check)
			lead = i;
	snprintf(buf, size, "%s", rs->text + rs->at[lead].off);
	len = strlen(buf);
	for (uint32_t i = 0; i < rs->n; i++) {
		const char *why = rs->text + rs->at[i].off;
		size_t n = strlen(why);

		if (i == lead)
			continue;
		if (left_out || len + 2 + n + NP_REASONS_TAIL >= size) {
			left_out++;
			continue;
		}
		snprintf(buf + len, size - len, "; %s", why);
		len += 2 + n;
	}
	if (left_out && len + NP_REASONS_TAIL < size)
		snprintf(buf + len, size - len, "; and %u more nodepool(s)", left_out);
}

void np_reasons_done(struct np_reasons *rs)
{
	free(rs->text);
	free(rs->at);
	*rs = (struct np_reasons){ 0 };
}

int reason_no_type(struct solver *s, const struct shape *sh, uint32_t np, const struct resources *need,
		   uint64_t zones, char *buf, size_t size)
{
	const char *pool = strtab_str(s->st, s->c->nodepools[np].name);
	uint64_t bits[SCHED_MAX_TYPE_WORDS];
	struct resources max = { { 0 } };
	char z[256], what[128];
	bool any = false;

	zones_text(s, zones, z, sizeof(z));
	memcpy(bits, &sh->np_types[(size_t)np * s->words], s->words * 8);
	for (uint32_t w = 0; w < s->words; w++)
		for (uint64_t x = bits[w]; x; x &= x - 1) {
			uint32_t t = w * 64 + (uint32_t)__builtin_ctzll(x);
			bool in_zone = false;
			const struct instance_type *it = &s->cat->types[t];
			for (uint32_t o = 0; o < it->n_offerings; o++)
				in_zone |= it->offerings[o].available && (zones >> it->offerings[o].zone & 1);
			if (!in_zone)
				continue;
			any = true;
			for (uint32_t r = 0; r < s->n_res; r++)
				max.v[r] = MAX(max.v[r], s->np_alloc[np][t].v[r]);
		}
	if (!any)
		return snprintf(buf, size,
				"incompatible with nodepool %s: no instance type satisfies the pod's requirements in zones [%s]",
				pool, z);
	for (uint32_t r = 0; r < s->n_res; r++)
		if (need->v[r] > max.v[r]) {
			resource_text(s, r, need->v[r], what, sizeof(what));
			return snprintf(buf, size, "incompatible with nodepool %s: no instance type with %s in zones [%s]",
					pool, what, z);
		}
	char cpu[64], mem[64];
	resource_text(s, RES_CPU, need->v[RES_CPU], cpu, sizeof(cpu));
	resource_text(s, RES_MEMORY, need->v[RES_MEMORY], mem, sizeof(mem));
	return snprintf(buf, size,
			"incompatible with nodepool %s: no instance type has %s and %s together in zones [%s]",
			pool, cpu, mem, z);
}

/* Cheapest first, ≤ 60, while every minValues requirement keeps enough values. */
static uint32_t select_types(struct solver *s, const struct bin *b, struct priced *all, uint32_t n,
			     uint32_t *out)
{
	bool *taken = calloc(n ? n : 1, sizeof(*taken));
	uint32_t k = 0;

	if (!taken)
		return 0;
	for (uint32_t q = 0; q < b->reqs.n; q++) {
		const struct requirement *req = &b->reqs.v[q];
		uint32_t seen[SCHED_MAX_CANDIDATE_TYPES], n_seen = 0;
		if (!req->min_values)
			continue;
		for (uint32_t i = 0; i < k; i++) {
			const struct instance_type *it = &s->cat->types[out[i]];
			uint32_t v = labels_get(it->labels, it->n_labels, req->key), j;
			for (j = 0; j < n_seen && seen[j] != v; j++)
				;
			if (j == n_seen && n_seen < ARRAY_SIZE(seen))
				seen[n_seen++] = v;
		}
		for (uint32_t i = 0; i < n && n_seen < req->min_values && k < SCHED_MAX_CANDIDATE_TYPES; i++) {
			const struct instance_type *it = &s->cat->types[all[i].type];
			uint32_t v = labels_get(it->labels, it->n_labels, req->key), j;
			for (j = 0; j < n_seen && seen[j] != v; j++)
				;
			if (j < n_seen || taken[i])
				continue;
			seen[n_seen++] = v;
			taken[i] = true;
			out[k++] = i;
		}
	}
	for (uint32_t i = 0; i < n && k < SCHED_MAX_CANDIDATE_TYPES; i++)
		if (!taken[i]) {
			taken[i] = true;
			out[k++] = i;
		}
	free(taken);
	return k;
}

/* Prices of every type for these masks (-1: no offering), cached. */
static const double *type_prices(struct solver *s, uint64_t zones, unsigned cts, double *fallback)
{
	for (uint32_t i = 0; i < s->n_price_cache; i++)
		if (s->price_cache[i].zones == zones && s->price_cache[i].cts == cts)
			return s->price_cache[i].prices;
	double *p = s->n_price_cache < SCHED_PRICE_CACHE ? malloc(s->cat->n_types * sizeof(*p) + 1) : NULL;
	if (!p)
		p = fallback;
	for (uint32_t t = 0; t < s->cat->n_types; t++)
		p[t] = catalog_type_price(s->cat, t, zones, cts);
	if (p != fallback)
		s->price_cache[s->n_price_cache++] = (typeof(s->price_cache[0])){ zones, cts, p };
	return p;
}

/* Moves the k cheapest of all[0..n) to the front (quickselect), k < n. */
static void cheapest_first(struct priced *all, uint32_t n, uint32_t k)
{
	uint32_t lo = 0, hi = n - 1;

	while (lo < hi) {
		struct priced pivot = all[(lo + hi) / 2], tmp;
		uint32_t i = lo, j = hi;
		while (i <= j) {
			while (priced_cmp(&all[i], &pivot) < 0)
				i++;
			while (priced_cmp(&all[j], &pivot) > 0)
				j--;
			if (i <= j) {
				tmp = all[i];
				all[i] = all[j];
				all[j] = tmp;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
}

static int finish_claim(struct solver *s, const struct bin *b, struct sched_claim *out)
{
	struct priced *all = malloc(s->cat->n_types * sizeof(*all) + 1);
	double *fallback = malloc(s->cat->n_types * sizeof(double) + 1);
	uint32_t n = 0, idx[SCHED_MAX_CANDIDATE_TYPES], k;
	const double *prices;
	bool min_values = false;

	if (!all || !fallback) {
		free(all);
		free(fallback);
		return -ENOMEM;
	}
	prices = type_prices(s, b->zones, b->cts, fallback);
	for (uint32_t w = 0; w < s->words; w++)
		for (uint64_t x = b->cands[w]; x; x &= x - 1) {
			uint32_t t = w * 64 + (uint32_t)__builtin_ctzll(x);
			if (prices[t] < 0 || !resources_fit(&b->used, &s->np_alloc[b->nodepool][t], s->n_res))
				continue;
			all[n++] = (struct priced){ t, prices[t] };
		}
	for (uint32_t q = 0; q < b->reqs.n; q++)
		min_values |= b->reqs.v[q].min_values > 0;
	/* minValues may need types beyond the cheapest 60: sort them all then. */
	if (!min_values && n > SCHED_MAX_CANDIDATE_TYPES) {
		cheapest_first(all, n, SCHED_MAX_CANDIDATE_TYPES);
		n = SCHED_MAX_CANDIDATE_TYPES;
	}
	priced_sort(all, n);
	k = select_types(s, b, all, n, idx);
	for (uint32_t i = 1; i < k; i++) { /* back to price order (k ≤ 60) */
		uint32_t x = idx[i], j = i;
		for (; j > 0 && idx[j - 1] > x; j--)
			idx[j] = idx[j - 1];
		idx[j] = x;
	}
	memset(out, 0, sizeof(*out));
	out->types = malloc((k ? k : 1) * sizeof(*out->types));
	out->pods = malloc((b->n_pods ? b->n_pods : 1) * sizeof(*out->pods));
	if (!out->types || !out->pods || requirements_copy(&out->reqs, &b->reqs) < 0) {
		free(all);
		free(fallback);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < k; i++) {
		uint32_t t = all[idx[i]].type;
		const struct instance_type *it = &s->cat->types[t];
		out->types[i] = t;
		for (uint32_t o = 0; o < it->n_offerings; o++)
			if (it->offerings[o].available && (b->zones >> it->offerings[o].zone & 1) &&
			    (b->cts >> it->offerings[o].capacity_type & 1)) {
				out->zones |= 1ULL << it->offerings[o].zone;
				out->capacity_types |= 1u << it->offerings[o].capacity_type;
			}
	}
	out->n_types = k;
	out->price = k ? all[idx[0]].price : -1;
	out->nodepool = (uint32_t)b->nodepool;
	out->requests = b->used;
	memcpy(out->pods, b->pods, b->n_pods * sizeof(*out->pods));
	out->n_pods = b->n_pods;
	free(all);
	free(fallback);
	return k ? 0 : -EINVAL;
}

int finish_result(struct solver *s, struct sched_result **ret)
{
	struct sched_result *res = calloc(1, sizeof(*res));
	uint32_t n_claims = s->n_bins - s->c->n_nodes;
	int r;

	if (!res)
		return -ENOMEM;
	res->n_nodes = s->c->n_nodes;
	res->claims = calloc(n_claims ? n_claims : 1, sizeof(*res->claims));
	res->unschedulable = calloc(s->c->n_pods ? s->c->n_pods : 1, sizeof(*res->unschedulable));
	res->deferred = calloc(s->n_deferred ? s->n_deferred : 1, sizeof(*res->deferred));
	res->stopped = s->deferred != NULL;
	if (!res->claims || !res->unschedulable || !res->deferred) {
		sched_result_free(res);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n_claims; i++) {
		r = finish_claim(s, &s->bins[s->c->n_nodes + i], &res->claims[i]);
		res->n_claims = i + 1;
		if (r < 0) {
			sched_result_free(res);
			return r;
		}
	}
	res->pod_bin = TAKE_PTR(s->pod_bin);
	for (uint32_t p = 0; p < s->c->n_pods; p++) {
		/* Only pods there were to place: one already on a node (or on
		 * an in-flight NodeClaim) the model does not hold uses nothing
		 * we know, and is nobody's to report. */
		if (res->pod_bin[p] >= 0 || s->c->pods[p].node != STR_NONE)
			continue;
		if (s->deferred && s->deferred[p]) {
			res->deferred[res->n_deferred++] = p;
			continue;
		}
		struct sched_unschedulable *u = &res->unschedulable[res->n_unschedulable++];
		u->pod = p;
		u->reason = strdup(s->c->pods[p].invalid ? s->c->pods[p].invalid
				   : s->reasons[p]       ? s->reasons[p]
							 : "not placed");
		if (!u->reason) {
			sched_result_free(res);
			return -ENOMEM;
		}
	}
	*ret = res;
	return 0;
}

void sched_result_free(struct sched_result *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->n_claims; i++) {
		requirements_free(&r->claims[i].reqs);
		free(r->claims[i].types);
		free(r->claims[i].pods);
	}
	free(r->claims);
	for (uint32_t i = 0; i < r->n_unschedulable; i++)
		free(r->unschedulable[i].reason);
	free(r->unschedulable);
	free(r->deferred);
	free(r->pod_bin);
	free(r);
}
