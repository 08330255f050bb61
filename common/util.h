/*
 * Small helpers every file may use: array sizes, cleanup attributes in the
 * systemd style (_cleanup_free_, _cleanup_(foo_freep)), and checked
 * arithmetic. Nothing here allocates or keeps state.
 */
#ifndef KANNA_COMMON_UTIL_H
#define KANNA_COMMON_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Define foo_freep() for a type whose destructor is foo_free(). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                               \
	static inline void func##p(type *p)                                   \
	{                                                                     \
		if (*p)                                                       \
			func(*p);                                             \
	}

/* Frees a string that held a secret (a token, a key), zeroed first in a way
 * the compiler may not drop. */
static inline void free_erased(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}
static inline void free_erasedp(char **p)
{
	free_erased(*p);
}
#define _cleanup_erased_ _cleanup_(free_erasedp)

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                                           \
	({                                                                    \
		__typeof__(p) _p_ = (p);                                      \
		(p) = NULL;                                                   \
		_p_;                                                          \
	})

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static inline bool startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* memcpy and qsort with n == 0 accept NULL (an empty array of a decoded
 * object is NULL); the libc functions declare it undefined. */
static inline void *memcpy_safe(void *dst, const void *src, size_t n)
{
	return n ? memcpy(dst, src, n) : dst;
}

static inline void qsort_safe(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
