#!/bin/sh
# End-to-end: spot capacity runs out. Every spot offering of kanna-sim has
# insufficient capacity, and the NodePools allow both architectures, so a
# NodeClaim's first CreateFleet names two launch templates and gets one
# capacity error per spot override (well over 64 of them).
#  - A NodePool that allows spot and on-demand: every error is read, every
#    spot offering is dropped at once, and the next CreateFleet (on-demand)
#    launches. No request ever names a launch template without overrides,
#    which EC2 refuses as a whole (MissingParameter).
#  - A NodePool that allows only spot: once no candidate is left the launch
#    has failed at once (not at launch-timeout): the NodeClaim is deleted,
#    the failure published, and the scheduler plans the pod again onto the
#    on-demand NodePool it still has offerings for.
#  - A scheduler started later, which never heard of the unavailable
#    offerings, is told of them when the launcher refuses its plan.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

# nodepool NAME INTENT CAPACITY-TYPES WEIGHT: amd64 and arm64 types of
# categories c, m and r (60 candidates of each NodeClaim, both arches).
nodepool() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  weight: $4
  template:
    metadata: {labels: {intent: $2}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [$3]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
YAML
}

deployment() { # NAME INTENT
	kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      nodeSelector: {intent: $2}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}
YAML
}

# The capacity type of the node APP's pod is bound to, once it is bound.
bound_capacity_type() {
	node=$(kubectl get pods -l "app=$1" -o jsonpath='{.items[0].spec.nodeName}')
	[ -n "$node" ] || return 1
	kubectl get node "$node" -o jsonpath='{.metadata.labels.karpenter\.sh/capacity-type}'
}

e2e_init
start_sim
start_daemons --log-level debug
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
aws_faults '{"insufficientCapacity":[{"capacityType":"spot"}]}'

# --- spot and on-demand allowed: fall back to on-demand in the same launch ----------
nodepool mixed mixed "spot, on-demand" 10
deployment mixed mixed
wait_for "the mixed pod bound" 60 bound_capacity_type mixed
expect_eq "the mixed pod runs on on-demand capacity" "$(bound_capacity_type mixed)" on-demand
claim=$(kubectl get nodeclaims -l karpenter.sh/nodepool=mixed -o jsonpath='{.items[0].metadata.name}')
grep -q "CreateFleet for nodeclaim $claim: spot" "$tmp/launcher.log" ||
	fail "the first CreateFleet of $claim was not for spot; the test did not run out of spot"
n=$(grep -c "CreateFleet for nodeclaim $claim:" "$tmp/launcher.log")
expect_eq "one spot and one on-demand CreateFleet (every capacity error read at once)" "$n" 2
n=$(grep -c "marking offering .* unavailable" "$tmp/launcher.log" || true)
[ "$n" -gt 64 ] || fail "only $n offerings were marked unavailable; the test means more than 64 errors in one answer"
ok "$n spot offerings marked unavailable from one CreateFleet answer"

# --- spot only: no candidate left, the NodeClaim fails and the pod is planned again ------
# Weight 50 makes the scheduler try the spot-only pool first. The scheduler
# and the launcher are restarted so that neither remembers the unavailable
# spot offerings: the launch finds out from EC2, as the first one did.
kill "$pid_scheduler" "$pid_launcher"
wait "$pid_scheduler" "$pid_launcher" 2>/dev/null || true
nodepool spotonly fallback spot 50
nodepool ondemand fallback on-demand 10
start scheduler2 "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" \
	--metrics-port 0 --health-port 0 --leader-elect=false --batch-idle-duration 500ms \
	--plan-timeout 30s
start_launcher --log-level debug
wait_for "the restarted launcher to take plans" 30 sh -c "[ \$(grep -c 'taking launch plans' '$tmp/launcher.log') = 2 ]"
t0=$(date +%s)
deployment fallback fallback
wait_for "a spot-only NodeClaim" 30 sh -c "kubectl get nodeclaims -l karpenter.sh/nodepool=spotonly -o name | grep -q . || grep -q 'nodeclaim=spotonly-' '$tmp/launcher.log'"
wait_for "the fallback pod bound" 90 bound_capacity_type fallback
expect_eq "the fallback pod runs on on-demand capacity" "$(bound_capacity_type fallback)" on-demand
expect_eq "on a node of NodePool ondemand" \
	"$(kubectl get node "$(kubectl get pods -l app=fallback -o jsonpath='{.items[0].spec.nodeName}')" \
		-o jsonpath='{.metadata.labels.karpenter\.sh/nodepool}')" ondemand
ok "planned again and bound after $(($(date +%s) - t0)) s, well before launch-timeout"
grep -q "Failed to launch nodeclaim spotonly-.*insufficient capacity" "$tmp/launcher.log" ||
	fail "the spot-only NodeClaim did not fail with insufficient capacity"
wait_for "the spot-only NodeClaim deleted" 30 sh -c "! kubectl get nodeclaims -l karpenter.sh/nodepool=spotonly -o name | grep -q ."
ok "the spot-only NodeClaim was deleted"

# --- a scheduler that never heard of the unavailable offerings ----------------------------
# It plans the spot-only pool; the launcher, which remembers, refuses the
# plan without asking EC2, and must tell the scheduler why, or it would
# plan the same again until the offerings' 3 minutes are over.
kill "$pid_scheduler2"
wait "$pid_scheduler2" 2>/dev/null || true
start scheduler3 "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" \
	--metrics-port 0 --health-port 0 --leader-elect=false --batch-idle-duration 500ms \
	--plan-timeout 30s
t0=$(date +%s)
deployment again fallback
wait_for "the again pod bound" 60 bound_capacity_type again
expect_eq "the again pod runs on on-demand capacity" "$(bound_capacity_type again)" on-demand
grep -q "offering .*/spot unavailable until" "$tmp/scheduler3.log" ||
	fail "the new scheduler never heard that the spot offerings are unavailable"
ok "a scheduler started later heard of the unavailable offerings and planned again after $(($(date +%s) - t0)) s"

grep -q "MissingParameter" "$tmp/launcher.log" && fail "EC2 refused a CreateFleet: $(grep -m1 MissingParameter "$tmp/launcher.log")"
ok "no CreateFleet was refused"
aws_faults '{}'
expect_one_instance_per_nodeclaim "at the end"
