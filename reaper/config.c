/*
 * kanna-reaper's configuration table (see config.h and
 * doc/configuration.md). Karpenter's setting names are the env aliases.
 */
#include <stddef.h>

#include "reaper/config.h"

static const struct config_option reaper_options[] = {
	CONFIG_COMMON_OPTIONS(struct reaper_config, common, CONFIG_REAPER_METRICS_PORT,
			      CONFIG_REAPER_HEALTH_PORT),
	KUBE_SETTINGS_OPTIONS(struct reaper_config, kube),
	{ .name = "region", .type = CONFIG_STRING, .offset = offsetof(struct reaper_config, region),
	  .flags = CONFIG_SHARED, .metavar = "REGION",
	  .help = "AWS region of the instances (default: AWS_REGION, AWS_DEFAULT_REGION, the "
		  "profile's region, then instance metadata)." },
	{ .name = "cluster-name", .type = CONFIG_STRING,
	  .offset = offsetof(struct reaper_config, cluster_name), .flags = CONFIG_SHARED,
	  .default_value = "kanna", .env_alias = "CLUSTER_NAME", .metavar = "NAME",
	  .help = "Cluster name: only instances tagged kubernetes.io/cluster/NAME are ours." },
	{ .name = "catalog", .type = CONFIG_STRING, .offset = offsetof(struct reaper_config, catalog),
	  .flags = CONFIG_ABSOLUTE_PATH, .metavar = "FILE",
	  .help = "Instance-type catalog the replacement simulations plan with (default: the "
		  "shipped instance-types.tsv)." },
	{ .name = "reconcile-period", .type = CONFIG_DURATION,
	  .offset = offsetof(struct reaper_config, reconcile_period_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "2s", .min = 100000, .max = 3600000000ULL,
	  .help = "How often terminations are advanced and NodeClaims checked for emptiness and "
		  "expiry (every step is also re-derived from the cluster state)." },
	{ .name = "replacement-timeout", .type = CONFIG_DURATION,
	  .offset = offsetof(struct reaper_config, replacement_timeout_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "10m", .min = 1000000, .max = 86400000000ULL,
	  .help = "How long a node being replaced waits for its replacements to become Ready; "
		  "after it the disruption is abandoned and the node untainted." },
	{ .name = "gc-period", .type = CONFIG_DURATION,
	  .offset = offsetof(struct reaper_config, gc_period_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "2m", .min = 1000000, .max = 86400000000ULL,
	  .help = "How often the cluster's instances are described (DescribeInstances) to find "
		  "orphaned instances and NodeClaims whose instance is gone (Karpenter: 2m)." },
	{ .name = "gc-grace", .type = CONFIG_DURATION,
	  .offset = offsetof(struct reaper_config, gc_grace_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "30s", .min = 1000000, .max = 86400000000ULL,
	  .help = "An instance younger than this is never collected as orphaned, and a NodeClaim "
		  "is judged gone only from a description taken this long after its launch "
		  "(DescribeInstances is eventually consistent; Karpenter: 30s)." },
	{ .name = "registration-ttl", .type = CONFIG_DURATION,
	  .offset = offsetof(struct reaper_config, registration_ttl_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "15m", .min = 1000000, .max = 86400000000ULL,
	  .help = "A launched NodeClaim whose Node has not registered within this is deleted and "
		  "its instance terminated (Karpenter's registration timeout, 15m)." },
	{ .name = "interruption-queue", .type = CONFIG_STRING,
	  .offset = offsetof(struct reaper_config, interruption_queue),
	  .env_alias = "INTERRUPTION_QUEUE", .metavar = "NAME",
	  .help = "SQS queue of EventBridge's spot interruption warnings, rebalance "
		  "recommendations, scheduled changes and instance state changes; the nodes they "
		  "name are tainted and drained at once (default: none, interruption handling off)." },
	{ .name = "consolidation-validation-delay", .type = CONFIG_DURATION,
	  .offset = offsetof(struct reaper_config, consolidation_validation_delay_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "15s", .min = 0, .max = 3600000000ULL,
	  .help = "How long a consolidation decision waits before it is checked again and acted "
		  "on: the same candidates, still without do-not-disrupt, still cheaper "
		  "(Karpenter's consolidationTTL, 15s)." },
	{ .name = "feature-gates", .type = CONFIG_STRING,
	  .offset = offsetof(struct reaper_config, feature_gates), .flags = CONFIG_RELOADABLE,
	  .default_value = "SpotToSpotConsolidation=false", .env_alias = "FEATURE_GATES",
	  .metavar = "GATES",
	  .help = "Karpenter's feature gates, comma-separated NAME=BOOL; the reaper reads "
		  "SpotToSpotConsolidation (replace a spot node by a cheaper spot node) and kanna's "
		  "ConsolidationSplit (replace one node by up to 4 that cost less together)." },
	{ .name = "aws-rate", .type = CONFIG_DOUBLE, .offset = offsetof(struct reaper_config, aws_rate),
	  .default_value = "20", .min_double = 0.1, .max_double = 10000,
	  .help = "EC2 requests per second (client-side token bucket)." },
	{ .name = "aws-burst", .type = CONFIG_UINT, .offset = offsetof(struct reaper_config, aws_burst),
	  .default_value = "50", .min = 1, .max = 100000, .help = "EC2 request burst." },
};

const struct config_schema reaper_schema = {
	.program = "kanna-reaper",
	.section = "reaper",
	.summary = "Removes capacity safely: drains and terminates deleted nodes, removes empty, "
		   "expired, drifted and underutilized ones (replacing first what must move; "
		   "kanna-reaper --what-if FILE shows offline what it would do).",
	.options = reaper_options,
	.n_options = ARRAY_SIZE(reaper_options),
	.common_offset = offsetof(struct reaper_config, common),
};
