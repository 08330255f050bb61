# tools/: kanna-tap (the message-flow viewer) and its library (formatter, filters, readable lines, summary, configuration).
noinst_LIBRARIES += libkanna-tap.a
libkanna_tap_a_SOURCES = tools/tap-format.h tools/tap-format.c tools/tap-filter.h \
	tools/tap-filter.c tools/tap-text.h tools/tap-text.c tools/tap-summary.h \
	tools/tap-summary.c tools/tap-config.h tools/tap-config.c

bin_PROGRAMS += tools/kanna-tap
tools_kanna_tap_SOURCES = tools/kanna-tap.c
tools_kanna_tap_LDADD = libkanna-tap.a $(PROTO_LIBS) $(LDADD)
dist_man_MANS += tools/kanna-tap.1

# test_tap also runs the tools/kanna-tap binary (built by "all" before "check").
check_PROGRAMS += tests/unit/test_tap
TESTS += tests/unit/test_tap
tests_unit_test_tap_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_tap_LDADD = libkanna-tap.a $(PROTO_LIBS) $(LDADD) $(TEST_LIBS)

# Filters, readable lines and summary arithmetic; the configuration table and file.
check_PROGRAMS += tests/unit/test_tap_view
TESTS += tests/unit/test_tap_view
tests_unit_test_tap_view_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_tap_view_LDADD = libkanna-tap.a $(PROTO_LIBS) $(LDADD) $(TEST_LIBS)
check_PROGRAMS += tests/unit/test_tap_config
TESTS += tests/unit/test_tap_config
tests_unit_test_tap_config_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_tap_config_LDADD = libkanna-tap.a $(PROTO_LIBS) $(LDADD) $(TEST_LIBS)

# kanna-tap on live daemons: --nodepool with --output text, and --summary.
TESTS += tests/e2e/tap.sh
EXTRA_DIST += tests/e2e/tap.sh

FUZZ_PROGS += tests/fuzz/fuzz_tap
tests_fuzz_fuzz_tap_SOURCES = tests/fuzz/fuzz_tap.c tests/fuzz/standalone.c
tests_fuzz_fuzz_tap_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/tap\"
tests_fuzz_fuzz_tap_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_tap_LDADD = libkanna-tap.a $(PROTO_LIBS) $(LDADD)
EXTRA_DIST += tests/fuzz/corpus/tap
