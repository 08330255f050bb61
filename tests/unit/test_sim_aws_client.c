/*
 * kanna's own AWS client (common/aws.h: SigV4 signing, query and JSON
 * protocols, expat XML, error parsing) against kanna-sim's AWS side: the
 * two halves must agree on the wire, so kanna works against the sim exactly
 * as it would against EC2, SSM, STS and SQS.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "common/aws.h"
#include "common/loop.h"
#include "sim/aws.h"

#define TEST_AKID "AKIASIMCLIENT0000001"
#define TEST_SECRET "simClientSecretKey000000000000000000000"
/* One call against loopback takes milliseconds; this is a hang guard. */
#define CALL_TIMEOUT_USEC (20ULL * 1000 * 1000)

static struct sim_aws *aws;

struct outcome {
	struct loop *loop;
	int result;
	long http_status;
	char code[AWS_ERROR_CODE_MAX];
	char *body;
	size_t len;
};

static void setup(void)
{
	struct sim_aws_config cfg;
	char url[64];

	sim_aws_config_init(&cfg);
	cfg.access_key_id = TEST_AKID;
	cfg.secret_access_key = TEST_SECRET;
	cfg.catalog_path = KANNA_SRCDIR "/data/instance-types.tsv";
	cfg.cluster_name = "demo";
	cfg.pending_ms = 0;
	cfg.shutdown_ms = 0;
	cr_assert_geq(sim_aws_new(&aws, &cfg), 0);
	cr_assert_geq(sim_aws_start(aws, 0), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)sim_aws_port(aws));
	setenv("AWS_ENDPOINT_URL", url, 1);
}

static void teardown(void)
{
	aws = sim_aws_free(aws);
}

TestSuite(sim_aws_client, .init = setup, .fini = teardown, .timeout = 60);

static void on_done(struct aws_client *client, const struct aws_response *r, void *userdata)
{
	struct outcome *o = userdata;

	o->result = r->result;
	o->http_status = r->http_status;
	snprintf(o->code, sizeof(o->code), "%s", r->error.code);
	o->body = r->body ? strndup(r->body, r->body_len) : strdup("");
	o->len = r->body_len;
	loop_exit(o->loop, 0);
}

static int on_guard(struct loop *loop, void *userdata)
{
	loop_exit(loop, 1);
	return 0;
}

/* Runs one call on a fresh loop and client; json == NULL: query protocol. */
static struct outcome call(const char *service, struct aws_query *q, const char *target,
			   json_t *json, unsigned max_attempts)
{
	struct aws_credentials creds = { .access_key_id = TEST_AKID,
					 .secret_access_key = TEST_SECRET, .source = "test" };
	struct aws_client_options opts = { .region = "us-west-2" };
	struct aws_client *client = NULL;
	struct outcome o = { .result = 1 };

	aws_retry_policy_default(&opts.retry);
	opts.retry.max_attempts = max_attempts;
	cr_assert_eq(loop_new(&o.loop, "test-sim-aws-client"), 0);
	cr_assert_eq(aws_client_new(o.loop, &opts, &creds, &client), 0);
	cr_assert_eq(loop_add_timer(o.loop, CALL_TIMEOUT_USEC, on_guard, NULL, NULL), 0);
	if (json)
		cr_assert_eq(aws_call_json(client, service, target, json, on_done, &o), 0);
	else
		cr_assert_eq(aws_call_query(client, service, q, on_done, &o), 0);
	cr_assert_eq(loop_run(o.loop), 0, "the call did not finish");
	aws_client_free(client);
	loop_free(o.loop);
	return o;
}

static struct aws_xml_node *parse(const struct outcome *o)
{
	struct aws_xml_node *x = NULL;

	cr_assert_eq(aws_xml_parse(o->body, o->len, &x), 0, "%s", o->body);
	return x;
}

static struct aws_query *query(const char *action, const char *version)
{
	struct aws_query *q = NULL;

	cr_assert_eq(aws_query_new(action, version, &q), 0);
	return q;
}

Test(sim_aws_client, ec2_describe_calls_parse_with_the_client_xml_reader)
{
	struct aws_query *q = query("DescribeSubnets", "2016-11-15");
	const struct aws_xml_node *item;
	struct aws_xml_node *x;
	struct outcome o;
	int n = 0;

	cr_assert_eq(aws_query_add(q, "tag:karpenter.sh/discovery", "Filter.%u.Name", 1), 0);
	cr_assert_eq(aws_query_add(q, "demo", "Filter.%u.Value.%u", 1, 1), 0);
	o = call("ec2", q, NULL, NULL, 1);
	cr_assert_eq(o.result, 0, "%s", o.body);
	x = parse(&o);
	for (item = aws_xml_first(aws_xml_child(x, "subnetSet"), "item"); item; item = aws_xml_next(item)) {
		cr_assert(strncmp(aws_xml_text(item, "subnetId"), "subnet-", 7) == 0);
		n++;
	}
	cr_assert_eq(n, 3);
	aws_xml_free(x);
	free(o.body);
}

Test(sim_aws_client, create_fleet_ice_is_reported_per_override)
{
	struct aws_query *q;
	struct aws_xml_node *x;
	struct outcome o;
	char err[128];

	q = query("CreateLaunchTemplate", "2016-11-15");
	cr_assert_eq(aws_query_add(q, "kanna-lt", "LaunchTemplateName"), 0);
	o = call("ec2", q, NULL, NULL, 1);
	cr_assert_eq(o.result, 0, "%s", o.body);
	free(o.body);
	cr_assert_eq(sim_aws_set_faults(aws, "{\"insufficientCapacity\":[{\"instanceType\":\"c5.large\"}]}",
					err, sizeof(err)), 0);

	q = query("CreateFleet", "2016-11-15");
	cr_assert_eq(aws_query_add(q, "instant", "Type"), 0);
	cr_assert_eq(aws_query_add(q, "token-x", "ClientToken"), 0);
	cr_assert_eq(aws_query_add(q, "1", "TargetCapacitySpecification.TotalTargetCapacity"), 0);
	cr_assert_eq(aws_query_add(q, "on-demand", "TargetCapacitySpecification.DefaultTargetCapacityType"), 0);
	cr_assert_eq(aws_query_add(q, "kanna-lt", "LaunchTemplateConfigs.%u.LaunchTemplateSpecification.LaunchTemplateName", 1), 0);
	cr_assert_eq(aws_query_add(q, "c5.large", "LaunchTemplateConfigs.%u.Overrides.%u.InstanceType", 1, 1), 0);
	cr_assert_eq(aws_query_add(q, "us-west-2a", "LaunchTemplateConfigs.%u.Overrides.%u.AvailabilityZone", 1, 1), 0);
	cr_assert_eq(aws_query_add(q, "c5.xlarge", "LaunchTemplateConfigs.%u.Overrides.%u.InstanceType", 1, 2), 0);
	cr_assert_eq(aws_query_add(q, "us-west-2b", "LaunchTemplateConfigs.%u.Overrides.%u.AvailabilityZone", 1, 2), 0);
	o = call("ec2", q, NULL, NULL, 1);
	cr_assert_eq(o.result, 0, "%s", o.body);
	x = parse(&o);
	cr_assert_str_eq(aws_xml_text(aws_xml_first(aws_xml_child(x, "errorSet"), "item"), "errorCode"),
			 "InsufficientInstanceCapacity");
	cr_assert_str_eq(aws_xml_text(aws_xml_first(aws_xml_child(x, "fleetInstanceSet"), "item"), "instanceType"),
			 "c5.xlarge");
	aws_xml_free(x);
	free(o.body);
}

Test(sim_aws_client, throttling_reaches_the_client_as_an_aws_error)
{
	char err[128];
	struct outcome o;

	cr_assert_eq(sim_aws_set_faults(aws, "{\"throttleRate\":1}", err, sizeof(err)), 0);
	o = call("ec2", query("DescribeInstances", "2016-11-15"), NULL, NULL, 1);
	cr_assert_eq(o.result, -EREMOTEIO);
	cr_assert_eq(o.http_status, 503);
	cr_assert_str_eq(o.code, "RequestLimitExceeded");
	free(o.body);
}

Test(sim_aws_client, ssm_json_call_resolves_an_alias)
{
	struct outcome o = call("ssm", NULL, "AmazonSSM.GetParameter",
				json_pack("{s:s}", "Name", "/aws/service/bottlerocket/aws-k8s-1.31/arm64/latest/image_id"), 1);
	json_t *j;

	cr_assert_eq(o.result, 0, "%s", o.body);
	j = json_loads(o.body, 0, NULL);
	cr_assert(strncmp(json_string_value(json_object_get(json_object_get(j, "Parameter"), "Value")), "ami-", 4) == 0);
	json_decref(j);
	free(o.body);

	o = call("ssm", NULL, "AmazonSSM.GetParameter", json_pack("{s:s}", "Name", "/nope"), 1);
	cr_assert_eq(o.result, -EREMOTEIO);
	cr_assert_str_eq(o.code, "ParameterNotFound");
	free(o.body);
}

Test(sim_aws_client, sts_and_sqs_query_calls_work)
{
	struct aws_xml_node *x;
	struct aws_query *q;
	struct outcome o;

	o = call("sts", query("GetCallerIdentity", "2011-06-15"), NULL, NULL, 1);
	cr_assert_eq(o.result, 0, "%s", o.body);
	x = parse(&o);
	cr_assert_str_eq(aws_xml_text(x, "GetCallerIdentityResult/Account"), "111122223333");
	aws_xml_free(x);
	free(o.body);

	q = query("GetQueueUrl", "2012-11-05");
	cr_assert_eq(aws_query_add(q, "nope", "QueueName"), 0);
	o = call("sqs", q, NULL, NULL, 1);
	cr_assert_eq(o.result, -EREMOTEIO);
	cr_assert_str_eq(o.code, "AWS.SimpleQueueService.NonExistentQueue");
	free(o.body);
}

static struct aws_query *iam_query(const char *action, const char *profile, const char *role)
{
	struct aws_query *q = query(action, "2010-05-08");

	cr_assert_eq(aws_query_add(q, profile, "InstanceProfileName"), 0);
	if (role)
		cr_assert_eq(aws_query_add(q, role, "RoleName"), 0);
	return q;
}

Test(sim_aws_client, iam_instance_profile_lifecycle_signed_for_us_east_1)
{
	struct aws_query *q;
	struct aws_xml_node *x;
	struct outcome o;

	o = call("iam", iam_query("GetInstanceProfile", "demo_1", NULL), NULL, NULL, 1);
	cr_assert_eq(o.result, -EREMOTEIO);
	cr_assert_eq(o.http_status, 404);
	cr_assert_str_eq(o.code, "NoSuchEntity");
	free(o.body);

	q = iam_query("CreateInstanceProfile", "demo_1", NULL);
	cr_assert_eq(aws_query_add(q, "karpenter.k8s.aws/ec2nodeclass", "Tags.member.1.Key"), 0);
	cr_assert_eq(aws_query_add(q, "default", "Tags.member.1.Value"), 0);
	o = call("iam", q, NULL, NULL, 1);
	cr_assert_eq(o.result, 0, "%s", o.body);
	x = parse(&o);
	cr_assert_str_eq(aws_xml_text(x, "CreateInstanceProfileResult/InstanceProfile/InstanceProfileName"),
			 "demo_1");
	cr_assert(strncmp(aws_xml_text(x, "CreateInstanceProfileResult/InstanceProfile/InstanceProfileId"),
			  "AIPA", 4) == 0);
	aws_xml_free(x);
	free(o.body);

	o = call("iam", iam_query("CreateInstanceProfile", "demo_1", NULL), NULL, NULL, 1);
	cr_assert_str_eq(o.code, "EntityAlreadyExists");
	free(o.body);

	o = call("iam", iam_query("AddRoleToInstanceProfile", "demo_1", "KarpenterNodeRole"), NULL, NULL, 1);
	cr_assert_eq(o.result, 0, "%s", o.body);
	free(o.body);
	o = call("iam", iam_query("AddRoleToInstanceProfile", "demo_1", "OtherRole"), NULL, NULL, 1);
	cr_assert_str_eq(o.code, "LimitExceeded");
	free(o.body);

	o = call("iam", iam_query("GetInstanceProfile", "demo_1", NULL), NULL, NULL, 1);
	cr_assert_eq(o.result, 0, "%s", o.body);
	x = parse(&o);
	cr_assert_str_eq(aws_xml_text(x, "GetInstanceProfileResult/InstanceProfile/Roles/member/RoleName"),
			 "KarpenterNodeRole");
	cr_assert_str_eq(aws_xml_text(x, "GetInstanceProfileResult/InstanceProfile/Tags/member/Key"),
			 "karpenter.k8s.aws/ec2nodeclass");
	aws_xml_free(x);
	free(o.body);

	o = call("iam", iam_query("DeleteInstanceProfile", "demo_1", NULL), NULL, NULL, 1);
	cr_assert_str_eq(o.code, "DeleteConflict");
	free(o.body);
	o = call("iam", iam_query("RemoveRoleFromInstanceProfile", "demo_1", "KarpenterNodeRole"), NULL,
		 NULL, 1);
	cr_assert_eq(o.result, 0, "%s", o.body);
	free(o.body);
	o = call("iam", iam_query("DeleteInstanceProfile", "demo_1", NULL), NULL, NULL, 1);
	cr_assert_eq(o.result, 0, "%s", o.body);
	free(o.body);
	o = call("iam", iam_query("GetInstanceProfile", "demo_1", NULL), NULL, NULL, 1);
	cr_assert_str_eq(o.code, "NoSuchEntity");
	free(o.body);
}
