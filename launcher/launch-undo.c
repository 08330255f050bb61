/*
 * A NodeClaim deleted while it is being launched (by a user, by a test, by
 * anything but us). Its launch stops at the next step: nothing more is
 * asked of EC2 for it, a CreateFleet still queued or batched is not sent,
 * and whatever a CreateFleet already sent launched for it is terminated.
 * Then its pods go back to the schedulers and the NodeClaim's finalizer,
 * which guarded no instance of ours any more, is removed.
 *
 * DESIGN §2 gives terminations to the reaper. This is not one of those: an
 * instance the launcher launched for a NodeClaim that no longer exists is
 * recorded nowhere, no finalizer will ever terminate it, and only the
 * launcher knows it is there; terminating it is the launcher undoing its
 * own write, as it deletes a NodeClaim of its own that never launched. The
 * reaper's garbage collection stays the safety net for what a crash loses.
 * Once the launch is recorded on the NodeClaim (providerID), the instance
 * is the NodeClaim's, and its finalizer is the reaper's.
 *
 * launch.c calls launch_undo() from launch_advance() instead of the next
 * step; daemon.c reports deletions seen in the replica; launch-node.c
 * reports a NodeClaim found gone (404).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"
#include "common/log.h"
#include "state/state-store.h"
#include "launcher/fleet.h"
#include "launcher/launcher.h"

/* Undoing never gives up (an instance would leak): it retries this often,
 * doubling up to the cap. */
#define UNDO_BACKOFF_BASE_USEC (1ULL * 1000 * 1000)
#define UNDO_BACKOFF_CAP_USEC (30ULL * 1000 * 1000)
/* Instances of one NodeClaim looked for at once (normally at most one). */
#define UNDO_MAX_FOUND 16

void launcher_nodeclaim_deleted(struct launcher *l, const char *name, const char *uid)
{
	struct launch *la = hashmap_get(&l->launches, name);

	/* No UID yet: the deleted object is an older one of that name. */
	if (!la || la->deleted || la->step == STEP_DONE || !la->uid || !streq_ptr(uid, la->uid))
		return;
	la->deleted = true;
	log_info_kv(LOG_KV({ "nodeclaim", la->name }),
		    "nodeclaim %s was deleted while launching; stopping its launch", la->name);
	if (la->timer) {
		/* Waiting out a backoff: there is nothing left to wait for. */
		la->timer = sd_event_source_disable_unref(la->timer);
		launch_resume(la);
		launch_advance(la);
	}
	/* Otherwise a request of ours is outstanding, or the launch waits in
	 * the queue or a batch: it stops where it would go on. */
}

static void undo_retry_later(struct launch *la, const char *what, const char *why)
{
	uint64_t delay = MIN(UNDO_BACKOFF_BASE_USEC << MIN(la->failures, 5u), UNDO_BACKOFF_CAP_USEC);

	la->failures++;
	log_warn_kv(LOG_KV({ "nodeclaim", la->name }),
		    "Failed to %s of deleted nodeclaim %s: %s; retrying in %.1f s", what, la->name, why,
		    (double)delay / 1e6);
	if (launch_retry_in(la, delay) < 0)
		log_error_kv(LOG_KV({ "nodeclaim", la->name }),
			     "Failed to schedule a retry for deleted nodeclaim %s: out of memory; its "
			     "instance is left to garbage collection", la->name);
}

struct terminate_ctx {
	struct launch *la;
	char ids[UNDO_MAX_FOUND][sizeof(((struct ec2_instance *)0)->instance_id)];
	size_t n;
};

static void on_terminated(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct terminate_ctx *t = userdata;
	struct launch *la = t->la;

	(void)c;
	launch_resume(la);
	/* Gone already is what we asked for. */
	if (resp->result < 0 && !streq(resp->error.code, "InvalidInstanceID.NotFound")) {
		undo_retry_later(la, "terminate the instance", aws_response_strerror(resp));
		return;
	}
	for (size_t i = 0; i < t->n; i++)
		log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "instance", t->ids[i] }),
			    "terminated instance %s launched for deleted nodeclaim %s", t->ids[i],
			    la->name);
	la->launched.instance_id[0] = 0;
	la->fleet_in_doubt = false;
	la->failures = 0;
	launch_advance(la);
}

static void terminate(struct terminate_ctx *t)
{
	struct launch *la = t->la;
	struct aws_query *q = NULL;
	int r = aws_query_new("TerminateInstances", "2016-11-15", &q);

	for (size_t i = 0; r >= 0 && i < t->n; i++)
		r = aws_query_add(q, t->ids[i], "InstanceId.%zu", i + 1);
	if (r >= 0) {
		launch_account_busy(la);
		la->busy = true;
		r = aws_call_query_owned(la->l->aws, "ec2", q, on_terminated, t);
		t = NULL; /* the client's, also when it failed */
		q = NULL;
		if (r < 0)
			la->busy = false;
	}
	aws_query_free(q);
	if (r < 0) {
		free(t);
		undo_retry_later(la, "terminate the instance", strerror(-r));
	}
}

static void on_looked(struct aws_client *c, const struct aws_response *resp, void *userdata)
{
	struct launch *la = userdata;
	struct ec2_instance found[UNDO_MAX_FOUND];
	struct terminate_ctx *t;
	int n;

	(void)c;
	launch_resume(la);
	if (resp->result < 0) {
		undo_retry_later(la, "look for the instance", aws_response_strerror(resp));
		return;
	}
	n = ec2_instances_parse(resp->xml, found, ARRAY_SIZE(found));
	if (n < 0) {
		undo_retry_later(la, "look for the instance", "DescribeInstances returned an unexpected document");
		return;
	}
	if (n == 0) {
		la->fleet_in_doubt = false;
		la->failures = 0;
		launch_advance(la);
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		undo_retry_later(la, "terminate the instance", "out of memory");
		return;
	}
	t->la = la;
	for (int i = 0; i < n; i++)
		memcpy(t->ids[t->n++], found[i].instance_id, sizeof(t->ids[0]));
	terminate(t);
}

/* A CreateFleet of ours went out and its answer never came: what it
 * launched carries the karpenter.sh/nodeclaim tag (TagSpecification). */
static void look(struct launch *la)
{
	struct aws_query *q = NULL;
	const char *states[] = { "pending", "running" };
	const char *name[] = { la->name };
	int r;

	if ((r = aws_query_new("DescribeInstances", "2016-11-15", &q)) >= 0 &&
	    (r = aws_query_add_filter(q, 1, "tag:karpenter.sh/nodeclaim", name, 1)) >= 0)
		r = aws_query_add_filter(q, 2, "instance-state-name", states, 2);
	if (r >= 0) {
		launch_account_busy(la);
		la->busy = true;
		r = aws_call_query(la->l->aws, "ec2", q, on_looked, la);
		q = NULL;
		if (r < 0)
			la->busy = false;
	}
	aws_query_free(q);
	if (r < 0)
		undo_retry_later(la, "look for the instance", strerror(-r));
}

/* The NodeClaim, still there, names an instance: a recovered one, or ours
 * just recorded. */
static bool launch_recorded(struct launch *la)
{
	const struct state_entry *e = state_store_get(launcher_store(la->l), PROTO_OBJECT_NODECLAIM,
						      "", la->name);

	return la->step > STEP_RECORD ||
	       (e && e->obj.nodeclaim->provider_id && streq_ptr(e->obj.nodeclaim->uid, la->uid));
}

void launch_undo(struct launch *la)
{
	if (!la->undoing) {
		la->undoing = true;
		la->failures = 0;
	}
	if (launch_recorded(la)) {
		log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "instance", la->launched.instance_id }),
			    "nodeclaim %s was deleted after instance %s was recorded on it; its "
			    "termination finalizer is the reaper's", la->name, la->launched.instance_id);
		launch_finish(la, false);
		return;
	}
	if (*la->launched.instance_id) {
		struct terminate_ctx *t = calloc(1, sizeof(*t));

		if (!t) {
			undo_retry_later(la, "terminate the instance", "out of memory");
			return;
		}
		t->la = la;
		snprintf(t->ids[t->n++], sizeof(t->ids[0]), "%.*s", (int)sizeof(t->ids[0]) - 1,
			 la->launched.instance_id);
		log_info_kv(LOG_KV({ "nodeclaim", la->name }, { "instance", la->launched.instance_id }),
			    "terminating instance %s, launched for nodeclaim %s which was deleted",
			    la->launched.instance_id, la->name);
		terminate(t);
		return;
	}
	if (la->fleet_in_doubt) {
		look(la);
		return;
	}
	launch_give_up(la, PROTO_LAUNCH_FAILED, "its NodeClaim was deleted while it was launching");
}
