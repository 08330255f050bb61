/*
 * kanna-launcher's configuration table: common keys, Kubernetes client
 * keys, the AWS settings Karpenter users know (CLUSTER_NAME,
 * CLUSTER_ENDPOINT, VM_MEMORY_OVERHEAD_PERCENT) and the launch knobs.
 */
#ifndef KANNA_LAUNCHER_CONFIG_H
#define KANNA_LAUNCHER_CONFIG_H

#include "common/config.h"
#include "common/kube-settings.h"

struct launcher_config {
	struct config_common common;
	struct kube_settings kube;
	char *region;
	char *cluster_name;
	char *cluster_endpoint;
	char *cluster_ca_file;
	char *default_instance_profile;
	char *catalog;
	double vm_memory_overhead_percent;
	bool bind_pods;
	uint64_t max_concurrent_launches;
	uint64_t unavailable_ttl_usec;
	uint64_t launch_timeout_usec;
	uint64_t reconcile_period_usec;
	uint64_t catalog_refresh_usec;
	double aws_rate;
	uint64_t aws_burst;
};

extern const struct config_schema launcher_schema;

#endif
