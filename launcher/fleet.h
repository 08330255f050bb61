/*
 * The CreateFleet call of one NodeClaim, built from its candidates (pure:
 * no I/O, unit-tested): the capacity type (spot when the NodeClaim allows it
 * and a spot offering is available, else on-demand, as Karpenter does), one
 * LaunchTemplateConfig per architecture that has overrides (candidate types
 * × the subnet of each zone they are offered in; EC2 refuses a whole
 * request that names a launch template without any), the allocation strategy
 * (price-capacity-optimized for spot, lowest-price for on-demand), the tags
 * of DESIGN §2 rule 3, and the idempotency ClientToken. Also the reading of
 * DescribeInstances and which EC2 error codes mean "no capacity here".
 */
#ifndef KANNA_LAUNCHER_FLEET_H
#define KANNA_LAUNCHER_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/aws-ec2.h"
#include "launcher/nodeclass.h"
#include "proto/proto.h"

struct aws_query;
struct aws_xml_node;

/* EC2 allows up to 300 overrides per CreateFleet request (all configs). */
#define FLEET_MAX_OVERRIDES 300

struct fleet_tag {
	const char *key, *value;
};

struct fleet_input {
	const char *client_token;
	const struct proto_planned_nodeclaim *planned;
	/* One launch template per architecture; arch_of(type) picks the config. */
	const char *const *arches;
	const struct launch_config *configs;
	size_t n_configs;
	const char *(*arch_of)(const char *instance_type, void *userdata);
	/* Offerings to skip (recently without capacity); may be NULL. */
	bool (*unavailable)(const char *instance_type, const char *zone, uint8_t capacity_type,
			    void *userdata);
	void *userdata;
	const struct fleet_tag *tags;
	size_t n_tags;
	unsigned capacity; /* instances to launch; 0 means 1 */
};

/*
 * Builds the query. *ret_capacity_type gets the chosen capacity type and
 * *ret_n_overrides the number of overrides. -ENOENT when no candidate
 * offering has a subnet in its zone (nothing left to try), -ENOMEM.
 */
int fleet_query_build(const struct fleet_input *in, struct aws_query **ret,
		      uint8_t *ret_capacity_type, size_t *ret_n_overrides);

/* True for the EC2 error codes that mean an offering has no capacity now
 * (Karpenter's unfulfillable-capacity codes). */
bool fleet_error_is_capacity(const char *code);

/* Drops the offering (type, zone, capacity type) from planned's candidates;
 * a candidate left with no offering is dropped. Returns how many remain. */
size_t planned_remove_offering(struct proto_planned_nodeclaim *planned, const char *type,
			       const char *zone, uint8_t capacity_type);
/* Offerings of planned that are still usable (not unavailable per the callback). */
size_t planned_count_offerings(const struct proto_planned_nodeclaim *planned,
			       bool (*unavailable)(const char *, const char *, uint8_t, void *),
			       void *userdata);


#endif
