/*
 * kanna-sim's AWS faults and admin endpoint: throttling by rate and budget,
 * 5xx, latency, validation of the fault JSON, spot interruption and
 * rebalance notices on the queue, state-change events, and /_sim/status.
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

TestSuite(sim_aws_faults, .init = setup, .fini = teardown, .timeout = 60);

static int count_instance(const struct sim_aws_instance_info *info, void *userdata)
{
	int *n = userdata;

	cr_assert_str_eq(info->capacity_type, "on-demand");
	cr_assert_str_eq(info->arch, "amd64");
	cr_assert_gt(info->max_pods, 0);
	(*n)++;
	return 0;
}

Test(sim_aws_faults, throttling_fault_returns_request_limit_exceeded)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"throttleRate\": 1}");
	struct reply r;
	char buf[64];

	cr_assert_eq(f.status, 200, "%s", f.body);
	r = ec2("Action=DescribeAvailabilityZones");
	cr_assert_eq(r.status, 503, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "RequestLimitExceeded");
	free(r.body);
	free(f.body);
	f = admin("POST", "/_sim/faults", "{}");
	free(f.body);
	r = ec2("Action=DescribeAvailabilityZones");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<zoneName>"), 3);
	free(r.body);
}

Test(sim_aws_faults, throttle_budget_allows_only_n_requests_per_second)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"throttlePerSecond\": 2}");
	int throttled = 0;

	free(f.body);
	for (int i = 0; i < 6; i++) {
		struct reply r = ec2("Action=DescribeAvailabilityZones");

		throttled += r.status == 503;
		free(r.body);
	}
	/* Six calls straddle at most two one-second windows. */
	cr_assert_geq(throttled, 2);
	cr_assert_leq(throttled, 4);
}

Test(sim_aws_faults, error_rate_fault_returns_internal_error)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"errorRate\": 1}");
	struct reply r;
	char buf[64];

	cr_assert_eq(f.status, 200, "%s", f.body);
	free(f.body);
	r = ec2("Action=DescribeInstances");
	cr_assert_eq(r.status, 500, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InternalError");
	free(r.body);
	r = call_full(&(struct call){ .service = "ssm", .target = "AmazonSSM.GetParameter" }, "/",
		      "{\"Name\":\"/aws/service/bottlerocket/aws-k8s-1.30/x86_64/latest/image_id\"}");
	cr_assert_eq(r.status, 500, "%s", r.body);
	cr_assert(strstr(r.body, "\"__type\":\"InternalServerError\""), "%s", r.body);
	free(r.body);
}

/* AWS: a 5xx may hide a request that succeeded; ClientToken is the cure. */
Test(sim_aws_faults, a_lost_answer_launches_the_instance_and_answers_internal_error)
{
	char a[64], params[1024], buf[64];
	struct reply f, r;

	create_template("lt-lost");
	subnet('a', a, sizeof(a));
	f = admin("POST", "/_sim/faults", "{\"lostAnswerRate\": 1}");
	cr_assert_eq(f.status, 200, "%s", f.body);
	free(f.body);
	snprintf(params, sizeof(params),
		 "Action=CreateFleet&Type=instant&ClientToken=lost-1"
		 "&TargetCapacitySpecification.TotalTargetCapacity=1"
		 "&TargetCapacitySpecification.DefaultTargetCapacityType=on-demand"
		 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=lt-lost"
		 "&LaunchTemplateConfigs.1.Overrides.1.InstanceType=c5.large&LaunchTemplateConfigs.1.Overrides.1.SubnetId=%s",
		 a);
	r = ec2(params);
	cr_assert_eq(r.status, 500, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InternalError");
	free(r.body);
	f = admin("POST", "/_sim/faults", "{}");
	free(f.body);
	/* The same token replays what was launched; no second instance. */
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceIds>"), 1, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeInstances");
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 1, "%s", r.body);
	free(r.body);
	r = admin("GET", "/_sim/status", NULL);
	cr_assert(strstr(r.body, "\"lostAnswer\":1"), "%s", r.body);
	free(r.body);
}

Test(sim_aws_faults, latency_fault_delays_answers)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"latencyMs\": 300}");
	struct timespec a, b;
	struct reply r;
	double ms;

	free(f.body);
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = ec2("Action=DescribeAvailabilityZones");
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
	cr_assert_eq(r.status, 200);
	cr_assert_geq(ms, 290, "%f ms", ms);
	free(r.body);
}

Test(sim_aws_faults, malformed_faults_are_rejected_and_change_nothing)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"throttleRate\": 2}");

	cr_assert_eq(f.status, 400, "%s", f.body);
	free(f.body);
	f = admin("GET", "/_sim/faults", NULL);
	cr_assert(strstr(f.body, "\"throttleRate\":0"), "%s", f.body);
	free(f.body);
}

Test(sim_aws_faults, bad_faults_and_unknown_admin_paths_are_client_errors)
{
	struct reply r = admin("POST", "/_sim/faults", "{\"latencyMs\": -1}");

	cr_assert_eq(r.status, 400, "%s", r.body);
	free(r.body);
	r = admin("GET", "/_sim/nothing", NULL);
	cr_assert_eq(r.status, 404, "%s", r.body);
	free(r.body);
	r = admin("POST", "/_sim/interrupt", "{\"instanceIds\":[\"i-0000\"]}");
	cr_assert_eq(r.status, 400, "%s", r.body);
	free(r.body);
}

Test(sim_aws_faults, spot_interruption_is_queued_and_deleted)
{
	char a[64], b[64], params[2048], json[512], url[256];
	struct reply r, q;
	json_t *j;
	const char *receipt, *body;

	create_template("lt-demo");
	subnet('a', a, sizeof(a));
	subnet('b', b, sizeof(b));
	snprintf(params, sizeof(params),
		 "Action=CreateFleet&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=1"
		 "&TargetCapacitySpecification.DefaultTargetCapacityType=spot"
		 "&SpotOptions.AllocationStrategy=price-capacity-optimized"
		 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=lt-demo"
		 "&LaunchTemplateConfigs.1.Overrides.1.InstanceType=c5.large&LaunchTemplateConfigs.1.Overrides.1.SubnetId=%s"
		 "&LaunchTemplateConfigs.1.Overrides.2.InstanceType=c5.large&LaunchTemplateConfigs.1.Overrides.2.SubnetId=%s",
		 a, b);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "<lifecycle>spot</lifecycle>"), "%s", r.body);
	xml_nth(strstr(r.body, "<instanceIds>"), "item", 0, a, sizeof(a));
	free(r.body);

	snprintf(json, sizeof(json), "{\"instanceIds\":[\"%s\"]}", a);
	r = admin("POST", "/_sim/interrupt", json);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);

	snprintf(url, sizeof(url), "{\"QueueName\":\"demo\"}");
	q = call_full(&(struct call){ .service = "sqs", .target = "AmazonSQS.GetQueueUrl" }, "/", url);
	cr_assert_eq(q.status, 200, "%s", q.body);
	j = json_loads(q.body, 0, NULL);
	snprintf(json, sizeof(json), "{\"QueueUrl\":\"%s\",\"MaxNumberOfMessages\":10,\"WaitTimeSeconds\":1}",
		 json_string_value(json_object_get(j, "QueueUrl")));
	json_decref(j);
	free(q.body);
	r = call_full(&(struct call){ .service = "sqs", .target = "AmazonSQS.ReceiveMessage" }, "/", json);
	cr_assert_eq(r.status, 200, "%s", r.body);
	j = json_loads(r.body, 0, NULL);
	body = json_string_value(json_object_get(json_array_get(json_object_get(j, "Messages"), 0), "Body"));
	receipt = json_string_value(json_object_get(json_array_get(json_object_get(j, "Messages"), 0), "ReceiptHandle"));
	cr_assert(body && strstr(body, "EC2 Spot Instance Interruption Warning"), "%s", r.body);
	cr_assert(strstr(body, a), "%s", body);
	snprintf(params, sizeof(params), "{\"QueueUrl\":\"http://%s/111122223333/demo\",\"ReceiptHandle\":\"%s\"}", host, receipt);
	q = call_full(&(struct call){ .service = "sqs", .target = "AmazonSQS.DeleteMessage" }, "/", params);
	cr_assert_eq(q.status, 200, "%s", q.body);
	free(q.body);
	json_decref(j);
	free(r.body);
}

Test(sim_aws_faults, rebalance_and_state_change_events_reach_the_queue)
{
	struct reply r;
	char id[64], json[256], params[128];
	char *msgs;

	create_template("lt-demo");
	launch_tagged("ev", id, sizeof(id));
	snprintf(json, sizeof(json), "{\"instanceIds\":[\"%s\"],\"kind\":\"rebalance-recommendation\"}", id);
	r = admin("POST", "/_sim/interrupt", json);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = admin("POST", "/_sim/faults", "{\"stateChangeEvents\": true}");
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	snprintf(params, sizeof(params), "Action=TerminateInstances&InstanceId.1=%s", id);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeInstances");
	free(r.body);
	msgs = receive_all();
	cr_assert(strstr(msgs, "EC2 Instance Rebalance Recommendation"), "%s", msgs);
	cr_assert(strstr(msgs, "EC2 Instance State-change Notification"), "%s", msgs);
	cr_assert(strstr(msgs, "&quot;state&quot;:&quot;shutting-down&quot;"), "%s", msgs);
	cr_assert(strstr(msgs, "&quot;state&quot;:&quot;terminated&quot;"), "%s", msgs);
	free(msgs);
}

Test(sim_aws_faults, status_reports_instances_and_cost)
{
	struct reply r;
	char id[64];
	json_t *j;
	int n = 0;

	create_template("lt-demo");
	launch_tagged("status", id, sizeof(id));
	cr_assert_eq(sim_aws_foreach_instance(aws, count_instance, &n), 0);
	cr_assert_eq(n, 1);
	r = admin("GET", "/_sim/status", NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	j = json_loads(r.body, 0, NULL);
	cr_assert_not_null(j, "%s", r.body);
	cr_assert_eq(json_array_size(json_object_get(j, "instances")), 1);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(j, "instances"), 0), "instanceId")), id);
	cr_assert(json_real_value(json_object_get(json_array_get(json_object_get(j, "instances"), 0), "pricePerHour")) > 0.09);
	cr_assert_gt(json_array_size(json_object_get(j, "timeline")), 0);
	json_decref(j);
	free(r.body);
}

/* faultsInjected.<kind> of GET /_sim/status. */
static json_int_t injected(const char *kind)
{
	struct reply s = admin("GET", "/_sim/status", NULL);
	json_t *j = json_loads(s.body, 0, NULL);
	json_int_t n;

	cr_assert_not_null(json_object_get(j, "faultsInjected"), "%s", s.body);
	n = json_integer_value(json_object_get(json_object_get(j, "faultsInjected"), kind));
	json_decref(j);
	free(s.body);
	return n;
}

Test(sim_aws_faults, status_counts_the_faults_that_hit_by_kind)
{
	struct reply f, r;

	create_template("lt-demo");
	/* Both overrides refused: two offerings' worth of insufficient capacity. */
	f = admin("POST", "/_sim/faults", "{\"insufficientCapacity\":[{\"capacityType\":\"on-demand\"}]}");
	free(f.body);
	r = fleet(NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 0, "%s", r.body);
	free(r.body);
	cr_assert_eq(injected("insufficientCapacity"), 2);
	f = admin("POST", "/_sim/faults", "{\"throttleRate\": 1, \"latencyMs\": 1}");
	free(f.body);
	r = ec2("Action=DescribeAvailabilityZones");
	free(r.body);
	f = admin("POST", "/_sim/faults", "{\"errorRate\": 1}");
	free(f.body);
	r = ec2("Action=DescribeAvailabilityZones");
	free(r.body);
	r = ec2("Action=DescribeAvailabilityZones");
	free(r.body);
	/* A new fault set does not reset what was counted. */
	f = admin("POST", "/_sim/faults", "{}");
	free(f.body);
	r = ec2("Action=DescribeAvailabilityZones");
	cr_assert_eq(r.status, 200);
	free(r.body);
	cr_assert_eq(injected("throttle"), 1);
	cr_assert_eq(injected("latency"), 1);
	cr_assert_eq(injected("internalError"), 2);
	cr_assert_eq(injected("insufficientCapacity"), 2);
}

static int never_boots(const struct sim_aws_instance_info *info, void *userdata)
{
	int *n = userdata;

	if (info->never_boots)
		n[streq(info->instance_type, "c5.large") ? 0 : 1]++;
	return 0;
}

static void launch_one(const char *type, const char *template)
{
	char a[64], params[1024];
	struct reply r;

	subnet('a', a, sizeof(a));
	snprintf(params, sizeof(params),
		 "Action=CreateFleet&Type=instant"
		 "&TargetCapacitySpecification.TotalTargetCapacity=1"
		 "&TargetCapacitySpecification.DefaultTargetCapacityType=on-demand"
		 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=%s"
		 "&LaunchTemplateConfigs.1.Overrides.1.InstanceType=%s&LaunchTemplateConfigs.1.Overrides.1.SubnetId=%s",
		 template, type, a);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
}

Test(sim_aws_faults, never_boot_marks_only_instances_launched_while_it_holds)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"neverBoot\": [\"c5.large\"]}");
	int n[2] = { 0, 0 };

	cr_assert_eq(f.status, 200, "%s", f.body);
	free(f.body);
	f = admin("GET", "/_sim/faults", NULL);
	cr_assert(strstr(f.body, "\"neverBoot\":[\"c5.large\"]"), "%s", f.body);
	free(f.body);
	create_template("lt-boot");
	launch_one("c5.large", "lt-boot");
	launch_one("m5.large", "lt-boot");
	f = admin("POST", "/_sim/faults", "{}");
	free(f.body);
	launch_one("c5.large", "lt-boot");
	cr_assert_eq(sim_aws_foreach_instance(aws, never_boots, n), 0);
	cr_assert_eq(n[0], 1, "c5.large instances that never boot: %d", n[0]);
	cr_assert_eq(n[1], 0, "other types marked: %d", n[1]);
}

Test(sim_aws_faults, never_boot_refuses_what_is_not_an_instance_type_list)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"neverBoot\": [\"c5.huge\"]}");

	cr_assert_eq(f.status, 400, "%s", f.body);
	cr_assert(strstr(f.body, "neverBoot[0] is not a known instance type"), "%s", f.body);
	free(f.body);
	f = admin("POST", "/_sim/faults", "{\"neverBoot\": \"c5.large\"}");
	cr_assert_eq(f.status, 400, "%s", f.body);
	free(f.body);
}
