# scheduler/: the solver library (libkanna-sched.a), the kanna-scheduler CLI
# (--simulate only this session; the daemon is not built yet), its unit and
# scenario tests, the --simulate YAML fuzz target and the benchmark.
noinst_LIBRARIES += libkanna-sched.a
libkanna_sched_a_SOURCES = \
	scheduler/model.h scheduler/model.c \
	scheduler/requirements.c scheduler/quantity.c \
	scheduler/catalog.h scheduler/catalog.c scheduler/catalog-tsv.c scheduler/catalog-fake.c \
	scheduler/cluster.h scheduler/cluster.c \
	scheduler/solver.h scheduler/solver-internal.h scheduler/solver.c \
	scheduler/shape.c scheduler/topology.c scheduler/solve.c scheduler/finish.c \
	scheduler/simulate.h scheduler/simulate-internal.h scheduler/simulate-yaml.c \
	scheduler/simulate-pod.c scheduler/simulate-load.c scheduler/simulate-output.c

bin_PROGRAMS += scheduler/kanna-scheduler
scheduler_kanna_scheduler_SOURCES = scheduler/main.c
scheduler_kanna_scheduler_LDADD = $(SCHED_LIBS)
SCHED_LIBS = libkanna-sched.a $(COMMON_LIBS) -lm

check_PROGRAMS += tests/unit/test_requirements
TESTS += tests/unit/test_requirements
tests_unit_test_requirements_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_requirements_LDADD = $(SCHED_LIBS) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_sched_catalog
TESTS += tests/unit/test_sched_catalog
tests_unit_test_sched_catalog_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_catalog_LDADD = $(SCHED_LIBS) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_sched_solver
TESTS += tests/unit/test_sched_solver
tests_unit_test_sched_solver_SOURCES = tests/unit/test_sched_solver.c tests/unit/sched-fixture.h
tests_unit_test_sched_solver_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_sched_solver_LDADD = $(SCHED_LIBS) $(TEST_LIBS)

BENCH_PROGS += bench/bench-scheduler
bench_bench_scheduler_SOURCES = bench/bench-scheduler.c
bench_bench_scheduler_LDADD = $(SCHED_LIBS)
EXTRA_DIST += bench/scheduler.sh
