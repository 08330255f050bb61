#!/bin/sh
# End-to-end: consolidation in kanna-reaper on kanna-sim (issue 18), with
# the whole scale-up path; consolidateAfter 2s and a 1s validation delay.
#  - replace: a 4-CPU node left with one small pod is replaced by a cheaper
#    2-CPU node, whose Node is Ready before the old Node is deleted (the
#    sim's timeline), "disrupting nodeclaim(s) via replace ... savings";
#  - minimum savings: the same replace under a NodePool whose
#    kanna.dev/consolidation-min-savings-per-hour is above what it saves is
#    not done (an Unconsolidatable Event says so) until the annotation is
#    lowered below it; a malformed one gets a FailedValidation Event and is
#    ignored (the other threshold still holds);
#  - multi-node: three 2-CPU nodes each left with one small pod become one
#    (two deleted in one command, their pods fit on the third);
#  - blocks: a node whose pod has karpenter.sh/do-not-disrupt and a node
#    whose pod a PDB (maxUnavailable 0) covers both stay, each with an
#    Event naming the pod or the PDB.
# At the end every instance was terminated once and every NodeClaim has one
# live instance.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

# pool NAME CPUS [ANNOTATIONS [AFTER]]: a v1 NodePool of on-demand c/m
# types with CPUS vCPUs (a JSON list), consolidating underutilized nodes
# after AFTER (2s).
pool() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1, annotations: {${3:-}}}
spec:
  template:
    metadata: {labels: {intent: $1}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: Never
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: $2}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: ${4:-2s}
    budgets: [{nodes: "100%"}]
YAML
}
# deploy NAME POOL REPLICAS CPU [ANNOTATIONS]: a Deployment of pods app=NAME on POOL.
deploy() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $3
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}, annotations: {${5:-}}}
    spec:
      nodeSelector: {intent: $2}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "$4", memory: 256Mi}}}
YAML
}
bound() { # APP N: N pods of APP bound
	[ "$(kubectl get pods -l "app=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c .)" = "$2" ]
}
nodes_of() { # POOL: its Nodes, one a line
	kubectl get nodes -l "karpenter.sh/nodepool=$1" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'
}
count_of() { # POOL
	claims_of "$1" | grep -c . || true
}
events() {
	kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{"\n"}{end}'
}

e2e_init
cat >"$tmp/sim.yaml" <<'YAML'
kubelet-boot-ms: 1000
YAML
start_sim --config "$tmp/sim.yaml"
start_daemons
metrics=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start reaper "$BUILDDIR/reaper/kanna-reaper" --runtime-dir "$tmp/run" --metrics-port "$metrics" \
	--health-port 0 --leader-elect=false --reconcile-period 500ms --log-level debug \
	--consolidation-validation-delay 1s
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null

# --- replace: a 4-CPU node with one 500m pod → a cheaper 2-CPU node ----------------------
pool swap '["2", "4"]'
deploy anchor swap 1 3
wait_for "the anchor pod bound" 90 bound anchor 1
deploy rest swap 1 500m
wait_for "the rest pod bound" 60 bound rest 1
old=$(claims_of swap)
expect_eq "one NodeClaim in swap" "$(echo "$old" | grep -c .)" 1
old_node=$(node_of "$old")
expect_eq "rest shares the anchor's node" "$(kubectl get pods -l app=rest -o jsonpath='{.items[0].spec.nodeName}')" "$old_node"
kubectl scale deployment anchor --replicas 0 >/dev/null
wait_for "the 4-CPU NodeClaim replaced" 90 gone nodeclaim "$old"
wait_for "the rest pod on the replacement" 60 sh -c \
	"n=\$(kubectl get pods -l app=rest -o jsonpath='{.items[0].spec.nodeName}'); [ -n \"\$n\" ] && [ \"\$n\" != $old_node ]"
new=$(claims_of swap)
expect_eq "one NodeClaim in swap" "$(echo "$new" | grep -c .)" 1
expect_eq "the replacement has 2 vCPUs" \
	"$(kubectl get nodeclaim "$new" -o jsonpath='{.metadata.labels.karpenter\.k8s\.aws/instance-cpu}')" 2
grep -q "disrupting nodeclaim(s) via replace, terminating 1 nodes (1 pods) $old_node/.* and replacing with on-demand node from types .*, savings \$[0-9.]*/h" \
	"$tmp/reaper.log" || fail "no 'disrupting nodeclaim(s) via replace ... savings' line"
k8s_status >"$tmp/k8s-status.json"
python3 - "$tmp/k8s-status.json" "$old_node" "$(node_of "$new")" <<'PY' || fail "the replacement was not Ready before the old node was deleted"
import json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
def first(event, name):
    return min((e["time"] for e in tl if e["event"] == event and e["detail"].split(" ")[0] == name), default=None)
deleting, ready = first("node-deleting", sys.argv[2]), first("node-ready", sys.argv[3])
print("  old node deleted %s, replacement Ready %s" % (deleting, ready))
sys.exit(0 if deleting and ready and ready < deleting else 1)
PY
events | grep -q "^DisruptionWaitingReadiness $old " || fail "no DisruptionWaitingReadiness Event"
ok "replace: $(grep -o 'via replace, terminating 1 nodes.*savings [^ ]*' "$tmp/reaper.log" | head -n 1)"

# --- minimum savings: the same replace held back by a threshold, then let go -------------
pool thrift '["2", "4"]' '"kanna.dev/consolidation-min-savings-per-hour": "5"'
deploy thrift-anchor thrift 1 3
wait_for "the thrift anchor pod bound" 90 bound thrift-anchor 1
deploy thrift-rest thrift 1 500m
wait_for "the thrift rest pod bound" 60 bound thrift-rest 1
old=$(claims_of thrift)
expect_eq "one NodeClaim in thrift" "$(echo "$old" | grep -c .)" 1
held_back() {
	events | grep -q "^Unconsolidatable $old replacement not cheaper enough (saving \$[0-9.]*/h below threshold \$5.0000/h)"
}
malformed() {
	events | grep -q '^FailedValidation thrift .*kanna.dev/consolidation-min-savings-percent: "lots" is not a number'
}
kubectl scale deployment thrift-anchor --replicas 0 >/dev/null
wait_for "an Unconsolidatable Event naming the threshold" 30 held_back
sleep 3 # consolidateAfter and a validation delay: nothing may move
expect_eq "the thrift NodeClaim stays" "$(claims_of thrift)" "$old"
kubectl annotate nodepool thrift --overwrite kanna.dev/consolidation-min-savings-percent=lots >/dev/null
wait_for "a FailedValidation Event naming the malformed annotation" 30 malformed
sleep 3 # the malformed percentage is ignored, the amount still holds
expect_eq "the thrift NodeClaim still stays" "$(claims_of thrift)" "$old"
kubectl annotate nodepool thrift --overwrite kanna.dev/consolidation-min-savings-per-hour=0.01 >/dev/null
wait_for "the thrift NodeClaim replaced once its saving passes the threshold" 90 gone nodeclaim "$old"
ok "minimum savings: $(events | grep -o 'replacement not cheaper enough.*' | head -n 1), then replaced at 0.01"

# --- multi-node: three 2-CPU nodes, one small pod each → one node -----------------------
# The three become consolidatable together: consolidateAfter counts from
# each node's status.lastPodEventTime, in whole seconds, so pod deletions
# that straddle a second would let single-node consolidation take the
# first node alone before the others qualify (as Karpenter would). The
# pool waits 1h until every big pod is gone and 3 s more, then 2s.
pool multi '["2"]' '' 1h
deploy big multi 3 1500m
wait_for "3 big pods bound" 90 bound big 3
expect_eq "three NodeClaims in multi" "$(count_of multi)" 3
deploy small multi 3 300m
wait_for "3 small pods bound" 60 bound small 3
expect_eq "one small pod per node" \
	"$(kubectl get pods -l app=small -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | grep -c .)" 3
kubectl scale deployment big --replicas 0 >/dev/null
wait_for "every big pod gone" 60 sh -c "! kubectl get pods -l app=big -o name | grep -q ."
sleep 3
expect_eq "three NodeClaims in multi before its consolidateAfter passes" "$(count_of multi)" 3
pool multi '["2"]' '' 2s
wait_for "multi down to one NodeClaim" 90 sh -c "[ \$(kubectl get nodeclaims -l karpenter.sh/nodepool=multi -o name | grep -c .) = 1 ]"
wait_for "every small pod bound on the last node" 60 sh -c \
	"[ \$(kubectl get pods -l app=small -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | sort -u | grep -c .) = 1 ] && [ \$(kubectl get pods -l app=small -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 3 ]"
grep -q "disrupting nodeclaim(s) via delete, terminating 2 nodes (2 pods)" "$tmp/reaper.log" ||
	fail "no 'via delete, terminating 2 nodes' line (multi-node)"
ok "multi-node: $(grep -o 'via delete, terminating 2 nodes.*' "$tmp/reaper.log" | head -n 1)"

# --- blocks: do-not-disrupt and a PDB ---------------------------------------------------
pool hold '["2"]'
deploy hold hold 2 1500m
wait_for "2 hold pods bound" 90 bound hold 2
deploy dnd hold 1 300m '"karpenter.sh/do-not-disrupt": "true"'
wait_for "the do-not-disrupt pod bound" 60 bound dnd 1
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pinned, namespace: default}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: pinned}}
YAML
deploy pinned hold 1 300m
wait_for "the PDB-covered pod bound" 60 bound pinned 1
held=$(claims_of hold | sort)
kubectl scale deployment hold --replicas 0 >/dev/null
wait_for "a DisruptionBlocked Event naming the do-not-disrupt pod" 30 sh -c \
	"kubectl get events -o jsonpath='{range .items[*]}{.reason} {.message}{\"\\n\"}{end}' | grep -q '^DisruptionBlocked .*pod default/dnd-.* has the \"karpenter.sh/do-not-disrupt\" annotation'"
wait_for "a DisruptionBlocked Event naming the PDB" 30 sh -c \
	"kubectl get events -o jsonpath='{range .items[*]}{.reason} {.message}{\"\\n\"}{end}' | grep -q '^DisruptionBlocked .*pdb \"default/pinned\" prevents pod evictions'"
sleep 3 # consolidateAfter and a validation delay: nothing may move
expect_eq "both held NodeClaims stay" "$(claims_of hold | sort)" "$held"
ok "blocks: $(events | grep -o 'pdb "default/pinned" prevents pod evictions.*' | head -n 1)"

curl -sS "http://127.0.0.1:$metrics/metrics" >"$tmp/metrics.txt"
grep -q '^karpenter_voluntary_disruption_decisions_total{decision="replace",reason="Underutilized"} ' "$tmp/metrics.txt" ||
	fail "no replace decision counted for Underutilized"
grep -q '^karpenter_nodeclaims_disrupted_total{nodepool="multi",reason="Underutilized"} 2' "$tmp/metrics.txt" ||
	fail "karpenter_nodeclaims_disrupted_total{multi,Underutilized} is not 2"
grep -q '^karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count ' "$tmp/metrics.txt" ||
	fail "no decision evaluation duration"
agree() {
	[ "$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)" = \
	  "$(sim_instances | grep -E 'state=(pending|running)' | sed 's/.*nodeclaim=//' | sort)" ]
}
wait_for "NodeClaims and live instances to agree" 60 agree
expect_one_instance_per_nodeclaim "at the end"
expect_each_terminated_once
