# common/: the runtime every daemon shares. Each area appends to
# libkanna_common_a_SOURCES in its own fragment so that work in parallel
# does not collide.
noinst_LIBRARIES += libkanna-common.a
libkanna_common_a_SOURCES = common/util.h

include common/config.mk
include common/runtime.mk
include common/metrics.mk
include common/aws.mk
include common/kube.mk
