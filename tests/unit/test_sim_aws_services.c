/*
 * kanna-sim's non-EC2 services over real HTTP: SSM EKS AMI aliases, STS
 * GetCallerIdentity and AssumeRoleWithWebIdentity, SQS in the query
 * protocol, Pricing GetProducts, and the aws.env file.
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

TestSuite(sim_aws_services, .init = setup, .fini = teardown, .timeout = 60);

Test(sim_aws_services, ssm_alias_resolves_to_a_sim_ami)
{
	struct reply r = call_full(&(struct call){ .service = "ssm", .target = "AmazonSSM.GetParameter" }, "/",
				   "{\"Name\":\"/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/arm64/standard/recommended/image_id\"}");
	json_t *j = json_loads(r.body, 0, NULL);
	const char *ami = json_string_value(json_object_get(json_object_get(j, "Parameter"), "Value"));
	char params[256];
	struct reply d;

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(ami && strncmp(ami, "ami-", 4) == 0, "%s", r.body);
	snprintf(params, sizeof(params), "Action=DescribeImages&ImageId.1=%s", ami);
	d = ec2(params);
	cr_assert_eq(d.status, 200, "%s", d.body);
	cr_assert(strstr(d.body, "<architecture>arm64</architecture>"), "%s", d.body);
	cr_assert(strstr(d.body, "amazon-eks-node-al2023-arm64-standard-1.30"), "%s", d.body);
	json_decref(j);
	free(r.body);
	free(d.body);

	r = call_full(&(struct call){ .service = "ssm", .target = "AmazonSSM.GetParameter" }, "/",
		      "{\"Name\":\"/aws/service/eks/optimized-ami/9.99/amazon-linux-2/recommended/image_id\"}");
	cr_assert_eq(r.status, 400);
	cr_assert(strstr(r.body, "\"__type\":\"ParameterNotFound\""), "%s", r.body);
	free(r.body);
}

Test(sim_aws_services, sts_get_caller_identity_names_the_account)
{
	struct reply r = call_full(&(struct call){ .service = "sts" }, "/",
				   "Action=GetCallerIdentity&Version=2011-06-15");
	char buf[64];

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Account", 0, buf, sizeof(buf)), "111122223333");
	free(r.body);
	r = call_full(&(struct call){ .service = "sts", .akid = "AKIAWRONGWRONGWRONG0" }, "/",
		      "Action=GetCallerIdentity&Version=2011-06-15");
	cr_assert_eq(r.status, 403);
	cr_assert(strstr(r.body, "<ErrorResponse"), "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InvalidClientTokenId");
	free(r.body);
}

Test(sim_aws_services, sts_assume_role_with_web_identity_hands_out_sim_credentials)
{
	struct reply r = call_full(&(struct call){ .service = "sts", .unsigned_request = true }, "/",
				   "Action=AssumeRoleWithWebIdentity&Version=2011-06-15"
				   "&RoleArn=arn%3Aaws%3Aiam%3A%3A111122223333%3Arole%2Fkanna"
				   "&RoleSessionName=kanna&WebIdentityToken=eyJhbGciOi");
	char buf[64];

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "AccessKeyId", 0, buf, sizeof(buf)), TEST_AKID);
	free(r.body);
}

/* s with XML's &apos; read back as ' (in place). */
static char *unescape_apos(char *s)
{
	char *o = s;

	for (const char *p = s; *p;)
		if (strncmp(p, "&apos;", 6) == 0) {
			*o++ = '\'';
			p += 6;
		} else
			*o++ = *p++;
	*o = '\0';
	return s;
}

/* RoleSessionName and DurationSeconds as STS constrains them
 * (API_AssumeRoleWithWebIdentity.html), refused with its ValidationError. */
Test(sim_aws_services, sts_refuses_a_session_name_or_duration_out_of_bounds)
{
	static const char *const cases[][2] = {
		{ "RoleSessionName=k", "Value 'k' at 'roleSessionName' failed to satisfy constraint: "
				       "Member must have length greater than or equal to 2" },
		{ "RoleSessionName=kanna%20sim", "Value 'kanna sim' at 'roleSessionName' failed to satisfy "
						 "constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]*" },
		{ "RoleSessionName=kanna&DurationSeconds=43201",
		  "Value '43201' at 'durationSeconds' failed to satisfy constraint: Member must have value "
		  "less than or equal to 43200" },
		{ "RoleSessionName=kanna&DurationSeconds=899",
		  "Value '899' at 'durationSeconds' failed to satisfy constraint: Member must have value "
		  "greater than or equal to 900" },
	};
	char body[512], buf[512], want[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct reply r;

		snprintf(body, sizeof(body), "Action=AssumeRoleWithWebIdentity&Version=2011-06-15"
			 "&RoleArn=arn%%3Aaws%%3Aiam%%3A%%3A111122223333%%3Arole%%2Fkanna"
			 "&WebIdentityToken=eyJhbGciOi&%s", cases[i][0]);
		r = call_full(&(struct call){ .service = "sts", .unsigned_request = true }, "/", body);
		cr_assert_eq(r.status, 400, "%s: %s", cases[i][0], r.body);
		cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "ValidationError");
		snprintf(want, sizeof(want), "1 validation error detected: %s", cases[i][1]);
		xml_nth(r.body, "Message", 0, buf, sizeof(buf));
		cr_assert_str_eq(unescape_apos(buf), want);
		free(r.body);
	}
}

Test(sim_aws_services, sqs_query_protocol_receives_and_deletes_in_xml)
{
	char id[64], json[128], body[512], receipt[128], msg[2048];
	struct reply r;

	create_template("lt-demo");
	launch_tagged("q", id, sizeof(id));
	r = admin("POST", "/_sim/faults", "{}");
	free(r.body);
	/* On-demand instances cannot be interrupted; spot ones can. */
	snprintf(json, sizeof(json), "{\"instanceIds\":[\"%s\"]}", id);
	r = admin("POST", "/_sim/interrupt", json);
	cr_assert_eq(r.status, 400, "%s", r.body);
	free(r.body);

	r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo",
		      "Action=ReceiveMessage&Version=2012-11-05&MaxNumberOfMessages=10");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "<ReceiveMessageResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\"><ReceiveMessageResult></ReceiveMessageResult>"), "%s", r.body);
	free(r.body);

	r = call_full(&(struct call){ .service = "sqs" }, "/",
		      "Action=GetQueueUrl&Version=2012-11-05&QueueName=demo");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(xml_nth(r.body, "QueueUrl", 0, msg, sizeof(msg)), "/111122223333/demo"), "%s", r.body);
	free(r.body);

	r = call_full(&(struct call){ .service = "sqs" }, "/",
		      "Action=GetQueueUrl&Version=2012-11-05&QueueName=other");
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, msg, sizeof(msg)), "AWS.SimpleQueueService.NonExistentQueue");
	cr_assert(strstr(r.body, "<ErrorResponse"), "%s", r.body);
	free(r.body);

	snprintf(body, sizeof(body), "Action=DeleteMessage&Version=2012-11-05&ReceiptHandle=%s", "nope");
	r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo", body);
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, receipt, sizeof(receipt)), "ReceiptHandleIsInvalid");
	free(r.body);

	r = fleet("&TargetCapacitySpecification.SpotTargetCapacity=1");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "<lifecycle>spot</lifecycle><instanceIds>"), "%s", r.body);
	xml_nth(strstr(r.body, "<lifecycle>spot</lifecycle><instanceIds>"), "item", 0, id, sizeof(id));
	free(r.body);
	snprintf(json, sizeof(json), "{\"instanceIds\":[\"%s\"]}", id);
	r = admin("POST", "/_sim/interrupt", json);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo",
		      "Action=ReceiveMessage&Version=2012-11-05&MaxNumberOfMessages=10&WaitTimeSeconds=1");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(xml_nth(r.body, "Body", 0, msg, sizeof(msg)), "EC2 Spot Instance Interruption Warning"), "%s", r.body);
	xml_nth(r.body, "ReceiptHandle", 0, receipt, sizeof(receipt));
	free(r.body);
	snprintf(body, sizeof(body), "Action=DeleteMessage&Version=2012-11-05&ReceiptHandle=%s", receipt);
	r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo", body);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "<DeleteMessageResponse"), "%s", r.body);
	free(r.body);
}

Test(sim_aws_services, pricing_get_products_lists_on_demand_prices)
{
	struct reply r = call_full(&(struct call){ .service = "pricing", .target = "AWSPriceListService.GetProducts" }, "/",
				   "{\"ServiceCode\":\"AmazonEC2\",\"FormatVersion\":\"aws_v1\",\"Filters\":["
				   "{\"Type\":\"TERM_MATCH\",\"Field\":\"regionCode\",\"Value\":\"eu-west-1\"},"
				   "{\"Type\":\"TERM_MATCH\",\"Field\":\"instanceType\",\"Value\":\"m5.large\"},"
				   "{\"Type\":\"TERM_MATCH\",\"Field\":\"operatingSystem\",\"Value\":\"Linux\"}]}");
	json_t *j, *p, *od, *term, *dim;
	const char *k1, *k2;

	cr_assert_eq(r.status, 200, "%s", r.body);
	j = json_loads(r.body, 0, NULL);
	cr_assert_eq(json_array_size(json_object_get(j, "PriceList")), 1, "%s", r.body);
	p = json_loads(json_string_value(json_array_get(json_object_get(j, "PriceList"), 0)), 0, NULL);
	cr_assert_not_null(p);
	od = json_object_get(json_object_get(p, "terms"), "OnDemand");
	json_object_foreach(od, k1, term)
		json_object_foreach(json_object_get(term, "priceDimensions"), k2, dim)
			cr_assert_float_eq(strtod(json_string_value(json_object_get(json_object_get(dim, "pricePerUnit"), "USD")), NULL),
					   0.096 * 1.1, 1e-9);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(p, "product"), "attributes"), "instanceType")), "m5.large");
	json_decref(p);
	json_decref(j);
	free(r.body);
}

Test(sim_aws_services, write_env_exports_endpoint_and_credentials)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char want[128];

	cr_assert_eq(sim_aws_write_env(aws, f), 0);
	fclose(f);
	snprintf(want, sizeof(want), "export AWS_ENDPOINT_URL_EC2='http://%s'", host);
	cr_assert(strstr(buf, want), "%s", buf);
	cr_assert(strstr(buf, "export AWS_ACCESS_KEY_ID='" TEST_AKID "'"), "%s", buf);
	cr_assert(strstr(buf, "export AWS_REGION='us-west-2'"), "%s", buf);
	cr_assert(strstr(buf, "export KANNA_CLUSTER_NAME='demo'"), "%s", buf);
	cr_assert(strstr(buf, "export KANNA_INTERRUPTION_QUEUE='demo'"), "%s", buf);
	free(buf);
}

Test(sim_aws_services, sqs_admin_send_queues_a_raw_body_under_send_message_rules)
{
	char msg[256];
	struct reply r;

	/* SendMessage refuses an empty body and characters XML cannot carry. */
	r = admin("POST", "/_sim/sqs/send", "");
	cr_assert_eq(r.status, 400, "%s", r.body);
	free(r.body);
	r = admin("POST", "/_sim/sqs/send", "bell \x07");
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert(strstr(r.body, "InvalidMessageContents"), "%s", r.body);
	free(r.body);
	r = admin("POST", "/_sim/sqs/send", "latin-1 \xe9t\xe9");
	cr_assert_eq(r.status, 400, "%s", r.body);
	free(r.body);

	/* Anything else is queued as is: not JSON, a CR that the XML answer
	 * must keep (else the client's MD5OfBody check fails), UTF-8. */
	r = admin("POST", "/_sim/sqs/send", "not {json\r\n \xc3\xa9");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "\"MessageId\""), "%s", r.body);
	free(r.body);
	r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo",
		      "Action=ReceiveMessage&Version=2012-11-05&MaxNumberOfMessages=10");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Body", 0, msg, sizeof(msg)), "not {json&#xD;\n \xc3\xa9");
	cr_assert_str_eq(xml_nth(r.body, "MD5OfBody", 0, msg, sizeof(msg)),
			 "69337416fea9b6d32cfe32304a7722c0");
	free(r.body);
}

/* GetProducts' constraints, refused as AWS's front end refuses them:
 * ValidationException naming the member (API_pricing_GetProducts.html). */
Test(sim_aws_services, pricing_refuses_what_get_products_does_not_take)
{
	static const char *const bodies[][2] = {
		{ "{\"FormatVersion\":\"aws_v1\"}",
		  "1 validation error detected: Value null at 'serviceCode' failed to satisfy constraint: "
		  "Member must not be null" },
		{ "{\"ServiceCode\":\"AmazonEC2\",\"MaxResults\":101}",
		  "1 validation error detected: Value '101' at 'maxResults' failed to satisfy constraint: "
		  "Member must have value less than or equal to 100" },
		{ "{\"ServiceCode\":\"AmazonEC2\",\"MaxResults\":0}",
		  "1 validation error detected: Value '0' at 'maxResults' failed to satisfy constraint: "
		  "Member must have value greater than or equal to 1" },
		{ "{\"ServiceCode\":\"AmazonEC2\",\"Filters\":[{\"Type\":\"TERM_MATCH\",\"Field\":\"a\","
		  "\"Value\":\"b\"},{\"Type\":\"LIKE\",\"Field\":\"a\",\"Value\":\"b\"}]}",
		  "1 validation error detected: Value 'LIKE' at 'filters.2.member.type' failed to satisfy "
		  "constraint: Member must satisfy enum value set: [TERM_MATCH, EQUALS, CONTAINS, ANY_OF, NONE_OF]" },
		{ "{\"ServiceCode\":\"AmazonEC2\",\"Filters\":[{\"Type\":\"TERM_MATCH\",\"Value\":\"b\"}]}",
		  "1 validation error detected: Value null at 'filters.1.member.field' failed to satisfy "
		  "constraint: Member must not be null" },
	};

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct reply r = call_full(&(struct call){ .service = "pricing",
							   .target = "AWSPriceListService.GetProducts" },
					   "/", bodies[i][0]);
		json_t *j = json_loads(r.body, 0, NULL);

		cr_assert_eq(r.status, 400, "%s: %s", bodies[i][0], r.body);
		cr_assert_not_null(j, "%s", r.body);
		cr_assert_str_eq(json_string_value(json_object_get(j, "__type")) ?: "", "ValidationException",
				 "%s", r.body);
		cr_assert_str_eq(json_string_value(json_object_get(j, "message")) ?: "", bodies[i][1]);
		json_decref(j);
		free(r.body);
	}
}

/* awsJson: a member of the wrong JSON type is refused before the action runs,
 * as Coral's deserializer refuses it ("SerializationException: STRING_VALUE
 * cannot be converted to Integer", ECS in aws/aws-cdk-cli#973); a required
 * member missing is SSM's ValidationException. */
Test(sim_aws_services, json_members_of_the_wrong_type_or_missing_are_refused)
{
	static const char *const cases[][4] = {
		{ "ssm", "AmazonSSM.GetParameter", "{\"Name\":5}", "SerializationException" },
		{ "ssm", "AmazonSSM.GetParameter", "{\"Name\":[\"a\"]}", "SerializationException" },
		{ "ssm", "AmazonSSM.GetParameter",
		  "{\"Name\":\"/aws/service/bottlerocket/aws-k8s-1.30/x86_64/latest/image_id\","
		  "\"WithDecryption\":\"true\"}", "SerializationException" },
		{ "ssm", "AmazonSSM.GetParameter", "{\"WithDecryption\":true}", "ValidationException" },
		{ "sqs", "AmazonSQS.ReceiveMessage",
		  "{\"QueueUrl\":\"http://x/111122223333/q\",\"MaxNumberOfMessages\":\"5\"}",
		  "SerializationException" },
		{ "sqs", "AmazonSQS.ReceiveMessage",
		  "{\"QueueUrl\":\"http://x/111122223333/q\",\"MessageAttributeNames\":\"All\"}",
		  "SerializationException" },
		{ "sqs", "AmazonSQS.DeleteMessage", "{\"QueueUrl\":7,\"ReceiptHandle\":\"r\"}",
		  "SerializationException" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct reply r = call_full(&(struct call){ .service = cases[i][0], .target = cases[i][1] },
					   "/", cases[i][2]);
		json_t *j = json_loads(r.body, 0, NULL);

		cr_assert_eq(r.status, 400, "%s: %s", cases[i][2], r.body);
		cr_assert_str_eq(json_string_value(json_object_get(j, "__type")) ?: "", cases[i][3],
				 "%s: %s", cases[i][2], r.body);
		json_decref(j);
		free(r.body);
	}
}
