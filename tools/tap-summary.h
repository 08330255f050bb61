/*
 * kanna-tap --summary: counts messages per process, direction, socket and
 * type instead of printing them, and every interval (and at exit) prints
 * the counts with their rates in messages and payload bytes per second,
 * plus how many were undecodable and how many kanna-tap dropped. Text is a
 * table; JSON one object per report. Pure arithmetic and formatting; the
 * caller supplies the clocks, so tests drive it with made-up times.
 */
#ifndef KANNA_TOOLS_TAP_SUMMARY_H
#define KANNA_TOOLS_TAP_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Distinct (process, direction, socket, type) rows kept: kanna has a
 * handful of processes, sockets and 12 types; anything beyond this is a
 * peer sending garbage socket names, counted as dropped. */
#define TAP_SUMMARY_MAX_ROWS 4096

struct tap_summary_row {
	char *process;
	char *direction;
	char *socket;
	char *type;
	uint64_t count, bytes;                   /* since the start */
	uint64_t interval_count, interval_bytes; /* since the last report */
};

struct tap_summary {
	struct tap_summary_row *rows;
	size_t n_rows;
	uint64_t start_usec;          /* monotonic: the first report's interval start */
	uint64_t interval_start_usec; /* monotonic: the current interval's start */
	uint64_t undecodable, interval_undecodable;
	uint64_t dropped, interval_dropped;
};

/* Starts counting at now_usec (monotonic). */
void tap_summary_init(struct tap_summary *s, uint64_t now_usec);
void tap_summary_done(struct tap_summary *s);

/* One message of `bytes` payload bytes. NULL fields count as "?". Returns
 * 0, -ENOMEM, or -E2BIG past TAP_SUMMARY_MAX_ROWS (then counted as dropped). */
int tap_summary_add(struct tap_summary *s, const char *process, const char *direction,
		    const char *socket, const char *type, uint64_t bytes);
/* n messages kanna-tap had to drop (too many frames, no row left). */
void tap_summary_add_dropped(struct tap_summary *s, uint64_t n);

/* n events over usec microseconds, per second; 0 for an empty span. */
double tap_summary_rate(uint64_t n, uint64_t usec);

/*
 * Prints one report to f and starts the next interval at now_usec. An
 * interval report lists the rows that saw messages since the last one,
 * with that interval's counts and rates; the final report (final = true)
 * lists every row with the totals since the start and the average rates.
 * wall_usec (CLOCK_REALTIME) labels the report. Returns 0 or -EIO.
 */
int tap_summary_print(struct tap_summary *s, uint64_t now_usec, uint64_t wall_usec, bool final,
		      bool json, FILE *f);

#endif
