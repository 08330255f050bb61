/*
 * The cluster dump loader (dump.h): a YAML stream (documents, or kind:
 * List) read by common/yaml-json into JSON, admitted and expanded as the
 * API server and controllers would (workloads.c), decoded by the watcher's
 * decoders into the proto objects the daemons replicate, and modelled by
 * cluster_from_state() — the daemons' own path, so that what --simulate
 * and --what-if answer and what the daemons decide cannot differ. Pods
 * without nodeName are the pending ones, except those planned for an
 * in-flight NodeClaim (counted on it, as the scheduler does).
 * EC2NodeClasses count for their kubelet settings; PodDisruptionBudgets
 * (decoded when asked, for --what-if) and kinds the model never reads are
 * accepted and ignored.
 * Called by kanna-scheduler --simulate (scheduler/simulate-main.c),
 * kanna-reaper --what-if (reaper/what-if-main.c), the scenario tests and
 * the fuzz targets.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/hashmap.h"
#include "state/state-store.h"
#include "model/from-state.h"
#include "dump/dump-internal.h"
#include "decode/decode.h"

/* Kinds the model reads (from-state.c), by their decoders' names. */
static const char *const modelled_kinds[] = {
	"Pod", "Node", "NodePool", "Provisioner", "NodeClaim", "PersistentVolumeClaim",
	"PersistentVolume", "StorageClass", "DaemonSet", "Namespace", "EC2NodeClass", "NodeOverlay",
};

const char *dump_kind(const json_t *obj)
{
	return json_string_value(json_object_get(obj, "kind"));
}

const char *dump_name(const json_t *obj)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

const char *dump_namespace(const json_t *obj)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), "namespace"));
}

int dump_error(struct dump_input *in, const json_t *at, const json_t *fallback,
	       const char *fmt, ...)
{
	unsigned line = 1, column = 1;
	va_list ap;
	int off;

	if (in->err[0]) /* keep the first error */
		return -EINVAL;
	if (!yaml_docs_mark(in->docs, at, &line, &column))
		(void)yaml_docs_mark(in->docs, fallback, &line, &column);
	off = snprintf(in->err, in->err_size, "%s:%u:%u: ", in->file, line, column);
	if (off < 0 || (size_t)off >= in->err_size)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(in->err + off, in->err_size - (size_t)off, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Follows one field path of a decoder message ("spec.containers[0].ports")
 * from obj; returns the deepest node reached that the input has a position
 * for, and how deep that is. */
static const json_t *follow_path(const struct dump_input *in, const json_t *obj, const char *path,
				 size_t len, unsigned *depth)
{
	const json_t *node = obj, *best = NULL;
	char key[256];
	size_t i = 0;
	unsigned line, column;

	*depth = 0;
	while (i < len && node) {
		size_t k = 0;
		while (i < len && path[i] != '.' && path[i] != '[' && k + 1 < sizeof(key))
			key[k++] = path[i++];
		key[k] = '\0';
		node = k ? json_object_get(node, key) : node;
		while (node && i < len && path[i] == '[') {
			char *end;
			unsigned long idx = strtoul(path + i + 1, &end, 10);
			if (*end != ']' || (size_t)(end - path) >= len)
				return best;
			node = json_array_get(node, idx);
			i = (size_t)(end - path) + 1;
		}
		if (node && yaml_docs_mark(in->docs, node, &line, &column)) {
			best = node;
			(*depth)++;
		}
		if (i < len && path[i] == '.')
			i++;
		else if (i < len)
			break; /* a character paths do not have: stop here */
	}
	return best;
}

/*
 * Where a decoder's complaint about obj points: its messages read
 * "<kind> <ns>/<name>: <field path>: <what is wrong>", so the part without
 * spaces that leads deepest into obj is the field.
 */
static const json_t *decode_error_node(const struct dump_input *in, const json_t *obj,
				       const char *msg)
{
	const json_t *best = NULL;
	unsigned best_depth = 0;

	for (const char *seg = msg; *seg;) {
		const char *end = strstr(seg, ": ");
		size_t len = end ? (size_t)(end - seg) : strlen(seg);
		unsigned depth;

		if (len && !memchr(seg, ' ', len)) {
			const json_t *n = follow_path(in, obj, seg, len, &depth);
			if (n && depth > best_depth) {
				best = n;
				best_depth = depth;
			}
		}
		seg += len + (end ? 2 : 0);
	}
	return best;
}

int dump_append(struct dump_input *in, json_t *obj, const json_t *origin)
{
	if (!obj || json_array_append_new(in->objects, obj) < 0 ||
	    json_array_append(in->origins, (json_t *)origin) < 0 ||
	    json_array_append_new(in->copies, json_null()) < 0)
		return -ENOMEM;
	return 0;
}

int dump_add_copy(struct dump_input *in, size_t i, const char *name)
{
	json_t *names = json_array_get(in->copies, i);

	if (!json_is_array(names) &&
	    (!(names = json_array()) || json_array_set_new(in->copies, i, names) < 0))
		return -ENOMEM;
	return json_array_append_new(names, json_string(name)) < 0 ? -ENOMEM : 0;
}

/* The input's documents, List items flattened, into in->objects. */
static int flatten(struct dump_input *in)
{
	for (size_t d = 0; d < in->docs->n_docs; d++) {
		json_t *doc = in->docs->docs[d], *items = json_object_get(doc, "items"), *item;
		bool list = json_is_object(doc) && streq_ptr(dump_kind(doc), "List");
		size_t i;

		if (!json_is_object(doc))
			return dump_error(in, doc, NULL, "expected a Kubernetes object (a mapping)");
		if (!list) {
			if (dump_append(in, json_incref(doc), doc) < 0)
				return -ENOMEM;
			continue;
		}
		if (!json_is_array(items))
			return dump_error(in, items, doc, "items: expected a list of objects");
		json_array_foreach(items, i, item)
			if (dump_append(in, json_incref(item), item) < 0)
				return -ENOMEM;
	}
	in->n_given = json_array_size(in->objects);
	return 0;
}

/* What every object needs before anything reads it. */
static int check_objects(struct dump_input *in)
{
	const json_t *obj;
	size_t i;

	json_array_foreach(in->objects, i, obj) {
		const char *kind = dump_kind(obj), *name = dump_name(obj);
		if (!json_is_object(obj))
			return dump_error(in, obj, NULL, "expected a Kubernetes object (a mapping)");
		if (!kind || !*kind)
			return dump_error(in, json_object_get(obj, "kind"), obj, "object without kind");
		if (!name || !*name)
			return dump_error(in, obj, NULL, "%s without metadata.name", kind);
	}
	return 0;
}

static bool modelled(const char *kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(modelled_kinds); i++)
		if (streq(kind, modelled_kinds[i]))
			return true;
	return false;
}

/* The pending pods, in input order: decoded ones (owned, to free) and
 * renamed replicas sharing a decoded pod's arrays (in the arena). */
struct pending {
	const struct proto_pod **pods;
	size_t n, cap;
	struct proto_pod **owned;
	size_t n_owned, cap_owned;
	struct arena replicas;
	struct hashmap keys; /* "ns/name" of every pod seen */
};

static void pending_done(struct pending *p)
{
	for (size_t i = 0; i < p->n_owned; i++)
		proto_pod_free(p->owned[i]);
	free(p->owned);
	free(p->pods);
	arena_done(&p->replicas);
	hashmap_done(&p->keys);
}

static int grow(void *v, size_t *n, size_t *cap)
{
	void **arr = v;

	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		void *nv = realloc(*arr, c * sizeof(void *));
		if (!nv)
			return -ENOMEM;
		*arr = nv;
		*cap = c;
	}
	return 0;
}

/* A pod of the input that has not been seen yet (by namespace/name). */
static int pending_key(struct dump_input *in, struct pending *p, const char *ns, const char *name,
		       const json_t *obj, const json_t *origin)
{
	char key[STATE_KEY_MAX];

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	if (hashmap_get(&p->keys, key))
		return dump_error(in, obj, origin, "duplicate Pod \"%s\"", key);
	return hashmap_put(&p->keys, key, (void *)obj, NULL);
}

static int pending_add(struct pending *p, const struct proto_pod *pod)
{
	int r;

	if ((r = grow(&p->pods, &p->n, &p->cap)) < 0 || (r = grow(&p->owned, &p->n_owned, &p->cap_owned)) < 0)
		return r;
	if (!(p->owned[p->n_owned] = proto_pod_dup(pod)))
		return -ENOMEM;
	p->pods[p->n++] = p->owned[p->n_owned++];
	return 0;
}

/* The last pod added, renamed: another replica of the same workload. */
static int pending_add_replica(struct pending *p, const char *name)
{
	const struct proto_pod *first = p->owned[p->n_owned - 1];
	struct proto_pod *copy;
	char uid[PROTO_MAX_NAME_LEN];
	int r;

	if ((r = grow(&p->pods, &p->n, &p->cap)) < 0)
		return r;
	/* The uid decode_metadata() derives for objects without one. */
	snprintf(uid, sizeof(uid), "Pod/%s/%s", first->ns, name);
	if (!(copy = arena_memdup(&p->replicas, first, sizeof(*first))) ||
	    !(copy->name = arena_strdup(&p->replicas, name)) ||
	    !(copy->uid = arena_strdup(&p->replicas, uid)))
		return -ENOMEM;
	p->pods[p->n++] = copy;
	return 0;
}

/* Semantic checks the decoders leave to the consumer: a dump is refused for
 * what the daemon would only report and skip. */
static int check_decoded(struct dump_input *in, const json_t *obj, const struct proto_object *o)
{
	if (o->kind == PROTO_OBJECT_NODEPOOL && o->nodepool->status == PROTO_NODEPOOL_INVALID) {
		const json_t *spec = json_object_get(obj, "spec"), *weight = json_object_get(spec, "weight");
		const char *why = o->nodepool->status_reason ?: "invalid";
		bool bad_weight = o->nodepool->weight < 0 || o->nodepool->weight > 100;
		/* A requirement's reason names its field: point there. */
		const json_t *at = decode_error_node(in, obj, why);
		return dump_error(in, at ? at : bad_weight ? weight : spec, obj, "%s \"%s\": %s",
				  dump_kind(obj), o->nodepool->name, why);
	}
	if (o->kind == PROTO_OBJECT_NODEOVERLAY && o->nodeoverlay->invalid)
		return dump_error(in, json_object_get(obj, "spec"), obj, "NodeOverlay \"%s\": %s",
				  o->nodeoverlay->name, o->nodeoverlay->invalid);
	if (o->kind == PROTO_OBJECT_NODE && !o->node->n_allocatable && !o->node->n_capacity)
		return dump_error(in, obj, NULL, "Node \"%s\" has no status.allocatable or status.capacity",
				  o->node->name);
	return 0;
}

/* Decodes one object into the store (or, for a pending pod, the batch,
 * with the identical replicas it stands for). */
static int decode_one(struct dump_input *in, struct decoder *dec, const json_t *obj,
		      const json_t *origin, const json_t *copies, struct state_store *store,
		      struct pending *pending)
{
	const char *kind = dump_kind(obj), *ns, *name;
	const struct state_entry *prev;
	struct proto_object o;
	const json_t *copy;
	size_t i;
	int r;

	dec->error[0] = '\0';
	r = decode_object(dec, kind, obj, &o);
	if (r == -EINVAL)
		return dump_error(in, decode_error_node(in, obj, dec->error), origin, "%s", dec->error);
	if (r < 0 || (r = check_decoded(in, obj, &o)) < 0)
		return r;
	state_object_name(&o, &ns, &name);
	if (o.kind == PROTO_OBJECT_POD) {
		const struct proto_pod *p = o.pod;
		if (p->phase == PROTO_PHASE_SUCCEEDED || p->phase == PROTO_PHASE_FAILED)
			return 0; /* finished: holds nothing */
		if ((r = pending_key(in, pending, ns, name, obj, origin)) < 0)
			return r;
		if (!p->node_name || !*p->node_name) {
			/* A DaemonSet's pending pods are not ours to place. */
			if (proto_pod_template_of(p)->daemonset_owned)
				return 0;
			if ((r = pending_add(pending, p)) < 0)
				return r;
			json_array_foreach(copies, i, copy)
				if ((r = pending_key(in, pending, ns, json_string_value(copy), obj, origin)) < 0 ||
				    (r = pending_add_replica(pending, json_string_value(copy))) < 0)
					return r;
			return 0;
		}
	}
	prev = state_store_get(store, o.kind, ns, name);
	if (prev)
		return dump_error(in, obj, origin, "duplicate %s \"%s%s%s\"", kind, ns, *ns ? "/" : "", name);
	r = state_store_apply(store, PROTO_DELTA_ADD, &o, store->seq + 1);
	return r < 0 ? r : 0;
}

static int decode_all(struct dump_input *in, struct state_store *store, struct pending *pending)
{
	struct arena arena = { 0 };
	struct decoder dec = { .arena = &arena };
	const json_t *obj;
	size_t i;
	int r = 0;

	json_array_foreach(in->objects, i, obj) {
		if (!modelled(dump_kind(obj)) &&
		    !(in->opts->pdbs && streq(dump_kind(obj), "PodDisruptionBudget")))
			continue;
		if ((r = decode_one(in, &dec, obj, json_array_get(in->origins, i),
				    json_array_get(in->copies, i), store, pending)) < 0)
			break;
		arena_reset(&arena);
		/* A generated object is done with once decoded. */
		if (i >= in->n_given && json_array_set_new(in->objects, i, json_null()) < 0) {
			r = -ENOMEM;
			break;
		}
	}
	arena_done(&arena);
	return r;
}

/*
 * The watcher withholds pods planned for a NodeClaim that still speaks for
 * them (DESIGN §2 rule 4): the daemon never sees them pending, and its
 * model counts them on that NodeClaim (from-state.c). So here: they leave
 * the batch and join the state as the watcher's replica would hold them.
 */
static int withhold_planned(struct state_store *store, struct pending *p, int64_t now_ms)
{
	struct hashmap planned = { 0 };
	const struct state_entry *e;
	char key[STATE_KEY_MAX];
	size_t it = 0, k = 0;
	int r = 0;

	while (r >= 0 && (e = state_store_next(store, &it))) {
		const struct proto_nodeclaim *nc = e->obj.nodeclaim;
		if (e->obj.kind != PROTO_OBJECT_NODECLAIM || !state_nodeclaim_holds_planned_pods(nc, now_ms))
			continue;
		for (uint32_t i = 0; i < nc->n_planned_pods && r >= 0; i++)
			r = hashmap_put(&planned, nc->planned_pods[i], (void *)1, NULL);
	}
	for (size_t i = 0; i < p->n && r >= 0; i++) {
		const struct proto_pod *pod = p->pods[i];
		snprintf(key, sizeof(key), "%s/%s", pod->ns, pod->name);
		if (!planned.n || !hashmap_get(&planned, key)) {
			p->pods[k++] = pod;
			continue;
		}
		r = state_store_apply(store, PROTO_DELTA_ADD,
				      &(struct proto_object){ .kind = PROTO_OBJECT_POD, .pod = (struct proto_pod *)pod },
				      store->seq + 1);
	}
	if (r >= 0)
		p->n = k;
	hashmap_done(&planned);
	return r < 0 ? r : 0;
}

int dump_load(const char *file, const char *data, size_t size, const struct dump_options *opts,
	      struct cluster **ret, char *err, size_t err_size)
{
	struct state_store store;
	int r;

	state_store_init(&store);
	r = dump_load_store(file, data, size, opts, &store, ret, err, err_size);
	state_store_done(&store);
	return r;
}

int dump_load_store(const char *file, const char *data, size_t size,
		    const struct dump_options *opts, struct state_store *store,
		    struct cluster **ret, char *err, size_t err_size)
{
	static const struct dump_options defaults = { 0 };
	struct dump_input in = { .file = file, .opts = opts ?: &defaults, .err = err,
				 .err_size = err_size };
	struct from_state_options fo = { .fill_catalog = dump_fill_catalog, .userdata = &in,
					 .now_ms = in.opts->now_ms ?: clock_realtime_ms() };
	struct pending pending = { 0 };
	int r;

	err[0] = '\0';
	r = yaml_docs_load_buffer(data, size, file, &in.docs, err, err_size);
	if (r >= 0)
		r = (in.objects = json_array()) && (in.origins = json_array()) &&
				    (in.copies = json_array()) ? 0 : -ENOMEM;
	if (r >= 0)
		r = flatten(&in);
	if (r >= 0)
		r = check_objects(&in);
	if (r >= 0)
		r = dump_admit(&in);
	if (r >= 0)
		r = dump_expand_workloads(&in);
	if (r >= 0)
		r = decode_all(&in, store, &pending);
	if (r >= 0)
		r = withhold_planned(store, &pending, fo.now_ms);
	if (r >= 0)
		r = cluster_from_state(store, pending.pods, pending.n, &fo, ret, err, err_size);
	pending_done(&pending);
	json_decref(in.objects);
	json_decref(in.origins);
	json_decref(in.copies);
	yaml_docs_free(in.docs);
	if (r < 0 && !err[0])
		snprintf(err, err_size, "%s: %s", file, strerror(-r));
	return r;
}
