/*
 * One configuration value: text to typed value for each enum config_type,
 * bounds checks, Go-style durations ("10s", "1m30s", "720h", "Never"), and
 * back to text for --help, --check-config and reload messages. Called by
 * common/config.c and common/config-yaml.c; never reports errors itself, it
 * writes the reason ("expected ..., got '...'") for the caller to place.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/config-internal.h"

/* Nanoseconds per duration unit, Go's time.ParseDuration units. */
static const struct {
	const char *unit;
	uint64_t ns;
} duration_units[] = {
	{ "ns", 1 },
	{ "us", 1000 },
	{ "\xc2\xb5s", 1000 }, /* U+00B5 micro sign */
	{ "\xce\xbcs", 1000 }, /* U+03BC Greek mu */
	{ "ms", 1000000 },
	{ "s", UINT64_C(1000000000) },
	{ "m", UINT64_C(60000000000) },
	{ "h", UINT64_C(3600000000000) },
};
/* Fraction digits beyond this cannot change a nanosecond count. */
#define DURATION_FRACTION_DIGITS_MAX 18

static const char *duration_unit(const char **p, uint64_t *ret_ns)
{
	size_t best = 0;
	int found = -1;

	/* Longest match first: "ms" before "m". */
	for (size_t i = 0; i < ARRAY_SIZE(duration_units); i++) {
		size_t n = strlen(duration_units[i].unit);
		if (n > best && strncmp(*p, duration_units[i].unit, n) == 0) {
			best = n;
			found = (int)i;
		}
	}
	if (found < 0)
		return NULL;
	*ret_ns = duration_units[found].ns;
	*p += best;
	return duration_units[found].unit;
}

int config_parse_duration(const char *s, bool allow_never, uint64_t *ret_usec)
{
	uint64_t total_ns = 0;
	const char *p = s;

	if (allow_never && streq(s, "Never")) {
		*ret_usec = CONFIG_DURATION_NEVER;
		return 0;
	}
	if (streq(s, "0")) {
		*ret_usec = 0;
		return 0;
	}
	if (!*p)
		return -EINVAL;
	while (*p) {
		uint64_t whole = 0, unit_ns, frac = 0, scale = 1, frac_ns;
		bool digits = false;

		for (; isdigit((unsigned char)*p); p++, digits = true) {
			if (whole > (UINT64_MAX - 9) / 10)
				return -ERANGE;
			whole = whole * 10 + (uint64_t)(*p - '0');
		}
		if (*p == '.') {
			int n = 0;
			for (p++; isdigit((unsigned char)*p); p++, digits = true)
				if (n++ < DURATION_FRACTION_DIGITS_MAX) {
					scale *= 10;
					frac = frac * 10 + (uint64_t)(*p - '0');
				}
		}
		if (!digits || !duration_unit(&p, &unit_ns))
			return -EINVAL;
		if (whole > UINT64_MAX / unit_ns)
			return -ERANGE;
		/* Exact: frac < 10^18 and unit_ns < 2^42 fit 128 bits. */
		frac_ns = (uint64_t)((unsigned __int128)frac * unit_ns / scale);
		if (frac_ns > UINT64_MAX - total_ns)
			return -ERANGE;
		total_ns += frac_ns;
		if (whole * unit_ns > UINT64_MAX - total_ns)
			return -ERANGE;
		total_ns += whole * unit_ns;
	}
	*ret_usec = total_ns / 1000;
	return 0;
}

void config_format_duration(uint64_t usec, char *buf, size_t size)
{
	uint64_t h, m, s, frac;
	size_t n = 0;

	if (usec == CONFIG_DURATION_NEVER) {
		snprintf(buf, size, "Never");
		return;
	}
	if (usec == 0) {
		snprintf(buf, size, "0s");
		return;
	}
	if (usec < USEC_PER_SEC) {
		if (usec % USEC_PER_MSEC == 0)
			snprintf(buf, size, "%" PRIu64 "ms", usec / USEC_PER_MSEC);
		else
			snprintf(buf, size, "%" PRIu64 "us", usec);
		return;
	}
	h = usec / USEC_PER_HOUR;
	m = usec % USEC_PER_HOUR / USEC_PER_MINUTE;
	s = usec % USEC_PER_MINUTE / USEC_PER_SEC;
	frac = usec % USEC_PER_SEC;
	buf[0] = '\0';
	if (h)
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%" PRIu64 "h", h);
	if (m)
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%" PRIu64 "m", m);
	if (frac) {
		char digits[8];
		snprintf(digits, sizeof(digits), "%06" PRIu64, frac);
		for (size_t i = strlen(digits); i > 0 && digits[i - 1] == '0'; i--)
			digits[i - 1] = '\0';
		snprintf(buf + n, n < size ? size - n : 0, "%" PRIu64 ".%ss", s, digits);
	} else if (s) {
		snprintf(buf + n, n < size ? size - n : 0, "%" PRIu64 "s", s);
	}
}

void config_quote(const char *s, char *buf, size_t size)
{
	size_t n = 0, i;

	for (i = 0; s[i] && i < CONFIG_QUOTE_MAX && n + 1 < size; i++)
		buf[n++] = isprint((unsigned char)s[i]) ? s[i] : '?';
	if (s[i] && n + 4 < size) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
}

const char *config_option_metavar(const struct config_option *opt)
{
	if (opt->metavar)
		return opt->metavar;
	switch (opt->type) {
	case CONFIG_BOOL: return "BOOL";
	case CONFIG_INT: return "INT";
	case CONFIG_UINT: return "N";
	case CONFIG_DOUBLE: return "NUMBER";
	case CONFIG_DURATION: return "DURATION";
	case CONFIG_STRING: return "STRING";
	case CONFIG_ENUM: return "WORD";
	case CONFIG_STRING_LIST: return "LIST";
	}
	return "VALUE";
}

void config_option_expectation(const struct config_option *opt, char *buf, size_t size)
{
	size_t n;

	switch (opt->type) {
	case CONFIG_BOOL:
		snprintf(buf, size, "true or false");
		return;
	case CONFIG_INT:
		snprintf(buf, size, "an integer");
		return;
	case CONFIG_UINT:
		snprintf(buf, size, "a non-negative integer");
		return;
	case CONFIG_DOUBLE:
		snprintf(buf, size, "a number");
		return;
	case CONFIG_DURATION:
		snprintf(buf, size, "a duration like 1s%s", opt->flags & CONFIG_NEVER ? " or Never" : "");
		return;
	case CONFIG_STRING:
		snprintf(buf, size, opt->flags & CONFIG_ABSOLUTE_PATH ? "an absolute path" : "a string");
		return;
	case CONFIG_STRING_LIST:
		snprintf(buf, size, "a list of strings");
		return;
	case CONFIG_ENUM:
		n = (size_t)snprintf(buf, size, "one of ");
		for (const struct config_enum_value *v = opt->values; v && v->name && n < size; v++)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", v == opt->values ? "" : ", ", v->name);
		return;
	}
	snprintf(buf, size, "a value");
}

static int config_why(const struct config_option *opt, const char *text, char *why, size_t why_size)
{
	char expect[256], quoted[CONFIG_QUOTE_MAX + 8];

	config_option_expectation(opt, expect, sizeof(expect));
	config_quote(text, quoted, sizeof(quoted));
	snprintf(why, why_size, "expected %s, got '%s'", expect, quoted);
	return -EINVAL;
}

static bool config_bounded(const struct config_option *opt)
{
	return opt->min != 0 || opt->max != 0;
}

static int config_out_of_range(const struct config_option *opt, const char *text,
			       char *why, size_t why_size)
{
	char lo[64], hi[64], quoted[CONFIG_QUOTE_MAX + 8];

	config_quote(text, quoted, sizeof(quoted));
	if (opt->type == CONFIG_DURATION) {
		config_format_duration((uint64_t)opt->min, lo, sizeof(lo));
		config_format_duration((uint64_t)opt->max, hi, sizeof(hi));
	} else if (opt->type == CONFIG_DOUBLE) {
		snprintf(lo, sizeof(lo), "%g", opt->min_double);
		snprintf(hi, sizeof(hi), "%g", opt->max_double);
	} else {
		snprintf(lo, sizeof(lo), "%" PRId64, opt->min);
		snprintf(hi, sizeof(hi), "%" PRId64, opt->max);
	}
	snprintf(why, why_size, "expected a value between %s and %s, got '%s'", lo, hi, quoted);
	return -ERANGE;
}

static int config_parse_bool(const char *s, bool *ret)
{
	static const char *yes[] = { "true", "yes", "on", "1" };
	static const char *no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Whole string, base 10, no leading space; -ERANGE when it does not fit. */
static int config_parse_int(const char *s, bool is_unsigned, int64_t *ret_i, uint64_t *ret_u)
{
	char *end;

	if (!*s || isspace((unsigned char)*s) || (is_unsigned && *s == '-'))
		return -EINVAL;
	errno = 0;
	if (is_unsigned)
		*ret_u = strtoull(s, &end, 10);
	else
		*ret_i = strtoll(s, &end, 10);
	if (*end)
		return -EINVAL;
	return errno == ERANGE ? -ERANGE : 0;
}

static int config_parse_double(const char *s, double *ret)
{
	char *end;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*ret = strtod(s, &end);
	if (*end || !isfinite(*ret))
		return -EINVAL;
	return errno == ERANGE ? -ERANGE : 0;
}

static void config_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static int config_store_string(const struct config_option *opt, void *cfg, const char *text,
			       char *why, size_t why_size)
{
	char **slot = (char **)((char *)cfg + opt->offset);
	char *copy;

	if ((opt->flags & CONFIG_ABSOLUTE_PATH) && text[0] != '/')
		return config_why(opt, text, why, why_size);
	copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

/* Comma-separated, items trimmed, empty items dropped. */
static int config_store_list_text(const struct config_option *opt, void *cfg, const char *text,
				  char *why, size_t why_size)
{
	_cleanup_free_ char *copy = strdup(text);
	_cleanup_free_ const char **items = NULL;
	size_t n = 0, max = 1;
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (const char *p = text; *p; p++)
		max += *p == ',';
	items = calloc(max, sizeof(*items));
	if (!items)
		return -ENOMEM;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		while (isspace((unsigned char)*tok))
			tok++;
		end = tok + strlen(tok);
		while (end > tok && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (*tok)
			items[n++] = tok;
	}
	return config_option_set_list(opt, cfg, items, n, why, why_size);
}

int config_option_set_list(const struct config_option *opt, void *cfg, const char *const *items,
			   size_t n_items, char *why, size_t why_size)
{
	char ***slot = (char ***)((char *)cfg + opt->offset);
	char **v;

	if (opt->type != CONFIG_STRING_LIST)
		return config_why(opt, "a list", why, why_size);
	v = calloc(n_items + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n_items; i++) {
		v[i] = strdup(items[i]);
		if (!v[i]) {
			config_strv_free(v);
			return -ENOMEM;
		}
	}
	config_strv_free(*slot);
	*slot = v;
	return 0;
}

static int config_store_enum(const struct config_option *opt, void *cfg, const char *text,
			     char *why, size_t why_size)
{
	for (const struct config_enum_value *v = opt->values; v && v->name; v++)
		if (streq(v->name, text)) {
			*(int *)((char *)cfg + opt->offset) = v->value;
			return 0;
		}
	return config_why(opt, text, why, why_size);
}

static int config_store_number(const struct config_option *opt, void *cfg, const char *text,
			       char *why, size_t why_size)
{
	void *slot = (char *)cfg + opt->offset;
	int64_t i = 0;
	uint64_t u = 0;
	double d = 0;
	int r;

	switch (opt->type) {
	case CONFIG_INT:
		r = config_parse_int(text, false, &i, NULL);
		if (r == -ERANGE || (r == 0 && config_bounded(opt) && (i < opt->min || i > opt->max)))
			return config_out_of_range(opt, text, why, why_size);
		if (r < 0)
			return config_why(opt, text, why, why_size);
		*(int64_t *)slot = i;
		return 0;
	case CONFIG_UINT:
	case CONFIG_DURATION:
		r = opt->type == CONFIG_UINT ? config_parse_int(text, true, NULL, &u)
					     : config_parse_duration(text, opt->flags & CONFIG_NEVER, &u);
		if (r == -ERANGE || (r == 0 && config_bounded(opt) && u != CONFIG_DURATION_NEVER &&
				     (u < (uint64_t)MAX(opt->min, 0) || u > (uint64_t)MAX(opt->max, 0))))
			return config_out_of_range(opt, text, why, why_size);
		if (r < 0)
			return config_why(opt, text, why, why_size);
		*(uint64_t *)slot = u;
		return 0;
	case CONFIG_DOUBLE:
		r = config_parse_double(text, &d);
		if (r == -ERANGE || (r == 0 && (opt->min_double != 0 || opt->max_double != 0) &&
				     (d < opt->min_double || d > opt->max_double)))
			return config_out_of_range(opt, text, why, why_size);
		if (r < 0)
			return config_why(opt, text, why, why_size);
		*(double *)slot = d;
		return 0;
	default:
		return -EINVAL;
	}
}

int config_option_set(const struct config_option *opt, void *cfg, const char *text,
		      char *why, size_t why_size)
{
	bool b;
	int r;

	switch (opt->type) {
	case CONFIG_BOOL:
		if (config_parse_bool(text, &b) < 0)
			return config_why(opt, text, why, why_size);
		*(bool *)((char *)cfg + opt->offset) = b;
		return 0;
	case CONFIG_INT:
	case CONFIG_UINT:
	case CONFIG_DURATION:
	case CONFIG_DOUBLE:
		r = config_store_number(opt, cfg, text, why, why_size);
		return r == -ERANGE ? -EINVAL : r;
	case CONFIG_STRING:
		return config_store_string(opt, cfg, text, why, why_size);
	case CONFIG_ENUM:
		return config_store_enum(opt, cfg, text, why, why_size);
	case CONFIG_STRING_LIST:
		return config_store_list_text(opt, cfg, text, why, why_size);
	}
	return -EINVAL;
}

void config_option_free(const struct config_option *opt, void *cfg)
{
	void *slot = (char *)cfg + opt->offset;

	if (opt->type == CONFIG_STRING) {
		free(*(char **)slot);
		*(char **)slot = NULL;
	} else if (opt->type == CONFIG_STRING_LIST) {
		config_strv_free(*(char ***)slot);
		*(char ***)slot = NULL;
	}
}

bool config_option_equal(const struct config_option *opt, const void *a, const void *b)
{
	const void *x = (const char *)a + opt->offset, *y = (const char *)b + opt->offset;
	char *const *u, *const *v;

	switch (opt->type) {
	case CONFIG_BOOL: return *(const bool *)x == *(const bool *)y;
	case CONFIG_INT: return *(const int64_t *)x == *(const int64_t *)y;
	case CONFIG_UINT:
	case CONFIG_DURATION: return *(const uint64_t *)x == *(const uint64_t *)y;
	case CONFIG_DOUBLE: return *(const double *)x == *(const double *)y;
	case CONFIG_ENUM: return *(const int *)x == *(const int *)y;
	case CONFIG_STRING: return streq_ptr(*(char *const *)x, *(char *const *)y);
	case CONFIG_STRING_LIST:
		u = *(char **const *)x;
		v = *(char **const *)y;
		if (!u || !v)
			return (!u || !*u) && (!v || !*v);
		for (; *u && *v; u++, v++)
			if (!streq(*u, *v))
				return false;
		return !*u && !*v;
	}
	return false;
}

int config_format_value(const struct config_option *opt, const void *cfg, char *buf, size_t size)
{
	const void *slot = (const char *)cfg + opt->offset;
	size_t n = 0;

	if (!size)
		return -EINVAL;
	buf[0] = '\0';
	switch (opt->type) {
	case CONFIG_BOOL:
		snprintf(buf, size, "%s", *(const bool *)slot ? "true" : "false");
		return 0;
	case CONFIG_INT:
		snprintf(buf, size, "%" PRId64, *(const int64_t *)slot);
		return 0;
	case CONFIG_UINT:
		snprintf(buf, size, "%" PRIu64, *(const uint64_t *)slot);
		return 0;
	case CONFIG_DOUBLE:
		snprintf(buf, size, "%g", *(const double *)slot);
		return 0;
	case CONFIG_DURATION:
		config_format_duration(*(const uint64_t *)slot, buf, size);
		return 0;
	case CONFIG_STRING:
		snprintf(buf, size, "%s", *(char *const *)slot ? *(char *const *)slot : "");
		return 0;
	case CONFIG_ENUM:
		for (const struct config_enum_value *v = opt->values; v && v->name; v++)
			if (v->value == *(const int *)slot) {
				snprintf(buf, size, "%s", v->name);
				return 0;
			}
		snprintf(buf, size, "%d", *(const int *)slot);
		return 0;
	case CONFIG_STRING_LIST:
		for (char *const *v = *(char **const *)slot; v && *v && n < size; v++)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "", *v);
		return 0;
	}
	return -EINVAL;
}
