/*
 * YAML documents as jansson values. Kubernetes objects arrive as YAML
 * (kubeconfig, `--simulate` input, `kubectl apply`) and as JSON (the API):
 * reading YAML into the same json_t lets one decoder serve both. Every node
 * keeps the line:column it came from so errors can point into the file.
 */
#ifndef KANNA_COMMON_YAML_JSON_H
#define KANNA_COMMON_YAML_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Bounds so hostile input (alias bombs, deep nesting) cannot exhaust memory. */
#define YAML_JSON_MAX_DEPTH 64
#define YAML_JSON_MAX_NODES (4u * 1024 * 1024)
#define YAML_JSON_MAX_DOCUMENTS 100000

struct yaml_mark {
	const json_t *node;
	unsigned line;   /* 1-based */
	unsigned column; /* 1-based */
};

struct yaml_docs {
	char *filename;
	json_t **docs; /* one per document of the stream, never NULL entries */
	size_t n_docs;
	struct yaml_mark *marks; /* sorted by node address once loaded */
	size_t n_marks, cap_marks;
};

/*
 * Parses a YAML stream. On failure returns -EINVAL (or -ENOMEM) and writes
 * "FILE:LINE:COLUMN: what is wrong" into err.
 */
int yaml_docs_load_buffer(const char *buf, size_t len, const char *filename,
			  struct yaml_docs **ret, char *err, size_t errlen);
int yaml_docs_load_file(const char *path, struct yaml_docs **ret, char *err,
			size_t errlen);
struct yaml_docs *yaml_docs_free(struct yaml_docs *docs);

/* Where a node of a loaded stream came from; false if unknown. */
bool yaml_docs_mark(const struct yaml_docs *docs, const json_t *node,
		    unsigned *line, unsigned *column);

#endif
