/*
 * kanna-watcher's configuration table (see doc/configuration.md): the
 * common keys, the Kubernetes client keys and the watcher's own.
 */
#ifndef KANNA_WATCHER_CONFIG_H
#define KANNA_WATCHER_CONFIG_H

#include "common/config.h"
#include "common/kube-settings.h"

struct watcher_config {
	struct config_common common;
	struct kube_settings kube;
	uint64_t shards;
	uint64_t announce_interval_usec;
	uint64_t discovery_interval_usec;
	char **resources;
};

extern const struct config_schema watcher_schema;

#endif
