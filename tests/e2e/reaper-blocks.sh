#!/bin/sh
# End-to-end: what holds consolidation back in kanna-reaper, and what it
# says about it (issue 18), on one kanna-sim and one set of daemons, the
# scenarios side by side (consolidateAfter 2s, validation delay 2s):
#  - window: under a budget nodes "0" for [Underutilized] whose schedule
#    ("* * * * *" for 1h) is open all through the test, a node that
#    consolidation would replace stays; the DisruptionBlocked Events on its
#    NodeClaim and Node name the budget and its window, and one on the
#    NodePool says "No allowed disruptions for disruption reason
#    Underutilized due to blocking budget" (Karpenter's words);
#  - pinned: a pod whose nodeSelector names its node's hostname fits
#    nowhere else: its underutilized node stays, and the Unconsolidatable
#    Event names the pod and why it cannot move;
#  - spot → spot: a spot node that a cheaper spot node could replace stays
#    while the SpotToSpotConsolidation feature gate is off (the Event says
#    so); once it is on (the reaper's config file changed and SIGHUP) it
#    is replaced by a cheaper spot node — but a spot node of a pool with
#    fewer than 15 cheaper instance types still stays (Karpenter's
#    MinInstanceTypesForSpotToSpotConsolidation, the Event counts them);
#  - kanna-tap, attached to the reaper during it, prints that replacement
#    as a disruption_decision JSON line (reason, candidate nodes, savings).
# Over the whole run (the sim's timeline) no pool ever had more nodes
# disrupting at once than its budget allows.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 on PATH"; exit 77; }

# pool NAME CAPACITY REQUIREMENTS BUDGETS: (the YAML of) a v1 NodePool of
# CAPACITY (spot, on-demand) nodes labelled intent=NAME, consolidating
# underutilized nodes after 2 s; REQUIREMENTS: more requirement items.
pool() {
	cat <<YAML
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: $1}
spec:
  template:
    metadata: {labels: {intent: $1}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: Never
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [$2]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
$3
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 2s
    budgets: $4
YAML
}
# deploy NAME POOL CPU: (the YAML of) a Deployment of one pod app=NAME on POOL.
deploy() {
	cat <<YAML
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
      nodeSelector: {intent: $2}
      terminationGracePeriodSeconds: 0
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "$3", memory: 256Mi}}}
YAML
}
pod_nodes() { # "APP NODE" for every pod
	kubectl get pods -o jsonpath='{range .items[*]}{.metadata.labels.app} {.spec.nodeName}{"\n"}{end}'
}
node_in() { # LIST KEY: the value of "KEY VALUE" lines (pod_nodes: an app's node)
	echo "$1" | sed -n "s/^$2 //p" | head -n 1
}
bound() { # APP...: every one's pod bound
	local a list
	list=$(pod_nodes)
	for a in "$@"; do
		[ -n "$(node_in "$list" "$a")" ] || return 1
	done
}
events() { # REASON|KIND|NAME|MESSAGE, one a line
	kubectl get events -o jsonpath='{range .items[*]}{.reason}|{.involvedObject.kind}|{.involvedObject.name}|{.message}{"\n"}{end}'
}
has_event() { # ERE over events()'s lines
	events | grep -Eq "$1"
}
reaper_config() { # GATES: the reaper's config file
	printf 'reaper:\n  feature-gates: "%s"\n' "$1" >"$tmp/reaper.yaml"
}

e2e_init
cat >"$tmp/sim.yaml" <<'YAML'
kubelet-boot-ms: 1000
YAML
start_sim --config "$tmp/sim.yaml"
start_daemons
reaper_config SpotToSpotConsolidation=false
start_reaper --config "$tmp/reaper.yaml" --consolidation-validation-delay 2s
# kanna-tap on the reaper from the start: the first decision it sees is
# the spot replacement (everything else here is held back).
"$BUILDDIR/tools/kanna-tap" --runtime-dir "$tmp/run" --process reaper --type disruption_decision \
	--count 1 >"$tmp/tap.jsonl" 2>"$tmp/tap.log" &
pid_tap=$!
e2e_pids="$e2e_pids $pid_tap"
ONDEMAND_4='      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["2", "4"]}'
# Everything in one kubectl (each costs a few tenths of a second).
{
	cat <<'YAML'
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
	pool window on-demand "$ONDEMAND_4" \
		'[{nodes: "0", schedule: "* * * * *", duration: 1h, reasons: [Underutilized]}, {nodes: "100%"}]'
	pool pinned on-demand "$ONDEMAND_4" '[{nodes: "1"}]'
	# Spot: every c/m/r type of 2 to 8 vCPUs (dozens cheaper than an
	# 8-vCPU node), and a pool of two families (fewer than 15 cheaper).
	pool spot spot '      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["2", "4", "8"]}' '[{nodes: "1"}]'
	pool fewspot spot '      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c5, m5]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["2", "8"]}' '[{nodes: "1"}]'
	# An anchor fills each node; a small pod shares it and stays behind.
	deploy window-anchor window 3
	deploy window-rest window 500m
	deploy pinned-anchor pinned 3
	deploy spot-anchor spot 7
	deploy spot-rest spot 500m
	deploy fewspot-anchor fewspot 7
	deploy fewspot-rest fewspot 500m
} | kubectl apply -f - >/dev/null
wait_for "the anchors and small pods bound" 60 bound window-anchor window-rest pinned-anchor spot-anchor \
	spot-rest fewspot-anchor fewspot-rest
placed=$(pod_nodes)
for p in window spot fewspot; do
	expect_eq "$p: the small pod shares the anchor's node" "$(node_in "$placed" "$p-rest")" \
		"$(node_in "$placed" "$p-anchor")"
done
window_node=$(node_in "$placed" window-anchor)
pinned_node=$(node_in "$placed" pinned-anchor)
spot_node=$(node_in "$placed" spot-anchor)
# The pinned pod: only its node's hostname will do.
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default, labels: {app: pinned}}
spec:
  nodeSelector: {intent: pinned, kubernetes.io/hostname: $pinned_node}
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: pause, resources: {requests: {cpu: 500m, memory: 256Mi}}}
YAML
wait_for "the pinned pod bound" 30 bound pinned
expect_eq "the pinned pod is on its node" "$(node_in "$(pod_nodes)" pinned)" "$pinned_node"
kubectl scale deployment window-anchor pinned-anchor spot-anchor fewspot-anchor --replicas 0 >/dev/null
claims=$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.labels.karpenter\.sh/nodepool} {.metadata.name}{"\n"}{end}')
expect_eq "one NodeClaim per pool" "$(echo "$claims" | cut -d' ' -f1 | sort | tr '\n' ' ')" "fewspot pinned spot window "
window_claim=$(node_in "$claims" window)
pinned_claim=$(node_in "$claims" pinned)
spot_claim=$(node_in "$claims" spot)
fewspot_claim=$(node_in "$claims" fewspot)

# --- window: a budget nodes "0" open all through the test -----------------------------------
WINDOW_BUDGET='budgets\[0\] \(nodes "0", reasons \[Underutilized\], schedule "\* \* \* \* \*", duration 1h, window [0-9T:-]+Z to [0-9T:-]+Z\) allows 0 of 1 node\(s\)'
wait_for "DisruptionBlocked on the window NodeClaim naming its budget and window" 30 has_event \
	"^DisruptionBlocked\|NodeClaim\|$window_claim\|Cannot disrupt NodeClaim \(Underutilized\): no allowed disruptions due to the budgets of nodepool window: $WINDOW_BUDGET, 0 disrupting\$"
has_event "^DisruptionBlocked\|Node\|$window_node\|Cannot disrupt Node \(Underutilized\): .*nodepool window: $WINDOW_BUDGET" ||
	fail "no DisruptionBlocked Event on the window Node naming the budget"
wait_for "the NodePool's DisruptionBlocked Event" 30 has_event \
	"^DisruptionBlocked\|NodePool\|window\|No allowed disruptions for disruption reason Underutilized due to blocking budget: $WINDOW_BUDGET\$"
ok "window: $(events | grep -m 1 "^DisruptionBlocked|NodeClaim|$window_claim|" | cut -d'|' -f4)"

# --- pinned: a pod that fits nowhere else ---------------------------------------------------
wait_for "Unconsolidatable on the pinned NodeClaim naming the pod" 30 has_event \
	"^Unconsolidatable\|NodeClaim\|$pinned_claim\|not all pods would schedule, default/pinned => .*kubernetes.io/hostname"
ok "pinned: $(events | grep -m 1 "^Unconsolidatable|NodeClaim|$pinned_claim|not all pods would schedule, default/pinned => " | cut -d'|' -f4)"

# --- spot → spot: not without the feature gate ----------------------------------------------
for c in $spot_claim $fewspot_claim; do
	wait_for "Unconsolidatable on $c: SpotToSpotConsolidation is disabled" 30 has_event \
		"^Unconsolidatable\|NodeClaim\|$c\|SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node\$"
done
ok "spot: without the feature gate both spot nodes stay, the Event says why"
wait_for "kanna-tap to follow the reaper" 15 grep -q "Following reaper" "$tmp/tap.log"
reaper_config SpotToSpotConsolidation=true
kill -HUP "$pid_reaper"
wait_for "the reaper to reload" 10 grep -q "reloaded configuration: changed feature-gates" "$tmp/reaper.log"
wait_for "the spot NodeClaim replaced" 60 gone nodeclaim "$spot_claim"
wait_for "the spot pod bound again" 30 sh -c "n=\$(kubectl get pods -l app=spot-rest -o jsonpath='{.items[0].spec.nodeName}'); [ -n \"\$n\" ] && [ \"\$n\" != $spot_node ]"
new_spot=$(claims_of spot)
expect_eq "one spot NodeClaim again" "$(echo "$new_spot" | grep -c .)" 1
sim_instances >"$tmp/instances.txt"
python3 - "$tmp/instances.txt" "$spot_claim" "$new_spot" <<'PY' || fail "the spot node was not replaced by a cheaper spot node: $(cat "$tmp/instances.txt")"
import re, sys
inst = {m["nodeclaim"]: m for m in (re.match(r"instance \S+ state=(?P<state>\S+) type=(?P<type>\S+) "
        r"zone=\S+ capacity=(?P<capacity>\S+) price=(?P<price>\S+) nodeclaim=(?P<nodeclaim>\S+)", l)
        for l in open(sys.argv[1])) if m}
old, new = inst[sys.argv[2]], inst[sys.argv[3]]
print("  %s %s $%s/h -> %s %s $%s/h" % (old["type"], old["capacity"], old["price"], new["type"],
                                        new["capacity"], new["price"]))
sys.exit(0 if old["capacity"] == new["capacity"] == "spot" and
         0 < float(new["price"]) < float(old["price"]) else 1)
PY
ok "spot: with SpotToSpotConsolidation the spot node was replaced by a cheaper spot node"
wait_for "Unconsolidatable on $fewspot_claim: fewer than 15 cheaper types" 30 has_event \
	"^Unconsolidatable\|NodeClaim\|$fewspot_claim\|SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got [0-9]+\$"
expect_eq "the fewspot NodeClaim stays" "$(claims_of fewspot)" "$fewspot_claim"
ok "spot: $(events | grep -m 1 "^Unconsolidatable|NodeClaim|$fewspot_claim|SpotToSpot.*requires" | cut -d'|' -f4)"

# --- kanna-tap: the decision as a JSON line -------------------------------------------------
wait_for "kanna-tap to print the decision and exit" 10 sh -c "! kill -0 $pid_tap 2>/dev/null"
python3 - "$tmp/tap.jsonl" "$spot_node" "$spot_claim" <<'PY' || fail "kanna-tap's output: $(head -c 600 "$tmp/tap.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 1, lines
m = lines[0]
assert m["process"] == "reaper" and m["direction"] == "send" and m["type"] == "disruption_decision", m
d = m["fields"]["body"]
assert d["reason"] == "consolidation_replace", d
assert [(c["node"], c["nodeclaim"], c["capacity_type"]) for c in d["candidates"]] == \
    [(sys.argv[2], sys.argv[3], "spot")], d["candidates"]
assert d["savings"] > 0 and d["replacements"][0]["nodepool"] == "spot", d
assert "savings $" in d["explanation"], d
print("  %s: %s" % (m["type"], d["explanation"]))
PY
ok "kanna-tap: the reaper's replace decision, with its candidate and savings"

# --- the whole run: nothing held back moved, no budget exceeded -----------------------------
expect_eq "the window and pinned nodes stay" \
	"$(kubectl get nodes -l 'karpenter.sh/nodepool in (window,pinned)' -o name | sort)" \
	"$(printf 'node/%s\n' "$window_node" "$pinned_node" | sort)"
k8s_status >"$tmp/k8s-status.json"
# Per pool, the most of its nodes (all the launcher ever made for it)
# disrupting at once in the timeline, from a karpenter.sh/disrupted taint
# or deletion until deleted, against its budget.
python3 - "$tmp/k8s-status.json" "$tmp/launcher.log" window=0 pinned=1 spot=1 fewspot=1 <<'PY' || fail "a budget was exceeded"
import json, re, sys
tl = json.load(open(sys.argv[1]))["timeline"]
made = re.findall(r"(?:created|adopted) node (\S+) for nodeclaim (\S+)-[a-z0-9]+[ :]", open(sys.argv[2]).read())
bad = False
for arg in sys.argv[3:]:
    pool, budget = arg.split("=")
    points, disrupted = [], 0
    for n in {n for n, p in made if p == pool}:
        starts = [e["time"] for e in tl if e["detail"].split(" ")[0] == n and
                  (e["event"] == "node-deleting" or
                   (e["event"] == "node-tainted" and " karpenter.sh/disrupted" in e["detail"]))]
        ends = [e["time"] for e in tl if e["event"] == "node-deleted" and e["detail"] == n]
        if starts:
            disrupted += 1
            points += [(min(starts), 1), (min(ends) if ends else "9999", -1)]
    most = cur = 0
    for _, d in sorted(points):
        cur += d
        most = max(most, cur)
    print("  %s: %d node(s) disrupted, at most %d at once (budget %s)" % (pool, disrupted, most, budget))
    want = {"window": 0, "pinned": 0, "fewspot": 0, "spot": 1}[pool]
    bad = bad or most > int(budget) or disrupted != want
sys.exit(1 if bad else 0)
PY
ok "no budget exceeded over the run; only the spot node was disrupted"
expect_one_instance_per_nodeclaim "at the end"
expect_each_terminated_once
