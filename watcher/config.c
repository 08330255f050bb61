/*
 * kanna-watcher's configuration table (see config.h). main() loads it with
 * config_handle_command_line(); the tests check it with config_schema_check().
 */
#include <stddef.h>

#include "watcher/config.h"

/* How often pending pods are announced again until they are bound. */
#define WATCHER_ANNOUNCE_DEFAULT "2s"
/* How often the API is asked again which CRD versions it serves and absent
 * collections are looked for: a CRD installed later is watched within this. */
#define WATCHER_DISCOVERY_DEFAULT "1m"

static const struct config_option watcher_options[] = {
	CONFIG_COMMON_OPTIONS(struct watcher_config, common, CONFIG_WATCHER_METRICS_PORT,
			      CONFIG_WATCHER_HEALTH_PORT),
	KUBE_SETTINGS_OPTIONS(struct watcher_config, kube),
	{ .name = "shards", .type = CONFIG_UINT, .offset = offsetof(struct watcher_config, shards),
	  .flags = CONFIG_SHARED, .default_value = "1", .min = 1, .max = 64,
	  .help = "Number of scheduler shards pending pods are divided among." },
	{ .name = "announce-interval", .type = CONFIG_DURATION,
	  .offset = offsetof(struct watcher_config, announce_interval_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = WATCHER_ANNOUNCE_DEFAULT,
	  .min = 100000, .max = 60000000,
	  .help = "How often unscheduled pods are announced to the schedulers again." },
	{ .name = "discovery-interval", .type = CONFIG_DURATION,
	  .offset = offsetof(struct watcher_config, discovery_interval_usec),
	  .default_value = WATCHER_DISCOVERY_DEFAULT, .min = 1000000, .max = 3600000000ULL,
	  .help = "How often CRD versions are discovered again and collections that were not "
		  "served are looked for." },
	{ .name = "resources", .type = CONFIG_STRING_LIST,
	  .offset = offsetof(struct watcher_config, resources),
	  .default_value = "pods,nodes,nodepools,provisioners,nodeclaims,ec2nodeclasses,"
			   "awsnodetemplates,poddisruptionbudgets,persistentvolumeclaims,"
			   "persistentvolumes,storageclasses,daemonsets,namespaces,nodeoverlays",
	  .metavar = "LIST",
	  .help = "Kinds to watch. NodePools and EC2NodeClasses are read at v1 where the API "
		  "serves it, else v1beta1 (nodepools.v1beta1, ec2nodeclasses.v1beta1: that "
		  "version only); a kind the API does not serve is empty until it is." },
};

const struct config_schema watcher_schema = {
	.program = "kanna-watcher",
	.section = "watcher",
	.summary = "Reads the Kubernetes API and replicates cluster state to the other kanna daemons.",
	.options = watcher_options,
	.n_options = ARRAY_SIZE(watcher_options),
	.common_offset = offsetof(struct watcher_config, common),
};

