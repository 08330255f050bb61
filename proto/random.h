/*
 * Seeded random messages of any type, generated from the schema: every
 * field, random values and sizes within the limits. For the round-trip
 * tests, the fuzz seed corpus and the benchmarks. Internal to proto/.
 */
#ifndef KANNA_PROTO_RANDOM_H
#define KANNA_PROTO_RANDOM_H

#include <stdint.h>

#include "common/arena.h"
#include "proto/proto.h"

struct proto_rng {
	uint64_t state;
};

static inline uint64_t proto_rng_next(struct proto_rng *r)
{
	/* splitmix64 */
	uint64_t z = (r->state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/*
 * Fills *out with a random message of the given type, allocating from a.
 * Arrays hold up to `breadth` entries (or, now and then, exactly their
 * limit when that limit is ≤ 64); strings up to `breadth * 8` bytes (or
 * exactly their limit). Returns 0 or -ENOMEM.
 */
int proto_random_msg(struct proto_rng *rng, struct arena *a, enum proto_msg_type type,
		     uint32_t breadth, struct proto_msg *out);

#endif
