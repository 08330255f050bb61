/*
 * EC2 instances as DescribeInstances describes them, read from its XML
 * answer. The launcher looks up what a CreateFleet launched (and a
 * NodeClaim's instance after a restart); the reaper lists the cluster's
 * instances for garbage collection and drift. Only the fields they use.
 */
#ifndef KANNA_COMMON_AWS_EC2_H
#define KANNA_COMMON_AWS_EC2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/aws.h"

#define EC2_API_VERSION_2016 "2016-11-15"
/* EC2 allows at most 16 security groups per network interface. */
#define EC2_MAX_SECURITY_GROUPS 16
/* "sg-" and 17 hexadecimal digits, with room to spare. */
#define EC2_ID_LEN 32

/* One instance of a DescribeInstances response. */
struct ec2_instance {
	char instance_id[64];
	char instance_type[64];
	char zone[64];
	char image_id[64];
	char subnet_id[64];
	char private_dns_name[256];
	char state[32];      /* pending, running, stopping, stopped, shutting-down, terminated */
	char nodeclaim[254]; /* tag karpenter.sh/nodeclaim */
	char nodepool[254];  /* tag karpenter.sh/nodepool */
	/* The instance's security groups (all its interfaces'), sorted. */
	char security_groups[EC2_MAX_SECURITY_GROUPS][EC2_ID_LEN];
	unsigned n_security_groups;
	int64_t launch_time_s; /* Unix seconds (0: not given) */
	bool spot;
};

/* Reads up to max instances from a DescribeInstancesResponse tree; returns
 * how many, or -EBADMSG when the document is not one (or an instance has
 * no id, or a launchTime that is not a time). */
int ec2_instances_parse(const struct aws_xml_node *root, struct ec2_instance *out, size_t max);

#endif
