#!/bin/bash
# ./quickstart bench loop: PUSH->PULL between two processes through the
# runtime (sock_send -> sd-event drain -> sock_recv), tap idle and attached.
# Needs KANNA_BUILDDIR (set by quickstart) holding a built bench/bench-loop.
set -euo pipefail
bin="${KANNA_BUILDDIR:?KANNA_BUILDDIR must point at a build directory}/bench/bench-loop"
[ -x "$bin" ] || make -C "$KANNA_BUILDDIR" -s bench/bench-loop
. "$(dirname "$0")/lib.sh"
bench_header
"$bin" | rows_from_tsv
