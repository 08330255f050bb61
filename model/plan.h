/*
 * Turning a solve into the launch plan the launcher consumes (proto
 * launch_plan), see plan.c.
 */
#ifndef KANNA_MODEL_PLAN_H
#define KANNA_MODEL_PLAN_H

#include "common/arena.h"
#include "proto/proto.h"
#include "model/solver.h"

struct plan_context {
	uint32_t shard;
	uint64_t batch_id;
	uint64_t state_seq;
	uint64_t nonce; /* random per batch: NodeClaim names never collide */
	/* The node class a NodePool launches with (its nodeClassRef name). */
	const char *(*nodeclass_of)(const char *nodepool, void *userdata);
	void *userdata;
};

int plan_build(struct arena *a, const struct cluster *c, const struct sched_result *res,
	       const struct plan_context *ctx, struct proto_launch_plan *plan);

/* The 5-character suffix of a planned NodeClaim's name ("default-x7k2q"). */
void nodeclaim_suffix(uint64_t nonce, uint64_t batch_id, uint32_t index, char out[static 6]);

#endif
