/*
 * The resource types kanna-sim serves: a built-in table for the Kubernetes
 * types plus the custom resources learnt from the YAML files in data/crds at start.
 * One entry per group/version/plural; the store keeps one object tree per
 * entry (no conversion between versions of a custom resource).
 */
#ifndef KANNA_SIM_K8S_RESOURCE_H
#define KANNA_SIM_K8S_RESOURCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct k8s_schema;

enum k8s_subresource_flags {
	K8S_SUB_STATUS = 1 << 0,
	K8S_SUB_SCALE = 1 << 1,
	K8S_SUB_BINDING = 1 << 2,
	K8S_SUB_EVICTION = 1 << 3,
};

struct k8s_resource {
	char *group;   /* "" for the core group */
	char *version; /* "v1" */
	char *kind;
	char *plural;
	char *singular;
	char *short_names; /* comma-separated, may be empty */
	char *categories;  /* comma-separated, may be empty */
	char *qualified;   /* "pods", "deployments.apps": as in error messages */
	bool namespaced;
	unsigned subresources;
	bool custom; /* served from a CRD */
	/* The served version's openAPIV3Schema, compiled (k8s-schema.h);
	 * NULL for built-in kinds and versions without one. */
	struct k8s_schema *schema;

	/* Owned by the store (see k8s-store.c). */
	void *objects;
	size_t n_objects;
	uint64_t write_rv; /* the store's resourceVersion at its last write */
};

struct k8s_registry {
	struct k8s_resource *resources;
	size_t n_resources;
	json_t *crds; /* CustomResourceDefinition objects, name → object */
};

struct k8s_registry *k8s_registry_new(void);
struct k8s_registry *k8s_registry_free(struct k8s_registry *reg);

/*
 * Learns custom resources from every *.yaml CustomResourceDefinition in
 * dir; the CRD objects are kept in reg->crds for the store to serve.
 */
int k8s_registry_load_crds(struct k8s_registry *reg, const char *dir);
/* Adds one CRD (a parsed object); used by the loader and by tests. */
int k8s_registry_add_crd(struct k8s_registry *reg, const json_t *crd);

struct k8s_resource *k8s_registry_find(const struct k8s_registry *reg,
				       const char *group, const char *version,
				       const char *plural);
struct k8s_resource *k8s_registry_find_kind(const struct k8s_registry *reg,
					    const char *group,
					    const char *version,
					    const char *kind);

/* "apps/v1" or "v1" into buf. */
const char *k8s_resource_api_version(const struct k8s_resource *res,
				     char *buf, size_t buflen);

/* Where data/ lives: $KANNA_DATADIR, the installed pkgdatadir or the tree. */
const char *k8s_data_dir(void);

#endif
