/*
 * The instance-type catalog: types with labels, capacity, allocatable and
 * offerings (zone × capacity type, price, availability), plus the indexes
 * the solver uses to turn a requirement set into a bitset of compatible
 * types. Also the well-known label ids every model interns first, and the
 * one pricing rule for derived prices (spot, other regions).
 */
#ifndef KANNA_SCHEDULER_CATALOG_H
#define KANNA_SCHEDULER_CATALOG_H

#include "model/model.h"

/*
 * Interned first, in this order, so that these ids are compile-time
 * constants. Keys below K_N_WELL_KNOWN are Karpenter's well-known labels:
 * a pod may require them without the NodePool defining them.
 */
enum wellknown {
	K_NODEPOOL,
	K_ZONE,
	K_REGION,
	K_INSTANCE_TYPE,
	K_ARCH,
	K_OS,
	K_CAPACITY_TYPE,
	K_WINDOWS_BUILD,
	K_INSTANCE_CATEGORY,
	K_INSTANCE_FAMILY,
	K_INSTANCE_GENERATION,
	K_INSTANCE_SIZE,
	K_INSTANCE_CPU,
	K_INSTANCE_CPU_MANUFACTURER,
	K_INSTANCE_MEMORY,
	K_INSTANCE_GPU_NAME,
	K_INSTANCE_GPU_MANUFACTURER,
	K_INSTANCE_GPU_COUNT,
	K_INSTANCE_GPU_MEMORY,
	K_INSTANCE_ACCELERATOR_NAME,
	K_INSTANCE_ACCELERATOR_MANUFACTURER,
	K_INSTANCE_ACCELERATOR_COUNT,
	K_INSTANCE_HYPERVISOR,
	K_INSTANCE_NETWORK_BANDWIDTH,
	K_INSTANCE_EBS_BANDWIDTH,
	K_INSTANCE_LOCAL_NVME,
	K_INSTANCE_ENCRYPTION_IN_TRANSIT,
	K_N_WELL_KNOWN,
	K_HOSTNAME = K_N_WELL_KNOWN,
	/* Not well-known since v1beta1: a Provisioner defines it (In its own
	 * name), a NodePool never does, so a pod that selects a Provisioner
	 * can never land on a NodePool's node (Karpenter v1's WellKnownLabels,
	 * kubernetes-sigs/karpenter pkg/apis/v1/labels.go, has no
	 * karpenter.sh/provisioner-name). */
	K_PROVISIONER_NAME,
	V_SPOT,
	V_ON_DEMAND,
	V_LINUX,
	V_AMD64,
	V_ARM64,
	V_METAL,
	K_N_FIXED,
};

/* Interns the fixed ids above into an empty string table. */
int wellknown_intern(struct strtab *st);
/* Bitsets over the catalog are fixed arrays of this many words (4096 types;
 * the EC2 catalog has ~1,400) so that queries never allocate. */
#define SCHED_MAX_TYPE_WORDS 64
/* Index of a capacity type in catalog bitsets: spot 0, on-demand 1. */
enum { CT_SPOT, CT_ON_DEMAND, CT_N };

struct offering {
	uint8_t zone;          /* index into catalog.zones */
	uint8_t capacity_type; /* CT_* */
	bool available;
	double price;          /* $/hour */
};

struct instance_type {
	uint32_t name;
	struct label *labels; /* sorted by key; zone and capacity type are per offering */
	uint32_t n_labels;
	struct resources capacity, allocatable;
	struct offering *offerings;
	uint32_t n_offerings;
	bool metal;
};

struct label_index {
	uint32_t key;
	uint32_t n_values;
	uint32_t *values;  /* value ids */
	uint64_t **sets;   /* per value: the types with key=value */
	uint64_t *has_key; /* types that carry the key at all */
};

struct catalog {
	struct strtab *st;
	struct arena arena;
	struct instance_type *types; /* sorted by (cpu, memory, name) after finalize */
	uint32_t n_types, cap;
	uint32_t zones[SCHED_MAX_ZONES]; /* zone value ids */
	uint32_t zone_region[SCHED_MAX_ZONES];
	uint32_t n_zones;
	uint32_t n_resources; /* resource slots in use (built-ins + extended) */
	uint32_t resource_names[SCHED_MAX_RESOURCES]; /* string ids */
	double vm_memory_overhead; /* for the TSV loader: SCHED_VM_MEMORY_OVERHEAD unless set */
	/* After catalog_finalize(): */
	uint32_t words;
	uint64_t *all, *metal;
	uint64_t *offer[SCHED_MAX_ZONES * CT_N]; /* types with an available offering */
	struct resources *prefix_max; /* [i]: per resource, max allocatable of types 0..i */
	struct label_index *index;
	uint32_t n_index;
};

int catalog_init(struct catalog *cat, struct strtab *st);
/* Slot of a resource name ("cpu", "nvidia.com/gpu", ...); with create, an
 * unknown extended resource gets the next free slot. -ENOENT / -E2BIG. */
int catalog_resource(struct catalog *cat, const char *name, bool create);
void catalog_done(struct catalog *cat);
/* Returns the zone's index, adding it; -E2BIG past SCHED_MAX_ZONES. */
int catalog_zone(struct catalog *cat, uint32_t zone, uint32_t region);
int catalog_zone_find(const struct catalog *cat, uint32_t zone);
/* Copies the type (labels, offerings) into the catalog. */
int catalog_add_type(struct catalog *cat, const struct instance_type *it);
int catalog_finalize(struct catalog *cat);

/*
 * Loads data/instance-types.tsv: every type with a price gets an on-demand
 * and a spot offering in each zone of the region. Allocatable follows
 * Karpenter's AWS overhead formulas (catalog_allocatable()).
 */
int catalog_load_tsv(struct catalog *cat, const char *path, const char *region,
		     const char *const *zones, size_t n_zones);
/* Karpenter's fake catalog (benchmark and tests): see catalog-fake.c. */
int catalog_add_fake_types(struct catalog *cat, uint32_t n);
/* Path of the shipped catalog: $KANNA_DATADIR, the installed pkgdatadir, or
 * the source tree for uninstalled runs. */
void catalog_default_path(char *buf, size_t size);

/*
 * A type's capacity and allocatable under default kubelet settings:
 * vm_memory_overhead (VM_MEMORY_OVERHEAD_PERCENT, 7.5% by default) of the
 * memory is the hypervisor's, ephemeral storage is the 20Gi root volume,
 * and the overhead is Karpenter's (kubelet_node_resources(), kubelet.h).
 * The launcher's live catalog uses the same function, so that both sides
 * agree on allocatable.
 */
/* The ephemeral storage a node has: Karpenter's default 20Gi root volume. */
#define CATALOG_ROOT_VOLUME_BYTES (20LL << 30)
void catalog_capacity(int64_t vcpus, int64_t memory_mib, int64_t max_pods,
		      double vm_memory_overhead, struct resources *capacity,
		      struct resources *allocatable);

/*
 * The one pricing rule shared with kanna-sim: regional on-demand = us-east-1
 * price × multiplier (1.0 us-east-1/us-west-2 and unknown regions, 1.1
 * eu-west-1, 1.2 ap-northeast-1); spot = on-demand × (0.3 + 0.4 ×
 * (hash_fnv1a64(type + zone) mod 1000) / 1000).
 * Windows offerings get the same (Linux) price: the catalog has no Windows
 * prices (data/README.md), and Karpenter itself prices every offering from
 * Linux's (aws/karpenter-provider-aws pkg/providers/pricing/pricing.go asks
 * the Pricing API for operatingSystem Linux only).
 */
double offering_price(double od_us_east_1, const char *type, const char *zone,
		      const char *region, bool spot);

/* Zones / capacity types (bitmasks over catalog indexes) that reqs allow. */
uint64_t catalog_zone_mask(const struct catalog *cat, const struct requirements *reqs);
unsigned catalog_ct_mask(const struct requirements *reqs, const struct strtab *st);
/*
 * out := types whose labels satisfy reqs (keys the catalog indexes) and that
 * have an available offering in an allowed zone × capacity type. Metal
 * types only when reqs name instance types or sizes explicitly (In).
 */
void catalog_filter(const struct catalog *cat, const struct requirements *reqs, uint64_t *out);
/* The same for a NodePool; windows: a Windows pool, whose types are
 * windows with its build whatever the catalog (Linux's labels) says, so
 * its os and windows-build requirements (met by its own) are not
 * filtered on. */
void catalog_filter_pool(const struct catalog *cat, const struct requirements *reqs, bool windows,
			 uint64_t *out);
/* Cheapest available offering of type t within the masks, or -1. */
double catalog_type_price(const struct catalog *cat, uint32_t t, uint64_t zones, unsigned cts);

#endif
