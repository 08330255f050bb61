/*
 * Configuration: one declarative table per daemon (STYLE.md rule 13). Each
 * entry names a key, its type, where it lives in the daemon's config struct,
 * its bounds, default, whether SIGHUP may change it, help text and the
 * Karpenter environment name it also answers to. The same table feeds the
 * command line (--name=value, --help), the environment (KANNA_NAME and the
 * alias) and the YAML file (/etc/kanna/kanna.yaml, path by --config).
 * Precedence: defaults < file < environment < flags. doc/configuration.md
 * documents the file layout and every shared key.
 */
#ifndef KANNA_COMMON_CONFIG_H
#define KANNA_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"

/* Where the file is read from unless --config or KANNA_CONFIG say otherwise. */
#define CONFIG_DEFAULT_PATH "/etc/kanna/kanna.yaml"
/* Room for one error message with file:line:column, key path and value. */
#define CONFIG_ERROR_MAX 1024
/* Exit status of --check-config (and of a daemon whose config is wrong). */
#define CONFIG_EXIT_INVALID 2

#ifndef USEC_PER_MSEC
#define USEC_PER_MSEC UINT64_C(1000)
#endif
#ifndef USEC_PER_SEC
#define USEC_PER_SEC UINT64_C(1000000)
#endif
#ifndef USEC_PER_MINUTE
#define USEC_PER_MINUTE (60 * USEC_PER_SEC)
#endif
#ifndef USEC_PER_HOUR
#define USEC_PER_HOUR (60 * USEC_PER_MINUTE)
#endif
/* The value a duration takes when set to "Never" (CONFIG_NEVER allowed). */
#define CONFIG_DURATION_NEVER UINT64_MAX

enum config_type {
	CONFIG_BOOL,        /* bool */
	CONFIG_INT,         /* int64_t */
	CONFIG_UINT,        /* uint64_t */
	CONFIG_DOUBLE,      /* double */
	CONFIG_DURATION,    /* uint64_t microseconds; Go syntax "1m30s" */
	CONFIG_STRING,      /* char *, owned */
	CONFIG_ENUM,        /* int, one of .values */
	CONFIG_STRING_LIST, /* char **, NULL-terminated, owned */
};

enum config_flags {
	CONFIG_RELOADABLE = 1 << 0, /* SIGHUP may change it */
	CONFIG_NEVER = 1 << 1,      /* duration accepts "Never" */
	CONFIG_SHARED = 1 << 2,     /* allowed at the file's top level (common keys) */
	CONFIG_NOT_IN_FILE = 1 << 3, /* flag and environment only (e.g. config) */
	CONFIG_ABSOLUTE_PATH = 1 << 4, /* string must start with '/' */
};

struct config_enum_value {
	const char *name;
	int value;
};

struct config_option {
	const char *name;         /* "batch-max-duration": flag, file key, env */
	enum config_type type;
	size_t offset;            /* offsetof(struct <daemon>_config, field) */
	unsigned flags;           /* enum config_flags */
	const char *default_value; /* text, parsed like any other input; NULL = unset */
	const char *default_env;  /* variable supplying the default when set */
	/* Inclusive bounds for INT/UINT/DURATION (µs); both 0 = unbounded. */
	int64_t min, max;
	/* Inclusive bounds for DOUBLE; both 0 = unbounded. */
	double min_double, max_double;
	const struct config_enum_value *values; /* ENUM: NULL-terminated by name */
	const char *env_alias;    /* Karpenter's name: "BATCH_MAX_DURATION" */
	const char *metavar;      /* --help placeholder; derived from type if NULL */
	const char *help;
};

struct config_schema {
	const char *program;      /* "kanna-scheduler" */
	const char *section;      /* "scheduler": its section in kanna.yaml */
	const char *summary;      /* one line for --help */
	const struct config_option *options;
	size_t n_options;
	size_t common_offset;     /* offsetof(struct <daemon>_config, common) */
};

/*
 * Default loopback ports (metrics, health) per process, so that every process
 * can run on one host; scheduler shards beyond the first set theirs through
 * KANNA_METRICS_PORT / KANNA_HEALTH_PORT in their unit file.
 */
#define CONFIG_WATCHER_METRICS_PORT "9411"
#define CONFIG_WATCHER_HEALTH_PORT "9412"
#define CONFIG_SCHEDULER_METRICS_PORT "9421"
#define CONFIG_SCHEDULER_HEALTH_PORT "9422"
#define CONFIG_LAUNCHER_METRICS_PORT "9431"
#define CONFIG_LAUNCHER_HEALTH_PORT "9432"
#define CONFIG_REAPER_METRICS_PORT "9441"
#define CONFIG_REAPER_HEALTH_PORT "9442"
#define CONFIG_SIM_METRICS_PORT "9451"
#define CONFIG_SIM_HEALTH_PORT "9452"
#define CONFIG_INIT_METRICS_PORT "9461"
#define CONFIG_INIT_HEALTH_PORT "9462"

/* The keys every daemon has; embed as the member named in common_offset. */
struct config_common {
	enum log_level log_level;
	enum log_format log_format;
	char *runtime_dir;
	char *socket_group;
	char *tap_group;
	char **peer_identities;
	uint64_t metrics_port;
	uint64_t health_port;
	char *http_listen_address;
	char *config_file;
};

extern const struct config_enum_value config_log_level_values[];
extern const struct config_enum_value config_log_format_values[];

/*
 * The common entries, first in every daemon's table:
 *   static const struct config_option scheduler_options[] = {
 *           CONFIG_COMMON_OPTIONS(struct scheduler_config, common,
 *                                 CONFIG_SCHEDULER_METRICS_PORT, CONFIG_SCHEDULER_HEALTH_PORT),
 *           { .name = "batch-max-duration", ... },
 *   };
 * Ports are per daemon so that all of them can run on one host.
 */
#define CONFIG_COMMON_OPTIONS(cfg_type, cfg_member, metrics_port_default, health_port_default)      \
	{ .name = "log-level", .type = CONFIG_ENUM,                                         \
	  .offset = offsetof(cfg_type, cfg_member.log_level),                                       \
	  .flags = CONFIG_SHARED | CONFIG_RELOADABLE, .default_value = "info",              \
	  .values = config_log_level_values, .env_alias = "LOG_LEVEL",                       \
	  .help = "Least severe level logged." },                                           \
	{ .name = "log-format", .type = CONFIG_ENUM,                                        \
	  .offset = offsetof(cfg_type, cfg_member.log_format), .flags = CONFIG_SHARED,              \
	  .default_value = "auto", .values = config_log_format_values,                      \
	  .help = "Log backend: auto is journal when stderr is the journal, text "          \
		  "otherwise." },                                                           \
	{ .name = "runtime-dir", .type = CONFIG_STRING,                                     \
	  .offset = offsetof(cfg_type, cfg_member.runtime_dir),                                     \
	  .flags = CONFIG_SHARED | CONFIG_ABSOLUTE_PATH, .default_value = "/run/kanna",     \
	  .default_env = "RUNTIME_DIRECTORY", .metavar = "DIR",                             \
	  .help = "Directory of the ZeroMQ sockets between the daemons (default "           \
		  "$RUNTIME_DIRECTORY when systemd sets it)." },                            \
	{ .name = "socket-group", .type = CONFIG_STRING,                                    \
	  .offset = offsetof(cfg_type, cfg_member.socket_group), .flags = CONFIG_SHARED,            \
	  .default_value = NULL, .metavar = "GROUP",                                        \
	  .help = "Group (name or number) given the message sockets, made 0660 (0600 "     \
		  "without it); the runtime directory may be writable by this group only." }, \
	{ .name = "tap-group", .type = CONFIG_STRING,                                       \
	  .offset = offsetof(cfg_type, cfg_member.tap_group), .flags = CONFIG_SHARED,               \
	  .default_value = NULL, .metavar = "GROUP",                                        \
	  .help = "Operators' group given the <process>.tap socket, made 0660 (0600 "      \
		  "without it); its members may attach kanna-tap." },                       \
	{ .name = "peer-identities", .type = CONFIG_STRING_LIST,                            \
	  .offset = offsetof(cfg_type, cfg_member.peer_identities), .flags = CONFIG_SHARED,         \
	  .default_value = NULL, .metavar = "ROLE=USER[:GROUP],...",                         \
	  .help = "Who the other daemons run as (roles watcher, scheduler, launcher, "     \
		  "reaper): each bound socket admits the roles that belong on it, besides " \
		  "this daemon's own user and root; any other peer is refused." },         \
	{ .name = "metrics-port", .type = CONFIG_UINT,                                      \
	  .offset = offsetof(cfg_type, cfg_member.metrics_port), .flags = CONFIG_SHARED,            \
	  .default_value = (metrics_port_default), .min = 0, .max = 65535,                  \
	  .env_alias = "METRICS_PORT", .metavar = "PORT",                                   \
	  .help = "Port serving Prometheus metrics; 0 disables it." },                      \
	{ .name = "health-port", .type = CONFIG_UINT,                                       \
	  .offset = offsetof(cfg_type, cfg_member.health_port), .flags = CONFIG_SHARED,             \
	  .default_value = (health_port_default), .min = 0, .max = 65535,                   \
	  .env_alias = "HEALTH_PROBE_PORT", .metavar = "PORT",                              \
	  .help = "Port serving /healthz and /readyz; 0 disables it." },                    \
	{ .name = "http-listen-address", .type = CONFIG_STRING,                             \
	  .offset = offsetof(cfg_type, cfg_member.http_listen_address), .flags = CONFIG_SHARED, \
	  .default_value = "127.0.0.1", .metavar = "ADDRESS",                               \
	  .help = "IPv4 or IPv6 address the metrics and health ports listen on: "          \
		  "loopback on a host, 0.0.0.0 in a pod (the kubelet probes the pod's IP)." }, \
	{ .name = "config", .type = CONFIG_STRING,                                          \
	  .offset = offsetof(cfg_type, cfg_member.config_file), .flags = CONFIG_NOT_IN_FILE,        \
	  .default_value = NULL, .metavar = "FILE",                                         \
	  .help = "Configuration file (default " CONFIG_DEFAULT_PATH                        \
		  "; a missing default file is not an error)." }

/* What the caller should do after config_load(). */
enum config_action {
	CONFIG_ACTION_RUN,
	CONFIG_ACTION_HELP,  /* --help: print config_print_help(), exit 0 */
	CONFIG_ACTION_CHECK, /* --check-config: report, exit 0 or 2 */
	CONFIG_ACTION_VERSION, /* --version: print config_print_version(), exit 0 */
};

/* Everything one load reads; kept by the daemon to reload on SIGHUP. */
struct config_source {
	int argc;
	char **argv;       /* argv[0] is the program; getopt may permute it */
	char **envp;       /* NULL-terminated "NAME=value" strings */
};

struct config_result {
	enum config_action action;
	char *file;                /* the file read, NULL if none (owned) */
	char error[CONFIG_ERROR_MAX];
	/* After config_reload(): names of the changed keys, comma-separated. */
	char changed[CONFIG_ERROR_MAX];
};

/*
 * Fills cfg (zeroed by the caller, the size of the daemon's struct) from
 * defaults, file, environment and flags. On failure returns -EINVAL (bad
 * value, key, option or YAML), the open(2) errno of an unreadable file
 * (-ENOENT, -EACCES) or -ENOMEM, always with res->error set, and cfg then
 * holds no allocations. Call config_result_done(res) afterwards.
 */
int config_load(const struct config_schema *schema, void *cfg, const struct config_source *src,
		struct config_result *res);

/*
 * Parses YAML text as if it were the file `name` (tests, the fuzzer): applies
 * the top level and the schema's section on top of what cfg holds.
 */
int config_load_buffer(const struct config_schema *schema, void *cfg, const char *text,
		       size_t size, const char *name, struct config_result *res);

/*
 * SIGHUP: loads src again into `fresh` (zeroed by the caller) and compares it
 * with `current`. Returns 0 when only reloadable keys changed (res->changed
 * lists them; the caller swaps fresh in whole), -EINVAL when the new
 * configuration is invalid or changes a key that needs a restart (res->error
 * says which; fresh is left empty). Never modifies `current`.
 */
int config_reload(const struct config_schema *schema, const void *current, void *fresh,
		  const struct config_source *src, struct config_result *res);

/*
 * Checks a table for mistakes its author can make: names that are not
 * lower-case-with-dashes, duplicates or reserved (help, check-config),
 * missing help, bounds with min > max, enums without values, defaults that
 * do not parse or break their bounds. Each daemon's tests call it.
 */
int config_schema_check(const struct config_schema *schema, struct config_result *res);

/* Frees what cfg owns (strings, lists) and zeroes those members. */
void config_free(const struct config_schema *schema, void *cfg);
void config_result_done(struct config_result *res);

/* Text of one key's current value ("10s", "info", "a,b"). */
int config_format_value(const struct config_option *opt, const void *cfg, char *buf, size_t size);
const struct config_option *config_find_option(const struct config_schema *schema, const char *name);
/* "batch-max-duration" -> "KANNA_BATCH_MAX_DURATION" */
void config_env_name(const char *name, char *buf, size_t size);
struct config_common *config_common(const struct config_schema *schema, void *cfg);

/* --help: usage, then every key with type, default, bounds and env names. */
void config_print_help(const struct config_schema *schema, void *file);
/* "kanna-watcher (kanna) 0.1.0": GNU's --version first line. */
void config_print_version(const char *program, void *file);

/* (Re)applies log-level and log-format to logging, after a load or a reload. */
void config_setup_logging(const struct config_schema *schema, void *cfg);

/*
 * What a daemon's main() calls first: loads, and handles --help and
 * --check-config (printing, logging errors) and sets up logging from the
 * common keys. Returns true when main() should exit with *ret_exit.
 */
bool config_handle_command_line(const struct config_schema *schema, void *cfg, int argc,
				char **argv, int *ret_exit);

/* Duration text, Go syntax: parse "1h30m", format 5400 s as "1h30m". */
int config_parse_duration(const char *s, bool allow_never, uint64_t *ret_usec);
void config_format_duration(uint64_t usec, char *buf, size_t size);

#endif
