/* Endpoints by region with the AWS_ENDPOINT_URL overrides, and the region
 * chain (explicit, AWS_REGION, AWS_DEFAULT_REGION, config file). Each test
 * runs in its own process, so environment changes stay local. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/aws.h"

static void clear_env(void)
{
	static const char *const vars[] = {
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_SSM", "AWS_ENDPOINT_URL_STS",
		"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_PRICING", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE",
		"AWS_SHARED_CREDENTIALS_FILE",
	};

	for (size_t i = 0; i < ARRAY_SIZE(vars); i++)
		unsetenv(vars[i]);
	/* never reach a real IMDS from a test */
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

TestSuite(aws_endpoint, .init = clear_env);

static void expect_url(const char *service, const char *region, const char *want)
{
	char *url = NULL;

	cr_assert_eq(aws_endpoint_url(service, region, &url), 0, "%s", service);
	cr_assert_str_eq(url, want);
	free(url);
}

Test(aws_endpoint, builds_regional_urls)
{
	expect_url("ec2", "us-west-2", "https://ec2.us-west-2.amazonaws.com");
	expect_url("ssm", "eu-central-1", "https://ssm.eu-central-1.amazonaws.com");
	expect_url("sqs", "ap-south-1", "https://sqs.ap-south-1.amazonaws.com");
	expect_url("sts", "us-east-1", "https://sts.us-east-1.amazonaws.com");
	expect_url("pricing", "us-east-1", "https://api.pricing.us-east-1.amazonaws.com");
	expect_url("ec2", "cn-north-1", "https://ec2.cn-north-1.amazonaws.com.cn");
	expect_url("sts", NULL, "https://sts.amazonaws.com");
}

Test(aws_endpoint, iam_is_one_global_endpoint_per_partition_signed_for_its_home_region)
{
	expect_url("iam", "us-west-2", "https://iam.amazonaws.com");
	expect_url("iam", NULL, "https://iam.amazonaws.com");
	expect_url("iam", "cn-northwest-1", "https://iam.cn-north-1.amazonaws.com.cn");
	cr_assert_str_eq(aws_signing_region("iam", "eu-west-1"), "us-east-1");
	cr_assert_str_eq(aws_signing_region("iam", "cn-northwest-1"), "cn-north-1");
	cr_assert_str_eq(aws_signing_region("ec2", "eu-west-1"), "eu-west-1");
}

Test(aws_endpoint, rejects_missing_or_invalid_regions)
{
	char *url = NULL;

	cr_assert_eq(aws_endpoint_url("ec2", NULL, &url), -EINVAL);
	cr_assert_eq(aws_endpoint_url("ec2", "us-west-2/../evil", &url), -EINVAL);
	cr_assert_eq(aws_endpoint_url("ec2", "US-WEST-2", &url), -EINVAL);
}

Test(aws_endpoint, service_override_beats_global_override)
{
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566/", 1);
	setenv("AWS_ENDPOINT_URL_EC2", "http://127.0.0.1:8443", 1);
	expect_url("ec2", "us-west-2", "http://127.0.0.1:8443");
	expect_url("ssm", "us-west-2", "http://127.0.0.1:4566");
	expect_url("pricing", NULL, "http://127.0.0.1:4566");
	setenv("AWS_ENDPOINT_URL_PRICING", "http://127.0.0.1:9000", 1);
	expect_url("pricing", "us-east-1", "http://127.0.0.1:9000");
}

Test(aws_endpoint, ignore_configured_endpoint_urls_restores_defaults)
{
	setenv("AWS_ENDPOINT_URL_EC2", "http://127.0.0.1:8443", 1);
	setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
	expect_url("ec2", "us-west-2", "https://ec2.us-west-2.amazonaws.com");
}

static void expect_region(const char *explicit_region, const char *want)
{
	char *region = NULL, *err = NULL;

	cr_assert_eq(aws_region_resolve(explicit_region, NULL, &region, &err), 0, "%s", err ? err : "");
	cr_assert_str_eq(region, want);
	free(region);
}

Test(aws_endpoint, region_prefers_explicit_then_aws_region_then_default_region)
{
	setenv("AWS_DEFAULT_REGION", "eu-west-1", 1);
	expect_region(NULL, "eu-west-1");
	setenv("AWS_REGION", "us-west-2", 1);
	expect_region(NULL, "us-west-2");
	expect_region("ap-northeast-1", "ap-northeast-1");
}

Test(aws_endpoint, region_comes_from_the_profile_in_the_config_file)
{
	char dir[] = "/tmp/kanna-aws-XXXXXX", path[64];
	FILE *f;

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/config", dir);
	f = fopen(path, "w");
	fputs("[default]\nregion = us-east-2\n\n[profile kanna]\nregion=sa-east-1\n", f);
	fclose(f);
	setenv("AWS_CONFIG_FILE", path, 1);
	expect_region(NULL, "us-east-2");
	setenv("AWS_PROFILE", "kanna", 1);
	expect_region(NULL, "sa-east-1");
	unlink(path);
	rmdir(dir);
}

Test(aws_endpoint, no_region_error_names_every_place_looked)
{
	char *region = NULL, *err = NULL;

	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	cr_assert_eq(aws_region_resolve(NULL, NULL, &region, &err), -ENOENT);
	cr_assert(strstr(err, "AWS_REGION"), "%s", err);
	cr_assert(strstr(err, "/nonexistent/config"), "%s", err);
	cr_assert(strstr(err, "AWS_EC2_METADATA_DISABLED"), "%s", err);
	free(err);
}

Test(aws_endpoint, rejects_an_invalid_region_value)
{
	char *region = NULL, *err = NULL;

	setenv("AWS_REGION", "us west 2", 1);
	cr_assert_eq(aws_region_resolve(NULL, NULL, &region, &err), -EINVAL);
	cr_assert(strstr(err, "AWS_REGION"), "%s", err);
	free(err);
}

struct warned {
	int n;
	char variables[4][64];
};

static void collect_warning(const char *variable, const char *url, void *userdata)
{
	struct warned *w = userdata;

	(void)url;
	if (w->n < 4)
		snprintf(w->variables[w->n], sizeof(w->variables[0]), "%s", variable);
	w->n++;
}

/* kanna-sim on loopback is fine; a plain http endpoint elsewhere carries
 * the signed requests and the session token readable on the network. */
Test(aws_endpoint, only_plain_http_overrides_to_other_machines_are_warned_about)
{
	struct warned w = { 0 };

	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000", 1);
	setenv("AWS_ENDPOINT_URL_SSM", "https://ssm.internal.example", 1);
	setenv("AWS_ENDPOINT_URL_PRICING", "http://[::1]:9001/", 1);
	setenv("AWS_ENDPOINT_URL_EC2", "http://ec2.internal.example:8080", 1);
	setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1.attacker.example/", 1);
	cr_assert_eq(aws_endpoint_overrides_check(collect_warning, &w), 2);
	cr_assert_eq(w.n, 2);
	cr_assert((streq(w.variables[0], "AWS_ENDPOINT_URL_EC2") &&
		   streq(w.variables[1], "AWS_ENDPOINT_URL_STS")) ||
		  (streq(w.variables[1], "AWS_ENDPOINT_URL_EC2") &&
		   streq(w.variables[0], "AWS_ENDPOINT_URL_STS")),
		  "%s %s", w.variables[0], w.variables[1]);
	setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
	cr_assert_eq(aws_endpoint_overrides_check(collect_warning, &w), 0, "ignored overrides are unused");
}
