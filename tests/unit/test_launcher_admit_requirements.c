/*
 * The re-check at admission (launcher/admit-requirements.c): forged plans
 * whose candidates the NodePool forbids (instance types outside its
 * requirements under every operator, a zone no subnet of its EC2NodeClass
 * covers, an architecture its AMIs lack, an offering in the unavailable
 * cache, minValues no longer met) launch nothing of it; an honest plan
 * passes untouched.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/admit-requirements.h"

#define REGION "us-west-2"
#define REQ(k, o, v, n, m)                                                                  \
	(struct proto_requirement){ .key = (k), .op = (o), .values = (v), .n_values = (n), \
				    .min_values = (m) }
#define OFFER(z, ct, p) \
	(struct proto_offering){ .zone = (z), .capacity_type = (ct), .price = (p), .available = true }
#define MAX_CANDS 8

/* ---- a small catalog: name, arch, category, family, cpus, gpus ---- */

struct type_fixture {
	const char *name, *arch, *category, *family, *cpu, *gpus;
};

static const struct type_fixture fixtures[] = {
	{ "m5.large", "amd64", "m", "m5", "2", NULL },
	{ "m5.xlarge", "amd64", "m", "m5", "4", NULL },
	{ "c6g.large", "arm64", "c", "c6g", "2", NULL },
	{ "r5.large", "amd64", "r", "r5", "2", NULL },
	{ "p5.48xlarge", "amd64", "p", "p5", "192", "8" },
};
#define N_TYPES (sizeof(fixtures) / sizeof(fixtures[0]))

static const char *const zones[] = { "us-west-2a", "us-west-2b", "us-west-2c" };

static struct proto_kv labels[N_TYPES][8];
static struct proto_resource resources[N_TYPES][2];
static struct proto_offering offerings[N_TYPES][6];
static struct proto_instance_type types[N_TYPES];

static void setup(void)
{
	for (size_t t = 0; t < N_TYPES; t++) {
		const struct type_fixture *f = &fixtures[t];
		uint32_t n = 0;

		labels[t][n++] = (struct proto_kv){ "kubernetes.io/arch", (char *)f->arch };
		labels[t][n++] = (struct proto_kv){ "kubernetes.io/os", "linux" };
		labels[t][n++] = (struct proto_kv){ "topology.kubernetes.io/region", REGION };
		labels[t][n++] = (struct proto_kv){ "karpenter.k8s.aws/instance-category", (char *)f->category };
		labels[t][n++] = (struct proto_kv){ "karpenter.k8s.aws/instance-family", (char *)f->family };
		labels[t][n++] = (struct proto_kv){ "karpenter.k8s.aws/instance-cpu", (char *)f->cpu };
		if (f->gpus)
			labels[t][n++] = (struct proto_kv){ "karpenter.k8s.aws/instance-gpu-count", (char *)f->gpus };
		resources[t][0] = (struct proto_resource){ "cpu", atoll(f->cpu) * 1000 };
		resources[t][1] = (struct proto_resource){ "memory", 8LL << 30 };
		for (uint32_t z = 0; z < 3; z++) {
			offerings[t][2 * z] = OFFER((char *)zones[z], PROTO_CAPACITY_ON_DEMAND, 0.1);
			offerings[t][2 * z + 1] = OFFER((char *)zones[z], PROTO_CAPACITY_SPOT, 0.03);
		}
		types[t] = (struct proto_instance_type){
			.name = (char *)f->name, .labels = labels[t], .n_labels = n,
			.capacity = resources[t], .n_capacity = 2, .allocatable = resources[t],
			.n_allocatable = 2, .offerings = offerings[t], .n_offerings = 6,
		};
	}
}

TestSuite(admit_requirements, .init = setup);

/* ---- the launcher's side: catalog, unavailable cache, what was dropped ---- */

struct world {
	const char *unavailable_type, *unavailable_zone;
	uint8_t unavailable_ct;
	unsigned n_drops;
	struct {
		char type[64], zone[32], why[512];
		enum admit_drop_reason reason;
	} drops[64];
};

static const struct proto_instance_type *find_type(const char *name, void *userdata)
{
	(void)userdata;
	for (size_t t = 0; t < N_TYPES; t++)
		if (!strcmp(types[t].name, name))
			return &types[t];
	return NULL;
}

static bool unavailable(const char *type, const char *zone, uint8_t ct, void *userdata)
{
	struct world *w = userdata;

	return w->unavailable_type && !strcmp(type, w->unavailable_type) &&
	       !strcmp(zone, w->unavailable_zone) && ct == w->unavailable_ct;
}

static void dropped(const struct admit_drop *d, void *userdata)
{
	struct world *w = userdata;

	cr_assert_lt(w->n_drops, 64);
	snprintf(w->drops[w->n_drops].type, sizeof(w->drops[0].type), "%s", d->instance_type);
	snprintf(w->drops[w->n_drops].zone, sizeof(w->drops[0].zone), "%s", d->zone ?: "");
	snprintf(w->drops[w->n_drops].why, sizeof(w->drops[0].why), "%s", d->why);
	w->drops[w->n_drops++].reason = d->reason;
}

/* ---- NodePool, EC2NodeClass, plan ---- */

static char *category_values[] = { "c", "m", "r" };
static char *amd64[] = { "amd64" };
static char *nodepool_name[] = { "default" };
static char *on_demand[] = { "on-demand" };

static struct proto_requirement pool_reqs[4];
static struct proto_nodepool pool;

/* NodePool "default": instance-category In [c m r] plus extra (may be NULL). */
static void nodepool(const struct proto_requirement *extra)
{
	uint32_t n = 0;

	pool_reqs[n++] = REQ("karpenter.k8s.aws/instance-category", PROTO_OP_IN, category_values, 3, 0);
	if (extra)
		pool_reqs[n++] = *extra;
	pool = (struct proto_nodepool){ .name = "default", .uid = "u1", .requirements = pool_reqs,
					 .n_requirements = n,
					 .nodeclass_ref = { .name = "default" } };
}

static struct proto_resolved subnets[3];
static struct proto_requirement ami_req = REQ("kubernetes.io/arch", PROTO_OP_IN, amd64, 1, 0);
static struct proto_resolved amis[1];
static struct proto_nodeclass nodeclass;

/* EC2NodeClass "default" with subnets in the first n_zones zones and one
 * amd64 AMI (with_ami). */
static void ec2nodeclass(uint32_t n_zones, bool with_ami)
{
	for (uint32_t z = 0; z < n_zones; z++)
		subnets[z] = (struct proto_resolved){ .id = "subnet-x", .zone = (char *)zones[z] };
	amis[0] = (struct proto_resolved){ .id = "ami-1", .requirements = &ami_req, .n_requirements = 1 };
	nodeclass = (struct proto_nodeclass){ .name = "default", .uid = "u2", .status_subnets = subnets,
					      .n_status_subnets = n_zones, .status_amis = amis,
					      .n_status_amis = with_ami ? 1 : 0 };
}

/* A planned NodeClaim as the scheduler writes it: the NodePool's
 * requirements (and on-demand, its default) plus extra, and candidates
 * offered on-demand in every zone. */
struct plan {
	struct proto_requirement reqs[8];
	struct proto_candidate cands[MAX_CANDS];
	struct proto_offering offs[MAX_CANDS][6];
	struct proto_planned_nodeclaim p;
};

static void plan(struct plan *pl, const char *const *names, uint32_t n, const struct proto_requirement *extra)
{
	uint32_t r = 0;

	memset(pl, 0, sizeof(*pl));
	for (uint32_t i = 0; i < pool.n_requirements; i++)
		pl->reqs[r++] = pool.requirements[i];
	pl->reqs[r++] = REQ("karpenter.sh/nodepool", PROTO_OP_IN, nodepool_name, 1, 0);
	pl->reqs[r++] = REQ("karpenter.sh/capacity-type", PROTO_OP_IN, on_demand, 1, 0);
	if (extra)
		pl->reqs[r++] = *extra;
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t z = 0; z < 3; z++)
			pl->offs[i][z] = OFFER((char *)zones[z], PROTO_CAPACITY_ON_DEMAND, 0.1);
		pl->cands[i] = (struct proto_candidate){ .name = (char *)names[i], .offerings = pl->offs[i],
							 .n_offerings = 3 };
	}
	pl->p = (struct proto_planned_nodeclaim){ .id = "default-abcde", .nodepool = "default",
						  .nodeclass = "default", .requirements = pl->reqs,
						  .n_requirements = r, .instance_types = pl->cands,
						  .n_instance_types = n };
}

static int check(struct world *w, struct plan *pl, bool with_nodeclass, char *why, size_t size,
		 struct admit_requirements_result *res)
{
	struct admit_requirements_input in = {
		.nodepool = &pool, .nodeclass = with_nodeclass ? &nodeclass : NULL, .region = REGION,
		.find_type = find_type, .unavailable = unavailable, .dropped = dropped, .userdata = w,
	};

	return admit_requirements(&in, &pl->p, res, why, size);
}

static bool kept(const struct plan *pl, const char *name)
{
	for (uint32_t i = 0; i < pl->p.n_instance_types; i++)
		if (!strcmp(pl->p.instance_types[i].name, name))
			return true;
	return false;
}

/* ---- the tests ---- */

Test(admit_requirements, an_honest_plan_passes_untouched)
{
	static const char *const names[] = { "m5.large", "r5.large", "c6g.large" };
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	ec2nodeclass(3, false);
	plan(&pl, names, 3, NULL);
	cr_assert_eq(check(&w, &pl, true, why, sizeof(why), &res), 0, "%s", why);
	cr_assert_eq(pl.p.n_instance_types, 3);
	for (uint32_t i = 0; i < 3; i++)
		cr_assert_eq(pl.p.instance_types[i].n_offerings, 3);
	cr_assert_eq(w.n_drops, 0);
}

Test(admit_requirements, an_instance_type_outside_the_nodepools_categories_is_dropped)
{
	static const char *const names[] = { "p5.48xlarge", "m5.large" };
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	ec2nodeclass(3, true);
	plan(&pl, names, 2, NULL);
	cr_assert_eq(check(&w, &pl, true, why, sizeof(why), &res), 0, "%s", why);
	cr_assert_eq(pl.p.n_instance_types, 1);
	cr_assert(kept(&pl, "m5.large"));
	cr_assert_eq(res.dropped[ADMIT_DROP_REQUIREMENTS], 1);
	cr_assert_eq(w.n_drops, 1);
	cr_assert_str_eq(w.drops[0].type, "p5.48xlarge");
	cr_assert(strstr(w.drops[0].why, "karpenter.k8s.aws/instance-category In [c m r]"), "%s", w.drops[0].why);
}

Test(admit_requirements, a_plan_of_forbidden_types_alone_is_refused_saying_why)
{
	static const char *const names[] = { "p5.48xlarge" };
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	ec2nodeclass(3, true);
	plan(&pl, names, 1, NULL);
	cr_assert_eq(check(&w, &pl, true, why, sizeof(why), &res), -EPERM);
	cr_assert_eq(pl.p.n_instance_types, 0);
	cr_assert(strstr(why, "p5.48xlarge"), "%s", why);
	cr_assert(strstr(why, "NodePool default"), "%s", why);
}

Test(admit_requirements, an_instance_type_unknown_to_the_catalog_is_dropped)
{
	static const char *const names[] = { "x9.huge", "m5.large" };
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	plan(&pl, names, 2, NULL);
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), 0, "%s", why);
	cr_assert_eq(res.dropped[ADMIT_DROP_UNKNOWN_TYPE], 1);
	cr_assert(kept(&pl, "m5.large") && !kept(&pl, "x9.huge"));
}

Test(admit_requirements, a_plan_of_types_the_catalog_does_not_know_is_refused)
{
	static const char *const names[] = { "x9.huge", "y1.tiny" };
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	ec2nodeclass(3, true);
	plan(&pl, names, 2, NULL);
	cr_assert_eq(check(&w, &pl, true, why, sizeof(why), &res), -EPERM);
	cr_assert_eq(res.dropped[ADMIT_DROP_UNKNOWN_TYPE], 2);
	cr_assert(strstr(why, "x9.huge: not in the launcher's instance-type catalog"), "%s", why);
}

Test(admit_requirements, an_offering_in_a_zone_no_subnet_covers_is_dropped)
{
	static const char *const names[] = { "m5.large" };
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	ec2nodeclass(2, true); /* us-west-2a and 2b only */
	plan(&pl, names, 1, NULL);
	cr_assert_eq(check(&w, &pl, true, why, sizeof(why), &res), 0, "%s", why);
	cr_assert_eq(pl.p.n_instance_types, 1);
	cr_assert_eq(pl.p.instance_types[0].n_offerings, 2);
	for (uint32_t i = 0; i < 2; i++)
		cr_assert_str_neq(pl.p.instance_types[0].offerings[i].zone, "us-west-2c");
	cr_assert_eq(res.dropped[ADMIT_DROP_NODECLASS], 1);
	cr_assert_str_eq(w.drops[0].zone, "us-west-2c");
}

Test(admit_requirements, an_architecture_the_ami_lacks_is_dropped)
{
	static const char *const names[] = { "c6g.large", "m5.large" };
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	ec2nodeclass(3, true); /* amd64 only */
	plan(&pl, names, 2, NULL);
	cr_assert_eq(check(&w, &pl, true, why, sizeof(why), &res), 0, "%s", why);
	cr_assert(!kept(&pl, "c6g.large") && kept(&pl, "m5.large"));
	cr_assert_eq(res.dropped[ADMIT_DROP_NODECLASS], 1);
	cr_assert(strstr(w.drops[0].why, "arm64"), "%s", w.drops[0].why);
}

Test(admit_requirements, an_offering_in_the_unavailable_cache_is_dropped)
{
	static const char *const names[] = { "m5.large" };
	struct world w = { .unavailable_type = "m5.large", .unavailable_zone = "us-west-2b",
			   .unavailable_ct = PROTO_CAPACITY_ON_DEMAND };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	plan(&pl, names, 1, NULL);
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), 0, "%s", why);
	cr_assert_eq(pl.p.instance_types[0].n_offerings, 2);
	cr_assert_eq(res.dropped[ADMIT_DROP_UNAVAILABLE], 1);
	cr_assert_str_eq(w.drops[0].zone, "us-west-2b");
}

Test(admit_requirements, a_claim_left_without_offerings_for_want_of_capacity_alone_is_not_refused_here)
{
	static const char *const names[] = { "m5.large" };
	struct world w = { .unavailable_type = "m5.large", .unavailable_zone = "us-west-2a",
			   .unavailable_ct = PROTO_CAPACITY_ON_DEMAND };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	plan(&pl, names, 1, NULL);
	pl.cands[0].n_offerings = 1; /* us-west-2a only */
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), 0, "%s", why);
	cr_assert_eq(pl.p.n_instance_types, 0, "the caller reports it as insufficient capacity");
}

Test(admit_requirements, min_values_not_met_after_dropping_refuses_the_claim)
{
	static char *families[] = { "c6g", "m5", "r5" };
	static const char *const names[] = { "m5.large", "c6g.large", "r5.large" };
	struct proto_requirement min3 = REQ("karpenter.k8s.aws/instance-family", PROTO_OP_IN, families, 3, 3);
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(&min3);
	ec2nodeclass(3, false);
	plan(&pl, names, 3, NULL);
	cr_assert_eq(check(&w, &pl, true, why, sizeof(why), &res), 0, "three families: %s", why);
	ec2nodeclass(3, true); /* the amd64 AMI drops c6g: two families left */
	plan(&pl, names, 3, NULL);
	cr_assert_eq(check(&w, &pl, true, why, sizeof(why), &res), -EPERM);
	cr_assert(strstr(why, "minValues 3 of karpenter.k8s.aws/instance-family"), "%s", why);
}

Test(admit_requirements, gt_lt_exists_and_does_not_exist_are_the_schedulers_operators)
{
	static const char *const names[] = { "m5.large", "m5.xlarge", "p5.48xlarge" };
	static char *two[] = { "2" }, *hundred[] = { "100" };
	static char *cat_p[] = { "c", "m", "r", "p" };
	struct proto_requirement gt = REQ("karpenter.k8s.aws/instance-cpu", PROTO_OP_GT, two, 1, 0);
	struct proto_requirement lt = REQ("karpenter.k8s.aws/instance-cpu", PROTO_OP_LT, hundred, 1, 0);
	struct proto_requirement exists = REQ("karpenter.k8s.aws/instance-gpu-count", PROTO_OP_EXISTS, NULL, 0, 0);
	struct proto_requirement absent = REQ("karpenter.k8s.aws/instance-gpu-count", PROTO_OP_DOES_NOT_EXIST, NULL, 0, 0);
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(&gt);
	pool_reqs[0].values = cat_p; /* categories c m r p: only the operator under test refuses */
	pool_reqs[0].n_values = 4;
	plan(&pl, names, 3, NULL);
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), 0, "%s", why);
	cr_assert(!kept(&pl, "m5.large") && kept(&pl, "m5.xlarge") && kept(&pl, "p5.48xlarge"), "Gt 2");

	nodepool(&lt);
	pool_reqs[0].values = cat_p;
	pool_reqs[0].n_values = 4;
	plan(&pl, names, 3, NULL);
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), 0, "%s", why);
	cr_assert(kept(&pl, "m5.large") && kept(&pl, "m5.xlarge") && !kept(&pl, "p5.48xlarge"), "Lt 100");

	nodepool(&exists);
	pool_reqs[0].values = cat_p;
	pool_reqs[0].n_values = 4;
	plan(&pl, names, 3, NULL);
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), 0, "%s", why);
	cr_assert(!kept(&pl, "m5.large") && !kept(&pl, "m5.xlarge") && kept(&pl, "p5.48xlarge"), "Exists");

	nodepool(&absent);
	pool_reqs[0].values = cat_p;
	pool_reqs[0].n_values = 4;
	plan(&pl, names, 3, NULL);
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), 0, "%s", why);
	cr_assert(kept(&pl, "m5.large") && kept(&pl, "m5.xlarge") && !kept(&pl, "p5.48xlarge"), "DoesNotExist");
}

Test(admit_requirements, spot_is_dropped_from_a_nodepool_that_defaults_to_on_demand)
{
	static const char *const names[] = { "m5.large" };
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	plan(&pl, names, 1, NULL);
	pl.offs[0][1].capacity_type = PROTO_CAPACITY_SPOT;
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), 0, "%s", why);
	cr_assert_eq(pl.p.instance_types[0].n_offerings, 2);
	cr_assert_eq(res.dropped[ADMIT_DROP_REQUIREMENTS], 1);
}

Test(admit_requirements, a_claim_whose_requirements_are_not_within_the_nodepools_is_refused)
{
	static const char *const names[] = { "m5.large" };
	static char *spot[] = { "spot" };
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	plan(&pl, names, 1, NULL);
	pl.reqs[2].values = spot; /* capacity-type In [spot]: the NodePool allows on-demand only */
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), -EPERM);
	cr_assert(strstr(why, "not within NodePool default"), "%s", why);

	plan(&pl, names, 1, NULL);
	pl.p.n_requirements = 0; /* leaves out every requirement of the NodePool */
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), -EPERM);
	cr_assert(strstr(why, "leaves out"), "%s", why);
}

Test(admit_requirements, a_claim_naming_another_ec2nodeclass_is_refused)
{
	static const char *const names[] = { "m5.large" };
	struct world w = { 0 };
	struct admit_requirements_result res;
	struct plan pl;
	char why[1024];

	nodepool(NULL);
	plan(&pl, names, 1, NULL);
	pl.p.nodeclass = "gpu-class";
	cr_assert_eq(check(&w, &pl, false, why, sizeof(why), &res), -EPERM);
	cr_assert(strstr(why, "EC2NodeClass gpu-class"), "%s", why);
}
