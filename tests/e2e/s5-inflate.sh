#!/bin/sh
# End-to-end: seed scenario S5 (SCENARIOS.md, the Karpenter workshop's
# "inflate") on kanna-sim with the whole daemon set, from
# examples/s5-inflate.yaml as a user applies it; only the empty TTL
# (consolidateAfter 30s) is shortened.
#  - scale to 5: the scheduler logs that it waits to batch, then finds the
#    5 pods in one batch and computes one NodeClaim for them; the launcher
#    logs the NodeClaim's instance type options, the launched instance's
#    type, zone and capacity type (those of the Node's labels) and "bound 5
#    pod(s) to node …"; the Node is labelled intent: apps and holds all 5;
#  - scale to 0: the node, empty, is deleted no sooner than the empty TTL
#    after its last pod went (and not long after), its instance terminated
#    once.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 on PATH"; exit 77; }

EMPTY_TTL=5 # the workshop's consolidateAfter: 30s, shortened

inflate_nodes() { # the nodes of the bound inflate pods, one a line (once each)
	kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep . | sort -u
}
all_bound() { # N: exactly N inflate pods, every one bound
	kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' >"$tmp/pods"
	[ "$(grep -c . "$tmp/pods")" = "$1" ] && [ "$(awk 'NF == 2' "$tmp/pods" | grep -c .)" = "$1" ]
}
no_pods() {
	! kubectl get pods -l app=inflate -o name | grep -q .
}

e2e_init
start_sim
start_daemons
start_reaper
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl patch nodepool default --type merge -p "{\"spec\":{\"disruption\":{\"consolidateAfter\":\"${EMPTY_TTL}s\"}}}" >/dev/null
expect_eq "the example's NodePool labels its nodes intent: apps" \
	"$(kubectl get nodepool default -o jsonpath='{.spec.template.metadata.labels.intent}')" apps
expect_eq "the example's inflate pods select intent: apps, 1 CPU / 1.5Gi" \
	"$(kubectl get deployment inflate -o jsonpath='{.spec.template.spec.nodeSelector.intent} {.spec.template.spec.containers[0].resources.requests.cpu} {.spec.template.spec.containers[0].resources.requests.memory}')" \
	"apps 1 1.5Gi"

# --- scale to 5 --------------------------------------------------------------------------
kubectl scale deployment inflate --replicas 5 >/dev/null
wait_for "5 inflate pods bound" 60 all_bound 5
claim=$(claims_of default)
expect_eq "one NodeClaim" "$(echo "$claim" | grep -c .)" 1
node=$(node_of "$claim")
expect_eq "all five pods on its Node" "$(inflate_nodes)" "$node"
expect_eq "the Node is labelled intent: apps" "$(kubectl get node "$node" -o jsonpath='{.metadata.labels.intent}')" apps

# The scheduler's lines, in order: a batch opens, one batch of 5 is found,
# one NodeClaim computed for them and its packing logged with its instance
# type options (the 0.6 blog's "Computed packing for 5 pod(s) with
# instance type option(s)").
grep -o "waiting to batch additional pods\|found [0-9]* provisionable pod(s)\|computed new nodeclaim(s) to fit pod(s): [1-9][0-9]* nodeclaim(s) for [0-9]* pod(s)\|computed packing of [0-9]* pod(s) for nodeclaim [^ ]* with [0-9]* instance type option(s)" \
	"$tmp/scheduler.log" | sed 's/with [0-9]* instance/with N instance/' >"$tmp/scheduler.lines"
expect_eq "scheduler: waiting to batch, one batch of 5, one NodeClaim, its packing" "$(cat "$tmp/scheduler.lines")" \
	"waiting to batch additional pods
found 5 provisionable pod(s)
computed new nodeclaim(s) to fit pod(s): 1 nodeclaim(s) for 5 pod(s)
computed packing of 5 pod(s) for nodeclaim $claim with N instance type option(s)"
options=$(grep -o "computed packing of 5 pod(s) for nodeclaim $claim with [0-9]* instance type option(s)" "$tmp/scheduler.log" |
	sed 's/.* with \([0-9]*\) instance.*/\1/')
[ "$options" -gt 1 ] || fail "the packing had $options instance type option(s); c, m and r offer many more"
grep -q "created nodeclaim $claim for 5 pod(s) with $options instance type option(s)" "$tmp/launcher.log" ||
	fail "no 'created nodeclaim $claim for 5 pod(s) with $options instance type option(s)' line"
ok "scheduler and launcher: 5 pod(s) packed for $claim with $options instance type option(s)"
# The launched line names the Node's own type, zone and capacity type.
labels=$(kubectl get node "$node" -o jsonpath='{.metadata.labels.node\.kubernetes\.io/instance-type}, zone {.metadata.labels.topology\.kubernetes\.io/zone}, capacity type {.metadata.labels.karpenter\.sh/capacity-type}')
grep -q "launched nodeclaim $claim: instance i-[0-9a-f]*, type $labels nodeclaim=" "$tmp/launcher.log" ||
	fail "no 'launched nodeclaim $claim: instance i-…, type $labels' line"
ok "launcher: $(grep -o "launched nodeclaim $claim: .*, capacity type [a-z-]*" "$tmp/launcher.log")"
grep -q "bound 5 pod(s) to node $node nodeclaim=" "$tmp/launcher.log" || fail "no 'bound 5 pod(s) to node $node' line"
ok "launcher: bound 5 pod(s) to node $node"
allocatable=$(kubectl get node "$node" -o jsonpath='{.status.allocatable.cpu}')
case $allocatable in *m) allocatable=$((${allocatable%m} / 1000)) ;; esac
[ "$allocatable" -ge 5 ] || fail "the node has $allocatable allocatable CPU for 5 1-CPU pods"
instance=$(instance_of "$claim")

# --- scale to 0 ---------------------------------------------------------------------------
scaled_at=$(date +%s.%N)
kubectl scale deployment inflate --replicas 0 >/dev/null
wait_for "the inflate pods gone" 30 no_pods
wait_for "the empty node deleted" $((EMPTY_TTL + 40)) gone node "$node"
wait_for "NodeClaim $claim gone" 30 gone nodeclaim "$claim"
grep -q "disrupting nodeclaim(s) via delete, terminating 1 nodes (0 pods) $node/.*reason Empty" "$tmp/reaper.log" ||
	fail "no 'disrupting nodeclaim(s) via delete, terminating 1 nodes (0 pods) $node/… reason Empty' line"
k8s_status >"$tmp/k8s-status.json"
python3 - "$tmp/k8s-status.json" "$node" "$EMPTY_TTL" "$scaled_at" <<'PY' || fail "the node was not deleted the empty TTL after its last pod went"
import datetime, json, sys
tl = json.load(open(sys.argv[1]))["timeline"]
node, ttl, scaled_at = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
def t(e):
    return datetime.datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
pods = {e["detail"].split(" ")[0] for e in tl if e["event"] == "pod-bound" and e["detail"].split(" ")[1] == node}
gone = [t(e) for e in tl if e["event"] == "pod-deleted" and e["detail"].split(" ")[0] in pods]
deleting = [t(e) for e in tl if (e["event"] == "node-deleting" and e["detail"] == node) or
            (e["event"] == "node-tainted" and e["detail"] == node + " karpenter.sh/disrupted:NoSchedule")]
if len(pods) != 5 or len(gone) != 5 or not deleting:
    sys.exit("  %d pod(s) bound, %d deleted, %d disruption step(s) of %s" % (len(pods), len(gone), len(deleting), node))
since_scale, since_gone = min(deleting) - scaled_at, min(deleting) - max(gone)
print("  %s disrupted %.1f s after the scale to 0, %.1f s after its last pod was gone (TTL %g s)"
      % (node, since_scale, since_gone, ttl))
# No sooner than the TTL after the pods began to go (they began no sooner
# than the scale); not long after the last was gone (the reaper
# reconciles every 0.5 s).
sys.exit(0 if since_scale >= ttl and since_gone < ttl + 15 else 1)
PY
ok "scale to 0: the empty node deleted after the empty TTL"
wait_for "instance $instance on its way out" 30 on_its_way_out "$instance"
expect_each_terminated_once
expect_one_instance_per_nodeclaim "at the end"
