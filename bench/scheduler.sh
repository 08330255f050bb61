#!/bin/bash
# ./quickstart bench scheduler: the solver on Karpenter's own benchmark shape
# (scheduling_benchmark_test.go: 400 fake types, diverse pod mix) and on the
# real catalog, plus callgrind instruction counts (stable on shared CPUs).
# Needs KANNA_BUILDDIR (set by quickstart) holding a built bench/bench-scheduler.
set -euo pipefail
bin="${KANNA_BUILDDIR:?KANNA_BUILDDIR must point at a build directory}/bench/bench-scheduler"
[ -x "$bin" ] || make -C "$KANNA_BUILDDIR" -s bench/bench-scheduler

. "$(dirname "$0")/lib.sh"
# KANNA_BENCH_QUICK=1 (the pipeline's test): every row, each solve at a
# hundredth of its size, once; the figures then measure nothing.
size() { if bench_quick; then echo $(($1 / 100 > 0 ? $1 / 100 : 1)); else echo "$1"; fi; }
bench_quick && export BENCH_REPEATS=1
# Karpenter's published figures for its scheduling benchmark
# (scheduling_benchmark_test.go, makeDiversePods), per solve.
karpenter_src="kubernetes-sigs/karpenter PR 2486 (Apple M3 Pro, November 2025)"

bench_header
for n in 1 100 1000 5000 10000 20000; do
	read -r _ _ ms pps claims unsched _ < <("$bin" diverse "$(size "$n")")
	case $n in
	10000) row "karpenter diverse $n pods: solve" "$ms" ms 50 "<" 8100 "$karpenter_src" ;;
	20000) row "karpenter diverse $n pods: solve" "$ms" ms 150 "<" 20200 "$karpenter_src" ;;
	*) row "karpenter diverse $n pods: solve" "$ms" ms - "<" ;;
	esac
	row "karpenter diverse $n pods: throughput" "$pps" pods/s - ">"
	row "karpenter diverse $n pods: nodeclaims" "$claims" count - -
	row "karpenter diverse $n pods: unschedulable pods" "$unsched" pods - "<"
done
for n in 10000 20000; do
	read -r _ _ ms pps claims unsched _ < <("$bin" diverse5 "$(size "$n")")
	row "diverse5 (no hostname affinity) $n pods: solve" "$ms" ms - "<"
	row "diverse5 $n pods: nodeclaims" "$claims" count - -
	row "diverse5 $n pods: unschedulable pods" "$unsched" pods - "<"
done
for n in 20000 100000; do
	read -r _ _ ms pps claims _ _ < <("$bin" generic "$(size "$n")")
	row "karpenter generic $n pods: throughput" "$pps" pods/s 2000000 ">"
	row "karpenter generic $n pods: solve" "$ms" ms - "<"
done
for kind in pref-sat pref-unsat; do
	read -r _ _ ms pps claims unsched _ < <("$bin" "$kind" "$(size 4000)")
	row "$kind 4000 pods (preferred node affinity): solve" "$ms" ms - "<"
	row "$kind 4000 pods: throughput" "$pps" pods/s - ">"
done
for kind in real real-selector real-spread real-anti real-gpu; do
	for n in 1000 10000 50000; do
		read -r _ _ ms pps claims unsched rss < <(BENCH_REPEATS=${BENCH_REPEATS:-3} "$bin" "$kind" "$(size "$n")")
		label="$kind $n pods"
		[ "$kind" = real ] && label="real catalog $n plain pods"
		row "$label: solve" "$ms" ms - "<"
		row "$label: throughput" "$pps" pods/s - ">"
		row "$label: nodeclaims" "$claims" count - -
		row "$label: unschedulable pods" "$unsched" pods - "<"
		if [ "$n" = 50000 ]; then
			row "$label: peak RSS" "$((rss / 1024))" MB 100 "<"
		fi
	done
done

command -v valgrind >/dev/null || { echo "(valgrind missing: no instruction counts)"; exit 0; }
# Instructions of two solves minus one: exactly one solve, setup excluded.
refs() {
	BENCH_REPEATS=$3 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 |
		sed -n 's/.*refs: *//p' | tr -d ,
}
per_pod() {
	local one two n
	n=$(size "$2")
	one=$(refs "$1" "$n" 1)
	two=$(refs "$1" "$n" 2)
	echo $(( (two - one) / n ))
}
row "karpenter diverse 10000 pods (callgrind)" "$(per_pod diverse 10000)" instr/pod - "<"
row "karpenter diverse 20000 pods (callgrind)" "$(per_pod diverse 20000)" instr/pod - "<"
row "karpenter generic 100000 pods (callgrind)" "$(per_pod generic 100000)" instr/pod - "<"
row "real catalog 50000 plain pods (callgrind)" "$(per_pod real 50000)" instr/pod - "<"
