/*
 * NodePool and Provisioner status (see nodepool-status.h): a record per
 * pool the informers have seen, and the periodic flush that compares what
 * the pool's status should say with what the API last said and sends the
 * difference. Called by the informers (observe, forget) and the watcher's
 * main loop (flush); it reads the watcher's state store and never blocks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hashmap.h"
#include "common/log.h"
#include "common/quantity.h"
#include "common/util.h"
#include "decode/decode.h"
#include "watcher/nodepool-status.h"

#define CONDITION_READY "Ready"
#define CONDITION_NODECLASS_READY "NodeClassReady"
#define CONDITION_VALIDATION "ValidationSucceeded"

/* A pool as last seen (key "NodePool/name" or "Provisioner/name"). */
struct pool_record {
	char *name;
	char *collection; /* "/apis/karpenter.sh/v1/nodepools" */
	char *nodeclass;  /* nodeClassRef name, or NULL */
	enum proto_api_version api;
	int64_t generation;
	json_t *observed; /* its status, or NULL */
	json_t *want;     /* the validation conditions [{type, status, reason, message}] */
	char *sent;       /* the last patch sent, without transition times */
	uint64_t sent_usec;
	bool conditions_only; /* a NodeOverlay: its conditions, no resources */
};

struct nodepool_status {
	struct kube_client *client;
	const struct state_store *store;
	struct hashmap pools; /* key → struct pool_record * */
};

static void record_free(struct pool_record *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->collection);
	free(p->nodeclass);
	json_decref(p->observed);
	json_decref(p->want);
	free(p->sent);
	free(p);
}

int nodepool_status_new(struct nodepool_status **ret, struct kube_client *client,
			const struct state_store *store)
{
	struct nodepool_status *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->client = client;
	s->store = store;
	*ret = s;
	return 0;
}

struct nodepool_status *nodepool_status_free(struct nodepool_status *s)
{
	const char *key;
	void *v;

	if (!s)
		return NULL;
	for (size_t it = 0; hashmap_next(&s->pools, &it, &key, &v);)
		record_free(v);
	hashmap_done(&s->pools);
	free(s);
	return NULL;
}

static int pool_key(const char *kind, const char *name, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s", kind, name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int replace_string(char **dst, const char *src)
{
	char *copy = src ? strdup(src) : NULL;

	if (src && !copy)
		return -ENOMEM;
	free(*dst);
	*dst = copy;
	return 0;
}

static json_t *want_json(const struct nodepool_condition *want, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++)
		if (json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s}", "type", want[i].type,
							 "status", want[i].ok ? "True" : "False",
							 "reason", want[i].ok ? want[i].reason_ok
									      : want[i].reason_failed,
							 "message", want[i].ok ? "" : want[i].why ?: "")) < 0) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

int nodepool_status_observe(struct nodepool_status *s, const char *kind, const char *collection,
			    enum proto_api_version api, const json_t *obj, const char *nodeclass,
			    const struct nodepool_condition *want, size_t n_want)
{
	const char *name = json_string_value(json_path(obj, "metadata.name"));
	const json_t *status = json_object_get(obj, "status");
	struct pool_record *p;
	char key[2 * PROTO_MAX_NAME_LEN];
	json_t *w;
	int r;

	if (!name || pool_key(kind, name, key, sizeof(key)) < 0)
		return 0; /* nothing to write a status on */
	p = hashmap_get(&s->pools, key);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || !(p->name = strdup(name)) || (r = hashmap_put(&s->pools, key, p, NULL)) < 0) {
			record_free(p);
			return -ENOMEM;
		}
	}
	w = want_json(want, n_want);
	if (!w || (r = replace_string(&p->collection, collection)) < 0 ||
	    (r = replace_string(&p->nodeclass, nodeclass)) < 0) {
		json_decref(w);
		return -ENOMEM;
	}
	json_decref(p->want);
	p->want = w;
	json_decref(p->observed);
	p->observed = status ? json_deep_copy(status) : NULL;
	p->api = api;
	p->conditions_only = streq(kind, "NodeOverlay");
	p->generation = json_integer_value(json_path(obj, "metadata.generation"));
	return 0;
}

void nodepool_status_forget(struct nodepool_status *s, const char *kind, const char *name)
{
	char key[2 * PROTO_MAX_NAME_LEN];

	if (pool_key(kind, name, key, sizeof(key)) >= 0)
		record_free(hashmap_remove(&s->pools, key));
}

/* ---- usage (Karpenter's cluster state NodePoolResourcesFor) ------------------------- */

static void usage_add(struct nodepool_usage *u, const char *name, int64_t v)
{
	for (uint32_t i = 0; i < u->n_res; i++)
		if (streq(u->res[i].name, name)) {
			u->res[i].value += v;
			return;
		}
	if (u->n_res < PROTO_MAX_RESOURCES)
		u->res[u->n_res++] = (struct proto_resource){ (char *)name, v };
}

/* Karpenter's BaseResources: these are present, zero or not. */
static void usage_init(struct nodepool_usage *u)
{
	static const char *const base[] = { "cpu", "memory", "pods", "ephemeral-storage" };

	*u = (struct nodepool_usage){ 0 };
	for (size_t i = 0; i < ARRAY_SIZE(base); i++)
		usage_add(u, base[i], 0);
}

/* A NodeClaim counts with its Node's capacity once the Node reports one
 * (a state node's Capacity()), before that with its own. */
static void usage_add_claim(struct nodepool_usage *u, const struct state_store *store,
			    const struct proto_nodeclaim *nc)
{
	const struct state_entry *ne = nc->node_name ? state_store_get(store, PROTO_OBJECT_NODE, "",
								       nc->node_name) : NULL;
	const struct proto_resource *res = nc->capacity;
	uint32_t n = nc->n_capacity;

	if (ne && ne->obj.node->n_capacity) {
		res = ne->obj.node->capacity;
		n = ne->obj.node->n_capacity;
	}
	for (uint32_t i = 0; i < n; i++)
		usage_add(u, res[i].name, res[i].value);
	u->nodes++;
}

int nodepool_usage_of(const struct state_store *store, const char *pool, struct nodepool_usage *ret)
{
	const struct state_entry *e;

	usage_init(ret);
	for (size_t it = 0; (e = state_store_next(store, &it));)
		if (e->obj.kind == PROTO_OBJECT_NODECLAIM && streq_ptr(e->obj.nodeclaim->nodepool, pool))
			usage_add_claim(ret, store, e->obj.nodeclaim);
	return 0;
}

/* ---- the patch ------------------------------------------------------------------------ */

static void format_quantity(const char *name, int64_t v, char *buf, size_t size)
{
	if (streq(name, "cpu"))
		quantity_format(v, true, false, buf, size);
	else if ((streq(name, "memory") || streq(name, "ephemeral-storage") ||
		  !strncmp(name, "hugepages-", 10)) && v % 1024 == 0)
		quantity_format(v, false, true, buf, size); /* exact: 1024 divides it */
	else
		snprintf(buf, size, "%" PRId64, v);
}

static json_t *resources_json(const struct nodepool_usage *u)
{
	json_t *res = json_object();
	char q[64];

	for (uint32_t i = 0; res && i < u->n_res; i++) {
		format_quantity(u->res[i].name, u->res[i].value, q, sizeof(q));
		if (json_object_set_new(res, u->res[i].name, json_string(q)) < 0)
			goto fail;
	}
	snprintf(q, sizeof(q), "%" PRId64, u->nodes);
	if (res && json_object_set_new(res, "nodes", json_string(q)) == 0)
		return res;
fail:
	json_decref(res);
	return NULL;
}

static const json_t *find_condition(const json_t *conds, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(conds, i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), type))
			return c;
	return NULL;
}

static bool is_ours(const json_t *ours, const json_t *c)
{
	return find_condition(ours, json_string_value(json_object_get(c, "type"))) != NULL;
}

static int append_condition(json_t *ours, const char *type, bool ok, const char *reason,
			    const char *message)
{
	return json_array_append_new(ours, json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status",
						     ok ? "True" : "False", "reason", reason,
						     "message", ok ? "" : message));
}

/* NodeClassReady as Karpenter's readiness controller sets it. The class's
 * Ready reason is not on the state feed: a False one is NodeClassNotReady
 * with the class's own message. */
static int nodeclass_condition(json_t *ours, int ready, const char *why)
{
	if (ready < 0)
		return append_condition(ours, CONDITION_NODECLASS_READY, false, "NodeClassNotFound",
					"NodeClass not found on cluster");
	if (ready == PROTO_COND_TRUE)
		return append_condition(ours, CONDITION_NODECLASS_READY, true, CONDITION_NODECLASS_READY, "");
	if (ready == PROTO_COND_FALSE)
		return append_condition(ours, CONDITION_NODECLASS_READY, false, "NodeClassNotReady",
					why && *why ? why : "NodeClass is not ready");
	return append_condition(ours, CONDITION_NODECLASS_READY, false, "NodeClassReadinessUnknown",
				"Node Class Readiness Unknown");
}

/* The root condition over ValidationSucceeded and NodeClassReady. */
static int ready_condition(json_t *ours)
{
	static const char *const dependents[] = { CONDITION_VALIDATION, CONDITION_NODECLASS_READY };
	char message[256] = "";
	size_t len = 0;

	for (size_t i = 0; i < ARRAY_SIZE(dependents); i++) {
		const json_t *c = find_condition(ours, dependents[i]);
		const char *st = json_string_value(json_object_get(c, "status"));

		if (c && !streq_ptr(st, "True") && len < sizeof(message))
			len += (size_t)snprintf(message + len, sizeof(message) - len, "%s%s=%s",
						len ? ", " : "", dependents[i], st ? st : "Unknown");
	}
	return append_condition(ours, CONDITION_READY, !len, len ? "UnhealthyDependents" : CONDITION_READY,
				message);
}

/* ours with lastTransitionTime (kept while the status stays) and, where
 * the schema has it, observedGeneration; after the others' conditions. */
static json_t *conditions_json(const json_t *ours, const json_t *observed, bool generation_field,
			       int64_t generation, const char *now)
{
	const json_t *old = json_object_get(observed, "conditions"), *c;
	json_t *all = json_array();
	size_t i;

	json_array_foreach(old, i, c)
		if (all && !is_ours(ours, c) && json_array_append(all, (json_t *)c) < 0)
			goto fail;
	json_array_foreach(ours, i, c) {
		const json_t *cur = find_condition(old, json_string_value(json_object_get(c, "type")));
		const char *since = json_string_value(json_object_get(cur, "lastTransitionTime"));
		json_t *copy = json_copy((json_t *)c);

		if (!cur || !json_equal(json_object_get(cur, "status"), json_object_get(c, "status")) || !since)
			since = now;
		if (!copy || !all || json_object_set_new(copy, "lastTransitionTime", json_string(since)) < 0 ||
		    (generation_field &&
		     json_object_set_new(copy, "observedGeneration", json_integer(generation)) < 0) ||
		    json_array_append_new(all, copy) < 0) {
			json_decref(copy);
			goto fail;
		}
	}
	return all;
fail:
	json_decref(all);
	return NULL;
}

/* Every condition of ours already says the same on the object. */
static bool conditions_same(const json_t *ours, const json_t *observed, bool generation_field,
			    int64_t generation)
{
	static const char *const fields[] = { "status", "reason", "message" };
	const json_t *old = json_object_get(observed, "conditions"), *c;
	size_t i;

	json_array_foreach(ours, i, c) {
		const json_t *cur = find_condition(old, json_string_value(json_object_get(c, "type")));

		if (!cur)
			return false;
		for (size_t f = 0; f < ARRAY_SIZE(fields); f++)
			if (!streq_ptr(json_string_value(json_object_get(cur, fields[f])) ?: "",
				       json_string_value(json_object_get(c, fields[f]))))
				return false;
		if (generation_field &&
		    json_integer_value(json_object_get(cur, "observedGeneration")) != generation)
			return false;
	}
	return true;
}

/* A merge patch replaces keys it names: a resource no longer counted is
 * set to null, or it would stay. */
static int null_gone_resources(json_t *res, const json_t *observed)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)json_object_get(observed, "resources"), k, v)
		if (!json_object_get(res, k) && json_object_set_new(res, k, json_null()) < 0)
			return -ENOMEM;
	return 0;
}

json_t *nodepool_status_patch(enum proto_api_version api, const json_t *want, int nodeclass_ready,
			      const char *nodeclass_why, const struct nodepool_usage *usage,
			      const json_t *observed, int64_t generation, const char *now)
{
	bool v1 = api == PROTO_API_V1, with_conditions = api != PROTO_API_V1BETA1;
	json_t *ours = NULL, *status = NULL, *res = resources_json(usage);
	bool same;
	int r;

	if (!res)
		return NULL;
	same = json_equal(res, json_object_get(observed, "resources")) &&
	       (!v1 || (json_is_integer(json_object_get(observed, "nodes")) &&
			json_integer_value(json_object_get(observed, "nodes")) == usage->nodes));
	if (with_conditions) {
		ours = json_copy((json_t *)want);
		if (!ours || (v1 && nodeclass_condition(ours, nodeclass_ready, nodeclass_why) < 0) ||
		    ready_condition(ours) < 0)
			goto fail;
		same = same && conditions_same(ours, observed, v1, generation);
	}
	if (same) {
		json_decref(ours);
		json_decref(res);
		return NULL;
	}
	if (null_gone_resources(res, observed) < 0 || !(status = json_object()))
		goto fail;
	/* set_new takes res, also when it fails */
	r = json_object_set_new(status, "resources", res);
	res = NULL;
	if (r < 0)
		goto fail;
	if (v1 && json_object_set_new(status, "nodes", json_integer(usage->nodes)) < 0)
		goto fail;
	if (with_conditions &&
	    json_object_set_new(status, "conditions", conditions_json(ours, observed, v1, generation, now)) < 0)
		goto fail;
	json_decref(ours);
	return json_pack("{s:o}", "status", status);
fail:
	json_decref(ours);
	json_decref(res);
	json_decref(status);
	return NULL;
}

json_t *nodeoverlay_status_patch(const json_t *want, const json_t *observed, int64_t generation,
				 const char *now)
{
	json_t *ours = json_copy((json_t *)want), *conds;

	if (!ours || ready_condition(ours) < 0 || conditions_same(ours, observed, true, generation)) {
		json_decref(ours);
		return NULL;
	}
	conds = conditions_json(ours, observed, true, generation, now);
	json_decref(ours);
	return conds ? json_pack("{s:{s:o}}", "status", "conditions", conds) : NULL;
}

/* ---- flush ----------------------------------------------------------------------------- */

static void on_written(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	(void)c;
	(void)userdata;
	if (resp->status < 200 || resp->status >= 300)
		log_warn("Failed to update a NodePool's or NodeOverlay's status: %s",
			 resp->error ?: "no response");
}

/* The patch without its transition times: what a resend is compared by. */
static char *untimed_text(const json_t *patch)
{
	json_t *copy = json_deep_copy(patch), *c;
	char *text;
	size_t i;

	json_array_foreach(json_path(copy, "status.conditions"), i, c)
		json_object_del(c, "lastTransitionTime");
	text = copy ? json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(copy);
	return text;
}

static void flush_one(struct nodepool_status *s, struct pool_record *p,
		      const struct nodepool_usage *usage, const char *now, uint64_t now_usec)
{
	const struct state_entry *nc = p->nodeclass ? state_store_get(s->store, PROTO_OBJECT_NODECLASS,
								      "", p->nodeclass) : NULL;
	_cleanup_free_ char *path = NULL, *body = NULL, *untimed = NULL;
	json_t *patch;
	int r;

	if (p->conditions_only)
		patch = nodeoverlay_status_patch(p->want, p->observed, p->generation, now);
	else
		patch = nodepool_status_patch(p->api, p->want, nc ? nc->obj.nodeclass->ready : -1,
					      nc ? nc->obj.nodeclass->ready_reason : NULL, usage,
					      p->observed, p->generation, now);
	if (!patch)
		return;
	untimed = untimed_text(patch);
	body = json_dumps(patch, JSON_COMPACT);
	json_decref(patch);
	if (!untimed || !body)
		return;
	/* sent and not echoed yet: the watch brings it */
	if (p->sent && streq(p->sent, untimed) && now_usec < p->sent_usec + NODEPOOL_STATUS_RESEND_USEC)
		return;
	if (asprintf(&path, "%s/%s/status", p->collection, p->name) < 0)
		return;
	r = kube_request(s->client, "PATCH", path, "application/merge-patch+json", body, on_written, NULL);
	if (r < 0) {
		log_warn_errno(r, "Failed to update the status of %s: %m", p->name);
		return;
	}
	free(p->sent);
	p->sent = TAKE_PTR(untimed);
	p->sent_usec = now_usec;
}

/* The usage of every pool in one pass over the replica (a Provisioner and a
 * NodePool of one name count the same NodeClaims). */
static int usage_by_pool(const struct nodepool_status *s, struct hashmap *by_name,
			 struct nodepool_usage **ret)
{
	struct nodepool_usage *all = calloc(s->pools.n, sizeof(*all));
	const struct state_entry *e;
	const char *key;
	size_t k = 0;
	void *v;

	if (!all)
		return -ENOMEM;
	for (size_t it = 0; hashmap_next(&s->pools, &it, &key, &v);) {
		const struct pool_record *p = v;

		if (p->conditions_only || hashmap_get(by_name, p->name))
			continue;
		usage_init(&all[k]);
		if (hashmap_put(by_name, p->name, &all[k++], NULL) < 0) {
			free(all);
			return -ENOMEM;
		}
	}
	for (size_t it = 0; (e = state_store_next(s->store, &it));) {
		struct nodepool_usage *u;

		if (e->obj.kind == PROTO_OBJECT_NODECLAIM && e->obj.nodeclaim->nodepool &&
		    (u = hashmap_get(by_name, e->obj.nodeclaim->nodepool)))
			usage_add_claim(u, s->store, e->obj.nodeclaim);
	}
	*ret = all;
	return 0;
}

void nodepool_status_flush(struct nodepool_status *s, bool synced, uint64_t now_usec)
{
	struct hashmap by_name = { 0 };
	struct nodepool_usage *all = NULL;
	const char *key;
	void *v;
	char now[32];
	time_t t = time(NULL);
	struct tm tm;

	if (!synced || !s->client || !s->pools.n)
		return;
	if (usage_by_pool(s, &by_name, &all) < 0) {
		log_warn("Failed to count the NodePools' resources: out of memory");
		hashmap_done(&by_name);
		return;
	}
	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	for (size_t it = 0; hashmap_next(&s->pools, &it, &key, &v);) {
		struct pool_record *p = v;

		flush_one(s, p, hashmap_get(&by_name, p->name), now, now_usec);
	}
	hashmap_done(&by_name);
	free(all);
}
