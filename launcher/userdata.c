/*
 * The AMI families' bootstraps and how each merges the EC2NodeClass's own
 * userData (see userdata.h): AL2's bootstrap.sh command line, AL2023's
 * nodeadm NodeConfig (built as JSON, written as YAML by libyaml's emitter,
 * keys sorted like sigs.k8s.io/yaml) and the dispatch per family. Called
 * by the EC2NodeClass resolver; pure.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "common/quantity.h"
#include "common/util.h"
#include "common/yaml-json.h"
#include "launcher/userdata.h"
#include "model/kubelet.h"

static const char *const family_names[] = {
	[AMI_FAMILY_AL2] = "AL2",
	[AMI_FAMILY_AL2023] = "AL2023",
	[AMI_FAMILY_BOTTLEROCKET] = "Bottlerocket",
	[AMI_FAMILY_CUSTOM] = "Custom",
	[AMI_FAMILY_UBUNTU] = "Ubuntu",
	[AMI_FAMILY_WINDOWS2019] = "Windows2019",
	[AMI_FAMILY_WINDOWS2022] = "Windows2022",
	[AMI_FAMILY_WINDOWS2025] = "Windows2025",
};

int ami_family_from_name(const char *name, enum ami_family *ret)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(family_names); i++)
		if (streq(name, family_names[i])) {
			*ret = (enum ami_family)i;
			return 0;
		}
	return -EINVAL;
}

const char *ami_family_name(enum ami_family f)
{
	return (size_t)f < ARRAY_SIZE(family_names) ? family_names[f] : "?";
}

bool ami_family_is_windows(enum ami_family f)
{
	return f == AMI_FAMILY_WINDOWS2019 || f == AMI_FAMILY_WINDOWS2022 || f == AMI_FAMILY_WINDOWS2025;
}

const char *ami_family_windows_build(enum ami_family f)
{
	return ami_family_is_windows(f) ? ami_family_windows_build_of(ami_family_name(f)) : NULL;
}

/* kubelet's --node-labels refuses keys in kubernetes.io and k8s.io other
 * than these (k8s.io/kubelet/pkg/apis: KubeletLabels, KubeletLabelNamespaces). */
static const char *const kubelet_labels[] = {
	"kubernetes.io/hostname", "kubernetes.io/instance-type", "kubernetes.io/os",
	"kubernetes.io/arch", "beta.kubernetes.io/instance-type", "beta.kubernetes.io/os",
	"beta.kubernetes.io/arch", "failure-domain.beta.kubernetes.io/zone",
	"failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/zone",
	"topology.kubernetes.io/region", "node.kubernetes.io/instance-type",
};

static bool domain_within(const char *domain, size_t n, const char *suffix)
{
	size_t sn = strlen(suffix);

	return n == sn ? strncmp(domain, suffix, n) == 0 :
	       n > sn && domain[n - sn - 1] == '.' && strncmp(domain + n - sn, suffix, sn) == 0;
}

bool userdata_kubelet_may_set_label(const char *key)
{
	const char *slash = strchr(key, '/');
	size_t n = slash ? (size_t)(slash - key) : 0;

	if (!slash || !(domain_within(key, n, "kubernetes.io") || domain_within(key, n, "k8s.io")))
		return true;
	if (domain_within(key, n, "kubelet.kubernetes.io") || domain_within(key, n, "node.kubernetes.io"))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(kubelet_labels); i++)
		if (streq(key, kubelet_labels[i]))
			return true;
	return false;
}

/* Label and taint text lands inside single-quoted shell words and flag
 * values: Kubernetes keys and values never need more than this. */
static bool safe_word(const char *s)
{
	for (; s && *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_./:@", *s))
			return false;
	return true;
}

static const char *effect_name(uint8_t e)
{
	return e == PROTO_EFFECT_NO_EXECUTE ? "NoExecute" :
	       e == PROTO_EFFECT_PREFER_NO_SCHEDULE ? "PreferNoSchedule" : "NoSchedule";
}

/* Cluster settings land in single-quoted shell words, YAML and TOML. */
static bool safe_setting(const char *s)
{
	for (; s && *s; s++)
		if (*s == '\'' || *s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			return false;
	return true;
}

static int check_inputs(const struct userdata_options *o, char why[USERDATA_WHY_MAX])
{
	const char *fields[] = { o->cluster_name, o->cluster_endpoint, o->cluster_ca, o->cluster_dns,
				 o->service_cidr };

	if (!o->cluster_name || !*o->cluster_name || !o->cluster_endpoint || !*o->cluster_endpoint) {
		snprintf(why, USERDATA_WHY_MAX, "the cluster name and API server endpoint are required");
		return -EINVAL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if (!safe_setting(fields[i])) {
			snprintf(why, USERDATA_WHY_MAX, "cluster setting '%.64s' has characters a bootstrap command cannot carry",
				 fields[i]);
			return -EINVAL;
		}
	for (size_t i = 0; i < o->n_labels; i++)
		if (!safe_word(o->labels[i].key) || !safe_word(o->labels[i].value)) {
			snprintf(why, USERDATA_WHY_MAX, "node label %.64s is not a valid label", o->labels[i].key);
			return -EINVAL;
		}
	for (size_t i = 0; i < o->n_taints; i++)
		if (!safe_word(o->taints[i].key) || !safe_word(o->taints[i].value)) {
			snprintf(why, USERDATA_WHY_MAX, "taint %.64s is not a valid taint", o->taints[i].key);
			return -EINVAL;
		}
	return 0;
}

static int cmp_kv(const void *a, const void *b)
{
	return strcmp(((const struct proto_kv *)a)->key, ((const struct proto_kv *)b)->key);
}

/* --node-labels="a=b,c=d" (sorted, kubelet-settable only), or "" if none. */
int userdata_node_labels_flag(const struct userdata_options *o, char **ret)
{
	_cleanup_free_ struct proto_kv *v = calloc(o->n_labels + 1, sizeof(*v));
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, n = 0;
	FILE *f;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < o->n_labels; i++)
		if (userdata_kubelet_may_set_label(o->labels[i].key))
			v[n++] = o->labels[i];
	qsort(v, n, sizeof(*v), cmp_kv);
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s=%s", i ? "," : "--node-labels=\"", v[i].key, v[i].value ?: "");
	if (n)
		fputc('"', f);
	if (fclose(f) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

/* name="k<sep>v,…" for a resource list / string map, sorted by name. */
static void put_map_flag(FILE *f, const char *flag, const struct proto_resource *res, size_t n_res,
			 const struct proto_kv *kv, size_t n_kv, const char *sep)
{
	size_t n = res ? n_res : n_kv;

	if (n == 0)
		return;
	fprintf(f, " %s=\"", flag);
	for (size_t i = 0; i < n; i++) {
		char q[64];

		if (res)
			quantity_format(res[i].value, streq(res[i].name, "cpu"), !streq(res[i].name, "cpu"),
					q, sizeof(q));
		fprintf(f, "%s%s%s%s", i ? "," : "", res ? res[i].name : kv[i].key, sep,
			res ? q : kv[i].value);
	}
	fputc('"', f);
}

/* The kubelet flags of bootstrap.sh's --kubelet-extra-args, "" if none. */
int userdata_kubelet_args(const struct userdata_options *o, const char *labels, char **ret)
{
	const struct proto_kubelet *k = o->kubelet;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	fputs(labels, f);
	for (size_t i = 0; i < o->n_taints; i++)
		fprintf(f, "%s%s=%s:%s", i ? "," : " --register-with-taints=\"", o->taints[i].key,
			o->taints[i].value ?: "", effect_name(o->taints[i].effect));
	if (o->n_taints)
		fputc('"', f);
	if (k && k->max_pods > 0)
		fprintf(f, " --max-pods=%d", k->max_pods);
	if (k && k->pods_per_core > 0)
		fprintf(f, " --pods-per-core=%d", k->pods_per_core);
	if (k) {
		put_map_flag(f, "--system-reserved", k->system_reserved, k->n_system_reserved, NULL, 0, "=");
		put_map_flag(f, "--kube-reserved", k->kube_reserved, k->n_kube_reserved, NULL, 0, "=");
		put_map_flag(f, "--eviction-hard", NULL, 0, k->eviction_hard, k->n_eviction_hard, "<");
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	/* drop the separator in front of the first flag */
	*ret = strdup(buf + (*buf == ' '));
	return *ret ? 0 : -ENOMEM;
}

/* AL2: Karpenter's shell part, `/etc/eks/bootstrap.sh` with kubelet flags. */
static int al2_script(const struct userdata_options *o, char **ret)
{
	_cleanup_free_ char *buf = NULL, *labels = NULL, *args = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	r = userdata_node_labels_flag(o, &labels);
	if (r >= 0)
		r = userdata_kubelet_args(o, labels, &args);
	if (r < 0)
		return r;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	fputs("#!/bin/bash -xe\n"
	      "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n", f);
	fprintf(f, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s'", o->cluster_name,
		o->cluster_endpoint);
	if (o->cluster_ca)
		fprintf(f, " --b64-cluster-ca '%s'", o->cluster_ca);
	if (o->cluster_dns)
		fprintf(f, " \\\n--dns-cluster-ip '%s'", o->cluster_dns);
	if (o->kubelet && o->kubelet->max_pods > 0)
		fputs(" \\\n--use-max-pods false", f);
	if (*args)
		fprintf(f, " \\\n--kubelet-extra-args '%s'", args);
	if (fclose(f) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

#define SHELL_PART_HEADERS "Content-Type: text/x-shellscript; charset=\"us-ascii\"\n"
#define NODECONFIG_PART_HEADERS "Content-Type: application/node.eks.aws\n"

/* The user's userData as MIME parts: its own parts when it is a multipart
 * document, else one part of the given type. */
static int custom_parts(const char *custom, const char *plain_headers, struct mime_parts *ret,
			char why[USERDATA_WHY_MAX])
{
	if (!custom || !*custom)
		return 0;
	if (mime_is_document(custom))
		return mime_parse(custom, ret, why);
	return mime_parts_add(ret, plain_headers, custom);
}

static int render_al2(const struct userdata_options *o, char **ret, char why[USERDATA_WHY_MAX])
{
	_cleanup_free_ char *script = NULL;
	struct mime_parts parts = { .n = 0 };
	int r;

	r = custom_parts(o->custom, SHELL_PART_HEADERS, &parts, why);
	if (r >= 0)
		r = al2_script(o, &script);
	if (r >= 0)
		r = mime_parts_add(&parts, SHELL_PART_HEADERS, script);
	if (r >= 0)
		r = mime_write(&parts, ret);
	mime_parts_clear(&parts);
	return r;
}

/* ---- AL2023: nodeadm NodeConfig ---------------------------------------- */

static int json_set(json_t *o, const char *key, json_t *v)
{
	return v && json_object_set_new(o, key, v) == 0 ? 0 : -ENOMEM;
}

static json_t *resources_json(const struct proto_resource *res, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < n; i++) {
		char q[64];

		quantity_format(res[i].value, streq(res[i].name, "cpu"), !streq(res[i].name, "cpu"), q,
				sizeof(q));
		if (json_set(o, res[i].name, json_string(q)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *nodeconfig_json(const struct userdata_options *o, const char *labels_flag)
{
	const struct proto_kubelet *k = o->kubelet;
	json_t *doc = json_object(), *cluster = json_object(), *config = json_object();
	json_t *kubelet = json_object(), *spec = json_object();
	int r = doc && cluster && config && kubelet && spec ? 0 : -ENOMEM;

	if (r >= 0)
		r = json_set(cluster, "name", json_string(o->cluster_name));
	if (r >= 0)
		r = json_set(cluster, "apiServerEndpoint", json_string(o->cluster_endpoint));
	if (r >= 0 && o->cluster_ca)
		r = json_set(cluster, "certificateAuthority", json_string(o->cluster_ca));
	if (r >= 0)
		r = json_set(cluster, "cidr", json_string(o->service_cidr ?: USERDATA_DEFAULT_SERVICE_CIDR));
	if (r >= 0 && o->cluster_dns)
		r = json_set(config, "clusterDNS", json_pack("[s]", o->cluster_dns));
	if (r >= 0 && k && k->max_pods > 0)
		r = json_set(config, "maxPods", json_integer(k->max_pods));
	if (r >= 0 && k && k->pods_per_core > 0)
		r = json_set(config, "podsPerCore", json_integer(k->pods_per_core));
	if (r >= 0 && k && k->n_system_reserved)
		r = json_set(config, "systemReserved", resources_json(k->system_reserved, k->n_system_reserved));
	if (r >= 0 && k && k->n_kube_reserved)
		r = json_set(config, "kubeReserved", resources_json(k->kube_reserved, k->n_kube_reserved));
	for (size_t i = 0; r >= 0 && k && i < k->n_eviction_hard; i++) {
		json_t *eh = json_object_get(config, "evictionHard");

		if (!eh)
			r = json_set(config, "evictionHard", eh = json_object());
		if (r >= 0)
			r = json_set(eh, k->eviction_hard[i].key, json_string(k->eviction_hard[i].value));
	}
	if (r >= 0 && o->n_taints) {
		json_t *taints = json_array();

		r = json_set(config, "registerWithTaints", taints);
		for (size_t i = 0; r >= 0 && i < o->n_taints; i++) {
			json_t *t = json_pack("{s:s, s:s}", "key", o->taints[i].key, "effect",
					      effect_name(o->taints[i].effect));

			if (t && o->taints[i].value && *o->taints[i].value)
				json_object_set_new(t, "value", json_string(o->taints[i].value));
			r = t && json_array_append_new(taints, t) == 0 ? 0 : -ENOMEM;
		}
	}
	if (r >= 0)
		r = json_set(kubelet, "config", json_incref(config));
	if (r >= 0 && *labels_flag)
		r = json_set(kubelet, "flags", json_pack("[s]", labels_flag));
	if (r >= 0)
		r = json_set(spec, "cluster", json_incref(cluster));
	if (r >= 0)
		r = json_set(spec, "kubelet", json_incref(kubelet));
	if (r >= 0)
		r = json_set(doc, "apiVersion", json_string("node.eks.aws/v1alpha1"));
	if (r >= 0)
		r = json_set(doc, "kind", json_string("NodeConfig"));
	if (r >= 0)
		r = json_set(doc, "spec", json_incref(spec));
	json_decref(cluster);
	json_decref(config);
	json_decref(kubelet);
	json_decref(spec);
	if (r < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* A string YAML would read back as another type gets double quotes. */
static bool needs_quotes(const char *s)
{
	static const char *const words[] = { "true", "false", "yes", "no", "on", "off", "y", "n",
					     "null", "~" };
	char *end;

	if (!*s)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (strcasecmp(s, words[i]) == 0)
			return true;
	(void)strtod(s, &end);
	return *end == '\0';
}

static int emit(yaml_emitter_t *e, yaml_event_t *ev, int ok)
{
	return ok && yaml_emitter_emit(e, ev) ? 0 : -ENOMEM;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int emit_json(yaml_emitter_t *e, json_t *v)
{
	yaml_event_t ev;
	char num[32];
	int r = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		size_t n = json_object_size(v), i = 0;
		_cleanup_free_ const char **keys = calloc(n + 1, sizeof(*keys));
		const char *k;
		json_t *x;

		if (!keys)
			return -ENOMEM;
		json_object_foreach(v, k, x)
			keys[i++] = k;
		qsort(keys, n, sizeof(*keys), cmp_str);
		r = emit(e, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE));
		for (i = 0; r >= 0 && i < n; i++) {
			json_t *key = json_string(keys[i]);

			r = key ? emit_json(e, key) : -ENOMEM;
			json_decref(key);
			if (r >= 0)
				r = emit_json(e, json_object_get(v, keys[i]));
		}
		return r < 0 ? r : emit(e, &ev, yaml_mapping_end_event_initialize(&ev));
	}
	case JSON_ARRAY: {
		size_t i;
		json_t *x;

		r = emit(e, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE));
		json_array_foreach(v, i, x)
			if (r >= 0)
				r = emit_json(e, x);
		return r < 0 ? r : emit(e, &ev, yaml_sequence_end_event_initialize(&ev));
	}
	case JSON_STRING: {
		const char *s = json_string_value(v);

		return emit(e, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
								  needs_quotes(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
										  : YAML_ANY_SCALAR_STYLE));
	}
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	default:
		snprintf(num, sizeof(num), "%s", json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null");
	}
	return emit(e, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)num, (int)strlen(num), 1, 1,
							  YAML_PLAIN_SCALAR_STYLE));
}

static int yaml_out(void *data, unsigned char *buffer, size_t size)
{
	return fwrite(buffer, 1, size, data) == size;
}

static int json_to_yaml(json_t *doc, FILE *f)
{
	yaml_emitter_t e;
	yaml_event_t ev;
	int r;

	if (!yaml_emitter_initialize(&e))
		return -ENOMEM;
	yaml_emitter_set_output(&e, yaml_out, f);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_width(&e, -1);
	r = emit(&e, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	if (r >= 0)
		r = emit(&e, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
	if (r >= 0)
		r = emit_json(&e, doc);
	if (r >= 0)
		r = emit(&e, &ev, yaml_document_end_event_initialize(&ev, 1));
	if (r >= 0)
		r = emit(&e, &ev, yaml_stream_end_event_initialize(&ev));
	yaml_emitter_delete(&e);
	return r;
}

/* The user's non-MIME userData is a NodeConfig when it is a YAML mapping. */
static bool is_yaml_mapping(const char *s)
{
	struct yaml_docs *docs = NULL;
	char err[128];
	bool ok;

	if (yaml_docs_load_buffer(s, strlen(s), "userData", &docs, err, sizeof(err)) < 0)
		return false;
	ok = docs->n_docs > 0 && json_is_object(docs->docs[0]);
	yaml_docs_free(docs);
	return ok;
}

static int render_al2023(const struct userdata_options *o, char **ret, char why[USERDATA_WHY_MAX])
{
	_cleanup_free_ char *labels = NULL, *config = NULL;
	struct mime_parts parts = { .n = 0 };
	size_t len = 0;
	json_t *doc;
	FILE *f;
	int r;

	r = userdata_node_labels_flag(o, &labels);
	if (r < 0)
		return r;
	doc = nodeconfig_json(o, labels);
	f = doc ? open_memstream(&config, &len) : NULL;
	if (!f) {
		json_decref(doc);
		return -ENOMEM;
	}
	fputs("# Karpenter Generated NodeConfig\n", f);
	r = json_to_yaml(doc, f);
	json_decref(doc);
	if (fclose(f) != 0 && r >= 0)
		r = -ENOMEM;
	if (r >= 0)
		r = mime_parts_add(&parts, NODECONFIG_PART_HEADERS, config);
	if (r >= 0)
		r = custom_parts(o->custom,
				 o->custom && !mime_is_document(o->custom) && is_yaml_mapping(o->custom)
					 ? NODECONFIG_PART_HEADERS : SHELL_PART_HEADERS,
				 &parts, why);
	if (r >= 0)
		r = mime_write(&parts, ret);
	mime_parts_clear(&parts);
	return r;
}

int userdata_render(const struct userdata_options *o, char **ret, char why[USERDATA_WHY_MAX])
{
	_cleanup_free_ char *out = NULL;
	int r;

	*why = '\0';
	if (o->custom && strlen(o->custom) > USERDATA_MAX_BYTES) {
		snprintf(why, USERDATA_WHY_MAX, "userData is longer than EC2's %d bytes", USERDATA_MAX_BYTES);
		return -E2BIG;
	}
	if (o->family != AMI_FAMILY_CUSTOM) {
		r = check_inputs(o, why);
		if (r < 0)
			return r;
	}
	switch (o->family) {
	case AMI_FAMILY_AL2:
	case AMI_FAMILY_UBUNTU:
		r = render_al2(o, &out, why);
		break;
	case AMI_FAMILY_WINDOWS2019:
	case AMI_FAMILY_WINDOWS2022:
	case AMI_FAMILY_WINDOWS2025:
		r = windows_render(o, &out);
		break;
	case AMI_FAMILY_AL2023:
		r = render_al2023(o, &out, why);
		break;
	case AMI_FAMILY_BOTTLEROCKET:
		r = bottlerocket_merge(o, o->custom, &out, why);
		break;
	default:
		r = (out = strdup(o->custom ?: "")) ? 0 : -ENOMEM;
	}
	if (r == -E2BIG && !*why)
		snprintf(why, USERDATA_WHY_MAX, "the multipart userData has more than %d parts", USERDATA_MAX_PARTS);
	if (r < 0)
		return r;
	if (strlen(out) > USERDATA_MAX_BYTES) {
		snprintf(why, USERDATA_WHY_MAX, "the merged user data is %zu bytes, over EC2's %d",
			 strlen(out), USERDATA_MAX_BYTES);
		return -E2BIG;
	}
	*ret = TAKE_PTR(out);
	return 0;
}
