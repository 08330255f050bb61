# common/aws: SigV4 signing/verification and the AWS client (credentials,
# endpoints, query/JSON requests, XML responses, retries, rate limiting).
libkanna_common_a_SOURCES += \
	common/sigv4.h common/sigv4.c common/sigv4-verify.c \
	common/aws.h common/aws-internal.h common/aws-http.c common/aws-ini.c \
	common/aws-credentials.c common/aws-credentials-http.c common/aws-endpoint.c \
	common/aws-query.c common/aws-xml.c common/aws-retry.c common/aws-client.c common/aws-refresh.c \
	common/aws-start.h common/aws-start.c \
	common/aws-ec2.h common/aws-ec2.c

AWS_UNIT_TESTS = \
	tests/unit/test_sigv4 \
	tests/unit/test_aws_xml \
	tests/unit/test_aws_query \
	tests/unit/test_aws_retry \
	tests/unit/test_aws_endpoint \
	tests/unit/test_aws_credentials \
	tests/unit/test_aws_client \
	tests/unit/test_aws_ec2
check_PROGRAMS += $(AWS_UNIT_TESTS)
TESTS += $(AWS_UNIT_TESTS)
tests_unit_test_sigv4_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sigv4_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_aws_ec2_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_aws_ec2_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_aws_xml_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_aws_xml_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_aws_query_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_aws_query_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_aws_retry_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_aws_retry_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_aws_endpoint_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_aws_endpoint_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_aws_credentials_CFLAGS = $(TEST_CFLAGS)
# kanna-sim's certificate generator puts a fake credentials endpoint behind TLS.
tests_unit_test_aws_credentials_LDADD = libkanna-simk8s.a $(LDADD) $(TEST_LIBS)
tests_unit_test_aws_client_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_aws_client_LDADD = $(LDADD) $(TEST_LIBS)

FUZZ_PROGS += tests/fuzz/fuzz_aws_xml
tests_fuzz_fuzz_aws_xml_SOURCES = tests/fuzz/fuzz_aws_xml.c tests/fuzz/standalone.c
tests_fuzz_fuzz_aws_xml_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/aws_xml\"
tests_fuzz_fuzz_aws_xml_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_aws_xml_LDADD = $(LDADD)
EXTRA_DIST += \
	tests/fuzz/corpus/aws_xml/container-credentials.json \
	tests/fuzz/corpus/aws_xml/ec2-create-fleet.xml \
	tests/fuzz/corpus/aws_xml/ec2-describe-instances.xml \
	tests/fuzz/corpus/aws_xml/ec2-error-insufficient-capacity.xml \
	tests/fuzz/corpus/aws_xml/ec2-error-throttled.xml \
	tests/fuzz/corpus/aws_xml/entities-and-cdata.xml \
	tests/fuzz/corpus/aws_xml/entity-declaration.xml \
	tests/fuzz/corpus/aws_xml/imds-credentials.json \
	tests/fuzz/corpus/aws_xml/malformed.xml \
	tests/fuzz/corpus/aws_xml/sqs-error.xml \
	tests/fuzz/corpus/aws_xml/ssm-json-error.json \
	tests/fuzz/corpus/aws_xml/sts-assume-role-with-web-identity.xml \
	tests/fuzz/corpus/aws_xml/sts-error-invalid-token.xml

FUZZ_PROGS += tests/fuzz/fuzz_sigv4
tests_fuzz_fuzz_sigv4_SOURCES = tests/fuzz/fuzz_sigv4.c tests/fuzz/standalone.c
tests_fuzz_fuzz_sigv4_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/sigv4\"
tests_fuzz_fuzz_sigv4_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_sigv4_LDADD = $(LDADD)
EXTRA_DIST += \
	tests/fuzz/corpus/sigv4/malformed.txt \
	tests/fuzz/corpus/sigv4/vanilla-authorization.txt
