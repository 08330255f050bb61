/*
 * Region and endpoint resolution for the AWS client: the region from an
 * explicit value, AWS_REGION, AWS_DEFAULT_REGION, the config file or IMDS;
 * service URLs by region with the standard AWS_ENDPOINT_URL and
 * AWS_ENDPOINT_URL_<SERVICE> overrides (how kanna-sim is reached).
 * Called by daemons at start and by aws_client for every request.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/aws-internal.h"

/* Hostname prefix for services whose host is not "<service>.<region>". */
static const struct {
	const char *service;
	const char *host_prefix;
} service_hosts[] = {
	{ "pricing", "api.pricing" },
};

/* Region names are short lowercase words and digits joined by '-'. */
#define AWS_REGION_NAME_MAX 32

static bool region_is_valid(const char *r)
{
	size_t n = r ? strlen(r) : 0;

	if (n == 0 || n > AWS_REGION_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)r[i]) && !isdigit((unsigned char)r[i]) && r[i] != '-')
			return false;
	return true;
}

static int strdup_url(const char *s, char **ret)
{
	size_t n = strlen(s);

	while (n > 0 && s[n - 1] == '/')
		n--;
	*ret = strndup(s, n);
	return *ret ? 0 : -ENOMEM;
}

int aws_endpoint_url(const char *service, const char *region, char **ret)
{
	char env[64];
	const char *v, *prefix = service, *suffix;
	size_t i;

	if (!service || !*service || strlen(service) > 32 || !ret)
		return -EINVAL;
	if (!aws_env_true("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) {
		snprintf(env, sizeof(env), "AWS_ENDPOINT_URL_");
		for (i = 0; service[i]; i++)
			env[strlen("AWS_ENDPOINT_URL_") + i] =
				service[i] == '-' || service[i] == ' ' ? '_'
								       : (char)toupper((unsigned char)service[i]);
		env[strlen("AWS_ENDPOINT_URL_") + i] = '\0';
		v = getenv(env);
		if (v && *v)
			return strdup_url(v, ret);
		v = getenv("AWS_ENDPOINT_URL");
		if (v && *v)
			return strdup_url(v, ret);
	}
	/* IAM is global: one endpoint per partition, whatever the region. */
	if (streq(service, "iam"))
		return strdup_url(region && strncmp(region, "cn-", 3) == 0 ?
					  "https://iam.cn-north-1.amazonaws.com.cn" :
				  region && strncmp(region, "us-gov-", 7) == 0 ?
					  "https://iam.us-gov.amazonaws.com" :
					  "https://iam.amazonaws.com", ret);
	for (i = 0; i < ARRAY_SIZE(service_hosts); i++)
		if (streq(service, service_hosts[i].service))
			prefix = service_hosts[i].host_prefix;
	if (!region || !*region) {
		/* only STS has a global endpoint */
		if (streq(service, "sts"))
			return strdup_url("https://sts.amazonaws.com", ret);
		return -EINVAL;
	}
	if (!region_is_valid(region))
		return -EINVAL;
	suffix = strncmp(region, "cn-", 3) == 0 ? "amazonaws.com.cn" : "amazonaws.com";
	if (asprintf(ret, "https://%s.%s.%s", prefix, region, suffix) < 0)
		return -ENOMEM;
	return 0;
}

/* Whether url goes out in clear text to another machine. */
static bool endpoint_is_remote_http(const char *url)
{
	_cleanup_(curl_url_cleanupp) CURLU *u = curl_url();
	_cleanup_(curl_freep) char *scheme = NULL, *host = NULL;

	return u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	       curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	       curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && streq(scheme, "http") &&
	       !aws_host_is_loopback(host);
}

unsigned aws_endpoint_overrides_check(aws_endpoint_warn_fn warn, void *userdata)
{
	extern char **environ;
	unsigned n = 0;

	if (aws_env_true("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"))
		return 0;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[128];

		if (!eq || !startswith(*e, "AWS_ENDPOINT_URL") ||
		    ((*e)[16] != '=' && (*e)[16] != '_') || (size_t)(eq - *e) >= sizeof(name) ||
		    !endpoint_is_remote_http(eq + 1))
			continue;
		memcpy(name, *e, (size_t)(eq - *e));
		name[eq - *e] = '\0';
		n++;
		if (warn)
			warn(name, eq + 1, userdata);
	}
	return n;
}

const char *aws_signing_region(const char *service, const char *region)
{
	if (!streq_ptr(service, "iam") || !region)
		return region;
	if (strncmp(region, "cn-", 3) == 0)
		return "cn-north-1";
	if (strncmp(region, "us-gov-", 7) == 0)
		return "us-gov-west-1";
	return "us-east-1";
}

static int region_take(const char *v, const char *from, char **ret, char **ret_error)
{
	if (!region_is_valid(v)) {
		aws_set_why(ret_error, "region '%s' from %s is not a valid region name", v, from);
		return -EINVAL;
	}
	*ret = strdup(v);
	return *ret ? 0 : -ENOMEM;
}

int aws_region_resolve(const char *explicit_region, const char *profile, char **ret,
		       char **ret_error)
{
	_cleanup_free_ char *config = NULL, *value = NULL, *endpoint = NULL;
	_cleanup_free_ char *why_file = NULL, *why_imds = NULL;
	const char *v;
	int r;

	if (explicit_region && *explicit_region)
		return region_take(explicit_region, "the configuration", ret, ret_error);
	v = getenv("AWS_REGION");
	if (v && *v)
		return region_take(v, "AWS_REGION", ret, ret_error);
	v = getenv("AWS_DEFAULT_REGION");
	if (v && *v)
		return region_take(v, "AWS_DEFAULT_REGION", ret, ret_error);
	if (!profile || !*profile)
		profile = getenv("AWS_PROFILE");
	if (!profile || !*profile)
		profile = "default";
	r = aws_shared_file_path(true, &config);
	if (r == -ENOMEM)
		return r;
	if (r >= 0) {
		r = aws_ini_lookup(config, true, profile, "region", &value, NULL);
		if (r >= 0)
			return region_take(value, config, ret, ret_error);
		aws_set_why(&why_file, "%s has no region for profile %s", config, profile);
	} else {
		aws_set_why(&why_file, "no config file (HOME unset)");
	}
	r = aws_imds_endpoint(&endpoint, &why_imds);
	if (r >= 0) {
		r = aws_imds_get(endpoint, "/latest/meta-data/placement/region",
				 AWS_LOCAL_HTTP_TIMEOUT_MS, &value, &why_imds);
		if (r >= 0)
			return region_take(value, "instance metadata", ret, ret_error);
	}
	aws_set_why(ret_error,
		    "no region: not configured, AWS_REGION and AWS_DEFAULT_REGION unset, %s, "
		    "instance metadata: %s",
		    why_file ? why_file : "config file unreadable",
		    why_imds ? why_imds : "unavailable");
	return -ENOENT;
}
