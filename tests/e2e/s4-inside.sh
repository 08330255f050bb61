#!/bin/sh
# End-to-end: seed scenario S4 (SCENARIOS.md, the deep-dive slides: how it
# works inside) on kanna-sim with the whole daemon set.
#  - Only pods the Kubernetes scheduler marked PodScheduled=False /
#    Unschedulable are considered: a pending pod of another scheduler,
#    without that condition, gets no NodeClaim and no Event; once marked,
#    it gets a node.
#  - Constraints, all in one batch, each with its outcome: resource
#    requests (a 30-CPU pod on a node of 30+ allocatable CPUs), nodeSelector
#    (capacity-type on-demand, where spot is cheaper), node affinity (arch
#    arm64), tolerations vs a NodePool's taint (tolerated: a node of the
#    tainted pool, carrying the taint; not tolerated: no node, a
#    FailedScheduling Event naming the taint), topology spread (3 pods,
#    zone, maxSkew 1: 3 zones), pod affinity (hostname: with its target),
#    pod anti-affinity (hostname: 2 pods, 2 nodes).
#  - Every node carries the karpenter.sh/termination finalizer; kubectl
#    delete node: in the sim's timelines the node is tainted
#    karpenter.sh/disrupted, its pods evicted, its instance terminated, and
#    only then is the Node object removed.
#  - Insufficient capacity for the offering a launch wants first is met by
#    another candidate offering in the same launch: no wait, one NodeClaim.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 on PATH"; exit 77; }

# workload NAME REPLICAS CPU [SPEC-LINES]: a Deployment of pods app=NAME
# (YAML, four-space-indented pod spec lines appended as given).
workload() {
	cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "$3", memory: 256Mi}}}
${4:-}
YAML
}
# placed, nodes_of_app: tests/e2e/lib.sh
label_of() { # NODE KEY
	kubectl get node "$1" -o go-template="{{index .metadata.labels \"$2\"}}"
}
events_on() { # NAME: "REASON MESSAGE" of the Events on it
	kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{"\n"}{end}' |
		sed -n "s/^\([^ ]*\) $1 /\1 /p"
}
aws_status() {
	curl -sS "$AWS_ENDPOINT_URL/_sim/status"
}

e2e_init
printf 'kubelet-boot-ms: 1000\n' >"$tmp/sim.yaml"
start_sim --config "$tmp/sim.yaml"
start_daemons
start_reaper
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"
# pool NAME [EXTRA-SPEC-YAML]: a NodePool labelling its nodes intent=NAME,
# both arches, spot and on-demand, categories c, m and r.
pool() {
	cat <<YAML
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {intent: $1}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: Never
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
${2:-}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: Never}
YAML
}
{
	sed -n '/^apiVersion: karpenter.k8s.aws/,/^---/p' "$SRCDIR/examples/s5-inflate.yaml" | grep -v '^---'
	pool inside
	pool late # the unmarked pod's, so that once marked it needs a node of its own
	pool tainted '      taints: [{key: dedicated, value: s4, effect: NoSchedule}]'
	# The ICE pool: 4-vCPU types only, so that a 3-CPU pod needs a node of its own.
	pool ice '      - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["4"]}'
} | kubectl apply -f - >/dev/null

# --- only pods marked Unschedulable ---------------------------------------------------
# A pod of a scheduler that does not exist: pending, never marked.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: unmarked, labels: {app: unmarked}}
spec:
  schedulerName: other-scheduler
  nodeSelector: {intent: late}
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 256Mi}}}
YAML

# --- the constraints, in one batch -----------------------------------------------------------
{
	workload requests 1 30 '      nodeSelector: {intent: inside}'
	workload selector 1 500m '      nodeSelector: {intent: inside, karpenter.sh/capacity-type: on-demand}'
	workload arm 1 500m '      nodeSelector: {intent: inside}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [arm64]}]'
	workload tolerating 1 500m '      nodeSelector: {intent: tainted}
      tolerations: [{key: dedicated, operator: Equal, value: s4, effect: NoSchedule}]'
	workload intolerant 1 500m '      nodeSelector: {intent: tainted}'
	workload spread 3 500m '      nodeSelector: {intent: inside}
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
         labelSelector: {matchLabels: {app: spread}}}'
	workload target 1 500m '      nodeSelector: {intent: inside}'
	workload follower 1 500m '      nodeSelector: {intent: inside}
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: target}}}'
	workload apart 2 500m '      nodeSelector: {intent: inside}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: apart}}}'
} | kubectl apply -f - >/dev/null
wait_for "every schedulable pod bound" 90 placed requests=1 selector=1 arm=1 tolerating=1 spread=3 target=1 follower=1 apart=2

node=$(nodes_of_app requests)
cpu=$(kubectl get node "$node" -o jsonpath='{.status.allocatable.cpu}')
case $cpu in *m) cpu=$((${cpu%m} / 1000)) ;; esac
[ "$cpu" -ge 30 ] || fail "requests: the 30-CPU pod is on $node with $cpu allocatable CPU"
ok "requests: the 30-CPU pod on $node, $cpu allocatable CPU"
expect_eq "nodeSelector: the on-demand pod's node" "$(label_of "$(nodes_of_app selector)" karpenter.sh/capacity-type)" on-demand
expect_eq "node affinity: the arm64 pod's node" "$(label_of "$(nodes_of_app arm)" kubernetes.io/arch)" arm64
tnode=$(nodes_of_app tolerating)
expect_eq "tolerations: the tolerating pod's node is of NodePool tainted" "$(label_of "$tnode" karpenter.sh/nodepool)" tainted
expect_eq "tolerations: that node carries the NodePool's taint" \
	"$(kubectl get node "$tnode" -o jsonpath='{.spec.taints[?(@.key=="dedicated")].value}:{.spec.taints[?(@.key=="dedicated")].effect}')" \
	s4:NoSchedule
zones=$(for n in $(nodes_of_app spread); do label_of "$n" topology.kubernetes.io/zone; echo; done | sort -u | grep -c .)
expect_eq "topology spread: 3 pods in 3 zones" "$zones" 3
expect_eq "pod affinity: the follower on its target's node" "$(nodes_of_app follower)" "$(nodes_of_app target)"
expect_eq "pod anti-affinity: 2 pods on 2 nodes" "$(nodes_of_app apart | grep -c .)" 2
intolerant=$(awk '$1 == "intolerant" { print $2 }' "$tmp/placed")
expect_eq "tolerations: the intolerant pod is not bound" "$(awk '$1 == "intolerant" { print NF }' "$tmp/placed")" 2
intolerant_event() {
	events_on "$intolerant" | grep -q "^FailedScheduling .*taint dedicated=s4:NoSchedule"
}
wait_for "a FailedScheduling Event on $intolerant naming the taint" 30 intolerant_event
ok "tolerations: $(events_on "$intolerant" | grep "^FailedScheduling .*taint dedicated" | head -n 1)"

# The unmarked pod: pending all this while, never announced, never planned.
expect_eq "the unmarked pod is unbound and has no PodScheduled condition" \
	"$(kubectl get pod unmarked -o jsonpath='{.status.phase}/{.spec.nodeName}/{.status.conditions[?(@.type=="PodScheduled")].status}')" \
	"Pending//"
grep -q "unmarked" "$tmp/scheduler.log" "$tmp/launcher.log" && fail "kanna acted on the unmarked pod: $(grep -h unmarked "$tmp/scheduler.log" "$tmp/launcher.log" | head -n 1)"
expect_eq "no Event on the unmarked pod" "$(events_on unmarked)" ""
expect_eq "no NodeClaim planned it" "$(kubectl get nodeclaims -o yaml | grep -c unmarked || true)" 0
ok "only pods marked Unschedulable are considered: the unmarked pod is left alone"
# Marked as kube-scheduler marks it, it is considered: a NodeClaim of its
# NodePool, and the launcher binds it to the Node.
kubectl patch pod unmarked --subresource=status --type=merge -p \
	'{"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/0 nodes are available"}]}}' >/dev/null
wait_for "the marked pod bound" 60 placed unmarked=1
expect_eq "once marked Unschedulable it gets a node of its NodePool" \
	"$(label_of "$(nodes_of_app unmarked)" karpenter.sh/nodepool)" late

# --- finalizer: kubectl delete node -----------------------------------------------------------
dnode=$(nodes_of_app apart | head -n 1)
expect_eq "every node carries the karpenter.sh/termination finalizer" \
	"$(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.finalizers}{"\n"}{end}' | grep -vc '"karpenter.sh/termination"' || true)" 0
dclaim=$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name} {.status.nodeName}{"\n"}{end}' | awk -v n="$dnode" '$2 == n { print $1 }')
dinstance=$(instance_of "$dclaim")
[ -n "$dinstance" ] || fail "no instance for $dnode"
had=$(awk -v n="$dnode" '$3 == n { print $2 }' "$tmp/placed" | sort)
kubectl delete node "$dnode" --wait=false >/dev/null
wait_for "node $dnode gone" 60 gone node "$dnode"
k8s_status >"$tmp/k8s-status.json"
aws_status >"$tmp/aws-status.json"
python3 - "$tmp/k8s-status.json" "$tmp/aws-status.json" "$dnode" "$dinstance" $had <<'PY' ||
import datetime, json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
aws = json.load(open(sys.argv[2]))["timeline"]
node, instance, pods = sys.argv[3], sys.argv[4], ["default/" + p for p in sys.argv[5:]]
def t(e):
    return datetime.datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
def first(events, pred):
    return min((t(e) for e in events if pred(e)), default=None)
deleting = first(tl, lambda e: e["event"] == "node-deleting" and e["detail"] == node)
tainted = first(tl, lambda e: e["event"] == "node-tainted" and e["detail"] == node + " karpenter.sh/disrupted:NoSchedule")
evicted = [first(tl, lambda e, p=p: e["event"] == "pod-evicted" and e["detail"].split(" ")[0] == p) for p in pods]
terminated = first(aws, lambda e: e["event"] == "terminate" and e["detail"].split(" ")[0] == instance)
deleted = first(tl, lambda e: e["event"] == "node-deleted" and e["detail"] == node)
print("  %s: deleting %s, tainted %s, %d pod(s) evicted by %s, instance %s terminated %s, Node removed %s" % (
    node, deleting, tainted, len([e for e in evicted if e]), max(evicted) if all(evicted) else None, instance,
    terminated, deleted))
ok = None not in [deleting, tainted, terminated, deleted] + evicted and len(evicted) >= 1
sys.exit(0 if ok and deleting <= tainted and tainted <= min(evicted) and max(evicted) <= terminated < deleted else 1)
PY
	fail "kubectl delete node: not cordon → drain → terminate → remove"
ok "kubectl delete node: cordoned, drained, its instance terminated, and only then the Node removed"
wait_for "the evicted apart pod bound again" 60 placed apart=2
expect_eq "pod anti-affinity holds again: 2 pods on 2 nodes" "$(nodes_of_app apart | grep -c .)" 2

# --- insufficient capacity: the next candidate at once ---------------------------------------------
# The offering a 3-CPU pod of NodePool ice gets, unhindered (offerings are
# priced per type and zone, the same every run) ...
workload ice1 1 3 '      nodeSelector: {intent: ice}' | kubectl apply -f - >/dev/null
wait_for "the ice1 pod bound" 60 placed ice1=1
first=$(kubectl get node "$(nodes_of_app ice1)" -o jsonpath='{.metadata.labels.node\.kubernetes\.io/instance-type} {.metadata.labels.topology\.kubernetes\.io/zone} {.metadata.labels.karpenter\.sh/capacity-type}')
set -- $first
# ... has no capacity now: an identical pod gets another, in the same launch.
aws_faults "{\"insufficientCapacity\":[{\"instanceType\":\"$1\",\"zone\":\"$2\",\"capacityType\":\"$3\"}]}"
t0=$(date +%s)
workload ice2 1 3 '      nodeSelector: {intent: ice}' | kubectl apply -f - >/dev/null
wait_for "the ice2 pod bound" 60 placed ice2=1
took=$(($(date +%s) - t0))
second=$(kubectl get node "$(nodes_of_app ice2)" -o jsonpath='{.metadata.labels.node\.kubernetes\.io/instance-type} {.metadata.labels.topology\.kubernetes\.io/zone} {.metadata.labels.karpenter\.sh/capacity-type}')
[ "$second" != "$first" ] || fail "ice2 got the offering with no capacity: $second"
claim2=$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name} {.status.nodeName}{"\n"}{end}' |
	awk -v n="$(nodes_of_app ice2)" '$2 == n { print $1 }')
aws_status >"$tmp/aws-status.json"
python3 - "$tmp/aws-status.json" "$1" "$2" "$3" <<'PY' || fail "the launch did not meet insufficient capacity for $first"
import json, sys
s = json.load(open(sys.argv[1]))
hits = [e for e in s["timeline"] if e["event"] == "insufficient-capacity" and e["detail"].split(" ")[:3] == sys.argv[2:5]]
print("  %d insufficient-capacity answer(s) for %s" % (len(hits), " ".join(sys.argv[2:5])))
sys.exit(0 if hits else 1)
PY
expect_eq "NodePool ice: two NodeClaims, ice1's and ice2's (no retry through another)" "$(claims_of ice | grep -c .)" 2
grep -q "Failed to launch nodeclaim $claim2" "$tmp/launcher.log" && fail "the launch of $claim2 failed before it found capacity"
[ "$took" -lt 20 ] || fail "ice2 took $took s to be bound: something waited"
ok "insufficient capacity for $first: $claim2 launched $second at once, the pod bound after $took s"
aws_faults '{}'

expect_each_terminated_once
expect_one_instance_per_nodeclaim "at the end"
