/*
 * kanna-tap's configuration table and command line (tools/tap-config.h).
 * kanna-tap parses its own argv (short options, repeatable filters), then
 * hands the options that are configuration keys to common/config.c as
 * --key=value flags, so that file, environment and options are layered,
 * checked and reported exactly as for the daemons. Cleanup style:
 * _cleanup_ attributes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sock.h"
#include "common/util.h"
#include "tools/tap-config.h"
#include "tools/tap-format.h"

static const struct config_enum_value tap_output_values[] = {
	{ "auto", TAP_OUTPUT_AUTO },
	{ "json", TAP_OUTPUT_JSON },
	{ "text", TAP_OUTPUT_TEXT },
	{ NULL, 0 },
};

/* The shared keys and the Kubernetes client keys, so that the one
 * kanna.yaml of a host loads here too, as for kanna-init (kanna-tap serves
 * no metrics or probes, its ports default to 0, and talks to no API
 * server: all unused but runtime-dir and the log keys). */
static const struct config_option tap_option_table[] = {
	CONFIG_COMMON_OPTIONS(struct tap_config, common, "0", "0"),
	KUBE_SETTINGS_OPTIONS(struct tap_config, kube),
	{ .name = "output", .type = CONFIG_ENUM, .offset = offsetof(struct tap_config, output),
	  .default_value = "auto", .values = tap_output_values, .metavar = "FORMAT",
	  .help = "How messages are printed: json (one object per line), text (one readable "
		  "line per message) or auto (text on a terminal, json otherwise)." },
	{ .name = "summary-interval", .type = CONFIG_DURATION,
	  .offset = offsetof(struct tap_config, summary_interval_usec), .default_value = "1s",
	  .min = 100 * (int64_t)USEC_PER_MSEC, .max = (int64_t)USEC_PER_HOUR, .metavar = "DURATION",
	  .help = "How often --summary prints counts and rates." },
	{ .name = "show-user-data", .type = CONFIG_BOOL,
	  .offset = offsetof(struct tap_config, show_user_data), .default_value = "false",
	  .help = "Print EC2NodeClass user data in clear (default: its length and SHA-256 prefix "
		  "only)." },
};

const struct config_schema tap_config_schema = {
	.program = "kanna-tap",
	.section = "tap",
	.summary = "Print the messages kanna daemons send and receive.",
	.options = tap_option_table,
	.n_options = ARRAY_SIZE(tap_option_table),
	.common_offset = offsetof(struct tap_config, common),
};

static void help(void)
{
	printf("Usage: kanna-tap [OPTIONS]\n"
	       "Print the messages kanna daemons send and receive: one JSON object or one\n"
	       "readable line per message, or counts and rates (--summary).\n\n"
	       "What to follow (a message is shown when it matches any --type, any --process\n"
	       "and, when given, any --pod/--nodeclaim/--nodepool; patterns are globs):\n"
	       "  -t, --type=TYPE        messages of this type (\"%s\" selects\n"
	       "                         messages that failed to decode)\n"
	       "  -p, --process=NAME     this process only, e.g. launcher; others are not\n"
	       "                         attached at all\n"
	       "      --pod=[NS/]NAME    messages naming this pod (pending pods, plans,\n"
	       "                         results, state deltas, disruption decisions)\n"
	       "      --nodeclaim=NAME   messages naming this NodeClaim\n"
	       "      --nodepool=NAME    messages naming this NodePool\n"
	       "  -n, --count=N          exit after N messages\n\n"
	       "How to print:\n"
	       "  -o, --output=FORMAT    json, text or auto (text on a terminal, json otherwise)\n"
	       "      --summary[=INTERVAL]  instead of each message, counts and rates per\n"
	       "                         process, socket and type every INTERVAL (default\n"
	       "                         summary-interval, 1s) and the totals at exit\n"
	       "      --show-user-data   print EC2NodeClass user data in clear (default:\n"
	       "                         its length and SHA-256 prefix only)\n\n"
	       "Configuration (the daemons' file and keys, see doc/configuration.md):\n"
	       "  -d, --runtime-dir=DIR  where the daemons' tap sockets are (default:\n"
	       "                         $KANNA_RUNTIME_DIR, the file's runtime-dir,\n"
	       "                         $RUNTIME_DIRECTORY, else %s)\n"
	       "      --config=FILE      configuration file (default $KANNA_CONFIG, else\n"
	       "                         %s): shared keys at the top level,\n"
	       "                         output, summary-interval, show-user-data also\n"
	       "                         under 'tap:'\n"
	       "      --log-level=LEVEL  error, warn, info or debug\n"
	       "      --log-format=FORMAT  auto, text, json or journal\n"
	       "      --check-config     print the configuration in effect and exit\n"
	       "  -h, --help             show this help\n"
	       "      --version          print the version and exit\n",
	       TAP_TYPE_UNDECODABLE, SOCK_RUNTIME_DIR_DEFAULT, CONFIG_DEFAULT_PATH);
}

/* The --key=value flags handed to common/config.c, all owned. */
struct flags {
	char **argv;
	int argc;
};

static void flags_done(struct flags *f)
{
	for (int i = 0; i < f->argc; i++)
		free(f->argv[i]);
	free(f->argv);
}

static int flags_add(struct flags *f, const char *key, const char *value)
{
	char **a = realloc(f->argv, (size_t)(f->argc + 2) * sizeof(char *));
	if (!a)
		return -ENOMEM;
	f->argv = a;
	if (!value)
		a[f->argc] = strdup(key);
	else if (asprintf(&a[f->argc], "--%s=%s", key, value) < 0)
		a[f->argc] = NULL;
	if (!a[f->argc])
		return -ENOMEM;
	a[++f->argc] = NULL;
	return 0;
}

/* --runtime-dir as given, made absolute (the key must be: a relative one
 * on the command line is taken from the current directory, as before). */
static int flags_add_runtime_dir(struct flags *f, const char *dir)
{
	_cleanup_free_ char *cwd = NULL, *abs = NULL;

	if (dir[0] == '/')
		return flags_add(f, "runtime-dir", dir);
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return -errno;
	if (asprintf(&abs, "%s/%s", cwd, dir) < 0)
		return -ENOMEM;
	return flags_add(f, "runtime-dir", abs);
}

static int parse_count(const char *arg, uint64_t *ret)
{
	char *end;

	errno = 0;
	*ret = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || *ret == 0)
		return log_error_errno(EINVAL, "Failed to parse --count '%s': expected a positive integer",
				       arg);
	return 0;
}

/* Returns 1 to go on to the configuration, 0 to exit successfully (--help,
 * --version), negative on a usage error. */
static int parse_argv(struct tap_options *opts, struct flags *flags, int argc, char **argv)
{
	enum {
		ARG_SHOW_USER_DATA = 0x100,
		ARG_VERSION,
		ARG_POD,
		ARG_NODECLAIM,
		ARG_NODEPOOL,
		ARG_SUMMARY,
		ARG_CONFIG,
		ARG_LOG_LEVEL,
		ARG_LOG_FORMAT,
		ARG_CHECK_CONFIG,
	};
	static const struct option options[] = {
		{ "runtime-dir", required_argument, NULL, 'd' },
		{ "type", required_argument, NULL, 't' },
		{ "process", required_argument, NULL, 'p' },
		{ "pod", required_argument, NULL, ARG_POD },
		{ "nodeclaim", required_argument, NULL, ARG_NODECLAIM },
		{ "nodepool", required_argument, NULL, ARG_NODEPOOL },
		{ "count", required_argument, NULL, 'n' },
		{ "output", required_argument, NULL, 'o' },
		{ "summary", optional_argument, NULL, ARG_SUMMARY },
		{ "show-user-data", no_argument, NULL, ARG_SHOW_USER_DATA },
		{ "config", required_argument, NULL, ARG_CONFIG },
		{ "log-level", required_argument, NULL, ARG_LOG_LEVEL },
		{ "log-format", required_argument, NULL, ARG_LOG_FORMAT },
		{ "check-config", no_argument, NULL, ARG_CHECK_CONFIG },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{}
	};
	int c, r = 0;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":d:t:p:n:o:h", options, NULL)) >= 0) {
		switch (c) {
		case 'd':
			r = flags_add_runtime_dir(flags, optarg);
			break;
		case 't':
			r = tap_patterns_add(&opts->filter.types, optarg);
			break;
		case 'p':
			r = tap_patterns_add(&opts->filter.processes, optarg);
			break;
		case ARG_POD:
			r = tap_patterns_add(&opts->filter.pods, optarg);
			break;
		case ARG_NODECLAIM:
			r = tap_patterns_add(&opts->filter.nodeclaims, optarg);
			break;
		case ARG_NODEPOOL:
			r = tap_patterns_add(&opts->filter.nodepools, optarg);
			break;
		case 'n':
			r = parse_count(optarg, &opts->count);
			break;
		case 'o':
			r = flags_add(flags, "output", optarg);
			break;
		case ARG_SUMMARY:
			opts->summary = true;
			if (optarg)
				r = flags_add(flags, "summary-interval", optarg);
			break;
		case ARG_SHOW_USER_DATA:
			r = flags_add(flags, "show-user-data", "true");
			break;
		case ARG_CONFIG:
			r = flags_add(flags, "config", optarg);
			break;
		case ARG_LOG_LEVEL:
			r = flags_add(flags, "log-level", optarg);
			break;
		case ARG_LOG_FORMAT:
			r = flags_add(flags, "log-format", optarg);
			break;
		case ARG_CHECK_CONFIG:
			r = flags_add(flags, "--check-config", NULL);
			break;
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			config_print_version("kanna-tap", stdout);
			return 0;
		case ':':
			return log_error_errno(EINVAL, "Failed to parse arguments: %s needs a value",
					       argv[optind - 1]);
		default:
			return log_error_errno(EINVAL, "Failed to parse arguments: unknown option %s (see --help)",
					       argv[optind - 1]);
		}
		if (r < 0)
			return r == -ENOMEM ? log_error_errno(r, "Failed to parse arguments: %m") : r;
	}
	if (optind < argc)
		return log_error_errno(EINVAL, "Failed to parse arguments: unexpected argument '%s' (see --help)",
				       argv[optind]);
	return 1;
}

bool tap_config_handle_command_line(struct tap_config *cfg, struct tap_options *opts, int argc,
				    char **argv, int *ret_exit)
{
	_cleanup_(flags_done) struct flags flags = { 0 };
	int r;

	log_setup(tap_config_schema.program, LOG_FORMAT_TEXT, LOG_LEVEL_INFO);
	r = flags_add(&flags, argc > 0 ? argv[0] : "kanna-tap", NULL);
	if (r >= 0)
		r = parse_argv(opts, &flags, argc, argv);
	if (r <= 0) {
		*ret_exit = r < 0 ? EXIT_FAILURE : 0;
		return true;
	}
	return config_handle_command_line(&tap_config_schema, cfg, flags.argc, flags.argv, ret_exit);
}

void tap_config_done(struct tap_config *cfg, struct tap_options *opts)
{
	config_free(&tap_config_schema, cfg);
	tap_filter_done(&opts->filter);
}
