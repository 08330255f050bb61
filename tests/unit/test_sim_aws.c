/*
 * kanna-sim's EC2 over real HTTP with SigV4-signed requests: CreateFleet
 * (cheapest override, ICE fallback, ClientToken idempotency, override errors),
 * DescribeInstances filters and paging, TerminateInstances, RunInstances,
 * launch templates, the catalog answers, DryRun and parameter errors.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/unit/test_sim_aws_http.h"

TestSuite(sim_aws, .init = setup, .fini = teardown, .timeout = 60);

Test(sim_aws, create_fleet_launches_the_cheapest_override)
{
	struct reply r;
	char buf[128];

	create_template("lt-demo");
	r = fleet(NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "<errorSet></errorSet>"), "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "instanceType", 0, buf, sizeof(buf)),
			 "m5.large", "%s", r.body);
	cr_assert_null(strstr(r.body, "m5.2xlarge"), "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceIds><item>i-"), 1);
	free(r.body);
}

Test(sim_aws, create_fleet_falls_to_next_override_on_injected_ice)
{
	struct reply r, f;
	char buf[128], sn[64];

	create_template("lt-demo");
	f = admin("POST", "/_sim/faults",
		  "{\"insufficientCapacity\":[{\"instanceType\":\"m5.large\",\"zone\":\"us-west-2a\",\"capacityType\":\"on-demand\"}]}");
	cr_assert_eq(f.status, 200, "%s", f.body);
	free(f.body);
	r = fleet(NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "errorCode", 0, buf, sizeof(buf)), "InsufficientInstanceCapacity", "%s", r.body);
	cr_assert(strstr(r.body, "<fleetInstanceSet><item>"), "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "instanceType", 0, buf, sizeof(buf)),
			 "m5.2xlarge", "%s", r.body);
	/* The overrides come back as sent: the subnet, no zone. */
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "subnetId", 0, buf, sizeof(buf)),
			 subnet('b', sn, sizeof(sn)), "%s", r.body);
	cr_assert_null(strstr(r.body, "availabilityZone"), "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceIds><item>i-"), 1);
	free(r.body);
}

/* FleetLaunchTemplateOverrides in a CreateFleet reply are the request's as
 * sent (CreateFleetInstance.launchTemplateAndOverrides): a zone appears only
 * when the request named one; a subnet and a zone that disagree are refused. */
Test(sim_aws, create_fleet_echoes_the_overrides_as_sent_and_refuses_a_zone_its_subnet_is_not_in)
{
	char a[64], params[2048], buf[128];
	struct reply r;

	create_template("lt-demo");
	subnet('a', a, sizeof(a));
	snprintf(params, sizeof(params),
		 "Action=CreateFleet&Type=instant"
		 "&TargetCapacitySpecification.TotalTargetCapacity=1"
		 "&TargetCapacitySpecification.DefaultTargetCapacityType=on-demand"
		 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=lt-demo"
		 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version=%%24Latest"
		 "&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large"
		 "&LaunchTemplateConfigs.1.Overrides.1.SubnetId=%s"
		 "&LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone=us-west-2b"
		 "&LaunchTemplateConfigs.1.Overrides.2.InstanceType=m5.xlarge"
		 "&LaunchTemplateConfigs.1.Overrides.2.SubnetId=%s"
		 "&LaunchTemplateConfigs.1.Overrides.2.AvailabilityZone=us-west-2a", a, a);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "errorCode", 0, buf, sizeof(buf)), "InvalidParameterCombination",
			 "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "instanceType", 0, buf, sizeof(buf)),
			 "m5.xlarge", "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "availabilityZone", 0, buf, sizeof(buf)),
			 "us-west-2a", "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "subnetId", 0, buf, sizeof(buf)), a,
			 "%s", r.body);
	/* The launch template too: named by name, version $Latest, no id. */
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "launchTemplateName", 0, buf, sizeof(buf)),
			 "lt-demo", "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "version", 0, buf, sizeof(buf)),
			 "$Latest", "%s", r.body);
	cr_assert_null(strstr(r.body, "launchTemplateId"), "%s", r.body);
	free(r.body);
}

Test(sim_aws, same_client_token_returns_same_instance_and_launches_once)
{
	struct reply a, b, d;
	char ia[64], ib[64];

	create_template("lt-demo");
	a = fleet("&ClientToken=token-1");
	b = fleet("&ClientToken=token-1");
	cr_assert_eq(a.status, 200, "%s", a.body);
	cr_assert_eq(b.status, 200, "%s", b.body);
	xml_nth(strstr(a.body, "<instanceIds>"), "item", 0, ia, sizeof(ia));
	xml_nth(strstr(b.body, "<instanceIds>"), "item", 0, ib, sizeof(ib));
	cr_assert(strncmp(ia, "i-", 2) == 0, "%s", a.body);
	cr_assert_str_eq(ia, ib);
	d = ec2("Action=DescribeInstances");
	cr_assert_eq(xml_count(d.body, "<instanceId>"), 1, "%s", d.body);
	free(a.body);
	free(b.body);
	free(d.body);
}

Test(sim_aws, same_client_token_with_other_parameters_is_a_mismatch)
{
	struct reply a, b;
	char buf[128];

	create_template("lt-demo");
	a = fleet("&ClientToken=token-2");
	b = fleet("&ClientToken=token-2&TagSpecification.1.Tag.2.Key=extra&TagSpecification.1.Tag.2.Value=1");
	cr_assert_eq(a.status, 200);
	cr_assert_eq(b.status, 400, "%s", b.body);
	cr_assert_str_eq(xml_nth(b.body, "Code", 0, buf, sizeof(buf)), "IdempotentParameterMismatch");
	free(a.body);
	free(b.body);
}

/* As EC2 does: a launch template named without overrides (the launcher's
 * second architecture once all its offerings were unavailable) makes the
 * whole request invalid: nothing is launched from the first one either. */
Test(sim_aws, a_launch_template_without_overrides_refuses_the_whole_fleet)
{
	struct reply r, d;
	char buf[256];

	create_template("lt-demo");
	create_template("lt-arm");
	r = fleet("&LaunchTemplateConfigs.2.LaunchTemplateSpecification.LaunchTemplateName=lt-arm"
		  "&LaunchTemplateConfigs.2.LaunchTemplateSpecification.Version=%24Latest");
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "MissingParameter");
	cr_assert(strstr(xml_nth(r.body, "Message", 0, buf, sizeof(buf)), "LaunchTemplateConfigs.N.Overrides"),
		  "%s", r.body);
	free(r.body);
	d = ec2("Action=DescribeInstances");
	cr_assert_eq(xml_count(d.body, "<instanceId>"), 0, "%s", d.body);
	free(d.body);
}

Test(sim_aws, spot_capacity_errors_use_the_injected_error_code)
{
	struct reply f, r;
	char buf[128];

	create_template("lt-demo");
	f = admin("POST", "/_sim/faults",
		  "{\"insufficientCapacity\":[{\"capacityType\":\"spot\",\"errorCode\":\"UnfulfillableCapacity\"}]}");
	cr_assert_eq(f.status, 200, "%s", f.body);
	free(f.body);
	r = fleet("&TargetCapacitySpecification.SpotTargetCapacity=1");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<errorCode>UnfulfillableCapacity</errorCode>"), 2, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "lifecycle", 0, buf, sizeof(buf)), "spot");
	cr_assert(strstr(r.body, "<fleetInstanceSet></fleetInstanceSet>"), "%s", r.body);
	free(r.body);
}

Test(sim_aws, architecture_mismatch_between_ami_and_type_is_an_override_error)
{
	char a[64], params[1024], buf[128];
	struct reply s, r;
	json_t *j;

	s = call_full(&(struct call){ .service = "ssm", .target = "AmazonSSM.GetParameter" }, "/",
		      "{\"Name\":\"/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id\"}");
	j = json_loads(s.body, 0, NULL);
	snprintf(params, sizeof(params), "Action=CreateLaunchTemplate&LaunchTemplateName=lt-x86&LaunchTemplateData.ImageId=%s",
		 json_string_value(json_object_get(json_object_get(j, "Parameter"), "Value")));
	json_decref(j);
	free(s.body);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	subnet('a', a, sizeof(a));
	snprintf(params, sizeof(params),
		 "Action=CreateFleet&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=1"
		 "&TargetCapacitySpecification.DefaultTargetCapacityType=on-demand"
		 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=lt-x86"
		 "&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m6g.large&LaunchTemplateConfigs.1.Overrides.1.SubnetId=%s",
		 a);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "errorCode", 0, buf, sizeof(buf)), "InvalidParameterValue", "%s", r.body);
	cr_assert(strstr(r.body, "<fleetInstanceSet></fleetInstanceSet>"), "%s", r.body);
	free(r.body);
}

Test(sim_aws, describe_instances_filters_by_tag_and_state)
{
	char a[64], b[64], buf[64], params[128];
	struct reply r;

	create_template("lt-demo");
	launch_tagged("alpha", a, sizeof(a));
	launch_tagged("beta", b, sizeof(b));
	r = ec2("Action=DescribeInstances&Filter.1.Name=tag%3Apool&Filter.1.Value.1=beta");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 1);
	cr_assert_str_eq(xml_nth(r.body, "instanceId", 0, buf, sizeof(buf)), b);
	free(r.body);

	r = ec2("Action=DescribeInstances&Filter.1.Name=tag-key&Filter.1.Value.1=pool"
		"&Filter.2.Name=instance-state-name&Filter.2.Value.1=running");
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 2, "%s", r.body);
	free(r.body);

	snprintf(params, sizeof(params), "Action=TerminateInstances&InstanceId.1=%s", a);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeInstances&Filter.1.Name=instance-state-name&Filter.1.Value.1=running");
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 1, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "instanceId", 0, buf, sizeof(buf)), b);
	free(r.body);
	r = ec2("Action=DescribeInstances&Filter.1.Name=instance-state-name&Filter.1.Value.1=terminated");
	cr_assert_str_eq(xml_nth(r.body, "instanceId", 0, buf, sizeof(buf)), a);
	free(r.body);
}

Test(sim_aws, describe_instances_pages_with_next_token)
{
	char id[64];
	struct reply r;

	create_template("lt-demo");
	for (int i = 0; i < 7; i++)
		launch_tagged("page", id, sizeof(id));
	r = ec2("Action=DescribeInstances&MaxResults=5");
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 5, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "nextToken", 0, id, sizeof(id)), "sim-5");
	free(r.body);
	r = ec2("Action=DescribeInstances&MaxResults=5&NextToken=sim-5");
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 2, "%s", r.body);
	cr_assert_null(strstr(r.body, "<nextToken>"));
	free(r.body);
}

Test(sim_aws, unknown_instance_id_is_not_found)
{
	struct reply r = ec2("Action=TerminateInstances&InstanceId.1=i-0123456789abcdef0");
	char buf[64];

	cr_assert_eq(r.status, 400);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InvalidInstanceID.NotFound");
	free(r.body);
}

Test(sim_aws, terminate_moves_through_shutting_down_to_terminated)
{
	struct reply r;
	char id[64], params[128], buf[64];

	aws = sim_aws_free(aws);
	start(0, 300);
	create_template("lt-demo");
	launch_tagged("slow", id, sizeof(id));
	snprintf(params, sizeof(params), "Action=TerminateInstances&InstanceId.1=%s", id);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<currentState>"), "name", 0, buf, sizeof(buf)), "shutting-down");
	cr_assert_str_eq(xml_nth(strstr(r.body, "<previousState>"), "name", 0, buf, sizeof(buf)), "running");
	free(r.body);
	usleep(400 * 1000);
	snprintf(params, sizeof(params), "Action=DescribeInstances&InstanceId.1=%s", id);
	r = ec2(params);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<instanceState>"), "name", 0, buf, sizeof(buf)), "terminated", "%s", r.body);
	free(r.body);
}

Test(sim_aws, run_instances_launches_in_one_reservation_and_honours_ice)
{
	char params[1024], ami[64], buf[64];
	struct reply s, r;
	json_t *j;

	s = call_full(&(struct call){ .service = "ssm", .target = "AmazonSSM.GetParameter" }, "/",
		      "{\"Name\":\"/aws/service/eks/optimized-ami/1.30/amazon-linux-2/recommended/image_id\"}");
	j = json_loads(s.body, 0, NULL);
	snprintf(ami, sizeof(ami), "%s", json_string_value(json_object_get(json_object_get(j, "Parameter"), "Value")));
	json_decref(j);
	free(s.body);
	snprintf(params, sizeof(params),
		 "Action=RunInstances&MinCount=1&MaxCount=2&InstanceType=t3.large&ImageId=%s"
		 "&Placement.AvailabilityZone=us-west-2c&InstanceMarketOptions.MarketType=spot", ami);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 2, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceLifecycle>spot</instanceLifecycle>"), 2, "%s", r.body);
	cr_assert(strstr(r.body, "<availabilityZone>us-west-2c</availabilityZone>"), "%s", r.body);
	free(r.body);

	s = admin("POST", "/_sim/faults", "{\"insufficientCapacity\":[{\"instanceType\":\"t3.large\"}]}");
	free(s.body);
	r = ec2(params);
	cr_assert_eq(r.status, 500, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InsufficientInstanceCapacity");
	free(r.body);
}

Test(sim_aws, launch_template_names_are_unique)
{
	struct reply r;
	char buf[128];

	create_template("lt-once");
	r = ec2("Action=CreateLaunchTemplate&LaunchTemplateName=lt-once");
	cr_assert_eq(r.status, 400);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)),
			 "InvalidLaunchTemplateName.AlreadyExistsException");
	free(r.body);
	r = ec2("Action=DeleteLaunchTemplate&LaunchTemplateName=lt-once");
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeLaunchTemplates&LaunchTemplateName.1=lt-once");
	cr_assert_eq(r.status, 400);
	free(r.body);
}

Test(sim_aws, describe_instance_types_reports_catalog_values)
{
	struct reply r = ec2("Action=DescribeInstanceTypes&InstanceType.1=m5.large&InstanceType.2=m6g.xlarge");
	char buf[64];

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceType>"), 2);
	cr_assert(strstr(r.body, "<instanceType>m5.large</instanceType>"));
	cr_assert(strstr(r.body, "<defaultVCpus>2</defaultVCpus>"));
	cr_assert(strstr(r.body, "<sizeInMiB>8192</sizeInMiB>"));
	cr_assert(strstr(r.body, "<item>arm64</item>"));
	cr_assert_str_eq(xml_nth(r.body, "maximumNetworkInterfaces", 0, buf, sizeof(buf)), "3");
	free(r.body);
	r = ec2("Action=DescribeInstanceTypes&InstanceType.1=inf2.xlarge&InstanceType.2=p5.48xlarge");
	cr_assert(strstr(r.body, "<neuronInfo><neuronDevices><item><count>1</count><name>inferentia2</name>"), "%s", r.body);
	cr_assert(strstr(r.body, "<efaSupported>true</efaSupported><efaInfo><maximumEfaInterfaces>"), "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeInstanceTypes&MaxResults=100");
	cr_assert_eq(xml_count(r.body, "<instanceType>"), 100);
	cr_assert_str_eq(xml_nth(r.body, "nextToken", 0, buf, sizeof(buf)), "sim-100");
	free(r.body);
}

Test(sim_aws, subnets_and_security_groups_carry_the_discovery_tag)
{
	struct reply r = ec2("Action=DescribeSubnets&Filter.1.Name=tag%3Akarpenter.sh%2Fdiscovery&Filter.1.Value.1=demo");

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<subnetId>"), 3, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeSubnets&Filter.1.Name=tag%3Akarpenter.sh%2Fdiscovery&Filter.1.Value.1=other");
	cr_assert_eq(xml_count(r.body, "<subnetId>"), 0, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeSecurityGroups&Filter.1.Name=tag-key&Filter.1.Value.1=karpenter.sh%2Fdiscovery");
	cr_assert_eq(xml_count(r.body, "<groupId>"), 1, "%s", r.body);
	free(r.body);
}

Test(sim_aws, spot_prices_are_below_on_demand_and_deterministic)
{
	struct reply r = ec2("Action=DescribeSpotPriceHistory&InstanceType.1=m5.large&ProductDescription.1=Linux%2FUNIX");
	char buf[64];
	double p;

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<spotPrice>"), 3);
	p = strtod(xml_nth(r.body, "spotPrice", 0, buf, sizeof(buf)), NULL);
	cr_assert(p >= 0.096 * 0.3 - 1e-6 && p <= 0.096 * 0.7 + 1e-6, "%f", p);
	free(r.body);
}

Test(sim_aws, dry_run_answers_dry_run_operation_and_changes_nothing)
{
	struct reply r = ec2("Action=CreateLaunchTemplate&LaunchTemplateName=lt-dry&DryRun=true");
	char buf[64];

	cr_assert_eq(r.status, 412, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "DryRunOperation");
	free(r.body);
	r = ec2("Action=DescribeLaunchTemplates");
	cr_assert_eq(xml_count(r.body, "<launchTemplateId>"), 0, "%s", r.body);
	free(r.body);
}

Test(sim_aws, unknown_action_gets_invalid_action)
{
	struct reply r = ec2("Action=LaunchRockets");
	char buf[64];

	cr_assert_eq(r.status, 400);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InvalidAction");
	free(r.body);
}

Test(sim_aws, missing_parameter_is_named)
{
	struct reply r = ec2("Action=CreateFleet&Type=instant");
	char buf[256];

	cr_assert_eq(r.status, 400);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "MissingParameter");
	cr_assert(strstr(xml_nth(r.body, "Message", 0, buf, sizeof(buf)), "TotalTargetCapacity"));
	free(r.body);
}

/* EC2 refuses a parameter its action does not take, wrong capitalization
 * included, before anything else (DryRun too): UnknownParameter. */
Test(sim_aws, a_parameter_the_action_does_not_take_is_unknown)
{
	static const char *const requests[][2] = {
		{ "Action=DescribeInstances&Filters.1.Name=instance-state-name&Filters.1.Value.1=running",
		  "Filters" },
		{ "Action=DescribeInstances&instanceId.1=i-0123456789abcdef0", "instanceId" },
		{ "Action=DescribeAvailabilityZones&MaxResults=5", "MaxResults" },
		{ "Action=TerminateInstances&InstanceId.1=i-0123456789abcdef0&MaxResults=5", "MaxResults" },
		{ "Action=CreateLaunchTemplate&LaunchTemplateName=lt-x&DryRun=true&Tags.1.Key=a", "Tags" },
	};
	char buf[256];

	for (size_t i = 0; i < ARRAY_SIZE(requests); i++) {
		struct reply r = ec2(requests[i][0]);
		char want[128];

		cr_assert_eq(r.status, 400, "%s: %s", requests[i][0], r.body);
		cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "UnknownParameter",
				 "%s: %s", requests[i][0], r.body);
		snprintf(want, sizeof(want), "The parameter %s is not recognized", requests[i][1]);
		cr_assert_str_eq(xml_nth(r.body, "Message", 0, buf, sizeof(buf)), want);
		free(r.body);
	}
}

/* Nested members too: EC2 names the first segment it does not take, alone
 * (aws/aws-sdk-js#403: "The parameter Item is not recognized" for
 * Filter.1.Value.Item.1). Every action the sim serves. */
Test(sim_aws, a_nested_member_the_shape_does_not_define_is_unknown)
{
	static const char *const requests[][2] = {
		{ "Action=CreateFleet&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=1"
		  "&TargetCapacitySpecification.DefaultTargetCapacityType=on-demand"
		  "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=lt-x"
		  "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version=$Latest"
		  "&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large"
		  "&LaunchTemplateConfigs.1.Overrides.1.Bogus=x", "Bogus" },
		{ "Action=CreateFleet&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=1"
		  "&TargetCapacitySpecification.Bogus=1", "Bogus" },
		{ "Action=CreateFleet&Type=instant&TagSpecification.1.ResourceType=instance"
		  "&TagSpecification.1.Foo=bar", "Foo" },
		{ "Action=CreateFleet&Type=instant&TagSpecification.1.Tag.1.key=k", "key" },
		{ "Action=DescribeInstances&Filter.1.Name=instance-state-name&Filter.1.Bogus=x", "Bogus" },
		{ "Action=DescribeInstances&Filter.1.Name=tag:a&Filter.1.Value.Item.1=x", "Item" },
		{ "Action=DescribeInstances&InstanceId.1.Sub=i-0123456789abcdef0", "Sub" },
		{ "Action=TerminateInstances&InstanceId.1=i-0123456789abcdef0&InstanceId.2.X=y", "X" },
		{ "Action=CreateTags&ResourceId.1=i-0123456789abcdef0&Tag.1.Key=a&Tag.1.Colour=b",
		  "Colour" },
		{ "Action=DescribeSubnets&Filter.1.Name=vpc-id&Filter.1.Values.1=v", "Values" },
		{ "Action=DescribeSecurityGroups&GroupId.1.Name=sg-1", "Name" },
		{ "Action=DescribeImages&Owner.1=self&Filter.1.Name=name&Filter.1.Value.1=x"
		  "&Filter.1.Value.1.X=y", "X" },
		{ "Action=DescribeLaunchTemplates&LaunchTemplateName.1.Id=x", "Id" },
		{ "Action=CreateLaunchTemplate&LaunchTemplateName=lt-x"
		  "&LaunchTemplateData.ImageId=ami-1&LaunchTemplateData.MetadataOptions.HttpTokenz=x",
		  "HttpTokenz" },
		{ "Action=CreateLaunchTemplate&LaunchTemplateName=lt-x"
		  "&LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize=20"
		  "&LaunchTemplateData.BlockDeviceMapping.1.Ebs.Size=20", "Size" },
		{ "Action=DescribeInstanceTypes&InstanceType.1=m5.large&InstanceType.1.Arch=x", "Arch" },
		{ "Action=DescribeInstanceTypeOfferings&LocationType=availability-zone"
		  "&Filter.1.Name=location&Filter.1.Value.1=a&Filter.1.Value.1.b=c", "b" },
		{ "Action=DescribeSpotPriceHistory&InstanceType.1=m5.large&ProductDescription.1.X=y",
		  "X" },
		{ "Action=DescribeAvailabilityZones&ZoneName.1.Y=z", "Y" },
		{ "Action=RunInstances&MinCount=1&MaxCount=1&ImageId=ami-1&Placement.Zone=a", "Zone" },
	};
	char buf[256];

	for (size_t i = 0; i < ARRAY_SIZE(requests); i++) {
		struct reply r = ec2(requests[i][0]);
		char want[128];

		cr_assert_eq(r.status, 400, "%s: %s", requests[i][0], r.body);
		cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "UnknownParameter",
				 "%s: %s", requests[i][0], r.body);
		snprintf(want, sizeof(want), "The parameter %s is not recognized", requests[i][1]);
		cr_assert_str_eq(xml_nth(r.body, "Message", 0, buf, sizeof(buf)), want, "%s",
				 requests[i][0]);
		free(r.body);
	}
}

/* The members a request may nest are taken: lists of filters and values, a
 * launch template's nested data and tag specifications. */
Test(sim_aws, nested_members_the_shape_defines_are_taken)
{
	struct reply r = ec2("Action=DescribeInstances&Filter.1.Name=tag:a&Filter.1.Value.1=x"
			     "&Filter.2.Name=instance-state-name&Filter.2.Value.1=running"
			     "&Filter.2.Value.2=pending&MaxResults=5");
	char buf[256];

	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = ec2("Action=CreateLaunchTemplate&LaunchTemplateName=lt-nested"
		"&LaunchTemplateData.ImageId=ami-1&LaunchTemplateData.MetadataOptions.HttpTokens=required"
		"&LaunchTemplateData.BlockDeviceMapping.1.DeviceName=/dev/xvda"
		"&LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize=20"
		"&LaunchTemplateData.IamInstanceProfile.Name=p"
		"&LaunchTemplateData.SecurityGroupId.1=sg-1"
		"&TagSpecification.1.ResourceType=launch-template&TagSpecification.1.Tag.1.Key=a"
		"&TagSpecification.1.Tag.1.Value=b");
	cr_assert_str_neq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "UnknownParameter");
	free(r.body);
}

/* DescribeSubnets and DescribeSecurityGroups: MaxResults 5 to 1000, pages
 * joined by NextToken; without it, everything at once. */
Test(sim_aws, subnets_and_security_groups_page_within_ec2s_bounds)
{
	static const char *const actions[] = { "DescribeSubnets", "DescribeSecurityGroups" };
	char params[256], buf[256];
	struct reply r;
	int all;

	for (size_t i = 0; i < ARRAY_SIZE(actions); i++) {
		snprintf(params, sizeof(params), "Action=%s&MaxResults=4", actions[i]);
		r = ec2(params);
		cr_assert_eq(r.status, 400, "%s", r.body);
		cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InvalidParameterValue");
		cr_assert_str_eq(xml_nth(r.body, "Message", 0, buf, sizeof(buf)),
				 "Value (4) for parameter MaxResults is invalid. Expecting a value between 5 and 1000.");
		free(r.body);
		snprintf(params, sizeof(params), "Action=%s&MaxResults=1001", actions[i]);
		r = ec2(params);
		cr_assert_eq(r.status, 400, "%s", r.body);
		free(r.body);
	}
	r = ec2("Action=DescribeSubnets");
	all = xml_count(r.body, "<subnetId>");
	cr_assert_gt(all, 0);
	free(r.body);
	/* Page by page, five at a time, the same subnets. */
	{
		int seen = 0;
		char token[64] = "";

		do {
			snprintf(params, sizeof(params), "Action=DescribeSubnets&MaxResults=5%s%s",
				 *token ? "&NextToken=" : "", token);
			r = ec2(params);
			cr_assert_eq(r.status, 200, "%s", r.body);
			cr_assert_leq(xml_count(r.body, "<subnetId>"), 5);
			seen += xml_count(r.body, "<subnetId>");
			if (!xml_nth(r.body, "nextToken", 0, token, sizeof(token)))
				*token = '\0';
			free(r.body);
		} while (*token);
		cr_assert_eq(seen, all);
	}
}
