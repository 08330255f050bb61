/*
 * Open-addressing hash map (see hashmap.h). The table doubles at 70% use
 * (live + tombstones), so probes stay short; removal leaves a tombstone
 * that the next rehash drops.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"

static char tombstone_marker;
#define HASHMAP_TOMBSTONE (&tombstone_marker)
#define HASHMAP_MIN_CAP 16

uint64_t hashmap_hash(const char *key)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *key; key++) {
		h ^= (unsigned char)*key;
		h *= 1099511628211ULL;
	}
	return h;
}

static bool slot_live(const struct hashmap_slot *s)
{
	return s->key && s->key != HASHMAP_TOMBSTONE;
}

static int hashmap_grow(struct hashmap *m)
{
	size_t cap = m->cap ? m->cap : HASHMAP_MIN_CAP;
	struct hashmap_slot *slots;

	/* Only double when live entries need it; else rehash away tombstones. */
	if (m->n * 2 >= cap)
		cap *= 2;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		struct hashmap_slot *s = &m->slots[i];
		size_t j;

		if (!slot_live(s))
			continue;
		for (j = s->hash & (cap - 1); slots[j].key; j = (j + 1) & (cap - 1))
			;
		slots[j] = *s;
	}
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	m->used = m->n;
	return 0;
}

static struct hashmap_slot *hashmap_find(const struct hashmap *m, const char *key, uint64_t h)
{
	if (!m->cap)
		return NULL;
	for (size_t j = h & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
		struct hashmap_slot *s = &m->slots[j];
		if (!s->key)
			return NULL;
		if (s->key != HASHMAP_TOMBSTONE && s->hash == h && strcmp(s->key, key) == 0)
			return s;
	}
}

int hashmap_put(struct hashmap *m, const char *key, void *value, void **old)
{
	uint64_t h = hashmap_hash(key);
	struct hashmap_slot *s = hashmap_find(m, key, h);
	size_t j;
	int r;

	if (s) {
		if (old)
			*old = s->value;
		s->value = value;
		return 0;
	}
	if (old)
		*old = NULL;
	if ((m->used + 1) * 10 >= m->cap * 7 && (r = hashmap_grow(m)) < 0)
		return r;
	for (j = h & (m->cap - 1); slot_live(&m->slots[j]); j = (j + 1) & (m->cap - 1))
		;
	s = &m->slots[j];
	if (!s->key)
		m->used++;
	s->key = strdup(key);
	if (!s->key) {
		s->key = NULL;
		m->used--;
		return -ENOMEM;
	}
	s->hash = h;
	s->value = value;
	m->n++;
	return 0;
}

void *hashmap_get(const struct hashmap *m, const char *key)
{
	struct hashmap_slot *s = hashmap_find(m, key, hashmap_hash(key));

	return s ? s->value : NULL;
}

void *hashmap_remove(struct hashmap *m, const char *key)
{
	struct hashmap_slot *s = hashmap_find(m, key, hashmap_hash(key));
	void *v;

	if (!s)
		return NULL;
	v = s->value;
	free(s->key);
	s->key = HASHMAP_TOMBSTONE;
	s->value = NULL;
	m->n--;
	return v;
}

size_t hashmap_remove_if(struct hashmap *m, bool (*drop)(const char *key, void *value, void *userdata),
			 void *userdata)
{
	size_t n = 0;

	for (size_t i = 0; i < m->cap; i++) {
		struct hashmap_slot *s = &m->slots[i];

		if (!slot_live(s) || !drop(s->key, s->value, userdata))
			continue;
		free(s->key);
		s->key = HASHMAP_TOMBSTONE;
		s->value = NULL;
		m->n--;
		n++;
	}
	return n;
}

void hashmap_done(struct hashmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (slot_live(&m->slots[i]))
			free(m->slots[i].key);
	free(m->slots);
	*m = (struct hashmap){ 0 };
}

bool hashmap_next(const struct hashmap *m, size_t *iter, const char **key, void **value)
{
	for (; *iter < m->cap; (*iter)++) {
		const struct hashmap_slot *s = &m->slots[*iter];
		if (!slot_live(s))
			continue;
		if (key)
			*key = s->key;
		if (value)
			*value = s->value;
		(*iter)++;
		return true;
	}
	return false;
}
