/*
 * Kubernetes resource quantities ("500m", "1.5Gi", "2e3", "1k") parsed to
 * integers exactly as resource.Quantity's Value()/MilliValue() would (rounding
 * up). Called by the watcher's decoders and the scheduler's loaders; pure
 * functions, no allocation.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantity.h"
#include "common/util.h"

/* Mantissa digits beyond this would overflow 128-bit arithmetic. */
#define QUANTITY_MAX_DIGITS 30

struct suffix {
	const char *s;
	int base; /* 2 or 10 */
	int exp;
};

static const struct suffix suffixes[] = {
	{ "Ki", 2, 10 }, { "Mi", 2, 20 }, { "Gi", 2, 30 }, { "Ti", 2, 40 },
	{ "Pi", 2, 50 }, { "Ei", 2, 60 }, { "n", 10, -9 }, { "u", 10, -6 },
	{ "m", 10, -3 }, { "k", 10, 3 },  { "M", 10, 6 },  { "G", 10, 9 },
	{ "T", 10, 12 }, { "P", 10, 15 }, { "E", 10, 18 }, { "", 10, 0 },
};

static int parse_suffix(const char *s, int *base, int *exp)
{
	if (*s == 'e' || *s == 'E') {
		char *end;
		long e;

		if (!s[1])
			return -EINVAL;
		errno = 0;
		e = strtol(s + 1, &end, 10);
		if (errno || *end || e < -40 || e > 40)
			return -EINVAL;
		*base = 10;
		*exp = (int)e;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++)
		if (streq(s, suffixes[i].s)) {
			*base = suffixes[i].base;
			*exp = suffixes[i].exp;
			return 0;
		}
	return -EINVAL;
}

int quantity_parse(const char *s, bool milli, int64_t *ret)
{
	__int128 mant = 0, num, den = 1;
	int frac = 0, digits = 0, base, exp, r;
	bool neg = false, dot = false;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	for (; *s; s++) {
		if (*s == '.' && !dot) {
			dot = true;
			continue;
		}
		if (*s < '0' || *s > '9')
			break;
		if (++digits > QUANTITY_MAX_DIGITS)
			return -ERANGE;
		mant = mant * 10 + (*s - '0');
		if (dot)
			frac++;
	}
	if (!digits)
		return -EINVAL;
	r = parse_suffix(s, &base, &exp);
	if (r < 0)
		return r;
	num = mant;
	if (milli)
		num *= 1000;
	for (int i = 0; i < frac; i++)
		den *= 10;
	if (base == 2) {
		/* 30 digits (milli: ×1000) shifted by Pi's 50 bits would pass
		 * 128: refused as out of range, as decimal overflow is below. */
		if (num >= ((__int128)1 << (126 - exp)))
			return -ERANGE;
		num <<= exp;
	} else if (exp >= 0) {
		for (int i = 0; i < exp; i++) {
			num *= 10;
			if (num > ((__int128)1 << 100))
				return -ERANGE;
		}
	} else {
		for (int i = 0; i < -exp; i++)
			den *= 10;
	}
	num = (num + den - 1) / den; /* round up, as Quantity.Value() does */
	if (num > INT64_MAX)
		return -ERANGE;
	*ret = neg ? -(int64_t)num : (int64_t)num;
	return 0;
}

void quantity_format(int64_t v, bool milli, bool binary, char *buf, size_t size)
{
	static const char *const bin[] = { "Ki", "Mi", "Gi", "Ti", "Pi" };

	if (milli) {
		if (v % 1000 == 0)
			snprintf(buf, size, "%" PRId64, v / 1000);
		else
			snprintf(buf, size, "%" PRId64 "m", v);
		return;
	}
	if (binary) {
		int u = -1;
		int64_t x = v;
		while (u + 1 < (int)ARRAY_SIZE(bin) && x >= 1024 && x % 1024 == 0) {
			x /= 1024;
			u++;
		}
		if (u < 0 && v >= (1LL << 30)) {
			snprintf(buf, size, "%.1fGi", (double)v / (1 << 30));
			return;
		}
		if (u < 0 && v >= (1LL << 20)) {
			snprintf(buf, size, "%.1fMi", (double)v / (1 << 20));
			return;
		}
		snprintf(buf, size, "%" PRId64 "%s", x, u >= 0 ? bin[u] : "");
		return;
	}
	snprintf(buf, size, "%" PRId64, v);
}

int quantity_or_percent_parse(const char *s, int64_t *ret, double *percent)
{
	size_t len = strlen(s);
	char *end;
	int r;

	*ret = 0;
	*percent = -1;
	if (len && s[len - 1] == '%') {
		double p = strtod(s, &end);
		if (len == 1 || end != s + len - 1 || !(p >= 0 && p <= 100))
			return -EINVAL;
		*percent = p;
		return 0;
	}
	r = quantity_parse(s, false, ret);
	return r < 0 || *ret < 0 ? -EINVAL : 0;
}
