/*
 * kanna-tap's configuration and command line. The keys it shares with the
 * daemons (runtime-dir, log-level, log-format, and the other shared and
 * Kubernetes client keys a kanna.yaml may hold at its top level, accepted
 * as kanna-init does and unused) and its own (output,
 * summary-interval, show-user-data, also under a `tap:` section) are one
 * common/config.h table, loaded like a daemon's: defaults < file
 * (--config, KANNA_CONFIG, /etc/kanna/kanna.yaml) < environment < options.
 * What to follow (--type, --process, --pod, --nodeclaim, --nodepool,
 * --count, --summary) is command line only, with short options and
 * repeatable filters the generated daemon flags do not have.
 */
#ifndef KANNA_TOOLS_TAP_CONFIG_H
#define KANNA_TOOLS_TAP_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "common/kube-settings.h"
#include "tools/tap-filter.h"

enum tap_output {
	TAP_OUTPUT_AUTO, /* text on a terminal, JSON otherwise */
	TAP_OUTPUT_JSON,
	TAP_OUTPUT_TEXT,
};

struct tap_config {
	struct config_common common;
	struct kube_settings kube; /* accepted (a shared file has them), unused */
	int output; /* enum tap_output */
	uint64_t summary_interval_usec;
	bool show_user_data;
};

/* What the command line alone says. */
struct tap_options {
	struct tap_filter filter;
	uint64_t count; /* --count; 0 = unlimited */
	bool summary;   /* --summary[=INTERVAL] */
};

extern const struct config_schema tap_config_schema;

/*
 * Parses argv and loads the configuration into cfg (zeroed by the caller)
 * and opts. Returns true when main() should exit with *ret_exit: --help,
 * --version, --check-config (0), a usage error (1) or an invalid
 * configuration (CONFIG_EXIT_INVALID), each already reported. Otherwise
 * logging is set up from the configuration. Free with tap_config_done().
 */
bool tap_config_handle_command_line(struct tap_config *cfg, struct tap_options *opts, int argc,
				    char **argv, int *ret_exit);
void tap_config_done(struct tap_config *cfg, struct tap_options *opts);

#endif
