/*
 * kanna-init, PID 1 of a kanna container: its configuration (config.c),
 * the daemon names it runs ("watcher", "scheduler@1"), the restart policy
 * arithmetic (backoff.c, pure, unit-tested) and the supervisor that spawns,
 * reaps, restarts and stops the children on the event loop (supervise.c).
 * main.c wires them. Nothing here talks to Kubernetes or ZeroMQ.
 */
#ifndef KANNA_INIT_INIT_H
#define KANNA_INIT_INIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/health.h"
#include "common/kube-settings.h"
#include "common/loop.h"
#include "common/metrics.h"

/* Exit statuses besides 0 (every child exited 0 on the forwarded signal)
 * and CONFIG_EXIT_INVALID (2): a child exited non-zero or had to be killed
 * while stopping, or init could not start; a child kept failing (give-up). */
#define INIT_EXIT_FAILURE 1
#define INIT_EXIT_GAVE_UP 3

/* Most daemons one init runs: four processes and a dozen scheduler shards. */
#define INIT_DAEMONS_MAX 16
/* Upper bound of give-up-after: the restart history is a fixed ring. */
#define INIT_GIVE_UP_MAX 100

struct init_config {
	struct config_common common;
	/* The Kubernetes keys every daemon shares may stand at the top of the
	 * same kanna.yaml: read and checked, unused (init never calls the API). */
	struct kube_settings kube;
	char **daemons;      /* init.daemons; replaced by DAEMON arguments */
	char *daemon_dir;    /* NULL: kanna-init's own directory, then $PATH */
	uint64_t grace_period_usec;
	uint64_t restart_backoff_initial_usec;
	uint64_t restart_backoff_max_usec;
	uint64_t give_up_after; /* restarts within give_up_window; 0 = never */
	uint64_t give_up_window_usec;
};

extern const struct config_schema init_schema;

/*
 * The command line split in two: argv[0] and the options (for the config
 * table), then the DAEMON arguments (after "--" or from the first word
 * that is not an option or an option's value). Points into argv.
 */
void init_split_arguments(int argc, char **argv, int *ret_n_options, char ***ret_daemons,
			  int *ret_n_daemons);

/* One daemon to run, parsed from its name in the list. */
struct init_daemon {
	char name[32];    /* "kanna-scheduler@1": logs, /readyz, metrics */
	char program[32]; /* "kanna-scheduler": the binary */
	unsigned shard, n_shards; /* scheduler@N: shard N of n_shards; else 0, 0 */
};

/*
 * Parses "watcher", "scheduler", "scheduler@N", "launcher", "reaper". The
 * scheduler@ entries must be 0..M-1, each once, where M is their number
 * (each gets --shard=N/M). Returns 0, or -EINVAL with a "Failed to ..."
 * message in err.
 */
int init_daemons_parse(char *const *names, size_t n_names, struct init_daemon *out,
		       size_t *ret_n, char *err, size_t err_size);

/* ---- restart policy (backoff.c) ----------------------------------------- */

struct init_restart_policy {
	uint64_t backoff_initial_usec;
	uint64_t backoff_max_usec;
	uint64_t give_up_after;
	uint64_t give_up_window_usec;
};

/* One child's restart history. Zero-initialised is "never failed". */
struct init_restarts {
	unsigned consecutive;  /* failures since it last ran stably */
	uint64_t exits[INIT_GIVE_UP_MAX + 1]; /* ring of exit times (monotonic µs) */
	size_t next, count;
};

/* The delay before the restart after `consecutive` failures in a row
 * (1 → initial, doubling, capped at max). */
uint64_t init_backoff_delay(const struct init_restart_policy *p, unsigned consecutive);
/* How long a child must run for its next failure to count as the first
 * again: twice the maximum backoff, as the kubelet's container backoff. */
uint64_t init_backoff_reset_usec(const struct init_restart_policy *p);

/*
 * Records an unexpected exit at now_usec after the child ran ran_usec.
 * Returns 0 with *ret_delay_usec set when it should be restarted, or 1
 * when it has now failed more than give_up_after times within
 * give_up_window (init gives up).
 */
int init_restarts_record(struct init_restarts *r, const struct init_restart_policy *p,
			 uint64_t now_usec, uint64_t ran_usec, uint64_t *ret_delay_usec);

/* ---- the supervisor (supervise.c) --------------------------------------- */

enum init_child_state {
	INIT_CHILD_STOPPED, /* not started, or exited while init stops */
	INIT_CHILD_RUNNING,
	INIT_CHILD_BACKOFF, /* exited, waiting to be restarted */
};

struct init;

struct init_child {
	struct init *init;
	struct init_daemon daemon;
	enum init_child_state state;
	pid_t pid;
	uint64_t started_usec;
	uint64_t restart_at_usec;
	struct init_restarts restarts;
	sd_event_source *restart_timer;
	bool failed_stop; /* exited non-zero, or was killed, while stopping */
};

struct init {
	struct init_config *cfg; /* main()'s; a reload replaces it in place */
	int argc;                /* the options only, read again on SIGHUP */
	char **argv;
	struct loop *loop;
	struct health_server *health; /* may be NULL (health-port 0) */
	struct metrics_counter *restarts_total;
	struct metrics_counter *exits_total;
	sd_event_source *sigchld;
	sd_event_source *grace_timer;
	char daemon_dir[4096]; /* where the binaries are; "" = $PATH */
	struct init_child children[INIT_DAEMONS_MAX];
	size_t n_children;
	bool stopping;
	int exit_code;
};

/* Registers init's metrics in reg. */
int init_register_metrics(struct init *init, struct metrics_registry *reg);
/*
 * Starts every daemon on the loop: SIGCHLD must already be blocked (main()
 * blocks it before any thread starts). Returns 0 or a negative errno.
 */
int init_start(struct init *init, struct loop *loop, struct init_config *cfg,
	       const struct init_daemon *daemons, size_t n_daemons, const char *daemon_dir);
/* The loop's on_shutdown hook: forwards the signal, arms the grace timer. */
int init_on_shutdown(struct loop *loop, void *userdata);
/* The loop's on_reload hook: reloads kanna-init's own configuration (all
 * or nothing, as the daemons do) and forwards SIGHUP to every running child. */
int init_on_reload(struct loop *loop, void *userdata);
/* After the loop: kills (SIGKILL) and reaps what still runs; the exit status. */
int init_finish(struct init *init);

#endif
