# common/runtime: the event loop (sd-event + ZeroMQ + libcurl multi) and the
# ZeroMQ socket wrapper with the per-process tap.
libkanna_common_a_SOURCES += common/loop.h common/loop-internal.h \
	common/loop.c common/loop-zsock.c common/loop-timer.c \
	common/loop-curl.c common/sock.h common/sock.c common/worker.h common/worker.c \
	common/sock-guard.h common/sock-guard.c common/memory.h common/memory.c

check_PROGRAMS += tests/unit/test_loop tests/unit/test_sock
TESTS += tests/unit/test_loop tests/unit/test_sock
tests_unit_test_loop_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_loop_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_sock_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sock_LDADD = $(LDADD) $(TEST_LIBS)
check_PROGRAMS += tests/unit/test_sock_guard
TESTS += tests/unit/test_sock_guard
tests_unit_test_sock_guard_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sock_guard_LDADD = $(LDADD) $(TEST_LIBS)

BENCH_PROGS += bench/bench-loop
bench_bench_loop_SOURCES = bench/bench-loop.c
EXTRA_DIST += bench/loop.sh
