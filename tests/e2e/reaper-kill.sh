#!/bin/sh
# End-to-end: kanna-reaper SIGKILLed in the middle of a termination, at
# four chosen moments, and restarted; each time it resumes from what the
# objects say (DESIGN §2 rule 1):
#  1. the Node just got karpenter.sh/disrupted, nothing evicted yet (a
#     PodDisruptionBudget of maxUnavailable 0 keeps the drain from going
#     on): the new reaper drains on, and evicts nothing either;
#  2. the budget holds the drain (FailedDraining seen): after the restart
#     the pod stays until the budget is relaxed, then goes (the sim's record
#     of the eviction says the budget allowed it);
#  3. TerminateInstances in flight (the sim's AWS answers held 4 s: the call
#     is carried out, its answer not yet back): the new reaper asks again,
#     the sim records one termination, the finalizers come off, NodeClaim
#     and Node are gone;
#  4. the instance terminated, its Node's finalizer not yet removed (every
#     write to nodes answered 500 meanwhile): the new reaper removes the
#     finalizers without a second termination;
#  5. a node of a WhenEmpty pool (consolidateAfter 20s) emptied, its
#     NodeClaim's status.lastPodEventTime recorded; the reaper killed 8 s
#     into the 20 and restarted: the node goes about 20 s after its pod
#     left, not 20 s after the restart (Karpenter's lastPodEventTime).
# At the end every NodeClaim has one live instance, none leaked, and every
# terminated instance was terminated by one TerminateInstances call.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 on PATH (./quickstart deps)"; exit 77; }

# --- helpers of its own (the common ones are tests/e2e/lib.sh's) ---------------------------
# pod-evicted entries of the sim's timeline for app=kill pods: "TIME DETAIL".
evictions() {
	k8s_status | python3 -c '
import json, sys
for e in json.load(sys.stdin)["timeline"]:
    if e["event"] == "pod-evicted" and e["detail"].startswith("default/kill-"):
        print(e["time"], e["detail"])'
}
finalizers_of() { # KIND NAME
	kubectl get "$1" "$2" -o jsonpath='{.metadata.finalizers}'
}

# --- the reaper, started and killed by us ------------------------------------------------
starts=0
start_reaper() {
	starts=$((starts + 1))
	echo "--- reaper start $starts" >>"$tmp/reaper.log"
	"$BUILDDIR/reaper/kanna-reaper" --runtime-dir "$tmp/run" --metrics-port 0 --health-port 0 \
		--leader-elect=false --reconcile-period 500ms --gc-period 2s --gc-grace 10s \
		--log-level debug >>"$tmp/reaper.log" 2>&1 &
	pid_reaper=$!
	e2e_pids="$e2e_pids $pid_reaper"
	wait_for "reaper start $starts" 30 sh -c "sed -n '/^--- reaper start $starts\$/,\$p' '$tmp/reaper.log' | grep -q 'reaping for cluster'"
}
since_start() { # PATTERN: in the log of the running reaper
	sed -n "/^--- reaper start $starts\$/,\$p" "$tmp/reaper.log" | grep -q "$1"
}
terminate_calls() { # how many TerminateInstances the running reaper sent
	sed -n "/^--- reaper start $starts\$/,\$p" "$tmp/reaper.log" | grep -c "TerminateInstances for " || true
}
more_terminate_calls() { # THAN
	[ "$(terminate_calls)" -gt "$1" ]
}
kill_reaper() { # MOMENT
	kill -KILL "$pid_reaper"
	wait "$pid_reaper" 2>/dev/null || true
	echo "  killed the reaper ($1) after: $(grep -v '^---' "$tmp/reaper.log" | tail -n 1 | cut -c1-150)"
}

e2e_init
start_sim
start_daemons
start_reaper
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null

# One pod per node (anti-affinity), so each moment has its own NodeClaim;
# nothing removes a node on its own.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: kill}
spec:
  template:
    metadata: {labels: {intent: kill}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: Never
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: Never}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kill}
spec:
  replicas: 3
  selector: {matchLabels: {app: kill}}
  template:
    metadata: {labels: {app: kill}}
    spec:
      nodeSelector: {intent: kill}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: kill}}}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: idle}
spec:
  template:
    metadata: {labels: {intent: idle}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: Never
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 20s}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: idle}
spec:
  replicas: 1
  selector: {matchLabels: {app: idle}}
  template:
    metadata: {labels: {app: idle}}
    spec:
      nodeSelector: {intent: idle}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: kill, namespace: default}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: kill}}
YAML
# Running, not just bound: a pod not yet running is evicted whatever its
# budget says (the API server's rule), the budget holds running ones.
wait_for "3 kill pods Running" 90 sh -c \
	"[ \$(kubectl get pods -l app=kill -o jsonpath='{range .items[*]}{.status.phase}{\"\\n\"}{end}' | grep -c '^Running\$') = 3 ]"
set -- $(kubectl get nodeclaims -l karpenter.sh/nodepool=kill -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
[ $# -eq 3 ] || fail "want 3 NodeClaims, got $#: $*"
claim_a=$1 claim_b=$2 claim_c=$3

# --- 1. tainted, nothing evicted yet ---------------------------------------------------------
node=$(node_of "$claim_a")
instance=$(instance_of "$claim_a")
kubectl delete nodeclaim "$claim_a" --wait=false >/dev/null
wait_for "node $node tainted karpenter.sh/disrupted" 30 sh -c \
	"kubectl get node $node -o jsonpath='{.spec.taints[?(@.key==\"karpenter.sh/disrupted\")].effect}' | grep -qx NoSchedule"
kill_reaper "1: tainted"
expect_eq "1: nothing evicted when it was killed" "$(evictions)" ""
start_reaper
wait_for "the new reaper to resume the drain of $node" 30 since_start "Failed to drain node $node"
expect_eq "1: the new reaper drains on, evicting nothing the budget holds" "$(evictions)" ""

# --- 2. the budget holds the drain --------------------------------------------------------
wait_for "a FailedDraining Event for $node" 30 sh -c \
	"kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name}{\"\\n\"}{end}' | grep -qx 'FailedDraining $node'"
kill_reaper "2: the budget holds the drain"
start_reaper
wait_for "the new reaper to meet the budget" 30 since_start "Failed to drain node $node"
sleep 2 # a negative: nothing moves while the budget allows nothing
expect_eq "2: the pod stays on $node" \
	"$(kubectl get pods -l app=kill -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c "^$node\$")" 1
expect_eq "2: nothing evicted" "$(evictions)" ""
expect_eq "2: its instance still runs" "$(instance_state "$instance")" running
kubectl patch pdb kill --type merge -p '{"spec":{"maxUnavailable":1}}' >/dev/null
wait_for "NodeClaim $claim_a gone once the budget allows" 60 gone nodeclaim "$claim_a"
expect_eq "2: its Node is gone" "$(gone node "$node" && echo gone)" gone
ev=$(evictions)
expect_eq "2: one eviction, that the budget allowed" \
	"$(echo "$ev" | grep -c " $node pdb default/kill allowed [1-9]")" 1
expect_eq "2: instance $instance terminated once" "$(terminations "$instance")" 1
kubectl delete pdb kill >/dev/null
# No more pods: the nodes left are only ours to remove.
kubectl scale deployment kill --replicas 0 >/dev/null

# --- 3. TerminateInstances in flight ---------------------------------------------------------
node=$(node_of "$claim_b")
instance=$(instance_of "$claim_b")
aws_faults '{"latencyMs": 4000}'
calls=$(terminate_calls)
kubectl delete nodeclaim "$claim_b" --wait=false >/dev/null
wait_for "TerminateInstances for $instance sent" 30 more_terminate_calls "$calls"
kill_reaper "3: TerminateInstances in flight"
aws_faults '{}'
expect_eq "3: the call was carried out" "$(instance_state "$instance" | grep -cE 'shutting-down|terminated')" 1
expect_eq "3: the NodeClaim still has its finalizer" "$(finalizers_of nodeclaim "$claim_b")" '["karpenter.sh/termination"]'
start_reaper
wait_for "NodeClaim $claim_b gone" 60 gone nodeclaim "$claim_b"
expect_eq "3: its Node is gone" "$(gone node "$node" && echo gone)" gone
expect_eq "3: instance $instance terminated once" "$(terminations "$instance")" 1

# --- 4. terminated, finalizers not yet removed ---------------------------------------------
node=$(node_of "$claim_c")
instance=$(instance_of "$claim_c")
aws_faults '{"latencyMs": 3000}'
calls=$(terminate_calls)
kubectl delete nodeclaim "$claim_c" --wait=false >/dev/null
wait_for "TerminateInstances for $instance sent" 30 more_terminate_calls "$calls"
# Its answer is 3 s away: from now on the Node's finalizer cannot come off.
sim_faults '{"errorRates": {"nodes": 1}}'
wait_for "instance $instance terminated" 30 since_start "terminated instance $instance"
wait_for "the finalizer's removal refused" 30 since_start "Failed to remove the finalizer of node for $claim_c"
kill_reaper "4: terminated, finalizers on"
sim_faults '{}'
aws_faults '{}'
expect_eq "4: the Node still has its finalizer" "$(finalizers_of node "$node")" '["karpenter.sh/termination"]'
expect_eq "4: the NodeClaim still has its finalizer" "$(finalizers_of nodeclaim "$claim_c")" '["karpenter.sh/termination"]'
start_reaper
wait_for "NodeClaim $claim_c gone" 60 gone nodeclaim "$claim_c"
expect_eq "4: its Node is gone" "$(gone node "$node" && echo gone)" gone
expect_eq "4: instance $instance terminated once" "$(terminations "$instance")" 1

# --- 5. emptiness across a restart ----------------------------------------------------------
# The sim's timeline: when EVENT DETAIL happened, in Unix seconds.
timeline_at() { # EVENT DETAIL
	k8s_status | python3 -c '
import datetime, json, sys
for e in json.load(sys.stdin)["timeline"]:
    if e["event"] == sys.argv[1] and e["detail"] == sys.argv[2]:
        t = datetime.datetime.fromisoformat(e["time"].replace("Z", "+00:00"))
        print("%.1f" % t.timestamp())' "$1" "$2"
}
last_pod_event() { # NODECLAIM
	kubectl get nodeclaim "$1" -o jsonpath='{.status.lastPodEventTime}'
}
last_pod_event_moved() { # NODECLAIM FROM
	[ "$(last_pod_event "$1")" != "$2" ]
}
deleting() { # NODE: the sim saw its deletion begin
	[ -n "$(timeline_at node-deleting "$1")" ]
}
wait_for "the idle pod bound" 60 placed idle=1
claim=$(claims_of idle)
node=$(node_of "$claim")
bound_at=$(last_pod_event "$claim")
[ -n "$bound_at" ] || fail "5: no lastPodEventTime on $claim while its pod ran"
ok "5: nodeclaim $claim: lastPodEventTime $bound_at with its pod"
kubectl scale deployment idle --replicas 0 >/dev/null
wait_for "the idle pod's leaving recorded" 30 last_pod_event_moved "$claim" "$bound_at"
left_at=$(last_pod_event "$claim")
left_s=$(date -d "$left_at" +%s)
ok "5: kubectl get nodeclaim -o jsonpath='{.status.lastPodEventTime}': $left_at (was $bound_at)"
pause=$((left_s + 8 - $(date +%s)))
[ "$pause" -le 0 ] || sleep "$pause"
kill_reaper "5: 8 s into consolidateAfter"
sleep 2
restart_s=$(date +%s)
start_reaper
wait_for "node $node deleted for emptiness" 60 deleting "$node"
deleted_s=$(timeline_at node-deleting "$node")
after=$(python3 -c "print('%.1f' % ($deleted_s - $left_s))")
python3 -c "import sys; sys.exit(not 19 <= $deleted_s - $left_s <= 24)" ||
	fail "5: node $node deleted ${after} s after its last pod event, restart at +$((restart_s - left_s)) s; want ~20 s after the event, not after the restart"
ok "5: node $node deleted ${after} s after its last pod event (restarted at +$((restart_s - left_s)) s; consolidateAfter 20s)"
since_start "disrupting nodeclaim(s) via delete, terminating 1 nodes (0 pods) $node/.*reason Empty" ||
	fail "5: the restarted reaper did not delete $node as Empty"
wait_for "NodeClaim $claim gone" 60 gone nodeclaim "$claim"

# --- at the end ---------------------------------------------------------------------------
for id in $(sim_instances | sed -n 's/^instance \([^ ]*\) state=\(shutting-down\|terminated\) .*/\1/p'); do
	expect_eq "instance $id terminated by one call" "$(terminations "$id")" 1
done
expect_one_instance_per_nodeclaim "at the end"
