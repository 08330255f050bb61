#!/bin/sh
# ./quickstart demo as a test, so that what a new user sees never rots:
# examples/demo/demo.py, its code path with the "short" timing (the ttls
# cut further), on a view of the build holding kanna-sim, kanna-init and the
# four daemons alone (what ./quickstart build makes, never the tests'
# programs). Checks:
#  - it exits 0 with both stories played to the end (every daemon and
#    kanna-init exited 0) and leaves nothing running;
#  - it showed the live view and the daemons' lines in Karpenter's wording;
#  - its summary agrees with the sim's own record (instances launched and
#    terminated, by the reasons of the reaper's DisruptionTerminating
#    Events, counted here independently): the Provisioner story terminated
#    nodes as Expired (one with a replacement launched first) and Empty; the
#    NodePool story consolidated (Underutilized, via delete and via replace)
#    and emptied;
#  - kanna-demo.html, rendered by a real browser (tests/e2e/demo_render.py:
#    chromium headless, --dump-dom and a screenshot): every chart there,
#    drawn and not blank. Skipped, with the reason, only where chromium is
#    not installed (./quickstart deps installs it).
set -eu
BUILDDIR=${1:-${KANNA_BUILDDIR:-build/gcc}}
BUILDDIR=$(cd "$BUILDDIR" && pwd)
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "SKIP: no /usr/bin/python3 (./quickstart deps)"; exit 77; }

e2e_init
built=$BUILDDIR
view=$tmp/built
for p in sim/kanna-sim init/kanna-init watcher/kanna-watcher scheduler/kanna-scheduler \
	launcher/kanna-launcher reaper/kanna-reaper; do
	[ -x "$built/$p" ] || fail "$built/$p is not built (./quickstart build)"
	mkdir -p "$view/${p%/*}"
	ln -s "$built/$p" "$view/$p"
done

out=$tmp/out
t0=$(date +%s)
rc=0
/usr/bin/python3 "$SRCDIR/examples/demo/demo.py" "$view" --out "$out" --timing short >"$tmp/demo.out" 2>&1 || rc=$?
secs=$(($(date +%s) - t0))
sed 's/^/  /' "$tmp/demo.out"
expect_eq "the demo exits 0 (after ${secs} s)" "$rc" 0

# The sanitizers report into the stories' logs (lib.sh looks in $tmp only).
bad=$(grep -l "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$out"/*/*.log 2>/dev/null || true)
[ -z "$bad" ] || fail "a sanitizer reported in $bad: $(grep -h -A 20 'ERROR: \|runtime error:' $bad | head -n 30)"

# Nothing it started runs on: kanna-sim ran from the view of the build,
# kanna-init and the daemons with their kanna.yaml in $out.
left=$(pgrep -f "$tmp/" || true)
[ -z "$left" ] || fail "still running after the demo: $(ps -o pid=,args= -p $(echo $left | tr ' ' ','))"
ok "nothing the demo started is left running"

for story in provisioner nodepool; do
	d=$out/$story
	for f in kanna.yaml kanna.log k8s-status.json aws-status.json events.json story.json; do
		[ -s "$d/$f" ] || fail "$story: no $f recorded"
	done
	for daemon in watcher scheduler launcher reaper; do
		grep -q "kanna-$daemon exited with status 0" "$d/kanna.log" || fail "$story: kanna-$daemon did not exit 0 under kanna-init"
	done
	grep -q "every daemon has exited, exiting with status 0" "$d/kanna.log" || fail "$story: kanna-init did not exit 0"
	# A Provisioner's inline provider is no EC2NodeClass object: nothing
	# to write its status to (the launcher tried, and warned, once).
	! grep -q "Failed to write the status of EC2NodeClass" "$d/kanna.log" ||
		fail "$story: $(grep -o 'Failed to write the status of EC2NodeClass[^"]*' "$d/kanna.log" | head -n 1)"
	grep -h '"level":"\(warn\|error\)"' "$d/kanna.log" | sed "s/^/  ($story) /" || true
done
ok "both stories ran under kanna-init; every daemon and kanna-init exited 0"

# The live view and the key lines, as shown.
grep -q '^  | *+[0-9]*s pending [0-9]*, bound [0-9]*/[0-9]*, [0-9]* node(s) (.*), \$[0-9.]*/hour$' "$tmp/demo.out" ||
	fail "no live view line (elapsed, pending pods, nodes, \$/hour) in the output"
grep -q '^  | *+[0-9]*s pending 0, bound 20/20, [0-9]* node(s) ([0-9]*× [a-z0-9.]* us-west-2[a-z] \(spot\|on-demand\)' "$tmp/demo.out" ||
	fail "the live view never showed the 20 pods bound and the nodes by type, zone and capacity type"
for line in 'kanna-scheduler found 5 provisionable pod(s)' 'kanna-scheduler computed new nodeclaim(s) to fit pod(s)' \
	'kanna-launcher  launched nodeclaim .*: instance i-[0-9a-f]*, type .*, zone .*, capacity type' \
	'kanna-launcher  bound 5 pod(s) to node' 'kanna-reaper    disrupting nodeclaim(s) via delete, .*, reason Expired' \
	'kanna-reaper    launching replacement nodeclaim' 'kanna-reaper    disrupting nodeclaim(s) via replace, ' \
	'kanna-reaper    disrupting nodeclaim(s) via delete, .*, reason Empty'; do
	grep -q "^ *+[0-9]*s $line" "$tmp/demo.out" || fail "the demo did not show a line '$line'"
done
ok "the demo showed the live view and the daemons' lines in Karpenter's wording"

# summary_value LABEL COLUMN: a cell of the summary table (column 1: the
# Provisioner story, 2: the NodePool story).
summary_value() {
	sed -n '/^== Summary/,/^report: /p' "$tmp/demo.out" |
		awk -v l="$1" -v c="$2" 'index($0, "  " l " ") == 1 { n = split($0, f, "  +"); print f[n - 2 + c] }'
}
# What the sim and the Events say, counted here: instances launched; those
# terminated, by the reason of their NodeClaim's DisruptionTerminating Event.
record() { # STORY
	/usr/bin/python3 - "$out/$1" <<'PY'
import json, re, sys
d = sys.argv[1]
inst = json.load(open(d + "/aws-status.json"))["instances"]
reasons = {}
for e in json.load(open(d + "/events.json"))["items"]:
    m = re.match(r"Disrupting NodeClaim: (\w+)$", e.get("message", ""))
    if e.get("reason") == "DisruptionTerminating" and m:
        reasons[e["involvedObject"]["name"]] = m.group(1)
count = {}
for i in inst:
    if i["state"] in ("shutting-down", "terminated"):
        r = reasons.get(i["tags"].get("karpenter.sh/nodeclaim"), "none")
        count[r] = count.get(r, 0) + 1
print("launched %d" % len(inst))
for r, n in sorted(count.items()):
    print("%s %d" % (r, n))
PY
}
column=0
for story in provisioner nodepool; do
	column=$((column + 1))
	record "$story" >"$tmp/$story.record"
	launched=$(sed -n 's/^launched //p' "$tmp/$story.record")
	expect_eq "$story: instances launched, as the sim recorded them" "$(summary_value "instances launched" $column)" "$launched"
	grep -q '^none ' "$tmp/$story.record" && fail "$story: an instance was terminated without a DisruptionTerminating Event"
	for reason in $(sed -n 's/^\([A-Z][a-z]*\) [0-9]*$/\1/p' "$tmp/$story.record"); do
		expect_eq "$story: terminated as $reason, as the reaper's Events say" \
			"$(summary_value "terminated: $reason" $column)" "$(sed -n "s/^$reason //p" "$tmp/$story.record")"
	done
	[ "$(summary_value "terminated: Empty" $column)" -ge 1 ] || fail "$story: no node terminated as Empty"
	bound=$(summary_value "pods bound" $column)
	[ "$bound" -ge 20 ] || fail "$story: $bound pods bound, want at least the 20 of the peak"
	for label in "pending → bound, mean" "pending → bound, p99"; do
		summary_value "$label" $column | grep -qx '[0-9]*\.[0-9] s' || fail "$story: no '$label' in the summary"
	done
	summary_value "cost (sim, at launch prices)" $column | grep -qx '\$0\.[0-9]*[1-9][0-9]*' || fail "$story: no cost in the summary"
done
[ "$(summary_value "terminated: Expired" 1)" -ge 1 ] || fail "provisioner: no node terminated as Expired"
[ "$(summary_value "terminated: Underutilized" 2)" -ge 1 ] || fail "nodepool: no node consolidated (Underutilized)"
ok "the summary agrees with the sim and the Events: Expired and Empty for the Provisioner, Underutilized and Empty for the NodePool"

report=$(sed -n 's/^report: //p' "$tmp/demo.out")
expect_eq "the demo prints the report's path" "$report" "$out/kanna-demo.html"
if command -v chromium >/dev/null 2>&1; then
	/usr/bin/python3 "$SRCDIR/tests/e2e/demo_render.py" "$(command -v chromium)" "$report" "$tmp" provisioner nodepool ||
		fail "the report does not render as it should in chromium"
else
	echo "SKIP (the browser check): chromium is not installed here (./quickstart deps installs Debian's chromium)"
fi
