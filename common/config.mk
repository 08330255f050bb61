# common/log and common/config: logging backends, the configuration table.
libkanna_common_a_SOURCES += common/log.h common/log.c \
	common/config.h common/config-internal.h common/config.c \
	common/config-value.c common/config-yaml.c common/config-help.c

check_PROGRAMS += tests/unit/test_log
TESTS += tests/unit/test_log
tests_unit_test_log_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_log_LDADD = $(LDADD) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_config
TESTS += tests/unit/test_config
tests_unit_test_config_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_config_LDADD = $(LDADD) $(TEST_LIBS)

FUZZ_PROGS += tests/fuzz/fuzz_config
tests_fuzz_fuzz_config_SOURCES = tests/fuzz/fuzz_config.c tests/fuzz/standalone.c
tests_fuzz_fuzz_config_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/config\"
tests_fuzz_fuzz_config_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_config_LDADD = $(LDADD)
EXTRA_DIST += doc/configuration.md \
	tests/fuzz/corpus/config/anchors.yaml \
	tests/fuzz/corpus/config/bad-duration.yaml \
	tests/fuzz/corpus/config/comment.yaml \
	tests/fuzz/corpus/config/duplicate.yaml \
	tests/fuzz/corpus/config/duration-fraction.txt \
	tests/fuzz/corpus/config/duration.txt \
	tests/fuzz/corpus/config/empty.yaml \
	tests/fuzz/corpus/config/invalid-utf8.yaml \
	tests/fuzz/corpus/config/malformed.yaml \
	tests/fuzz/corpus/config/nested-list.yaml \
	tests/fuzz/corpus/config/nul-and-range.yaml \
	tests/fuzz/corpus/config/top-list.yaml \
	tests/fuzz/corpus/config/two-documents.yaml \
	tests/fuzz/corpus/config/unknown-key.yaml \
	tests/fuzz/corpus/config/valid-flow.yaml \
	tests/fuzz/corpus/config/valid-full.yaml
