/*
 * API discovery for the collections served by CustomResourceDefinitions
 * (Karpenter's karpenter.sh and karpenter.k8s.aws groups), whose versions
 * differ from cluster to cluster: which group/version/resource the API
 * server serves, so that the watcher lists the NodePools of one version
 * only (v1 where served, else v1beta1) and no collection that is absent.
 * Built-in groups are always served and are not asked about.
 */
#ifndef KANNA_WATCHER_DISCOVERY_H
#define KANNA_WATCHER_DISCOVERY_H

#include <stdbool.h>

#include "common/kube-client.h"

/* Group versions and resources kept from one answer: Karpenter's groups
 * serve a few versions of a few kinds each. */
#define DISCOVERY_MAX_SERVED 64

struct discovery;

/* result: 0 (discovery_served() answers from this refresh) or a negative
 * errno (a request failed; the previous answer, if any, stands). */
typedef void (*discovery_done_fn)(struct discovery *d, int result, void *userdata);

/* groups: NULL-terminated, e.g. { "karpenter.sh", "karpenter.k8s.aws", NULL }. */
int discovery_new(struct discovery **ret, struct kube_client *c, const char *const *groups,
		  discovery_done_fn done, void *userdata);
struct discovery *discovery_free(struct discovery *d);

/*
 * Asks the API server again: GET /apis/<group> for the versions served (404:
 * the group is not installed) and /apis/<group>/<version> for their
 * resources. A refresh already running is not started twice; done() is
 * called once it ends.
 */
int discovery_refresh(struct discovery *d);
/* True once a refresh has succeeded. */
bool discovery_known(const struct discovery *d);
/* Whether the last successful refresh found group/version serving resource
 * (a plural such as "nodepools"). */
bool discovery_served(const struct discovery *d, const char *group, const char *version,
		      const char *resource);

#endif
