/*
 * Configuration: a sample table with every type, loaded from defaults, YAML
 * files, environment and flags; every error path; reloads; --help.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"

struct sample_config {
	struct config_common common;
	uint64_t batch_max_duration;
	uint64_t batch_idle_duration;
	uint64_t consolidate_after;
	bool dry_run;
	int64_t offset;
	uint64_t shards;
	double cpu_ratio;
	char *cluster_name;
	int mode;
	char **zones;
};

static const struct config_enum_value mode_values[] = {
	{ "fast", 1 }, { "thorough", 2 }, { NULL, 0 },
};

#define OFF(f) offsetof(struct sample_config, f)
static const struct config_option sample_options[] = {
	CONFIG_COMMON_OPTIONS(struct sample_config, common, "9401", "9402"),
	{ .name = "batch-max-duration", .type = CONFIG_DURATION, .offset = OFF(batch_max_duration),
	  .flags = CONFIG_RELOADABLE, .default_value = "10s", .min = 100 * USEC_PER_MSEC,
	  .max = USEC_PER_HOUR, .env_alias = "BATCH_MAX_DURATION",
	  .help = "Longest a batch of pending pods waits before it is solved." },
	{ .name = "batch-idle-duration", .type = CONFIG_DURATION, .offset = OFF(batch_idle_duration),
	  .flags = CONFIG_RELOADABLE, .default_value = "1s", .min = 100 * USEC_PER_MSEC,
	  .max = USEC_PER_HOUR, .env_alias = "BATCH_IDLE_DURATION",
	  .help = "A batch closes after this long without a new pending pod." },
	{ .name = "consolidate-after", .type = CONFIG_DURATION, .offset = OFF(consolidate_after),
	  .flags = CONFIG_RELOADABLE | CONFIG_NEVER, .default_value = "Never",
	  .help = "How long a node stays underused before consolidation." },
	{ .name = "dry-run", .type = CONFIG_BOOL, .offset = OFF(dry_run), .default_value = "false",
	  .flags = CONFIG_RELOADABLE, .help = "Plan but never launch." },
	{ .name = "offset", .type = CONFIG_INT, .offset = OFF(offset), .default_value = "-1",
	  .min = -10, .max = 10, .flags = CONFIG_RELOADABLE, .help = "A signed number." },
	{ .name = "shards", .type = CONFIG_UINT, .offset = OFF(shards), .default_value = "1",
	  .min = 1, .max = 64, .help = "Number of scheduler shards." },
	{ .name = "cpu-ratio", .type = CONFIG_DOUBLE, .offset = OFF(cpu_ratio), .default_value = "0.5",
	  .min_double = 0.0, .max_double = 1.0, .flags = CONFIG_RELOADABLE,
	  .help = "Share of CPU a node may use." },
	{ .name = "cluster-name", .type = CONFIG_STRING, .offset = OFF(cluster_name),
	  .default_value = "kanna", .env_alias = "CLUSTER_NAME", .help = "Name of the cluster." },
	{ .name = "mode", .type = CONFIG_ENUM, .offset = OFF(mode), .default_value = "fast",
	  .values = mode_values, .flags = CONFIG_RELOADABLE, .help = "Solver mode." },
	{ .name = "zones", .type = CONFIG_STRING_LIST, .offset = OFF(zones),
	  .flags = CONFIG_RELOADABLE, .help = "Zones to launch in." },
};

static const struct config_schema sample_schema = {
	.program = "kanna-scheduler",
	.section = "scheduler",
	.summary = "Batches pending pods and plans NodeClaims.",
	.options = sample_options,
	.n_options = ARRAY_SIZE(sample_options),
	.common_offset = offsetof(struct sample_config, common),
};

static char yaml_path[64];
static struct sample_config cfg;
static struct config_result res;

static void teardown(void)
{
	config_free(&sample_schema, &cfg);
	config_result_done(&res);
	if (yaml_path[0])
		unlink(yaml_path);
}

TestSuite(config, .fini = teardown);

static const char *write_yaml(const char *text)
{
	int fd;

	snprintf(yaml_path, sizeof(yaml_path), "/tmp/kanna-test-config-XXXXXX");
	fd = mkstemp(yaml_path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return yaml_path;
}

/* Loads with the given YAML (NULL: no file), environment and extra flags. */
static int load_with(const char *yaml, char **envp, char **flags)
{
	char *argv[32] = { (char *)"kanna-scheduler" };
	char config_flag[128];
	int argc = 1;

	if (yaml) {
		snprintf(config_flag, sizeof(config_flag), "--config=%s", write_yaml(yaml));
		argv[argc++] = config_flag;
	} else {
		argv[argc++] = (char *)"--config=/dev/null";
	}
	for (; flags && *flags; flags++)
		argv[argc++] = *flags;
	argv[argc] = NULL;
	config_free(&sample_schema, &cfg); /* a test may load more than once */
	memset(&cfg, 0, sizeof(cfg));
	return config_load(&sample_schema, &cfg, &(struct config_source){ argc, argv, envp }, &res);
}

#define ENV(...) ((char *[]){ __VA_ARGS__, NULL })
#define FLAGS(...) ((char *[]){ __VA_ARGS__, NULL })
static char *no_env[] = { NULL };

/* res.error must be "Failed to load <the YAML file>" followed by tail. */
static void assert_error(int r, const char *tail)
{
	char expected[CONFIG_ERROR_MAX];

	snprintf(expected, sizeof(expected), "Failed to load %s%s", yaml_path, tail);
	cr_assert_lt(r, 0);
	cr_assert_str_eq(res.error, expected);
}

Test(config, defaults_apply_without_file_environment_or_flags)
{
	cr_assert_eq(load_with(NULL, no_env, NULL), 0, "%s", res.error);
	cr_assert_eq(res.action, CONFIG_ACTION_RUN);
	cr_assert_eq(cfg.common.log_level, LOG_LEVEL_INFO);
	cr_assert_eq(cfg.common.log_format, LOG_FORMAT_AUTO);
	cr_assert_str_eq(cfg.common.runtime_dir, "/run/kanna");
	cr_assert_eq(cfg.common.metrics_port, 9401);
	cr_assert_eq(cfg.common.health_port, 9402);
	cr_assert_eq(cfg.batch_max_duration, 10 * USEC_PER_SEC);
	cr_assert_eq(cfg.batch_idle_duration, USEC_PER_SEC);
	cr_assert_eq(cfg.consolidate_after, CONFIG_DURATION_NEVER);
	cr_assert_eq(cfg.dry_run, false);
	cr_assert_eq(cfg.offset, -1);
	cr_assert_eq(cfg.shards, 1);
	cr_assert_float_eq(cfg.cpu_ratio, 0.5, 1e-9);
	cr_assert_str_eq(cfg.cluster_name, "kanna");
	cr_assert_eq(cfg.mode, 1);
	cr_assert_null(cfg.zones);
}

Test(config, missing_default_file_is_not_an_error)
{
	char *argv[] = { (char *)"kanna-scheduler", NULL };

	if (access(CONFIG_DEFAULT_PATH, F_OK) == 0)
		cr_skip_test("%s exists on this machine", CONFIG_DEFAULT_PATH);
	cr_assert_eq(config_load(&sample_schema, &cfg, &(struct config_source){ 1, argv, no_env }, &res), 0,
		     "%s", res.error);
	cr_assert_null(res.file);
}

Test(config, runtime_dir_defaults_to_runtime_directory)
{
	cr_assert_eq(load_with(NULL, ENV("RUNTIME_DIRECTORY=/run/kanna-test"), NULL), 0, "%s", res.error);
	cr_assert_str_eq(cfg.common.runtime_dir, "/run/kanna-test");
}

Test(config, file_sets_shared_keys_and_the_section_beats_the_top_level)
{
	cr_assert_eq(load_with("log-level: warn\n"
			       "log-format: json\n"
			       "runtime-dir: /tmp/k\n"
			       "scheduler:\n"
			       "  log-level: debug\n"
			       "  batch-max-duration: 5s\n"
			       "  batch-idle-duration: 1m30s\n"
			       "  consolidate-after: 720h\n"
			       "  dry-run: true\n"
			       "  offset: -7\n"
			       "  shards: 4\n"
			       "  cpu-ratio: 0.75\n"
			       "  cluster-name: \"prod east\"\n"
			       "  mode: thorough\n"
			       "  zones: [us-west-2a, us-west-2b]\n"
			       "launcher:\n"
			       "  something-only-the-launcher-knows: 1\n",
			       no_env, NULL), 0, "%s", res.error);
	cr_assert_str_eq(res.file, yaml_path);
	cr_assert_eq(cfg.common.log_level, LOG_LEVEL_DEBUG);
	cr_assert_eq(cfg.common.log_format, LOG_FORMAT_JSON);
	cr_assert_str_eq(cfg.common.runtime_dir, "/tmp/k");
	cr_assert_eq(cfg.batch_max_duration, 5 * USEC_PER_SEC);
	cr_assert_eq(cfg.batch_idle_duration, 90 * USEC_PER_SEC);
	cr_assert_eq(cfg.consolidate_after, 720 * USEC_PER_HOUR);
	cr_assert_eq(cfg.dry_run, true);
	cr_assert_eq(cfg.offset, -7);
	cr_assert_eq(cfg.shards, 4);
	cr_assert_float_eq(cfg.cpu_ratio, 0.75, 1e-9);
	cr_assert_str_eq(cfg.cluster_name, "prod east");
	cr_assert_eq(cfg.mode, 2);
	cr_assert_str_eq(cfg.zones[0], "us-west-2a");
	cr_assert_str_eq(cfg.zones[1], "us-west-2b");
	cr_assert_null(cfg.zones[2]);
}

Test(config, empty_file_sets_nothing)
{
	cr_assert_eq(load_with("", no_env, NULL), 0, "%s", res.error);
	cr_assert_eq(cfg.batch_max_duration, 10 * USEC_PER_SEC);
	cr_assert_eq(load_with("# only a comment\n", no_env, NULL), 0, "%s", res.error);
}

Test(config, rejects_unknown_key_with_file_line_column)
{
	assert_error(load_with("log-level: info\nbogus: 1\n", no_env, NULL),
		     ":2:1: bogus: unknown key");
}

Test(config, rejects_unknown_key_in_the_section_with_its_path)
{
	assert_error(load_with("scheduler:\n  batch-max-duration: 5s\n  batch-max-durations: 5s\n", no_env, NULL),
		     ":3:3: scheduler.batch-max-durations: unknown key");
}

Test(config, rejects_unknown_section)
{
	assert_error(load_with("schedular:\n  shards: 2\n", no_env, NULL),
		     ":1:1: schedular: unknown key");
}

Test(config, rejects_a_daemon_key_at_the_top_level)
{
	assert_error(load_with("shards: 2\n", no_env, NULL),
		     ":1:1: shards: only allowed in the 'scheduler:' section");
}

Test(config, rejects_the_config_key_in_the_file)
{
	assert_error(load_with("config: /etc/other.yaml\n", no_env, NULL),
		     ":1:1: config: only allowed as --config or in the environment");
}

Test(config, rejects_a_section_that_is_not_a_mapping)
{
	assert_error(load_with("launcher: 5\n", no_env, NULL),
		     ":1:11: launcher: expected a mapping of keys, got a value");
}

Test(config, rejects_a_duplicate_key)
{
	assert_error(load_with("scheduler:\n  shards: 2\n  shards: 3\n", no_env, NULL),
		     ":3:3: scheduler.shards: duplicate key");
}

Test(config, rejects_bad_duration_with_the_spec_message)
{
	assert_error(load_with("scheduler:\n  shards: 2\n  batch-idle-duration: soon\n", no_env, NULL),
		     ":3:24: scheduler.batch-idle-duration: expected a duration like 1s, got 'soon'");
}

Test(config, rejects_wrong_type_for_each_type)
{
	static const struct {
		const char *yaml, *error;
	} cases[] = {
		{ "scheduler: {dry-run: maybe}", "scheduler.dry-run: expected true or false, got 'maybe'" },
		{ "scheduler: {offset: ten}", "scheduler.offset: expected an integer, got 'ten'" },
		{ "scheduler: {offset: 1.5}", "scheduler.offset: expected an integer, got '1.5'" },
		{ "scheduler: {shards: -1}", "scheduler.shards: expected a non-negative integer, got '-1'" },
		{ "scheduler: {cpu-ratio: lots}", "scheduler.cpu-ratio: expected a number, got 'lots'" },
		{ "scheduler: {cpu-ratio: .nan}", "scheduler.cpu-ratio: expected a number, got '.nan'" },
		{ "scheduler: {batch-max-duration: 5}", "scheduler.batch-max-duration: expected a duration like 1s, got '5'" },
		{ "scheduler: {batch-max-duration: Never}", "scheduler.batch-max-duration: expected a duration like 1s, got 'Never'" },
		{ "scheduler: {consolidate-after: sometime}", "scheduler.consolidate-after: expected a duration like 1s or Never, got 'sometime'" },
		{ "scheduler: {cluster-name: {a: b}}", "scheduler.cluster-name: expected a string, got a mapping" },
		{ "scheduler: {cluster-name: [a]}", "scheduler.cluster-name: expected a string, got a list" },
		{ "scheduler: {mode: quick}", "scheduler.mode: expected one of fast, thorough, got 'quick'" },
		{ "scheduler: {zones: {a: b}}", "scheduler.zones: expected a list of strings, got a mapping" },
		{ "scheduler: {zones: [[a]]}", "scheduler.zones: expected a list of strings, got a list in the list" },
		{ "log-level: verbose", "log-level: expected one of error, warn, info, debug, got 'verbose'" },
		{ "runtime-dir: run/kanna", "runtime-dir: expected an absolute path, got 'run/kanna'" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		cr_assert_lt(load_with(cases[i].yaml, no_env, NULL), 0, "%s accepted", cases[i].yaml);
		cr_assert(strstr(res.error, cases[i].error), "%s: got %s", cases[i].yaml, res.error);
		cr_assert(strncmp(res.error, "Failed to load /tmp/kanna-test-config-", 38) == 0, "%s", res.error);
		unlink(yaml_path);
	}
}

Test(config, rejects_out_of_range_values)
{
	static const struct {
		const char *yaml, *error;
	} cases[] = {
		{ "scheduler: {offset: 11}", "scheduler.offset: expected a value between -10 and 10, got '11'" },
		{ "scheduler: {offset: 99999999999999999999}", "expected a value between -10 and 10" },
		{ "scheduler: {shards: 0}", "scheduler.shards: expected a value between 1 and 64, got '0'" },
		{ "scheduler: {cpu-ratio: 1.5}", "scheduler.cpu-ratio: expected a value between 0 and 1, got '1.5'" },
		{ "scheduler: {batch-max-duration: 2h}", "expected a value between 100ms and 1h, got '2h'" },
		{ "scheduler: {batch-max-duration: 10ms}", "expected a value between 100ms and 1h, got '10ms'" },
		{ "scheduler: {batch-max-duration: 99999999999h}", "expected a value between 100ms and 1h" },
		{ "metrics-port: 70000", "metrics-port: expected a value between 0 and 65535, got '70000'" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		cr_assert_lt(load_with(cases[i].yaml, no_env, NULL), 0, "%s accepted", cases[i].yaml);
		cr_assert(strstr(res.error, cases[i].error), "%s: got %s", cases[i].yaml, res.error);
		unlink(yaml_path);
	}
}

Test(config, rejects_malformed_yaml_with_position)
{
	int r = load_with("scheduler:\n  zones: [a, b\n", no_env, NULL);

	cr_assert_eq(r, -EINVAL);
	cr_assert(strstr(res.error, "malformed YAML"), "%s", res.error);
	cr_assert(strncmp(res.error, "Failed to load /tmp/kanna-test-config-", 38) == 0, "%s", res.error);
	cr_assert(strstr(res.error, ":3:1: "), "%s", res.error);
}

Test(config, rejects_a_top_level_list_and_a_second_document)
{
	assert_error(load_with("- a\n- b\n", no_env, NULL),
		     ":1:1: expected a mapping of keys at the top, got a list");
	assert_error(load_with("log-level: info\n---\nlog-level: debug\n", no_env, NULL),
		     ":3:1: expected one YAML document, found a second");
}

Test(config, rejects_a_nul_byte_in_a_value)
{
	assert_error(load_with("scheduler: {cluster-name: \"a\\0b\"}\n", no_env, NULL),
		     ":1:27: scheduler.cluster-name: expected a string, got a NUL byte");
}

Test(config, missing_explicit_file_is_an_error)
{
	char *argv[] = { (char *)"kanna-scheduler", (char *)"--config=/nonexistent/kanna.yaml", NULL };

	cr_assert_eq(config_load(&sample_schema, &cfg, &(struct config_source){ 2, argv, no_env }, &res), -ENOENT);
	cr_assert_str_eq(res.error, "Failed to load /nonexistent/kanna.yaml: No such file or directory");
	cr_assert_null(cfg.cluster_name, "a failed load must leave nothing allocated");
	cr_assert_eq(config_load(&sample_schema, &cfg,
				 &(struct config_source){ 1, argv, ENV("KANNA_CONFIG=/nonexistent/k.yaml") }, &res),
		     -ENOENT);
	cr_assert_str_eq(res.error, "Failed to load /nonexistent/k.yaml: No such file or directory");
}

Test(config, environment_wrong_value_names_the_variable)
{
	cr_assert_eq(load_with(NULL, ENV("KANNA_BATCH_IDLE_DURATION=soon"), NULL), -EINVAL);
	cr_assert_str_eq(res.error, "Failed to load environment variable KANNA_BATCH_IDLE_DURATION: "
				    "batch-idle-duration: expected a duration like 1s, got 'soon'");
	cr_assert_eq(load_with(NULL, ENV("BATCH_MAX_DURATION=later"), NULL), -EINVAL);
	cr_assert(strstr(res.error, "environment variable BATCH_MAX_DURATION: "), "%s", res.error);
}

Test(config, environment_uses_kanna_names_and_karpenter_aliases)
{
	cr_assert_eq(load_with(NULL, ENV("BATCH_MAX_DURATION=20s", "KANNA_DRY_RUN=yes", "KANNA_ZONES=a, b,,c",
					 "KANNA_LOG_LEVEL=debug", "LOG_LEVEL=error"), NULL), 0, "%s", res.error);
	cr_assert_eq(cfg.batch_max_duration, 20 * USEC_PER_SEC);
	cr_assert_eq(cfg.dry_run, true);
	cr_assert_eq(cfg.common.log_level, LOG_LEVEL_DEBUG, "KANNA_ name must beat the alias");
	cr_assert_str_eq(cfg.zones[0], "a");
	cr_assert_str_eq(cfg.zones[1], "b");
	cr_assert_str_eq(cfg.zones[2], "c");
	cr_assert_null(cfg.zones[3]);
}

Test(config, flag_wins_over_environment_over_file)
{
	const char *yaml = "scheduler: {batch-max-duration: 5s, shards: 2}\n";

	cr_assert_eq(load_with(yaml, no_env, NULL), 0, "%s", res.error);
	cr_assert_eq(cfg.batch_max_duration, 5 * USEC_PER_SEC);
	config_free(&sample_schema, &cfg);
	cr_assert_eq(load_with(yaml, ENV("KANNA_BATCH_MAX_DURATION=6s"), NULL), 0, "%s", res.error);
	cr_assert_eq(cfg.batch_max_duration, 6 * USEC_PER_SEC);
	config_free(&sample_schema, &cfg);
	cr_assert_eq(load_with(yaml, ENV("KANNA_BATCH_MAX_DURATION=6s"),
			       FLAGS("--batch-max-duration=7s")), 0, "%s", res.error);
	cr_assert_eq(cfg.batch_max_duration, 7 * USEC_PER_SEC);
	cr_assert_eq(cfg.shards, 2, "file values the flags do not name stay");
}

Test(config, flags_take_separate_values_and_bare_booleans)
{
	cr_assert_eq(load_with(NULL, no_env, FLAGS("--shards", "8", "--dry-run", "--mode=thorough")), 0,
		     "%s", res.error);
	cr_assert_eq(cfg.shards, 8);
	cr_assert_eq(cfg.dry_run, true);
	cr_assert_eq(cfg.mode, 2);
	config_free(&sample_schema, &cfg);
	cr_assert_eq(load_with(NULL, no_env, FLAGS("--dry-run=false")), 0, "%s", res.error);
	cr_assert_eq(cfg.dry_run, false);
}

Test(config, rejects_bad_flags)
{
	cr_assert_eq(load_with(NULL, no_env, FLAGS("--bogus=1")), -EINVAL);
	cr_assert_str_eq(res.error, "Failed to parse --bogus=1: unknown option");
	cr_assert_eq(load_with(NULL, no_env, FLAGS("--shards")), -EINVAL);
	cr_assert_str_eq(res.error, "Failed to parse --shards: a value is required");
	cr_assert_eq(load_with(NULL, no_env, FLAGS("extra")), -EINVAL);
	cr_assert_str_eq(res.error, "Failed to parse 'extra': unexpected argument");
	cr_assert_eq(load_with(NULL, no_env, FLAGS("--help=yes")), -EINVAL);
	cr_assert_str_eq(res.error, "Failed to parse --help=yes: no value allowed");
	cr_assert_eq(load_with(NULL, no_env, FLAGS("-x")), -EINVAL);
	cr_assert_str_eq(res.error, "Failed to parse -x: unknown option");
	cr_assert_eq(load_with(NULL, no_env, FLAGS("--shards=65")), -EINVAL);
	cr_assert_str_eq(res.error, "Failed to parse option --shards: expected a value between 1 and 64, got '65'");
}

Test(config, help_and_check_config_set_the_action)
{
	cr_assert_eq(load_with(NULL, no_env, FLAGS("--help")), 0);
	cr_assert_eq(res.action, CONFIG_ACTION_HELP);
	cr_assert_eq(load_with(NULL, no_env, FLAGS("-h")), 0);
	cr_assert_eq(res.action, CONFIG_ACTION_HELP);
	cr_assert_eq(load_with("scheduler: {shards: 3}\n", no_env, FLAGS("--check-config")), 0);
	cr_assert_eq(res.action, CONFIG_ACTION_CHECK);
	cr_assert_eq(cfg.shards, 3, "--check-config loads everything");
	cr_assert_eq(load_with(NULL, no_env, FLAGS("--version")), 0);
	cr_assert_eq(res.action, CONFIG_ACTION_VERSION);
}

Test(config, version_answers_even_when_the_file_is_broken)
{
	cr_assert_eq(load_with("scheduler: {shards: [}\n", no_env, FLAGS("--version")), 0);
	cr_assert_eq(res.action, CONFIG_ACTION_VERSION);
	cr_assert_eq(load_with("scheduler: {shards: [}\n", no_env, (char *[]){ NULL }), -EINVAL,
		     "the same file is refused without --version");
}

Test(config, help_lists_every_key_with_its_environment_names)
{
	char *out = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&out, &size);

	config_print_help(&sample_schema, f);
	fclose(f);
	cr_assert(strstr(out, "Usage: kanna-scheduler [OPTION]..."));
	cr_assert(strstr(out, "--check-config"));
	for (size_t i = 0; i < ARRAY_SIZE(sample_options); i++) {
		char flag[128], env[128];
		snprintf(flag, sizeof(flag), "  --%s", sample_options[i].name);
		config_env_name(sample_options[i].name, env, sizeof(env));
		cr_assert(strstr(out, flag), "--help misses %s", flag);
		cr_assert(strstr(out, env), "--help misses %s", env);
		if (sample_options[i].env_alias)
			cr_assert(strstr(out, sample_options[i].env_alias));
	}
	cr_assert(strstr(out, "Between 100ms and 1h."), "%s", out);
	cr_assert(strstr(out, "Default: 10s."), "%s", out);
	free(out);
}

Test(config, doc_describes_every_common_key)
{
	const char *srcdir = getenv("KANNA_SRCDIR");
	char path[4096], *doc = NULL;
	size_t size = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/doc/configuration.md", srcdir ? srcdir : KANNA_SRCDIR);
	f = fopen(path, "r");
	cr_assert_not_null(f, "cannot open %s", path);
	doc = calloc(1, 1 << 20);
	size = fread(doc, 1, (1 << 20) - 1, f);
	fclose(f);
	cr_assert_gt(size, 0);
	/* The common keys are the first entries of every table. */
	for (size_t i = 0; i < ARRAY_SIZE(sample_options); i++) {
		char key[128];
		if (!(sample_options[i].flags & (CONFIG_SHARED | CONFIG_NOT_IN_FILE)))
			continue;
		snprintf(key, sizeof(key), "`%s`", sample_options[i].name);
		cr_assert(strstr(doc, key), "doc/configuration.md does not describe %s", key);
	}
	free(doc);
}

static int reload_with(const char *yaml, struct sample_config *fresh)
{
	char flag[128];
	char *argv[] = { (char *)"kanna-scheduler", flag, NULL };

	FILE *f = fopen(yaml_path, "w"); /* the same file, edited in place */

	cr_assert_not_null(f);
	fputs(yaml, f);
	fclose(f);
	snprintf(flag, sizeof(flag), "--config=%s", yaml_path);
	memset(fresh, 0, sizeof(*fresh));
	return config_reload(&sample_schema, &cfg, fresh, &(struct config_source){ 2, argv, no_env }, &res);
}

Test(config, reload_applies_reloadable_changes_and_lists_them)
{
	struct sample_config fresh;

	cr_assert_eq(load_with("scheduler: {batch-max-duration: 5s, shards: 2}\n", no_env, NULL), 0);
	cr_assert_eq(reload_with("log-level: debug\nscheduler: {batch-max-duration: 8s, shards: 2}\n", &fresh), 0,
		     "%s", res.error);
	cr_assert_str_eq(res.changed, "log-level, batch-max-duration");
	cr_assert_eq(fresh.batch_max_duration, 8 * USEC_PER_SEC);
	cr_assert_eq(cfg.batch_max_duration, 5 * USEC_PER_SEC, "current must not change");
	config_free(&sample_schema, &fresh);
}

Test(config, reload_refuses_a_change_that_needs_a_restart)
{
	struct sample_config fresh;

	cr_assert_eq(load_with("scheduler: {shards: 2, cluster-name: a}\n", no_env, NULL), 0);
	cr_assert_eq(reload_with("scheduler: {batch-max-duration: 8s, shards: 3, cluster-name: b}\n", &fresh),
		     -EINVAL);
	cr_assert_str_eq(res.error, "Failed to reload the configuration: a restart is needed to change "
				    "shards (2 -> 3), cluster-name (a -> b)");
	cr_assert_str_eq(res.changed, "");
	cr_assert_null(fresh.cluster_name, "a refused reload leaves nothing to apply");
	cr_assert_eq(cfg.shards, 2);
}

Test(config, reload_with_an_invalid_file_applies_nothing)
{
	struct sample_config fresh;

	cr_assert_eq(load_with("scheduler: {batch-max-duration: 5s}\n", no_env, NULL), 0);
	cr_assert_eq(reload_with("scheduler: {batch-max-duration: 8s, batch-idle-duration: soon}\n", &fresh),
		     -EINVAL);
	cr_assert(strstr(res.error, "scheduler.batch-idle-duration: expected a duration like 1s, got 'soon'"));
	cr_assert_null(fresh.cluster_name);
	cr_assert_eq(cfg.batch_max_duration, 5 * USEC_PER_SEC);
}

Test(config, durations_parse_go_syntax)
{
	static const struct {
		const char *text;
		uint64_t usec;
	} ok[] = {
		{ "0", 0 }, { "10s", 10 * USEC_PER_SEC }, { "1m30s", 90 * USEC_PER_SEC },
		{ "720h", 720 * USEC_PER_HOUR }, { "1.5h", 90 * USEC_PER_MINUTE },
		{ "500ms", 500 * USEC_PER_MSEC }, { "250us", 250 }, { "2\xc2\xb5s", 2 },
		{ "1500ns", 1 }, { "1h2m3s4ms", USEC_PER_HOUR + 2 * USEC_PER_MINUTE + 3 * USEC_PER_SEC + 4000 },
		{ ".5s", USEC_PER_SEC / 2 }, { ".21h", 756 * USEC_PER_SEC },
		{ "0.000001s", 1 }, { "1.000001s", USEC_PER_SEC + 1 },
	};
	static const char *bad[] = { "", "5", "s", "1x", "-1s", "+1s", "1s ", " 1s", "1..5s", ".s", "never", "1e3s",
				     "99999999999999999999h" };
	uint64_t u;

	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		cr_assert_eq(config_parse_duration(ok[i].text, false, &u), 0, "%s rejected", ok[i].text);
		cr_assert_eq(u, ok[i].usec, "%s: %llu", ok[i].text, (unsigned long long)u);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		cr_assert_lt(config_parse_duration(bad[i], true, &u), 0, "'%s' accepted", bad[i]);
	cr_assert_eq(config_parse_duration("Never", true, &u), 0);
	cr_assert_eq(u, CONFIG_DURATION_NEVER);
	cr_assert_lt(config_parse_duration("Never", false, &u), 0);
}

Test(config, durations_format_back_to_go_syntax)
{
	static const struct {
		uint64_t usec;
		const char *text;
	} cases[] = {
		{ 0, "0s" }, { 90 * USEC_PER_SEC, "1m30s" }, { 720 * USEC_PER_HOUR, "720h" },
		{ 250 * USEC_PER_MSEC, "250ms" }, { 7, "7us" }, { 1500 * USEC_PER_MSEC, "1.5s" },
		{ USEC_PER_HOUR + 1, "1h0.000001s" }, { CONFIG_DURATION_NEVER, "Never" },
	};
	char buf[64];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		config_format_duration(cases[i].usec, buf, sizeof(buf));
		cr_assert_str_eq(buf, cases[i].text);
	}
}

Test(config, load_buffer_reports_the_given_name)
{
	static const char text[] = "scheduler:\n  mode: quick\n";

	cr_assert_eq(config_load_buffer(&sample_schema, &cfg, text, strlen(text), "<test>", &res), -EINVAL);
	cr_assert_str_eq(res.error, "Failed to load <test>:2:9: scheduler.mode: expected one of fast, thorough, got 'quick'");
}

Test(config, long_bad_values_are_cut_in_messages)
{
	char yaml[512];

	snprintf(yaml, sizeof(yaml), "scheduler: {mode: %0200d}\n", 7);
	cr_assert_lt(load_with(yaml, no_env, NULL), 0);
	cr_assert(strstr(res.error, "...'"), "%s", res.error);
	cr_assert_lt(strlen(res.error), 300);
}

static void redirect_both(void)
{
	cr_redirect_stdout();
	cr_redirect_stderr();
}

/* Everything written to a redirected stream so far, NUL-terminated. */
static char *slurp(FILE *f)
{
	static char text[65536];
	size_t n;

	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	return text;
}

Test(config_main, help_prints_the_table_and_exits_0, .init = redirect_both)
{
	char *argv[] = { (char *)"kanna-scheduler", (char *)"--help", NULL };
	int status = -1;

	cr_assert(config_handle_command_line(&sample_schema, &cfg, 2, argv, &status));
	cr_assert_eq(status, 0);
	fflush(stdout);
	cr_assert(strstr(slurp(cr_get_redirected_stdout()), "--batch-max-duration=DURATION"));
}

Test(config_main, check_config_prints_values_and_exits_0, .init = redirect_both, .fini = teardown)
{
	char flag[128];
	char *argv[] = { (char *)"kanna-scheduler", flag, (char *)"--check-config", NULL };
	int status = -1;

	snprintf(flag, sizeof(flag), "--config=%s", write_yaml("scheduler: {shards: 5}\n"));
	cr_assert(config_handle_command_line(&sample_schema, &cfg, 3, argv, &status));
	cr_assert_eq(status, 0);
	fflush(stdout);
	cr_assert(strstr(slurp(cr_get_redirected_stdout()), "\nshards: 5\n"));
	cr_assert_null(cfg.cluster_name, "--check-config frees what it loaded");
}

Test(config_main, invalid_configuration_logs_the_error_and_exits_2, .init = redirect_both, .fini = teardown)
{
	char flag[128];
	char *argv[] = { (char *)"kanna-scheduler", flag, (char *)"--check-config", NULL };
	int status = -1;

	snprintf(flag, sizeof(flag), "--config=%s", write_yaml("scheduler: {shards: many}\n"));
	cr_assert(config_handle_command_line(&sample_schema, &cfg, 3, argv, &status));
	cr_assert_eq(status, CONFIG_EXIT_INVALID);
	fflush(stderr);
	cr_assert(strstr(slurp(cr_get_redirected_stderr()),
			 "scheduler.shards: expected a non-negative integer, got 'many'"));
}

Test(config_main, valid_configuration_runs_and_sets_up_logging, .init = redirect_both, .fini = teardown)
{
	char flag[128];
	char *argv[] = { (char *)"kanna-scheduler", flag, (char *)"--log-format=json", NULL };
	int status = -1;

	snprintf(flag, sizeof(flag), "--config=%s", write_yaml("log-level: debug\n"));
	cr_assert_not(config_handle_command_line(&sample_schema, &cfg, 3, argv, &status));
	cr_assert_eq(log_get_level(), LOG_LEVEL_DEBUG);
	cr_assert_eq(log_get_format(), LOG_FORMAT_JSON);
	cr_assert_eq(cfg.common.log_level, LOG_LEVEL_DEBUG);
}

Test(config, sample_table_passes_the_schema_check)
{
	cr_assert_eq(config_schema_check(&sample_schema, &res), 0, "%s", res.error);
}

Test(config, schema_check_finds_table_mistakes)
{
	static const struct config_option bad_default[] = {
		{ .name = "shards", .type = CONFIG_UINT, .offset = OFF(shards), .default_value = "0",
		  .min = 1, .max = 64, .help = "h" },
	};
	static const struct config_option twice[] = {
		{ .name = "shards", .type = CONFIG_UINT, .offset = OFF(shards), .help = "h" },
		{ .name = "shards", .type = CONFIG_UINT, .offset = OFF(shards), .help = "h" },
	};
	static const struct config_option reserved[] = {
		{ .name = "help", .type = CONFIG_BOOL, .offset = OFF(dry_run), .help = "h" },
	};
	static const struct config_option upper[] = {
		{ .name = "Shards", .type = CONFIG_UINT, .offset = OFF(shards), .help = "h" },
	};
	static const struct config_option no_help[] = {
		{ .name = "shards", .type = CONFIG_UINT, .offset = OFF(shards) },
	};
	static const struct config_option no_values[] = {
		{ .name = "mode", .type = CONFIG_ENUM, .offset = OFF(mode), .help = "h" },
	};
	static const struct {
		const struct config_option *options;
		size_t n;
		const char *error;
	} cases[] = {
		{ bad_default, 1, "Failed to load built-in default: shards: expected a value between 1 and 64, got '0'" },
		{ twice, 2, "Failed to check kanna-test's table: shards appears twice" },
		{ reserved, 1, "Failed to check kanna-test's table: help is reserved" },
		{ upper, 1, "Failed to check kanna-test's table: bad key name 'Shards'" },
		{ no_help, 1, "Failed to check kanna-test's table: shards has no help text" },
		{ no_values, 1, "Failed to check kanna-test's table: mode has no values" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct config_schema schema = { .program = "kanna-test", .section = "scheduler",
						.options = cases[i].options, .n_options = cases[i].n,
						.common_offset = 0 };
		cr_assert_eq(config_schema_check(&schema, &res), -EINVAL);
		cr_assert_str_eq(res.error, cases[i].error);
	}
}

Test(config, argv_is_left_in_order_for_reloads)
{
	char *argv[] = { (char *)"kanna-scheduler", (char *)"--config=/dev/null", (char *)"extra",
			 (char *)"--shards=2", NULL };
	char *copy[ARRAY_SIZE(argv)];

	memcpy(copy, argv, sizeof(argv));
	cr_assert_eq(config_load(&sample_schema, &cfg, &(struct config_source){ 4, argv, no_env }, &res), -EINVAL);
	cr_assert_str_eq(res.error, "Failed to parse 'extra': unexpected argument");
	cr_assert_arr_eq(argv, copy, sizeof(argv));
}
