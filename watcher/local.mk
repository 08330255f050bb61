# watcher/: kanna-watcher — informers, state publisher, pending pod router
# (its decoders are decode/).
noinst_LIBRARIES += libkanna-watcher.a
libkanna_watcher_a_SOURCES = \
	watcher/publish.h watcher/publish.c \
	watcher/informer.h watcher/informer.c watcher/discovery.h watcher/discovery.c \
	watcher/nodepool-status.h watcher/nodepool-status.c \
	watcher/pending.h watcher/pending.c \
	watcher/config.h watcher/config.c
WATCHER_LIBS = libkanna-watcher.a libkanna-decode.a $(MODEL_LIBS) libkanna-state.a libkanna-proto.a \
	$(COMMON_LIBS)

check_PROGRAMS += tests/unit/test_watcher_decode
TESTS += tests/unit/test_watcher_decode
tests_unit_test_watcher_decode_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_watcher_decode_LDADD = $(WATCHER_LIBS) $(TEST_LIBS)
check_PROGRAMS += tests/unit/test_watcher_decode_versions
TESTS += tests/unit/test_watcher_decode_versions
tests_unit_test_watcher_decode_versions_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_watcher_decode_versions_LDADD = $(WATCHER_LIBS) $(TEST_LIBS)

FUZZ_PROGS += tests/fuzz/fuzz_k8s_decode
tests_fuzz_fuzz_k8s_decode_SOURCES = tests/fuzz/fuzz_k8s_decode.c tests/fuzz/standalone.c
tests_fuzz_fuzz_k8s_decode_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/k8s_decode\"
tests_fuzz_fuzz_k8s_decode_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_k8s_decode_LDADD = $(WATCHER_LIBS)
EXTRA_DIST += tests/fuzz/corpus/k8s_decode

bin_PROGRAMS += watcher/kanna-watcher
watcher_kanna_watcher_SOURCES = watcher/main.c
watcher_kanna_watcher_LDADD = $(WATCHER_LIBS)

check_PROGRAMS += tests/unit/test_replica tests/unit/test_hashmap
TESTS += tests/unit/test_replica tests/unit/test_hashmap
tests_unit_test_replica_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_replica_LDADD = libkanna-watcher.a libkanna-decode.a $(MODEL_LIBS) $(STATE_LIBS) $(TEST_LIBS)
# Every allocation of replica_new() failed in turn (tests/unit/alloc-fail.h).
WRAP_ALLOC_FLAGS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free \
	-Wl,--wrap=strdup,--wrap=strndup,--wrap=asprintf
check_PROGRAMS += tests/unit/test_replica_oom
TESTS += tests/unit/test_replica_oom
tests_unit_test_replica_oom_SOURCES = tests/unit/test_replica_oom.c tests/unit/alloc-fail.h
tests_unit_test_replica_oom_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_replica_oom_LDFLAGS = $(WRAP_ALLOC_FLAGS)
tests_unit_test_replica_oom_LDADD = $(STATE_LIBS) $(TEST_LIBS)
tests_unit_test_hashmap_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_hashmap_LDADD = $(LDADD) $(TEST_LIBS)

# End-to-end: kanna-sim + kanna-watcher, observed through kanna-probe.
check_PROGRAMS += tests/e2e/kanna-probe
tests_e2e_kanna_probe_SOURCES = tests/e2e/kanna-probe.c tests/e2e/probe.h \
	tests/e2e/probe-compare.c tests/e2e/probe-churn.c
tests_e2e_kanna_probe_LDADD = $(WATCHER_LIBS)
TESTS += tests/e2e/watcher.sh
# A pod is announced on its Unschedulable event, not at the next period.
TESTS += tests/e2e/watcher-announce.sh
EXTRA_DIST += tests/e2e/watcher-announce.sh
# NodePool/Provisioner status of every version; older kubelet settings.
TESTS += tests/e2e/nodepool-status.sh
EXTRA_DIST += tests/e2e/nodepool-status.sh
# NodeOverlays: their status, and an extended resource one adds launches.
TESTS += tests/e2e/nodeoverlay.sh
EXTRA_DIST += tests/e2e/nodeoverlay.sh
EXTRA_DIST += tests/e2e/watcher.sh tests/e2e/lib.sh

# ./quickstart bench watcher
BENCH_PROGS += bench/bench-watcher
bench_bench_watcher_SOURCES = bench/bench-watcher.c
bench_bench_watcher_LDADD = $(WATCHER_LIBS)
EXTRA_DIST += bench/watcher.sh
dist_man_MANS += watcher/kanna-watcher.1

check_PROGRAMS += tests/unit/test_watcher_config
TESTS += tests/unit/test_watcher_config
tests_unit_test_watcher_config_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_watcher_config_LDADD = $(WATCHER_LIBS) $(TEST_LIBS)

# Informers and discovery against kanna-sim's API server in the test process.
check_PROGRAMS += tests/unit/test_watcher_informer
TESTS += tests/unit/test_watcher_informer
tests_unit_test_watcher_informer_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_watcher_informer_LDADD = libkanna-watcher.a libkanna-decode.a libkanna-simk8s.a \
	$(MODEL_LIBS) $(STATE_LIBS) -lpthread $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_watcher_pending
TESTS += tests/unit/test_watcher_pending
tests_unit_test_watcher_pending_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_watcher_pending_LDADD = $(WATCHER_LIBS) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_watcher_nodepool_status
TESTS += tests/unit/test_watcher_nodepool_status
tests_unit_test_watcher_nodepool_status_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_watcher_nodepool_status_LDADD = $(WATCHER_LIBS) $(TEST_LIBS)
