/*
 * malloc settings and trimming (see memory.h).
 */
#include <stdlib.h> /* defines __GLIBC__ with glibc */

#include "common/memory.h"

#ifdef __GLIBC__
#include <malloc.h>

/* Blocks this big or more are their own mapping, returned on free: the
 * default's starting value, kept from rising. */
#define MEMORY_MMAP_THRESHOLD (128 * 1024)
/* Free memory at the heap's top beyond this goes back at once (the
 * default's starting value, kept from rising with the threshold above). */
#define MEMORY_TRIM_THRESHOLD (128 * 1024)

void memory_tune(void)
{
	/* Failures leave glibc's defaults: more memory, same behaviour. */
	(void)mallopt(M_MMAP_THRESHOLD, MEMORY_MMAP_THRESHOLD);
	(void)mallopt(M_TRIM_THRESHOLD, MEMORY_TRIM_THRESHOLD);
	/* One arena for every thread: besides the loop's there are only
	 * ZeroMQ's I/O thread and at most one worker, and a lock they seldom
	 * contend costs less than an arena each that is never trimmed. */
	(void)mallopt(M_ARENA_MAX, 1);
}

void memory_trim(void)
{
	(void)malloc_trim(0);
}
#else
void memory_tune(void)
{
}

void memory_trim(void)
{
}
#endif
