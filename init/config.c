/*
 * kanna-init's configuration table (section init: of kanna.yaml, see
 * doc/configuration.md), the split of its command line into options and
 * DAEMON arguments, and the parsing of daemon names. Pure: called by
 * main.c and the unit tests.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init/init.h"

static const struct config_option init_options[] = {
	CONFIG_COMMON_OPTIONS(struct init_config, common, CONFIG_INIT_METRICS_PORT,
			      CONFIG_INIT_HEALTH_PORT),
	KUBE_SETTINGS_OPTIONS(struct init_config, kube),
	{ .name = "daemons", .type = CONFIG_STRING_LIST, .offset = offsetof(struct init_config, daemons),
	  .default_value = "watcher,scheduler,launcher,reaper", .metavar = "DAEMON,...",
	  .help = "The daemons to run when no DAEMON argument is given: watcher, scheduler, "
		  "scheduler@N (shard N of as many as are listed), launcher, reaper." },
	{ .name = "daemon-dir", .type = CONFIG_STRING,
	  .offset = offsetof(struct init_config, daemon_dir), .flags = CONFIG_ABSOLUTE_PATH,
	  .metavar = "DIR",
	  .help = "Directory of the kanna-<daemon> programs (default: kanna-init's own "
		  "directory, then $PATH)." },
	/* Kubernetes' terminationGracePeriodSeconds defaults to 30. */
	{ .name = "grace-period", .type = CONFIG_DURATION,
	  .offset = offsetof(struct init_config, grace_period_usec), .flags = CONFIG_RELOADABLE,
	  .default_value = "30s", .min = 0, .max = (int64_t)USEC_PER_HOUR,
	  .help = "How long the daemons have to exit after SIGTERM or SIGINT is forwarded to "
		  "them; those still running are then killed (SIGKILL)." },
	/* The kubelet's container restart backoff starts at 10s, doubles and
	 * stops at 5m (MaxContainerBackOff); a kanna daemon restarts in well
	 * under a second, so the first retry comes sooner. */
	{ .name = "restart-backoff-initial", .type = CONFIG_DURATION,
	  .offset = offsetof(struct init_config, restart_backoff_initial_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "1s", .min = (int64_t)(10 * USEC_PER_MSEC),
	  .max = (int64_t)USEC_PER_HOUR,
	  .help = "Delay before a daemon that exited unexpectedly is restarted; it doubles with "
		  "every further failure." },
	{ .name = "restart-backoff-max", .type = CONFIG_DURATION,
	  .offset = offsetof(struct init_config, restart_backoff_max_usec),
	  .flags = CONFIG_RELOADABLE, .default_value = "5m", .min = (int64_t)(10 * USEC_PER_MSEC),
	  .max = (int64_t)(24 * USEC_PER_HOUR),
	  .help = "Longest restart delay (the kubelet's CrashLoopBackOff cap). A daemon that ran "
		  "twice this long without failing starts again from restart-backoff-initial." },
	{ .name = "give-up-after", .type = CONFIG_UINT,
	  .offset = offsetof(struct init_config, give_up_after), .flags = CONFIG_RELOADABLE,
	  .default_value = "5", .min = 0, .max = INIT_GIVE_UP_MAX,
	  .help = "A daemon failing more often than this within give-up-window makes kanna-init "
		  "stop the others and exit with status 3, so that the kubelet's restart policy "
		  "and CrashLoopBackOff take over; 0 restarts forever." },
	{ .name = "give-up-window", .type = CONFIG_DURATION,
	  .offset = offsetof(struct init_config, give_up_window_usec), .flags = CONFIG_RELOADABLE,
	  .default_value = "10m", .min = (int64_t)USEC_PER_SEC, .max = (int64_t)(24 * USEC_PER_HOUR),
	  .help = "The sliding window give-up-after counts failures in." },
};

const struct config_schema init_schema = {
	.program = "kanna-init",
	.section = "init",
	.summary = "PID 1 of a kanna container: kanna-init [OPTION]... [--] [DAEMON]... runs "
		   "kanna-DAEMON --config=FILE for each DAEMON (else for each of init.daemons), "
		   "reaps every zombie, restarts a daemon that exits with exponential backoff, "
		   "forwards SIGTERM, SIGINT and SIGHUP, and kills what is left after grace-period.",
	.options = init_options,
	.n_options = ARRAY_SIZE(init_options),
	.common_offset = offsetof(struct init_config, common),
};

/* True when argv[i] is an option that takes the next word as its value. */
static bool takes_separate_value(const char *arg)
{
	const struct config_option *opt;

	if (strncmp(arg, "--", 2) != 0 || strchr(arg, '='))
		return false;
	opt = config_find_option(&init_schema, arg + 2);
	return opt && opt->type != CONFIG_BOOL;
}

void init_split_arguments(int argc, char **argv, int *ret_n_options, char ***ret_daemons,
			  int *ret_n_daemons)
{
	int i = 1;

	while (i < argc) {
		const char *a = argv[i];

		if (streq(a, "--")) {
			*ret_n_options = i;
			*ret_daemons = argv + i + 1;
			*ret_n_daemons = argc - i - 1;
			return;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;
		i += takes_separate_value(a) && i + 1 < argc ? 2 : 1;
	}
	*ret_n_options = i;
	*ret_daemons = argv + i;
	*ret_n_daemons = argc - i;
}

static const char *const init_daemon_names[] = { "watcher", "scheduler", "launcher", "reaper" };

static int parse_one(const char *name, struct init_daemon *d, char *err, size_t err_size)
{
	const char *at = strchr(name, '@');
	size_t base = at ? (size_t)(at - name) : strlen(name);

	memset(d, 0, sizeof(*d));
	for (size_t i = 0; i < ARRAY_SIZE(init_daemon_names); i++) {
		if (strlen(init_daemon_names[i]) != base || strncmp(name, init_daemon_names[i], base))
			continue;
		snprintf(d->program, sizeof(d->program), "kanna-%s", init_daemon_names[i]);
		snprintf(d->name, sizeof(d->name), "kanna-%.24s", name);
		if (!at)
			return 0;
		if (!streq(init_daemon_names[i], "scheduler"))
			break;
		char *end;
		unsigned long shard = strtoul(at + 1, &end, 10);
		if (end == at + 1 || *end || at[1] == '-' || at[1] == '+' || shard >= INIT_DAEMONS_MAX)
			break;
		d->shard = (unsigned)shard;
		d->n_shards = 1; /* counted by the caller */
		return 0;
	}
	snprintf(err, err_size, "Failed to parse daemon '%.64s': expected watcher, scheduler, "
		 "scheduler@N, launcher or reaper", name);
	return -EINVAL;
}

int init_daemons_parse(char *const *names, size_t n_names, struct init_daemon *out,
		       size_t *ret_n, char *err, size_t err_size)
{
	unsigned n_shards = 0;
	bool seen[INIT_DAEMONS_MAX] = { false };

	if (n_names == 0) {
		snprintf(err, err_size, "Failed to start: no daemons to run (give DAEMON arguments "
			 "or init.daemons)");
		return -EINVAL;
	}
	if (n_names > INIT_DAEMONS_MAX) {
		snprintf(err, err_size, "Failed to start: %zu daemons, at most %d", n_names,
			 INIT_DAEMONS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n_names; i++) {
		if (parse_one(names[i], &out[i], err, err_size) < 0)
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (streq(out[j].name, out[i].name)) {
				snprintf(err, err_size, "Failed to parse daemon '%.64s': listed twice",
					 names[i]);
				return -EINVAL;
			}
		if (out[i].n_shards) {
			n_shards++;
			seen[out[i].shard] = true;
		}
	}
	for (unsigned s = 0; s < n_shards; s++)
		if (!seen[s]) {
			snprintf(err, err_size, "Failed to parse the daemons: %u scheduler shard(s) "
				 "listed, but not scheduler@%u (shards are 0 to %u)", n_shards, s,
				 n_shards - 1);
			return -EINVAL;
		}
	for (size_t i = 0; i < n_names; i++)
		if (out[i].n_shards)
			out[i].n_shards = n_shards;
	*ret_n = n_names;
	return 0;
}
