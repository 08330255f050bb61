/*
 * The cluster's instances as EC2 describes them: every gc-period, one
 * DescribeInstances (paged) filtered on the tag kubernetes.io/cluster/<name>
 * that every instance kanna launches carries (DESIGN §2 rule 3), in the
 * states an instance can still cost money or hold a Node (pending,
 * running, stopping, stopped, shutting-down: as Karpenter's cloud provider
 * lists them). A description replaces the previous one only once its last
 * page came, so a reader never sees half a list; an error keeps the old
 * one and tries again next period.
 *
 * gc.c reads it (orphans, NodeClaims whose instance is gone), disruption
 * reads it for drift (subnet, security groups). Owned by struct reaper
 * (r->inventory); daemon.c starts a description from its pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "reaper/reaper.h"

/* DescribeInstances answers at most 1000 instances a page. */
#define INVENTORY_PAGE 1000

struct inventory {
	struct hashmap now;        /* instance id → struct ec2_instance, complete */
	struct hashmap next;       /* the description being read */
	uint64_t described_usec;   /* monotonic start of the description in now */
	int64_t described_wall_ms; /* the same, on the wall clock */
	uint64_t started_usec;     /* of the description in flight */
	int64_t started_wall_ms;
	bool in_flight;
};

static void instances_clear(struct hashmap *h)
{
	size_t it = 0;
	void *v;

	while (hashmap_next(h, &it, NULL, &v))
		free(v);
	hashmap_done(h);
	*h = (struct hashmap){ 0 };
}

static int describe_page(struct reaper *r, const char *next_token);

static void on_described(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct reaper *r = userdata;
	struct inventory *inv = r->inventory;
	/* One page's worth (1.6 MB) only while a page is read: kept, its
	 * touched part stayed resident between descriptions. */
	struct ec2_instance *page = NULL;
	const char *next;
	int n;

	(void)c;
	if (resp->result < 0) {
		log_warn("Failed to describe the cluster's instances: %s; trying again in %.0f s",
			 aws_response_strerror(resp), (double)r->cfg->gc_period_usec / 1e6);
		goto stop;
	}
	if (!(page = calloc(INVENTORY_PAGE, sizeof(*page)))) {
		log_error("Failed to describe the cluster's instances: out of memory");
		goto stop;
	}
	n = ec2_instances_parse(resp->xml, page, INVENTORY_PAGE);
	if (n < 0) {
		log_warn("Failed to describe the cluster's instances: DescribeInstances returned an "
			 "unexpected document; trying again in %.0f s", (double)r->cfg->gc_period_usec / 1e6);
		goto stop;
	}
	for (int i = 0; i < n; i++) {
		struct ec2_instance *e = malloc(sizeof(*e));
		void *old = NULL;

		if (!e || hashmap_put(&inv->next, page[i].instance_id, e, &old) < 0) {
			free(e);
			log_error("Failed to describe the cluster's instances: out of memory");
			goto stop;
		}
		free(old); /* listed twice (pages moved under us): the later wins */
		*e = page[i];
	}
	free(page);
	page = NULL;
	next = aws_xml_text(resp->xml, "nextToken");
	if (next && *next) {
		if (describe_page(r, next) >= 0)
			return;
		log_error("Failed to ask for the next page of the cluster's instances: out of memory");
		goto stop;
	}
	instances_clear(&inv->now);
	inv->now = inv->next;
	inv->next = (struct hashmap){ 0 };
	inv->described_usec = inv->started_usec;
	inv->described_wall_ms = inv->started_wall_ms;
	inv->in_flight = false;
	log_debug("described %zu instance(s) of cluster %s", inv->now.n, r->cfg->cluster_name);
	return;
stop:
	free(page);
	instances_clear(&inv->next);
	inv->in_flight = false;
}

static int describe_page(struct reaper *r, const char *next_token)
{
	static const char *const states[] = { "pending", "running", "stopping", "stopped",
					      "shutting-down" };
	char tag[256];
	struct aws_query *q = NULL;
	int k;

	snprintf(tag, sizeof(tag), "kubernetes.io/cluster/%s", r->cfg->cluster_name);
	k = aws_query_new("DescribeInstances", EC2_API_VERSION_2016, &q);
	if (k >= 0)
		k = aws_query_add_filter(q, 1, "tag-key", (const char *const[]){ tag }, 1);
	if (k >= 0)
		k = aws_query_add_filter(q, 2, "instance-state-name", states, ARRAY_SIZE(states));
	if (k >= 0)
		k = aws_query_add_int(q, INVENTORY_PAGE, "MaxResults");
	if (k >= 0 && next_token)
		k = aws_query_add(q, next_token, "NextToken");
	if (k < 0) {
		aws_query_free(q);
		return k;
	}
	return aws_call_query(r->aws, "ec2", q, on_described, r);
}

void inventory_refresh(struct reaper *r, uint64_t now_usec)
{
	struct inventory *inv = r->inventory;

	if (!inv || inv->in_flight || !r->aws_ok ||
	    (inv->described_usec && now_usec - inv->described_usec < r->cfg->gc_period_usec))
		return;
	inv->started_usec = now_usec;
	inv->started_wall_ms = clock_realtime_ms();
	if (describe_page(r, NULL) < 0) {
		log_error("Failed to describe the cluster's instances: out of memory");
		return;
	}
	inv->in_flight = true;
}

const struct ec2_instance *inventory_instance(const struct reaper *r, const char *instance_id)
{
	return r->inventory && instance_id ? hashmap_get(&r->inventory->now, instance_id) : NULL;
}

uint64_t inventory_described_usec(const struct reaper *r)
{
	return r->inventory ? r->inventory->described_usec : 0;
}

int64_t inventory_described_wall_ms(const struct reaper *r)
{
	return r->inventory ? r->inventory->described_wall_ms : 0;
}

size_t inventory_next(const struct reaper *r, size_t *it, const struct ec2_instance **ret)
{
	void *v;

	if (!r->inventory || !hashmap_next(&r->inventory->now, it, NULL, &v))
		return 0;
	*ret = v;
	return 1;
}

int inventory_init(struct reaper *r)
{
	struct inventory *inv = calloc(1, sizeof(*inv));

	if (!inv)
		return -ENOMEM;
	r->inventory = inv;
	return 0;
}

void inventory_done(struct reaper *r)
{
	struct inventory *inv = r->inventory;

	if (!inv)
		return;
	instances_clear(&inv->now);
	instances_clear(&inv->next);
	free(inv);
	r->inventory = NULL;
}
