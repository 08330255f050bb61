/*
 * libFuzzer target for the configuration file: arbitrary bytes as the YAML
 * text of kanna.yaml, loaded against a sample table holding every value
 * type. A failure must come with a message; a success must free cleanly and
 * every value must format. The same bytes are also tried as a duration,
 * which must survive a format/parse round trip unchanged, and as one
 * option's value in the environment and on the command line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Durations longer than this are not worth a round trip (and cannot occur). */
#define FUZZ_DURATION_TEXT_MAX 64
/* Option values tried by environment and flag are at most this long. */
#define FUZZ_VALUE_MAX 256

struct fuzz_config {
	struct config_common common;
	uint64_t duration;
	uint64_t never_duration;
	bool flag;
	int64_t signed_number;
	uint64_t count;
	double ratio;
	char *name;
	int mode;
	char **zones;
};

static const struct config_enum_value fuzz_modes[] = {
	{ "fast", 1 }, { "thorough", 2 }, { NULL, 0 },
};

#define OFF(f) offsetof(struct fuzz_config, f)
static const struct config_option fuzz_options[] = {
	CONFIG_COMMON_OPTIONS(struct fuzz_config, common, "9401", "9402"),
	{ .name = "batch-max-duration", .type = CONFIG_DURATION, .offset = OFF(duration),
	  .default_value = "10s", .min = 1, .max = 24 * (int64_t)USEC_PER_HOUR, .help = "d" },
	{ .name = "consolidate-after", .type = CONFIG_DURATION, .offset = OFF(never_duration),
	  .flags = CONFIG_NEVER, .default_value = "Never", .help = "n" },
	{ .name = "dry-run", .type = CONFIG_BOOL, .offset = OFF(flag), .help = "b" },
	{ .name = "offset", .type = CONFIG_INT, .offset = OFF(signed_number), .min = -10, .max = 10,
	  .help = "i" },
	{ .name = "shards", .type = CONFIG_UINT, .offset = OFF(count), .default_value = "1", .help = "u" },
	{ .name = "cpu-ratio", .type = CONFIG_DOUBLE, .offset = OFF(ratio), .min_double = 0,
	  .max_double = 1, .help = "r" },
	{ .name = "cluster-name", .type = CONFIG_STRING, .offset = OFF(name), .help = "s" },
	{ .name = "mode", .type = CONFIG_ENUM, .offset = OFF(mode), .values = fuzz_modes, .help = "e" },
	{ .name = "zones", .type = CONFIG_STRING_LIST, .offset = OFF(zones), .help = "l" },
};

static const struct config_schema fuzz_schema = {
	.program = "kanna-fuzz",
	.section = "scheduler",
	.options = fuzz_options,
	.n_options = ARRAY_SIZE(fuzz_options),
	.common_offset = offsetof(struct fuzz_config, common),
};

static void fuzz_duration(const uint8_t *data, size_t size)
{
	char text[FUZZ_DURATION_TEXT_MAX + 1], again[FUZZ_DURATION_TEXT_MAX];
	uint64_t usec, back;

	if (size > FUZZ_DURATION_TEXT_MAX)
		return;
	memcpy(text, data, size);
	text[size] = '\0';
	if (config_parse_duration(text, true, &usec) < 0)
		return;
	config_format_duration(usec, again, sizeof(again));
	if (config_parse_duration(again, true, &back) < 0 || back != usec)
		abort();
}

/*
 * The same bytes as one option's value, by environment and by flag: the first
 * byte picks the option, the rest (up to the first NUL) is the value.
 */
static void fuzz_value(const uint8_t *data, size_t size)
{
	char value[FUZZ_VALUE_MAX + 1], env[FUZZ_VALUE_MAX + 128], flag[FUZZ_VALUE_MAX + 128];
	char *argv[] = { (char *)"kanna-fuzz", (char *)"--config=/dev/null", flag, NULL };
	char *envp[] = { env, NULL };
	const struct config_option *opt;
	struct config_result res = { 0 };
	struct fuzz_config cfg;
	char name[64];

	if (size < 1 || size > FUZZ_VALUE_MAX)
		return;
	opt = &fuzz_options[data[0] % ARRAY_SIZE(fuzz_options)];
	memcpy(value, data + 1, size - 1);
	value[size - 1] = '\0';
	config_env_name(opt->name, name, sizeof(name));
	snprintf(env, sizeof(env), "%s=%s", name, value);
	snprintf(flag, sizeof(flag), "--%s=%s", opt->name, value);
	for (int pass = 0; pass < 2; pass++) {
		struct config_source src = { pass ? 3 : 2, argv, pass ? (char *[]){ NULL } : envp };
		memset(&cfg, 0, sizeof(cfg));
		if (config_load(&fuzz_schema, &cfg, &src, &res) < 0 && !res.error[0])
			abort();
		config_free(&fuzz_schema, &cfg);
		config_result_done(&res);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_config cfg;
	struct config_result res = { 0 };
	char value[CONFIG_ERROR_MAX];
	int r;

	memset(&cfg, 0, sizeof(cfg));
	r = config_load_buffer(&fuzz_schema, &cfg, (const char *)data, size, "<fuzz>", &res);
	if (r < 0 && !res.error[0])
		abort(); /* every failure explains itself */
	if (r >= 0)
		for (size_t i = 0; i < fuzz_schema.n_options; i++)
			config_format_value(&fuzz_options[i], &cfg, value, sizeof(value));
	config_free(&fuzz_schema, &cfg);
	config_result_done(&res);
	fuzz_duration(data, size);
	fuzz_value(data, size);
	return 0;
}
