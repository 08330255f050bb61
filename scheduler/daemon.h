/*
 * kanna-scheduler's daemon mode (see daemon.c): runs until SIGTERM; SIGHUP
 * reloads the configuration (the same command line, the file again).
 */
#ifndef KANNA_SCHEDULER_DAEMON_H
#define KANNA_SCHEDULER_DAEMON_H

#include "scheduler/config.h"

/* Returns the process exit status. argc/argv: kept for SIGHUP. */
int scheduler_run(struct scheduler_config *cfg, int argc, char **argv);

#endif
