#!/bin/bash
# The benchmark pipeline of ./quickstart bench (issue 22), cheaply: the
# fast benches (proto, loop, metrics, scheduler) in quick mode
# (KANNA_BENCH_QUICK=1: same rows, shrunk sizes) write their rows;
# bench/collect.py gathers them into a results.json that must pass
# bench/results.schema.json and hold every figure bench/figures.txt lists,
# each ratio as bench/lib.sh defines it; a second run of one bench replaces
# only its entry; a figure taken away, or a value lost, fails the check.
set -euo pipefail
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# Debian's python3, where ./quickstart deps installs python3-jsonschema.
py=/usr/bin/python3
"$py" -c 'import jsonschema' 2>/dev/null || { echo "SKIP: no python3-jsonschema (./quickstart deps)"; exit 77; }
# Benchmarks of a sanitized build measure nothing, and valgrind cannot run it:
# the gcc build checks the pipeline.
if grep -q __asan_init "$BUILDDIR/bench/bench-proto" 2>/dev/null; then
	echo "SKIP: a sanitized build (the gcc build runs this test)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
benches="proto loop metrics scheduler"

run_bench() { # NAME ROWS_DIR
	local start rc=0
	start=$(date +%s.%N)
	KANNA_BENCH_QUICK=1 KANNA_BUILDDIR="$BUILDDIR" KANNA_SRCDIR="$SRCDIR" KANNA_BENCH_ROWS="$2/$1.jsonl" \
		bash "$SRCDIR/bench/$1.sh" >"$tmp/$1.out" 2>&1 || rc=$?
	awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", e - s }' >"$2/$1.seconds"
	echo "$rc" >"$2/$1.rc"
	[ "$rc" = 0 ] || fail "bench $1 exited $rc: $(tail -5 "$tmp/$1.out")"
}

mkdir "$tmp/rows"
for b in $benches; do run_bench "$b" "$tmp/rows"; done
"$py" "$SRCDIR/bench/collect.py" "$tmp/rows" "$tmp/results.json" --quick >"$tmp/table.txt" 2>&1 ||
	fail "collect: $(grep '^bench:' "$tmp/table.txt" | head -5)"
echo "ok - $benches: results.json matches the schema, every listed figure present with a value"

# The one table: a line per figure, each with its target and ratio columns.
"$py" - "$tmp/results.json" "$tmp/table.txt" "$SRCDIR/bench/figures.txt" $benches <<'PY' || exit 1
import json, sys
results, table, figures_txt, names = json.load(open(sys.argv[1])), open(sys.argv[2]).read().splitlines(), sys.argv[3], sys.argv[4:]
listed = [l.rstrip("\n").split("\t", 1) for l in open(figures_txt) if l.strip() and not l.startswith("#")]
bad = []
for name in names:
    bench = results["benches"][name]
    want = [f for b, f in listed if b == name]
    got = [f["name"] for f in bench["figures"]]
    if sorted(got) != sorted(want):
        bad.append(f"{name}: rows not as listed: extra {sorted(set(got) - set(want))[:3]}, missing {sorted(set(want) - set(got))[:3]}")
    if not bench["quick"]:
        bad.append(f"{name}: quick run not marked quick")
    for f in bench["figures"]:
        v, t, r = f["value"], f["target"], f["ratio"]
        if t is not None and v and f["direction"] != "none":
            expect = t / v if f["direction"] == "lower" else v / t
            if r is None or abs(r - expect) > 0.01 * expect + 0.005:
                bad.append(f"{name}: {f['name']}: ratio {r}, expected {expect:.3g}")
        elif r is not None:
            bad.append(f"{name}: {f['name']}: a ratio without a target")
        if f["karpenter"] is not None and not f["karpenter"]["source"]:
            bad.append(f"{name}: {f['name']}: Karpenter's figure without a source")
        if not any(line.startswith(name) and f["name"][:62] in line for line in table):
            bad.append(f"{name}: {f['name']}: not in the printed table")
k = [f for f in results["benches"]["scheduler"]["figures"] if f["karpenter"]]
if len(k) != 2 or any("PR 2486" not in f["karpenter"]["source"] for f in k):
    bad.append(f"scheduler: Karpenter's two published figures (PR 2486) expected, got {len(k)}")
if not (results["machine"]["cores"] >= 1 and results["commit"]):
    bad.append("machine or commit missing")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "ok - every row in the table with its target and ratio; ratios as bench/lib.sh defines them; Karpenter's figures sourced"

# One bench again: only its entry changes.
before=$("$py" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(json.dumps(r["benches"]["scheduler"]))' "$tmp/results.json")
mkdir "$tmp/rows2"
run_bench loop "$tmp/rows2"
"$py" "$SRCDIR/bench/collect.py" "$tmp/rows2" "$tmp/results.json" --quick >"$tmp/table2.txt" 2>&1 || fail "collect loop alone"
after=$("$py" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(json.dumps(r["benches"]["scheduler"]))' "$tmp/results.json")
[ "$before" = "$after" ] || fail "collecting loop alone changed scheduler's entry"
grep -q '^scheduler' "$tmp/table2.txt" && fail "the table of a loop run shows scheduler's rows"
"$py" "$SRCDIR/bench/collect.py" --check "$tmp/results.json" $benches || fail "the merged file fails the check"
echo "ok - a bench run alone replaces only its own entry"

# The check can fail: a row lost, a value lost, a field of the schema lost.
"$py" - "$tmp/results.json" "$tmp" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lost_row = json.loads(json.dumps(r)); lost_row["benches"]["proto"]["figures"].pop(0)
lost_value = json.loads(json.dumps(r)); lost_value["benches"]["metrics"]["figures"][1]["value"] = None
lost_field = json.loads(json.dumps(r)); del lost_field["benches"]["loop"]["figures"][0]["direction"]
for name, doc in (("row", lost_row), ("value", lost_value), ("field", lost_field)):
    json.dump(doc, open(f"{sys.argv[2]}/lost-{name}.json", "w"))
PY
for lost in row value field; do
	if "$py" "$SRCDIR/bench/collect.py" --check "$tmp/lost-$lost.json" $benches 2>"$tmp/lost-$lost.err"; then
		fail "a results.json with a $lost lost passes the check"
	fi
done
grep -q "proto: figure missing: pending-pod encode+decode (1 core)" "$tmp/lost-row.err" || fail "lost row: $(cat "$tmp/lost-row.err")"
grep -q "metrics: figure without a value" "$tmp/lost-value.err" || fail "lost value: $(cat "$tmp/lost-value.err")"
grep -q "schema: .*direction" "$tmp/lost-field.err" || fail "lost field: $(cat "$tmp/lost-field.err")"
echo "ok - a lost row, value or field fails the check, named"
