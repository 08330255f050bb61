/* kanna-watcher's configuration table: well formed, defaults, errors. */
#include <criterion/criterion.h>
#include <string.h>

#include "watcher/config.h"

Test(watcher_config, the_table_passes_the_schema_check)
{
	struct config_result res = { 0 };
	cr_assert_eq(config_schema_check(&watcher_schema, &res), 0, "%s", res.error);
	config_result_done(&res);
}

Test(watcher_config, defaults_are_one_shard_and_leader_election_on)
{
	struct watcher_config cfg = { 0 };
	struct config_result res = { 0 };
	char *argv[] = { "kanna-watcher", "--config=/dev/null", NULL };
	char *envp[] = { NULL };
	struct config_source src = { 2, argv, envp };
	cr_assert_eq(config_load(&watcher_schema, &cfg, &src, &res), 0, "%s", res.error);
	cr_assert_eq(cfg.shards, 1);
	cr_assert(cfg.kube.leader_elect);
	cr_assert_eq(cfg.kube.lease_duration_usec, 15000000);
	cr_assert_eq(cfg.kube.burst, 300);
	cr_assert_str_eq(cfg.resources[0], "pods");
	config_free(&watcher_schema, &cfg);
	config_result_done(&res);
}

Test(watcher_config, an_out_of_range_shard_count_is_an_error_with_its_position)
{
	struct watcher_config cfg = { 0 };
	struct config_result res = { 0 };
	const char *text = "watcher:\n  shards: 0\n";
	cr_assert_lt(config_load_buffer(&watcher_schema, &cfg, text, strlen(text), "k.yaml", &res), 0);
	cr_assert(strstr(res.error, "k.yaml:2:"), "%s", res.error);
	cr_assert(strstr(res.error, "watcher.shards"), "%s", res.error);
	config_free(&watcher_schema, &cfg);
	config_result_done(&res);
}
