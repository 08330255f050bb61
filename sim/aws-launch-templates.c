/*
 * EC2 launch templates in kanna-sim: CreateLaunchTemplate (names unique per
 * region), DescribeLaunchTemplates (ids, names, filters, paging) and
 * DeleteLaunchTemplate. A template keeps its name, tags and
 * LaunchTemplateData.ImageId, which CreateFleet uses when an override names
 * no image. Called by aws_dispatch() with the lock held.
 */
#include "common/clock.h"
#include "sim/aws-internal.h"

/* EC2's bounds on a launch template name. */
#define LT_NAME_MIN 3
#define LT_NAME_MAX 128

static bool lt_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < LT_NAME_MIN || n > LT_NAME_MAX)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789()./_-") == n;
}

struct aws_launch_template *ec2_launch_template_find(struct sim_aws *aws, const char *region,
						     const char *id, const char *name)
{
	for (size_t i = 0; i < aws->n_templates; i++) {
		struct aws_launch_template *lt = aws->templates[i];

		if (streq(lt->region, region) && ((id && streq(lt->id, id)) ||
						  (!id && name && streq(lt->name, name))))
			return lt;
	}
	return NULL;
}

static void write_template(struct xml *x, const struct aws_launch_template *lt, const char *tag)
{
	char t[32];

	format_iso8601(lt->create_ms, t);
	xml_open(x, tag);
	xml_leaf(x, "launchTemplateId", lt->id);
	xml_leaf(x, "launchTemplateName", lt->name);
	xml_leaf(x, "createTime", t);
	xml_leaff(x, "createdBy", "arn:aws:iam::%s:user/kanna-sim", SIM_AWS_ACCOUNT_ID);
	xml_leaf(x, "defaultVersionNumber", "1");
	xml_leaf(x, "latestVersionNumber", "1");
	xml_tags(x, "tagSet", lt->tags.v, lt->tags.n);
	xml_close(x, tag);
}

static int templates_append(struct sim_aws *aws, struct aws_launch_template *lt)
{
	if (aws->n_templates == aws->cap_templates) {
		size_t cap = aws->cap_templates ? aws->cap_templates * 2 : 16;
		struct aws_launch_template **v = realloc(aws->templates, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		aws->templates = v;
		aws->cap_templates = cap;
	}
	aws->templates[aws->n_templates++] = lt;
	return 0;
}

static int template_data_keep(struct aws_launch_template *lt, const struct aws_params *params)
{
	static const char prefix[] = "LaunchTemplateData.";

	for (size_t k = 0; k < params->n; k++) {
		const struct aws_param *p = &params->v[k];

		if (strncmp(p->name, prefix, sizeof(prefix) - 1) == 0 &&
		    aws_params_add(&lt->data, p->name + sizeof(prefix) - 1, p->value, strlen(p->value), 0) < 0)
			return -ENOMEM;
	}
	return 0;
}

json_t *aws_launch_templates_json(struct sim_aws *aws)
{
	json_t *all = json_array();

	for (size_t i = 0; all && i < aws->n_templates; i++) {
		const struct aws_launch_template *lt = aws->templates[i];
		json_t *data = json_object();

		for (size_t k = 0; data && k < lt->data.n; k++)
			json_object_set_new(data, lt->data.v[k].name, json_string(lt->data.v[k].value));
		json_array_append_new(all, json_pack("{s:s, s:s, s:s, s:o?}", "launchTemplateId", lt->id,
						     "launchTemplateName", lt->name, "region", lt->region,
						     "launchTemplateData", data));
	}
	return all;
}

int ec2_create_launch_template(struct sim_aws *aws, const struct aws_request *req,
			       struct aws_response *resp)
{
	const char *name = aws_params_get(req->params, "LaunchTemplateName");
	const char *image = aws_params_get(req->params, "LaunchTemplateData.ImageId");
	const char *user_data = aws_params_get(req->params, "LaunchTemplateData.UserData");
	struct aws_launch_template *lt;
	char bad[96];
	struct xml x;
	int r;

	if (!name)
		return aws_error_missing(resp, req, "LaunchTemplateName");
	if (!lt_name_valid(name))
		return aws_error(resp, req, 400, "InvalidLaunchTemplateName.MalformedException",
				 "A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.'");
	if (ec2_launch_template_find(aws, req->region, NULL, name))
		return aws_error(resp, req, 400, "InvalidLaunchTemplateName.AlreadyExistsException",
				 "Launch template name already in use.");
	if (image && !aws_image_by_id(aws, req->region, image))
		return aws_error(resp, req, 400, "InvalidAMIID.NotFound",
				 "The image id '[%s]' does not exist", image);
	lt = calloc(1, sizeof(*lt));
	if (!lt)
		return -ENOMEM;
	lt->name = strdup(name);
	lt->image_id = image ? strdup(image) : NULL;
	/* kept as sent, for /_sim/status: what a node would have booted with */
	lt->user_data = user_data ? strdup(user_data) : NULL;
	if (!lt->name || (image && !lt->image_id) || (user_data && !lt->user_data) ||
	    template_data_keep(lt, req->params) < 0) {
		aws_launch_template_free(lt);
		return -ENOMEM;
	}
	r = ec2_parse_tag_specs(req->params, "launch-template", &lt->tags, bad, sizeof(bad));
	if (r < 0) {
		aws_launch_template_free(lt);
		return r == -ENOMEM ? r : aws_error(resp, req, 400, "InvalidParameterValue",
						    "Value for parameter %s is invalid", bad);
	}
	snprintf(lt->region, sizeof(lt->region), "%s", req->region);
	aws_new_id(aws, "lt-", 17, lt->id, sizeof(lt->id));
	lt->create_ms = (uint64_t)clock_realtime_ms();
	r = templates_append(aws, lt);
	if (r < 0) {
		aws_launch_template_free(lt);
		return r;
	}
	aws_timeline_add(aws, "create-launch-template", "%s %s", lt->id, lt->name);
	r = xml_begin(&x, "CreateLaunchTemplateResponse", EC2_XMLNS);
	if (r < 0)
		return r;
	xml_leaf(&x, "requestId", req->request_id);
	write_template(&x, lt, "launchTemplate");
	return xml_finish(&x, "CreateLaunchTemplateResponse", resp);
}

static const char *const lt_filters[] = { "launch-template-name", "create-time", NULL };

static bool lt_selected(const struct aws_launch_template *lt, const struct aws_list *ids,
			const struct aws_list *names, const struct aws_filters *f)
{
	const struct aws_filter *fn = aws_filters_find(f, "launch-template-name");
	bool ok = (ids->n == 0 && names->n == 0) || aws_list_has(ids, lt->id) ||
		  aws_list_has(names, lt->name);

	return ok && (!fn || aws_filter_matches(fn, lt->name)) &&
	       aws_tags_match_filters(&lt->tags, f);
}

/* Every id or name asked for by name must exist, as EC2 insists. */
static int lt_check_named(struct sim_aws *aws, const struct aws_request *req,
			  struct aws_response *resp, bool *handled)
{
	*handled = true;
	for (size_t k = 0; k < aws_params_count(req->params, "LaunchTemplateId"); k++) {
		const char *id = aws_params_getf(req->params, "LaunchTemplateId.%zu", k + 1);

		if (!id || !ec2_launch_template_find(aws, req->region, id, NULL))
			return aws_error(resp, req, 400, "InvalidLaunchTemplateId.NotFound",
					 "The specified launch template, with template ID %s, does not exist.",
					 id ? id : "");
	}
	for (size_t k = 0; k < aws_params_count(req->params, "LaunchTemplateName"); k++) {
		const char *name = aws_params_getf(req->params, "LaunchTemplateName.%zu", k + 1);

		if (!name || !ec2_launch_template_find(aws, req->region, NULL, name))
			return aws_error(resp, req, 400, "InvalidLaunchTemplateName.NotFoundException",
					 "At least one of the launch templates specified in the request does not exist.");
	}
	*handled = false;
	return 0;
}

int ec2_describe_launch_templates(struct sim_aws *aws, const struct aws_request *req,
				  struct aws_response *resp)
{
	struct aws_list ids = { 0 }, names = { 0 };
	struct aws_filters f = { 0 };
	size_t start, limit, n = 0;
	bool handled;
	struct xml x;
	int r;

	r = lt_check_named(aws, req, resp, &handled);
	if (r < 0 || handled)
		return r;
	r = aws_page_parse(req, resp, PAGE_LAUNCH_TEMPLATES, &start, &limit, &handled);
	if (r < 0 || handled)
		return r;
	r = ec2_filters_load(req, resp, lt_filters, true, &f, &handled);
	if (r < 0 || handled)
		return r;
	r = aws_params_list(req->params, "LaunchTemplateId", &ids);
	if (r >= 0)
		r = aws_params_list(req->params, "LaunchTemplateName", &names);
	if (r >= 0)
		r = xml_begin(&x, "DescribeLaunchTemplatesResponse", EC2_XMLNS);
	if (r < 0) {
		aws_filters_clear(&f);
		aws_list_clear(&ids);
		aws_list_clear(&names);
		return r;
	}
	xml_leaf(&x, "requestId", req->request_id);
	xml_open(&x, "launchTemplates");
	for (size_t i = 0; i < aws->n_templates; i++) {
		const struct aws_launch_template *lt = aws->templates[i];

		if (!streq(lt->region, req->region) || !lt_selected(lt, &ids, &names, &f))
			continue;
		if (n >= start && n < start + limit)
			write_template(&x, lt, "item");
		n++;
	}
	xml_close(&x, "launchTemplates");
	if (start + limit < n)
		aws_page_next_token(&x, start + limit);
	aws_filters_clear(&f);
	aws_list_clear(&ids);
	aws_list_clear(&names);
	return xml_finish(&x, "DescribeLaunchTemplatesResponse", resp);
}

int ec2_delete_launch_template(struct sim_aws *aws, const struct aws_request *req,
			       struct aws_response *resp)
{
	const char *id = aws_params_get(req->params, "LaunchTemplateId");
	const char *name = aws_params_get(req->params, "LaunchTemplateName");
	struct aws_launch_template *lt;
	struct xml x;
	int r;

	if (!id && !name)
		return aws_error_missing(resp, req, "LaunchTemplateId or LaunchTemplateName");
	lt = ec2_launch_template_find(aws, req->region, id, name);
	if (!lt && id)
		return aws_error(resp, req, 400, "InvalidLaunchTemplateId.NotFound",
				 "The specified launch template, with template ID %s, does not exist.", id);
	if (!lt)
		return aws_error(resp, req, 400, "InvalidLaunchTemplateName.NotFoundException",
				 "The specified launch template, with template name %s, does not exist.", name);
	r = xml_begin(&x, "DeleteLaunchTemplateResponse", EC2_XMLNS);
	if (r < 0)
		return r;
	xml_leaf(&x, "requestId", req->request_id);
	write_template(&x, lt, "launchTemplate");
	r = xml_finish(&x, "DeleteLaunchTemplateResponse", resp);
	if (r < 0)
		return r;
	aws_timeline_add(aws, "delete-launch-template", "%s %s", lt->id, lt->name);
	for (size_t i = 0; i < aws->n_templates; i++)
		if (aws->templates[i] == lt) {
			memmove(&aws->templates[i], &aws->templates[i + 1],
				(aws->n_templates - i - 1) * sizeof(*aws->templates));
			aws->n_templates--;
			break;
		}
	aws_launch_template_free(lt);
	return 0;
}
