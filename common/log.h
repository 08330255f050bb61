/*
 * The one logging API of every kanna process (the OpenBSD log_warn family,
 * with systemd's "return log_error_errno(r, ...)" idiom). A line is a level,
 * a message and optional key=value fields (pod, nodeclaim, node, ...);
 * the backend (journald, JSON lines, readable text) is chosen once at start.
 */
#ifndef KANNA_COMMON_LOG_H
#define KANNA_COMMON_LOG_H

#include <stddef.h>
#include <syslog.h>

#include "common/util.h"

/* Levels are syslog priorities so that journald receives them unchanged. */
enum log_level {
	LOG_LEVEL_ERROR = LOG_ERR,
	LOG_LEVEL_WARN = LOG_WARNING,
	LOG_LEVEL_INFO = LOG_INFO,
	LOG_LEVEL_DEBUG = LOG_DEBUG,
};

enum log_format {
	LOG_FORMAT_AUTO,    /* journald under systemd, text otherwise */
	LOG_FORMAT_TEXT,    /* readable, one line per event */
	LOG_FORMAT_JSON,    /* one JSON object per line */
	LOG_FORMAT_JOURNAL, /* sd_journal_send() */
};

struct log_kv {
	const char *key;
	const char *value;
};

/* LOG_KV({"pod", "default/inflate-1"}, {"node", name}) */
#define LOG_KV(...) ((const struct log_kv[]){ __VA_ARGS__ })

/*
 * Names the process on every line and picks the backend; LOG_FORMAT_AUTO
 * becomes LOG_FORMAT_JOURNAL when stderr is the journal, text otherwise, and
 * LOG_FORMAT_JOURNAL becomes text when no journald socket exists.
 */
int log_setup(const char *process, enum log_format format, enum log_level level);
int log_format_from_string(const char *s, enum log_format *ret);
const char *log_format_to_string(enum log_format format);
int log_level_from_string(const char *s, enum log_level *ret);
const char *log_level_to_string(enum log_level level);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* The backend in use (never LOG_FORMAT_AUTO after log_setup()). */
enum log_format log_get_format(void);
/*
 * True when journal_stream (the value of $JOURNAL_STREAM, "dev:inode") names
 * the file open on fd, i.e. systemd connected that fd to the journal.
 */
bool log_journal_stream_matches(const char *journal_stream, int fd);
/* What LOG_FORMAT_AUTO means given $JOURNAL_STREAM and the stderr fd. */
enum log_format log_format_resolve(enum log_format format, const char *journal_stream, int fd);
/* A field key as a journal field name: "nodeclaim" -> "NODECLAIM". */
void log_journal_field_name(const char *key, char *buf, size_t size);
/* Redirect output (tests); NULL restores stderr. */
void log_set_stream(void *file);

/*
 * Emits one line. errno_value (positive or negative, 0 for none) feeds %m in
 * fmt. Returns -abs(errno_value), or -EIO when it is 0, so callers can
 * "return log_error_errno(r, ...)".
 */
int log_full(enum log_level level, int errno_value, const char *file, int line,
	     const char *func, const struct log_kv *kv, size_t n_kv,
	     const char *fmt, ...) _printf_(8, 9);

#define log_at(level, e, kv, n, ...)                                          \
	log_full((level), (e), __FILE__, __LINE__, __func__, (kv), (n),       \
		 __VA_ARGS__)

#define log_debug(...) log_at(LOG_LEVEL_DEBUG, 0, NULL, 0, __VA_ARGS__)
#define log_info(...) log_at(LOG_LEVEL_INFO, 0, NULL, 0, __VA_ARGS__)
#define log_warn(...) log_at(LOG_LEVEL_WARN, 0, NULL, 0, __VA_ARGS__)
#define log_error(...) log_at(LOG_LEVEL_ERROR, 0, NULL, 0, __VA_ARGS__)
#define log_warn_errno(e, ...) log_at(LOG_LEVEL_WARN, (e), NULL, 0, __VA_ARGS__)
#define log_error_errno(e, ...) log_at(LOG_LEVEL_ERROR, (e), NULL, 0, __VA_ARGS__)

/* With fields: log_info_kv(LOG_KV({"node", n}), "bound %d pod(s)", k). */
#define log_debug_kv(kv, ...) log_at(LOG_LEVEL_DEBUG, 0, (kv), ARRAY_SIZE(kv), __VA_ARGS__)
#define log_info_kv(kv, ...) log_at(LOG_LEVEL_INFO, 0, (kv), ARRAY_SIZE(kv), __VA_ARGS__)
#define log_warn_kv(kv, ...) log_at(LOG_LEVEL_WARN, 0, (kv), ARRAY_SIZE(kv), __VA_ARGS__)
#define log_error_kv(kv, ...) log_at(LOG_LEVEL_ERROR, 0, (kv), ARRAY_SIZE(kv), __VA_ARGS__)

#endif
