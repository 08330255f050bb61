/*
 * The re-check of a planned NodeClaim against its NodePool (see
 * admit-requirements.h), with the scheduler's requirement code: the
 * NodePool's requirements as the solver builds them (nodepool_requirements()),
 * a small catalog model of the plan's candidate types loaded from the
 * launcher's catalog with the scheduler's loader (catalog_load_proto()), and
 * the scheduler's filters over it (catalog_filter(), catalog_zone_mask(),
 * catalog_ct_mask(), requirement_allows()). Karpenter's AWS provider does
 * the same before CreateFleet (aws/karpenter-provider-aws
 * pkg/cloudprovider/cloudprovider.go resolveInstanceTypes: requirements
 * Compatible, offerings Compatible and Available) and refuses a launch
 * whose options no longer satisfy minValues (kubernetes-sigs/karpenter
 * pkg/cloudprovider/types.go InstanceTypes.SatisfiesMinValues). Called by
 * admit.c; allocates only its throwaway model.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/admit-requirements.h"
#include "model/catalog-proto.h"
#include "model/cluster.h"
#include "model/from-state.h"
#include "proto/schema.h"

static const char *const reason_names[_ADMIT_DROP_MAX] = {
	[ADMIT_DROP_UNKNOWN_TYPE] = "unknown_instance_type",
	[ADMIT_DROP_REQUIREMENTS] = "requirements",
	[ADMIT_DROP_NOT_OFFERED] = "not_offered",
	[ADMIT_DROP_NODECLASS] = "nodeclass",
	[ADMIT_DROP_UNAVAILABLE] = "unavailable",
};

const char *admit_drop_reason_name(enum admit_drop_reason r)
{
	return r < _ADMIT_DROP_MAX ? reason_names[r] : "unknown";
}

struct checker {
	const struct admit_requirements_input *in;
	struct proto_planned_nodeclaim *p;
	struct admit_requirements_result *res;
	struct cluster *c;
	struct requirements pool, claim, both;
	struct requirements amis[PROTO_MAX_RESOLVED];
	uint32_t n_amis;
	uint32_t windows_build; /* a Windows AMI family's (os fixed); STR_NONE: Linux */
	uint64_t filtered[SCHED_MAX_TYPE_WORDS]; /* catalog_filter_pool(both) */
	uint64_t zones, subnet_zones;            /* over catalog zones */
	unsigned cts;
	bool check_subnets;
	uint32_t kept_types[PROTO_MAX_CANDIDATES]; /* catalog indexes of the candidates kept */
	uint32_t n_kept;
	char first[512]; /* the first refusal's account, for the NodePool's Event */
};

static void checker_done(struct checker *k)
{
	requirements_free(&k->pool);
	requirements_free(&k->claim);
	requirements_free(&k->both);
	for (uint32_t i = 0; i < k->n_amis; i++)
		requirements_free(&k->amis[i]);
	cluster_free(k->c);
}

static const char *S(const struct checker *k, uint32_t id)
{
	return id == STR_NONE ? "(none)" : strtab_str(&k->c->st, id);
}

static void drop(struct checker *k, const char *type, const char *zone, uint8_t ct,
		 enum admit_drop_reason reason, const char *why)
{
	struct admit_drop d = { type, zone, ct, reason, why };

	k->res->dropped[reason]++;
	if (!k->first[0] && reason != ADMIT_DROP_UNAVAILABLE) {
		if (zone)
			snprintf(k->first, sizeof(k->first), "%s in %s (%s): %s", type, zone,
				 proto_capacity_type_name(ct), why);
		else
			snprintf(k->first, sizeof(k->first), "%s: %s", type, why);
	}
	if (k->in->dropped)
		k->in->dropped(&d, k->in->userdata);
}

/* An unconstrained requirement (NotIn [] and no bounds) says nothing. */
static bool says_nothing(const struct requirement *q)
{
	return q->complement && q->absent_ok && !q->n_values && q->gt == INT64_MIN && q->lt == INT64_MAX;
}

/*
 * Are the NodeClaim's requirements within the NodePool's: does the
 * NodePool's narrow none of them (claim ∩ pool = claim)? An explicit set
 * is compared by its values alone: the intersection has already dropped
 * those outside its bounds.
 */
static int claim_within_pool(struct checker *k, char *why, size_t size)
{
	char a[256], b[256];

	for (uint32_t i = 0; i < k->both.n; i++) {
		const struct requirement *x = &k->both.v[i];
		const struct requirement *c = requirements_get(&k->claim, x->key);
		const struct requirement *pq = requirements_get(&k->pool, x->key);
		bool same = c && x->complement == c->complement && x->absent_ok == c->absent_ok &&
			    x->min_values == c->min_values && x->n_values == c->n_values &&
			    (!x->n_values || !memcmp(x->values, c->values, x->n_values * sizeof(uint32_t))) &&
			    (!x->complement || (x->gt == c->gt && x->lt == c->lt));

		if (same || (!c && says_nothing(x)))
			continue;
		if (c)
			requirement_format(c, &k->c->st, a, sizeof(a));
		requirement_format(pq ? pq : x, &k->c->st, b, sizeof(b));
		snprintf(why, size, "its requirements are not within NodePool %s's: %s%s, the NodePool "
			 "allows %s", k->in->nodepool->name, c ? "it asks " : "it leaves out ",
			 c ? a : S(k, x->key), b);
		return -EPERM;
	}
	return 0;
}

/* The candidates' catalog entries (each name once) as a throwaway catalog. */
static int load_candidates(struct checker *k, char *why, size_t size)
{
	struct proto_instance_type *types = calloc(k->p->n_instance_types + 1, sizeof(*types));
	struct proto_catalog m = { .region = (char *)k->in->region, .instance_types = types };
	char err[256];
	int r;

	if (!types)
		return -ENOMEM;
	for (uint32_t i = 0; i < k->p->n_instance_types; i++) {
		const struct proto_instance_type *it =
			k->in->find_type(k->p->instance_types[i].name, k->in->userdata);
		bool listed = false;

		for (uint32_t j = 0; it && j < m.n_instance_types && !listed; j++)
			listed = streq(types[j].name, it->name);
		if (it && !listed)
			types[m.n_instance_types++] = *it;
	}
	r = m.n_instance_types ? catalog_load_proto(&k->c->cat, &m, err, sizeof(err)) : 0;
	if (r >= 0)
		r = catalog_finalize(&k->c->cat);
	else if (r != -ENOMEM)
		snprintf(why, size, "Failed to load its instance types from the catalog: %s", err);
	free(types);
	return r;
}

/* The EC2NodeClass's resolved subnets (their zones) and AMIs (their requirements). */
static int load_nodeclass(struct checker *k)
{
	const struct proto_nodeclass *nc = k->in->nodeclass;
	int r;

	if (!nc)
		return 0;
	k->check_subnets = nc->n_status_subnets > 0;
	for (uint32_t i = 0; i < nc->n_status_subnets; i++) {
		uint32_t z = strtab_lookup(&k->c->st, nc->status_subnets[i].zone ?: "");
		int zi = z == STR_NONE ? -1 : catalog_zone_find(&k->c->cat, z);

		if (zi >= 0)
			k->subnet_zones |= 1ULL << zi;
	}
	for (uint32_t i = 0; i < nc->n_status_amis && i < PROTO_MAX_RESOLVED; i++) {
		k->n_amis++;
		r = cluster_requirements_from_proto(k->c, &k->amis[i], nc->status_amis[i].requirements,
						    nc->status_amis[i].n_requirements);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Keys that are an instance type's own labels (catalog.h; the TSV and EC2
 * loaders give every type os and region, and some types the others). */
static bool type_label_key(uint32_t key)
{
	return key == K_REGION || key == K_INSTANCE_TYPE || key == K_ARCH || key == K_OS ||
	       (key >= K_INSTANCE_CATEGORY && key <= K_INSTANCE_ENCRYPTION_IN_TRANSIT);
}

/* Does a requirement on the type's own labels refuse type t? Says which. */
static bool type_refused(struct checker *k, uint32_t t, char *why, size_t size)
{
	const struct instance_type *it = &k->c->cat.types[t];
	char q[256];

	for (uint32_t i = 0; i < k->both.n; i++) {
		const struct requirement *req = &k->both.v[i];
		uint32_t v;

		/* a Windows family's os is its own, not the catalog's Linux */
		if (!type_label_key(req->key) || (req->key == K_OS && k->windows_build != STR_NONE))
			continue;
		v = labels_get(it->labels, it->n_labels, req->key);
		if (requirement_allows(req, &k->c->st, v))
			continue;
		requirement_format(req, &k->c->st, q, sizeof(q));
		snprintf(why, size, "NodePool %s requires %s, the instance type has %s", k->in->nodepool->name,
			 q, v == STR_NONE ? "no such label" : S(k, v));
		return true;
	}
	if (!bit_test(k->filtered, t) && it->metal) {
		snprintf(why, size, "bare metal, which NodePool %s does not name", k->in->nodepool->name);
		return true;
	}
	return false;
}

/* Has the EC2NodeClass an AMI for type t (amifamily.MapToInstanceTypes: an
 * AMI whose requirements the type's labels meet; a label the type lacks is
 * allowed)? */
static bool type_has_ami(struct checker *k, uint32_t t)
{
	const struct instance_type *it = &k->c->cat.types[t];

	if (!k->n_amis)
		return true;
	for (uint32_t a = 0; a < k->n_amis; a++) {
		bool fits = true;

		for (uint32_t i = 0; i < k->amis[a].n && fits; i++) {
			uint32_t key = k->amis[a].v[i].key;
			uint32_t v = labels_get(it->labels, it->n_labels, key);

			/* a Windows family's os is its own, not the catalog's */
			if (k->windows_build != STR_NONE && (key == K_OS || key == K_WINDOWS_BUILD))
				continue;
			fits = v == STR_NONE || requirement_allows(&k->amis[a].v[i], &k->c->st, v);
		}
		if (fits)
			return true;
	}
	return false;
}

/* Why offering o of type t may not be launched, or NULL. */
static const char *offering_refused(struct checker *k, uint32_t t, const struct proto_offering *o,
				    enum admit_drop_reason *reason, char *why, size_t size)
{
	const struct instance_type *it = &k->c->cat.types[t];
	uint32_t zone = strtab_lookup(&k->c->st, o->zone ?: "");
	int zi = zone == STR_NONE ? -1 : catalog_zone_find(&k->c->cat, zone);
	unsigned ct = o->capacity_type == PROTO_CAPACITY_SPOT ? CT_SPOT : CT_ON_DEMAND;
	bool offered = false;

	*reason = ADMIT_DROP_REQUIREMENTS;
	if (zi < 0 || !(k->zones >> zi & 1)) {
		if (zi < 0)
			*reason = ADMIT_DROP_NOT_OFFERED;
		snprintf(why, size, zi < 0 ? "the catalog offers it in no such zone"
					   : "NodePool %s's requirements do not allow the zone",
			 k->in->nodepool->name);
		return why;
	}
	if (o->capacity_type == PROTO_CAPACITY_RESERVED || !(k->cts >> ct & 1)) {
		snprintf(why, size, "NodePool %s's requirements do not allow the capacity type",
			 k->in->nodepool->name);
		return why;
	}
	for (uint32_t f = 0; f < it->n_offerings && !offered; f++)
		offered = it->offerings[f].zone == zi && it->offerings[f].capacity_type == ct &&
			  it->offerings[f].available;
	if (!offered) {
		*reason = ADMIT_DROP_NOT_OFFERED;
		snprintf(why, size, "the catalog has no such available offering");
		return why;
	}
	if (k->check_subnets && !(k->subnet_zones >> zi & 1)) {
		*reason = ADMIT_DROP_NODECLASS;
		snprintf(why, size, "no subnet of EC2NodeClass %s is in the zone", k->in->nodeclass->name);
		return why;
	}
	if (k->in->unavailable &&
	    k->in->unavailable(strtab_str(&k->c->st, it->name), o->zone, o->capacity_type, k->in->userdata)) {
		*reason = ADMIT_DROP_UNAVAILABLE;
		snprintf(why, size, "the offering is in the unavailable-offerings cache");
		return why;
	}
	return NULL;
}

/* The catalog index of a type by name, or -1. */
static int32_t type_index(const struct checker *k, const char *name)
{
	uint32_t id = strtab_lookup(&k->c->st, name);

	for (uint32_t t = 0; id != STR_NONE && t < k->c->cat.n_types; t++)
		if (k->c->cat.types[t].name == id)
			return (int32_t)t;
	return -1;
}

/* Keeps candidate c's offerings that may be launched; false when none. */
static bool keep_candidate(struct checker *k, struct proto_candidate *c)
{
	int32_t t = type_index(k, c->name);
	char why[512];
	uint32_t n = 0;

	if (t < 0) {
		drop(k, c->name, NULL, 0, ADMIT_DROP_UNKNOWN_TYPE, "not in the launcher's instance-type catalog");
		return false;
	}
	for (uint32_t i = 0; i < k->n_kept; i++)
		if (k->kept_types[i] == (uint32_t)t) {
			drop(k, c->name, NULL, 0, ADMIT_DROP_NOT_OFFERED, "listed twice");
			return false;
		}
	if (type_refused(k, (uint32_t)t, why, sizeof(why))) {
		drop(k, c->name, NULL, 0, ADMIT_DROP_REQUIREMENTS, why);
		return false;
	}
	if (!type_has_ami(k, (uint32_t)t)) {
		snprintf(why, sizeof(why), "EC2NodeClass %s has no AMI for its architecture %s",
			 k->in->nodeclass->name,
			 S(k, labels_get(k->c->cat.types[t].labels, k->c->cat.types[t].n_labels, K_ARCH)));
		drop(k, c->name, NULL, 0, ADMIT_DROP_NODECLASS, why);
		return false;
	}
	for (uint32_t i = 0; i < c->n_offerings; i++) {
		enum admit_drop_reason reason;

		if (offering_refused(k, (uint32_t)t, &c->offerings[i], &reason, why, sizeof(why)))
			drop(k, c->name, c->offerings[i].zone, c->offerings[i].capacity_type, reason, why);
		else
			c->offerings[n++] = c->offerings[i];
	}
	c->n_offerings = n;
	if (!n)
		return false;
	if (!bit_test(k->filtered, (uint32_t)t)) {
		/* Cannot happen: a type the filter refuses has no offering left
		 * above. Refused all the same, should the two ever part. */
		drop(k, c->name, NULL, 0, ADMIT_DROP_REQUIREMENTS, "NodePool's requirements refuse it");
		return false;
	}
	k->kept_types[k->n_kept++] = (uint32_t)t;
	return true;
}

/* minValues: enough distinct values of each such key among the types kept
 * (the solver counts them the same way, model/solver.c). */
static int min_values_met(struct checker *k, char *why, size_t size)
{
	for (uint32_t q = 0; q < k->both.n; q++) {
		const struct requirement *req = &k->both.v[q];
		uint32_t seen[PROTO_MAX_CANDIDATES], n = 0;

		if (!req->min_values)
			continue;
		for (uint32_t i = 0; i < k->n_kept; i++) {
			const struct instance_type *it = &k->c->cat.types[k->kept_types[i]];
			uint32_t v = labels_get(it->labels, it->n_labels, req->key), j;

			for (j = 0; j < n && seen[j] != v; j++)
				;
			if (j == n)
				seen[n++] = v;
		}
		if (n < req->min_values) {
			snprintf(why, size, "minValues %u of %s is not met: the %u instance type option(s) "
				 "left give %u value(s)", req->min_values, S(k, req->key), k->n_kept, n);
			return -EPERM;
		}
	}
	return 0;
}

static int check(struct checker *k, char *why, size_t size)
{
	const struct proto_nodepool *np = k->in->nodepool;
	uint32_t keep = 0, n_candidates = k->p->n_instance_types;
	int r;

	if (k->p->nodeclass && !streq_ptr(k->p->nodeclass, np->nodeclass_ref.name)) {
		snprintf(why, size, "it names EC2NodeClass %s, NodePool %s launches with %s", k->p->nodeclass,
			 np->name, np->nodeclass_ref.name ?: "none");
		return -EPERM;
	}
	if ((r = cluster_new(&k->c)) < 0)
		return r;
	if ((r = nodepool_requirements(k->c, np, &k->pool)) < 0) {
		if (r == -EINVAL)
			snprintf(why, size, "NodePool %s's requirements cannot be read", np->name);
		return r;
	}
	if ((r = nodeclass_os_requirements(k->c, k->in->nodeclass, &k->pool, &k->windows_build)) < 0)
		return r;
	r = cluster_requirements_from_proto(k->c, &k->claim, k->p->requirements, k->p->n_requirements);
	if (r == -EINVAL)
		snprintf(why, size, "its requirements cannot be read (Gt/Lt need one integer)");
	if (r < 0 || (r = requirements_copy(&k->both, &k->claim)) < 0 ||
	    (r = requirements_intersect(&k->both, &k->pool, &k->c->st)) < 0 ||
	    (r = claim_within_pool(k, why, size)) < 0 || (r = load_candidates(k, why, size)) < 0 ||
	    (r = load_nodeclass(k)) < 0)
		return r;
	catalog_filter_pool(&k->c->cat, &k->both, k->windows_build != STR_NONE, k->filtered);
	k->zones = catalog_zone_mask(&k->c->cat, &k->both);
	k->cts = catalog_ct_mask(&k->both, &k->c->st);
	for (uint32_t i = 0; i < n_candidates; i++)
		if (keep_candidate(k, &k->p->instance_types[i]))
			k->p->instance_types[keep++] = k->p->instance_types[i];
	k->p->n_instance_types = keep;
	if (!keep && k->first[0]) {
		snprintf(why, size, "none of its %u instance type option(s) may be launched by NodePool %s; "
			 "%s", n_candidates, np->name, k->first);
		return -EPERM;
	}
	return keep ? min_values_met(k, why, size) : 0;
}

int admit_requirements(const struct admit_requirements_input *in, struct proto_planned_nodeclaim *p,
		       struct admit_requirements_result *ret, char *why, size_t size)
{
	struct checker *k = calloc(1, sizeof(*k));
	int r;

	why[0] = '\0';
	*ret = (struct admit_requirements_result){ 0 };
	if (!k)
		return -ENOMEM;
	*k = (struct checker){ .in = in, .p = p, .res = ret, .windows_build = STR_NONE };
	r = check(k, why, size);
	checker_done(k);
	free(k);
	return r;
}
