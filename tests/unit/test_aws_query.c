/* Query-protocol bodies: Action/Version first, order kept, RFC 3986
 * encoding, the EC2 list flattening names. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"

Test(aws_query, starts_with_action_and_version)
{
	struct aws_query *q = NULL;
	char *body = NULL;

	cr_assert_eq(aws_query_new("DescribeInstances", "2016-11-15", &q), 0);
	cr_assert_str_eq(aws_query_action(q), "DescribeInstances");
	cr_assert_eq(aws_query_encode(q, &body), 0);
	cr_assert_str_eq(body, "Action=DescribeInstances&Version=2016-11-15");
	free(body);
	aws_query_free(q);
}

Test(aws_query, flattens_filters_and_fleet_overrides_in_order)
{
	struct aws_query *q = NULL;
	char *body = NULL;

	cr_assert_eq(aws_query_new("CreateFleet", "2016-11-15", &q), 0);
	cr_assert_eq(aws_query_add(q, "instant", "Type"), 0);
	cr_assert_eq(aws_query_add(q, "lt-0abc", "LaunchTemplateConfigs.%u.LaunchTemplateSpecification.LaunchTemplateId", 1), 0);
	cr_assert_eq(aws_query_add(q, "m5.large", "LaunchTemplateConfigs.%u.Overrides.%u.InstanceType", 1, 1), 0);
	cr_assert_eq(aws_query_add(q, "c5.large", "LaunchTemplateConfigs.%u.Overrides.%u.InstanceType", 1, 2), 0);
	cr_assert_eq(aws_query_add_int(q, 1, "TargetCapacitySpecification.TotalTargetCapacity"), 0);
	cr_assert_eq(aws_query_add(q, "tag:karpenter.sh/discovery", "Filter.%u.Name", 1), 0);
	cr_assert_eq(aws_query_add(q, "my cluster", "Filter.%u.Value.%u", 1, 1), 0);
	cr_assert_eq(aws_query_encode(q, &body), 0);
	cr_assert_str_eq(body,
			 "Action=CreateFleet&Version=2016-11-15&Type=instant"
			 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId=lt-0abc"
			 "&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large"
			 "&LaunchTemplateConfigs.1.Overrides.2.InstanceType=c5.large"
			 "&TargetCapacitySpecification.TotalTargetCapacity=1"
			 "&Filter.1.Name=tag%3Akarpenter.sh%2Fdiscovery"
			 "&Filter.1.Value.1=my%20cluster");
	free(body);
	aws_query_free(q);
}

Test(aws_query, encodes_reserved_and_utf8_bytes_per_rfc3986)
{
	struct aws_query *q = NULL;
	char *body = NULL;

	cr_assert_eq(aws_query_new("X", "1", &q), 0);
	cr_assert_eq(aws_query_add(q, "a+b=c&d/e~f_g.h-i*\xe1\x88\xb4", "UserData"), 0);
	cr_assert_eq(aws_query_add(q, "", "Empty"), 0);
	cr_assert_eq(aws_query_encode(q, &body), 0);
	cr_assert_str_eq(body, "Action=X&Version=1&UserData=a%2Bb%3Dc%26d%2Fe~f_g.h-i%2A%E1%88%B4&Empty=");
	free(body);
	aws_query_free(q);
}

Test(aws_query, rejects_missing_action_and_empty_names)
{
	struct aws_query *q = NULL;

	cr_assert_eq(aws_query_new("", "2016-11-15", &q), -EINVAL);
	cr_assert_eq(aws_query_new("X", NULL, &q), -EINVAL);
	cr_assert_eq(aws_query_new("X", "1", &q), 0);
	cr_assert_eq(aws_query_add(q, "v", "%s", ""), -EINVAL);
	aws_query_free(q);
}

Test(aws_query, list_and_filter_helpers_number_from_one)
{
	static const char *const ids[] = { "i-1", "i-2" };
	static const char *const values[] = { "my-cluster", "shared" };
	struct aws_query *q = NULL;
	char *body = NULL;

	cr_assert_eq(aws_query_new("DescribeInstances", "2016-11-15", &q), 0);
	cr_assert_eq(aws_query_add_list(q, "InstanceId", ids, 2), 0);
	cr_assert_eq(aws_query_add_filter(q, 1, "tag:kubernetes.io/cluster/my-cluster", values, 2), 0);
	cr_assert_eq(aws_query_add_filter(q, 2, "instance-state-name", NULL, 0), 0);
	cr_assert_eq(aws_query_add_filter(q, 0, "x", NULL, 0), -EINVAL);
	cr_assert_eq(aws_query_encode(q, &body), 0);
	cr_assert_str_eq(body, "Action=DescribeInstances&Version=2016-11-15&InstanceId.1=i-1&InstanceId.2=i-2"
			       "&Filter.1.Name=tag%3Akubernetes.io%2Fcluster%2Fmy-cluster"
			       "&Filter.1.Value.1=my-cluster&Filter.1.Value.2=shared"
			       "&Filter.2.Name=instance-state-name");
	free(body);
	aws_query_free(q);
}

Test(aws_query, bounds_the_number_of_parameters)
{
	struct aws_query *q = NULL;
	int r = 0;
	unsigned i;

	cr_assert_eq(aws_query_new("X", "1", &q), 0);
	for (i = 0; i < 100000 && r == 0; i++)
		r = aws_query_add(q, "v", "P.%u", i);
	cr_assert_eq(r, -E2BIG);
	cr_assert_lt(i, 100000);
	aws_query_free(q);
}
