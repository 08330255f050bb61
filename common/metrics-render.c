/*
 * The Prometheus text exposition format 0.0.4 for common/metrics.h:
 * # HELP / # TYPE lines, label escaping, cumulative histogram buckets with
 * le="+Inf", _sum and _count, values printed as Prometheus parses them.
 * Called from the health server's HTTP thread; holds the registry's mutex
 * only while writing into an in-memory stream. Cleanup style: none needed
 * (one exit path).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/metrics-internal.h"
#include "common/metrics.h"
#include "common/util.h"

/* Integral values below this print as integers; beyond it a double no longer
 * holds every integer, and the shortest %g form is clearer. */
#define METRICS_INTEGER_PRINT_LIMIT 1e15

void metrics_format_value(FILE *f, double value)
{
	char buf[64];

	if (isnan(value)) {
		fputs("NaN", f);
		return;
	}
	if (isinf(value)) {
		fputs(value > 0 ? "+Inf" : "-Inf", f);
		return;
	}
	if (value == 0) {
		fputc('0', f); /* also for -0 */
		return;
	}
	if (value == trunc(value) && fabs(value) < METRICS_INTEGER_PRINT_LIMIT) {
		fprintf(f, "%.0f", value);
		return;
	}
	/* The shortest precision that reads back to the same double. */
	for (int precision = 1; precision <= 17; precision++) {
		snprintf(buf, sizeof(buf), "%.*g", precision, value);
		if (strtod(buf, NULL) == value)
			break;
	}
	fputs(buf, f);
}

/* # HELP text escapes backslash and newline; label values also '"'. */
static void write_escaped(FILE *out, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (quote && *s == '"')
			fputs("\\\"", out);
		else
			fputc(*s, out);
	}
}

/* name{a="x",b="y"[,le="bound"]} — braces only when there is a label. */
static void write_sample_name(FILE *out, const struct metrics_family *f,
			      const struct metrics_series *s, const char *suffix,
			      const double *le)
{
	fputs(f->name, out);
	fputs(suffix, out);
	if (f->n_labels == 0 && !le)
		return;
	fputc('{', out);
	for (size_t i = 0; i < f->n_labels; i++) {
		fprintf(out, "%s%s=\"", i ? "," : "", f->label_names[i]);
		write_escaped(out, s->label_values[i], true);
		fputc('"', out);
	}
	if (le) {
		fprintf(out, "%sle=\"", f->n_labels ? "," : "");
		metrics_format_value(out, *le);
		fputc('"', out);
	}
	fputc('}', out);
}

static void write_sample(FILE *out, const struct metrics_family *f,
			 const struct metrics_series *s, const char *suffix,
			 const double *le, double value)
{
	write_sample_name(out, f, s, suffix, le);
	fputc(' ', out);
	metrics_format_value(out, value);
	fputc('\n', out);
}

static void write_histogram_series(FILE *out, const struct metrics_family *f,
				   const struct metrics_series *s)
{
	const double inf = INFINITY;
	uint64_t cumulative = 0;

	for (size_t i = 0; i < f->n_bounds; i++) {
		cumulative += s->buckets[i];
		write_sample(out, f, s, "_bucket", &f->bounds[i], (double)cumulative);
	}
	write_sample(out, f, s, "_bucket", &inf, (double)s->count);
	write_sample(out, f, s, "_sum", NULL, s->sum);
	write_sample(out, f, s, "_count", NULL, (double)s->count);
}

static void write_family(FILE *out, const struct metrics_family *f)
{
	static const char *const type_names[] = {
		[METRICS_COUNTER] = "counter",
		[METRICS_GAUGE] = "gauge",
		[METRICS_HISTOGRAM] = "histogram",
	};

	if (f->n_series == 0)
		return; /* as client_golang: a labelled family with no series yet */
	fprintf(out, "# HELP %s ", f->name);
	write_escaped(out, f->help, false);
	fprintf(out, "\n# TYPE %s %s\n", f->name, type_names[f->kind]);
	for (size_t i = 0; i < f->n_series; i++) {
		if (f->kind == METRICS_HISTOGRAM)
			write_histogram_series(out, f, f->series[i]);
		else
			write_sample(out, f, f->series[i], "", NULL, f->series[i]->value);
	}
}

int metrics_registry_render(struct metrics_registry *reg, char **ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;

	if (!reg || !ret)
		return -EINVAL;
	FILE *out = open_memstream(&buf, &len);
	if (!out)
		return -errno;
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->n_families; i++)
		write_family(out, reg->families[i]);
	pthread_mutex_unlock(&reg->lock);
	bool failed = ferror(out);
	if (fclose(out) != 0 || failed) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}
