# common/runtime: the event loop (sd-event + ZeroMQ + libcurl multi) and the
# ZeroMQ socket wrapper with the per-process tap.
libkanna_common_a_SOURCES += common/loop.h common/loop-internal.h \
	common/loop.c common/loop-curl.c common/sock.h common/sock.c
