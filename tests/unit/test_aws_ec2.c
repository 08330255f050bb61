/*
 * DescribeInstances answers read by common/aws-ec2.c: the fields the
 * launcher and the reaper's garbage collection and drift use, and the
 * documents that are refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "common/aws-ec2.h"

static struct aws_xml_node *parse(const char *doc)
{
	struct aws_xml_node *root = NULL;

	cr_assert_eq(aws_xml_parse(doc, strlen(doc), &root), 0);
	return root;
}

#define HEAD "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">" \
	     "<requestId>r</requestId><reservationSet><item><instancesSet>"
#define TAIL "</instancesSet></item></reservationSet></DescribeInstancesResponse>"

Test(aws_ec2, an_instance_gives_subnet_groups_launch_time_and_kanna_tags)
{
	struct aws_xml_node *root = parse(HEAD
		"<item><instanceId>i-1</instanceId><imageId>ami-1</imageId><instanceType>m5.large</instanceType>"
		"<placement><availabilityZone>us-west-2a</availabilityZone></placement>"
		"<subnetId>subnet-a</subnetId><launchTime>2026-11-26T21:00:05.000Z</launchTime>"
		"<instanceState><code>16</code><name>running</name></instanceState>"
		"<groupSet><item><groupId>sg-b</groupId><groupName>b</groupName></item>"
		"<item><groupId>sg-a</groupId><groupName>a</groupName></item>"
		"<item><groupId>sg-b</groupId></item></groupSet>"
		"<tagSet><item><key>karpenter.sh/nodepool</key><value>default</value></item>"
		"<item><key>karpenter.sh/nodeclaim</key><value>default-abc</value></item>"
		"<item><key>kubernetes.io/cluster/kanna</key><value>owned</value></item></tagSet></item>"
		"<item><instanceId>i-2</instanceId><instanceLifecycle>spot</instanceLifecycle>"
		"<instanceState><name>shutting-down</name></instanceState></item>" TAIL);
	struct ec2_instance e[2];

	cr_assert_eq(ec2_instances_parse(root, e, 2), 2);
	cr_assert_str_eq(e[0].instance_id, "i-1");
	cr_assert_str_eq(e[0].subnet_id, "subnet-a");
	cr_assert_str_eq(e[0].zone, "us-west-2a");
	cr_assert_str_eq(e[0].state, "running");
	cr_assert_eq(e[0].launch_time_s, 1795726805);
	cr_assert_eq(e[0].n_security_groups, 2, "a group listed twice counts once");
	cr_assert_str_eq(e[0].security_groups[0], "sg-a", "sorted");
	cr_assert_str_eq(e[0].security_groups[1], "sg-b");
	cr_assert_str_eq(e[0].nodepool, "default");
	cr_assert_str_eq(e[0].nodeclaim, "default-abc");
	cr_assert_not(e[0].spot);
	cr_assert(e[1].spot);
	cr_assert_str_eq(e[1].state, "shutting-down");
	cr_assert_eq(e[1].launch_time_s, 0, "no launchTime given");
	cr_assert_str_eq(e[1].nodepool, "");
	aws_xml_free(root);
}

Test(aws_ec2, at_most_max_instances_are_read)
{
	struct aws_xml_node *root = parse(HEAD "<item><instanceId>i-1</instanceId></item>"
					  "<item><instanceId>i-2</instanceId></item>" TAIL);
	struct ec2_instance e[1];

	cr_assert_eq(ec2_instances_parse(root, e, 1), 1);
	cr_assert_str_eq(e[0].instance_id, "i-1");
	aws_xml_free(root);
}

Test(aws_ec2, documents_that_are_not_a_description_are_refused)
{
	struct aws_xml_node *root = parse("<DescribeImagesResponse/>");
	struct ec2_instance e[1];

	cr_assert_eq(ec2_instances_parse(root, e, 1), -EBADMSG);
	aws_xml_free(root);
	root = parse(HEAD "<item><imageId>ami-1</imageId></item>" TAIL);
	cr_assert_eq(ec2_instances_parse(root, e, 1), -EBADMSG, "an instance without an id");
	aws_xml_free(root);
	root = parse(HEAD "<item><instanceId>i-1</instanceId><launchTime>yesterday</launchTime></item>" TAIL);
	cr_assert_eq(ec2_instances_parse(root, e, 1), -EBADMSG, "a launchTime that is not a time");
	aws_xml_free(root);
	cr_assert_eq(ec2_instances_parse(NULL, e, 1), -EBADMSG);
}
