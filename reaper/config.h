/*
 * kanna-reaper's configuration table: common keys, Kubernetes client keys,
 * the AWS settings Karpenter users know (CLUSTER_NAME) and the removal
 * knobs. See doc/configuration.md.
 */
#ifndef KANNA_REAPER_CONFIG_H
#define KANNA_REAPER_CONFIG_H

#include "common/config.h"
#include "common/kube-settings.h"

struct reaper_config {
	struct config_common common;
	struct kube_settings kube;
	char *region;
	char *cluster_name;
	char *catalog;
	uint64_t reconcile_period_usec;
	uint64_t replacement_timeout_usec;
	uint64_t gc_period_usec;
	uint64_t gc_grace_usec;
	uint64_t registration_ttl_usec;
	double aws_rate;
	uint64_t aws_burst;
	char *interruption_queue; /* NULL or "": no interruption handling */
	uint64_t consolidation_validation_delay_usec;
	char *feature_gates;      /* Karpenter's FEATURE_GATES, e.g. "SpotToSpotConsolidation=true" */
};

extern const struct config_schema reaper_schema;

#endif
