/*
 * The EventBridge events the interruption queue carries, parsed into one
 * small struct: bytes in, struct out, no I/O (interruption-message.c).
 * interruption.c receives the SQS messages and acts on what this says;
 * the unit tests and the fuzz target call it alone.
 */
#ifndef KANNA_REAPER_INTERRUPTION_MESSAGE_H
#define KANNA_REAPER_INTERRUPTION_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* SQS's largest message body (SendMessage: "The maximum size is 1 MiB or
 * 1,048,576 bytes"); anything longer did not come from the queue. */
#define INTERRUPTION_MESSAGE_MAX_BYTES (1024 * 1024)
/* Instances one event may name: an AWS Health event lists its affected
 * entities, a handful in practice; the bound keeps a hostile body from
 * making the reaper look up millions of ids. */
#define INTERRUPTION_MESSAGE_MAX_INSTANCES 1000
/* Room for the reason a message is malformed. */
#define INTERRUPTION_WHY_MAX 256

/* Karpenter's message kinds (messages/types.go); their names are its
 * message_type metric label. */
enum interruption_kind {
	INTERRUPTION_NO_OP,                    /* not ours to act on: deleted */
	INTERRUPTION_SPOT_INTERRUPTED,         /* EC2 Spot Instance Interruption Warning */
	INTERRUPTION_REBALANCE_RECOMMENDATION, /* EC2 Instance Rebalance Recommendation */
	INTERRUPTION_SCHEDULED_CHANGE,         /* AWS Health Event, EC2 scheduledChange */
	INTERRUPTION_INSTANCE_STOPPED,         /* state change: stopping, stopped */
	INTERRUPTION_INSTANCE_TERMINATED,      /* state change: shutting-down, terminated */
	INTERRUPTION_KIND_MAX,
};

/* What the reaper does for a NodeClaim a message names (Karpenter's
 * actionForMessage in controllers/interruption). */
enum interruption_action {
	INTERRUPTION_NO_ACTION,        /* an Event only */
	INTERRUPTION_CORDON_AND_DRAIN, /* delete the NodeClaim: taint, drain, terminate */
};

struct interruption_message {
	enum interruption_kind kind;
	char *id;          /* the event's id (NULL: it had none) */
	char *source;      /* "aws.ec2", "aws.health" */
	char *detail_type; /* "EC2 Spot Instance Interruption Warning" */
	char *state;       /* state changes: detail.state as sent */
	int64_t time_s;    /* the event's time, Unix seconds (0: none) */
	char **instance_ids;
	size_t n_instance_ids;
};

/* An Event recorded on the NodeClaim and its Node (Karpenter's
 * controllers/interruption/events). */
struct interruption_notice {
	const char *reason;
	const char *message;
	bool warning;
};

/*
 * Parses one message body. 0: *ret is filled (kind INTERRUPTION_NO_OP for
 * an event the reaper does not act on); free it with
 * interruption_message_done(). -EBADMSG: malformed (not JSON, a required
 * field missing, a field of the wrong type); why says which field and
 * why, and *ret is empty. -ENOMEM: out of memory.
 */
int interruption_message_parse(const char *body, size_t len, struct interruption_message *ret,
			       char *why, size_t why_len);
void interruption_message_done(struct interruption_message *m);

/* "spot_interrupted", … "no_op". */
const char *interruption_kind_name(enum interruption_kind kind);
enum interruption_action interruption_action_for(enum interruption_kind kind);
/* The Event a kind records (NULL reason: none, for INTERRUPTION_NO_OP). */
struct interruption_notice interruption_notice_for(enum interruption_kind kind);

#endif
