/*
 * kanna-sim: wires the embedded Kubernetes API (k8s-*.c) and the AWS side
 * (sim/aws.h) together, writes DIR/kubeconfig and DIR/aws.env, signals
 * readiness (sd_notify and DIR/ready) and serves until SIGTERM or SIGINT.
 * Only wiring lives here; every behaviour is in the modules.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "common/base64.h"
#include "common/log.h"
#include "common/util.h"
#include "common/yaml-json.h"
#include "sim/aws.h"
#include "sim/k8s-controllers.h"
#include "sim/k8s-server.h"
#include "sim/kubelet.h"
#include "sim/tls.h"

/* Random bytes in the bearer token (hex-encoded: twice as many characters). */
#define SIM_TOKEN_BYTES 32

struct sim_options {
	const char *state_dir;
	const char *config;
	bool insecure_http;
	bool no_controllers;
	uint16_t port;
	uint16_t aws_port;
	size_t watch_window;
	unsigned kubelet_boot_ms;
	unsigned pod_gc_quarantine_ms;
	bool crd_enums_unchecked;
	const char *cluster_name;
	const char *region;
	char *aws_faults; /* JSON */
	struct k8s_faults k8s_faults;
	json_t *config_doc;
};

struct sim {
	struct sim_options opt;
	struct k8s_registry *reg;
	struct k8s_store *store;
	struct k8s_api api;
	struct k8s_server *server;
	struct k8s_controllers *controllers;
	struct sim_kubelet *kubelet;
	struct sim_aws *aws;
	struct sim_tls tls;
	char token[SIM_TOKEN_BYTES * 2 + 1];
};

static void usage(FILE *f)
{
	fputs("Usage: kanna-sim --state-dir DIR [OPTION]...\n"
	      "Serves a Kubernetes API and the EC2/SSM/STS/SQS APIs on 127.0.0.1.\n"
	      "Writes DIR/kubeconfig, DIR/aws.env and DIR/ready. See kanna-sim(1).\n\n"
	      "  -d, --state-dir=DIR    where its state, certificates and files go\n"
	      "  -c, --config=FILE      YAML: timings, cluster name, region, faults\n"
	      "  -k, --insecure-http    plain HTTP instead of TLS for the Kubernetes API\n"
	      "  -p, --port=N           Kubernetes API port (default: any free port)\n"
	      "  -a, --aws-port=N       AWS endpoint port (default: any free port)\n"
	      "  -n, --no-controllers   run no controllers (kubelet, deployments, ...)\n"
	      "  -h, --help             print this help and exit\n"
	      "      --version          print the version and exit\n", f);
}

static int parse_port(const char *s, uint16_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

/* The YAML config: watch-window-events, kubelet-boot-ms, pod-gc-quarantine-ms, crd-enums,
 * cluster-name, region, aws-faults, k8s-faults. */
static int load_config(struct sim_options *o)
{
	struct yaml_docs *docs = NULL;
	const char *key;
	char err[512];
	json_t *doc, *v;
	int r;

	r = yaml_docs_load_file(o->config, &docs, err, sizeof(err));
	if (r < 0)
		return log_error_errno(r, "Failed to load config %s: %s", o->config, err);
	doc = docs->n_docs > 0 ? json_incref(docs->docs[0]) : json_object();
	yaml_docs_free(docs);
	o->config_doc = doc;
	if (!json_is_object(doc))
		return log_error_errno(-EINVAL, "Failed to load config %s: not a mapping", o->config);
	json_object_foreach(doc, key, v) {
		if (streq(key, "watch-window-events") && json_integer_value(v) > 0)
			o->watch_window = (size_t)json_integer_value(v);
		else if (streq(key, "kubelet-boot-ms") && json_is_integer(v) &&
			 json_integer_value(v) >= 0 && json_integer_value(v) <= 3600000)
			o->kubelet_boot_ms = (unsigned)json_integer_value(v);
		else if (streq(key, "pod-gc-quarantine-ms") && json_is_integer(v) &&
			 json_integer_value(v) >= 0 && json_integer_value(v) <= 3600000)
			o->pod_gc_quarantine_ms = (unsigned)json_integer_value(v);
		else if (streq(key, "crd-enums") && json_is_boolean(v))
			o->crd_enums_unchecked = !json_is_true(v);
		else if (streq(key, "cluster-name") && json_is_string(v))
			o->cluster_name = json_string_value(v);
		else if (streq(key, "region") && json_is_string(v))
			o->region = json_string_value(v);
		else if (streq(key, "aws-faults") && json_is_object(v))
			o->aws_faults = json_dumps(v, JSON_COMPACT);
		else if (streq(key, "k8s-faults")) {
			if (k8s_faults_from_json(v, &o->k8s_faults, err, sizeof(err)) < 0)
				return log_error_errno(-EINVAL, "Failed to load config %s: k8s-faults: %s",
						       o->config, err);
		}
		else
			return log_error_errno(-EINVAL, "Failed to load config %s: invalid key or value \"%s\"",
					       o->config, key);
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct sim_options *o)
{
	static const struct option longopts[] = {
		{ "state-dir", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "insecure-http", no_argument, NULL, 'k' },
		{ "no-controllers", no_argument, NULL, 'n' },
		{ "port", required_argument, NULL, 'p' },
		{ "aws-port", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "d:c:knp:a:h", longopts, NULL)) >= 0) {
		switch (c) {
		case 'd': o->state_dir = optarg; break;
		case 'c': o->config = optarg; break;
		case 'k': o->insecure_http = true; break;
		case 'n': o->no_controllers = true; break;
		case 'p':
			if (parse_port(optarg, &o->port) < 0)
				return log_error_errno(-EINVAL, "Failed to parse --port: %s", optarg);
			break;
		case 'a':
			if (parse_port(optarg, &o->aws_port) < 0)
				return log_error_errno(-EINVAL, "Failed to parse --aws-port: %s", optarg);
			break;
		case 'h': usage(stdout); exit(EXIT_SUCCESS);
		case 'V': printf("kanna-sim (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION); exit(EXIT_SUCCESS);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (!o->state_dir || optind != argc) {
		usage(stderr);
		return -EINVAL;
	}
	return o->config ? load_config(o) : 0;
}

/* Writes path atomically (temporary file + rename) with mode 0600. */
static int write_file(const char *path, const char *data, size_t len)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fchmod(fileno(f), 0600);
	if (fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		unlink(tmp);
		return -EIO;
	}
	return rename(tmp, path) < 0 ? -errno : 0;
}

static int write_kubeconfig(struct sim *sim, const char *path)
{
	char server[64];
	_cleanup_free_ char *ca64 = NULL, *text = NULL;
	json_t *cluster, *kc;
	int r;

	snprintf(server, sizeof(server), "%s://127.0.0.1:%u",
		 sim->opt.insecure_http ? "http" : "https", k8s_server_port(sim->server));
	cluster = json_pack("{s:s}", "server", server);
	if (!sim->opt.insecure_http) {
		ca64 = base64_encode(sim->tls.ca_pem, strlen(sim->tls.ca_pem));
		if (!ca64)
			return -ENOMEM;
		json_object_set_new(cluster, "certificate-authority-data", json_string(ca64));
	}
	/* JSON is YAML: kubectl and common/kubeconfig read it as is. */
	kc = json_pack("{s:s, s:s, s:[{s:s, s:o}], s:[{s:s, s:{s:s}}],"
		       " s:[{s:s, s:{s:s, s:s, s:s}}], s:s}",
		       "apiVersion", "v1", "kind", "Config",
		       "clusters", "name", "kanna-sim", "cluster", cluster,
		       "users", "name", "kanna-sim", "user", "token",
		       sim->opt.insecure_http ? "" : sim->token,
		       "contexts", "name", "kanna-sim", "context", "cluster", "kanna-sim",
		       "user", "kanna-sim", "namespace", "default",
		       "current-context", "kanna-sim");
	text = kc ? json_dumps(kc, JSON_INDENT(2)) : NULL;
	json_decref(kc);
	if (!text)
		return -ENOMEM;
	r = write_file(path, text, strlen(text));
	return r;
}

static int write_state(struct sim *sim)
{
	const char *dir = sim->opt.state_dir;
	char path[4096];
	char *env = NULL;
	size_t env_len = 0;
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/kubeconfig", dir);
	r = write_kubeconfig(sim, path);
	if (r < 0)
		return log_error_errno(r, "Failed to write %s: %m", path);
	if (sim->tls.ca_pem) {
		snprintf(path, sizeof(path), "%s/ca.crt", dir);
		r = write_file(path, sim->tls.ca_pem, strlen(sim->tls.ca_pem));
		if (r < 0)
			return log_error_errno(r, "Failed to write %s: %m", path);
	}
	snprintf(path, sizeof(path), "%s/token", dir);
	r = write_file(path, sim->token, strlen(sim->token));
	if (r < 0)
		return log_error_errno(r, "Failed to write %s: %m", path);
	f = open_memstream(&env, &env_len);
	if (!f)
		return log_error_errno(-ENOMEM, "Failed to write aws.env: %m");
	r = sim_aws_write_env(sim->aws, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/aws.env", dir);
	if (r >= 0)
		r = write_file(path, env, env_len);
	free(env);
	if (r < 0)
		return log_error_errno(r, "Failed to write %s: %m", path);
	return 0;
}

static int start_aws(struct sim *sim)
{
	struct sim_aws_config cfg;
	int r;

	sim_aws_config_init(&cfg);
	if (sim->opt.region)
		cfg.region = sim->opt.region;
	if (sim->opt.cluster_name)
		cfg.cluster_name = sim->opt.cluster_name;
	cfg.faults_json = sim->opt.aws_faults;
	r = sim_aws_new(&sim->aws, &cfg);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the AWS simulator: %m");
	r = sim_aws_start(sim->aws, sim->opt.aws_port);
	if (r < 0)
		return log_error_errno(r, "Failed to start the AWS simulator: %m");
	return 0;
}

static int start_k8s(struct sim *sim)
{
	/* Plain HTTP has no authentication, as kube-apiserver's old insecure
	 * port: client-go never sends a bearer token over http://. */
	struct k8s_server_config cfg = {
		.port = sim->opt.port,
		.token = sim->opt.insecure_http ? NULL : sim->token,
	};
	uint8_t raw[SIM_TOKEN_BYTES];
	char dir[4096], msg[512];
	int r;

	sim->reg = k8s_registry_new();
	if (!sim->reg)
		return log_error_errno(-ENOMEM, "Failed to build the resource registry: %m");
	snprintf(dir, sizeof(dir), "%s/crds", k8s_data_dir());
	r = k8s_registry_load_crds(sim->reg, dir);
	if (r < 0)
		return r;
	sim->reg->crd_enums_unchecked = sim->opt.crd_enums_unchecked;
	r = k8s_store_new(sim->reg, sim->opt.watch_window, &sim->store);
	if (r >= 0)
		r = k8s_store_seed(sim->store);
	if (r < 0)
		return log_error_errno(r, "Failed to set up the object store: %m");
	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return log_error_errno(-EIO, "Failed to generate the bearer token");
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(sim->token + 2 * i, 3, "%02x", raw[i]);
	if (!sim->opt.insecure_http) {
		r = sim_tls_generate(&sim->tls);
		if (r < 0)
			return log_error_errno(r, "Failed to generate TLS certificates: %m");
		cfg.tls = &sim->tls;
	}
	k8s_api_init(&sim->api, sim->reg, sim->store);
	if (k8s_faults_validate(sim->reg, &sim->opt.k8s_faults, msg, sizeof(msg)) < 0)
		return log_error_errno(-EINVAL, "Failed to load config %s: k8s-faults: %s",
				       sim->opt.config ?: "", msg);
	k8s_faults_set(&sim->api, &sim->opt.k8s_faults);
	r = k8s_server_start(&sim->api, &cfg, &sim->server);
	if (r < 0)
		return r;
	snprintf(sim->api.server_address, sizeof(sim->api.server_address),
		 "127.0.0.1:%u", k8s_server_port(sim->server));
	return 0;
}

/* After the AWS side: the kubelet-lite reads its instances. */
static int start_controllers(struct sim *sim)
{
	int r;

	if (sim->opt.no_controllers)
		return 0;
	r = sim_kubelet_new(sim->store, sim->aws, sim->opt.kubelet_boot_ms, &sim->kubelet);
	if (r >= 0)
		r = k8s_controllers_start(sim->store, sim_kubelet_tick, sim->kubelet,
					  sim->opt.pod_gc_quarantine_ms, &sim->controllers);
	if (r < 0)
		return log_error_errno(r, "Failed to start the controllers: %m");
	return 0;
}

static void sim_stop(struct sim *sim)
{
	sim->server = k8s_server_free(sim->server);
	sim->controllers = k8s_controllers_free(sim->controllers);
	sim->kubelet = sim_kubelet_free(sim->kubelet);
	sim->aws = sim_aws_free(sim->aws);
	if (sim->api.store)
		k8s_api_done(&sim->api);
	sim->store = k8s_store_free(sim->store);
	sim->reg = k8s_registry_free(sim->reg);
	sim_tls_clear(&sim->tls);
	free(sim->opt.aws_faults);
	json_decref(sim->opt.config_doc);
}

static int run(struct sim *sim, const sigset_t *signals)
{
	char ready[4096];
	int sig, r;

	if (mkdir(sim->opt.state_dir, 0700) < 0 && errno != EEXIST)
		return log_error_errno(errno, "Failed to create %s: %m", sim->opt.state_dir);
	snprintf(ready, sizeof(ready), "%s/ready", sim->opt.state_dir);
	unlink(ready);
	r = start_k8s(sim);
	if (r >= 0)
		r = start_aws(sim);
	if (r >= 0)
		r = start_controllers(sim);
	if (r >= 0)
		r = write_state(sim);
	if (r < 0)
		return r;
	printf("Kubernetes API: %s://127.0.0.1:%u\n", sim->opt.insecure_http ? "http" : "https",
	       k8s_server_port(sim->server));
	printf("AWS API: http://127.0.0.1:%u\n", sim_aws_port(sim->aws));
	printf("KUBECONFIG=%s/kubeconfig; . %s/aws.env\n", sim->opt.state_dir, sim->opt.state_dir);
	fflush(stdout);
	r = write_file(ready, "", 0);
	if (r < 0)
		return log_error_errno(r, "Failed to write %s: %m", ready);
	(void)sd_notify(0, "READY=1");
	log_info("kanna-sim ready, state in %s", sim->opt.state_dir);
	if (sigwait(signals, &sig) != 0)
		return log_error_errno(-EINTR, "Failed to wait for signals: %m");
	log_info("received %s, stopping", strsignal(sig));
	(void)sd_notify(0, "STOPPING=1");
	unlink(ready);
	return 0;
}

int main(int argc, char **argv)
{
	struct sim sim = { .opt = { .watch_window = K8S_WATCH_WINDOW_DEFAULT,
				    .kubelet_boot_ms = SIM_KUBELET_BOOT_MS_DEFAULT,
				    .pod_gc_quarantine_ms = K8S_POD_GC_QUARANTINE_MS_DEFAULT } };
	sigset_t signals;
	int r;

	log_setup("kanna-sim", LOG_FORMAT_AUTO, LOG_LEVEL_INFO);
	/* Block before any thread starts so that only sigwait() sees them. */
	sigemptyset(&signals);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGINT);
	pthread_sigmask(SIG_BLOCK, &signals, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = parse_args(argc, argv, &sim.opt);
	if (r >= 0)
		r = run(&sim, &signals);
	sim_stop(&sim);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
