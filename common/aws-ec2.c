/*
 * Reading DescribeInstances answers (see aws-ec2.h). Shared by the
 * launcher and the reaper; fuzzed by tests/fuzz/fuzz_describe_instances.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/aws-ec2.h"
#include "common/util.h"

static void copy_text(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static int compare_group(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Group ids of every interface (groupSet at the top repeats the primary's). */
static void read_security_groups(const struct aws_xml_node *inst, struct ec2_instance *e)
{
	const struct aws_xml_node *set = aws_xml_child(inst, "groupSet"), *g;

	for (g = set ? aws_xml_first(set, "item") : NULL; g; g = aws_xml_next(g)) {
		const char *id = aws_xml_text(g, "groupId");
		bool seen = false;

		if (!id || !*id || e->n_security_groups == EC2_MAX_SECURITY_GROUPS)
			continue;
		for (unsigned i = 0; i < e->n_security_groups; i++)
			seen = seen || streq(e->security_groups[i], id);
		if (!seen)
			copy_text(e->security_groups[e->n_security_groups++], EC2_ID_LEN, id);
	}
	qsort(e->security_groups, e->n_security_groups, EC2_ID_LEN, compare_group);
}

static int read_instance(const struct aws_xml_node *inst, struct ec2_instance *e)
{
	const struct aws_xml_node *tags, *tag;
	const char *launch = aws_xml_text(inst, "launchTime");

	*e = (struct ec2_instance){ 0 };
	copy_text(e->instance_id, sizeof(e->instance_id), aws_xml_text(inst, "instanceId"));
	if (!*e->instance_id)
		return -EBADMSG;
	copy_text(e->instance_type, sizeof(e->instance_type), aws_xml_text(inst, "instanceType"));
	copy_text(e->zone, sizeof(e->zone), aws_xml_text(inst, "placement/availabilityZone"));
	copy_text(e->image_id, sizeof(e->image_id), aws_xml_text(inst, "imageId"));
	copy_text(e->subnet_id, sizeof(e->subnet_id), aws_xml_text(inst, "subnetId"));
	copy_text(e->private_dns_name, sizeof(e->private_dns_name), aws_xml_text(inst, "privateDnsName"));
	copy_text(e->state, sizeof(e->state), aws_xml_text(inst, "instanceState/name"));
	e->spot = streq_ptr(aws_xml_text(inst, "instanceLifecycle"), "spot");
	if (launch && *launch) {
		time_t t;

		if (aws_parse_iso8601(launch, &t) < 0)
			return -EBADMSG;
		e->launch_time_s = (int64_t)t;
	}
	read_security_groups(inst, e);
	tags = aws_xml_child(inst, "tagSet");
	for (tag = tags ? aws_xml_first(tags, "item") : NULL; tag; tag = aws_xml_next(tag)) {
		const char *key = aws_xml_text(tag, "key");

		if (streq_ptr(key, "karpenter.sh/nodeclaim"))
			copy_text(e->nodeclaim, sizeof(e->nodeclaim), aws_xml_text(tag, "value"));
		else if (streq_ptr(key, "karpenter.sh/nodepool"))
			copy_text(e->nodepool, sizeof(e->nodepool), aws_xml_text(tag, "value"));
	}
	return 0;
}

int ec2_instances_parse(const struct aws_xml_node *root, struct ec2_instance *out, size_t max)
{
	const struct aws_xml_node *rs, *res, *is, *inst;
	size_t n = 0;

	if (!root || !streq(root->name, "DescribeInstancesResponse"))
		return -EBADMSG;
	rs = aws_xml_child(root, "reservationSet");
	for (res = rs ? aws_xml_first(rs, "item") : NULL; res; res = aws_xml_next(res)) {
		is = aws_xml_child(res, "instancesSet");
		for (inst = is ? aws_xml_first(is, "item") : NULL; inst && n < max;
		     inst = aws_xml_next(inst)) {
			if (read_instance(inst, &out[n]) < 0)
				return -EBADMSG;
			n++;
		}
	}
	return (int)n;
}
