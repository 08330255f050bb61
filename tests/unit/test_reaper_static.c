/*
 * Static NodePools scaled down (reaper/static.h): how many NodeClaims are
 * surplus and which go first, in upstream's order (unlaunched, empty, then
 * cheapest to reschedule, do-not-disrupt last), over a state store whose
 * pods are decoded from the JSON the API server serves.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "decode/decode.h"
#include "reaper/static.h"

#define NOW_MS 1800000000000LL

static struct arena arena;
static struct decoder dec;
static struct state_store store;

static void setup(void)
{
	memset(&arena, 0, sizeof(arena));
	dec = (struct decoder){ .arena = &arena };
	state_store_init(&store);
}

static void teardown(void)
{
	state_store_done(&store);
	arena_done(&arena);
}

TestSuite(static_pool, .init = setup, .fini = teardown);

static struct proto_nodepool pool = {
	.name = "fixed", .uid = "u-np", .source_api = PROTO_API_V1, .expire_after_s = -1,
	.static_capacity = true, .replicas = 2,
};

static void add(struct proto_object o)
{
	cr_assert_geq(state_store_apply(&store, PROTO_DELTA_ADD, &o, store.seq + 1), 0);
	store.seq++;
}

/* A NodeClaim of the pool; launched: with a providerID and a Ready Node of
 * the same name. */
static void claim(const char *name, bool launched, bool do_not_disrupt, int64_t deleted)
{
	struct proto_nodeclaim nc = { .name = (char *)name, .uid = (char *)name, .nodepool = "fixed",
				      .node_name = launched ? (char *)name : NULL,
				      .provider_id = launched ? "aws:///us-west-2a/i-0" : NULL,
				      .creation_time = NOW_MS - 3600 * 1000,
				      .do_not_disrupt = do_not_disrupt, .deletion_time = deleted };
	struct proto_node n = { .name = (char *)name, .uid = (char *)name, .ready = PROTO_COND_TRUE };

	add((struct proto_object){ .kind = PROTO_OBJECT_NODECLAIM, .nodeclaim = &nc });
	if (launched)
		add((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &n });
}

/* A running pod on node, with these annotations (JSON members, or ""),
 * owned by a DaemonSet when ds. */
static void pod(const char *name, const char *on, const char *annotations, bool ds)
{
	char text[2048];
	json_error_t jerr;
	json_t *j;
	struct proto_object o;

	snprintf(text, sizeof(text),
		 "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"%s\","
		 " \"namespace\": \"default\", \"uid\": \"%s\", \"annotations\": {%s}%s},"
		 " \"spec\": {\"nodeName\": \"%s\","
		 " \"containers\": [{\"name\": \"c\", \"resources\": {\"requests\": {\"cpu\": \"100m\"}}}]},"
		 " \"status\": {\"phase\": \"Running\"}}",
		 name, name, annotations,
		 ds ? ", \"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": \"DaemonSet\","
		      " \"name\": \"ds\", \"uid\": \"ds\", \"controller\": true}]" : "",
		 on);
	j = json_loads(text, 0, &jerr);
	cr_assert_not_null(j, "fixture is not JSON: %s", jerr.text);
	cr_assert_eq(decode_object(&dec, "Pod", j, &o), 0, "%s", dec.error);
	add(o);
	json_decref(j);
	arena_reset(&arena);
}

/* The names static_surplus() picks, space-separated, in order. */
static const char *surplus(static_leaving_fn leaving)
{
	static char out[512];
	const struct proto_nodeclaim *v[16];
	int n = static_surplus(&store, &pool, NOW_MS, leaving, NULL, v, 16);

	cr_assert_geq(n, 0);
	out[0] = 0;
	for (int i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? " " : "", v[i]->name);
	return out;
}

#define DO_NOT_DISRUPT "\"karpenter.sh/do-not-disrupt\": \"true\""

/* upstream static/deprovisioning getDeprovisioningCandidates */
Test(static_pool, unlaunched_then_empty_then_cheapest_and_do_not_disrupt_last)
{
	claim("busy", true, false, 0);
	pod("web-1", "busy", "", false);
	pod("web-2", "busy", "", false);
	claim("light", true, false, 0);
	pod("web-3", "light", "", false);
	claim("guarded", true, false, 0);
	pod("db-1", "guarded", DO_NOT_DISRUPT, false);
	claim("empty", true, false, 0);
	pod("agent-1", "empty", "", true);
	claim("booting", false, false, 0);
	claim("also-guarded", true, true, 0);
	pool.replicas = 0;
	cr_assert_str_eq(surplus(NULL), "booting empty light busy also-guarded guarded");
	pool.replicas = 4;
	cr_assert_str_eq(surplus(NULL), "booting empty", "6 NodeClaims, 4 replicas: two go");
	pool.replicas = 6;
	cr_assert_str_eq(surplus(NULL), "");
	pool.replicas = 2;
}

static bool leaving_light(const struct proto_nodeclaim *nc, void *userdata)
{
	(void)userdata;
	return strcmp(nc->name, "light") == 0;
}

Test(static_pool, claims_being_deleted_or_leaving_do_not_count)
{
	claim("a", true, false, 0);
	claim("b", true, false, 0);
	claim("light", true, false, 0);
	claim("gone", true, false, NOW_MS - 1000);
	cr_assert_eq(static_running(&store, &pool, NULL, NULL), 3);
	cr_assert_str_eq(surplus(NULL), "a", "3 running for 2 replicas: one goes");
	cr_assert_eq(static_running(&store, &pool, leaving_light, NULL), 2);
	cr_assert_str_eq(surplus(leaving_light), "", "the one leaving already settles it");
}

Test(static_pool, a_dynamic_pool_has_no_surplus)
{
	struct proto_nodepool dynamic = pool;

	claim("a", true, false, 0);
	claim("b", true, false, 0);
	claim("c", true, false, 0);
	dynamic.static_capacity = false;
	dynamic.replicas = 0;
	cr_assert_eq(static_surplus(&store, &dynamic, NOW_MS, NULL, NULL,
				    (const struct proto_nodeclaim *[4]){ 0 }, 4), 0);
}
