#!/bin/sh
# End-to-end: NodeOverlays (karpenter.sh/v1alpha1) change what is launched
# and say whether kanna applies them (issue 16):
#  - a pod requests example.com/fuse, which no instance type has; a
#    NodeOverlay adds it to the m5 family: the pod's NodeClaim is an m5
#    (without the overlay the pod is unschedulable: no NodeClaim at all);
#  - the overlay's status: ValidationSucceeded and Ready True, with
#    observedGeneration; an overlay selecting by karpenter.sh/nodepool
#    (which kanna does not apply) gets ValidationSucceeded=False
#    UnsupportedField naming the key, Ready=False UnhealthyDependents.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }

cond() { # NAME TYPE: "STATUS REASON MESSAGE"
	kubectl get nodeoverlay "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status} {.status.conditions[?(@.type==\"$2\")].reason} {.status.conditions[?(@.type==\"$2\")].message}"
}
cond_is() { # NAME TYPE REGEX
	cond "$1" "$2" | grep -q -- "$3"
}
claim_type() { # the instance type of pool general's NodeClaim, once it has one
	c=$(claims_of general | head -n 1)
	[ -n "$c" ] || return 1
	kubectl get nodeclaim "$c" -o jsonpath='{.metadata.labels.node\.kubernetes\.io/instance-type}'
}

e2e_init
start_sim
start_daemons

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
metadata: {name: general}
spec:
  template:
    metadata: {labels: {intent: general}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: fuse}
spec:
  requirements:
  - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
  capacity: {example.com/fuse: "1"}
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: per-pool}
spec:
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [general]}
  priceAdjustment: "-10%"
YAML

wait_for "the fuse overlay's ValidationSucceeded" 30 cond_is fuse ValidationSucceeded '^True ValidationSucceeded'
wait_for "the fuse overlay's Ready" 10 cond_is fuse Ready '^True Ready'
gen=$(kubectl get nodeoverlay fuse -o jsonpath='{.metadata.generation}')
observed=$(kubectl get nodeoverlay fuse -o jsonpath='{.status.conditions[?(@.type=="Ready")].observedGeneration}')
expect_eq "fuse's observedGeneration" "$observed" "$gen"
ok "a valid NodeOverlay: ValidationSucceeded and Ready True (generation $gen)"
wait_for "the per-pool overlay's refusal" 30 cond_is per-pool ValidationSucceeded \
	'^False UnsupportedField spec.requirements: key karpenter.sh/nodepool is not supported by kanna'
wait_for "the per-pool overlay's Ready" 10 cond_is per-pool Ready '^False UnhealthyDependents'
ok "an overlay kanna does not apply says so: $(cond per-pool ValidationSucceeded)"

kubectl apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: general}
spec:
  replicas: 1
  selector: {matchLabels: {app: general}}
  template:
    metadata: {labels: {app: general}}
    spec:
      terminationGracePeriodSeconds: 0
      nodeSelector: {intent: general}
      containers:
      - name: c
        image: pause
        resources:
          requests: {cpu: 500m, memory: 256Mi, example.com/fuse: "1"}
          limits: {example.com/fuse: "1"}
YAML
wait_for "a NodeClaim for the fuse pod" 60 claim_type
type=$(claim_type)
case $type in
m5.*) ok "the pod that requests example.com/fuse launched $type (the overlay's m5 family)" ;;
*) fail "the fuse pod's NodeClaim is $type, not an m5" ;;
esac
expect_eq "NodeClaims of pool general" "$(claims_of general | grep -c .)" 1
