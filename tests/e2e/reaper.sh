#!/bin/sh
# End-to-end: kanna-reaper on kanna-sim with the whole scale-up path.
#  - kubectl delete nodeclaim: the Node is tainted, drained, the instance
#    terminated (once), the finalizers removed, both objects gone;
#  - kubectl delete node under a PodDisruptionBudget that allows nothing:
#    the NodeClaim goes along, the drain holds with a FailedDraining Event
#    naming the budget, and goes on once the budget is relaxed;
#  - emptiness: a Node left with no pods is removed after consolidateAfter,
#    except while it carries karpenter.sh/do-not-disrupt;
#  - expiry: an expired Node's pods get a replacement NodeClaim first, whose
#    Node is Ready before the old one is deleted.
# At the end every NodeClaim has one live instance and no instance leaked.
# Expiry goes first: its replacement expires in turn, without pods, while
# the rest runs, so that the end compares a settled cluster.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

# pool NAME [DISRUPTION] [EXPIRE]: a v1 NodePool NAME labelling its nodes
# intent=NAME, and a Deployment NAME of 1-CPU pods selecting them (0 replicas).
pool() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {intent: $1}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: ${3:-Never}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
  disruption: {${2:-consolidationPolicy: WhenEmpty, consolidateAfter: Never}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: 0
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      nodeSelector: {intent: $1}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}
YAML
}

scale_and_wait() { # NAME REPLICAS: and every pod bound
	kubectl scale deployment "$1" --replicas "$2" >/dev/null
	wait_for "$2 $1 pod(s) bound" 90 sh -c "[ \$(kubectl get pods -l app=$1 -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = $2 ]"
}

e2e_init
# Instances boot into Ready Nodes in 2 s (the sim's pending time), not 3.
printf 'kubelet-boot-ms: 1000\n' >"$tmp/sim.yaml"
start_sim --config "$tmp/sim.yaml"
start_daemons
start_reaper
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null

# --- expiry: replacement first -------------------------------------------------------------
# Long enough for both pods to be bound to a node before it expires, and
# for the checks below to be done before its replacement expires in turn.
pool expiring "consolidationPolicy: WhenEmpty, consolidateAfter: Never" 20s
scale_and_wait expiring 2
old=$(claims_of expiring)
old_node=$(node_of "$old")
old_instance=$(instance_of "$old")
wait_for "a replacement NodeClaim" 90 sh -c "[ \$(kubectl get nodeclaims -l karpenter.sh/nodepool=expiring -o name | grep -c .) -ge 2 ]"
new=$(claims_of expiring | grep -vx "$old" | head -n 1)
wait_for "the expired NodeClaim $old removed" 90 gone nodeclaim "$old"
new_node=$(node_of "$new")
k8s_status >"$tmp/k8s-status.json"
python3 - "$tmp/k8s-status.json" "$old_node" "$new_node" <<'PY' || fail "the replacement was not Ready before the old node went"
import json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
def first(event, name):
    return min((e["time"] for e in tl if e["event"] == event and e["detail"].split(" ")[0] == name),
               default=None)
ready, deleting = first("node-ready", sys.argv[3]), first("node-deleting", sys.argv[2])
print("  replacement %s Ready at %s, %s deleted at %s" % (sys.argv[3], ready, sys.argv[2], deleting))
sys.exit(0 if ready and deleting and ready < deleting else 1)
PY
expect_eq "the pods run on the replacement" \
	"$(kubectl get pods -l app=expiring -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u)" "$new_node"
expect_eq "the old instance is on its way out" "$(instance_state "$old_instance" | grep -cE 'shutting-down|terminated')" 1
grep -q "launching replacement nodeclaim $new .* of $old" "$tmp/reaper.log" || fail "no replacement line"
ok "an expired node was replaced first, then removed"
# Its replacement expires in turn, while the rest runs: without pods it
# goes, and nothing replaces it.
kubectl scale deployment expiring --replicas 0 >/dev/null

# --- kubectl delete nodeclaim -----------------------------------------------------------
pool gone
scale_and_wait gone 2
claim=$(claims_of gone)
node=$(node_of "$claim")
instance=$(instance_of "$claim")
[ -n "$node" ] && [ -n "$instance" ] || fail "NodeClaim $claim has no Node or instance"
kubectl delete nodeclaim "$claim" --wait=false >/dev/null
wait_for "NodeClaim $claim gone" 60 gone nodeclaim "$claim"
expect_eq "its Node is gone too" "$(gone node "$node" && echo gone)" gone
expect_eq "its instance is on its way out" "$(instance_state "$instance" | grep -cE 'shutting-down|terminated')" 1
grep -q "evicted pod default/gone-" "$tmp/reaper.log" || fail "no pod was evicted from $node"
grep -q "deleted nodeclaim $claim" "$tmp/reaper.log" || fail "no 'deleted nodeclaim $claim' line"
ok "kubectl delete nodeclaim: tainted, drained, terminated, finalizers off"
wait_for "the gone pods bound again" 90 sh -c "[ \$(kubectl get pods -l app=gone -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 2 ]"
ok "the evicted pods run elsewhere"
kubectl scale deployment gone --replicas 0 >/dev/null

# --- kubectl delete node under a PDB that allows nothing ---------------------------------
pool held
scale_and_wait held 2
# A pod not yet running is evicted whatever its budget says (the API
# server's rule for Pending pods): the budget holds running ones.
wait_for "both held pods Running" 60 sh -c \
	"[ \$(kubectl get pods -l app=held -o jsonpath='{range .items[*]}{.status.phase}{\"\\n\"}{end}' | grep -c '^Running\$') = 2 ]"
claim=$(claims_of held)
node=$(node_of "$claim")
instance=$(instance_of "$claim")
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: held, namespace: default}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: held}}
YAML
kubectl delete node "$node" --wait=false >/dev/null
wait_for "the NodeClaim deleted along with its Node" 30 sh -c \
	"kubectl get nodeclaim $claim -o jsonpath='{.metadata.deletionTimestamp}' | grep -q ."
wait_for "a FailedDraining Event naming the PDB" 30 sh -c \
	"kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{\"\\n\"}{end}' | grep -q '^FailedDraining $node .*PodDisruptionBudget default/held'"
ok "the drain holds: $(kubectl get events -o jsonpath='{range .items[*]}{.reason} {.message}{"\n"}{end}' | grep '^FailedDraining' | head -1)"
sleep 2
expect_eq "both pods still on $node" "$(kubectl get pods -l app=held -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c "^$node\$")" 2
expect_eq "its instance still runs" "$(instance_state "$instance")" running
expect_eq "the Node still taints karpenter.sh/disrupted" \
	"$(kubectl get node "$node" -o jsonpath='{.spec.taints[?(@.key=="karpenter.sh/disrupted")].effect}')" NoSchedule
kubectl patch pdb held --type merge -p '{"spec":{"maxUnavailable":1}}' >/dev/null
wait_for "NodeClaim $claim gone once the PDB allows" 90 gone nodeclaim "$claim"
expect_eq "its Node is gone" "$(gone node "$node" && echo gone)" gone
expect_eq "its instance is on its way out" "$(instance_state "$instance" | grep -cE 'shutting-down|terminated')" 1
ok "kubectl delete node: the drain went on once the PDB allowed it"
kubectl delete pdb held >/dev/null
kubectl scale deployment held --replicas 0 >/dev/null

# --- emptiness, and do-not-disrupt ----------------------------------------------------------
pool empty "consolidationPolicy: WhenEmpty, consolidateAfter: 2s"
scale_and_wait empty 1
claim=$(claims_of empty)
node=$(node_of "$claim")
instance=$(instance_of "$claim")
wait_for "the node Ready" 30 sh -c "kubectl get node $node -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
kubectl annotate node "$node" karpenter.sh/do-not-disrupt=true >/dev/null
kubectl scale deployment empty --replicas 0 >/dev/null
wait_for "a DisruptionBlocked Event for do-not-disrupt" 30 sh -c \
	"kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{\"\\n\"}{end}' | grep -q '^DisruptionBlocked $claim .*do-not-disrupt'"
sleep 3
expect_eq "the empty node stays while it has do-not-disrupt" "$(gone nodeclaim "$claim" || echo here)" here
# A budget cron cannot read leaves the NodePool's nodes alone (and says so
# on the NodePool), however empty they are.
kubectl patch nodepool empty --type merge -p \
	'{"spec":{"disruption":{"budgets":[{"nodes":"100%","schedule":"61 * * * *","duration":"1h"}]}}}' >/dev/null
wait_for "DisruptionBudgetsValid=False on the empty NodePool" 30 sh -c \
	"kubectl get nodepool empty -o jsonpath='{.status.conditions[?(@.type==\"DisruptionBudgetsValid\")].status}' | grep -qx False"
kubectl annotate node "$node" karpenter.sh/do-not-disrupt- >/dev/null
sleep 3
expect_eq "the empty node stays while its NodePool's budget is malformed" "$(gone nodeclaim "$claim" || echo here)" here
kubectl patch nodepool empty --type merge -p '{"spec":{"disruption":{"budgets":[{"nodes":"10%"}]}}}' >/dev/null
wait_for "the empty NodeClaim removed" 60 gone nodeclaim "$claim"
expect_eq "its instance is on its way out" "$(instance_state "$instance" | grep -cE 'shutting-down|terminated')" 1
grep -q "disrupting nodeclaim(s) via delete, terminating 1 nodes (0 pods) .*reason Empty" "$tmp/reaper.log" ||
	fail "no 'disrupting nodeclaim(s) via delete' line for Empty"
ok "an empty node goes after consolidateAfter once do-not-disrupt is off and its budget readable"

wait_for "the expiring NodePool's last NodeClaim gone" 60 sh -c \
	"[ -z \"\$(kubectl get nodeclaims -l karpenter.sh/nodepool=expiring -o name)\" ]"
expect_each_terminated_once
# Launches and terminations still under way settle first.
agree() {
	[ "$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)" = \
	  "$(sim_instances | grep -E 'state=(pending|running)' | sed 's/.*nodeclaim=//' | sort)" ]
}
wait_for "NodeClaims and live instances to agree" 90 agree
expect_one_instance_per_nodeclaim "at the end"
