#!/bin/sh
# End-to-end: the launcher is crash-safe and rides out a hostile cloud.
#  - kill -9 after the NodeClaim exists but before CreateFleet, and again
#    while CreateFleet is in flight: after a restart every NodeClaim has
#    exactly one instance and every pod is bound;
#  - a throttling storm (half of all EC2 calls RequestLimitExceeded) loses
#    no plan;
#  - wrong credentials: a clear error, no NodeClaim, no instance; with the
#    right ones the waiting pods are launched for;
#  - two scheduler shards racing for one NodePool's cpu limit never
#    overshoot it together.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }

# deployment NAME REPLICAS CPU [SELECTOR]: pods of CPU cores on intent SELECTOR.
deployment() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      nodeSelector: {intent: ${4:-apps}}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "$3", memory: 1Gi}}}
YAML
}

wait_bound() { # APP N SECONDS
	wait_for "$2 $1 pods bound" "$3" sh -c "[ \$(kubectl get pods -l app=$1 -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = $2 ]"
	ok "$2 $1 pod(s) bound"
}

e2e_init
start_sim
set -a
. "$tmp/state/aws.env"
set +a
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --announce-interval 500ms --shards 2
for i in 0 1; do
	start "scheduler$i" "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" \
		--metrics-port 0 --health-port 0 --leader-elect=false --batch-idle-duration 300ms \
		--shard "$i/2" --plan-timeout 20s
done
start_launcher --log-level debug
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"

# --- kill -9 after the NodeClaim, before CreateFleet --------------------------
# Every AWS answer takes 3 s, so the launcher is still resolving the
# EC2NodeClass (it starts when the NodePool appears, to make its launch
# templates ahead) when its NodeClaim appears.
aws_faults '{"latencyMs": 3000}'
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
deployment first 5 1
wait_for "the first NodeClaim" 30 sh -c "kubectl get nodeclaims -o name | grep -q ."
kill -9 "$pid_launcher"
wait "$pid_launcher" 2>/dev/null || true
grep -q "CreateFleet for nodeclaim" "$tmp/launcher.log" && fail "CreateFleet went out before the kill; the test did not test the window it means to"
ok "killed the launcher after it created NodeClaim $(kubectl get nodeclaims -o name) and before CreateFleet"
sleep 4
aws_faults '{}'
start_launcher --log-level debug
wait_bound first 5 60
grep -q "resuming the launch of nodeclaim" "$tmp/launcher.log" || fail "the restarted launcher did not resume the NodeClaim"
expect_one_instance_per_nodeclaim "after kill -9 before CreateFleet"

# --- kill -9 while CreateFleet is in flight ----------------------------------------
aws_faults '{"latencyMs": 2000}'
n_fleet=$(grep -c "CreateFleet for nodeclaim" "$tmp/launcher.log" || true)
deployment second 6 1
wait_for "a second CreateFleet" 60 sh -c "[ \$(grep -c 'CreateFleet for nodeclaim' '$tmp/launcher.log') -gt $n_fleet ]"
kill -9 "$pid_launcher"
wait "$pid_launcher" 2>/dev/null || true
ok "killed the launcher while CreateFleet was in flight"
sleep 3
aws_faults '{}'
start_launcher --log-level debug
wait_bound second 6 60
expect_one_instance_per_nodeclaim "after kill -9 during CreateFleet"

# --- kill -9 while a batched CreateFleet is in flight ------------------------------
# Four pods that refuse to share a node: four identical NodeClaims in one
# plan, launched by one CreateFleet whose token each NodeClaim records.
aws_faults '{"latencyMs": 2000}'
n_batch=$(grep -c "batched CreateFleet\|token kanna-batch-" "$tmp/launcher.log" || true)
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: spread}
spec:
  replicas: 4
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      nodeSelector: {intent: apps}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: spread}}}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}
YAML
wait_for "a batched CreateFleet" 60 sh -c "[ \$(grep -c 'token kanna-batch-' '$tmp/launcher.log') -gt $n_batch ]"
kill -9 "$pid_launcher"
wait "$pid_launcher" 2>/dev/null || true
ok "killed the launcher while a batched CreateFleet was in flight"
sleep 3
aws_faults '{}'
start_launcher --log-level debug
wait_bound spread 4 60
expect_eq "four nodes for four pods that refuse to share" \
	"$(kubectl get pods -l app=spread -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | grep -c .)" 4
expect_one_instance_per_nodeclaim "after kill -9 during a batched CreateFleet"

# --- throttling storm ---------------------------------------------------------------------
aws_faults '{"throttleRate": 0.5}'
deployment storm 12 2
wait_bound storm 12 120
aws_faults '{}'
expect_one_instance_per_nodeclaim "after a throttling storm"

# --- wrong credentials ----------------------------------------------------------------------
kill "$pid_launcher"
wait "$pid_launcher" 2>/dev/null || true
claims_before=$(kubectl get nodeclaims -o name | grep -c .)
AWS_SECRET_ACCESS_KEY=not-the-secret start_launcher
wait_for "the credentials error" 30 grep -q "AWS refused the credentials from environment" "$tmp/launcher.log"
grep "AWS refused the credentials" "$tmp/launcher.log" | head -1 | sed 's/^/  /'
deployment locked 3 2
sleep 5
expect_eq "no NodeClaim while the credentials are wrong" "$(kubectl get nodeclaims -o name | grep -c .)" "$claims_before"
expect_one_instance_per_nodeclaim "no instance while the credentials are wrong"
kill "$pid_launcher"
wait "$pid_launcher" 2>/dev/null || true
start_launcher
wait_bound locked 3 60

# --- kill -9 after the launch is recorded, before the Node is created -------------
# Every request on nodes fails (the watcher's open watch goes on), so the
# launcher records the launch but cannot create the Node; it is killed, and
# the kubelet registers the Node meanwhile with the well-known labels only.
# After the restart the launcher must label it (intent: apps, the NodePool
# template's) and give it its finalizer before binding: a bind checked
# against the kubelet's Node refuses every pod that selects intent: apps.
# It restarts with a launch-timeout the NodeClaim is already older than:
# labelling a registered Node is registration, which Karpenter does at any
# age (a chaos run once had a Node keep karpenter.sh/unregistered for good
# because a launcher restarted past the timeout would not label it).
sim_faults '{"errorRates": {"nodes": 1}}'
deployment late 1 15 # more than any node so far has free: launched for
wait_for "the Node's creation to fail" 60 grep -q "Failed to create the Node for nodeclaim" "$tmp/launcher.log"
kill -9 "$pid_launcher"
wait "$pid_launcher" 2>/dev/null || true
sim_faults '{}'
claim=$(grep "Failed to create the Node for nodeclaim" "$tmp/launcher.log" | tail -1 | sed 's/.*nodeclaim \([^:]*\):.*/\1/')
provider=$(kubectl get nodeclaim "$claim" -o jsonpath='{.status.providerID}')
[ -n "$provider" ] || fail "nodeclaim $claim has no providerID; the test did not test the window it means to"
node_of_claim() {
	kubectl get nodes -o jsonpath='{range .items[*]}{.spec.providerID} {.metadata.name}{"\n"}{end}' |
		awk -v p="$provider" '$1 == p {print $2}'
}
wait_for "the kubelet to register the Node of $claim" 30 sh -c "kubectl get nodes -o jsonpath='{.items[*].spec.providerID}' | grep -q '$provider'"
node=$(node_of_claim)
[ -z "$(kubectl get node "$node" -o jsonpath='{.metadata.labels.intent}')" ] ||
	fail "the kubelet's Node $node has intent already; the test did not test the window it means to"
node_taints() {
	kubectl get node "$node" -o jsonpath='{range .spec.taints[*]}{.key}:{.effect}{" "}{end}'
}
expect_eq "the kubelet registered $node as its user data asks, under karpenter.sh/unregistered:NoExecute" \
	"$(node_taints)" "karpenter.sh/unregistered:NoExecute "
ok "killed the launcher after recording $claim and before creating its Node; the kubelet registered $node"
sleep 2
start_launcher --log-level debug --launch-timeout 1s
wait_bound late 1 60
expect_eq "the late pod is on its NodeClaim's Node" "$(kubectl get pods -l app=late -o jsonpath='{.items[0].spec.nodeName}')" "$node"
expect_eq "the kubelet's Node got the NodePool's labels" "$(kubectl get node "$node" -o jsonpath='{.metadata.labels.intent}')" apps
expect_eq "the kubelet's Node got the termination finalizer" "$(kubectl get node "$node" -o jsonpath='{.metadata.finalizers[*]}')" karpenter.sh/termination
grep "Failed to bind pod default/late-" "$tmp/launcher.log" && fail "the launcher refused the late pod on the kubelet's Node"
wait_for "the late pod to run (no kubelet refused it for a NoExecute taint)" 15 sh -c \
	"[ \"\$(kubectl get pods -l app=late -o jsonpath='{.items[0].status.phase}')\" = Running ]"
wait_for "the Node's hold to come off" 15 sh -c "[ -z \"\$(kubectl get node $node -o jsonpath='{.spec.taints}')\" ]"
ok "the kubelet's karpenter.sh/unregistered:NoExecute gave way to the launcher's hold, which came off after the bind"
expect_one_instance_per_nodeclaim "after kill -9 before the Node was created"
kill "$pid_launcher"
wait "$pid_launcher" || fail "the launcher did not exit 0 on SIGTERM"
start_launcher --log-level debug

# --- two shards racing for a limit ------------------------------------------------------------
# NodePool "capped" allows 8 CPUs in all; every Deployment is one pod of 5
# CPUs. Pods are routed to shards by a hash of their owner's uid, so
# Deployments are added until each shard holds one. The launcher is paused
# (SIGSTOP) while the NodePool appears, so both shards plan before either
# can see the other's NodeClaim: a real race, every run. On SIGCONT the
# launcher admits what fits and refuses the rest with LimitExceeded.
shard_has_race_pod() { grep -q "pod=race" "$tmp/scheduler$1.log"; }
n_race=0
until shard_has_race_pod 0 && shard_has_race_pod 1; do
	n_race=$((n_race + 1))
	[ $n_race -le 16 ] || fail "16 Deployments and still one shard has none of them"
	deployment "race$n_race" 1 5 capped
	wait_for "race$n_race to be announced" 30 grep -q "pod=race$n_race-" "$tmp/scheduler0.log" "$tmp/scheduler1.log"
done
ok "$n_race Deployment(s) cover both scheduler shards"
kill -STOP "$pid_launcher"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: capped}
spec:
  template:
    metadata: {labels: {intent: capped}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  limits: {cpu: "8"}
YAML
for sh in 0 1; do
	wait_for "shard $sh to plan for capped" 30 grep -q "nodepool=capped" "$tmp/scheduler$sh.log"
done
kill -CONT "$pid_launcher"
ok "both shards planned for NodePool capped while the launcher was paused"
wait_for "a limit refusal" 30 grep -q "exceed limits for nodepool capped" "$tmp/launcher.log"
wait_for "capped's admitted pods bound" 30 sh -c "[ \$(kubectl get nodes -l karpenter.sh/nodepool=capped -o name | grep -c .) -ge 1 ]"
sleep 3
total=0
for n in $(kubectl get nodes -l karpenter.sh/nodepool=capped -o jsonpath='{range .items[*]}{.status.capacity.cpu}{"\n"}{end}'); do
	total=$((total + n))
done
[ "$total" -le 8 ] || fail "NodePool capped has $total CPUs of nodes, over its limit of 8"
[ "$total" -gt 0 ] || fail "nothing was launched for NodePool capped"
ok "racing shards stayed within the limit: $total of 8 CPUs launched"
wait_for "a LimitExceeded Event" 30 sh -c "kubectl get events -o jsonpath='{range .items[*]}{.reason}{\"\\n\"}{end}' | grep -qx LimitExceeded"
ok "the refused NodeClaim got a LimitExceeded Event"
expect_one_instance_per_nodeclaim "at the end"
