#!/bin/sh
# End-to-end: the launcher binds early only the pods that tolerate every
# taint of the new Node, its NodePool's startupTaints included; the others
# wait for the default scheduler until the taint is removed.
# Karpenter binds nothing: it nominates, and the kube-scheduler binds a pod
# once no NoSchedule/NoExecute taint it does not tolerate is left on the
# Node. A NodePool with startupTaints [example.com/init:NoSchedule] gets
# five pods without the toleration and one with it, planned onto one
# Node. The tolerating pod is bound at once; the five are not, with a
# FailedScheduling Event and a log line naming the taint, and no other
# NodeClaim is launched for them (Karpenter's scheduler does not hold a
# startup taint against pods while the Node initializes). Once
# `kubectl taint node N example.com/init-` removes it, kanna-sim's
# scheduler-lite binds the five there.
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
metadata: {name: init}
spec:
  template:
    metadata: {labels: {intent: init}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      startupTaints: [{key: example.com/init, effect: NoSchedule}]
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.2xlarge]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: plain}
spec:
  replicas: 5
  selector: {matchLabels: {app: plain}}
  template:
    metadata: {labels: {app: plain}}
    spec:
      nodeSelector: {intent: init}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: 500m, memory: 512Mi}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: agent}
spec:
  replicas: 1
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {intent: init}
      tolerations: [{key: example.com/init, operator: Exists, effect: NoSchedule}]
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: 500m, memory: 512Mi}}}
YAML
wait_for "the Node of the NodeClaim" 60 sh -c "kubectl get nodes -o name | grep -q ."
node=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
claim=$(kubectl get nodeclaims -o jsonpath='{.items[0].metadata.name}')
expect_eq "one NodeClaim for the six pods" "$(kubectl get nodeclaims -o name | grep -c .)" 1
expect_eq "the Node carries the startup taint" \
	"$(kubectl get node "$node" -o jsonpath='{range .spec.taints[*]}{.key}:{.effect}{"\n"}{end}' | grep -c '^example.com/init:NoSchedule$')" 1

wait_for "the pod tolerating the startup taint bound to $node" 60 sh -c \
	"[ \"\$(kubectl get pods -l app=agent -o jsonpath='{.items[0].spec.nodeName}')\" = $node ]"
grep -q "bound 1 pod(s) to node $node" "$tmp/launcher.log" ||
	fail "the launcher did not bind the tolerating pod early: $(grep "node $node" "$tmp/launcher.log" | tail -n 5)"
ok "the pod tolerating example.com/init:NoSchedule was bound early, by the launcher"

why="node $node has taint example.com/init:NoSchedule that the pod does not tolerate"
for p in $(kubectl get pods -l app=plain -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'); do
	wait_for "the launcher to refuse binding $p" 30 \
		grep -q "Failed to bind pod default/$p to node $node: $why" "$tmp/launcher.log"
done
ok "the launcher refused binding the five pods, saying which taint"
events=$(kubectl get events -o jsonpath='{range .items[*]}{.involvedObject.name}|{.reason}|{.message}{"\n"}{end}')
expect_eq "a FailedScheduling Event on each of the five names the taint" \
	"$(echo "$events" | grep "^plain-.*|FailedScheduling|Failed to bind pod to node $node of nodeclaim $claim: $why" | cut -d'|' -f1 | sort -u | grep -c .)" 5
wait_for "the NodeClaim to release the five" 15 sh -c \
	"! kubectl get nodeclaim $claim -o jsonpath='{.metadata.annotations.kanna\.dev/planned-pods}' | grep -q plain-"
wait_for "the hold to come off $node" 30 sh -c \
	"! kubectl get node $node -o jsonpath='{range .spec.taints[*]}{.key}{\"\\n\"}{end}' | grep -q '^karpenter.sh/unregistered\$'"
wait_for "$node Ready" 60 node_ready "$node"
sleep 5 # passes of the default scheduler, the watcher and the schedulers
expect_eq "none of the five bound while the startup taint is on the Node" "$(bound_pods app=plain)" 0
expect_eq "all five pending" \
	"$(kubectl get pods -l app=plain -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Pending$')" 5
expect_eq "no other NodeClaim launched for them" "$(kubectl get nodeclaims -o name | grep -c .)" 1

kubectl taint node "$node" example.com/init- >/dev/null
wait_for "the default scheduler to bind the five to $node" 60 sh -c \
	"[ \$(kubectl get pods -l app=plain -o jsonpath='{range .items[?(@.spec.nodeName==\"$node\")]}{.metadata.name}{\"\\n\"}{end}' | grep -c .) = 5 ]"
ok "the startup taint removed, kanna-sim's scheduler-lite bound the five to $node"
expect_eq "still one NodeClaim" "$(kubectl get nodeclaims -o name | grep -c .)" 1
expect_one_instance_per_nodeclaim "after the startup taint"
