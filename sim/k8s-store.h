/*
 * kanna-sim's object store: every object of every resource, serialized
 * compact JSON plus the parsed metadata that LIST/WATCH filter on, one
 * global resourceVersion, and a ring of the last watch events. One
 * recursive mutex guards everything; the condition variable wakes watchers.
 */
#ifndef KANNA_SIM_K8S_STORE_H
#define KANNA_SIM_K8S_STORE_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/util.h"
#include "sim/k8s-resource.h"
#include "sim/k8s-selector.h"

/*
 * Watch events kept for resuming watches: a watch from an older
 * resourceVersion gets 410 Gone (reason Expired), as after etcd compaction.
 * 100,000 events cover a full relist of the scale target.
 */
#define K8S_WATCH_WINDOW_DEFAULT 100000
/* No kubelet runs containers, so graceful pod deletion completes after at
 * most this long (the pod's own grace period when shorter). */
#define K8S_POD_TERMINATION_MS 1000
/* Largest request body accepted, as kube-apiserver's 3 MiB limit. */
#define K8S_MAX_BODY_BYTES (3u * 1024 * 1024)
/* Events expire this long after their last write, as kube-apiserver's
 * --event-ttl default, so a long-running sim does not grow without end. */
#define K8S_EVENT_TTL_MS (3600u * 1000)
/* Distinct Events remembered for aggregating repeats, as client-go's LRU. */
#define K8S_EVENT_CACHE_SIZE 4096
/* Timeline entries kept for /_sim/status; later ones are only counted.
 * The same bound as the AWS side's timeline. */
#define K8S_TIMELINE_MAX 20000

struct k8s_error {
	int code;          /* HTTP status */
	const char *reason; /* NotFound, AlreadyExists, Conflict, Invalid, ... */
	char message[8192]; /* a strict patch error quotes the whole object */
	json_t *details; /* optional, owned */
};

void k8s_error_set(struct k8s_error *err, int code, const char *reason,
		   const char *fmt, ...) _printf_(4, 5);
void k8s_error_clear(struct k8s_error *err);
/* A metav1.Status object for err (or Success when err is NULL). */
json_t *k8s_status_new(const struct k8s_error *err);

struct k8s_object {
	int refs; /* atomic */
	char *json;
	size_t len;
	char *ns; /* "" when cluster-scoped */
	char *name;
	char *uid;
	uint64_t rv;
	json_t *labels; /* NULL when none */
	char *node_name; /* pods: spec.nodeName, else NULL */
	char *phase;     /* pods: status.phase, else NULL */
	bool pod_ready;  /* pods: condition Ready=True */
	bool pod_unschedulable; /* pods: PodScheduled=False reason Unschedulable */
	int64_t cpu_milli, memory_milli; /* pods: sum of container requests */
	char **owners;   /* ownerReferences[].uid */
	size_t n_owners;
	size_t n_finalizers;
	bool deleting;
	uint64_t delete_at_ms; /* graceful pod deletion or Event expiry due (monotonic), 0 = none */
};

struct k8s_object *k8s_object_ref(struct k8s_object *o);
void k8s_object_unref(struct k8s_object *o);
json_t *k8s_object_parse(const struct k8s_object *o);

enum k8s_event_type {
	K8S_EVENT_ADDED,
	K8S_EVENT_MODIFIED,
	K8S_EVENT_DELETED,
};

struct k8s_event {
	uint64_t rv;
	enum k8s_event_type type;
	const struct k8s_resource *res;
	struct k8s_object *obj;
	struct k8s_object *prev; /* MODIFIED: the snapshot it replaced */
};

/* What happened to nodes, pods and NodeClaims, for /_sim/status (k8s-timeline.c). */
struct k8s_timeline_entry {
	uint64_t ms; /* wall clock */
	char *event; /* "pod-bound", "node-ready", ... */
	char *detail;
};

struct k8s_timeline {
	struct k8s_timeline_entry *v;
	size_t n, cap;
	uint64_t dropped;
};

/* One remembered Event (k8s-recorder.c): what it says (hash) and its name's stamp. */
struct k8s_event_slot {
	uint64_t key;   /* 0: empty */
	uint64_t stamp; /* the name is <object>.<stamp in hex> */
};

struct k8s_store {
	pthread_mutex_t lock; /* recursive */
	pthread_cond_t changed;
	struct k8s_registry *reg;
	uint64_t rv;
	struct k8s_event *ring; /* event of rv R at ring[R % window] */
	size_t window;
	bool closing;
	struct k8s_timeline timeline;
	struct k8s_event_slot *event_slots; /* K8S_EVENT_CACHE_SIZE, allocated on first use */
	/* k8s-scheduler.c: its inputs' last write when its last pass ran,
	 * and when (monotonic ms). */
	uint64_t sched_inputs_rv, sched_pass_ms;
	uint64_t last_event_stamp;
};

int k8s_store_new(struct k8s_registry *reg, size_t window, struct k8s_store **ret);
struct k8s_store *k8s_store_free(struct k8s_store *store);
void k8s_store_lock(struct k8s_store *store);
void k8s_store_unlock(struct k8s_store *store);
/* Wakes every watcher and makes them end their streams. */
void k8s_store_close(struct k8s_store *store);

/* Default namespaces and the loaded CRD objects. */
int k8s_store_seed(struct k8s_store *store);

enum k8s_write_mode {
	K8S_WRITE_MAIN,   /* status of a resource with /status is kept */
	K8S_WRITE_STATUS, /* only status changes */
	K8S_WRITE_ALL,    /* spec and status (bindings, controllers) */
};

/*
 * How a write asked through the API is carried out: what upstream's
 * CreateOptions, UpdateOptions and PatchOptions change in the store (their
 * decoding and validation are k8s-options.c's). dry_run (dryRun=All): the
 * write runs as a real one does, with every check, conflict and default,
 * and answers what would be stored, but stores nothing: no resourceVersion
 * is used, no watch event or timeline entry is made, so no controller
 * reacts (apiserver registry/generic/registry/dryrun.go,
 * DryRunnableStorage). A NULL options pointer is a real write.
 */
enum k8s_field_validation {
	K8S_FIELD_VALIDATION_IGNORE,
	K8S_FIELD_VALIDATION_WARN,
	K8S_FIELD_VALIDATION_STRICT,
};

struct k8s_write_options {
	bool dry_run;
	/* An update through the API (PUT, PUT /status) of a resource whose
	 * strategy allows no unconditional update: custom resources
	 * (apiextensions-apiserver registry/customresource strategy.go,
	 * AllowUnconditionalUpdate false). Without metadata.resourceVersion it
	 * is refused (k8s-write.c). */
	bool require_resource_version;
	/* fieldValidation: what an unknown field of a custom resource gets
	 * (k8s-custom.c). Requests default to Warn, as upstream's handlers
	 * (rest.go fieldValidation); a NULL options pointer is Ignore. */
	enum k8s_field_validation field_validation;
	/* A PATCH: a Strict refusal quotes the patched object (patch.go). */
	bool patch;
	/* A server-side apply: an unknown field fails its typed conversion
	 * whatever fieldValidation says (k8s-custom.c). */
	bool apply;
	/* Where Warn's warnings go (a JSON array of strings), NULL: dropped. */
	json_t *warnings;
};

/* Every function below returns 0 or a negative errno; err says why. */
int k8s_store_create(struct k8s_store *store, const struct k8s_resource *res,
		     const char *ns, json_t *body, json_t **ret,
		     struct k8s_error *err);
/* Creates on behalf of an API request: its resourceVersion is refused as
 * upstream's etcd3 store does, and opts may make it a dry run. */
int k8s_store_create_opts(struct k8s_store *store, const struct k8s_resource *res,
			  const char *ns, json_t *body, const struct k8s_write_options *opts,
			  json_t **ret, struct k8s_error *err);
int k8s_store_get(struct k8s_store *store, const struct k8s_resource *res,
		  const char *ns, const char *name, json_t **ret,
		  struct k8s_error *err);
int k8s_store_update(struct k8s_store *store, const struct k8s_resource *res,
		     const char *ns, const char *name, json_t *body,
		     enum k8s_write_mode mode, json_t **ret, struct k8s_error *err);
int k8s_store_update_opts(struct k8s_store *store, const struct k8s_resource *res,
			  const char *ns, const char *name, json_t *body,
			  enum k8s_write_mode mode, const struct k8s_write_options *opts,
			  json_t **ret, struct k8s_error *err);

/*
 * Read-modify-write under the lock: mutate receives a copy of the current
 * object and returns the new one (or NULL and fills err).
 */
typedef json_t *(*k8s_mutate_fn)(const json_t *current, void *userdata,
				 struct k8s_error *err);
int k8s_store_mutate(struct k8s_store *store, const struct k8s_resource *res,
		     const char *ns, const char *name, enum k8s_write_mode mode,
		     k8s_mutate_fn mutate, void *userdata, json_t **ret,
		     struct k8s_error *err);
int k8s_store_mutate_opts(struct k8s_store *store, const struct k8s_resource *res,
			  const char *ns, const char *name, enum k8s_write_mode mode,
			  const struct k8s_write_options *opts, k8s_mutate_fn mutate,
			  void *userdata, json_t **ret, struct k8s_error *err);

enum k8s_propagation {
	K8S_PROPAGATE_BACKGROUND,
	K8S_PROPAGATE_FOREGROUND,
	K8S_PROPAGATE_ORPHAN,
};

struct k8s_delete_options {
	enum k8s_propagation propagation;
	long grace_period_seconds; /* -1: the object's default */
	const char *precondition_uid;
	const char *precondition_rv;
	/* dryRun: ["All"]: preconditions checked, the answer is the object as
	 * the delete would leave it (with its deletionTimestamp when finalizers
	 * or a grace period hold it), nothing changes (DryRunnableStorage). */
	bool dry_run;
};

void k8s_delete_options_init(struct k8s_delete_options *opts);
/* Fills opts from a DeleteOptions body (may be NULL), refused as
 * upstream's ValidateDeleteOptions refuses it (k8s-options.c). */
int k8s_delete_options_from_json(struct k8s_delete_options *opts,
				 const json_t *body, struct k8s_error *err);
int k8s_store_delete(struct k8s_store *store, const struct k8s_resource *res,
		     const char *ns, const char *name,
		     const struct k8s_delete_options *opts, json_t **ret,
		     struct k8s_error *err);
/* As k8s_store_delete(); *ret_gone says whether the object went at once
 * (no finalizer and no grace period held it; a dry run: would have). */
int k8s_store_delete_gone(struct k8s_store *store, const struct k8s_resource *res,
			  const char *ns, const char *name,
			  const struct k8s_delete_options *opts, json_t **ret, bool *ret_gone,
			  struct k8s_error *err);
/* What a DELETE answers (takes obj): the object, or for one gone at once
 * from a registry without ReturnDeletedObject, a Status (k8s-delete.c). */
json_t *k8s_delete_answer(const struct k8s_resource *res, json_t *obj, bool gone);

struct k8s_list_options {
	const struct k8s_selector *labels;
	const struct k8s_selector *fields;
	long limit; /* 0: everything */
	const char *continue_token;
};

/* DELETE on a collection: deletes what the selectors select; returns how many. */
int k8s_store_delete_collection(struct k8s_store *store, const struct k8s_resource *res,
				const char *ns, const struct k8s_list_options *selected,
				const struct k8s_delete_options *opts, struct k8s_error *err);

/* Serializes a List object ("PodList") into *body (malloc'ed). */
int k8s_store_list(struct k8s_store *store, const struct k8s_resource *res,
		   const char *ns, const struct k8s_list_options *opts,
		   char **body, size_t *len, struct k8s_error *err);
/*
 * The same List as a stream: a snapshot of references taken under the
 * lock, read in pieces without it. _length() is the whole body's size;
 * _read() fills up to max bytes and returns how many (0 at the end).
 */
struct k8s_list_stream;
int k8s_store_list_stream(struct k8s_store *store, const struct k8s_resource *res,
			  const char *ns, const struct k8s_list_options *opts,
			  struct k8s_list_stream **ret, struct k8s_error *err);
size_t k8s_list_stream_length(const struct k8s_list_stream *s);
size_t k8s_list_stream_read(struct k8s_list_stream *s, char *buf, size_t max);
struct k8s_list_stream *k8s_list_stream_free(struct k8s_list_stream *s);

/* Does an object match a LIST/WATCH's namespace and selectors? */
bool k8s_object_matches(const struct k8s_object *o, const char *ns,
			const struct k8s_selector *labels,
			const struct k8s_selector *fields);

/* Calls fn on each object of res (in ns when non-NULL), lock held. */
typedef void (*k8s_object_fn)(struct k8s_object *o, void *userdata);
void k8s_store_foreach(struct k8s_store *store, const struct k8s_resource *res,
		       const char *ns, k8s_object_fn fn, void *userdata);

/* Completes graceful pod deletions and Event expiries that are due; returns how many. */
int k8s_store_sweep(struct k8s_store *store, uint64_t now_ms);

/* "2026-01-02T03:04:05.678Z", as the AWS side's timeline. */
void k8s_format_time_ms(uint64_t wall_ms, char buf[static 32]);

/*
 * The Kubernetes-side timeline (k8s-timeline.c). Every commit is observed
 * (k8s_timeline_observe, lock held): node registered / ready / not-ready /
 * cordoned / uncordoned / tainted / deleting / deleted, pod created /
 * unschedulable / bound / running / deleted, NodeClaim created / deleted.
 * Handlers and controllers add what a commit cannot show (pod-evicted,
 * pod-scheduled). At most K8S_TIMELINE_MAX entries; later ones are counted.
 */
void k8s_timeline_add(struct k8s_store *store, const char *event, const char *fmt, ...)
	_printf_(3, 4);
void k8s_timeline_observe(struct k8s_store *store, enum k8s_event_type type,
			  const struct k8s_resource *res, const struct k8s_object *o,
			  const struct k8s_object *prev);
/* [{"time", "event", "detail"}], the shape of the AWS side's timeline. */
json_t *k8s_timeline_json(struct k8s_store *store, uint64_t *dropped);
void k8s_timeline_clear(struct k8s_timeline *t);

#endif
