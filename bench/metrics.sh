#!/bin/bash
# ./quickstart bench metrics: metrics update cost, scrape time, probes under load.
# Needs KANNA_BUILDDIR (set by quickstart) holding a built bench/bench-metrics.
set -euo pipefail
bin="${KANNA_BUILDDIR:?KANNA_BUILDDIR must point at a build directory}/bench/bench-metrics"
[ -x "$bin" ] || make -C "$KANNA_BUILDDIR" -s bench/bench-metrics
. "$(dirname "$0")/lib.sh"
bench_header
"$bin" | rows_from_tsv
