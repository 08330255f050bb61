/*
 * The instance-type catalog: loading data/instance-types.tsv, Karpenter's
 * overhead formulas, derived offering prices, and the bitset indexes that
 * answer "which types satisfy these requirements" without scanning types.
 * Called by the loaders (build) and the solver (queries); queries never
 * allocate.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hash.h"
#include "config.h"
#include "model/catalog.h"
#include "model/kubelet.h"

/* Longest line of the TSV we accept (real lines are ~300 bytes). */
#define TSV_MAX_LINE 8192
#define TSV_MAX_COLUMNS 64
/* Root volume of Karpenter's default block device mapping. */

static const char *const fixed_strings[K_N_FIXED] = {
	[K_NODEPOOL] = "karpenter.sh/nodepool",
	[K_PROVISIONER_NAME] = "karpenter.sh/provisioner-name",
	[K_ZONE] = "topology.kubernetes.io/zone",
	[K_REGION] = "topology.kubernetes.io/region",
	[K_INSTANCE_TYPE] = "node.kubernetes.io/instance-type",
	[K_ARCH] = "kubernetes.io/arch",
	[K_OS] = "kubernetes.io/os",
	[K_CAPACITY_TYPE] = "karpenter.sh/capacity-type",
	[K_WINDOWS_BUILD] = "node.kubernetes.io/windows-build",
	[K_INSTANCE_CATEGORY] = "karpenter.k8s.aws/instance-category",
	[K_INSTANCE_FAMILY] = "karpenter.k8s.aws/instance-family",
	[K_INSTANCE_GENERATION] = "karpenter.k8s.aws/instance-generation",
	[K_INSTANCE_SIZE] = "karpenter.k8s.aws/instance-size",
	[K_INSTANCE_CPU] = "karpenter.k8s.aws/instance-cpu",
	[K_INSTANCE_CPU_MANUFACTURER] = "karpenter.k8s.aws/instance-cpu-manufacturer",
	[K_INSTANCE_MEMORY] = "karpenter.k8s.aws/instance-memory",
	[K_INSTANCE_GPU_NAME] = "karpenter.k8s.aws/instance-gpu-name",
	[K_INSTANCE_GPU_MANUFACTURER] = "karpenter.k8s.aws/instance-gpu-manufacturer",
	[K_INSTANCE_GPU_COUNT] = "karpenter.k8s.aws/instance-gpu-count",
	[K_INSTANCE_GPU_MEMORY] = "karpenter.k8s.aws/instance-gpu-memory",
	[K_INSTANCE_ACCELERATOR_NAME] = "karpenter.k8s.aws/instance-accelerator-name",
	[K_INSTANCE_ACCELERATOR_MANUFACTURER] = "karpenter.k8s.aws/instance-accelerator-manufacturer",
	[K_INSTANCE_ACCELERATOR_COUNT] = "karpenter.k8s.aws/instance-accelerator-count",
	[K_INSTANCE_HYPERVISOR] = "karpenter.k8s.aws/instance-hypervisor",
	[K_INSTANCE_NETWORK_BANDWIDTH] = "karpenter.k8s.aws/instance-network-bandwidth",
	[K_INSTANCE_EBS_BANDWIDTH] = "karpenter.k8s.aws/instance-ebs-bandwidth",
	[K_INSTANCE_LOCAL_NVME] = "karpenter.k8s.aws/instance-local-nvme",
	[K_INSTANCE_ENCRYPTION_IN_TRANSIT] = "karpenter.k8s.aws/instance-encryption-in-transit-supported",
	[K_HOSTNAME] = "kubernetes.io/hostname",
	[V_SPOT] = "spot",
	[V_ON_DEMAND] = "on-demand",
	[V_LINUX] = "linux",
	[V_AMD64] = "amd64",
	[V_ARM64] = "arm64",
	[V_METAL] = "metal",
};

int wellknown_intern(struct strtab *st)
{
	for (int i = 0; i < K_N_FIXED; i++) {
		int64_t id = strtab_intern(st, fixed_strings[i]);
		if (id < 0)
			return (int)id;
		if (id != i)
			return -EINVAL; /* the table was not empty */
	}
	return 0;
}

static const char *const builtin_resources[RES_N_BUILTIN] = {
	[RES_CPU] = "cpu",
	[RES_MEMORY] = "memory",
	[RES_PODS] = "pods",
	[RES_EPHEMERAL_STORAGE] = "ephemeral-storage",
	[RES_NVIDIA_GPU] = "nvidia.com/gpu",
	[RES_NEURON] = "aws.amazon.com/neuron",
	[RES_POD_ENI] = "vpc.amazonaws.com/pod-eni",
};

int catalog_init(struct catalog *cat, struct strtab *st)
{
	memset(cat, 0, sizeof(*cat));
	cat->st = st;
	for (int i = 0; i < RES_N_BUILTIN; i++) {
		int64_t id = strtab_intern(st, builtin_resources[i]);
		if (id < 0)
			return (int)id;
		cat->resource_names[i] = (uint32_t)id;
	}
	cat->n_resources = RES_N_BUILTIN;
	cat->vm_memory_overhead = SCHED_VM_MEMORY_OVERHEAD;
	return 0;
}

int catalog_resource(struct catalog *cat, const char *name, bool create)
{
	uint32_t id = strtab_lookup(cat->st, name);
	int64_t nid;

	for (uint32_t i = 0; id != STR_NONE && i < cat->n_resources; i++)
		if (cat->resource_names[i] == id)
			return (int)i;
	if (!create)
		return -ENOENT;
	if (cat->n_resources >= SCHED_MAX_RESOURCES)
		return -E2BIG;
	nid = strtab_intern(cat->st, name);
	if (nid < 0)
		return (int)nid;
	cat->resource_names[cat->n_resources] = (uint32_t)nid;
	return (int)cat->n_resources++;
}

void catalog_done(struct catalog *cat)
{
	free(cat->types);
	arena_done(&cat->arena);
	memset(cat, 0, sizeof(*cat));
}

int catalog_zone_find(const struct catalog *cat, uint32_t zone)
{
	for (uint32_t i = 0; i < cat->n_zones; i++)
		if (cat->zones[i] == zone)
			return (int)i;
	return -ENOENT;
}

int catalog_zone(struct catalog *cat, uint32_t zone, uint32_t region)
{
	int i = catalog_zone_find(cat, zone);

	if (i >= 0)
		return i;
	if (cat->n_zones >= SCHED_MAX_ZONES)
		return -E2BIG;
	cat->zones[cat->n_zones] = zone;
	cat->zone_region[cat->n_zones] = region;
	return (int)cat->n_zones++;
}

int catalog_add_type(struct catalog *cat, const struct instance_type *it)
{
	struct instance_type *t;

	if (cat->n_types >= SCHED_MAX_TYPE_WORDS * 64)
		return -E2BIG;
	if (cat->n_types == cat->cap) {
		uint32_t cap = cat->cap ? cat->cap * 2 : 256;
		t = realloc(cat->types, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		cat->types = t;
		cat->cap = cap;
	}
	t = &cat->types[cat->n_types];
	*t = *it;
	t->labels = arena_memdup(&cat->arena, it->labels, it->n_labels * sizeof(*it->labels));
	t->offerings = arena_memdup(&cat->arena, it->offerings,
				    it->n_offerings * sizeof(*it->offerings));
	if (!t->labels || !t->offerings)
		return -ENOMEM;
	labels_sort(t->labels, t->n_labels);
	cat->n_types++;
	return 0;
}

static int type_cmp(const void *a, const void *b)
{
	const struct instance_type *x = a, *y = b;

	for (int r = RES_CPU; r <= RES_MEMORY; r++)
		if (x->allocatable.v[r] != y->allocatable.v[r])
			return x->allocatable.v[r] < y->allocatable.v[r] ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

struct triple {
	uint32_t key, value, type;
};

static int triple_cmp(const void *a, const void *b)
{
	const struct triple *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->type < y->type ? -1 : x->type > y->type;
}

static uint64_t *bits_new(struct catalog *cat)
{
	return arena_alloc(&cat->arena, (cat->words ? cat->words : 1) * sizeof(uint64_t));
}

static int catalog_build_index(struct catalog *cat)
{
	size_t n = 0, cap = 0;
	struct triple *tr = NULL;

	for (uint32_t t = 0; t < cat->n_types; t++)
		cap += cat->types[t].n_labels;
	tr = malloc((cap ? cap : 1) * sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	for (uint32_t t = 0; t < cat->n_types; t++)
		for (uint32_t l = 0; l < cat->types[t].n_labels; l++)
			tr[n++] = (struct triple){ cat->types[t].labels[l].key,
						   cat->types[t].labels[l].value, t };
	qsort(tr, n, sizeof(*tr), triple_cmp);
	uint32_t n_keys = 0;
	for (size_t i = 0; i < n; i++)
		if (!i || tr[i].key != tr[i - 1].key)
			n_keys++;
	cat->index = arena_alloc(&cat->arena, (n_keys ? n_keys : 1) * sizeof(*cat->index));
	if (!cat->index)
		goto oom;
	for (size_t i = 0; i < n;) {
		struct label_index *ix = &cat->index[cat->n_index++];
		size_t j = i;
		uint32_t nv = 0;

		while (j < n && tr[j].key == tr[i].key) {
			if (j == i || tr[j].value != tr[j - 1].value)
				nv++;
			j++;
		}
		ix->key = tr[i].key;
		ix->values = arena_alloc(&cat->arena, nv * sizeof(uint32_t));
		ix->sets = arena_alloc(&cat->arena, nv * sizeof(uint64_t *));
		ix->has_key = bits_new(cat);
		if (!ix->values || !ix->sets || !ix->has_key)
			goto oom;
		for (size_t k = i; k < j; k++) {
			if (k == i || tr[k].value != tr[k - 1].value) {
				ix->values[ix->n_values] = tr[k].value;
				ix->sets[ix->n_values] = bits_new(cat);
				if (!ix->sets[ix->n_values])
					goto oom;
				ix->n_values++;
			}
			bit_set(ix->sets[ix->n_values - 1], tr[k].type);
			bit_set(ix->has_key, tr[k].type);
		}
		i = j;
	}
	free(tr);
	return 0;
oom:
	free(tr);
	return -ENOMEM;
}

int catalog_finalize(struct catalog *cat)
{
	if (cat->n_types) /* a model scoped to one Node has none: qsort(NULL) is undefined */
		qsort(cat->types, cat->n_types, sizeof(*cat->types), type_cmp);
	cat->words = (cat->n_types + 63) / 64;
	cat->all = bits_new(cat);
	cat->metal = bits_new(cat);
	if (!cat->all || !cat->metal)
		return -ENOMEM;
	for (uint32_t i = 0; i < cat->n_zones * CT_N; i++)
		if (!(cat->offer[i] = bits_new(cat)))
			return -ENOMEM;
	cat->prefix_max = arena_alloc(&cat->arena, (cat->n_types ? cat->n_types : 1) * sizeof(*cat->prefix_max));
	if (!cat->prefix_max)
		return -ENOMEM;
	for (uint32_t t = 0; t < cat->n_types; t++) {
		const struct instance_type *it = &cat->types[t];

		for (uint32_t r = 0; r < SCHED_MAX_RESOURCES; r++)
			cat->prefix_max[t].v[r] = MAX(t ? cat->prefix_max[t - 1].v[r] : 0, it->allocatable.v[r]);
		bit_set(cat->all, t);
		if (it->metal)
			bit_set(cat->metal, t);
		for (uint32_t o = 0; o < it->n_offerings; o++)
			if (it->offerings[o].available)
				bit_set(cat->offer[it->offerings[o].zone * CT_N +
						   it->offerings[o].capacity_type], t);
	}
	return catalog_build_index(cat);
}

uint64_t catalog_zone_mask(const struct catalog *cat, const struct requirements *reqs)
{
	const struct requirement *z = requirements_get(reqs, K_ZONE);
	const struct requirement *r = requirements_get(reqs, K_REGION);
	uint64_t m = 0;

	for (uint32_t i = 0; i < cat->n_zones; i++)
		if ((!z || requirement_allows(z, cat->st, cat->zones[i])) &&
		    (!r || requirement_allows(r, cat->st, cat->zone_region[i])))
			m |= 1ULL << i;
	return m;
}

unsigned catalog_ct_mask(const struct requirements *reqs, const struct strtab *st)
{
	const struct requirement *c = requirements_get(reqs, K_CAPACITY_TYPE);
	unsigned m = 0;

	if (!c || requirement_allows(c, st, V_SPOT))
		m |= 1u << CT_SPOT;
	if (!c || requirement_allows(c, st, V_ON_DEMAND))
		m |= 1u << CT_ON_DEMAND;
	return m;
}

static int32_t index_value(const struct label_index *ix, uint32_t value)
{
	uint32_t lo = 0, hi = ix->n_values;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (ix->values[mid] == value)
			return (int32_t)mid;
		if (ix->values[mid] < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static bool selects_metal(const struct requirements *reqs)
{
	const struct requirement *a = requirements_get(reqs, K_INSTANCE_TYPE);
	const struct requirement *b = requirements_get(reqs, K_INSTANCE_SIZE);

	return (a && !a->complement) || (b && !b->complement);
}

static void filter(const struct catalog *cat, const struct requirements *reqs, bool os_fixed, uint64_t *out);

void catalog_filter(const struct catalog *cat, const struct requirements *reqs, uint64_t *out)
{
	filter(cat, reqs, false, out);
}

void catalog_filter_pool(const struct catalog *cat, const struct requirements *reqs, bool windows,
			 uint64_t *out)
{
	filter(cat, reqs, windows, out);
}

static void filter(const struct catalog *cat, const struct requirements *reqs, bool os_fixed, uint64_t *out)
{
	uint32_t w = cat->words;
	uint64_t tmp[SCHED_MAX_TYPE_WORDS];
	uint64_t zones = catalog_zone_mask(cat, reqs);
	unsigned cts = catalog_ct_mask(reqs, cat->st);

	memset(tmp, 0, sizeof(tmp));
	for (uint32_t z = 0; z < cat->n_zones; z++)
		for (unsigned c = 0; c < CT_N; c++)
			if ((zones >> z & 1) && (cts >> c & 1))
				bits_or(tmp, cat->offer[z * CT_N + c], w);
	memcpy(out, tmp, w * sizeof(uint64_t));
	/* The catalog's types are Linux's, which have no windows-build label
	 * (Karpenter gives them windows-build DoesNotExist: aws/karpenter-
	 * provider-aws pkg/providers/instancetype/types.go computeRequirements):
	 * outside a Windows pool, a requirement the label's absence does not
	 * meet leaves no type, whether or not the catalog indexes the key. */
	const struct requirement *build = requirements_get(reqs, K_WINDOWS_BUILD);
	if (!os_fixed && build && !requirement_allows(build, cat->st, STR_NONE)) {
		memset(out, 0, w * sizeof(uint64_t));
		return;
	}
	if (!selects_metal(reqs))
		for (uint32_t i = 0; i < w; i++)
			out[i] &= ~cat->metal[i];
	for (uint32_t k = 0; k < cat->n_index; k++) {
		const struct label_index *ix = &cat->index[k];
		const struct requirement *req = requirements_get(reqs, ix->key);

		if (!req || (os_fixed && (ix->key == K_OS || ix->key == K_WINDOWS_BUILD)))
			continue;
		memset(tmp, 0, sizeof(tmp));
		if (!req->complement) {
			for (uint32_t v = 0; v < req->n_values; v++) {
				int32_t j = index_value(ix, req->values[v]);
				if (j >= 0)
					bits_or(tmp, ix->sets[j], w);
			}
		} else {
			for (uint32_t j = 0; j < ix->n_values; j++)
				if (requirement_allows(req, cat->st, ix->values[j]))
					bits_or(tmp, ix->sets[j], w);
		}
		if (req->absent_ok)
			for (uint32_t i = 0; i < w; i++)
				tmp[i] |= ~ix->has_key[i] & cat->all[i];
		bits_and(out, tmp, w);
	}
}

double catalog_type_price(const struct catalog *cat, uint32_t t, uint64_t zones, unsigned cts)
{
	const struct instance_type *it = &cat->types[t];
	double best = -1;

	for (uint32_t o = 0; o < it->n_offerings; o++) {
		const struct offering *of = &it->offerings[o];
		if (of->available && (zones >> of->zone & 1) && (cts >> of->capacity_type & 1) &&
		    (best < 0 || of->price < best))
			best = of->price;
	}
	return best;
}

double offering_price(double od_us_east_1, const char *type, const char *zone,
		      const char *region, bool spot)
{
	double od = od_us_east_1;
	char key[256];

	if (streq(region, "eu-west-1"))
		od *= 1.1;
	else if (streq(region, "ap-northeast-1"))
		od *= 1.2;
	if (!spot)
		return od;
	snprintf(key, sizeof(key), "%s%s", type, zone);
	return od * (0.3 + 0.4 * (double)(hash_fnv1a64(key) % 1000) / 1000.0);
}

void catalog_capacity(int64_t vcpus, int64_t memory_mib, int64_t max_pods,
		      double vm_memory_overhead, struct resources *capacity,
		      struct resources *allocatable)
{
	struct resources cap = { { 0 } };
	int64_t mem_mib = memory_mib - (int64_t)ceil((double)memory_mib * vm_memory_overhead);

	cap.v[RES_CPU] = vcpus * 1000;
	cap.v[RES_MEMORY] = mem_mib << 20;
	cap.v[RES_PODS] = max_pods;
	cap.v[RES_EPHEMERAL_STORAGE] = CATALOG_ROOT_VOLUME_BYTES;
	/* Default kubelet settings: the same formulas NodePools' settings change. */
	kubelet_node_resources(NULL, &cap, &cap, capacity, allocatable);
}

void catalog_default_path(char *buf, size_t size)
{
	static const char *const candidates[] = {
		KANNA_DATADIR "/instance-types.tsv",
		KANNA_SRCDIR "/data/instance-types.tsv",
	};
	const char *env = getenv("KANNA_DATADIR");

	if (env && *env) {
		snprintf(buf, size, "%s/instance-types.tsv", env);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++)
		if (access(candidates[i], R_OK) == 0) {
			snprintf(buf, size, "%s", candidates[i]);
			return;
		}
	snprintf(buf, size, "%s", candidates[0]);
}
