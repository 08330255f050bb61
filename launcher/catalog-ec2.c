/*
 * The launcher's catalog from EC2's answers: reads DescribeInstanceTypes,
 * DescribeInstanceTypeOfferings and DescribeSpotPriceHistory pages into
 * struct ec2_type facts the way Karpenter's AWS provider reads them
 * (labels in lower-kebab-case, ENI-limited max pods from the default network
 * card, GPUs and Neuron devices as extended resources), then builds the
 * catalog with the scheduler's own model (catalog_capacity(),
 * catalog_to_proto()) so that launcher and schedulers agree on every label,
 * allocatable and price. Called by launcher/catalog.c; no I/O here.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/catalog-internal.h"
#include "model/catalog-proto.h"

/* ---- reading pages ---------------------------------------------------------- */

static bool xml_u64(const struct aws_xml_node *n, const char *path, uint64_t *ret)
{
	const char *s = aws_xml_text(n, path);
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*ret = v;
	return true;
}

static bool xml_is(const struct aws_xml_node *n, const char *path, const char *value)
{
	const char *s = aws_xml_text(n, path);

	return s && streq(s, value);
}

/* Karpenter's lowerKabobCase(): lower case, spaces to dashes. */
static void kebab(char *dst, size_t size, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < size; i++)
		dst[i] = src[i] == ' ' ? '-' : (char)tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

static const char *kube_arch(const struct aws_xml_node *it)
{
	const struct aws_xml_node *a = aws_xml_find(it, "processorInfo/supportedArchitectures");

	for (a = a ? aws_xml_first(a, "item") : NULL; a; a = aws_xml_next(a))
		if (streq(a->text, "x86_64"))
			return "amd64";
		else if (streq(a->text, "arm64"))
			return "arm64";
	return NULL;
}

static void read_gpus(const struct aws_xml_node *it, struct ec2_type *t)
{
	const struct aws_xml_node *g = aws_xml_find(it, "gpuInfo/gpus");
	unsigned kinds = 0;

	for (g = g ? aws_xml_first(g, "item") : NULL; g; g = aws_xml_next(g)) {
		const char *maker = aws_xml_text(g, "manufacturer");
		uint64_t count = 0, mem = 0;

		xml_u64(g, "count", &count);
		if (maker && streq(maker, "NVIDIA"))
			t->nvidia_gpus += (uint32_t)count;
		else if (maker && streq(maker, "AMD"))
			t->amd_gpus += (uint32_t)count;
		else if (maker && streq(maker, "Habana"))
			t->habana_gaudis += (uint32_t)count;
		if (kinds++)
			continue;
		kebab(t->gpu_name, sizeof(t->gpu_name), aws_xml_text(g, "name"));
		kebab(t->gpu_manufacturer, sizeof(t->gpu_manufacturer), maker);
		t->gpu_count = (uint32_t)count;
		if (xml_u64(g, "memoryInfo/sizeInMiB", &mem))
			t->gpu_memory_mib = mem;
	}
	if (kinds > 1) { /* labels only for one GPU kind, as Karpenter */
		t->gpu_name[0] = t->gpu_manufacturer[0] = '\0';
		t->gpu_count = 0;
		t->gpu_memory_mib = 0;
	}
}

/* Neuron devices (Inferentia, Trainium), else one inference accelerator. */
static void read_accelerators(const struct aws_xml_node *it, struct ec2_type *t)
{
	const struct aws_xml_node *neuron = aws_xml_child(it, "neuronInfo");
	const struct aws_xml_node *d = aws_xml_find(it, neuron ? "neuronInfo/neuronDevices" :
							 "inferenceAcceleratorInfo/accelerators");
	unsigned kinds = 0;

	for (d = d ? aws_xml_first(d, "item") : NULL; d; d = aws_xml_next(d)) {
		uint64_t count = 0;

		xml_u64(d, "count", &count);
		if (neuron)
			t->neuron_devices += (uint32_t)count;
		if (kinds++)
			continue;
		kebab(t->accelerator_name, sizeof(t->accelerator_name), aws_xml_text(d, "name"));
		kebab(t->accelerator_manufacturer, sizeof(t->accelerator_manufacturer),
		      neuron ? "aws" : aws_xml_text(d, "manufacturer"));
		t->accelerator_count = (uint32_t)count;
	}
	if (kinds > 1) {
		t->accelerator_name[0] = t->accelerator_manufacturer[0] = '\0';
		t->accelerator_count = 0;
	}
}

/* ENIs of the default network card × (IPv4 addresses per ENI - 1) + 2: the
 * VPC CNI uses the default card only (Karpenter's ENILimitedPods()). */
static uint32_t eni_limited_pods(const struct aws_xml_node *it)
{
	const struct aws_xml_node *net = aws_xml_child(it, "networkInfo"), *card;
	uint64_t index = 0, enis = 0, ipv4 = 0, card_index;

	if (!net)
		return 0;
	xml_u64(net, "defaultNetworkCardIndex", &index);
	if (!xml_u64(net, "maximumNetworkInterfaces", &enis))
		enis = 0;
	card = aws_xml_child(net, "networkCards");
	for (card = card ? aws_xml_first(card, "item") : NULL; card; card = aws_xml_next(card))
		if (xml_u64(card, "networkCardIndex", &card_index) && card_index == index)
			xml_u64(card, "maximumNetworkInterfaces", &enis);
	if (!xml_u64(net, "ipv4AddressesPerInterface", &ipv4) || enis == 0 || ipv4 == 0 ||
	    enis * (ipv4 - 1) + 2 > UINT32_MAX)
		return 0;
	return (uint32_t)(enis * (ipv4 - 1) + 2);
}

/* 1: read; 0: a type kanna does not run on (an architecture Kubernetes has no name for). */
static int read_type(const struct aws_xml_node *it, struct ec2_type *t)
{
	const char *name = aws_xml_text(it, "instanceType"), *arch = kube_arch(it), *s;
	const struct aws_xml_node *u;
	uint64_t v;

	memset(t, 0, sizeof(*t));
	t->ebs_mbps = t->nvme_gb = -1;
	if (!name || !*name || strlen(name) >= sizeof(t->name))
		return -EBADMSG;
	if (!arch)
		return 0;
	snprintf(t->name, sizeof(t->name), "%s", name);
	snprintf(t->arch, sizeof(t->arch), "%s", arch);
	if (!xml_u64(it, "vCpuInfo/defaultVCpus", &v) || v == 0 || v > UINT32_MAX)
		return -EBADMSG;
	t->vcpu = (uint32_t)v;
	if (!xml_u64(it, "memoryInfo/sizeInMiB", &t->memory_mib) || t->memory_mib == 0)
		return -EBADMSG;
	u = aws_xml_child(it, "supportedUsageClasses");
	for (u = u ? aws_xml_first(u, "item") : NULL; u; u = aws_xml_next(u)) {
		t->spot |= streq(u->text, "spot");
		t->on_demand |= streq(u->text, "on-demand");
	}
	t->bare_metal = xml_is(it, "bareMetal", "true");
	if ((s = aws_xml_text(it, "hypervisor")) && strlen(s) < sizeof(t->hypervisor))
		snprintf(t->hypervisor, sizeof(t->hypervisor), "%s", s);
	kebab(t->cpu_manufacturer, sizeof(t->cpu_manufacturer), aws_xml_text(it, "processorInfo/manufacturer"));
	read_gpus(it, t);
	read_accelerators(it, t);
	if (aws_xml_child(it, "instanceStorageInfo") &&
	    !xml_is(it, "instanceStorageInfo/nvmeSupport", "unsupported") &&
	    xml_u64(it, "instanceStorageInfo/totalSizeInGB", &v) && v > 0 && v <= INT64_MAX)
		t->nvme_gb = (int64_t)v;
	if (xml_is(it, "ebsInfo/ebsOptimizedSupport", "default") &&
	    xml_u64(it, "ebsInfo/ebsOptimizedInfo/maximumBandwidthInMbps", &v) && v <= INT64_MAX)
		t->ebs_mbps = (int64_t)v;
	t->encryption_in_transit = xml_is(it, "networkInfo/encryptionInTransitSupported", "true");
	t->max_pods = eni_limited_pods(it);
	return 1;
}

int ec2_read_types_page(const struct aws_xml_node *root, struct ec2_described *d)
{
	const struct aws_xml_node *set = aws_xml_child(root, "instanceTypeSet"), *it;
	int r;

	if (!set)
		return -EBADMSG;
	for (it = aws_xml_first(set, "item"); it; it = aws_xml_next(it)) {
		if (d->n == d->cap) {
			size_t cap = d->cap ? d->cap * 2 : 1024;
			struct ec2_type *n = realloc(d->types, cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			d->types = n;
			d->cap = cap;
		}
		r = read_type(it, &d->types[d->n]);
		if (r < 0)
			return r;
		d->n += r;
	}
	return 0;
}

static int zone_index(const struct ec2_described *d, const char *zone)
{
	for (unsigned z = 0; z < d->n_zones; z++)
		if (streq(d->zones[z], zone))
			return (int)z;
	return -ENOENT;
}

int ec2_read_offerings_page(const struct aws_xml_node *root, struct ec2_described *d)
{
	const struct aws_xml_node *set = aws_xml_child(root, "instanceTypeOfferingSet"), *it;

	if (!set)
		return -EBADMSG;
	for (it = aws_xml_first(set, "item"); it; it = aws_xml_next(it)) {
		const char *zone = aws_xml_text(it, "location");
		struct ec2_type *t = ec2_described_find(d, aws_xml_text(it, "instanceType"));
		int z;

		if (!zone || !*zone || strlen(zone) >= EC2_NAME_MAX)
			return -EBADMSG;
		if (!t)
			continue; /* filtered out when described (architecture) */
		z = zone_index(d, zone);
		if (z < 0) {
			if (d->n_zones == SCHED_MAX_ZONES)
				return -E2BIG;
			snprintf(d->zones[d->n_zones], EC2_NAME_MAX, "%s", zone);
			z = (int)d->n_zones++;
		}
		t->zones |= 1ULL << z;
	}
	return 0;
}

int ec2_read_spot_page(const struct aws_xml_node *root, const struct ec2_described *d,
		       double *spot, int64_t *spot_ms)
{
	const struct aws_xml_node *set = aws_xml_child(root, "spotPriceHistorySet"), *it;

	if (!set)
		return -EBADMSG;
	for (it = aws_xml_first(set, "item"); it; it = aws_xml_next(it)) {
		const char *price = aws_xml_text(it, "spotPrice"), *ts = aws_xml_text(it, "timestamp");
		const struct ec2_type *t = ec2_described_find(d, aws_xml_text(it, "instanceType"));
		const char *zone = aws_xml_text(it, "availabilityZone");
		time_t when;
		double p;
		char *end;
		size_t k;
		int z;

		if (!price || !ts || !zone || aws_parse_iso8601(ts, &when) < 0)
			return -EBADMSG;
		p = strtod(price, &end);
		if (end == price || *end || !(p >= 0))
			return -EBADMSG;
		if (!t || (z = zone_index(d, zone)) < 0)
			continue; /* a type or zone without offerings */
		k = (size_t)(t - d->types) * d->n_zones + (size_t)z;
		if (spot[k] < 0 || (int64_t)when * 1000 > spot_ms[k]) {
			spot[k] = p;
			spot_ms[k] = (int64_t)when * 1000;
		}
	}
	return 0;
}

static int type_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ec2_type *)a)->name, ((const struct ec2_type *)b)->name);
}

void ec2_described_sort(struct ec2_described *d)
{
	qsort_safe(d->types, d->n, sizeof(*d->types), type_cmp);
}

struct ec2_type *ec2_described_find(const struct ec2_described *d, const char *name)
{
	struct ec2_type key;

	if (!name || !d->n || strlen(name) >= sizeof(key.name))
		return NULL;
	snprintf(key.name, sizeof(key.name), "%s", name);
	return bsearch(&key, d->types, d->n, sizeof(*d->types), type_cmp);
}

void ec2_described_clear(struct ec2_described *d)
{
	free(d->types);
	memset(d, 0, sizeof(*d));
}

/* ---- building the catalog ----------------------------------------------------- */

static int proto_type_cmp(const void *a, const void *b)
{
	return strcmp(((const struct proto_instance_type *)a)->name,
		      ((const struct proto_instance_type *)b)->name);
}

const struct proto_instance_type *catalog_proto_find(const struct proto_instance_type *types,
						     uint32_t n, const char *name)
{
	struct proto_instance_type key = { .name = (char *)name };

	return name && n ? bsearch(&key, types, n, sizeof(*types), proto_type_cmp) : NULL;
}

static double shipped_od_price(const struct proto_instance_type *s)
{
	for (uint32_t o = 0; o < s->n_offerings; o++)
		if (s->offerings[o].capacity_type == PROTO_CAPACITY_ON_DEMAND)
			return s->offerings[o].price;
	return -1;
}

static int64_t shipped_resource(const struct proto_instance_type *s, const char *name)
{
	for (uint32_t i = 0; i < s->n_capacity; i++)
		if (streq(s->capacity[i].name, name))
			return s->capacity[i].value;
	return 0;
}

static const char *shipped_label(const struct proto_instance_type *s, const char *key)
{
	for (uint32_t i = 0; i < s->n_labels; i++)
		if (streq(s->labels[i].key, key))
			return s->labels[i].value;
	return NULL;
}

static int fact_cmp(const void *a, const void *b)
{
	return strcmp(((const struct shipped_fact *)a)->name, ((const struct shipped_fact *)b)->name);
}

const struct shipped_fact *shipped_fact_find(const struct shipped_fact *facts, uint32_t n,
					     const char *name)
{
	struct shipped_fact key = { .name = name };

	return name && n ? bsearch(&key, facts, n, sizeof(*facts), fact_cmp) : NULL;
}

int shipped_facts_from_proto(const struct proto_instance_type *types, uint32_t n,
			     struct arena *a, struct shipped_fact **ret)
{
	struct shipped_fact *facts = arena_calloc(a, n + 1, sizeof(*facts));

	if (!facts)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct proto_instance_type *t = &types[i];
		const char *bw = shipped_label(t, "karpenter.k8s.aws/instance-network-bandwidth");

		facts[i] = (struct shipped_fact){
			.name = arena_strdup(a, t->name), .bandwidth = arena_strdup(a, bw),
			.od_price = shipped_od_price(t), .pods = shipped_resource(t, "pods"),
			.pod_eni = shipped_resource(t, "vpc.amazonaws.com/pod-eni"),
		};
		if (!facts[i].name || (bw && !facts[i].bandwidth))
			return -ENOMEM;
	}
	qsort(facts, n, sizeof(*facts), fact_cmp);
	*ret = facts;
	return 0;
}

struct labels {
	struct catalog *cat;
	struct label v[K_N_WELL_KNOWN + 4];
	uint32_t n;
	int r;
};

static void label(struct labels *l, uint32_t key, const char *value)
{
	int64_t id;

	if (l->r < 0 || !value || !*value)
		return;
	id = strtab_intern(l->cat->st, value);
	if (id < 0) {
		l->r = (int)id;
		return;
	}
	l->v[l->n++] = (struct label){ key, (uint32_t)id };
}

static void label_num(struct labels *l, uint32_t key, int64_t value, int64_t min)
{
	char buf[32];

	if (value < min)
		return;
	snprintf(buf, sizeof(buf), "%" PRId64, value);
	label(l, key, buf);
}

/* Karpenter's instanceTypeScheme `(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.`:
 * category and generation, e.g. u-6tb1.metal → u, 1; p6-b200.48xlarge → p, 6. */
static void name_labels(struct labels *l, const char *name)
{
	const char *letters = name, *p, *gen, *dot = strchr(name, '.');
	char buf[EC2_NAME_MAX];

	while (*letters >= 'a' && *letters <= 'z')
		letters++;
	p = letters;
	if (p[0] == '-' && isdigit((unsigned char)p[1])) {
		const char *q = p + 1;
		while (isdigit((unsigned char)*q))
			q++;
		if (q[0] == 't' && q[1] == 'b')
			p = q + 2;
	}
	for (gen = p; isdigit((unsigned char)*p); p++)
		;
	/* name is shorter than EC2_NAME_MAX, so every part fits buf. */
	if (letters > name && p > gen && strchr(p, '.')) {
		snprintf(buf, sizeof(buf), "%.*s", (int)(letters - name), name);
		label(l, K_INSTANCE_CATEGORY, buf);
		snprintf(buf, sizeof(buf), "%.*s", (int)(p - gen), gen);
		label(l, K_INSTANCE_GENERATION, buf);
	}
	if (dot && !strchr(dot + 1, '.')) {
		snprintf(buf, sizeof(buf), "%.*s", (int)(dot - name), name);
		label(l, K_INSTANCE_FAMILY, buf);
		label(l, K_INSTANCE_SIZE, dot + 1);
	}
}

static int type_labels(struct labels *l, const struct ec2_type *t,
		       const struct shipped_fact *shipped, const char *region)
{
	label(l, K_INSTANCE_TYPE, t->name);
	name_labels(l, t->name);
	label_num(l, K_INSTANCE_CPU, t->vcpu, 0);
	label_num(l, K_INSTANCE_MEMORY, (int64_t)t->memory_mib, 0);
	label(l, K_ARCH, t->arch);
	label(l, K_INSTANCE_HYPERVISOR, t->hypervisor);
	/* Karpenter takes bandwidth from its generated table, as we take it
	 * from the shipped one: EC2 gives no comparable number. */
	label(l, K_INSTANCE_NETWORK_BANDWIDTH, shipped ? shipped->bandwidth : NULL);
	label(l, K_INSTANCE_CPU_MANUFACTURER, t->cpu_manufacturer);
	label_num(l, K_INSTANCE_EBS_BANDWIDTH, t->ebs_mbps, 0);
	label_num(l, K_INSTANCE_LOCAL_NVME, t->nvme_gb, 1);
	label(l, K_INSTANCE_ENCRYPTION_IN_TRANSIT, t->encryption_in_transit ? "true" : "false");
	label(l, K_INSTANCE_GPU_NAME, t->gpu_name);
	label(l, K_INSTANCE_GPU_MANUFACTURER, t->gpu_manufacturer);
	label_num(l, K_INSTANCE_GPU_MEMORY, (int64_t)t->gpu_memory_mib, 1);
	label_num(l, K_INSTANCE_GPU_COUNT, t->gpu_count, 1);
	label(l, K_INSTANCE_ACCELERATOR_NAME, t->accelerator_name);
	label(l, K_INSTANCE_ACCELERATOR_MANUFACTURER, t->accelerator_manufacturer);
	label_num(l, K_INSTANCE_ACCELERATOR_COUNT, t->accelerator_count, 1);
	label(l, K_OS, "linux");
	label(l, K_REGION, region);
	return l->r;
}

static int extended(struct catalog *cat, struct instance_type *it, const char *name, int64_t count)
{
	int slot;

	if (count <= 0)
		return 0;
	slot = catalog_resource(cat, name, true);
	if (slot < 0)
		return slot;
	it->capacity.v[slot] = it->allocatable.v[slot] = count;
	return 0;
}

static int add_type(struct catalog *cat, const struct ec2_build *b, size_t i, const uint8_t *zone_idx)
{
	const struct ec2_type *t = &b->d->types[i];
	const struct shipped_fact *shipped = shipped_fact_find(b->shipped, b->n_shipped, t->name);
	struct offering offerings[SCHED_MAX_ZONES * CT_N];
	struct labels l = { .cat = cat };
	struct instance_type it = { .offerings = offerings, .metal = t->bare_metal };
	double od = shipped ? shipped->od_price : -1;
	int64_t max_pods = t->max_pods ? t->max_pods : shipped ? shipped->pods : 0;
	int r;

	/* Spot, then on-demand, per zone: the order the shipped table gives. */
	for (unsigned z = 0; z < b->d->n_zones; z++) {
		double spot = b->spot[i * b->d->n_zones + z];
		if (!(t->zones >> z & 1))
			continue;
		if (t->spot && spot >= 0)
			offerings[it.n_offerings++] = (struct offering){ zone_idx[z], CT_SPOT, true, spot };
		if (t->on_demand && od >= 0)
			offerings[it.n_offerings++] = (struct offering){ zone_idx[z], CT_ON_DEMAND, true, od };
	}
	if (!it.n_offerings || max_pods <= 0)
		return 0; /* nothing to launch: no priced offering, or no pod fits */
	if ((r = type_labels(&l, t, shipped, b->region)) < 0)
		return r;
	it.labels = l.v;
	it.n_labels = l.n;
	it.name = l.v[0].value;
	catalog_capacity(t->vcpu, (int64_t)t->memory_mib, max_pods, b->vm_memory_overhead,
			 &it.capacity, &it.allocatable);
	if ((r = extended(cat, &it, "nvidia.com/gpu", t->nvidia_gpus)) < 0 ||
	    (r = extended(cat, &it, "amd.com/gpu", t->amd_gpus)) < 0 ||
	    (r = extended(cat, &it, "habana.ai/gaudi", t->habana_gaudis)) < 0 ||
	    (r = extended(cat, &it, "aws.amazon.com/neuron", t->neuron_devices)) < 0 ||
	    (r = extended(cat, &it, "vpc.amazonaws.com/pod-eni", shipped ? shipped->pod_eni : 0)) < 0)
		return r;
	return catalog_add_type(cat, &it);
}

int ec2_build_catalog(const struct ec2_build *b, struct arena *a,
		      struct proto_instance_type **ret, uint32_t *n_ret)
{
	uint8_t zone_idx[SCHED_MAX_ZONES];
	struct strtab st;
	struct catalog cat;
	int64_t region;
	int r;

	if ((r = strtab_init(&st)) < 0)
		return r;
	if ((r = wellknown_intern(&st)) < 0 || (r = catalog_init(&cat, &st)) < 0) {
		strtab_done(&st);
		return r;
	}
	cat.vm_memory_overhead = b->vm_memory_overhead;
	region = strtab_intern(&st, b->region);
	r = region < 0 ? (int)region : 0;
	for (unsigned z = 0; r >= 0 && z < b->d->n_zones; z++) {
		int64_t id = strtab_intern(&st, b->d->zones[z]);
		r = id < 0 ? (int)id : catalog_zone(&cat, (uint32_t)id, (uint32_t)region);
		if (r >= 0)
			zone_idx[z] = (uint8_t)r;
	}
	for (size_t i = 0; r >= 0 && i < b->d->n; i++)
		r = add_type(&cat, b, i, zone_idx);
	if (r >= 0)
		r = catalog_to_proto(&cat, a, true, ret, n_ret);
	if (r >= 0)
		qsort(*ret, *n_ret, sizeof(**ret), proto_type_cmp);
	catalog_done(&cat);
	strtab_done(&st);
	return r < 0 ? r : 0;
}
