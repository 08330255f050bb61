/*
 * NodePool disruption budgets and the cron schedules behind them (see
 * model/budget.h). Mirrors Karpenter v1 pkg/apis/v1/nodepool.go (Budget.
 * IsActive, GetAllowedDisruptionsByReason, intstr percentages rounded up)
 * and the budget part of the NodePool CRD, with robfig/cron v3's standard
 * parser for schedules; where those disagree with textbook cron (no 7 for
 * Sunday) robfig wins, since it is what Karpenter runs. Also kanna's
 * consolidation minimum-savings annotations (min_savings_parse), and which
 * budget binds, in words for Events (budget_binding_describe). Pure code: no
 * clock, no allocation, no logging; callers pass `now` and log the error.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/util.h"
#include "model/budget.h"
#include "proto/karpenter.h"

/* The largest min-savings amount read: more than any instance costs, so a
 * typo of many digits is reported rather than turning replaces off. */
#define MIN_SAVINGS_MAX_PER_HOUR 1000.0

#define SECONDS_PER_DAY 86400
#define SECONDS_PER_MINUTE 60
/* A cron number with more digits than this is out of range anyway; stop
 * accumulating before it can overflow. */
#define CRON_MAX_DIGITS 6
/* Largest "nodes" count: Karpenter reads it with strconv.Atoi into a Go
 * int (64 bits); beyond that it is an error there too. */
#define BUDGET_MAX_COUNT ((uint64_t)INT64_MAX)
#define BUDGET_MAX_PERCENT 100

static const char *const budget_reasons[] = { "Underutilized", "Empty", "Drifted" };

_printf_(3, 4) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* ---- cron fields -------------------------------------------------------- */

struct cron_field {
	const char *name;
	unsigned min, max;
	const char *const *names; /* names[i] is value min + i; NULL: numbers only */
	unsigned n_names;
};

static const char *const month_names[] = { "jan", "feb", "mar", "apr", "may", "jun",
					   "jul", "aug", "sep", "oct", "nov", "dec" };
static const char *const dow_names[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat" };

/* robfig's bounds: day-of-week is 0-6 there, 7 is an error. */
static const struct cron_field cron_fields[] = {
	{ "minute", 0, 59, NULL, 0 },
	{ "hour", 0, 23, NULL, 0 },
	{ "day-of-month", 1, 31, NULL, 0 },
	{ "month", 1, 12, month_names, ARRAY_SIZE(month_names) },
	{ "day-of-week", 0, 6, dow_names, ARRAY_SIZE(dow_names) },
};

/* A number or (month, weekday) a case-insensitive three-letter name. */
static int cron_value(const struct cron_field *f, const char *s, size_t len, unsigned *ret,
		      char *err, size_t errlen)
{
	unsigned v = 0;
	size_t digits = 0;

	for (unsigned i = 0; i < f->n_names; i++)
		if (len == 3 && strncasecmp(s, f->names[i], 3) == 0) {
			*ret = f->min + i;
			return 0;
		}
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return fail(err, errlen, "%s \"%.*s\" is not a number%s", f->name, (int)len, s,
				    f->names ? " or a name" : "");
		if (v || s[i] != '0')
			digits++;
		if (digits <= CRON_MAX_DIGITS)
			v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (!len)
		return fail(err, errlen, "%s has an empty value", f->name);
	if (digits > CRON_MAX_DIGITS)
		return fail(err, errlen, "%s %.*s out of range %u-%u", f->name, (int)len, s, f->min,
			    f->max);
	*ret = v;
	return 0;
}

/* One list item: "*", "?", "N", "N-M", each optionally "/step"; "N/step"
 * means N through the maximum (robfig). A star with a step above 1 is no
 * longer a star. */
static int cron_item(const struct cron_field *f, const char *s, size_t len, uint64_t *bits,
		     bool *star, char *err, size_t errlen)
{
	const char *slash = memchr(s, '/', len), *dash;
	size_t rlen = slash ? (size_t)(slash - s) : len;
	unsigned start, end, step = 1;
	bool is_star = false;
	int r;

	if (slash && memchr(slash + 1, '/', len - rlen - 1))
		return fail(err, errlen, "%s \"%.*s\" has too many slashes", f->name, (int)len, s);
	dash = memchr(s, '-', rlen);
	if (dash && memchr(dash + 1, '-', rlen - (size_t)(dash - s) - 1))
		return fail(err, errlen, "%s \"%.*s\" has too many hyphens", f->name, (int)len, s);
	if (rlen == 1 && (s[0] == '*' || s[0] == '?')) {
		start = f->min;
		end = f->max;
		is_star = true;
	} else if (dash) {
		if ((r = cron_value(f, s, (size_t)(dash - s), &start, err, errlen)) < 0 ||
		    (r = cron_value(f, dash + 1, rlen - (size_t)(dash - s) - 1, &end, err, errlen)) < 0)
			return r;
	} else {
		if ((r = cron_value(f, s, rlen, &start, err, errlen)) < 0)
			return r;
		end = slash ? f->max : start;
	}
	if (slash) {
		const struct cron_field step_field = { "step", 1, 999999, NULL, 0 };
		char inner[128];

		if (cron_value(&step_field, slash + 1, len - rlen - 1, &step, inner, sizeof(inner)) < 0)
			return fail(err, errlen, "%s %s", f->name, inner);
		if (step == 0)
			return fail(err, errlen, "%s step 0 in \"%.*s\" must be positive", f->name,
				    (int)len, s);
		if (step > 1)
			is_star = false;
	}
	if (start < f->min || start > f->max)
		return fail(err, errlen, "%s %u out of range %u-%u", f->name, start, f->min, f->max);
	if (end < f->min || end > f->max)
		return fail(err, errlen, "%s %u out of range %u-%u", f->name, end, f->min, f->max);
	if (start > end)
		return fail(err, errlen, "%s range %u-%u is backwards", f->name, start, end);
	for (unsigned v = start; v <= end; v += step)
		*bits |= UINT64_C(1) << v;
	*star = *star || is_star;
	return 0;
}

/* A comma list; empty items are skipped as robfig's FieldsFunc does. */
static int cron_list(const struct cron_field *f, const char *s, size_t len, uint64_t *bits,
		     bool *star, char *err, size_t errlen)
{
	size_t i = 0;
	int r;

	*bits = 0;
	*star = false;
	while (i < len) {
		const char *comma = memchr(s + i, ',', len - i);
		size_t n = comma ? (size_t)(comma - (s + i)) : len - i;

		if (n && (r = cron_item(f, s + i, n, bits, star, err, errlen)) < 0)
			return r;
		i += n + 1;
	}
	if (!*bits)
		return fail(err, errlen, "%s \"%.*s\" has no values", f->name, (int)len, s);
	return 0;
}

/* The descriptors of robfig's standard parser that Karpenter's CRD
 * pattern admits (not @every), each as its 5-field equivalent. */
static const struct {
	const char *name, *spec;
} cron_descriptors[] = {
	{ "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" }, { "@daily", "0 0 * * *" },    { "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

int cron_parse(const char *expr, struct cron_schedule *ret, char *err, size_t errlen)
{
	const char *field[ARRAY_SIZE(cron_fields)];
	size_t flen[ARRAY_SIZE(cron_fields)], n = 0, len;
	uint64_t bits[ARRAY_SIZE(cron_fields)];
	bool star[ARRAY_SIZE(cron_fields)];
	const char *p;
	int r;

	assert(ret);
	if (!expr)
		return fail(err, errlen, "no schedule");
	while (isspace((unsigned char)*expr))
		expr++;
	len = strlen(expr);
	while (len && isspace((unsigned char)expr[len - 1]))
		len--;
	if (expr[0] == '@') {
		for (size_t i = 0; i < ARRAY_SIZE(cron_descriptors); i++)
			if (strlen(cron_descriptors[i].name) == len &&
			    strncmp(expr, cron_descriptors[i].name, len) == 0)
				return cron_parse(cron_descriptors[i].spec, ret, err, errlen);
		return fail(err, errlen, "unknown descriptor \"%.*s\" (expected @yearly, @annually, "
			    "@monthly, @weekly, @daily, @midnight or @hourly)", (int)len, expr);
	}
	for (p = expr; p < expr + len;) {
		const char *start;

		while (isspace((unsigned char)*p))
			p++;
		start = p;
		while (p < expr + len && !isspace((unsigned char)*p))
			p++;
		if (n < ARRAY_SIZE(cron_fields)) {
			field[n] = start;
			flen[n] = (size_t)(p - start);
		}
		n++;
	}
	if (n != ARRAY_SIZE(cron_fields))
		return fail(err, errlen, "expected exactly 5 fields (minute hour day-of-month month "
			    "day-of-week), found %zu", n);
	for (size_t i = 0; i < n; i++)
		if ((r = cron_list(&cron_fields[i], field[i], flen[i], &bits[i], &star[i], err,
				   errlen)) < 0)
			return r;
	*ret = (struct cron_schedule){
		.minutes = bits[0],
		.hours = (uint32_t)bits[1],
		.dom = (uint32_t)bits[2],
		.months = (uint16_t)bits[3],
		.dow = (uint8_t)bits[4],
		.dom_star = star[2],
		.dow_star = star[4],
	};
	return 0;
}

/* ---- calendar ----------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date, and back (Howard
 * Hinnant's algorithms): no libc time zone state, any year. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* 1970-01-01 was a Thursday (4). */
static unsigned weekday(int64_t day)
{
	return (unsigned)((day % 7 + 7 + 4) % 7);
}

/* robfig's dayMatches: a star in either day field makes both must match,
 * otherwise either may (Vixie cron's OR rule). */
static bool day_matches(const struct cron_schedule *c, unsigned dom, unsigned dow)
{
	bool dom_ok = c->dom & (UINT32_C(1) << dom), dow_ok = c->dow & (1u << dow);

	if (c->dom_star || c->dow_star)
		return dom_ok && dow_ok;
	return dom_ok || dow_ok;
}

/* The highest set bit of bits at or below n, or -1. */
static int highest_at_or_below(uint64_t bits, unsigned n)
{
	for (int i = (int)n; i >= 0; i--)
		if (bits & (UINT64_C(1) << i))
			return i;
	return -1;
}

int cron_prev(const struct cron_schedule *c, int64_t now, int64_t *ret)
{
	const int64_t lookback = (int64_t)CRON_LOOKBACK_DAYS * SECONDS_PER_DAY;
	int64_t floor_t = now > INT64_MIN + lookback ? now - lookback : INT64_MIN;
	int64_t day = floor_div(now, SECONDS_PER_DAY), y;
	unsigned minute_of_day = (unsigned)((now - day * SECONDS_PER_DAY) / SECONDS_PER_MINUTE);
	int hour = (int)(minute_of_day / 60), minute = (int)(minute_of_day % 60);
	unsigned m, d;

	assert(c && ret);
	/* Each pass moves back at least to the end of the previous day, or
	 * returns; months that do not match are skipped whole. */
	while (day >= floor_div(floor_t, SECONDS_PER_DAY)) {
		civil_from_days(day, &y, &m, &d);
		if (!(c->months & (1u << m))) {
			day = days_from_civil(y, m, 1) - 1;
			hour = 23, minute = 59;
			continue;
		}
		if (day_matches(c, d, weekday(day))) {
			while (hour >= 0) {
				int h = highest_at_or_below(c->hours, (unsigned)hour), mi;

				if (h < 0)
					break;
				if (h < hour)
					minute = 59;
				hour = h;
				mi = highest_at_or_below(c->minutes, (unsigned)minute);
				if (mi >= 0) {
					int64_t t = day * SECONDS_PER_DAY + hour * 3600 + mi * SECONDS_PER_MINUTE;

					if (t < floor_t)
						return -ENOENT;
					*ret = t;
					return 0;
				}
				hour--, minute = 59;
			}
		}
		day--;
		hour = 23, minute = 59;
	}
	return -ENOENT;
}

/* ---- budgets ------------------------------------------------------------ */

/* "N" or "P%" as the CRD pattern ^((100|[0-9]{1,2})%|[0-9]+)$ admits. */
static int parse_nodes(const char *s, uint64_t *value, bool *percent, char *err, size_t errlen)
{
	size_t len = s ? strlen(s) : 0, digits;
	uint64_t v = 0;

	if (!len)
		return fail(err, errlen, "is required");
	*percent = s[len - 1] == '%';
	digits = len - *percent;
	for (size_t i = 0; i < digits; i++) {
		if (!isdigit((unsigned char)s[i]))
			return fail(err, errlen, "\"%s\" is neither a count nor a percentage", s);
		if (v > (BUDGET_MAX_COUNT - (uint64_t)(s[i] - '0')) / 10)
			return fail(err, errlen, "\"%s\" is too large a count", s);
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!digits)
		return fail(err, errlen, "\"%s\" is neither a count nor a percentage", s);
	if (*percent && (v > BUDGET_MAX_PERCENT || (digits > 2 && v != BUDGET_MAX_PERCENT) ||
			 (digits > 3)))
		return fail(err, errlen, "\"%s\" is not a percentage from 0%% to 100%%", s);
	*value = v;
	return 0;
}

static bool is_budget_reason(const char *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(budget_reasons); i++)
		if (streq(s, budget_reasons[i]))
			return true;
	return false;
}

/* budget_validate, and the parsed schedule for those that go on. */
static int check_budget(const struct proto_budget *b, uint32_t index, struct cron_schedule *cron,
			uint64_t *nodes, bool *percent, char *err, size_t errlen)
{
	char inner[256];

	if (parse_nodes(b->nodes, nodes, percent, inner, sizeof(inner)) < 0)
		return fail(err, errlen, "spec.disruption.budgets[%u].nodes: %s", index, inner);
	if (b->duration_s < 0)
		return fail(err, errlen, "spec.disruption.budgets[%u].duration: %llds is negative",
			    index, (long long)b->duration_s);
	/* The CRD takes only h and m (cron has no seconds). */
	if (b->duration_s % SECONDS_PER_MINUTE)
		return fail(err, errlen, "spec.disruption.budgets[%u].duration: %llds is not a whole "
			    "number of minutes", index, (long long)b->duration_s);
	/* The CRD's rule has(schedule) == has(duration); a duration of 0
	 * is "not set" on the wire. */
	if (b->schedule && !b->duration_s)
		return fail(err, errlen, "spec.disruption.budgets[%u].duration: required when "
			    "schedule is set", index);
	if (!b->schedule && b->duration_s)
		return fail(err, errlen, "spec.disruption.budgets[%u].schedule: required when "
			    "duration is set", index);
	if (b->schedule && cron_parse(b->schedule, cron, inner, sizeof(inner)) < 0)
		return fail(err, errlen, "spec.disruption.budgets[%u].schedule: \"%s\": %s", index,
			    b->schedule, inner);
	for (uint32_t i = 0; i < b->n_reasons; i++) {
		const char *reason = b->reasons[i] ? b->reasons[i] : "";

		if (!is_budget_reason(reason))
			return fail(err, errlen, "spec.disruption.budgets[%u].reasons[%u]: \"%s\" is "
				    "not Underutilized, Empty or Drifted", index, i, reason);
		for (uint32_t j = 0; j < i; j++)
			if (streq(reason, b->reasons[j]))
				return fail(err, errlen, "spec.disruption.budgets[%u].reasons[%u]: "
					    "\"%s\" is listed twice", index, i, reason);
	}
	return 0;
}

int budget_validate(const struct proto_budget *b, uint32_t index, char *err, size_t errlen)
{
	struct cron_schedule cron;
	uint64_t nodes;
	bool percent;

	assert(b);
	return check_budget(b, index, &cron, &nodes, &percent, err, errlen);
}

/* IsActive of a checked budget. */
static bool active_at(const struct proto_budget *b, const struct cron_schedule *cron, int64_t now)
{
	int64_t fire;

	if (!b->schedule)
		return true;
	if (cron_prev(cron, now, &fire) < 0)
		return true; /* never fires: robfig's zero time, a hit for IsActive */
	return now - fire < b->duration_s;
}

int budget_is_active(const struct proto_budget *b, int64_t now, bool *ret, char *err, size_t errlen)
{
	struct cron_schedule cron = { 0 };
	uint64_t nodes;
	bool percent;
	int r;

	assert(b && ret);
	*ret = false;
	if ((r = check_budget(b, 0, &cron, &nodes, &percent, err, errlen)) < 0)
		return r;
	*ret = active_at(b, &cron, now);
	return 0;
}

static bool applies_to(const struct proto_budget *b, const char *reason)
{
	if (!b->n_reasons)
		return true;
	for (uint32_t i = 0; i < b->n_reasons; i++)
		if (streq_ptr(b->reasons[i], reason))
			return true;
	return false;
}

int budget_binding_find(const struct proto_budget *budgets, uint32_t n_budgets, const char *reason,
			int64_t now, uint32_t total_nodes, struct budget_binding *ret, char *err,
			size_t errlen)
{
	char default_nodes[] = BUDGET_DEFAULT_NODES;
	const struct proto_budget fallback = { .nodes = default_nodes };
	const struct proto_budget *list = n_budgets ? budgets : &fallback;
	uint32_t n = n_budgets ? n_budgets : 1;
	int r;

	assert(ret && reason && (budgets || !n_budgets));
	*ret = (struct budget_binding){ .index = BUDGET_BINDING_NONE };
	/* Karpenter checks every budget, not only this reason's: one broken
	 * budget blocks every reason (MustGetAllowedDisruptions returns 0). */
	for (uint32_t i = 0; i < n; i++) {
		const struct proto_budget *b = &list[i];
		struct cron_schedule cron = { 0 };
		uint64_t nodes;
		bool percent;
		int64_t fire;

		if ((r = check_budget(b, i, &cron, &nodes, &percent, err, errlen)) < 0)
			return r;
		if (!applies_to(b, reason) || !active_at(b, &cron, now))
			continue;
		/* intstr.GetScaledValueFromIntOrPercent(roundUp=true): 5% of 10
		 * nodes is 1, not 0, as Kubernetes does for PDB maxUnavailable. */
		if (percent)
			nodes = (nodes * total_nodes + BUDGET_MAX_PERCENT - 1) / BUDGET_MAX_PERCENT;
		/* The fewest nodes wins (lo.Min); on a tie the first listed. */
		if (ret->index != BUDGET_BINDING_NONE && nodes >= ret->nodes)
			continue;
		*ret = (struct budget_binding){ .index = n_budgets ? (int32_t)i : BUDGET_BINDING_DEFAULT,
						.nodes = nodes };
		if (b->schedule && cron_prev(&cron, now, &fire) >= 0) {
			ret->window_start = fire;
			ret->window_end = fire + b->duration_s;
		}
	}
	return 0;
}

int budget_allowed_disruptions(const struct proto_budget *budgets, uint32_t n_budgets,
			       const char *reason, int64_t now, uint32_t total_nodes,
			       uint32_t disrupting, uint32_t *ret, char *err, size_t errlen)
{
	struct budget_binding b;
	int r;

	assert(ret);
	*ret = 0;
	if ((r = budget_binding_find(budgets, n_budgets, reason, now, total_nodes, &b, err,
				     errlen)) < 0)
		return r;
	if (b.index == BUDGET_BINDING_NONE) /* no active budget: unlimited */
		*ret = total_nodes;
	else if (b.nodes > disrupting)
		*ret = b.nodes - disrupting > UINT32_MAX ? UINT32_MAX : (uint32_t)(b.nodes - disrupting);
	return 0;
}

/* A budget's duration as written in a NodePool (whole minutes): 1h, 90m → 1h30m. */
static void format_duration(int64_t s, char *buf, size_t len)
{
	int64_t h = s / 3600, m = s % 3600 / SECONDS_PER_MINUTE;

	if (h && m)
		snprintf(buf, len, "%lldh%lldm", (long long)h, (long long)m);
	else if (h)
		snprintf(buf, len, "%lldh", (long long)h);
	else
		snprintf(buf, len, "%lldm", (long long)m);
}

static void format_utc(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "@%lld", (long long)t);
}

void budget_binding_describe(const struct proto_budget *budgets, const struct budget_binding *b,
			     uint32_t total_nodes, char *buf, size_t len)
{
	const struct proto_budget *x = b->index >= 0 ? &budgets[b->index] : NULL;
	char dur[32], from[32], to[32];
	int at;

	if (b->index == BUDGET_BINDING_NONE) {
		snprintf(buf, len, "no active budget (unlimited)");
		return;
	}
	if (!x) {
		snprintf(buf, len, "the default budget (nodes \"%s\") allows %llu of %u node(s)",
			 BUDGET_DEFAULT_NODES, (unsigned long long)b->nodes, total_nodes);
		return;
	}
	at = snprintf(buf, len, "budgets[%d] (nodes \"%s\"", b->index, x->nodes);
	for (uint32_t i = 0; i < x->n_reasons && at >= 0 && (size_t)at < len; i++)
		at += snprintf(buf + at, len - at, "%s%s", i ? ", " : ", reasons [",
			       x->reasons[i] ?: "");
	if (x->n_reasons && at >= 0 && (size_t)at < len)
		at += snprintf(buf + at, len - at, "]");
	if (x->schedule && at >= 0 && (size_t)at < len) {
		format_duration(x->duration_s, dur, sizeof(dur));
		at += snprintf(buf + at, len - at, ", schedule \"%s\", duration %s", x->schedule, dur);
		if (b->window_end > b->window_start && (size_t)at < len) {
			format_utc(b->window_start, from, sizeof(from));
			format_utc(b->window_end, to, sizeof(to));
			at += snprintf(buf + at, len - at, ", window %s to %s", from, to);
		}
	}
	if (at >= 0 && (size_t)at < len)
		snprintf(buf + at, len - at, ") allows %llu of %u node(s)",
			 (unsigned long long)b->nodes, total_nodes);
}

/* One min-savings annotation: a finite number in [0, max]. */
static int min_savings_one(const char *v, const char *key, double max, double *ret, char *err,
			   size_t errlen)
{
	char *end;
	double x;

	*ret = 0;
	if (!v)
		return 0;
	errno = 0;
	x = strtod(v, &end);
	if (end == v || *end || errno || !(x >= 0 && x <= max)) {
		snprintf(err, errlen, "metadata.annotations.%s: \"%s\" is not a number between 0 "
			 "and %g", key, v, max);
		return -EINVAL;
	}
	*ret = x;
	return 0;
}

int min_savings_parse(const struct proto_nodepool *np, struct min_savings *ret, char *err,
		      size_t errlen)
{
	int a = min_savings_one(np->min_savings_per_hour, KANNA_MIN_SAVINGS_PER_HOUR_ANNOTATION,
				MIN_SAVINGS_MAX_PER_HOUR, &ret->per_hour, err, errlen);
	int b = min_savings_one(np->min_savings_percent, KANNA_MIN_SAVINGS_PERCENT_ANNOTATION,
				100, &ret->percent, a < 0 ? (char[1]){ 0 } : err, a < 0 ? 1 : errlen);

	return a < 0 ? a : b;
}
