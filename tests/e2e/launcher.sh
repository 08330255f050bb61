#!/bin/sh
# End-to-end: the whole scale-up path on kanna-sim (watcher → scheduler →
# launcher). Scenario S5: 5 pods → one NodeClaim → one instance → one Node
# with the NodePool's labels → 5 bindings; then 20 pods reuse it and add
# capacity. Insufficient capacity on the cheapest offering is ridden out in
# the same attempt and published; NodeClaims, instances and Nodes agree.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

e2e_init
start_sim
start_daemons --log-level debug
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
ok "the launcher checked its AWS credentials and takes plans"

kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl scale deployment inflate --replicas 5 >/dev/null
wait_for "5 inflate pods bound" 60 sh -c "[ \$(kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 5 ]"
ok "5 pods bound"
expect_eq "one NodeClaim" "$(kubectl get nodeclaims -o name | grep -c .)" 1
expect_eq "one Node" "$(kubectl get nodes -o name | grep -c .)" 1
expect_one_instance_per_nodeclaim "S5 at 5 replicas"
node=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
expect_eq "all 5 pods on that node" "$(kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u)" "$node"
expect_eq "the node carries the NodePool's label" "$(kubectl get node "$node" -o jsonpath='{.metadata.labels.intent}')" apps
expect_eq "the node names its NodePool" "$(kubectl get node "$node" -o jsonpath='{.metadata.labels.karpenter\.sh/nodepool}')" default
claim=$(kubectl get nodeclaims -o jsonpath='{.items[0].metadata.name}')
expect_eq "NodeClaim and Node share the providerID" \
	"$(kubectl get nodeclaim "$claim" -o jsonpath='{.status.providerID}')" \
	"$(kubectl get node "$node" -o jsonpath='{.spec.providerID}')"
expect_eq "the node's instance type is the NodeClaim's" \
	"$(kubectl get node "$node" -o jsonpath='{.metadata.labels.node\.kubernetes\.io/instance-type}')" \
	"$(sim_instances | sed -n 's/.* type=\([^ ]*\) .*/\1/p')"
expect_eq "the node has the termination finalizer" "$(kubectl get node "$node" -o jsonpath='{.metadata.finalizers[0]}')" karpenter.sh/termination
for line in "created nodeclaim" "launched nodeclaim" "bound 5 pod(s) to node $node"; do
	grep -q "$line" "$tmp/launcher.log" || fail "no '$line' in the launcher's log"
done
ok "the launcher logs created, launched and bound lines"
wait_for "the node Ready" 30 sh -c "kubectl get node $node -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
ok "the node turned Ready"

# kanna-tap on the live daemons: the scale to 20 shows up as a plan the
# scheduler sends and the launcher receives, then the launcher's result.
"$BUILDDIR/tools/kanna-tap" --runtime-dir "$tmp/run" --type launch_plan --type launch_result \
	--count 3 >"$tmp/tap.jsonl" 2>"$tmp/tap.log" &
pid_tap=$!
e2e_pids="$e2e_pids $pid_tap"
wait_for "kanna-tap to follow the launcher" 15 grep -q "Following launcher" "$tmp/tap.log"
wait_for "kanna-tap to follow the scheduler" 15 grep -q "Following scheduler" "$tmp/tap.log"
sleep 1 # its subscriptions reach the daemons' tap sockets
kubectl scale deployment inflate --replicas 20 >/dev/null
wait_for "20 inflate pods bound" 90 sh -c "[ \$(kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 20 ]"
ok "20 pods bound"
wait_for "kanna-tap to print 3 messages and exit" 30 sh -c "! kill -0 $pid_tap 2>/dev/null"
python3 - "$tmp/tap.jsonl" <<'PY' || fail "kanna-tap's output: $(cat "$tmp/tap.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 3, len(lines)
seen = {(m["process"], m["direction"], m["type"]) for m in lines}
assert any(p.startswith("scheduler") and d == "send" and t == "launch_plan" for p, d, t in seen), seen
assert ("launcher", "recv", "launch_plan") in seen or ("launcher", "send", "launch_result") in seen, seen
plan = next(m for m in lines if m["type"] == "launch_plan")
assert plan["fields"]["body"]["nodeclaims"][0]["nodepool"] == "default", plan
PY
ok "kanna-tap shows the plan the scheduler sent and the launcher took, decoded"
expect_one_instance_per_nodeclaim "S5 at 20 replicas"
expect_eq "NodeClaims and Nodes agree" "$(kubectl get nodeclaims -o name | grep -c .)" "$(kubectl get nodes -o name | grep -c .)"
grep -q "already launching; ignoring" "$tmp/launcher.log" && fail "a plan was replayed onto a running launch"

# ICE on the cheapest offering of the next launch: it must be marked
# unavailable, published, and the launch must succeed in the same attempt
# with the next candidate. A NodePool of two types makes "cheapest" certain.
curl -sS -X POST "$AWS_ENDPOINT_URL/_sim/faults" -H 'Content-Type: application/json' \
	-d '{"insufficientCapacity":[{"instanceType":"m5.xlarge"}]}' >/dev/null
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: ice}
spec:
  template:
    metadata: {labels: {intent: ice}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge, m5.2xlarge]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ice}
spec:
  replicas: 1
  selector: {matchLabels: {app: ice}}
  template:
    metadata: {labels: {app: ice}}
    spec:
      nodeSelector: {intent: ice}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "2", memory: 4Gi}}}
YAML
wait_for "the ice pod bound" 60 sh -c "[ \$(kubectl get pods -l app=ice -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 1 ]"
grep -q "marking offering m5.xlarge/" "$tmp/launcher.log" || fail "the ICE offering m5.xlarge was not marked unavailable"
grep -q "offering m5.xlarge/.* unavailable until" "$tmp/scheduler.log" || fail "the scheduler did not hear that m5.xlarge is unavailable"
ice_node=$(kubectl get pods -l app=ice -o jsonpath='{.items[0].spec.nodeName}')
expect_eq "the next candidate was launched" "$(kubectl get node "$ice_node" -o jsonpath='{.metadata.labels.node\.kubernetes\.io/instance-type}')" m5.2xlarge
expect_eq "in a single CreateFleet attempt" "$(grep -c 'CreateFleet for nodeclaim ice-' "$tmp/launcher.log")" 1
expect_one_instance_per_nodeclaim "after ICE"
curl -sS -X POST "$AWS_ENDPOINT_URL/_sim/faults" -H 'Content-Type: application/json' -d '{}' >/dev/null

# A CreateFleet carried out whose 200 answer arrives cut off: the launcher
# cannot tell what it launched, so it must look for the NodeClaim's instance
# (by tag) before any second CreateFleet — never launch twice.
aws_faults '{"garbledAnswerRate": 1}'
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: garbled}
spec:
  replicas: 1
  selector: {matchLabels: {app: garbled}}
  template:
    metadata: {labels: {app: garbled}}
    spec:
      nodeSelector: {intent: ice}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "6", memory: 4Gi}}}
YAML
wait_for "an unreadable CreateFleet answer" 60 grep -q "Failed to read the CreateFleet answer for nodeclaim" "$tmp/launcher.log"
aws_faults '{}'
wait_for "the garbled pod bound" 60 sh -c "[ \$(kubectl get pods -l app=garbled -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 1 ]"
claim=$(grep "Failed to read the CreateFleet answer for nodeclaim" "$tmp/launcher.log" | head -1 | sed 's/.*for nodeclaim \([^:]*\):.*/\1/')
grep -q "found instance .* already launched for nodeclaim $claim" "$tmp/launcher.log" ||
	fail "the launcher did not look up and adopt the instance its unreadable CreateFleet launched for $claim"
expect_eq "the sim garbled an answer" "$(curl -sS "$AWS_ENDPOINT_URL/_sim/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["faultsInjected"]["garbledAnswer"] > 0)')" True
expect_one_instance_per_nodeclaim "after an unreadable CreateFleet answer"
