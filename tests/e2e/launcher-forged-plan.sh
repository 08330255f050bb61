#!/bin/sh
# End-to-end: the launcher trusts no plan. A process that may write to the
# plans socket (kanna-probe, greeting as a scheduler) sends a plan whose
# requirements look like NodePool cmr's — categories c, m and r — but whose
# one candidate is p5.48xlarge. Nothing is launched: no NodeClaim, no
# CreateFleet, no instance in kanna-sim's EC2; a NoCompatibleInstanceTypes
# Event on the NodePool says why; the launcher keeps running and launches
# the next plan, one the NodePool allows (m5.large), as it would a
# scheduler's. A plan naming a NodePool that does not exist launches
# nothing either.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
PROBE="$BUILDDIR/tests/e2e/kanna-probe"

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
metadata: {name: cmr}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
YAML

# send_plan TYPES [NODEPOOL]: a plan for NodePool cmr (or NODEPOOL) with
# requirements within cmr's own.
send_plan() {
	"$PROBE" send-plan --runtime-dir "$tmp/run" --timeout 10 --nodepool "${2:-cmr}" --types "$1" \
		--zones us-west-2a \
		--require karpenter.k8s.aws/instance-category=In=c,m,r \
		--require "karpenter.sh/nodepool=In=${2:-cmr}" \
		--require karpenter.sh/capacity-type=In=on-demand >>"$tmp/probe.log" 2>&1
}
nodepool_events() { # reason|message of the Events on NodePool cmr
	kubectl get events -o jsonpath='{range .items[?(@.involvedObject.kind=="NodePool")]}{.involvedObject.name}|{.reason}|{.message}{"\n"}{end}' |
		sed -n 's/^cmr|//p'
}
refused() {
	nodepool_events | grep -q '^NoCompatibleInstanceTypes|.*p5\.48xlarge'
}

# Until the launcher's replica has NodePool cmr a plan is refused without
# an Event ("does not exist"); the forged plan is sent until one appears.
forge() {
	send_plan p5.48xlarge && refused
}
wait_for "the forged plan refused with an Event on NodePool cmr" 60 forge
ok "NodePool cmr has the Event: $(nodepool_events | grep -m1 '^NoCompatibleInstanceTypes')"
nodepool_events | grep '^NoCompatibleInstanceTypes' | grep -q "instance-category In \[c m r\]" ||
	fail "the Event does not name the requirement p5.48xlarge fails: $(nodepool_events)"
grep -q "dropping instance type p5.48xlarge from nodeclaim cmr-forged-.* of nodepool cmr: .*instance-category" \
	"$tmp/launcher.log" || fail "no log line dropping p5.48xlarge"
ok "the launcher logged the dropped candidate and why"

send_plan m5.large nope || fail "the plan for a NodePool that does not exist could not be sent"
wait_for "the plan for NodePool nope refused" 30 \
	grep -q "not launching nodeclaim nope-forged-.*: NodePool nope does not exist" "$tmp/launcher.log"
ok "a plan naming a NodePool that does not exist is refused"

sleep 2 # a launch, had it started, would have called CreateFleet by now
expect_eq "no NodeClaim" "$(kubectl get nodeclaims -o name | grep -c . || true)" 0
expect_eq "no instance in kanna-sim's EC2" "$(sim_instances | grep -c . || true)" 0
expect_eq "no CreateFleet call" \
	"$(curl -sS "$AWS_ENDPOINT_URL/_sim/status" | python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)["timeline"] if e["event"] == "create-fleet"))')" 0

kill -0 "$pid_launcher" 2>/dev/null || fail "the launcher exited"
send_plan m5.large || fail "the allowed plan could not be sent"
wait_for "the allowed plan launched" 60 sh -c "kubectl get nodeclaims -o jsonpath='{.items[*].status.providerID}' | grep -q ."
expect_eq "one instance, an m5.large" "$(sim_instances | grep -E 'state=(pending|running)' | sed 's/.* type=\([^ ]*\) .*/\1/')" m5.large
ok "the launcher kept running and launched a plan the NodePool allows"
