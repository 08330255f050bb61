# init/: kanna-init, PID 1 of a kanna container (issue 20): runs the daemons,
# reaps zombies, restarts a crashed daemon with backoff, forwards SIGTERM and
# SIGINT, kills what is left after the grace period.
# libkanna-init.a holds all but main.c, so the pieces are unit-tested alone.
noinst_LIBRARIES += libkanna-init.a
libkanna_init_a_SOURCES = init/init.h init/config.c init/backoff.c init/supervise.c
INIT_LIBS = libkanna-init.a
bin_PROGRAMS += init/kanna-init
init_kanna_init_SOURCES = init/main.c
init_kanna_init_LDADD = $(INIT_LIBS) $(LDADD)
dist_man_MANS += init/kanna-init.1

# The restart backoff and give-up arithmetic, the configuration table, the
# command line split and the daemon names.
check_PROGRAMS += tests/unit/test_init_backoff tests/unit/test_init_config
TESTS += tests/unit/test_init_backoff tests/unit/test_init_config
tests_unit_test_init_backoff_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_init_backoff_LDADD = $(INIT_LIBS) $(LDADD) $(TEST_LIBS)
tests_unit_test_init_config_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_init_config_LDADD = $(INIT_LIBS) $(LDADD) $(TEST_LIBS)

# End-to-end: fake daemons (reaping, forwarding, SIGKILL after the grace
# period, restart backoff, give-up exit status, probes), then the real
# daemons against kanna-sim.
TESTS += tests/e2e/kanna-init.sh
EXTRA_DIST += tests/e2e/kanna-init.sh
