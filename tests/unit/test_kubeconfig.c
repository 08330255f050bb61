/* kubeconfig variants: token, token file, client cert, CA data, exec, in-cluster. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/kubeconfig.h"

static char dir[64];

static void setup(void)
{
	strcpy(dir, "/tmp/kanna-kubeconfig-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(kubeconfig, .init = setup, .fini = teardown);

static void write_file(const char *name, const char *text, mode_t mode)
{
	char path[256];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static struct kube_config *load(const char *text, const char *context)
{
	struct kube_config *cfg = NULL;
	char path[256], err[512];
	write_file("config", text, 0600);
	snprintf(path, sizeof(path), "%s/config", dir);
	cr_assert_eq(kube_config_load(path, context, &cfg, err, sizeof(err)), 0, "%s", err);
	return cfg;
}

static const char *two_contexts =
	"apiVersion: v1\nkind: Config\ncurrent-context: sim\n"
	"clusters:\n"
	"- name: sim\n  cluster:\n    server: https://127.0.0.1:6443/\n"
	"    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmFiYwo=\n"
	"- name: prod\n  cluster:\n    server: https://prod.example:443\n    certificate-authority: ca.pem\n"
	"contexts:\n"
	"- name: sim\n  context: {cluster: sim, user: admin, namespace: karpenter}\n"
	"- name: prod\n  context: {cluster: prod, user: certuser}\n"
	"users:\n"
	"- name: admin\n  user: {token: s3cr3t}\n"
	"- name: certuser\n  user:\n    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ\n";

Test(kubeconfig, current_context_gives_server_ca_data_namespace_and_token)
{
	struct kube_config *cfg = load(two_contexts, NULL);
	const char *tok;
	cr_assert_str_eq(cfg->context, "sim");
	cr_assert_str_eq(cfg->server, "https://127.0.0.1:6443", "trailing slash dropped");
	cr_assert_str_eq(cfg->namespace, "karpenter");
	cr_assert_str_eq(cfg->ca_pem, "-----BEGIN CERTIFICATE-----\nabc\n");
	cr_assert_eq(kube_config_bearer_token(cfg, &tok, NULL, 0), 0);
	cr_assert_str_eq(tok, "s3cr3t");
	kube_config_free(cfg);
}

Test(kubeconfig, named_context_uses_client_certificate_and_ca_file_relative_to_the_config)
{
	struct kube_config *cfg;
	const char *tok = "x";
	write_file("ca.pem", "CA-FILE", 0600);
	cfg = load(two_contexts, "prod");
	cr_assert_str_eq(cfg->server, "https://prod.example:443");
	cr_assert_str_eq(cfg->ca_pem, "CA-FILE");
	cr_assert_str_eq(cfg->client_cert_pem, "CERT");
	cr_assert_str_eq(cfg->client_key_pem, "KEY");
	cr_assert_str_eq(cfg->namespace, "default");
	cr_assert_eq(kube_config_bearer_token(cfg, &tok, NULL, 0), 0);
	cr_assert_null(tok);
	kube_config_free(cfg);
}

Test(kubeconfig, unknown_context_is_an_error_naming_it)
{
	struct kube_config *cfg = NULL;
	char path[256], err[512];
	write_file("config", two_contexts, 0600);
	snprintf(path, sizeof(path), "%s/config", dir);
	cr_assert_lt(kube_config_load(path, "nope", &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "context 'nope' not found"), "%s", err);
}

Test(kubeconfig, missing_ca_file_is_an_error_naming_the_path)
{
	struct kube_config *cfg = NULL;
	char path[256], err[512];
	write_file("config", two_contexts, 0600);
	snprintf(path, sizeof(path), "%s/config", dir);
	cr_assert_lt(kube_config_load(path, "prod", &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "ca.pem"), "%s", err);
}

Test(kubeconfig, token_file_is_reread_when_it_changes)
{
	char text[512];
	struct kube_config *cfg;
	const char *tok;
	write_file("token", "first\n", 0600);
	snprintf(text, sizeof(text),
		 "current-context: c\nclusters: [{name: k, cluster: {server: 'http://x'}}]\n"
		 "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
		 "users: [{name: u, user: {tokenFile: token}}]\n");
	cfg = load(text, NULL);
	cr_assert_eq(kube_config_bearer_token(cfg, &tok, NULL, 0), 0);
	cr_assert_str_eq(tok, "first");
	sleep(1); /* mtime granularity */
	write_file("token", "second\n", 0600);
	cr_assert_eq(kube_config_bearer_token(cfg, &tok, NULL, 0), 0);
	cr_assert_str_eq(tok, "second");
	kube_config_free(cfg);
}

/* client-go's tlsConfigFor() refuses the same, in these words. */
Test(kubeconfig, insecure_skip_tls_verify_with_a_ca_is_refused_as_kubectl_refuses_it)
{
	struct kube_config *cfg = NULL;
	char path[256], err[512];

	write_file("config",
		   "current-context: c\nclusters: [{name: k, cluster: {server: 'https://x', "
		   "insecure-skip-tls-verify: true, certificate-authority-data: Q0E=}}]\n"
		   "contexts: [{name: c, context: {cluster: k}}]\n", 0600);
	snprintf(path, sizeof(path), "%s/config", dir);
	cr_assert_lt(kube_config_load(path, NULL, &cfg, err, sizeof(err)), 0);
	cr_assert_null(cfg);
	cr_assert(strstr(err, "specifying a root certificates file with the insecure flag is not allowed"),
		  "%s", err);
	cr_assert(strstr(err, "cluster 'k'"), "%s", err);
}

Test(kubeconfig, insecure_skip_tls_verify_alone_is_loaded_and_flagged)
{
	struct kube_config *cfg = load("current-context: c\nclusters: [{name: k, cluster: {server: "
				       "'https://x', insecure-skip-tls-verify: true}}]\n"
				       "contexts: [{name: c, context: {cluster: k}}]\n", NULL);
	cr_assert(cfg->insecure_skip_tls_verify);
	cr_assert_eq(kube_config_check(cfg, false, NULL, 0), 0);
	kube_config_free(cfg);
}

Test(kubeconfig, a_server_without_a_scheme_means_https)
{
	struct kube_config *cfg = load("current-context: c\nclusters: [{name: k, cluster: {server: "
				       "'10.0.0.1:6443'}}]\n"
				       "contexts: [{name: c, context: {cluster: k}}]\n", NULL);
	cr_assert_str_eq(cfg->server, "https://10.0.0.1:6443");
	cr_assert_not(kube_config_is_plain_http(cfg));
	kube_config_free(cfg);
}

Test(kubeconfig, in_cluster_reads_the_service_account)
{
	struct kube_config *cfg = NULL;
	char err[256];
	const char *tok;
	write_file("token", "sa-token\n", 0600);
	write_file("ca.crt", "SA-CA", 0600);
	write_file("namespace", "karpenter\n", 0600);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	cr_assert_eq(kube_config_in_cluster(dir, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(cfg->server, "https://[fd00::1]:443");
	cr_assert_str_eq(cfg->namespace, "karpenter");
	cr_assert_str_eq(cfg->ca_pem, "SA-CA");
	cr_assert_eq(kube_config_bearer_token(cfg, &tok, NULL, 0), 0);
	cr_assert_str_eq(tok, "sa-token");
	kube_config_free(cfg);
}

Test(kubeconfig, not_in_a_cluster_says_why)
{
	struct kube_config *cfg = NULL;
	char err[256];
	unsetenv("KUBERNETES_SERVICE_HOST");
	cr_assert_lt(kube_config_in_cluster(dir, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "KUBERNETES_SERVICE_HOST"), "%s", err);
}
