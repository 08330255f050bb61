/*
 * Batching of EC2 calls, as Karpenter's CreateFleet batcher does: EC2
 * throttles per API and account, and a plan of 100 identical NodeClaims
 * must not cost 100 CreateFleet calls.
 *
 * CreateFleet: launches whose request is identical except for the
 * ClientToken and the per-NodeClaim tags, arriving within BATCH_IDLE_USEC
 * of each other (at most BATCH_MAX_USEC after the first), go out as one call
 * with TotalTargetCapacity = N. Crash safety is kept by writing first: the
 * batch's ClientToken (derived from the members' UIDs and attempts) is
 * recorded on every member NodeClaim (annotation kanna.dev/fleet-batch)
 * and tagged on the instances. Instances are matched to members in a fixed
 * order (members by name, instances by id), the same order recovery uses,
 * and each instance then gets its karpenter.sh/nodeclaim tag.
 *
 * DescribeInstances: instance lookups after launch go out together, up to
 * DESCRIBE_BATCH_MAX ids per call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/clock.h"
#include "common/aws.h"
#include "common/kube-client.h"
#include "common/log.h"
#include "common/loop.h"
#include "state/state-store.h"
#include "launcher/fleet.h"
#include "launcher/launcher.h"

/* Karpenter's CreateFleet batcher waits 35 ms idle, 1 s at most; ours is
 * shorter because NodeClaims of one plan reach it within milliseconds. */
#define BATCH_IDLE_USEC 5000ULL
#define BATCH_MAX_USEC 100000ULL
#define DESCRIBE_BATCH_MAX 200
#define FLEET_BATCH_ANNOTATION "kanna.dev/fleet-batch"

struct fleet_batch {
	struct launcher *l;
	struct launch **members;
	size_t n, cap;
	size_t patches_outstanding;
	char token[FLEET_CLIENT_TOKEN_MAX + 1];
};

static void fleet_batch_free(struct fleet_batch *b)
{
	if (!b)
		return;
	free(b->members);
	free(b);
}

static int cmp_launch_name(const void *a, const void *b)
{
	return strcmp((*(struct launch *const *)a)->name, (*(struct launch *const *)b)->name);
}

static int cmp_instance_id(const void *a, const void *b)
{
	return strcmp(((const fleet_launched *)a)->instance_id, ((const fleet_launched *)b)->instance_id);
}

/* "kanna-batch-<32 hex>": the same members at the same attempts give the
 * same token, so a retried batch replays instead of launching again. */
static void batch_token(struct fleet_batch *b)
{
	uint64_t h1 = 0xcbf29ce484222325ULL, h2 = 0x84222325cbf29ce4ULL;

	for (size_t i = 0; i < b->n; i++) {
		char attempt[16];

		snprintf(attempt, sizeof(attempt), "/%u;", b->members[i]->attempt);
		h1 = hash_fnv1a64_add(hash_fnv1a64_add(h1, b->members[i]->uid), attempt);
		h2 = hash_fnv1a64_add(hash_fnv1a64_add(h2, attempt), b->members[i]->uid);
	}
	snprintf(b->token, sizeof(b->token), "kanna-batch-%016llx%016llx", (unsigned long long)h1,
		 (unsigned long long)h2);
}

/* ---- tagging instances of a batch ------------------------------------------ */

static void on_tagged(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	char *name = userdata;

	(void)c;
	if (resp->result < 0)
		log_warn_kv(LOG_KV({ "nodeclaim", name }),
			    "Failed to tag the instance of nodeclaim %s: %s (its fleet-batch tag still "
			    "identifies it)", name, aws_response_strerror(resp));
}

/* karpenter.sh/nodeclaim and Name on an instance launched in a batch. */
void launcher_tag_instance(struct launcher *l, const char *instance_id, const char *nodeclaim)
{
	struct aws_query *q = NULL;
	char *name = strdup(nodeclaim);
	int r;

	if (!name || (r = aws_query_new("CreateTags", "2016-11-15", &q)) < 0 ||
	    (r = aws_query_add(q, instance_id, "ResourceId.1")) < 0 ||
	    (r = aws_query_add(q, "karpenter.sh/nodeclaim", "Tag.1.Key")) < 0 ||
	    (r = aws_query_add(q, nodeclaim, "Tag.1.Value")) < 0 ||
	    (r = aws_query_add(q, "Name", "Tag.2.Key")) < 0 ||
	    (r = aws_query_add(q, nodeclaim, "Tag.2.Value")) < 0) {
		aws_query_free(q);
		free(name);
		return;
	}
	(void)aws_call_query_owned(l->aws, "ec2", q, on_tagged, name);
}

/* ---- the batched CreateFleet -------------------------------------------------- */

/* Members whose NodeClaim still exists take the batch's instances first
 * (in name order, as recovery matches them: a deleted NodeClaim is not
 * among its candidates); an instance launched beyond them goes to a
 * deleted member, which terminates it (launch-undo.c). Stable. */
static void members_live_first(struct fleet_batch *b)
{
	size_t k = 0;

	for (size_t i = 0; i < b->n; i++) {
		struct launch *la = b->members[i];

		if (la->deleted)
			continue;
		memmove(&b->members[k + 1], &b->members[k], (i - k) * sizeof(b->members[0]));
		b->members[k++] = la;
	}
}

static void on_batch_fleet(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct fleet_batch *b = userdata;
	fleet_result *fr = NULL;
	size_t next = 0;

	(void)c;
	if (resp->result >= 0) {
		fr = malloc(sizeof(*fr));
		/* Members share their configs: any one's subnets place them. */
		if (fr && launch_fleet_read(b->members[0], resp, fr) < 0) {
			free(fr);
			fr = NULL;
		}
	}
	if (fr)
		qsort(fr->all, fr->n_launched, sizeof(fr->all[0]), cmp_instance_id);
	members_live_first(b);
	log_info("batched CreateFleet %s: %zu of %zu instance(s) launched", b->token,
		 fr ? fr->n_launched : 0, b->n);
	for (size_t i = 0; i < b->n; i++) {
		struct launch *la = b->members[i];
		char first_error[256] = "";

		launch_resume(la);
		if (!fr) {
			if (resp->result < 0 && streq(resp->error.code, "IdempotentParameterMismatch")) {
				la->attempt++;
				la->step = STEP_FLEET;
				launch_advance(la);
			} else if (resp->result >= 0 || launch_fleet_answer_unreadable(resp)) {
				launch_fleet_unreadable(la);
			} else {
				/* As on_fleet: a refused request's token is not reused. */
				if (launch_fleet_refused(resp))
					la->attempt++;
				launch_retry_later(la, "launch an instance (batched CreateFleet)",
						   aws_response_strerror(resp));
			}
			continue;
		}
		launch_fleet_errors(la, fr, first_error, sizeof(first_error));
		if (next < fr->n_launched) {
			la->launched = fr->all[next++];
			la->failures = 0;
			/* Tagged once bound: 100 CreateTags must not queue ahead
			 * of the DescribeInstances the launch waits for. */
			la->needs_tag = true;
			la->step = STEP_DESCRIBE;
			launch_advance(la);
			continue;
		}
		/* Not enough capacity for every member: the rest try again with
		 * what is left (a new batch, a new token). */
		if (planned_count_offerings(la->planned, launch_offering_is_unavailable, la->l) == 0) {
			char why[400];

			snprintf(why, sizeof(why), "insufficient capacity in every offering (%s)",
				 *first_error ? first_error : "CreateFleet launched too few instances");
			launch_give_up(la, PROTO_LAUNCH_INSUFFICIENT_CAPACITY, why);
			continue;
		}
		la->attempt++;
		la->step = STEP_FLEET;
		launch_advance(la);
	}
	fleet_result_done(fr);
	free(fr);
	fleet_batch_free(b);
}

static void batch_send(struct fleet_batch *b)
{
	struct launcher *l = b->l;
	struct fleet_call fc;
	struct aws_query *q = NULL;
	size_t n_overrides;
	uint8_t ct;
	int r;

	launch_fleet_call(b->members[0], &fc, false);
	snprintf(fc.token, sizeof(fc.token), "%s", b->token);
	fc.in.capacity = (unsigned)b->n;
	fc.tags[fc.in.n_tags++] = (struct fleet_tag){ FLEET_BATCH_ANNOTATION, b->token };
	r = fleet_query_build(&fc.in, &q, &ct, &n_overrides);
	for (size_t i = 0; i < b->n; i++) {
		/* The batching window and the recording round trip are not
		 * our processing: count from here. */
		b->members[i]->t_mark = clock_monotonic_usec();
		if (r >= 0)
			launch_note_fleet_sent(b->members[i], ct, n_overrides, b->token);
		b->members[i]->busy = true;
	}
	if (r >= 0)
		r = aws_call_query(l->aws, "ec2", q, on_batch_fleet, b);
	if (r < 0) {
		for (size_t i = 0; i < b->n; i++) {
			b->members[i]->busy = false;
			/* Identical candidates: none is left for any member. */
			if (r == -ENOENT)
				launch_no_candidate_left(b->members[i]);
			else
				launch_retry_later(b->members[i], "call CreateFleet", strerror(-r));
		}
		fleet_batch_free(b);
	}
}

/* A member whose NodeClaim could not record the batch leaves it. */
static void batch_drop_member(struct fleet_batch *b, size_t i)
{
	struct launch *la = b->members[i];

	memmove(&b->members[i], &b->members[i + 1], (b->n - i - 1) * sizeof(b->members[0]));
	b->n--;
	la->fleet_batch[0] = 0;
	la->busy = false;
	launch_send_fleet(la);
}

struct batch_patch {
	struct fleet_batch *b;
	struct launch *la;
};

/* One recording finished (or the issuing loop's hold was released). */
static void batch_recorded_one(struct fleet_batch *b)
{
	struct launch *deleted[FLEET_MAX_INSTANCES];
	size_t n_deleted = 0, k = 0;

	if (--b->patches_outstanding > 0)
		return;
	/* A member deleted since it joined is not launched for (launch-undo.c). */
	for (size_t i = 0; i < b->n; i++) {
		struct launch *la = b->members[i];

		if (la->deleted && n_deleted < ARRAY_SIZE(deleted)) {
			la->fleet_batch[0] = 0;
			la->busy = false;
			deleted[n_deleted++] = la;
			continue;
		}
		b->members[k++] = la;
	}
	b->n = k;
	if (b->n == 0) {
		fleet_batch_free(b);
	} else if (b->n == 1) {
		struct launch *la = b->members[0];

		/* Its NodeClaim names the batch token; recovery copes with a
		 * batch that was never sent (no instance carries the tag). */
		la->busy = false;
		fleet_batch_free(b);
		launch_send_fleet(la);
	} else {
		batch_send(b);
	}
	for (size_t i = 0; i < n_deleted; i++)
		launch_advance(deleted[i]);
}

static void on_batch_recorded(struct kube_client *c, const struct kube_response *resp, void *userdata)
{
	struct batch_patch *p = userdata;
	struct fleet_batch *b = p->b;

	(void)c;
	if (resp->status < 200 || resp->status >= 300) {
		if (resp->status == 404)
			p->la->deleted = true; /* gone: launch_send_fleet() stops it */
		for (size_t i = 0; i < b->n; i++)
			if (b->members[i] == p->la) {
				log_warn_kv(LOG_KV({ "nodeclaim", p->la->name }),
					    "Failed to record the fleet batch on nodeclaim %s (%s); launching "
					    "it alone", p->la->name, resp->error ?: "HTTP error");
				batch_drop_member(b, i);
				break;
			}
	}
	batch_recorded_one(b);
}

/*
 * Records the token on every member NodeClaim, then sends. The token is
 * fixed here, for the members as sorted; one that drops out launches alone
 * with its own token, and the batch's instances are still matched by the
 * order recovery uses.
 */
static void batch_start(struct fleet_batch *b)
{
	struct launcher *l = b->l;
	char body[256], path[512];

	qsort(b->members, b->n, sizeof(b->members[0]), cmp_launch_name);
	batch_token(b);
	snprintf(body, sizeof(body), "{\"metadata\":{\"annotations\":{\"" FLEET_BATCH_ANNOTATION "\":\"%s\"}}}",
		 b->token);
	b->patches_outstanding = 1; /* held while the requests are issued */
	for (size_t i = 0; i < b->n;) {
		struct launch *la = b->members[i];
		struct batch_patch *p = malloc(sizeof(*p));

		snprintf(la->fleet_batch, sizeof(la->fleet_batch), "%s", b->token);
		snprintf(path, sizeof(path), "/apis/karpenter.sh/v1/nodeclaims/%s", la->name);
		if (p) {
			*p = (struct batch_patch){ b, la };
			b->patches_outstanding++;
			if (kube_request_owned(l->d->kube, false, "PATCH", path,
					       "application/merge-patch+json", body, on_batch_recorded,
					       p) >= 0) {
				i++;
				continue;
			}
			b->patches_outstanding--;
		}
		batch_drop_member(b, i); /* could not even ask: it goes alone */
	}
	batch_recorded_one(b);
}

/* ---- batched DescribeInstances ------------------------------------------------------ */

struct describe_call {
	size_t n;
	struct launch *launches[DESCRIBE_BATCH_MAX];
};

static void on_batch_describe(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct describe_call *d = userdata;
	struct ec2_instance *found = NULL;
	int n = 0;

	(void)c;
	if (resp->result >= 0) {
		found = calloc(d->n + 1, sizeof(*found));
		n = found ? ec2_instances_parse(resp->xml, found, d->n) : -ENOMEM;
	}
	for (size_t i = 0; i < d->n; i++) {
		struct launch *la = d->launches[i];
		const struct ec2_instance *e = NULL;

		for (int k = 0; k < n; k++)
			if (streq(found[k].instance_id, la->launched.instance_id))
				e = &found[k];
		launch_described(la, e,
				 resp->result < 0 ? aws_response_strerror(resp)
				 : n < 0	  ? "DescribeInstances returned an unexpected document"
						  : NULL);
	}
	free(found);
}

static void describe_flush(struct launcher *l)
{
	while (l->describe_head) {
		struct describe_call *d = malloc(sizeof(*d));
		struct launch *taken[DESCRIBE_BATCH_MAX];
		struct aws_query *q = NULL;
		int r = d ? aws_query_new("DescribeInstances", "2016-11-15", &q) : -ENOMEM;
		size_t n = 0;

		while (r >= 0 && l->describe_head && n < DESCRIBE_BATCH_MAX) {
			struct launch *la = l->describe_head;

			l->describe_head = la->next_describe;
			la->next_describe = NULL;
			taken[n++] = la;
			r = aws_query_add(q, la->launched.instance_id, "InstanceId.%zu", n);
		}
		if (r >= 0) {
			d->n = n;
			memcpy(d->launches, taken, n * sizeof(*taken));
			/* the client's from here, also when it fails */
			r = aws_call_query_owned(l->aws, "ec2", q, on_batch_describe, d);
		} else {
			aws_query_free(q);
			free(d);
		}
		if (r < 0) {
			for (size_t i = 0; i < n; i++)
				launch_described(taken[i], NULL, strerror(-r));
			if (!n)
				return; /* nothing taken: no progress to make now */
		}
	}
}

/* ---- the flush timer ------------------------------------------------------------------------ */

/* Sends every batch collected. The table is taken whole first (a member
 * sent alone may start a new batch in l's), and nothing is allocated on
 * the way: a flush that could fail for memory would leave its members
 * busy, stuck until a restart. */
static void fleet_batches_flush(struct launcher *l)
{
	struct hashmap batches = l->fleet_batches;
	const char *key;
	void *value;
	size_t it = 0;

	l->fleet_batches = (struct hashmap){ 0 };
	while (hashmap_next(&batches, &it, &key, &value)) {
		struct fleet_batch *b = value;

		if (b->n == 0) {
			/* Its first member's place could not be allocated. */
			fleet_batch_free(b);
		} else if (b->n == 1) {
			struct launch *la = b->members[0];

			fleet_batch_free(b);
			la->busy = false;
			launch_send_fleet(la);
		} else {
			batch_start(b);
		}
	}
	hashmap_done(&batches);
}

static void batches_flush(struct launcher *l)
{
	fleet_batches_flush(l);
	describe_flush(l);
}

static int on_batch_timer(struct loop *loop, void *userdata)
{
	struct launcher *l = userdata;
	uint64_t now = clock_monotonic_usec();

	(void)loop;
	l->batch_timer = sd_event_source_disable_unref(l->batch_timer);
	if (now - l->batch_last_usec < BATCH_IDLE_USEC && now - l->batch_first_usec < BATCH_MAX_USEC &&
	    loop_add_timer(l->d->loop, BATCH_IDLE_USEC - (now - l->batch_last_usec), on_batch_timer, l,
			   &l->batch_timer) >= 0)
		return 0;
	batches_flush(l);
	return 0;
}

static int on_batch_soon(struct loop *loop, void *userdata)
{
	struct launcher *l = userdata;

	(void)loop;
	l->batch_soon = sd_event_source_disable_unref(l->batch_soon);
	if (l->launches_before_batcher == 0)
		fleet_batches_flush(l); /* else the idle window's timer sends them */
	return 0;
}

static int batch_arm(struct launcher *l)
{
	uint64_t now = clock_monotonic_usec();

	l->batch_last_usec = now;
	if (l->batch_timer)
		return 0;
	l->batch_first_usec = now;
	return loop_add_timer(l->d->loop, BATCH_IDLE_USEC, on_batch_timer, l, &l->batch_timer);
}

int fleet_batcher_add(struct launcher *l, struct launch *la, const char *key)
{
	struct fleet_batch *b = hashmap_get(&l->fleet_batches, key);
	int r;

	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return -ENOMEM;
		b->l = l;
		r = hashmap_put(&l->fleet_batches, key, b, NULL);
		if (r < 0) {
			free(b);
			return r;
		}
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 8;
		struct launch **m = realloc(b->members, cap * sizeof(*m));

		if (!m)
			return -ENOMEM;
		b->members = m;
		b->cap = cap;
	}
	launch_account_busy(la);
	la->busy = true;
	b->members[b->n++] = la;
	launch_reached_batcher(la);
	if (b->n == FLEET_MAX_INSTANCES) {
		/* Full: it goes now, a new one starts for the next member. */
		hashmap_remove(&l->fleet_batches, key);
		batch_start(b);
		return 0;
	}
	r = batch_arm(l);
	/* The last launch on its way here (a plan's only NodeClaim, or the
	 * last of its identical ones): waiting out the idle window would
	 * gather nothing more but a plan not received yet. Checked again once
	 * the loop is back (the rest of a plan may be being enqueued). */
	if (r >= 0 && l->launches_before_batcher == 0 && !l->batch_soon)
		r = loop_add_timer(l->d->loop, 0, on_batch_soon, l, &l->batch_soon);
	return r;
}

int describe_batcher_add(struct launcher *l, struct launch *la)
{
	la->next_describe = l->describe_head;
	l->describe_head = la;
	return batch_arm(l);
}

void batcher_done(struct launcher *l)
{
	const char *key;
	void *value;
	size_t it = 0;

	while (hashmap_next(&l->fleet_batches, &it, &key, &value))
		fleet_batch_free(value);
	hashmap_done(&l->fleet_batches);
	if (l->batch_timer)
		l->batch_timer = sd_event_source_disable_unref(l->batch_timer);
	if (l->batch_soon)
		l->batch_soon = sd_event_source_disable_unref(l->batch_soon);
}

/* ---- recovery ----------------------------------------------------------------------------------- */

struct find_batched {
	struct launch *la;
};

static int cmp_ec2_instance_id(const void *a, const void *b)
{
	return strcmp(((const struct ec2_instance *)a)->instance_id,
		      ((const struct ec2_instance *)b)->instance_id);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The batch's instances and NodeClaims, matched as on_batch_fleet matched
 * them: instances tagged with a NodeClaim, or recorded as one's providerID,
 * belong to it; the others go in id order to the NodeClaims without one, in
 * name order.
 */
static void on_find_batched(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct launch *la = userdata;
	const struct state_store *st = launcher_store(la->l);
	const struct state_entry *e;
	struct ec2_instance found[FLEET_MAX_INSTANCES];
	char *claims[FLEET_MAX_INSTANCES];
	bool taken[FLEET_MAX_INSTANCES] = { false };
	size_t n_claims = 0, it = 0, k = 0;
	int n;

	(void)c;
	launch_resume(la);
	if (resp->result < 0) {
		launch_retry_later(la, "look for the instance of a batched NodeClaim",
				   aws_response_strerror(resp));
		return;
	}
	n = ec2_instances_parse(resp->xml, found, FLEET_MAX_INSTANCES);
	if (n < 0) {
		launch_retry_later(la, "look for the instance of a batched NodeClaim",
				   "DescribeInstances returned an unexpected document");
		return;
	}
	qsort(found, (size_t)n, sizeof(found[0]), cmp_ec2_instance_id);
	/* NodeClaims of this batch that still need an instance, by name. */
	while ((e = state_store_next(st, &it)) && n_claims < FLEET_MAX_INSTANCES) {
		const struct proto_nodeclaim *nc;
		bool owns = false;

		if (e->obj.kind != PROTO_OBJECT_NODECLAIM)
			continue;
		nc = e->obj.nodeclaim;
		if (!streq_ptr(nc->fleet_batch, la->fleet_batch))
			continue;
		for (int i = 0; i < n; i++)
			if (streq(found[i].nodeclaim, nc->name) ||
			    (nc->provider_id && strstr(nc->provider_id, found[i].instance_id))) {
				taken[i] = true;
				owns = true;
			}
		if (!owns || streq(nc->name, la->name))
			claims[n_claims++] = nc->name;
	}
	qsort(claims, n_claims, sizeof(claims[0]), cmp_str);
	for (int i = 0; i < n; i++) {
		if (streq(found[i].nodeclaim, la->name)) {
			k = (size_t)i;
			goto adopt;
		}
	}
	for (size_t ci = 0; ci < n_claims; ci++) {
		while ((int)k < n && taken[k])
			k++;
		if ((int)k >= n)
			break;
		if (streq(claims[ci], la->name))
			goto adopt;
		k++;
	}
	/* The batch launched nothing for this NodeClaim: launch it alone. */
	la->fleet_batch[0] = 0;
	la->step = STEP_FLEET;
	launch_advance(la);
	return;
adopt:
	log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "instance", found[k].instance_id }),
		    "found instance %s of fleet batch %s for nodeclaim %s", found[k].instance_id,
		    la->fleet_batch, la->name);
	launch_adopt_instance(la, &found[k]);
	if (!streq(found[k].nodeclaim, la->name))
		launcher_tag_instance(la->l, found[k].instance_id, la->name);
	la->step = STEP_RECORD;
	launch_advance(la);
}

void launch_find_batched_instance(struct launch *la)
{
	struct aws_query *q = NULL;
	const char *states[] = { "pending", "running" };
	const char *token[] = { la->fleet_batch };
	int r;

	if ((r = aws_query_new("DescribeInstances", "2016-11-15", &q)) >= 0 &&
	    (r = aws_query_add_filter(q, 1, "tag:" FLEET_BATCH_ANNOTATION, token, 1)) >= 0)
		r = aws_query_add_filter(q, 2, "instance-state-name", states, 2);
	if (r < 0) {
		aws_query_free(q);
		launch_retry_later(la, "look for the instance of a batched NodeClaim", strerror(-r));
		return;
	}
	launch_account_busy(la);
	la->busy = true;
	r = aws_call_query(la->l->aws, "ec2", q, on_find_batched, la);
	if (r < 0) {
		la->busy = false;
		launch_retry_later(la, "look for the instance of a batched NodeClaim", strerror(-r));
	}
}
