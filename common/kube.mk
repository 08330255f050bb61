# common/kube*: the Kubernetes client side shared by every daemon:
# kubeconfig / in-cluster configuration, YAML as JSON.
libkanna_common_a_SOURCES += \
	common/yaml-json.h common/yaml-json.c \
	common/kubeconfig.h common/kubeconfig.c common/kubeconfig-exec.c

check_PROGRAMS += tests/unit/test_yaml_json tests/unit/test_kubeconfig
TESTS += tests/unit/test_yaml_json tests/unit/test_kubeconfig
tests_unit_test_yaml_json_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_yaml_json_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_kubeconfig_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_kubeconfig_LDADD = $(LDADD) $(TEST_LIBS)

FUZZ_PROGS += tests/fuzz/fuzz_yaml_json
tests_fuzz_fuzz_yaml_json_SOURCES = tests/fuzz/fuzz_yaml_json.c tests/fuzz/standalone.c
tests_fuzz_fuzz_yaml_json_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/yaml_json\"
tests_fuzz_fuzz_yaml_json_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/corpus/yaml_json
