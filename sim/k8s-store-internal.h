/*
 * Helpers shared by the store's files (k8s-store.c, k8s-write.c,
 * k8s-delete.c, k8s-list.c, k8s-watch.c). Every function here expects the
 * store lock to be held. Not for use outside sim/k8s-*.c.
 */
#ifndef KANNA_SIM_K8S_STORE_INTERNAL_H
#define KANNA_SIM_K8S_STORE_INTERNAL_H

#include <inttypes.h>

#include "sim/k8s-store.h"

int k8s_object_cmp(const void *a, const void *b);
struct k8s_object *k8s_object_new(const struct k8s_resource *res, const json_t *obj);
struct k8s_object *k8s_store_lookup(const struct k8s_resource *res,
				    const char *ns, const char *name);
int k8s_store_commit(struct k8s_store *store, struct k8s_resource *res,
		     json_t *obj, enum k8s_event_type type, struct k8s_object **ret);
/* Removes an object whose deletion may complete now (emits DELETED, runs GC). */
int k8s_store_finish_delete(struct k8s_store *store, struct k8s_resource *res,
			    json_t *obj, enum k8s_propagation propagation);
/* "pods" or "deployments.apps", as in real error messages. */
const char *k8s_resource_qualified(const struct k8s_resource *res);
/* k8s-validate.c: 0, or -EINVAL with upstream's 422 Invalid in err; old
 * is the stored object on an update, NULL on create; reg: for a custom
 * resource's CRD schema. */
int k8s_validate(const struct k8s_registry *reg, const struct k8s_resource *res, const char *name,
		 const json_t *obj, const json_t *old, struct k8s_error *err);
/* k8s-rbac.c: appends the RBAC kinds' field errors to causes (0 or -ENOMEM). */
int k8s_rbac_validate(const struct k8s_resource *res, const json_t *obj, const json_t *old,
		      json_t *causes);
void k8s_timestamp(char buf[static 32], long offset_seconds);
void k8s_random_uid(char buf[static 37]);

#endif
