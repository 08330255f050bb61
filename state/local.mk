# state/: state replication, which needs proto/: message I/O, the
# cluster-state store and the replica. A library of their own because they
# sit above libkanna-proto, which sits above libkanna-common.
noinst_LIBRARIES += libkanna-state.a
libkanna_state_a_SOURCES = \
	state/endpoints.h state/msg.h state/msg.c \
	state/state-store.h state/state-store.c \
	state/replica.h state/replica.c
STATE_LIBS = libkanna-state.a libkanna-proto.a $(COMMON_LIBS)

check_PROGRAMS += tests/unit/test_msg_dispatch
TESTS += tests/unit/test_msg_dispatch
tests_unit_test_msg_dispatch_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_msg_dispatch_LDADD = $(STATE_LIBS) $(TEST_LIBS)

check_PROGRAMS += tests/unit/test_msg_hello
TESTS += tests/unit/test_msg_hello
tests_unit_test_msg_hello_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_msg_hello_LDADD = $(STATE_LIBS) $(TEST_LIBS)
