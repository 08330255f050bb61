# common/log and common/config: logging backends, the configuration table.
libkanna_common_a_SOURCES += common/log.h common/log.c

check_PROGRAMS += tests/unit/test_log
TESTS += tests/unit/test_log
tests_unit_test_log_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_log_LDADD = $(LDADD) $(TEST_LIBS)
