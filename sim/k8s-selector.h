/*
 * Kubernetes label and field selectors: the query-string forms
 * (`app=web,tier in (a,b),!canary`, `spec.nodeName=node-1`) and the
 * LabelSelector object (matchLabels / matchExpressions) used by PDBs.
 */
#ifndef KANNA_SIM_K8S_SELECTOR_H
#define KANNA_SIM_K8S_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A selector string longer than this is refused (real servers cap URLs). */
#define K8S_SELECTOR_MAX_LEN 8192

enum k8s_selector_op {
	K8S_SELECTOR_EXISTS,
	K8S_SELECTOR_NOT_EXISTS,
	K8S_SELECTOR_EQUALS,
	K8S_SELECTOR_NOT_EQUALS,
	K8S_SELECTOR_IN,
	K8S_SELECTOR_NOT_IN,
};

struct k8s_requirement {
	char *key;
	enum k8s_selector_op op;
	char **values;
	size_t n_values;
	const char *absent; /* field selectors: the value of an absent field, NULL: "" */
};

struct k8s_selector {
	struct k8s_requirement *reqs;
	size_t n_reqs;
	bool match_nothing; /* a null LabelSelector object */
};

/* Returns -EINVAL with a human message in err for malformed input. */
int k8s_label_selector_parse(const char *s, struct k8s_selector **ret,
			     char *err, size_t errlen);
/* Field selectors allow only =, == and != (as the real API server). */
int k8s_field_selector_parse(const char *s, struct k8s_selector **ret,
			     char *err, size_t errlen);
/* metav1.LabelSelector as JSON; NULL or JSON null selects nothing. */
int k8s_label_selector_from_json(const json_t *sel, struct k8s_selector **ret,
				 char *err, size_t errlen);
struct k8s_selector *k8s_selector_free(struct k8s_selector *sel);

/* labels: a JSON object of string values, or NULL for none. */
bool k8s_label_selector_matches(const struct k8s_selector *sel,
				const json_t *labels);

/* Resolves a field name ("spec.nodeName") to its value; NULL means "". */
typedef const char *(*k8s_field_resolver)(const char *field, void *userdata);
bool k8s_field_selector_matches(const struct k8s_selector *sel,
				k8s_field_resolver resolve, void *userdata);
/* Resolves a dotted path in a JSON object (strings, numbers, booleans). */
const char *k8s_json_field(const json_t *obj, const char *field, char *buf,
			   size_t buflen);

#endif
