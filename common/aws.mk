# common/aws: SigV4 signing/verification and the AWS client (credentials,
# endpoints, query/JSON requests, XML responses, retries, rate limiting).
libkanna_common_a_SOURCES += \
	common/sigv4.h common/sigv4.c common/sigv4-verify.c \
	common/aws.h common/aws-internal.h common/aws-http.c common/aws-ini.c \
	common/aws-credentials.c common/aws-credentials-http.c common/aws-endpoint.c \
	common/aws-query.c common/aws-xml.c common/aws-retry.c

check_PROGRAMS += tests/unit/test_sigv4
TESTS += tests/unit/test_sigv4
tests_unit_test_sigv4_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sigv4_LDADD = $(LDADD) $(TEST_LIBS)
