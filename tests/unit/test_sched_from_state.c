/*
 * The cluster model built from replicated state: pod (anti-)affinity terms
 * that select namespaces by label, and volume topology with every node
 * selector term of a PersistentVolume or StorageClass honoured (ORed), as
 * kube-scheduler's VolumeBinding does.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "model/from-state.h"
#include "tests/unit/pod-template-fixture.h"
#include "model/solver.h"

#define ZONE "topology.kubernetes.io/zone"
#define HOSTNAME "kubernetes.io/hostname"

static struct state_store store;
static struct cluster *cluster;
static struct sched_result *result;

static void setup(void)
{
	state_store_init(&store);
	cluster = NULL;
	result = NULL;
}

static void teardown(void)
{
	sched_result_free(result);
	cluster_free(cluster);
	state_store_done(&store);
}

TestSuite(from_state, .init = setup, .fini = teardown);

static void add(struct proto_object o)
{
	cr_assert_geq(state_store_apply(&store, PROTO_DELTA_ADD, &o, store.seq + 1), 0);
}

static struct proto_resource small_request[] = { { "cpu", 500 }, { "memory", 512LL << 20 } };
static struct proto_resource node_size[] = { { "cpu", 4000 }, { "memory", 16LL << 30 }, { "pods", 110 } };

static struct proto_pod pod(const char *ns, const char *name, struct proto_kv *labels)
{
	struct proto_pod p = { .ns = (char *)ns, .name = (char *)name, .uid = (char *)name };

	fx_template(&p)->labels = labels;
	fx_template(&p)->n_labels = labels ? 1 : 0;
	fx_template(&p)->requests = small_request;
	fx_template(&p)->n_requests = 2;
	return p;
}

static void add_node(const char *name)
{
	static struct proto_kv labels[8][1];
	static int n;
	struct proto_kv *l = labels[n++ % 8];
	struct proto_node node = { .name = (char *)name, .uid = (char *)name, .labels = l,
				   .n_labels = 1, .allocatable = node_size, .n_allocatable = 3 };

	l[0] = (struct proto_kv){ HOSTNAME, (char *)name };
	add((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &node });
}

/* A pod already running on node, counted by affinity terms. */
static void add_bound_pod(const char *ns, const char *name, const char *node, struct proto_kv *labels)
{
	struct proto_pod p = pod(ns, name, labels);

	p.node_name = (char *)node;
	p.phase = PROTO_PHASE_RUNNING;
	add((struct proto_object){ .kind = PROTO_OBJECT_POD, .pod = &p });
}

static void add_namespace(const char *name, struct proto_kv *labels, uint32_t n_labels)
{
	struct proto_namespace ns = { .name = (char *)name, .uid = (char *)name, .labels = labels,
				      .n_labels = n_labels };

	add((struct proto_object){ .kind = PROTO_OBJECT_NAMESPACE, .namespace = &ns });
}

static void add_nodepool(struct proto_requirement *reqs, uint32_t n)
{
	struct proto_nodepool np = { .name = "default", .uid = "np", .requirements = reqs,
				     .n_requirements = n };

	add((struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np });
}

static void solve(const struct proto_pod *const *pending, size_t n)
{
	struct from_state_options fo = { .region = "us-west-2" };
	char err[512];

	cr_assert_eq(cluster_from_state(&store, pending, n, &fo, &cluster, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sched_solve(cluster, &result), 0);
}

/* The existing node pod i went to, or NULL (a new NodeClaim, or pending). */
static const char *node_of(uint32_t i)
{
	int32_t bin = result->pod_bin[i];

	if (bin < 0 || (uint32_t)bin >= result->n_nodes)
		return NULL;
	return strtab_str(&cluster->st, cluster->nodes[bin].name);
}

/* Pending pod 0's claim's zone mask is exactly this zone. */
static void assert_claim_in_zone(uint32_t claim, const char *zone)
{
	int z = catalog_zone_find(&cluster->cat, strtab_lookup(&cluster->st, zone));

	cr_assert_geq(z, 0, "zone %s not in the catalog", zone);
	cr_assert_lt(claim, result->n_claims);
	cr_assert_eq(result->claims[claim].zones, 1ULL << z, "claim %u zones %#llx, want only %s", claim,
		     (unsigned long long)result->claims[claim].zones, zone);
}

/* A "web" pod in team-a that must not share a node with app=db pods of the
 * namespaces its term selects; db pods run in "data" (tier=data) on n1 and
 * in "other" (no Namespace object known) on n2. */
static void anti_affinity_world(struct proto_pod_affinity_term *term, struct proto_pod *web)
{
	static struct proto_kv db[] = { { "app", "db" } }, tier[] = { { "tier", "data" } };
	static struct proto_kv web_label[] = { { "app", "web" } };

	add_node("n1");
	add_node("n2");
	add_namespace("data", tier, 1);
	add_namespace("team-a", NULL, 0);
	add_bound_pod("data", "db-0", "n1", db);
	add_bound_pod("other", "db-1", "n2", db);
	add_nodepool(NULL, 0);
	term->topology_key = HOSTNAME;
	term->selector = (struct proto_label_selector){ .match_labels = db, .n_match_labels = 1 };
	*web = pod("team-a", "web", web_label);
	fx_template(web)->pod_anti_affinity_required = term;
	fx_template(web)->n_pod_anti_affinity_required = 1;
}

Test(from_state, a_namespace_selector_counts_pods_of_namespaces_with_matching_labels)
{
	static struct proto_kv tier[] = { { "tier", "data" } };
	struct proto_pod_affinity_term term = { 0 };
	struct proto_pod web;
	const struct proto_pod *pending[1] = { &web };

	anti_affinity_world(&term, &web);
	term.has_namespace_selector = true;
	term.namespace_selector.match_labels = tier;
	term.namespace_selector.n_match_labels = 1;
	solve(pending, 1);
	cr_assert_str_eq(node_of(0) ?: "(none)", "n2", "the db pod of data (tier=data) repels, other's does not");
}

Test(from_state, an_empty_namespace_selector_counts_every_namespace)
{
	struct proto_pod_affinity_term term = { .has_namespace_selector = true };
	struct proto_pod web;
	const struct proto_pod *pending[1] = { &web };

	anti_affinity_world(&term, &web);
	solve(pending, 1);
	cr_assert_null(node_of(0), "both db pods repel: %s", node_of(0));
	cr_assert_eq(result->n_claims, 1);
	cr_assert_eq(result->n_unschedulable, 0);
}

Test(from_state, without_namespaces_or_selector_only_the_pods_own_namespace_counts)
{
	struct proto_pod_affinity_term term = { 0 };
	struct proto_pod web;
	const struct proto_pod *pending[1] = { &web };

	anti_affinity_world(&term, &web);
	solve(pending, 1);
	cr_assert_not_null(node_of(0), "no db pod runs in team-a");
}

Test(from_state, a_namespace_without_an_object_still_has_its_name_label)
{
	static char *other[] = { "other" };
	struct proto_requirement by_name = { .key = "kubernetes.io/metadata.name", .op = PROTO_OP_IN,
					     .values = other, .n_values = 1 };
	struct proto_pod_affinity_term term = { .has_namespace_selector = true };
	struct proto_pod web;
	const struct proto_pod *pending[1] = { &web };

	anti_affinity_world(&term, &web);
	term.namespace_selector.match_expressions = &by_name;
	term.namespace_selector.n_match_expressions = 1;
	solve(pending, 1);
	cr_assert_str_eq(node_of(0) ?: "(none)", "n1", "only the db pod of \"other\" repels");
}

Test(from_state, the_listed_namespaces_and_the_selected_ones_both_count)
{
	static struct proto_kv tier[] = { { "tier", "data" } };
	static char *other[] = { "other" };
	struct proto_pod_affinity_term term = { .namespaces = other, .n_namespaces = 1,
						.has_namespace_selector = true };
	struct proto_pod web;
	const struct proto_pod *pending[1] = { &web };

	anti_affinity_world(&term, &web);
	term.namespace_selector.match_labels = tier;
	term.namespace_selector.n_match_labels = 1;
	solve(pending, 1);
	cr_assert_null(node_of(0), "db pods of data (selected) and other (listed) both repel");
}

/* ---- volume topology ---- */

static char *zone_b[] = { "us-west-2b" }, *zone_c[] = { "us-west-2c" }, *zone_a[] = { "us-west-2a" };
static char *zones_bc[] = { "us-west-2b", "us-west-2c" };

static struct proto_requirement zone_in(char **values, uint32_t n)
{
	return (struct proto_requirement){ .key = ZONE, .op = PROTO_OP_IN, .values = values, .n_values = n };
}

static void add_claim(const char *name, const char *volume, const char *storage_class)
{
	struct proto_pvc pvc = { .ns = "default", .name = (char *)name, .volume_name = (char *)volume,
				 .storage_class = (char *)storage_class };

	add((struct proto_object){ .kind = PROTO_OBJECT_PVC, .pvc = &pvc });
}

static struct proto_pod pod_with_claim(const char *name, char **claim)
{
	struct proto_pod p = pod("default", name, NULL);

	fx_template(&p)->pvc_names = claim;
	fx_template(&p)->n_pvc_names = 1;
	return p;
}

Test(from_state, every_node_affinity_term_of_a_bound_volume_is_an_alternative)
{
	struct proto_requirement in_b = zone_in(zone_b, 1), in_c = zone_in(zone_c, 1);
	struct proto_node_selector_term terms[2] = { { .requirements = &in_b, .n_requirements = 1 }, { .requirements = &in_c, .n_requirements = 1 } };
	struct proto_pv pv = { .name = "pv-1", .node_affinity = terms, .n_node_affinity = 2 };
	struct proto_requirement pool_c = zone_in(zone_c, 1);
	static char *claim[] = { "data" };
	struct proto_pod p = pod_with_claim("app", claim);
	const struct proto_pod *pending[1] = { &p };

	add((struct proto_object){ .kind = PROTO_OBJECT_PV, .pv = &pv });
	add_claim("data", "pv-1", NULL);
	add_nodepool(&pool_c, 1);
	solve(pending, 1);
	cr_assert_eq(result->n_unschedulable, 0, "the volume's second term allows the pool's zone");
	cr_assert_eq(result->n_claims, 1);
	assert_claim_in_zone(0, "us-west-2c");
}

Test(from_state, every_allowed_topology_of_a_wait_for_first_consumer_class_is_an_alternative)
{
	struct proto_requirement in_a = zone_in(zone_a, 1), in_b = zone_in(zone_b, 1);
	struct proto_node_selector_term topo[2] = { { .requirements = &in_a, .n_requirements = 1 }, { .requirements = &in_b, .n_requirements = 1 } };
	struct proto_storageclass sc = { .name = "ebs", .binding_mode = PROTO_BINDING_WAIT_FOR_FIRST_CONSUMER,
					 .allowed_topologies = topo, .n_allowed_topologies = 2 };
	struct proto_requirement pool = zone_in(zones_bc, 2);
	static char *claim[] = { "data" };
	struct proto_pod p = pod_with_claim("app", claim);
	const struct proto_pod *pending[1] = { &p };

	add((struct proto_object){ .kind = PROTO_OBJECT_STORAGECLASS, .storageclass = &sc });
	add_claim("data", NULL, "ebs");
	add_nodepool(&pool, 1);
	solve(pending, 1);
	cr_assert_eq(result->n_unschedulable, 0);
	assert_claim_in_zone(0, "us-west-2b");
}

/* SCENARIOS S2: a StatefulSet of 20 replicas, each with a claim of a
 * WaitForFirstConsumer class limited to one zone and node affinity to it. */
Test(from_state, statefulset_of_20_with_a_zonal_class_lands_every_claim_in_that_zone)
{
	struct proto_requirement in_a = zone_in(zone_a, 1), affinity = zone_in(zone_a, 1);
	struct proto_node_selector_term topo = { .requirements = &in_a, .n_requirements = 1 };
	struct proto_node_selector_term term = { .requirements = &affinity, .n_requirements = 1 };
	struct proto_storageclass sc = { .name = "ebs", .binding_mode = PROTO_BINDING_WAIT_FOR_FIRST_CONSUMER,
					 .allowed_topologies = &topo, .n_allowed_topologies = 1 };
	static char names[20][16], claims[20][16], *claim_refs[20][1];
	struct proto_pod pods[20];
	const struct proto_pod *pending[20];
	uint32_t placed = 0;

	add((struct proto_object){ .kind = PROTO_OBJECT_STORAGECLASS, .storageclass = &sc });
	add_nodepool(NULL, 0);
	for (int i = 0; i < 20; i++) {
		snprintf(names[i], sizeof(names[i]), "db-%d", i);
		snprintf(claims[i], sizeof(claims[i]), "data-db-%d", i);
		claim_refs[i][0] = claims[i];
		add_claim(claims[i], NULL, "ebs");
		pods[i] = pod_with_claim(names[i], claim_refs[i]);
		fx_template(&pods[i])->node_affinity_required = &term;
		fx_template(&pods[i])->n_node_affinity_required = 1;
		pending[i] = &pods[i];
	}
	solve(pending, 20);
	cr_assert_eq(result->n_unschedulable, 0);
	cr_assert_geq(result->n_claims, 1);
	for (uint32_t i = 0; i < result->n_claims; i++) {
		assert_claim_in_zone(i, "us-west-2a");
		placed += result->claims[i].n_pods;
	}
	cr_assert_eq(placed, 20);
}

Test(from_state, volumes_of_one_pod_combine_with_its_own_node_affinity_terms)
{
	/* Pod: zone a OR zone c. Volume 1: b OR c. Volume 2: c OR a. Only c fits all. */
	struct proto_requirement pa = zone_in(zone_a, 1), pc = zone_in(zone_c, 1);
	struct proto_node_selector_term pod_terms[2] = { { .requirements = &pa, .n_requirements = 1 }, { .requirements = &pc, .n_requirements = 1 } };
	struct proto_requirement v1b = zone_in(zone_b, 1), v1c = zone_in(zone_c, 1);
	struct proto_node_selector_term v1_terms[2] = { { .requirements = &v1b, .n_requirements = 1 }, { .requirements = &v1c, .n_requirements = 1 } };
	struct proto_requirement v2c = zone_in(zone_c, 1), v2a = zone_in(zone_a, 1);
	struct proto_node_selector_term v2_terms[2] = { { .requirements = &v2c, .n_requirements = 1 }, { .requirements = &v2a, .n_requirements = 1 } };
	struct proto_pv pv1 = { .name = "pv-1", .node_affinity = v1_terms, .n_node_affinity = 2 };
	struct proto_pv pv2 = { .name = "pv-2", .node_affinity = v2_terms, .n_node_affinity = 2 };
	static char *claims[] = { "one", "two" };
	struct proto_pod p = pod("default", "app", NULL);
	const struct proto_pod *pending[1] = { &p };

	fx_template(&p)->pvc_names = claims;
	fx_template(&p)->n_pvc_names = 2;
	fx_template(&p)->node_affinity_required = pod_terms;
	fx_template(&p)->n_node_affinity_required = 2;
	add((struct proto_object){ .kind = PROTO_OBJECT_PV, .pv = &pv1 });
	add((struct proto_object){ .kind = PROTO_OBJECT_PV, .pv = &pv2 });
	add_claim("one", "pv-1", NULL);
	add_claim("two", "pv-2", NULL);
	add_nodepool(NULL, 0);
	solve(pending, 1);
	cr_assert_eq(result->n_unschedulable, 0);
	assert_claim_in_zone(0, "us-west-2c");
}

Test(from_state, a_zone_label_of_a_volume_without_node_affinity_is_honoured)
{
	struct proto_pv pv = { .name = "pv-old", .zone = "us-west-2a__us-west-2b" };
	struct proto_requirement pool = zone_in(zones_bc, 2);
	static char *claim[] = { "data" };
	struct proto_pod p = pod_with_claim("app", claim);
	const struct proto_pod *pending[1] = { &p };

	add((struct proto_object){ .kind = PROTO_OBJECT_PV, .pv = &pv });
	add_claim("data", "pv-old", NULL);
	add_nodepool(&pool, 1);
	solve(pending, 1);
	cr_assert_eq(result->n_unschedulable, 0);
	assert_claim_in_zone(0, "us-west-2b");
}

Test(from_state, missing_claims_volumes_and_classes_leave_the_pod_pending_with_the_reason)
{
	struct proto_node_selector_term empty = { 0 };
	struct proto_pv pv = { .name = "pv-empty", .node_affinity = &empty, .n_node_affinity = 1 };
	static char *c0[] = { "nope" }, *c1[] = { "bound-lost" }, *c2[] = { "classless" }, *c3[] = { "empty" };
	struct proto_pod p[4] = { pod_with_claim("a", c0), pod_with_claim("b", c1), pod_with_claim("c", c2),
				  pod_with_claim("d", c3) };
	const struct proto_pod *pending[4] = { &p[0], &p[1], &p[2], &p[3] };
	static const char *const want[4] = {
		"persistentvolumeclaim \"nope\" not found",
		"persistentvolume \"pv-gone\" not found",
		"storageclass.storage.k8s.io \"fast\" not found",
		"persistentvolume \"pv-empty\" node affinity matches no node",
	};

	add((struct proto_object){ .kind = PROTO_OBJECT_PV, .pv = &pv });
	add_claim("bound-lost", "pv-gone", NULL);
	add_claim("classless", NULL, "fast");
	add_claim("empty", "pv-empty", NULL);
	add_nodepool(NULL, 0);
	solve(pending, 4);
	cr_assert_eq(result->n_claims, 0);
	cr_assert_eq(result->n_unschedulable, 4);
	for (uint32_t i = 0; i < 4; i++) {
		const struct sched_unschedulable *u = &result->unschedulable[i];
		cr_assert(strstr(u->reason, want[u->pod]), "pod %u: \"%s\", want \"%s\"", u->pod, u->reason,
			  want[u->pod]);
	}
}

/* Karpenter v1 plans into Ready NodePools only: one whose EC2NodeClass is
 * not Ready opens no NodeClaim, and the pod's reason names the class and
 * why; once the class is Ready again, it does. */
Test(from_state, a_nodepool_whose_nodeclass_is_not_ready_opens_no_nodeclaim)
{
	struct proto_nodepool np = { .name = "default", .uid = "np",
				     .nodeclass_ref = { .group = "karpenter.k8s.aws", .kind = "EC2NodeClass",
							.name = "nowhere" } };
	struct proto_nodeclass nc = { .name = "nowhere", .uid = "nc", .ready = PROTO_COND_FALSE,
				      .ready_reason = "no subnets match subnetSelectorTerms" };
	struct proto_pod p = pod("default", "web-1", NULL);
	const struct proto_pod *pending[] = { &p };

	add((struct proto_object){ .kind = PROTO_OBJECT_NODECLASS, .nodeclass = &nc });
	add((struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np });
	solve(pending, 1);
	cr_assert_eq(result->n_claims, 0);
	cr_assert_eq(result->n_unschedulable, 1);
	cr_assert(strstr(result->unschedulable[0].reason, "incompatible with nodepool default: EC2NodeClass "
							  "nowhere is not ready: no subnets match subnetSelectorTerms"),
		  "\"%s\"", result->unschedulable[0].reason);
	sched_result_free(result);
	cluster_free(cluster);
	result = NULL;
	cluster = NULL;
	nc.ready = PROTO_COND_TRUE;
	nc.ready_reason = NULL;
	add((struct proto_object){ .kind = PROTO_OBJECT_NODECLASS, .nodeclass = &nc });
	solve(pending, 1);
	cr_assert_eq(result->n_claims, 1, "Ready again: a NodeClaim");
}

/* A class using a field kanna does not implement opens no NodeClaim even
 * while its Ready condition still says True (the launcher has not yet
 * written ValidationSucceeded=False): the reason names the field. */
Test(from_state, a_nodepool_whose_nodeclass_uses_an_unsupported_field_opens_no_nodeclaim)
{
	struct proto_nodepool np = { .name = "default", .uid = "np",
				     .nodeclass_ref = { .group = "karpenter.k8s.aws", .kind = "EC2NodeClass",
							.name = "reserved" } };
	struct proto_nodeclass nc = { .name = "reserved", .uid = "nc", .ready = PROTO_COND_TRUE,
				      .unsupported = "spec.capacityReservationSelectorTerms is not supported by kanna" };
	struct proto_pod p = pod("default", "web-1", NULL);
	const struct proto_pod *pending[] = { &p };

	add((struct proto_object){ .kind = PROTO_OBJECT_NODECLASS, .nodeclass = &nc });
	add((struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np });
	solve(pending, 1);
	cr_assert_eq(result->n_claims, 0);
	cr_assert_eq(result->n_unschedulable, 1);
	cr_assert(strstr(result->unschedulable[0].reason,
			 "EC2NodeClass reserved is not ready: spec.capacityReservationSelectorTerms is not "
			 "supported by kanna"),
		  "\"%s\"", result->unschedulable[0].reason);
}

/* A static NodePool (spec.replicas) opens no NodeClaim for pods (upstream's
 * provisioner leaves it out of its scheduler); the reason names it. Its
 * existing node still takes a pod that fits it. */
Test(from_state, a_static_nodepool_opens_no_nodeclaim_but_its_node_takes_pods)
{
	struct proto_nodepool np = { .name = "default", .uid = "np", .static_capacity = true,
				     .replicas = 1 };
	struct proto_pod p = pod("default", "web-1", NULL);
	const struct proto_pod *pending[] = { &p };

	add((struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np });
	solve(pending, 1);
	cr_assert_eq(result->n_claims, 0);
	cr_assert_eq(result->n_unschedulable, 1);
	cr_assert(strstr(result->unschedulable[0].reason, "incompatible with nodepool default: it is static"),
		  "\"%s\"", result->unschedulable[0].reason);
	sched_result_free(result);
	cluster_free(cluster);
	result = NULL;
	cluster = NULL;
	add_node("static-1");
	solve(pending, 1);
	cr_assert_eq(result->n_claims, 0);
	cr_assert_str_eq(node_of(0), "static-1", "the static pool's node is existing capacity");
}

/* Karpenter's instance types under a Windows AMI family are os windows
 * with its build, amd64 only (instancetype/types.go getOS): the catalog's
 * Linux labels do not keep a Windows pod out, and a Linux one stays out. */
Test(from_state, a_windows_nodeclass_pool_takes_windows_pods_on_amd64_only)
{
	struct proto_selector_term alias = { .alias = "windows2022@latest" };
	struct proto_nodepool np = { .name = "win", .uid = "np",
				     .nodeclass_ref = { .group = "karpenter.k8s.aws", .kind = "EC2NodeClass",
							.name = "win" } };
	struct proto_nodeclass nc = { .name = "win", .uid = "nc", .ready = PROTO_COND_TRUE,
				      .ami_selector_terms = &alias, .n_ami_selector_terms = 1 };
	struct proto_kv windows[] = { { "kubernetes.io/os", "windows" } }, linux_os[] = { { "kubernetes.io/os", "linux" } };
	struct proto_pod w = pod("default", "iis-1", NULL), l = pod("default", "web-1", NULL);
	const struct proto_pod *pending[] = { &w, &l };
	const struct requirement *build;
	uint32_t amd64;

	fx_template(&w)->node_selector = windows;
	fx_template(&w)->n_node_selector = 1;
	fx_template(&l)->node_selector = linux_os;
	fx_template(&l)->n_node_selector = 1;
	add((struct proto_object){ .kind = PROTO_OBJECT_NODECLASS, .nodeclass = &nc });
	add((struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np });
	solve(pending, 2);
	cr_assert_eq(result->n_claims, 1);
	cr_assert_eq(result->claims[0].n_pods, 1);
	cr_assert_eq(result->claims[0].pods[0], 0, "the Windows pod has the NodeClaim");
	cr_assert_eq(result->n_unschedulable, 1);
	cr_assert_eq(result->unschedulable[0].pod, 1);
	cr_assert(strstr(result->unschedulable[0].reason, "kubernetes.io/os"), "\"%s\"",
		  result->unschedulable[0].reason);
	amd64 = strtab_lookup(&cluster->st, "amd64");
	cr_assert_gt(result->claims[0].n_types, 0);
	for (uint32_t i = 0; i < result->claims[0].n_types; i++) {
		const struct instance_type *it = &cluster->cat.types[result->claims[0].types[i]];

		cr_assert_eq(labels_get(it->labels, it->n_labels, K_ARCH), amd64, "type %u is not amd64", i);
	}
	build = requirements_get(&result->claims[0].reqs, K_WINDOWS_BUILD);
	cr_assert_not_null(build);
	cr_assert(requirement_allows(build, &cluster->st, strtab_lookup(&cluster->st, "10.0.20348")));
}

/* ---- in-flight NodeClaims and the pods planned for them (DESIGN §2 rule 4) ---- */

static struct proto_resource one_cpu[] = { { "cpu", 1000 }, { "memory", 1LL << 30 } };

/* An unschedulable pod in the replica (the watcher withholds it while a
 * NodeClaim plans it), with app=<app> and one cpu. */
static struct proto_pod planned_pod(const char *name, struct proto_kv *app)
{
	struct proto_pod p = pod("default", name, app);

	fx_template(&p)->requests = one_cpu;
	p.phase = PROTO_PHASE_PENDING;
	p.scheduled = PROTO_COND_FALSE;
	p.scheduled_reason = "Unschedulable";
	return p;
}

static void add_pod_object(struct proto_pod p)
{
	add((struct proto_object){ .kind = PROTO_OBJECT_POD, .pod = &p });
}

/* An m5.xlarge (3920m allocatable) NodeClaim of pool default in
 * us-west-2a, planning pods "default/<name>"; node: its Node's name or NULL. */
static void add_inflight_claim(const char *name, char **planned, uint32_t n_planned, const char *node,
			       const struct proto_condition *ready)
{
	static struct proto_kv labels[] = { { "karpenter.sh/nodepool", "default" },
					    { "node.kubernetes.io/instance-type", "m5.xlarge" },
					    { "topology.kubernetes.io/zone", "us-west-2a" } };
	struct proto_nodeclaim nc = { .name = (char *)name, .uid = (char *)name, .labels = labels,
				      .n_labels = 3, .planned_pods = planned, .n_planned_pods = n_planned,
				      .node_name = (char *)node,
				      .conditions = (struct proto_condition *)ready,
				      .n_conditions = ready ? 1 : 0 };

	add((struct proto_object){ .kind = PROTO_OBJECT_NODECLAIM, .nodeclaim = &nc });
}

static uint32_t pods_on_existing(void)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < cluster->n_pods; i++)
		n += cluster->pods[i].node == STR_NONE && node_of(i) != NULL;
	return n;
}

Test(from_state, pods_planned_for_an_inflight_nodeclaim_fill_it_for_the_next_batch)
{
	static char *planned[] = { "default/p0", "default/p1", "default/p2" };
	struct proto_pod next[3] = { planned_pod("n0", NULL), planned_pod("n1", NULL), planned_pod("n2", NULL) };
	const struct proto_pod *pending[3] = { &next[0], &next[1], &next[2] };

	add_nodepool(NULL, 0);
	for (int i = 0; i < 3; i++)
		add_pod_object(planned_pod(planned[i] + 8, NULL));
	add_inflight_claim("default-abcde", planned, 3, NULL, NULL);
	solve(pending, 3);
	cr_assert_eq(pods_on_existing(), 0, "3 of the claim's 3.92 cpus are spoken for: a fourth does not fit");
	cr_assert_eq(result->n_claims, 1);
	cr_assert_eq(result->claims[0].n_pods, 3);
}

Test(from_state, a_planned_pod_in_the_batch_itself_is_not_counted_twice)
{
	static char *planned[] = { "default/p0", "default/p1", "default/p2" };
	struct proto_pod again = planned_pod("p0", NULL);
	const struct proto_pod *pending[1] = { &again };

	add_nodepool(NULL, 0);
	for (int i = 0; i < 3; i++)
		add_pod_object(planned_pod(planned[i] + 8, NULL));
	add_inflight_claim("default-abcde", planned, 3, NULL, NULL);
	solve(pending, 1);
	cr_assert_str_eq(node_of(0) ?: "(none)", "default-abcde", "p0 takes its own place");
	cr_assert_eq(result->n_claims, 0);
}

Test(from_state, planned_pods_bound_to_the_nodeclaims_node_count_once)
{
	static char *planned[] = { "default/p0", "default/p1", "default/p2" };
	struct proto_pod small = pod("default", "small", NULL);
	const struct proto_pod *pending[1] = { &small };
	static struct proto_resource m5[] = { { "cpu", 3920 }, { "memory", 14LL << 30 }, { "pods", 58 } };
	static struct proto_kv node_labels[] = { { HOSTNAME, "ip-10-0-0-9" }, { "karpenter.sh/nodepool", "default" } };
	struct proto_node node = { .name = "ip-10-0-0-9", .uid = "n9", .labels = node_labels, .n_labels = 2,
				   .allocatable = m5, .n_allocatable = 3 };

	add_nodepool(NULL, 0);
	add((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &node });
	for (int i = 0; i < 3; i++) {
		struct proto_pod p = planned_pod(planned[i] + 8, NULL);
		p.node_name = "ip-10-0-0-9";
		p.phase = PROTO_PHASE_RUNNING;
		add_pod_object(p);
	}
	add_inflight_claim("default-abcde", planned, 3, "ip-10-0-0-9", NULL);
	solve(pending, 1);
	cr_assert_str_eq(node_of(0) ?: "(none)", "ip-10-0-0-9", "3 cpus used, 0.5 more fit");
}

Test(from_state, planned_pods_count_for_anti_affinity_on_the_inflight_nodeclaim)
{
	static char *planned[] = { "default/web-0" };
	static struct proto_kv web[] = { { "app", "web" } };
	struct proto_pod_affinity_term apart = { .topology_key = HOSTNAME,
						 .selector = { .match_labels = web, .n_match_labels = 1 } };
	struct proto_pod web1 = planned_pod("web-1", web);
	const struct proto_pod *pending[1] = { &web1 };

	fx_template(&web1)->pod_anti_affinity_required = &apart;
	fx_template(&web1)->n_pod_anti_affinity_required = 1;
	add_nodepool(NULL, 0);
	add_pod_object(planned_pod("web-0", web));
	add_inflight_claim("default-abcde", planned, 1, NULL, NULL);
	solve(pending, 1);
	cr_assert_null(node_of(0), "web-0 is spoken for on the claim: web-1 keeps away");
	cr_assert_eq(result->n_claims, 1);
}

Test(from_state, pods_of_a_long_ready_nodeclaim_no_longer_hold_its_node)
{
	static char *planned[] = { "default/p0", "default/p1", "default/p2" };
	struct proto_pod next = planned_pod("n0", NULL);
	const struct proto_pod *pending[1] = { &next };
	static struct proto_resource m5[] = { { "cpu", 3920 }, { "memory", 14LL << 30 }, { "pods", 58 } };
	static struct proto_kv node_labels[] = { { HOSTNAME, "ip-10-0-0-9" }, { "karpenter.sh/nodepool", "default" } };
	struct proto_node node = { .name = "ip-10-0-0-9", .uid = "n9", .labels = node_labels, .n_labels = 2,
				   .allocatable = m5, .n_allocatable = 3 };
	struct proto_condition ready = { .type = "Ready", .status = PROTO_COND_TRUE, .last_transition = 1000 };
	struct from_state_options fo = { .region = "us-west-2",
					 .now_ms = 1000 + STATE_NOMINATION_GRACE_MS + 1 };
	char err[512];

	add_nodepool(NULL, 0);
	add((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &node });
	for (int i = 0; i < 3; i++)
		add_pod_object(planned_pod(planned[i] + 8, NULL));
	add_inflight_claim("default-abcde", planned, 3, "ip-10-0-0-9", &ready);
	/* Inside the grace period the unbound planned pods still hold the Node. */
	fo.now_ms = 1000 + STATE_NOMINATION_GRACE_MS - 1;
	cr_assert_eq(cluster_from_state(&store, pending, 1, &fo, &cluster, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sched_solve(cluster, &result), 0);
	cr_assert_null(node_of(0), "3 of 3.92 cpus are spoken for");
	sched_result_free(result);
	cluster_free(cluster);
	/* Past it they are pending again (the watcher announces them): the Node is free. */
	fo.now_ms = 1000 + STATE_NOMINATION_GRACE_MS + 1;
	cr_assert_eq(cluster_from_state(&store, pending, 1, &fo, &cluster, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sched_solve(cluster, &result), 0);
	cr_assert_str_eq(node_of(0) ?: "(none)", "ip-10-0-0-9");
}

/* ---- kubelet settings ---- */

Test(from_state, an_inflight_nodeclaim_holds_what_its_nodepools_kubelet_allows)
{
	struct proto_nodepool np = { .name = "default", .uid = "np", .kubelet = { .max_pods = 2 } };
	struct proto_pod p[3] = { pod("default", "a", NULL), pod("default", "b", NULL), pod("default", "c", NULL) };
	const struct proto_pod *pending[3] = { &p[0], &p[1], &p[2] };

	add((struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &np });
	add_inflight_claim("default-abcde", NULL, 0, NULL, NULL);
	solve(pending, 3);
	cr_assert_eq(pods_on_existing(), 2, "maxPods 2 on the in-flight m5.xlarge (58 by the ENI limit)");
	cr_assert_eq(result->n_claims, 1);
	cr_assert_eq(result->claims[0].n_pods, 1);
}

/* Karpenter's KnownEphemeralTaints, and the launcher's hold: a joining Node
 * takes pods in the model (no launch for them), any other taint does not. */
Test(from_state, a_node_joining_under_ephemeral_taints_still_takes_pods_and_a_real_taint_does_not)
{
	static struct proto_kv host_a[] = { { HOSTNAME, "joining" } }, host_b[] = { { HOSTNAME, "tainted" } };
	static struct proto_taint joining[] = {
		{ .key = "karpenter.sh/unregistered", .effect = PROTO_EFFECT_NO_EXECUTE },
		{ .key = "karpenter.sh/unregistered", .effect = PROTO_EFFECT_NO_SCHEDULE },
		{ .key = "node.kubernetes.io/not-ready", .effect = PROTO_EFFECT_NO_SCHEDULE },
		{ .key = "node.cloudprovider.kubernetes.io/uninitialized", .value = "true",
		  .effect = PROTO_EFFECT_NO_SCHEDULE },
	};
	static struct proto_taint other[] = {
		{ .key = "karpenter.sh/unregistered", .effect = PROTO_EFFECT_PREFER_NO_SCHEDULE },
		{ .key = "dedicated", .value = "x", .effect = PROTO_EFFECT_NO_SCHEDULE },
	};
	struct proto_node a = { .name = "joining", .uid = "a", .labels = host_a, .n_labels = 1,
				.allocatable = node_size, .n_allocatable = 3, .taints = joining, .n_taints = 4 };
	struct proto_node b = { .name = "tainted", .uid = "b", .labels = host_b, .n_labels = 1,
				.allocatable = node_size, .n_allocatable = 3, .taints = other, .n_taints = 2 };
	struct proto_pod p = pod("default", "p", NULL);
	const struct proto_pod *pending[] = { &p };

	add((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &a });
	add_nodepool(NULL, 0);
	solve(pending, 1);
	cr_assert_str_eq(node_of(0), "joining");
	sched_result_free(result);
	cluster_free(cluster);
	result = NULL;
	cluster = NULL;
	state_store_done(&store);
	state_store_init(&store);
	add((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &b });
	add_nodepool(NULL, 0);
	solve(pending, 1);
	cr_assert_null(node_of(0), "an untolerated NoSchedule taint keeps the pod off");
	cr_assert(from_state_taint_is_ephemeral(&joining[0]) && from_state_taint_is_ephemeral(&joining[3]));
	cr_assert_not(from_state_taint_is_ephemeral(&other[0]));
	cr_assert_not(from_state_taint_is_ephemeral(&(struct proto_taint){
		.key = "node.cloudprovider.kubernetes.io/uninitialized", .value = "false",
		.effect = PROTO_EFFECT_NO_SCHEDULE }));
}

/* Karpenter's StateNode.Taints(): a Node's startup taints (its NodeClaim's
 * spec.startupTaints) are not held against pods while it initializes, so
 * the pods waiting for the taint to go are not planned another node; the
 * launcher's bind check counts them (startup_taints_block), as the
 * kube-scheduler does. Another taint on the same Node still refuses. */
Test(from_state, a_nodes_startup_taints_take_pods_in_the_plan_but_refuse_them_at_bind)
{
	static struct proto_kv host[] = { { HOSTNAME, "booting" } };
	static struct proto_taint startup[] = {
		{ .key = "example.com/init", .effect = PROTO_EFFECT_NO_SCHEDULE },
	};
	static struct proto_taint on_node[] = {
		{ .key = "example.com/init", .effect = PROTO_EFFECT_NO_SCHEDULE },
		{ .key = "dedicated", .value = "x", .effect = PROTO_EFFECT_NO_SCHEDULE },
	};
	struct proto_nodeclaim nc = { .name = "init-abcde", .uid = "nc", .nodepool = "default",
				      .node_name = "booting", .startup_taints = startup,
				      .n_startup_taints = 1 };
	struct proto_node n = { .name = "booting", .uid = "n", .labels = host, .n_labels = 1,
				.allocatable = node_size, .n_allocatable = 3, .taints = on_node,
				.n_taints = 1, .nodeclaim = "init-abcde" };
	struct proto_pod p = pod("default", "p", NULL);
	const struct proto_pod *pending[] = { &p };
	struct from_state_options block = { .region = "us-west-2", .startup_taints_block = true };
	char err[512];

	add((struct proto_object){ .kind = PROTO_OBJECT_NODECLAIM, .nodeclaim = &nc });
	add((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &n });
	add_nodepool(NULL, 0);
	solve(pending, 1);
	cr_assert_str_eq(node_of(0), "booting", "the startup taint kept the pod off in the plan");

	sched_result_free(result);
	cluster_free(cluster);
	result = NULL;
	cluster = NULL;
	cr_assert_eq(cluster_from_state(&store, pending, 1, &block, &cluster, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sched_solve(cluster, &result), 0);
	cr_assert_null(node_of(0), "counted as the kube-scheduler counts it, the startup taint refuses");

	sched_result_free(result);
	cluster_free(cluster);
	result = NULL;
	cluster = NULL;
	n.n_taints = 2;
	add((struct proto_object){ .kind = PROTO_OBJECT_NODE, .node = &n });
	solve(pending, 1);
	cr_assert_null(node_of(0), "a taint that is not a startup taint still refuses");
}

/* issue 22: the store keeps one label and one toleration array for the
 * pods that repeat them; so does the model (one copy, not one per pod),
 * and a pod whose arrays differ still has its own. */
Test(from_state, pods_repeating_labels_and_tolerations_share_them_in_the_model)
{
	static struct proto_kv web[] = { { "app", "web" } }, db[] = { { "app", "db" } };
	static struct proto_toleration tol[] = { { .key = "dedicated", .op = PROTO_TOLERATION_EXISTS } };
	const char *names[] = { "web-1", "web-2", "web-3", "db-1" };
	const struct pod *p[4] = { 0 };

	add_node("n1");
	for (int i = 0; i < 4; i++) {
		struct proto_pod pp = pod("default", names[i], i < 3 ? web : db);
		pp.node_name = "n1";
		pp.phase = PROTO_PHASE_RUNNING;
		fx_template(&pp)->tolerations = tol;
		fx_template(&pp)->n_tolerations = i < 3 ? 1 : 0;
		add((struct proto_object){ .kind = PROTO_OBJECT_POD, .pod = &pp });
	}
	solve(NULL, 0);
	cr_assert_eq(cluster->n_pods, 4);
	for (uint32_t i = 0; i < cluster->n_pods; i++)
		for (int j = 0; j < 4; j++)
			if (cluster->pods[i].name == strtab_lookup(&cluster->st, names[j]))
				p[j] = &cluster->pods[i];
	for (int j = 0; j < 4; j++)
		cr_assert_not_null(p[j], "%s is in the model", names[j]);
	for (int j = 1; j < 3; j++) {
		cr_assert_eq(p[j]->labels, p[0]->labels, "%s shares web-1's labels", names[j]);
		cr_assert_eq(p[j]->tols, p[0]->tols, "%s shares web-1's tolerations", names[j]);
	}
	cr_assert_eq(p[0]->n_labels, 1);
	cr_assert_eq(p[0]->n_tols, 1);
	cr_assert_eq(p[0]->labels[0].value, strtab_lookup(&cluster->st, "web"));
	cr_assert_neq(p[3]->labels, p[0]->labels, "db-1 has labels of its own");
	cr_assert_eq(p[3]->labels[0].value, strtab_lookup(&cluster->st, "db"));
	cr_assert_eq(p[3]->n_tols, 0);
}
