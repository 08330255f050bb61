/*
 * Loading a daemon's configuration from its table: defaults, then the YAML
 * file (common/config-yaml.c), then KANNA_* and Karpenter-named environment
 * variables, then --flags generated from the table with getopt_long. Also
 * SIGHUP reloads, which compare a fresh load with the running one and refuse
 * a change to any key not marked CONFIG_RELOADABLE. Called by every daemon's
 * main(); it returns errors with a message and never exits or logs itself.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config-internal.h"

/* getopt_long values: options map to CONFIG_OPT_BASE + their table index. */
#define CONFIG_OPT_HELP 'h'
#define CONFIG_OPT_CHECK 1
#define CONFIG_OPT_VERSION 2
#define CONFIG_OPT_BASE 0x100
/* Longest environment variable name we build from a key. */
#define CONFIG_ENV_NAME_MAX 128

extern char **environ;

const struct config_enum_value config_log_level_values[] = {
	{ "error", LOG_LEVEL_ERROR },
	{ "warn", LOG_LEVEL_WARN },
	{ "info", LOG_LEVEL_INFO },
	{ "debug", LOG_LEVEL_DEBUG },
	{ NULL, 0 },
};

const struct config_enum_value config_log_format_values[] = {
	{ "auto", LOG_FORMAT_AUTO },
	{ "text", LOG_FORMAT_TEXT },
	{ "json", LOG_FORMAT_JSON },
	{ "journal", LOG_FORMAT_JOURNAL },
	{ NULL, 0 },
};

/* Enums are stored through int *; the log enums must be int-sized. */
_Static_assert(sizeof(enum log_level) == sizeof(int), "enum log_level is not int-sized");
_Static_assert(sizeof(enum log_format) == sizeof(int), "enum log_format is not int-sized");

/* One --name=value seen on the command line, applied after the environment. */
struct config_flag {
	const struct config_option *opt;
	const char *value;
};

int config_errorf(struct config_result *res, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->error, sizeof(res->error), fmt, ap);
	va_end(ap);
	return r;
}

void config_env_name(const char *name, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "KANNA_");

	for (; *name && n + 1 < size; name++, n++) {
		char c = *name;
		buf[n] = c == '-' ? '_' : (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
	}
	if (n < size)
		buf[n] = '\0';
}

const struct config_option *config_find_option(const struct config_schema *schema, const char *name)
{
	for (size_t i = 0; i < schema->n_options; i++)
		if (streq(schema->options[i].name, name))
			return &schema->options[i];
	return NULL;
}

struct config_common *config_common(const struct config_schema *schema, void *cfg)
{
	return (struct config_common *)((char *)cfg + schema->common_offset);
}

void config_free(const struct config_schema *schema, void *cfg)
{
	for (size_t i = 0; i < schema->n_options; i++)
		config_option_free(&schema->options[i], cfg);
}

void config_result_done(struct config_result *res)
{
	free(res->file);
	res->file = NULL;
}

static const char *config_getenv(char **envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* Applies text from `what` (an environment variable, a default, a flag). */
static int config_apply_text(const struct config_option *opt, void *cfg, const char *text,
			     const char *what, struct config_result *res)
{
	char why[CONFIG_ERROR_MAX / 2];
	int r = config_option_set(opt, cfg, text, why, sizeof(why));

	if (r == -ENOMEM)
		return config_errorf(res, r, "Failed to set %s: out of memory", opt->name);
	if (r < 0)
		return config_errorf(res, r, "Failed to load %s: %s: %s", what, opt->name, why);
	return 0;
}

static int config_apply_defaults(const struct config_schema *schema, void *cfg, char **envp,
				 struct config_result *res)
{
	for (size_t i = 0; i < schema->n_options; i++) {
		const struct config_option *opt = &schema->options[i];
		const char *env = opt->default_env ? config_getenv(envp, opt->default_env) : NULL;
		char what[CONFIG_ENV_NAME_MAX + 32];
		int r;

		if (env && *env) {
			snprintf(what, sizeof(what), "environment variable %s", opt->default_env);
			r = config_apply_text(opt, cfg, env, what, res);
		} else if (opt->default_value) {
			r = config_apply_text(opt, cfg, opt->default_value, "built-in default", res);
		} else {
			continue;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* KANNA_<NAME> beats the Karpenter alias when both are set. */
static int config_apply_environment(const struct config_schema *schema, void *cfg, char **envp,
				    struct config_result *res)
{
	for (size_t i = 0; i < schema->n_options; i++) {
		const struct config_option *opt = &schema->options[i];
		char name[CONFIG_ENV_NAME_MAX], what[CONFIG_ENV_NAME_MAX + 32];
		const char *value;
		int r;

		config_env_name(opt->name, name, sizeof(name));
		value = config_getenv(envp, name);
		if (!value && opt->env_alias) {
			snprintf(name, sizeof(name), "%s", opt->env_alias);
			value = config_getenv(envp, name);
		}
		if (!value)
			continue;
		snprintf(what, sizeof(what), "environment variable %s", name);
		r = config_apply_text(opt, cfg, value, what, res);
		if (r < 0)
			return r;
	}
	return 0;
}

static struct option *config_long_options(const struct config_schema *schema)
{
	struct option *o = calloc(schema->n_options + 4, sizeof(*o));
	size_t n = 0;

	if (!o)
		return NULL;
	o[n++] = (struct option){ "help", no_argument, NULL, CONFIG_OPT_HELP };
	o[n++] = (struct option){ "check-config", no_argument, NULL, CONFIG_OPT_CHECK };
	o[n++] = (struct option){ "version", no_argument, NULL, CONFIG_OPT_VERSION };
	for (size_t i = 0; i < schema->n_options; i++)
		o[n++] = (struct option){ schema->options[i].name,
					  schema->options[i].type == CONFIG_BOOL ? optional_argument
										 : required_argument,
					  NULL, CONFIG_OPT_BASE + (int)i };
	return o;
}

/* Collects --name=value pairs in order; --help, --version and --check-config
 * set the action. */
static int config_parse_flags(const struct config_schema *schema, const struct config_source *src,
			      struct config_flag *flags, size_t *n_flags, struct config_result *res)
{
	_cleanup_free_ struct option *longopts = config_long_options(schema);
	int c;

	if (!longopts)
		return config_errorf(res, -ENOMEM, "Failed to parse the command line: out of memory");
	*n_flags = 0;
	optind = 0; /* glibc: full re-initialisation, so reloads parse again */
	opterr = 0;
	while ((c = getopt_long(src->argc, src->argv, "+:h", longopts, NULL)) != -1) {
		const char *arg = src->argv[optind - 1];
		switch (c) {
		case CONFIG_OPT_HELP:
			res->action = CONFIG_ACTION_HELP;
			break;
		case CONFIG_OPT_CHECK:
			res->action = CONFIG_ACTION_CHECK;
			break;
		case CONFIG_OPT_VERSION:
			res->action = CONFIG_ACTION_VERSION;
			break;
		case ':':
			return config_errorf(res, -EINVAL, "Failed to parse %s: a value is required", arg);
		case '?':
			if (optopt && strncmp(arg, "--", 2) == 0)
				return config_errorf(res, -EINVAL, "Failed to parse %s: no value allowed", arg);
			if (optopt && optopt < CONFIG_OPT_BASE)
				return config_errorf(res, -EINVAL, "Failed to parse -%c: unknown option", optopt);
			return config_errorf(res, -EINVAL, "Failed to parse %s: unknown option", arg);
		default:
			flags[*n_flags].opt = &schema->options[c - CONFIG_OPT_BASE];
			flags[*n_flags].value = optarg ? optarg : "true";
			(*n_flags)++;
		}
	}
	if (optind < src->argc)
		return config_errorf(res, -EINVAL, "Failed to parse '%s': unexpected argument",
				     src->argv[optind]);
	return 0;
}

static int config_apply_flags(void *cfg, const struct config_flag *flags, size_t n_flags,
			      struct config_result *res)
{
	for (size_t i = 0; i < n_flags; i++) {
		char why[CONFIG_ERROR_MAX / 2];
		int r = config_option_set(flags[i].opt, cfg, flags[i].value, why, sizeof(why));

		if (r == -ENOMEM)
			return config_errorf(res, r, "Failed to set %s: out of memory", flags[i].opt->name);
		if (r < 0)
			return config_errorf(res, r, "Failed to parse option --%s: %s", flags[i].opt->name, why);
	}
	return 0;
}

/* --config beats KANNA_CONFIG beats the default path, which may be absent. */
static int config_load_layers(const struct config_schema *schema, void *cfg, const struct config_source *src,
			      char **envp, const struct config_flag *flags, size_t n_flags,
			      struct config_result *res)
{
	const char *path = config_getenv(envp, "KANNA_CONFIG");
	int r;

	for (size_t i = 0; i < n_flags; i++)
		if (streq(flags[i].opt->name, "config"))
			path = flags[i].value;
	r = config_apply_defaults(schema, cfg, envp, res);
	if (r < 0)
		return r;
	r = config_load_file(schema, cfg, path ? path : CONFIG_DEFAULT_PATH, path != NULL, res);
	if (r < 0)
		return r;
	r = config_apply_environment(schema, cfg, envp, res);
	if (r < 0)
		return r;
	return config_apply_flags(cfg, flags, n_flags, res);
}

int config_load(const struct config_schema *schema, void *cfg, const struct config_source *src,
		struct config_result *res)
{
	_cleanup_free_ struct config_flag *flags = NULL;
	char **envp = src->envp ? src->envp : environ;
	size_t n_flags = 0;
	int r;

	res->action = CONFIG_ACTION_RUN;
	res->error[0] = '\0';
	res->changed[0] = '\0';
	free(res->file);
	res->file = NULL;
	flags = calloc((size_t)MAX(src->argc, 1), sizeof(*flags));
	if (!flags)
		return config_errorf(res, -ENOMEM, "Failed to load the configuration: out of memory");
	r = config_parse_flags(schema, src, flags, &n_flags, res);
	/* --help and --version answer even when the file is broken. */
	if (r < 0 || res->action == CONFIG_ACTION_HELP || res->action == CONFIG_ACTION_VERSION)
		return r;
	r = config_load_layers(schema, cfg, src, envp, flags, n_flags, res);
	if (r < 0) {
		config_free(schema, cfg);
		return r;
	}
	return 0;
}

static void config_append(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);

static void config_append(char *buf, size_t size, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, size - n, fmt, ap);
	va_end(ap);
}

int config_reload(const struct config_schema *schema, const void *current, void *fresh,
		  const struct config_source *src, struct config_result *res)
{
	char refused[CONFIG_ERROR_MAX] = "";
	int r;

	r = config_load(schema, fresh, src, res);
	if (r < 0)
		return r;
	for (size_t i = 0; i < schema->n_options; i++) {
		const struct config_option *opt = &schema->options[i];
		char before[256], after[256];

		if (config_option_equal(opt, current, fresh))
			continue;
		if (opt->flags & CONFIG_RELOADABLE) {
			config_append(res->changed, sizeof(res->changed), "%s%s",
				      res->changed[0] ? ", " : "", opt->name);
			continue;
		}
		config_format_value(opt, current, before, sizeof(before));
		config_format_value(opt, fresh, after, sizeof(after));
		config_append(refused, sizeof(refused), "%s%s (%s -> %s)", refused[0] ? ", " : "",
			      opt->name, before, after);
	}
	if (refused[0]) {
		config_free(schema, fresh);
		res->changed[0] = '\0';
		return config_errorf(res, -EINVAL,
				     "Failed to reload the configuration: a restart is needed to change %s",
				     refused);
	}
	return 0;
}

static int config_option_check(const struct config_schema *schema, const struct config_option *opt,
			       struct config_result *res)
{
	if (!opt->name || !*opt->name || strspn(opt->name, "abcdefghijklmnopqrstuvwxyz0123456789-") !=
						  strlen(opt->name))
		return config_errorf(res, -EINVAL, "Failed to check %s's table: bad key name '%s'",
				     schema->program, opt->name ? opt->name : "(null)");
	if (streq(opt->name, "help") || streq(opt->name, "check-config") || streq(opt->name, "version"))
		return config_errorf(res, -EINVAL, "Failed to check %s's table: %s is reserved",
				     schema->program, opt->name);
	if (config_find_option(schema, opt->name) != opt)
		return config_errorf(res, -EINVAL, "Failed to check %s's table: %s appears twice",
				     schema->program, opt->name);
	if (!opt->help || !*opt->help)
		return config_errorf(res, -EINVAL, "Failed to check %s's table: %s has no help text",
				     schema->program, opt->name);
	if (opt->min > opt->max || opt->min_double > opt->max_double)
		return config_errorf(res, -EINVAL, "Failed to check %s's table: %s has min > max",
				     schema->program, opt->name);
	if (opt->type == CONFIG_ENUM && (!opt->values || !opt->values[0].name))
		return config_errorf(res, -EINVAL, "Failed to check %s's table: %s has no values",
				     schema->program, opt->name);
	return 0;
}

int config_schema_check(const struct config_schema *schema, struct config_result *res)
{
	_cleanup_free_ void *scratch = NULL;
	size_t size = schema->common_offset + sizeof(struct config_common);
	int r = 0;

	for (size_t i = 0; i < schema->n_options; i++) {
		r = config_option_check(schema, &schema->options[i], res);
		if (r < 0)
			return r;
		/* Every value type is at most 8 bytes. */
		size = MAX(size, schema->options[i].offset + sizeof(uint64_t));
	}
	scratch = calloc(1, size);
	if (!scratch)
		return config_errorf(res, -ENOMEM, "Failed to check %s's table: out of memory",
				     schema->program);
	for (size_t i = 0; i < schema->n_options && r >= 0; i++)
		if (schema->options[i].default_value)
			r = config_apply_text(&schema->options[i], scratch, schema->options[i].default_value,
					      "built-in default", res);
	config_free(schema, scratch);
	return r;
}
