/*
 * Karpenter's fake cloud provider catalog (pkg/cloudprovider/fake,
 * InstanceTypes(n)), reproduced for the benchmark and tests: type i has
 * i+1 vCPU, 2(i+1) GiB, 10(i+1) pods, kube-reserved 100m / 10Mi, price
 * 0.1 × vCPU + 0.1 × GB, offerings spot in test-zone-1/2 and on-demand in
 * test-zone-1/2/3. Never used by the daemon.
 */
#include <errno.h>
#include <stdio.h>

#include "model/catalog.h"

int catalog_add_fake_types(struct catalog *cat, uint32_t n)
{
	static const char *const zones[] = { "test-zone-1", "test-zone-2", "test-zone-3" };
	int64_t region = strtab_intern(cat->st, "test-region");
	uint8_t zi[3];
	int r;

	if (region < 0)
		return (int)region;
	for (int z = 0; z < 3; z++) {
		int64_t id = strtab_intern(cat->st, zones[z]);
		if (id < 0)
			return (int)id;
		r = catalog_zone(cat, (uint32_t)id, (uint32_t)region);
		if (r < 0)
			return r;
		zi[z] = (uint8_t)r;
	}
	for (uint32_t i = 0; i < n; i++) {
		char name[32], cpu[16];
		struct label labels[5];
		struct instance_type it = { 0 };
		int64_t id;
		double price = 0.1 * (i + 1) + 0.1 * (double)((int64_t)(i + 1) * 2 << 30) / 1e9;
		struct offering off[5] = {
			{ zi[0], CT_SPOT, true, price },      { zi[1], CT_SPOT, true, price },
			{ zi[0], CT_ON_DEMAND, true, price }, { zi[1], CT_ON_DEMAND, true, price },
			{ zi[2], CT_ON_DEMAND, true, price },
		};

		snprintf(name, sizeof(name), "fake-it-%u", i);
		snprintf(cpu, sizeof(cpu), "%u", i + 1);
		if ((id = strtab_intern(cat->st, name)) < 0)
			return (int)id;
		it.name = (uint32_t)id;
		labels[0] = (struct label){ K_INSTANCE_TYPE, (uint32_t)id };
		labels[1] = (struct label){ K_ARCH, V_AMD64 };
		labels[2] = (struct label){ K_OS, V_LINUX };
		if ((id = strtab_intern(cat->st, cpu)) < 0)
			return (int)id;
		labels[3] = (struct label){ K_INSTANCE_CPU, (uint32_t)id };
		labels[4] = (struct label){ K_REGION, (uint32_t)region };
		it.labels = labels;
		it.n_labels = 5;
		it.capacity.v[RES_CPU] = (int64_t)(i + 1) * 1000;
		it.capacity.v[RES_MEMORY] = (int64_t)(i + 1) * 2 << 30;
		it.capacity.v[RES_PODS] = (int64_t)(i + 1) * 10;
		it.allocatable = it.capacity;
		it.allocatable.v[RES_CPU] -= 100;
		it.allocatable.v[RES_MEMORY] -= 10 << 20;
		it.offerings = off;
		it.n_offerings = 5;
		r = catalog_add_type(cat, &it);
		if (r < 0)
			return r;
	}
	return 0;
}
