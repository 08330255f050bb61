/*
 * kanna-reaper: the one process that removes capacity — it drains and
 * terminates deleted nodes, removes empty and expired ones (replacements
 * first) and takes the termination finalizer off. Wiring only; see
 * daemon.c (with --what-if FILE: the offline answer, what-if-main.c).
 */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "reaper/daemon.h"
#include "reaper/what-if.h"

int main(int argc, char **argv)
{
	struct reaper_config cfg = { 0 };
	int exit_code;

	/* It holds AWS keys that terminate instances: no core dump, no ptrace
	 * and no /proc/<pid>/mem for other processes of its user (issue 19). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		perror("Failed to make kanna-reaper non-dumpable");
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--what-if", 9))
			return what_if_main(argc, argv);
	if (config_handle_command_line(&reaper_schema, &cfg, argc, argv, &exit_code))
		return exit_code;
	exit_code = reaper_run(&cfg, argc, argv);
	config_free(&reaper_schema, &cfg);
	return exit_code;
}
