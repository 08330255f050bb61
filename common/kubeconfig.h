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
#define KUBE_EXEC_TIMEOUT_SEC 30
/* Refresh exec credentials this long before they expire. */
#define KUBE_EXEC_REFRESH_MARGIN_SEC 60
#define KUBE_EXEC_MAX_OUTPUT (1024 * 1024)

struct kube_exec {
	char *api_version; /* client.authentication.k8s.io/v1 or v1beta1 */
	char *command;
	char **args; /* NULL-terminated */
	char **env;  /* NULL-terminated "NAME=value" */
	/* cached result */
	char *token;
	char *client_cert_pem, *client_key_pem;
	time_t expires; /* 0 = no expiry given */
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
 * The bearer token to send now, or NULL for none (client certificates).
 * Re-reads token files that changed and re-runs exec plugins near expiry.
 * The returned string belongs to cfg.
 */
int kube_config_bearer_token(struct kube_config *cfg, const char **ret, char *err,
			     size_t errlen);
/* Runs the exec credential plugin unless its cached credential is fresh. */
int kube_exec_refresh(struct kube_exec *x, char *err, size_t errlen);
/* TLS options (CA, verification, client certificate) for one handle. */
int kube_config_apply_tls(const struct kube_config *cfg, CURL *easy);

#endif
