/*
 * kanna-init: PID 1 of a kanna container (issue 20). Wiring only: the
 * command line and configuration, the event loop with SIGCHLD, /healthz,
 * /readyz and /metrics, then the supervisor (supervise.c) until every
 * daemon is gone. Exit status: 0 when every daemon exited 0 on the
 * forwarded signal, 1 otherwise, 2 for a bad configuration, 3 when a
 * daemon kept failing (INIT_EXIT_GAVE_UP).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/log.h"
#include "init/init.h"

struct init_run {
	struct init init;
	struct loop *loop;
	struct metrics_registry *metrics;
	struct health_server *health;
};

static bool has_option(int argc, char **argv, const char *option)
{
	for (int i = 1; i < argc; i++)
		if (streq(argv[i], option))
			return true;
	return false;
}

/* The daemons to run: the arguments, else init.daemons. */
static int parse_daemons(const struct init_config *cfg, char **args, int n_args,
			 struct init_daemon *out, size_t *ret_n)
{
	char err[CONFIG_ERROR_MAX];
	char **names = n_args > 0 ? args : cfg->daemons;
	size_t n = 0;

	if (n_args > 0)
		n = (size_t)n_args;
	else
		while (names && names[n])
			n++;
	if (init_daemons_parse(names, n, out, ret_n, err, sizeof(err)) < 0) {
		log_error("%s", err);
		return -EINVAL;
	}
	return 0;
}

/* --check-config checks the daemon list too, before the table's report. */
static int check_daemons(int argc, char **argv, char **args, int n_args)
{
	struct config_source src = { argc, argv, NULL };
	struct config_result res = { 0 };
	struct init_config cfg = { 0 };
	struct init_daemon daemons[INIT_DAEMONS_MAX];
	size_t n;
	int r;

	log_setup(init_schema.program, LOG_FORMAT_AUTO, LOG_LEVEL_INFO);
	r = config_load(&init_schema, &cfg, &src, &res);
	config_result_done(&res);
	if (r < 0)
		return 0; /* config_handle_command_line() reports it */
	r = parse_daemons(&cfg, args, n_args, daemons, &n);
	config_free(&init_schema, &cfg);
	return r;
}

static int run(struct init_run *run, struct init_config *cfg, const struct init_daemon *daemons,
	       size_t n_daemons)
{
	sigset_t chld;
	int r;

	/* Blocked before any thread starts (libmicrohttpd's), so that SIGCHLD
	 * is only ever read from the loop's signalfd. */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	r = pthread_sigmask(SIG_BLOCK, &chld, NULL);
	if (r > 0)
		return log_error_errno(r, "Failed to block SIGCHLD: %m");
	if ((r = loop_new(&run->loop, "init")) < 0)
		return log_error_errno(r, "Failed to create the event loop: %m");
	loop_set_hooks(run->loop, &(struct loop_hooks){ .on_shutdown = init_on_shutdown,
							.on_reload = init_on_reload,
							.userdata = &run->init,
							.shutdown_grace_usec = LOOP_SHUTDOWN_GRACE_NONE });
	if ((r = metrics_registry_new(&run->metrics)) < 0 ||
	    (r = init_register_metrics(&run->init, run->metrics)) < 0)
		return log_error_errno(r, "Failed to register metrics: %m");
	r = health_server_new_at(cfg->common.http_listen_address, run->metrics,
				 (int)cfg->common.metrics_port, (int)cfg->common.health_port, 0,
				 &run->health);
	if (r < 0)
		return log_error_errno(r, "Failed to serve metrics on %s port %" PRIu64
				       " and health on port %" PRIu64 ": %m%s",
				       cfg->common.http_listen_address, cfg->common.metrics_port,
				       cfg->common.health_port,
				       r == -EINVAL ? " (http-listen-address must be an IPv4 or IPv6 address)"
						    : "");
	if ((r = health_server_attach_loop(run->health, run->loop)) < 0)
		return log_error_errno(r, "Failed to attach health checks to the event loop: %m");
	health_server_set_ready(run->health, false, "starting");
	run->init.health = run->health;
	r = init_start(&run->init, run->loop, cfg, daemons, n_daemons, cfg->daemon_dir);
	if (r < 0)
		return r;
	return loop_run(run->loop);
}

int main(int argc, char **argv)
{
	struct init_config cfg = { 0 };
	struct init_run r = { 0 };
	struct init_daemon daemons[INIT_DAEMONS_MAX];
	char **args;
	int n_options, n_args, exit_code;
	size_t n_daemons = 0;

	/* Nothing to hide here, but no core dump or ptrace of the parent of
	 * every daemon either, as the daemons themselves. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		perror("Failed to make kanna-init non-dumpable");
	init_split_arguments(argc, argv, &n_options, &args, &n_args);
	if (has_option(n_options, argv, "--check-config") &&
	    check_daemons(n_options, argv, args, n_args) < 0)
		return CONFIG_EXIT_INVALID;
	if (config_handle_command_line(&init_schema, &cfg, n_options, argv, &exit_code))
		return exit_code;
	if (parse_daemons(&cfg, args, n_args, daemons, &n_daemons) < 0) {
		config_free(&init_schema, &cfg);
		return CONFIG_EXIT_INVALID;
	}
	/* Outside a PID namespace (a test, a plain host) orphans of the
	 * daemons come to us as they would to PID 1. */
	if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		log_warn_errno(errno, "Failed to become the subreaper of the daemons' orphans: %m");
	r.init.argc = n_options;
	r.init.argv = argv;
	exit_code = run(&r, &cfg, daemons, n_daemons) < 0 ? INIT_EXIT_FAILURE : 0;
	if (r.init.cfg) {
		int finished = init_finish(&r.init);
		if (exit_code == 0)
			exit_code = finished;
	}
	health_server_free(r.health);
	metrics_registry_free(r.metrics);
	loop_free(r.loop);
	config_free(&init_schema, &cfg);
	return exit_code;
}
