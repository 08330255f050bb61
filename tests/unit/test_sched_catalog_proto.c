/*
 * The catalog in its wire form (model/catalog-proto.h): what the
 * launcher publishes loads back into the very catalog the shipped table
 * gives, a catalog message decides what the solver picks, and a message
 * that would not load is refused with a reason.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/catalog-proto.h"
#include "model/from-state.h"
#include "model/plan.h"

static const char *const zones[] = { "us-west-2a", "us-west-2b", "us-west-2c" };

struct shipped {
	struct strtab st;
	struct catalog cat;
	struct arena arena;
	struct proto_catalog msg;
};

/* The shipped table as the launcher publishes it before its first refresh. */
static void shipped_load(struct shipped *s)
{
	char path[4096];

	memset(s, 0, sizeof(*s));
	cr_assert_eq(strtab_init(&s->st), 0);
	cr_assert_eq(wellknown_intern(&s->st), 0);
	cr_assert_eq(catalog_init(&s->cat, &s->st), 0);
	catalog_default_path(path, sizeof(path));
	cr_assert_eq(catalog_load_tsv(&s->cat, path, "us-west-2", zones, 3), 0);
	cr_assert_eq(catalog_to_proto(&s->cat, &s->arena, true, &s->msg.instance_types,
				      &s->msg.n_instance_types), 0);
	s->msg.generation = 1;
	s->msg.region = "us-west-2";
}

static void shipped_done(struct shipped *s)
{
	arena_done(&s->arena);
	catalog_done(&s->cat);
	strtab_done(&s->st);
}

static const struct instance_type *find(const struct catalog *cat, const char *name)
{
	uint32_t id = strtab_lookup(cat->st, name);

	for (uint32_t t = 0; id != STR_NONE && t < cat->n_types; t++)
		if (cat->types[t].name == id)
			return &cat->types[t];
	return NULL;
}

static void assert_same_type(const struct catalog *a, const struct instance_type *x,
			     const struct catalog *b, const struct instance_type *y)
{
	const char *name = strtab_str(a->st, x->name);

	cr_assert_eq(x->n_labels, y->n_labels, "%s: labels", name);
	for (uint32_t l = 0; l < x->n_labels; l++) {
		const char *key = strtab_str(a->st, x->labels[l].key);
		uint32_t key_b = strtab_lookup(b->st, key);
		uint32_t v = labels_get(y->labels, y->n_labels, key_b);
		cr_assert_neq(v, STR_NONE, "%s: label %s lost", name, key);
		cr_assert_str_eq(strtab_str(b->st, v), strtab_str(a->st, x->labels[l].value),
				 "%s: label %s", name, key);
	}
	cr_assert_eq(x->metal, y->metal, "%s: bare metal", name);
	for (uint32_t r = 0; r < a->n_resources; r++) {
		int slot = catalog_resource((struct catalog *)b,
					    strtab_str(a->st, a->resource_names[r]), false);
		int64_t cap = slot >= 0 ? y->capacity.v[slot] : 0;
		int64_t alloc = slot >= 0 ? y->allocatable.v[slot] : 0;
		cr_assert_eq(cap, x->capacity.v[r], "%s: capacity of resource %u", name, r);
		cr_assert_eq(alloc, x->allocatable.v[r], "%s: allocatable of resource %u", name, r);
	}
	cr_assert_eq(x->n_offerings, y->n_offerings, "%s: offerings", name);
	for (uint32_t o = 0; o < x->n_offerings; o++) {
		const struct offering *p = &x->offerings[o], *q = &y->offerings[o];
		cr_assert_str_eq(strtab_str(a->st, a->zones[p->zone]), strtab_str(b->st, b->zones[q->zone]));
		cr_assert_eq(p->capacity_type, q->capacity_type);
		cr_assert_eq(p->available, q->available);
		cr_assert_eq(p->price, q->price, "%s: price", name);
	}
}

Test(catalog_proto, every_offered_type_loads_back_as_the_shipped_table_gave_it)
{
	struct shipped s;
	struct strtab st;
	struct catalog back;
	char err[256];
	uint32_t offered = 0;

	shipped_load(&s);
	for (uint32_t t = 0; t < s.cat.n_types; t++)
		offered += s.cat.types[t].n_offerings > 0;
	cr_assert_eq(s.msg.n_instance_types, offered, "types without offerings are not published");
	cr_assert_gt(offered, 1000);
	cr_assert_eq(strtab_init(&st), 0);
	cr_assert_eq(wellknown_intern(&st), 0);
	cr_assert_eq(catalog_init(&back, &st), 0);
	cr_assert_eq(catalog_load_proto(&back, &s.msg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(back.n_types, offered);
	for (uint32_t t = 0; t < s.cat.n_types; t++) {
		const struct instance_type *x = &s.cat.types[t];
		const struct instance_type *y = find(&back, strtab_str(&s.st, x->name));
		if (!x->n_offerings) {
			cr_assert_null(y);
			continue;
		}
		cr_assert_not_null(y, "%s missing", strtab_str(&s.st, x->name));
		assert_same_type(&s.cat, x, &back, y);
	}
	cr_assert_eq(catalog_finalize(&back), 0);
	catalog_done(&back);
	strtab_done(&st);
	shipped_done(&s);
}

static void add(struct state_store *s, struct proto_object o)
{
	cr_assert_geq(state_store_apply(s, PROTO_DELTA_ADD, &o, s->seq + 1), 0);
}

/* Instance types the solver offers for one 500m pod, cheapest first. */
static void plan_one_pod_reqs(const struct state_store *s, const struct proto_catalog *catalog,
			      char names[][64], uint32_t *n, char reqs[1024])
{
	struct proto_resource req[] = { { "cpu", 500 }, { "memory", 512LL << 20 } };
	struct proto_pod_template t = { .requests = req, .n_requests = 2 };
	struct proto_pod p = { .ns = "default", .name = "p0", .uid = "p0", .template = &t,
			       .n_template = 1, .scheduled = PROTO_COND_FALSE,
			       .scheduled_reason = "Unschedulable" };
	const struct proto_pod *pending[1] = { &p };
	struct from_state_options fo = { .region = "us-west-2", .catalog = catalog };
	struct plan_context ctx = { 0 };
	struct proto_launch_plan plan;
	struct sched_result *res;
	struct arena a = { 0 };
	struct cluster *c;
	char err[512];

	cr_assert_eq(cluster_from_state(s, pending, 1, &fo, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sched_solve(c, &res), 0);
	cr_assert_eq(res->n_claims, 1);
	cr_assert_eq(plan_build(&a, c, res, &ctx, &plan), 0);
	*n = plan.nodeclaims[0].n_instance_types;
	for (uint32_t i = 0; i < *n; i++)
		snprintf(names[i], 64, "%s", plan.nodeclaims[0].instance_types[i].name);
	if (reqs) {
		const struct proto_planned_nodeclaim *p0 = &plan.nodeclaims[0];

		reqs[0] = '\0';
		for (uint32_t i = 0; i < p0->n_requirements; i++) {
			const struct proto_requirement *q = &p0->requirements[i];

			snprintf(reqs + strlen(reqs), 1024 - strlen(reqs), "%s%s %d", i ? "; " : "", q->key,
				 (int)q->op);
			for (uint32_t v = 0; v < q->n_values; v++)
				snprintf(reqs + strlen(reqs), 1024 - strlen(reqs), " %s", q->values[v]);
		}
	}
	arena_done(&a);
	sched_result_free(res);
	cluster_free(c);
}

static void plan_one_pod(const struct state_store *s, const struct proto_catalog *catalog,
			 char names[][64], uint32_t *n)
{
	plan_one_pod_reqs(s, catalog, names, n, NULL);
}

/* A NodePool bounding instance-cpu both ways and excluding a value, and
 * bounding memory both ways: the plan carries every bound and the
 * exclusion (the launcher re-checks that a plan is within its NodePool, and
 * a plan that lost the NotIn beside Gt/Lt was refused every time), five
 * requirements out of two (the plan once had room for one extra). */
Test(catalog_proto, a_plan_keeps_gt_lt_and_notin_on_one_key)
{
	static char *gt[] = { "1" }, *lt[] = { "33" }, *not4[] = { "4" }, *mgt[] = { "1024" },
		    *mlt[] = { "262144" };
	struct proto_requirement r[] = {
		{ .key = "karpenter.k8s.aws/instance-cpu", .op = PROTO_OP_GT, .values = gt, .n_values = 1 },
		{ .key = "karpenter.k8s.aws/instance-cpu", .op = PROTO_OP_LT, .values = lt, .n_values = 1 },
		{ .key = "karpenter.k8s.aws/instance-cpu", .op = PROTO_OP_NOT_IN, .values = not4, .n_values = 1 },
		{ .key = "karpenter.k8s.aws/instance-memory", .op = PROTO_OP_GT, .values = mgt, .n_values = 1 },
		{ .key = "karpenter.k8s.aws/instance-memory", .op = PROTO_OP_LT, .values = mlt, .n_values = 1 },
	};
	struct proto_nodepool pool = { .name = "default", .uid = "u1", .requirements = r, .n_requirements = 5 };
	char names[PROTO_MAX_CANDIDATES][64], reqs[1024];
	struct state_store st;
	uint32_t n;
	char want[256];

	state_store_init(&st);
	add(&st, (struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &pool });
	plan_one_pod_reqs(&st, NULL, names, &n, reqs);
	cr_assert_gt(n, 0);
	snprintf(want, sizeof(want), "karpenter.k8s.aws/instance-cpu %d 1", PROTO_OP_GT);
	cr_assert(strstr(reqs, want), "%s", reqs);
	snprintf(want, sizeof(want), "karpenter.k8s.aws/instance-cpu %d 33", PROTO_OP_LT);
	cr_assert(strstr(reqs, want), "%s", reqs);
	snprintf(want, sizeof(want), "karpenter.k8s.aws/instance-cpu %d 4", PROTO_OP_NOT_IN);
	cr_assert(strstr(reqs, want), "%s", reqs);
	snprintf(want, sizeof(want), "karpenter.k8s.aws/instance-memory %d 1024", PROTO_OP_GT);
	cr_assert(strstr(reqs, want), "%s", reqs);
	snprintf(want, sizeof(want), "karpenter.k8s.aws/instance-memory %d 262144", PROTO_OP_LT);
	cr_assert(strstr(reqs, want), "%s", reqs);
	state_store_done(&st);
}

Test(catalog_proto, a_catalog_message_decides_the_cheapest_choice)
{
	struct proto_nodepool pool = { .name = "default", .uid = "u1" };
	char shipped[PROTO_MAX_CANDIDATES][64], published[PROTO_MAX_CANDIDATES][64],
		repriced[PROTO_MAX_CANDIDATES][64];
	uint32_t n_shipped, n_published, n_repriced;
	struct state_store st;
	struct shipped s;
	const char *pick;

	state_store_init(&st);
	add(&st, (struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &pool });
	shipped_load(&s);
	plan_one_pod(&st, NULL, shipped, &n_shipped);
	plan_one_pod(&st, &s.msg, published, &n_published);
	cr_assert_eq(n_published, n_shipped);
	for (uint32_t i = 0; i < n_shipped; i++)
		cr_assert_str_eq(published[i], shipped[i], "the published table plans as the shipped one");
	cr_assert_gt(n_shipped, 5);
	/* The launcher saw the fifth-cheapest candidate become the cheapest. */
	pick = shipped[4];
	for (uint32_t t = 0; t < s.msg.n_instance_types; t++)
		if (!strcmp(s.msg.instance_types[t].name, pick))
			for (uint32_t o = 0; o < s.msg.instance_types[t].n_offerings; o++)
				s.msg.instance_types[t].offerings[o].price = 0.0001;
	s.msg.generation = 2;
	plan_one_pod(&st, &s.msg, repriced, &n_repriced);
	cr_assert_str_eq(repriced[0], pick, "planned %s first, not the repriced %s", repriced[0], pick);
	cr_assert_str_neq(shipped[0], pick);
	shipped_done(&s);
	state_store_done(&st);
}

Test(catalog_proto, a_type_the_catalog_omits_is_never_planned)
{
	struct proto_nodepool pool = { .name = "default", .uid = "u1" };
	char before[PROTO_MAX_CANDIDATES][64], after[PROTO_MAX_CANDIDATES][64];
	uint32_t n_before, n_after, k = 0;
	struct state_store st;
	struct shipped s;

	state_store_init(&st);
	add(&st, (struct proto_object){ .kind = PROTO_OBJECT_NODEPOOL, .nodepool = &pool });
	shipped_load(&s);
	plan_one_pod(&st, &s.msg, before, &n_before);
	/* The region does not offer the cheapest type: the launcher dropped it. */
	for (uint32_t t = 0; t < s.msg.n_instance_types; t++)
		if (strcmp(s.msg.instance_types[t].name, before[0]))
			s.msg.instance_types[k++] = s.msg.instance_types[t];
	cr_assert_eq(k, s.msg.n_instance_types - 1);
	s.msg.n_instance_types = k;
	plan_one_pod(&st, &s.msg, after, &n_after);
	for (uint32_t i = 0; i < n_after; i++)
		cr_assert_str_neq(after[i], before[0]);
	cr_assert_str_eq(after[0], before[1]);
	shipped_done(&s);
	state_store_done(&st);
}

Test(catalog_proto, a_message_that_would_not_load_is_refused_with_the_reason)
{
	struct proto_resource res[] = { { "cpu", 2000 }, { "memory", 4LL << 30 }, { "pods", 29 } };
	struct proto_resource no_cpu[] = { { "memory", 4LL << 30 } };
	struct proto_kv labels[] = { { "kubernetes.io/arch", "amd64" },
				     { "karpenter.k8s.aws/instance-size", "large" } };
	struct proto_offering offs[] = {
		{ .zone = "us-west-2a", .capacity_type = PROTO_CAPACITY_ON_DEMAND, .price = 0.1,
		  .available = true },
		{ .zone = "us-west-2a", .capacity_type = PROTO_CAPACITY_SPOT, .price = 0.03,
		  .available = true },
	};
	struct proto_instance_type types[2] = {
		{ .name = "m5.large", .labels = labels, .n_labels = 2, .capacity = res, .n_capacity = 3,
		  .allocatable = res, .n_allocatable = 3, .offerings = offs, .n_offerings = 2 },
		{ .name = "c5.large", .labels = labels, .n_labels = 2, .capacity = res, .n_capacity = 3,
		  .allocatable = res, .n_allocatable = 3, .offerings = offs, .n_offerings = 2 },
	};
	struct proto_catalog m = { .generation = 3, .region = "us-west-2", .instance_types = types,
				   .n_instance_types = 2 };
	char err[256];

	cr_assert_eq(catalog_proto_check(&m, err, sizeof(err)), 0, "%s", err);
	types[1].name = "m5.large";
	cr_assert_eq(catalog_proto_check(&m, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "instance type m5.large: listed twice");
	types[1].name = "c5.large";
	types[1].allocatable = no_cpu;
	types[1].n_allocatable = 1;
	cr_assert_eq(catalog_proto_check(&m, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "instance type c5.large: no cpu or no memory");
	types[1].allocatable = res;
	types[1].n_allocatable = 3;
	offs[1].price = NAN;
	cr_assert_eq(catalog_proto_check(&m, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "non-finite price"), "%s", err);
	offs[1].price = 0.03;
	labels[1].key = "kubernetes.io/arch";
	cr_assert_eq(catalog_proto_check(&m, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "label key is given twice"), "%s", err);
	labels[1].key = "karpenter.k8s.aws/instance-size";
	m.n_instance_types = 0;
	cr_assert_eq(catalog_proto_check(&m, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "the catalog has no instance types");
}
