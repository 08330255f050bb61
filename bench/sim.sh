#!/bin/bash
# ./quickstart bench sim: kanna-sim's Kubernetes API at the scale target
# (100,000 pods, 5,000 nodes: RSS and peak RSS, LIST and 5 watch streams
# read over the HTTPS listener with libcurl).
# Needs KANNA_BUILDDIR (set by quickstart) holding a built bench/bench-sim.
set -euo pipefail
bin="${KANNA_BUILDDIR:?KANNA_BUILDDIR must point at a build directory}/bench/bench-sim"
[ -x "$bin" ] || make -C "$KANNA_BUILDDIR" -s bench/bench-sim
. "$(dirname "$0")/lib.sh"
bench_header "figure (100,000 pods, 5,000 nodes)"
"$bin" | rows_from_tsv
