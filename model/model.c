/*
 * Storage primitives of the solver model: the string table that turns
 * label keys and values into small integer ids, bitset counting, label
 * arrays and resource vectors. Used by every other scheduler/ file; keeps
 * no global state.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "model/model.h"

/* The string table doubles its slot array when it is half full. */
#define STRTAB_INITIAL_SLOTS 1024u

int strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
	t->n_slots = STRTAB_INITIAL_SLOTS;
	t->slots = calloc(t->n_slots, sizeof(*t->slots));
	return t->slots ? 0 : -ENOMEM;
}

int strtab_copy(struct strtab *dst, const struct strtab *src)
{
	uint32_t cap = src->cap ? src->cap : 1;

	memset(dst, 0, sizeof(*dst));
	dst->strs = malloc(cap * sizeof(*dst->strs));
	dst->num = malloc(cap * sizeof(*dst->num));
	dst->is_num = malloc(cap);
	dst->slots = malloc(src->n_slots * sizeof(*dst->slots));
	if (!dst->strs || !dst->num || !dst->is_num || !dst->slots) {
		strtab_done(dst);
		return -ENOMEM;
	}
	memcpy(dst->strs, src->strs, src->n * sizeof(*dst->strs));
	memcpy(dst->num, src->num, src->n * sizeof(*dst->num));
	memcpy(dst->is_num, src->is_num, src->n);
	memcpy(dst->slots, src->slots, src->n_slots * sizeof(*dst->slots));
	dst->n = src->n;
	dst->cap = cap;
	dst->n_slots = src->n_slots;
	return 0;
}

void strtab_done(struct strtab *t)
{
	free(t->strs);
	free(t->num);
	free(t->is_num);
	free(t->slots);
	arena_done(&t->arena);
	memset(t, 0, sizeof(*t));
}

static int strtab_grow(struct strtab *t)
{
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		char **s = realloc(t->strs, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		t->strs = s;
		int64_t *num = realloc(t->num, cap * sizeof(*num));
		if (!num)
			return -ENOMEM;
		t->num = num;
		uint8_t *isn = realloc(t->is_num, cap);
		if (!isn)
			return -ENOMEM;
		t->is_num = isn;
		t->cap = cap;
	}
	if ((t->n + 1) * 2 > t->n_slots) {
		uint32_t ns = t->n_slots * 2;
		uint32_t *slots = calloc(ns, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		for (uint32_t i = 0; i < t->n; i++) {
			uint32_t h = hash_fnv1a32(t->strs[i], strlen(t->strs[i])) & (ns - 1);
			while (slots[h])
				h = (h + 1) & (ns - 1);
			slots[h] = i + 1;
		}
		free(t->slots);
		t->slots = slots;
		t->n_slots = ns;
	}
	return 0;
}

static bool parse_int(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	if (!*s || (*s != '-' && (*s < '0' || *s > '9')))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*ret = v;
	return true;
}

int64_t strtab_intern_len(struct strtab *t, const char *s, size_t len)
{
	uint32_t h = hash_fnv1a32(s, len) & (t->n_slots - 1);

	while (t->slots[h]) {
		const char *c = t->strs[t->slots[h] - 1];
		if (strncmp(c, s, len) == 0 && c[len] == '\0')
			return t->slots[h] - 1;
		h = (h + 1) & (t->n_slots - 1);
	}
	if (t->n >= UINT32_MAX - 1)
		return -E2BIG;
	int r = strtab_grow(t);
	if (r < 0)
		return r;
	char *copy = arena_alloc(&t->arena, len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len);
	copy[len] = '\0';
	h = hash_fnv1a32(s, len) & (t->n_slots - 1);
	while (t->slots[h])
		h = (h + 1) & (t->n_slots - 1);
	t->slots[h] = t->n + 1;
	t->strs[t->n] = copy;
	t->is_num[t->n] = parse_int(copy, &t->num[t->n]);
	return t->n++;
}

int64_t strtab_intern(struct strtab *t, const char *s)
{
	return strtab_intern_len(t, s, strlen(s));
}

uint32_t strtab_lookup(const struct strtab *t, const char *s)
{
	size_t len = strlen(s);
	uint32_t h = hash_fnv1a32(s, len) & (t->n_slots - 1);

	while (t->slots[h]) {
		if (streq(t->strs[t->slots[h] - 1], s))
			return t->slots[h] - 1;
		h = (h + 1) & (t->n_slots - 1);
	}
	return STR_NONE;
}

const char *strtab_str(const struct strtab *t, uint32_t id)
{
	return id < t->n ? t->strs[id] : "";
}

bool strtab_int(const struct strtab *t, uint32_t id, int64_t *ret)
{
	if (id >= t->n || !t->is_num[id])
		return false;
	*ret = t->num[id];
	return true;
}

uint32_t bits_count(const uint64_t *b, uint32_t words)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < words; i++)
		n += (uint32_t)__builtin_popcountll(b[i]);
	return n;
}

static int label_cmp(const void *a, const void *b)
{
	const struct label *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

void labels_sort(struct label *labels, uint32_t n)
{
	qsort(labels, n, sizeof(*labels), label_cmp);
}

uint32_t labels_get(const struct label *labels, uint32_t n, uint32_t key)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (labels[mid].key == key)
			return labels[mid].value;
		if (labels[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return STR_NONE;
}

void resources_add(struct resources *a, const struct resources *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		a->v[i] += b->v[i];
}
