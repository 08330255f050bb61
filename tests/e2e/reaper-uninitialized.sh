#!/bin/sh
# End-to-end: kanna-reaper disrupts no NodeClaim that is not initialized, as
# Karpenter's disruption skips such a node ("state node isn't initialized",
# kubernetes-sigs/karpenter pkg/controllers/disruption/types.go) and its
# budgets do not count it. Found by tests/e2e/chaos-s1.sh: a replacement
# whose "initialized" status write failed (a 5xx) was deleted as empty
# outside the budget, and a second node of the NodePool disrupted along
# with it. Here: a node of a WhenEmpty NodePool (consolidateAfter 1s,
# budget nodes "1", which allows one at once whatever the total: a
# percentage of the initialized nodes, none, would allow none) emptied
# while its NodeClaim's Initialized condition is False stays; once
# Initialized is True it goes as Empty.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

e2e_init
start_sim
start_daemons
start_reaper
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"

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
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 1s, budgets: [{nodes: "1"}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: one}
spec:
  replicas: 1
  selector: {matchLabels: {app: one}}
  template:
    metadata: {labels: {app: one}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: 500m, memory: 512Mi}}}
YAML

initialized() { # NODECLAIM
	kubectl get nodeclaim "$1" -o jsonpath='{.status.conditions[?(@.type=="Initialized")].status}' | grep -qx True
}
wait_for "a NodeClaim" 60 sh -c '[ -n "$(kubectl get nodeclaims -o name)" ]'
claim=$(claims_of default)
wait_for "NodeClaim $claim initialized" 60 initialized "$claim"
node=$(node_of "$claim")

# Its Initialized condition turned False (as when the launcher's write of
# it failed); Ready stays True, so the launcher does not write it again.
set_initialized() { # True|False
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	kubectl patch nodeclaim "$claim" --subresource=status --type=merge -p "{\"status\": {\"conditions\": [
		{\"type\": \"Launched\", \"status\": \"True\", \"reason\": \"Launched\", \"lastTransitionTime\": \"$now\"},
		{\"type\": \"Registered\", \"status\": \"True\", \"reason\": \"Registered\", \"lastTransitionTime\": \"$now\"},
		{\"type\": \"Initialized\", \"status\": \"$1\", \"reason\": \"Initialized\", \"lastTransitionTime\": \"$now\"},
		{\"type\": \"Ready\", \"status\": \"True\", \"reason\": \"Ready\", \"lastTransitionTime\": \"$now\"}]}}" >/dev/null
}
set_initialized False
kubectl scale deployment one --replicas 0 >/dev/null
wait_for "the pod gone" 30 sh -c '[ -z "$(kubectl get pods -l app=one -o name)" ]'
# consolidateAfter 1s and the reaper's 1 s passes: ten seconds is many passes.
sleep 10
deleting=$(kubectl get nodeclaim "$claim" -o jsonpath='{.metadata.deletionTimestamp}') ||
	fail "NodeClaim $claim, not initialized, is gone: $(grep "$claim" "$tmp/reaper.log" | tail -n 2)"
[ -z "$deleting" ] ||
	fail "NodeClaim $claim, not initialized, was deleted: $(grep "$claim" "$tmp/reaper.log" | tail -n 2)"
! grep -q "disrupting nodeclaim(s) via delete, terminating 1 nodes (0 pods) $node/" "$tmp/reaper.log" ||
	fail "the reaper disrupted $node, whose NodeClaim is not initialized"
ok "an empty node whose NodeClaim is not initialized stays (10 s, consolidateAfter 1s)"

set_initialized True
wait_for "NodeClaim $claim gone once initialized" 60 gone nodeclaim "$claim"
grep -q "disrupting nodeclaim(s) via delete, terminating 1 nodes (0 pods) $node/.*, reason Empty" "$tmp/reaper.log" ||
	fail "no 'disrupting nodeclaim(s) via delete ... $node ... reason Empty' line"
ok "once initialized it goes as Empty"
