#!/bin/sh
# End-to-end: kanna-reaper --interruption-queue on kanna-sim's SQS queue.
#  - a rebalance recommendation records SpotRebalanceRecommendation Events
#    and changes nothing else; the message is deleted;
#  - a malformed message and one about an instance that is not ours are
#    logged and deleted, and the reaper keeps running;
#  - a spot interruption warning: the Node is tainted karpenter.sh/disrupted,
#    its pods are evicted, the scheduler and launcher bring up a new
#    NodeClaim whose Node is Ready before the sim would terminate the
#    instance (AWS's two minutes after the warning), the old NodeClaim goes
#    and the message is deleted;
#  - SIGTERM during the next long poll ends the reaper at once.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

# kanna-sim: AWS terminates a spot instance this long after its warning.
SIM_INTERRUPTION_SEC=120

queue_depth() {
	curl -sS "$AWS_ENDPOINT_URL/_sim/status" | python3 -c 'import json, sys; print(json.load(sys.stdin)["interruptionQueueDepth"])'
}
queue_empty() { [ "$(queue_depth)" = 0 ]; }
sqs_send() { # BODY: queued as is (SendMessage)
	curl -sS -f -X POST "$AWS_ENDPOINT_URL/_sim/sqs/send" --data-binary "$1" >/dev/null
}
interrupt() { # ID KIND
	curl -sS -f -X POST "$AWS_ENDPOINT_URL/_sim/interrupt" -H 'Content-Type: application/json' \
		-d "{\"instanceIds\":[\"$1\"],\"kind\":\"$2\"}" >/dev/null
}
events_of() { # NAME: "Reason" lines of the Events about the object NAME
	kubectl get events -o jsonpath='{range .items[*]}{.involvedObject.name} {.reason}{"\n"}{end}' |
		sed -n "s/^$1 //p"
}
has_event() { events_of "$1" | grep -qx "$2"; }
reaper_alive() { kill -0 "$pid_reaper" 2>/dev/null; }
taint_of() { # NODE
	kubectl get node "$1" -o jsonpath='{.spec.taints[?(@.key=="karpenter.sh/disrupted")].effect}'
}
bound_to() { # NODE: app=spot pods bound to NODE
	kubectl get pods -l app=spot -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -cx "$1" || true
}

e2e_init
start_sim
start_daemons
start reaper "$BUILDDIR/reaper/kanna-reaper" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --reconcile-period 500ms --log-level debug \
	--interruption-queue kanna
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper to watch the queue" 30 grep -q "watching interruption queue kanna" "$tmp/reaper.log"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  template:
    metadata: {labels: {intent: spot}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: Never
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: Never}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: spot}
spec:
  replicas: 2
  selector: {matchLabels: {app: spot}}
  template:
    metadata: {labels: {app: spot}}
    spec:
      nodeSelector: {intent: spot}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}
YAML
wait_for "2 spot pods bound" 90 sh -c "[ \$(kubectl get pods -l app=spot -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 2 ]"
claim=$(kubectl get nodeclaims -l karpenter.sh/nodepool=spot -o jsonpath='{.items[0].metadata.name}')
node=$(kubectl get nodeclaim "$claim" -o jsonpath='{.status.nodeName}')
instance=$(kubectl get nodeclaim "$claim" -o jsonpath='{.status.providerID}' | sed 's|.*/||')
[ -n "$node" ] && [ -n "$instance" ] || fail "NodeClaim $claim has no Node or instance"
expect_eq "both pods on $node" "$(bound_to "$node")" 2
wait_for "node $node Ready" 30 node_ready "$node"

# --- a rebalance recommendation: an Event, nothing else ----------------------------------
interrupt "$instance" rebalance-recommendation
wait_for "a SpotRebalanceRecommendation Event on $claim" 30 has_event "$claim" SpotRebalanceRecommendation
wait_for "the same Event on $node" 30 has_event "$node" SpotRebalanceRecommendation
wait_for "the rebalance message deleted" 30 queue_empty
sleep 1 # a drain would have tainted the node by now (the reconcile period is 0.5 s)
expect_eq "no taint after a rebalance recommendation" "$(taint_of "$node")" ""
expect_eq "the NodeClaim is not deleting" \
	"$(kubectl get nodeclaim "$claim" -o jsonpath='{.metadata.deletionTimestamp}')" ""
expect_eq "both pods still on $node" "$(bound_to "$node")" 2
ok "a rebalance recommendation records Events and drains nothing"

# --- malformed and foreign messages: logged, deleted, the reaper goes on --------------------
sqs_send 'this is {not JSON'
sqs_send '{"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":42}}'
sqs_send '{"version":"0","id":"e2e-unknown","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","time":"2026-11-05T12:00:00Z","detail":{"instance-id":"i-00000000000000000"}}'
wait_for "the malformed messages logged" 30 sh -c "[ \$(grep -c 'Failed to parse interruption message' '$tmp/reaper.log') -ge 2 ]"
grep -q "Failed to parse interruption message .*body is not JSON" "$tmp/reaper.log" || fail "no 'not JSON' reason logged"
grep -q "Failed to parse interruption message .*field detail.instance-id is not a string" "$tmp/reaper.log" ||
	fail "no wrong-type reason logged"
wait_for "the foreign instance's message passed over" 30 grep -q "names instance i-00000000000000000: no nodeclaim of ours" "$tmp/reaper.log"
wait_for "the three messages deleted" 30 queue_empty
reaper_alive || fail "the reaper stopped after malformed messages"
ok "malformed messages and one about a foreign instance are logged and deleted; the reaper runs on"

# --- a spot interruption warning: drain now, replacement up before the instance goes -------
interrupt "$instance" spot-interruption
wait_for "the reaper to act on the warning" 30 grep -q "received interruption message .*spot_interrupted for instance $instance, nodeclaim $claim" "$tmp/reaper.log"
wait_for "a SpotInterrupted Event on $claim" 30 has_event "$claim" SpotInterrupted
wait_for "the NodeClaim $claim deleted" 60 sh -c "gone nodeclaim $claim 2>/dev/null || kubectl get nodeclaim $claim -o jsonpath='{.metadata.deletionTimestamp}' | grep -q ."
wait_for "the interruption message deleted" 30 queue_empty
wait_for "the 2 spot pods bound to a new node" 90 sh -c \
	"[ \$(kubectl get pods -l app=spot -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -v -x '$node' | grep -c .) = 2 ]"
new=$(kubectl get nodeclaims -l karpenter.sh/nodepool=spot -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | grep -vx "$claim" | head -n 1)
[ -n "$new" ] || fail "no replacement NodeClaim"
new_node=$(kubectl get nodeclaim "$new" -o jsonpath='{.status.nodeName}')
wait_for "the replacement node $new_node Ready" 60 node_ready "$new_node"
wait_for "NodeClaim $claim gone" 60 gone nodeclaim "$claim"
grep -q "initiating delete from interruption message: nodeclaim $claim" "$tmp/reaper.log" || fail "no 'initiating delete' line"
grep -q "evicted pod default/spot-" "$tmp/reaper.log" || fail "no pod was evicted from $node"
has_event "$claim" TerminatingOnInterruption || fail "no TerminatingOnInterruption Event on $claim"
curl -sS "$AWS_ENDPOINT_URL/_sim/status" >"$tmp/aws-status.json"
k8s_status >"$tmp/k8s-status.json"
python3 - "$tmp/aws-status.json" "$tmp/k8s-status.json" "$instance" "$node" "$new_node" "$SIM_INTERRUPTION_SEC" <<'PY' ||
import datetime, json, sys
aws, k8s = json.load(open(sys.argv[1]))["timeline"], json.load(open(sys.argv[2]))["timeline"]
instance, old, new, delay = sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
def first(tl, event, name, rest=None):
    return min((e["time"] for e in tl if e["event"] == event and e["detail"].split(" ")[0] == name
                and (rest is None or rest in e["detail"])), default=None)
def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")
warned = first(aws, "spot-interruption-warning", instance)
tainted = first(k8s, "node-tainted", old, "karpenter.sh/disrupted:NoSchedule")
evicted = min((e["time"] for e in k8s if e["event"] == "pod-evicted" and e["detail"].endswith(" " + old)), default=None)
ready = first(k8s, "node-ready", new)
gone = first(aws, "terminate", instance) or first(aws, "shutting-down", instance)
print("  warning %s, %s tainted %s, first pod evicted %s, replacement %s Ready %s, instance terminated %s"
      % (warned, old, tainted, evicted, new, ready, gone))
assert warned and tainted and evicted and ready, "an event is missing from the timelines"
assert warned <= tainted <= evicted, "not tainted, then drained, after the warning"
deadline = ts(warned) + datetime.timedelta(seconds=delay)
assert ts(ready) < deadline, "the replacement was not Ready before the instance's end"
print("  replacement Ready %.1f s after the warning (the instance had %d s)"
      % ((ts(ready) - ts(warned)).total_seconds(), delay))
PY
	fail "the interruption was not handled in order"
ok "a spot interruption taints and drains the node; its replacement is Ready in time"
expect_eq "the interruption queue is empty" "$(queue_depth)" 0
reaper_alive || fail "the reaper stopped"

# --- SIGTERM does not wait for the long poll in flight ---------------------------------------
sleep 1 # the reaper is in its next 20 s long poll by now
exited() { # PID: gone, or a zombie waiting for us
	[ ! -e "/proc/$1/stat" ] || [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat")" = Z ]
}
kill -TERM "$pid_reaper"
wait_for "the reaper to exit on SIGTERM, not after its long poll" 5 exited "$pid_reaper"
rc=0
wait "$pid_reaper" || rc=$?
expect_eq "the reaper exits 0 on SIGTERM" "$rc" 0
ok "SIGTERM during a long poll exits at once"
