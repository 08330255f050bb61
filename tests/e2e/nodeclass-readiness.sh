#!/bin/sh
# End-to-end: an EC2NodeClass every launch would refuse is not Ready, says
# why, and gets no NodeClaim; a good one launches (kanna-sim, whole daemon
# set):
#  - Karpenter's own AL2023 userData example (aws/karpenter-provider-aws
#    examples/v1/al2023-custom-userdata.yaml, closed by "--//") launches;
#    its NodePool's spec.template.metadata.annotations reach the NodeClaim
#    and the Node, next to Karpenter's hash annotations;
#  - a multipart userData that never ends: Ready=False, UserDataInvalid;
#  - amiSelectorTerms matching no AMI: Ready=False, AMINotFound;
# the pods of the two bad ones get a FailedScheduling Event naming the
# EC2NodeClass and its reason, and neither NodePool a NodeClaim.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

# nodeclass NAME AMI-TERM (stdin: the userData, indented 4, or nothing);
# a term that is no alias needs an amiFamily (the CRD's rule): AL2023.
nodeclass() {
	{
		cat <<YAML
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: $1}
spec:
$(case $2 in *alias:*) ;; *) echo "  amiFamily: AL2023" ;; esac)
  amiSelectorTerms: [$2]
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
YAML
		if [ -n "${3:-}" ]; then
			echo "  userData: |"
			sed 's/^/    /'
		fi
	} | kubectl apply -f - >/dev/null
}
# nodepool NAME: labels intent=NAME, annotates team.example.com/owner=NAME
nodepool() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata:
      labels: {intent: $1}
      annotations: {team.example.com/owner: $1}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: $1}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
  limits: {cpu: 100}
YAML
}
workload() { # NAME
	intent_deployment "$1" | kubectl apply -f - >/dev/null
}
condition() { # KIND NAME TYPE: "STATUS REASON MESSAGE"
	kubectl get "$1" "$2" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].status} {.status.conditions[?(@.type==\"$3\")].reason} {.status.conditions[?(@.type==\"$3\")].message}"
}
condition_is() { # KIND NAME TYPE REGEX
	condition "$1" "$2" "$3" | grep -q -- "$4"
}
events_on() { # NAME: "REASON MESSAGE" of the Events on it
	kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{"\n"}{end}' |
		sed -n "s/^\([^ ]*\) $1 /\1 /p"
}
event_on() { # NAME REGEX
	events_on "$1" | grep -q -- "$2"
}
one_bound() { # APP: its one pod is bound
	[ "$(bound_pods "app=$1")" = 1 ]
}
pod_of() { # APP
	kubectl get pods -l "app=$1" -o jsonpath='{.items[0].metadata.name}'
}

e2e_init
start_sim
start_daemons
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"

nodeclass example '{alias: al2023@latest}' user-data <<'MIME'
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

# Example custom nodeconfig which mounts individual drives on an instance
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance:
    localStorage:
      strategy: Mount

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "Hello, AL2023!"
--//
MIME
nodeclass unclosed '{alias: al2023@latest}' user-data <<'MIME'
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "this part never ends"
MIME
nodeclass noami '{name: no-such-image-*}'
for p in example unclosed noami; do
	nodepool "$p"
	workload "$p"
done

# --- the example launches, with the template's annotations ------------------------------
wait_for "the example pod bound" 90 one_bound example
wait_for "EC2NodeClass example Ready" 30 condition_is ec2nodeclass example Ready '^True '
ok "Karpenter's AL2023 userData example launches; $(condition ec2nodeclass example Ready | cut -c 1-80)"
claim=$(claims_of example | head -n 1)
[ -n "$claim" ] || fail "no NodeClaim for NodePool example"
expect_eq "the NodeClaim has the template's annotation" \
	"$(kubectl get nodeclaim "$claim" -o jsonpath='{.metadata.annotations.team\.example\.com/owner}')" example
for a in karpenter\\.sh/nodepool-hash karpenter\\.sh/nodepool-hash-version \
	karpenter\\.k8s\\.aws/ec2nodeclass-hash karpenter\\.k8s\\.aws/ec2nodeclass-hash-version; do
	v=$(kubectl get nodeclaim "$claim" -o jsonpath="{.metadata.annotations.$a}")
	[ -n "$v" ] || fail "NodeClaim $claim has no $a annotation"
done
ok "NodeClaim $claim carries the nodepool and ec2nodeclass hashes with their versions"
node=$(node_of "$claim")
expect_eq "its Node has the template's annotation" \
	"$(kubectl get node "$node" -o jsonpath='{.metadata.annotations.team\.example\.com/owner}')" example

# --- the two that cannot launch: not Ready, why, no NodeClaim ---------------------------
wait_for "Ready=False on EC2NodeClass unclosed" 60 condition_is ec2nodeclass unclosed Ready '^False UserDataInvalid '
condition ec2nodeclass unclosed ValidationSucceeded | grep -q '^False UserDataInvalid spec.userData is refused for amiFamily AL2023: the multipart document does not end' ||
	fail "EC2NodeClass unclosed's ValidationSucceeded: $(condition ec2nodeclass unclosed ValidationSucceeded)"
ok "unclosed userData: $(condition ec2nodeclass unclosed Ready)"
wait_for "Ready=False on EC2NodeClass noami" 60 condition_is ec2nodeclass noami Ready '^False AMINotFound '
condition ec2nodeclass noami AMIsReady | grep -q '^False AMINotFound .*no-such-image' ||
	fail "EC2NodeClass noami's AMIsReady: $(condition ec2nodeclass noami AMIsReady)"
ok "no AMI: $(condition ec2nodeclass noami Ready)"
for p in unclosed noami; do
	pod=$(pod_of "$p")
	wait_for "a FailedScheduling Event on $pod naming EC2NodeClass $p" 60 \
		event_on "$pod" "^FailedScheduling .*EC2NodeClass $p is not ready"
	ok "$p's pod: $(events_on "$pod" | grep "EC2NodeClass $p is not ready" | tail -n 1 | cut -c 1-300)"
done
event_on "$(pod_of unclosed)" "^FailedScheduling .*EC2NodeClass unclosed is not ready: spec.userData is refused" ||
	fail "the unclosed pod's Event does not say why: $(events_on "$(pod_of unclosed)" | tail -n 1)"
sleep 3
expect_eq "no NodeClaim for NodePool unclosed or noami" \
	"$(for p in unclosed noami; do claims_of "$p"; done | grep -c . || true)" 0
expect_eq "their pods are not bound" "$(bound_pods app=unclosed)$(bound_pods app=noami)" 00
expect_one_instance_per_nodeclaim "at the end"
echo "PASS"
