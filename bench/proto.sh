#!/bin/bash
# ./quickstart bench proto: proto codec and ipc transport throughput.
# Needs KANNA_BUILDDIR (set by quickstart) holding a built bench/bench-proto.
set -euo pipefail
bin="${KANNA_BUILDDIR:?KANNA_BUILDDIR must point at a build directory}/bench/bench-proto"
[ -x "$bin" ] || make -C "$KANNA_BUILDDIR" -s bench/bench-proto
exec "$bin"
