#!/bin/sh
# End-to-end: a consolidation replace survives kanna-reaper SIGKILLed twice
# on its way (issue 18; DESIGN §2 rule 1), with the whole scale-up path on
# one kanna-sim; consolidateAfter 2s, a 2s validation delay. A 4-CPU node
# left with one small pod is to be replaced by a cheaper 2-CPU node, and
# the sim's AWS answers are held 3 s meanwhile, so that the replacement's
# launch (CreateFleet) is in flight for a while, and instances boot into
# Ready Nodes in 5 s, so that its Node is Ready only after the launch came
# back (a drain that did not wait for Ready would show); both twice as long
# under the sanitizers:
#  1. killed between the decision and the drain: "disrupting nodeclaim(s)
#     via replace" logged, the node tainted karpenter.sh/disrupted and then
#     (as Karpenter orders it) the replacement asked of the launcher,
#     nothing evicted; restarted, the new reaper takes the tainted node's
#     disruption up again instead of giving the node back, and plans
#     nothing more while its replacement's instance type is not known yet;
#  2. killed again while the replacement NodeClaim exists, its launch in
#     flight; restarted, it waits for that replacement.
# Then: no pod of the old node was evicted, nor the node deleted, before
# the replacement's Node was Ready (the sim's timeline); exactly one
# replacement NodeClaim was ever created; the replacement is kept (not
# removed as empty, not replaced again); every pod is bound; every instance
# was terminated by one call; every NodeClaim has one live instance.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 on PATH (./quickstart deps)"; exit 77; }

# --- the reaper, started and killed by us ------------------------------------------------
starts=0
start_reaper() {
	starts=$((starts + 1))
	echo "--- reaper start $starts" >>"$tmp/reaper.log"
	"$BUILDDIR/reaper/kanna-reaper" --runtime-dir "$tmp/run" --metrics-port 0 --health-port 0 \
		--leader-elect=false --reconcile-period 500ms --log-level debug \
		--consolidation-validation-delay 2s >>"$tmp/reaper.log" 2>&1 &
	pid_reaper=$!
	e2e_pids="$e2e_pids $pid_reaper"
}
since_start() { # PATTERN: in the log of the running reaper
	sed -n "/^--- reaper start $starts\$/,\$p" "$tmp/reaper.log" | grep -q "$1"
}
# wait_line WHAT SECONDS PATTERN: since_start, polled every 50 ms (wait_for
# backs off to 0.8 s): the kills below must land while the replacement is
# launched.
wait_line() {
	local t0=$(date +%s)
	until since_start "$3"; do
		[ $(($(date +%s) - t0)) -lt "$2" ] || fail "timed out after ${2}s waiting for $1"
		sleep 0.05
	done
}
kill_reaper() { # MOMENT
	kill -KILL "$pid_reaper"
	wait "$pid_reaper" 2>/dev/null || true
	echo "  killed the reaper ($1) after: $(grep -v '^---' "$tmp/reaper.log" | tail -n 1 | cut -c1-160)"
}

# --- what the sim saw ---------------------------------------------------------------------
created_in() { # POOL: NodeClaims the sim saw created for it, ever
	python3 - "$tmp/k8s-status.json" "$1" <<'PY'
import json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
print(sum(1 for e in tl if e["event"] == "nodeclaim-created" and e["detail"].split(" ")[1:] == [sys.argv[2]]))
PY
}
now() { # the time as the sim's timeline writes it
	date -u +%Y-%m-%dT%H:%M:%S.%3NZ
}
bound() { # APP N: N pods of APP bound
	[ "$(kubectl get pods -l "app=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c .)" = "$2" ]
}

e2e_init
# Under the sanitizers (KANNA_E2E_SCALE < 100, as ./quickstart check sets
# it) a restarted reaper takes longer to read the cluster: twice the time
# for the kills to land in.
slow=1
[ "${KANNA_E2E_SCALE:-100}" -ge 100 ] || slow=2
cat >"$tmp/sim.yaml" <<YAML
kubelet-boot-ms: $((5000 * slow))
YAML
start_sim --config "$tmp/sim.yaml"
start_daemons
start_reaper
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 since_start "reaping for cluster"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: swap}
spec:
  template:
    metadata: {labels: {intent: swap}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: Never
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: ["2", "4"]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 2s
    budgets: [{nodes: "100%"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: anchor}
spec:
  replicas: 1
  selector: {matchLabels: {app: anchor}}
  template:
    metadata: {labels: {app: anchor}}
    spec:
      nodeSelector: {intent: swap}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "3", memory: 256Mi}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: rest}
spec:
  replicas: 1
  selector: {matchLabels: {app: rest}}
  template:
    metadata: {labels: {app: rest}}
    spec:
      nodeSelector: {intent: swap}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: 500m, memory: 256Mi}}}
YAML
# One batch: both pods planned onto one 4-CPU NodeClaim.
both_bound() { bound anchor 1 && bound rest 1; }
wait_for "the anchor and rest pods bound" 60 both_bound
old=$(claims_of swap)
expect_eq "one NodeClaim in swap" "$(echo "$old" | grep -c .)" 1
old_node=$(node_of "$old")
old_instance=$(instance_of "$old")
expect_eq "rest shares the anchor's node" "$(kubectl get pods -l app=rest -o jsonpath='{.items[0].spec.nodeName}')" "$old_node"
wait_for "node $old_node Ready" 30 node_ready "$old_node"

# --- 1. killed between the decision and the drain -------------------------------------
aws_faults "{\"latencyMs\": $((3000 * slow))}"
kubectl scale deployment anchor --replicas 0 >/dev/null
wait_line "the replace decision" 60 "disrupting nodeclaim(s) via replace, terminating 1 nodes (1 pods) $old_node/"
wait_line "the replacement asked for" 30 "asked the launcher for the replacement(s) of $old: tainted"
kill_reaper "1: decided, not drained"
kill1=$(now)
start_reaper
wait_line "the new reaper to take the disruption up again" 30 \
	"resuming the disruption of nodeclaim $old (Underutilized): waiting for its replacement"

# --- 2. killed while the replacement is launched ------------------------------------------
# At once: its CreateFleet is answered 3 s (6 s) after the decision (the timeline
# shows below that the launch had not come back yet).
kill_reaper "2: the replacement's launch in flight"
kill2=$(now)
aws_faults '{}'
start_reaper
wait_for "the 4-CPU NodeClaim replaced" 90 gone nodeclaim "$old"
wait_for "the rest pod bound on the replacement" 60 sh -c \
	"n=\$(kubectl get pods -l app=rest -o jsonpath='{.items[0].spec.nodeName}'); [ -n \"\$n\" ] && [ \"\$n\" != $old_node ]"

new=$(claims_of swap)
expect_eq "one NodeClaim in swap" "$(echo "$new" | grep -c .)" 1
new_node=$(node_of "$new")
expect_eq "the replacement has 2 vCPUs" \
	"$(kubectl get nodeclaim "$new" -o jsonpath='{.metadata.labels.karpenter\.k8s\.aws/instance-cpu}')" 2
k8s_status >"$tmp/k8s-status.json"
python3 - "$tmp/k8s-status.json" "$old_node" "$new" "$new_node" "$kill1" "$kill2" <<'PY' || fail "the timeline says otherwise"
import json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
old_node, new, new_node, kill1, kill2 = sys.argv[2:]
def first(event, name, extra=""):
    def about(e):
        w = e["detail"].split(" ")
        return w[1] if event == "pod-evicted" and len(w) > 1 else w[0]
    return min((e["time"] for e in tl if e["event"] == event and about(e) == name and extra in e["detail"]),
               default=None)
tainted = first("node-tainted", old_node, "karpenter.sh/disrupted")
created, launched = first("nodeclaim-created", new), first("nodeclaim-launched", new)
ready = first("node-ready", new_node)
evicted, deleting = first("pod-evicted", old_node), first("node-deleting", old_node)
print("  %s tainted %s; kill 1 %s; replacement %s created %s; kill 2 %s; launched %s; its Node "
      "Ready %s; first eviction from %s %s, deleted %s" % (old_node, tainted, kill1, new, created, kill2,
                                                          launched, ready, old_node, evicted, deleting))
checks = [
    ("1: killed after the decision's taint", tainted and tainted < kill1),
    ("the replacement asked for only once the old node was tainted", tainted and created and tainted < created),
    ("2: killed while the replacement NodeClaim existed, its launch in flight",
     created and launched and created < kill2 < launched),
    ("nothing evicted from the old node before its replacement was Ready", evicted and ready and ready < evicted),
    ("the old node deleted only after its replacement was Ready", deleting and ready and ready < deleting),
]
for what, good in checks:
    print(("ok - " if good else "FAIL: ") + what)
sys.exit(0 if all(good for _, good in checks) else 1)
PY
expect_eq "exactly one replacement NodeClaim ever created (two in swap, with the old one)" \
	"$(created_in swap)" 2

# Kept: neither removed as empty while the old node drained, nor replaced
# again (consolidateAfter 2s and a 2s validation delay have passed by then).
sleep 3
expect_eq "the replacement is kept" "$(claims_of swap)" "$new"
expect_eq "every rest pod bound" "$(bound rest 1 && echo yes)" yes
expect_eq "instance $old_instance terminated once" "$(terminations "$old_instance")" 1
expect_each_terminated_once
agree() {
	[ "$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)" = \
	  "$(sim_instances | grep -E 'state=(pending|running)' | sed 's/.*nodeclaim=//' | sort)" ]
}
wait_for "NodeClaims and live instances to agree" 60 agree
expect_one_instance_per_nodeclaim "at the end"
