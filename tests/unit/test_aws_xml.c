/* AWS XML responses: the bounded element tree, accessors, and the error
 * shapes of EC2, STS/SQS and the JSON protocol. Fixtures are the fuzz
 * corpus (real-shape documents). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"

static char *read_fixture(const char *name, size_t *len)
{
	const char *src = getenv("KANNA_SRCDIR");
	char *path = NULL, *buf = NULL;
	size_t size = 0;
	FILE *f, *m;
	int c;

	cr_assert(asprintf(&path, "%s/tests/fuzz/corpus/aws_xml/%s", src ? src : KANNA_SRCDIR, name) >= 0);
	f = fopen(path, "rb");
	cr_assert(f, "missing fixture %s", path);
	m = open_memstream(&buf, &size);
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(f);
	fclose(m);
	free(path);
	*len = size;
	return buf;
}

Test(aws_xml, parses_create_fleet_instances_and_errors)
{
	size_t len;
	char *doc = read_fixture("ec2-create-fleet.xml", &len);
	struct aws_xml_node *root = NULL;
	const struct aws_xml_node *item;

	cr_assert_eq(aws_xml_parse(doc, len, &root), 0);
	cr_assert_str_eq(root->name, "CreateFleetResponse");
	cr_assert_str_eq(aws_xml_text(root, "fleetId"), "fleet-5d1b5a8e-6f5b-4e6b-9c3b-7a9b1c2d3e4f");
	item = aws_xml_find(root, "errorSet/item");
	cr_assert_str_eq(aws_xml_text(item, "errorCode"), "InsufficientInstanceCapacity");
	cr_assert_str_eq(aws_xml_text(item, "launchTemplateAndOverrides/overrides/instanceType"), "c5.large");
	item = aws_xml_find(root, "fleetInstanceSet/item");
	cr_assert_str_eq(aws_xml_text(item, "instanceIds/item"), "i-0123456789abcdef0");
	cr_assert_str_eq(aws_xml_text(item, "launchTemplateAndOverrides/overrides/availabilityZone"), "us-west-2b");
	cr_assert_null(aws_xml_text(root, "fleetInstanceSet/item/nope"));
	aws_xml_free(root);
	free(doc);
}

Test(aws_xml, iterates_repeated_items_in_order)
{
	size_t len;
	char *doc = read_fixture("ec2-describe-instances.xml", &len);
	struct aws_xml_node *root = NULL;
	const struct aws_xml_node *set, *i;
	const char *ids[2] = { 0 }, *states[2] = { 0 };
	int n = 0;

	cr_assert_eq(aws_xml_parse(doc, len, &root), 0);
	set = aws_xml_find(root, "reservationSet/item/instancesSet");
	for (i = aws_xml_first(set, "item"); i; i = aws_xml_next(i)) {
		cr_assert_lt(n, 2);
		ids[n] = aws_xml_text(i, "instanceId");
		states[n++] = aws_xml_text(i, "instanceState/name");
	}
	cr_assert_eq(n, 2);
	cr_assert_str_eq(ids[0], "i-1234567890abcdef0");
	cr_assert_str_eq(states[1], "stopped");
	/* tags: key/value pairs under tagSet */
	i = aws_xml_find(set, "item/tagSet/item");
	cr_assert_str_eq(aws_xml_text(i, "key"), "karpenter.sh/nodepool");
	cr_assert_str_eq(aws_xml_text(aws_xml_next(i), "value"), "default-abc12");
	cr_assert_null(aws_xml_next(aws_xml_next(i)));
	/* an empty element has empty text, not NULL */
	cr_assert_str_eq(aws_xml_text(root, "reservationSet/item/groupSet"), "");
	aws_xml_free(root);
	free(doc);
}

Test(aws_xml, decodes_entities_and_cdata)
{
	static const char doc[] = "<a><b>&amp;&lt;&#x41;<![CDATA[<c>]]></b></a>";
	struct aws_xml_node *root = NULL;

	cr_assert_eq(aws_xml_parse(doc, strlen(doc), &root), 0);
	cr_assert_str_eq(aws_xml_text(root, "b"), "&<A<c>");
	aws_xml_free(root);
}

Test(aws_xml, rejects_malformed_and_entity_declarations)
{
	static const char bad[] = "<a><b></a>";
	static const char bomb[] = "<!DOCTYPE a [<!ENTITY x \"xx\"><!ENTITY y \"&x;&x;\">]><a>&y;</a>";
	struct aws_xml_node *root = NULL;

	cr_assert_eq(aws_xml_parse(bad, strlen(bad), &root), -EBADMSG);
	cr_assert_eq(aws_xml_parse(bomb, strlen(bomb), &root), -EBADMSG);
	cr_assert_eq(aws_xml_parse("", 0, &root), -EBADMSG);
	cr_assert_null(root);
}

Test(aws_xml, enforces_the_depth_limit)
{
	char *doc = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&doc, &size);
	struct aws_xml_node *root = NULL;

	for (int i = 0; i < AWS_XML_MAX_DEPTH + 1; i++)
		fputs("<d>", m);
	for (int i = 0; i < AWS_XML_MAX_DEPTH + 1; i++)
		fputs("</d>", m);
	fclose(m);
	cr_assert_eq(aws_xml_parse(doc, size, &root), -E2BIG);
	free(doc);
	/* exactly at the limit is fine */
	size = 0;
	m = open_memstream(&doc, &size);
	for (int i = 0; i < AWS_XML_MAX_DEPTH; i++)
		fputs("<d>", m);
	for (int i = 0; i < AWS_XML_MAX_DEPTH; i++)
		fputs("</d>", m);
	fclose(m);
	cr_assert_eq(aws_xml_parse(doc, size, &root), 0);
	aws_xml_free(root);
	free(doc);
}

Test(aws_xml, enforces_the_size_and_name_limits)
{
	struct aws_xml_node *root = NULL;
	char name[AWS_XML_MAX_NAME + 2];
	char *doc = NULL;

	cr_assert_eq(aws_xml_parse("<a/>", (size_t)AWS_XML_MAX_BYTES + 1, &root), -E2BIG);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	cr_assert(asprintf(&doc, "<%s/>", name) > 0);
	cr_assert_eq(aws_xml_parse(doc, strlen(doc), &root), -E2BIG);
	free(doc);
}

Test(aws_error, reads_ec2_error_code_message_and_request_id)
{
	size_t len;
	char *doc = read_fixture("ec2-error-insufficient-capacity.xml", &len);
	struct aws_error e;

	cr_assert_eq(aws_error_parse(doc, len, 500, &e), 0);
	cr_assert_str_eq(e.code, "InsufficientInstanceCapacity");
	cr_assert(strstr(e.message, "sufficient m5.large capacity"));
	cr_assert_str_eq(e.request_id, "ea966190-f9aa-478e-9ede-3c5e1b1d6b4a");
	cr_assert_eq(e.http_status, 500);
	free(doc);
}

Test(aws_error, reads_sts_and_sqs_error_responses)
{
	size_t len;
	char *doc = read_fixture("sts-error-invalid-token.xml", &len);
	struct aws_error e;

	cr_assert_eq(aws_error_parse(doc, len, 400, &e), 0);
	cr_assert_str_eq(e.code, "InvalidIdentityToken");
	cr_assert(strstr(e.message, "No OpenIDConnect provider"));
	cr_assert_str_eq(e.request_id, "c6104cbe-af31-11e0-8154-cbc7ccf896c7");
	free(doc);
	doc = read_fixture("sqs-error.xml", &len);
	cr_assert_eq(aws_error_parse(doc, len, 400, &e), 0);
	cr_assert_str_eq(e.code, "AWS.SimpleQueueService.NonExistentQueue");
	free(doc);
}

/* The other envelope AWS answers with: a list of errors inside ErrorResponse. */
Test(aws_error, reads_an_error_list_inside_error_response)
{
	static const char doc[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ErrorResponse><Errors><Error>"
		"<Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error>"
		"</Errors><RequestId>5b9f3e2a-0000-4000-8000-000000000001</RequestId></ErrorResponse>";
	struct aws_error e;

	cr_assert_eq(aws_error_parse(doc, sizeof(doc) - 1, 503, &e), 0);
	cr_assert_str_eq(e.code, "RequestLimitExceeded");
	cr_assert_str_eq(e.message, "Request limit exceeded.");
	cr_assert_str_eq(e.request_id, "5b9f3e2a-0000-4000-8000-000000000001");
}

Test(aws_error, reads_json_protocol_errors)
{
	static const char body[] =
		"{\"__type\":\"com.amazonaws.ssm#ParameterNotFound\",\"message\":\"Parameter /aws/x not found.\"}";
	struct aws_error e;

	cr_assert_eq(aws_error_parse(body, strlen(body), 400, &e), 0);
	cr_assert_str_eq(e.code, "ParameterNotFound");
	cr_assert_str_eq(e.message, "Parameter /aws/x not found.");
}

Test(aws_error, falls_back_to_the_http_status_for_unknown_bodies)
{
	struct aws_error e;

	cr_assert_eq(aws_error_parse("<html>Bad Gateway</html>", 24, 502, &e), -EBADMSG);
	cr_assert_str_eq(e.code, "HTTP502");
	cr_assert_eq(aws_error_parse(NULL, 0, 503, &e), -EBADMSG);
	cr_assert_str_eq(e.code, "HTTP503");
}

Test(aws_credentials, parses_the_sts_assume_role_with_web_identity_response)
{
	size_t len;
	char *doc = read_fixture("sts-assume-role-with-web-identity.xml", &len);
	struct aws_credentials *c = NULL;
	time_t expected;

	cr_assert_eq(aws_credentials_parse_sts_xml(doc, len, &c), 0);
	cr_assert_str_eq(c->access_key_id, "ASIAIOSFODNN7EXAMPLE");
	cr_assert_str_eq(c->secret_access_key, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY");
	cr_assert_str_eq(c->session_token, "AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE");
	cr_assert_eq(aws_parse_iso8601("2026-11-23T01:00:00Z", &expected), 0);
	cr_assert_eq(c->expiration, expected);
	aws_credentials_free(c);
	free(doc);
	doc = read_fixture("sts-error-invalid-token.xml", &len);
	cr_assert_eq(aws_credentials_parse_sts_xml(doc, len, &c), -EBADMSG);
	free(doc);
}

Test(aws_xml, enforces_the_element_count_limit)
{
	size_t n = (size_t)AWS_XML_MAX_ELEMENTS + 1, size = 3 + 4 * n + 4;
	char *doc = malloc(size + 1), *p = doc;
	struct aws_xml_node *root = NULL;

	cr_assert(doc);
	/* the root plus AWS_XML_MAX_ELEMENTS children: one too many */
	memcpy(p, "<r>", 3);
	p += 3;
	for (size_t i = 0; i < n - 1; i++, p += 4)
		memcpy(p, "<a/>", 4);
	memcpy(p, "</r>", 4);
	p += 4;
	cr_assert_eq(aws_xml_parse(doc, (size_t)(p - doc), &root), -E2BIG);
	/* one child fewer fits exactly */
	memcpy(doc + 3 + 4 * (n - 2), "</r>", 4);
	cr_assert_eq(aws_xml_parse(doc, 3 + 4 * (n - 2) + 4, &root), 0);
	cr_assert_eq(root->n_children, AWS_XML_MAX_ELEMENTS - 1);
	aws_xml_free(root);
	free(doc);
}
