/*
 * kanna-sim's catalog: instance types from data/instance-types.tsv (columns
 * found by header name), three regions with three zones each, one VPC, one
 * subnet per zone and one security group per region, and every price.
 *
 * Prices (documented in the README too), the same rule as the scheduler's
 * offering_price() in model/catalog.c so that what kanna plans is what
 * the sim bills: the shipped table has only us-east-1 on-demand list
 * prices; a region's on-demand price is that price times a fixed
 * multiplier (us-west-2 1.0, eu-west-1 1.1, ap-northeast-1 1.2). A spot
 * price is on-demand x (0.3 + 0.4 x (FNV-1a-64("<type><zone>") mod 1000) /
 * 1000), i.e. 30%..70% of on-demand, fixed per type and zone (no seed).
 * Types with no us-east-1 price (18) are described by DescribeInstanceTypes
 * but never offered: no offerings, no spot price, and CreateFleet answers
 * their overrides "Unsupported".
 * Loaded once by sim_aws_new(); read-only afterwards.
 */
#include <inttypes.h>
#include <stdio.h>

#include "common/hash.h"
#include "sim/aws-internal.h"

/* Spot = on-demand x (SPOT_BASE + SPOT_SPAN x (hash mod SPOT_STEPS) / SPOT_STEPS). */
#define SPOT_BASE 0.3
#define SPOT_SPAN 0.4
#define SPOT_STEPS 1000
/* FNV-1a 64-bit parameters (the published offset basis and prime). */
#define CATALOG_LINE_MAX 8192
#define CATALOG_COLUMNS_MAX 64

static const struct {
	const char *name;
	const char *zone_prefix; /* zone id prefix, as AWS names them */
	double multiplier;
	unsigned cidr_second_octet;
} region_table[SIM_AWS_REGIONS_MAX] = {
	{ "us-west-2", "usw2", 1.00, 10 },
	{ "eu-west-1", "euw1", 1.1, 20 },
	{ "ap-northeast-1", "apne1", 1.2, 30 },
};

uint64_t aws_hash(const char *s, uint64_t seed)
{
	uint64_t h = hash_fnv1a64_add(HASH_FNV1A64_OFFSET ^ seed, s);

	/* splitmix64's finalizer: similar names get unrelated ids. */
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

int aws_catalog_default_path(char **ret)
{
	static const char *const dirs[] = { KANNA_DATADIR, KANNA_SRCDIR "/data" };
	const char *env = getenv("KANNA_SIM_CATALOG");

	if (env && *env) {
		*ret = strdup(env);
		return *ret ? 0 : -ENOMEM;
	}
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		char *p;

		if (asprintf(&p, "%s/instance-types.tsv", dirs[i]) < 0)
			return -ENOMEM;
		if (access(p, R_OK) == 0) {
			*ret = p;
			return 0;
		}
		free(p);
	}
	return -ENOENT;
}

static void type_clear(struct aws_instance_type *t)
{
	char **strs[] = { &t->name, &t->family, &t->category, &t->size, &t->arch,
			  &t->hypervisor, &t->cpu_manufacturer, &t->gpu_name,
			  &t->gpu_manufacturer, &t->network_performance,
			  &t->alloc_ephemeral_storage, &t->accelerator_name,
			  &t->accelerator_manufacturer };

	for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
		free(*strs[i]);
}

struct aws_catalog *aws_catalog_free(struct aws_catalog *c)
{
	if (!c)
		return NULL;
	for (size_t i = 0; i < c->n_types; i++)
		type_clear(&c->types[i]);
	free(c->types);
	free(c);
	return NULL;
}

/* Splits a TSV line in place; returns the column count. */
static size_t split_tabs(char *line, char **cols, size_t max)
{
	size_t n = 0;

	line[strcspn(line, "\r\n")] = '\0';
	while (n < max) {
		cols[n++] = line;
		line = strchr(line, '\t');
		if (!line)
			break;
		*line++ = '\0';
	}
	return n;
}

enum column {
	COL_NAME, COL_FAMILY, COL_CATEGORY, COL_GENERATION, COL_SIZE, COL_VCPU,
	COL_MEMORY, COL_ARCH, COL_GPUS, COL_GPU_NAME, COL_MAX_PODS, COL_HYPERVISOR,
	COL_BARE_METAL, COL_NET_MBPS, COL_PRICE, COL_CPU_MANUFACTURER, COL_CPU_CLOCK,
	COL_EBS_MBPS, COL_NVME, COL_EIT, COL_GPU_MANUFACTURER, COL_GPU_MEMORY, COL_EFA,
	COL_ENI_MAX, COL_ENI_DEFAULT, COL_NET_CARDS, COL_IPV4, COL_ALLOC_CPU,
	COL_ALLOC_MEM, COL_ALLOC_EPH, COL_NET_TEXT, COL_ACC_COUNT, COL_ACC_NAME,
	COL_ACC_MANUFACTURER, _COL_MAX,
};

static const char *const column_names[_COL_MAX] = {
	"name", "family", "category", "generation", "size", "vcpu", "memory_mib",
	"arch", "gpus", "gpu_name", "max_pods", "hypervisor", "bare_metal",
	"network_bandwidth_mbps", "od_price_us_east_1", "cpu_manufacturer",
	"cpu_sustained_clock_mhz", "ebs_bandwidth_mbps", "local_nvme_gib",
	"encryption_in_transit", "gpu_manufacturer", "gpu_memory_mib", "efa",
	"eni_max_interfaces", "eni_default_card_max_interfaces", "network_cards",
	"eni_ipv4_per_interface", "alloc_cpu_millicores", "alloc_memory_mib",
	"alloc_ephemeral_storage", "network_performance_text", "accelerator_count",
	"accelerator_name", "accelerator_manufacturer",
};

static unsigned col_uint(char **cols, const int *idx, enum column c)
{
	unsigned long v;

	return aws_parse_uint(cols[idx[c]], UINT32_MAX, &v) < 0 ? 0 : (unsigned)v;
}

static int type_from_columns(struct aws_instance_type *t, char **cols, const int *idx)
{
	char *end;

	*t = (struct aws_instance_type){ 0 };
	t->name = strdup(cols[idx[COL_NAME]]);
	t->family = strdup(cols[idx[COL_FAMILY]]);
	t->category = strdup(cols[idx[COL_CATEGORY]]);
	t->size = strdup(cols[idx[COL_SIZE]]);
	t->arch = strdup(cols[idx[COL_ARCH]]);
	t->hypervisor = strdup(cols[idx[COL_HYPERVISOR]]);
	t->cpu_manufacturer = strdup(cols[idx[COL_CPU_MANUFACTURER]]);
	t->gpu_name = strdup(cols[idx[COL_GPU_NAME]]);
	t->gpu_manufacturer = strdup(cols[idx[COL_GPU_MANUFACTURER]]);
	t->network_performance = strdup(cols[idx[COL_NET_TEXT]]);
	t->alloc_ephemeral_storage = strdup(cols[idx[COL_ALLOC_EPH]]);
	t->accelerator_name = strdup(cols[idx[COL_ACC_NAME]]);
	t->accelerator_manufacturer = strdup(cols[idx[COL_ACC_MANUFACTURER]]);
	if (!t->name || !t->family || !t->category || !t->size || !t->arch ||
	    !t->hypervisor || !t->cpu_manufacturer || !t->gpu_name ||
	    !t->gpu_manufacturer || !t->network_performance || !t->alloc_ephemeral_storage ||
	    !t->accelerator_name || !t->accelerator_manufacturer)
		return -ENOMEM;
	if (!*t->name || (!streq(t->arch, "amd64") && !streq(t->arch, "arm64")))
		return -EINVAL;
	t->generation = col_uint(cols, idx, COL_GENERATION);
	t->vcpu = col_uint(cols, idx, COL_VCPU);
	t->memory_mib = col_uint(cols, idx, COL_MEMORY);
	t->gpus = col_uint(cols, idx, COL_GPUS);
	t->max_pods = col_uint(cols, idx, COL_MAX_PODS);
	t->network_mbps = col_uint(cols, idx, COL_NET_MBPS);
	t->cpu_clock_mhz = col_uint(cols, idx, COL_CPU_CLOCK);
	t->ebs_mbps = col_uint(cols, idx, COL_EBS_MBPS);
	t->local_nvme_gib = col_uint(cols, idx, COL_NVME);
	t->gpu_memory_mib = col_uint(cols, idx, COL_GPU_MEMORY);
	t->eni_max = col_uint(cols, idx, COL_ENI_MAX);
	t->eni_default_card_max = col_uint(cols, idx, COL_ENI_DEFAULT);
	t->network_cards = col_uint(cols, idx, COL_NET_CARDS);
	t->ipv4_per_eni = col_uint(cols, idx, COL_IPV4);
	t->alloc_cpu_millicores = col_uint(cols, idx, COL_ALLOC_CPU);
	t->alloc_memory_mib = col_uint(cols, idx, COL_ALLOC_MEM);
	t->bare_metal = streq(cols[idx[COL_BARE_METAL]], "true");
	t->encryption_in_transit = streq(cols[idx[COL_EIT]], "true");
	t->efa_interfaces = col_uint(cols, idx, COL_EFA);
	t->accelerators = col_uint(cols, idx, COL_ACC_COUNT);
	t->od_price_us_east_1 = -1;
	if (*cols[idx[COL_PRICE]]) {
		t->od_price_us_east_1 = strtod(cols[idx[COL_PRICE]], &end);
		if (*end || t->od_price_us_east_1 <= 0)
			return -EINVAL;
	}
	if (t->vcpu == 0 || t->memory_mib == 0)
		return -EINVAL;
	return 0;
}

static int header_index(char **cols, size_t n, int *idx)
{
	for (size_t c = 0; c < _COL_MAX; c++) {
		idx[c] = -1;
		for (size_t i = 0; i < n; i++)
			if (streq(cols[i], column_names[c]))
				idx[c] = (int)i;
		if (idx[c] < 0)
			return -EINVAL;
	}
	return 0;
}

static void regions_build(struct aws_catalog *c, uint64_t seed)
{
	for (size_t r = 0; r < SIM_AWS_REGIONS_MAX; r++) {
		struct aws_region *reg = &c->regions[r];
		uint64_t h = aws_hash(region_table[r].name, seed);

		snprintf(reg->name, sizeof(reg->name), "%s", region_table[r].name);
		reg->price_multiplier = region_table[r].multiplier;
		snprintf(reg->vpc_id, sizeof(reg->vpc_id), "vpc-%017" PRIx64, h & (uint64_t)0xfffffffffffffffULL);
		snprintf(reg->sg_id, sizeof(reg->sg_id), "sg-%017" PRIx64,
			 aws_hash("sg", h) & (uint64_t)0xfffffffffffffffULL);
		for (unsigned z = 0; z < SIM_AWS_ZONES_PER_REGION; z++) {
			struct aws_zone *zone = &reg->zones[z];

			zone->index = z;
			snprintf(zone->name, sizeof(zone->name), "%s%c", reg->name, 'a' + z);
			snprintf(zone->zone_id, sizeof(zone->zone_id), "%s-az%u",
				 region_table[r].zone_prefix, z + 1);
			snprintf(zone->subnet_id, sizeof(zone->subnet_id), "subnet-%017" PRIx64,
				 aws_hash(zone->name, seed) & (uint64_t)0xfffffffffffffffULL);
			snprintf(zone->cidr, sizeof(zone->cidr), "10.%u.%u.0/20",
				 region_table[r].cidr_second_octet, z * 16);
		}
	}
	c->n_regions = SIM_AWS_REGIONS_MAX;
}

static int catalog_read(struct aws_catalog *c, FILE *f)
{
	char line[CATALOG_LINE_MAX];
	char *cols[CATALOG_COLUMNS_MAX];
	int idx[_COL_MAX];
	size_t n, cap = 0;
	int r;

	if (!fgets(line, sizeof(line), f))
		return -EINVAL;
	n = split_tabs(line, cols, CATALOG_COLUMNS_MAX);
	r = header_index(cols, n, idx);
	if (r < 0)
		return r;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '\n' || line[0] == '\0')
			continue;
		if (split_tabs(line, cols, CATALOG_COLUMNS_MAX) < n)
			return -EINVAL;
		if (c->n_types == cap) {
			struct aws_instance_type *nt;

			cap = cap ? cap * 2 : 1024;
			nt = realloc(c->types, cap * sizeof(*nt));
			if (!nt)
				return -ENOMEM;
			c->types = nt;
		}
		r = type_from_columns(&c->types[c->n_types], cols, idx);
		c->n_types++;
		if (r < 0)
			return r;
	}
	return ferror(f) ? -EIO : 0;
}

int aws_catalog_load(struct aws_catalog **ret, const char *path, uint64_t seed)
{
	struct aws_catalog *c;
	FILE *f;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		aws_catalog_free(c);
		return r;
	}
	r = catalog_read(c, f);
	fclose(f);
	if (r >= 0 && c->n_types == 0)
		r = -ENODATA;
	if (r < 0) {
		aws_catalog_free(c);
		return r;
	}
	regions_build(c, seed);
	*ret = c;
	return 0;
}

const struct aws_instance_type *aws_catalog_type(const struct aws_catalog *c, const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < c->n_types; i++)
		if (streq(c->types[i].name, name))
			return &c->types[i];
	return NULL;
}

const struct aws_region *aws_catalog_region(const struct aws_catalog *c, const char *name)
{
	for (size_t i = 0; name && i < c->n_regions; i++)
		if (streq(c->regions[i].name, name))
			return &c->regions[i];
	return NULL;
}

const struct aws_zone *aws_catalog_zone(const struct aws_catalog *c, const char *name,
					const struct aws_region **ret_region)
{
	for (size_t i = 0; name && i < c->n_regions; i++)
		for (size_t z = 0; z < SIM_AWS_ZONES_PER_REGION; z++)
			if (streq(c->regions[i].zones[z].name, name) ||
			    streq(c->regions[i].zones[z].zone_id, name)) {
				if (ret_region)
					*ret_region = &c->regions[i];
				return &c->regions[i].zones[z];
			}
	return NULL;
}

const struct aws_zone *aws_catalog_subnet(const struct aws_catalog *c, const char *subnet_id,
					  const struct aws_region **ret_region)
{
	for (size_t i = 0; subnet_id && i < c->n_regions; i++)
		for (size_t z = 0; z < SIM_AWS_ZONES_PER_REGION; z++)
			if (streq(c->regions[i].zones[z].subnet_id, subnet_id)) {
				if (ret_region)
					*ret_region = &c->regions[i];
				return &c->regions[i].zones[z];
			}
	return NULL;
}

bool aws_type_offered(const struct aws_instance_type *t)
{
	return t->od_price_us_east_1 > 0;
}

const char *aws_type_ec2_arch(const struct aws_instance_type *t)
{
	return streq(t->arch, "arm64") ? "arm64" : "x86_64";
}

double aws_catalog_price(const struct aws_region *r, const struct aws_zone *z,
			 const struct aws_instance_type *t, bool spot)
{
	char key[128];
	double od;

	if (!aws_type_offered(t))
		return -1;
	od = t->od_price_us_east_1 * r->price_multiplier;
	if (!spot)
		return od;
	snprintf(key, sizeof(key), "%s%s", t->name, z->name);
	return od * (SPOT_BASE + SPOT_SPAN * (double)(hash_fnv1a64(key) % SPOT_STEPS) / SPOT_STEPS);
}
