#!/bin/bash
# ./quickstart bench scheduler: the solver on Karpenter's own benchmark shape
# (scheduling_benchmark_test.go: 400 fake types, diverse pod mix) and on the
# real catalog, plus callgrind instruction counts (stable on shared CPUs).
# Needs KANNA_BUILDDIR (set by quickstart) holding a built bench/bench-scheduler.
set -euo pipefail
bin="${KANNA_BUILDDIR:?KANNA_BUILDDIR must point at a build directory}/bench/bench-scheduler"
[ -x "$bin" ] || make -C "$KANNA_BUILDDIR" -s bench/bench-scheduler

row() { # figure value unit target ratio
	printf '%-46s %14s  %-10s %12s %7s\n' "$1" "$2" "$3" "$4" "$5"
}
ratio() { # value target: value/target to 2 decimals
	awk -v v="$1" -v t="$2" 'BEGIN { printf "%.2f", v / t }'
}

row "figure" "value" "unit" "target" "ratio"
for n in 1 100 1000 5000 10000 20000; do
	read -r _ _ ms pps claims unsched _ < <("$bin" diverse "$n")
	target=- r=-
	case $n in 10000) target=50; r=$(ratio "$ms" 50) ;; 20000) target=150; r=$(ratio "$ms" 150) ;; esac
	row "karpenter diverse $n pods: solve" "$ms" "ms" "$target" "$r"
	row "karpenter diverse $n pods: throughput" "$pps" "pods/s" - -
	row "karpenter diverse $n pods: nodeclaims" "$claims ($unsched unsched.)" "count" - -
done
for n in 10000 20000; do
	read -r _ _ ms pps claims unsched _ < <("$bin" diverse5 "$n")
	row "diverse5 (no hostname affinity) $n pods: solve" "$ms" "ms" - -
	row "diverse5 $n pods: nodeclaims" "$claims ($unsched unsched.)" "count" - -
done
for n in 20000 100000; do
	read -r _ _ ms pps claims _ _ < <("$bin" generic "$n")
	row "karpenter generic $n pods: throughput" "$pps" "pods/s" 2000000 "$(ratio "$pps" 2000000)"
	row "karpenter generic $n pods: solve" "$ms" "ms" - -
done
for kind in pref-sat pref-unsat; do
	read -r _ _ ms pps claims unsched _ < <("$bin" "$kind" 4000)
	row "$kind 4000 pods (preferred node affinity): solve" "$ms" "ms" - -
	row "$kind 4000 pods: throughput" "$pps" "pods/s" - -
done
for kind in real real-selector real-spread real-anti real-gpu; do
	for n in 1000 10000 50000; do
		read -r _ _ ms pps claims unsched rss < <(BENCH_REPEATS=3 "$bin" "$kind" "$n")
		label="$kind $n pods"
		[ "$kind" = real ] && label="real catalog $n plain pods"
		row "$label: solve" "$ms" "ms" - -
		row "$label: throughput" "$pps" "pods/s" - -
		row "$label: nodeclaims" "$claims ($unsched unsched.)" "count" - -
		if [ "$n" = 50000 ]; then
			row "$label: peak RSS" "$((rss / 1024))" "MB" 100 "$(ratio "$((rss / 1024))" 100)"
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
	local one two
	one=$(refs "$1" "$2" 1)
	two=$(refs "$1" "$2" 2)
	echo $(( (two - one) / $2 ))
}
row "karpenter diverse 10000 pods (callgrind)" "$(per_pod diverse 10000)" "instr/pod" - -
row "karpenter diverse 20000 pods (callgrind)" "$(per_pod diverse 20000)" "instr/pod" - -
row "karpenter generic 100000 pods (callgrind)" "$(per_pod generic 100000)" "instr/pod" - -
row "real catalog 50000 plain pods (callgrind)" "$(per_pod real 50000)" "instr/pod" - -
