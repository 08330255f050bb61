#!/bin/sh
# End-to-end: the status kanna writes on Karpenter's pools of every version,
# and kubelet settings of the older versions honoured or refused (issue 16):
#  - a v1 NodePool with a launched node: status.resources (cpu, memory,
#    pods, ephemeral-storage, nodes: the node's capacity), status.nodes, and
#    ValidationSucceeded, NodeClassReady and Ready True, as `kubectl get
#    nodepool -o yaml` shows them; a NodePool whose EC2NodeClass does not
#    exist: NodeClassReady=False NodeClassNotFound, Ready=False
#    UnhealthyDependents; one whose nodeClassRef names another group (with
#    the name of a Ready EC2NodeClass): NodeClassReady=False
#    NodeClassNotFound as Karpenter's, ValidationSucceeded=False naming the
#    field, and no NodeClaim for its pod;
#  - a v1beta1 NodePool (read at v1beta1) with kubelet maxPods 7: its
#    NodeClaim's capacity and allocatable pods are 7, and its
#    status.resources counts it (v1beta1's status schema has resources only);
#  - a v1beta1 NodePool with kubelet evictionSoft: refused, a FailedValidation
#    Event naming the field, no NodeClaim; its v1 twin with the same field in
#    the v1beta1 kubelet conversion annotation: ValidationSucceeded=False
#    UnsupportedField;
#  - a v1alpha5 Provisioner: its status.resources and Ready, and its
#    AWSNodeTemplate's resolved subnets; a v1beta1 EC2NodeClass's status
#    (conditions, subnets) written at v1beta1;
#  - once settled, no pool's status is written again (resourceVersions stay).
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }

cond() { # KIND NAME TYPE: "STATUS REASON MESSAGE"
	kubectl get "$1" "$2" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].status} {.status.conditions[?(@.type==\"$3\")].reason} {.status.conditions[?(@.type==\"$3\")].message}"
}
cond_is() { # KIND NAME TYPE REGEX
	cond "$1" "$2" "$3" | grep -q -- "$4"
}
res() { # KIND NAME RESOURCE
	kubectl get "$1" "$2" -o jsonpath="{.status.resources.$3}"
}
res_is() { # KIND NAME RESOURCE VALUE
	[ "$(res "$1" "$2" "$3")" = "$4" ]
}
workload() { # APP
	intent_deployment "$1" 500m 128Mi | kubectl apply -f - >/dev/null
}
v1beta1_pool() { # NAME KUBELET
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {intent: $1}}
    spec:
      nodeClassRef: {apiVersion: karpenter.k8s.aws/v1, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      kubelet: $2
YAML
}

e2e_init
start_sim
set -a
. "$tmp/state/aws.env"
set +a
# v1beta1 NodePools beside v1 ones: the sim serves each version's objects
# apart (no conversion webhook), so the watcher reads nodepools.v1beta1 (and
# ec2nodeclasses.v1beta1) too.
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --announce-interval 500ms \
	--resources pods,nodes,nodepools,nodepools.v1beta1,provisioners,nodeclaims,ec2nodeclasses,ec2nodeclasses.v1beta1,awsnodetemplates,daemonsets,namespaces
start scheduler "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" \
	--metrics-port 0 --health-port 0 --leader-elect=false --batch-idle-duration 500ms --plan-timeout 30s
start_launcher

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
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: lost}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: missing}
      requirements: []
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: foreign}
spec:
  template:
    metadata: {labels: {intent: foreign}}
    spec:
      nodeClassRef: {group: example.com, kind: EC2NodeClass, name: default}
      requirements: []
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: converted
  annotations:
    compatibility.karpenter.sh/v1beta1-kubelet-conversion: '{"maxPods":7,"imageGCHighThresholdPercent":85}'
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
---
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: beta-class}
spec:
  amiFamily: AL2
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: legacy}
spec:
  subnetSelector: {karpenter.sh/discovery: kanna}
  securityGroupSelector: {karpenter.sh/discovery: kanna}
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: legacy}
spec:
  providerRef: {name: legacy}
YAML
v1beta1_pool beta '{maxPods: 7}'
v1beta1_pool soft '{maxPods: 7, evictionSoft: {memory.available: 10%}, evictionSoftGracePeriod: {memory.available: 1m}}'
for app in general beta soft foreign; do
	workload "$app"
done

# --- v1: resources, nodes and the Ready conditions -------------------------------------------
wait_for "the general pod bound" 60 placed general=1
node=$(nodes_of_app general)
# A NodeClaim counts from its creation (nodes 1), with its capacity once
# launched and its Node's once registered: wait for the Node's figures.
counted_as_node() { # NODEPOOL NODE
	local r want got
	[ "$(kubectl get nodepool "$1" -o jsonpath='{.status.nodes}')" = 1 ] || return 1
	for r in cpu memory pods ephemeral-storage; do
		want=$(kubectl get node "$2" -o jsonpath="{.status.capacity.$r}")
		got=$(res nodepool "$1" "$r")
		[ -n "$want" ] || want=0
		python3 - "$got" "$want" <<'PY' || return 1
import sys
def q(s):
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "m": 0.001, "k": 1000, "M": 10**6, "G": 10**9}
    for u, f in units.items():
        if s.endswith(u):
            return float(s[:-len(u)]) * f
    return float(s)
sys.exit(0 if q(sys.argv[1]) == q(sys.argv[2]) else 1)
PY
	done
}
# kanna-sim's kubelet-lite posts the Node's status (its capacity) once Ready.
wait_for "node $node Ready" 30 node_ready "$node"
wait_for "NodePool general's status to count its node's capacity" 30 counted_as_node general "$node"
kubectl get nodepool general -o yaml | sed -n '/^status:/,$p' >"$tmp/general-status.yaml"
sed 's/^/    /' "$tmp/general-status.yaml"
ok "status.resources is the node's capacity: cpu $(res nodepool general cpu), memory $(res nodepool general memory), pods $(res nodepool general pods)"
expect_eq "status.resources.nodes" "$(res nodepool general nodes)" 1
for t in ValidationSucceeded NodeClassReady Ready; do
	cond_is nodepool general "$t" '^True ' || fail "NodePool general: $t is '$(cond nodepool general "$t")'"
done
ok "general: ValidationSucceeded, NodeClassReady and Ready are True"
wait_for "NodeClassReady=False on NodePool lost" 15 cond_is nodepool lost NodeClassReady \
	'^False NodeClassNotFound NodeClass not found on cluster$'
cond_is nodepool lost Ready '^False UnhealthyDependents NodeClassReady=False$' ||
	fail "NodePool lost: Ready is '$(cond nodepool lost Ready)'"
ok "lost: $(cond nodepool lost Ready)"
wait_for "NodeClassReady=False on NodePool foreign" 15 cond_is nodepool foreign NodeClassReady \
	'^False NodeClassNotFound NodeClass not found on cluster$'
cond_is nodepool foreign ValidationSucceeded '^False ValidationFailed spec.template.spec.nodeClassRef: ' ||
	fail "NodePool foreign: ValidationSucceeded is '$(cond nodepool foreign ValidationSucceeded)'"
ok "foreign: $(cond nodepool foreign ValidationSucceeded)"

# --- v1beta1: kubelet maxPods honoured, evictionSoft refused -----------------------------------
wait_for "the beta pod bound" 60 placed beta=1
# The NodeClaim holds what the launcher rendered into the user data and the
# scheduler planned with (kanna-sim's kubelet-lite sizes Nodes by the
# catalog, not by user data).
beta_claim=$(claims_of beta)
expect_eq "v1beta1 kubelet maxPods: the NodeClaim's capacity and allocatable pods" \
	"$(kubectl get nodeclaim "$beta_claim" -o jsonpath='{.status.capacity.pods} {.status.allocatable.pods}')" "7 7"
wait_for "status.resources on the v1beta1 NodePool" 30 res_is nodepools.v1beta1.karpenter.sh beta nodes 1
wait_for "the beta node Ready" 30 node_ready "$(nodes_of_app beta)"
expect_eq "v1beta1 status has resources only" \
	"$(kubectl get nodepools.v1beta1.karpenter.sh beta -o jsonpath='{.status.conditions}{.status.nodes}')" ""
soft_event() {
	kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.kind}/{.involvedObject.name} {.message}{"\n"}{end}' |
		grep -q '^FailedValidation NodePool/soft spec.template.spec.kubelet.evictionSoft[ ,].*supported by kanna$'
}
wait_for "a FailedValidation Event on NodePool soft naming evictionSoft" 30 soft_event
wait_for "ValidationSucceeded=False on NodePool converted" 15 cond_is nodepool converted ValidationSucceeded \
	'^False UnsupportedField metadata.annotations.compatibility.karpenter.sh/v1beta1-kubelet-conversion.imageGCHighThresholdPercent is not supported by kanna$'
ok "converted: $(cond nodepool converted ValidationSucceeded)"
expect_eq "no NodeClaim for NodePool soft" "$(claims_of soft | grep -c . || true)" 0
expect_eq "its pod is not bound" "$(bound_pods app=soft)" 0
expect_eq "no NodeClaim for NodePool foreign (another group's class)" "$(claims_of foreign | grep -c . || true)" 0
expect_eq "its pod is not bound" "$(bound_pods app=foreign)" 0

# --- v1alpha5: the Provisioner's status and its AWSNodeTemplate's ------------------------------
wait_for "status.resources on Provisioner legacy" 15 res_is provisioner legacy nodes 0
cond_is provisioner legacy Ready '^True ' || fail "Provisioner legacy: Ready is '$(cond provisioner legacy Ready)'"
ok "Provisioner legacy: resources $(kubectl get provisioner legacy -o jsonpath='{.status.resources}'), Ready True"
wait_for "subnets on AWSNodeTemplate legacy" 30 sh -c \
	"kubectl get awsnodetemplate legacy -o jsonpath='{.status.subnets[*].id}' | grep -q subnet-"
ok "AWSNodeTemplate legacy: subnets $(kubectl get awsnodetemplate legacy -o jsonpath='{.status.subnets[*].zone}')"
# --- a status written once: our own write, echoed back, changes nothing -----------------------
rv() {
	for np in general lost foreign converted; do
		kubectl get nodepool "$np" -o jsonpath='{.metadata.resourceVersion} '
	done
	kubectl get nodepools.v1beta1.karpenter.sh beta -o jsonpath='{.metadata.resourceVersion} '
	kubectl get provisioner legacy -o jsonpath='{.metadata.resourceVersion}'
}
sleep 2 # a Node status posted last is counted within a period
before=$(rv)
sleep 5 # two and a half status periods
expect_eq "no status rewritten while nothing changes (resourceVersions)" "$(rv)" "$before"

# --- v1beta1 EC2NodeClass: its status at v1beta1 ------------------------------------------------
wait_for "Ready on the v1beta1 EC2NodeClass" 30 cond_is ec2nodeclasses.v1beta1.karpenter.k8s.aws beta-class Ready '^True '
ok "v1beta1 EC2NodeClass beta-class: Ready True, subnets $(kubectl get ec2nodeclasses.v1beta1.karpenter.k8s.aws beta-class -o jsonpath='{.status.subnets[*].zone}')"
expect_one_instance_per_nodeclaim "at the end"
echo "PASS"
