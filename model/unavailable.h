/*
 * The unavailable-offerings cache (Karpenter's UnavailableOfferings): an
 * offering (instance type, zone, capacity type) that met insufficient
 * capacity is skipped until a time. The launcher marks offerings and
 * publishes them; the schedulers keep what they hear and plan around it.
 * One bounded table: expired entries go when one is added, and when it is
 * full the oldest goes.
 */
#ifndef KANNA_MODEL_UNAVAILABLE_H
#define KANNA_MODEL_UNAVAILABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Offerings remembered at most; Karpenter's cache is unbounded but lives 3 min. */
#define UNAVAILABLE_MAX 4096

struct unavailable_offering {
	char *instance_type;
	char *zone;
	uint8_t capacity_type; /* enum proto_capacity_type */
	int64_t until_ms;      /* wall clock */
};

struct unavailable_offerings {
	struct unavailable_offering *v;
	size_t n;
};

void unavailable_done(struct unavailable_offerings *u);
/* Marks type/zone/capacity type until until_ms (an entry for it already is
 * replaced). 0, or -ENOMEM (nothing marked). */
int unavailable_add(struct unavailable_offerings *u, const char *type, const char *zone,
		    uint8_t capacity_type, int64_t until_ms, int64_t now_ms);
/* Is it marked and not expired at now_ms? */
bool unavailable_has(const struct unavailable_offerings *u, const char *type, const char *zone,
		     uint8_t capacity_type, int64_t now_ms);

#endif
