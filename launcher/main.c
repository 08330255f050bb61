/*
 * kanna-launcher: the single writer of NodeClaims and Nodes and the only
 * process that creates instances. Wiring only; see daemon.c.
 */
#include <stdio.h>
#include <sys/prctl.h>

#include "launcher/daemon.h"

int main(int argc, char **argv)
{
	struct launcher_config cfg = { 0 };
	int exit_code;

	/* It holds AWS keys that launch instances: no core dump, no ptrace
	 * and no /proc/<pid>/mem for other processes of its user (issue 19). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		perror("Failed to make kanna-launcher non-dumpable");
	if (config_handle_command_line(&launcher_schema, &cfg, argc, argv, &exit_code))
		return exit_code;
	exit_code = launcher_run(&cfg, argc, argv);
	config_free(&launcher_schema, &cfg);
	return exit_code;
}
