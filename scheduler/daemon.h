/*
 * kanna-scheduler's daemon mode (see daemon.c): runs until SIGTERM.
 */
#ifndef KANNA_SCHEDULER_DAEMON_H
#define KANNA_SCHEDULER_DAEMON_H

#include "scheduler/config.h"

/* Returns the process exit status. */
int scheduler_run(struct scheduler_config *cfg);

#endif
