/*
 * A solve as a launch plan (proto launch_plan): one planned NodeClaim per
 * new claim, with its NodePool and node class, requirements, the ≤ 60
 * candidate instance types cheapest first with their usable offerings,
 * the requests and the pods meant for it. Memory comes from an arena the
 * caller resets after sending. Called by the scheduler daemon.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/plan.h"

static const char *S(const struct cluster *c, uint32_t id)
{
	return strtab_str(&c->st, id);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* o's values: q's, as strings, sorted (as Karpenter lists a requirement's
 * set): the order does not depend on which string a model interned first
 * (a batch's NodePool before the catalog, or the catalog kept from an
 * earlier batch first: model/model-base.h). */
static int plan_values(struct arena *a, const struct cluster *c, const struct requirement *q,
		       struct proto_requirement *o)
{
	if (q->n_values > PROTO_MAX_REQUIREMENT_VALUES)
		return -E2BIG;
	o->values = arena_calloc(a, q->n_values + 1, sizeof(char *));
	if (!o->values)
		return -ENOMEM;
	for (uint32_t v = 0; v < q->n_values; v++)
		if (!(o->values[v] = arena_strdup(a, S(c, q->values[v]))))
			return -ENOMEM;
	o->n_values = q->n_values;
	if (o->n_values > 1)
		qsort(o->values, o->n_values, sizeof(*o->values), str_cmp);
	return 0;
}

static int plan_requirements(struct arena *a, const struct cluster *c, const struct requirements *r,
			     struct proto_requirement **ret, uint32_t *n_ret)
{
	/* Up to three a requirement: Gt, Lt and NotIn on one key. */
	struct proto_requirement *out = arena_calloc(a, 3 * (size_t)r->n + 1, sizeof(*out));
	uint32_t n = 0;

	if (!out)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->n && n < PROTO_MAX_REQUIREMENTS; i++) {
		const struct requirement *q = &r->v[i];
		struct proto_requirement *o = &out[n];

		o->key = arena_strdup(a, S(c, q->key));
		if (!o->key)
			return -ENOMEM;
		if ((q->complement || !q->n_values) && (q->gt != INT64_MIN || q->lt != INT64_MAX)) {
			/* A bounded integer range: Gt and/or Lt (one each at most). */
			char buf[32];
			o->op = q->gt != INT64_MIN ? PROTO_OP_GT : PROTO_OP_LT;
			snprintf(buf, sizeof(buf), "%lld",
				 (long long)(q->gt != INT64_MIN ? q->gt : q->lt));
			o->values = arena_calloc(a, 1, sizeof(char *));
			if (!o->values || !(o->values[0] = arena_strdup(a, buf)))
				return -ENOMEM;
			o->n_values = 1;
			n++;
			if (q->gt != INT64_MIN && q->lt != INT64_MAX && n < PROTO_MAX_REQUIREMENTS) {
				struct proto_requirement *lt = &out[n++];
				*lt = (struct proto_requirement){ .key = o->key, .op = PROTO_OP_LT };
				snprintf(buf, sizeof(buf), "%lld", (long long)q->lt);
				lt->values = arena_calloc(a, 1, sizeof(char *));
				if (!lt->values || !(lt->values[0] = arena_strdup(a, buf)))
					return -ENOMEM;
				lt->n_values = 1;
			}
			/* NotIn values beside the bounds: the launcher's re-check
			 * holds a plan to be within its NodePool, and a plan that
			 * dropped them would be refused every time. */
			if (q->complement && q->n_values && n < PROTO_MAX_REQUIREMENTS) {
				struct proto_requirement *ni = &out[n];

				int k;

				*ni = (struct proto_requirement){ .key = o->key, .op = PROTO_OP_NOT_IN,
								  .min_values = q->min_values };
				if ((k = plan_values(a, c, q, ni)) < 0)
					return k;
				n++;
			}
			continue;
		}
		if (q->complement)
			o->op = q->n_values ? PROTO_OP_NOT_IN : (q->absent_ok ? PROTO_OP_NOT_IN : PROTO_OP_EXISTS);
		else
			o->op = q->n_values ? PROTO_OP_IN : PROTO_OP_DOES_NOT_EXIST;
		if (q->complement && !q->n_values && q->absent_ok)
			continue; /* no constraint at all */
		o->min_values = q->min_values;
		int k = plan_values(a, c, q, o);

		if (k < 0)
			return k;
		n++;
	}
	*ret = out;
	*n_ret = n;
	return 0;
}

static int plan_candidates(struct arena *a, const struct cluster *c, const struct sched_claim *cl,
			   struct proto_planned_nodeclaim *o)
{
	o->instance_types = arena_calloc(a, cl->n_types + 1, sizeof(*o->instance_types));
	if (!o->instance_types)
		return -ENOMEM;
	for (uint32_t i = 0; i < cl->n_types && i < PROTO_MAX_CANDIDATES; i++) {
		const struct instance_type *it = &c->cat.types[cl->types[i]];
		struct proto_candidate *cand = &o->instance_types[o->n_instance_types++];

		cand->name = arena_strdup(a, S(c, it->name));
		cand->offerings = arena_calloc(a, it->n_offerings + 1, sizeof(*cand->offerings));
		if (!cand->name || !cand->offerings)
			return -ENOMEM;
		for (uint32_t f = 0; f < it->n_offerings && cand->n_offerings < PROTO_MAX_OFFERINGS; f++) {
			const struct offering *off = &it->offerings[f];
			if (!off->available || !(cl->zones >> off->zone & 1) ||
			    !(cl->capacity_types & 1u << off->capacity_type))
				continue;
			cand->offerings[cand->n_offerings++] = (struct proto_offering){
				.zone = arena_strdup(a, S(c, c->cat.zones[off->zone])),
				.capacity_type = off->capacity_type == CT_SPOT ? PROTO_CAPACITY_SPOT :
										PROTO_CAPACITY_ON_DEMAND,
				.price = off->price,
				.available = true,
			};
			if (!cand->offerings[cand->n_offerings - 1].zone)
				return -ENOMEM;
		}
	}
	return 0;
}

static int plan_requests(struct arena *a, const struct cluster *c, const struct resources *r,
			 struct proto_resource **ret, uint32_t *n_ret)
{
	struct proto_resource *out = arena_calloc(a, c->cat.n_resources + 1, sizeof(*out));
	uint32_t n = 0;

	if (!out)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->cat.n_resources; i++) {
		if (!r->v[i])
			continue;
		out[n].name = arena_strdup(a, S(c, c->cat.resource_names[i]));
		if (!out[n].name)
			return -ENOMEM;
		out[n++].value = r->v[i];
	}
	*ret = out;
	*n_ret = n;
	return 0;
}

/* splitmix64's finalizer: every input bit affects every output bit. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Five characters of [a-z0-9], as Karpenter's generated names (36^5). */
void nodeclaim_suffix(uint64_t nonce, uint64_t batch_id, uint32_t index, char out[static 6])
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint64_t h = mix64(mix64(nonce ^ mix64(batch_id)) + index);

	for (int i = 0; i < 5; i++) {
		out[i] = alphabet[h % 36];
		h /= 36;
	}
	out[5] = 0;
}

int plan_build(struct arena *a, const struct cluster *c, const struct sched_result *res,
	       const struct plan_context *ctx, struct proto_launch_plan *plan)
{
	char id[PROTO_MAX_NAME_LEN], suffix[6];
	int r;

	*plan = (struct proto_launch_plan){ .shard = ctx->shard, .batch_id = ctx->batch_id,
					     .state_seq = ctx->state_seq };
	snprintf(id, sizeof(id), "plan-%u-%llu-%llx", ctx->shard, (unsigned long long)ctx->batch_id,
		 (unsigned long long)ctx->nonce);
	plan->plan_id = arena_strdup(a, id);
	plan->nodeclaims = arena_calloc(a, res->n_claims + 1, sizeof(*plan->nodeclaims));
	if (!plan->plan_id || !plan->nodeclaims)
		return -ENOMEM;
	for (uint32_t k = 0; k < res->n_claims && k < PROTO_MAX_PLAN_NODECLAIMS; k++) {
		const struct sched_claim *cl = &res->claims[k];
		struct proto_planned_nodeclaim *o = &plan->nodeclaims[plan->n_nodeclaims++];
		const char *pool = S(c, c->nodepools[cl->nodepool].name);

		/* Karpenter names NodeClaims <nodepool>-<5 random characters>; ours
		 * are stable if the plan is replayed and mix every bit of the
		 * batch's nonce, its number and the claim's index. */
		nodeclaim_suffix(ctx->nonce, ctx->batch_id, k, suffix);
		snprintf(id, sizeof(id), "%s-%s", pool, suffix);
		o->id = arena_strdup(a, id);
		o->nodepool = arena_strdup(a, pool);
		o->nodeclass = ctx->nodeclass_of ? (char *)ctx->nodeclass_of(pool, ctx->userdata) : NULL;
		if (!o->id || !o->nodepool)
			return -ENOMEM;
		if (o->nodeclass && !(o->nodeclass = arena_strdup(a, o->nodeclass)))
			return -ENOMEM;
		if ((r = plan_requirements(a, c, &cl->reqs, &o->requirements, &o->n_requirements)) < 0 ||
		    (r = plan_candidates(a, c, cl, o)) < 0 ||
		    (r = plan_requests(a, c, &cl->requests, &o->requests, &o->n_requests)) < 0)
			return r;
		o->pods = arena_calloc(a, cl->n_pods + 1, sizeof(char *));
		if (!o->pods)
			return -ENOMEM;
		for (uint32_t i = 0; i < cl->n_pods && o->n_pods < PROTO_MAX_POD_KEYS; i++) {
			char key[2 * PROTO_MAX_NAME_LEN + 2];
			const struct pod *p = &c->pods[cl->pods[i]];
			snprintf(key, sizeof(key), "%s/%s", S(c, p->ns), S(c, p->name));
			if (!(o->pods[o->n_pods++] = arena_strdup(a, key)))
				return -ENOMEM;
		}
	}
	return 0;
}
