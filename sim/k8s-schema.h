/*
 * A custom resource's structural schema, compiled once per served version
 * from its CRD's openAPIV3Schema (k8s-schema.c), and what kube-apiserver's
 * apiextensions-apiserver does with it on every write: prune unknown fields
 * (pkg/apiserver/schema/pruning), apply `default:` values
 * (pkg/apiserver/schema/defaulting) and validate (kube-openapi's
 * validate.SchemaValidator through pkg/apiserver/validation,
 * k8s-schema-validate.c). x-kubernetes-validations (CEL) rules are not
 * evaluated here: each is handed to the hook set with
 * k8s_schema_set_cel_hook(), implemented elsewhere.
 */
#ifndef KANNA_SIM_K8S_SCHEMA_H
#define KANNA_SIM_K8S_SCHEMA_H

#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum k8s_schema_type {
	K8S_SCHEMA_ANY, /* no type: only with x-kubernetes-preserve-unknown-fields or int-or-string */
	K8S_SCHEMA_OBJECT,
	K8S_SCHEMA_ARRAY,
	K8S_SCHEMA_STRING,
	K8S_SCHEMA_INTEGER,
	K8S_SCHEMA_NUMBER,
	K8S_SCHEMA_BOOLEAN,
};

struct k8s_schema_property {
	char *name;
	struct k8s_schema *schema;
};

struct k8s_schema {
	enum k8s_schema_type type;
	bool int_or_string;    /* x-kubernetes-int-or-string */
	bool preserve_unknown; /* x-kubernetes-preserve-unknown-fields: true */
	bool nullable;
	bool embedded;         /* x-kubernetes-embedded-resource */
	json_t *default_value; /* owned, NULL: none */
	json_t *enum_values;   /* owned array, NULL: none */
	char *pattern;         /* as written in the CRD (the error quotes it) */
	regex_t pattern_re;
	bool has_pattern;      /* pattern_re compiled (a pattern POSIX cannot express is skipped) */
	bool has_minimum, has_maximum, exclusive_minimum, exclusive_maximum;
	double minimum, maximum;
	int64_t min_length, max_length, min_items, max_items, min_properties,
		max_properties; /* -1: none */
	char **required;
	size_t n_required;
	struct k8s_schema_property *properties; /* sorted by name */
	size_t n_properties;
	struct k8s_schema *items;
	struct k8s_schema *additional; /* additionalProperties: {schema} */
	struct k8s_schema **any_of;
	size_t n_any_of;
	char *list_type;        /* x-kubernetes-list-type, NULL: none */
	json_t *list_map_keys;  /* owned array of strings, NULL: none */
	json_t *validations;    /* x-kubernetes-validations, owned, NULL: none */
};

/* Compiles an openAPIV3Schema; 0, -ENOMEM, or -EINVAL for a schema that is not one. */
int k8s_schema_compile(const json_t *openapi, struct k8s_schema **ret);
struct k8s_schema *k8s_schema_free(struct k8s_schema *s);
const struct k8s_schema *k8s_schema_property(const struct k8s_schema *s, const char *name);

/*
 * Drops what the schema does not know (apiVersion, kind and metadata stay
 * at the root, metadata is ObjectMeta's), as upstream's pruning; the paths
 * of what went ("spec.foo", "spec.budgets[0].x"), sorted, are appended to
 * unknown (may be NULL). Then nulls of non-nullable fields with a default
 * are dropped and every missing field with a default gets it.
 */
int k8s_schema_prune(const struct k8s_schema *s, json_t *obj, json_t *unknown);
int k8s_schema_default(const struct k8s_schema *s, json_t *obj);

/*
 * Validates obj (old: the stored object on an update, for CEL's oldSelf)
 * and appends one cause {reason, message, field} per error, in upstream's
 * field.Error form, to causes. 0 or -ENOMEM.
 */
int k8s_schema_validate(const struct k8s_schema *s, const json_t *obj, const json_t *old,
			json_t *causes);

/*
 * The CEL hook: called for each rule of x-kubernetes-validations on a value
 * that is present, with self, oldSelf (NULL on create, or when the old
 * object has no correlated value) and the value's field path ("spec",
 * "spec.budgets[0]"); it appends causes for the rules that fail. Without a
 * hook, rules are not evaluated.
 */
typedef int (*k8s_schema_cel_fn)(const json_t *rule, const json_t *self, const json_t *old_self,
				 const char *path, json_t *causes, void *userdata);
void k8s_schema_set_cel_hook(k8s_schema_cel_fn fn, void *userdata);
/* The hook on kanna-sim's CEL subset (k8s-cel-hook.c, cel.h); the registry
 * installs it. */
void k8s_cel_hook_install(void);

/* The value as Go's fmt prints field.Error's BadValue ("Foo" quoted, 3, map[...]...). */
void k8s_schema_go_value(const json_t *v, char *buf, size_t size);

#endif
