/*
 * kanna-scheduler: with --simulate FILE, the offline answer to "what would
 * kanna launch for this cluster?" (simulate-main.c); otherwise the daemon
 * (daemon.c) configured from its table (config.c). Wiring only.
 */
#include <string.h>

#include "common/util.h"
#include "scheduler/daemon.h"
#include "scheduler/simulate.h"

int main(int argc, char **argv)
{
	struct scheduler_config cfg = { 0 };
	int exit_code;

	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--simulate", 10))
			return simulate_main(argc, argv);
	if (config_handle_command_line(&scheduler_schema, &cfg, argc, argv, &exit_code))
		return exit_code;
	exit_code = scheduler_run(&cfg, argc, argv);
	config_free(&scheduler_schema, &cfg);
	return exit_code;
}
