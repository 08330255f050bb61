/*
 * Shared by launcher/catalog.c (refresh cycle, publishing) and
 * launcher/catalog-ec2.c (reading EC2's answers, building the catalog):
 * what one refresh learns from EC2 before it becomes a catalog.
 */
#ifndef KANNA_LAUNCHER_CATALOG_INTERNAL_H
#define KANNA_LAUNCHER_CATALOG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/aws.h"
#include "proto/proto.h"
#include "model/model.h"

/* Longest instance-type, zone and EC2 label text we keep (EC2's longest
 * type name is ~20 characters, zone names ~20, GPU names ~25). */
#define EC2_NAME_MAX 64

/* What DescribeInstanceTypes says about one type, the facts Karpenter's
 * AWS provider reads (pkg/providers/instancetype/types.go). */
struct ec2_type {
	char name[EC2_NAME_MAX];
	char arch[8];                       /* amd64 | arm64 */
	char hypervisor[16];                /* nitro | xen | "" (metal) */
	char cpu_manufacturer[EC2_NAME_MAX]; /* lower-kebab-case, as the labels */
	char gpu_name[EC2_NAME_MAX];        /* only with exactly one GPU kind */
	char gpu_manufacturer[EC2_NAME_MAX];
	char accelerator_name[EC2_NAME_MAX];
	char accelerator_manufacturer[EC2_NAME_MAX];
	uint32_t vcpu;
	uint64_t memory_mib;
	uint32_t gpu_count, accelerator_count; /* of the one GPU / accelerator kind */
	uint64_t gpu_memory_mib;
	uint32_t nvidia_gpus, amd_gpus, habana_gaudis, neuron_devices; /* resources */
	uint32_t max_pods;          /* ENI-limited; 0: EC2 gave no ENI limits */
	int64_t ebs_mbps, nvme_gb;  /* -1: no label */
	bool bare_metal, encryption_in_transit, spot, on_demand;
	uint64_t zones;             /* bit z: offered in ec2_described.zones[z] */
};

/* One DescribeInstanceTypes + DescribeInstanceTypeOfferings pass. */
struct ec2_described {
	struct ec2_type *types; /* sorted by name once complete */
	size_t n, cap;
	char zones[SCHED_MAX_ZONES][EC2_NAME_MAX];
	unsigned n_zones;
};

void ec2_described_clear(struct ec2_described *d);
/* Binary search of a complete (sorted) description; NULL when absent. */
struct ec2_type *ec2_described_find(const struct ec2_described *d, const char *name);
void ec2_described_sort(struct ec2_described *d);

/* Page readers: root is the response document. They append to d (types,
 * zones) or fill spot[type × n_zones] with the newest price per offering
 * (spot_ms: its timestamp). -EBADMSG when the page is not what EC2 sends,
 * -E2BIG past SCHED_MAX_ZONES zones, -ENOMEM. */
int ec2_read_types_page(const struct aws_xml_node *root, struct ec2_described *d);
int ec2_read_offerings_page(const struct aws_xml_node *root, struct ec2_described *d);
int ec2_read_spot_page(const struct aws_xml_node *root, const struct ec2_described *d,
		       double *spot, int64_t *spot_ms);

/* The shipped table's facts EC2 does not give (Karpenter keeps the same
 * in generated tables): the us-east-1 list price scaled to the region, the
 * pod-ENI (branch interface) limit, the network bandwidth label, max pods.
 * Only these are kept of the shipped table, not its whole model. */
struct shipped_fact {
	const char *name;
	const char *bandwidth; /* karpenter.k8s.aws/instance-network-bandwidth; NULL: none */
	double od_price;       /* < 0: none */
	int64_t pods, pod_eni; /* 0: none */
};

const struct proto_instance_type *catalog_proto_find(const struct proto_instance_type *types,
						     uint32_t n, const char *name);
/* Binary search of facts sorted by name; NULL when absent. */
const struct shipped_fact *shipped_fact_find(const struct shipped_fact *facts, uint32_t n,
					     const char *name);
/* The facts of every type of the shipped table (as catalog_to_proto()
 * makes it, offered or not), in a, sorted by name. */
int shipped_facts_from_proto(const struct proto_instance_type *types, uint32_t n,
			     struct arena *a, struct shipped_fact **ret);

struct ec2_build {
	const struct ec2_described *d;
	const double *spot;                      /* n × d->n_zones, < 0: none */
	const struct shipped_fact *shipped;      /* sorted by name */
	uint32_t n_shipped;
	const char *region;
	double vm_memory_overhead;
};

/*
 * The catalog a refresh publishes: every described type offered in at
 * least one zone with a price (on-demand from the shipped table, spot from
 * spot), labels and capacity as the scheduler's TSV loader makes them,
 * allocatable by catalog_capacity(). Allocated in a, sorted by name.
 * Returns 0 or a negative errno.
 */
int ec2_build_catalog(const struct ec2_build *b, struct arena *a,
		      struct proto_instance_type **ret, uint32_t *n_ret);

#endif
