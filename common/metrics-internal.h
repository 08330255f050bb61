/*
 * The registry's data structures, shared by common/metrics.c (registration
 * and updates) and common/metrics-render.c (the exposition format). Only
 * those two files include this; everything else uses common/metrics.h.
 */
#ifndef KANNA_COMMON_METRICS_INTERNAL_H
#define KANNA_COMMON_METRICS_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/metrics.h"

enum metrics_kind {
	METRICS_COUNTER,
	METRICS_GAUGE,
	METRICS_HISTOGRAM,
};

struct metrics_series {
	char **label_values; /* family->n_labels strings */
	double value;        /* counter, gauge */
	double sum;          /* histogram */
	uint64_t count;      /* histogram observations */
	uint64_t *buckets;   /* histogram: observations per bucket, not cumulative */
};

struct metrics_family {
	struct metrics_registry *reg;
	enum metrics_kind kind;
	char *name;
	char *help;
	char *label_names[METRICS_MAX_LABELS];
	size_t n_labels;
	double *bounds; /* histogram bucket upper bounds, +Inf excluded */
	size_t n_bounds;
	struct metrics_series **series; /* sorted by label values */
	size_t n_series;
	size_t cap_series;
};

/* The public handle types: distinct so that the compiler catches a gauge
 * passed to a counter function. */
struct metrics_counter {
	struct metrics_family family;
};
struct metrics_gauge {
	struct metrics_family family;
};
struct metrics_histogram {
	struct metrics_family family;
};

struct metrics_registry {
	pthread_mutex_t lock;
	struct metrics_family **families; /* sorted by name */
	size_t n_families;
	size_t cap_families;
};

#endif
