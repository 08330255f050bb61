/*
 * EC2 RunInstances in kanna-sim: one instance type in one subnet or zone,
 * MaxCount instances (MinCount must be satisfiable), on-demand or spot
 * (InstanceMarketOptions.MarketType=spot), image from ImageId or the launch
 * template, tags from TagSpecification (resource type instance). Injected
 * insufficient capacity fails the whole call, as EC2 does. ClientToken is
 * not remembered here (CreateFleet is the idempotent path kanna uses).
 * Called by aws_dispatch() with the lock held.
 */
#include "sim/aws-internal.h"

/* EC2's default per-call ceiling for MaxCount in a fresh account. */
#define RUN_INSTANCES_MAX 100

struct run {
	const struct aws_instance_type *type;
	const struct aws_region *reg;
	const struct aws_zone *zone;
	const struct aws_launch_template *lt;
	const char *image_id;
	unsigned long count;
	bool spot;
};

/* An error answer in resp means "stop here" (1); a failure stays < 0. */
static int failed(int r)
{
	return r < 0 ? r : 1;
}

/* Fills run from the parameters; returns 1 when resp holds an error. */
static int run_parse(struct sim_aws *aws, const struct aws_request *req,
		     struct aws_response *resp, struct run *run)
{
	const char *type = aws_params_get(req->params, "InstanceType");
	const char *subnet = aws_params_get(req->params, "SubnetId");
	const char *az = aws_params_get(req->params, "Placement.AvailabilityZone");
	const char *min = aws_params_get(req->params, "MinCount");
	const char *max = aws_params_get(req->params, "MaxCount");
	const char *lt_id = aws_params_get(req->params, "LaunchTemplate.LaunchTemplateId");
	const char *lt_name = aws_params_get(req->params, "LaunchTemplate.LaunchTemplateName");
	const struct aws_region *in = NULL;
	const struct aws_image *im;
	unsigned long lo;

	if (!min || !max)
		return failed(aws_error_missing(resp, req, min ? "MaxCount" : "MinCount"));
	if (aws_parse_uint(min, RUN_INSTANCES_MAX, &lo) < 0 || lo == 0 ||
	    aws_parse_uint(max, RUN_INSTANCES_MAX, &run->count) < 0 || run->count < lo)
		return failed(aws_error(resp, req, 400, "InvalidParameterValue",
				      "Invalid MinCount/MaxCount: %s/%s", min, max));
	if (!type)
		return failed(aws_error_missing(resp, req, "InstanceType"));
	run->type = aws_catalog_type(aws->catalog, type);
	if (!run->type || !aws_type_offered(run->type))
		return failed(aws_error(resp, req, 400, "InvalidParameterValue",
				      "Invalid value '%s' for InstanceType.", type));
	if (lt_id || lt_name) {
		run->lt = ec2_launch_template_find(aws, req->region, lt_id, lt_name);
		if (!run->lt)
			return failed(aws_error(resp, req, 400, "InvalidLaunchTemplateName.NotFoundException",
					      "The specified launch template does not exist."));
	}
	if (subnet)
		run->zone = aws_catalog_subnet(aws->catalog, subnet, &in);
	else if (az)
		run->zone = aws_catalog_zone(aws->catalog, az, &in);
	else {
		in = aws_catalog_region(aws->catalog, req->region);
		run->zone = &in->zones[0];
	}
	if (!run->zone || !streq(in->name, req->region))
		return failed(aws_error(resp, req, 400, subnet ? "InvalidSubnetID.NotFound" : "InvalidParameterValue",
				      "The subnet ID or zone '%s' does not exist", subnet ? subnet : az));
	run->reg = in;
	run->image_id = aws_params_get(req->params, "ImageId") ?: run->lt ? run->lt->image_id : NULL;
	if (!run->image_id)
		return failed(aws_error_missing(resp, req, "ImageId"));
	im = aws_image_by_id(aws, req->region, run->image_id);
	if (!im)
		return failed(aws_error(resp, req, 400, "InvalidAMIID.NotFound",
				      "The image id '[%s]' does not exist", run->image_id));
	if (!streq(im->arch, aws_type_ec2_arch(run->type)))
		return failed(aws_error(resp, req, 400, "InvalidParameterValue",
				      "The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI.",
				      aws_type_ec2_arch(run->type), im->arch));
	run->spot = streq_ptr(aws_params_get(req->params, "InstanceMarketOptions.MarketType"), "spot");
	return 0;
}

int ec2_run_instances(struct sim_aws *aws, const struct aws_request *req,
		      struct aws_response *resp)
{
	struct aws_tags tags = { 0 };
	struct run run = { 0 };
	char reservation[24], bad[96];
	struct aws_instance **made = NULL;
	const char *ice;
	struct xml x;
	int r;

	r = run_parse(aws, req, resp, &run);
	if (r != 0)
		return r < 0 ? r : 0;
	ice = aws_faults_ice(aws, run.type->name, run.zone->name, run.spot);
	if (ice) {
		aws->injected.insufficient_capacity++;
		aws_timeline_add(aws, "insufficient-capacity", "%s %s %s", run.type->name,
				 run.zone->name, run.spot ? "spot" : "on-demand");
		return aws_error(resp, req, 500, ice,
				 "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).",
				 run.type->name, run.zone->name);
	}
	r = ec2_parse_tag_specs(req->params, "instance", &tags, bad, sizeof(bad));
	if (r < 0) {
		aws_tags_clear(&tags);
		return r == -ENOMEM ? r : aws_error(resp, req, 400, "InvalidParameterValue",
						    "Value for parameter %s is invalid", bad);
	}
	made = calloc(run.count, sizeof(*made));
	if (!made) {
		aws_tags_clear(&tags);
		return -ENOMEM;
	}
	aws_new_id(aws, "r-", 17, reservation, sizeof(reservation));
	for (unsigned long k = 0; r >= 0 && k < run.count; k++) {
		const struct aws_launch_spec spec = {
			.type = run.type, .region = run.reg, .zone = run.zone, .spot = run.spot,
			.price = aws_catalog_price(run.reg, run.zone, run.type, run.spot),
			.image_id = run.image_id, .launch_template = run.lt, .tags = &tags,
			.reservation_id = reservation,
		};

		r = aws_instance_launch(aws, &spec, &made[k]);
	}
	aws_tags_clear(&tags);
	if (r >= 0)
		r = xml_begin(&x, "RunInstancesResponse", EC2_XMLNS);
	if (r < 0) {
		free(made);
		return r;
	}
	xml_leaf(&x, "requestId", req->request_id);
	xml_leaf(&x, "reservationId", reservation);
	xml_leaf(&x, "ownerId", SIM_AWS_ACCOUNT_ID);
	xml_empty(&x, "groupSet");
	xml_open(&x, "instancesSet");
	for (unsigned long k = 0; k < run.count; k++)
		ec2_write_instance(&x, aws, made[k]);
	xml_close(&x, "instancesSet");
	free(made);
	return xml_finish(&x, "RunInstancesResponse", resp);
}
