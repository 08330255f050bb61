#!/bin/sh
# End-to-end: kanna-tap on live daemons (kanna-sim, watcher, scheduler,
# launcher). Two NodePools each get pods; kanna-tap --nodepool default
# --output text (its runtime directory from a kanna.yaml, as the daemons
# read it) shows the plan, the launch and the NodeClaim of default as
# readable lines and nothing of the other NodePool; kanna-tap --summary
# reports counts and rates every second and the totals at SIGINT; --pod
# picks the pending batch of one pod.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
TAP="$BUILDDIR/tools/kanna-tap"

e2e_init
start_sim
start_daemons
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"

# The taps, before any pod exists. The text one finds the runtime
# directory in the configuration file only.
printf 'runtime-dir: %s\nlog-level: info\ntap:\n  summary-interval: 1s\n' "$tmp/run" >"$tmp/kanna.yaml"
KANNA_CONFIG="$tmp/kanna.yaml" "$TAP" --nodepool default --output text >"$tmp/tap-text.txt" 2>"$tmp/tap-text.log" &
pid_text=$!
"$TAP" --runtime-dir "$tmp/run" --summary --output json >"$tmp/tap-summary.jsonl" 2>"$tmp/tap-summary.log" &
pid_summary=$!
"$TAP" --runtime-dir "$tmp/run" --pod 'default/inflate-*' --type pending_pods --count 1 \
	>"$tmp/tap-pod.jsonl" 2>"$tmp/tap-pod.log" &
pid_pod=$!
e2e_pids="$e2e_pids $pid_text $pid_summary $pid_pod"
for log in tap-text tap-summary tap-pod; do
	for p in watcher scheduler launcher; do
		wait_for "$log to follow the $p" 15 grep -q "Following $p" "$tmp/$log.log"
	done
done
sleep 1 # the subscriptions reach the daemons' tap sockets
wait_for "a summary report" 10 grep -q '"final":false' "$tmp/tap-summary.jsonl"

kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: other}
spec:
  template:
    metadata: {labels: {intent: other}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.xlarge]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: other}
spec:
  replicas: 1
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: other}}
    spec:
      nodeSelector: {intent: other}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}
YAML
# One NodePool after the other, so that no plan holds NodeClaims of both.
wait_for "the other pod bound" 60 sh -c "[ \$(kubectl get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 1 ]"
kubectl scale deployment inflate --replicas 5 >/dev/null
wait_for "5 inflate pods and the other pod bound" 90 sh -c "[ \$(kubectl get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 6 ]"
ok "6 pods bound on nodes of two NodePools"
wait_for "kanna-tap --pod to print its one pending batch" 15 sh -c "! kill -0 $pid_pod 2>/dev/null"
claim=$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.labels.karpenter\.sh/nodepool}{"\n"}{end}' |
	sed -n 's/ default$//p' | head -n 1)
other=$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.labels.karpenter\.sh/nodepool}{"\n"}{end}' |
	sed -n 's/ other$//p' | head -n 1)
[ -n "$claim" ] && [ -n "$other" ] || fail "no NodeClaim of each NodePool: '$claim' '$other'"
wait_for "the Node of $claim in the text tap" 15 grep -q "state_delta seq [0-9]* [a-z]* node .*(nodeclaim $claim)" "$tmp/tap-text.txt"
# Three interval reports at least before SIGINT, however slow the tap is
# (under the sanitizers on a loaded machine a catalog message takes it
# seconds to decode).
wait_for "3 summary reports" 60 sh -c "[ \$(grep -c '\"final\":false' '$tmp/tap-summary.jsonl') -ge 3 ]"
kill -INT "$pid_text" "$pid_summary"
wait_for "the taps to exit at SIGINT" 15 sh -c "! kill -0 $pid_text 2>/dev/null && ! kill -0 $pid_summary 2>/dev/null"
wait "$pid_summary" || fail "kanna-tap --summary exited $? at SIGINT"

# --nodepool default --output text: readable lines, only about default.
text=$tmp/tap-text.txt
grep -Eq "^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} scheduler[^ ]* -> plans launch_plan [^ ]+ 1 nodeclaim\(s\): $claim \(nodepool default, 5 pod\(s\), cheapest [a-z0-9]+\.[a-z0-9]+ of [0-9]+\)$" "$text" ||
	fail "no readable plan of $claim in: $(cat "$text")"
grep -q "^[0-9:.]* launcher <- plans launch_plan .* $claim (nodepool default" "$text" ||
	fail "the launcher's receipt of the plan is missing: $(cat "$text")"
grep -q "^[0-9:.]* launcher -> results launch_result nodeclaim $claim launched i-[0-9a-f]* " "$text" ||
	fail "no readable launch result of $claim: $(cat "$text")"
grep -q "state_delta seq [0-9]* add nodeclaim $claim (nodepool default" "$text" ||
	fail "no state delta adding $claim: $(cat "$text")"
ok "kanna-tap --nodepool default --output text shows the plan, launch, NodeClaim and Node of default"
grep -q "$other\|nodepool other\|heartbeat\|hello\|catalog" "$text" &&
	fail "kanna-tap --nodepool default showed another NodePool or unrelated messages: $(grep "$other\|nodepool other\|heartbeat\|hello\|catalog" "$text" | head -n 5)"
ok "nothing of NodePool other, no heartbeat, hello or catalog"

# --pod 'default/inflate-*' --type pending_pods: a batch naming an inflate pod.
python3 - "$tmp/tap-pod.jsonl" <<'PY' || fail "kanna-tap --pod's output: $(cat "$tmp/tap-pod.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 1, lines
m = lines[0]
assert m["type"] == "pending_pods", m
assert any(p["ns"] == "default" and p["name"].startswith("inflate-") for p in m["fields"]["body"]["pods"]), m
PY
ok "kanna-tap --pod picks a pending batch naming that pod"

# --summary: interval reports, then the totals at SIGINT.
python3 - "$tmp/tap-summary.jsonl" "$claim" <<'PY' || fail "kanna-tap --summary's output (the assertion above; its last line): $(tail -n 1 "$tmp/tap-summary.jsonl")"
import json, sys
reports = [json.loads(l) for l in open(sys.argv[1])]
intervals, final = reports[:-1], reports[-1]
assert final["final"] is True and not any(r["final"] for r in intervals), "the last report alone is final"
assert len(intervals) >= 3, "one report a second: %d" % len(intervals)
for r in intervals:
    # Every 1s: late on a loaded machine or under ASan, and the next one
    # then early (the timer keeps its phase), so only positive and bounded.
    assert 0 < r["seconds"] < 30, r
total = final["seconds"]
assert total >= sum(r["seconds"] for r in intervals) - 0.01, (total, [r["seconds"] for r in intervals])
rows = {(r["process"].split("-")[0], r["direction"], r["socket"], r["type"]): r for r in final["rows"]}
def count(proc, d, sock, typ):
    return rows.get((proc, d, sock, typ), {"count": 0})["count"]
sent = count("scheduler", "send", "plans", "launch_plan")
assert sent >= 2, ("plans for two NodePools", sent, sorted(rows))
assert count("launcher", "recv", "plans", "launch_plan") == sent, ("every plan sent is received", rows)
assert count("launcher", "send", "results", "launch_result") >= 2, rows
assert count("watcher", "send", "state.pub", "state_delta") > 0, rows
assert final["messages"] == sum(r["count"] for r in final["rows"]), final
for r in final["rows"] + [final]:
    n = r.get("count", r.get("messages"))
    assert abs(r["rate"] - n / total) < 1e-6 * max(1, n), r
assert final["undecodable"] == 0 and final["dropped"] == 0, final
# Interval rows add up to no more than the totals, and carry the plans too.
seen = sum(x["count"] for r in intervals for x in r["rows"] if x["type"] == "launch_plan" and x["direction"] == "send")
assert 0 < seen <= sent, (seen, sent)
PY
ok "kanna-tap --summary reports counts and rates every second and the totals at SIGINT"
