/*
 * Allocation failure injection for out-of-memory tests. The test binary is
 * linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,
 * --wrap=strdup,--wrap=strndup,--wrap=asprintf (WRAP_ALLOC_FLAGS in the
 * .mk), so every call our own code (the static libraries linked in) makes
 * comes here; the shared libraries' own allocations do not. While armed,
 * the Nth allocation fails and every block allocated is tracked until
 * freed, so that a test can fail each allocation of a constructor in turn
 * and check that nothing it allocated is left behind. Include it in one
 * translation unit of the test only.
 */
#ifndef KANNA_TESTS_ALLOC_FAIL_H
#define KANNA_TESTS_ALLOC_FAIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALLOC_FAIL_SLOTS (1u << 16)

static struct {
	bool armed;
	long countdown; /* the allocation that fails is the one at 0 */
	long live;      /* tracked blocks not freed */
	long lost;      /* blocks not tracked because the table was full */
	void *slots[ALLOC_FAIL_SLOTS];
} alloc_fail;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

static inline uint32_t alloc_fail_slot(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 48) & (ALLOC_FAIL_SLOTS - 1);
}

static inline void alloc_fail_track(void *p)
{
	uint32_t i = alloc_fail_slot(p);

	for (uint32_t n = 0; n < ALLOC_FAIL_SLOTS; n++, i = (i + 1) & (ALLOC_FAIL_SLOTS - 1))
		if (!alloc_fail.slots[i] || alloc_fail.slots[i] == (void *)1) {
			alloc_fail.slots[i] = p;
			alloc_fail.live++;
			return;
		}
	alloc_fail.lost++;
}

static inline void alloc_fail_untrack(void *p)
{
	uint32_t i = alloc_fail_slot(p);

	for (uint32_t n = 0; n < ALLOC_FAIL_SLOTS && alloc_fail.slots[i];
	     n++, i = (i + 1) & (ALLOC_FAIL_SLOTS - 1))
		if (alloc_fail.slots[i] == p) {
			alloc_fail.slots[i] = (void *)1; /* tombstone */
			alloc_fail.live--;
			return;
		}
}

static inline bool alloc_fail_now(void)
{
	if (!alloc_fail.armed || alloc_fail.countdown-- != 0)
		return false;
	errno = ENOMEM;
	return true;
}

/* Arms: allocation number n (from 0) fails; tracking starts afresh. */
static inline void alloc_fail_arm(long n)
{
	memset(alloc_fail.slots, 0, sizeof(alloc_fail.slots));
	alloc_fail.live = alloc_fail.lost = 0;
	alloc_fail.countdown = n;
	alloc_fail.armed = true;
}

/* Disarms; returns whether the failure was reached (false: fewer allocations). */
static inline bool alloc_fail_disarm(void)
{
	alloc_fail.armed = false;
	return alloc_fail.countdown < 0;
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
	void *p = alloc_fail_now() ? NULL : __real_malloc(n);

	if (p && alloc_fail.armed)
		alloc_fail_track(p);
	return p;
}

void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
	void *p = alloc_fail_now() ? NULL : __real_calloc(n, size);

	if (p && alloc_fail.armed)
		alloc_fail_track(p);
	return p;
}

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
	void *q;

	if (alloc_fail_now())
		return NULL;
	q = __real_realloc(p, n);
	if (q && alloc_fail.armed) {
		if (p)
			alloc_fail_untrack(p);
		alloc_fail_track(q);
	}
	return q;
}

void __wrap_free(void *p);
void __wrap_free(void *p)
{
	if (p)
		alloc_fail_untrack(p);
	__real_free(p);
}

char *__wrap_strdup(const char *s);
char *__wrap_strdup(const char *s)
{
	char *p = alloc_fail_now() ? NULL : __real_strdup(s);

	if (p && alloc_fail.armed)
		alloc_fail_track(p);
	return p;
}

char *__wrap_strndup(const char *s, size_t n);
char *__wrap_strndup(const char *s, size_t n)
{
	char *p = alloc_fail_now() ? NULL : __real_strndup(s, n);

	if (p && alloc_fail.armed)
		alloc_fail_track(p);
	return p;
}

int __wrap_asprintf(char **ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int __wrap_asprintf(char **ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (alloc_fail_now())
		return -1;
	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n >= 0 && alloc_fail.armed)
		alloc_fail_track(*ret);
	return n;
}

#endif
