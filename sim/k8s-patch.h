/*
 * The three PATCH formats the Kubernetes API accepts: JSON merge patch
 * (RFC 7386), JSON patch (RFC 6902) and strategic merge patch for the list
 * fields kubectl relies on. Pure functions over jansson values.
 */
#ifndef KANNA_SIM_K8S_PATCH_H
#define KANNA_SIM_K8S_PATCH_H

#include <jansson.h>
#include <stddef.h>

/* Deeper documents are refused so hostile patches cannot blow the stack. */
#define K8S_PATCH_MAX_DEPTH 100
/* A JSON patch may not hold more operations than this. */
#define K8S_PATCH_MAX_OPS 10000

enum k8s_patch_type {
	K8S_PATCH_MERGE,
	K8S_PATCH_JSON,
	K8S_PATCH_STRATEGIC,
	K8S_PATCH_APPLY,
};

/* Maps a Content-Type to a patch type; -EINVAL when unsupported. */
int k8s_patch_type_from_content_type(const char *ct, enum k8s_patch_type *ret);

/*
 * Apply `patch` to `target` (not modified) and return a new value in *ret.
 * -EINVAL: the patch document is malformed (HTTP 400);
 * -EPROTO: it is well formed but cannot apply, e.g. a failed "test" or a
 * missing path (HTTP 422). err receives a message in both cases.
 */
int k8s_merge_patch(const json_t *target, const json_t *patch, json_t **ret,
		    char *err, size_t errlen);
int k8s_json_patch(const json_t *target, const json_t *patch, json_t **ret,
		   char *err, size_t errlen);
int k8s_strategic_merge_patch(const json_t *target, const json_t *patch,
			      json_t **ret, char *err, size_t errlen);
int k8s_patch_apply(enum k8s_patch_type type, const json_t *target,
		    const json_t *patch, json_t **ret, char *err, size_t errlen);

#endif
