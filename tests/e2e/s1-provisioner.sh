#!/bin/sh
# End-to-end: seed scenario S1 (SCENARIOS.md, the Karpenter 0.6 blog) on
# kanna-sim with the whole daemon set, timings shortened. The NodePool is
# written as the blog writes it: a karpenter.sh/v1alpha5 Provisioner with
# capacity-type In [spot, on-demand], limits.resources.cpu 100,
# ttlSecondsAfterEmpty, ttlSecondsUntilExpired and an inline provider whose
# subnetSelector and securityGroupSelector find the sim's subnets and
# security group by their tag karpenter.sh/discovery: kanna. The workload is
# a Deployment of one 500m CPU / 512Mi container.
#  - 0 → 5: one batch, one NodeClaim, the cheapest offering of its
#    candidates (spot: the sim prices spot below on-demand), all five pods
#    bound to its Node before the Node is Ready; its instance in a subnet
#    and security group the selectors find; the Node carries the
#    well-known labels, provisioner-name among them;
#  - 5 → 20: a second, larger node for the rest; the first is reused: it
#    keeps its five (and takes what still fits on it);
#  - 20 → 10 → 5: no NodeClaim created (a node left empty goes after
#    ttlSecondsAfterEmpty); from then on the only NodeClaims made are the
#    replacements of expired ones;
#  - ttlSecondsUntilExpired: the nodes of the peak still there expire; each
#    with pods is deleted only once a Ready node not itself going (a
#    replacement, or the other node while it has not expired yet) was
#    there for its pods; the five survivors end on fewer nodes costing less
#    per hour than the peak's;
#  - 5 → 0: the nodes left empty are deleted ttlSecondsAfterEmpty after
#    their last pod went;
#  - the daemons' log lines carry Karpenter's wording; every instance was
#    terminated by one call; one live instance per NodeClaim at the end.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 on PATH"; exit 77; }

# The documents' 30 s and 1800 s, shortened. Expiry must come after the
# 20 → 10 → 5 steps (a few seconds, more under the sanitizers) and leave
# the replacements young enough not to expire again before the end.
EMPTY_TTL=5
EXPIRE_TTL=30

pods_on() { # NODE: the inflate pods bound to it
	kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' |
		awk -v n="$1" '$2 == n { print $1 }' | sort
}
bound() { # how many inflate pods are bound
	kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}
pods_total() { # how many inflate pods exist (not being deleted)
	kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' |
		awk 'NF == 1' | grep -c . || true
}
all_bound() { # N: exactly N inflate pods, every one bound
	[ "$(pods_total)" = "$1" ] && [ "$(bound)" = "$1" ]
}
claims() {
	kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort
}
aws_status() {
	curl -sS "$AWS_ENDPOINT_URL/_sim/status"
}
# Live instances: count and dollars per hour, "N $X.XXXX".
fleet_cost() {
	aws_status | python3 -c '
import json, sys
live = [i for i in json.load(sys.stdin)["instances"] if i["state"] in ("pending", "running")]
print("%d %.4f" % (len(live), sum(i["pricePerHour"] for i in live)))'
}
# ec2 PARAMS: an EC2 Query API call to the sim (POST, SigV4 by curl).
ec2() {
	curl -sS --aws-sigv4 "aws:amz:$AWS_REGION:ec2" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
		-H 'Content-Type: application/x-www-form-urlencoded; charset=utf-8' \
		--data "Version=2016-11-15&$1" "$AWS_ENDPOINT_URL/"
}
# DescribeSpotPriceHistory of the types.
spot_prices() { # TYPE...
	local params="Action=DescribeSpotPriceHistory" k=0 t
	for t in "$@"; do
		k=$((k + 1))
		params="$params&InstanceType.$k=$t"
	done
	ec2 "$params"
}

e2e_init
start_sim
start_daemons
start_reaper
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"

# What the Provisioner's selectors find: the sim's subnets (one a zone) and
# security group, tagged karpenter.sh/discovery=kanna.
tag_filter="Filter.1.Name=tag:karpenter.sh/discovery&Filter.1.Value.1=kanna"
subnets=$(ec2 "Action=DescribeSubnets&$tag_filter" | grep -o '<subnetId>[^<]*' | sed 's|<subnetId>||' | sort)
groups=$(ec2 "Action=DescribeSecurityGroups&$tag_filter" | grep -o '<groupId>[^<]*' | sed 's|<groupId>||' | sort -u)
[ -n "$subnets" ] && [ -n "$groups" ] || fail "no subnet or security group tagged karpenter.sh/discovery=kanna in the sim"

kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  requirements:
    - key: karpenter.sh/capacity-type
      operator: In
      values: ["spot", "on-demand"]
  limits:
    resources:
      cpu: 100
  provider:
    instanceProfile: KarpenterNodeInstanceProfile-kanna
    subnetSelector:
      karpenter.sh/discovery: kanna
    securityGroupSelector:
      karpenter.sh/discovery: kanna
  ttlSecondsAfterEmpty: $EMPTY_TTL
  ttlSecondsUntilExpired: $EXPIRE_TTL
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: inflate
spec:
  replicas: 0
  selector:
    matchLabels:
      app: inflate
  template:
    metadata:
      labels:
        app: inflate
    spec:
      terminationGracePeriodSeconds: 0 # shortened too: drains do not wait
      containers:
        - name: inflate
          image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
          resources:
            requests:
              cpu: 500m
              memory: 512Mi
YAML

# --- 0 → 5 ---------------------------------------------------------------------------
kubectl scale deployment inflate --replicas 5 >/dev/null
wait_for "5 pods bound" 60 all_bound 5
first=$(claims)
expect_eq "0 → 5: one NodeClaim" "$(echo "$first" | grep -c .)" 1
node1=$(node_of "$first")
[ -n "$node1" ] || fail "NodeClaim $first has no Node"
expect_eq "0 → 5: all five pods on its Node $node1" "$(pods_on "$node1" | grep -c .)" 5
expect_eq "0 → 5: one batch found the five pods" \
	"$(grep -c 'found [0-9]* provisionable pod(s)' "$tmp/scheduler.log")" 1
grep -q 'found 5 provisionable pod(s)' "$tmp/scheduler.log" || fail "no 'found 5 provisionable pod(s)' line"
grep -q 'computed new nodeclaim(s) to fit pod(s): 1 nodeclaim(s) for 5 pod(s)' "$tmp/scheduler.log" ||
	fail "no 'computed new nodeclaim(s) to fit pod(s): 1 nodeclaim(s) for 5 pod(s)' line"
grep -q "launched nodeclaim $first: instance i-[0-9a-f]*, type [^ ]*, zone [^ ]*, capacity type spot" "$tmp/launcher.log" ||
	fail "no 'launched nodeclaim $first: ... capacity type spot' line"
grep -q "bound 5 pod(s) to node $node1" "$tmp/launcher.log" || fail "no 'bound 5 pod(s) to node $node1' line"
ok "0 → 5: logged as Karpenter does: $(grep -o 'found 5 provisionable pod(s)' "$tmp/scheduler.log"); $(grep -o "launched nodeclaim $first: .*capacity type spot" "$tmp/launcher.log")"

# What the later checks need, saved now (expiry deletes this node): its
# labels, one KEY=VALUE a line, and the NodeClaim's instance type and
# candidate types.
kubectl get node "$node1" -o go-template='{{range $k, $v := .metadata.labels}}{{$k}}={{$v}}{{"\n"}}{{end}}' >"$tmp/node1.labels"
kubectl get nodeclaim "$first" -o jsonpath='{.metadata.labels.node\.kubernetes\.io/instance-type}{"\n"}{.spec.requirements[?(@.key=="node.kubernetes.io/instance-type")].values[*]}{"\n"}{.status.providerID}{"\n"}' >"$tmp/first.types"
instance=$(sed -n 3p "$tmp/first.types" | sed 's|.*/||')
ec2 "Action=DescribeInstances&InstanceId.1=$instance" >"$tmp/instance.xml"
subnet=$(grep -o '<subnetId>[^<]*' "$tmp/instance.xml" | sed 's|<subnetId>||' | head -n 1)
group=$(grep -o '<groupId>[^<]*' "$tmp/instance.xml" | sed 's|<groupId>||' | head -n 1)
echo "$subnets" | grep -qx "$subnet" && echo "$groups" | grep -qx "$group" ||
	fail "instance $instance is in subnet '$subnet', security group '$group': not what the selectors find ($(echo $subnets) / $(echo $groups))"
ok "0 → 5: instance $instance in $subnet and $group, of the $(echo "$subnets" | grep -c .) subnet(s) and $(echo "$groups" | grep -c .) security group(s) tagged karpenter.sh/discovery=kanna"
five=$(pods_on "$node1")

# --- 5 → 20 --------------------------------------------------------------------------
kubectl scale deployment inflate --replicas 20 >/dev/null
wait_for "20 pods bound" 60 all_bound 20
peak=$(claims)
expect_eq "5 → 20: two NodeClaims" "$(echo "$peak" | grep -c .)" 2
second=$(echo "$peak" | grep -vx "$first")
node2=$(node_of "$second")
# The first node is reused: it keeps its five, and kube-scheduler fills
# the room left on it before kanna sees the rest as unschedulable.
n1=$(pods_on "$node1" | grep -c .)
expect_eq "5 → 20: the first node keeps its five pods (and has $((n1 - 5)) more)" \
	"$(pods_on "$node1" | grep -cxF "$five")" 5
expect_eq "5 → 20: the other $((20 - n1)) on the second node $node2" "$(pods_on "$node2" | grep -c .)" $((20 - n1))
# (The scheduler may see some of them pending before kube-scheduler places
# them on the first node; it plans them there, on no new NodeClaim.)
expect_eq "5 → 20: one more NodeClaim computed, none else" \
	"$(grep -o 'computed new nodeclaim(s) to fit pod(s): [0-9]* nodeclaim(s)' "$tmp/scheduler.log" | grep -v ': 0 nodeclaim(s)' | uniq -c | sed 's/^ *//')" \
	"2 computed new nodeclaim(s) to fit pod(s): 1 nodeclaim(s)"
cpu1=$(kubectl get node "$node1" -o jsonpath='{.status.capacity.cpu}')
cpu2=$(kubectl get node "$node2" -o jsonpath='{.status.capacity.cpu}')
[ "$cpu2" -gt "$cpu1" ] || fail "5 → 20: the second node ($cpu2 CPU) is not larger than the first ($cpu1)"
ok "5 → 20: the second node is larger: $cpu2 CPU vs $cpu1 CPU"
peak_cost=$(fleet_cost)

# --- 20 → 10 → 5 ---------------------------------------------------------------------
kubectl scale deployment inflate --replicas 10 >/dev/null
wait_for "10 pods left" 30 all_bound 10
kubectl scale deployment inflate --replicas 5 >/dev/null
wait_for "5 pods left" 30 all_bound 5
ok "20 → 10 → 5: the five left run on $(kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | grep -c .) node(s)"

# --- 0 → 5, checked now that the scale-down is done -----------------------------------
# In the sim's timeline: $node1 may be gone by now, left empty by the
# scale-down (which five pods survive is the ReplicaSet's choice).
was_ready() { # NODE
	k8s_status | python3 -c '
import json, sys
sys.exit(0 if any(e["event"] == "node-ready" and e["detail"] == sys.argv[1]
                  for e in json.load(sys.stdin)["timeline"]) else 1)' "$1"
}
wait_for "$node1 Ready once" 30 was_ready "$node1"
k8s_status >"$tmp/k8s-status.json"
# The cheapest offering of the NodeClaim's candidate types, from the sim's
# DescribeSpotPriceHistory (spot is 30–70% of on-demand in the sim, so the
# cheapest offering of any type is a spot one).
types=$(sed -n 2p "$tmp/first.types")
[ -n "$types" ] || fail "NodeClaim $first lists no candidate instance types"
# shellcheck disable=SC2086
spot_prices $types >"$tmp/spot.xml"
aws_status >"$tmp/aws-status.json"
python3 - "$tmp/spot.xml" "$tmp/aws-status.json" "$first" <<'PY' || fail "0 → 5: not the cheapest offering"
import json, sys, xml.etree.ElementTree as ET
ns = {"e": "http://ec2.amazonaws.com/doc/2016-11-15/"}
items = ET.parse(sys.argv[1]).getroot().findall(".//e:spotPriceHistorySet/e:item", ns)
if not items:
    sys.exit("DescribeSpotPriceHistory answered no prices")
prices = {(i.find("e:instanceType", ns).text, i.find("e:availabilityZone", ns).text):
          float(i.find("e:spotPrice", ns).text) for i in items}
inst = [i for i in json.load(open(sys.argv[2]))["instances"]
        if (i.get("tags") or {}).get("karpenter.sh/nodeclaim") == sys.argv[3]]
if len(inst) != 1:
    sys.exit("%d instances for the NodeClaim" % len(inst))
i = inst[0]
cheapest = min(prices, key=prices.get)
print("  launched %s %s %s at $%.6f/h; cheapest of %d candidate offerings: %s %s spot at $%.6f/h" % (
    i["instanceType"], i["zone"], i["capacityType"], i["pricePerHour"], len(prices), cheapest[0],
    cheapest[1], prices[cheapest]))
sys.exit(0 if i["capacityType"] == "spot" and abs(i["pricePerHour"] - prices[cheapest]) < 1e-6 else 1)
PY
ok "0 → 5: the node is the cheapest offering, spot"

python3 - "$tmp/k8s-status.json" "$node1" $five <<'PY' || fail "0 → 5: the pods were not bound before $node1 was Ready"
import json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
node = sys.argv[2]
five = ["default/" + p for p in sys.argv[3:]]
bound = [e["time"] for e in tl if e["event"] == "pod-bound" and e["detail"].split(" ")[0] in five]
ready = min(e["time"] for e in tl if e["event"] == "node-ready" and e["detail"] == node)
print("  5 pods bound by %s, %s Ready at %s" % (max(bound), node, ready))
sys.exit(0 if len(bound) == 5 and all(e["detail"].split(" ")[1] == node for e in tl
                                        if e["event"] == "pod-bound" and e["detail"].split(" ")[0] in five)
         and max(bound) < ready else 1)
PY
ok "0 → 5: all five pods bound to $node1 before it was Ready"

# The well-known labels of the first node, as it was.
label() { # KEY
	sed -n "s|^$1=||p" "$tmp/node1.labels"
}
region=$(label topology.kubernetes.io/region)
zone=$(label topology.kubernetes.io/zone)
for want in "node.kubernetes.io/instance-type=$(sed -n 1p "$tmp/first.types")" karpenter.sh/capacity-type=spot \
	karpenter.sh/provisioner-name=default karpenter.sh/nodepool=default "topology.kubernetes.io/region=$AWS_REGION" \
	kubernetes.io/arch=amd64 kubernetes.io/os=linux "kubernetes.io/hostname=$node1"; do
	expect_eq "label $want" "${want%%=*}=$(label "${want%%=*}")" "$want"
done
case $zone in "$region"[a-z]) ok "label topology.kubernetes.io/zone=$zone" ;; *) fail "zone label '$zone'" ;; esac

# --- expiry: replacement first, survivors packed -------------------------------------
gone_all() { # CLAIMS: none of them exists any more
	local c
	for c in $1; do
		gone nodeclaim "$c" || return 1
	done
}
wait_for "the peak's NodeClaims expired and gone" $((EXPIRE_TTL + 60)) gone_all "$peak"
wait_for "the five survivors bound" 60 all_bound 5
after=$(claims)
last_nodes=$(for c in $after; do node_of "$c"; echo; done)
for n in $last_nodes; do
	wait_for "replacement $n Ready" 30 node_ready "$n"
done
after_cost=$(fleet_cost)
k8s_status >"$tmp/k8s-status.json"

# --- 5 → 0 (at once: the replacements expire too, ttlSecondsUntilExpired after
# they were made); the checks of the expiry follow ---------------------------------
kubectl scale deployment inflate --replicas 0 >/dev/null
grep -q "disrupting nodeclaim(s) via delete, terminating 1 nodes ([1-9][0-9]* pods) .*, reason Expired" "$tmp/reaper.log" ||
	fail "no 'disrupting nodeclaim(s) via delete ... reason Expired' line for a node with pods"
# From the 20 → 10 step on, only the reaper created NodeClaims: the
# replacements of expired nodes it names in "launching replacement
# nodeclaim NEW ... of OLD (Expired)" lines.
python3 - "$tmp/k8s-status.json" "$tmp/reaper.log" $peak <<'PY' || fail "20 → 10 → 5: a NodeClaim was created"
import json, re, sys
tl = json.load(open(sys.argv[1]))["timeline"]
log = open(sys.argv[2]).read()
expired = set(re.findall(r"disrupting nodeclaim (\S+) \(Expired\)", log))
replacements = {new for new, old in re.findall(r"launching replacement nodeclaim (\S+) .* of (\S+) \(", log)
                if old in expired}
made = [e["detail"].split(" ")[0] for e in tl if e["event"] == "nodeclaim-created"]
others = [c for c in made if c not in sys.argv[3:] and c not in replacements]
print("  NodeClaims created: %s at the peak, %s replacing expired ones, %s else" % (
    " ".join(sys.argv[3:]), " ".join(sorted(replacements)) or "none", " ".join(others) or "none"))
sys.exit(0 if not others else 1)
PY
ok "20 → 10 → 5: no NodeClaim launched"
ok "expiry: $(grep -o 'disrupting nodeclaim(s) via delete, terminating 1 nodes ([1-9][0-9]* pods) .*, reason Expired' "$tmp/reaper.log" | head -n 1)"
python3 - "$tmp/k8s-status.json" "$node1 $node2" <<'PY' || fail "expiry: a node was deleted before its pods had a Ready node to go to"
import json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
old = sys.argv[2].split()
def first(event, name):
    return min((e["time"] for e in tl if e["event"] == event and e["detail"].split(" ")[0] == name),
               default=None)
ok = True
for node in old:
    deleting = first("node-deleting", node)
    # Pods it still had when it was tainted for disruption.
    tainted = min((e["time"] for e in tl if e["event"] == "node-tainted" and
                   e["detail"].startswith(node + " karpenter.sh/disrupted")), default=deleting)
    had = {e["detail"].split(" ")[0] for e in tl if e["event"] == "pod-bound" and
           e["detail"].split(" ")[1] == node and e["time"] < tainted} - \
          {e["detail"].split(" ")[0] for e in tl if e["event"] == "pod-deleted" and e["time"] < tainted}
    # Nodes Ready, and neither tainted for disruption nor deleting, when it
    # was deleted: an expired node's pods may go to the other old node
    # while that one has not expired yet.
    def gone_by(n, t):
        return any(e["time"] <= t for e in tl if e["detail"].split(" ")[0] == n and
                   (e["event"] in ("node-deleting", "node-deleted") or
                    (e["event"] == "node-tainted" and " karpenter.sh/disrupted" in e["detail"])))
    ready_before = sorted(n for n in {e["detail"] for e in tl if e["event"] == "node-ready"}
                          if n != node and first("node-ready", n) < deleting and not gone_by(n, deleting))
    print("  %s: tainted %s with %d pod(s), deleting %s; Ready before: %s" % (
        node, tainted, len(had), deleting, ", ".join(ready_before) or "none"))
    if had and not ready_before:
        ok = False
sys.exit(0 if ok else 1)
PY
ok "expiry: replacement capacity was Ready before each expired node with pods was deleted"
echo "  peak: ${peak_cost% *} node(s) at \$${peak_cost#* }/h; after expiry: ${after_cost% *} node(s) at \$${after_cost#* }/h"
[ "${after_cost% *}" -lt "${peak_cost% *}" ] || fail "expiry: not fewer nodes than at the peak"
awk -v a="${after_cost#* }" -v p="${peak_cost#* }" 'BEGIN { exit !(a < p) }' ||
	fail "expiry: not cheaper than at the peak"
ok "expiry: the five survivors on ${after_cost% *} node(s), \$${after_cost#* }/h (peak \$${peak_cost#* }/h)"

wait_for "every NodeClaim gone after ttlSecondsAfterEmpty" 60 sh -c \
	"[ -z \"\$(kubectl get nodeclaims -o name)\" ]"
for n in $last_nodes; do
	grep -q "disrupting nodeclaim(s) via delete, terminating 1 nodes (0 pods) $n/.*, reason Empty" "$tmp/reaper.log" ||
		fail "no 'disrupting nodeclaim(s) via delete ... (0 pods) $n/... reason Empty' line"
done
k8s_status >"$tmp/k8s-status.json"
python3 - "$tmp/k8s-status.json" "$EMPTY_TTL" $last_nodes <<'PY' || fail "5 → 0: a node went before it was empty for ttlSecondsAfterEmpty"
import json, sys
from datetime import datetime
tl = json.load(open(sys.argv[1]))["timeline"]
ttl = float(sys.argv[2])
t = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
ok = True
for node in sys.argv[3:]:
    emptied = max((t(e["time"]) for e in tl if e["event"] == "pod-deleted" and e["detail"].endswith(" " + node)),
                  default=t(min(e["time"] for e in tl if e["event"] == "node-ready" and e["detail"] == node)))
    deleting = min(t(e["time"]) for e in tl if e["event"] == "node-deleting" and e["detail"] == node)
    print("  %s empty, deleted %.1f s later" % (node, deleting - emptied))
    ok = ok and deleting - emptied >= ttl - 0.1
sys.exit(0 if ok else 1)
PY
ok "5 → 0: $(grep -o 'disrupting nodeclaim(s) via delete, terminating 1 nodes (0 pods) .*, reason Empty' "$tmp/reaper.log" | tail -n 1)"

# --- the whole run -------------------------------------------------------------------
aws_status >"$tmp/aws-status.json"
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
