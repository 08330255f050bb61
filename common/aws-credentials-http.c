/*
 * The credential sources that speak HTTP: web identity (IRSA: a projected
 * token file exchanged at STS AssumeRoleWithWebIdentity), container
 * credentials (EKS Pod Identity / ECS: AWS_CONTAINER_CREDENTIALS_*_URI) and
 * EC2 instance metadata with IMDSv2 session tokens. Blocking with short
 * timeouts (aws_http_fetch); called only by the chain in aws-credentials.c.
 * Never sends a token anywhere but where its variable says.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/aws-internal.h"

#define STS_API_VERSION "2011-06-15"
/*
 * Where plain-http container credentials may come from, besides loopback:
 * the ECS agent and the EKS Pod Identity agent (IPv4 and IPv6), exactly
 * the hosts the AWS SDKs allow (aws-sdk-go-v2 config: ecsContainerHost,
 * eksContainerHost, eksContainerHostIPv6; botocore's allowed hosts).
 */
static const char *const container_agent_hosts[] = {
	"169.254.170.2", "169.254.170.23", "fd00:ec2::23",
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

static bool container_agent_host(const char *host)
{
	unsigned char want[sizeof(struct in6_addr)], got[sizeof(struct in6_addr)];
	char v6[INET6_ADDRSTRLEN];
	size_t n = strlen(host);

	for (size_t i = 0; i < ARRAY_SIZE(container_agent_hosts); i++) {
		const char *agent = container_agent_hosts[i];

		if (!strchr(agent, ':')) {
			if (inet_pton(AF_INET, host, got) == 1 && inet_pton(AF_INET, agent, want) == 1 &&
			    memcmp(got, want, sizeof(struct in_addr)) == 0)
				return true;
			continue;
		}
		if (n < 3 || host[0] != '[' || host[n - 1] != ']' || n - 2 >= sizeof(v6))
			continue;
		memcpy(v6, host + 1, n - 2);
		v6[n - 2] = '\0';
		if (inet_pton(AF_INET6, v6, got) == 1 && inet_pton(AF_INET6, agent, want) == 1 &&
		    memcmp(got, want, sizeof(struct in6_addr)) == 0)
			return true;
	}
	return false;
}

/*
 * raw parsed as curl will fetch it: no user information (it would hide
 * the real host: "http://127.0.0.1:80@attacker/"), https to any host, or
 * http to loopback or a container agent only. *ret is the URL as curl
 * re-wrote it, so the host checked is the host fetched.
 */
static int container_url_check(const char *raw, const char *var, char **ret, char **ret_why)
{
	_cleanup_(curl_url_cleanupp) CURLU *u = curl_url();
	_cleanup_(curl_freep) char *scheme = NULL, *host = NULL, *user = NULL, *url = NULL;
	_cleanup_(curl_freep) char *password = NULL;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, raw, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK) {
		aws_set_why(ret_why, "%s %s is not a URL", var, raw);
		return -EINVAL;
	}
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PASSWORD, &password, 0) == CURLUE_OK) {
		aws_set_why(ret_why, "%s must not carry user information (user@host)", var);
		return -EPERM;
	}
	if (strcasecmp(scheme, "https") != 0 &&
	    (strcasecmp(scheme, "http") != 0 ||
	     (!aws_host_is_loopback(host) && !container_agent_host(host)))) {
		aws_set_why(ret_why, "%s %s is neither https nor http to a loopback or container-agent "
			    "address", var, url);
		return -EPERM;
	}
	*ret = strdup(url);
	return *ret ? 0 : -ENOMEM;
}

int aws_container_credentials_url(char **ret, char **ret_why)
{
	_cleanup_free_ char *raw = NULL;
	const char *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");

	if (rel && *rel) {
		if (asprintf(&raw, AWS_CONTAINER_DEFAULT_HOST "%s%s", rel[0] == '/' ? "" : "/", rel) < 0)
			return -ENOMEM;
		return container_url_check(raw, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", ret, ret_why);
	}
	if (full && *full)
		return container_url_check(full, "AWS_CONTAINER_CREDENTIALS_FULL_URI", ret, ret_why);
	aws_set_why(ret_why, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI not set");
	return -ENOENT;
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
	struct curl_slist *headers = NULL;
	long status = 0;
	size_t len = 0;
	int r;

	r = aws_container_credentials_url(&url, ret_why);
	if (r < 0)
		return r;
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
