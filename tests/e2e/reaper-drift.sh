#!/bin/sh
# End-to-end: drift in kanna-reaper on kanna-sim, with the whole scale-up
# path. One pod per node (1.5 CPU on 2-CPU types), so that every node's pod
# needs a replacement; the NodePool's budget is nodes "1".
#  - dynamic drift: the EC2NodeClass's amiSelectorTerms changed to another
#    existing image → every node replaced (AMIDrift), each replacement's
#    Node Ready before the old Node is deleted (drained), never two old
#    nodes disrupted at once;
#  - static drift: a label added to the NodePool's template, its budget
#    raised to 100% in the same change (budgets are not hashed) → every node
#    replaced again (NodePoolDrifted), all at once, replacements Ready first;
#  - dynamic drift from EC2's description: the subnet selector narrowed to
#    one zone's subnet → the nodes in other zones replaced (SubnetDrift),
#    once the reaper's inventory (gc-period 1 s here) describes them.
# At the end every NodeClaim has one live instance and no instance leaked.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

# The sim's AL2023 images are named after their Kubernetes minor; two
# minors are two existing, different images of one family (sim/aws-images.c).
ami_name() { # MINOR
	echo "amazon-eks-node-al2023-*-standard-1.$1-v20250601"
}
# At least two nodes, so that the budget has something to hold back.
n=$(scaled 3)
[ "$n" -ge 2 ] || n=2

claims() {
	kubectl get nodeclaims -l karpenter.sh/nodepool=drift -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort
}
node_of() { # NODECLAIM
	kubectl get nodeclaim "$1" -o jsonpath='{.status.nodeName}{"\n"}'
}
pods_bound_to_new_nodes() { # OLD-NODES: every pod bound, none to an old node
	local bound gone
	bound=$(kubectl get pods -l app=drift -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}')
	[ "$(echo "$bound" | grep -c .)" = "$n" ] || return 1
	for gone in $1; do
		! echo "$bound" | grep -qx "$gone" || return 1
	done
}
none_left() { # CLAIMS: none of them exists any more
	local claim
	for claim in $1; do
		! kubectl get nodeclaim "$claim" >/dev/null 2>&1 || return 1
	done
}

# replaced_first WHAT OLD-CLAIMS OLD-NODES [one-at-a-time]: replacements
# Ready first — when the k-th old node was deleted (its drain began), at
# least k of the NodeClaims now present had Ready Nodes — and, with
# one-at-a-time (budget nodes "1"), never two old nodes disrupting (tainted
# karpenter.sh/disrupted until their NodeClaim is gone) at once.
replaced_first() {
	local news claim
	news=$(for claim in $(claims); do node_of "$claim"; done)
	k8s_status >"$tmp/k8s-status.json"
	python3 - "$tmp/k8s-status.json" "$2" "$3" "${4:-}" "$news" <<'PY' || fail "$1: replacements not Ready first, or the budget was exceeded"
import json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
claims, nodes, serial = sys.argv[2].split(), sys.argv[3].split(), sys.argv[4] == "one-at-a-time"
def first(event, name, extra=None):
    return min((e["time"] for e in tl if e["event"] == event and e["detail"].split(" ")[0] == name
                and (extra is None or extra in e["detail"])), default=None)
ready = sorted(t for t in (first("node-ready", n) for n in sys.argv[5].split()) if t)
ok, windows = True, []
for k, (deleting, node, claim) in enumerate(sorted((first("node-deleting", n) or "~", n, c)
                                                   for n, c in zip(nodes, claims)), 1):
    tainted = first("node-tainted", node, "karpenter.sh/disrupted")
    gone = first("nodeclaim-deleted", claim)
    before = sum(1 for t in ready if t < deleting)
    print("  %s: tainted %s, deleted %s with %d replacement(s) Ready, NodeClaim gone %s"
          % (node, tainted, deleting, before, gone))
    ok = ok and deleting != "~" and before >= k and bool(tainted and gone)
    windows.append((tainted or "", gone or "~"))
windows.sort()
for (s1, e1), (s2, e2) in zip(windows, windows[1:]):
    if serial and s2 < e1:
        print("  two old nodes disrupting at once: [%s, %s] and [%s, %s]" % (s1, e1, s2, e2))
        ok = False
sys.exit(0 if ok else 1)
PY
}

e2e_init
# Instances boot into Ready Nodes in 1 s (default 3 s): each node's
# replacement waits for one, one node at a time, twice over.
cat >"$tmp/sim.yaml" <<'YAML'
kubelet-boot-ms: 1000
YAML
start_sim --config "$tmp/sim.yaml"
start_daemons
metrics=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start reaper "$BUILDDIR/reaper/kanna-reaper" --runtime-dir "$tmp/run" --metrics-port "$metrics" \
	--health-port 0 --leader-elect=false --reconcile-period 500ms --log-level debug --gc-period 1s
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"

kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: drift}
spec:
  amiFamily: AL2023
  amiSelectorTerms:
  - name: "$(ami_name 32)"
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms:
  - tags: {karpenter.sh/discovery: kanna}
  securityGroupSelectorTerms:
  - tags: {karpenter.sh/discovery: kanna}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: drift}
spec:
  template:
    metadata: {labels: {intent: drift}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: drift}
      expireAfter: Never
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["2"]}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: Never
    budgets: [{nodes: "1"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: drift}
spec:
  replicas: $n
  selector: {matchLabels: {app: drift}}
  template:
    metadata: {labels: {app: drift}}
    spec:
      nodeSelector: {intent: drift}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: 1500m, memory: 1Gi}}}
YAML
wait_for "$n drift pods bound" 90 pods_bound_to_new_nodes ""
old=$(claims)
expect_eq "one NodeClaim per pod" "$(echo "$old" | grep -c .)" "$n"
for c in $old; do
	wait_for "node of $c Ready" 30 sh -c "kubectl get node \$(kubectl get nodeclaim $c -o jsonpath='{.status.nodeName}') -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
done
c=$(echo "$old" | head -n 1)
expect_eq "NodeClaims carry our NodePool hash version" \
	"$(kubectl get nodeclaim "$c" -o jsonpath='{.metadata.annotations.karpenter\.sh/nodepool-hash-version}')" kanna-v1
expect_eq "NodeClaims carry our EC2NodeClass hash version" \
	"$(kubectl get nodeclaim "$c" -o jsonpath='{.metadata.annotations.karpenter\.k8s\.aws/ec2nodeclass-hash-version}')" kanna-v2
image=$(kubectl get nodeclaim "$c" -o jsonpath='{.status.imageID}')
[ -n "$image" ] || fail "NodeClaim $c has no status.imageID"
sleep 1 # a pass or two with nothing drifted
grep -q "has drifted" "$tmp/reaper.log" && fail "a node drifted before anything changed"

# --- dynamic drift: another AMI ----------------------------------------------------------
old_nodes=$(for c in $old; do node_of "$c"; done)
kubectl patch ec2nodeclass drift --type merge \
	-p "{\"spec\":{\"amiSelectorTerms\":[{\"name\":\"$(ami_name 31)\"}]}}" >/dev/null
wait_for "the EC2NodeClass to resolve the new AMI" 30 sh -c \
	"kubectl get ec2nodeclass drift -o jsonpath='{.status.amis[*].id}' | grep -q . && ! kubectl get ec2nodeclass drift -o jsonpath='{.status.amis[*].id}' | grep -qw $image"
wait_for "every drifted NodeClaim replaced" 150 none_left "$old"
wait_for "every pod on a replacement" 60 pods_bound_to_new_nodes "$old_nodes"
grep -q "has drifted: AMIDrift" "$tmp/reaper.log" || fail "no 'has drifted: AMIDrift' line"
replaced_first "AMI drift" "$old" "$old_nodes" one-at-a-time
new=$(claims)
expect_eq "as many NodeClaims as before" "$(echo "$new" | grep -c .)" "$n"
for c in $new; do
	[ "$(kubectl get nodeclaim "$c" -o jsonpath='{.status.imageID}')" != "$image" ] ||
		fail "replacement $c still runs $image"
done
kubectl get events -o jsonpath='{range .items[*]}{.reason} {.message}{"\n"}{end}' |
	grep -q '^DisruptionTerminating Disrupting NodeClaim: Drifted' || fail "no DisruptionTerminating Event for Drifted"
curl -sS "http://127.0.0.1:$metrics/metrics" >"$tmp/metrics.txt"
# Once per NodeClaim, as Karpenter counts: each was a "replace" decision.
expect_eq "karpenter_nodeclaims_disrupted_total{reason=Drifted}" \
	"$(sed -n 's/^karpenter_nodeclaims_disrupted_total{nodepool="drift",reason="Drifted"} //p' "$tmp/metrics.txt")" "$n"
expect_eq "karpenter_voluntary_disruption_decisions_total{replace,Drifted}" \
	"$(sed -n 's/^karpenter_voluntary_disruption_decisions_total{decision="replace",reason="Drifted"} //p' "$tmp/metrics.txt")" "$n"
expect_eq "karpenter_voluntary_disruption_eligible_nodes{Drifted} once none is left" \
	"$(sed -n 's/^karpenter_voluntary_disruption_eligible_nodes{reason="Drifted"} //p' "$tmp/metrics.txt")" 0
ok "AMI drift: $n node(s) replaced one at a time, each replacement Ready first"

# --- static drift: the NodePool's template ----------------------------------------------
old=$new
old_nodes=$(for c in $old; do node_of "$c"; done)
kubectl patch nodepool drift --type merge -p '{"spec":{"template":{"metadata":{"labels":
	{"intent":"drift","generation":"2"}}},"disruption":{"budgets":[{"nodes":"100%"}]}}}' >/dev/null
wait_for "every drifted NodeClaim replaced" 150 none_left "$old"
wait_for "every pod on a replacement" 60 pods_bound_to_new_nodes "$old_nodes"
grep -q "has drifted: NodePoolDrifted" "$tmp/reaper.log" || fail "no 'has drifted: NodePoolDrifted' line"
replaced_first "NodePool drift" "$old" "$old_nodes"
# Replaced together, each node's plan places the others' pods too: one
# replacement a pod, not one a pod per node.
expect_eq "as many NodeClaims as before, not one more" "$(claims | grep -c .)" "$n"
for c in $(claims); do
	expect_eq "replacement $c carries the new template label" \
		"$(kubectl get nodeclaim "$c" -o jsonpath='{.metadata.labels.generation}')" 2
done
ok "NodePool drift: $n node(s) replaced at once under a 100% budget, each replacement Ready first"

# --- dynamic drift: the subnet, as EC2 describes the instance ---------------------------
zone_of() { # NODECLAIM
	kubectl get nodeclaim "$1" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}{"\n"}'
}
zones=$(for c in $(claims); do zone_of "$c"; done)
# The subnet of a zone with as few of the nodes as may be (none, if any).
subnet=$(kubectl get ec2nodeclass drift -o jsonpath='{range .status.subnets[*]}{.id} {.zone}{"\n"}{end}' |
	while read -r id zone; do echo "$(echo "$zones" | grep -cx "$zone") $id $zone"; done | sort -n | head -n 1)
keep_zone=${subnet##* }
subnet=$(echo "$subnet" | cut -d' ' -f2)
old=$(for c in $(claims); do [ "$(zone_of "$c")" = "$keep_zone" ] || echo "$c"; done)
old_nodes=$(for c in $old; do node_of "$c"; done)
kubectl patch ec2nodeclass drift --type merge -p "{\"spec\":{\"subnetSelectorTerms\":[{\"id\":\"$subnet\"}]}}" >/dev/null
wait_for "every NodeClaim outside $keep_zone replaced" 90 none_left "$old"
wait_for "every pod on a replacement" 60 pods_bound_to_new_nodes "$old_nodes"
grep -q "has drifted: SubnetDrift" "$tmp/reaper.log" || fail "no 'has drifted: SubnetDrift' line"
replaced_first "subnet drift" "$old" "$old_nodes"
expect_eq "every NodeClaim in $keep_zone" "$(for c in $(claims); do zone_of "$c"; done | sort -u)" "$keep_zone"
ok "subnet drift: $(echo "$old" | grep -c .) node(s) outside $keep_zone replaced, each replacement Ready first"

sleep 1 # the replacements are not drifted in turn
expect_eq "no NodeClaim is being disrupted" \
	"$(kubectl get nodes -o jsonpath='{range .items[*]}{.spec.taints[*].key}{"\n"}{end}' | grep -c karpenter.sh/disrupted || true)" 0
agree() {
	[ "$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)" = \
	  "$(sim_instances | grep -E 'state=(pending|running)' | sed 's/.*nodeclaim=//' | sort)" ]
}
wait_for "NodeClaims and live instances to agree" 60 agree
expect_one_instance_per_nodeclaim "at the end"
