/*
 * kanna-reaper: the one process that removes capacity — it drains and
 * terminates deleted nodes, removes empty and expired ones (replacements
 * first) and takes the termination finalizer off. Wiring only; see
 * daemon.c (with --what-if FILE: the offline answer, what-if-main.c).
 */
#include <string.h>

#include "reaper/daemon.h"
#include "reaper/what-if.h"

int main(int argc, char **argv)
{
	struct reaper_config cfg = { 0 };
	int exit_code;

	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--what-if", 9))
			return what_if_main(argc, argv);
	if (config_handle_command_line(&reaper_schema, &cfg, argc, argv, &exit_code))
		return exit_code;
	exit_code = reaper_run(&cfg, argc, argv);
	config_free(&reaper_schema, &cfg);
	return exit_code;
}
