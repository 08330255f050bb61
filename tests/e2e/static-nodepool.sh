#!/bin/sh
# End-to-end: a static NodePool (spec.replicas) on kanna-sim.
#  - replicas 3: three NodeClaims, their Nodes Ready, with no pod at all;
#  - scaled to 5: five; to 2: the reaper removes 3;
#  - drifted: each node replaced first, then removed;
#  - the launcher SIGKILLed while it scales up again and restarted: never
#    more NodeClaims than replicas, one instance each;
#  - a pod that only the static pool's nodes could take, too big for them,
#    opens no NodeClaim in it; one that fits runs on one of them;
#  - limits.nodes caps replicas.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

claims() { claims_of fixed | grep -c . || true; }
# ready_nodes: Nodes of the pool whose Ready is True.
ready_nodes() {
	kubectl get nodes -l karpenter.sh/nodepool=fixed \
		-o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
		grep -c True || true
}
# at N: exactly N NodeClaims of the pool, none being deleted, N Ready Nodes.
at() {
	[ "$(claims)" = "$1" ] && [ "$(ready_nodes)" = "$1" ] &&
		[ -z "$(kubectl get nodeclaims -l karpenter.sh/nodepool=fixed \
			-o jsonpath='{.items[*].metadata.deletionTimestamp}')" ]
}
only() { # N: at N, and no other NodeClaim left (the removed ones gone)
	at "$1" && [ "$(kubectl get nodeclaims -o name | grep -c .)" = "$1" ]
}
live_instances() { # N: the sim has N pending or running instances
	[ "$(sim_instances | grep -cE 'state=(pending|running)')" = "$1" ]
}
# timeline_len: entries in the sim's Kubernetes timeline so far.
timeline_len() {
	k8s_status | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["timeline"]))'
}
# most_claims_since N: the most NodeClaims of the pool that existed at once
# from timeline entry N on (created .. gone, terminating ones included).
most_claims_since() {
	k8s_status | python3 -c '
import json, sys
since, n, top = int(sys.argv[1]), 0, 0
for i, e in enumerate(json.load(sys.stdin)["timeline"]):
    d = e["detail"].split(" ")
    if e["event"] == "nodeclaim-created" and d[1:2] == ["fixed"]:
        n += 1
    elif e["event"] == "nodeclaim-deleted" and d[0].startswith("fixed-"):
        n -= 1
    else:
        continue
    if i >= since:
        top = max(top, n)
    if i == since - 1:
        top = n
print(top)' "$1"
}
# scale N: spec.replicas (kanna-sim serves no scale subresource for custom
# resources, so not kubectl scale).
scale() {
	kubectl patch nodepool fixed --type merge -p "{\"spec\":{\"replicas\":$1}}" >/dev/null
}

e2e_init
start_sim
start_daemons --log-level debug
start_reaper
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"

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
metadata: {name: fixed}
spec:
  replicas: 3
  template:
    metadata: {labels: {intent: fixed}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
  limits: {nodes: 6}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 0s}
YAML
wait_for "3 NodeClaims and 3 Ready Nodes" 40 at 3
ok "replicas 3: 3 NodeClaims and 3 Ready Nodes, with no pod"
expect_eq "the cheapest type that satisfies the pool" \
	"$(kubectl get nodes -l karpenter.sh/nodepool=fixed -o jsonpath='{range .items[*]}{.metadata.labels.node\.kubernetes\.io/instance-type}{"\n"}{end}' | sort -u)" m5.large
expect_one_instance_per_nodeclaim "replicas 3"

grep -q "provisioning 3 nodeclaim(s) to satisfy replica count of nodepool fixed" "$tmp/launcher.log" ||
	fail "no 'provisioning 3 nodeclaim(s)' line in the launcher's log"
sleep 2 # longer than the pool's consolidateAfter: emptiness must leave them
expect_eq "empty static nodes are not consolidated" "$(claims)" 3

scale 5
wait_for "5 NodeClaims and 5 Ready Nodes" 40 at 5
ok "scaled to 5: 5 NodeClaims and 5 Ready Nodes"
scale 2
wait_for "2 NodeClaims left, the others gone" 40 only 2
ok "scaled to 2: the reaper removed 3"
grep -q "deprovisioning 3 nodeclaim(s) to satisfy replica count of nodepool fixed" "$tmp/reaper.log" ||
	fail "no 'deprovisioning 3 nodeclaim(s)' line in the reaper's log"
wait_for "the removed instances terminated" 30 live_instances 2
expect_one_instance_per_nodeclaim "replicas 2"

# Drift (a label added to the template, budget 100% in the same change):
# each node is tainted, the launcher launches its replacement first, the
# reaper deletes it once that is Ready (upstream's static drift).
old_claims=$(claims_of fixed | sort | tr '\n' ' ')
mark=$(timeline_len)
kubectl patch nodepool fixed --type merge -p '{"spec":{"template":{"metadata":{"labels":
	{"intent":"fixed","generation":"2"}}},"disruption":{"budgets":[{"nodes":"100%"}]}}}' >/dev/null
wait_for "both drifted nodes replaced" 40 sh -c "[ \"\$(kubectl get nodes -l generation=2,karpenter.sh/nodepool=fixed -o name | grep -c .)\" = 2 ] && [ \"\$(kubectl get nodeclaims -o name | grep -c .)\" = 2 ]"
wait_for "2 NodeClaims and 2 Ready Nodes after the drift" 30 only 2
for c in $old_claims; do
	gone nodeclaim "$c" || fail "drifted nodeclaim $c still there"
done
# Every replacement initialized (launcher) before the first drifted one
# was deleted (reaper): the logs' times, one clock.
python3 - "$tmp/launcher.log" "$tmp/reaper.log" $(claims_of fixed) <<'PY' || fail "a drifted static node went before its replacements were Ready"
import re, sys
launcher, reaper, new = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3:]
# The last time each was initialized: names are reused after a scale-down.
ready = [re.findall(r"^(\S+) .*initialized nodeclaim %s " % re.escape(c), launcher, re.M) for c in new]
deleted = re.search(r"^(\S+) .*via delete.*reason Drifted", reaper, re.M)
assert all(ready) and deleted, (ready, deleted)
assert max(t[-1] for t in ready) <= deleted.group(1), ([t[-1] for t in ready], deleted.group(1))
PY
grep -q "static nodepool fixed replaces it first" "$tmp/reaper.log" || fail "no drift line in the reaper's log"
ok "drift: replaced first, then removed"
expect_eq "at most replicas + budget NodeClaims during the drift" "$(most_claims_since "$mark")" 4

# SIGKILL the launcher while it scales up to 5 again, restart it: the
# NodeClaims it had POSTed are named again (AlreadyExists), never doubled.
mark=$(timeline_len)
scale 5
wait_for "the launcher to start the scale-up" 20 sh -c "[ \$(grep -c 'provisioning 3 nodeclaim' '$tmp/launcher.log') -ge 2 ]"
kill -KILL "$pid_launcher"
wait "$pid_launcher" 2>/dev/null || true
start_launcher --log-level debug
wait_for "5 NodeClaims and 5 Ready Nodes after the restart" 60 at 5
expect_eq "never more NodeClaims than replicas across the SIGKILL" "$(most_claims_since "$mark")" 5
expect_one_instance_per_nodeclaim "replicas 5 after a SIGKILL"

# A pod only the static pool's nodes could take, too big for them: it
# stays pending and opens no NodeClaim in the pool.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: big, labels: {app: big}}
spec:
  nodeSelector: {intent: fixed}
  containers:
  - name: big
    image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
    resources: {requests: {cpu: "64"}}
YAML
wait_for "the scheduler to find no place for it" 30 grep -q "incompatible with nodepool fixed: it is static" "$tmp/scheduler.log"
sleep 2
expect_eq "no NodeClaim for the pod in the static pool" "$(claims)" 5
expect_eq "the pod stays pending" "$(kubectl get pod big -o jsonpath='{.spec.nodeName}')" ""

# One that fits lands on a static node: existing capacity like any other.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: small, labels: {app: small}}
spec:
  nodeSelector: {intent: fixed}
  containers:
  - name: small
    image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
    resources: {requests: {cpu: 100m}}
YAML
wait_for "the small pod bound" 30 sh -c "kubectl get pod small -o jsonpath='{.spec.nodeName}' | grep -q ."
expect_eq "it runs on a node of the static pool" \
	"$(kubectl get node "$(kubectl get pod small -o jsonpath='{.spec.nodeName}')" -o jsonpath='{.metadata.labels.karpenter\.sh/nodepool}')" fixed
expect_eq "still 5 NodeClaims" "$(claims)" 5

# limits.nodes caps the count: replicas 8 under a limit of 6 stops at 6.
scale 8
wait_for "6 NodeClaims and 6 Ready Nodes" 40 at 6
wait_for "the launcher to say the limit is reached" 20 grep -q "nodepool fixed node limit reached" "$tmp/launcher.log"
sleep 1
expect_eq "limits.nodes holds: 6 NodeClaims for 8 replicas" "$(claims)" 6
