/*
 * The metrics registry behind common/metrics.h: registration, validation
 * and updates. Families are sorted by name, each holding its series in an
 * array sorted by label values, so that common/metrics-render.c writes
 * stable output without sorting at scrape time. One mutex per registry
 * serialises the daemon's updates against the HTTP thread's rendering;
 * every critical section is short and does no I/O. Cleanup style:
 * _cleanup_ attributes.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/metrics-internal.h"
#include "common/metrics.h"
#include "common/util.h"

const double metrics_duration_buckets[] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35,
	0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5,
	1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7,
	8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
};
const size_t metrics_duration_buckets_len = ARRAY_SIZE(metrics_duration_buckets);

static void series_free(struct metrics_series *s, size_t n_labels)
{
	if (!s)
		return;
	if (s->label_values)
		for (size_t i = 0; i < n_labels; i++)
			free(s->label_values[i]);
	free(s->label_values);
	free(s->buckets);
	free(s);
}

static void family_free(struct metrics_family *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_series; i++)
		series_free(f->series[i], f->n_labels);
	free(f->series);
	for (size_t i = 0; i < f->n_labels; i++)
		free(f->label_names[i]);
	free(f->bounds);
	free(f->name);
	free(f->help);
	free(f);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct metrics_family *, family_free)

int metrics_registry_new(struct metrics_registry **ret)
{
	struct metrics_registry *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return -ENOMEM;
	int r = pthread_mutex_init(&reg->lock, NULL);
	if (r != 0) {
		free(reg);
		return -r;
	}
	*ret = reg;
	return 0;
}

void metrics_registry_free(struct metrics_registry *reg)
{
	if (!reg)
		return;
	for (size_t i = 0; i < reg->n_families; i++)
		family_free(reg->families[i]);
	free(reg->families);
	pthread_mutex_destroy(&reg->lock);
	free(reg);
}

static bool name_is_valid(const char *s, bool colon_allowed)
{
	if (!s || !*s)
		return false;
	for (size_t i = 0; s[i]; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (colon_allowed && c == ':') || (i > 0 && c >= '0' && c <= '9');
		if (!ok)
			return false;
	}
	return true;
}

static bool label_name_is_valid(const char *s, enum metrics_kind kind)
{
	if (!name_is_valid(s, false) || strncmp(s, "__", 2) == 0)
		return false;
	return !(kind == METRICS_HISTOGRAM && streq(s, "le"));
}

/* Collects a NULL-terminated list of at most max strings; -EINVAL if longer. */
static int collect_strings(va_list ap, const char **out, size_t max, size_t *ret_n)
{
	size_t n = 0;
	for (const char *s; (s = va_arg(ap, const char *));) {
		if (n == max)
			return -EINVAL;
		out[n++] = s;
	}
	*ret_n = n;
	return 0;
}

static int series_compare(const struct metrics_series *s, const char *const *values, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int c = strcmp(s->label_values[i], values[i]);
		if (c != 0)
			return c;
	}
	return 0;
}

/* Binary search; returns true when found, *ret_index is the match or the
 * insertion point. Called with the registry locked. */
static bool series_find(const struct metrics_family *f, const char *const *values,
			size_t *ret_index)
{
	size_t lo = 0, hi = f->n_series;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = series_compare(f->series[mid], values, f->n_labels);
		if (c == 0) {
			*ret_index = mid;
			return true;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_index = lo;
	return false;
}

static int series_new(const struct metrics_family *f, const char *const *values,
		      struct metrics_series **ret)
{
	struct metrics_series *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	bool ok = (s->label_values = calloc(f->n_labels ? f->n_labels : 1, sizeof(char *)));
	for (size_t i = 0; ok && i < f->n_labels; i++)
		ok = (s->label_values[i] = strdup(values[i]));
	if (ok && f->kind == METRICS_HISTOGRAM)
		ok = (s->buckets = calloc(f->n_bounds ? f->n_bounds : 1, sizeof(uint64_t)));
	if (!ok) {
		series_free(s, f->n_labels);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

/* The series for these label values, created on first use. Called with the
 * registry locked. */
static int series_get(struct metrics_family *f, const char *const *values, size_t n,
		      struct metrics_series **ret)
{
	size_t at;
	int r;

	if (n != f->n_labels)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!values[i])
			return -EINVAL;
	if (series_find(f, values, &at)) {
		*ret = f->series[at];
		return 0;
	}
	if (f->n_series >= METRICS_MAX_SERIES)
		return -E2BIG;
	if (f->n_series == f->cap_series) {
		size_t cap = f->cap_series ? f->cap_series * 2 : 4;
		struct metrics_series **a = realloc(f->series, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		f->series = a;
		f->cap_series = cap;
	}
	struct metrics_series *s;
	r = series_new(f, values, &s);
	if (r < 0)
		return r;
	memmove(f->series + at + 1, f->series + at, (f->n_series - at) * sizeof(*f->series));
	f->series[at] = s;
	f->n_series++;
	*ret = s;
	return 0;
}

static int registry_insert_locked(struct metrics_registry *reg, struct metrics_family *f)
{
	size_t at = 0;

	while (at < reg->n_families && strcmp(reg->families[at]->name, f->name) < 0)
		at++;
	if (at < reg->n_families && streq(reg->families[at]->name, f->name))
		return -EEXIST;
	if (reg->n_families == reg->cap_families) {
		size_t cap = reg->cap_families ? reg->cap_families * 2 : 16;
		struct metrics_family **a = realloc(reg->families, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		reg->families = a;
		reg->cap_families = cap;
	}
	memmove(reg->families + at + 1, reg->families + at,
		(reg->n_families - at) * sizeof(*reg->families));
	reg->families[at] = f;
	reg->n_families++;
	f->reg = reg;
	return 0;
}

static int registry_insert(struct metrics_registry *reg, struct metrics_family *f)
{
	pthread_mutex_lock(&reg->lock);
	int r = registry_insert_locked(reg, f);
	pthread_mutex_unlock(&reg->lock);
	return r;
}

static int family_new(struct metrics_registry *reg, enum metrics_kind kind, size_t size,
		      const char *name, const char *help, const double *bounds,
		      size_t n_bounds, va_list ap, struct metrics_family **ret)
{
	_cleanup_(family_freep) struct metrics_family *f = NULL;
	const char *labels[METRICS_MAX_LABELS];
	size_t n_labels;
	int r;

	if (!reg || !ret || !name_is_valid(name, true) || !help)
		return -EINVAL;
	r = collect_strings(ap, labels, METRICS_MAX_LABELS, &n_labels);
	if (r < 0)
		return r;
	if (n_bounds > METRICS_MAX_BUCKETS || (n_bounds > 0 && !bounds))
		return -EINVAL;
	for (size_t i = 0; i < n_bounds; i++)
		if (!isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1]))
			return -EINVAL;

	f = calloc(1, size);
	if (!f)
		return -ENOMEM;
	f->kind = kind;
	f->name = strdup(name);
	f->help = strdup(help);
	if (!f->name || !f->help)
		return -ENOMEM;
	for (size_t i = 0; i < n_labels; i++) {
		if (!label_name_is_valid(labels[i], kind))
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (streq(labels[i], labels[j]))
				return -EINVAL;
		if (!(f->label_names[i] = strdup(labels[i])))
			return -ENOMEM;
		f->n_labels = i + 1;
	}
	if (n_bounds > 0) {
		f->bounds = malloc(n_bounds * sizeof(double));
		if (!f->bounds)
			return -ENOMEM;
		memcpy(f->bounds, bounds, n_bounds * sizeof(double));
		f->n_bounds = n_bounds;
	}
	/* A family without labels has exactly one series, present (at zero)
	 * from the start, as client_golang does for plain metrics. */
	if (n_labels == 0) {
		struct metrics_series *s;
		r = series_get(f, NULL, 0, &s);
		if (r < 0)
			return r;
	}
	r = registry_insert(reg, f);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(f);
	return 0;
}

int metrics_counter_new(struct metrics_registry *reg, struct metrics_counter **ret,
			const char *name, const char *help, ...)
{
	struct metrics_family *f;
	va_list ap;
	va_start(ap, help);
	int r = family_new(reg, METRICS_COUNTER, sizeof(struct metrics_counter), name, help,
			   NULL, 0, ap, &f);
	va_end(ap);
	if (r >= 0)
		*ret = (struct metrics_counter *)f;
	return r;
}

int metrics_gauge_new(struct metrics_registry *reg, struct metrics_gauge **ret,
		      const char *name, const char *help, ...)
{
	struct metrics_family *f;
	va_list ap;
	va_start(ap, help);
	int r = family_new(reg, METRICS_GAUGE, sizeof(struct metrics_gauge), name, help,
			   NULL, 0, ap, &f);
	va_end(ap);
	if (r >= 0)
		*ret = (struct metrics_gauge *)f;
	return r;
}

int metrics_histogram_new(struct metrics_registry *reg, struct metrics_histogram **ret,
			  const char *name, const char *help, const double *buckets,
			  size_t n_buckets, ...)
{
	struct metrics_family *f;
	va_list ap;
	va_start(ap, n_buckets);
	int r = family_new(reg, METRICS_HISTOGRAM, sizeof(struct metrics_histogram), name,
			   help, buckets, n_buckets, ap, &f);
	va_end(ap);
	if (r >= 0)
		*ret = (struct metrics_histogram *)f;
	return r;
}

enum update_op {
	UPDATE_ADD,
	UPDATE_SET,
	UPDATE_OBSERVE,
};

static int family_update_locked(struct metrics_family *f, enum update_op op, double value,
				const char *const *values, size_t n)
{
	struct metrics_series *s;
	int r = series_get(f, values, n, &s);
	if (r < 0)
		return r;
	switch (op) {
	case UPDATE_ADD:
		s->value += value;
		break;
	case UPDATE_SET:
		s->value = value;
		break;
	case UPDATE_OBSERVE: {
		size_t i = 0;
		while (i < f->n_bounds && value > f->bounds[i])
			i++;
		if (i < f->n_bounds)
			s->buckets[i]++;
		s->count++;
		s->sum += value;
		break;
	}
	}
	return 0;
}

static int family_update(struct metrics_family *f, enum update_op op, double value,
			 const char *const *values, size_t n)
{
	pthread_mutex_lock(&f->reg->lock);
	int r = family_update_locked(f, op, value, values, n);
	pthread_mutex_unlock(&f->reg->lock);
	return r;
}

int metrics_counter_addv(struct metrics_counter *c, double value,
			 const char *const *label_values, size_t n)
{
	if (!c || !(value >= 0))
		return -EINVAL;
	return family_update(&c->family, UPDATE_ADD, value, label_values, n);
}

int metrics_gauge_setv(struct metrics_gauge *g, double value,
		       const char *const *label_values, size_t n)
{
	if (!g)
		return -EINVAL;
	return family_update(&g->family, UPDATE_SET, value, label_values, n);
}

int metrics_gauge_addv(struct metrics_gauge *g, double value,
		       const char *const *label_values, size_t n)
{
	if (!g || isnan(value))
		return -EINVAL;
	return family_update(&g->family, UPDATE_ADD, value, label_values, n);
}

int metrics_histogram_observev(struct metrics_histogram *h, double value,
			       const char *const *label_values, size_t n)
{
	if (!h || isnan(value))
		return -EINVAL;
	return family_update(&h->family, UPDATE_OBSERVE, value, label_values, n);
}

/* The variadic forms: collect the values, then call the array form. */
#define VARIADIC_UPDATE(call, last)                                           \
	do {                                                                  \
		const char *values[METRICS_MAX_LABELS];                       \
		size_t n;                                                     \
		va_list ap;                                                   \
		va_start(ap, last);                                           \
		int r = collect_strings(ap, values, METRICS_MAX_LABELS, &n);  \
		va_end(ap);                                                   \
		if (r < 0)                                                    \
			return r;                                             \
		return call;                                                  \
	} while (0)

int metrics_counter_add(struct metrics_counter *c, double value, ...)
{
	VARIADIC_UPDATE(metrics_counter_addv(c, value, values, n), value);
}

int metrics_gauge_set(struct metrics_gauge *g, double value, ...)
{
	VARIADIC_UPDATE(metrics_gauge_setv(g, value, values, n), value);
}

int metrics_gauge_add(struct metrics_gauge *g, double value, ...)
{
	VARIADIC_UPDATE(metrics_gauge_addv(g, value, values, n), value);
}

int metrics_histogram_observe(struct metrics_histogram *h, double value, ...)
{
	VARIADIC_UPDATE(metrics_histogram_observev(h, value, values, n), value);
}

static int gauge_remove_locked(struct metrics_family *f, const char *const *values)
{
	size_t at;

	if (f->n_labels == 0 || !series_find(f, values, &at))
		return -ENOENT;
	series_free(f->series[at], f->n_labels);
	memmove(f->series + at, f->series + at + 1, (f->n_series - at - 1) * sizeof(*f->series));
	f->n_series--;
	return 0;
}

static int gauge_removev(struct metrics_gauge *g, const char *const *values, size_t n)
{
	if (n != g->family.n_labels)
		return -EINVAL;
	pthread_mutex_lock(&g->family.reg->lock);
	int r = gauge_remove_locked(&g->family, values);
	pthread_mutex_unlock(&g->family.reg->lock);
	return r;
}

int metrics_gauge_remove(struct metrics_gauge *g, ...)
{
	if (!g)
		return -EINVAL;
	VARIADIC_UPDATE(gauge_removev(g, values, n), g);
}
