/*
 * Reads data/instance-types.tsv (see data/README.md) into the catalog:
 * well-known labels, capacity/allocatable by Karpenter's formulas, and an
 * on-demand and a spot offering per zone priced by offering_price(). Called
 * by --simulate and the benchmark; the daemon will fill the catalog from
 * the launcher's messages instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"

#define TSV_MAX_LINE 8192
#define TSV_MAX_COLUMNS 64

enum col {
	C_NAME, C_FAMILY, C_CATEGORY, C_GENERATION, C_SIZE, C_VCPU, C_MEMORY, C_ARCH,
	C_GPUS, C_GPU_NAME, C_MAX_PODS, C_HYPERVISOR, C_BARE_METAL, C_NETWORK, C_PRICE,
	C_CPU_MANUFACTURER, C_EBS, C_NVME, C_ENCRYPTION, C_GPU_MANUFACTURER, C_GPU_MEMORY,
	C_GPU_RESOURCE, C_ACCEL_COUNT, C_ACCEL_NAME, C_ACCEL_MANUFACTURER, C_POD_ENI, C_N,
};

static const char *const col_names[C_N] = {
	"name", "family", "category", "generation", "size", "vcpu", "memory_mib", "arch",
	"gpus", "gpu_name", "max_pods", "hypervisor", "bare_metal", "network_bandwidth_mbps",
	"od_price_us_east_1", "cpu_manufacturer", "ebs_bandwidth_mbps", "local_nvme_gib",
	"encryption_in_transit", "gpu_manufacturer", "gpu_memory_mib", "gpu_resource",
	"accelerator_count", "accelerator_name", "accelerator_manufacturer", "pod_eni",
};

/* Label key for each column that becomes a label (when non-empty). */
static const int col_label[C_N] = {
	[C_NAME] = K_INSTANCE_TYPE, [C_FAMILY] = K_INSTANCE_FAMILY,
	[C_CATEGORY] = K_INSTANCE_CATEGORY, [C_GENERATION] = K_INSTANCE_GENERATION,
	[C_SIZE] = K_INSTANCE_SIZE, [C_VCPU] = K_INSTANCE_CPU, [C_MEMORY] = K_INSTANCE_MEMORY,
	[C_ARCH] = K_ARCH, [C_HYPERVISOR] = K_INSTANCE_HYPERVISOR,
	[C_NETWORK] = K_INSTANCE_NETWORK_BANDWIDTH, [C_CPU_MANUFACTURER] = K_INSTANCE_CPU_MANUFACTURER,
	[C_EBS] = K_INSTANCE_EBS_BANDWIDTH, [C_NVME] = K_INSTANCE_LOCAL_NVME,
	[C_ENCRYPTION] = K_INSTANCE_ENCRYPTION_IN_TRANSIT, [C_GPU_NAME] = K_INSTANCE_GPU_NAME,
	[C_GPU_MANUFACTURER] = K_INSTANCE_GPU_MANUFACTURER, [C_GPU_MEMORY] = K_INSTANCE_GPU_MEMORY,
	[C_GPUS] = K_INSTANCE_GPU_COUNT, [C_ACCEL_NAME] = K_INSTANCE_ACCELERATOR_NAME,
	[C_ACCEL_MANUFACTURER] = K_INSTANCE_ACCELERATOR_MANUFACTURER,
	[C_ACCEL_COUNT] = K_INSTANCE_ACCELERATOR_COUNT,
	[C_MAX_PODS] = -1, [C_BARE_METAL] = -1, [C_PRICE] = -1, [C_GPU_RESOURCE] = -1,
	[C_POD_ENI] = -1,
};

static int split(char *line, char **fields, int max)
{
	int n = 0;

	line[strcspn(line, "\r\n")] = '\0';
	for (char *p = line;; p++) {
		if (n == max)
			return -E2BIG;
		fields[n++] = p;
		p = strchr(p, '\t');
		if (!p)
			break;
		*p = '\0';
	}
	return n;
}

static int add_label(struct catalog *cat, struct label *labels, uint32_t *n, uint32_t key,
		     const char *value)
{
	int64_t id = strtab_intern(cat->st, value);

	if (id < 0)
		return (int)id;
	labels[(*n)++] = (struct label){ key, (uint32_t)id };
	return 0;
}

static bool is_zero(const char *s)
{
	return !*s || streq(s, "0");
}

static int parse_row(struct catalog *cat, char **f, const int *col, const char *region,
		     const uint8_t *zone_idx, size_t n_zones)
{
	struct label labels[C_N + 2];
	struct offering offerings[SCHED_MAX_ZONES * CT_N];
	struct instance_type it = { 0 };
	uint32_t n = 0;
	int r;

	for (int c = 0; c < C_N; c++) {
		const char *v = f[col[c]];
		if (col_label[c] < 0 || !*v)
			continue;
		if ((c == C_GPUS || c == C_ACCEL_COUNT) && is_zero(v))
			continue;
		if ((c == C_GPU_MEMORY || c == C_NVME) && is_zero(v))
			continue;
		r = add_label(cat, labels, &n, (uint32_t)col_label[c], v);
		if (r < 0)
			return r;
	}
	if ((r = add_label(cat, labels, &n, K_OS, "linux")) < 0 ||
	    (r = add_label(cat, labels, &n, K_REGION, region)) < 0)
		return r;
	it.labels = labels;
	it.n_labels = n;
	it.name = labels[0].value;
	it.metal = streq(f[col[C_BARE_METAL]], "true");
	catalog_capacity(atoll(f[col[C_VCPU]]), atoll(f[col[C_MEMORY]]),
			 atoll(f[col[C_MAX_PODS]]), cat->vm_memory_overhead, &it.capacity,
			 &it.allocatable);
	if (*f[col[C_GPU_RESOURCE]]) {
		char name[128];
		const char *eq = strchr(f[col[C_GPU_RESOURCE]], '=');
		if (eq && (size_t)(eq - f[col[C_GPU_RESOURCE]]) < sizeof(name)) {
			memcpy(name, f[col[C_GPU_RESOURCE]], (size_t)(eq - f[col[C_GPU_RESOURCE]]));
			name[eq - f[col[C_GPU_RESOURCE]]] = '\0';
			int slot = catalog_resource(cat, name, true);
			if (slot < 0)
				return slot;
			it.capacity.v[slot] = it.allocatable.v[slot] = atoll(eq + 1);
		}
	}
	it.capacity.v[RES_POD_ENI] = it.allocatable.v[RES_POD_ENI] = atoll(f[col[C_POD_ENI]]);
	if (*f[col[C_PRICE]]) {
		double od = strtod(f[col[C_PRICE]], NULL);
		for (size_t z = 0; z < n_zones; z++)
			for (int ct = 0; ct < CT_N; ct++)
				offerings[it.n_offerings++] = (struct offering){
					.zone = zone_idx[z], .capacity_type = (uint8_t)ct,
					.available = true,
					.price = offering_price(od, f[col[C_NAME]],
								strtab_str(cat->st, cat->zones[zone_idx[z]]),
								region, ct == CT_SPOT),
				};
	}
	it.offerings = offerings;
	return catalog_add_type(cat, &it);
}

static int find_columns(char *header, int *col)
{
	char *f[TSV_MAX_COLUMNS];
	int nf = split(header, f, TSV_MAX_COLUMNS);

	if (nf < 0)
		return nf;
	for (int c = 0; c < C_N; c++) {
		col[c] = -1;
		for (int i = 0; i < nf; i++)
			if (streq(f[i], col_names[c]))
				col[c] = i;
		if (col[c] < 0)
			return -EBADMSG;
	}
	return nf;
}

int catalog_load_tsv(struct catalog *cat, const char *path, const char *region,
		     const char *const *zones, size_t n_zones)
{
	char line[TSV_MAX_LINE];
	char *f[TSV_MAX_COLUMNS];
	int col[C_N], nf, r = 0;
	uint8_t zone_idx[SCHED_MAX_ZONES];
	int64_t region_id = strtab_intern(cat->st, region);
	FILE *in;

	if (region_id < 0)
		return (int)region_id;
	if (n_zones > SCHED_MAX_ZONES)
		return -E2BIG;
	for (size_t z = 0; z < n_zones; z++) {
		int64_t id = strtab_intern(cat->st, zones[z]);
		if (id < 0)
			return (int)id;
		r = catalog_zone(cat, (uint32_t)id, (uint32_t)region_id);
		if (r < 0)
			return r;
		zone_idx[z] = (uint8_t)r;
	}
	in = fopen(path, "re");
	if (!in)
		return -errno;
	if (!fgets(line, sizeof(line), in)) {
		r = -EBADMSG;
		goto out;
	}
	nf = find_columns(line, col);
	if (nf < 0) {
		r = nf;
		goto out;
	}
	while (fgets(line, sizeof(line), in)) {
		if (split(line, f, TSV_MAX_COLUMNS) != nf) {
			r = -EBADMSG;
			goto out;
		}
		r = parse_row(cat, f, col, region, zone_idx, n_zones);
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	fclose(in);
	return r;
}
