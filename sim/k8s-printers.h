/*
 * The server-side printers of kanna-sim's built-in kinds (k8s-printers.c):
 * the columns kube-apiserver's printers (pkg/printers/internalversion)
 * declare for a kind and the cells of one object, as `kubectl get` and
 * `kubectl get -o wide` show them. k8s-table.c wraps them in a Table.
 */
#ifndef KANNA_SIM_K8S_PRINTERS_H
#define KANNA_SIM_K8S_PRINTERS_H

#include <jansson.h>
#include <stddef.h>

#include "sim/k8s-resource.h"

struct k8s_column {
	const char *name, *type; /* type: "string", "integer", "date" */
	int priority;            /* 1: only with -o wide */
};

struct k8s_printer {
	const char *group, *kind;
	const struct k8s_column *columns;
	size_t n_columns;
	/* Appends one cell per column to cells, in column order. */
	void (*cells)(const json_t *obj, json_t *cells);
};

/* NULL when res has no built-in printer (custom resources, ...). */
const struct k8s_printer *k8s_printer_find(const struct k8s_resource *res);

/* kubectl's duration.HumanDuration of now - timestamp, "<unknown>" if unparsable. */
void k8s_human_age(const char *timestamp, char *buf, size_t len);

#endif
