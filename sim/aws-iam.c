/*
 * IAM for kanna-sim (query protocol, XML, global service): the instance
 * profiles an EC2NodeClass's role is attached through. GetInstanceProfile,
 * CreateInstanceProfile (with Tags), AddRoleToInstanceProfile,
 * RemoveRoleFromInstanceProfile and DeleteInstanceProfile, with IAM's own
 * response shapes and errors (NoSuchEntity, EntityAlreadyExists,
 * LimitExceeded for a second role, DeleteConflict while a role is attached).
 * The sim has no role store: every well-formed role name exists, as if the
 * account held it. Called by aws_dispatch() with the lock held.
 */
#include <ctype.h>

#include "common/clock.h"
#include "sim/aws-internal.h"

/* IAM's bounds: profile names 1..128, role names 1..64, [\w+=,.@-]. */
#define IAM_PROFILE_NAME_MAX 128
#define IAM_ROLE_NAME_MAX 64
#define IAM_PATH_MAX 512
/* IAM allows 50 tags per resource. */
#define IAM_TAGS_MAX 50
/* An instance profile holds at most one role (InstanceSessionsPerInstanceProfile). */
#define IAM_ROLES_PER_PROFILE 1

static bool iam_name_valid(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_+=,.@-", s[i]))
			return false;
	return true;
}

/* "/" or "/a/b/": starts and ends with a slash. */
static bool iam_path_valid(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= IAM_PATH_MAX && s[0] == '/' && s[n - 1] == '/';
}

struct aws_instance_profile *iam_profile_find(struct sim_aws *aws, const char *name)
{
	for (size_t i = 0; name && i < aws->n_profiles; i++)
		if (streq(aws->profiles[i]->name, name))
			return aws->profiles[i];
	return NULL;
}

void aws_instance_profile_free(struct aws_instance_profile *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->path);
	free(p->role);
	aws_tags_clear(&p->tags);
	free(p);
}

static int validate_name(struct aws_response *resp, const struct aws_request *req,
			 const char *param, const char *value, size_t max)
{
	if (!value)
		return aws_error_missing(resp, req, param);
	return aws_error(resp, req, 400, "ValidationError",
			 "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]+ and have length less than or equal to %zu",
			 value, param, max);
}

static int no_such_profile(struct aws_response *resp, const struct aws_request *req,
			   const char *name)
{
	return aws_error(resp, req, 404, "NoSuchEntity", "Instance Profile %s cannot be found.", name);
}

static void write_role(struct xml *x, const struct aws_instance_profile *p)
{
	char t[32];

	format_iso8601(p->create_ms, t);
	xml_open(x, "member");
	xml_leaf(x, "Path", "/");
	xml_leaff(x, "Arn", "arn:aws:iam::%s:role/%s", SIM_AWS_ACCOUNT_ID, p->role);
	xml_leaf(x, "RoleName", p->role);
	xml_leaf(x, "AssumeRolePolicyDocument",
		 "%7B%22Version%22%3A%222012-10-17%22%2C%22Statement%22%3A%5B%7B%22Effect%22%3A%22Allow%22%2C%22Principal%22%3A%7B%22Service%22%3A%22ec2.amazonaws.com%22%7D%2C%22Action%22%3A%22sts%3AAssumeRole%22%7D%5D%7D");
	xml_leaf(x, "CreateDate", t);
	xml_leaff(x, "RoleId", "AROA%s", p->id + 4);
	xml_close(x, "member");
}

static void write_profile(struct xml *x, const struct aws_instance_profile *p)
{
	char t[32];

	format_iso8601(p->create_ms, t);
	xml_open(x, "InstanceProfile");
	xml_leaf(x, "InstanceProfileId", p->id);
	xml_open(x, "Roles");
	if (p->role)
		write_role(x, p);
	xml_close(x, "Roles");
	xml_leaf(x, "InstanceProfileName", p->name);
	xml_leaf(x, "Path", p->path);
	xml_leaff(x, "Arn", "arn:aws:iam::%s:instance-profile%s%s", SIM_AWS_ACCOUNT_ID, p->path,
		  p->name);
	xml_leaf(x, "CreateDate", t);
	if (p->tags.n) {
		xml_open(x, "Tags");
		for (size_t i = 0; i < p->tags.n; i++) {
			xml_open(x, "member");
			xml_leaf(x, "Key", p->tags.v[i].key);
			xml_leaf(x, "Value", p->tags.v[i].value);
			xml_close(x, "member");
		}
		xml_close(x, "Tags");
	}
	xml_close(x, "InstanceProfile");
}

/* <Action>Response [<Action>Result profile] <ResponseMetadata>. */
static int reply(struct aws_response *resp, const struct aws_request *req,
		 const struct aws_instance_profile *p)
{
	char root[96], result[96];
	struct xml x;
	int r;

	snprintf(root, sizeof(root), "%sResponse", req->action);
	snprintf(result, sizeof(result), "%sResult", req->action);
	r = xml_begin(&x, root, IAM_XMLNS);
	if (r < 0)
		return r;
	if (p) {
		xml_open(&x, result);
		write_profile(&x, p);
		xml_close(&x, result);
	}
	xml_open(&x, "ResponseMetadata");
	xml_leaf(&x, "RequestId", req->request_id);
	xml_close(&x, "ResponseMetadata");
	return xml_finish(&x, root, resp);
}

int iam_get_instance_profile(struct sim_aws *aws, const struct aws_request *req,
			     struct aws_response *resp)
{
	const char *name = aws_params_get(req->params, "InstanceProfileName");
	const struct aws_instance_profile *p;

	if (!iam_name_valid(name, IAM_PROFILE_NAME_MAX))
		return validate_name(resp, req, "instanceProfileName", name, IAM_PROFILE_NAME_MAX);
	p = iam_profile_find(aws, name);
	if (!p)
		return no_such_profile(resp, req, name);
	return reply(resp, req, p);
}

/* Tags.member.N.Key / .Value into t; -EINVAL with the parameter in bad. */
static int parse_tags(const struct aws_params *params, struct aws_tags *t, char *bad, size_t len)
{
	size_t n = aws_params_count(params, "Tags.member");
	int r;

	if (n > IAM_TAGS_MAX) {
		snprintf(bad, len, "tags");
		return -EINVAL;
	}
	for (size_t k = 1; k <= n; k++) {
		const char *key = aws_params_getf(params, "Tags.member.%zu.Key", k);
		const char *value = aws_params_getf(params, "Tags.member.%zu.Value", k);

		if (!key || !*key || strlen(key) > 128 || strncmp(key, "aws:", 4) == 0 ||
		    (value && strlen(value) > 256)) {
			snprintf(bad, len, "tags.%zu.member.key", k);
			return -EINVAL;
		}
		r = aws_tags_set(t, key, value);
		if (r < 0)
			return r;
	}
	return 0;
}

static int profiles_append(struct sim_aws *aws, struct aws_instance_profile *p)
{
	if (aws->n_profiles == aws->cap_profiles) {
		size_t cap = aws->cap_profiles ? aws->cap_profiles * 2 : 16;
		struct aws_instance_profile **v = realloc(aws->profiles, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		aws->profiles = v;
		aws->cap_profiles = cap;
	}
	aws->profiles[aws->n_profiles++] = p;
	return 0;
}

int iam_create_instance_profile(struct sim_aws *aws, const struct aws_request *req,
				struct aws_response *resp)
{
	const char *name = aws_params_get(req->params, "InstanceProfileName");
	const char *path = aws_params_get(req->params, "Path") ?: "/";
	struct aws_instance_profile *p;
	char bad[64];
	int r;

	if (!iam_name_valid(name, IAM_PROFILE_NAME_MAX))
		return validate_name(resp, req, "instanceProfileName", name, IAM_PROFILE_NAME_MAX);
	if (!iam_path_valid(path))
		return aws_error(resp, req, 400, "ValidationError",
				 "The specified value for path is invalid. It must begin and end with / and contain only alphanumeric characters and/or / characters.");
	if (iam_profile_find(aws, name))
		return aws_error(resp, req, 409, "EntityAlreadyExists",
				 "Instance Profile %s already exists.", name);
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->name = strdup(name);
	p->path = strdup(path);
	if (!p->name || !p->path) {
		aws_instance_profile_free(p);
		return -ENOMEM;
	}
	r = parse_tags(req->params, &p->tags, bad, sizeof(bad));
	if (r < 0) {
		aws_instance_profile_free(p);
		return r == -ENOMEM ? r : aws_error(resp, req, 400, "InvalidInput",
						    "The specified value for %s is invalid.", bad);
	}
	aws_new_id(aws, "AIPA", 17, p->id, sizeof(p->id));
	for (char *c = p->id; *c; c++)
		*c = (char)toupper((unsigned char)*c);
	p->create_ms = (uint64_t)clock_realtime_ms();
	r = profiles_append(aws, p);
	if (r < 0) {
		aws_instance_profile_free(p);
		return r;
	}
	aws_timeline_add(aws, "create-instance-profile", "%s", p->name);
	return reply(resp, req, p);
}

/* The profile and role of Add/RemoveRoleFromInstanceProfile, or an error in resp. */
static int profile_and_role(struct sim_aws *aws, const struct aws_request *req,
			    struct aws_response *resp, struct aws_instance_profile **ret,
			    const char **ret_role)
{
	const char *name = aws_params_get(req->params, "InstanceProfileName");
	const char *role = aws_params_get(req->params, "RoleName");

	*ret = NULL;
	if (!iam_name_valid(name, IAM_PROFILE_NAME_MAX))
		return validate_name(resp, req, "instanceProfileName", name, IAM_PROFILE_NAME_MAX);
	if (!iam_name_valid(role, IAM_ROLE_NAME_MAX))
		return validate_name(resp, req, "roleName", role, IAM_ROLE_NAME_MAX);
	*ret = iam_profile_find(aws, name);
	if (!*ret)
		return no_such_profile(resp, req, name);
	*ret_role = role;
	return 0;
}

int iam_add_role_to_instance_profile(struct sim_aws *aws, const struct aws_request *req,
				     struct aws_response *resp)
{
	struct aws_instance_profile *p;
	const char *role = NULL;
	int r;

	r = profile_and_role(aws, req, resp, &p, &role);
	if (r < 0 || !p)
		return r;
	if (p->role)
		return aws_error(resp, req, 409, "LimitExceeded",
				 "Cannot exceed quota for InstanceSessionsPerInstanceProfile: %d",
				 IAM_ROLES_PER_PROFILE);
	p->role = strdup(role);
	if (!p->role)
		return -ENOMEM;
	aws_timeline_add(aws, "add-role-to-instance-profile", "%s %s", p->name, role);
	return reply(resp, req, NULL);
}

int iam_remove_role_from_instance_profile(struct sim_aws *aws, const struct aws_request *req,
					  struct aws_response *resp)
{
	struct aws_instance_profile *p;
	const char *role = NULL;
	int r;

	r = profile_and_role(aws, req, resp, &p, &role);
	if (r < 0 || !p)
		return r;
	if (!streq_ptr(p->role, role))
		return aws_error(resp, req, 404, "NoSuchEntity",
				 "The role with name %s cannot be found.", role);
	free(p->role);
	p->role = NULL;
	aws_timeline_add(aws, "remove-role-from-instance-profile", "%s %s", p->name, role);
	return reply(resp, req, NULL);
}

int iam_delete_instance_profile(struct sim_aws *aws, const struct aws_request *req,
				struct aws_response *resp)
{
	const char *name = aws_params_get(req->params, "InstanceProfileName");
	struct aws_instance_profile *p;

	if (!iam_name_valid(name, IAM_PROFILE_NAME_MAX))
		return validate_name(resp, req, "instanceProfileName", name, IAM_PROFILE_NAME_MAX);
	p = iam_profile_find(aws, name);
	if (!p)
		return no_such_profile(resp, req, name);
	if (p->role)
		return aws_error(resp, req, 409, "DeleteConflict",
				 "Cannot delete entity, must remove roles from instance profile first.");
	for (size_t i = 0; i < aws->n_profiles; i++)
		if (aws->profiles[i] == p) {
			memmove(&aws->profiles[i], &aws->profiles[i + 1],
				(aws->n_profiles - i - 1) * sizeof(*aws->profiles));
			aws->n_profiles--;
			break;
		}
	aws_timeline_add(aws, "delete-instance-profile", "%s", p->name);
	aws_instance_profile_free(p);
	return reply(resp, req, NULL);
}
