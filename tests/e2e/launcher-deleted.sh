#!/bin/sh
# End-to-end: a NodeClaim deleted while it is being launched leaves no
# instance behind and no CreateFleet is sent for it afterwards. Every AWS
# answer of kanna-sim takes 2 s, so each deletion lands mid-launch:
#  - before CreateFleet (the EC2NodeClass still resolving): none is sent;
#  - while CreateFleet is in flight, with kubectl delete (the finalizer
#    holds it): the instance it launched is terminated, the finalizer
#    removed;
#  - while CreateFleet is in flight, finalizer removed first (gone at once,
#    the launch finds a 404): the instance is terminated, not left to a
#    garbage collector;
#  - one NodeClaim of a batched CreateFleet in flight: its instance is
#    terminated, the others launch.
# Each time the pods are planned again and bound to a new NodeClaim.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

# case NAME REPLICAS [SPREAD]: a NodePool NAME (intent NAME) and a
# Deployment NAME of 1-CPU pods on it; SPREAD keeps them on separate nodes.
case_of() {
	spread=""
	[ "${3:-}" = spread ] && spread="
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: $1}}}"
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {intent: $1}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
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
      nodeSelector: {intent: $1}$spread
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}
YAML
}

claims_of() { # NODEPOOL
	kubectl get nodeclaims -l "karpenter.sh/nodepool=$1" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'
}

first_claim() { # NODEPOOL: prints it once there is one
	c=$(claims_of "$1" | head -n 1)
	[ -n "$c" ] && echo "$c"
}

# Fails if an instance tagged with NodeClaim NAME is pending or running
# (an instance of a batch has the tag once bound: the last check of all
# finds a deleted member's untagged one).
expect_no_instance_for() {
	live=$(sim_instances | grep -E 'state=(pending|running)' | grep -c "nodeclaim=$1\$" || true)
	[ "$live" = 0 ] || fail "$2: $live instance(s) of deleted NodeClaim $1 still run: $(sim_instances | grep "nodeclaim=$1\$")"
	ok "$2: no instance of deleted NodeClaim $1 runs"
}

wait_bound() { # APP N SECONDS
	wait_for "$2 $1 pod(s) bound" "$3" sh -c "[ \$(kubectl get pods -l app=$1 -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = $2 ]"
	ok "$2 $1 pod(s) bound again"
}

e2e_init
start_sim
start_daemons --log-level debug
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
aws_faults '{"latencyMs": 2000}'

# --- deleted before CreateFleet: none is sent ------------------------------------------
case_of early 1
wait_for "the early NodeClaim" 30 first_claim early
claim=$(first_claim early)
kubectl delete nodeclaim "$claim" --wait=false >/dev/null
grep -q "CreateFleet for nodeclaim $claim" "$tmp/launcher.log" &&
	fail "CreateFleet went out before the deletion; the test did not test the window it means to"
ok "deleted NodeClaim $claim before its CreateFleet"
wait_for "NodeClaim $claim gone" 60 sh -c "! kubectl get nodeclaim $claim"
wait_bound early 1 60
grep -q "CreateFleet for nodeclaim $claim" "$tmp/launcher.log" && fail "CreateFleet was sent for deleted NodeClaim $claim"
ok "no CreateFleet was sent for $claim"
expect_no_instance_for "$claim" "deleted before CreateFleet"

# --- kubectl delete while CreateFleet is in flight ------------------------------------
case_of flight 1
wait_for "the flight NodeClaim" 30 first_claim flight
claim=$(first_claim flight)
wait_for "CreateFleet for $claim" 30 grep -q "CreateFleet for nodeclaim $claim" "$tmp/launcher.log"
kubectl delete nodeclaim "$claim" --wait=false >/dev/null
grep -q "launched nodeclaim $claim" "$tmp/launcher.log" &&
	fail "the launch of $claim was recorded before the deletion; the test did not test the window it means to"
ok "deleted NodeClaim $claim while its CreateFleet was in flight"
wait_for "NodeClaim $claim gone" 60 sh -c "! kubectl get nodeclaim $claim"
wait_bound flight 1 60
expect_no_instance_for "$claim" "kubectl delete during CreateFleet"

# --- gone at once (finalizer removed) while CreateFleet is in flight --------------------
case_of gone 1
wait_for "the gone NodeClaim" 30 first_claim gone
claim=$(first_claim gone)
wait_for "CreateFleet for $claim" 30 grep -q "CreateFleet for nodeclaim $claim" "$tmp/launcher.log"
kubectl patch nodeclaim "$claim" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null
kubectl delete nodeclaim "$claim" --wait=false >/dev/null
ok "removed NodeClaim $claim at once while its CreateFleet was in flight"
wait_bound gone 1 90
expect_no_instance_for "$claim" "NodeClaim gone during CreateFleet"

# --- one NodeClaim of a batched CreateFleet ---------------------------------------------
n_batch=$(grep -c "token kanna-batch-" "$tmp/launcher.log" || true)
case_of batch 3 spread
wait_for "a batched CreateFleet" 60 sh -c "[ \$(grep -c 'token kanna-batch-' '$tmp/launcher.log') -gt $n_batch ]"
claim=$(first_claim batch)
kubectl delete nodeclaim "$claim" --wait=false >/dev/null
ok "deleted NodeClaim $claim of a batched CreateFleet in flight"
wait_for "NodeClaim $claim gone" 60 sh -c "! kubectl get nodeclaim $claim"
wait_bound batch 3 60
expect_no_instance_for "$claim" "one NodeClaim of a batch deleted"

aws_faults '{}'
expect_one_instance_per_nodeclaim "at the end"
