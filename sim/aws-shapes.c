/*
 * Request shapes for kanna-sim's AWS side: the botocore service models of
 * the operations the sim serves (sim/aws-models/, verbatim from botocore
 * 1.43.11, see /work/shared/data/README.md), loaded at start, and the two
 * checks every request goes through before its handler runs (called by
 * aws_dispatch()):
 *  - a query request (EC2, STS, SQS query form) names only parameters its
 *    operation's input shape serializes, down to the last nested member
 *    ("LaunchTemplateConfigs.1.Overrides.1.InstanceType");
 *  - a JSON request (SSM, SQS) gives every member the JSON type its shape
 *    has and every required member.
 * Serialized names follow botocore's serializers (serialize.py): EC2 uses
 * queryName, else the capitalized locationName, else the member name, and
 * flattens every list to "Name.N"; the query protocol uses locationName or
 * the member name and "Name.member.N" for lists that are not flattened.
 */
#include <limits.h>
#include <unistd.h>

#include "common/log.h"
#include "sim/aws-internal.h"

static const char *const model_files[_AWS_SERVICE_MAX] = {
	[AWS_SERVICE_EC2] = "ec2-2016-11-15.json",
	[AWS_SERVICE_SSM] = "ssm-2014-11-06.json",
	[AWS_SERVICE_STS] = "sts-2011-06-15.json",
	[AWS_SERVICE_SQS] = "sqs-2012-11-05.json",
};

static int model_path(const char *file, char **ret)
{
	const char *env = getenv("KANNA_DATADIR");
	const char *dirs[] = { env && *env ? env : NULL, KANNA_DATADIR, KANNA_SRCDIR "/sim" };

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		char *p;

		if (!dirs[i])
			continue;
		if (asprintf(&p, "%s/aws-models/%s", dirs[i], file) < 0)
			return -ENOMEM;
		if (access(p, R_OK) == 0) {
			*ret = p;
			return 0;
		}
		free(p);
	}
	return -ENOENT;
}

int aws_shapes_load(struct sim_aws *aws)
{
	for (size_t s = 0; s < _AWS_SERVICE_MAX; s++) {
		json_error_t jerr;
		char *path = NULL;
		int r;

		if (!model_files[s])
			continue;
		r = model_path(model_files[s], &path);
		if (r < 0)
			return log_error_errno(r, "Failed to find aws-models/%s in $KANNA_DATADIR, %s or %s/sim",
					       model_files[s], KANNA_DATADIR, KANNA_SRCDIR);
		aws->models[s] = json_load_file(path, 0, &jerr);
		if (!aws->models[s]) {
			log_error_errno(EINVAL, "Failed to load AWS model %s: %s", path, jerr.text);
			free(path);
			return -EINVAL;
		}
		free(path);
	}
	return 0;
}

void aws_shapes_clear(struct sim_aws *aws)
{
	for (size_t s = 0; s < _AWS_SERVICE_MAX; s++) {
		json_decref(aws->models[s]);
		aws->models[s] = NULL;
	}
}

static json_t *shape_get(json_t *model, json_t *ref)
{
	return json_object_get(json_object_get(model, "shapes"),
			       json_string_value(json_object_get(ref, "shape")));
}

static const char *shape_type(json_t *shape)
{
	return json_string_value(json_object_get(shape, "type")) ?: "";
}

/* The input shape of op, or NULL when the model has no such operation. */
static json_t *input_shape(json_t *model, const char *op)
{
	json_t *o = json_object_get(json_object_get(model, "operations"), op);

	return o ? shape_get(model, json_object_get(o, "input")) : NULL;
}

/* Whether seg (len bytes) is how member mname (ref) is serialized. */
static bool member_named(const char *mname, json_t *ref, bool ec2, const char *seg, size_t len)
{
	const char *q = json_string_value(json_object_get(ref, "queryName"));
	const char *loc = json_string_value(json_object_get(ref, "locationName"));

	if (ec2 && q)
		return strlen(q) == len && strncmp(q, seg, len) == 0;
	if (loc) {
		if (strlen(loc) != len)
			return false;
		/* EC2 capitalizes the locationName's first letter. */
		if (ec2 && (loc[0] & ~0x20) != seg[0])
			return false;
		if (!ec2 && loc[0] != seg[0])
			return false;
		return strncmp(loc + 1, seg + 1, len - 1) == 0;
	}
	return strlen(mname) == len && strncmp(mname, seg, len) == 0;
}

static bool is_index(const char *seg, size_t len)
{
	if (len == 0 || len > 6 || seg[0] < '1' || seg[0] > '9')
		return false;
	for (size_t i = 1; i < len; i++)
		if (seg[i] < '0' || seg[i] > '9')
			return false;
	return true;
}

/* Walks name through shape; on the first segment the shape does not take,
 * points *bad at it and returns false. */
static bool query_name_known(json_t *model, json_t *shape, bool ec2, const char *name,
			     const char **bad, size_t *bad_len)
{
	const char *seg = name;

	while (shape) {
		size_t len = strcspn(seg, ".");
		const char *type = shape_type(shape);
		json_t *next = NULL;

		if (streq(type, "structure")) {
			const char *mname;
			json_t *ref;

			json_object_foreach(json_object_get(shape, "members"), mname, ref)
				if (member_named(mname, ref, ec2, seg, len)) {
					next = shape_get(model, ref);
					break;
				}
		} else if (streq(type, "list")) {
			json_t *ref = json_object_get(shape, "member");
			const char *loc = json_string_value(json_object_get(ref, "locationName"));
			bool flat = ec2 || json_is_true(json_object_get(shape, "flattened"));

			if (!flat) {
				/* Query: "Name.member.N" (or the member's locationName). */
				const char *want = loc ?: "member";

				if (strlen(want) != len || strncmp(want, seg, len) != 0)
					break;
				seg += len;
				if (*seg != '.')
					break;
				seg++;
				len = strcspn(seg, ".");
			}
			if (is_index(seg, len))
				next = shape_get(model, ref);
		}
		/* Scalars (and maps, which no served operation takes) end the name. */
		if (!next)
			break;
		shape = next;
		seg += len;
		if (*seg == '\0')
			return true;
		seg++;
	}
	*bad = seg;
	*bad_len = strcspn(seg, ".");
	return false;
}

int aws_shapes_unknown_param(const struct sim_aws *aws, const struct aws_request *req,
			     const char *const *common, char *bad, size_t badlen)
{
	json_t *model = aws->models[req->service];
	json_t *input = model ? input_shape(model, req->action) : NULL;
	bool ec2 = req->service == AWS_SERVICE_EC2;

	if (!input || !req->params)
		return 0;
	for (size_t i = 0; i < req->params->n; i++) {
		const char *name = req->params->v[i].name, *seg = NULL;
		size_t len = 0;
		bool ok = false;

		for (size_t k = 0; !ok && common[k]; k++)
			ok = streq(common[k], name);
		if (ok || query_name_known(model, input, ec2, name, &seg, &len))
			continue;
		if (len == 0) {
			/* "Name." or "Name.1.": refuse the whole parameter. */
			seg = name;
			len = strlen(name);
		}
		snprintf(bad, badlen, "%.*s", (int)len, seg);
		return 1;
	}
	return 0;
}

/* The JSON type a shape's value must have, as botocore's JSON serializer
 * writes it. */
static bool json_type_fits(json_t *shape, json_t *v)
{
	const char *t = shape_type(shape);

	if (streq(t, "structure") || streq(t, "map"))
		return json_is_object(v);
	if (streq(t, "list"))
		return json_is_array(v);
	if (streq(t, "boolean"))
		return json_is_boolean(v);
	if (streq(t, "integer") || streq(t, "long"))
		return json_is_integer(v);
	if (streq(t, "float") || streq(t, "double") || streq(t, "timestamp"))
		return json_is_number(v);
	return json_is_string(v); /* string, blob (base64) */
}

/* Coral's names for JSON value kinds, as SerializationException says them. */
static const char *json_kind(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "START_OBJECT";
	case JSON_ARRAY: return "START_ARRAY";
	case JSON_STRING: return "STRING_VALUE";
	case JSON_INTEGER: return "NUMBER_VALUE";
	case JSON_REAL: return "NUMBER_VALUE";
	case JSON_TRUE:
	case JSON_FALSE: return "BOOLEAN_VALUE";
	default: return "NULL_VALUE";
	}
}

static const char *shape_java_type(json_t *shape)
{
	const char *t = shape_type(shape);

	if (streq(t, "integer"))
		return "Integer";
	if (streq(t, "long"))
		return "Long";
	if (streq(t, "boolean"))
		return "Boolean";
	if (streq(t, "list"))
		return "List";
	if (streq(t, "structure") || streq(t, "map"))
		return "Structure";
	if (streq(t, "timestamp") || streq(t, "double") || streq(t, "float"))
		return "Double";
	return "String";
}

/* Lower-camel member name, as ValidationException's "at 'name'" says it. */
static void lower_camel(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s", name);
	if (*out >= 'A' && *out <= 'Z')
		*out = (char)(*out + ('a' - 'A'));
}

static int check_json_value(json_t *model, json_t *shape, json_t *v, struct aws_response *resp,
			    const struct aws_request *req)
{
	const char *t = shape_type(shape);

	if (json_is_null(v))
		return 0;
	if (!json_type_fits(shape, v))
		return aws_error(resp, req, 400, "SerializationException",
				 "%s cannot be converted to %s", json_kind(v),
				 shape_java_type(shape)) < 0 ? -ENOMEM : 1;
	if (streq(t, "list")) {
		json_t *member = shape_get(model, json_object_get(shape, "member")), *e;
		size_t i;

		json_array_foreach(v, i, e) {
			int r = check_json_value(model, member, e, resp, req);

			if (r != 0)
				return r;
		}
	} else if (streq(t, "structure")) {
		json_t *members = json_object_get(shape, "members"), *e, *req_names;
		const char *key;
		size_t i;

		json_object_foreach(v, key, e) {
			json_t *ref = json_object_get(members, key);
			int r = ref ? check_json_value(model, shape_get(model, ref), e, resp, req) : 0;

			if (r != 0)
				return r;
		}
		/* SQS names a missing member itself (MissingParameter, SQS API
		 * Reference CommonErrors); the other JSON services' front end does. */
		req_names = req->service == AWS_SERVICE_SQS ? NULL : json_object_get(shape, "required");
		json_array_foreach(req_names, i, e) {
			const char *name = json_string_value(e);
			json_t *given = name ? json_object_get(v, name) : NULL;
			char at[128];

			if (!name || (given && !json_is_null(given)))
				continue;
			lower_camel(name, at, sizeof(at));
			return aws_error(resp, req, 400, "ValidationException",
					 "1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null",
					 at) < 0 ? -ENOMEM : 1;
		}
	}
	return 0;
}

int aws_shapes_check_json(const struct sim_aws *aws, const struct aws_request *req,
			  struct aws_response *resp)
{
	json_t *model = aws->models[req->service];
	json_t *input = model ? input_shape(model, req->action) : NULL;

	json_t *empty;
	int r;

	if (!input || !req->json_protocol)
		return 0;
	if (req->json)
		return check_json_value(model, input, req->json, resp, req);
	empty = json_object();
	if (!empty)
		return -ENOMEM;
	r = check_json_value(model, input, empty, resp, req);
	json_decref(empty);
	return r;
}
