/*
 * Exec credential plugins (client.authentication.k8s.io ExecCredential), as
 * kubectl runs `aws eks get-token`: the command runs with the configured
 * args and env plus KUBERNETES_EXEC_INFO, its stdout is one ExecCredential
 * JSON object; the token (or client certificate) is cached until shortly
 * before expirationTimestamp. stderr is left to the plugin, as kubectl does.
 *
 * A run never blocks the event loop: posix_spawn (no fork of a threaded
 * daemon), stdout and the exit (a pidfd) watched by the loop, and one
 * deadline for both, at which the plugin's process group is killed; its
 * reaping may come later and never holds anything up. The plugin starts
 * with default signal dispositions and an empty mask, fds 0–2 only and an
 * allow-listed environment. A failure is remembered with a backoff so
 * that requests meanwhile fail at once instead of forking again.
 * Callers: the Kubernetes client (kube-client.c) and tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "common/clock.h"
#include "common/kubeconfig.h"
#include "common/loop.h"
#include "common/util.h"

/* Without pidfds (an old kernel, a seccomp filter) the exit is polled. */
#define KUBE_EXEC_REAP_POLL_USEC (20ULL * 1000)
/* kube_exec_free() waits this long for a killed plugin to be reaped. */
#define KUBE_EXEC_FREE_REAP_MS 1000

/*
 * What the plugin inherits from our environment. client-go hands it all of
 * os.Environ(); a daemon's environment also holds what a plugin has no
 * business reading (KANNA_* settings, other services' secrets), so only
 * what credential plugins use passes: where programs and home are, locale
 * and time zone, proxies and CA stores, and AWS_* (`aws eks get-token` and
 * aws-iam-authenticator sign with the daemon's own AWS identity). Anything
 * else belongs in the kubeconfig's exec env, which always passes.
 */
static const char *const exec_env_names[] = {
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
	"http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR",
};
static const char *const exec_env_prefixes[] = { "LC_", "AWS_" };

struct kube_exec_run {
	struct kube_exec *x;
	pid_t pid;           /* also the process group: the plugin leads its own */
	int pidfd;           /* -1: the exit is polled */
	int out_fd;          /* -1 once read to the end or given up */
	sd_event_source *out_src, *exit_src, *deadline_src;
	char *out;
	size_t out_len;
	int status;
	bool reaped;         /* waitpid() collected it */
	bool delivered;      /* the result is in x; only the reaping is left */
};

static int exec_fail(char *err, size_t errlen, int r, const char *fmt, ...) _printf_(4, 5);

static int exec_fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}

static time_t parse_rfc3339(const char *s)
{
	struct tm tm = { 0 };
	const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;

	if (!end)
		return 0;
	return timegm(&tm);
}

static bool env_name_is(const char *entry, const char *name)
{
	size_t n = strlen(name);

	return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

static bool env_inherited(const char *entry)
{
	for (size_t i = 0; i < ARRAY_SIZE(exec_env_names); i++)
		if (env_name_is(entry, exec_env_names[i]))
			return true;
	for (size_t i = 0; i < ARRAY_SIZE(exec_env_prefixes); i++)
		if (startswith(entry, exec_env_prefixes[i]))
			return true;
	return false;
}

static bool env_set_by(char **env, const char *entry)
{
	size_t n = strcspn(entry, "=");

	for (char **p = env; p && *p; p++)
		if (strncmp(*p, entry, n) == 0 && (*p)[n] == '=')
			return true;
	return false;
}

/* argv and envp for the plugin; the strings stay x's, environ's and info's. */
static int exec_vectors(const struct kube_exec *x, const char *info, char ***ret_argv,
			char ***ret_envp)
{
	extern char **environ;
	size_t n_args = 0, n_env = 0, i = 0;
	char **argv, **envp;

	for (char **p = x->args; p && *p; p++)
		n_args++;
	for (char **p = environ; p && *p; p++)
		n_env++;
	for (char **p = x->env; p && *p; p++)
		n_env++;
	argv = calloc(n_args + 2, sizeof(char *));
	envp = calloc(n_env + 2, sizeof(char *));
	if (!argv || !envp) {
		free(argv);
		free(envp);
		return -ENOMEM;
	}
	argv[0] = x->command;
	for (size_t a = 0; a < n_args; a++)
		argv[a + 1] = x->args[a];
	/* The kubeconfig's own entries win over inherited ones of the same name. */
	for (char **p = x->env; p && *p; p++)
		envp[i++] = *p;
	for (char **p = environ; p && *p; p++)
		if (env_inherited(*p) && !env_set_by(x->env, *p))
			envp[i++] = *p;
	envp[i] = (char *)info;
	*ret_argv = argv;
	*ret_envp = envp;
	return 0;
}

/* Starts the plugin: stdin /dev/null, stdout into *ret_out, stderr ours. */
static int exec_spawn(const struct kube_exec *x, pid_t *ret_pid, int *ret_out, char *err,
		      size_t errlen)
{
	_cleanup_free_ char *info = NULL;
	_cleanup_free_ char **argv = NULL, **envp = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int pipefd[2], r;

	if (asprintf(&info,
		     "KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
		     "\"spec\":{\"interactive\":false}}",
		     x->api_version) < 0)
		return -ENOMEM;
	r = exec_vectors(x, info, &argv, &envp);
	if (r < 0)
		return r;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	r = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (!r)
		r = posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	if (!r)
		r = posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1);
	if (!r)
		r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
						    POSIX_SPAWN_SETPGROUP);
	if (!r)
		r = posix_spawnattr_setsigmask(&attr, &none);
	if (!r)
		r = posix_spawnattr_setsigdefault(&attr, &all);
	if (!r)
		r = posix_spawnattr_setpgroup(&attr, 0);
	if (!r)
		r = posix_spawnp(ret_pid, x->command, &fa, &attr, argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (r) {
		close(pipefd[0]);
		return exec_fail(err, errlen, -r, "exec plugin %s: %s%s", x->command, strerror(r),
				 r == ENOENT ? " (is it installed and in PATH?)" : "");
	}
	if (fcntl(pipefd[0], F_SETFL, O_NONBLOCK) < 0) {
		r = -errno;
		close(pipefd[0]);
		kill(-*ret_pid, SIGKILL);
		while (waitpid(*ret_pid, NULL, 0) < 0 && errno == EINTR)
			;
		return r;
	}
	*ret_out = pipefd[0];
	return 0;
}

static int parse_credential(struct kube_exec *x, const char *out, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_loads(out, 0, &jerr), *status;
	const char *token, *cert, *key, *version;
	int r = 0;

	if (!root)
		return exec_fail(err, errlen, -EINVAL, "exec plugin %s: output is not JSON: %s (line %d)",
				 x->command, jerr.text, jerr.line);
	status = json_object_get(root, "status");
	token = json_string_value(json_object_get(status, "token"));
	cert = json_string_value(json_object_get(status, "clientCertificateData"));
	key = json_string_value(json_object_get(status, "clientKeyData"));
	version = json_string_value(json_object_get(root, "apiVersion"));
	if (!streq_ptr(json_string_value(json_object_get(root, "kind")), "ExecCredential"))
		r = exec_fail(err, errlen, -EINVAL, "exec plugin %s: output kind is not ExecCredential",
			      x->command);
	else if (version && !streq(version, x->api_version))
		/* client-go refuses a version other than the configured one too */
		r = exec_fail(err, errlen, -EINVAL, "exec plugin %s is configured to use API version %s, "
			      "plugin returned version %s", x->command, x->api_version, version);
	else if (!token && !(cert && key))
		r = exec_fail(err, errlen, -EINVAL,
			      "exec plugin %s: status has neither token nor client certificate and key",
			      x->command);
	else if (token && strpbrk(token, "\r\n"))
		r = exec_fail(err, errlen, -EINVAL, "exec plugin %s: token contains a line break",
			      x->command);
	if (r >= 0) {
		free_erased(x->token);
		free(x->client_cert_pem);
		free_erased(x->client_key_pem);
		x->token = token ? strdup(token) : NULL;
		x->client_cert_pem = cert ? strdup(cert) : NULL;
		x->client_key_pem = key ? strdup(key) : NULL;
		x->expires = parse_rfc3339(json_string_value(json_object_get(status,
									    "expirationTimestamp")));
		if ((token && !x->token) || (cert && !x->client_cert_pem) || (key && !x->client_key_pem))
			r = -ENOMEM;
	}
	json_decref(root);
	return r;
}

static void run_close_output(struct kube_exec_run *run)
{
	run->out_src = sd_event_source_disable_unref(run->out_src);
	if (run->out_fd >= 0)
		close(run->out_fd);
	run->out_fd = -1;
}

static void run_free(struct kube_exec_run *run)
{
	run_close_output(run);
	sd_event_source_disable_unref(run->exit_src);
	sd_event_source_disable_unref(run->deadline_src);
	if (run->pidfd >= 0)
		close(run->pidfd);
	/* The ExecCredential it printed holds the token. */
	explicit_bzero(run->out, run->out_len);
	free(run->out);
	if (run->x->run == run)
		run->x->run = NULL;
	free(run);
}

/* Collects the exit if there is one; true once reaped. */
static bool run_reap(struct kube_exec_run *run)
{
	pid_t p;

	if (run->reaped)
		return true;
	do
		p = waitpid(run->pid, &run->status, WNOHANG);
	while (p < 0 && errno == EINTR);
	if (p == run->pid || (p < 0 && errno == ECHILD))
		run->reaped = true;
	return run->reaped;
}

/* The plugin's process group, while its leader (whose pid names the group)
 * is not reaped and so cannot have been reused. */
static void run_kill(struct kube_exec_run *run)
{
	if (!run->reaped)
		kill(-run->pid, SIGKILL);
}

/*
 * The run's result goes into x (with the backoff after a failure), the run
 * is freed unless its process still has to be reaped, and the owner hears
 * of it last, when everything is consistent.
 */
static void run_deliver(struct kube_exec_run *run, int r, const char *error)
{
	struct kube_exec *x = run->x;
	uint64_t backoff = KUBE_EXEC_BACKOFF_BASE_USEC;

	run->delivered = true;
	sd_event_source_disable_unref(run->deadline_src);
	run->deadline_src = NULL;
	run_close_output(run);
	free(x->last_error);
	x->last_error = NULL;
	if (r >= 0) {
		x->failures = 0;
		x->retry_after_usec = 0;
	} else {
		run_kill(run);
		for (unsigned i = 0; i < x->failures && backoff < KUBE_EXEC_BACKOFF_CAP_USEC; i++)
			backoff *= 2;
		x->failures++;
		x->retry_after_usec = clock_monotonic_usec() + MIN(backoff, KUBE_EXEC_BACKOFF_CAP_USEC);
		x->last_error = strdup(error ? error : strerror(-r));
		x->last_result = r;
	}
	if (run->reaped)
		run_free(run);
	if (x->done)
		x->done(x->done_userdata);
}

static void run_finish_if_done(struct kube_exec_run *run)
{
	char err[512] = "";
	int r;

	if (!run->reaped)
		return;
	if (run->delivered) {
		run_free(run);
		return;
	}
	if (run->out_fd >= 0)
		return; /* its output is still coming (a child of the plugin may hold it) */
	if (!WIFEXITED(run->status) || WEXITSTATUS(run->status) != 0) {
		snprintf(err, sizeof(err), "exec plugin %s failed (%s %d)", run->x->command,
			 WIFEXITED(run->status) ? "exit status" : "signal",
			 WIFEXITED(run->status) ? WEXITSTATUS(run->status) : WTERMSIG(run->status));
		run_deliver(run, -EPERM, err);
		return;
	}
	r = parse_credential(run->x, run->out ? run->out : "", err, sizeof(err));
	run_deliver(run, r, err[0] ? err : NULL);
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct kube_exec_run *run = userdata;
	char err[256];

	(void)s;
	(void)revents;
	for (;;) {
		ssize_t n = read(fd, run->out + run->out_len, KUBE_EXEC_MAX_OUTPUT - run->out_len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n == 0 || n < 0) {
			run_close_output(run);
			run_finish_if_done(run);
			return 0;
		}
		run->out_len += (size_t)n;
		run->out[run->out_len] = '\0';
		if (run->out_len >= KUBE_EXEC_MAX_OUTPUT) {
			snprintf(err, sizeof(err), "exec plugin %s: output over %d bytes",
				 run->x->command, KUBE_EXEC_MAX_OUTPUT);
			run_deliver(run, -EFBIG, err);
			return 0;
		}
	}
}

static int on_pidfd(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct kube_exec_run *run = userdata;

	(void)fd;
	(void)revents;
	if (!run_reap(run))
		return 0;
	sd_event_source_set_enabled(s, SD_EVENT_OFF);
	run_finish_if_done(run);
	return 0;
}

static int on_reap_poll(struct loop *loop, void *userdata)
{
	struct kube_exec_run *run = userdata;

	run->exit_src = sd_event_source_disable_unref(run->exit_src);
	if (run_reap(run)) {
		run_finish_if_done(run);
		return 0;
	}
	return loop_add_timer(loop, KUBE_EXEC_REAP_POLL_USEC, on_reap_poll, run, &run->exit_src);
}

static int on_deadline(struct loop *loop, void *userdata)
{
	struct kube_exec_run *run = userdata;
	char err[256];

	(void)loop;
	snprintf(err, sizeof(err), "exec plugin %s: no credential within %llu s, killed",
		 run->x->command, (unsigned long long)(run->x->timeout_usec / 1000000));
	run_deliver(run, -ETIMEDOUT, err);
	return 0;
}

static int run_start(struct kube_exec *x, struct loop *loop, char *err, size_t errlen)
{
	struct kube_exec_run *run = calloc(1, sizeof(*run));
	sd_event *e = loop_event(loop);
	int r;

	if (!run)
		return -ENOMEM;
	run->x = x;
	run->pidfd = run->out_fd = -1;
	run->out = malloc(KUBE_EXEC_MAX_OUTPUT + 1);
	if (!run->out) {
		free(run);
		return -ENOMEM;
	}
	run->out[0] = '\0';
	r = exec_spawn(x, &run->pid, &run->out_fd, err, errlen);
	if (r < 0) {
		free(run->out);
		free(run);
		return r;
	}
	x->run = run;
	x->runs++;
	run->pidfd = pidfd_open(run->pid, 0);
	r = sd_event_add_io(e, &run->out_src, run->out_fd, EPOLLIN, on_output, run);
	if (r >= 0)
		r = run->pidfd >= 0 ?
			    sd_event_add_io(e, &run->exit_src, run->pidfd, EPOLLIN, on_pidfd, run) :
			    loop_add_timer(loop, KUBE_EXEC_REAP_POLL_USEC, on_reap_poll, run,
					   &run->exit_src);
	if (r >= 0)
		r = loop_add_timer(loop, x->timeout_usec, on_deadline, run, &run->deadline_src);
	if (r < 0) {
		/* Nothing watches it: kill it and wait (SIGKILL is quick). */
		run_kill(run);
		while (waitpid(run->pid, NULL, 0) < 0 && errno == EINTR)
			;
		run->reaped = true;
		run_free(run);
		return exec_fail(err, errlen, r, "exec plugin %s: cannot watch it: %s", x->command,
				 strerror(-r));
	}
	return 0;
}

int kube_exec_credential(struct kube_exec *x, struct loop *loop, kube_exec_done_fn done,
			 void *userdata, char *err, size_t errlen)
{
	time_t now = time(NULL);
	bool have = x->token || x->client_cert_pem;
	bool usable = have && (x->expires == 0 || now < x->expires);
	uint64_t mono = clock_monotonic_usec();
	int r;

	x->done = done;
	x->done_userdata = userdata;
	if (have && (x->expires == 0 || now < x->expires - KUBE_EXEC_REFRESH_MARGIN_SEC))
		return 0;
	if (x->run && !x->run->delivered)
		return usable ? 0 : -EINPROGRESS;
	if (mono < x->retry_after_usec)
		return usable ? 0 :
		       exec_fail(err, errlen, x->last_result < 0 ? x->last_result : -EIO,
				 "%s (failed %u time%s in a row; next run in %.1f s)",
				 x->last_error ? x->last_error : "exec plugin failed", x->failures,
				 x->failures == 1 ? "" : "s",
				 (double)(x->retry_after_usec - mono) / 1e6);
	if (x->run)
		return usable ? 0 :
		       exec_fail(err, errlen, -EBUSY, "exec plugin %s (pid %d) was killed and has not "
				 "exited yet", x->command, (int)x->run->pid);
	r = run_start(x, loop, err, errlen);
	if (r < 0) {
		uint64_t backoff = KUBE_EXEC_BACKOFF_BASE_USEC;

		for (unsigned i = 0; i < x->failures && backoff < KUBE_EXEC_BACKOFF_CAP_USEC; i++)
			backoff *= 2;
		x->failures++;
		x->retry_after_usec = mono + MIN(backoff, KUBE_EXEC_BACKOFF_CAP_USEC);
		x->last_result = r;
		free(x->last_error);
		x->last_error = err && errlen && err[0] ? strdup(err) : NULL;
		return usable ? 0 : r;
	}
	return usable ? 0 : -EINPROGRESS;
}

struct kube_exec *kube_exec_free(struct kube_exec *x)
{
	struct kube_exec_run *run;

	if (!x)
		return NULL;
	run = x->run;
	if (run) {
		/* Killed, then a bounded wait: a plugin stuck in the kernel is
		 * left to init rather than holding up the daemon's exit. */
		run_kill(run);
		if (!run->reaped && run->pidfd >= 0)
			(void)poll(&(struct pollfd){ .fd = run->pidfd, .events = POLLIN }, 1,
				   KUBE_EXEC_FREE_REAP_MS);
		for (int i = 0; run->pidfd < 0 && i < KUBE_EXEC_FREE_REAP_MS / 10 && !run_reap(run); i++)
			usleep(10 * 1000);
		run_reap(run);
		run_free(run);
	}
	free(x->api_version);
	free(x->command);
	for (char **p = x->args; p && *p; p++)
		free(*p);
	free(x->args);
	for (char **p = x->env; p && *p; p++)
		free(*p);
	free(x->env);
	free_erased(x->token);
	free(x->client_cert_pem);
	free_erased(x->client_key_pem);
	free(x->last_error);
	free(x);
	return NULL;
}
