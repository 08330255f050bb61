/*
 * The credential sources that speak HTTP: web identity (IRSA: a projected
 * token file exchanged at STS AssumeRoleWithWebIdentity), container
 * credentials (EKS Pod Identity / ECS: AWS_CONTAINER_CREDENTIALS_*_URI) and
 * EC2 instance metadata with IMDSv2 session tokens. Blocking with short
 * timeouts (aws_http_fetch); called only by the chain in aws-credentials.c.
 * Never sends a token anywhere but where its variable says.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/aws-internal.h"

#define STS_API_VERSION "2011-06-15"
/* Hosts allowed for plain-http container credentials (what the SDKs allow:
 * loopback, the ECS agent and the EKS Pod Identity agent). */
static const char *const container_http_hosts[] = {
	"127.0.0.1", "localhost", "[::1]", "169.254.170.2", "169.254.170.23", "[fd00:ec2::23]",
};

/* Whole small file, trailing whitespace removed. */
static int read_token_file(const char *path, char **ret, char **ret_why)
{
	_cleanup_free_ char *buf = NULL;
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f) {
		int r = -errno;
		aws_set_why(ret_why, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	buf = malloc(AWS_CREDENTIALS_MAX_BODY + 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, AWS_CREDENTIALS_MAX_BODY, f);
	fclose(f);
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	if (n == 0) {
		aws_set_why(ret_why, "%s is empty", path);
		return -EINVAL;
	}
	*ret = TAKE_PTR(buf);
	return 0;
}

static long timeout_or(long v, long def)
{
	return v > 0 ? v : def;
}

int aws_credentials_from_web_identity(const struct aws_credentials_options *opts,
				      struct aws_credentials **ret, char **ret_why)
{
	_cleanup_free_ char *token = NULL, *url = NULL, *form = NULL, *body = NULL;
	_cleanup_free_ char *session = NULL;
	_cleanup_(aws_query_freep) struct aws_query *q = NULL;
	const char *token_file = getenv("AWS_WEB_IDENTITY_TOKEN_FILE");
	const char *role = getenv("AWS_ROLE_ARN");
	const char *region = opts->region;
	struct curl_slist *headers;
	struct aws_error err;
	long status = 0;
	size_t len = 0;
	int r;

	if (!token_file || !*token_file) {
		aws_set_why(ret_why, "AWS_WEB_IDENTITY_TOKEN_FILE not set");
		return -ENOENT;
	}
	if (!role || !*role) {
		aws_set_why(ret_why, "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not");
		return -EINVAL;
	}
	r = read_token_file(token_file, &token, ret_why);
	if (r < 0)
		return r;
	if (getenv("AWS_ROLE_SESSION_NAME") && *getenv("AWS_ROLE_SESSION_NAME"))
		session = strdup(getenv("AWS_ROLE_SESSION_NAME"));
	else if (asprintf(&session, "kanna-%lld", (long long)time(NULL)) < 0)
		session = NULL;
	if (!session)
		return -ENOMEM;
	if (!region || !*region)
		region = getenv("AWS_REGION");
	if (!region || !*region)
		region = getenv("AWS_DEFAULT_REGION");
	r = aws_endpoint_url("sts", region, &url);
	if (r < 0) {
		aws_set_why(ret_why, "cannot build the STS endpoint for region %s", region ? region : "(none)");
		return r;
	}
	if ((r = aws_query_new("AssumeRoleWithWebIdentity", STS_API_VERSION, &q)) < 0 ||
	    (r = aws_query_add(q, role, "RoleArn")) < 0 ||
	    (r = aws_query_add(q, session, "RoleSessionName")) < 0 ||
	    (r = aws_query_add(q, token, "WebIdentityToken")) < 0 ||
	    (r = aws_query_encode(q, &form)) < 0)
		return r;
	/* POST to the service root, as the query protocol does */
	headers = curl_slist_append(NULL, "Content-Type: application/x-www-form-urlencoded; charset=utf-8");
	if (!headers)
		return -ENOMEM;
	{
		_cleanup_free_ char *post_url = NULL;
		if (asprintf(&post_url, "%s/", url) < 0) {
			curl_slist_free_all(headers);
			return -ENOMEM;
		}
		r = aws_http_fetch("POST", post_url, headers, form,
				   timeout_or(opts->sts_timeout_ms, AWS_STS_HTTP_TIMEOUT_MS),
				   &status, &body, &len, ret_why);
	}
	curl_slist_free_all(headers);
	if (r < 0)
		return r;
	if (status != 200) {
		aws_error_parse(body, len, status, &err);
		aws_set_why(ret_why, "STS AssumeRoleWithWebIdentity for %s: %s: %s", role, err.code,
			    err.message);
		return -EACCES;
	}
	r = aws_credentials_parse_sts_xml(body, len, ret);
	if (r < 0) {
		aws_set_why(ret_why, "STS AssumeRoleWithWebIdentity answered an unreadable document");
		return r;
	}
	free((*ret)->source);
	if (asprintf(&(*ret)->source, "web identity (%s)", role) < 0)
		(*ret)->source = NULL;
	return (*ret)->source ? 0 : -ENOMEM;
}

static bool container_url_allowed(const char *url)
{
	if (strncmp(url, "https://", 8) == 0)
		return true;
	if (strncmp(url, "http://", 7) != 0)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(container_http_hosts); i++) {
		size_t n = strlen(container_http_hosts[i]);

		if (strncmp(url + 7, container_http_hosts[i], n) == 0 &&
		    (url[7 + n] == '\0' || url[7 + n] == '/' || url[7 + n] == ':'))
			return true;
	}
	/* any 127.x.y.z */
	return strncmp(url + 7, "127.", 4) == 0;
}

static int container_token_header(char **ret, char **ret_why)
{
	_cleanup_free_ char *token = NULL;
	const char *file = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	const char *v = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	int r;

	*ret = NULL;
	if (file && *file) {
		r = read_token_file(file, &token, ret_why);
		if (r < 0)
			return r;
	} else if (v && *v) {
		token = strdup(v);
		if (!token)
			return -ENOMEM;
	} else {
		return 0;
	}
	if (strpbrk(token, "\r\n")) {
		aws_set_why(ret_why, "the container authorization token contains a line break");
		return -EINVAL;
	}
	return asprintf(ret, "Authorization: %s", token) < 0 ? -ENOMEM : 0;
}

int aws_credentials_from_container(const struct aws_credentials_options *opts,
				   struct aws_credentials **ret, char **ret_why)
{
	_cleanup_free_ char *url = NULL, *auth = NULL, *body = NULL;
	const char *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	struct curl_slist *headers = NULL;
	long status = 0;
	size_t len = 0;
	int r;

	if (rel && *rel) {
		if (asprintf(&url, AWS_CONTAINER_DEFAULT_HOST "%s%s", rel[0] == '/' ? "" : "/", rel) < 0)
			return -ENOMEM;
	} else if (full && *full) {
		url = strdup(full);
		if (!url)
			return -ENOMEM;
		if (!container_url_allowed(url)) {
			aws_set_why(ret_why, "AWS_CONTAINER_CREDENTIALS_FULL_URI %s is neither https nor a "
				    "loopback or container-agent address", url);
			return -EPERM;
		}
	} else {
		aws_set_why(ret_why, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI not set");
		return -ENOENT;
	}
	r = container_token_header(&auth, ret_why);
	if (r < 0)
		return r;
	if (auth) {
		headers = curl_slist_append(NULL, auth);
		if (!headers)
			return -ENOMEM;
	}
	r = aws_http_fetch("GET", url, headers, NULL,
			   timeout_or(opts->local_timeout_ms, AWS_LOCAL_HTTP_TIMEOUT_MS), &status,
			   &body, &len, ret_why);
	curl_slist_free_all(headers);
	if (r < 0)
		return r;
	if (status != 200) {
		aws_set_why(ret_why, "%s answered HTTP %ld", url, status);
		return -EACCES;
	}
	r = aws_credentials_parse_json(body, len, ret);
	if (r < 0) {
		aws_set_why(ret_why, "%s answered an unreadable credentials document", url);
		return r;
	}
	free((*ret)->source);
	(*ret)->source = strdup("container");
	return (*ret)->source ? 0 : -ENOMEM;
}

int aws_credentials_from_imds(const struct aws_credentials_options *opts,
			      struct aws_credentials **ret, char **ret_why)
{
	_cleanup_free_ char *endpoint = NULL, *roles = NULL, *path = NULL, *body = NULL;
	long timeout = timeout_or(opts->local_timeout_ms, AWS_LOCAL_HTTP_TIMEOUT_MS);
	const char *base = "/latest/meta-data/iam/security-credentials/";
	size_t n;
	int r;

	r = aws_imds_endpoint(&endpoint, ret_why);
	if (r < 0)
		return r;
	r = aws_imds_get(endpoint, base, timeout, &roles, ret_why);
	if (r < 0)
		/* not on EC2, or no instance profile: this source is absent */
		return r == -ENOMEM ? r : -ENOENT;
	n = strcspn(roles, "\r\n");
	roles[n] = '\0';
	if (n == 0 || strchr(roles, '/')) {
		aws_set_why(ret_why, "the instance has no IAM role attached");
		return -ENOENT;
	}
	if (asprintf(&path, "%s%s", base, roles) < 0)
		return -ENOMEM;
	r = aws_imds_get(endpoint, path, timeout, &body, ret_why);
	if (r < 0)
		return r == -ENOMEM ? r : -EACCES;
	r = aws_credentials_parse_json(body, strlen(body), ret);
	if (r < 0) {
		aws_set_why(ret_why, "instance metadata answered an unreadable credentials document for role %s",
			    roles);
		return r;
	}
	free((*ret)->source);
	if (asprintf(&(*ret)->source, "instance metadata (role %s)", roles) < 0)
		(*ret)->source = NULL;
	return (*ret)->source ? 0 : -ENOMEM;
}
