/*
 * A cluster dump: a YAML stream of Kubernetes objects (what `kubectl get
 * nodepools,nodes,pods,... -o yaml` prints) loaded into a state store and a
 * cluster model — through the watcher's decoders (decode/) and from-state.c
 * (model/), as the daemons build their own. Read by kanna-scheduler
 * --simulate and kanna-reaper --what-if, so both take the same input with
 * the same positioned errors. Loading never touches the network; errors
 * name file:line:column. A library between decode/, model/ and the
 * daemons: it includes no daemon's header.
 */
#ifndef KANNA_DUMP_DUMP_H
#define KANNA_DUMP_DUMP_H

#include <stdio.h>

#include "model/solver.h"

struct dump_options {
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
int dump_load(const char *file, const char *data, size_t size, const struct dump_options *opts,
	      struct cluster **ret, char *err, size_t err_size);

/* The same, keeping the decoded objects in store (initialized by the
 * caller, who frees it): kanna-reaper --what-if reads NodePools,
 * NodeClaims and PDBs from it. */
struct state_store;
int dump_load_store(const char *file, const char *data, size_t size,
		    const struct dump_options *opts, struct state_store *store,
		    struct cluster **ret, char *err, size_t err_size);

#endif
