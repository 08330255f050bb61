/*
 * kanna-scheduler's configuration table (daemon mode; --simulate has its
 * own few options): common keys, Kubernetes client keys, batching, shard.
 */
#ifndef KANNA_SCHEDULER_CONFIG_H
#define KANNA_SCHEDULER_CONFIG_H

#include "common/config.h"
#include "common/kube-settings.h"

struct scheduler_config {
	struct config_common common;
	struct kube_settings kube;
	char *shard;              /* "I/N" */
	uint64_t batch_idle_usec;
	uint64_t batch_max_usec;
	uint64_t plan_timeout_usec;
	uint64_t solve_deadline_usec;
	char *region;
	char *catalog;
	int preference_policy;    /* enum preference_policy */
};

/* Karpenter's --preference-policy (pkg/operator/options/options.go). */
enum preference_policy {
	PREFERENCE_POLICY_RESPECT,
	PREFERENCE_POLICY_IGNORE,
};

extern const struct config_schema scheduler_schema;

/* "2/4" → 2, 4. -EINVAL unless 0 ≤ I < N ≤ 64. */
int scheduler_parse_shard(const char *s, unsigned *shard, unsigned *n_shards);

#endif
