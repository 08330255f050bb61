#!/bin/sh
# End-to-end: the launcher holds a Node it launched until the pods planned
# for it are bound, and a binding retried after the Node filled up is not
# made.
# Five 1.5-cpu pods are planned onto one m5.2xlarge (7910m allocatable)
# while every pods/binding request fails (an injected 500). The Node
# carries karpenter.sh/unregistered:NoSchedule meanwhile: once it is Ready
# the default scheduler (kanna-sim's scheduler-lite) places there a 1.5-cpu
# pod pinned to it that tolerates every taint, but neither a small pod
# pinned to it that tolerates none nor any of the five. When bindings work
# again the launcher binds four; binding the fifth would make 9.0 cpu on
# 7.91. It must stay pending with a FailedScheduling Event saying why,
# leave the NodeClaim's planned pods, and be planned onto new capacity;
# then the hold comes off and the small pod lands. The NodeClaim is older
# than launch-timeout by then: its binds and registration go on all the same.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

e2e_init
# Nodes turn Ready 15 s after launch: time to pin the filler pod to one
# before the default scheduler may use it. Bindings fail from the start.
cat >"$tmp/sim.yaml" <<'YAML'
kubelet-boot-ms: 15000
k8s-faults:
  bindingErrors: 1000000
YAML
start_sim --config "$tmp/sim.yaml"
# A launch-timeout shorter than the failing bindings last: binding goes on
# for a NodeClaim older than it, as long as it holds its planned pods.
start_daemons --log-level debug --launch-timeout 10s
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"

kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: bind}
spec:
  template:
    metadata: {labels: {intent: bind}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.2xlarge]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: big}
spec:
  replicas: 5
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      nodeSelector: {intent: bind}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: 1500m, memory: 1Gi}}}
YAML
wait_for "the Node of the first NodeClaim" 60 sh -c "kubectl get nodes -o name | grep -q ."
node=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
claim=$(kubectl get nodeclaims -o jsonpath='{.items[0].metadata.name}')
expect_eq "one NodeClaim for the five pods" "$(kubectl get nodeclaims -o name | grep -c .)" 1
expect_eq "the NodeClaim plans all five" \
	"$(kubectl get nodeclaim "$claim" -o jsonpath='{.metadata.annotations.kanna\.dev/planned-pods}' | tr ',' '\n' | grep -c big-)" 5
expect_eq "the Node is held for its planned pods" \
	"$(kubectl get node "$node" -o jsonpath='{range .spec.taints[*]}{.key}:{.effect}{"\n"}{end}' | grep -c '^karpenter.sh/unregistered:NoSchedule$')" 1
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: aaa-filler, labels: {app: filler}}
spec:
  nodeSelector: {kubernetes.io/hostname: $node}
  tolerations: [{operator: Exists}]
  containers:
  - {name: c, image: pause, resources: {requests: {cpu: 1500m, memory: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: aaa-small, labels: {app: small}}
spec:
  nodeSelector: {kubernetes.io/hostname: $node}
  containers:
  - {name: c, image: pause, resources: {requests: {cpu: 100m, memory: 64Mi}}}
YAML
wait_for "kanna's bindings to fail" 60 grep -q "Failed to bind .*to node $node" "$tmp/launcher.log"
[ "$(bound_pods app=big)" = 0 ] || fail "a big pod was bound before the Node was Ready; the test did not set up what it means to"
ok "the launcher's bindings fail while the Node boots"

wait_for "the default scheduler to place the pod that tolerates the hold" 60 sh -c \
	"[ \"\$(kubectl get pod aaa-filler -o jsonpath='{.spec.nodeName}')\" = $node ]"
sleep 2 # two more passes of the default scheduler
expect_eq "nothing else placed on the held node" \
	"$(kubectl get pods -o jsonpath='{range .items[?(@.spec.nodeName=="'"$node"'")]}{.metadata.name}{"\n"}{end}' | grep -c .)" 1
expect_eq "the held node is Ready" \
	"$(kubectl get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" True
ok "the held, Ready node took only the pod that tolerates karpenter.sh/unregistered:NoSchedule"

sim_faults '{}'
wait_for "four big pods bound to $node" 30 sh -c \
	"[ \$(kubectl get pods -l app=big -o jsonpath='{range .items[?(@.spec.nodeName==\"$node\")]}{.metadata.name}{\"\\n\"}{end}' | grep -c .) = 4 ]"
pending=$(kubectl get pods -l app=big -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' | awk 'NF == 1 {print $1}')
expect_eq "one big pod left pending" "$(echo "$pending" | grep -c .)" 1
refused="Failed to bind pod default/$pending to node $node: Insufficient cpu"
wait_for "the launcher to refuse the fifth binding" 30 grep -q "$refused" "$tmp/launcher.log"
sleep 3 # two more reconcile passes: none may bind it after all
[ "$(kubectl get pod "$pending" -o jsonpath='{.spec.nodeName}')" != "$node" ] || fail "$pending was bound to the full node $node"
grep "Failed to bind pod default/$pending to node $node" "$tmp/launcher.log" | grep -q "Insufficient cpu" ||
	fail "the log does not say which resource is short"
kubectl get events -o jsonpath='{range .items[*]}{.involvedObject.name}|{.reason}|{.message}{"\n"}{end}' |
	grep "^$pending|FailedScheduling|Failed to bind pod to node $node of nodeclaim $claim: Insufficient cpu" | grep -q "stays pending" ||
	fail "no FailedScheduling Event on $pending from the launcher: $(kubectl get events -o jsonpath='{range .items[*]}{.involvedObject.name}|{.reason}|{.message}{"\n"}{end}' | grep "$pending")"
ok "four bound, the fifth refused with a FailedScheduling Event (9.0 cpu would not fit 7.91)"
wait_for "the NodeClaim to release $pending" 15 sh -c \
	"! kubectl get nodeclaim $claim -o jsonpath='{.metadata.annotations.kanna\.dev/planned-pods}' | grep -q $pending"
ok "$pending left the NodeClaim's planned pods"

wait_for "$pending planned again and bound elsewhere" 120 sh -c \
	"n=\$(kubectl get pod $pending -o jsonpath='{.spec.nodeName}'); [ -n \"\$n\" ] && [ \"\$n\" != $node ]"
ok "$pending was planned again and bound to $(kubectl get pod "$pending" -o jsonpath='{.spec.nodeName}')"
wait_for "the hold to come off $node" 15 sh -c \
	"! kubectl get node $node -o jsonpath='{range .spec.taints[*]}{.key}{\"\\n\"}{end}' | grep -q '^karpenter.sh/unregistered\$'"
wait_for "the default scheduler to place the small pod on $node" 15 sh -c \
	"[ \"\$(kubectl get pod aaa-small -o jsonpath='{.spec.nodeName}')\" = $node ]"
ok "the hold came off once every planned pod was bound or released; the small pod landed"
expect_eq "the first node holds 6 pods (7.6 of 7.91 cpu)" \
	"$(kubectl get pods -o jsonpath='{range .items[?(@.spec.nodeName=="'"$node"'")]}{.metadata.name}{"\n"}{end}' | grep -c .)" 6
expect_one_instance_per_nodeclaim "after the refused binding"
