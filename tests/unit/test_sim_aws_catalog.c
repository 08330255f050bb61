/*
 * kanna-sim's AWS catalog, parameters and faults without HTTP: regional and
 * spot price derivation, unpriced types, zones and subnets, EC2 list
 * parameters and filters, fault JSON validation and seeded determinism.
 */
#include <criterion/criterion.h>

#include "sim/aws-internal.h"

#define CATALOG KANNA_SRCDIR "/data/instance-types.tsv"

static struct aws_catalog *catalog;

static void setup(void)
{
	cr_assert_eq(aws_catalog_load(&catalog, CATALOG, 7), 0);
}

static void teardown(void)
{
	catalog = aws_catalog_free(catalog);
}

TestSuite(sim_aws_catalog, .init = setup, .fini = teardown);

Test(sim_aws_catalog, loads_every_type_with_its_facts)
{
	const struct aws_instance_type *t = aws_catalog_type(catalog, "m5.large");

	cr_assert_eq(catalog->n_types, 1363);
	cr_assert_not_null(t);
	cr_assert_eq(t->vcpu, 2);
	cr_assert_eq(t->memory_mib, 8192);
	cr_assert_str_eq(t->arch, "amd64");
	cr_assert_eq(t->max_pods, 29);
	cr_assert_float_eq(t->od_price_us_east_1, 0.096, 1e-9);
	t = aws_catalog_type(catalog, "p5.48xlarge");
	cr_assert_eq(t->gpus, 8);
	cr_assert_str_eq(t->gpu_name, "h100");
	cr_assert_gt(t->efa_interfaces, 0);
	t = aws_catalog_type(catalog, "inf2.xlarge");
	cr_assert_eq(t->accelerators, 1);
	cr_assert_str_eq(t->accelerator_name, "inferentia2");
	cr_assert_null(aws_catalog_type(catalog, "m5.huge"));
}

Test(sim_aws_catalog, regional_prices_use_the_documented_multipliers)
{
	const struct aws_instance_type *t = aws_catalog_type(catalog, "m5.large");
	const struct aws_region *usw2 = aws_catalog_region(catalog, "us-west-2");
	const struct aws_region *euw1 = aws_catalog_region(catalog, "eu-west-1");
	const struct aws_region *apne1 = aws_catalog_region(catalog, "ap-northeast-1");

	cr_assert_float_eq(aws_catalog_price(usw2, &usw2->zones[0], t, false), 0.096, 1e-9);
	cr_assert_float_eq(aws_catalog_price(euw1, &euw1->zones[0], t, false), 0.096 * 1.1, 1e-9);
	cr_assert_float_eq(aws_catalog_price(apne1, &apne1->zones[0], t, false), 0.096 * 1.2, 1e-9);
	cr_assert_null(aws_catalog_region(catalog, "us-east-1"));
}

Test(sim_aws_catalog, spot_prices_are_30_to_70_percent_of_on_demand_for_every_offering)
{
	for (size_t r = 0; r < catalog->n_regions; r++)
		for (size_t i = 0; i < catalog->n_types; i++)
			for (size_t z = 0; z < SIM_AWS_ZONES_PER_REGION; z++) {
				const struct aws_region *reg = &catalog->regions[r];
				const struct aws_instance_type *t = &catalog->types[i];
				double od = aws_catalog_price(reg, &reg->zones[z], t, false);
				double spot = aws_catalog_price(reg, &reg->zones[z], t, true);

				if (!aws_type_offered(t))
					continue;
				cr_assert(spot > 0 && spot >= od * 0.3 - 1e-12 && spot < od * 0.7,
					  "%s %s od %f spot %f", t->name, reg->zones[z].name, od, spot);
			}
}

/* The scheduler's offering_price() (model/catalog.c) uses this rule too. */
Test(sim_aws_catalog, spot_price_follows_the_shared_fnv_rule)
{
	const struct aws_instance_type *t = aws_catalog_type(catalog, "c5.xlarge");
	const struct aws_region *euw1 = aws_catalog_region(catalog, "eu-west-1");
	uint64_t h = 14695981039346656037ULL;
	double want;

	for (const char *s = "c5.xlargeeu-west-1b"; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	want = t->od_price_us_east_1 * 1.1 * (0.3 + 0.4 * (double)(h % 1000) / 1000.0);
	cr_assert_float_eq(aws_catalog_price(euw1, &euw1->zones[1], t, true), want, 1e-12);
}

Test(sim_aws_catalog, types_without_a_price_are_not_offered)
{
	const struct aws_instance_type *t = aws_catalog_type(catalog, "hpc6a.48xlarge");
	const struct aws_region *reg = aws_catalog_region(catalog, "us-west-2");
	size_t unpriced = 0;

	cr_assert_not_null(t);
	cr_assert_not(aws_type_offered(t));
	cr_assert_lt(aws_catalog_price(reg, &reg->zones[0], t, true), 0);
	for (size_t i = 0; i < catalog->n_types; i++)
		unpriced += !aws_type_offered(&catalog->types[i]);
	cr_assert_eq(unpriced, 18);
}

Test(sim_aws_catalog, three_zones_per_region_each_with_a_subnet)
{
	const struct aws_region *in = NULL;
	const struct aws_zone *z = aws_catalog_zone(catalog, "eu-west-1c", &in);

	cr_assert_eq(catalog->n_regions, 3);
	cr_assert_not_null(z);
	cr_assert_str_eq(in->name, "eu-west-1");
	cr_assert_str_eq(z->zone_id, "euw1-az3");
	cr_assert_eq(aws_catalog_subnet(catalog, z->subnet_id, NULL), z);
	cr_assert_eq(aws_catalog_zone(catalog, "usw2-az2", NULL), &catalog->regions[0].zones[1]);
	cr_assert_str_neq(catalog->regions[0].zones[0].subnet_id, catalog->regions[0].zones[1].subnet_id);
}

Test(sim_aws_catalog, a_missing_column_is_rejected)
{
	char path[] = "/tmp/sim-aws-catalog-XXXXXX";
	int fd = mkstemp(path);
	struct aws_catalog *c = NULL;

	cr_assert_geq(fd, 0);
	cr_assert_gt(write(fd, "name\tvcpu\nm5.large\t2\n", 21), 0);
	close(fd);
	cr_assert_eq(aws_catalog_load(&c, path, 1), -EINVAL);
	cr_assert_null(c);
	unlink(path);
	cr_assert_eq(aws_catalog_load(&c, "/nonexistent/instance-types.tsv", 1), -ENOENT);
}

Test(sim_aws_catalog, ec2_lists_and_filters_parse_with_wildcards)
{
	struct aws_params p = { 0 };
	struct aws_filters f;
	const char *kv[][2] = {
		{ "Filter.1.Name", "instance-type" }, { "Filter.1.Value.1", "m5.*" },
		{ "Filter.1.Value.2", "c?.large" }, { "Filter.2.Name", "tag:team" },
		{ "Filter.2.Value.1", "a" }, { "InstanceId.1", "i-1" }, { "InstanceId.2", "i-2" },
		{ "InstanceId.4", "i-4" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(kv); i++)
		cr_assert_eq(aws_params_add(&p, kv[i][0], kv[i][1], strlen(kv[i][1]), 0), 0);
	cr_assert_eq(aws_params_count(&p, "InstanceId"), 2);
	cr_assert_eq(aws_filters_parse(&p, &f), 0);
	cr_assert_eq(f.n, 2);
	cr_assert(aws_filter_matches(&f.v[0], "m5.large"));
	cr_assert(aws_filter_matches(&f.v[0], "c5.large"));
	cr_assert_not(aws_filter_matches(&f.v[0], "c5.xlarge"));
	cr_assert_not(aws_filter_matches(&f.v[0], NULL));
	aws_filters_clear(&f);
	aws_params_clear(&p);
}

Test(sim_aws_catalog, post_processor_chunks_join_into_one_value)
{
	struct aws_params p = { 0 };

	cr_assert_eq(aws_params_add(&p, "Action", "Describe", 8, 0), 0);
	cr_assert_eq(aws_params_add(&p, "Action", "Instances", 9, 8), 0);
	cr_assert_eq(p.n, 1);
	cr_assert_str_eq(aws_params_get(&p, "Action"), "DescribeInstances");
	aws_params_clear(&p);
}

static struct sim_aws *sim_new(uint64_t seed)
{
	struct sim_aws_config cfg;
	struct sim_aws *aws = NULL;

	sim_aws_config_init(&cfg);
	cfg.catalog_path = CATALOG;
	cfg.seed = seed;
	cr_assert_eq(sim_aws_new(&aws, &cfg), 0);
	return aws;
}

Test(sim_aws_catalog, faults_json_is_validated_all_or_nothing)
{
	struct sim_aws *aws = sim_new(1);
	char err[256];

	cr_assert_eq(sim_aws_set_faults(aws, "{\"throttleRate\":0.5,\"latencyMs\":10}", err, sizeof(err)), 0);
	cr_assert_float_eq(aws->faults.throttle_rate, 0.5, 1e-9);
	cr_assert_lt(sim_aws_set_faults(aws, "{\"throttleRate\":0.1,\"bogus\":1}", err, sizeof(err)), 0);
	cr_assert(strstr(err, "bogus"), "%s", err);
	cr_assert_float_eq(aws->faults.throttle_rate, 0.5, 1e-9);
	cr_assert_lt(sim_aws_set_faults(aws, "{\"insufficientCapacity\":[{\"capacityType\":\"reserved\"}]}", err, sizeof(err)), 0);
	cr_assert_lt(sim_aws_set_faults(aws, "{\"interrupt\":[\"i-nope\"]}", err, sizeof(err)), 0);
	cr_assert_lt(sim_aws_set_faults(aws, "not json", err, sizeof(err)), 0);
	cr_assert_eq(sim_aws_set_faults(aws, "{\"insufficientCapacity\":[{\"instanceType\":\"m5.large\",\"zone\":\"*\"}]}", err, sizeof(err)), 0);
	cr_assert_str_eq(aws_faults_ice(aws, "m5.large", "us-west-2c", true), "InsufficientInstanceCapacity");
	cr_assert_null(aws_faults_ice(aws, "m5.xlarge", "us-west-2c", true));
	cr_assert_eq(sim_aws_set_faults(aws, "{\"insufficientCapacity\":[{\"capacityType\":\"spot\",\"errorCode\":\"UnfulfillableCapacity\"}]}", err, sizeof(err)), 0);
	cr_assert_str_eq(aws_faults_ice(aws, "c5.large", "us-west-2a", true), "UnfulfillableCapacity");
	cr_assert_null(aws_faults_ice(aws, "c5.large", "us-west-2a", false));
	cr_assert_lt(sim_aws_set_faults(aws, "{\"insufficientCapacity\":[{\"errorCode\":\"Nope\"}]}", err, sizeof(err)), 0);
	sim_aws_free(aws);
}

Test(sim_aws_catalog, the_same_seed_gives_the_same_credentials_and_ids)
{
	struct sim_aws *a = sim_new(9), *b = sim_new(9), *c = sim_new(10);
	char ia[32], ib[32], ic[32];

	cr_assert_str_eq(a->access_key_id, b->access_key_id);
	cr_assert_str_neq(a->access_key_id, c->access_key_id);
	cr_assert_eq(strlen(a->access_key_id), 20);
	aws_new_id(a, "i-", 17, ia, sizeof(ia));
	aws_new_id(b, "i-", 17, ib, sizeof(ib));
	aws_new_id(c, "i-", 17, ic, sizeof(ic));
	cr_assert_str_eq(ia, ib);
	cr_assert_str_neq(ia, ic);
	cr_assert_eq(strlen(ia), 19);
	cr_assert_str_eq(a->catalog->regions[0].zones[0].subnet_id, b->catalog->regions[0].zones[0].subnet_id);
	sim_aws_free(a);
	sim_aws_free(b);
	sim_aws_free(c);
}
