# sim/aws: kanna-sim's AWS side (EC2, SSM, STS, SQS, Pricing, IAM on loopback, SigV4-verified;
# faults and status under /_sim/). kanna-sim links libkanna-simaws.a.
noinst_LIBRARIES += libkanna-simaws.a
libkanna_simaws_a_SOURCES = \
	sim/aws.h sim/aws-internal.h sim/aws.c sim/aws-server.c sim/aws-dispatch.c \
	sim/aws-admin.c sim/aws-faults.c sim/aws-catalog.c sim/aws-images.c \
	sim/aws-params.c sim/aws-shapes.c sim/aws-xml.c sim/aws-ec2-types.c sim/aws-ec2-network.c \
	sim/aws-launch-templates.c sim/aws-fleet.c sim/aws-instances.c \
	sim/aws-run-instances.c \
	sim/aws-ssm.c sim/aws-sts.c sim/aws-sqs.c sim/aws-pricing.c sim/aws-iam.c
SIMAWS_LIBS = libkanna-simaws.a $(LDADD) -lpthread
# The botocore models of the served operations (verbatim, botocore 1.43.11;
# /work/shared/data/README.md): aws-shapes.c checks requests against them.
simawsmodelsdir = $(pkgdatadir)/aws-models
dist_simawsmodels_DATA = sim/aws-models/ec2-2016-11-15.json \
	sim/aws-models/ssm-2014-11-06.json sim/aws-models/sts-2011-06-15.json \
	sim/aws-models/sqs-2012-11-05.json

# Over real HTTP: EC2, auth, faults/admin, SSM/STS/SQS/Pricing.
SIMAWS_HTTP_TEST = tests/unit/test_sim_aws_http.h tests/unit/test_sim_aws_http.c
check_PROGRAMS += tests/unit/test_sim_aws tests/unit/test_sim_aws_auth \
	tests/unit/test_sim_aws_faults tests/unit/test_sim_aws_services
TESTS += tests/unit/test_sim_aws tests/unit/test_sim_aws_auth \
	tests/unit/test_sim_aws_faults tests/unit/test_sim_aws_services
tests_unit_test_sim_aws_SOURCES = tests/unit/test_sim_aws.c $(SIMAWS_HTTP_TEST)
tests_unit_test_sim_aws_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_aws_LDADD = $(SIMAWS_LIBS) $(TEST_LIBS)
tests_unit_test_sim_aws_auth_SOURCES = tests/unit/test_sim_aws_auth.c $(SIMAWS_HTTP_TEST)
tests_unit_test_sim_aws_auth_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_aws_auth_LDADD = $(SIMAWS_LIBS) $(TEST_LIBS)
tests_unit_test_sim_aws_faults_SOURCES = tests/unit/test_sim_aws_faults.c $(SIMAWS_HTTP_TEST)
tests_unit_test_sim_aws_faults_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_aws_faults_LDADD = $(SIMAWS_LIBS) $(TEST_LIBS)
tests_unit_test_sim_aws_services_SOURCES = tests/unit/test_sim_aws_services.c $(SIMAWS_HTTP_TEST)
tests_unit_test_sim_aws_services_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_aws_services_LDADD = $(SIMAWS_LIBS) $(TEST_LIBS)

FUZZ_PROGS += tests/fuzz/fuzz_sim_aws
tests_fuzz_fuzz_sim_aws_SOURCES = tests/fuzz/fuzz_sim_aws.c tests/fuzz/standalone.c
tests_fuzz_fuzz_sim_aws_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/sim_aws\"
tests_fuzz_fuzz_sim_aws_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_sim_aws_LDADD = $(SIMAWS_LIBS)
EXTRA_DIST += tests/fuzz/corpus/sim_aws

check_PROGRAMS += tests/unit/test_sim_aws_catalog
TESTS += tests/unit/test_sim_aws_catalog
tests_unit_test_sim_aws_catalog_SOURCES = tests/unit/test_sim_aws_catalog.c
tests_unit_test_sim_aws_catalog_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_aws_catalog_LDADD = $(SIMAWS_LIBS) $(TEST_LIBS)

# kanna's own AWS client (common/aws) against the sim: both halves of the wire.
check_PROGRAMS += tests/unit/test_sim_aws_client
TESTS += tests/unit/test_sim_aws_client
tests_unit_test_sim_aws_client_SOURCES = tests/unit/test_sim_aws_client.c
tests_unit_test_sim_aws_client_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_aws_client_LDADD = $(SIMAWS_LIBS) $(TEST_LIBS)
