#!/bin/sh
# End-to-end: kanna-sim → kanna-watcher → kanna-scheduler, with kanna-probe
# standing in for the launcher on the "plans" socket. Scenario S5's five
# pods become one planned NodeClaim of their NodePool with candidates
# cheapest first; planned pods are not planned again while held; a pod no
# NodePool can take gets a FailedScheduling Event naming why.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
PROBE="$BUILDDIR/tests/e2e/kanna-probe"

e2e_init
start_sim
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --announce-interval 500ms
start scheduler "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --batch-idle-duration 500ms --plan-timeout 30s
wait_for "the scheduler" 30 grep -q "scheduling shard 0 of 1" "$tmp/scheduler.log"

kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl scale deployment inflate --replicas 5 >/dev/null
"$PROBE" plan --runtime-dir "$tmp/run" --timeout 30 >"$tmp/plan.txt" || fail "no launch plan arrived"
expect_eq "one planned NodeClaim" "$(grep -c '^nodeclaim' "$tmp/plan.txt")" "1"
grep -q '^nodeclaim default-.* nodepool=default nodeclass=default pods=5 candidates=60 ' "$tmp/plan.txt" ||
	fail "unexpected plan: $(cat "$tmp/plan.txt")"
ok "five inflate pods planned on one NodeClaim of NodePool default with 60 candidates"
want=$(kubectl get pods -o jsonpath='{range .items[*]}default/{.metadata.name}{"\n"}{end}' | sort)
expect_eq "the plan names exactly the deployment's pods" "$(sed -n 's/^  pod //p' "$tmp/plan.txt" | sort)" "$want"
grep -q "found 5 provisionable pod(s)" "$tmp/scheduler.log" || fail "no 'found provisionable pod(s)' line"
grep -q "computed new nodeclaim(s) to fit pod(s)" "$tmp/scheduler.log" || fail "no 'computed new nodeclaim(s)' line"
ok "the scheduler logs Karpenter's lines"
# Every connection opens with a hello (STYLE 12): the watcher greets the
# scheduler on its shard socket and on state.pub, and on each state.sync.
for sock in pending state; do
	grep -q "peer watcher (pid [0-9]*, .*) connected on $sock, protocol " "$tmp/scheduler.log" ||
		fail "the watcher's hello on $sock was not accepted: $(grep -i 'peer\|dropped' "$tmp/scheduler.log")"
done
ok "the watcher's hello is exchanged and accepted on every socket"

# The watcher keeps announcing the pods (no launcher acts on the plan), but
# planned pods are held: no second plan within a few seconds.
if "$PROBE" plan --runtime-dir "$tmp/run" --timeout 4 >"$tmp/plan2.txt" 2>/dev/null; then
	fail "the same pods were planned twice: $(cat "$tmp/plan2.txt")"
fi
ok "planned pods are not planned again while their NodeClaim is awaited"

# A pod nothing can run: its NodePool offers no arm64 with 1000 CPUs.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: giant, namespace: default}
spec:
  nodeSelector: {intent: apps}
  containers:
  - name: c
    image: pause
    resources: {requests: {cpu: "1000"}}
YAML
wait_for "a FailedScheduling Event on the giant pod" 30 sh -c \
	"kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{\"\n\"}{end}' | grep -q '^FailedScheduling giant Failed to schedule pod, '"
kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{"\n"}{end}' |
	grep '^FailedScheduling giant Failed to schedule pod, ' | head -1 | sed 's/^/  /'
ok "a pod no NodePool can hold gets FailedScheduling with the reason"

# The giant pod is announced and solved again every batch: its reason is
# logged once, not once a batch (a cluster's pending pods once wrote 56,527
# such lines in 40 minutes).
n0=$(grep -c "found 1 provisionable pod(s)" "$tmp/scheduler.log" || true)
wait_for "three more solves of the giant pod" 30 sh -c \
	"[ \$(grep -c 'found 1 provisionable pod(s)' '$tmp/scheduler.log') -ge $((n0 + 3)) ]"
expect_eq "the giant pod's reason is logged once over several batches" \
	"$(grep -c 'could not schedule pod: .*pod=giant' "$tmp/scheduler.log")" "1"
