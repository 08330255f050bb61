# shellcheck shell=sh
# bench/lib.sh: the one row format of every benchmark script (sourced).
# row FIGURE VALUE UNIT TARGET DIRECTION [KARPENTER_VALUE KARPENTER_SOURCE]
#   DIRECTION: "<" lower is better (times, memory, cost), ">" higher is
#   better (throughput), "-" neither (a count, a size: no ratio).
#   ratio: how we stand against the target, > 1 is better than the target:
#   target/value when lower is better, value/target when higher is better.
#   Karpenter's figure (same unit as ours) gets the same kind of ratio,
#   > 1 is better than Karpenter: Karpenter/ours when lower is better.
#   VALUE, TARGET: a number, or "-" when there is none.
# Each row prints one table line or, when KANNA_BENCH_ROWS names a file
# (./quickstart bench), appends it there as a JSON line instead, which
# bench/collect.py gathers into bench/results.json and prints in one table.
# rows_from_tsv turns a bench program's rows (tab-separated FIGURE VALUE
# UNIT TARGET DIRECTION) into rows.

bench_quick() { [ "${KANNA_BENCH_QUICK:-0}" = 1 ]; }

bench_header() { # [TITLE]: the table's header
	[ -z "${KANNA_BENCH_ROWS:-}" ] || { [ -z "${1:-}" ] || echo "$1" | sed 's/^figure /  /'; return 0; }
	printf '%-58s %14s %-10s %10s %8s %12s %8s\n' "${1:-figure}" value unit target ratio karpenter "k-ratio"
}

row() {
	awk -v f="$1" -v v="$2" -v u="$3" -v t="$4" -v d="$5" -v kv="${6:--}" -v ks="${7:-}" \
		-v out="${KANNA_BENCH_ROWS:-}" '
	function num(s) { return s ~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/ }
	function ratio(v, t) { # v measured against t, > 1 better
		if (!num(v) || !num(t) || d == "-") return "-"
		if (d == "<") return v + 0 == 0 ? "-" : fmt(t / v)
		return t + 0 == 0 ? "-" : fmt(v / t)
	}
	function fmt(x) { return sprintf(x >= 100 ? "%.0f" : x >= 10 ? "%.1f" : "%.2f", x) }
	function js(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, " ", s); return "\"" s "\"" }
	function jn(s) { return num(s) ? s + 0 : "null" }
	BEGIN {
		if (d != "<" && d != ">" && d != "-") { print "row: direction must be <, > or -: " f > "/dev/stderr"; exit 2 }
		r = ratio(v, t)
		kr = ratio(v, kv)
		if (out == "") {
			printf "%-58s %14s %-10s %10s %8s %12s %8s\n", f, v, u, t, r, kv, kr
			exit 0
		}
		dir = d == "<" ? "lower" : d == ">" ? "higher" : "none"
		name = f; sub(/^ +/, "", name)
		k = "null"
		if (num(kv)) k = sprintf("{\"value\": %s, \"unit\": %s, \"source\": %s, \"ratio\": %s}", kv + 0, js(u), js(ks), jn(kr))
		printf "{\"name\": %s, \"value\": %s, \"unit\": %s, \"target\": %s, \"direction\": %s, \"ratio\": %s, \"karpenter\": %s}\n",
			js(name), jn(v), js(u), jn(t), js(dir), jn(r), k >> out
	}'
}

rows_from_tsv() { # stdin: FIGURE<TAB>VALUE<TAB>UNIT<TAB>TARGET<TAB>DIRECTION lines
	local f v u t d tab
	tab=$(printf '\t')
	while IFS=$tab read -r f v u t d; do
		row "$f" "$v" "$u" "$t" "$d"
	done
}
