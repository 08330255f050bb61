/*
 * kanna-launcher's configuration table (see config.h and
 * doc/configuration.md). Karpenter's setting names are the env aliases.
 */
#include <stddef.h>

#include "launcher/config.h"

static const struct config_option launcher_options[] = {
	CONFIG_COMMON_OPTIONS(struct launcher_config, common, CONFIG_LAUNCHER_METRICS_PORT,
			      CONFIG_LAUNCHER_HEALTH_PORT),
	KUBE_SETTINGS_OPTIONS(struct launcher_config, kube),
	{ .name = "region", .type = CONFIG_STRING, .offset = offsetof(struct launcher_config, region),
	  .flags = CONFIG_SHARED, .metavar = "REGION",
	  .help = "AWS region to launch in (default: AWS_REGION, AWS_DEFAULT_REGION, the "
		  "profile's region, then instance metadata)." },
	{ .name = "cluster-name", .type = CONFIG_STRING,
	  .offset = offsetof(struct launcher_config, cluster_name), .flags = CONFIG_SHARED,
	  .default_value = "kanna", .env_alias = "CLUSTER_NAME", .metavar = "NAME",
	  .help = "Cluster name: instances are tagged kubernetes.io/cluster/NAME=owned and "
		  "nodes join it." },
	{ .name = "cluster-endpoint", .type = CONFIG_STRING,
	  .offset = offsetof(struct launcher_config, cluster_endpoint), .flags = CONFIG_SHARED,
	  .env_alias = "CLUSTER_ENDPOINT", .metavar = "URL",
	  .help = "API server URL written into node user data (default: the kubeconfig's "
		  "server)." },
	{ .name = "cluster-ca-file", .type = CONFIG_STRING,
	  .offset = offsetof(struct launcher_config, cluster_ca_file), .flags = CONFIG_ABSOLUTE_PATH,
	  .metavar = "FILE",
	  .help = "PEM CA bundle of the API server for node user data (default: the "
		  "kubeconfig's)." },
	/* Karpenter v0.31's aws.defaultInstanceProfile (karpenter-global-settings) */
	{ .name = "default-instance-profile", .type = CONFIG_STRING,
	  .offset = offsetof(struct launcher_config, default_instance_profile),
	  .env_alias = "AWS_DEFAULT_INSTANCE_PROFILE", .metavar = "NAME",
	  .help = "Instance profile of v1alpha5 Provisioners and AWSNodeTemplates that name "
		  "none (spec.provider.instanceProfile wins)." },
	{ .name = "catalog", .type = CONFIG_STRING, .offset = offsetof(struct launcher_config, catalog),
	  .flags = CONFIG_ABSOLUTE_PATH, .metavar = "FILE",
	  .help = "Shipped instance-type catalog to start from (default: the installed "
		  "instance-types.tsv); refreshed from EC2." },
	{ .name = "vm-memory-overhead-percent", .type = CONFIG_DOUBLE,
	  .offset = offsetof(struct launcher_config, vm_memory_overhead_percent),
	  .flags = CONFIG_SHARED, .default_value = "0.075", .min_double = 0, .max_double = 0.99,
	  .env_alias = "VM_MEMORY_OVERHEAD_PERCENT",
	  .help = "Share of an instance type's memory the hypervisor and OS take." },
	{ .name = "bind-pods", .type = CONFIG_BOOL, .offset = offsetof(struct launcher_config, bind_pods),
	  .flags = CONFIG_RELOADABLE, .default_value = "true",
	  .help = "Bind the planned pods to a launched node (as Karpenter 0.6 did); false leaves "
		  "them to kube-scheduler." },
	{ .name = "max-concurrent-launches", .type = CONFIG_UINT,
	  .offset = offsetof(struct launcher_config, max_concurrent_launches),
	  .flags = CONFIG_RELOADABLE, .default_value = "100", .min = 1, .max = 10000,
	  .help = "NodeClaims launched at the same time; more wait in order." },
	{ .name = "unavailable-offering-ttl", .type = CONFIG_DURATION,
	  .offset = offsetof(struct launcher_config, unavailable_ttl_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "3m", .min = 1000000, .max = 86400000000ULL,
	  .help = "How long an offering that had insufficient capacity is not tried again." },
	{ .name = "launch-timeout", .type = CONFIG_DURATION,
	  .offset = offsetof(struct launcher_config, launch_timeout_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "15m", .min = 1000000, .max = 86400000000ULL,
	  .help = "A NodeClaim that could not be launched for this long (EC2 errors other than "
		  "capacity) is deleted and its pods planned again." },
	{ .name = "reconcile-period", .type = CONFIG_DURATION,
	  .offset = offsetof(struct launcher_config, reconcile_period_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "10s", .min = 100000, .max = 3600000000ULL,
	  .help = "How often NodeClaims are compared with what exists (unlaunched ones "
		  "retried, missing Nodes created, planned pods bound)." },
	{ .name = "catalog-refresh-period", .type = CONFIG_DURATION,
	  .offset = offsetof(struct launcher_config, catalog_refresh_usec),
	  .default_value = "0", .max = 86400000000ULL,
	  .help = "Instance-type catalog refresh period (0: 12 hours for types, 5 minutes for "
		  "spot prices)." },
	{ .name = "aws-rate", .type = CONFIG_DOUBLE, .offset = offsetof(struct launcher_config, aws_rate),
	  .default_value = "20", .min_double = 0.1, .max_double = 10000,
	  .help = "EC2 requests per second (client-side token bucket)." },
	{ .name = "aws-burst", .type = CONFIG_UINT, .offset = offsetof(struct launcher_config, aws_burst),
	  .default_value = "50", .min = 1, .max = 100000, .help = "EC2 request burst." },
};

const struct config_schema launcher_schema = {
	.program = "kanna-launcher",
	.section = "launcher",
	.summary = "Turns launch plans into NodeClaims, EC2 Fleet instances and Nodes, and binds "
		   "the planned pods.",
	.options = launcher_options,
	.n_options = ARRAY_SIZE(launcher_options),
	.common_offset = offsetof(struct launcher_config, common),
};
