/*
 * EC2 network answers of kanna-sim: DescribeAvailabilityZones,
 * DescribeSubnets (one subnet per zone) and DescribeSecurityGroups (one
 * group per region), both tagged karpenter.sh/discovery=<cluster> so that
 * EC2NodeClass selector terms find them. Built from the catalog's regions;
 * called by aws_dispatch() with the lock held; changes no state.
 */
#include "sim/aws-internal.h"

#define DISCOVERY_TAG "karpenter.sh/discovery"
/* A /20 has 4096 addresses; AWS reserves 5 of them in every subnet. */
#define SUBNET_USABLE_ADDRESSES 4091

static const char *const zone_filters[] = {
	"zone-name", "zone-id", "region-name", "state", "zone-type", NULL,
};

static bool name_listed(const struct aws_params *p, const char *prefix, const char *value,
			size_t *ret_n)
{
	size_t n = aws_params_count(p, prefix);

	*ret_n = n;
	for (size_t k = 0; k < n; k++)
		if (streq_ptr(aws_params_getf(p, "%s.%zu", prefix, k + 1), value))
			return true;
	return n == 0;
}

static bool zone_matches(const struct aws_region *reg, const struct aws_zone *z,
			 const struct aws_filters *f)
{
	for (size_t i = 0; i < f->n; i++) {
		const char *n = f->v[i].name;
		const char *v = streq(n, "zone-name") ? z->name :
				streq(n, "zone-id") ? z->zone_id :
				streq(n, "region-name") ? reg->name :
				streq(n, "state") ? "available" : "availability-zone";

		if (!aws_filter_matches(&f->v[i], v))
			return false;
	}
	return true;
}

int ec2_describe_availability_zones(struct sim_aws *aws, const struct aws_request *req,
				    struct aws_response *resp)
{
	const struct aws_region *reg = aws_catalog_region(aws->catalog, req->region);
	struct aws_filters f = { 0 };
	size_t n_names, n_ids;
	bool handled;
	struct xml x;
	int r;

	r = ec2_filters_load(req, resp, zone_filters, false, &f, &handled);
	if (r < 0 || handled)
		return r;
	r = xml_begin(&x, "DescribeAvailabilityZonesResponse", EC2_XMLNS);
	if (r < 0) {
		aws_filters_clear(&f);
		return r;
	}
	xml_leaf(&x, "requestId", req->request_id);
	xml_open(&x, "availabilityZoneInfo");
	for (size_t z = 0; z < SIM_AWS_ZONES_PER_REGION; z++) {
		const struct aws_zone *zone = &reg->zones[z];

		if (!name_listed(req->params, "ZoneName", zone->name, &n_names) ||
		    !name_listed(req->params, "ZoneId", zone->zone_id, &n_ids) ||
		    !zone_matches(reg, zone, &f))
			continue;
		xml_open(&x, "item");
		xml_leaf(&x, "zoneName", zone->name);
		xml_leaf(&x, "zoneState", "available");
		xml_leaf(&x, "regionName", reg->name);
		xml_leaf(&x, "zoneId", zone->zone_id);
		xml_leaf(&x, "zoneType", "availability-zone");
		xml_leaf(&x, "groupName", reg->name);
		xml_leaf(&x, "networkBorderGroup", reg->name);
		xml_leaf(&x, "optInStatus", "opt-in-not-required");
		xml_empty(&x, "messageSet");
		xml_close(&x, "item");
	}
	xml_close(&x, "availabilityZoneInfo");
	aws_filters_clear(&f);
	return xml_finish(&x, "DescribeAvailabilityZonesResponse", resp);
}

static void subnet_tags(const struct sim_aws *aws, const struct aws_zone *z,
			struct sim_aws_tag tags[2], char *name, size_t len)
{
	snprintf(name, len, "%s-private-%s", aws->cluster_name, z->name);
	tags[0] = (struct sim_aws_tag){ DISCOVERY_TAG, aws->cluster_name };
	tags[1] = (struct sim_aws_tag){ "Name", name };
}

static const char *const subnet_filters[] = {
	"subnet-id", "vpc-id", "availability-zone", "availability-zone-id", "state",
	"cidr-block", "default-for-az", NULL,
};

static bool subnet_matches(const struct aws_region *reg, const struct aws_zone *z,
			   const struct aws_tags *tags, const struct aws_filters *f)
{
	for (size_t i = 0; i < f->n; i++) {
		const char *n = f->v[i].name;
		const char *v = streq(n, "subnet-id") ? z->subnet_id :
				streq(n, "vpc-id") ? reg->vpc_id :
				streq(n, "availability-zone") ? z->name :
				streq(n, "availability-zone-id") ? z->zone_id :
				streq(n, "state") ? "available" :
				streq(n, "cidr-block") ? z->cidr :
				streq(n, "default-for-az") ? "false" : NULL;

		if (v && !aws_filter_matches(&f->v[i], v))
			return false;
	}
	return aws_tags_match_filters(tags, f);
}

static unsigned subnet_free_addresses(const struct sim_aws *aws, const struct aws_zone *z)
{
	unsigned used = 0;

	for (size_t k = 0; k < aws->n_instances; k++)
		used += aws->instances[k]->zone == z &&
			aws->instances[k]->state != INSTANCE_TERMINATED;
	return used > SUBNET_USABLE_ADDRESSES ? 0 : SUBNET_USABLE_ADDRESSES - used;
}

static void write_subnet(struct xml *x, const struct sim_aws *aws, const struct aws_region *reg,
			 const struct aws_zone *z, const struct aws_tags *tags)
{
	xml_open(x, "item");
	xml_leaf(x, "subnetId", z->subnet_id);
	xml_leaff(x, "subnetArn", "arn:aws:ec2:%s:%s:subnet/%s", reg->name, SIM_AWS_ACCOUNT_ID,
		  z->subnet_id);
	xml_leaf(x, "state", "available");
	xml_leaf(x, "ownerId", SIM_AWS_ACCOUNT_ID);
	xml_leaf(x, "vpcId", reg->vpc_id);
	xml_leaf(x, "cidrBlock", z->cidr);
	xml_empty(x, "ipv6CidrBlockAssociationSet");
	xml_leaff(x, "availableIpAddressCount", "%u", subnet_free_addresses(aws, z));
	xml_leaf(x, "availabilityZone", z->name);
	xml_leaf(x, "availabilityZoneId", z->zone_id);
	xml_leaf_bool(x, "defaultForAz", false);
	xml_leaf_bool(x, "mapPublicIpOnLaunch", false);
	xml_leaf_bool(x, "assignIpv6AddressOnCreation", false);
	xml_tags(x, "tagSet", tags->v, tags->n);
	xml_close(x, "item");
}

int ec2_describe_subnets(struct sim_aws *aws, const struct aws_request *req,
			 struct aws_response *resp)
{
	const struct aws_region *reg = aws_catalog_region(aws->catalog, req->region);
	struct aws_filters f = { 0 };
	struct sim_aws_tag tag_v[2];
	char name[128];
	size_t n_ids, start, limit, n = 0;
	bool handled;
	struct xml x;
	int r;

	r = aws_page_parse(req, resp, PAGE_SUBNETS, &start, &limit, &handled);
	if (r < 0 || handled)
		return r;
	/* An id that is not ours fails the whole call, as EC2 does. */
	for (size_t k = 0; k < aws_params_count(req->params, "SubnetId"); k++) {
		const char *id = aws_params_getf(req->params, "SubnetId.%zu", k + 1);
		const struct aws_region *in = NULL;

		if (!aws_catalog_subnet(aws->catalog, id, &in) || in != reg)
			return aws_error(resp, req, 400, "InvalidSubnetID.NotFound",
					 "The subnet ID '%s' does not exist", id ? id : "");
	}
	r = ec2_filters_load(req, resp, subnet_filters, true, &f, &handled);
	if (r < 0 || handled)
		return r;
	r = xml_begin(&x, "DescribeSubnetsResponse", EC2_XMLNS);
	if (r < 0) {
		aws_filters_clear(&f);
		return r;
	}
	xml_leaf(&x, "requestId", req->request_id);
	xml_open(&x, "subnetSet");
	for (size_t z = 0; z < SIM_AWS_ZONES_PER_REGION; z++) {
		const struct aws_zone *zone = &reg->zones[z];
		struct aws_tags tags = { tag_v, 2 };

		subnet_tags(aws, zone, tag_v, name, sizeof(name));
		if (!name_listed(req->params, "SubnetId", zone->subnet_id, &n_ids) ||
		    !subnet_matches(reg, zone, &tags, &f))
			continue;
		if (n >= start && n - start < limit)
			write_subnet(&x, aws, reg, zone, &tags);
		n++;
	}
	xml_close(&x, "subnetSet");
	if (n > start && n - start > limit)
		aws_page_next_token(&x, start + limit);
	aws_filters_clear(&f);
	return xml_finish(&x, "DescribeSubnetsResponse", resp);
}

static const char *const sg_filters[] = {
	"group-id", "group-name", "vpc-id", "owner-id", "description", NULL,
};

static void write_security_group(struct xml *x, const struct aws_region *reg,
				 const struct aws_tags *tags, const char *name, const char *desc)
{
	xml_open(x, "item");
	xml_leaf(x, "ownerId", SIM_AWS_ACCOUNT_ID);
	xml_leaf(x, "groupId", reg->sg_id);
	xml_leaf(x, "groupName", name);
	xml_leaf(x, "groupDescription", desc);
	xml_leaf(x, "vpcId", reg->vpc_id);
	xml_leaff(x, "securityGroupArn", "arn:aws:ec2:%s:%s:security-group/%s", reg->name,
		  SIM_AWS_ACCOUNT_ID, reg->sg_id);
	xml_empty(x, "ipPermissions");
	xml_open(x, "ipPermissionsEgress");
	xml_open(x, "item");
	xml_leaf(x, "ipProtocol", "-1");
	xml_empty(x, "groups");
	xml_open(x, "ipRanges");
	xml_open(x, "item");
	xml_leaf(x, "cidrIp", "0.0.0.0/0");
	xml_close(x, "item");
	xml_close(x, "ipRanges");
	xml_empty(x, "ipv6Ranges");
	xml_empty(x, "prefixListIds");
	xml_close(x, "item");
	xml_close(x, "ipPermissionsEgress");
	xml_tags(x, "tagSet", tags->v, tags->n);
	xml_close(x, "item");
}

int ec2_describe_security_groups(struct sim_aws *aws, const struct aws_request *req,
				 struct aws_response *resp)
{
	const struct aws_region *reg = aws_catalog_region(aws->catalog, req->region);
	struct sim_aws_tag tag_v[2];
	struct aws_tags tags = { tag_v, 2 };
	struct aws_filters f = { 0 };
	char name[128], desc[160];
	bool handled, match = true;
	size_t start, limit;
	struct xml x;
	int r;

	snprintf(name, sizeof(name), "%s-node", aws->cluster_name);
	snprintf(desc, sizeof(desc), "Nodes of cluster %s (kanna-sim)", aws->cluster_name);
	tag_v[0] = (struct sim_aws_tag){ DISCOVERY_TAG, aws->cluster_name };
	tag_v[1] = (struct sim_aws_tag){ "Name", name };
	r = aws_page_parse(req, resp, PAGE_SECURITY_GROUPS, &start, &limit, &handled);
	if (r < 0 || handled)
		return r;
	for (size_t k = 0; k < aws_params_count(req->params, "GroupId"); k++)
		if (!streq_ptr(aws_params_getf(req->params, "GroupId.%zu", k + 1), reg->sg_id))
			return aws_error(resp, req, 400, "InvalidGroup.NotFound",
					 "The security group '%s' does not exist",
					 aws_params_getf(req->params, "GroupId.%zu", k + 1) ?: "");
	for (size_t k = 0; k < aws_params_count(req->params, "GroupName"); k++)
		if (!streq_ptr(aws_params_getf(req->params, "GroupName.%zu", k + 1), name))
			return aws_error(resp, req, 400, "InvalidGroup.NotFound",
					 "The security group '%s' does not exist in default VPC",
					 aws_params_getf(req->params, "GroupName.%zu", k + 1) ?: "");
	r = ec2_filters_load(req, resp, sg_filters, true, &f, &handled);
	if (r < 0 || handled)
		return r;
	for (size_t i = 0; i < f.n; i++) {
		const char *fn = f.v[i].name;
		const char *v = streq(fn, "group-id") ? reg->sg_id : streq(fn, "group-name") ? name :
				streq(fn, "vpc-id") ? reg->vpc_id :
				streq(fn, "owner-id") ? SIM_AWS_ACCOUNT_ID :
				streq(fn, "description") ? desc : NULL;

		if (v && !aws_filter_matches(&f.v[i], v))
			match = false;
	}
	match = match && aws_tags_match_filters(&tags, &f);
	aws_filters_clear(&f);
	r = xml_begin(&x, "DescribeSecurityGroupsResponse", EC2_XMLNS);
	if (r < 0)
		return r;
	xml_leaf(&x, "requestId", req->request_id);
	xml_open(&x, "securityGroupInfo");
	/* The one group is the first page's (MaxResults is at least 5). */
	if (match && start == 0)
		write_security_group(&x, reg, &tags, name, desc);
	xml_close(&x, "securityGroupInfo");
	return xml_finish(&x, "DescribeSecurityGroupsResponse", resp);
}
