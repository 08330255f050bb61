/*
 * The user-facing side of a daemon's configuration table: --help generated
 * from the table, --version, --check-config, and the start-up sequence every main()
 * calls (load, report, set up logging). Calls common/config.c; prints to the
 * given stream or stdout/stderr and never exits itself.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/config-internal.h"

/* --help wraps help text at this column, indented by CONFIG_HELP_INDENT. */
#define CONFIG_HELP_WIDTH 79
#define CONFIG_HELP_INDENT 8

static void config_help_wrapped(FILE *f, const char *text)
{
	size_t col = CONFIG_HELP_INDENT;

	fprintf(f, "%*s", CONFIG_HELP_INDENT, "");
	while (*text) {
		size_t word = strcspn(text, " ");
		if (col > CONFIG_HELP_INDENT && col + 1 + word > CONFIG_HELP_WIDTH) {
			fprintf(f, "\n%*s", CONFIG_HELP_INDENT, "");
			col = CONFIG_HELP_INDENT;
		} else if (col > CONFIG_HELP_INDENT) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", (int)word, text);
		col += word;
		text += word;
		text += strspn(text, " ");
	}
	fputc('\n', f);
}

static void config_help_bounds(const struct config_option *opt, char *buf, size_t size)
{
	char lo[64], hi[64];

	buf[0] = '\0';
	if (opt->type == CONFIG_DURATION && (opt->min || opt->max)) {
		config_format_duration((uint64_t)opt->min, lo, sizeof(lo));
		config_format_duration((uint64_t)opt->max, hi, sizeof(hi));
	} else if ((opt->type == CONFIG_INT || opt->type == CONFIG_UINT) && (opt->min || opt->max)) {
		snprintf(lo, sizeof(lo), "%" PRId64, opt->min);
		snprintf(hi, sizeof(hi), "%" PRId64, opt->max);
	} else if (opt->type == CONFIG_DOUBLE && (opt->min_double != 0 || opt->max_double != 0)) {
		snprintf(lo, sizeof(lo), "%g", opt->min_double);
		snprintf(hi, sizeof(hi), "%g", opt->max_double);
	} else {
		return;
	}
	snprintf(buf, size, " Between %s and %s.", lo, hi);
}

static void config_help_option(FILE *f, const struct config_option *opt)
{
	char env[128], expect[256], bounds[160], details[1024];

	if (opt->type == CONFIG_BOOL)
		fprintf(f, "  --%s[=%s]\n", opt->name, config_option_metavar(opt));
	else
		fprintf(f, "  --%s=%s\n", opt->name, config_option_metavar(opt));
	config_help_wrapped(f, opt->help ? opt->help : "");
	config_option_expectation(opt, expect, sizeof(expect));
	config_help_bounds(opt, bounds, sizeof(bounds));
	config_env_name(opt->name, env, sizeof(env));
	snprintf(details, sizeof(details), "Takes %s.%s Default: %s. Environment: %s%s%s.%s%s", expect,
		 bounds, opt->default_value ? opt->default_value : "none", env,
		 opt->env_alias ? " or " : "", opt->env_alias ? opt->env_alias : "",
		 opt->flags & CONFIG_RELOADABLE ? " Reloadable." : "",
		 opt->flags & CONFIG_NOT_IN_FILE ? " Not in the file." : "");
	config_help_wrapped(f, details);
}

void config_print_help(const struct config_schema *schema, void *file)
{
	FILE *f = file ? file : stdout;

	fprintf(f, "Usage: %s [OPTION]...\n", schema->program);
	if (schema->summary)
		fprintf(f, "%s\n", schema->summary);
	fprintf(f, "\nEvery option is also a key of the configuration file, %s\n"
		   "unless --config names another: shared keys at its top level, any key\n"
		   "under '%s:'. Precedence: defaults < file < environment < options.\n"
		   "See doc/configuration.md.\n\n",
		CONFIG_DEFAULT_PATH, schema->section);
	fprintf(f, "  -h, --help\n");
	config_help_wrapped(f, "Print this help and exit.");
	fprintf(f, "  --version\n");
	config_help_wrapped(f, "Print the program's name and version and exit.");
	fprintf(f, "  --check-config\n");
	config_help_wrapped(f, "Load and check the configuration, print the values in effect, "
			       "exit 0 when valid and 2 when not.");
	for (size_t i = 0; i < schema->n_options; i++)
		config_help_option(f, &schema->options[i]);
}

void config_print_version(const char *program, void *file)
{
	fprintf(file ? file : stdout, "%s (%s) %s\n", program, PACKAGE_NAME, PACKAGE_VERSION);
}

static void config_print_values(const struct config_schema *schema, const void *cfg,
				const struct config_result *res, FILE *f)
{
	fprintf(f, "# %s: configuration is valid (file: %s)\n", schema->program,
		res->file ? res->file : "none");
	for (size_t i = 0; i < schema->n_options; i++) {
		char value[CONFIG_ERROR_MAX];
		config_format_value(&schema->options[i], cfg, value, sizeof(value));
		fprintf(f, "%s: %s\n", schema->options[i].name, value);
	}
}

void config_setup_logging(const struct config_schema *schema, void *cfg)
{
	const struct config_common *common = config_common(schema, cfg);

	log_setup(schema->program, common->log_format, common->log_level);
}

bool config_handle_command_line(const struct config_schema *schema, void *cfg, int argc,
				char **argv, int *ret_exit)
{
	struct config_source src = { .argc = argc, .argv = argv, .envp = NULL };
	struct config_result res = { 0 };
	int r;

	log_setup(schema->program, LOG_FORMAT_AUTO, LOG_LEVEL_INFO);
	r = config_load(schema, cfg, &src, &res);
	if (r < 0) {
		log_error("%s", res.error);
		config_result_done(&res);
		*ret_exit = CONFIG_EXIT_INVALID;
		return true;
	}
	if (res.action == CONFIG_ACTION_HELP) {
		config_print_help(schema, stdout);
		config_result_done(&res);
		*ret_exit = 0;
		return true;
	}
	if (res.action == CONFIG_ACTION_VERSION) {
		config_print_version(schema->program, stdout);
		config_result_done(&res);
		*ret_exit = 0;
		return true;
	}
	if (res.action == CONFIG_ACTION_CHECK) {
		config_print_values(schema, cfg, &res, stdout);
		config_result_done(&res);
		config_free(schema, cfg);
		*ret_exit = 0;
		return true;
	}
	config_setup_logging(schema, cfg);
	log_debug("Loaded configuration from %s", res.file ? res.file : "defaults, environment and options");
	config_result_done(&res);
	return false;
}
