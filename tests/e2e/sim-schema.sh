#!/bin/sh
# End-to-end: the real kubectl against kanna-sim's custom resources, which
# are validated, defaulted and pruned with their CRD's schema as
# kube-apiserver does: an invalid enum, a wrong type and a missing required
# field are refused with kube-apiserver's words; an unknown field is refused
# under kubectl's default --validate=strict (fieldValidation=Strict, on
# create and on the PATCH of an existing object), warned about under
# --validate=warn and dropped; the schema's defaults show in get -o yaml.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }

expect_refused() { # WHAT EXPECTED-TEXT: the last apply failed and said it
	printf '%s' "$out" | grep -qF -- "$2" || fail "$1: '$2' not in: $out"
	ok "$1: $(printf '%s' "$out" | head -n 3 | cut -c 1-200)"
}
# nodepool NAME SPEC-LINES [kubectl flags]: applies a NodePool; $out is what kubectl said.
nodepool() {
	name=$1 spec=$2
	shift 2
	if out=$(kubectl apply "$@" -f - 2>&1 <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $name}
spec:
$spec
YAML
	); then
		return 0
	fi
	return 1
}
REF='      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}'
REQ='      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]'

e2e_init
export KUBECACHEDIR="$tmp/kubecache"
start_sim

nodepool badenum "  disruption: {consolidateAfter: 1m, consolidationPolicy: Foo}
  template:
    spec:
$REF
$REQ" && fail "an unknown consolidationPolicy was accepted"
expect_refused "invalid enum" \
	'The NodePool "badenum" is invalid: spec.disruption.consolidationPolicy: Unsupported value: "Foo": supported values: "WhenEmpty", "WhenEmptyOrUnderutilized"'

nodepool badtype "  weight: heavy
  template:
    spec:
$REF
$REQ" && fail "a string weight was accepted"
# Two causes, listed as kubectl lists them: the type error, and (the
# NodePool schema having x-kubernetes-validations) the rules it kept from
# being checked.
expect_refused "wrong type" \
	'* spec.weight: Invalid value: "string": spec.weight in body must be of type integer: "string"'
expect_refused "wrong type blocks the CEL rules" \
	'* <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid'

nodepool badbudget "  disruption: {consolidateAfter: 1m, budgets: [{nodes: '10%', schedule: '@daily'}]}
  template:
    spec:
$REF
$REQ" && fail "a budget with a schedule and no duration was accepted"
expect_refused "x-kubernetes-validations (CEL)" \
	"The NodePool \"badbudget\" is invalid: spec.disruption.budgets: Invalid value: \"array\": 'schedule' must be set with 'duration'"

nodepool noref "  template:
    spec:
$REQ" && fail "a NodePool without nodeClassRef was accepted"
expect_refused "missing required field" \
	'The NodePool "noref" is invalid: spec.template.spec.nodeClassRef: Required value'

nodepool unknown "  foo: bar
  template:
    spec:
$REF
$REQ" && fail "an unknown field was accepted under --validate=strict"
expect_refused "unknown field, Strict (create)" \
	'NodePool in version "v1" cannot be handled as a NodePool: strict decoding error: unknown field "spec.foo"'
gone nodepool unknown || fail "NodePool unknown was stored"

nodepool unknown "  foo: bar
  template:
    spec:
$REF
$REQ" --validate=warn || fail "--validate=warn refused: $out"
expect_refused "unknown field, Warn" 'Warning: unknown field "spec.foo"'
expect_eq "the unknown field is dropped" "$(kubectl get nodepool unknown -o jsonpath='{.spec.foo}')" ""

nodepool unknown "  foo: bar
  template:
    spec:
$REF
$REQ" && fail "an unknown field was accepted on a PATCH under --validate=strict"
expect_refused "unknown field, Strict (patch)" 'strict decoding error: unknown field "spec.foo"'

# Defaults: what Karpenter's CRD fills in shows in get -o yaml.
nodepool defaults "  template:
    spec:
$REF
$REQ" || fail "a minimal NodePool was refused: $out"
yaml=$(kubectl get nodepool defaults -o yaml)
for want in 'consolidateAfter: 0s' 'consolidationPolicy: WhenEmptyOrUnderutilized' '- nodes: 10%' 'expireAfter: 720h'; do
	printf '%s\n' "$yaml" | grep -qF -- "$want" || fail "get -o yaml lacks '$want': $yaml"
	ok "default $want"
done
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: defaults}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
YAML
yaml=$(kubectl get ec2nodeclass defaults -o yaml)
for want in 'httpTokens: required' 'httpPutResponseHopLimit: 1'; do
	printf '%s\n' "$yaml" | grep -qF -- "$want" || fail "EC2NodeClass get -o yaml lacks '$want': $yaml"
	ok "default $want"
done
echo "PASS"
