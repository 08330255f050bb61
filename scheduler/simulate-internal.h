/*
 * Shared by the --simulate loader files: one input being loaded (its YAML
 * documents as JSON, every object in them in document order) and errors
 * that name file:line:column. The objects are decoded by the watcher's
 * decoders and modelled by from-state.c, exactly as the daemon does.
 */
#ifndef KANNA_SCHEDULER_SIMULATE_INTERNAL_H
#define KANNA_SCHEDULER_SIMULATE_INTERNAL_H

#include <jansson.h>

#include "common/yaml-json.h"
#include "scheduler/simulate.h"

struct sim_input {
	const char *file;
	struct yaml_docs *docs;
	json_t *objects; /* array: the input's objects (List items flattened), then generated ones */
	json_t *origins; /* array: per object, what its errors point at (a generated Pod's workload) */
	json_t *copies;  /* array: per object, null or the names of replicas identical to it */
	size_t n_given;  /* objects[0 .. n_given) are the input's own */
	const struct simulate_options *opts;
	char *err;
	size_t err_size;
};

/*
 * Writes "file:line:column: message" into in->err, the position being at's
 * if the input has one, else fallback's (a generated Pod's workload), and
 * returns -EINVAL. Keeps the first error.
 */
int sim_error(struct sim_input *in, const json_t *at, const json_t *fallback, const char *fmt, ...)
	_printf_(4, 5);
/* Appends a generated object (reference stolen) whose errors point at origin. */
int sim_append(struct sim_input *in, json_t *obj, const json_t *origin);
/* Object i (a generated Pod) stands for one more replica named name too:
 * the replicas of a Deployment differ only in name, so it is decoded once. */
int sim_add_copy(struct sim_input *in, size_t i, const char *name);
/* kind and metadata.name/namespace of an object (NULL when absent). */
const char *sim_kind(const json_t *obj);
const char *sim_name(const json_t *obj);
const char *sim_namespace(const json_t *obj);

/* simulate-workloads.c: what the API server and controllers would have
 * done to a dump — namespace "default", the default StorageClass on claims
 * without one, Deployments/ReplicaSets/StatefulSets expanded into the pods
 * (and StatefulSet claims) they still lack — appended to in->objects. */
int sim_admit(struct sim_input *in);
int sim_expand_workloads(struct sim_input *in);

/* simulate-catalog.c: from_state_options.fill_catalog for --simulate (the
 * input's kanna.dev/v1alpha1 InstanceTypes, Karpenter's fake catalog, or
 * the shipped one in the region and zones the input names). userdata: the
 * struct sim_input. */
int sim_fill_catalog(struct catalog *cat, void *userdata, char *err, size_t errlen);

#endif
