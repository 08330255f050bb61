/*
 * kanna-init's configuration (init/config.c): its table is well formed and
 * its section of kanna.yaml loads, the command line splits into options
 * and DAEMON arguments, and daemon names become programs and shards.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init/init.h"

Test(init_config, the_table_passes_the_schema_check)
{
	struct config_result res = { 0 };

	cr_assert_eq(config_schema_check(&init_schema, &res), 0, "%s", res.error);
}

Test(init_config, the_init_section_sets_the_daemons_and_the_restart_policy)
{
	static const char yaml[] = "log-level: info\n"
				   "init:\n"
				   "  daemons: [watcher, scheduler@0, scheduler@1, launcher]\n"
				   "  grace-period: 45s\n"
				   "  restart-backoff-initial: 250ms\n"
				   "  restart-backoff-max: 1m\n"
				   "  give-up-after: 3\n"
				   "  give-up-window: 2m\n"
				   "scheduler:\n"
				   "  batch-idle-duration: 1s\n";
	struct init_config cfg = { 0 };
	struct config_result res = { 0 };

	cr_assert_eq(config_load_buffer(&init_schema, &cfg, yaml, sizeof(yaml) - 1, "kanna.yaml",
					&res), 0, "%s", res.error);
	cr_assert_str_eq(cfg.daemons[0], "watcher");
	cr_assert_str_eq(cfg.daemons[2], "scheduler@1");
	cr_assert_null(cfg.daemons[4]);
	cr_assert_eq(cfg.grace_period_usec, 45 * USEC_PER_SEC);
	cr_assert_eq(cfg.restart_backoff_initial_usec, 250 * USEC_PER_MSEC);
	cr_assert_eq(cfg.restart_backoff_max_usec, 60 * USEC_PER_SEC);
	cr_assert_eq(cfg.give_up_after, 3);
	cr_assert_eq(cfg.give_up_window_usec, 120 * USEC_PER_SEC);
	config_free(&init_schema, &cfg);
	config_result_done(&res);
}

Test(init_config, the_defaults_are_kubernetes_grace_and_crash_loop_backoff)
{
	char *argv[] = { "kanna-init", "--config=/nonexistent-kanna-init-test.yaml", NULL };
	struct config_source src = { 1, argv, (char *[]){ NULL } };
	struct init_config cfg = { 0 };
	struct config_result res = { 0 };

	/* Without --config the default file may be absent: defaults apply. */
	cr_assert_eq(config_load(&init_schema, &cfg, &src, &res), 0, "%s", res.error);
	cr_assert_eq(cfg.grace_period_usec, 30 * USEC_PER_SEC);
	cr_assert_eq(cfg.restart_backoff_initial_usec, 1 * USEC_PER_SEC);
	cr_assert_eq(cfg.restart_backoff_max_usec, 300 * USEC_PER_SEC);
	cr_assert_eq(cfg.give_up_after, 5);
	cr_assert_eq(cfg.give_up_window_usec, 600 * USEC_PER_SEC);
	cr_assert_eq(cfg.common.health_port, 9462);
	cr_assert_str_eq(cfg.daemons[3], "reaper");
	config_free(&init_schema, &cfg);
	config_result_done(&res);
}

Test(init_config, an_unknown_key_in_the_init_section_names_its_line)
{
	static const char yaml[] = "init:\n  grace: 10s\n";
	struct init_config cfg = { 0 };
	struct config_result res = { 0 };

	cr_assert_lt(config_load_buffer(&init_schema, &cfg, yaml, sizeof(yaml) - 1, "kanna.yaml",
					&res), 0);
	cr_assert(strstr(res.error, "kanna.yaml:2:") && strstr(res.error, "init.grace"), "%s",
		  res.error);
	config_free(&init_schema, &cfg);
	config_result_done(&res);
}

Test(init_config, options_end_at_the_first_daemon_name)
{
	char *argv[] = { "kanna-init", "--config", "/etc/kanna/kanna.yaml", "--grace-period=5s",
			 "launcher", "reaper", NULL };
	char **daemons;
	int n_options, n_daemons;

	init_split_arguments(6, argv, &n_options, &daemons, &n_daemons);
	cr_assert_eq(n_options, 4, "the value of --config is not a daemon");
	cr_assert_eq(n_daemons, 2);
	cr_assert_str_eq(daemons[0], "launcher");
}

Test(init_config, a_double_dash_ends_the_options)
{
	char *argv[] = { "kanna-init", "--check-config", "--", "watcher", NULL };
	char **daemons;
	int n_options, n_daemons;

	init_split_arguments(4, argv, &n_options, &daemons, &n_daemons);
	cr_assert_eq(n_options, 2);
	cr_assert_eq(n_daemons, 1);
	cr_assert_str_eq(daemons[0], "watcher");

	char *none[] = { "kanna-init", "--daemon-dir=/opt/kanna", NULL };
	init_split_arguments(2, none, &n_options, &daemons, &n_daemons);
	cr_assert_eq(n_options, 2);
	cr_assert_eq(n_daemons, 0);
}

Test(init_config, daemon_names_become_programs_and_scheduler_shards)
{
	char *names[] = { "watcher", "scheduler@1", "scheduler@0", "launcher", "reaper" };
	struct init_daemon d[INIT_DAEMONS_MAX];
	char err[256] = "";
	size_t n = 0;

	cr_assert_eq(init_daemons_parse(names, 5, d, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 5);
	cr_assert_str_eq(d[0].program, "kanna-watcher");
	cr_assert_eq(d[0].n_shards, 0);
	cr_assert_str_eq(d[1].program, "kanna-scheduler");
	cr_assert_str_eq(d[1].name, "kanna-scheduler@1");
	cr_assert_eq(d[1].shard, 1);
	cr_assert_eq(d[1].n_shards, 2, "two scheduler@ entries: shards of 2");
	cr_assert_eq(d[2].shard, 0);
	cr_assert_str_eq(d[4].name, "kanna-reaper");
}

Test(init_config, bad_daemon_lists_are_refused_by_name)
{
	static const struct {
		const char *names[3];
		size_t n;
		const char *why;
	} cases[] = {
		{ { "sim" }, 1, "'sim'" },
		{ { "launcher@1" }, 1, "'launcher@1'" },
		{ { "scheduler@x" }, 1, "'scheduler@x'" },
		{ { "scheduler@-1" }, 1, "'scheduler@-1'" },
		{ { "scheduler@1" }, 1, "not scheduler@0" },
		{ { "scheduler@0", "scheduler@2" }, 2, "not scheduler@1" },
		{ { "reaper", "reaper" }, 2, "listed twice" },
		{ { NULL }, 0, "no daemons" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct init_daemon d[INIT_DAEMONS_MAX];
		char err[256] = "";
		size_t n = 0;

		cr_assert_eq(init_daemons_parse((char **)cases[i].names, cases[i].n, d, &n, err,
						sizeof(err)), -EINVAL, "case %zu", i);
		cr_assert(strstr(err, cases[i].why), "case %zu: %s", i, err);
	}
}

Test(init_config, every_init_key_is_documented_in_configuration_md)
{
	const char *srcdir = getenv("KANNA_SRCDIR");
	char path[4096], *doc, *section;
	size_t size;
	FILE *f;

	snprintf(path, sizeof(path), "%s/doc/configuration.md", srcdir ? srcdir : KANNA_SRCDIR);
	f = fopen(path, "r");
	cr_assert_not_null(f, "cannot open %s", path);
	doc = calloc(1, 1 << 20);
	cr_assert_not_null(doc);
	size = fread(doc, 1, (1 << 20) - 1, f);
	fclose(f);
	cr_assert_gt(size, 0);
	section = strstr(doc, "\n### init\n");
	cr_assert_not_null(section, "doc/configuration.md has no init section");
	for (size_t i = 0; i < init_schema.n_options; i++) {
		const struct config_option *opt = &init_schema.options[i];
		char row[128];

		snprintf(row, sizeof(row), "| `%s` |", opt->name);
		cr_assert(strstr(doc, row), "doc/configuration.md does not describe %s", row);
		/* kanna-init's own keys (after the shared and Kubernetes ones). */
		if (opt->offset >= offsetof(struct init_config, daemons))
			cr_assert(strstr(section, row), "the init section does not describe %s", row);
	}
	free(doc);
}
