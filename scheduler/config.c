/*
 * kanna-scheduler's configuration table (see config.h and
 * doc/configuration.md). Karpenter's batch windows keep their names.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "scheduler/config.h"

static const struct config_enum_value preference_policy_values[] = {
	{ "Respect", PREFERENCE_POLICY_RESPECT },
	{ "Ignore", PREFERENCE_POLICY_IGNORE },
	{ NULL, 0 },
};

static const struct config_option scheduler_options[] = {
	CONFIG_COMMON_OPTIONS(struct scheduler_config, common, CONFIG_SCHEDULER_METRICS_PORT,
			      CONFIG_SCHEDULER_HEALTH_PORT),
	KUBE_SETTINGS_OPTIONS(struct scheduler_config, kube),
	{ .name = "shard", .type = CONFIG_STRING, .offset = offsetof(struct scheduler_config, shard),
	  .default_value = "0/1", .metavar = "I/N",
	  .help = "Which of N scheduler shards this is (0-based): it takes pending pods from "
		  "pending.I. The watcher's shards key must say N." },
	{ .name = "batch-idle-duration", .type = CONFIG_DURATION,
	  .offset = offsetof(struct scheduler_config, batch_idle_usec), .flags = CONFIG_RELOADABLE,
	  .default_value = "1s", .min = 10000, .max = 600000000, .env_alias = "BATCH_IDLE_DURATION",
	  .help = "A batch is solved once no new pending pod arrived for this long." },
	{ .name = "batch-max-duration", .type = CONFIG_DURATION,
	  .offset = offsetof(struct scheduler_config, batch_max_usec), .flags = CONFIG_RELOADABLE,
	  .default_value = "10s", .min = 10000, .max = 600000000, .env_alias = "BATCH_MAX_DURATION",
	  .help = "A batch is solved at the latest this long after its first pod arrived." },
	{ .name = "plan-timeout", .type = CONFIG_DURATION,
	  .offset = offsetof(struct scheduler_config, plan_timeout_usec), .flags = CONFIG_RELOADABLE,
	  .default_value = "1m", .min = 1000000, .max = 3600000000ULL,
	  .help = "How long planned pods are held back while their NodeClaim does not show up; "
		  "after it they are planned again." },
	{ .name = "solve-deadline", .type = CONFIG_DURATION,
	  .offset = offsetof(struct scheduler_config, solve_deadline_usec), .flags = CONFIG_RELOADABLE,
	  .default_value = "1m", .min = 1000, .max = 3600000000ULL,
	  .help = "A solve that runs this long stops and launches what it placed; the pods it "
		  "did not get to go into the next batch (Karpenter cuts a solve at 1m too)." },
	{ .name = "region", .type = CONFIG_STRING, .offset = offsetof(struct scheduler_config, region),
	  .flags = CONFIG_SHARED, .default_value = "us-west-2", .default_env = "AWS_REGION",
	  .metavar = "REGION", .help = "AWS region whose instance types and zones are planned." },
	{ .name = "catalog", .type = CONFIG_STRING, .offset = offsetof(struct scheduler_config, catalog),
	  .flags = CONFIG_ABSOLUTE_PATH, .metavar = "FILE",
	  .help = "Instance-type catalog (default: the shipped instance-types.tsv; the launcher's "
		  "live catalog replaces it when it publishes one)." },
	{ .name = "preference-policy", .type = CONFIG_ENUM,
	  .offset = offsetof(struct scheduler_config, preference_policy), .default_value = "Respect",
	  .values = preference_policy_values, .env_alias = "PREFERENCE_POLICY",
	  .help = "Respect: preferred node and pod (anti-)affinity and ScheduleAnyway topology "
		  "spread are tried, relaxed one at a time when they cannot be met. Ignore: they "
		  "are left out of every solve (Karpenter's --preference-policy)." },
};

const struct config_schema scheduler_schema = {
	.program = "kanna-scheduler",
	.section = "scheduler",
	.summary = "Batches pending pods, solves their constraints and sends launch plans to the "
		   "launcher (kanna-scheduler --simulate FILE answers offline).",
	.options = scheduler_options,
	.n_options = ARRAY_SIZE(scheduler_options),
	.common_offset = offsetof(struct scheduler_config, common),
};

int scheduler_parse_shard(const char *s, unsigned *shard, unsigned *n_shards)
{
	char *end;
	unsigned long i, n;

	if (!s)
		return -EINVAL;
	i = strtoul(s, &end, 10);
	if (end == s || *end != '/')
		return -EINVAL;
	n = strtoul(end + 1, &end, 10);
	if (*end || n < 1 || n > 64 || i >= n)
		return -EINVAL;
	*shard = (unsigned)i;
	*n_shards = (unsigned)n;
	return 0;
}
