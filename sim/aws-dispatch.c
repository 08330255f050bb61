/*
 * The action table of kanna-sim's AWS side: (service, action) -> handler,
 * with the unknown-action errors each service really answers. Called by the
 * HTTP front (sim/aws-server.c) and the fuzz target with aws->lock held,
 * after authentication and fault draws; it holds no state of its own.
 */
#include <string.h>

#include "common/clock.h"
#include "sim/aws-internal.h"

/*
 * The request parameters each EC2 action takes are those its input shape in
 * the EC2 model serializes (sim/aws-shapes.c), down to every nested member,
 * as the EC2 API Reference lists them under Request Parameters for that
 * action (AWSEC2/latest/APIReference/API_<Action>.html). Any other is refused
 * as EC2 refuses it: 400 UnknownParameter, "The parameter X is not
 * recognized", X being the first segment EC2 does not take: EC2 names the
 * nested member alone ("UnknownParameter: The parameter NetworkCardIndex is
 * not recognized" for LaunchSpecification.NetworkInterface.1.NetworkCardIndex,
 * hashicorp/terraform-provider-aws; "The parameter Item is not recognized"
 * for Filter.1.Value.Item.1, aws/aws-sdk-js#403). A wrong capitalization is
 * another parameter (APIReference errors-overview.html: "An unknown or
 * unrecognized parameter was supplied. Requests that could cause this error
 * include marking up a parameter with an incorrect capitalization"). Every
 * action also takes the Common Query Parameters
 * (APIReference/CommonParameters.html).
 */
static const char *const ec2_common_params[] = {
	"Action", "Version", "DryRun", "AWSAccessKeyId", "Expires", "Signature",
	"SignatureMethod", "SignatureVersion", "Timestamp", "X-Amz-Algorithm",
	"X-Amz-Credential", "X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Signature",
	"X-Amz-SignedHeaders", NULL,
};

/* 1 and an UnknownParameter answer when req carries a parameter its EC2
 * action does not take, else 0. */
static int ec2_unknown_parameter(const struct sim_aws *aws, const struct aws_request *req,
				 struct aws_response *resp)
{
	char bad[256];
	int r;

	if (aws_shapes_unknown_param(aws, req, ec2_common_params, bad, sizeof(bad)) == 0)
		return 0;
	r = aws_error(resp, req, 400, "UnknownParameter", "The parameter %s is not recognized", bad);
	return r < 0 ? r : 1;
}

static const struct {
	enum aws_service service;
	const char *action;
	aws_handler_fn fn;
} actions[] = {
	{ AWS_SERVICE_EC2, "DescribeInstanceTypes", ec2_describe_instance_types },
	{ AWS_SERVICE_EC2, "DescribeInstanceTypeOfferings", ec2_describe_instance_type_offerings },
	{ AWS_SERVICE_EC2, "DescribeAvailabilityZones", ec2_describe_availability_zones },
	{ AWS_SERVICE_EC2, "DescribeSubnets", ec2_describe_subnets },
	{ AWS_SERVICE_EC2, "DescribeSecurityGroups", ec2_describe_security_groups },
	{ AWS_SERVICE_EC2, "DescribeImages", ec2_describe_images },
	{ AWS_SERVICE_EC2, "DescribeSpotPriceHistory", ec2_describe_spot_price_history },
	{ AWS_SERVICE_EC2, "CreateLaunchTemplate", ec2_create_launch_template },
	{ AWS_SERVICE_EC2, "DescribeLaunchTemplates", ec2_describe_launch_templates },
	{ AWS_SERVICE_EC2, "DeleteLaunchTemplate", ec2_delete_launch_template },
	{ AWS_SERVICE_EC2, "CreateFleet", ec2_create_fleet },
	{ AWS_SERVICE_EC2, "RunInstances", ec2_run_instances },
	{ AWS_SERVICE_EC2, "DescribeInstances", ec2_describe_instances },
	{ AWS_SERVICE_EC2, "TerminateInstances", ec2_terminate_instances },
	{ AWS_SERVICE_EC2, "CreateTags", ec2_create_tags },
	{ AWS_SERVICE_SSM, "GetParameter", ssm_get_parameter },
	{ AWS_SERVICE_PRICING, "GetProducts", pricing_get_products },
	{ AWS_SERVICE_STS, "GetCallerIdentity", sts_get_caller_identity },
	{ AWS_SERVICE_STS, "AssumeRoleWithWebIdentity", sts_assume_role_with_web_identity },
	{ AWS_SERVICE_IAM, "GetInstanceProfile", iam_get_instance_profile },
	{ AWS_SERVICE_IAM, "CreateInstanceProfile", iam_create_instance_profile },
	{ AWS_SERVICE_IAM, "AddRoleToInstanceProfile", iam_add_role_to_instance_profile },
	{ AWS_SERVICE_IAM, "RemoveRoleFromInstanceProfile", iam_remove_role_from_instance_profile },
	{ AWS_SERVICE_IAM, "DeleteInstanceProfile", iam_delete_instance_profile },
	{ AWS_SERVICE_SQS, "GetQueueUrl", sqs_get_queue_url },
	{ AWS_SERVICE_SQS, "ReceiveMessage", sqs_receive_message },
	{ AWS_SERVICE_SQS, "DeleteMessage", sqs_delete_message },
};

int aws_dispatch(struct sim_aws *aws, struct aws_request *req, struct aws_response *resp)
{
	bool json = req->json_protocol;

	if (!req->action || !*req->action)
		return json ? aws_error(resp, req, 400, "UnknownOperationException",
					"Missing X-Amz-Target operation")
			    : aws_error(resp, req, 400, "MissingAction",
					"The request must contain the parameter Action");
	for (size_t i = 0; i < ARRAY_SIZE(actions); i++)
		if (actions[i].service == req->service && streq(actions[i].action, req->action)) {
			int r = req->service == AWS_SERVICE_EC2 ? ec2_unknown_parameter(aws, req, resp)
							       : aws_shapes_check_json(aws, req, resp);

			if (r != 0)
				return r < 0 ? r : 0;
			/* EC2's permission check: the sim's one identity may do anything. */
			if (req->service == AWS_SERVICE_EC2 &&
			    streq_ptr(aws_params_get(req->params, "DryRun"), "true"))
				return aws_error(resp, req, 412, "DryRunOperation",
						 "Request would have succeeded, but DryRun flag is set.");
			aws_instances_refresh(aws, (uint64_t)clock_realtime_ms());
			return actions[i].fn(aws, req, resp);
		}
	if (json)
		return aws_error(resp, req, 400, "UnknownOperationException",
				 "The operation %s is not supported by this endpoint", req->action);
	return aws_error(resp, req, 400, "InvalidAction",
			 "The action %s is not valid for this web service.", req->action);
}
