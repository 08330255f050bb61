#!/bin/sh
# End-to-end: kanna-watcher against kanna-sim, observed as another kanna
# process would see it (kanna-probe). The replica equals the API after
# churn; pending pods reach scheduler shard 0; invalid objects get an Event
# and change nothing; kill -9 of the watcher mid-stream is recovered by
# resync with nothing lost or duplicated.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
PROBE="$BUILDDIR/tests/e2e/kanna-probe"

e2e_init
start_sim
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --announce-interval 500ms --lease-duration 3s
wait_for "the watcher's first sync" 30 grep -q "cluster state synced" "$tmp/watcher.log"
ok "watcher lists every collection and reports synced"

kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata: {labels: {intent: apps}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: impossible}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: kubernetes.io/arch, operator: In, values: [arm64]}
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: legacy}
spec:
  ttlSecondsAfterEmpty: 30
  provider:
    subnetSelector: {karpenter.sh/discovery: kanna}
    securityGroupSelector: {karpenter.sh/discovery: kanna}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: inflate}
spec:
  replicas: 5
  selector: {matchLabels: {app: inflate}}
  template:
    metadata: {labels: {app: inflate}}
    spec:
      nodeSelector: {intent: apps}
      containers:
      - name: inflate
        image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
        resources: {requests: {cpu: "1", memory: 1.5Gi}}
YAML

# The five pods become Unschedulable (no nodes) and reach shard 0.
wait_for "5 unschedulable pods" 30 sh -c \
	"kubectl get pods -o jsonpath='{range .items[*]}{.status.conditions[0].reason}{\"\n\"}{end}' | grep -c Unschedulable | grep -qx 5"
pending=$("$PROBE" pending --runtime-dir "$tmp/run" --timeout 10 | sort)
want=$(kubectl get pods -o jsonpath='{range .items[*]}default/{.metadata.name}{"\n"}{end}' | sort)
expect_eq "pending pods announced to shard 0" "$pending" "$want"

# Replica contents: objects by key, with the conversions applied.
"$PROBE" replica --runtime-dir "$tmp/run" >"$tmp/replica.txt" || fail "probe replica"
grep -q '"key":"nodepool//impossible".*"status":"invalid"' "$tmp/replica.txt" ||
	fail "impossible NodePool not marked invalid: $(grep impossible "$tmp/replica.txt")"
ok "a NodePool with impossible requirements is published as invalid"
cond() { kubectl get nodepool "$1" -o jsonpath='{.status.conditions[?(@.type=="ValidationSucceeded")].status}'; }
wait_for "ValidationSucceeded=False on the impossible NodePool" 15 sh -c \
	"kubectl get nodepool impossible -o jsonpath='{.status.conditions[?(@.type==\"ValidationSucceeded\")].message}' | grep -q 'no value in common'"
expect_eq "the impossible NodePool's ValidationSucceeded condition" "$(cond impossible)" "False"
wait_for "ValidationSucceeded=True on the default NodePool" 15 sh -c "[ \"\$(kubectl get nodepool default -o jsonpath='{.status.conditions[?(@.type==\"ValidationSucceeded\")].status}')\" = True ]"
ok "a valid NodePool gets ValidationSucceeded=True"
grep -q '"key":"nodepool//legacy".*"source_api":"v1alpha5"' "$tmp/replica.txt" || fail "provisioner not converted"
grep -q '"key":"nodeclass//legacy"' "$tmp/replica.txt" || fail "inline provider not converted to a node class"
ok "a v1alpha5 Provisioner becomes a NodePool and a node class"

# A NodePool that cannot be decoded: reported with an Event and published as
# invalid (never planned with); nothing else changes.
grep '"key":"nodepool//' "$tmp/replica.txt" >"$tmp/nodepools-before.txt"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: broken}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: Near, values: [amd64]}
YAML
wait_for "a FailedValidation Event" 15 sh -c \
	"kubectl get events -A -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name}{\"\n\"}{end}' | grep -q 'FailedValidation broken'"
ok "an undecodable NodePool gets a FailedValidation Event"
wait_for "ValidationSucceeded=False on the undecodable NodePool" 15 sh -c \
	"kubectl get nodepool broken -o jsonpath='{.status.conditions[?(@.type==\"ValidationSucceeded\")].message}' | grep -q \"'Near' is not one of\""
ok "the undecodable NodePool's status says why"
"$PROBE" replica --runtime-dir "$tmp/run" >"$tmp/replica.txt"
grep -q '"key":"nodepool//broken".*"status":"invalid"' "$tmp/replica.txt" ||
	fail "the undecodable NodePool is not published as invalid: $(grep broken "$tmp/replica.txt")"
grep '"key":"nodepool//' "$tmp/replica.txt" | grep -v '"key":"nodepool//broken"' >"$tmp/nodepools-after.txt"
cmp -s "$tmp/nodepools-before.txt" "$tmp/nodepools-after.txt" || fail "other NodePools changed"
ok "the undecodable NodePool is published as invalid and nothing else changed"

# Churn, then compare the replica with the API pod by pod.
compare_pods() {
	"$PROBE" replica --runtime-dir "$tmp/run" >"$tmp/replica.txt" || return 1
	sed -n 's/^{"key":"pod\/default\/\([^"]*\)".*"resource_version":"\([^"]*\)".*/\1 \2/p' \
		"$tmp/replica.txt" | sort >"$tmp/replica-pods.txt"
	kubectl get pods -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}' |
		sort >"$tmp/api-pods.txt"
	cmp -s "$tmp/replica-pods.txt" "$tmp/api-pods.txt"
}
kubectl scale deployment inflate --replicas=300 >/dev/null
wait_for "300 pods" 60 sh -c "kubectl get pods --no-headers | wc -l | grep -qx 300"
kubectl scale deployment inflate --replicas=120 >/dev/null
wait_for "the replica to equal the API after churn" 60 compare_pods
ok "replica equals the API pod by pod (name and resourceVersion) after churn"

# kill -9 the watcher mid-stream; a new one starts; replicas resync.
kubectl scale deployment inflate --replicas=400 >/dev/null
kill -9 "$pid_watcher"
start watcher2 "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --lease-duration 3s
kubectl scale deployment inflate --replicas=250 >/dev/null
wait_for "the restarted watcher's sync" 30 grep -q "cluster state synced" "$tmp/watcher2.log"
grep -q "is held by" "$tmp/watcher2.log" || fail "the new watcher did not wait for the dead one's lease"
grep -q "successfully acquired lease" "$tmp/watcher2.log" || fail "the new watcher did not take the lease over"
ok "a new watcher waits out the killed one's Lease, then takes over"
wait_for "the replica to equal the API after a kill -9" 60 compare_pods
ok "after kill -9 of the watcher the replica equals the API again"
dups=$(sed -n 's/^{"key":"\([^"]*\)".*/\1/p' "$tmp/replica.txt" | sort | uniq -d | wc -l)
expect_eq "no object twice in the replica" "$dups" "0"
