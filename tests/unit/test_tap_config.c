/*
 * kanna-tap's configuration (tools/tap-config.c): its table, the daemons'
 * file with the shared keys at the top and its own under tap:, the layers
 * (file < environment < options), and the kanna-tap binary reporting what
 * it loaded (--check-config) or refusing a bad file with exit status 2.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "tools/tap-config.h"

static char dir[64];

static void config_setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kanna-tap-view.XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void config_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

static const char *write_file(const char *name, const char *text)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* config_load() of kanna-tap's table with these flags and environment. */
static int load(struct tap_config *cfg, const char *const *flags, const char *const *env,
		struct config_result *res)
{
	char *argv[8] = { "kanna-tap" };
	int argc = 1;
	for (; flags && *flags; flags++)
		argv[argc++] = (char *)*flags;
	struct config_source src = { .argc = argc, .argv = argv, .envp = (char **)env };
	*cfg = (struct tap_config){ 0 };
	return config_load(&tap_config_schema, cfg, &src, res);
}

#define SHARED_FILE                                                                        \
	"log-level: debug\nruntime-dir: /srv/kanna\nsocket-group: kanna\n"                 \
	"kubeconfig: /etc/kanna/kubeconfig\nkube-client-qps: 50\n"                           \
	"peer-identities: [watcher=kanna-watcher]\nscheduler:\n  batch-max-duration: 5s\n" \
	"tap:\n  output: text\n  summary-interval: 250ms\n"

TestSuite(tap_config, .init = config_setup, .fini = config_teardown);

Test(tap_config, table_passes_the_schema_check)
{
	struct config_result res = { 0 };
	cr_expect_eq(config_schema_check(&tap_config_schema, &res), 0, "%s", res.error);
}

Test(tap_config, reads_shared_keys_at_the_top_and_its_own_in_the_tap_section)
{
	static const char *const env[] = { NULL };
	struct config_result res = { 0 };
	struct tap_config cfg;
	char flag[160];

	snprintf(flag, sizeof(flag), "--config=%s", write_file("kanna.yaml", SHARED_FILE));
	cr_assert_eq(load(&cfg, (const char *[]){ flag, NULL }, env, &res), 0, "%s", res.error);
	cr_expect_str_eq(cfg.common.runtime_dir, "/srv/kanna");
	cr_expect_eq(cfg.common.log_level, LOG_LEVEL_DEBUG);
	cr_expect_eq(cfg.output, TAP_OUTPUT_TEXT);
	cr_expect_eq(cfg.summary_interval_usec, 250000);
	cr_expect_eq(cfg.show_user_data, false);
	config_free(&tap_config_schema, &cfg);
	config_result_done(&res);
}

Test(tap_config, environment_beats_the_file_and_options_beat_both)
{
	static const char *const env[] = { "KANNA_RUNTIME_DIR=/from/env", "KANNA_OUTPUT=json", NULL };
	struct config_result res = { 0 };
	struct tap_config cfg;
	char flag[160];

	snprintf(flag, sizeof(flag), "--config=%s", write_file("kanna.yaml", SHARED_FILE));
	cr_assert_eq(load(&cfg, (const char *[]){ flag, NULL }, env, &res), 0, "%s", res.error);
	cr_expect_str_eq(cfg.common.runtime_dir, "/from/env");
	cr_expect_eq(cfg.output, TAP_OUTPUT_JSON);
	config_free(&tap_config_schema, &cfg);
	cr_assert_eq(load(&cfg, (const char *[]){ flag, "--runtime-dir=/from/flag", "--output=text", NULL },
			  env, &res), 0, "%s", res.error);
	cr_expect_str_eq(cfg.common.runtime_dir, "/from/flag");
	cr_expect_eq(cfg.output, TAP_OUTPUT_TEXT);
	config_free(&tap_config_schema, &cfg);
	config_result_done(&res);
}

Test(tap_config, unknown_or_misplaced_keys_are_errors_naming_file_line_and_column)
{
	static const char *const env[] = { NULL };
	struct config_result res = { 0 };
	struct tap_config cfg;
	char flag[160], want[256];
	const char *path = write_file("bad.yaml", "runtime-dir: /srv/kanna\ntap:\n  output: text\n  colour: always\n");

	snprintf(flag, sizeof(flag), "--config=%s", path);
	cr_expect_eq(load(&cfg, (const char *[]){ flag, NULL }, env, &res), -EINVAL);
	snprintf(want, sizeof(want), "%s:4:3: tap.colour: unknown key", path);
	cr_expect(strstr(res.error, want), "%s", res.error);

	path = write_file("top.yaml", "output: text\n");
	snprintf(flag, sizeof(flag), "--config=%s", path);
	cr_expect_eq(load(&cfg, (const char *[]){ flag, NULL }, env, &res), -EINVAL);
	snprintf(want, sizeof(want), "%s:1:1: output: only allowed in the 'tap:' section", path);
	cr_expect(strstr(res.error, want), "%s", res.error);
	config_result_done(&res);
}

/* Runs the kanna-tap binary; returns its exit status, output in dir/out, dir/err. */
static int run_tap(const char *args)
{
	const char *builddir = getenv("KANNA_BUILDDIR");
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && env -u KANNA_CONFIG -u KANNA_RUNTIME_DIR -u KANNA_OUTPUT "
		 "'%s/tools/kanna-tap' %s >out 2>err",
		 dir, builddir ? builddir : getcwd((char[4096]){ 0 }, 4096), args);
	int status = system(cmd);
	cr_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static char *slurp(const char *name)
{
	static char text[8192];
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	cr_assert(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

Test(tap_config, kanna_tap_takes_its_settings_from_the_file_and_its_options)
{
	char args[256], want[160];

	write_file("kanna.yaml", SHARED_FILE);
	cr_assert_eq(run_tap("--config=kanna.yaml --check-config"), 0, "%s", slurp("err"));
	cr_expect(strstr(slurp("out"), "runtime-dir: /srv/kanna\n"), "%s", slurp("out"));
	cr_expect(strstr(slurp("out"), "output: text\n"), "%s", slurp("out"));
	cr_expect(strstr(slurp("out"), "summary-interval: 250ms\n"), "%s", slurp("out"));

	/* Options win; a relative --runtime-dir is taken from the current directory. */
	snprintf(args, sizeof(args), "--config=kanna.yaml -o json --summary=2s --runtime-dir run --check-config");
	cr_assert_eq(run_tap(args), 0, "%s", slurp("err"));
	cr_expect(strstr(slurp("out"), "output: json\n"), "%s", slurp("out"));
	cr_expect(strstr(slurp("out"), "summary-interval: 2s\n"), "%s", slurp("out"));
	snprintf(want, sizeof(want), "runtime-dir: %s/run\n", dir);
	cr_expect(strstr(slurp("out"), want), "%s", slurp("out"));
}

Test(tap_config, kanna_tap_refuses_a_bad_file_with_exit_status_2)
{
	char want[160];

	write_file("bad.yaml", "tap:\n  output: text\n  colour: always\n");
	cr_expect_eq(run_tap("--config=bad.yaml"), CONFIG_EXIT_INVALID);
	snprintf(want, sizeof(want), "bad.yaml:3:3: tap.colour: unknown key");
	cr_expect(strstr(slurp("err"), want), "%s", slurp("err"));
	cr_expect_eq(run_tap("--output=colour"), CONFIG_EXIT_INVALID);
	cr_expect(strstr(slurp("err"), "--output"), "%s", slurp("err"));
	cr_expect_eq(run_tap("--config=missing.yaml"), CONFIG_EXIT_INVALID);
}
