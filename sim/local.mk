# sim/: kanna-sim, the embedded Kubernetes API (this fragment) and AWS
# (sim/aws.mk) simulator. libkanna-simk8s.a holds the API server so that
# unit tests and the fuzz target link the same code as the program.
noinst_LIBRARIES += libkanna-simk8s.a
libkanna_simk8s_a_SOURCES = \
	sim/k8s-selector.h sim/k8s-selector.c \
	sim/k8s-patch.h sim/k8s-patch.c \
	sim/k8s-resource.h sim/k8s-resource.c \
	sim/k8s-store.h sim/k8s-store-internal.h sim/k8s-store.c \
	sim/k8s-status.c sim/k8s-options.c sim/k8s-write.c sim/k8s-validate.c sim/k8s-schema.h sim/k8s-schema.c sim/k8s-schema-validate.c sim/k8s-cel-hook.c sim/k8s-custom.c sim/k8s-rbac.c sim/k8s-delete.c sim/k8s-list.c \
	sim/k8s-watch.h sim/k8s-watch.c \
	sim/k8s-api.h sim/k8s-api.c sim/k8s-route.c sim/k8s-discovery.c \
	sim/k8s-fields.c sim/k8s-protobuf.h sim/k8s-protobuf.c sim/k8s-protobuf-schema.c sim/k8s-subresource.c sim/k8s-openapi.c sim/k8s-printers.h sim/k8s-printers.c sim/k8s-table.c sim/k8s-faults.c sim/k8s-requests.c sim/k8s-admin.c sim/k8s-server.h sim/k8s-server.c \
	sim/tls.h sim/tls.c \
	sim/k8s-controllers.h sim/k8s-controllers.c sim/k8s-statefulset.c sim/k8s-daemonset.c sim/k8s-disruption.c \
	sim/k8s-podgc.c \
	sim/k8s-scheduler.c sim/k8s-volumes.c sim/k8s-podaffinity.c sim/k8s-podspread.c \
	sim/k8s-recorder.c sim/k8s-timeline.c \
	sim/cel.h sim/cel-internal.h sim/cel-lex.c sim/cel-parse.c sim/cel-regex.c sim/cel-eval.c sim/cel-schema.c
SIM_K8S_LIBS = libkanna-simk8s.a $(LDADD) -lpthread

check_PROGRAMS += tests/unit/test_sim_selector tests/unit/test_sim_patch \
	tests/unit/test_sim_store tests/unit/test_sim_controllers \
	tests/unit/test_sim_kubelet tests/unit/test_sim_events tests/unit/test_sim_api \
	tests/unit/test_sim_protobuf tests/unit/test_sim_dryrun tests/unit/test_sim_cel tests/unit/test_sim_schema
TESTS += tests/unit/test_sim_selector tests/unit/test_sim_patch \
	tests/unit/test_sim_store tests/unit/test_sim_controllers \
	tests/unit/test_sim_kubelet tests/unit/test_sim_events tests/unit/test_sim_api \
	tests/unit/test_sim_protobuf tests/unit/test_sim_dryrun tests/unit/test_sim_cel tests/unit/test_sim_schema
tests_unit_test_sim_cel_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_cel_LDADD = $(SIM_K8S_LIBS) $(TEST_LIBS)
tests_unit_test_sim_schema_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_schema_LDADD = $(SIM_K8S_LIBS) $(TEST_LIBS)
tests_unit_test_sim_dryrun_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_dryrun_LDADD = $(SIM_K8S_LIBS) $(TEST_LIBS)
tests_unit_test_sim_protobuf_SOURCES = tests/unit/test_sim_protobuf.c tests/unit/sim-protobuf-fixtures.h
tests_unit_test_sim_protobuf_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_protobuf_LDADD = $(SIM_K8S_LIBS) $(TEST_LIBS)
tests_unit_test_sim_api_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_api_LDADD = $(SIM_K8S_LIBS) $(TEST_LIBS)
tests_unit_test_sim_events_SOURCES = tests/unit/test_sim_events.c sim/kubelet.h sim/kubelet.c
tests_unit_test_sim_events_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_events_LDADD = libkanna-simk8s.a $(SIMAWS_LIBS) $(TEST_LIBS)
tests_unit_test_sim_kubelet_SOURCES = tests/unit/test_sim_kubelet.c sim/kubelet.h sim/kubelet.c
tests_unit_test_sim_kubelet_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_kubelet_LDADD = libkanna-simk8s.a $(SIMAWS_LIBS) $(TEST_LIBS)
tests_unit_test_sim_controllers_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_controllers_LDADD = $(SIM_K8S_LIBS) $(TEST_LIBS)
tests_unit_test_sim_selector_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_selector_LDADD = $(SIM_K8S_LIBS) $(TEST_LIBS)
tests_unit_test_sim_patch_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_patch_LDADD = $(SIM_K8S_LIBS) $(TEST_LIBS)
tests_unit_test_sim_store_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sim_store_LDADD = $(SIM_K8S_LIBS) $(TEST_LIBS)

bin_PROGRAMS += sim/kanna-sim
sim_kanna_sim_SOURCES = sim/main.c sim/kubelet.h sim/kubelet.c
sim_kanna_sim_LDADD = libkanna-simk8s.a $(SIMAWS_LIBS)
dist_man_MANS += sim/kanna-sim.1

# End-to-end: real kubectl and curl against kanna-sim (skips without kubectl).
TESTS += tests/e2e/sim-kubectl.sh
EXTRA_DIST += tests/e2e/sim-kubectl.sh
# A second client: Kubernetes' official Python client.
TESTS += tests/e2e/sim-python.sh
EXTRA_DIST += tests/e2e/sim-python.sh tests/e2e/sim-python.py
# Server-side dry runs from kubectl and the Python client, one sim.
TESTS += tests/e2e/sim-dryrun.sh
EXTRA_DIST += tests/e2e/sim-dryrun.sh
# Custom resources validated, defaulted and pruned with their CRD's schema.
TESTS += tests/e2e/sim-schema.sh
EXTRA_DIST += tests/e2e/sim-schema.sh

# ./quickstart bench sim: the issue's scale target (100k pods, 5k nodes).
BENCH_PROGS += bench/bench-sim
bench_bench_sim_SOURCES = bench/bench-sim.c
bench_bench_sim_LDADD = $(SIM_K8S_LIBS)
EXTRA_DIST += bench/sim.sh

FUZZ_PROGS += tests/fuzz/fuzz_sim_request
tests_fuzz_fuzz_sim_request_SOURCES = tests/fuzz/fuzz_sim_request.c tests/fuzz/standalone.c
tests_fuzz_fuzz_sim_request_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/sim_request\"
tests_fuzz_fuzz_sim_request_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_sim_request_LDADD = $(SIM_K8S_LIBS)
EXTRA_DIST += tests/fuzz/corpus/sim_request

FUZZ_PROGS += tests/fuzz/fuzz_sim_protobuf
tests_fuzz_fuzz_sim_protobuf_SOURCES = tests/fuzz/fuzz_sim_protobuf.c tests/fuzz/standalone.c
tests_fuzz_fuzz_sim_protobuf_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/sim_protobuf\"
tests_fuzz_fuzz_sim_protobuf_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_sim_protobuf_LDADD = $(SIM_K8S_LIBS)
EXTRA_DIST += tests/fuzz/corpus/sim_protobuf

include sim/aws.mk

FUZZ_PROGS += tests/fuzz/fuzz_sim_cel
tests_fuzz_fuzz_sim_cel_SOURCES = tests/fuzz/fuzz_sim_cel.c tests/fuzz/standalone.c
tests_fuzz_fuzz_sim_cel_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/sim_cel\"
tests_fuzz_fuzz_sim_cel_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_sim_cel_LDADD = $(SIM_K8S_LIBS)
EXTRA_DIST += tests/fuzz/corpus/sim_cel
