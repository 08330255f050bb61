#!/bin/sh
# End-to-end: kanna-reaper's garbage collection and liveness on kanna-sim.
#  - an instance terminated out of band (TerminateInstances by hand): its
#    NodeClaim and Node go, without a drain and without a second terminate;
#  - a NodeClaim whose Node never becomes Ready (the sim's neverBoot fault)
#    is deleted after registration-ttl and its instance terminated; its pod
#    then runs on a new node;
#  - an instance launched through the EC2 API with the cluster and NodePool
#    tags but no NodeClaim is terminated once older than gc-grace; one with
#    the cluster tag only (another node group's) is left alone;
#  - a NodeClaim deleted while no launcher runs, with an instance tagged
#    for it (a launch cut short): the instance is terminated and the
#    NodeClaim released.
# At the end every instance was terminated by one call, and every
# NodeClaim has one live instance.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
curl --help all 2>/dev/null | grep -q -- --aws-sigv4 || { echo "SKIP: curl without --aws-sigv4"; exit 77; }

GRACE=3
# pool NAME TYPE: a v1 NodePool of one instance type labelling its nodes
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
      expireAfter: Never
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [$2]}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: Never}
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
ec2() { # QUERY: a SigV4-signed EC2 call, as any other client would make it
	curl -sS --aws-sigv4 "aws:amz:$AWS_REGION:ec2" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
		"$AWS_ENDPOINT_URL_EC2/" -d "Version=2016-11-15&$1"
}
xml_first() { sed 's/></>\n</g' | sed -n "s/.*<$1>\([^<]*\)<.*/\1/p" | head -n 1; }
# run_instance TAG=VALUE...: one m5.large launched with RunInstances and
# these tags; prints its id.
run_instance() {
	local q="Action=RunInstances&ImageId=$ami&InstanceType=m5.large&MinCount=1&MaxCount=1&SubnetId=$subnet&TagSpecification.1.ResourceType=instance" n=1 kv
	for kv in "$@"; do
		q="$q&TagSpecification.1.Tag.$n.Key=${kv%%=*}&TagSpecification.1.Tag.$n.Value=${kv#*=}"
		n=$((n + 1))
	done
	ec2 "$q" | xml_first instanceId
}

e2e_init
# The pods of a Node deleted undrained are left to the pod garbage
# collector, as on a real cluster; its 40 s quarantine shortened. Instances
# boot into Ready Nodes in 2 s (the sim's pending time), not 3.
printf 'pod-gc-quarantine-ms: 1000\nkubelet-boot-ms: 1000\n' >"$tmp/sim.yaml"
start_sim --config "$tmp/sim.yaml"
start_daemons
start_reaper --gc-period 1s --gc-grace "${GRACE}s" --registration-ttl 15s
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
ami=$(ec2 'Action=DescribeImages' | xml_first imageId)
subnet=$(ec2 'Action=DescribeSubnets' | xml_first subnetId)
[ -n "$ami" ] && [ -n "$subnet" ] || fail "no image or subnet from the AWS side"
cluster_tag=kubernetes.io/cluster/kanna # the sim's and the daemons' default cluster name

# --- an instance terminated out of band ---------------------------------------------------
pool oob c5.xlarge
kubectl scale deployment oob --replicas 1 >/dev/null
wait_for "a NodeClaim with an instance" 60 sh -c "[ -n \"\$(kubectl get nodeclaims -l karpenter.sh/nodepool=oob -o jsonpath='{.items[0].status.providerID}')\" ]"
claim=$(claims_of oob)
instance=$(instance_of "$claim")
node=$(kubectl get nodeclaim "$claim" -o jsonpath='{.status.nodeName}')
wait_for "node $node Ready" 60 node_ready "$node"
ec2 "Action=TerminateInstances&InstanceId.1=$instance" >/dev/null
wait_for "NodeClaim $claim gone" 60 gone nodeclaim "$claim"
wait_for "its Node $node gone" 30 gone node "$node"
grep -q "garbage collecting nodeclaim with no cloudprovider representation: $claim" "$tmp/reaper.log" ||
	fail "no garbage-collection line for $claim"
grep -q "not draining node $node: its instance $instance is gone" "$tmp/reaper.log" ||
	fail "node $node was drained although its instance was gone"
expect_eq "the reaper did not terminate $instance again" "$(terminations "$instance")" 1
ok "an instance terminated out of band: its NodeClaim and Node went, undrained"
wait_for "the oob pod bound to a new node" 90 sh -c "[ \"\$(kubectl get pods -l app=oob -o jsonpath='{.items[0].spec.nodeName}')\" != '' ] && [ \"\$(kubectl get pods -l app=oob -o jsonpath='{.items[0].spec.nodeName}')\" != $node ]"
kubectl scale deployment oob --replicas 0 >/dev/null

# --- a node that never registers ----------------------------------------------------------
aws_faults '{"neverBoot":["m5.2xlarge"]}'
pool stuck m5.2xlarge
kubectl scale deployment stuck --replicas 1 >/dev/null
wait_for "a NodeClaim with an instance" 60 sh -c "[ -n \"\$(kubectl get nodeclaims -l karpenter.sh/nodepool=stuck -o jsonpath='{.items[0].status.providerID}')\" ]"
claim=$(claims_of stuck)
instance=$(instance_of "$claim")
aws_faults '{}'
stuck=$claim stuck_instance=$instance

# --- orphaned instances (while the stuck NodeClaim's registration-ttl runs) -------------------
orphan=$(run_instance "$cluster_tag=owned" karpenter.sh/nodepool=oob)
foreign=$(run_instance "$cluster_tag=owned" eks:nodegroup-name=managed)
[ -n "$orphan" ] && [ -n "$foreign" ] || fail "RunInstances launched nothing"
wait_for "the orphan $orphan terminated" 60 on_its_way_out "$orphan"
grep -q "garbage collecting instance $orphan of nodepool oob" "$tmp/reaper.log" || fail "no GC line for $orphan"
curl -sS "$AWS_ENDPOINT_URL/_sim/status" | python3 -c '
import json, sys
from datetime import datetime
def t(s): return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
i = {x["instanceId"]: x for x in json.load(sys.stdin)["instances"]}[sys.argv[1]]
age = t(i["terminateTime"]) - t(i["launchTime"])
print("  orphan terminated %.1f s after its launch" % age)
sys.exit(0 if age >= float(sys.argv[2]) else 1)' "$orphan" "$GRACE" || fail "the orphan went before gc-grace"
expect_eq "the instance of another node group still runs" "$(instance_state "$foreign")" running
ok "an orphaned instance was terminated after gc-grace, another node group's left alone"
ec2 "Action=TerminateInstances&InstanceId.1=$foreign" >/dev/null

# --- the node that never registers, continued -----------------------------------------------
wait_for "NodeClaim $stuck deleted after registration-ttl" 90 gone nodeclaim "$stuck"
grep -q "terminating due to timeout: nodeclaim $stuck did not register" "$tmp/reaper.log" ||
	fail "no 'terminating due to timeout' line for $stuck"
wait_for "instance $stuck_instance on its way out" 30 on_its_way_out "$stuck_instance"
ok "a NodeClaim that never registered was deleted and its instance terminated"
wait_for "the stuck pod running on a Ready node" 120 sh -c \
	"n=\$(kubectl get pods -l app=stuck -o jsonpath='{.items[0].spec.nodeName}'); [ -n \"\$n\" ] && kubectl get node \"\$n\" -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
ok "its pod runs on a node that joined"
kubectl scale deployment stuck --replicas 0 >/dev/null

# --- no watcher, no judgement -------------------------------------------------------------------
# With the watcher gone the reaper's replica still looks synced but ages: a
# NodeClaim created meanwhile would look absent, so nothing is collected
# until the cluster state is current again.
kill "$pid_watcher"
wait "$pid_watcher" 2>/dev/null || true
late=$(run_instance "$cluster_tag=owned" karpenter.sh/nodepool=oob)
sleep $((GRACE + 4))
expect_eq "an orphan is left alone while the watcher is away" "$(instance_state "$late")" running
"$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 --health-port 0 \
	--leader-elect=false --announce-interval 500ms >>"$tmp/watcher.log" 2>&1 &
pid_watcher=$!
e2e_pids="$e2e_pids $pid_watcher"
wait_for "the orphan $late terminated once the watcher is back" 60 on_its_way_out "$late"
ok "garbage collection waits for a current cluster state"

# --- a NodeClaim deleted while no launcher runs -------------------------------------------------
kill "$pid_launcher"
wait "$pid_launcher" 2>/dev/null || true
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: cut-short
  labels: {karpenter.sh/nodepool: oob}
  finalizers: [karpenter.sh/termination]
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
YAML
# What a launcher killed between CreateFleet and recording it leaves.
cut=$(run_instance "$cluster_tag=owned" karpenter.sh/nodepool=oob karpenter.sh/nodeclaim=cut-short)
kubectl delete nodeclaim cut-short --wait=false >/dev/null
wait_for "NodeClaim cut-short released" 60 gone nodeclaim cut-short
grep -q "releasing nodeclaim cut-short, deleted before its launch was recorded ($cut)" "$tmp/reaper.log" ||
	fail "no release line naming $cut"
expect_eq "its instance $cut was terminated" "$(on_its_way_out "$cut" && echo yes)" yes
ok "a NodeClaim deleted with no launcher running: its instance terminated, then released"

expect_each_terminated_once
expect_one_instance_per_nodeclaim "at the end"
