/*
 * kanna-reaper's daemon entry point (daemon.c).
 */
#ifndef KANNA_REAPER_DAEMON_H
#define KANNA_REAPER_DAEMON_H

#include "reaper/config.h"

/* Runs the daemon to its end; returns its exit status. */
int reaper_run(struct reaper_config *cfg, int argc, char **argv);

#endif
