/*
 * SSM GetParameter for kanna-sim (awsJson1_1): the public AMI parameters
 * (/aws/service/eks/optimized-ami/<v>/amazon-linux-2[-arm64|-gpu]/
 * recommended/image_id, .../amazon-linux-2023/<arch>/<standard|nvidia|neuron>/
 * recommended/image_id, /aws/service/bottlerocket/aws-k8s-<v>[-nvidia]/
 * <arch>/latest/image_id, the pinned-name forms, /aws/service/ami-windows-
 * latest/Windows_Server-<year>-English-Core-EKS_Optimized-<v>/image_id and
 * /aws/service/canonical/ubuntu/eks/20.04/<v>/stable/current/<arch>/hvm/
 * ebs-gp2/ami-id; see aws-images.c) resolved to the sim's AMIs of the
 * request's region. Anything else is ParameterNotFound.
 */
#include "sim/aws-internal.h"

/* SSM parameter names are at most 2048 characters. */
#define SSM_NAME_MAX 2048

int ssm_get_parameter(struct sim_aws *aws, const struct aws_request *req,
		      struct aws_response *resp)
{
	json_t *jn = json_object_get(req->json, "Name");
	const char *name = json_string_value(jn);
	const struct aws_image *found = NULL;
	char path[512], arn[2300];

	if (!name)
		return aws_error(resp, req, 400, "ValidationException",
				 "1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null");
	if (strlen(name) == 0 || strlen(name) > SSM_NAME_MAX)
		return aws_error(resp, req, 400, "ValidationException",
				 "1 validation error detected: Value at 'name' failed to satisfy constraint: Member must have length between 1 and 2048");
	for (size_t i = 0; !found && i < aws->n_images; i++) {
		const struct aws_image *im = &aws->images[i];

		if (!streq(im->region, req->region))
			continue;
		for (int which = 0; which < 2 && !found; which++) {
			aws_image_ssm_path(im, which, path, sizeof(path));
			if (*path && streq(path, name))
				found = im;
		}
	}
	if (!found)
		return aws_error(resp, req, 400, "ParameterNotFound", "Parameter %s not found.", name);
	snprintf(arn, sizeof(arn), "arn:aws:ssm:%s::parameter%s", req->region, name);
	return aws_json_reply(resp, json_pack("{s:{s:s, s:s, s:f, s:s, s:s, s:s, s:i}}", "Parameter",
					      "ARN", arn, "DataType", "text",
					      "LastModifiedDate", 1748736000.0, "Name", name,
					      "Type", "String", "Value", found->id, "Version", 1));
}
