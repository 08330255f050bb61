/* Logging: levels, fields and the errno-returning helpers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

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

Test(log, error_errno_returns_negative_errno_and_formats_percent_m)
{
	int r = log_error_errno(-ENOENT, "Failed to open %s: %m", "/nope");
	fflush(mem);
	cr_assert_eq(r, -ENOENT);
	cr_assert(strstr(buf, "Failed to open /nope: No such file or directory"));
}

Test(log, drops_lines_below_the_level)
{
	log_debug("hidden");
	fflush(mem);
	cr_assert_eq(len, 0);
}

Test(log, fields_are_printed_as_key_value)
{
	log_info_kv(LOG_KV({ "node", "ip-10-0-0-1" }, { "pods", "5" }), "bound %d pod(s)", 5);
	fflush(mem);
	cr_assert(strstr(buf, "bound 5 pod(s)"));
	cr_assert(strstr(buf, "node=ip-10-0-0-1"));
	cr_assert(strstr(buf, "pods=5"));
}
