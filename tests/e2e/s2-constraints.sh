#!/bin/sh
# End-to-end: seed scenario S2 (SCENARIOS.md, the AWS containers blog on
# scheduling constraints) on kanna-sim in the blog's region, eu-west-1
# (the sim's eu-west-1a/b/c), the whole daemon set. The NodePool is written
# as the blog writes it, a karpenter.sh/v1alpha5 Provisioner with limits
# cpu 1000 / memory 1000Gi and custom tags on its inline provider.
#  - Preferred pod anti-affinity (weight 50) on zone: 3 replicas in 3 zones;
#    scaled to 5 (more than the region's zones) all are still scheduled.
#  - Required pod affinity on topology.kubernetes.io/zone to a labelled pod,
#    leader and followers in one batch: the followers land in the leader's
#    zone.
#  - Volume topology: a WaitForFirstConsumer StorageClass and a StatefulSet
#    of 20 replicas with a PVC each and node affinity zone In [eu-west-1a]:
#    every node of theirs and every NodeClaim made for them is in
#    eu-west-1a, every PV provisioned for them too. A PVC bound to a PV of
#    eu-west-1b: its pod's node is in eu-west-1b.
#  - Every instance launched carries the provider's custom tags.
#  - Limits: 12 pods of 90 CPU / 100Gi ask for more than 1000 CPU: the
#    Provisioner's NodeClaims never add up to more than cpu 1000 or memory
#    1000Gi, and the pods left over get a FailedScheduling Event naming the
#    NodePool's limits.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 on PATH"; exit 77; }

# workload NAME REPLICAS CPU [SPEC-LINES]: a Deployment of pods app=NAME,
# its pod spec lines (six spaces in) appended as given.
workload() {
	cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "$3", memory: 512Mi}}}
${4:-}
YAML
}
# placed, nodes_of_app: tests/e2e/lib.sh
zones_of_app() { # APP: the zones of its pods' nodes, sorted, once each
	for n in $(nodes_of_app "$1"); do
		kubectl get node "$n" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}{"\n"}'
	done | sort -u
}
events_on() { # NAME: "REASON MESSAGE" of the Events on it
	kubectl get events -o jsonpath='{range .items[*]}{.reason} {.involvedObject.name} {.message}{"\n"}{end}' |
		sed -n "s/^\([^ ]*\) $1 /\1 /p"
}
claim_zones() { # the zone of every NodeClaim: "NAME ZONE" lines
	kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.labels.topology\.kubernetes\.io/zone}{"\n"}{end}' | sort
}

e2e_init
cat >"$tmp/sim.yaml" <<'YAML'
region: eu-west-1
kubelet-boot-ms: 1000
YAML
start_sim --config "$tmp/sim.yaml"
start_daemons
start_reaper
expect_eq "the sim's region" "$AWS_REGION" eu-west-1
wait_for "the launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 30 grep -q "reaping for cluster" "$tmp/reaper.log"

kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  requirements:
    - key: karpenter.sh/capacity-type
      operator: In
      values: ["spot", "on-demand"]
    - key: kubernetes.io/arch
      operator: In
      values: ["amd64"]
  limits:
    resources:
      cpu: 1000
      memory: 1000Gi
  provider:
    instanceProfile: KarpenterNodeInstanceProfile-kanna
    subnetSelector:
      karpenter.sh/discovery: kanna
    securityGroupSelector:
      karpenter.sh/discovery: kanna
    tags:
      team: containers-blog
      cost-center: s2-constraints
  ttlSecondsAfterEmpty: 30
YAML

# --- preferred pod anti-affinity (weight 50) on zone -------------------------------------
# First, on an empty cluster: a node with room would take them all, as
# kube-scheduler only scores preferences among the nodes that fit.
anti='      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 50
            podAffinityTerm: {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app: apart}}}'
workload apart 3 1 "$anti" | kubectl apply -f - >/dev/null
wait_for "3 apart pods bound" 60 placed apart=3
expect_eq "preferred anti-affinity: 3 pods spread over the 3 zones" "$(zones_of_app apart | tr '\n' ' ')" \
	"eu-west-1a eu-west-1b eu-west-1c "
kubectl scale deployment apart --replicas 5 >/dev/null
wait_for "5 apart pods bound (more than the zones)" 60 placed apart=5
ok "preferred anti-affinity: 5 pods in 3 zones still scheduled"

# --- required pod affinity on zone, leader and followers in one batch -------------------
{
	workload leader 1 1
	workload follower 4 2 '      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app: leader}}}'
} | kubectl apply -f - >/dev/null
wait_for "the leader and its 4 followers bound" 60 placed leader=1 follower=4
leader_zone=$(zones_of_app leader)
case $leader_zone in eu-west-1[abc]) ;; *) fail "the leader's node is in zone '$leader_zone'" ;; esac
expect_eq "pod affinity: the followers in the leader's zone" "$(zones_of_app follower)" "$leader_zone"
expect_eq "the nodes are the Provisioner's" \
	"$(kubectl get node "$(nodes_of_app leader)" -o jsonpath='{.metadata.labels.karpenter\.sh/provisioner-name}')" default

# --- volume topology: WaitForFirstConsumer, 20 replicas pinned to eu-west-1a -----------------
before=$(claim_zones | awk '{ print $1 }')
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: ebs-wffc}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 20
  podManagementPolicy: Parallel
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 0
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [eu-west-1a]}]
      containers:
      - name: c
        image: pause
        resources: {requests: {cpu: "1", memory: 1Gi}}
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: ebs-wffc
      resources: {requests: {storage: 1Gi}}
YAML
wait_for "20 db pods bound" 90 placed db=20
expect_eq "volume topology: every db pod's node in eu-west-1a" "$(zones_of_app db)" eu-west-1a
new=$(claim_zones | while read -r c z; do echo "$before" | grep -qx "$c" || echo "$c $z"; done)
[ -n "$new" ] || fail "no NodeClaim made for the db pods (they all fit old nodes of eu-west-1a?)"
expect_eq "volume topology: every NodeClaim made for them in eu-west-1a" \
	"$(echo "$new" | awk '{ print $2 }' | sort -u)" eu-west-1a
ok "volume topology: $(echo "$new" | grep -c .) new NodeClaim(s), all in eu-west-1a"
kubectl get pv -o jsonpath='{range .items[*]}{.spec.claimRef.name} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}{"\n"}{end}' |
	grep '^data-db-' >"$tmp/pvs" || true
expect_eq "20 PVs provisioned for the db claims" "$(grep -c . "$tmp/pvs")" 20
expect_eq "every one in eu-west-1a" "$(awk '{ print $2 }' "$tmp/pvs" | sort -u)" eu-west-1a

# --- a bound PV's zone: eu-west-1b --------------------------------------------------------------
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: PersistentVolume
metadata: {name: pinned-b}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ebs-wffc
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0pinnedb}
  claimRef: {namespace: default, name: pinned}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [eu-west-1b]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pinned}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ebs-wffc
  volumeName: pinned-b
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: pinned, labels: {app: pinned}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: c
    image: pause
    resources: {requests: {cpu: "6", memory: 1Gi}}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: pinned}}
YAML
wait_for "the pinned pod bound" 60 placed pinned=1
expect_eq "a bound PV's zone: the pod's node in eu-west-1b" "$(zones_of_app pinned)" eu-west-1b

# --- custom tags on every instance ---------------------------------------------------------------
curl -sS "$AWS_ENDPOINT_URL/_sim/status" >"$tmp/aws-status.json"
python3 - "$tmp/aws-status.json" <<'PY' || fail "an instance lacks the provider's tags"
import json, sys
inst = json.load(open(sys.argv[1]))["instances"]
want = {"team": "containers-blog", "cost-center": "s2-constraints"}
bad = [i["instanceId"] for i in inst if any((i.get("tags") or {}).get(k) != v for k, v in want.items())]
print("  %d instance(s), %d without team=containers-blog and cost-center=s2-constraints" % (len(inst), len(bad)))
sys.exit(1 if bad or not inst else 0)
PY
ok "custom tags on every instance"

# --- limits: cpu 1000, memory 1000Gi ---------------------------------------------------------------
# 12 × 90 CPU = 1080 CPU asked for, more than the limit allows with what runs.
workload huge 12 90 | sed 's/memory: 512Mi/memory: 100Gi/' | kubectl apply -f - >/dev/null
limited() {
	kubectl get pods -l app=huge -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' >"$tmp/huge"
	for p in $(cat "$tmp/huge"); do
		events_on "$p" | grep -q "^FailedScheduling .*exceed nodepool limits" && echo "$p"
	done | grep -q .
}
wait_for "a huge pod refused for the NodePool's limits" 90 limited
settled() { # no NodeClaim is still launching
	[ -z "$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Initialized")].status}{"\n"}{end}' | grep -v True)" ] &&
		[ "$(kubectl get nodeclaims -o name | grep -c .)" = "$(kubectl get nodes -o name | grep -c .)" ]
}
wait_for "the NodeClaims launched for huge initialized" 90 settled
placed huge=12 && fail "all 12 huge pods were bound: the limits did not hold"
# What Karpenter counts against the limits: its NodeClaims' capacity (the
# instance type's, less the VM memory overhead kubelet never reports;
# kanna-sim's kubelet reports the full nominal memory on the Node).
kubectl get nodeclaims -l karpenter.sh/nodepool=default -o jsonpath='{range .items[*]}{.status.capacity.cpu} {.status.capacity.memory}{"\n"}{end}' >"$tmp/capacity"
python3 - "$tmp/capacity" <<'PY' || fail "the Provisioner's NodeClaims exceed its limits"
import sys
def qty(s):
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9}
    for u, f in units.items():
        if s.endswith(u):
            return float(s[:-len(u)]) * f
    return float(s)
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
cpu = sum(qty(r[0]) for r in rows)
mem = sum(qty(r[1]) for r in rows) / 2**30
print("  %d NodeClaim(s): %g CPU, %.0fGi memory (limits 1000, 1000Gi)" % (len(rows), cpu, mem))
sys.exit(0 if rows and all(len(r) == 2 for r in rows) and cpu <= 1000 and mem <= 1000 else 1)
PY
bound=$(awk '$1 == "huge" && NF == 3' "$tmp/placed" | grep -c . || true)
ok "limits: $bound of 12 huge pods bound, the rest refused: $(for p in $(cat "$tmp/huge"); do events_on "$p"; done | grep -o 'FailedScheduling .*exceed nodepool limits' | head -n 1)"

expect_each_terminated_once
expect_one_instance_per_nodeclaim "at the end"
