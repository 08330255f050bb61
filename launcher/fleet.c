/*
 * CreateFleet request building and DescribeInstances reading (see fleet.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"
#include "common/util.h"
#include "launcher/fleet-request.h"
#include "launcher/fleet.h"

static const char *const capacity_codes[] = {
	"InsufficientInstanceCapacity", "MaxSpotInstanceCountExceeded", "VcpuLimitExceeded",
	"UnfulfillableCapacity", "Unsupported", "InsufficientFreeAddressesInSubnet",
	"ReservationCapacityExceeded", "InsufficientCapacity",
};

bool fleet_error_is_capacity(const char *code)
{
	for (size_t i = 0; code && i < ARRAY_SIZE(capacity_codes); i++)
		if (streq(code, capacity_codes[i]))
			return true;
	return false;
}

static bool offering_usable(const struct fleet_input *in, const char *type,
			    const struct proto_offering *o, uint8_t ct)
{
	if (o->capacity_type != ct || !o->available)
		return false;
	return !in->unavailable || !in->unavailable(type, o->zone, ct, in->userdata);
}

static const struct fleet_subnet *subnet_in_zone(const struct launch_config *cfg, const char *zone)
{
	for (size_t i = 0; i < cfg->n_subnets; i++)
		if (streq_ptr(cfg->subnets[i].zone, zone))
			return &cfg->subnets[i];
	return NULL;
}

static int config_of(const struct fleet_input *in, const char *type)
{
	const char *arch = in->arch_of ? in->arch_of(type, in->userdata) : NULL;

	for (size_t c = 0; c < in->n_configs; c++)
		if (!arch || streq(arch, in->arches[c]))
			return (int)c;
	return -1;
}

/* Launch templates one request may name (one per architecture). */
#define FLEET_MAX_CONFIGS 8

struct override {
	const char *instance_type;
	const struct fleet_subnet *subnet;
	size_t config;
};

/* The usable overrides of capacity type ct, in candidate order, at most
 * FLEET_MAX_OVERRIDES; collected once so that counting and writing them
 * can never disagree (an offering may turn available in between). */
static size_t overrides_collect(const struct fleet_input *in, uint8_t ct, struct override *out)
{
	const struct proto_planned_nodeclaim *p = in->planned;
	size_t n = 0;

	for (uint32_t t = 0; t < p->n_instance_types; t++) {
		const struct proto_candidate *cand = &p->instance_types[t];
		int c = config_of(in, cand->name);

		if (c < 0)
			continue;
		for (uint32_t k = 0; k < cand->n_offerings; k++) {
			const struct proto_offering *o = &cand->offerings[k];
			const struct fleet_subnet *sn;

			if (!offering_usable(in, cand->name, o, ct) ||
			    !(sn = subnet_in_zone(&in->configs[c], o->zone)))
				continue;
			if (n == FLEET_MAX_OVERRIDES)
				return n;
			out[n++] = (struct override){ cand->name, sn, (size_t)c };
		}
	}
	return n;
}

/*
 * LaunchTemplateConfigs.N with its overrides, only for the launch templates
 * that have some, numbered from 1 without gaps: EC2 refuses the whole
 * request when one names a launch template without overrides
 * (MissingParameter LaunchTemplateConfigs.N.Overrides), and Karpenter sends
 * only the launch templates that have instance types.
 */
static int configs_add(const struct fleet_input *in, struct aws_query *q, const struct override *o,
		       size_t n)
{
	size_t slot = 0;
	int r;

	for (size_t c = 0; c < in->n_configs; c++) {
		size_t k = 0;

		for (size_t i = 0; i < n; i++) {
			if (o[i].config != c)
				continue;
			if (k++ == 0) {
				slot++;
				if ((r = aws_query_add(q, in->configs[c].launch_template_name,
						       "LaunchTemplateConfigs.%zu.LaunchTemplateSpecification."
						       "LaunchTemplateName", slot)) < 0 ||
				    (r = aws_query_add(q, "$Latest",
						       "LaunchTemplateConfigs.%zu.LaunchTemplateSpecification."
						       "Version", slot)) < 0)
					return r;
			}
			if ((r = aws_query_add(q, o[i].instance_type,
					       "LaunchTemplateConfigs.%zu.Overrides.%zu.InstanceType", slot, k)) < 0 ||
			    (r = aws_query_add(q, o[i].subnet->id, "LaunchTemplateConfigs.%zu.Overrides.%zu.SubnetId",
					       slot, k)) < 0 ||
			    /* EC2 echoes the overrides as sent: without the
			     * zone, neither a launch nor a capacity error
			     * says where (Karpenter sends it for this too). */
			    (r = aws_query_add(q, o[i].subnet->zone,
					       "LaunchTemplateConfigs.%zu.Overrides.%zu.AvailabilityZone", slot, k)) < 0 ||
			    (r = aws_query_add(q, in->configs[c].image_id,
					       "LaunchTemplateConfigs.%zu.Overrides.%zu.ImageId", slot, k)) < 0)
				return r;
		}
	}
	return 0;
}

static bool capacity_type_allowed(const struct proto_planned_nodeclaim *p, const char *ct)
{
	for (uint32_t i = 0; i < p->n_requirements; i++) {
		const struct proto_requirement *r = &p->requirements[i];
		bool listed = false;

		if (!streq(r->key, "karpenter.sh/capacity-type"))
			continue;
		for (uint32_t v = 0; v < r->n_values; v++)
			listed |= streq(r->values[v], ct);
		if ((r->op == PROTO_OP_IN && !listed) || (r->op == PROTO_OP_NOT_IN && listed) ||
		    r->op == PROTO_OP_DOES_NOT_EXIST)
			return false;
	}
	return true;
}

int fleet_query_build(const struct fleet_input *in, struct aws_query **ret,
		      uint8_t *ret_capacity_type, size_t *ret_n_overrides)
{
	_cleanup_(aws_query_freep) struct aws_query *q = NULL;
	_cleanup_free_ struct override *o = NULL;
	uint8_t ct = PROTO_CAPACITY_SPOT;
	size_t n = 0, tag_spec = 0;
	int r;

	if (in->n_configs > FLEET_MAX_CONFIGS)
		return -EINVAL;
	o = calloc(FLEET_MAX_OVERRIDES, sizeof(*o));
	if (!o)
		return -ENOMEM;
	if (capacity_type_allowed(in->planned, "spot"))
		n = overrides_collect(in, PROTO_CAPACITY_SPOT, o);
	if (n == 0) {
		ct = PROTO_CAPACITY_ON_DEMAND;
		if (capacity_type_allowed(in->planned, "on-demand"))
			n = overrides_collect(in, ct, o);
	}
	if (n == 0)
		return -ENOENT;
	if ((r = aws_query_new("CreateFleet", "2016-11-15", &q)) < 0 ||
	    (r = aws_query_add(q, "instant", "Type")) < 0 ||
	    (r = aws_query_add(q, in->client_token, "ClientToken")) < 0 ||
	    (r = aws_query_add_int(q, in->capacity ? in->capacity : 1,
				   "TargetCapacitySpecification.TotalTargetCapacity")) < 0 ||
	    (r = aws_query_add(q, ct == PROTO_CAPACITY_SPOT ? "spot" : "on-demand",
			       "TargetCapacitySpecification.DefaultTargetCapacityType")) < 0)
		return r;
	if (ct == PROTO_CAPACITY_SPOT)
		r = aws_query_add(q, "price-capacity-optimized", "SpotOptions.AllocationStrategy");
	else
		r = aws_query_add(q, "lowest-price", "OnDemandOptions.AllocationStrategy");
	if (r < 0 || (r = configs_add(in, q, o, n)) < 0)
		return r;
	/* Instances and their volumes carry the tags GC relies on. */
	for (const char *rt = "instance"; rt; rt = streq(rt, "instance") ? "volume" : NULL) {
		tag_spec++;
		if ((r = aws_query_add(q, rt, "TagSpecification.%zu.ResourceType", tag_spec)) < 0)
			return r;
		for (size_t t = 0; t < in->n_tags; t++)
			if ((r = aws_query_add(q, in->tags[t].key, "TagSpecification.%zu.Tag.%zu.Key",
					       tag_spec, t + 1)) < 0 ||
			    (r = aws_query_add(q, in->tags[t].value, "TagSpecification.%zu.Tag.%zu.Value",
					       tag_spec, t + 1)) < 0)
				return r;
	}
	*ret = TAKE_PTR(q);
	*ret_capacity_type = ct;
	*ret_n_overrides = n;
	return 0;
}

size_t planned_remove_offering(struct proto_planned_nodeclaim *p, const char *type,
			       const char *zone, uint8_t capacity_type)
{
	size_t left = 0;
	uint32_t keep = 0;

	for (uint32_t t = 0; t < p->n_instance_types; t++) {
		struct proto_candidate *c = &p->instance_types[t];
		uint32_t k2 = 0;

		for (uint32_t k = 0; k < c->n_offerings; k++) {
			struct proto_offering *o = &c->offerings[k];

			if (streq(c->name, type) && streq_ptr(o->zone, zone) &&
			    o->capacity_type == capacity_type)
				continue;
			c->offerings[k2++] = *o;
		}
		c->n_offerings = k2;
		if (k2 == 0)
			continue;
		left += k2;
		p->instance_types[keep++] = *c;
	}
	p->n_instance_types = keep;
	return left;
}

size_t planned_count_offerings(const struct proto_planned_nodeclaim *p,
			       bool (*unavailable)(const char *, const char *, uint8_t, void *),
			       void *userdata)
{
	size_t n = 0;

	for (uint32_t t = 0; t < p->n_instance_types; t++)
		for (uint32_t k = 0; k < p->instance_types[t].n_offerings; k++) {
			const struct proto_offering *o = &p->instance_types[t].offerings[k];

			if (o->available && (!unavailable || !unavailable(p->instance_types[t].name,
									   o->zone, o->capacity_type,
									   userdata)))
				n++;
		}
	return n;
}
