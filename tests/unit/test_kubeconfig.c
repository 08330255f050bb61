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

Test(kubeconfig, exec_plugin_token_is_used_and_cached_until_expiry)
{
	char text[1024], script[256];
	struct kube_config *cfg;
	const char *tok;
	snprintf(script, sizeof(script), "%s/get-token", dir);
	write_file("get-token",
		   "#!/bin/sh\n"
		   "echo run >> \"$(dirname \"$0\")/runs\"\n"
		   "case \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; *) exit 3;; esac\n"
		   "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
		   "\"status\":{\"token\":\"'$CLUSTER'-tok\",\"expirationTimestamp\":\"2999-01-01T00:00:00Z\"}}'\n",
		   0700);
	snprintf(text, sizeof(text),
		 "current-context: c\nclusters: [{name: k, cluster: {server: 'https://x'}}]\n"
		 "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
		 "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
		 "      command: %s\n      args: [eks, get-token]\n      env: [{name: CLUSTER, value: demo}]\n",
		 script);
	cfg = load(text, NULL);
	cr_assert_eq(kube_config_bearer_token(cfg, &tok, NULL, 0), 0);
	cr_assert_str_eq(tok, "demo-tok");
	cr_assert_eq(kube_config_bearer_token(cfg, &tok, NULL, 0), 0);
	{
		char runs[256], buf[64] = "";
		FILE *f;
		snprintf(runs, sizeof(runs), "%s/runs", dir);
		f = fopen(runs, "r");
		cr_assert_not_null(f);
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		cr_assert_str_eq(buf, "run\n", "plugin ran once, then the cache answered");
	}
	kube_config_free(cfg);
}

Test(kubeconfig, exec_plugin_failure_is_reported_with_its_exit_status)
{
	char text[1024], script[256], err[512];
	struct kube_config *cfg;
	const char *tok;
	snprintf(script, sizeof(script), "%s/fail", dir);
	write_file("fail", "#!/bin/sh\nexit 7\n", 0700);
	snprintf(text, sizeof(text),
		 "current-context: c\nclusters: [{name: k, cluster: {server: 'https://x'}}]\n"
		 "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
		 "users: [{name: u, user: {exec: {command: %s}}}]\n", script);
	cfg = load(text, NULL);
	cr_assert_lt(kube_config_bearer_token(cfg, &tok, err, sizeof(err)), 0);
	cr_assert(strstr(err, "exit status 7"), "%s", err);
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
