#!/bin/sh
# End-to-end: an EC2NodeClass field kanna does not implement is refused
# visibly, never dropped (kanna-sim, whole daemon set):
#  - spec.cpuOptions: ValidationSucceeded=False UnsupportedField naming the
#    field, Ready=False, a FailedScheduling Event on the pod, no NodeClaim;
#  - spec.kubelet.registryPullQPS (a KubeletConfiguration key of v1's open
#    kubelet map that kanna neither reads nor lists): the same, by name;
#  - spec.associatePublicIPAddress (implemented: the launch template's
#    network interface) launches.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

nodeclass() { # NAME EXTRA-SPEC-LINE
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: $1}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  $2
YAML
}
nodepool_and_workload() { # NAME
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {intent: $1}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: $1}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
  limits: {cpu: 100}
---
$(intent_deployment "$1")
YAML
}
condition() { # NAME TYPE: "STATUS REASON MESSAGE"
	kubectl get ec2nodeclass "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status} {.status.conditions[?(@.type==\"$2\")].reason} {.status.conditions[?(@.type==\"$2\")].message}"
}
condition_is() { # NAME TYPE REGEX
	condition "$1" "$2" | grep -q -- "$3"
}
one_bound() { # APP
	[ "$(bound_pods "app=$1")" = 1 ]
}
pod_event_says() { # APP REGEX
	pod=$(kubectl get pods -l "app=$1" -o jsonpath='{.items[0].metadata.name}')
	kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{"\n"}{end}' |
		grep -q -- "^FailedScheduling $pod .*$2"
}

e2e_init
start_sim
start_daemons
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"

nodeclass pinned 'cpuOptions: {nestedVirtualization: enabled}'
nodeclass public 'associatePublicIPAddress: false'
nodeclass tuned 'kubelet: {maxPods: 20, registryPullQPS: 10}'
for p in pinned public tuned; do
	nodepool_and_workload "$p"
done

# --- implemented: launches -----------------------------------------------------------------
wait_for "the public pod bound" 90 one_bound public
condition_is public ValidationSucceeded '^True ' || fail "public: ValidationSucceeded $(condition public ValidationSucceeded)"
ok "associatePublicIPAddress: launched; $(condition public Ready | cut -c 1-60)"

# --- not implemented: refused with the field named, no NodeClaim -----------------------------
wait_for "ValidationSucceeded=False on pinned" 60 condition_is pinned ValidationSucceeded \
	'^False UnsupportedField spec.cpuOptions is not supported by kanna$'
condition_is pinned Ready '^False UnsupportedField spec.cpuOptions is not supported by kanna$' ||
	fail "pinned: Ready $(condition pinned Ready)"
ok "cpuOptions: $(condition pinned Ready)"
wait_for "a FailedScheduling Event naming the field" 60 pod_event_says pinned \
	"EC2NodeClass pinned is not ready: spec.cpuOptions is not supported by kanna"
wait_for "ValidationSucceeded=False on tuned" 60 condition_is tuned ValidationSucceeded \
	'^False UnsupportedField spec.kubelet.registryPullQPS is not supported by kanna$'
ok "kubelet registryPullQPS: $(condition tuned ValidationSucceeded)"
sleep 3
expect_eq "no NodeClaim for NodePool tuned" "$(claims_of tuned | grep -c . || true)" 0
expect_eq "its pod is not bound" "$(bound_pods app=tuned)" 0
expect_eq "no NodeClaim for NodePool pinned" "$(claims_of pinned | grep -c . || true)" 0
expect_eq "its pod is not bound" "$(bound_pods app=pinned)" 0
expect_one_instance_per_nodeclaim "at the end"
echo "PASS"
