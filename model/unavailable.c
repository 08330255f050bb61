/* The unavailable-offerings cache (see unavailable.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/unavailable.h"

static void entry_free(struct unavailable_offering *e)
{
	free(e->instance_type);
	free(e->zone);
}

void unavailable_done(struct unavailable_offerings *u)
{
	for (size_t i = 0; i < u->n; i++)
		entry_free(&u->v[i]);
	free(u->v);
	*u = (struct unavailable_offerings){ 0 };
}

static bool same(const struct unavailable_offering *e, const char *type, const char *zone,
		 uint8_t capacity_type)
{
	return e->capacity_type == capacity_type && streq(e->instance_type, type) && streq(e->zone, zone);
}

int unavailable_add(struct unavailable_offerings *u, const char *type, const char *zone,
		    uint8_t capacity_type, int64_t until_ms, int64_t now_ms)
{
	struct unavailable_offering e = { strdup(type), strdup(zone), capacity_type, until_ms };
	size_t k = 0;

	if (!e.instance_type || !e.zone) {
		entry_free(&e);
		return -ENOMEM;
	}
	if (!u->v && !(u->v = calloc(UNAVAILABLE_MAX, sizeof(*u->v)))) {
		entry_free(&e);
		return -ENOMEM;
	}
	/* Expired entries and an older mark of the same offering go first. */
	for (size_t i = 0; i < u->n; i++) {
		if (u->v[i].until_ms > now_ms && !same(&u->v[i], type, zone, capacity_type))
			u->v[k++] = u->v[i];
		else
			entry_free(&u->v[i]);
	}
	u->n = k;
	if (u->n == UNAVAILABLE_MAX) {
		entry_free(&u->v[0]);
		memmove(u->v, u->v + 1, --u->n * sizeof(*u->v));
	}
	u->v[u->n++] = e;
	return 0;
}

bool unavailable_has(const struct unavailable_offerings *u, const char *type, const char *zone,
		     uint8_t capacity_type, int64_t now_ms)
{
	for (size_t i = 0; i < u->n; i++)
		if (u->v[i].until_ms > now_ms && same(&u->v[i], type, zone, capacity_type))
			return true;
	return false;
}
