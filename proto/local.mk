# proto/: every message type (proto.h), the msgpack codec, its tests, fuzz
# target and benchmark.
noinst_LIBRARIES += libkanna-proto.a
libkanna_proto_a_SOURCES = proto/proto.h proto/limits.h proto/schema.h proto/karpenter.h \
	proto/schema.c proto/unpack.h proto/unpack.c \
	proto/encode.c proto/decode.c proto/copy.c proto/share.c proto/json.c \
	proto/random.h proto/random.c proto/doc.c \
	proto/hello.c
# Every function starts on a 64-byte line: where the linker happened to put
# the codec's hot functions (the unpacker's loop, the struct walks) moved the
# pending-pod round trip by up to 15 % (bench/proto.sh); aligned, it does not.
libkanna_proto_a_CFLAGS = $(AM_CFLAGS) -falign-functions=64
PROTO_LIBS = libkanna-proto.a

check_PROGRAMS += tests/unit/test_proto
TESTS += tests/unit/test_proto
tests_unit_test_proto_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_proto_LDADD = $(PROTO_LIBS) $(LDADD) $(TEST_LIBS)

# proto-gen: prints README's field tables, writes the fuzz seed corpus.
noinst_PROGRAMS += proto/proto-gen
proto_proto_gen_SOURCES = proto/proto-gen.c
proto_proto_gen_LDADD = $(PROTO_LIBS) $(LDADD)

FUZZ_PROGS += tests/fuzz/fuzz_proto
tests_fuzz_fuzz_proto_SOURCES = tests/fuzz/fuzz_proto.c tests/fuzz/standalone.c
tests_fuzz_fuzz_proto_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS=\"$(srcdir)/tests/fuzz/corpus/proto\"
tests_fuzz_fuzz_proto_LDFLAGS = $(FUZZ_LDFLAGS)
tests_fuzz_fuzz_proto_LDADD = $(PROTO_LIBS) $(LDADD)
EXTRA_DIST += proto/README.md tests/fuzz/corpus/proto

BENCH_PROGS += bench/bench-proto
bench_bench_proto_SOURCES = bench/bench-proto.c
bench_bench_proto_LDADD = $(PROTO_LIBS) $(LDADD)
EXTRA_DIST += bench/proto.sh
