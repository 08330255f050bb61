/*
 * kanna-scheduler --simulate: a cluster dump loaded by dump/ (dump.h: the
 * watcher's decoders and from-state.c, as the daemon builds its own model),
 * solved, and the solve printed as a table or as JSON.
 */
#ifndef KANNA_SCHEDULER_SIMULATE_H
#define KANNA_SCHEDULER_SIMULATE_H

#include <stdio.h>

#include "model/solver.h"

void simulate_print_table(FILE *out, const struct cluster *c, const struct sched_result *res);
/* {"nodeClaims":[...],"existingNodes":[...],"unschedulable":[...]} */
int simulate_print_json(FILE *out, const struct cluster *c, const struct sched_result *res);

/* The --simulate command line (main.c dispatches to it). */
int simulate_main(int argc, char **argv);

#endif
