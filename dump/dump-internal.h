/*
 * Shared by the dump loader's files (load.c, workloads.c, catalog.c): one
 * input being loaded (its YAML documents as JSON, every object in them in
 * document order) and errors that name file:line:column. The objects are
 * decoded by the watcher's decoders and modelled by from-state.c, exactly
 * as the daemons do.
 */
#ifndef KANNA_DUMP_DUMP_INTERNAL_H
#define KANNA_DUMP_DUMP_INTERNAL_H

#include <jansson.h>

#include "common/yaml-json.h"
#include "dump/dump.h"

struct dump_input {
	const char *file;
	struct yaml_docs *docs;
	json_t *objects; /* array: the input's objects (List items flattened), then generated ones */
	json_t *origins; /* array: per object, what its errors point at (a generated Pod's workload) */
	json_t *copies;  /* array: per object, null or the names of replicas identical to it */
	size_t n_given;  /* objects[0 .. n_given) are the input's own */
	const struct dump_options *opts;
	char *err;
	size_t err_size;
};

/*
 * Writes "file:line:column: message" into in->err, the position being at's
 * if the input has one, else fallback's (a generated Pod's workload), and
 * returns -EINVAL. Keeps the first error.
 */
int dump_error(struct dump_input *in, const json_t *at, const json_t *fallback,
	       const char *fmt, ...)
	_printf_(4, 5);
/* Appends a generated object (reference stolen) whose errors point at origin. */
int dump_append(struct dump_input *in, json_t *obj, const json_t *origin);
/* Object i (a generated Pod) stands for one more replica named name too:
 * the replicas of a Deployment differ only in name, so it is decoded once. */
int dump_add_copy(struct dump_input *in, size_t i, const char *name);
/* kind and metadata.name/namespace of an object (NULL when absent). */
const char *dump_kind(const json_t *obj);
const char *dump_name(const json_t *obj);
const char *dump_namespace(const json_t *obj);

/* workloads.c: what the API server and controllers would have
 * done to a dump — namespace "default", the default StorageClass on claims
 * without one, Deployments/ReplicaSets/StatefulSets expanded into the pods
 * (and StatefulSet claims) they still lack — appended to in->objects. */
int dump_admit(struct dump_input *in);
int dump_expand_workloads(struct dump_input *in);

/* catalog.c: from_state_options.fill_catalog for a dump (the
 * input's kanna.dev/v1alpha1 InstanceTypes, Karpenter's fake catalog, or
 * the shipped one in the region and zones the input names). userdata: the
 * struct dump_input. */
int dump_fill_catalog(struct catalog *cat, void *userdata, char *err, size_t errlen);

#endif
