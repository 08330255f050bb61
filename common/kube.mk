# common/kube*: the Kubernetes client side shared by every daemon:
# kubeconfig / in-cluster configuration, YAML as JSON.
libkanna_common_a_SOURCES += \
	common/yaml-json.h common/yaml-json.c \
	common/kubeconfig.h common/kubeconfig.c common/kubeconfig-exec.c \
	common/ratelimit.h common/ratelimit.c \
	common/kube-client.h common/kube-client-internal.h common/kube-client.c \
	common/kube-watch.c common/json-arena.h common/json-arena.c \
	common/kube-events.h common/kube-events.c \
	common/arena.h common/arena.c common/quantity.h common/quantity.c \
	common/hashmap.h common/hashmap.c \
	common/lease.h common/lease.c common/kube-settings.h \
	common/daemon.h common/daemon.c common/clock.h common/hash.h \
	common/base64.h common/base64.c common/read-file.h common/read-file.c

check_PROGRAMS += tests/unit/test_yaml_json tests/unit/test_kubeconfig tests/unit/test_kubeconfig_exec \
	tests/unit/test_ratelimit tests/unit/test_kube_client tests/unit/test_kube_events \
	tests/unit/test_json_arena
TESTS += tests/unit/test_yaml_json tests/unit/test_kubeconfig tests/unit/test_kubeconfig_exec \
	tests/unit/test_ratelimit tests/unit/test_kube_client tests/unit/test_kube_events \
	tests/unit/test_json_arena
tests_unit_test_json_arena_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_json_arena_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_kube_events_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_kube_events_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_ratelimit_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_ratelimit_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_kube_client_CFLAGS = $(TEST_CFLAGS)
# kanna-sim's certificate generator gives the client a TLS server to trust or not.
tests_unit_test_kube_client_LDADD = libkanna-simk8s.a $(LDADD) $(TEST_LIBS)
tests_unit_test_yaml_json_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_yaml_json_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_kubeconfig_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_kubeconfig_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_kubeconfig_exec_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_kubeconfig_exec_LDADD = $(LDADD) $(TEST_LIBS) -lpthread

FUZZ_PROGS += tests/fuzz/fuzz_yaml_json
tests_fuzz_fuzz_yaml_json_SOURCES = tests/fuzz/fuzz_yaml_json.c tests/fuzz/standalone.c
tests_fuzz_fuzz_yaml_json_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/yaml_json\"
tests_fuzz_fuzz_yaml_json_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/corpus/yaml_json

check_PROGRAMS += tests/unit/test_lease
TESTS += tests/unit/test_lease
tests_unit_test_lease_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_lease_LDADD = $(LDADD) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_common_bytes
TESTS += tests/unit/test_common_bytes
tests_unit_test_common_bytes_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_common_bytes_LDADD = $(LDADD) $(TEST_LIBS)
