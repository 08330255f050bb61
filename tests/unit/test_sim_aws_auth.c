/*
 * kanna-sim's AWS request handling: SigV4 verification (tampered body,
 * wrong key or secret, skewed date, unsigned, GET query signing, scope
 * region), and bounds on what a request may carry.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/unit/test_sim_aws_http.h"

TestSuite(sim_aws_auth, .init = setup, .fini = teardown, .timeout = 60);

Test(sim_aws_auth, tampered_body_gets_signature_does_not_match)
{
	struct reply r = call_full(&(struct call){ .service = "ec2",
						   .send_body = "Version=2016-11-15&Action=DescribeInstancez" },
				   "/", "Version=2016-11-15&Action=DescribeInstances");
	char buf[64];

	cr_assert_eq(r.status, 403, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "SignatureDoesNotMatch");
	cr_assert(strstr(r.body, "<Response><Errors><Error>"), "%s", r.body);
	free(r.body);
}

Test(sim_aws_auth, wrong_key_gets_auth_failure)
{
	struct reply r = call_full(&(struct call){ .service = "ec2", .akid = "AKIAWRONGWRONGWRONG0" },
				   "/", "Version=2016-11-15&Action=DescribeInstances");
	char buf[64];

	cr_assert_eq(r.status, 401, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "AuthFailure");
	free(r.body);
}

Test(sim_aws_auth, wrong_secret_gets_signature_does_not_match)
{
	struct reply r = call_full(&(struct call){ .service = "ec2", .secret = "not-the-secret" },
				   "/", "Version=2016-11-15&Action=DescribeInstances");
	char buf[64];

	cr_assert_eq(r.status, 403, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "SignatureDoesNotMatch");
	free(r.body);
}

Test(sim_aws_auth, skewed_date_gets_request_expired)
{
	struct reply r = call_full(&(struct call){ .service = "ec2", .when = time(NULL) - 3600 },
				   "/", "Version=2016-11-15&Action=DescribeInstances");
	char buf[64];

	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "RequestExpired");
	free(r.body);
}

Test(sim_aws_auth, unsigned_request_is_refused)
{
	struct reply r = call_full(&(struct call){ .service = "ec2", .unsigned_request = true },
				   "/", "Version=2016-11-15&Action=DescribeInstances");

	cr_assert_eq(r.status, 401, "%s", r.body);
	cr_assert(strstr(r.body, "MissingAuthenticationToken"));
	free(r.body);
}

Test(sim_aws_auth, get_with_a_signed_query_string_is_served)
{
	struct reply r = get_ec2("Action=DescribeAvailabilityZones&Version=2016-11-15&ZoneName.1=us-west-2c");

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<zoneName>"), 1, "%s", r.body);
	cr_assert(strstr(r.body, "<zoneId>usw2-az3</zoneId>"), "%s", r.body);
	free(r.body);
}

Test(sim_aws_auth, requests_are_served_in_the_region_of_their_credential_scope)
{
	struct reply r = call_full(&(struct call){ .service = "ec2", .region = "eu-west-1" }, "/",
				   "Version=2016-11-15&Action=DescribeAvailabilityZones");
	char buf[64];

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "zoneId", 0, buf, sizeof(buf)), "euw1-az1");
	free(r.body);
	r = call_full(&(struct call){ .service = "ec2", .region = "us-east-1" }, "/",
		      "Version=2016-11-15&Action=DescribeAvailabilityZones");
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "AuthFailure");
	free(r.body);
}

Test(sim_aws_auth, oversized_bodies_are_refused_with_413)
{
	size_t n = 2 * 1024 * 1024;
	char *big = malloc(n + 1);
	struct reply r;

	memset(big, 'a', n);
	memcpy(big, "Action=", 7);
	big[n] = '\0';
	r = call_full(&(struct call){ .service = "ec2" }, "/", big);
	cr_assert_eq(r.status, 413, "%s", r.body);
	free(r.body);
	free(big);
}

/* 4,000 list entries (the sim's parameter ceiling is 4,096) are answered.
 * How fast is the benchmark's business (./quickstart bench sim); the bound
 * here only catches a quadratic walk (minutes), not a slow machine. */
Test(sim_aws_auth, huge_parameter_lists_are_answered_quickly)
{
	size_t cap = 200000, len = 0;
	char *body = malloc(cap);
	struct timespec a, b;
	struct reply r;
	double ms;

	len += (size_t)snprintf(body + len, cap - len, "Version=2016-11-15&Action=DescribeSpotPriceHistory");
	for (int i = 1; i <= 1000; i++)
		len += (size_t)snprintf(body + len, cap - len, "&InstanceType.%d=m5.large&ProductDescription.%d=Linux%%2FUNIX"
					"&Filter.%d.Name=instance-type&Filter.%d.Value.1=m5.*", i, i, i, i);
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = call_full(&(struct call){ .service = "ec2" }, "/", body);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
	cr_assert_eq(r.status, 200, "%.300s", r.body);
	cr_assert_eq(xml_count(r.body, "<spotPrice>"), 3);
	cr_assert_lt(ms, 30000, "%f ms", ms);
	free(r.body);
	free(body);
}
