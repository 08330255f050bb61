/*
 * kanna-launcher's daemon entry point (daemon.c). argc/argv are kept for
 * SIGHUP, which re-reads the same command line.
 */
#ifndef KANNA_LAUNCHER_DAEMON_H
#define KANNA_LAUNCHER_DAEMON_H

#include "launcher/config.h"

/* Runs until SIGTERM; returns the process exit code. */
int launcher_run(struct launcher_config *cfg, int argc, char **argv);

#endif
