#!/bin/bash
# ./quickstart bench proto: proto codec and ipc transport throughput, plus
# instructions per round trip under callgrind (stable on a shared machine).
# Needs KANNA_BUILDDIR (set by quickstart) holding a built bench/bench-proto.
set -euo pipefail
bin="${KANNA_BUILDDIR:?KANNA_BUILDDIR must point at a build directory}/bench/bench-proto"
[ -x "$bin" ] || make -C "$KANNA_BUILDDIR" -s bench/bench-proto
. "$(dirname "$0")/lib.sh"
bench_header
"$bin" | rows_from_tsv

command -v valgrind >/dev/null || { echo "(valgrind missing: no instruction counts)"; exit 0; }
# Instructions of N round trips minus those of 0: the per-message cost.
refs() {
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 |
		sed -n 's/.*refs: *//p' | tr -d ,
}
per_msg() {
	local base n=$2
	bench_quick && n=$((n / 100))
	base=$(refs "$1" 0)
	echo $(( ($(refs "$1" "$n") - base) / n ))
}
row "pending-pod encode+decode (callgrind)" "$(per_msg count-pod 20000)" instr/msg - "<"
row "launch plan encode+decode (callgrind)" "$(per_msg count-plan 200)" instr/msg - "<"
