/* Logging: levels, fields, the three backends and the errno-returning helpers. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <jansson.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/log.h"

static char *buf;
static size_t len;
static FILE *mem;

static void setup(void)
{
	mem = open_memstream(&buf, &len);
	log_setup("kanna-test", LOG_FORMAT_TEXT, LOG_LEVEL_INFO);
	log_set_stream(mem);
}

static void teardown(void)
{
	log_set_stream(NULL);
	fclose(mem);
	free(buf);
}

TestSuite(log, .init = setup, .fini = teardown);

static bool matches(const char *pattern, const char *s)
{
	regex_t re;
	int r;

	cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
	r = regexec(&re, s, 0, NULL, 0);
	regfree(&re);
	return r == 0;
}

Test(log, error_errno_returns_negative_errno_and_formats_percent_m)
{
	int r = log_error_errno(-ENOENT, "Failed to open %s: %m", "/nope");
	fflush(mem);
	cr_assert_eq(r, -ENOENT);
	cr_assert(strstr(buf, "Failed to open /nope: No such file or directory"));
}

Test(log, positive_errno_is_returned_negative)
{
	cr_assert_eq(log_warn_errno(EACCES, "Failed to read: %m"), -EACCES);
	fflush(mem);
	cr_assert(strstr(buf, "Failed to read: Permission denied"));
}

Test(log, error_without_errno_returns_eio)
{
	cr_assert_eq(log_error("plain"), -EIO);
}

Test(log, preserves_the_callers_errno)
{
	errno = EBUSY;
	log_error_errno(-ENOENT, "Failed: %m");
	cr_assert_eq(errno, EBUSY);
}

Test(log, drops_lines_below_the_level)
{
	log_debug("hidden");
	fflush(mem);
	cr_assert_eq(len, 0);
}

Test(log, debug_level_shows_debug_and_warn_level_hides_info)
{
	log_set_level(LOG_LEVEL_DEBUG);
	log_debug("visible-debug");
	log_set_level(LOG_LEVEL_WARN);
	log_info("hidden-info");
	log_warn("visible-warn");
	fflush(mem);
	cr_assert(strstr(buf, "visible-debug"));
	cr_assert_null(strstr(buf, "hidden-info"));
	cr_assert(strstr(buf, "visible-warn"));
	cr_assert_eq(log_get_level(), LOG_LEVEL_WARN);
}

Test(log, level_and_format_names_round_trip)
{
	static const char *levels[] = { "error", "warn", "info", "debug" };
	static const char *formats[] = { "auto", "text", "json", "journal" };
	enum log_level l;
	enum log_format f;

	for (size_t i = 0; i < ARRAY_SIZE(levels); i++) {
		cr_assert_eq(log_level_from_string(levels[i], &l), 0);
		cr_assert_str_eq(log_level_to_string(l), levels[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
		cr_assert_eq(log_format_from_string(formats[i], &f), 0);
		cr_assert_str_eq(log_format_to_string(f), formats[i]);
	}
	cr_assert_eq(log_level_from_string("verbose", &l), -EINVAL);
	cr_assert_eq(log_format_from_string("xml", &f), -EINVAL);
}

Test(log, fields_are_printed_as_key_value)
{
	log_info_kv(LOG_KV({ "node", "ip-10-0-0-1" }, { "pods", "5" }), "bound %d pod(s)", 5);
	fflush(mem);
	cr_assert(strstr(buf, "bound 5 pod(s)"));
	cr_assert(strstr(buf, "node=ip-10-0-0-1"));
	cr_assert(strstr(buf, "pods=5"));
}

Test(log, text_line_carries_time_level_and_process)
{
	log_warn("disk almost full");
	fflush(mem);
	cr_assert(matches("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
			  "warn +kanna-test: disk almost full\n$", buf), "got: %s", buf);
}

Test(log, text_quotes_values_with_spaces_and_escapes_quotes)
{
	log_info_kv(LOG_KV({ "reason", "no instance type fits" }, { "q", "say \"hi\"" },
			   { "empty", "" }, { "pod", "default/a" }), "skipped");
	fflush(mem);
	cr_assert(strstr(buf, "reason=\"no instance type fits\""), "got: %s", buf);
	cr_assert(strstr(buf, "q=\"say \\\"hi\\\"\""), "got: %s", buf);
	cr_assert(strstr(buf, "empty=\"\""), "got: %s", buf);
	cr_assert(strstr(buf, "pod=default/a\n"), "got: %s", buf);
}

Test(log, text_keeps_one_line_per_event_when_the_message_has_newlines)
{
	log_info_kv(LOG_KV({ "detail", "a\nb" }), "x");
	fflush(mem);
	cr_assert(strstr(buf, "detail=\"a\\nb\"\n"), "got: %s", buf);
}

/* An API server's error text reaches the message through %s: its line
 * break must not start a second line that reads like one of ours. */
Test(log, text_message_with_a_newline_from_an_api_error_stays_one_line)
{
	const char *api_message = "admission denied\n2026-01-01T00:00:00.000Z info  kanna-launcher: "
				  "launched nodeclaim\r\x1b[2K";

	log_error("Failed to create NodeClaim: %s", api_message);
	fflush(mem);
	cr_assert_eq(buf[len - 1], '\n');
	cr_assert_eq(strchr(buf, '\n'), buf + len - 1, "one line expected: %s", buf);
	cr_assert(strstr(buf, "admission denied\\n2026-01-01T00:00:00.000Z info  kanna-launcher: "
			      "launched nodeclaim\\x0d\\x1b[2K\n"), "got: %s", buf);
}

static json_t *only_json_line(void)
{
	json_error_t error;
	json_t *j;

	fflush(mem);
	cr_assert_eq(buf[len - 1], '\n');
	cr_assert_eq(strchr(buf, '\n'), buf + len - 1, "one line expected: %s", buf);
	j = json_loads(buf, 0, &error);
	cr_assert_not_null(j, "invalid JSON (%s): %s", error.text, buf);
	return j;
}

Test(log, json_line_has_level_time_logger_message_fields_and_error)
{
	json_t *j;

	log_setup("kanna-scheduler", LOG_FORMAT_JSON, LOG_LEVEL_INFO);
	cr_assert_eq(log_get_format(), LOG_FORMAT_JSON);
	log_at(LOG_LEVEL_ERROR, -ECONNREFUSED, LOG_KV({ "nodeclaim", "default-abc12" }, { "zone", "us-west-2a" }), 2,
	       "Failed to reach %s: %m", "the launcher");
	j = only_json_line();
	cr_assert_str_eq(json_string_value(json_object_get(j, "level")), "error");
	cr_assert(matches("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$",
			  json_string_value(json_object_get(j, "time"))));
	cr_assert_str_eq(json_string_value(json_object_get(j, "logger")), "kanna-scheduler");
	cr_assert_str_eq(json_string_value(json_object_get(j, "message")),
			 "Failed to reach the launcher: Connection refused");
	cr_assert_str_eq(json_string_value(json_object_get(j, "error")), "Connection refused");
	cr_assert_str_eq(json_string_value(json_object_get(j, "nodeclaim")), "default-abc12");
	cr_assert_str_eq(json_string_value(json_object_get(j, "zone")), "us-west-2a");
	cr_assert(strstr(json_string_value(json_object_get(j, "caller")), "test_log.c:"));
	json_decref(j);
}

Test(log, json_line_without_errno_has_no_error_key)
{
	json_t *j;

	log_setup("kanna-watcher", LOG_FORMAT_JSON, LOG_LEVEL_INFO);
	log_info("found provisionable pod(s)");
	j = only_json_line();
	cr_assert_null(json_object_get(j, "error"));
	cr_assert_str_eq(json_string_value(json_object_get(j, "level")), "info");
	json_decref(j);
}

Test(log, json_field_named_like_a_standard_key_does_not_replace_it)
{
	json_t *j;

	log_setup("kanna-test", LOG_FORMAT_JSON, LOG_LEVEL_INFO);
	log_info_kv(LOG_KV({ "message", "from field" }), "from message");
	j = only_json_line();
	cr_assert_str_eq(json_string_value(json_object_get(j, "message")), "from message");
	cr_assert_str_eq(json_string_value(json_object_get(j, "field.message")), "from field");
	json_decref(j);
}

Test(log, json_survives_invalid_utf8_and_quotes)
{
	json_t *j;

	log_setup("kanna-test", LOG_FORMAT_JSON, LOG_LEVEL_INFO);
	log_info_kv(LOG_KV({ "raw", "\xff\xfe\"" }), "bad \xc3 byte");
	j = only_json_line();
	cr_assert_str_eq(json_string_value(json_object_get(j, "message")), "bad ? byte");
	cr_assert_str_eq(json_string_value(json_object_get(j, "raw")), "??\"");
	json_decref(j);
}

Test(log, journal_stream_matching_stderr_selects_the_journal)
{
	FILE *f = tmpfile();
	struct stat st;
	char js[64];

	cr_assert_not_null(f);
	cr_assert_eq(fstat(fileno(f), &st), 0);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	cr_assert(log_journal_stream_matches(js, fileno(f)));
	cr_assert_eq(log_format_resolve(LOG_FORMAT_AUTO, js, fileno(f)), LOG_FORMAT_JOURNAL);
	/* An explicit choice is never overridden. */
	cr_assert_eq(log_format_resolve(LOG_FORMAT_JSON, js, fileno(f)), LOG_FORMAT_JSON);
	fclose(f);
}

Test(log, journal_stream_of_another_file_or_garbage_selects_text)
{
	FILE *f = tmpfile();
	struct stat st;
	char js[64];

	cr_assert_not_null(f);
	cr_assert_eq(fstat(fileno(f), &st), 0);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + 1);
	cr_assert_not(log_journal_stream_matches(js, fileno(f)));
	cr_assert_eq(log_format_resolve(LOG_FORMAT_AUTO, js, fileno(f)), LOG_FORMAT_TEXT);
	cr_assert_eq(log_format_resolve(LOG_FORMAT_AUTO, NULL, fileno(f)), LOG_FORMAT_TEXT);
	cr_assert_not(log_journal_stream_matches("", fileno(f)));
	cr_assert_not(log_journal_stream_matches("12", fileno(f)));
	cr_assert_not(log_journal_stream_matches("1:2:3", fileno(f)));
	cr_assert_not(log_journal_stream_matches("a:b", fileno(f)));
	cr_assert_not(log_journal_stream_matches(js, -1));
	fclose(f);
}

Test(log, journal_field_names_are_upper_case)
{
	char name[64];

	log_journal_field_name("nodeclaim", name, sizeof(name));
	cr_assert_str_eq(name, "NODECLAIM");
	log_journal_field_name("instance-type", name, sizeof(name));
	cr_assert_str_eq(name, "INSTANCE_TYPE");
	log_journal_field_name("_1pod.name", name, sizeof(name));
	cr_assert_str_eq(name, "POD_NAME");
}

#define LOG_THREAD_LINES 2000

static void *log_many(void *arg)
{
	const char *who = arg;

	for (int i = 0; i < LOG_THREAD_LINES; i++)
		log_info_kv(LOG_KV({ "thread", who }), "line %d from %s end", i, who);
	return NULL;
}

Test(log, two_threads_never_interleave_a_line)
{
	pthread_t a, b;
	size_t lines = 0;

	cr_assert_eq(pthread_create(&a, NULL, log_many, (void *)"alpha"), 0);
	cr_assert_eq(pthread_create(&b, NULL, log_many, (void *)"beta"), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	fflush(mem);
	for (char *p = buf, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
		*nl = '\0';
		cr_assert(matches("^[^ ]+ info +kanna-test: line [0-9]+ from (alpha end thread=alpha|beta end thread=beta)$", p),
			  "mangled line: %s", p);
		lines++;
	}
	cr_assert_eq(lines, 2 * LOG_THREAD_LINES);
}

Test(log_journal, falls_back_to_text_on_stderr_without_a_journal, .init = cr_redirect_stderr)
{
	static char text[4096];
	size_t n;

	if (access("/run/systemd/journal/socket", F_OK) == 0)
		cr_skip_test("a journal is running here; the line went to it");
	log_setup("kanna-test", LOG_FORMAT_JOURNAL, LOG_LEVEL_INFO);
	cr_assert_eq(log_get_format(), LOG_FORMAT_TEXT);
	log_info_kv(LOG_KV({ "nodeclaim", "default-x" }), "launched nodeclaim");
	fflush(stderr);
	n = fread(text, 1, sizeof(text) - 1, cr_get_redirected_stderr());
	text[n] = '\0';
	cr_assert(strstr(text, "kanna-test: launched nodeclaim nodeclaim=default-x\n"), "got: %s", text);
}
