/*
 * The launcher trusts no plan: before anything is created, a planned
 * NodeClaim is re-evaluated against its NodePool with the scheduler's own
 * requirement code (model/). Its requirements must lie within the
 * NodePool's, it must name the NodePool's EC2NodeClass, and each candidate
 * offering (instance type × zone × capacity type) must satisfy the
 * NodePool's and the NodeClaim's requirements (every operator, minValues),
 * be offered by the catalog, lie in a zone one of the EC2NodeClass's
 * subnets covers, have an AMI for its architecture, and not be in the
 * unavailable-offerings cache. admit.c calls it before the limits check;
 * pure over its inputs so that every rule is unit-tested.
 */
#ifndef KANNA_LAUNCHER_ADMIT_REQUIREMENTS_H
#define KANNA_LAUNCHER_ADMIT_REQUIREMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

/* Why a candidate (or one of its offerings) was dropped; the metric's
 * reason label is admit_drop_reason_name(). */
enum admit_drop_reason {
	ADMIT_DROP_UNKNOWN_TYPE,  /* not in the launcher's catalog */
	ADMIT_DROP_REQUIREMENTS,  /* the NodePool's or NodeClaim's requirements refuse it */
	ADMIT_DROP_NOT_OFFERED,   /* the catalog has no such offering */
	ADMIT_DROP_NODECLASS,     /* no subnet in its zone, no AMI for its architecture */
	ADMIT_DROP_UNAVAILABLE,   /* in the unavailable-offerings cache */
	_ADMIT_DROP_MAX,
};
const char *admit_drop_reason_name(enum admit_drop_reason r);

struct admit_drop {
	const char *instance_type;
	const char *zone; /* NULL: the whole type */
	uint8_t capacity_type;
	enum admit_drop_reason reason;
	const char *why;
};

struct admit_requirements_input {
	const struct proto_nodepool *nodepool;
	/* The NodePool's EC2NodeClass; NULL (not known yet) or one without
	 * resolved subnets / AMIs: zones / architectures are left to the
	 * resolution at launch, which refuses what it cannot serve. */
	const struct proto_nodeclass *nodeclass;
	const char *region;
	/* The launcher's catalog entry of a type, or NULL. */
	const struct proto_instance_type *(*find_type)(const char *name, void *userdata);
	/* May be NULL: no offering is unavailable. */
	bool (*unavailable)(const char *type, const char *zone, uint8_t capacity_type, void *userdata);
	/* Told of each drop (may be NULL); d lives during the call. */
	void (*dropped)(const struct admit_drop *d, void *userdata);
	void *userdata;
};

/* Candidates (or offerings) dropped, by reason. */
struct admit_requirements_result {
	uint32_t dropped[_ADMIT_DROP_MAX];
};

/*
 * Prunes p's candidates and offerings to those that may be launched, in
 * place (order kept). Returns 0 with p pruned — possibly to no candidate
 * when every drop was for want of capacity (the unavailable-offerings
 * cache), which the caller reports as such; -EPERM when the NodeClaim is
 * refused as a whole (requirements not within the NodePool's, another
 * EC2NodeClass, no candidate left, minValues no longer met), with why
 * saying so; -ENOMEM; -EINVAL (why filled) when the NodePool's or the
 * NodeClaim's requirements cannot be read.
 */
int admit_requirements(const struct admit_requirements_input *in, struct proto_planned_nodeclaim *p,
		       struct admit_requirements_result *ret, char *why, size_t size);

#endif
