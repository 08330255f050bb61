/*
 * Exec credential plugins (client.authentication.k8s.io ExecCredential), as
 * kubectl runs `aws eks get-token`: the command runs with the configured
 * args and env plus KUBERNETES_EXEC_INFO, its stdout is one ExecCredential
 * JSON object; the token (or client certificate) is cached until shortly
 * before expirationTimestamp. stderr is left to the plugin, as kubectl does.
 * Runs synchronously with a hard timeout; callers are the Kubernetes client.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/kubeconfig.h"
#include "common/util.h"

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

static void child_exec(const struct kube_exec *x, const char *info, int out_fd)
{
	size_t n_args = 0, n_env = 0;
	extern char **environ;
	char **argv, **envp;
	int devnull;

	for (char **p = x->args; p && *p; p++)
		n_args++;
	for (char **p = environ; *p; p++)
		n_env++;
	for (char **p = x->env; p && *p; p++)
		n_env++;
	argv = calloc(n_args + 2, sizeof(char *));
	envp = calloc(n_env + 2, sizeof(char *));
	if (!argv || !envp)
		_exit(127);
	argv[0] = x->command;
	for (size_t i = 0; i < n_args; i++)
		argv[i + 1] = x->args[i];
	n_env = 0;
	for (char **p = environ; *p; p++)
		envp[n_env++] = *p;
	for (char **p = x->env; p && *p; p++)
		envp[n_env++] = *p;
	envp[n_env++] = (char *)info;
	devnull = open("/dev/null", O_RDONLY);
	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	dup2(out_fd, STDOUT_FILENO);
	execvpe(x->command, argv, envp);
	_exit(127);
}

/* Reads the child's stdout until EOF, the size limit or the deadline. */
static int read_output(int fd, char **ret, char *err, size_t errlen, const char *cmd)
{
	_cleanup_free_ char *buf = malloc(KUBE_EXEC_MAX_OUTPUT + 1);
	time_t deadline = time(NULL) + KUBE_EXEC_TIMEOUT_SEC;
	size_t len = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(deadline - time(NULL)), k;
		ssize_t n;

		if (left <= 0)
			return exec_fail(err, errlen, -ETIMEDOUT, "exec plugin %s: no answer in %ds",
					 cmd, KUBE_EXEC_TIMEOUT_SEC);
		k = poll(&p, 1, left * 1000);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			continue;
		n = read(fd, buf + len, KUBE_EXEC_MAX_OUTPUT - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len >= KUBE_EXEC_MAX_OUTPUT)
			return exec_fail(err, errlen, -EFBIG, "exec plugin %s: output over %d bytes",
					 cmd, KUBE_EXEC_MAX_OUTPUT);
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

static int parse_credential(struct kube_exec *x, const char *out, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_loads(out, 0, &jerr), *status;
	const char *token, *cert, *key;
	int r = 0;

	if (!root)
		return exec_fail(err, errlen, -EINVAL, "exec plugin %s: output is not JSON: %s (line %d)",
				 x->command, jerr.text, jerr.line);
	status = json_object_get(root, "status");
	token = json_string_value(json_object_get(status, "token"));
	cert = json_string_value(json_object_get(status, "clientCertificateData"));
	key = json_string_value(json_object_get(status, "clientKeyData"));
	if (!streq_ptr(json_string_value(json_object_get(root, "kind")), "ExecCredential"))
		r = exec_fail(err, errlen, -EINVAL, "exec plugin %s: output kind is not ExecCredential",
			      x->command);
	else if (!token && !(cert && key))
		r = exec_fail(err, errlen, -EINVAL,
			      "exec plugin %s: status has neither token nor client certificate and key",
			      x->command);
	if (r >= 0) {
		free(x->token);
		free(x->client_cert_pem);
		free(x->client_key_pem);
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

int kube_exec_refresh(struct kube_exec *x, char *err, size_t errlen)
{
	_cleanup_free_ char *info = NULL, *out = NULL;
	int pipefd[2], status, r;
	pid_t pid;

	if ((x->token || x->client_cert_pem) &&
	    (x->expires == 0 || time(NULL) < x->expires - KUBE_EXEC_REFRESH_MARGIN_SEC))
		return 0;
	if (asprintf(&info,
		     "KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
		     "\"spec\":{\"interactive\":false}}",
		     x->api_version) < 0)
		return -ENOMEM;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return r;
	}
	if (pid == 0)
		child_exec(x, info, pipefd[1]);
	close(pipefd[1]);
	r = read_output(pipefd[0], &out, err, errlen, x->command);
	close(pipefd[0]);
	if (r < 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		return r;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return exec_fail(err, errlen, -EPERM, "exec plugin %s failed (%s %d)", x->command,
				 WIFEXITED(status) ? "exit status" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return parse_credential(x, out, err, errlen);
}
