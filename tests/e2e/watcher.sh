#!/bin/sh
# End-to-end: kanna-watcher against kanna-sim, observed as another kanna
# process would see it (kanna-probe). CRD versions come from discovery and
# absent ones are picked up later; pending pods reach scheduler shard 0;
# invalid objects get an Event and are never planned with; the replica
# equals the API field by field after churn of thousands of objects through
# cut watches and 410 Gone; a subscriber that stays connected across kill -9
# of the watcher ends equal to the API with nothing replayed; and no replica
# is synced while the watcher is still listing.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
PROBE="$BUILDDIR/tests/e2e/kanna-probe"

e2e_init
export KUBECACHEDIR="$tmp/kubecache" # discovery changes below: keep kubectl's cache fresh
# A cluster without Provisioners (v1alpha5) and with EC2NodeClasses at v1beta1 only.
# The comparisons below take the API at one moment and the replica later:
# the sim's pod garbage collector (the churn leaves pods of deleted nodes)
# would change the API in between, so it waits an hour here.
cat >"$tmp/sim.yaml" <<'YAML'
pod-gc-quarantine-ms: 3600000
k8s-faults:
  unservedVersions: [karpenter.sh/v1alpha5, karpenter.k8s.aws/v1]
YAML
start_sim --config "$tmp/sim.yaml"
server=$(sed -n 's/.*"server": *"\([^"]*\)".*/\1/p' "$KUBECONFIG")
sim_faults() { # JSON: replaces every Kubernetes-side fault
	curl -sS --cacert "$tmp/state/ca.crt" -H "Authorization: Bearer $(cat "$tmp/state/token")" \
		-H 'Content-Type: application/json' -X "${2:-POST}" "$server/_sim/faults" -d "$1"
}
watcher_flags="--runtime-dir $tmp/run --metrics-port 0 --health-port 0 --discovery-interval 1s"
# A short Lease (client-go's rule: retry period * 1.2 < renew deadline <
# duration); the kill -9 below hands it to another replica's watcher. The
# renew deadline is generous: a 2 s one ran out on a loaded CI machine and
# the watcher gave up its Lease mid-test.
lease_flags="--lease-duration 6s --lease-renew-deadline 5s --lease-retry-period 1s"
start watcher "$BUILDDIR/watcher/kanna-watcher" $watcher_flags --announce-interval 500ms \
	$lease_flags --leader-election-identity e2e-replica-1
wait_for "the watcher's first sync" 30 grep -q "cluster state synced" "$tmp/watcher.log"
ok "watcher lists every collection and reports synced"

# --- which versions: discovery, absent collections, CRDs installed later
log=$tmp/watcher.log
expect_eq "a collection that is not served is logged once, at info" \
	"$(grep -c 'provisioners: the API server serves no version of provisioners.karpenter.sh' "$log")" 1
grep -q "synced ec2nodeclasses from /apis/karpenter.k8s.aws/v1beta1/ec2nodeclasses" "$log" ||
	fail "EC2NodeClasses not read at v1beta1 where v1 is not served"
ok "EC2NodeClasses are read at v1beta1 where v1 is not served"
grep -q "synced nodepools from /apis/karpenter.sh/v1/nodepools" "$log" || fail "NodePools not read at v1"
grep -q "/apis/karpenter.sh/v1beta1/nodepools" "$log" && fail "NodePools read at v1beta1 too"
ok "NodePools are read at v1 only where v1 and v1beta1 are both served"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: beta-class}
spec:
  amiFamily: AL2
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
---
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: beta-pool}
spec:
  template:
    spec:
      nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: beta-class}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
YAML
wait_for "the v1beta1 EC2NodeClass in the replica" 15 sh -c \
	"'$PROBE' replica --runtime-dir '$tmp/run' | grep -q '\"key\":\"nodeclass//beta-class\"'"
"$PROBE" replica --runtime-dir "$tmp/run" >"$tmp/replica.txt"
grep -q '"key":"nodepool//beta-pool"' "$tmp/replica.txt" && fail "a v1beta1 NodePool was read beside v1"
ok "a v1beta1 object is read where v1beta1 is the version served, and only there"
# Karpenter upgraded: v1 EC2NodeClasses and v1alpha5 Provisioners appear.
sim_faults '{}' >/dev/null
rm -rf "$KUBECACHEDIR"
wait_for "EC2NodeClasses read at v1" 15 grep -q "ec2nodeclasses: watching karpenter.k8s.aws/v1 instead of v1beta1" "$log"
wait_for "Provisioners once served" 15 grep -q "synced provisioners from /apis/karpenter.sh/v1alpha5/provisioners" "$log"
wait_for "the v1beta1-only EC2NodeClass to leave the replica" 15 sh -c \
	"! '$PROBE' replica --runtime-dir '$tmp/run' | grep -q '\"key\":\"nodeclass//beta-class\"'"
ok "a CRD version installed later is picked up, and preferred once it is v1"

# --- NodePools, pending pods, invalid objects
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
wait_for "the Provisioner's node class" 15 sh -c \
	"'$PROBE' replica --runtime-dir '$tmp/run' >'$tmp/replica.txt' && grep -q '\"key\":\"nodeclass//legacy\"' '$tmp/replica.txt'"
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
ok "a v1alpha5 Provisioner becomes a NodePool and a node class"

# NodePools that cannot be decoded, or not carried (a 5,000-byte annotation
# is legal in Kubernetes, past kanna's wire limit): an Event, the condition,
# published as invalid (never planned with); nothing else changes.
# (their resourceVersion aside: the watcher writes their status meanwhile)
grep '"key":"nodepool//' "$tmp/replica.txt" | sed 's/"resource_version":"[^"]*"//' >"$tmp/nodepools-before.txt"
blob=$(head -c 5000 /dev/zero | tr '\0' x)
kubectl apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: broken}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  limits: {cpu: 1e400}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: big}
spec:
  template:
    metadata: {annotations: {example.com/blob: "$blob"}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
YAML
for np in broken big; do
	wait_for "a FailedValidation Event on $np" 15 sh -c \
		"kubectl get events -A -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name}{\"\n\"}{end}' | grep -q 'FailedValidation $np'"
done
ok "undecodable and oversized NodePools get a FailedValidation Event"
wait_for "ValidationSucceeded=False on the undecodable NodePool" 15 sh -c \
	"kubectl get nodepool broken -o jsonpath='{.status.conditions[?(@.type==\"ValidationSucceeded\")].message}' | grep -q \"'1e400' is not a quantity\""
wait_for "ValidationSucceeded=False on the oversized NodePool" 15 sh -c \
	"kubectl get nodepool big -o jsonpath='{.status.conditions[?(@.type==\"ValidationSucceeded\")].message}' | grep -q 'value of 5000 bytes exceeds the limit of 4096'"
ok "their status says why"
"$PROBE" replica --runtime-dir "$tmp/run" >"$tmp/replica.txt" || fail "no replica syncs after an oversized NodePool"
for np in broken big; do
	grep -q "\"key\":\"nodepool//$np\".*\"status\":\"invalid\"" "$tmp/replica.txt" ||
		fail "NodePool $np is not published as invalid: $(grep "nodepool//$np" "$tmp/replica.txt")"
done
grep '"key":"nodepool//' "$tmp/replica.txt" | grep -v '"key":"nodepool//\(broken\|big\)"' |
	sed 's/"resource_version":"[^"]*"//' >"$tmp/nodepools-after.txt"
cmp -s "$tmp/nodepools-before.txt" "$tmp/nodepools-after.txt" ||
	fail "other NodePools changed: $(diff "$tmp/nodepools-before.txt" "$tmp/nodepools-after.txt" | cut -c 1-400)"
ok "they are published as invalid, replicas still sync, nothing else changed"

# A disruption budget whose schedule the CRD's pattern lets through but cron
# cannot read: a condition and an Event naming the field; the NodePool still
# provisions (published ok), only disruption is off (the reaper's part).
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: badbudget}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  disruption:
    consolidateAfter: 0s
    budgets:
    - {nodes: "1"}
    - {nodes: "0", schedule: "61 * * * *", duration: 1h}
YAML
wait_for "DisruptionBudgetsValid=False on badbudget" 15 sh -c \
	"kubectl get nodepool badbudget -o jsonpath='{.status.conditions[?(@.type==\"DisruptionBudgetsValid\")].message}' | grep -q 'spec.disruption.budgets\[1\].schedule: \"61 \* \* \* \*\": minute 61 out of range 0-59'"
wait_for "a FailedValidation Event naming the budget" 15 sh -c \
	"kubectl get events -A -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{\"\n\"}{end}' | grep -q '^FailedValidation badbudget Disruption budgets: spec.disruption.budgets\[1\].schedule'"
expect_eq "its ValidationSucceeded stays True" "$(cond badbudget)" True
"$PROBE" replica --runtime-dir "$tmp/run" >"$tmp/replica.txt" || fail "no replica"
grep -q '"key":"nodepool//badbudget".*"status":"invalid"' "$tmp/replica.txt" &&
	fail "a NodePool with a bad budget must still provision: $(grep badbudget "$tmp/replica.txt")"
ok "a malformed budget schedule: DisruptionBudgetsValid=False and an Event name the field, provisioning goes on"
kubectl patch nodepool badbudget --type merge -p '{"spec":{"disruption":{"budgets":[{"nodes":"1"}]}}}' >/dev/null
wait_for "DisruptionBudgetsValid=True once fixed" 15 sh -c \
	"[ \"\$(kubectl get nodepool badbudget -o jsonpath='{.status.conditions[?(@.type==\"DisruptionBudgetsValid\")].status}')\" = True ]"
ok "fixing the budget sets DisruptionBudgetsValid=True"
kubectl delete nodepool badbudget >/dev/null

# --- churn of thousands of objects of several kinds, compared field by field
api_json() { # FILE: the API's objects of the kinds kanna-probe compares, replaced at once
	kubectl get pods,nodes,nodepools.v1.karpenter.sh,persistentvolumeclaims,namespaces -A -o json >"$1.new" &&
		mv "$1.new" "$1"
}
compare() {
	api_json "$tmp/api.json" && "$PROBE" compare --runtime-dir "$tmp/run" --api "$tmp/api.json" >"$tmp/compare.txt"
}
replicas=$(scaled 300)
kubectl scale deployment inflate --replicas=$replicas >/dev/null
"$PROBE" churn --count "$(scaled 2000)" --prefix c1 >"$tmp/churn.txt" || fail "churn: $(cat "$tmp/churn.txt")"
wait_for "$replicas pods of the Deployment" 60 sh -c "kubectl get pods -l app=inflate --no-headers | wc -l | grep -qx $replicas"
wait_for "the replica to equal the API field by field" 60 compare
ok "after churn of $(sed -n 's/^churned //p' "$tmp/churn.txt") the replica equals the API field by field ($(tail -n 1 "$tmp/compare.txt"))"

# --- a subscriber connected across kill -9 of the watcher, and the new
# watcher's streams cut every 50 events, the first resumed ones 410 Gone
"$PROBE" follow --runtime-dir "$tmp/run" --api "$tmp/api-follow.json" --timeout 120 >"$tmp/follow.txt" 2>&1 &
follower=$!
e2e_pids="$e2e_pids $follower"
wait_for "the follower's first sync" 30 grep -q "^synced" "$tmp/follow.txt"
sim_faults '{"watchCutAfterEvents":50,"watchGone":3}' >/dev/null
"$PROBE" churn --count "$(scaled 1000)" --prefix c2 >"$tmp/churn2.txt" &
churner=$!
kubectl scale deployment inflate --replicas="$(scaled 400)" >/dev/null
sleep 0.3
kill -9 "$pid_watcher"
start watcher2 "$BUILDDIR/watcher/kanna-watcher" $watcher_flags $lease_flags \
	--leader-election-identity e2e-replica-2
wait "$churner" || fail "churn during the restart: $(cat "$tmp/churn2.txt")"
wait_for "the restarted watcher's sync" 30 grep -q "cluster state synced" "$tmp/watcher2.log"
grep -q "is held by" "$tmp/watcher2.log" || fail "the new watcher did not wait for the dead one's lease"
grep -q "successfully acquired lease" "$tmp/watcher2.log" || fail "the new watcher did not take the lease over"
ok "another replica's watcher waits out the killed one's Lease, then takes over"
kubectl scale deployment inflate --replicas="$(scaled 250)" >/dev/null
"$PROBE" churn --count "$(scaled 500)" --prefix c3 >"$tmp/churn3.txt" || fail "churn: $(cat "$tmp/churn3.txt")"
left=$(sim_faults '' GET | sed -n 's/.*"watchGone": *\([0-9]*\).*/\1/p')
expect_eq "watches resumed after cuts met 410 Gone and relisted" "$left" 0
sim_faults '{}' >/dev/null
deadline=$(($(date +%s) + 90))
while kill -0 "$follower" 2>/dev/null; do
	[ "$(date +%s)" -lt "$deadline" ] || fail "the follower never equalled the API: $(tail -n 5 "$tmp/follow.txt")"
	api_json "$tmp/api-follow.json"
	sleep 1
done
wait "$follower" || fail "the follower ended unequal: $(tail -n 25 "$tmp/follow.txt")"
stats=$(tail -n 1 "$tmp/follow.txt")
case $stats in *" gaps=0 "*|"snapshots=1 "*) fail "the follower did not live through the restart: $stats" ;; esac
case $stats in *" duplicates=0 "*" rv_regressions=0 equal=yes") ;; *) fail "the follower saw replayed or stale deltas: $stats" ;; esac
ok "a subscriber connected across kill -9, cut watches and 410 ends equal to the API field by field, nothing lost or replayed ($stats)"
"$PROBE" replica --runtime-dir "$tmp/run" >"$tmp/replica.txt"
dups=$(sed -n 's/^{"key":"\([^"]*\)".*/\1/p' "$tmp/replica.txt" | sort | uniq -d | wc -l)
expect_eq "no object twice in the replica" "$dups" "0"

# --- no replica is synced while the watcher is still listing
api_json "$tmp/api.json"
sim_faults '{"latencyMs":1500}' >/dev/null
kill -9 "$pid_watcher2"
start watcher3 "$BUILDDIR/watcher/kanna-watcher" $watcher_flags --leader-elect=false
"$PROBE" compare --runtime-dir "$tmp/run" --api "$tmp/api.json" --timeout 60 >"$tmp/compare.txt" ||
	fail "a replica synced on part of the cluster: $(tail -n 5 "$tmp/compare.txt")"
sim_faults '{}' >/dev/null
grep -q "cluster state synced" "$tmp/watcher3.log" || fail "the probe synced before the watcher did"
ok "a replica that asks while the watcher lists gets the whole cluster ($(tail -n 1 "$tmp/compare.txt"))"
