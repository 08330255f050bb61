/*
 * STS for kanna-sim (query protocol, XML): GetCallerIdentity answers the
 * sim's one account and user; AssumeRoleWithWebIdentity (unsigned, as in
 * AWS) checks its parameters and hands out the sim's test credentials with
 * a session token, so an IRSA-style client ends up signing with keys the
 * sim accepts. Called by aws_dispatch() with the lock held.
 */
#include <ctype.h>
#include <limits.h>

#include "common/clock.h"
#include "sim/aws-internal.h"

/* AWS's default AssumeRoleWithWebIdentity session lifetime. */
#define STS_SESSION_SEC 3600
#define STS_SESSION_SEC_MIN 900
#define STS_SESSION_SEC_MAX 43200
/* API_AssumeRoleWithWebIdentity.html: RoleSessionName is 2 to 64
 * characters of [\w+=,.@-]. */
#define STS_SESSION_NAME_MIN 2
#define STS_SESSION_NAME_MAX 64

/* RoleSessionName's constraint, or NULL when session meets it; in the
 * words of STS's ValidationError ("1 validation error detected: Value
 * '...' at 'roleSessionName' failed to satisfy constraint: ..."). */
static const char *session_name_violation(const char *session)
{
	size_t n = strlen(session);

	if (n < STS_SESSION_NAME_MIN)
		return "Member must have length greater than or equal to 2";
	if (n > STS_SESSION_NAME_MAX)
		return "Member must have length less than or equal to 64";
	for (const char *c = session; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("_+=,.@-", *c))
			return "Member must satisfy regular expression pattern: [\\w+=,.@-]*";
	return NULL;
}

int sts_get_caller_identity(struct sim_aws *aws, const struct aws_request *req,
			    struct aws_response *resp)
{
	struct xml x;
	int r;

	r = xml_begin(&x, "GetCallerIdentityResponse", STS_XMLNS);
	if (r < 0)
		return r;
	xml_open(&x, "GetCallerIdentityResult");
	xml_leaff(&x, "Arn", "arn:aws:iam::%s:user/kanna-sim", SIM_AWS_ACCOUNT_ID);
	xml_leaf(&x, "UserId", aws->access_key_id);
	xml_leaf(&x, "Account", SIM_AWS_ACCOUNT_ID);
	xml_close(&x, "GetCallerIdentityResult");
	xml_open(&x, "ResponseMetadata");
	xml_leaf(&x, "RequestId", req->request_id);
	xml_close(&x, "ResponseMetadata");
	return xml_finish(&x, "GetCallerIdentityResponse", resp);
}

int sts_assume_role_with_web_identity(struct sim_aws *aws, const struct aws_request *req,
				      struct aws_response *resp)
{
	const char *role = aws_params_get(req->params, "RoleArn");
	const char *session = aws_params_get(req->params, "RoleSessionName");
	const char *token = aws_params_get(req->params, "WebIdentityToken");
	const char *dur = aws_params_get(req->params, "DurationSeconds");
	unsigned long seconds = STS_SESSION_SEC;
	char expires[32], session_token[80], role_id[32];
	const char *role_name;
	struct xml x;
	int r;

	if (!role)
		return aws_error_missing(resp, req, "RoleArn");
	if (!session)
		return aws_error_missing(resp, req, "RoleSessionName");
	if (!token)
		return aws_error_missing(resp, req, "WebIdentityToken");
	if (session_name_violation(session))
		return aws_error(resp, req, 400, "ValidationError",
				 "1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: %s",
				 session, session_name_violation(session));
	if (strncmp(role, "arn:aws:iam::", 13) != 0 || !(role_name = strstr(role, ":role/")))
		return aws_error(resp, req, 400, "ValidationError", "%s is invalid", role);
	if (!*token)
		return aws_error(resp, req, 400, "InvalidIdentityToken",
				 "Couldn't retrieve verification key from your identity provider");
	/* DurationSeconds: 900 to 43200 (the role's maximum; the sim's roles
	 * allow all of it). */
	if (dur && (aws_parse_uint(dur, ULONG_MAX, &seconds) < 0 || seconds < STS_SESSION_SEC_MIN ||
		    seconds > STS_SESSION_SEC_MAX))
		return aws_error(resp, req, 400, "ValidationError",
				 "1 validation error detected: Value '%s' at 'durationSeconds' failed to satisfy constraint: Member must have value %s than or equal to %d",
				 dur, seconds > STS_SESSION_SEC_MAX ? "less" : "greater",
				 seconds > STS_SESSION_SEC_MAX ? STS_SESSION_SEC_MAX : STS_SESSION_SEC_MIN);
	role_name += 6;
	format_iso8601((uint64_t)clock_realtime_ms() + seconds * 1000, expires);
	aws_new_id(aws, "simSessionToken", 32, session_token, sizeof(session_token));
	aws_new_id(aws, "AROASIM", 13, role_id, sizeof(role_id));

	r = xml_begin(&x, "AssumeRoleWithWebIdentityResponse", STS_XMLNS);
	if (r < 0)
		return r;
	xml_open(&x, "AssumeRoleWithWebIdentityResult");
	xml_leaf(&x, "SubjectFromWebIdentityToken", "system:serviceaccount:kube-system:kanna");
	xml_leaf(&x, "Audience", "sts.amazonaws.com");
	xml_open(&x, "AssumedRoleUser");
	xml_leaff(&x, "Arn", "arn:aws:sts::%s:assumed-role/%s/%s", SIM_AWS_ACCOUNT_ID, role_name, session);
	xml_leaff(&x, "AssumedRoleId", "%s:%s", role_id, session);
	xml_close(&x, "AssumedRoleUser");
	xml_open(&x, "Credentials");
	xml_leaf(&x, "AccessKeyId", aws->access_key_id);
	xml_leaf(&x, "SecretAccessKey", aws->secret_access_key);
	xml_leaf(&x, "SessionToken", session_token);
	xml_leaf(&x, "Expiration", expires);
	xml_close(&x, "Credentials");
	xml_leaf(&x, "Provider", "kanna-sim");
	xml_close(&x, "AssumeRoleWithWebIdentityResult");
	xml_open(&x, "ResponseMetadata");
	xml_leaf(&x, "RequestId", req->request_id);
	xml_close(&x, "ResponseMetadata");
	aws_timeline_add(aws, "assume-role", "%s as %s", role, session);
	return xml_finish(&x, "AssumeRoleWithWebIdentityResponse", resp);
}
