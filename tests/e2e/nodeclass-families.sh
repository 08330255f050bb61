#!/bin/sh
# End-to-end: AMI families and variants beyond the standard Linux image
# (kanna-sim, whole daemon set), checked against what the sim recorded:
#  - a Windows2022 EC2NodeClass launches a Windows pod's node with the
#    Windows Server 2022 Core EKS_Optimized AMI, its launch template's user
#    data is the <powershell> Start-EKSBootstrap.ps1 block, and the Node is
#    kubernetes.io/os windows with build 10.0.20348;
#  - a pod asking for nvidia.com/gpu on a g5 NodePool of an al2023@latest
#    class boots the AL2023 nvidia variant, not the standard image;
#  - amiFamily Ubuntu is refused by the karpenter.k8s.aws/v1 CRD's enum
#    (v1 dropped it) and accepted in v1beta1.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

apply() { # NAME ALIAS NODESELECTOR-OF-THE-POD RESOURCES-OF-THE-POD NODEPOOL-REQUIREMENT
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: $1}
spec:
  amiSelectorTerms: [{alias: $2}]
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {intent: $1}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: $1}
      requirements: [$5]
  limits: {cpu: 100}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      terminationGracePeriodSeconds: 0
      nodeSelector: {intent: $1$3}
      containers:
      - {name: c, image: pause, resources: {requests: {$4}, limits: {$4}}}
YAML
}
one_bound() { # APP
	[ "$(bound_pods "app=$1")" = 1 ]
}
# NodePool $1's one instance, from /_sim/status: its image id on the first
# line, then its launch template's user data (decoded)
launched() {
	curl -sS "$AWS_ENDPOINT_URL/_sim/status" | python3 -c '
import base64, json, sys
s = json.load(sys.stdin)
lt = {t["launchTemplateId"]: t for t in s["templates"]}
for i in s["instances"]:
    if (i.get("tags") or {}).get("karpenter.sh/nodepool") == sys.argv[1]:
        t = lt[i["launchTemplateId"]]
        assert t["imageId"] == i["imageId"], (t, i)
        print(i["imageId"])
        print(base64.b64decode(t["userData"]).decode())' "$1"
}
ami_name() { # NODECLASS IMAGE-ID: the name its status gives the image
	kubectl get ec2nodeclass "$1" -o jsonpath="{range .status.amis[?(@.id==\"$2\")]}{.name}{\"\n\"}{end}" | sort -u
}
node_label() { # APP KEY
	node=$(kubectl get pods -l "app=$1" -o jsonpath='{.items[0].spec.nodeName}')
	kubectl get node "$node" -o jsonpath="{.metadata.labels['$(echo "$2" | sed 's/\./\\./g')']}"
}

e2e_init
start_sim
start_daemons
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"

apply win windows2022@latest ', kubernetes.io/os: windows' 'cpu: "1", memory: 1Gi' \
	'{key: karpenter.k8s.aws/instance-category, operator: In, values: [m]}'
apply gpu al2023@latest '' 'nvidia.com/gpu: "1"' \
	'{key: karpenter.k8s.aws/instance-family, operator: In, values: [g5]}'

# --- Windows2022 ------------------------------------------------------------------------------
wait_for "the Windows pod bound" 90 one_bound win
out=$(launched win)
expect_eq "the Windows node's AMI" "$(ami_name win "$(echo "$out" | head -n 1)")" \
	"Windows_Server-2022-English-Core-EKS_Optimized-1.32-2025.06.01"
ud=$(echo "$out" | tail -n +2)
echo "$ud" | grep -q '^<powershell>' || fail "Windows user data is not a <powershell> block: $ud"
echo "$ud" | grep -q "Start-EKSBootstrap.ps1" || fail "no Start-EKSBootstrap.ps1 in: $ud"
echo "$ud" | grep -q -- "-KubeletExtraArgs '--node-labels=\"[^']*intent=win" || fail "no node labels in: $ud"
echo "$ud" | tail -n 1 | grep -q '^</powershell>$' || fail "the block is not closed: $ud"
ok "the Windows launch template holds Karpenter's PowerShell bootstrap"
expect_eq "the Windows node's os" "$(node_label win kubernetes.io/os)" windows
expect_eq "the Windows node's build" "$(node_label win node.kubernetes.io/windows-build)" 10.0.20348

# --- NVIDIA GPU on AL2023 -------------------------------------------------------------------
wait_for "the GPU pod bound" 90 one_bound gpu
out=$(launched gpu)
expect_eq "the g5 node's AMI" "$(ami_name gpu "$(echo "$out" | head -n 1)")" \
	"amazon-eks-node-al2023-x86_64-nvidia-1.32-v20250601"
case "$(node_label gpu node.kubernetes.io/instance-type)" in
g5.*) ok "on a g5" ;;
*) fail "the GPU pod is on $(node_label gpu node.kubernetes.io/instance-type)" ;;
esac
echo "$out" | grep -q "application/node.eks.aws" || fail "the nvidia variant's user data is not nodeadm's"

# --- Ubuntu: v1beta1 only ----------------------------------------------------------------------
ubuntu() { # API-VERSION
	kubectl apply -f - 2>&1 <<YAML
apiVersion: karpenter.k8s.aws/$1
kind: EC2NodeClass
metadata: {name: ubuntu}
spec:
  amiFamily: Ubuntu
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
YAML
}
out=$(ubuntu v1) && fail "a v1 EC2NodeClass with amiFamily Ubuntu was accepted: $out"
echo "$out" | grep -q 'spec.amiFamily: Unsupported value: "Ubuntu": supported values: "AL2", ' ||
	fail "the v1 refusal does not say why: $out"
ok "v1 refuses amiFamily Ubuntu"
out=$(ubuntu v1beta1) || fail "v1beta1 refused amiFamily Ubuntu: $out"
ok "v1beta1 takes amiFamily Ubuntu"
expect_one_instance_per_nodeclaim "at the end"
echo "PASS"
