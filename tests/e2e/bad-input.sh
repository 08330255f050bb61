#!/bin/sh
# End-to-end: bad input mid-run (SCENARIOS.md's scenarios, fed what users
# get wrong) on kanna-sim with the whole daemon set. While valid work goes
# on (examples/s5-inflate.yaml's inflate scaled up twice), apply:
#  - a NodePool whose requirement has an unknown operator;
#  - a NodePool whose cpu limit is 1e400 (no int64 holds it);
#  - a NodePool whose cpu limit is below what its nodes already use;
#  - an EC2NodeClass whose subnetSelectorTerms select no subnet, and a
#    NodePool using it;
#  - a pod asking for 10,000 CPUs.
# kanna-sim, like an API server without Karpenter's CEL rules, takes them
# all; each gets a status condition or an Event that names the field (or
# the limit, the selector, the resource), no node is launched for any of
# them, and the valid pods get nodes throughout.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

# nodepool NAME NODECLASS REQUIREMENT-OPERATOR CPU-LIMIT: labels intent=NAME.
nodepool() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {intent: $1}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: $2}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: $3, values: [c, m, r]}
  limits: {cpu: $4}
YAML
}
# workload NAME INTENT REPLICAS CPU
workload() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $3
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      terminationGracePeriodSeconds: 0
      nodeSelector: {intent: $2}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "$4", memory: 256Mi}}}
YAML
}
bound_of() { # APP: how many of its pods are bound
	bound_pods "app=$1"
}
all_bound() { # APP N
	[ "$(kubectl get pods -l "app=$1" -o name | grep -c .)" = "$2" ] && [ "$(bound_of "$1")" = "$2" ]
}
events_on() { # NAME: "REASON MESSAGE" of the Events on it
	kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{"\n"}{end}' |
		sed -n "s/^\([^ ]*\) $1 /\1 /p"
}
event_on() { # NAME REGEX: an Event on NAME matches
	events_on "$1" | grep -q -- "$2"
}
condition() { # KIND NAME TYPE: "STATUS REASON MESSAGE"
	kubectl get "$1" "$2" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].status} {.status.conditions[?(@.type==\"$3\")].reason} {.status.conditions[?(@.type==\"$3\")].message}"
}
condition_is() { # KIND NAME TYPE REGEX
	condition "$1" "$2" "$3" | grep -q -- "$4"
}
pod_of() { # APP: its first pod's name
	kubectl get pods -l "app=$1" -o jsonpath='{.items[0].metadata.name}'
}

e2e_init
# crd-enums false: bad operators must reach kanna, as under CRDs without the enum
printf 'kubelet-boot-ms: 1000\ncrd-enums: false\n' >"$tmp/sim.yaml"
start_sim --config "$tmp/sim.yaml"
start_daemons
start_reaper
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl scale deployment inflate --replicas 3 >/dev/null

# --- the bad input, applied while inflate's pods are being placed -----------------------
nodepool badop default Within 100
nodepool hugelimit default In 1e400
nodepool below default In 100
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: nowhere}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: no-such-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
YAML
nodepool nowhere nowhere In 100
workload greedy apps 1 10000
for p in badop hugelimit nowhere; do
	workload "$p" "$p" 1 1
done
workload below below 2 1

wait_for "3 inflate pods bound amid the bad input" 60 all_bound inflate 3
wait_for "2 below pods bound (its limit is fine yet)" 60 all_bound below 2

# Unknown operator: ValidationSucceeded=False naming the requirement's operator.
wait_for "ValidationSucceeded=False on NodePool badop" 30 condition_is nodepool badop ValidationSucceeded '^False '
ok "unknown operator: $(condition nodepool badop ValidationSucceeded)"
condition nodepool badop ValidationSucceeded | grep -q 'requirements.*operator\|Within' ||
	fail "NodePool badop's condition does not name the operator: $(condition nodepool badop ValidationSucceeded)"
# 1e400: ValidationSucceeded=False naming spec.limits.cpu.
wait_for "ValidationSucceeded=False on NodePool hugelimit" 30 condition_is nodepool hugelimit ValidationSucceeded '^False '
condition nodepool hugelimit ValidationSucceeded | grep -q 'limits' ||
	fail "NodePool hugelimit's condition does not name its limits: $(condition nodepool hugelimit ValidationSucceeded)"
ok "1e400: $(condition nodepool hugelimit ValidationSucceeded)"
# No subnet: SubnetsReady=False on the EC2NodeClass, naming the selector.
wait_for "SubnetsReady=False on EC2NodeClass nowhere" 30 condition_is ec2nodeclass nowhere SubnetsReady '^False '
condition ec2nodeclass nowhere SubnetsReady | grep -qi 'subnetSelectorTerms' ||
	fail "EC2NodeClass nowhere's condition does not name subnetSelectorTerms: $(condition ec2nodeclass nowhere SubnetsReady)"
ok "no subnet: $(condition ec2nodeclass nowhere SubnetsReady)"
# 10,000 CPUs: FailedScheduling on the pod naming the cpu it asks for.
greedy=$(pod_of greedy)
wait_for "kanna's FailedScheduling Event on $greedy" 30 event_on "$greedy" '^FailedScheduling Failed to schedule pod, .*10000 cpu'
ok "10,000 CPUs: $(events_on "$greedy" | grep '^FailedScheduling Failed to schedule pod, .*10000 cpu' | head -n 1 | cut -c 1-300)"
# The pods of the bad NodePools get kanna's FailedScheduling too (an
# invalid NodePool is no candidate; one whose EC2NodeClass is not Ready is
# named with the reason), and none a node.
for p in badop hugelimit nowhere; do
	pod=$(pod_of "$p")
	wait_for "kanna's FailedScheduling Event on $pod" 30 event_on "$pod" '^FailedScheduling Failed to schedule pod, '
	ok "$p's pod: $(events_on "$pod" | grep '^FailedScheduling Failed to schedule pod' | tail -n 1 | cut -c 1-300)"
done
event_on "$(pod_of nowhere)" '^FailedScheduling .*nodepool nowhere: EC2NodeClass nowhere is not ready' ||
	fail "the nowhere pod's FailedScheduling does not name its EC2NodeClass"

# --- a limit below what is in use -----------------------------------------------------------
used=$(kubectl get nodeclaims -l karpenter.sh/nodepool=below -o jsonpath='{range .items[*]}{.status.capacity.cpu}{"\n"}{end}' | awk '{ s += $1 } END { print s }')
[ "$used" -ge 2 ] || fail "NodePool below uses $used CPU"
kubectl patch nodepool below --type merge -p '{"spec":{"limits":{"cpu":"1"}}}' >/dev/null
kubectl scale deployment below --replicas 40 >/dev/null
over_limit() {
	for pod in $(kubectl get pods -l app=below -o jsonpath='{range .items[?(@.spec.nodeName=="")]}{.metadata.name}{"\n"}{end}'); do
		event_on "$pod" '^FailedScheduling .*nodepool below.*limits' && return 0
	done
	kubectl get pods -l app=below -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' |
		awk 'NF == 1 { print $1 }' | while read -r pod; do
			event_on "$pod" '^FailedScheduling .*nodepool below.*limits' && echo y
		done | grep -q y
}
wait_for "a FailedScheduling Event naming NodePool below's limits" 30 over_limit
claims_before=$(claims_of below | sort)
ok "limit below usage ($used CPU in use, limit 1): FailedScheduling names the limits"

# --- valid work still gets nodes ---------------------------------------------------------------
kubectl scale deployment inflate --replicas 8 >/dev/null
wait_for "8 inflate pods bound after the bad input" 60 all_bound inflate 8
sleep 2
expect_eq "no NodeClaim for NodePool badop, hugelimit or nowhere" \
	"$(for p in badop hugelimit nowhere; do claims_of "$p"; done | grep -c . || true)" 0
expect_eq "no NodeClaim for NodePool below past its limit" "$(claims_of below | sort)" "$claims_before"
expect_eq "the 10,000-CPU pod is not bound" "$(bound_of greedy)" 0
expect_one_instance_per_nodeclaim "at the end"
