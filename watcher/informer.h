/*
 * One informer per kind of object the watcher reads: LIST+WATCH its
 * collection, decode each object once, and feed the publisher; after every
 * (re)list, objects the informer held that did not come back are deleted
 * (mark and sweep), so the published state equals the API's.
 *
 * An informer watches one version of its collection at a time, chosen by
 * its owner (for CRDs, from API discovery) and changeable: the switch is a
 * relist, so the objects end up as the new version has them. A collection
 * the API server does not serve (404, or no version of it discovered) is
 * empty: the informer counts as synced and its objects are deleted.
 *
 * Objects that fail to decode are reported (log line, Event on the object;
 * for NodePools the ValidationSucceeded condition) and change nothing,
 * except a NodePool, which is published as invalid so that no process
 * keeps planning with an older valid version. A DELETED event deletes the
 * object by its key whether or not its body decodes.
 *
 * A Provisioner and a NodePool (an AWSNodeTemplate and an EC2NodeClass) of
 * one name share a state key; the newer API's object wins while it exists.
 */
#ifndef KANNA_WATCHER_INFORMER_H
#define KANNA_WATCHER_INFORMER_H

#include "common/kube-client.h"
#include "common/kube-events.h"
#include "common/metrics.h"
#include "watcher/nodepool-status.h"
#include "watcher/publish.h"

/* Versions an informer may choose between (a CRD's v1 and v1beta1). */
#define INFORMER_MAX_VERSIONS 2

struct informer_def {
	const char *resource; /* configuration name, log and metric label: "nodepools" */
	const char *group;    /* API group: "" (core), "apps", "karpenter.sh" */
	const char *plural;   /* "nodepools" */
	const char *kind;     /* "NodePool": chooses the decoder */
	uint8_t object_kind;  /* enum proto_object_kind it publishes */
	bool namespaced;
	bool crd;             /* served by a CustomResourceDefinition: discovery picks the version */
	/* Versions serving these objects, preferred first, NULL-terminated. */
	const char *versions[INFORMER_MAX_VERSIONS + 1];
};

/* Every kind the watcher can read, in a fixed order. */
extern const struct informer_def informer_defs[];
extern const size_t informer_n_defs;

struct informer_metrics {
	struct metrics_counter *events;        /* kanna_watcher_events_total{resource} */
	struct metrics_counter *decode_errors; /* kanna_watcher_decode_errors_total{resource} */
};

struct informer;

struct informer_env {
	struct kube_client *client;
	struct publisher *pub;
	struct kube_events *events; /* may be NULL */
	/* Where NodePools' and Provisioners' status is written; may be NULL. */
	struct nodepool_status *nodepool_status;
	const struct informer_metrics *metrics;
	/* A watch lists again on its own (410 Gone); not called for the first
	 * LIST of a watch that informer_set_version() started. */
	void (*on_relist)(struct informer *inf, void *userdata);
	/* A NodePool or EC2NodeClass was deleted from state: a legacy
	 * informer that yielded its key may take it back (informer_restore). */
	void (*on_released)(struct informer *inf, const char *key, uint32_t owners, void *userdata);
	/* A pod became unschedulable (the kube-scheduler's PodScheduled=False,
	 * Unschedulable): announce it now rather than at the next period. */
	void (*on_pending)(const struct proto_pod *pod, void *userdata);
	void *userdata;
};

/* Watches nothing until informer_set_version(). */
int informer_new(struct informer **ret, const struct informer_def *def,
		 const struct informer_env *env);
struct informer *informer_free(struct informer *inf);

/*
 * Watches version (one of def->versions), or, with NULL, nothing: the
 * collection is not served, the informer's objects are deleted and it is
 * synced. Another version than the current one relists; the current one
 * again restarts a watch that found the collection absent (a recheck) and
 * changes nothing otherwise.
 */
int informer_set_version(struct informer *inf, const char *version);
/* Lists again if this informer yielded key to a newer API's object, or
 * was among its owners (the informers' bits in its state entry). */
int informer_restore(struct informer *inf, const char *key, uint32_t owners);
const char *informer_version(const struct informer *inf);
/* True once the first LIST completed or the collection was found absent. */
bool informer_synced(const struct informer *inf);
/* True while the collection is not served (404, or no version chosen). */
bool informer_absent(const struct informer *inf);
const struct informer_def *informer_def_of(const struct informer *inf);

#endif
