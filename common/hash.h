/*
 * FNV-1a, the one string hash: stable across runs, builds and machines, so
 * that names and tokens derived from it (instance profiles, CreateFleet
 * batch tokens, Event keys, simulated spot prices) never change under us.
 */
#ifndef KANNA_COMMON_HASH_H
#define KANNA_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A64_OFFSET 14695981039346656037ULL
#define HASH_FNV1A64_PRIME 1099511628211ULL

/* h carried on over the bytes of s (NULL: none). */
static inline uint64_t hash_fnv1a64_add(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * HASH_FNV1A64_PRIME;
	return h;
}

static inline uint64_t hash_fnv1a64(const char *s)
{
	return hash_fnv1a64_add(HASH_FNV1A64_OFFSET, s);
}

/* One field of a key made of several: s, then a separator byte, so that
 * ("ab", "c") and ("a", "bc") differ. */
static inline uint64_t hash_fnv1a64_field(uint64_t h, const char *s)
{
	return (hash_fnv1a64_add(h, s) ^ 0xff) * HASH_FNV1A64_PRIME;
}

static inline uint32_t hash_fnv1a32(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

#endif
