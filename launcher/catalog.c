/*
 * The launcher's live instance-type catalog (see catalog.h). It starts as
 * the shipped table (the scheduler's TSV loader and overhead model) and is
 * then refreshed from EC2 on two periods: instance types and offerings
 * every 12 hours, spot prices every 5 minutes. One refresh runs at a time
 * as a chain of paged calls (DescribeInstanceTypes → DescribeInstanceType-
 * Offerings → DescribeSpotPriceHistory, or the last alone); any failure
 * abandons it and leaves the published catalog as it was. Each success is
 * a new generation, handed to the owner through opts->changed to publish.
 * Reading EC2's answers and building the catalog: catalog-ec2.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/aws.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "launcher/catalog-internal.h"
#include "launcher/catalog.h"
#include "model/catalog-proto.h"

/* Karpenter refreshes instance types and offerings every 12 hours and
 * spot prices every 5 minutes; so do we. */
#define CATALOG_TYPES_PERIOD_USEC (12ULL * 3600 * 1000000)
#define CATALOG_SPOT_PERIOD_USEC (5ULL * 60 * 1000000)
/* The largest page each API accepts: fewer calls, and fewer chances for a
 * throttled page to abandon the refresh. */
#define CATALOG_PAGE_TYPES 100
#define CATALOG_PAGE_OFFERINGS 1000
#define CATALOG_PAGE_SPOT 1000
/* A region's ~900 types take ~20 pages in all; a chain this long is a
 * server handing back NextTokens forever. */
#define CATALOG_MAX_PAGES 1000
#define EC2_API_VERSION "2016-11-15"
/* The shipped table has no zones: like the scheduler, assume a, b, c. */
#define CATALOG_SHIPPED_ZONES 3

enum phase { PHASE_IDLE, PHASE_TYPES, PHASE_OFFERINGS, PHASE_SPOT };

struct launcher_catalog {
	struct loop *loop;
	struct aws_client *aws;
	char *region, *shipped_path;
	double vm_memory_overhead;
	uint64_t types_period, spot_period;
	void (*changed)(void *userdata);
	void *userdata;
	sd_event_source *kick;
	bool periodic;

	/* Every type of the shipped table, sorted by name: on-demand prices,
	 * pod-ENI limits, bandwidth labels, max pods (catalog-ec2.c). */
	struct arena shipped_arena;
	struct shipped_fact *shipped;
	uint32_t n_shipped;

	/* What is published, sorted by name. */
	struct arena arena;
	struct proto_instance_type *types;
	uint32_t n_types;
	uint64_t generation;

	/* The last complete description, priced again by spot-only refreshes. */
	struct ec2_described known;
	bool types_stale; /* the last types refresh failed: redo it with the next one */

	/* The refresh in flight. */
	enum phase phase;
	bool full, want_types, want_spot;
	unsigned pages;
	char *next_token;
	uint64_t started_usec;
	struct ec2_described next;
	double *spot;
	int64_t *spot_ms;

	bool refreshed;
	int last_result;
	char last_error[512];
	uint64_t last_types_usec, last_spot_usec;

	struct metrics_gauge *m_types, *m_offerings;
	struct metrics_counter *m_refreshes;
	struct metrics_histogram *m_duration;
};

/* Generations are the Unix time in ms of the build (strictly increasing),
 * so that a restarted launcher's catalog supersedes what schedulers hold. */
static uint64_t next_generation(uint64_t prev)
{
	uint64_t ms = (uint64_t)clock_realtime_ms();

	return ms > prev ? ms : prev + 1;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct proto_instance_type *)a)->name,
		      ((const struct proto_instance_type *)b)->name);
}

static void count_offerings(const struct launcher_catalog *c, double *spot, double *od)
{
	*spot = *od = 0;
	for (uint32_t t = 0; t < c->n_types; t++)
		for (uint32_t o = 0; o < c->types[t].n_offerings; o++)
			*(c->types[t].offerings[o].capacity_type == PROTO_CAPACITY_SPOT ? spot : od) += 1;
}

/* Makes types (in a) the published catalog, a new generation. */
static void publish(struct launcher_catalog *c, struct arena *a, struct proto_instance_type *types,
		    uint32_t n)
{
	double spot, od;

	arena_done(&c->arena);
	c->arena = *a;
	*a = (struct arena){ 0 };
	c->types = types;
	c->n_types = n;
	c->generation = next_generation(c->generation);
	count_offerings(c, &spot, &od);
	if (c->m_types) {
		metrics_gauge_set(c->m_types, n, NULL);
		metrics_gauge_set(c->m_offerings, spot, "spot", NULL);
		metrics_gauge_set(c->m_offerings, od, "on-demand", NULL);
	}
}

/* Loads the shipped table: its facts always, and publishes it when asked. */
static int load_shipped(struct launcher_catalog *c, bool and_publish)
{
	char zone_buf[CATALOG_SHIPPED_ZONES][64];
	const char *zones[CATALOG_SHIPPED_ZONES];
	struct arena all_arena = { 0 }, facts = { 0 }, pub = { 0 };
	struct proto_instance_type *all, *offered;
	struct shipped_fact *shipped = NULL;
	uint32_t n_all, n_offered;
	struct strtab st;
	struct catalog cat;
	int r;

	for (int i = 0; i < CATALOG_SHIPPED_ZONES; i++) {
		snprintf(zone_buf[i], sizeof(zone_buf[i]), "%s%c", c->region, 'a' + i);
		zones[i] = zone_buf[i];
	}
	if ((r = strtab_init(&st)) < 0)
		return r;
	if ((r = wellknown_intern(&st)) >= 0 && (r = catalog_init(&cat, &st)) >= 0) {
		cat.vm_memory_overhead = c->vm_memory_overhead;
		r = catalog_load_tsv(&cat, c->shipped_path, c->region, zones, CATALOG_SHIPPED_ZONES);
		if (r >= 0)
			r = catalog_to_proto(&cat, &all_arena, false, &all, &n_all);
		/* Of every type only the facts EC2 does not give are kept. */
		if (r >= 0)
			r = shipped_facts_from_proto(all, n_all, &facts, &shipped);
		arena_done(&all_arena);
		if (r >= 0 && and_publish)
			r = catalog_to_proto(&cat, &pub, true, &offered, &n_offered);
		catalog_done(&cat);
	}
	strtab_done(&st);
	if (r >= 0 && n_all == 0)
		r = -ENODATA;
	if (r < 0) {
		arena_done(&facts);
		arena_done(&pub);
		return r;
	}
	arena_done(&c->shipped_arena);
	c->shipped_arena = facts;
	c->shipped = shipped;
	c->n_shipped = n_all;
	if (and_publish) {
		qsort(offered, n_offered, sizeof(*offered), name_cmp);
		publish(c, &pub, offered, n_offered);
	}
	memory_trim(); /* the model the table was read into */
	return 0;
}

/* ---- one refresh ------------------------------------------------------------------ */

static const char *phase_action(enum phase p)
{
	return p == PHASE_TYPES ? "DescribeInstanceTypes" :
	       p == PHASE_OFFERINGS ? "DescribeInstanceTypeOfferings" : "DescribeSpotPriceHistory";
}

static const char *kind(const struct launcher_catalog *c)
{
	return c->full ? "types" : "spot";
}

static void refresh_reset(struct launcher_catalog *c)
{
	c->phase = PHASE_IDLE;
	free(c->next_token);
	c->next_token = NULL;
	free(c->spot);
	free(c->spot_ms);
	c->spot = NULL;
	c->spot_ms = NULL;
	ec2_described_clear(&c->next);
}

static int refresh_start(struct launcher_catalog *c, bool full);

/* Starts what was asked for while a refresh ran. */
static void run_wanted(struct launcher_catalog *c)
{
	if (c->want_types || c->want_spot)
		refresh_start(c, c->want_types);
}

static void refresh_failed(struct launcher_catalog *c, int r, const char *fmt, ...) _printf_(3, 4);

static void refresh_failed(struct launcher_catalog *c, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
	va_end(ap);
	c->last_result = r < 0 ? r : -EIO;
	if (c->full)
		c->types_stale = true;
	log_warn("Failed to refresh the instance-type catalog (%s) from EC2 in %s: %s; keeping "
		 "generation %" PRIu64 " (%u instance types)", kind(c), c->region, c->last_error,
		 c->generation, c->n_types);
	if (c->m_refreshes)
		metrics_counter_add(c->m_refreshes, 1, kind(c), "error", NULL);
	refresh_reset(c);
	run_wanted(c);
}

static int spot_alloc(struct launcher_catalog *c, const struct ec2_described *d)
{
	size_t n = d->n * d->n_zones;

	free(c->spot);
	free(c->spot_ms);
	c->spot = malloc((n + 1) * sizeof(*c->spot));
	c->spot_ms = calloc(n + 1, sizeof(*c->spot_ms));
	if (!c->spot || !c->spot_ms)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		c->spot[i] = -1;
	return 0;
}

static void on_page(struct aws_client *client, const struct aws_response *resp, void *userdata);

static int request_page(struct launcher_catalog *c)
{
	static const char *const archs[] = { "x86_64", "arm64" };
	static const char *const products[] = { "Linux/UNIX", "Linux/UNIX (Amazon VPC)" };
	struct aws_query *q = NULL;
	char now[32];
	time_t t = time(NULL);
	struct tm tm;
	int r;

	r = aws_query_new(phase_action(c->phase), EC2_API_VERSION, &q);
	if (r < 0)
		return r;
	switch (c->phase) {
	case PHASE_TYPES:
		r = aws_query_add_int(q, CATALOG_PAGE_TYPES, "MaxResults");
		if (r >= 0)
			r = aws_query_add_filter(q, 1, "processor-info.supported-architecture", archs, 2);
		break;
	case PHASE_OFFERINGS:
		r = aws_query_add(q, "availability-zone", "LocationType");
		if (r >= 0)
			r = aws_query_add_int(q, CATALOG_PAGE_OFFERINGS, "MaxResults");
		break;
	default:
		/* With a start time and no end, EC2 answers the price in effect
		 * now for every type and zone (what Karpenter asks). */
		gmtime_r(&t, &tm);
		strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
		r = aws_query_add_int(q, CATALOG_PAGE_SPOT, "MaxResults");
		if (r >= 0)
			r = aws_query_add_list(q, "ProductDescription", products, 2);
		if (r >= 0)
			r = aws_query_add(q, now, "StartTime");
		break;
	}
	if (r >= 0 && c->next_token)
		r = aws_query_add(q, c->next_token, "NextToken");
	if (r < 0) {
		aws_query_free(q);
		return r;
	}
	return aws_call_query(c->aws, "ec2", q, on_page, c);
}

static int refresh_done(struct launcher_catalog *c)
{
	const struct ec2_described *d = c->full ? &c->next : &c->known;
	struct ec2_build b = { .d = d, .spot = c->spot, .shipped = c->shipped,
			       .n_shipped = c->n_shipped, .region = c->region,
			       .vm_memory_overhead = c->vm_memory_overhead };
	struct proto_instance_type *types;
	struct arena a = { 0 };
	uint64_t took = clock_monotonic_usec() - c->started_usec;
	double spot, od;
	unsigned n_zones;
	uint32_t n;
	int r;

	r = ec2_build_catalog(&b, &a, &types, &n);
	if (r >= 0 && n == 0)
		r = -ENODATA;
	if (r < 0) {
		arena_done(&a);
		refresh_failed(c, r, "%s", r == -ENODATA ? "no instance type has a priced offering" :
				       strerror(-r));
		return 0;
	}
	publish(c, &a, types, n);
	n_zones = d->n_zones;
	if (c->full) {
		ec2_described_clear(&c->known);
		c->known = c->next;
		c->next = (struct ec2_described){ 0 };
		c->types_stale = false;
		c->last_types_usec = took;
	} else {
		c->last_spot_usec = took;
	}
	c->refreshed = true;
	c->last_result = 0;
	c->last_error[0] = '\0';
	count_offerings(c, &spot, &od);
	log_info("refreshed the instance-type catalog (%s) from EC2 in %s: %u instance types, "
		 "%.0f on-demand and %.0f spot offerings in %u zones, generation %" PRIu64 ", %u "
		 "calls in %.0f ms", kind(c), c->region, n, od, spot, n_zones, c->generation,
		 c->pages, (double)took / 1000.0);
	if (c->m_refreshes) {
		metrics_counter_add(c->m_refreshes, 1, kind(c), "success", NULL);
		metrics_histogram_observe(c->m_duration, (double)took / 1e6, kind(c), NULL);
	}
	refresh_reset(c);
	if (c->changed)
		c->changed(c->userdata);
	/* The superseded catalog, the description replaced, the pages. */
	memory_trim();
	run_wanted(c);
	return 0;
}

/* After a page without NextToken: the next call of the chain, or the end. */
static int next_phase(struct launcher_catalog *c)
{
	switch (c->phase) {
	case PHASE_TYPES:
		if (!c->next.n)
			return -ENODATA;
		ec2_described_sort(&c->next);
		c->phase = PHASE_OFFERINGS;
		return 1;
	case PHASE_OFFERINGS:
		if (!c->next.n_zones)
			return -ENODATA;
		c->phase = PHASE_SPOT;
		return spot_alloc(c, &c->next) < 0 ? -ENOMEM : 1;
	default:
		return refresh_done(c);
	}
}

static void on_page(struct aws_client *client, const struct aws_response *resp, void *userdata)
{
	struct launcher_catalog *c = userdata;
	const char *action = phase_action(c->phase), *token;
	struct ec2_described *d = c->full ? &c->next : &c->known;
	int r;

	(void)client;
	c->pages++;
	if (resp->result < 0) {
		refresh_failed(c, resp->result, "%s (call %u): %s", action, c->pages,
			       aws_response_strerror(resp));
		return;
	}
	r = c->phase == PHASE_TYPES ? ec2_read_types_page(resp->xml, d) :
	    c->phase == PHASE_OFFERINGS ? ec2_read_offerings_page(resp->xml, d) :
	    ec2_read_spot_page(resp->xml, d, c->spot, c->spot_ms);
	if (r < 0) {
		refresh_failed(c, r, "%s (call %u): %s", action, c->pages,
			       r == -E2BIG ? "more zones than kanna plans for" :
			       r == -EBADMSG ? "the answer is not what EC2 sends" : strerror(-r));
		return;
	}
	token = aws_xml_text(resp->xml, "nextToken");
	free(c->next_token);
	c->next_token = NULL;
	if (token && *token) {
		if (c->pages >= CATALOG_MAX_PAGES) {
			refresh_failed(c, -ELOOP, "%s: still paging after %u calls", action, c->pages);
			return;
		}
		if (!(c->next_token = strdup(token)))
			r = -ENOMEM;
	} else {
		r = next_phase(c);
		if (r == -ENODATA) {
			refresh_failed(c, r, "%s: EC2 offers no instance type kanna can run in %s",
				       action, c->region);
			return;
		}
		if (r == 0) /* done (published or failed) */
			return;
	}
	if (r >= 0)
		r = request_page(c);
	if (r < 0)
		refresh_failed(c, r, "Failed to send %s: %s", phase_action(c->phase), strerror(-r));
}

static int refresh_start(struct launcher_catalog *c, bool full)
{
	int r;

	if (!c->aws)
		return -ENOTCONN;
	if (c->phase != PHASE_IDLE) {
		*(full ? &c->want_types : &c->want_spot) = true;
		return -EBUSY;
	}
	/* A full refresh prices spot too; spot prices need described types. */
	full = full || c->want_types || c->types_stale || !c->known.n;
	c->want_types = c->want_spot = false;
	c->full = full;
	c->pages = 0;
	c->started_usec = clock_monotonic_usec();
	if (full) {
		/* The shipped table is refreshable: a newer file is read here. */
		r = load_shipped(c, false);
		if (r < 0)
			log_warn_errno(r, "Failed to re-read the shipped instance-type catalog %s, "
				       "keeping the one loaded: %m", c->shipped_path);
		c->phase = PHASE_TYPES;
	} else {
		c->phase = PHASE_SPOT;
		if ((r = spot_alloc(c, &c->known)) < 0) {
			refresh_failed(c, r, "%s", strerror(-r));
			return r;
		}
	}
	r = request_page(c);
	if (r < 0)
		refresh_failed(c, r, "Failed to send %s: %s", phase_action(c->phase), strerror(-r));
	return r;
}

/* ---- timers ------------------------------------------------------------------------ */

static int on_types_period(struct loop *loop, void *userdata)
{
	(void)loop;
	refresh_start(userdata, true);
	return 0;
}

static int on_spot_period(struct loop *loop, void *userdata)
{
	(void)loop;
	refresh_start(userdata, false);
	return 0;
}

/* First turn of the loop: the owner publishes the shipped table (it has
 * its pointer to us by now), and the first refresh starts. */
static int on_kick(struct loop *loop, void *userdata)
{
	struct launcher_catalog *c = userdata;

	(void)loop;
	c->kick = sd_event_source_disable_unref(c->kick);
	if (c->changed)
		c->changed(c->userdata);
	if (c->aws)
		refresh_start(c, true);
	return 0;
}

static int register_metrics(struct launcher_catalog *c, struct metrics_registry *m)
{
	static const double buckets[] = { 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120 };
	int r;

	if (!m)
		return 0;
	if ((r = metrics_gauge_new(m, &c->m_types, "kanna_catalog_instance_types",
				   "Instance types in the published catalog.", NULL)) < 0 ||
	    (r = metrics_gauge_new(m, &c->m_offerings, "kanna_catalog_offerings",
				   "Offerings (type x zone) in the published catalog.", "capacity_type",
				   NULL)) < 0 ||
	    (r = metrics_counter_new(m, &c->m_refreshes, "kanna_catalog_refresh_total",
				     "Catalog refreshes from EC2 (kind types or spot).", "kind", "result",
				     NULL)) < 0 ||
	    (r = metrics_histogram_new(m, &c->m_duration, "kanna_catalog_refresh_duration_seconds",
				       "Duration of successful catalog refreshes from EC2.", buckets,
				       ARRAY_SIZE(buckets), "kind", NULL)) < 0)
		return r;
	return 0;
}

int launcher_catalog_new(struct loop *loop, struct aws_client *aws, struct metrics_registry *metrics,
			 const struct launcher_catalog_options *opts, struct launcher_catalog **ret)
{
	struct launcher_catalog *c;
	char path[4096];
	int r;

	if (!loop || !opts || !opts->region || !ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (!opts->shipped_path)
		catalog_default_path(path, sizeof(path));
	c->loop = loop;
	c->aws = aws;
	c->region = strdup(opts->region);
	c->shipped_path = strdup(opts->shipped_path ? opts->shipped_path : path);
	c->vm_memory_overhead = opts->vm_memory_overhead_percent > 0 ?
				opts->vm_memory_overhead_percent : SCHED_VM_MEMORY_OVERHEAD;
	c->types_period = opts->refresh_usec ? opts->refresh_usec : CATALOG_TYPES_PERIOD_USEC;
	c->spot_period = opts->spot_refresh_usec ? opts->spot_refresh_usec :
			 MIN(c->types_period, CATALOG_SPOT_PERIOD_USEC);
	c->changed = opts->changed;
	c->userdata = opts->userdata;
	if (!c->region || !c->shipped_path) {
		launcher_catalog_free(c);
		return -ENOMEM;
	}
	r = load_shipped(c, true);
	if (r < 0) {
		log_error_errno(r, "Failed to load the shipped instance-type catalog %s: %m",
				c->shipped_path);
		launcher_catalog_free(c);
		return r;
	}
	if ((r = register_metrics(c, metrics)) >= 0 &&
	    (r = loop_add_timer(loop, 0, on_kick, c, &c->kick)) >= 0 && aws) {
		c->periodic = true;
		if ((r = loop_add_periodic(loop, "catalog-types", c->types_period, on_types_period, c)) >= 0)
			r = loop_add_periodic(loop, "catalog-spot", c->spot_period, on_spot_period, c);
	}
	if (r < 0) {
		launcher_catalog_free(c);
		return r;
	}
	log_info("instance-type catalog: %u instance types from %s (generation %" PRIu64 ")%s",
		 c->n_types, c->shipped_path, c->generation,
		 aws ? ", refreshing from EC2" : "");
	*ret = c;
	return 0;
}

void launcher_catalog_free(struct launcher_catalog *c)
{
	if (!c)
		return;
	if (c->periodic) {
		loop_remove_periodic(c->loop, "catalog-types");
		loop_remove_periodic(c->loop, "catalog-spot");
	}
	sd_event_source_disable_unref(c->kick);
	refresh_reset(c);
	ec2_described_clear(&c->known);
	arena_done(&c->arena);
	arena_done(&c->shipped_arena);
	free(c->region);
	free(c->shipped_path);
	free(c);
}

const struct proto_instance_type *launcher_catalog_find(const struct launcher_catalog *c,
							const char *name)
{
	return c ? catalog_proto_find(c->types, c->n_types, name) : NULL;
}

uint64_t launcher_catalog_generation(const struct launcher_catalog *c)
{
	return c->generation;
}

void launcher_catalog_msg(const struct launcher_catalog *c, struct proto_msg *m)
{
	m->body.catalog.generation = c->generation;
	m->body.catalog.region = c->region;
	m->body.catalog.instance_types = c->types;
	m->body.catalog.n_instance_types = c->n_types;
}

int launcher_catalog_refresh(struct launcher_catalog *c, bool types)
{
	return refresh_start(c, types);
}

void launcher_catalog_status(const struct launcher_catalog *c, struct launcher_catalog_status *ret)
{
	*ret = (struct launcher_catalog_status){
		.generation = c->generation, .n_types = c->n_types,
		.refreshing = c->phase != PHASE_IDLE, .refreshed = c->refreshed,
		.last_result = c->last_result, .last_types_usec = c->last_types_usec,
		.last_spot_usec = c->last_spot_usec,
	};
	snprintf(ret->last_error, sizeof(ret->last_error), "%s", c->last_error);
}
