#!/bin/bash
# The scheduler's regression guard (issue 22): the instructions (callgrind's
# Ir) of one 1,000-pod solve of Karpenter's benchmark shape (bench-scheduler
# karpenter 1000, seed fixed: the count is the same every run) must stay
# within the tolerance of bench/baseline.json. Only the sanitizer's absence
# is not enough: a count is only comparable in a build of the compiler and
# code-generating flags it was taken with (./quickstart's gcc build), so any
# other build skips, saying why.
#   KANNA_BASELINE_UPDATE=1 tests/bench-callgrind.sh   (from the build dir)
# rewrites bench/baseline.json with this build's count: do it on purpose,
# and say why in the commit that carries the new file.
set -euo pipefail
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
baseline=$SRCDIR/bench/baseline.json
bin=$BUILDDIR/bench/bench-scheduler
py=/usr/bin/python3

command -v valgrind >/dev/null || { echo "SKIP: no valgrind (./quickstart deps)"; exit 77; }
[ -x "$bin" ] || { echo "FAIL: $bin not built"; exit 1; }

# This build's compiler and its code-generating flags (-g levels dropped:
# debug info does not change the code).
make_var() { sed -n "s/^$1 = //p" "$BUILDDIR/Makefile" | head -n1; }
cc=$(make_var CC)
cflags=$(make_var CFLAGS | tr ' ' '\n' | grep -v '^-g' | grep . | tr '\n' ' ' | sed 's/ $//')
cc_version=$($cc --version 2>/dev/null | head -n1 || true)
shape="karpenter 1000"

# Ir of the solves alone: --toggle-collect counts sched_solve and below.
measure() {
	BENCH_REPEATS=1 valgrind --tool=callgrind --toggle-collect=sched_solve \
		--callgrind-out-file=/dev/null "$bin" $shape 2>&1 | sed -n 's/.*refs: *//p' | tr -d ,
}

if [ "${KANNA_BASELINE_UPDATE:-0}" = 1 ]; then
	ir=$(measure)
	[ -n "$ir" ] || { echo "FAIL: no instruction count from callgrind"; exit 1; }
	"$py" - "$baseline" "$shape" "$ir" "$cc" "$cc_version" "$cflags" "$(valgrind --version)" <<'PY'
import json, sys
path, shape, ir, cc, cc_version, cflags, valgrind = sys.argv[1:]
doc = {
    "comment": "tests/bench-callgrind.sh: instructions (callgrind Ir) of one solve of "
               "bench-scheduler's shape, sched_solve and below; the guard fails beyond "
               "tolerance either way. Rewrite with KANNA_BASELINE_UPDATE=1 "
               "tests/bench-callgrind.sh on purpose, the reason in the commit.",
    "scheduler_solve": {"shape": shape, "instructions": int(ir), "tolerance": 0.10,
                        "cc": cc, "cc_version": cc_version, "cflags": cflags,
                        "valgrind": valgrind},
}
with open(path, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
PY
	echo "wrote $baseline: $shape: $ir instructions ($cc_version, $cflags)"
	exit 0
fi

[ -f "$baseline" ] || { echo "FAIL: $baseline missing"; exit 1; }
mapfile -t b < <("$py" -c '
import json, sys
b = json.load(open(sys.argv[1]))["scheduler_solve"]
for k in ("instructions", "tolerance", "cc", "cc_version", "cflags"):
    print(b[k])
' "$baseline")
[ ${#b[@]} = 5 ] || { echo "FAIL: $baseline: no scheduler_solve entry"; exit 1; }
want=${b[0]} tol=${b[1]} want_cc=${b[2]} want_version=${b[3]} want_cflags=${b[4]}
if [ "$cc" != "$want_cc" ] || [ "$cc_version" != "$want_version" ] || [ "$cflags" != "$want_cflags" ]; then
	echo "SKIP: bench/baseline.json counts a build of $want_cc ($want_version) with '$want_cflags';"
	echo "      this one is $cc ($cc_version) with '$cflags': its count would not compare"
	exit 77
fi

start=$(date +%s.%N)
ir=$(measure)
[ -n "$ir" ] || { echo "FAIL: no instruction count from callgrind"; exit 1; }
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
# Deterministic: a second run counts the same.
again=$(measure)
[ "$again" = "$ir" ] || { echo "FAIL: two runs counted $ir and $again: the solve is not deterministic"; exit 1; }
read -r pct verdict < <(awk -v ir="$ir" -v want="$want" -v tol="$tol" 'BEGIN {
	d = (ir - want) / want
	printf "%+.1f %s\n", d * 100, (d > tol || d < -tol) ? "out" : "in" }')
echo "$shape: $ir instructions per solve, baseline $want ($pct%, tolerance ±$(awk -v t="$tol" 'BEGIN { print t * 100 }')%), callgrind ${secs}s"
if [ "$verdict" = out ]; then
	echo "FAIL: the solve's instruction count moved $pct% from bench/baseline.json."
	echo "      A slower solver: find the change (callgrind_annotate on a --callgrind-out-file run)."
	echo "      A deliberate change (faster, or a cost accepted): from the gcc build directory run"
	echo "      KANNA_BASELINE_UPDATE=1 $SRCDIR/tests/bench-callgrind.sh and commit"
	echo "      bench/baseline.json with the reason."
	exit 1
fi
echo "ok - the 1,000-pod solve within tolerance of the committed baseline"
