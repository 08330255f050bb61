/*
 * The launcher's live catalog against kanna-sim's AWS side over real HTTP:
 * the refreshed catalog is the sim's region (its zones, its spot prices,
 * none of the types it does not offer) with every label, capacity and
 * allocatable the scheduler's shipped-table model gives; a refresh that
 * fails keeps the previous catalog; the published message fits the frame
 * limits and survives encoding.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/aws.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "launcher/catalog.h"
#include "model/catalog-proto.h"
#include "sim/aws.h"

#define TEST_AKID "AKIACATALOG000000001"
#define TEST_SECRET "catalogSecretKey000000000000000000000000"
#define SHIPPED KANNA_SRCDIR "/data/instance-types.tsv"
#define GUARD_USEC (30ULL * 1000 * 1000)
/* The sim prints spot prices with 6 decimals. */
#define PRICE_EPSILON 1e-6

static struct sim_aws *sim;
static struct loop *loop;
static struct aws_client *client;
static struct metrics_registry *metrics;
static struct launcher_catalog *cat;
static unsigned changes;
static char sim_tsv[] = "/tmp/kanna-catalog-test-XXXXXX";

static void on_changed(void *userdata)
{
	(void)userdata;
	changes++;
}

static void start_sim(const char *catalog_path)
{
	struct aws_credentials creds = { .access_key_id = TEST_AKID, .secret_access_key = TEST_SECRET,
					 .source = "test" };
	struct aws_client_options aopts = { .region = "us-west-2" };
	struct sim_aws_config cfg;
	char url[64];

	sim_aws_config_init(&cfg);
	cfg.access_key_id = TEST_AKID;
	cfg.secret_access_key = TEST_SECRET;
	cfg.catalog_path = catalog_path;
	cfg.cluster_name = "demo";
	cr_assert_geq(sim_aws_new(&sim, &cfg), 0);
	cr_assert_geq(sim_aws_start(sim, 0), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)sim_aws_port(sim));
	setenv("AWS_ENDPOINT_URL", url, 1);
	aws_retry_policy_default(&aopts.retry);
	aopts.retry.max_attempts = 1; /* a fault fails the refresh at once */
	cr_assert_eq(loop_new(&loop, "test-launcher-catalog"), 0);
	cr_assert_eq(aws_client_new(loop, &aopts, &creds, &client), 0);
	cr_assert_eq(metrics_registry_new(&metrics), 0);
}

static void new_catalog(struct aws_client *aws, struct metrics_registry *m)
{
	struct launcher_catalog_options o = { .region = "us-west-2", .shipped_path = SHIPPED,
					      .changed = on_changed };

	changes = 0;
	cr_assert_eq(launcher_catalog_new(loop, aws, m, &o, &cat), 0);
}

static void setup(void)
{
	start_sim(SHIPPED);
	new_catalog(client, metrics);
}

static void teardown(void)
{
	launcher_catalog_free(cat);
	aws_client_free(client);
	metrics_registry_free(metrics);
	loop_free(loop);
	sim = sim_aws_free(sim);
	if (strcmp(sim_tsv, "/tmp/kanna-catalog-test-XXXXXX"))
		unlink(sim_tsv);
}

TestSuite(launcher_catalog, .init = setup, .fini = teardown, .timeout = 120);

/* Turns the loop until the refresh under way (or about to start) is over. */
static struct launcher_catalog_status spin(unsigned want_changes)
{
	struct launcher_catalog_status st;

	for (unsigned i = 0; i < GUARD_USEC / 10000; i++) {
		cr_assert_geq(sd_event_run(loop_event(loop), 10000), 0);
		launcher_catalog_status(cat, &st);
		if (!st.refreshing && changes >= want_changes)
			return st;
	}
	cr_assert_fail("the refresh did not finish");
	return st;
}

static const char *label(const struct proto_instance_type *t, const char *key)
{
	for (uint32_t i = 0; i < t->n_labels; i++)
		if (!strcmp(t->labels[i].key, key))
			return t->labels[i].value;
	return NULL;
}

static int64_t resource(const struct proto_resource *r, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(r[i].name, name))
			return r[i].value;
	return 0;
}

static const struct proto_offering *offering(const struct proto_instance_type *t, const char *zone,
					     uint8_t ct)
{
	for (uint32_t o = 0; o < t->n_offerings; o++)
		if (!strcmp(t->offerings[o].zone, zone) && t->offerings[o].capacity_type == ct)
			return &t->offerings[o];
	return NULL;
}

/* What the scheduler makes of the shipped table for us-west-2 a/b/c. */
struct shipped {
	struct strtab st;
	struct catalog cat;
	struct arena arena;
	struct proto_instance_type *types;
	uint32_t n;
};

static void shipped_load(struct shipped *s)
{
	static const char *const zones[] = { "us-west-2a", "us-west-2b", "us-west-2c" };

	memset(s, 0, sizeof(*s));
	cr_assert_eq(strtab_init(&s->st), 0);
	cr_assert_eq(wellknown_intern(&s->st), 0);
	cr_assert_eq(catalog_init(&s->cat, &s->st), 0);
	cr_assert_eq(catalog_load_tsv(&s->cat, SHIPPED, "us-west-2", zones, 3), 0);
	cr_assert_eq(catalog_to_proto(&s->cat, &s->arena, true, &s->types, &s->n), 0);
}

static void shipped_done(struct shipped *s)
{
	arena_done(&s->arena);
	catalog_done(&s->cat);
	strtab_done(&s->st);
}

static void assert_as_shipped(const struct proto_instance_type *t, const struct proto_instance_type *s)
{
	cr_assert_eq(t->n_labels, s->n_labels, "%s: %u labels from EC2, %u shipped", t->name,
		     t->n_labels, s->n_labels);
	for (uint32_t i = 0; i < s->n_labels; i++) {
		const char *v = label(t, s->labels[i].key);
		cr_assert_not_null(v, "%s: no %s from EC2", t->name, s->labels[i].key);
		cr_assert_str_eq(v, s->labels[i].value, "%s: %s", t->name, s->labels[i].key);
	}
	cr_assert_eq(t->n_capacity, s->n_capacity, "%s: capacity", t->name);
	cr_assert_eq(t->n_allocatable, s->n_allocatable, "%s: allocatable", t->name);
	for (uint32_t i = 0; i < s->n_capacity; i++)
		cr_assert_eq(resource(t->capacity, t->n_capacity, s->capacity[i].name), s->capacity[i].value,
			     "%s: capacity %s", t->name, s->capacity[i].name);
	for (uint32_t i = 0; i < s->n_allocatable; i++)
		cr_assert_eq(resource(t->allocatable, t->n_allocatable, s->allocatable[i].name),
			     s->allocatable[i].value, "%s: allocatable %s", t->name, s->allocatable[i].name);
	cr_assert_eq(t->n_offerings, s->n_offerings, "%s: offerings", t->name);
	for (uint32_t o = 0; o < s->n_offerings; o++) {
		const struct proto_offering *x = offering(t, s->offerings[o].zone, s->offerings[o].capacity_type);
		cr_assert_not_null(x, "%s: no offering in %s", t->name, s->offerings[o].zone);
		cr_assert(fabs(x->price - s->offerings[o].price) < PRICE_EPSILON, "%s: %f vs %f", t->name,
			  x->price, s->offerings[o].price);
		cr_assert(x->available);
	}
}

Test(launcher_catalog, the_refreshed_catalog_is_the_sim_region_with_the_shipped_model)
{
	static const char *const not_offered[] = { "p5e.48xlarge", "hpc7a.96xlarge", "x8aedz.large",
						    "dl2q.24xlarge" };
	const struct proto_instance_type *m5;
	struct launcher_catalog_status st;
	struct shipped s;
	uint64_t shipped_generation = launcher_catalog_generation(cat);
	char *text;
	size_t len;

	m5 = launcher_catalog_find(cat, "m5.large");
	cr_assert_not_null(m5, "the shipped table serves before the first refresh");
	cr_assert_str_eq(label(m5, "kubernetes.io/arch"), "amd64");
	cr_assert_gt(resource(m5->allocatable, m5->n_allocatable, "cpu"), 0);
	st = spin(2);
	cr_assert_eq(st.last_result, 0, "%s", st.last_error);
	cr_assert(st.refreshed);
	cr_assert_eq(changes, 2, "published once for the shipped table, once refreshed");
	cr_assert_gt(launcher_catalog_generation(cat), shipped_generation);
	cr_log_info("full refresh against the sim: %.1f ms for %u types", st.last_types_usec / 1000.0,
		    st.n_types);

	shipped_load(&s);
	cr_assert_eq(st.n_types, s.n, "every type the sim offers, and only those");
	for (size_t i = 0; i < sizeof(not_offered) / sizeof(*not_offered); i++)
		cr_assert_null(launcher_catalog_find(cat, not_offered[i]), "%s is not offered", not_offered[i]);
	for (uint32_t i = 0; i < s.n; i++) {
		const struct proto_instance_type *t = launcher_catalog_find(cat, s.types[i].name);
		cr_assert_not_null(t, "%s missing", s.types[i].name);
		assert_as_shipped(t, &s.types[i]);
		cr_assert_eq(t->n_offerings, 6, "%s: 3 zones x spot and on-demand", t->name);
	}
	shipped_done(&s);

	m5 = launcher_catalog_find(cat, "m5.large");
	cr_assert_eq(resource(m5->capacity, m5->n_capacity, "pods"), 29, "ENI-limited: 3 x (10 - 1) + 2");
	cr_assert_str_eq(label(launcher_catalog_find(cat, "u-6tb1.56xlarge"), "karpenter.k8s.aws/instance-category"), "u");
	cr_assert_eq(resource(launcher_catalog_find(cat, "g4dn.xlarge")->capacity,
			      launcher_catalog_find(cat, "g4dn.xlarge")->n_capacity, "nvidia.com/gpu"), 1);
	cr_assert_eq(metrics_registry_render(metrics, &text, &len), 0);
	cr_assert(strstr(text, "kanna_catalog_refresh_total{kind=\"types\",result=\"success\"} 1"), "%s", text);
	cr_assert(strstr(text, "kanna_catalog_offerings{capacity_type=\"spot\"}"), "%s", text);
	free(text);
}

Test(launcher_catalog, a_spot_price_refresh_publishes_a_new_generation_of_the_same_types)
{
	struct launcher_catalog_status full, spot;

	full = spin(2);
	cr_assert_eq(full.last_result, 0, "%s", full.last_error);
	cr_assert_eq(launcher_catalog_refresh(cat, false), 0);
	cr_assert_eq(launcher_catalog_refresh(cat, false), -EBUSY, "one refresh at a time");
	spot = spin(4);
	cr_assert_eq(spot.last_result, 0, "%s", spot.last_error);
	cr_assert_eq(changes, 4, "the refresh asked for while one ran ran next");
	cr_assert_gt(spot.generation, full.generation);
	cr_assert_eq(spot.n_types, full.n_types);
	cr_assert_eq(spot.last_types_usec, full.last_types_usec, "types were not described again");
	cr_assert_gt(spot.last_spot_usec, 0);
	cr_log_info("spot-price refresh against the sim: %.1f ms", spot.last_spot_usec / 1000.0);
}

Test(launcher_catalog, the_published_message_fits_the_frame_and_survives_encoding)
{
	struct proto_msg m;
	const struct proto_msg *back;
	struct proto_decoder *d = proto_decoder_new();
	struct proto_error err;
	msgpack_sbuffer buf;
	char why[256];

	spin(2);
	proto_msg_init(&m, PROTO_MSG_CATALOG, PROTO_PROCESS_LAUNCHER, 0, 0);
	launcher_catalog_msg(cat, &m);
	cr_assert_gt(m.body.catalog.n_instance_types, 1000);
	cr_assert_leq(m.body.catalog.n_instance_types, PROTO_MAX_CATALOG_TYPES);
	msgpack_sbuffer_init(&buf);
	cr_assert_eq(proto_encode(&m, &buf, &err), 0, "%s", err.text);
	cr_log_info("catalog message: %u types, %zu bytes (limit %u)", m.body.catalog.n_instance_types,
		    buf.size, PROTO_MAX_FRAME_BYTES);
	cr_assert_lt(buf.size, PROTO_MAX_FRAME_BYTES / 4, "room for regions with more types");
	cr_assert_eq(proto_decode(d, buf.data, buf.size, &back, &err), 0, "%s", err.text);
	cr_assert(proto_msg_equal(&m, back));
	cr_assert_eq(catalog_proto_check(&back->body.catalog, why, sizeof(why)), 0, "%s", why);
	msgpack_sbuffer_destroy(&buf);
	proto_decoder_free(d);
}

Test(launcher_catalog, a_failed_refresh_keeps_the_previous_catalog)
{
	const struct proto_instance_type *before;
	struct launcher_catalog_status st;
	uint64_t generation;
	unsigned n_types;
	double price;
	char err[256];
	char *text;
	size_t len;

	spin(2);
	generation = launcher_catalog_generation(cat);
	before = launcher_catalog_find(cat, "m5.large");
	price = offering(before, "us-west-2b", PROTO_CAPACITY_SPOT)->price;
	launcher_catalog_status(cat, &st);
	n_types = st.n_types;

	cr_assert_eq(sim_aws_set_faults(sim, "{\"errorRate\": 1}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(launcher_catalog_refresh(cat, false), 0);
	st = spin(2);
	cr_assert_lt(st.last_result, 0);
	cr_assert(strstr(st.last_error, "DescribeSpotPriceHistory") && strstr(st.last_error, "InternalError"),
		  "%s", st.last_error);
	cr_assert_eq(st.generation, generation);
	cr_assert_eq(st.n_types, n_types);
	cr_assert_eq(launcher_catalog_find(cat, "m5.large"), before, "the catalog was not touched");
	cr_assert_eq(offering(before, "us-west-2b", PROTO_CAPACITY_SPOT)->price, price);

	/* Throttled half-way through the types' pages. */
	cr_assert_eq(sim_aws_set_faults(sim, "{\"throttlePerSecond\": 3}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(launcher_catalog_refresh(cat, true), 0);
	st = spin(2);
	cr_assert_lt(st.last_result, 0);
	cr_assert(strstr(st.last_error, "DescribeInstanceTypes") && strstr(st.last_error, "RequestLimitExceeded"),
		  "%s", st.last_error);
	cr_assert_eq(st.generation, generation);
	cr_assert_eq(launcher_catalog_find(cat, "m5.large"), before);
	cr_assert_eq(changes, 2, "nothing was published");

	cr_assert_eq(sim_aws_set_faults(sim, "{}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(launcher_catalog_refresh(cat, false), 0, "after a failed types refresh the next "
		     "spot refresh redoes the types");
	st = spin(3);
	cr_assert_eq(st.last_result, 0, "%s", st.last_error);
	cr_assert_gt(st.generation, generation);
	cr_assert_eq(st.n_types, n_types);
	cr_assert_eq(metrics_registry_render(metrics, &text, &len), 0);
	cr_assert(strstr(text, "kanna_catalog_refresh_total{kind=\"spot\",result=\"error\"} 1"), "%s", text);
	cr_assert(strstr(text, "kanna_catalog_refresh_total{kind=\"types\",result=\"error\"} 1"), "%s", text);
	cr_assert(strstr(text, "kanna_catalog_refresh_total{kind=\"types\",result=\"success\"} 2"), "%s", text);
	free(text);
}

/* A sim whose table lists a few types (one without a price) and prices
 * m5.large differently from the shipped table. */
static void write_sim_table(void)
{
	static const char *const keep[] = { "m5.large\t", "c5.large\t", "m6g.large\t", "g4dn.xlarge\t",
					    "inf1.xlarge\t", "p5e.48xlarge\t" };
	char line[8192];
	FILE *in = fopen(SHIPPED, "r"), *out;
	int fd = mkstemp(sim_tsv);

	cr_assert_not_null(in);
	cr_assert_geq(fd, 0);
	out = fdopen(fd, "w");
	cr_assert_not_null(out);
	cr_assert_not_null(fgets(line, sizeof(line), in));
	fputs(line, out);
	while (fgets(line, sizeof(line), in))
		for (size_t i = 0; i < sizeof(keep) / sizeof(*keep); i++)
			if (!strncmp(line, keep[i], strlen(keep[i]))) {
				char *price = strstr(line, "\t0.096000\t");
				if (i == 0 && price)
					memcpy(price, "\t1.000000\t", 10);
				fputs(line, out);
			}
	fclose(in);
	fclose(out);
}

Test(launcher_catalog, only_what_the_region_offers_and_at_its_spot_prices)
{
	static const char *const zones[] = { "us-west-2a", "us-west-2b", "us-west-2c" };
	const struct proto_instance_type *m5;
	struct launcher_catalog_status st;

	launcher_catalog_free(cat);
	aws_client_free(client);
	metrics_registry_free(metrics);
	loop_free(loop);
	sim = sim_aws_free(sim);
	write_sim_table();
	start_sim(sim_tsv);
	new_catalog(client, metrics);
	st = spin(2);
	cr_assert_eq(st.last_result, 0, "%s", st.last_error);
	cr_assert_eq(st.n_types, 5, "m5, c5, m6g, g4dn, inf1; not p5e (no price) nor the rest");
	cr_assert_null(launcher_catalog_find(cat, "p5e.48xlarge"));
	cr_assert_null(launcher_catalog_find(cat, "m5.xlarge"));
	cr_assert_str_eq(label(launcher_catalog_find(cat, "m6g.large"), "kubernetes.io/arch"), "arm64");
	cr_assert_eq(resource(launcher_catalog_find(cat, "inf1.xlarge")->capacity,
			      launcher_catalog_find(cat, "inf1.xlarge")->n_capacity, "aws.amazon.com/neuron"), 1);
	cr_assert_str_eq(label(launcher_catalog_find(cat, "inf1.xlarge"),
			       "karpenter.k8s.aws/instance-accelerator-name"), "inferentia");
	m5 = launcher_catalog_find(cat, "m5.large");
	for (int z = 0; z < 3; z++) {
		/* On-demand from the shipped table; spot as the sim prices it. */
		cr_assert(fabs(offering(m5, zones[z], PROTO_CAPACITY_ON_DEMAND)->price - 0.096) < PRICE_EPSILON);
		cr_assert(fabs(offering(m5, zones[z], PROTO_CAPACITY_SPOT)->price -
			       offering_price(1.0, "m5.large", zones[z], "us-west-2", true)) < PRICE_EPSILON,
			  "%f", offering(m5, zones[z], PROTO_CAPACITY_SPOT)->price);
	}
}

Test(launcher_catalog, without_aws_the_shipped_table_is_served_and_published_once)
{
	struct launcher_catalog_status st;

	launcher_catalog_free(cat);
	new_catalog(NULL, NULL);
	st = spin(1);
	cr_assert_eq(changes, 1);
	cr_assert_not(st.refreshed);
	cr_assert_gt(st.n_types, 1000);
	cr_assert_eq(launcher_catalog_refresh(cat, true), -ENOTCONN);
	cr_assert_not_null(launcher_catalog_find(cat, "c5.large"));
	cr_assert_null(launcher_catalog_find(cat, "no-such.type"));
}

Test(launcher_catalog, a_missing_shipped_table_is_an_error)
{
	struct launcher_catalog_options o = { .region = "us-west-2", .shipped_path = "/nonexistent.tsv" };
	struct launcher_catalog *c = NULL;

	cr_assert_eq(launcher_catalog_new(loop, client, NULL, &o, &c), -ENOENT);
	cr_assert_null(c);
}
