/*
 * The heap of a long-running daemon (issue 22: the four together under
 * 50 MB). glibc's malloc, as it comes, keeps what a burst freed: its mmap
 * threshold rises to the largest block freed (up to 32 MB), so the next
 * big blocks (a model's arena chunks, a catalog, an encode buffer) come
 * from the heap and stay resident after free; every thread that allocates
 * (ZeroMQ's I/O thread, a worker) gets an arena of its own that is
 * trimmed only at its top. memory_tune() fixes the thresholds and keeps
 * one arena; memory_trim() hands the free pages inside the heap back
 * after a large free (a model, a superseded catalog, a snapshot).
 * Both do nothing where malloc is not glibc's (a sanitizer's, musl).
 */
#ifndef KANNA_COMMON_MEMORY_H
#define KANNA_COMMON_MEMORY_H

/* Once, at start-up, before any thread. */
void memory_tune(void);
/* After freeing a large structure; costs a walk of malloc's free lists. */
void memory_trim(void);

#endif
