/*
 * kanna-tap --summary (tools/tap-summary.h): per-row counters, the rates
 * derived from them and the text and JSON reports. Rows are few (processes
 * x sockets x types), so they live in one array searched linearly and are
 * sorted only when a report is printed. Cleanup style: _cleanup_ attributes.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tools/tap-format.h"
#include "tools/tap-summary.h"

#define USEC_PER_SEC_D 1000000.0

void tap_summary_init(struct tap_summary *s, uint64_t now_usec)
{
	*s = (struct tap_summary){ .start_usec = now_usec, .interval_start_usec = now_usec };
}

static void row_free(struct tap_summary_row *r)
{
	free(r->process);
	free(r->direction);
	free(r->socket);
	free(r->type);
}

void tap_summary_done(struct tap_summary *s)
{
	for (size_t i = 0; i < s->n_rows; i++)
		row_free(&s->rows[i]);
	free(s->rows);
	s->rows = NULL;
	s->n_rows = 0;
}

double tap_summary_rate(uint64_t n, uint64_t usec)
{
	return usec ? (double)n * USEC_PER_SEC_D / (double)usec : 0.0;
}

void tap_summary_add_dropped(struct tap_summary *s, uint64_t n)
{
	s->dropped += n;
	s->interval_dropped += n;
}

static struct tap_summary_row *find_row(struct tap_summary *s, const char *process,
					const char *direction, const char *socket, const char *type)
{
	for (size_t i = 0; i < s->n_rows; i++) {
		struct tap_summary_row *r = &s->rows[i];
		if (streq(r->type, type) && streq(r->socket, socket) && streq(r->process, process) &&
		    streq(r->direction, direction))
			return r;
	}
	return NULL;
}

static int new_row(struct tap_summary *s, const char *process, const char *direction,
		   const char *socket, const char *type, struct tap_summary_row **ret)
{
	struct tap_summary_row row = { .process = strdup(process), .direction = strdup(direction),
				       .socket = strdup(socket), .type = strdup(type) };

	if (s->n_rows == TAP_SUMMARY_MAX_ROWS) {
		row_free(&row);
		return -E2BIG;
	}
	struct tap_summary_row *a = realloc(s->rows, (s->n_rows + 1) * sizeof(*a));
	if (!a || !row.process || !row.direction || !row.socket || !row.type) {
		if (a)
			s->rows = a;
		row_free(&row);
		return -ENOMEM;
	}
	s->rows = a;
	s->rows[s->n_rows] = row;
	*ret = &s->rows[s->n_rows++];
	return 0;
}

int tap_summary_add(struct tap_summary *s, const char *process, const char *direction,
		    const char *socket, const char *type, uint64_t bytes)
{
	struct tap_summary_row *r;

	process = process ? process : "?";
	direction = direction ? direction : "?";
	socket = socket ? socket : "?";
	type = type ? type : "?";
	r = find_row(s, process, direction, socket, type);
	if (!r) {
		int e = new_row(s, process, direction, socket, type, &r);
		if (e < 0) {
			tap_summary_add_dropped(s, 1);
			return e;
		}
	}
	r->count++;
	r->bytes += bytes;
	r->interval_count++;
	r->interval_bytes += bytes;
	if (streq(type, TAP_TYPE_UNDECODABLE)) {
		s->undecodable++;
		s->interval_undecodable++;
	}
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct tap_summary_row *x = a, *y = b;
	int c = strcmp(x->process, y->process);
	if (!c)
		c = strcmp(x->socket, y->socket);
	if (!c)
		c = strcmp(x->direction, y->direction);
	return c ? c : strcmp(x->type, y->type);
}

/* What one report covers: the interval's or the totals. */
struct report {
	uint64_t usec, messages, bytes, undecodable, dropped;
	bool final;
};

static uint64_t row_count(const struct tap_summary_row *r, const struct report *rep)
{
	return rep->final ? r->count : r->interval_count;
}

static uint64_t row_bytes(const struct tap_summary_row *r, const struct report *rep)
{
	return rep->final ? r->bytes : r->interval_bytes;
}

static int print_text(const struct tap_summary *s, const struct report *rep, const char *time,
		      FILE *f)
{
	fprintf(f, "%s %s %.2f s: %" PRIu64 " msg(s), %.1f msg/s, %.0f B/s; undecodable %" PRIu64
		   ", dropped %" PRIu64 "\n",
		time, rep->final ? "total over" : "interval", (double)rep->usec / USEC_PER_SEC_D,
		rep->messages, tap_summary_rate(rep->messages, rep->usec),
		tap_summary_rate(rep->bytes, rep->usec), rep->undecodable, rep->dropped);
	if (rep->messages > 0)
		fprintf(f, "  %-20s %-4s %-16s %-20s %8s %10s %12s\n", "PROCESS", "DIR", "SOCKET", "TYPE",
			"COUNT", "MSG/S", "BYTES/S");
	for (size_t i = 0; i < s->n_rows; i++) {
		const struct tap_summary_row *r = &s->rows[i];
		uint64_t n = row_count(r, rep);
		if (n == 0)
			continue;
		fprintf(f, "  %-20s %-4s %-16s %-20s %8" PRIu64 " %10.1f %12.0f\n", r->process,
			r->direction, r->socket, r->type, n, tap_summary_rate(n, rep->usec),
			tap_summary_rate(row_bytes(r, rep), rep->usec));
	}
	return 0;
}

static json_t *row_json(const struct tap_summary_row *r, const struct report *rep)
{
	uint64_t n = row_count(r, rep), bytes = row_bytes(r, rep);

	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:f, s:I, s:f}", "process", r->process,
			 "direction", r->direction, "socket", r->socket, "type", r->type, "count",
			 (json_int_t)n, "rate", tap_summary_rate(n, rep->usec), "bytes",
			 (json_int_t)bytes, "bytes_per_s", tap_summary_rate(bytes, rep->usec));
}

static int print_json(const struct tap_summary *s, const struct report *rep, const char *time,
		      FILE *f)
{
	json_auto_t *rows = json_array();
	json_auto_t *obj = NULL;

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_rows; i++)
		if (row_count(&s->rows[i], rep) > 0 &&
		    json_array_append_new(rows, row_json(&s->rows[i], rep)) < 0)
			return -ENOMEM;
	obj = json_pack("{s:s, s:b, s:f, s:I, s:f, s:f, s:I, s:I, s:O}", "time", time, "final",
			rep->final, "seconds", (double)rep->usec / USEC_PER_SEC_D, "messages",
			(json_int_t)rep->messages, "rate", tap_summary_rate(rep->messages, rep->usec),
			"bytes_per_s", tap_summary_rate(rep->bytes, rep->usec), "undecodable",
			(json_int_t)rep->undecodable, "dropped", (json_int_t)rep->dropped, "rows", rows);
	if (!obj)
		return -ENOMEM;
	if (json_dumpf(obj, f, JSON_COMPACT) < 0 || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}

int tap_summary_print(struct tap_summary *s, uint64_t now_usec, uint64_t wall_usec, bool final,
		      bool json, FILE *f)
{
	uint64_t since = final ? s->start_usec : s->interval_start_usec;
	struct report rep = {
		.usec = now_usec > since ? now_usec - since : 0,
		.undecodable = final ? s->undecodable : s->interval_undecodable,
		.dropped = final ? s->dropped : s->interval_dropped,
		.final = final,
	};
	char time[TAP_TIME_LEN];
	int r;

	if (tap_format_time(wall_usec, time, sizeof(time)) < 0)
		snprintf(time, sizeof(time), "?");
	for (size_t i = 0; i < s->n_rows; i++) {
		rep.messages += row_count(&s->rows[i], &rep);
		rep.bytes += row_bytes(&s->rows[i], &rep);
	}
	if (s->n_rows > 1)
		qsort(s->rows, s->n_rows, sizeof(*s->rows), row_cmp);
	r = json ? print_json(s, &rep, time, f) : print_text(s, &rep, time, f);
	for (size_t i = 0; i < s->n_rows; i++)
		s->rows[i].interval_count = s->rows[i].interval_bytes = 0;
	s->interval_undecodable = s->interval_dropped = 0;
	s->interval_start_usec = now_usec;
	if (r == 0 && (ferror(f) || fflush(f) == EOF))
		r = -EIO;
	return r;
}
