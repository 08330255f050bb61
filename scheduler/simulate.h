/*
 * kanna-scheduler --simulate: load a YAML stream of Kubernetes objects
 * (what `kubectl get nodepools,nodes,pods,... -o yaml` prints) into a
 * cluster model — through the watcher's decoders and from-state.c, as the
 * daemon builds its own — and print a solve as a table or as JSON. Loading
 * never touches the network; errors name file:line:column.
 */
#ifndef KANNA_SCHEDULER_SIMULATE_H
#define KANNA_SCHEDULER_SIMULATE_H

#include <stdio.h>

#include "model/solver.h"

struct simulate_options {
	const char *catalog_path; /* NULL: the shipped catalog */
	uint32_t fake_types;      /* > 0: Karpenter's fake catalog instead (tests, fuzzing) */
	bool pdbs;                /* decode PodDisruptionBudgets too (kanna-reaper --what-if) */
	int64_t now_ms;           /* 0: the clock (fixtures pin it) */
};

/*
 * Parses data (file names the input in messages). Returns 0 and a cluster
 * ready to solve, or -EINVAL with "file:line:column: what is wrong" in err
 * (other negative errno on resource failures, with a message too).
 */
int simulate_load(const char *file, const char *data, size_t size,
		  const struct simulate_options *opts, struct cluster **ret, char *err,
		  size_t err_size);

/* The same, keeping the decoded objects in store (initialized by the
 * caller, who frees it): kanna-reaper --what-if reads NodePools,
 * NodeClaims and PDBs from it. */
struct state_store;
int simulate_load_store(const char *file, const char *data, size_t size,
			const struct simulate_options *opts, struct state_store *store,
			struct cluster **ret, char *err, size_t err_size);

void simulate_print_table(FILE *out, const struct cluster *c, const struct sched_result *res);
/* {"nodeClaims":[...],"existingNodes":[...],"unschedulable":[...]} */
int simulate_print_json(FILE *out, const struct cluster *c, const struct sched_result *res);

/* The --simulate command line (main.c dispatches to it). */
int simulate_main(int argc, char **argv);

#endif
