/*
 * kanna-sim's resource registry: the built-in Kubernetes types (the subset
 * kanna and kubectl use) and the custom resources read from the shipped
 * CRD YAML with common/yaml-json. Built once at start by main.c, read-only
 * afterwards except for the per-resource object trees the store owns.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "common/yaml-json.h"
#include "sim/k8s-resource.h"
#include "sim/k8s-schema.h"

static const struct builtin {
	const char *group, *version, *kind, *plural, *singular, *short_names,
		*categories;
	bool namespaced;
	unsigned subresources;
} builtins[] = {
	{ "", "v1", "Namespace", "namespaces", "namespace", "ns", "", false, K8S_SUB_STATUS },
	{ "", "v1", "Pod", "pods", "pod", "po", "all", true,
	  K8S_SUB_STATUS | K8S_SUB_BINDING | K8S_SUB_EVICTION },
	{ "", "v1", "Node", "nodes", "node", "no", "", false, K8S_SUB_STATUS },
	{ "", "v1", "Event", "events", "event", "ev", "", true, 0 },
	{ "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims",
	  "persistentvolumeclaim", "pvc", "", true, K8S_SUB_STATUS },
	{ "", "v1", "PersistentVolume", "persistentvolumes", "persistentvolume",
	  "pv", "", false, K8S_SUB_STATUS },
	{ "", "v1", "ConfigMap", "configmaps", "configmap", "cm", "", true, 0 },
	{ "", "v1", "Secret", "secrets", "secret", "", "", true, 0 },
	{ "", "v1", "Service", "services", "service", "svc", "all", true, K8S_SUB_STATUS },
	{ "", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", "sa", "", true, 0 },
	{ "apps", "v1", "Deployment", "deployments", "deployment", "deploy", "all",
	  true, K8S_SUB_STATUS | K8S_SUB_SCALE },
	{ "apps", "v1", "ReplicaSet", "replicasets", "replicaset", "rs", "all",
	  true, K8S_SUB_STATUS | K8S_SUB_SCALE },
	{ "apps", "v1", "StatefulSet", "statefulsets", "statefulset", "sts", "all",
	  true, K8S_SUB_STATUS | K8S_SUB_SCALE },
	{ "apps", "v1", "DaemonSet", "daemonsets", "daemonset", "ds", "all", true,
	  K8S_SUB_STATUS },
	{ "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets",
	  "poddisruptionbudget", "pdb", "", true, K8S_SUB_STATUS },
	{ "storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass",
	  "sc", "", false, 0 },
	{ "events.k8s.io", "v1", "Event", "events", "event", "ev", "", true, 0 },
	{ "coordination.k8s.io", "v1", "Lease", "leases", "lease", "", "", true, 0 },
	{ "rbac.authorization.k8s.io", "v1", "Role", "roles", "role", "", "", true, 0 },
	{ "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", "", "",
	  false, 0 },
	{ "rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", "", "",
	  true, 0 },
	{ "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings",
	  "clusterrolebinding", "", "", false, 0 },
	{ "apiextensions.k8s.io", "v1", "CustomResourceDefinition",
	  "customresourcedefinitions", "customresourcedefinition", "crd,crds",
	  "api-extensions", false, K8S_SUB_STATUS },
};

static void resource_clear(struct k8s_resource *r)
{
	free(r->group);
	free(r->version);
	free(r->kind);
	free(r->plural);
	free(r->singular);
	free(r->short_names);
	free(r->categories);
	free(r->qualified);
	k8s_schema_free(r->schema);
}

struct k8s_registry *k8s_registry_free(struct k8s_registry *reg)
{
	if (!reg)
		return NULL;
	for (size_t i = 0; i < reg->n_resources; i++)
		resource_clear(&reg->resources[i]);
	free(reg->resources);
	json_decref(reg->crds);
	free(reg);
	return NULL;
}

static int registry_add(struct k8s_registry *reg, const struct builtin *b,
			bool custom)
{
	struct k8s_resource *r;

	r = realloc(reg->resources, (reg->n_resources + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	reg->resources = r;
	r = &reg->resources[reg->n_resources];
	memset(r, 0, sizeof(*r));
	r->group = strdup(b->group);
	r->version = strdup(b->version);
	r->kind = strdup(b->kind);
	r->plural = strdup(b->plural);
	r->singular = strdup(b->singular);
	r->short_names = strdup(b->short_names);
	r->categories = strdup(b->categories);
	if (*b->group) {
		if (asprintf(&r->qualified, "%s.%s", b->plural, b->group) < 0)
			r->qualified = NULL;
	} else
		r->qualified = strdup(b->plural);
	r->namespaced = b->namespaced;
	r->subresources = b->subresources;
	r->custom = custom;
	if (!r->group || !r->version || !r->kind || !r->plural || !r->singular ||
	    !r->short_names || !r->categories || !r->qualified) {
		resource_clear(r);
		return -ENOMEM;
	}
	reg->n_resources++;
	return 0;
}

struct k8s_registry *k8s_registry_new(void)
{
	struct k8s_registry *reg = calloc(1, sizeof(*reg));

	if (!reg)
		return NULL;
	reg->crds = json_object();
	if (!reg->crds)
		return k8s_registry_free(reg);
	/* The CRDs' x-kubernetes-validations are enforced like the rest of
	 * their schemas. */
	k8s_cel_hook_install();
	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++)
		if (registry_add(reg, &builtins[i], false) < 0)
			return k8s_registry_free(reg);
	return reg;
}

/* "a,b" from a JSON array of strings. */
static char *join_strings(const json_t *arr)
{
	size_t len = 1, i;
	json_t *v;
	char *out;

	json_array_foreach(arr, i, v)
		len += json_string_length(v) + 1;
	out = calloc(1, len);
	if (!out)
		return NULL;
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v))
			continue;
		if (*out)
			strcat(out, ",");
		strcat(out, json_string_value(v));
	}
	return out;
}

static json_t *version_named(json_t *versions, const json_t *name, size_t *index)
{
	json_t *v;
	size_t i;

	json_array_foreach(versions, i, v)
		if (json_equal(json_object_get(v, "name"), name)) {
			*index = i;
			return v;
		}
	return NULL;
}

/*
 * Keeps one CRD object per name, merging the versions of split files (the
 * v1beta1-era file also lists v1). A version both files list is taken from
 * the file that stores it; that file's storage version becomes the only one.
 */
static int crd_remember(struct k8s_registry *reg, const char *name,
			const json_t *crd)
{
	json_t *have = json_object_get(reg->crds, name);
	json_t *versions, *v, *old;
	size_t i, at;

	if (!have)
		return json_object_set_new(reg->crds, name, json_deep_copy(crd)) < 0 ?
			       -ENOMEM : 0;
	versions = json_object_get(json_object_get(have, "spec"), "versions");
	json_array_foreach(json_object_get(json_object_get(crd, "spec"), "versions"),
			   i, v) {
		bool storage = json_is_true(json_object_get(v, "storage"));
		json_t *copy;

		old = version_named(versions, json_object_get(v, "name"), &at);
		if (old && !storage)
			continue;
		copy = json_deep_copy(v);
		if (!copy)
			return -ENOMEM;
		if (storage) {
			json_t *other;
			size_t k;

			json_array_foreach(versions, k, other)
				json_object_set_new(other, "storage", json_false());
		}
		if (old)
			json_array_set_new(versions, at, copy);
		else
			json_array_append_new(versions, copy);
	}
	return 0;
}

/*
 * (Re)compiles the schema of every served version of one CRD from its
 * merged object, once at load: requests never read the CRD's YAML again.
 */
static int compile_schemas(struct k8s_registry *reg, const char *group, const char *plural,
			   const json_t *crd)
{
	const json_t *v;
	size_t i;
	int r;

	json_array_foreach(json_object_get(json_object_get(crd, "spec"), "versions"), i, v) {
		const char *version = json_string_value(json_object_get(v, "name"));
		const json_t *openapi = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
		struct k8s_resource *res = version ? k8s_registry_find(reg, group, version, plural) : NULL;

		if (!res || !res->custom || !openapi)
			continue;
		res->schema = k8s_schema_free(res->schema);
		r = k8s_schema_compile(openapi, &res->schema);
		if (r < 0)
			return r;
	}
	return 0;
}

int k8s_registry_add_crd(struct k8s_registry *reg, const json_t *crd)
{
	const json_t *spec = json_object_get(crd, "spec");
	const json_t *names = json_object_get(spec, "names");
	const char *name = json_string_value(
		json_object_get(json_object_get(crd, "metadata"), "name"));
	const char *group = json_string_value(json_object_get(spec, "group"));
	const char *scope = json_string_value(json_object_get(spec, "scope"));
	const char *kind = json_string_value(json_object_get(names, "kind"));
	const char *plural = json_string_value(json_object_get(names, "plural"));
	const char *singular = json_string_value(json_object_get(names, "singular"));
	_cleanup_free_ char *short_names = join_strings(json_object_get(names, "shortNames"));
	_cleanup_free_ char *categories = join_strings(json_object_get(names, "categories"));
	const json_t *v;
	size_t i;
	int r;

	if (!name || !group || !scope || !kind || !plural)
		return -EINVAL;
	if (!short_names || !categories)
		return -ENOMEM;
	json_array_foreach(json_object_get(spec, "versions"), i, v) {
		const char *version = json_string_value(json_object_get(v, "name"));
		const json_t *sub = json_object_get(v, "subresources");
		struct builtin b = {
			.group = group, .version = version, .kind = kind,
			.plural = plural, .singular = singular ? singular : "",
			.short_names = short_names, .categories = categories,
			.namespaced = streq(scope, "Namespaced"),
		};

		if (!version)
			return -EINVAL;
		if (!json_is_true(json_object_get(v, "served")) ||
		    k8s_registry_find(reg, group, version, plural))
			continue;
		if (json_object_get(sub, "status"))
			b.subresources |= K8S_SUB_STATUS;
		if (json_object_get(sub, "scale"))
			b.subresources |= K8S_SUB_SCALE;
		r = registry_add(reg, &b, true);
		if (r < 0)
			return r;
	}
	r = crd_remember(reg, name, crd);
	if (r < 0)
		return r;
	return compile_schemas(reg, group, plural, json_object_get(reg->crds, name));
}

static int load_crd_file(struct k8s_registry *reg, const char *path)
{
	struct yaml_docs *docs = NULL;
	char err[512];
	int r;

	r = yaml_docs_load_file(path, &docs, err, sizeof(err));
	if (r < 0)
		return log_error_errno(r, "Failed to load CRD file %s: %s", path, err);
	for (size_t i = 0; i < docs->n_docs; i++) {
		const char *kind = json_string_value(json_object_get(docs->docs[i], "kind"));

		if (!streq_ptr(kind, "CustomResourceDefinition"))
			continue;
		r = k8s_registry_add_crd(reg, docs->docs[i]);
		if (r < 0) {
			log_error_errno(r, "Failed to register CRD from %s: %m", path);
			break;
		}
	}
	yaml_docs_free(docs);
	return r < 0 ? r : 0;
}

static int name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int k8s_registry_load_crds(struct k8s_registry *reg, const char *dir)
{
	struct dirent **entries = NULL;
	int n, r = 0;

	n = scandir(dir, &entries, NULL, name_cmp);
	if (n < 0)
		return log_error_errno(errno, "Failed to read CRD directory %s: %m", dir);
	for (int i = 0; i < n; i++) {
		const char *name = entries[i]->d_name;
		size_t len = strlen(name);
		char path[4096];

		if (r >= 0 && len > 5 && streq(name + len - 5, ".yaml")) {
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			r = load_crd_file(reg, path);
		}
		free(entries[i]);
	}
	free(entries);
	return r;
}

struct k8s_resource *k8s_registry_find(const struct k8s_registry *reg,
				       const char *group, const char *version,
				       const char *plural)
{
	for (size_t i = 0; i < reg->n_resources; i++) {
		struct k8s_resource *r = &reg->resources[i];

		if (streq(r->group, group) && streq(r->version, version) &&
		    streq(r->plural, plural))
			return r;
	}
	return NULL;
}

struct k8s_resource *k8s_registry_find_kind(const struct k8s_registry *reg,
					    const char *group,
					    const char *version,
					    const char *kind)
{
	for (size_t i = 0; i < reg->n_resources; i++) {
		struct k8s_resource *r = &reg->resources[i];

		if (streq(r->group, group) && streq(r->version, version) &&
		    streq(r->kind, kind))
			return r;
	}
	return NULL;
}

const char *k8s_resource_api_version(const struct k8s_resource *res,
				     char *buf, size_t buflen)
{
	if (!*res->group)
		snprintf(buf, buflen, "%s", res->version);
	else
		snprintf(buf, buflen, "%s/%s", res->group, res->version);
	return buf;
}

const char *k8s_data_dir(void)
{
	static const char *const candidates[] = { KANNA_DATADIR, KANNA_SRCDIR "/data" };
	const char *env = getenv("KANNA_DATADIR");

	if (env && *env)
		return env;
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++) {
		char probe[4096];

		snprintf(probe, sizeof(probe), "%s/crds", candidates[i]);
		if (access(probe, R_OK) == 0)
			return candidates[i];
	}
	return KANNA_SRCDIR "/data";
}
