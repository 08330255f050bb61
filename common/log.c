/*
 * Logging backends. Minimal first version: readable text on stderr.
 * (journald and JSON backends land with the logging tests.)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static struct {
	char process[32];
	enum log_format format;
	enum log_level level;
	FILE *stream;
} log_ctx = { "kanna", LOG_FORMAT_TEXT, LOG_LEVEL_INFO, NULL };

int log_setup(const char *process, enum log_format format, enum log_level level)
{
	snprintf(log_ctx.process, sizeof(log_ctx.process), "%s", process);
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
	return log_ctx.level;
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
	if (streq(s, "auto"))
		*ret = LOG_FORMAT_AUTO;
	else if (streq(s, "text"))
		*ret = LOG_FORMAT_TEXT;
	else if (streq(s, "json"))
		*ret = LOG_FORMAT_JSON;
	else if (streq(s, "journal"))
		*ret = LOG_FORMAT_JOURNAL;
	else
		return -EINVAL;
	return 0;
}

int log_full(enum log_level level, int errno_value, const char *file, int line,
	     const char *func, const struct log_kv *kv, size_t n_kv,
	     const char *fmt, ...)
{
	int r = errno_value == 0 ? -EIO : -abs(errno_value);
	FILE *out = log_ctx.stream ? log_ctx.stream : stderr;
	va_list ap;

	if (level > log_ctx.level)
		return r;
	errno = abs(errno_value);
	fprintf(out, "%s %s: ", log_level_to_string(level), log_ctx.process);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < n_kv; i++)
		fprintf(out, " %s=%s", kv[i].key, kv[i].value ? kv[i].value : "");
	fputc('\n', out);
	return r;
}
