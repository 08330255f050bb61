/*
 * Shared by the --simulate loader files: the parse context (libyaml
 * document, error buffer, volume objects seen) and small typed accessors
 * that report file:line:column on every mistake.
 */
#ifndef KANNA_SCHEDULER_SIMULATE_INTERNAL_H
#define KANNA_SCHEDULER_SIMULATE_INTERNAL_H

#include <yaml.h>

#include "scheduler/simulate.h"

struct volume_claim {
	uint32_t ns, name, volume, storage_class; /* STR_NONE when unset */
};

struct volume {
	uint32_t name;
	struct requirements reqs; /* nodeAffinity, first term */
};

struct storage_class {
	uint32_t name;
	bool wait_for_first_consumer, is_default;
	struct requirements reqs; /* allowedTopologies, first term */
};

struct yctx {
	const char *file;
	yaml_document_t *doc;
	struct cluster *c;
	char *err;
	size_t err_size;
	struct volume_claim *pvcs;
	uint32_t n_pvcs, cap_pvcs;
	struct volume *pvs;
	uint32_t n_pvs, cap_pvs;
	struct storage_class *scs;
	uint32_t n_scs, cap_scs;
	uint32_t n_instance_types;
};

int yerr(struct yctx *y, const yaml_node_t *n, const char *fmt, ...) _printf_(3, 4);
yaml_node_t *yget(struct yctx *y, const yaml_node_t *map, const char *key);
/* Typed getters: NULL/absent is fine (returns 0 and leaves *ret), a wrong
 * type is an error at the node. */
int ystr(struct yctx *y, const yaml_node_t *n, const char **ret);
int yint(struct yctx *y, const yaml_node_t *n, int64_t *ret);
int ybool(struct yctx *y, const yaml_node_t *n, bool *ret);
int yquantity(struct yctx *y, const yaml_node_t *n, bool milli, int64_t *ret);
bool yis(const yaml_node_t *n, yaml_node_type_t t);
int yexpect(struct yctx *y, const yaml_node_t *n, yaml_node_type_t t, const char *what);
uint32_t yintern(struct yctx *y, const char *s); /* STR_NONE on ENOMEM */
#define YCAT_(a, b) a##b
#define YCAT(a, b) YCAT_(a, b)
#define YSEQ_FOREACH(y, seq, item) YSEQ_FOREACH_(y, seq, item, YCAT(yit_, __LINE__))
#define YSEQ_FOREACH_(y, seq, item, it)                                                    \
	for (yaml_node_item_t *it = (seq)->data.sequence.items.start;                      \
	     it < (seq)->data.sequence.items.top &&                                        \
	     ((item) = yaml_document_get_node((y)->doc, *it));                             \
	     it++)
#define YMAP_FOREACH(y, map, pair)                                                         \
	for ((pair) = (map)->data.mapping.pairs.start; (pair) < (map)->data.mapping.pairs.top; \
	     (pair)++)

/* {key, operator, values, minValues} list into r (node selector terms). */
int yrequirements(struct yctx *y, const yaml_node_t *list, struct requirements *r);
/* A label selector (matchLabels, matchExpressions); absent selects nothing. */
int yselector(struct yctx *y, const yaml_node_t *sel, struct requirements *r);
int ylabels(struct yctx *y, const yaml_node_t *map, struct label **ret, uint32_t *n);
int ytaints(struct yctx *y, const yaml_node_t *list, struct taint **ret, uint32_t *n);
/* A resource map (requests, limits, capacity) into a vector. */
int yresources(struct yctx *y, const yaml_node_t *map, struct resources *ret);

/* simulate-load.c */
int load_pvc(struct yctx *y, const yaml_node_t *obj, uint32_t ns, const char *name);
/* simulate-workloads.c */
int load_pod(struct yctx *y, const yaml_node_t *obj, uint32_t ns, const char *name);
int load_workload(struct yctx *y, const yaml_node_t *obj, const char *kind, uint32_t ns,
		  const char *name);
int load_daemonset(struct yctx *y, const yaml_node_t *obj, uint32_t ns, const char *name);

/* simulate-pod.c: a PodSpec (and its metadata) into p. */
int ypod(struct yctx *y, const yaml_node_t *meta, const yaml_node_t *spec, uint32_t ns,
	 struct pod *p);

#endif
