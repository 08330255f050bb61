/*
 * A small Prometheus metrics registry: counters, gauges and histograms, each
 * a family with fixed label names and one series per tuple of label values.
 * Updated from a daemon's main thread, rendered from the health server's
 * HTTP thread (common/health.h): every operation takes the registry's mutex.
 *
 * Names follow Karpenter (`karpenter_nodeclaims_created_total`, label
 * `nodepool`) where Karpenter has the metric, `kanna_` for ours.
 *
 *   struct metrics_counter *c;
 *   r = metrics_counter_new(reg, &c, "karpenter_nodeclaims_created_total",
 *                           "Number of nodeclaims created.", "nodepool", NULL);
 *   metrics_counter_add(c, 1, "default", NULL);
 *
 * Label names and label values are NULL-terminated argument lists; a value
 * list must have exactly as many entries as the family has label names.
 */
#ifndef KANNA_COMMON_METRICS_H
#define KANNA_COMMON_METRICS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Labels a family may have; more is a design smell (cardinality). */
#define METRICS_MAX_LABELS 8
/* Series a family may hold: a guard against unbounded label values (e.g. a
 * pod name by mistake); beyond it an update fails with -E2BIG. */
#define METRICS_MAX_SERIES 10000
/* Buckets a histogram may have (Karpenter's duration set has 40). */
#define METRICS_MAX_BUCKETS 64

/* The Content-Type of metrics_registry_render()'s output. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Karpenter's duration buckets in seconds (controller-runtime's thresholds
 * plus values up to 60 s for long solves and drains). */
extern const double metrics_duration_buckets[];
extern const size_t metrics_duration_buckets_len;

struct metrics_registry;
struct metrics_counter;
struct metrics_gauge;
struct metrics_histogram;

int metrics_registry_new(struct metrics_registry **ret);
/* Frees the registry and every family it holds. NULL is allowed. */
void metrics_registry_free(struct metrics_registry *reg);

/*
 * Constructors register a family under a unique name (-EEXIST otherwise);
 * the registry owns it. Names must match [a-zA-Z_:][a-zA-Z0-9_:]*, label
 * names [a-zA-Z_][a-zA-Z0-9_]* without a leading "__" (-EINVAL otherwise);
 * histograms may not use the label "le", and their bucket upper bounds must
 * be finite and strictly increasing (+Inf is always added).
 */
int metrics_counter_new(struct metrics_registry *reg, struct metrics_counter **ret,
			const char *name, const char *help, ...)
	__attribute__((sentinel));
int metrics_gauge_new(struct metrics_registry *reg, struct metrics_gauge **ret,
		      const char *name, const char *help, ...)
	__attribute__((sentinel));
int metrics_histogram_new(struct metrics_registry *reg, struct metrics_histogram **ret,
			  const char *name, const char *help, const double *buckets,
			  size_t n_buckets, ...) __attribute__((sentinel));

/*
 * Updates: label values follow the value, NULL-terminated. Return 0, or
 * -EINVAL (wrong number of label values, negative counter increment, NaN),
 * -E2BIG (METRICS_MAX_SERIES reached), -ENOMEM.
 */
int metrics_counter_add(struct metrics_counter *c, double value, ...)
	__attribute__((sentinel));
int metrics_gauge_set(struct metrics_gauge *g, double value, ...)
	__attribute__((sentinel));
int metrics_gauge_add(struct metrics_gauge *g, double value, ...)
	__attribute__((sentinel));
int metrics_histogram_observe(struct metrics_histogram *h, double value, ...)
	__attribute__((sentinel));

/* The same with the label values as an array (n must equal the family's
 * label count), for callers that build label values at run time. */
int metrics_counter_addv(struct metrics_counter *c, double value,
			 const char *const *label_values, size_t n);
int metrics_gauge_setv(struct metrics_gauge *g, double value,
		       const char *const *label_values, size_t n);
int metrics_gauge_addv(struct metrics_gauge *g, double value,
		       const char *const *label_values, size_t n);
int metrics_histogram_observev(struct metrics_histogram *h, double value,
			       const char *const *label_values, size_t n);

/* Forget one series of a gauge (e.g. a NodePool that was deleted). Returns
 * 0 when it was removed, -ENOENT when there was none. */
int metrics_gauge_remove(struct metrics_gauge *g, ...) __attribute__((sentinel));

/*
 * Renders every family in the Prometheus text exposition format 0.0.4:
 * families sorted by name, series by label values, each family with # HELP
 * and # TYPE lines. Integral values print without a fraction ("3"), others
 * as the shortest text that reads back to the same double, and +Inf, -Inf,
 * NaN as Prometheus spells them. On success *ret is a NUL-terminated string
 * the caller frees and *ret_len its length.
 */
int metrics_registry_render(struct metrics_registry *reg, char **ret, size_t *ret_len);

/* Appends a number as the exposition format writes it (exposed for tests). */
void metrics_format_value(FILE *f, double value);

#endif
