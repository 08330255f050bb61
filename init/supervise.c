/*
 * The supervisor: spawns each daemon (its own process group, default
 * signals, the same configuration file), reaps every child and every
 * orphan that PID 1 (or a subreaper) inherits on SIGCHLD, restarts a
 * daemon that exits unexpectedly after the backoff of backoff.c or gives
 * up, forwards SIGTERM/SIGINT (and SIGHUP) and kills what is left after
 * grace-period. Everything runs from the event loop; nothing here blocks
 * but init_finish(), after the loop. Single exit label style.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "init/init.h"

extern char **environ;

static const char *signal_name(int signo)
{
	const char *abbrev = sigabbrev_np(signo);

	return abbrev ? abbrev : "unknown";
}

/* "exited with status 1", "was killed by signal KILL" (the log's wording). */
static void describe_exit(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "was killed by signal %s%s", signal_name(WTERMSIG(status)),
			 WCOREDUMP(status) ? " (core dumped)" : "");
	else
		snprintf(buf, size, "changed state (wait status 0x%x)", (unsigned)status);
}

static struct init_restart_policy restart_policy(const struct init *init)
{
	return (struct init_restart_policy){
		.backoff_initial_usec = init->cfg->restart_backoff_initial_usec,
		.backoff_max_usec = MAX(init->cfg->restart_backoff_max_usec,
					init->cfg->restart_backoff_initial_usec),
		.give_up_after = init->cfg->give_up_after,
		.give_up_window_usec = init->cfg->give_up_window_usec,
	};
}

/* /readyz: ready while every daemon runs; else it names the first that does not. */
static void update_readiness(struct init *init)
{
	char reason[256];
	uint64_t now = clock_monotonic_usec();

	if (!init->health)
		return;
	if (init->stopping) {
		health_server_set_ready(init->health, false, "stopping");
		return;
	}
	for (size_t i = 0; i < init->n_children; i++) {
		const struct init_child *c = &init->children[i];
		char when[64];

		if (c->state == INIT_CHILD_RUNNING)
			continue;
		config_format_duration(c->restart_at_usec > now ? c->restart_at_usec - now : 0, when,
				       sizeof(when));
		snprintf(reason, sizeof(reason), "%s restarting in %s", c->daemon.name, when);
		health_server_set_ready(init->health, false, reason);
		return;
	}
	health_server_set_ready(init->health, true, NULL);
}

/* Sends signo to the child's process group (its helpers too), or to the
 * child alone when it left the group. */
static void signal_child(struct init_child *c, int signo)
{
	if (c->pid <= 1) /* kill(-0) or kill(-1) would reach far more */
		return;
	if (kill(-c->pid, signo) < 0 && kill(c->pid, signo) < 0 && errno != ESRCH)
		log_warn_errno(errno, "Failed to send SIG%s to %s (pid %d): %m", signal_name(signo),
			       c->daemon.name, (int)c->pid);
}

static int child_spawn(struct init_child *c)
{
	struct init *init = c->init;
	const char *config_file = init->cfg->common.config_file;
	char path[4096 + 64], config_arg[4096 + 16], shard_arg[64], pid_text[16];
	char *argv[8];
	size_t n = 0;
	posix_spawnattr_t attr;
	sigset_t none, defaults;
	pid_t pid;
	int r;

	if (init->daemon_dir[0])
		snprintf(path, sizeof(path), "%s/%s", init->daemon_dir, c->daemon.program);
	else
		snprintf(path, sizeof(path), "%s", c->daemon.program);
	argv[n++] = path;
	if (config_file) {
		snprintf(config_arg, sizeof(config_arg), "--config=%s", config_file);
		argv[n++] = config_arg;
	}
	if (c->daemon.n_shards) {
		snprintf(shard_arg, sizeof(shard_arg), "--shard=%u/%u", c->daemon.shard,
			 c->daemon.n_shards);
		argv[n++] = shard_arg;
		/* Shards beyond the first cannot share the scheduler's ports;
		 * kanna-init's own probes stand for them. */
		if (c->daemon.shard > 0) {
			argv[n++] = (char *)"--metrics-port=0";
			argv[n++] = (char *)"--health-port=0";
		}
	}
	argv[n] = NULL;

	/* The child starts as any program should: nothing blocked, default
	 * dispositions (the loop blocks TERM/INT/HUP/CHLD and ignores PIPE),
	 * in a process group of its own so that a signal reaches its helpers. */
	sigemptyset(&none);
	sigemptyset(&defaults);
	sigaddset(&defaults, SIGTERM);
	sigaddset(&defaults, SIGINT);
	sigaddset(&defaults, SIGHUP);
	sigaddset(&defaults, SIGCHLD);
	sigaddset(&defaults, SIGPIPE);
	r = posix_spawnattr_init(&attr);
	if (r > 0)
		return -r;
	if ((r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
						       POSIX_SPAWN_SETPGROUP)) > 0 ||
	    (r = posix_spawnattr_setsigmask(&attr, &none)) > 0 ||
	    (r = posix_spawnattr_setsigdefault(&attr, &defaults)) > 0 ||
	    (r = posix_spawnattr_setpgroup(&attr, 0)) > 0)
		goto out;
	if (init->daemon_dir[0])
		r = posix_spawn(&pid, path, NULL, &attr, argv, environ);
	else
		r = posix_spawnp(&pid, path, NULL, &attr, argv, environ);
	if (r > 0) {
		log_error_errno(r, "Failed to start %s (%s): %m", c->daemon.name, path);
		goto out;
	}
	c->pid = pid;
	c->state = INIT_CHILD_RUNNING;
	c->started_usec = clock_monotonic_usec();
	snprintf(pid_text, sizeof(pid_text), "%d", (int)pid);
	log_info_kv(LOG_KV({ "daemon", c->daemon.name }, { "pid", pid_text }), "started %s (pid %d)",
		    c->daemon.name, (int)pid);
out:
	posix_spawnattr_destroy(&attr);
	return r > 0 ? -r : 0;
}

static void maybe_finish(struct init *init)
{
	if (!init->stopping)
		return;
	for (size_t i = 0; i < init->n_children; i++)
		if (init->children[i].state == INIT_CHILD_RUNNING)
			return;
	init->grace_timer = sd_event_source_disable_unref(init->grace_timer);
	log_info("every daemon has exited, exiting with status %d", init->exit_code);
	loop_exit(init->loop, init->exit_code);
}

static int on_grace_expired(struct loop *loop, void *userdata)
{
	struct init *init = userdata;
	char grace[64];

	(void)loop;
	config_format_duration(init->cfg->grace_period_usec, grace, sizeof(grace));
	for (size_t i = 0; i < init->n_children; i++) {
		struct init_child *c = &init->children[i];

		if (c->state != INIT_CHILD_RUNNING)
			continue;
		log_warn_kv(LOG_KV({ "daemon", c->daemon.name }),
			    "%s still running %s after the stop request, killing it (SIGKILL)",
			    c->daemon.name, grace);
		signal_child(c, SIGKILL);
	}
	return 0;
}

/* Stops every daemon: signo to each, SIGKILL after grace-period. */
static void begin_stop(struct init *init, int signo)
{
	bool running = false;
	int r;

	if (init->stopping)
		return;
	init->stopping = true;
	update_readiness(init);
	for (size_t i = 0; i < init->n_children; i++) {
		struct init_child *c = &init->children[i];

		c->restart_timer = sd_event_source_disable_unref(c->restart_timer);
		if (c->state != INIT_CHILD_RUNNING) {
			c->state = INIT_CHILD_STOPPED;
			continue;
		}
		log_info_kv(LOG_KV({ "daemon", c->daemon.name }), "sending SIG%s to %s",
			    signal_name(signo), c->daemon.name);
		signal_child(c, signo);
		running = true;
	}
	if (!running) {
		maybe_finish(init);
		return;
	}
	r = loop_add_timer(init->loop, init->cfg->grace_period_usec, on_grace_expired, init,
			   &init->grace_timer);
	if (r < 0) {
		log_error_errno(r, "Failed to arm the grace period timer, killing the daemons now: %m");
		on_grace_expired(init->loop, init);
	}
}

static int on_restart_due(struct loop *loop, void *userdata);

/* An unexpected exit (or a failed start): restart after the backoff, or give up. */
static void child_failed(struct init_child *c, uint64_t ran_usec)
{
	struct init *init = c->init;
	struct init_restart_policy p = restart_policy(init);
	uint64_t now = clock_monotonic_usec(), delay = 0;
	char text[64], window[64];
	int r;

	c->state = INIT_CHILD_BACKOFF;
	if (init_restarts_record(&c->restarts, &p, now, ran_usec, &delay) > 0) {
		config_format_duration(p.give_up_window_usec, window, sizeof(window));
		log_error_kv(LOG_KV({ "daemon", c->daemon.name }),
			     "%s keeps failing: more than %" PRIu64 " failures within %s, giving up "
			     "and stopping the other daemons (exit status %d)",
			     c->daemon.name, p.give_up_after, window, INIT_EXIT_GAVE_UP);
		c->state = INIT_CHILD_STOPPED;
		init->exit_code = INIT_EXIT_GAVE_UP;
		begin_stop(init, SIGTERM);
		return;
	}
	c->restart_at_usec = now + delay;
	config_format_duration(delay, text, sizeof(text));
	log_info_kv(LOG_KV({ "daemon", c->daemon.name }, { "delay", text }),
		    "restarting %s in %s (failure %u in a row)", c->daemon.name, text,
		    c->restarts.consecutive);
	r = loop_add_timer(init->loop, delay, on_restart_due, c, &c->restart_timer);
	if (r < 0) {
		log_error_errno(r, "Failed to arm the restart timer of %s, giving up: %m",
				c->daemon.name);
		init->exit_code = INIT_EXIT_FAILURE;
		begin_stop(init, SIGTERM);
		return;
	}
	update_readiness(init);
}

static int on_restart_due(struct loop *loop, void *userdata)
{
	struct init_child *c = userdata;
	struct init *init = c->init;

	(void)loop;
	c->restart_timer = sd_event_source_disable_unref(c->restart_timer);
	if (init->stopping || c->state != INIT_CHILD_BACKOFF)
		return 0;
	(void)metrics_counter_add(init->restarts_total, 1, c->daemon.name, NULL);
	if (child_spawn(c) < 0)
		child_failed(c, 0);
	update_readiness(init);
	return 0;
}

static void child_exited(struct init_child *c, int status)
{
	struct init *init = c->init;
	bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	uint64_t ran = clock_monotonic_usec() - c->started_usec;
	char how[128], pid_text[16];
	const struct log_kv kv[] = { { "daemon", c->daemon.name }, { "pid", pid_text } };

	snprintf(pid_text, sizeof(pid_text), "%d", (int)c->pid);
	describe_exit(status, how, sizeof(how));
	c->pid = 0;
	(void)metrics_counter_add(init->exits_total, 1, c->daemon.name, NULL);
	if (init->stopping) {
		log_at(clean ? LOG_LEVEL_INFO : LOG_LEVEL_WARN, 0, kv, ARRAY_SIZE(kv), "%s %s",
		       c->daemon.name, how);
		c->state = INIT_CHILD_STOPPED;
		if (!clean && init->exit_code == 0)
			init->exit_code = INIT_EXIT_FAILURE;
		maybe_finish(init);
		return;
	}
	log_at(LOG_LEVEL_WARN, 0, kv, ARRAY_SIZE(kv), "%s %s", c->daemon.name, how);
	child_failed(c, ran);
}

static struct init_child *child_by_pid(struct init *init, pid_t pid)
{
	for (size_t i = 0; i < init->n_children; i++)
		if (init->children[i].state == INIT_CHILD_RUNNING && init->children[i].pid == pid)
			return &init->children[i];
	return NULL;
}

/* Reaps every exited child: a signalfd merges SIGCHLDs, so wait until none is left. */
static int on_sigchld(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct init *init = userdata;

	(void)s;
	(void)si;
	for (;;) {
		int status = 0;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		struct init_child *c;

		if (pid <= 0) {
			if (pid < 0 && errno != ECHILD)
				log_warn_errno(errno, "Failed to reap children: %m");
			return 0;
		}
		c = child_by_pid(init, pid);
		if (c)
			child_exited(c, status);
		else
			log_debug("reaped orphaned process %d", (int)pid);
	}
}

int init_register_metrics(struct init *init, struct metrics_registry *reg)
{
	int r;

	r = metrics_counter_new(reg, &init->restarts_total, "kanna_init_restarts_total",
				"Number of times kanna-init restarted a daemon.", "daemon", NULL);
	if (r < 0)
		return r;
	return metrics_counter_new(reg, &init->exits_total, "kanna_init_daemon_exits_total",
				   "Number of times a daemon run by kanna-init exited.", "daemon", NULL);
}

/* kanna-init's own directory when it holds the program, else "" ($PATH). */
static void find_daemon_dir(struct init *init, const char *program)
{
	char self[4096], candidate[4096 + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	init->daemon_dir[0] = '\0';
	if (n <= 0)
		return;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(candidate, sizeof(candidate), "%s/%s", self, program);
	if (access(candidate, X_OK) == 0)
		snprintf(init->daemon_dir, sizeof(init->daemon_dir), "%s", self);
}

int init_start(struct init *init, struct loop *loop, struct init_config *cfg,
	       const struct init_daemon *daemons, size_t n_daemons, const char *daemon_dir)
{
	char names[512] = "";
	int r;

	init->cfg = cfg;
	init->loop = loop;
	if (daemon_dir)
		snprintf(init->daemon_dir, sizeof(init->daemon_dir), "%s", daemon_dir);
	else
		find_daemon_dir(init, daemons[0].program);
	/* A wrong daemon-dir is a mistake to report at once, not a crash
	 * loop to give up on half a minute later. */
	for (size_t i = 0; i < n_daemons && init->daemon_dir[0]; i++) {
		char path[sizeof(init->daemon_dir) + 64];

		snprintf(path, sizeof(path), "%s/%s", init->daemon_dir, daemons[i].program);
		if (access(path, X_OK) < 0)
			return log_error_errno(errno, "Failed to find %s: %s: %m", daemons[i].name, path);
	}
	r = sd_event_add_signal(loop_event(loop), &init->sigchld, SIGCHLD, on_sigchld, init);
	if (r < 0)
		return log_error_errno(r, "Failed to watch SIGCHLD: %m");
	init->n_children = MIN(n_daemons, (size_t)INIT_DAEMONS_MAX);
	for (size_t i = 0; i < init->n_children; i++) {
		struct init_child *c = &init->children[i];

		c->init = init;
		c->daemon = daemons[i];
		c->state = INIT_CHILD_BACKOFF;
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 i ? ", " : "", c->daemon.name);
		if (child_spawn(c) < 0 && !init->stopping)
			child_failed(c, 0);
	}
	log_info("running %s from %s", names, init->daemon_dir[0] ? init->daemon_dir : "$PATH");
	update_readiness(init);
	(void)loop_notify_ready(loop, names);
	return 0;
}

int init_on_shutdown(struct loop *loop, void *userdata)
{
	struct init *init = userdata;
	int signo = loop_shutdown_signal(loop);

	begin_stop(init, signo ? signo : SIGTERM);
	/* The loop ends by maybe_finish() once every daemon is gone. */
	return LOOP_SHUTDOWN_PENDING;
}

/* As common/daemon.c's reload: everything read again, applied whole or not at all. */
static void reload_config(struct init *init)
{
	struct config_source src = { init->argc, init->argv, NULL };
	struct config_result res = { 0 };
	struct init_config fresh = { 0 };

	if (config_reload(&init_schema, init->cfg, &fresh, &src, &res) < 0) {
		log_error("%s; keeping the running configuration", res.error);
		config_result_done(&res);
		return;
	}
	config_free(&init_schema, init->cfg);
	*init->cfg = fresh;
	config_setup_logging(&init_schema, init->cfg);
	log_info("reloaded configuration%s%s", res.changed[0] ? ": changed " : " (no change)",
		 res.changed);
	config_result_done(&res);
}

int init_on_reload(struct loop *loop, void *userdata)
{
	struct init *init = userdata;

	(void)loop;
	reload_config(init);
	for (size_t i = 0; i < init->n_children; i++)
		if (init->children[i].state == INIT_CHILD_RUNNING &&
		    kill(init->children[i].pid, SIGHUP) < 0 && errno != ESRCH)
			log_warn_errno(errno, "Failed to send SIGHUP to %s: %m",
				       init->children[i].daemon.name);
	return 0;
}

int init_finish(struct init *init)
{
	for (size_t i = 0; i < init->n_children; i++) {
		struct init_child *c = &init->children[i];
		int status = 0;

		c->restart_timer = sd_event_source_disable_unref(c->restart_timer);
		if (c->state != INIT_CHILD_RUNNING)
			continue;
		log_warn_kv(LOG_KV({ "daemon", c->daemon.name }),
			    "%s still running as kanna-init exits, killing it (SIGKILL)",
			    c->daemon.name);
		signal_child(c, SIGKILL);
		while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
			;
		c->init->stopping = true;
		child_exited(c, status);
		if (init->exit_code == 0)
			init->exit_code = INIT_EXIT_FAILURE;
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	init->grace_timer = sd_event_source_disable_unref(init->grace_timer);
	init->sigchld = sd_event_source_disable_unref(init->sigchld);
	return init->exit_code;
}
