/*
 * EC2 catalog answers of kanna-sim: DescribeInstanceTypes,
 * DescribeInstanceTypeOfferings and DescribeSpotPriceHistory, in the real
 * XML shapes, with their filters and MaxResults/NextToken paging. Reads the
 * catalog only (aws-catalog.c documents how prices are derived). Called by
 * aws_dispatch() with the lock held; changes no state.
 */
#include "common/clock.h"
#include "sim/aws-internal.h"

static const char *const type_filters[] = {
	"instance-type", "processor-info.supported-architecture", "current-generation",
	"bare-metal", "hypervisor", "vcpu-info.default-vcpus", "memory-info.size-in-mib",
	"instance-storage-supported", NULL,
};

static bool type_matches(const struct aws_instance_type *t, const struct aws_filters *f)
{
	char buf[32];

	for (size_t i = 0; i < f->n; i++) {
		const struct aws_filter *flt = &f->v[i];
		const char *v = NULL;

		if (streq(flt->name, "instance-type"))
			v = t->name;
		else if (streq(flt->name, "processor-info.supported-architecture"))
			v = aws_type_ec2_arch(t);
		else if (streq(flt->name, "current-generation"))
			v = "true";
		else if (streq(flt->name, "bare-metal"))
			v = t->bare_metal ? "true" : "false";
		else if (streq(flt->name, "hypervisor"))
			v = t->hypervisor;
		else if (streq(flt->name, "instance-storage-supported"))
			v = t->local_nvme_gib ? "true" : "false";
		else if (streq(flt->name, "vcpu-info.default-vcpus")) {
			snprintf(buf, sizeof(buf), "%u", t->vcpu);
			v = buf;
		} else if (streq(flt->name, "memory-info.size-in-mib")) {
			snprintf(buf, sizeof(buf), "%llu", (unsigned long long)t->memory_mib);
			v = buf;
		}
		if (!aws_filter_matches(flt, v))
			return false;
	}
	return true;
}

static void write_network(struct xml *x, const struct aws_instance_type *t)
{
	char perf[64];

	if (*t->network_performance)
		snprintf(perf, sizeof(perf), "%s", t->network_performance);
	else
		snprintf(perf, sizeof(perf), "%g Gigabit", MAX(t->network_mbps, 100U) / 1000.0);
	xml_open(x, "networkInfo");
	xml_leaf(x, "networkPerformance", perf);
	xml_leaff(x, "maximumNetworkInterfaces", "%u", t->eni_max);
	xml_leaff(x, "maximumNetworkCards", "%u", MAX(t->network_cards, 1U));
	xml_leaf(x, "defaultNetworkCardIndex", "0");
	xml_open(x, "networkCards");
	for (unsigned c = 0; c < MAX(t->network_cards, 1U); c++) {
		xml_open(x, "item");
		xml_leaff(x, "networkCardIndex", "%u", c);
		xml_leaf(x, "networkPerformance", perf);
		xml_leaff(x, "maximumNetworkInterfaces", "%u",
			  c == 0 ? t->eni_default_card_max : t->eni_max / MAX(t->network_cards, 1U));
		if (t->network_mbps)
			xml_leaff(x, "baselineBandwidthInGbps", "%.3f", t->network_mbps / 1000.0);
		xml_close(x, "item");
	}
	xml_close(x, "networkCards");
	xml_leaff(x, "ipv4AddressesPerInterface", "%u", t->ipv4_per_eni);
	xml_leaff(x, "ipv6AddressesPerInterface", "%u", t->ipv4_per_eni);
	xml_leaf_bool(x, "ipv6Supported", true);
	xml_leaf(x, "enaSupport", streq(t->hypervisor, "xen") ? "supported" : "required");
	xml_leaf_bool(x, "efaSupported", t->efa_interfaces > 0);
	if (t->efa_interfaces) {
		xml_open(x, "efaInfo");
		xml_leaff(x, "maximumEfaInterfaces", "%u", t->efa_interfaces);
		xml_close(x, "efaInfo");
	}
	xml_leaf_bool(x, "encryptionInTransitSupported", t->encryption_in_transit);
	xml_close(x, "networkInfo");
}

static void write_gpus(struct xml *x, const struct aws_instance_type *t)
{
	/* Fractional-GPU types (g6f, gr6f) have a GPU counted 0: EC2 still
	 * describes it (name, manufacturer, memory), as Karpenter's labels show. */
	if (t->gpus == 0 && !*t->gpu_name)
		return;
	xml_open(x, "gpuInfo");
	xml_open(x, "gpus");
	xml_open(x, "item");
	xml_leaf(x, "name", t->gpu_name);
	xml_leaf(x, "manufacturer", streq(t->gpu_manufacturer, "nvidia") ? "NVIDIA" :
				    streq(t->gpu_manufacturer, "amd") ? "AMD" : t->gpu_manufacturer);
	xml_leaff(x, "count", "%u", t->gpus);
	xml_open(x, "memoryInfo");
	xml_leaff(x, "sizeInMiB", "%llu", (unsigned long long)t->gpu_memory_mib);
	xml_close(x, "memoryInfo");
	xml_close(x, "item");
	xml_close(x, "gpus");
	xml_leaff(x, "totalGpuMemoryInMiB", "%llu", (unsigned long long)(t->gpu_memory_mib * t->gpus));
	xml_close(x, "gpuInfo");
}

/* Inferentia and Trainium devices (Karpenter's aws.amazon.com/neuron). */
static void write_neuron(struct xml *x, const struct aws_instance_type *t)
{
	if (t->accelerators == 0 || !streq(t->accelerator_manufacturer, "aws"))
		return;
	xml_open(x, "neuronInfo");
	xml_open(x, "neuronDevices");
	xml_open(x, "item");
	xml_leaff(x, "count", "%u", t->accelerators);
	xml_leaf(x, "name", t->accelerator_name);
	xml_close(x, "item");
	xml_close(x, "neuronDevices");
	xml_close(x, "neuronInfo");
}

static void write_type(struct xml *x, const struct aws_instance_type *t)
{
	unsigned threads = streq(t->arch, "arm64") || t->vcpu == 1 ? 1 : 2;

	xml_open(x, "item");
	xml_leaf(x, "instanceType", t->name);
	xml_leaf_bool(x, "currentGeneration", true);
	xml_leaf_bool(x, "freeTierEligible", false);
	xml_open(x, "supportedUsageClasses");
	xml_leaf(x, "item", "on-demand");
	xml_leaf(x, "item", "spot");
	xml_close(x, "supportedUsageClasses");
	xml_open(x, "supportedRootDeviceTypes");
	xml_leaf(x, "item", "ebs");
	xml_close(x, "supportedRootDeviceTypes");
	xml_open(x, "supportedVirtualizationTypes");
	xml_leaf(x, "item", "hvm");
	xml_close(x, "supportedVirtualizationTypes");
	xml_leaf_bool(x, "bareMetal", t->bare_metal);
	if (*t->hypervisor)
		xml_leaf(x, "hypervisor", t->hypervisor);
	xml_open(x, "processorInfo");
	xml_open(x, "supportedArchitectures");
	xml_leaf(x, "item", aws_type_ec2_arch(t));
	xml_close(x, "supportedArchitectures");
	if (t->cpu_clock_mhz)
		xml_leaff(x, "sustainedClockSpeedInGhz", "%.1f", t->cpu_clock_mhz / 1000.0);
	xml_leaf(x, "manufacturer", streq(t->cpu_manufacturer, "intel") ? "Intel" :
				    streq(t->cpu_manufacturer, "amd") ? "AMD" : "AWS");
	xml_close(x, "processorInfo");
	xml_open(x, "vCpuInfo");
	xml_leaff(x, "defaultVCpus", "%u", t->vcpu);
	xml_leaff(x, "defaultCores", "%u", MAX(t->vcpu / threads, 1U));
	xml_leaff(x, "defaultThreadsPerCore", "%u", threads);
	xml_close(x, "vCpuInfo");
	xml_open(x, "memoryInfo");
	xml_leaff(x, "sizeInMiB", "%llu", (unsigned long long)t->memory_mib);
	xml_close(x, "memoryInfo");
	xml_leaf_bool(x, "instanceStorageSupported", t->local_nvme_gib > 0);
	if (t->local_nvme_gib) {
		xml_open(x, "instanceStorageInfo");
		xml_leaff(x, "totalSizeInGB", "%u", t->local_nvme_gib);
		xml_leaf(x, "nvmeSupport", "required");
		xml_close(x, "instanceStorageInfo");
	}
	xml_open(x, "ebsInfo");
	xml_leaf(x, "ebsOptimizedSupport", "default");
	xml_leaf(x, "encryptionSupport", "supported");
	if (t->ebs_mbps) {
		xml_open(x, "ebsOptimizedInfo");
		xml_leaff(x, "baselineBandwidthInMbps", "%u", t->ebs_mbps);
		xml_leaff(x, "maximumBandwidthInMbps", "%u", t->ebs_mbps);
		xml_close(x, "ebsOptimizedInfo");
	}
	xml_leaf(x, "nvmeSupport", streq(t->hypervisor, "xen") ? "unsupported" : "required");
	xml_close(x, "ebsInfo");
	write_network(x, t);
	write_gpus(x, t);
	write_neuron(x, t);
	xml_leaf_bool(x, "burstablePerformanceSupported", t->category[0] == 't');
	xml_close(x, "item");
}

int ec2_describe_instance_types(struct sim_aws *aws, const struct aws_request *req,
				struct aws_response *resp)
{
	const struct aws_catalog *c = aws->catalog;
	_cleanup_free_ const struct aws_instance_type **sel = NULL;
	struct aws_filters f = { 0 };
	struct aws_list named = { 0 };
	size_t n_sel = 0, start, limit;
	bool handled;
	struct xml x;
	int r;

	r = aws_page_parse(req, resp, PAGE_INSTANCE_TYPES, &start, &limit, &handled);
	if (r < 0 || handled)
		return r;
	r = ec2_filters_load(req, resp, type_filters, false, &f, &handled);
	if (r < 0 || handled)
		return r;
	sel = calloc(c->n_types + 1, sizeof(*sel));
	if (!sel || aws_params_list(req->params, "InstanceType", &named) < 0) {
		aws_filters_clear(&f);
		return -ENOMEM;
	}
	for (size_t i = 0; i < named.n; i++)
		if (!aws_catalog_type(c, named.v[i])) {
			r = aws_error(resp, req, 400, "InvalidInstanceType",
				      "The following supplied instance types do not exist: [%s]",
				      named.v[i] ? named.v[i] : "");
			aws_filters_clear(&f);
			aws_list_clear(&named);
			return r;
		}
	for (size_t i = 0; i < c->n_types; i++)
		if ((named.n == 0 || aws_list_has(&named, c->types[i].name)) &&
		    type_matches(&c->types[i], &f))
			sel[n_sel++] = &c->types[i];
	aws_filters_clear(&f);
	aws_list_clear(&named);

	r = xml_begin(&x, "DescribeInstanceTypesResponse", EC2_XMLNS);
	if (r < 0)
		return r;
	xml_leaf(&x, "requestId", req->request_id);
	xml_open(&x, "instanceTypeSet");
	for (size_t i = start; i < n_sel && i < start + limit; i++)
		write_type(&x, sel[i]);
	xml_close(&x, "instanceTypeSet");
	if (start + limit < n_sel)
		aws_page_next_token(&x, start + limit);
	return xml_finish(&x, "DescribeInstanceTypesResponse", resp);
}

static const char *const offering_filters[] = { "instance-type", "location", NULL };

int ec2_describe_instance_type_offerings(struct sim_aws *aws, const struct aws_request *req,
					 struct aws_response *resp)
{
	const struct aws_catalog *c = aws->catalog;
	const struct aws_region *reg = aws_catalog_region(c, req->region);
	const char *lt = aws_params_get(req->params, "LocationType") ?: "region";
	struct aws_filters f = { 0 };
	size_t start, limit, n = 0, locs;
	const struct aws_filter *ft, *fl;
	bool handled;
	struct xml x;
	int r;

	if (!streq(lt, "region") && !streq(lt, "availability-zone") && !streq(lt, "availability-zone-id"))
		return aws_error(resp, req, 400, "InvalidParameterValue",
				 "Value (%s) for parameter LocationType is invalid.", lt);
	r = aws_page_parse(req, resp, PAGE_OFFERINGS, &start, &limit, &handled);
	if (r < 0 || handled)
		return r;
	r = ec2_filters_load(req, resp, offering_filters, false, &f, &handled);
	if (r < 0 || handled)
		return r;
	ft = aws_filters_find(&f, "instance-type");
	fl = aws_filters_find(&f, "location");
	locs = streq(lt, "region") ? 1 : SIM_AWS_ZONES_PER_REGION;

	r = xml_begin(&x, "DescribeInstanceTypeOfferingsResponse", EC2_XMLNS);
	if (r < 0) {
		aws_filters_clear(&f);
		return r;
	}
	xml_leaf(&x, "requestId", req->request_id);
	xml_open(&x, "instanceTypeOfferingSet");
	for (size_t i = 0; i < c->n_types; i++) {
		const struct aws_instance_type *t = &c->types[i];

		if (!aws_type_offered(t) || (ft && !aws_filter_matches(ft, t->name)))
			continue;
		for (size_t z = 0; z < locs; z++) {
			const char *loc = streq(lt, "region") ? reg->name :
					  streq(lt, "availability-zone") ? reg->zones[z].name :
					  reg->zones[z].zone_id;

			if (fl && !aws_filter_matches(fl, loc))
				continue;
			if (n >= start && n < start + limit) {
				xml_open(&x, "item");
				xml_leaf(&x, "instanceType", t->name);
				xml_leaf(&x, "locationType", lt);
				xml_leaf(&x, "location", loc);
				xml_close(&x, "item");
			}
			n++;
		}
	}
	xml_close(&x, "instanceTypeOfferingSet");
	if (start + limit < n)
		aws_page_next_token(&x, start + limit);
	aws_filters_clear(&f);
	return xml_finish(&x, "DescribeInstanceTypeOfferingsResponse", resp);
}

static const char *const spot_filters[] = {
	"instance-type", "availability-zone", "product-description", NULL,
};

static bool spot_wanted(const struct aws_request *req, const struct aws_filters *f,
			const struct aws_list *named, const struct aws_instance_type *t,
			const struct aws_zone *z)
{
	const char *az = aws_params_get(req->params, "AvailabilityZone");
	const struct aws_filter *flt;

	if ((named->n && !aws_list_has(named, t->name)) || (az && !streq(az, z->name)))
		return false;
	flt = aws_filters_find(f, "instance-type");
	if (flt && !aws_filter_matches(flt, t->name))
		return false;
	flt = aws_filters_find(f, "availability-zone");
	return !flt || aws_filter_matches(flt, z->name);
}

/* Only Linux/UNIX is simulated; other product descriptions have no prices. */
static bool spot_linux_wanted(const struct aws_list *pds, const struct aws_filters *f)
{
	const struct aws_filter *flt = aws_filters_find(f, "product-description");
	bool wanted = pds->n == 0;

	for (size_t k = 0; k < pds->n; k++)
		wanted |= pds->v[k] && strncmp(pds->v[k], "Linux/UNIX", 10) == 0;
	return wanted && (!flt || aws_filter_matches(flt, "Linux/UNIX"));
}

static void write_spot_prices(struct xml *x, struct sim_aws *aws, const struct aws_request *req,
			      const struct aws_filters *f, const struct aws_list *named,
			      size_t start, size_t limit)
{
	const struct aws_region *reg = aws_catalog_region(aws->catalog, req->region);
	uint64_t hour = (uint64_t)clock_realtime_ms() / 3600000 * 3600000;
	size_t n = 0;
	char ts[32];

	format_iso8601(hour, ts);
	xml_open(x, "spotPriceHistorySet");
	for (size_t i = 0; i < aws->catalog->n_types; i++) {
		const struct aws_instance_type *t = &aws->catalog->types[i];

		for (size_t z = 0; aws_type_offered(t) && z < SIM_AWS_ZONES_PER_REGION; z++) {
			if (!spot_wanted(req, f, named, t, &reg->zones[z]))
				continue;
			if (n >= start && n - start < limit) {
				xml_open(x, "item");
				xml_leaf(x, "instanceType", t->name);
				xml_leaf(x, "productDescription", "Linux/UNIX");
				xml_leaff(x, "spotPrice", "%.6f",
					  aws_catalog_price(reg, &reg->zones[z], t, true));
				xml_leaf(x, "timestamp", ts);
				xml_leaf(x, "availabilityZone", reg->zones[z].name);
				xml_close(x, "item");
			}
			n++;
		}
	}
	xml_close(x, "spotPriceHistorySet");
	if (start + limit < n)
		aws_page_next_token(x, start + limit);
}

int ec2_describe_spot_price_history(struct sim_aws *aws, const struct aws_request *req,
				    struct aws_response *resp)
{
	struct aws_list named = { 0 }, pds = { 0 };
	struct aws_filters f = { 0 };
	size_t start, limit;
	bool handled;
	struct xml x;
	int r;

	r = aws_page_parse(req, resp, PAGE_SPOT_PRICES, &start, &limit, &handled);
	if (r < 0 || handled)
		return r;
	r = ec2_filters_load(req, resp, spot_filters, false, &f, &handled);
	if (r < 0 || handled)
		return r;
	r = aws_params_list(req->params, "InstanceType", &named);
	if (r >= 0)
		r = aws_params_list(req->params, "ProductDescription", &pds);
	if (r >= 0)
		r = xml_begin(&x, "DescribeSpotPriceHistoryResponse", EC2_XMLNS);
	if (r >= 0) {
		xml_leaf(&x, "requestId", req->request_id);
		if (spot_linux_wanted(&pds, &f))
			write_spot_prices(&x, aws, req, &f, &named, start, limit);
		else
			xml_empty(&x, "spotPriceHistorySet");
		r = xml_finish(&x, "DescribeSpotPriceHistoryResponse", resp);
	}
	aws_filters_clear(&f);
	aws_list_clear(&named);
	aws_list_clear(&pds);
	return r;
}
