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
 * The request parameters each EC2 action takes, by their first segment
 * ("Filter" for Filter.N.Name), as the EC2 API Reference lists them under
 * Request Parameters for that action (AWSEC2/latest/APIReference/
 * API_<Action>.html). Any other is refused as EC2 refuses it: 400
 * UnknownParameter, "The parameter X is not recognized"; a wrong
 * capitalization is another parameter (APIReference errors-overview.html:
 * "An unknown or unrecognized parameter was supplied. Requests that could
 * cause this error include marking up a parameter with an incorrect
 * capitalization"). Every action also takes the Common Query Parameters
 * (APIReference/CommonParameters.html).
 */
static const char *const ec2_common_params[] = {
	"Action", "Version", "DryRun", "AWSAccessKeyId", "Expires", "Signature",
	"SignatureMethod", "SignatureVersion", "Timestamp", "X-Amz-Algorithm",
	"X-Amz-Credential", "X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Signature",
	"X-Amz-SignedHeaders", NULL,
};

static const struct {
	const char *action;
	const char *params; /* space-separated first segments */
} ec2_params[] = {
	{ "DescribeInstanceTypes", "Filter InstanceType MaxResults NextToken" },
	{ "DescribeInstanceTypeOfferings", "Filter LocationType MaxResults NextToken" },
	{ "DescribeAvailabilityZones", "AllAvailabilityZones Filter ZoneId ZoneName" },
	{ "DescribeSubnets", "Filter MaxResults NextToken SubnetId" },
	{ "DescribeSecurityGroups", "Filter GroupId GroupName MaxResults NextToken" },
	{ "DescribeImages", "ExecutableBy Filter ImageId IncludeDeprecated IncludeDisabled "
			    "MaxResults NextToken Owner" },
	{ "DescribeSpotPriceHistory", "AvailabilityZone EndTime Filter InstanceType MaxResults "
				      "NextToken ProductDescription StartTime" },
	{ "CreateLaunchTemplate", "ClientToken LaunchTemplateData LaunchTemplateName Operator "
				  "TagSpecification VersionDescription" },
	{ "DescribeLaunchTemplates", "Filter LaunchTemplateId LaunchTemplateName MaxResults "
				     "NextToken" },
	{ "DeleteLaunchTemplate", "LaunchTemplateId LaunchTemplateName" },
	{ "CreateFleet", "ClientToken Context ExcessCapacityTerminationPolicy "
			 "LaunchTemplateConfigs OnDemandOptions ReplaceUnhealthyInstances "
			 "SpotOptions TagSpecification TargetCapacitySpecification "
			 "TerminateInstancesWithExpiration Type ValidFrom ValidUntil" },
	{ "RunInstances", "AdditionalInfo BlockDeviceMapping CapacityReservationSpecification "
			  "ClientToken CpuOptions CreditSpecification DisableApiStop "
			  "DisableApiTermination EbsOptimized ElasticGpuSpecification "
			  "ElasticInferenceAccelerator EnablePrimaryIpv6 EnclaveOptions "
			  "HibernationOptions IamInstanceProfile ImageId "
			  "InstanceInitiatedShutdownBehavior InstanceMarketOptions InstanceType "
			  "Ipv6Address Ipv6AddressCount KernelId KeyName LaunchTemplate "
			  "LicenseSpecification MaintenanceOptions MaxCount MetadataOptions "
			  "MinCount Monitoring NetworkInterface NetworkPerformanceOptions Operator "
			  "Placement PrivateDnsNameOptions PrivateIpAddress RamdiskId "
			  "SecurityGroup SecurityGroupId SubnetId TagSpecification UserData" },
	{ "DescribeInstances", "Filter InstanceId MaxResults NextToken" },
	{ "TerminateInstances", "Force InstanceId SkipOsShutdown" },
	{ "CreateTags", "ResourceId Tag" },
};

/* Whether the first segment of name (len bytes) is a word of list. */
static bool listed(const char *list, const char *name, size_t len)
{
	for (const char *w = list; *w;) {
		size_t n = strcspn(w, " ");

		if (n == len && strncmp(w, name, len) == 0)
			return true;
		w += n;
		w += strspn(w, " ");
	}
	return false;
}

/* 1 and an UnknownParameter answer when req carries a parameter its EC2
 * action does not take, else 0. */
static int ec2_unknown_parameter(const struct aws_request *req, struct aws_response *resp)
{
	const char *params = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(ec2_params); i++)
		if (streq(ec2_params[i].action, req->action))
			params = ec2_params[i].params;
	if (!params || !req->params)
		return 0;
	for (size_t i = 0; i < req->params->n; i++) {
		const char *name = req->params->v[i].name;
		size_t len = strcspn(name, ".");
		bool ok = listed(params, name, len);

		for (size_t k = 0; !ok && ec2_common_params[k]; k++)
			ok = strlen(ec2_common_params[k]) == len &&
			     strncmp(ec2_common_params[k], name, len) == 0;
		if (!ok) {
			int r = aws_error(resp, req, 400, "UnknownParameter",
					  "The parameter %s is not recognized", name);

			return r < 0 ? r : 1;
		}
	}
	return 0;
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
			int r = req->service == AWS_SERVICE_EC2 ? ec2_unknown_parameter(req, resp) : 0;

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
