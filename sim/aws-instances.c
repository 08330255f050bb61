/*
 * EC2 instances in kanna-sim: DescribeInstances (InstanceId.N, filters
 * incl. tag:K, tag-key, instance-state-name; reservationSet shape; paging),
 * TerminateInstances (running/pending -> shutting-down -> terminated after
 * the configured delay) and CreateTags (instances and launch templates).
 * Instances are created by aws-fleet.c; state advances lazily in
 * aws_instances_refresh(). Called by aws_dispatch() with the lock held.
 */
#include "common/clock.h"
#include "sim/aws-internal.h"

static const unsigned state_codes[] = {
	[INSTANCE_PENDING] = 0,
	[INSTANCE_RUNNING] = 16,
	[INSTANCE_SHUTTING_DOWN] = 32,
	[INSTANCE_TERMINATED] = 48,
};

static const char *const instance_filters[] = {
	"instance-id", "instance-state-name", "instance-state-code", "instance-type",
	"availability-zone", "subnet-id", "vpc-id", "image-id", "instance-lifecycle",
	"private-ip-address", "private-dns-name", "reservation-id", "architecture", NULL,
};

static bool instance_matches(const struct aws_instance *i, const struct aws_filters *f)
{
	char code[8];

	snprintf(code, sizeof(code), "%u", state_codes[i->state]);
	for (size_t k = 0; k < f->n; k++) {
		const char *n = f->v[k].name;
		const char *v = streq(n, "instance-id") ? i->id :
				streq(n, "instance-state-name") ? aws_instance_state_name(i->state) :
				streq(n, "instance-state-code") ? code :
				streq(n, "instance-type") ? i->type->name :
				streq(n, "availability-zone") ? i->zone->name :
				streq(n, "subnet-id") ? i->zone->subnet_id :
				streq(n, "vpc-id") ? i->region->vpc_id :
				streq(n, "image-id") ? i->image_id :
				streq(n, "instance-lifecycle") ? (i->spot ? "spot" : NULL) :
				streq(n, "private-ip-address") ? i->private_ip :
				streq(n, "private-dns-name") ? i->private_dns :
				streq(n, "reservation-id") ? i->reservation_id :
				streq(n, "architecture") ? aws_type_ec2_arch(i->type) : "";

		if (strncmp(n, "tag", 3) == 0)
			continue;
		if (!aws_filter_matches(&f->v[k], v))
			return false;
	}
	return aws_tags_match_filters(&i->tags, f);
}

static void write_state(struct xml *x, const char *tag, enum aws_instance_state s)
{
	xml_open(x, tag);
	xml_leaff(x, "code", "%u", state_codes[s]);
	xml_leaf(x, "name", aws_instance_state_name(s));
	xml_close(x, tag);
}

void ec2_write_instance(struct xml *x, const struct sim_aws *aws, const struct aws_instance *i)
{
	const struct aws_image *im = aws_image_by_id(aws, i->region->name, i->image_id);
	bool windows = im && aws_image_windows_build(im);
	char t[32];

	format_iso8601(i->launch_ms, t);
	xml_open(x, "item");
	xml_leaf(x, "instanceId", i->id);
	xml_leaf(x, "imageId", i->image_id);
	write_state(x, "instanceState", i->state);
	xml_leaf(x, "privateDnsName", i->state == INSTANCE_TERMINATED ? "" : i->private_dns);
	xml_empty(x, "dnsName");
	xml_leaf(x, "reason", i->state >= INSTANCE_SHUTTING_DOWN ?
				      "User initiated" : "");
	xml_leaf(x, "amiLaunchIndex", "0");
	if (windows)
		xml_leaf(x, "platform", "windows");
	xml_empty(x, "productCodes");
	xml_leaf(x, "instanceType", i->type->name);
	xml_leaf(x, "launchTime", t);
	xml_open(x, "placement");
	xml_leaf(x, "availabilityZone", i->zone->name);
	xml_leaf(x, "availabilityZoneId", i->zone->zone_id);
	xml_empty(x, "groupName");
	xml_leaf(x, "tenancy", "default");
	xml_close(x, "placement");
	xml_open(x, "monitoring");
	xml_leaf(x, "state", "disabled");
	xml_close(x, "monitoring");
	if (i->state != INSTANCE_TERMINATED) {
		xml_leaf(x, "subnetId", i->zone->subnet_id);
		xml_leaf(x, "vpcId", i->region->vpc_id);
		xml_leaf(x, "privateIpAddress", i->private_ip);
	}
	xml_open(x, "groupSet");
	xml_open(x, "item");
	xml_leaf(x, "groupId", i->region->sg_id);
	xml_leaff(x, "groupName", "%s-node", aws->cluster_name);
	xml_close(x, "item");
	xml_close(x, "groupSet");
	if (i->state >= INSTANCE_SHUTTING_DOWN) {
		xml_open(x, "stateReason");
		xml_leaf(x, "code", i->interrupt_at_ms ? "Server.SpotInstanceTermination"
						       : "Client.UserInitiatedShutdown");
		xml_leaf(x, "message", i->interrupt_at_ms ? "Server.SpotInstanceTermination: Spot instance termination"
							  : "Client.UserInitiatedShutdown: User initiated shutdown");
		xml_close(x, "stateReason");
	}
	xml_leaf(x, "architecture", aws_type_ec2_arch(i->type));
	xml_leaf(x, "rootDeviceType", "ebs");
	xml_leaf(x, "rootDeviceName", "/dev/xvda");
	xml_empty(x, "blockDeviceMapping");
	if (i->spot)
		xml_leaf(x, "instanceLifecycle", "spot");
	xml_leaf(x, "virtualizationType", "hvm");
	xml_tags(x, "tagSet", i->tags.v, i->tags.n);
	xml_leaf(x, "hypervisor", "xen");
	xml_leaf_bool(x, "ebsOptimized", true);
	xml_leaf_bool(x, "enaSupport", true);
	xml_leaf(x, "platformDetails", windows ? "Windows" : "Linux/UNIX");
	xml_close(x, "item");
}

static int instances_append(struct sim_aws *aws, struct aws_instance *i)
{
	if (aws->n_instances == aws->cap_instances) {
		size_t cap = aws->cap_instances ? aws->cap_instances * 2 : 64;
		struct aws_instance **v = realloc(aws->instances, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		aws->instances = v;
		aws->cap_instances = cap;
	}
	aws->instances[aws->n_instances++] = i;
	return 0;
}

int aws_instance_launch(struct sim_aws *aws, const struct aws_launch_spec *spec,
			struct aws_instance **ret)
{
	struct aws_instance *i = calloc(1, sizeof(*i));
	unsigned n = (unsigned)aws->n_instances, oct = 0, third, fourth;
	int r = 0;

	if (!i)
		return -ENOMEM;
	aws_new_id(aws, "i-", 17, i->id, sizeof(i->id));
	if (spec->reservation_id)
		snprintf(i->reservation_id, sizeof(i->reservation_id), "%s", spec->reservation_id);
	else
		aws_new_id(aws, "r-", 17, i->reservation_id, sizeof(i->reservation_id));
	snprintf(i->image_id, sizeof(i->image_id), "%s", spec->image_id ? spec->image_id : "");
	if (spec->launch_template)
		snprintf(i->launch_template_id, sizeof(i->launch_template_id), "%s",
			 spec->launch_template->id);
	/* Addresses walk the zone's /20: 16 blocks of 250 hosts. */
	sscanf(spec->zone->cidr, "10.%u.", &oct);
	third = spec->zone->index * 16 + (n / 250) % 16;
	fourth = n % 250 + 4;
	snprintf(i->private_ip, sizeof(i->private_ip), "10.%u.%u.%u", oct, third, fourth);
	snprintf(i->private_dns, sizeof(i->private_dns), "ip-10-%u-%u-%u.%s.compute.internal",
		 oct, third, fourth, spec->region->name);
	i->type = spec->type;
	i->region = spec->region;
	i->zone = spec->zone;
	i->spot = spec->spot;
	i->never_boots = aws_faults_never_boot(aws, spec->type->name);
	i->state = INSTANCE_PENDING;
	i->launch_ms = i->state_change_ms = (uint64_t)clock_realtime_ms();
	i->price = spec->price;
	for (size_t k = 0; r >= 0 && spec->tags && k < spec->tags->n; k++)
		r = aws_tags_set(&i->tags, spec->tags->v[k].key, spec->tags->v[k].value);
	if (r >= 0 && spec->system_tag_key)
		r = aws_tags_set(&i->tags, spec->system_tag_key, spec->system_tag_value);
	if (r >= 0 && spec->launch_template)
		r = aws_tags_set(&i->tags, "aws:ec2launchtemplate:id", spec->launch_template->id);
	if (r >= 0)
		r = instances_append(aws, i);
	if (r < 0) {
		aws_instance_free(i);
		return r;
	}
	aws_timeline_add(aws, "launch", "%s %s %s %s %.4f/h", i->id, i->type->name, i->zone->name,
			 i->spot ? "spot" : "on-demand", i->price);
	*ret = i;
	return 0;
}

/* InstanceId.N must all exist in the region, or the call fails (as EC2). */
static int instance_ids_check(struct sim_aws *aws, const struct aws_request *req,
			      struct aws_response *resp, size_t n, bool *handled)
{
	*handled = false;
	for (size_t k = 0; k < n; k++) {
		const char *id = aws_params_getf(req->params, "InstanceId.%zu", k + 1);
		const struct aws_instance *i = aws_instance_find(aws, id);

		if (!i || !streq(i->region->name, req->region)) {
			*handled = true;
			if (!id || strncmp(id, "i-", 2) != 0)
				return aws_error(resp, req, 400, "InvalidInstanceID.Malformed",
						 "Invalid id: \"%s\"", id ? id : "");
			return aws_error(resp, req, 400, "InvalidInstanceID.NotFound",
					 "The instance ID '%s' does not exist", id);
		}
	}
	return 0;
}


int ec2_describe_instances(struct sim_aws *aws, const struct aws_request *req,
			   struct aws_response *resp)
{
	size_t n_ids = aws_params_count(req->params, "InstanceId"), start, limit, n = 0;
	struct aws_filters f = { 0 };
	struct aws_list ids = { 0 };
	bool handled;
	struct xml x;
	int r;

	if (n_ids && aws_params_get(req->params, "MaxResults"))
		return aws_error(resp, req, 400, "InvalidParameterCombination",
				 "The parameter instancesSet cannot be used with the parameter maxResults");
	r = instance_ids_check(aws, req, resp, n_ids, &handled);
	if (r < 0 || handled)
		return r;
	r = aws_page_parse(req, resp, PAGE_INSTANCES, &start, &limit, &handled);
	if (r < 0 || handled)
		return r;
	r = ec2_filters_load(req, resp, instance_filters, true, &f, &handled);
	if (r < 0 || handled)
		return r;
	r = aws_params_list(req->params, "InstanceId", &ids);
	if (r >= 0)
		r = xml_begin(&x, "DescribeInstancesResponse", EC2_XMLNS);
	if (r < 0) {
		aws_filters_clear(&f);
		aws_list_clear(&ids);
		return r;
	}
	xml_leaf(&x, "requestId", req->request_id);
	xml_open(&x, "reservationSet");
	for (size_t k = 0; k < aws->n_instances; k++) {
		const struct aws_instance *i = aws->instances[k];

		if (!streq(i->region->name, req->region) || (ids.n && !aws_list_has(&ids, i->id)) ||
		    !instance_matches(i, &f))
			continue;
		if (n >= start && n - start < limit) {
			xml_open(&x, "item");
			xml_leaf(&x, "reservationId", i->reservation_id);
			xml_leaf(&x, "ownerId", SIM_AWS_ACCOUNT_ID);
			xml_empty(&x, "groupSet");
			xml_open(&x, "instancesSet");
			ec2_write_instance(&x, aws, i);
			xml_close(&x, "instancesSet");
			xml_close(&x, "item");
		}
		n++;
	}
	xml_close(&x, "reservationSet");
	if (limit != PAGE_ALL && start + limit < n)
		aws_page_next_token(&x, start + limit);
	aws_filters_clear(&f);
	aws_list_clear(&ids);
	return xml_finish(&x, "DescribeInstancesResponse", resp);
}

int ec2_terminate_instances(struct sim_aws *aws, const struct aws_request *req,
			    struct aws_response *resp)
{
	size_t n = aws_params_count(req->params, "InstanceId");
	uint64_t now = (uint64_t)clock_realtime_ms();
	bool handled;
	struct xml x;
	int r;

	if (n == 0)
		return aws_error_missing(resp, req, "InstanceId");
	r = instance_ids_check(aws, req, resp, n, &handled);
	if (r < 0 || handled)
		return r;
	r = xml_begin(&x, "TerminateInstancesResponse", EC2_XMLNS);
	if (r < 0)
		return r;
	xml_leaf(&x, "requestId", req->request_id);
	xml_open(&x, "instancesSet");
	for (size_t k = 0; k < n; k++) {
		struct aws_instance *i = aws_instance_find(aws, aws_params_getf(req->params, "InstanceId.%zu", k + 1));
		enum aws_instance_state prev = i->state;

		if (i->state == INSTANCE_PENDING || i->state == INSTANCE_RUNNING) {
			aws_instance_set_state(aws, i, INSTANCE_SHUTTING_DOWN, now);
			aws_timeline_add(aws, "terminate", "%s cost %.6f", i->id,
					 aws_instance_cost(i, now));
		}
		xml_open(&x, "item");
		xml_leaf(&x, "instanceId", i->id);
		write_state(&x, "currentState", i->state);
		write_state(&x, "previousState", prev);
		xml_close(&x, "item");
	}
	xml_close(&x, "instancesSet");
	return xml_finish(&x, "TerminateInstancesResponse", resp);
}

/* Resolves ResourceId.N to tag sets; NULL entries are errors in resp. */
static int tag_targets(struct sim_aws *aws, const struct aws_request *req,
		       struct aws_response *resp, size_t n, struct aws_tags **targets,
		       bool *handled)
{
	*handled = true;
	for (size_t k = 0; k < n; k++) {
		const char *id = aws_params_getf(req->params, "ResourceId.%zu", k + 1);
		struct aws_instance *i;
		struct aws_launch_template *lt;

		if (id && strncmp(id, "i-", 2) == 0) {
			i = aws_instance_find(aws, id);
			if (!i || !streq(i->region->name, req->region))
				return aws_error(resp, req, 400, "InvalidInstanceID.NotFound",
						 "The instance ID '%s' does not exist", id);
			targets[k] = &i->tags;
		} else if (id && strncmp(id, "lt-", 3) == 0) {
			lt = ec2_launch_template_find(aws, req->region, id, NULL);
			if (!lt)
				return aws_error(resp, req, 400, "InvalidLaunchTemplateId.NotFound",
						 "The specified launch template, with template ID %s, does not exist.", id);
			targets[k] = &lt->tags;
		} else
			return aws_error(resp, req, 400, "InvalidID",
					 "The ID '%s' is not valid", id ? id : "");
	}
	*handled = false;
	return 0;
}

/* Tags that would exceed EC2_TAGS_MAX user tags on a resource (+2 for the
 * aws: tags the sim sets itself); checked before anything changes. */
static bool tags_would_overflow(const struct aws_tags *t, const char **keys, size_t n_keys)
{
	size_t added = 0;

	for (size_t i = 0; i < n_keys; i++)
		added += !aws_tags_get(t, keys[i]);
	return t->n + added > EC2_TAGS_MAX + 2;
}

static int tags_apply(struct sim_aws *aws, const struct aws_request *req,
		      struct aws_response *resp, struct aws_tags **targets, size_t n,
		      const char **keys, const char **values, size_t n_tags)
{
	int r;

	for (size_t k = 0; k < n; k++)
		if (tags_would_overflow(targets[k], keys, n_tags))
			return aws_error(resp, req, 400, "TagLimitExceeded",
					 "The maximum number of Tags for a resource has been reached.");
	for (size_t k = 0; k < n; k++)
		for (size_t t = 0; t < n_tags; t++) {
			r = aws_tags_set(targets[k], keys[t], values[t]);
			if (r < 0)
				return r;
		}
	aws_timeline_add(aws, "create-tags", "%zu resource(s), %zu tag(s)", n, n_tags);
	return 1;
}

int ec2_create_tags(struct sim_aws *aws, const struct aws_request *req,
		    struct aws_response *resp)
{
	size_t n = aws_params_count(req->params, "ResourceId");
	size_t n_tags = aws_params_count(req->params, "Tag");
	_cleanup_free_ struct aws_tags **targets = NULL;
	_cleanup_free_ const char **keys = NULL, **values = NULL;
	bool handled;
	struct xml x;
	int r;

	if (n == 0)
		return aws_error_missing(resp, req, "ResourceId");
	if (n_tags == 0)
		return aws_error_missing(resp, req, "Tag");
	keys = calloc(n_tags, sizeof(*keys));
	values = calloc(n_tags, sizeof(*values));
	targets = calloc(n, sizeof(*targets));
	if (!keys || !values || !targets)
		return -ENOMEM;
	for (size_t t = 0; t < n_tags; t++) {
		keys[t] = aws_params_getf(req->params, "Tag.%zu.Key", t + 1);
		values[t] = aws_params_getf(req->params, "Tag.%zu.Value", t + 1);
		if (!keys[t] || !*keys[t] || strncmp(keys[t], "aws:", 4) == 0)
			return aws_error(resp, req, 400, "InvalidParameterValue",
					 "Value (%s) for parameter Tag.%zu.Key is invalid. Tag keys starting with 'aws:' are reserved for internal use",
					 keys[t] ? keys[t] : "", t + 1);
	}
	r = tag_targets(aws, req, resp, n, targets, &handled);
	if (r < 0 || handled)
		return r;
	r = tags_apply(aws, req, resp, targets, n, keys, values, n_tags);
	if (r <= 0)
		return r;
	r = xml_begin(&x, "CreateTagsResponse", EC2_XMLNS);
	if (r < 0)
		return r;
	xml_leaf(&x, "requestId", req->request_id);
	xml_leaf(&x, "return", "true");
	return xml_finish(&x, "CreateTagsResponse", resp);
}
