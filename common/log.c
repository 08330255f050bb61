/*
 * Logging backends behind common/log.h: readable text, JSON lines (jansson)
 * and journald (sd_journal_sendv). Every kanna process calls log_setup() once
 * and then the log_* macros from any thread: each line is built in memory and
 * written with one locked fwrite, so lines from two threads never interleave.
 * This file must never allocate without a fallback: a failed allocation
 * degrades the line (message without fields), it never loses the call.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "common/log.h"

/* Longest process name kept; systemd's SYSLOG_IDENTIFIER is short too. */
#define LOG_PROCESS_MAX 32
/* Journal fields we always send: MESSAGE, PRIORITY, CODE_FILE, CODE_LINE,
 * CODE_FUNC, SYSLOG_IDENTIFIER, ERRNO. */
#define LOG_JOURNAL_FIXED_FIELDS 7
/* journald's socket: sd_journal_send() drops lines silently without it. */
#define LOG_JOURNAL_SOCKET "/run/systemd/journal/socket"
/* Bytes of "2026-01-02T03:04:05.678Z" plus NUL. */
#define LOG_TIME_MAX 32

/* Logging's own state, the one global the style allows. */
static struct {
	char process[LOG_PROCESS_MAX];
	_Atomic int format;
	_Atomic int level;
	FILE *_Atomic stream;
	pthread_mutex_t lock;
} log_ctx = {
	.process = "kanna",
	.format = LOG_FORMAT_TEXT,
	.level = LOG_LEVEL_INFO,
	.stream = NULL,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

bool log_journal_stream_matches(const char *journal_stream, int fd)
{
	unsigned long long dev, ino;
	struct stat st;
	char *end;

	if (!journal_stream || !*journal_stream)
		return false;
	errno = 0;
	dev = strtoull(journal_stream, &end, 10);
	if (errno || end == journal_stream || *end != ':')
		return false;
	journal_stream = end + 1;
	ino = strtoull(journal_stream, &end, 10);
	if (errno || end == journal_stream || *end != '\0')
		return false;
	if (fstat(fd, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

enum log_format log_format_resolve(enum log_format format, const char *journal_stream, int fd)
{
	if (format != LOG_FORMAT_AUTO)
		return format;
	return log_journal_stream_matches(journal_stream, fd) ? LOG_FORMAT_JOURNAL : LOG_FORMAT_TEXT;
}

int log_setup(const char *process, enum log_format format, enum log_level level)
{
	if (!process || !*process)
		return -EINVAL;
	pthread_mutex_lock(&log_ctx.lock);
	snprintf(log_ctx.process, sizeof(log_ctx.process), "%s", process);
	pthread_mutex_unlock(&log_ctx.lock);
	format = log_format_resolve(format, getenv("JOURNAL_STREAM"), STDERR_FILENO);
	/* Asked for the journal where none runs: text rather than silence. */
	if (format == LOG_FORMAT_JOURNAL && access(LOG_JOURNAL_SOCKET, F_OK) < 0)
		format = LOG_FORMAT_TEXT;
	log_ctx.format = format;
	log_ctx.level = level;
	return 0;
}

void log_set_level(enum log_level level)
{
	log_ctx.level = level;
}

enum log_level log_get_level(void)
{
	return (enum log_level)log_ctx.level;
}

enum log_format log_get_format(void)
{
	return (enum log_format)log_ctx.format;
}

void log_set_stream(void *file)
{
	log_ctx.stream = file;
}

const char *log_level_to_string(enum log_level level)
{
	switch (level) {
	case LOG_LEVEL_ERROR: return "error";
	case LOG_LEVEL_WARN: return "warn";
	case LOG_LEVEL_INFO: return "info";
	case LOG_LEVEL_DEBUG: return "debug";
	}
	return "info";
}

const char *log_format_to_string(enum log_format format)
{
	switch (format) {
	case LOG_FORMAT_AUTO: return "auto";
	case LOG_FORMAT_TEXT: return "text";
	case LOG_FORMAT_JSON: return "json";
	case LOG_FORMAT_JOURNAL: return "journal";
	}
	return "auto";
}

int log_level_from_string(const char *s, enum log_level *ret)
{
	static const enum log_level all[] = { LOG_LEVEL_ERROR, LOG_LEVEL_WARN,
					      LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if (streq(s, log_level_to_string(all[i]))) {
			*ret = all[i];
			return 0;
		}
	return -EINVAL;
}

int log_format_from_string(const char *s, enum log_format *ret)
{
	static const enum log_format all[] = { LOG_FORMAT_AUTO, LOG_FORMAT_TEXT,
					       LOG_FORMAT_JSON, LOG_FORMAT_JOURNAL };
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if (streq(s, log_format_to_string(all[i]))) {
			*ret = all[i];
			return 0;
		}
	return -EINVAL;
}

/* RFC 3339 in UTC with milliseconds: 2026-01-02T03:04:05.678Z */
static void log_format_time(char buf[static LOG_TIME_MAX])
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, LOG_TIME_MAX, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, LOG_TIME_MAX - n, ".%03ldZ", ts.tv_nsec / 1000000L);
}

static bool log_value_needs_quotes(const char *v)
{
	if (!*v)
		return true;
	for (; *v; v++)
		if (*v == ' ' || *v == '"' || *v == '=' || *v == '\\' ||
		    (unsigned char)*v < ' ')
			return true;
	return false;
}

static void log_text_value(FILE *f, const char *v)
{
	if (!log_value_needs_quotes(v)) {
		fputs(v, f);
		return;
	}
	fputc('"', f);
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else if ((unsigned char)*v < ' ')
			fprintf(f, "\\x%02x", (unsigned char)*v);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

/* The message as it is, but for control characters, escaped as in field
 * values: a line break in an API server's error text must not start a
 * line of its own that reads like one of ours. */
static void log_text_message(FILE *f, const char *m)
{
	for (; *m; m++) {
		if (*m == '\n')
			fputs("\\n", f);
		else if ((unsigned char)*m < ' ' || *m == 0x7f)
			fprintf(f, "\\x%02x", (unsigned char)*m);
		else
			fputc(*m, f);
	}
}

/* "2026-01-02T03:04:05.678Z info kanna-scheduler: message key=value" */
static char *log_render_text(enum log_level level, const char *process, const char *message,
			     const struct log_kv *kv, size_t n_kv)
{
	char when[LOG_TIME_MAX];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	log_format_time(when);
	fprintf(f, "%s %-5s %s: ", when, log_level_to_string(level), process);
	log_text_message(f, message);
	for (size_t i = 0; i < n_kv; i++) {
		if (!kv[i].key)
			continue;
		fprintf(f, " %s=", kv[i].key);
		log_text_value(f, kv[i].value ? kv[i].value : "");
	}
	fputc('\n', f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* jansson refuses invalid UTF-8; keep the line, replace the bad bytes. */
static json_t *log_json_string(const char *s)
{
	json_t *j = json_string(s);
	char *copy;

	if (j)
		return j;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

/* Standard keys win over fields of the same name; such a field is kept as
 * "field.<key>" so nothing is silently lost. */
static void log_json_add_field(json_t *o, const char *key, const char *value)
{
	char renamed[128];

	if (json_object_get(o, key)) {
		snprintf(renamed, sizeof(renamed), "field.%s", key);
		key = renamed;
	}
	json_object_set_new(o, key, log_json_string(value ? value : ""));
}

static char *log_render_json(enum log_level level, const char *process, const char *message,
			     int errno_value, const char *file, int line,
			     const struct log_kv *kv, size_t n_kv)
{
	char when[LOG_TIME_MAX], caller[256];
	json_t *o = json_object();
	char *s, *out;
	size_t n;

	if (!o)
		return NULL;
	log_format_time(when);
	snprintf(caller, sizeof(caller), "%s:%d", file ? file : "?", line);
	json_object_set_new(o, "level", json_string(log_level_to_string(level)));
	json_object_set_new(o, "time", json_string(when));
	json_object_set_new(o, "logger", log_json_string(process));
	json_object_set_new(o, "caller", log_json_string(caller));
	json_object_set_new(o, "message", log_json_string(message));
	if (errno_value != 0)
		json_object_set_new(o, "error", json_string(strerror(abs(errno_value))));
	for (size_t i = 0; i < n_kv; i++)
		if (kv[i].key)
			log_json_add_field(o, kv[i].key, kv[i].value);
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		return NULL;
	n = strlen(s);
	out = realloc(s, n + 2);
	if (!out) {
		free(s);
		return NULL;
	}
	out[n] = '\n';
	out[n + 1] = '\0';
	return out;
}

/* Journal field names are [A-Z0-9_], not starting with '_' or a digit. */
void log_journal_field_name(const char *key, char *buf, size_t size)
{
	size_t n = 0;

	for (; *key && n + 1 < size; key++) {
		char c = *key;
		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			c = '_';
		if (n == 0 && (c == '_' || (c >= '0' && c <= '9')))
			continue;
		buf[n++] = c;
	}
	buf[n] = '\0';
}

static int log_send_journal(enum log_level level, const char *process, const char *message,
			    int errno_value, const char *file, int line, const char *func,
			    const struct log_kv *kv, size_t n_kv)
{
	size_t n = 0, max = LOG_JOURNAL_FIXED_FIELDS + n_kv;
	struct iovec *iov = calloc(max, sizeof(*iov));
	char **strs = calloc(max, sizeof(*strs));
	int r = -ENOMEM;

	if (!iov || !strs)
		goto out;
#define LOG_JOURNAL_ADD(...)                                                  \
	do {                                                                  \
		if (asprintf(&strs[n], __VA_ARGS__) < 0) {                    \
			strs[n] = NULL;                                       \
			goto out;                                             \
		}                                                             \
		iov[n].iov_base = strs[n];                                    \
		iov[n].iov_len = strlen(strs[n]);                             \
		n++;                                                          \
	} while (0)
	LOG_JOURNAL_ADD("MESSAGE=%s", message);
	LOG_JOURNAL_ADD("PRIORITY=%d", (int)level);
	LOG_JOURNAL_ADD("CODE_FILE=%s", file ? file : "");
	LOG_JOURNAL_ADD("CODE_LINE=%d", line);
	LOG_JOURNAL_ADD("CODE_FUNC=%s", func ? func : "");
	LOG_JOURNAL_ADD("SYSLOG_IDENTIFIER=%s", process);
	if (errno_value != 0)
		LOG_JOURNAL_ADD("ERRNO=%d", abs(errno_value));
	for (size_t i = 0; i < n_kv; i++) {
		char name[64];
		if (!kv[i].key)
			continue;
		log_journal_field_name(kv[i].key, name, sizeof(name));
		if (!*name)
			continue;
		LOG_JOURNAL_ADD("%s=%s", name, kv[i].value ? kv[i].value : "");
	}
#undef LOG_JOURNAL_ADD
	r = sd_journal_sendv(iov, (int)n);
out:
	for (size_t i = 0; strs && i < max; i++)
		free(strs[i]);
	free(strs);
	free(iov);
	return r;
}

static void log_write_line(const char *line_text)
{
	FILE *out;

	pthread_mutex_lock(&log_ctx.lock);
	out = log_ctx.stream ? log_ctx.stream : stderr;
	fputs(line_text, out);
	fflush(out);
	pthread_mutex_unlock(&log_ctx.lock);
}

static void log_emit(enum log_level level, int errno_value, const char *file, int line,
		     const char *func, const struct log_kv *kv, size_t n_kv, const char *message)
{
	enum log_format format = log_get_format();
	char process[LOG_PROCESS_MAX];
	char *text = NULL;

	pthread_mutex_lock(&log_ctx.lock);
	memcpy(process, log_ctx.process, sizeof(process));
	pthread_mutex_unlock(&log_ctx.lock);

	/* A test stream always gets the line; the journal only the real stderr. */
	if (format == LOG_FORMAT_JOURNAL && !log_ctx.stream &&
	    log_send_journal(level, process, message, errno_value, file, line, func, kv, n_kv) >= 0)
		return;
	if (format == LOG_FORMAT_JSON)
		text = log_render_json(level, process, message, errno_value, file, line, kv, n_kv);
	else
		text = log_render_text(level, process, message, kv, n_kv);
	if (text) {
		log_write_line(text);
		free(text);
		return;
	}
	/* Out of memory: still say something, without fields. */
	pthread_mutex_lock(&log_ctx.lock);
	fprintf(log_ctx.stream ? log_ctx.stream : stderr, "%s %s: ", log_level_to_string(level),
		process);
	log_text_message(log_ctx.stream ? log_ctx.stream : stderr, message);
	fputc('\n', log_ctx.stream ? log_ctx.stream : stderr);
	pthread_mutex_unlock(&log_ctx.lock);
}

int log_full(enum log_level level, int errno_value, const char *file, int line,
	     const char *func, const struct log_kv *kv, size_t n_kv,
	     const char *fmt, ...)
{
	int r = errno_value == 0 ? -EIO : -abs(errno_value);
	int saved_errno = errno;
	char *message = NULL;
	va_list ap;

	if ((int)level > log_ctx.level)
		return r;
	errno = abs(errno_value);
	va_start(ap, fmt);
	if (vasprintf(&message, fmt, ap) < 0)
		message = NULL;
	va_end(ap);
	log_emit(level, errno_value, file, line, func, kv, n_kv, message ? message : fmt);
	free(message);
	errno = saved_errno;
	return r;
}
