# common/metrics and common/health: the Prometheus registry and the
# libmicrohttpd server for /metrics, /healthz and /readyz.
libkanna_common_a_SOURCES += common/metrics.h common/metrics-internal.h \
	common/metrics.c common/metrics-render.c \
	common/health.h common/health.c

check_PROGRAMS += tests/unit/test_metrics tests/unit/test_health
TESTS += tests/unit/test_metrics tests/unit/test_health
tests_unit_test_metrics_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_metrics_LDADD = $(LDADD) $(TEST_LIBS)
tests_unit_test_health_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_health_LDADD = $(LDADD) $(TEST_LIBS)

# ./quickstart bench metrics
BENCH_PROGS += bench/bench-metrics
bench_bench_metrics_SOURCES = bench/bench-metrics.c
EXTRA_DIST += bench/metrics.sh
EXTRA_DIST += doc/observability.md
