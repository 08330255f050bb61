# proto/: every message type (proto.h), the msgpack codec, its tests, fuzz
# target and benchmark.
noinst_LIBRARIES += libkanna-proto.a
libkanna_proto_a_SOURCES = proto/proto.h proto/limits.h proto/schema.h \
	proto/schema.c proto/arena.h proto/arena.c proto/scan.h proto/scan.c \
	proto/encode.c proto/decode.c proto/copy.c proto/json.c \
	proto/random.h proto/random.c
PROTO_LIBS = libkanna-proto.a

check_PROGRAMS += tests/unit/test_proto
TESTS += tests/unit/test_proto
tests_unit_test_proto_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_proto_LDADD = $(PROTO_LIBS) $(LDADD) $(TEST_LIBS)
