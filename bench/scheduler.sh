#!/bin/bash
# ./quickstart bench scheduler: the solver on Karpenter's own benchmark
# (scheduling_benchmark_test.go: 400 fake types, makeDiversePods at each of
# its sizes, its two preference benchmarks), on our six-way mix, on the
# real catalog, plus callgrind instruction counts (stable on shared CPUs).
# A shape on the fake catalog that leaves a pod unscheduled fails the run,
# as Karpenter's benchmark does (bench-scheduler exits 1).
# Needs KANNA_BUILDDIR (set by quickstart) holding a built bench/bench-scheduler.
set -euo pipefail
bin="${KANNA_BUILDDIR:?KANNA_BUILDDIR must point at a build directory}/bench/bench-scheduler"
[ -x "$bin" ] || make -C "$KANNA_BUILDDIR" -s bench/bench-scheduler

. "$(dirname "$0")/lib.sh"
# KANNA_BENCH_QUICK=1 (the pipeline's test): every row, each solve at a
# hundredth of its size, once; the figures then measure nothing.
size() { if bench_quick; then echo $(($1 / 100 > 0 ? $1 / 100 : 1)); else echo "$1"; fi; }
bench_quick && export BENCH_REPEATS=1
# solve SHAPE PODS: bench-scheduler's line into $line; a failed run (a pod
# left unscheduled on the fake catalog) stops the bench here.
solve() {
	line=$("$bin" "$1" "$2") || { echo "bench-scheduler $1 $2 failed" >&2; exit 1; }
}
# Karpenter's published figures for its scheduling benchmark
# (scheduling_benchmark_test.go, makeDiversePods), per solve.
karpenter_src="kubernetes-sigs/karpenter PR 2486 (Apple M3 Pro, November 2025)"

bench_header
# BenchmarkScheduling1 ... BenchmarkScheduling20000.
for n in 1 50 100 500 1000 2000 5000 10000 20000; do
	solve karpenter "$(size "$n")"
	read -r _ _ ms pps claims unsched _ <<<"$line"
	case $n in
	10000) row "karpenter $n pods: solve" "$ms" ms 50 "<" 8100 "$karpenter_src" ;;
	20000) row "karpenter $n pods: solve" "$ms" ms 150 "<" 20200 "$karpenter_src" ;;
	*) row "karpenter $n pods: solve" "$ms" ms - "<" ;;
	esac
	row "karpenter $n pods: throughput" "$pps" pods/s - ">"
	row "karpenter $n pods: nodeclaims" "$claims" count - -
	row "karpenter $n pods: unschedulable pods" "$unsched" pods - "<"
done
# BenchmarkRespectPreferences, BenchmarkIgnorePreferences.
for policy in Respect Ignore; do
	shape=preference-$(echo "$policy" | tr '[:upper:]' '[:lower:]')
	solve "$shape" "$(size 4000)"
	read -r _ _ ms pps claims unsched _ <<<"$line"
	row "karpenter preferences $policy 4000 pods: solve" "$ms" ms - "<"
	row "karpenter preferences $policy 4000 pods: throughput" "$pps" pods/s - ">"
	row "karpenter preferences $policy 4000 pods: nodeclaims" "$claims" count - -
	row "karpenter preferences $policy 4000 pods: unschedulable pods" "$unsched" pods - "<"
done
# Our six-way mix: Karpenter's five kinds plus hostname self-affinity.
for n in 1 100 1000 5000 10000 20000; do
	solve diverse "$(size "$n")"
	read -r _ _ ms pps claims unsched _ <<<"$line"
	row "six-way diverse $n pods: solve" "$ms" ms - "<"
	row "six-way diverse $n pods: throughput" "$pps" pods/s - ">"
	row "six-way diverse $n pods: nodeclaims" "$claims" count - -
	row "six-way diverse $n pods: unschedulable pods" "$unsched" pods - "<"
done
for n in 20000 100000; do
	solve generic "$(size "$n")"
	read -r _ _ ms pps claims _ _ <<<"$line"
	row "karpenter generic $n pods: throughput" "$pps" pods/s 2000000 ">"
	row "karpenter generic $n pods: solve" "$ms" ms - "<"
done
for kind in pref-sat pref-unsat; do
	solve "$kind" "$(size 4000)"
	read -r _ _ ms pps claims unsched _ <<<"$line"
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
# Instructions of one solve (sched_solve and below: setup excluded).
per_pod() {
	local n ir
	n=$(size "$2")
	ir=$(BENCH_REPEATS=1 valgrind --tool=callgrind --toggle-collect=sched_solve \
		--callgrind-out-file=/dev/null "$bin" "$1" "$n" 2>&1 | sed -n 's/.*refs: *//p' | tr -d ,)
	echo $((ir / n))
}
row "karpenter 10000 pods (callgrind)" "$(per_pod karpenter 10000)" instr/pod - "<"
row "karpenter 20000 pods (callgrind)" "$(per_pod karpenter 20000)" instr/pod - "<"
row "six-way diverse 20000 pods (callgrind)" "$(per_pod diverse 20000)" instr/pod - "<"
row "karpenter generic 100000 pods (callgrind)" "$(per_pod generic 100000)" instr/pod - "<"
row "real catalog 50000 plain pods (callgrind)" "$(per_pod real 50000)" instr/pod - "<"
