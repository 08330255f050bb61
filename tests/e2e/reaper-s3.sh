#!/bin/sh
# End-to-end: consolidation in kanna-reaper on kanna-sim with the whole
# scale-up path (issue 18), on one sim whose NodePools and EC2NodeClasses
# are served at karpenter.sh/v1beta1 only (see below); two pools worked on
# side by side, the reaper restarted once (to turn a feature gate on):
#  - seed scenario S3: a v1beta1 NodePool written as the slides write it
#    (arch amd64, os linux, on-demand, category c/m/r, generation > 2,
#    cpu > 3) with a v1beta1 EC2NodeClass (amiFamily AL2, role, subnet and
#    security group selector terms by tag), consolidationPolicy
#    WhenUnderutilized: an 8-CPU node left with 2 CPUs of pods is replaced
#    by a cheaper 4-CPU node (Ready before the old one is evicted); of two
#    4-CPU nodes whose pods fit on one, the other is deleted; every node
#    removed was cordoned (tainted karpenter.sh/disrupted) before its first
#    eviction and evicted before it was deleted (the sim's timeline). Then,
#    switched to WhenEmpty (consolidateAfter 2s), an underutilized node
#    stays and an empty one is deleted. Every instance launched for the
#    pool satisfies all of its requirements;
#  - 1→N behind kanna's ConsolidationSplit feature gate: a 16-CPU node left
#    with two 1.5-CPU pods, which no 2-CPU node holds together, stays while
#    the gate is off (an Unconsolidatable Event says why); with the gate on,
#    it is replaced by two 2-CPU nodes, both Ready before its first pod is
#    evicted.
# At the end every instance was terminated once and every NodeClaim has one
# live instance.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 on PATH (./quickstart deps)"; exit 77; }

# deployment NAME POOL REPLICAS CPU: the YAML of a Deployment of pods
# app=NAME on POOL's nodes; deploy applies one or more ("--" between them)
# in one request, so that their pods are planned in one batch.
deployment() {
	cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $3
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      nodeSelector: {intent: $2}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "$4", memory: 256Mi}}}
YAML
}
deploy() {
	while [ $# -ge 4 ]; do
		deployment "$1" "$2" "$3" "$4"
		shift 4
		[ "${1:-}" != -- ] || shift
	done | kubectl apply -f - >/dev/null
}
scale() { # NAME REPLICAS
	kubectl scale deployment "$1" --replicas "$2" >/dev/null
}
# placed, nodes_of_app: tests/e2e/lib.sh
count_of() { # POOL
	claims_of "$1" | grep -c . || true
}
# claims_with POOL: "NODECLAIM NODE CPUS" of its NodeClaims, one kubectl.
claims_with() {
	kubectl get nodeclaims -l "karpenter.sh/nodepool=$1" -o jsonpath='{range .items[*]}{.metadata.name} {.status.nodeName} {.metadata.labels.karpenter\.k8s\.aws/instance-cpu}{"\n"}{end}'
}
events_about() { # NAME: "REASON MESSAGE" of the Events on it
	kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{"\n"}{end}' |
		sed -n "s/^\([^ ]*\) $1 /\1 /p"
}
# in_order WHAT OLD-NODES [READY-FIRST-NODES]: from the sim's timeline, each
# old node was tainted karpenter.sh/disrupted, then evicted (when it had
# pods to evict), then deleted; every READY-FIRST node was Ready before the
# first eviction from any old node and before any was deleted.
in_order() {
	k8s_status >"$tmp/k8s-status.json"
	python3 - "$tmp/k8s-status.json" "$2" "${3:-}" <<'PY' || fail "$1: not cordon → evict → delete, replacements Ready first"
import json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
olds, news = sys.argv[2].split(), sys.argv[3].split()
def first(event, name, extra=""):
    def about(e):
        w = e["detail"].split(" ")
        return w[1] if event == "pod-evicted" and len(w) > 1 else w[0]
    return min((e["time"] for e in tl if e["event"] == event and about(e) == name and extra in e["detail"]),
               default=None)
ok = True
ready = [first("node-ready", n) for n in news]
for n in olds:
    tainted = first("node-tainted", n, "karpenter.sh/disrupted:NoSchedule")
    evicted, deleting, deleted = first("pod-evicted", n), first("node-deleting", n), first("node-deleted", n)
    print("  %s: tainted %s, first eviction %s, deleting %s, deleted %s; replacement(s) Ready %s"
          % (n, tainted, evicted, deleting, deleted, " ".join(str(t) for t in ready) or "-"))
    ok = ok and bool(tainted and deleted) and tainted < deleted and (evicted is None or tainted < evicted < deleted)
    ok = ok and all(t and t < (evicted or deleting) and t < deleting for t in ready)
sys.exit(0 if ok else 1)
PY
}

e2e_init
# A cluster of Karpenter's v1beta1 era (lib.sh).
v1beta1_era_crds "$tmp/data"
cat >"$tmp/sim.yaml" <<'YAML'
kubelet-boot-ms: 1000
YAML
export KANNA_DATADIR="$tmp/data"
start_sim --config "$tmp/sim.yaml"
unset KANNA_DATADIR
served() { # RESOURCE GROUP: the versions of GROUP that serve it
	for v in v1 v1beta1; do
		kubectl get --raw "/apis/$2/$v" 2>/dev/null | grep -q "\"name\":\"$1\"" && echo "$v"
	done | tr '\n' ' '
}
expect_eq "NodePools served at v1beta1 only" "$(served nodepools karpenter.sh)" "v1beta1 "
expect_eq "EC2NodeClasses served at v1beta1 only" "$(served ec2nodeclasses karpenter.k8s.aws)" "v1beta1 "
expect_eq "NodeClaims served at v1" "$(served nodeclaims karpenter.sh)" "v1 "
start_daemons
start_reaper --feature-gates ConsolidationSplit=false --consolidation-validation-delay 2s
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: s3}
spec:
  amiFamily: AL2
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms:
  - tags: {karpenter.sh/discovery: kanna}
  securityGroupSelectorTerms:
  - tags: {karpenter.sh/discovery: kanna}
YAML

# --- both pools, both setups in one batch ---------------------------------------------
# split: types of 2 or 16 vCPUs. A 12-CPU anchor and two 1.5-CPU pods share a
# 16-CPU node; without the anchor the pair needs 3 CPUs, which no 2-CPU node
# has, and no 16-CPU node is cheaper than the one they are on: only 1→N
# (kanna's ConsolidationSplit) consolidates it.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: split}
spec:
  template:
    metadata: {labels: {intent: split}}
    spec:
      nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: s3}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["2", "16"]}
  disruption: {consolidationPolicy: WhenUnderutilized, expireAfter: Never, budgets: [{nodes: "100%"}]}
YAML
# s3_pool DISRUPTION: S3's NodePool, as the slides write it, with that
# disruption block (YAML flow).
s3_pool() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: s3}
spec:
  template:
    metadata: {labels: {intent: s3}}
    spec:
      nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: s3}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["3"]}
  disruption: $1
  limits: {cpu: 1000}
YAML
}
s3_pool '{consolidationPolicy: WhenUnderutilized, expireAfter: 720h, budgets: [{nodes: "100%"}]}'
# s3, replace: a 5-CPU hog and two 1-CPU pods share an 8-CPU node; without
# the hog, a 4-CPU node holds the two for less.
deploy anchor split 1 12 -- pair split 2 1500m -- hog s3 1 5 -- light s3 2 1
wait_for "anchor, pair, hog and light bound" 60 placed anchor=1 pair=2 hog=1 light=2
big_node=$(nodes_of_app anchor)
eight_node=$(nodes_of_app hog)
expect_eq "the pair on the anchor's node" "$(nodes_of_app pair)" "$big_node"
expect_eq "the light pods on the hog's node" "$(nodes_of_app light)" "$eight_node"
big=$(claims_with split | awk '{ print $1 }')
eight=$(claims_with s3 | awk '{ print $1 }')
expect_eq "split: one 16-CPU NodeClaim" "$(claims_with split | awk '{ print $2, $3 }')" "$big_node 16"
expect_eq "s3: one 8-CPU NodeClaim" "$(claims_with s3 | awk '{ print $2, $3 }')" "$eight_node 8"

# --- S3 replace, and 1→N held back without the gate --------------------------------------
scale anchor 0
scale hog 0
wait_for "the 8-CPU NodeClaim replaced" 60 gone nodeclaim "$eight"
light_moved() { placed light=2 && [ "$(nodes_of_app light | grep -c .)" = 1 ] && [ "$(nodes_of_app light)" != "$eight_node" ]; }
wait_for "the light pods bound on the replacement" 60 light_moved
four_node=$(nodes_of_app light)
expect_eq "s3: one 4-CPU NodeClaim, the light pods' node" "$(claims_with s3 | awk '{ print $2, $3 }')" "$four_node 4"
grep -q "disrupting nodeclaim(s) via replace, terminating 1 nodes (2 pods) $eight_node/.* and replacing with on-demand node from types" \
	"$tmp/reaper.log" || fail "no 'via replace' line for $eight_node"
in_order "S3 replace" "$eight_node" "$four_node"
ok "S3 replace: the 8-CPU node replaced by a cheaper 4-CPU node"
# Once the anchor is gone (a pod scaled away terminates for a while, and
# is moved with the rest while it does), the pair alone.
unconsolidatable() {
	events_about "$big" | grep -q "^Unconsolidatable .*default/pair-"
}
wait_for "an Unconsolidatable Event on $big naming a pair pod" 30 unconsolidatable
expect_eq "without ConsolidationSplit the 16-CPU NodeClaim stays" "$(claims_of split)" "$big"
ok "without the gate: $(events_about "$big" | grep "^Unconsolidatable .*default/pair-" | head -n 1)"

# --- 1→N with the gate; meanwhile a 2.5-CPU pod gets a 4-CPU node of its own ---------------
# The gate is read at start (a SIGHUP reloads it too, but consolidation
# would not search again before the cluster changes).
kill -TERM "$pid_reaper"
wait "$pid_reaper" || fail "the reaper did not stop cleanly"
start_reaper --feature-gates ConsolidationSplit=true --consolidation-validation-delay 2s
deploy solo s3 1 2500m
wait_for "the 16-CPU NodeClaim replaced" 60 gone nodeclaim "$big"
pair_moved() { placed pair=2 solo=1 && [ "$(nodes_of_app pair | grep -c .)" = 2 ] && ! nodes_of_app pair | grep -qx "$big_node"; }
wait_for "the pair bound apart on the replacements" 60 pair_moved
grep -q "disrupting nodeclaim(s) via replace, terminating 1 nodes (2 pods) $big_node/.* and replacing with 2 nodes, the first: on-demand node from types .*, savings \$[0-9.]*/h" \
	"$tmp/reaper.log" || fail "no 'via replace ... replacing with 2 nodes' line"
expect_eq "split: two 2-CPU NodeClaims, one pair pod each" "$(claims_with split | awk '{ print $2, $3 }' | sort)" \
	"$(nodes_of_app pair | sed 's/$/ 2/')"
in_order "1→N" "$big_node" "$(nodes_of_app pair)"
ok "1→N: $(grep -o "via replace, terminating 1 nodes (2 pods) $big_node/.*savings [^ ]*" "$tmp/reaper.log" | head -n 1)"

# --- S3 delete: with one light pod left, 1 + 2.5 CPUs fit one 4-CPU node -----------------
solo_node=$(nodes_of_app solo)
[ "$solo_node" != "$four_node" ] || fail "solo shares $four_node (2 + 2.5 CPUs on 4?)"
scale light 1
one_left() { [ "$(count_of s3)" = 1 ] && placed light=1 solo=1 && [ "$(nodes_of_app light)" = "$(nodes_of_app solo)" ]; }
wait_for "one of the two s3 nodes deleted, light and solo together" 60 one_left
kept=$(nodes_of_app solo)
deleted=$(printf '%s\n%s\n' "$four_node" "$solo_node" | grep -vx "$kept")
grep -q "disrupting nodeclaim(s) via delete, terminating 1 nodes (1 pods) $deleted/" "$tmp/reaper.log" ||
	fail "no 'via delete' line for $deleted"
expect_eq "no NodeClaim launched for the delete" "$(count_of s3)" 1
in_order "S3 delete" "$deleted"
ok "S3 delete: $deleted deleted, its pod fits on $kept"

# --- S3 WhenEmpty: an underutilized node stays, an empty one goes ------------------------
# big + tiny need an 8-CPU node (3.5 + 0.5 do not fit the 4-CPU one); with
# only tiny left, WhenUnderutilized would replace it by a 4-CPU node.
deploy big s3 1 5 -- tiny s3 1 500m
s3_pool '{consolidationPolicy: WhenEmpty, consolidateAfter: 2s, expireAfter: 720h, budgets: [{nodes: "100%"}]}'
wait_for "the big and tiny pods bound" 60 placed big=1 tiny=1
under=$(nodes_of_app big)
expect_eq "tiny shares big's node" "$(nodes_of_app tiny)" "$under"
# The reaper has read WhenEmpty when it says so of the node.
when_empty_read() {
	events_about "$under" | grep -q '^Unconsolidatable NodePool "s3" has non-empty consolidation disabled'
}
wait_for "an Unconsolidatable Event on $under: non-empty consolidation disabled" 30 when_empty_read
scale big 0
big_gone() { ! kubectl get pods -l app=big -o name | grep -q .; }
wait_for "the big pod gone" 60 big_gone
sleep 4 # a search and a validation delay: WhenUnderutilized would taint it by now
placed tiny=1 || fail "tiny is not bound"
expect_eq "WhenEmpty: the underutilized node keeps tiny" "$(nodes_of_app tiny)" "$under"
expect_eq "WhenEmpty: the underutilized node is not disrupted" \
	"$(kubectl get node "$under" -o jsonpath='{.spec.taints[*].key}' | grep -c karpenter.sh/disrupted || true)" 0
grep -q "disrupting nodeclaim(s) via .* $under/" "$tmp/reaper.log" && fail "WhenEmpty: $under was disrupted"
ok "WhenEmpty: the underutilized node $under stays"
scale tiny 0
wait_for "WhenEmpty: the empty node deleted" 30 gone node "$under"
in_order "WhenEmpty" "$under"
ok "WhenEmpty: the empty node $under deleted after consolidateAfter"

# Every instance ever launched for s3 satisfies its requirements.
sim_types() { # POOL: instance type and capacity type of each instance tagged for it, ever
	curl -sS "$AWS_ENDPOINT_URL/_sim/status" | python3 -c '
import json, sys
for i in json.load(sys.stdin).get("instances", []):
    if (i.get("tags") or {}).get("karpenter.sh/nodepool") == sys.argv[1]:
        print(i["instanceType"], i["capacityType"])' "$1"
}
sim_types s3 >"$tmp/s3-types.txt"
python3 - "$SRCDIR/data/instance-types.tsv" "$tmp/s3-types.txt" <<'PY' || fail "a launched type violates the S3 requirements"
import csv, sys
cat = {r["name"]: r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t")}
bad, seen = [], []
for line in open(sys.argv[2]):
    name, capacity = line.split()
    t = cat[name]
    seen.append(name)
    if not (t["arch"] == "amd64" and capacity == "on-demand" and t["category"] in ("c", "m", "r")
            and int(t["generation"]) > 2 and int(t["vcpu"]) > 3):
        bad.append(name)
print("  launched for s3: %s%s" % (", ".join(seen), "; violating: " + ", ".join(bad) if bad else ""))
sys.exit(1 if bad or len(seen) < 4 else 0)
PY
ok "S3: every launched type satisfies arch, capacity type, category, generation and cpu"

agree() {
	[ "$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)" = \
	  "$(sim_instances | grep -E 'state=(pending|running)' | sed 's/.*nodeclaim=//' | sort)" ]
}
wait_for "NodeClaims and live instances to agree" 60 agree
expect_one_instance_per_nodeclaim "at the end"
expect_each_terminated_once
