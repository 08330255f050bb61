/* The catalog: TSV loading, Karpenter's overhead formulas, derived prices,
 * offering/zone filters and the requirement → bitset index. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "common/hash.h"
#include "model/unavailable.h"
#include "model/catalog.h"

static struct strtab st;
static struct catalog cat;

static void setup(void)
{
	static const char *const zones[] = { "eu-west-1a", "eu-west-1b", "eu-west-1c" };
	char path[4096];

	cr_assert_eq(strtab_init(&st), 0);
	cr_assert_eq(wellknown_intern(&st), 0);
	cr_assert_eq(catalog_init(&cat, &st), 0);
	catalog_default_path(path, sizeof(path));
	cr_assert_eq(catalog_load_tsv(&cat, path, "eu-west-1", zones, 3), 0);
	cr_assert_eq(catalog_finalize(&cat), 0);
}

static void teardown(void)
{
	catalog_done(&cat);
	strtab_done(&st);
}

TestSuite(catalog, .init = setup, .fini = teardown);

static int type_index(const char *name)
{
	uint32_t id = strtab_lookup(&st, name);
	for (uint32_t i = 0; i < cat.n_types; i++)
		if (cat.types[i].name == id)
			return (int)i;
	return -1;
}

static uint32_t S(const char *s)
{
	return (uint32_t)strtab_intern(&st, s);
}

Test(catalog, loads_every_type_sorted_by_size)
{
	cr_assert_gt(cat.n_types, 1000);
	for (uint32_t i = 1; i < cat.n_types; i++)
		cr_assert_leq(cat.types[i - 1].allocatable.v[RES_CPU], cat.types[i].allocatable.v[RES_CPU]);
}

Test(catalog, allocatable_follows_karpenter_overhead_formulas)
{
	const struct instance_type *it = &cat.types[type_index("m5.large")];
	/* 2 vCPU: 60m + 10m reserved. 8 GiB: 7.5% VM overhead, 11Mi×29+255Mi, 100Mi. */
	cr_assert_eq(it->capacity.v[RES_CPU], 2000);
	cr_assert_eq(it->allocatable.v[RES_CPU], 1930);
	cr_assert_eq(it->capacity.v[RES_MEMORY], (8192LL - 615) << 20);
	cr_assert_eq(it->allocatable.v[RES_MEMORY], (8192LL - 615 - 574 - 100) << 20);
	cr_assert_eq(it->allocatable.v[RES_PODS], 29);
	it = &cat.types[type_index("m5.24xlarge")];
	cr_assert_eq(it->allocatable.v[RES_CPU], 96000 - 60 - 10 - 10 - 230);
}

Test(catalog, gpu_types_expose_their_extended_resource)
{
	const struct instance_type *it = &cat.types[type_index("g5.12xlarge")];
	cr_assert_eq(it->allocatable.v[RES_NVIDIA_GPU], 4);
	cr_assert_eq(labels_get(it->labels, it->n_labels, K_INSTANCE_GPU_COUNT), S("4"));
}

Test(catalog, prices_follow_the_shared_rule)
{
	const struct instance_type *it = &cat.types[type_index("m5.large")];
	double od = -1, spot = -1;
	for (uint32_t o = 0; o < it->n_offerings; o++)
		if (it->offerings[o].zone == 0)
			*(it->offerings[o].capacity_type == CT_SPOT ? &spot : &od) = it->offerings[o].price;
	cr_assert_float_eq(od, 0.096 * 1.1, 1e-9);
	double f = 0.3 + 0.4 * (double)(hash_fnv1a64("m5.largeeu-west-1a") % 1000) / 1000.0;
	cr_assert_float_eq(spot, od * f, 1e-9);
	cr_assert_float_eq(offering_price(1.0, "x", "z", "us-east-1", false), 1.0, 1e-12);
	cr_assert_float_eq(offering_price(1.0, "x", "z", "ap-northeast-1", false), 1.2, 1e-12);
}

Test(catalog, filter_by_requirements_uses_the_index)
{
	struct requirements r = { 0 };
	uint64_t out[SCHED_MAX_TYPE_WORDS];
	uint32_t v[3] = { S("c"), S("m"), S("r") };

	cr_assert_eq(requirements_add(&r, &st, K_INSTANCE_CATEGORY, REQ_IN, v, 3, 0), 0);
	v[0] = S("2");
	cr_assert_eq(requirements_add(&r, &st, K_INSTANCE_GENERATION, REQ_GT, v, 1, 0), 0);
	v[0] = S("3");
	cr_assert_eq(requirements_add(&r, &st, K_INSTANCE_CPU, REQ_GT, v, 1, 0), 0);
	v[0] = S("amd64");
	cr_assert_eq(requirements_add(&r, &st, K_ARCH, REQ_IN, v, 1, 0), 0);
	catalog_filter(&cat, &r, out);
	uint32_t n = bits_count(out, cat.words), checked = 0;
	cr_assert_gt(n, 50);
	for (uint32_t t = 0; t < cat.n_types; t++) {
		const struct instance_type *it = &cat.types[t];
		bool want = requirements_match_labels(&r, it->labels, it->n_labels, &st) &&
			    !it->metal && it->n_offerings > 0;
		cr_assert_eq(bit_test(out, t), want, "%s", strtab_str(&st, it->name));
		checked++;
	}
	cr_assert_eq(checked, cat.n_types);
	requirements_free(&r);
}

Test(catalog, metal_only_when_named_and_zones_restrict_offerings)
{
	struct requirements r = { 0 };
	uint64_t out[SCHED_MAX_TYPE_WORDS];
	uint32_t v = S("c5.metal");

	catalog_filter(&cat, &r, out);
	cr_assert_not(bit_test(out, (uint32_t)type_index("c5.metal")));
	cr_assert_eq(requirements_add(&r, &st, K_INSTANCE_TYPE, REQ_IN, &v, 1, 0), 0);
	catalog_filter(&cat, &r, out);
	cr_assert(bit_test(out, (uint32_t)type_index("c5.metal")));
	cr_assert_eq(bits_count(out, cat.words), 1);
	v = S("us-east-1a");
	cr_assert_eq(requirements_add(&r, &st, K_ZONE, REQ_IN, &v, 1, 0), 0);
	catalog_filter(&cat, &r, out);
	cr_assert_eq(bits_count(out, cat.words), 0);
	cr_assert_eq(catalog_zone_mask(&cat, &r), 0);
	requirements_free(&r);
}

/* The one unavailable-offerings cache (model/unavailable.h): marks expire,
 * a new mark replaces an older one of the same offering, a full table
 * forgets its oldest. */
Test(unavailable, marks_expire_replace_and_the_oldest_goes_when_full)
{
	struct unavailable_offerings u = { 0 };
	char type[32];

	cr_assert_eq(unavailable_add(&u, "m5.large", "us-west-2a", 1, 2000, 1000), 0);
	cr_assert(unavailable_has(&u, "m5.large", "us-west-2a", 1, 1500));
	cr_assert_not(unavailable_has(&u, "m5.large", "us-west-2a", 0, 1500), "another capacity type");
	cr_assert_not(unavailable_has(&u, "m5.large", "us-west-2b", 1, 1500), "another zone");
	cr_assert_not(unavailable_has(&u, "m5.large", "us-west-2a", 1, 2000), "expired");
	cr_assert_eq(unavailable_add(&u, "m5.large", "us-west-2a", 1, 5000, 1500), 0);
	cr_assert_eq(u.n, 1, "the older mark is replaced");
	cr_assert(unavailable_has(&u, "m5.large", "us-west-2a", 1, 4000));
	for (int i = 0; i < UNAVAILABLE_MAX; i++) {
		snprintf(type, sizeof(type), "t%d", i);
		cr_assert_eq(unavailable_add(&u, type, "z", 0, 10000 + i, 1500), 0);
	}
	cr_assert_eq(u.n, UNAVAILABLE_MAX);
	cr_assert_not(unavailable_has(&u, "m5.large", "us-west-2a", 1, 1600), "the oldest went");
	cr_assert(unavailable_has(&u, "t0", "z", 0, 1600));
	cr_assert_eq(unavailable_add(&u, "late", "z", 0, 20000, 10500), 0);
	cr_assert_lt(u.n, UNAVAILABLE_MAX, "expired entries go when one is added");
	unavailable_done(&u);
}
