/*
 * kubeconfig and in-cluster configuration (see kubeconfig.h). Reads the
 * file with yaml-json, resolves relative paths against the file's folder as
 * kubectl does, decodes *-data fields, parses exec credential plugins (run
 * by kubeconfig-exec.c), and says whether a configuration is safe to use
 * (https, or plain http without credentials when allowed). Callers: the
 * Kubernetes HTTP client of every daemon and tests.
 * It never logs: errors go back to the caller as text.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/kubeconfig.h"
#include "common/read-file.h"
#include "common/util.h"
#include "common/yaml-json.h"



static int fail(char *err, size_t errlen, int r, const char *fmt, ...) _printf_(4, 5);

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}

static const char *obj_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Finds `name: NAME` in a kubeconfig list (clusters, users, contexts). */
static const json_t *named_entry(const json_t *root, const char *list, const char *name,
				 const char *inner)
{
	const json_t *arr = json_object_get(root, list), *e;
	size_t i;

	json_array_foreach(arr, i, e)
		if (streq_ptr(obj_str(e, "name"), name))
			return json_object_get(e, inner);
	return NULL;
}

static char *path_relative_to(const char *dir, const char *p)
{
	char *out;

	if (p[0] == '/' || !dir)
		return strdup(p);
	if (asprintf(&out, "%s/%s", dir, p) < 0)
		return NULL;
	return out;
}

/* "-data" (base64) wins over the file form, as in kubectl. */
static int load_pem(const json_t *o, const char *data_key, const char *file_key,
		    const char *dir, char **ret, size_t *ret_len, char *err, size_t errlen,
		    const char *where)
{
	const char *data = obj_str(o, data_key), *file = obj_str(o, file_key);
	int r;

	if (data) {
		r = base64_decode(data, ret, ret_len);
		if (r < 0)
			return fail(err, errlen, r, "%s: %s is not valid base64", where, data_key);
		return 0;
	}
	if (file) {
		_cleanup_free_ char *path = path_relative_to(dir, file);
		if (!path)
			return -ENOMEM;
		r = read_file(path, 1024 * 1024, ret, ret_len);
		if (r < 0)
			return fail(err, errlen, r, "%s: %s %s: %s", where, file_key, path,
				    strerror(-r));
	}
	return 0;
}

static char **string_list(const json_t *arr)
{
	size_t n = json_array_size(arr), i;
	char **v = calloc(n + 1, sizeof(char *));
	const json_t *e;

	if (!v)
		return NULL;
	json_array_foreach(arr, i, e) {
		v[i] = strdup(json_is_string(e) ? json_string_value(e) : "");
		if (!v[i]) {
			for (size_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return NULL;
		}
	}
	return v;
}

static int exec_parse(const json_t *o, const char *where, struct kube_exec **ret, char *err,
		      size_t errlen)
{
	struct kube_exec *x = calloc(1, sizeof(*x));
	const json_t *env = json_object_get(o, "env"), *e;
	size_t i;

	if (!x)
		return -ENOMEM;
	if (!obj_str(o, "command")) {
		kube_exec_free(x);
		return fail(err, errlen, -EINVAL, "%s: exec.command is required", where);
	}
	x->timeout_usec = KUBE_EXEC_TIMEOUT_USEC;
	x->command = strdup(obj_str(o, "command"));
	x->api_version = strdup(obj_str(o, "apiVersion") ? obj_str(o, "apiVersion") :
			      "client.authentication.k8s.io/v1beta1");
	x->args = string_list(json_object_get(o, "args"));
	x->env = calloc(json_array_size(env) + 1, sizeof(char *));
	if (!x->command || !x->api_version || !x->args || !x->env) {
		kube_exec_free(x);
		return -ENOMEM;
	}
	json_array_foreach(env, i, e) {
		if (!obj_str(e, "name") || !obj_str(e, "value")) {
			kube_exec_free(x);
			return fail(err, errlen, -EINVAL, "%s: exec.env[%zu] needs name and value",
				    where, i);
		}
		if (asprintf(&x->env[i], "%s=%s", obj_str(e, "name"), obj_str(e, "value")) < 0) {
			x->env[i] = NULL;
			kube_exec_free(x);
			return -ENOMEM;
		}
	}
	*ret = x;
	return 0;
}

static int config_from_json(const json_t *root, const char *file, const char *context,
			    struct kube_config **ret, char *err, size_t errlen)
{
	_cleanup_free_ char *dircopy = file ? strdup(file) : NULL;
	const char *dir = dircopy ? dirname(dircopy) : NULL;
	const json_t *ctx, *cluster, *user = NULL;
	struct kube_config *cfg;
	const char *name = context ? context : obj_str(root, "current-context");
	char where[512];
	size_t len;
	int r;

	if (!name || !*name)
		return fail(err, errlen, -EINVAL, "%s: no current-context set and none given", file);
	ctx = named_entry(root, "contexts", name, "context");
	if (!ctx)
		return fail(err, errlen, -ENOENT, "%s: context '%s' not found", file, name);
	cluster = named_entry(root, "clusters", obj_str(ctx, "cluster"), "cluster");
	if (!cluster)
		return fail(err, errlen, -ENOENT, "%s: context '%s': cluster '%s' not found", file,
			    name, obj_str(ctx, "cluster") ? obj_str(ctx, "cluster") : "");
	if (obj_str(ctx, "user")) {
		user = named_entry(root, "users", obj_str(ctx, "user"), "user");
		if (!user)
			return fail(err, errlen, -ENOENT, "%s: context '%s': user '%s' not found",
				    file, name, obj_str(ctx, "user"));
	}
	if (!obj_str(cluster, "server"))
		return fail(err, errlen, -EINVAL, "%s: cluster '%s': server is required", file,
			    obj_str(ctx, "cluster"));

	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return -ENOMEM;
	cfg->context = strdup(name);
	cfg->server = strdup(obj_str(cluster, "server"));
	cfg->namespace = strdup(obj_str(ctx, "namespace") ? obj_str(ctx, "namespace") : "default");
	if (!cfg->context || !cfg->server || !cfg->namespace) {
		kube_config_free(cfg);
		return -ENOMEM;
	}
	len = strlen(cfg->server);
	while (len > 0 && cfg->server[len - 1] == '/')
		cfg->server[--len] = '\0';
	/* "host:port" alone: client-go guesses http when no TLS setting is
	 * given; we always mean https, so no credential goes out in clear. */
	if (!strstr(cfg->server, "://")) {
		char *with_scheme = NULL;

		if (asprintf(&with_scheme, "https://%s", cfg->server) < 0) {
			kube_config_free(cfg);
			return -ENOMEM;
		}
		free(cfg->server);
		cfg->server = with_scheme;
	}
	cfg->insecure_skip_tls_verify =
		json_is_true(json_object_get(cluster, "insecure-skip-tls-verify"));
	if (obj_str(cluster, "tls-server-name") &&
	    !(cfg->tls_server_name = strdup(obj_str(cluster, "tls-server-name")))) {
		kube_config_free(cfg);
		return -ENOMEM;
	}
	snprintf(where, sizeof(where), "%s: cluster '%s'", file, obj_str(ctx, "cluster"));
	r = load_pem(cluster, "certificate-authority-data", "certificate-authority", dir,
		     &cfg->ca_pem, &cfg->ca_pem_len, err, errlen, where);
	if (r >= 0 && cfg->insecure_skip_tls_verify && cfg->ca_pem)
		r = fail(err, errlen, -EINVAL, "%s: %s", where, KUBE_INSECURE_WITH_CA_ERROR);
	if (r >= 0 && user) {
		snprintf(where, sizeof(where), "%s: user '%s'", file, obj_str(ctx, "user"));
		r = load_pem(user, "client-certificate-data", "client-certificate", dir,
			     &cfg->client_cert_pem, &cfg->client_cert_len, err, errlen, where);
		if (r >= 0)
			r = load_pem(user, "client-key-data", "client-key", dir,
				     &cfg->client_key_pem, &cfg->client_key_len, err, errlen, where);
		if (r >= 0 && obj_str(user, "token") && !(cfg->token = strdup(obj_str(user, "token"))))
			r = -ENOMEM;
		if (r >= 0 && obj_str(user, "tokenFile") &&
		    !(cfg->token_file = path_relative_to(dir, obj_str(user, "tokenFile"))))
			r = -ENOMEM;
		if (r >= 0 && json_is_object(json_object_get(user, "exec")))
			r = exec_parse(json_object_get(user, "exec"), where, &cfg->exec, err, errlen);
	}
	if (r >= 0 && !!cfg->client_cert_pem != !!cfg->client_key_pem)
		r = fail(err, errlen, -EINVAL, "%s: client certificate and key must be given together",
			 where);
	if (r < 0) {
		kube_config_free(cfg);
		return r;
	}
	*ret = cfg;
	return 0;
}

int kube_config_load(const char *path, const char *context, struct kube_config **ret,
		     char *err, size_t errlen)
{
	_cleanup_free_ char *chosen = NULL;
	struct yaml_docs *docs = NULL;
	const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
	int r;

	if (path)
		chosen = strdup(path);
	else if (env && *env)
		chosen = strndup(env, strcspn(env, ":"));
	else if (asprintf(&chosen, "%s/.kube/config", home ? home : "") < 0)
		chosen = NULL;
	if (!chosen)
		return -ENOMEM;
	r = yaml_docs_load_file(chosen, &docs, err, errlen);
	if (r < 0)
		return r;
	if (docs->n_docs != 1 || !json_is_object(docs->docs[0]))
		r = fail(err, errlen, -EINVAL, "%s: expected one kubeconfig mapping", chosen);
	else
		r = config_from_json(docs->docs[0], chosen, context, ret, err, errlen);
	yaml_docs_free(docs);
	return r;
}

int kube_config_in_cluster(const char *sa_dir, struct kube_config **ret, char *err,
			   size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	struct kube_config *cfg;
	_cleanup_free_ char *ca = NULL, *ns = NULL, *ns_path = NULL;
	int r;

	if (!sa_dir)
		sa_dir = KUBE_SERVICEACCOUNT_DIR;
	if (!host || !*host || !port || !*port)
		return fail(err, errlen, -ENOENT,
			    "not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return -ENOMEM;
	cfg->context = strdup("in-cluster");
	/* An IPv6 service host needs brackets in the URL. */
	if (asprintf(&cfg->server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
		     port) < 0)
		cfg->server = NULL;
	if (asprintf(&cfg->token_file, "%s/token", sa_dir) < 0)
		cfg->token_file = NULL;
	if (asprintf(&ca, "%s/ca.crt", sa_dir) < 0 || asprintf(&ns_path, "%s/namespace", sa_dir) < 0 ||
	    !cfg->context || !cfg->server || !cfg->token_file) {
		kube_config_free(cfg);
		return -ENOMEM;
	}
	r = read_file(ca, 1024 * 1024, &cfg->ca_pem, &cfg->ca_pem_len);
	if (r < 0) {
		kube_config_free(cfg);
		return fail(err, errlen, r, "in-cluster CA %s: %s", ca, strerror(-r));
	}
	if (read_file(ns_path, 256, &ns, NULL) >= 0) {
		ns[strcspn(ns, "\r\n")] = '\0';
		cfg->namespace = strdup(ns);
	} else {
		cfg->namespace = strdup("default");
	}
	if (!cfg->namespace) {
		kube_config_free(cfg);
		return -ENOMEM;
	}
	*ret = cfg;
	return 0;
}

int kube_config_resolve(const char *path, const char *context, struct kube_config **ret,
			char *err, size_t errlen)
{
	const char *env = getenv("KUBECONFIG");

	if (path || (env && *env))
		return kube_config_load(path, context, ret, err, errlen);
	if (getenv("KUBERNETES_SERVICE_HOST"))
		return kube_config_in_cluster(NULL, ret, err, errlen);
	return kube_config_load(NULL, context, ret, err, errlen);
}

struct kube_config *kube_config_free(struct kube_config *cfg)
{
	if (!cfg)
		return NULL;
	free(cfg->context);
	free(cfg->server);
	free(cfg->namespace);
	free(cfg->ca_pem);
	free(cfg->tls_server_name);
	free(cfg->client_cert_pem);
	free_erased(cfg->client_key_pem);
	free_erased(cfg->token);
	free(cfg->token_file);
	free_erased(cfg->token_file_cache);
	kube_exec_free(cfg->exec);
	free(cfg);
	return NULL;
}

int kube_config_bearer_token(struct kube_config *cfg, const char **ret, char *err,
			     size_t errlen)
{
	int r;

	if (cfg->exec) {
		*ret = cfg->exec->token;
		return 0;
	}
	if (cfg->token_file) {
		struct stat st;
		char *tok = NULL;

		if (stat(cfg->token_file, &st) < 0)
			return fail(err, errlen, -errno, "token file %s: %s", cfg->token_file,
				    strerror(errno));
		if (!cfg->token_file_cache || st.st_mtime != cfg->token_file_mtime) {
			r = read_file(cfg->token_file, 64 * 1024, &tok, NULL);
			if (r < 0)
				return fail(err, errlen, r, "token file %s: %s", cfg->token_file,
					    strerror(-r));
			tok[strcspn(tok, "\r\n")] = '\0';
			free_erased(cfg->token_file_cache);
			cfg->token_file_cache = tok;
			cfg->token_file_mtime = st.st_mtime;
		}
		*ret = cfg->token_file_cache;
		return 0;
	}
	*ret = cfg->token;
	return 0;
}

bool kube_config_is_plain_http(const struct kube_config *cfg)
{
	return cfg->server && strncasecmp(cfg->server, "http://", 7) == 0;
}

int kube_config_check(const struct kube_config *cfg, bool allow_insecure_http, char *err,
		      size_t errlen)
{
	const char *context = cfg->context ? cfg->context : "";

	if (!cfg->server)
		return fail(err, errlen, -EINVAL, "context '%s': no server", context);
	if (cfg->insecure_skip_tls_verify && cfg->ca_pem)
		return fail(err, errlen, -EINVAL, "context '%s': %s", context,
			    KUBE_INSECURE_WITH_CA_ERROR);
	if (kube_config_is_plain_http(cfg)) {
		if (!allow_insecure_http)
			return fail(err, errlen, -EPROTONOSUPPORT,
				    "context '%s': server %s is plain http, where a token or client "
				    "certificate would travel in clear; use https, or set "
				    "kube-client-allow-insecure-http to talk to it without credentials",
				    context, cfg->server);
		return 0;
	}
	if (strncasecmp(cfg->server, "https://", 8) != 0)
		return fail(err, errlen, -EPROTONOSUPPORT,
			    "context '%s': server %s is not an https:// URL", context, cfg->server);
	return 0;
}

int kube_config_apply_tls(const struct kube_config *cfg, CURL *easy)
{
	const char *cert = cfg->client_cert_pem, *key = cfg->client_key_pem;
	size_t cert_len = cfg->client_cert_len, key_len = cfg->client_key_len;
	struct curl_blob blob;

	if (cfg->exec && cfg->exec->client_cert_pem) {
		cert = cfg->exec->client_cert_pem;
		cert_len = strlen(cert);
		key = cfg->exec->client_key_pem;
		key_len = key ? strlen(key) : 0;
	}
	if (cfg->insecure_skip_tls_verify) {
		curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (cfg->ca_pem) {
		blob = (struct curl_blob){ cfg->ca_pem, cfg->ca_pem_len, CURL_BLOB_COPY };
		if (curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &blob) != CURLE_OK)
			return -EIO;
	}
	if (cert && key) {
		blob = (struct curl_blob){ (void *)cert, cert_len, CURL_BLOB_COPY };
		if (curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &blob) != CURLE_OK)
			return -EIO;
		curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
		blob = (struct curl_blob){ (void *)key, key_len, CURL_BLOB_COPY };
		if (curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &blob) != CURLE_OK)
			return -EIO;
		curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
	}
	return 0;
}
