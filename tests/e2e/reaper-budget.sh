#!/bin/sh
# End-to-end: NodePool disruption budgets in kanna-reaper on kanna-sim, with
# the whole scale-up path, judged over the whole run from the Kubernetes
# side's timeline (a node is disrupting from its karpenter.sh/disrupted
# taint or deletion until it is deleted). One 1.5-CPU pod per 2-CPU node;
# three NodePools side by side (WhenEmpty, consolidateAfter 2s):
#  - "budget", four nodes emptied at once: under nodes "0" for reasons
#    [Empty] they stay, each with a DisruptionBlocked Event naming the
#    NodePool's budgets; then under nodes "1" they go one at a time, never
#    two disrupting together;
#  - "percent", three nodes emptied at once under nodes "50%": two at once
#    (Karpenter rounds a percentage up: 1.5 → 2), never three, the third
#    DisruptionBlocked meanwhile;
#  - "expiring", three nodes under nodes "1" that expire together: v1 expiry
#    is forceful (budgets list Empty, Drifted and Underutilized only), so
#    they are replaced together, the replacement capacity Ready first.
# At the end every instance was terminated by one call and every NodeClaim
# has one live instance.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 on PATH"; exit 77; }

EXPIRE_AFTER=15

# pool NAME EXPIRE BUDGETS: a v1 NodePool NAME (WhenEmpty after 2s) of
# 2-CPU on-demand nodes labelled intent=NAME, and a Deployment NAME of
# 1.5-CPU pods selecting them (0 replicas).
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
      expireAfter: $2
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["2"]}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 2s
    budgets: $3
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
      terminationGracePeriodSeconds: 0
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: 1500m, memory: 1Gi}}}
YAML
}
claims() { # NODEPOOL: its NodeClaims, sorted
	claims_of "$1" | sort
}
nodes_of() { # NODEPOOL: its Nodes
	kubectl get nodes -l "karpenter.sh/nodepool=$1" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort
}
bound() { # APP N: N pods, every one bound
	[ "$(kubectl get pods -l "app=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c .)" = "$2" ] &&
		[ "$(kubectl get pods -l "app=$1" -o name | grep -c .)" = "$2" ]
}
all_ready() { # NODEPOOL N: N Nodes, every one Ready
	[ "$(kubectl get nodes -l "karpenter.sh/nodepool=$1" -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -cx True)" = "$2" ]
}
none_of() { # NODEPOOL: no NodeClaim left
	[ -z "$(claims_of "$1")" ]
}
pod_nodes() { # APP: the nodes its pods are bound to
	kubectl get pods -l "app=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u
}
blocked_events() { # NODECLAIM...: the DisruptionBlocked Events' messages about them
	kubectl get events -o jsonpath='{range .items[*]}{.reason}|{.involvedObject.name}|{.message}{"\n"}{end}' |
		awk -F'|' -v names="$*" 'BEGIN { n = split(names, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
			$1 == "DisruptionBlocked" && ($2 in want) { print $3 }'
}
# most_disrupting FILE NODE...: the largest number of NODEs disrupting at
# once in the timeline of FILE (from the first karpenter.sh/disrupted taint
# or deletion of a node until it is deleted; a node not yet deleted is
# still disrupting), with the intervals.
most_disrupting() {
	python3 - "$@" <<'PY'
import json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
nodes = set(sys.argv[2:])
spans = []
for n in sorted(nodes):
    starts = [e["time"] for e in tl if e["detail"].split(" ")[0] == n and
              (e["event"] == "node-deleting" or
               (e["event"] == "node-tainted" and " karpenter.sh/disrupted" in e["detail"]))]
    ends = [e["time"] for e in tl if e["event"] == "node-deleted" and e["detail"] == n]
    if starts:
        spans.append((min(starts), min(ends) if ends else "9999", n))
points = sorted([(s, 1) for s, _, _ in spans] + [(e, -1) for _, e, _ in spans], key=lambda p: (p[0], p[1]))
most = cur = 0
for _, d in points:
    cur += d
    most = max(most, cur)
for s, e, n in sorted(spans):
    print("  %s disrupting %s .. %s" % (n, s[11:], e[11:] if e != "9999" else "(not deleted)"), file=sys.stderr)
print(most)
PY
}

e2e_init
# Instances boot into Ready Nodes in 1 s (default 3 s).
cat >"$tmp/sim.yaml" <<'YAML'
kubelet-boot-ms: 1000
YAML
start_sim --config "$tmp/sim.yaml"
start_daemons
start_reaper
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms:
  - alias: al2023@latest
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms:
  - tags: {karpenter.sh/discovery: kanna}
  securityGroupSelectorTerms:
  - tags: {karpenter.sh/discovery: kanna}
YAML
pool budget Never '[{nodes: "0", reasons: [Empty]}]'
pool percent Never '[{nodes: "50%"}]'
pool expiring "${EXPIRE_AFTER}s" '[{nodes: "1"}]'

# All three fill at once; the expiring pool's clock runs meanwhile.
kubectl scale deployment expiring --replicas 3 >/dev/null
kubectl scale deployment budget --replicas 4 >/dev/null
kubectl scale deployment percent --replicas 3 >/dev/null
wait_for "3 expiring pods bound" 60 bound expiring 3
old=$(claims expiring)
old_nodes=$(nodes_of expiring)
wait_for "4 budget pods bound" 60 bound budget 4
wait_for "3 percent pods bound" 60 bound percent 3
wait_for "4 budget nodes Ready" 30 all_ready budget 4
wait_for "3 percent nodes Ready" 30 all_ready percent 3
first=$(claims budget)
first_nodes=$(nodes_of budget)
pct=$(claims percent)
pct_nodes=$(nodes_of percent)
expect_eq "one NodeClaim and Node per pod" \
	"$(echo "$old" | grep -c .) $(echo "$old_nodes" | grep -c .) $(echo "$first" | grep -c .) $(echo "$first_nodes" | grep -c .) $(echo "$pct" | grep -c .) $(echo "$pct_nodes" | grep -c .)" \
	"3 3 4 4 3 3"
kubectl scale deployment budget --replicas 0 >/dev/null
kubectl scale deployment percent --replicas 0 >/dev/null

# --- nodes "0" for Empty: the four empty nodes stay ------------------------------------------
blocked_for_budget() { # POOL N NODECLAIM...: N of them DisruptionBlocked (Empty) by POOL's budgets
	local pool=$1 n=$2
	shift 2
	[ "$(blocked_events "$@" | grep -c "^Cannot disrupt NodeClaim (Empty): no allowed disruptions due to the budgets of nodepool $pool: budgets\[0\] (nodes \"[0-9%]*\"[^)]*) allows [0-9]* of [0-9]* node(s), [0-9]* disrupting\$")" -ge "$n" ]
}
# shellcheck disable=SC2086
wait_for "a DisruptionBlocked Event for each empty budget NodeClaim" 30 blocked_for_budget budget 4 $first
ok "nodes \"0\" for Empty: $(blocked_events $first | grep -m 1 'budgets of nodepool budget')"
sleep 3 # past consolidateAfter (2s) with the nodes empty
k8s_status >"$tmp/k8s-status.json"
# shellcheck disable=SC2086
expect_eq "nodes \"0\" for Empty: none of the four empty nodes disrupted" "$(most_disrupting "$tmp/k8s-status.json" $first_nodes 2>/dev/null)" 0
expect_eq "nodes \"0\" for Empty: the four NodeClaims stay" "$(claims budget)" "$first"

# --- nodes "1": the four go one at a time ---------------------------------------------------
kubectl patch nodepool budget --type merge -p '{"spec":{"disruption":{"budgets":[{"nodes":"1"}]}}}' >/dev/null
wait_for "the four empty NodeClaims removed" 60 none_of budget
k8s_status >"$tmp/k8s-status.json"
# shellcheck disable=SC2086
most=$(most_disrupting "$tmp/k8s-status.json" $first_nodes)
expect_eq "nodes \"1\": never more than one of the four disrupting at once" "$most" 1
for c in $first; do
	grep -q "disrupting nodeclaim(s) via delete, terminating 1 nodes (0 pods) .*reason Empty nodeclaim=$c " "$tmp/reaper.log" ||
		fail "no 'disrupting nodeclaim(s) via delete ... reason Empty' line for $c"
done
ok "nodes \"1\": each of the four went as Empty"

# --- nodes "50%" of three: two at once ------------------------------------------------------
wait_for "the three empty percent NodeClaims removed" 60 none_of percent
k8s_status >"$tmp/k8s-status.json"
# shellcheck disable=SC2086
expect_eq "nodes \"50%\" of 3: two disrupting at once, rounded up as Karpenter does" \
	"$(most_disrupting "$tmp/k8s-status.json" $pct_nodes)" 2
# shellcheck disable=SC2086
blocked_for_budget percent 1 $pct || fail "no DisruptionBlocked Event for the third percent NodeClaim"
ok "nodes \"50%\": $(blocked_events $pct | grep -m 1 'budgets of nodepool percent')"

# --- expiry (v1: forceful, outside the budgets) ----------------------------------------------
none_left() { # NODECLAIM...: none of them exists any more
	local c
	for c in "$@"; do
		gone nodeclaim "$c" || return 1
	done
}
# shellcheck disable=SC2086
wait_for "the expired NodeClaims replaced and gone" $((EXPIRE_AFTER + 60)) none_left $old
wait_for "the expiring pods bound again" 60 bound expiring 3
# The replacements expire too, EXPIRE_AFTER after they were made: empty
# them now, so that they go as Empty (or Expired, with no pod to move),
# all at once (budgets are not part of the template: no drift).
kubectl patch nodepool expiring --type merge -p '{"spec":{"disruption":{"budgets":[{"nodes":"100%"}]}}}' >/dev/null
kubectl scale deployment expiring --replicas 0 >/dev/null
k8s_status >"$tmp/k8s-status.json"
# shellcheck disable=SC2086
most=$(most_disrupting "$tmp/k8s-status.json" $old_nodes)
[ "$most" -ge 2 ] || fail "expiry: at most $most of the three expired nodes disrupting at once; v1 expiry ignores budgets"
ok "expiry: $most of the three expired nodes disrupting at once under a budget of \"1\" (v1: expiry is forceful)"
for c in $old; do
	grep -q "disrupting nodeclaim $c (Expired): 1 pod(s) need a place first" "$tmp/reaper.log" ||
		fail "no 'disrupting nodeclaim $c (Expired)' line"
done
# Replacement capacity first: one pod per node, so when the k-th old Node
# is deleted, k other Nodes of the pool must be Ready — the Nodes the
# launcher made ("created node NODE for nodeclaim expiring-…") for NodeClaims
# other than the old ones. (Which old NodeClaim's what-if planned them, as
# the reaper's "launching replacement nodeclaim NEW ... of OLD" lines say,
# does not matter: one may plan the others' as well.)
# shellcheck disable=SC2086
python3 - "$tmp/k8s-status.json" "$tmp/launcher.log" "$(echo $old_nodes)" $old <<'PY' || {
import json, re, sys
tl = json.load(open(sys.argv[1]))["timeline"]
launcher = open(sys.argv[2]).read()
old_nodes, old = sys.argv[3].split(), sys.argv[4:]
def first(event, name):
    return min((e["time"] for e in tl if e["event"] == event and e["detail"].split(" ")[0] == name), default=None)
nodes = {n for n, c in re.findall(r"(?:created|adopted) node (\S+) for nodeclaim (expiring-[^\s:]+)[ :]", launcher) if c not in old}
ready = sorted(t for t in (first("node-ready", n) for n in nodes) if t)
ok = True
for k, (deleting, node) in enumerate(sorted((first("node-deleting", n) or "9999", n) for n in old_nodes), 1):
    up = sum(1 for t in ready if t < deleting)
    print("  %s deleting at %s: %d other node(s) of the pool Ready" % (node, deleting[11:], up))
    ok = ok and up >= k
sys.exit(0 if ok else 1)
PY
	for c in $old; do grep "nodeclaim $c\b\|of $c " "$tmp/reaper.log" | grep -v debug | cut -c1-240; done
	fail "expiry: an old node went before enough replacement capacity was Ready"
}
ok "expiry: every expired node replaced, replacement capacity Ready first"

# --- the whole run ---------------------------------------------------------------------------
wait_for "every NodeClaim gone" 60 sh -c "[ -z \"\$(kubectl get nodeclaims -o name)\" ]"
curl -sS "$AWS_ENDPOINT_URL/_sim/status" >"$tmp/aws-status.json"
python3 - "$tmp/aws-status.json" <<'PY' || fail "an instance was not terminated exactly once"
import json, sys
s = json.load(open(sys.argv[1]))
calls = {}
for e in s["timeline"]:
    if e["event"] == "terminate":
        calls[e["detail"].split(" ")[0]] = calls.get(e["detail"].split(" ")[0], 0) + 1
ids = [i["instanceId"] for i in s["instances"]]
bad = [(i, calls.get(i, 0)) for i in ids if calls.get(i, 0) != 1]
print("  %d instance(s) launched, each terminated by one call" % len(ids) if not bad else "  %s" % bad)
sys.exit(0 if ids and not bad else 1)
PY
ok "every instance terminated exactly once"
expect_one_instance_per_nodeclaim "at the end"
