/*
 * Where the Kubernetes API is and how to authenticate to it: kubeconfig
 * files (current context or a named one; clusters, users, tokens, token
 * files, client certificates, exec credential plugins such as
 * `aws eks get-token`) and in-cluster service-account configuration.
 * The HTTP client applies a struct kube_config to each libcurl handle.
 */
#ifndef KANNA_COMMON_KUBECONFIG_H
#define KANNA_COMMON_KUBECONFIG_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define KUBE_SERVICEACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
/* client-go re-reads a projected token at most once a minute; we stat it
 * on every use and re-read when it changed, which is cheaper still. */
/*
 * Deadline of one exec plugin run, from spawn to exit: past it the plugin
 * (its whole process group) is killed and the run failed. client-go sets
 * none; `aws eks get-token` answers in about a second.
 */
#define KUBE_EXEC_TIMEOUT_USEC (30ULL * 1000 * 1000)
/* Refresh exec credentials this long before they expire. */
#define KUBE_EXEC_REFRESH_MARGIN_SEC 60
#define KUBE_EXEC_MAX_OUTPUT (1024 * 1024)
/*
 * A failed run is not repeated for 1 s, doubling per failure up to 1 min:
 * requests meanwhile fail at once with its error. client-go re-runs a
 * failing plugin for every request; a daemon that sends a hundred requests
 * a second must not fork a hundred plugins. A success resets it.
 */
#define KUBE_EXEC_BACKOFF_BASE_USEC (1ULL * 1000 * 1000)
#define KUBE_EXEC_BACKOFF_CAP_USEC (60ULL * 1000 * 1000)

/* kubectl's (client-go's) words for insecure-skip-tls-verify with a CA. */
#define KUBE_INSECURE_WITH_CA_ERROR \
	"specifying a root certificates file with the insecure flag is not allowed"

struct loop;
struct kube_exec_run;
/* A run ended (successfully or not); runs on the loop. */
typedef void (*kube_exec_done_fn)(void *userdata);

struct kube_exec {
	char *api_version; /* client.authentication.k8s.io/v1 or v1beta1 */
	char *command;
	char **args; /* NULL-terminated */
	char **env;  /* NULL-terminated "NAME=value" */
	uint64_t timeout_usec; /* KUBE_EXEC_TIMEOUT_USEC unless a test sets less */
	/* cached result */
	char *token;
	char *client_cert_pem, *client_key_pem;
	time_t expires; /* 0 = no expiry given */
	/* the run in flight (or killed and not yet reaped), and the last failure */
	struct kube_exec_run *run;
	unsigned failures;        /* in a row; 0 after a success */
	uint64_t retry_after_usec; /* CLOCK_MONOTONIC; no run before it */
	char *last_error;
	int last_result;          /* its negative errno */
	unsigned runs;            /* started, for tests and metrics */
	kube_exec_done_fn done;
	void *done_userdata;
};

struct kube_config {
	char *context;   /* the context used, or "in-cluster" */
	char *server;    /* https://host:port, no trailing slash */
	char *namespace; /* context namespace, or "default" */
	/* TLS */
	char *ca_pem; /* certificate authority bytes (from -data or file) */
	size_t ca_pem_len;
	bool insecure_skip_tls_verify;
	char *tls_server_name;
	char *client_cert_pem, *client_key_pem;
	size_t client_cert_len, client_key_len;
	/* authentication */
	char *token;
	char *token_file;
	time_t token_file_mtime;
	char *token_file_cache;
	struct kube_exec *exec;
};

/*
 * Loads a kubeconfig file (path NULL: $KUBECONFIG's first file, else
 * ~/.kube/config) and selects context (NULL: current-context). Errors are
 * written into err with file and the offending key.
 */
int kube_config_load(const char *path, const char *context, struct kube_config **ret,
		     char *err, size_t errlen);
/* In-cluster: KUBERNETES_SERVICE_HOST/PORT and the service-account dir. */
int kube_config_in_cluster(const char *serviceaccount_dir, struct kube_config **ret,
			   char *err, size_t errlen);
/*
 * What a daemon uses: an explicit path or $KUBECONFIG wins; else in-cluster
 * when KUBERNETES_SERVICE_HOST is set; else ~/.kube/config.
 */
int kube_config_resolve(const char *path, const char *context, struct kube_config **ret,
			char *err, size_t errlen);
struct kube_config *kube_config_free(struct kube_config *cfg);

/*
 * Whether cfg may be used by a client, with the reason in err: the server
 * must be https://, or http:// when allow_insecure_http (and then no
 * credential is sent to it); insecure-skip-tls-verify together with a CA
 * is refused, as kubectl refuses it.
 */
int kube_config_check(const struct kube_config *cfg, bool allow_insecure_http, char *err,
		      size_t errlen);
/* The server is plain http:// (no TLS). */
bool kube_config_is_plain_http(const struct kube_config *cfg);

/*
 * The bearer token to send now, or NULL for none (client certificates).
 * Re-reads token files that changed. With an exec plugin: its cached
 * token (kube_exec_credential() runs the plugin).
 * The returned string belongs to cfg.
 */
int kube_config_bearer_token(struct kube_config *cfg, const char **ret, char *err,
			     size_t errlen);
/*
 * The exec plugin's credential, never blocking: 0 when the cached one may
 * be used now (near its expiry a refresh starts meanwhile); -EINPROGRESS
 * while a run is under way (one is started if none is), and done(userdata)
 * runs on the loop when it ends — ask again then; another negative errno
 * while the last failure's backoff lasts, with its error in err.
 */
int kube_exec_credential(struct kube_exec *x, struct loop *loop, kube_exec_done_fn done,
			 void *userdata, char *err, size_t errlen);
/* Kills a run in flight (its process group) and frees x. */
struct kube_exec *kube_exec_free(struct kube_exec *x);
/* TLS options (CA, verification, client certificate) for one handle. */
int kube_config_apply_tls(const struct kube_config *cfg, CURL *easy);

#endif
