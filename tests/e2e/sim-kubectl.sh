#!/bin/sh
# End-to-end: kanna-sim's Kubernetes API against the real kubectl on PATH and
# curl. Starts kanna-sim in a temporary state dir, then: auth, CRDs (get crd,
# wait established, explain), kubectl's generator subcommands, apply/get/
# describe/scale, node + cordon/uncordon, Events written by the scheduler,
# Deployment controller and kubelet (get events, describe), pods/binding
# (201 then 409), eviction blocked by a PDB (429) and allowed without it,
# drain, watch resume from a resourceVersion, 410 Expired after the watch
# window, finalizers holding deletion, 409 on a stale update, CRD resources,
# server-side tables of workloads, storage, PDBs, leases and NodeClaims,
# the /_sim/status timeline, clean SIGTERM exit.
# Fails loudly on the first mismatch; always stops the simulator.
set -eu

BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SIM=$BUILDDIR/sim/kanna-sim
# The sim's watch window for this test, small so that the 410 path is cheap.
WATCH_WINDOW=40

command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
[ -x "$SIM" ] || { echo "FAIL: $SIM not built" >&2; exit 1; }

tmp=$(mktemp -d)
pid=
cleanup() {
	rc=$?
	if [ $rc -ne 0 ] && [ -e "$tmp/sim.err" ]; then
		echo "FAIL: exit status $rc; kanna-sim stderr:" >&2
		tail -n 40 "$tmp/sim.err" >&2
	fi
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

fail() {
	echo "FAIL: $*" >&2
	echo "--- kanna-sim stderr:" >&2
	tail -n 20 "$tmp/sim.err" >&2 || true
	exit 1
}
expect_eq() { # what got want
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
	echo "ok - $1"
}
expect_match() { # what text pattern
	printf '%s' "$2" | grep -q -- "$3" || fail "$1: '$3' not in: $(printf '%s' "$2" | head -c 600)"
	echo "ok - $1"
}

printf 'watch-window-events: %s\n' "$WATCH_WINDOW" >"$tmp/config.yaml"
"$SIM" --state-dir "$tmp/state" --config "$tmp/config.yaml" >"$tmp/sim.out" 2>"$tmp/sim.err" &
pid=$!
i=0
while [ ! -e "$tmp/state/ready" ]; do
	kill -0 "$pid" 2>/dev/null || fail "kanna-sim exited before becoming ready"
	i=$((i + 1))
	[ $i -le 200 ] || fail "kanna-sim not ready after 20 s"
	sleep 0.1
done

export KUBECONFIG="$tmp/state/kubeconfig"
export KUBECACHEDIR="$tmp/kubecache" # keep kubectl's discovery cache out of $HOME
server=$(sed -n 's/.*"server": *"\([^"]*\)".*/\1/p' "$KUBECONFIG")
token=$(cat "$tmp/state/token")
expect_match "kanna-sim prints the API URL" "$(cat "$tmp/sim.out")" "Kubernetes API: $server"
c() { curl -sS --cacert "$tmp/state/ca.crt" -H "Authorization: Bearer $token" "$@"; }
code() { c -o "$tmp/body" -w '%{http_code}' "$@"; }
post() { # path json
	code -X POST -H 'Content-Type: application/json' "$server$1" -d "$2"
}

# --- authentication and discovery
expect_eq "no token gets 401" \
	"$(curl -sS --cacert "$tmp/state/ca.crt" -o /dev/null -w '%{http_code}' "$server/api/v1/pods")" 401
expect_eq "https with the generated CA and token" "$(code "$server/version")" 200
expect_match "CRDs are discoverable" "$(kubectl api-resources --api-group=karpenter.sh)" "nodepools"
expect_match "NodePools can be listed" "$(kubectl get nodepools 2>&1)" "No resources found"

# --- the CRDs themselves, read from the shipped YAML
expect_match "kubectl get crd lists the shipped CRDs" "$(kubectl get crd)" "ec2nodeclasses.karpenter.k8s.aws"
expect_match "CRDs are Established" \
	"$(kubectl wait --for condition=established crd/nodepools.karpenter.sh crd/nodeclaims.karpenter.sh --timeout=5s)" \
	"nodeclaims.karpenter.sh condition met"
expect_eq "split CRD files serve each version once, v1 stored" \
	"$(kubectl get crd nodepools.karpenter.sh -o jsonpath='{.spec.versions[*].name}/{.status.storedVersions}')" \
	'v1 v1beta1/["v1"]'
expect_match "kubectl explain reads the CRD schema" "$(kubectl explain nodepool.spec.disruption)" \
	"FIELD: disruption <Object>"

# --- kubectl's generator subcommands. client-go's typed clients send
# built-in kinds as protobuf (falling back to JSON after a 415 for CBOR
# only), so these go through kanna-sim's protobuf decoder.
expect_match "kubectl create namespace" "$(kubectl create namespace team-a 2>&1)" "namespace/team-a created"
expect_eq "the created namespace is Active" "$(kubectl get namespace team-a -o jsonpath='{.status.phase}')" Active
expect_match "kubectl create deployment" \
	"$(kubectl create deployment web -n team-a --image=nginx --replicas=2 --port=80 2>&1)" \
	"deployment.apps/web created"
expect_eq "the created deployment is as kubectl generated it" \
	"$(kubectl get deployment web -n team-a -o jsonpath='{.spec.replicas} {.spec.selector.matchLabels.app} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}')" \
	"2 web nginx 80"
expect_match "kubectl create configmap" \
	"$(kubectl create configmap settings -n team-a --from-literal=mode=fast --from-literal=level=3 2>&1)" \
	"configmap/settings created"
expect_eq "the configmap holds the literals" \
	"$(kubectl get configmap settings -n team-a -o jsonpath='{.data.mode}/{.data.level}')" "fast/3"
expect_match "kubectl create serviceaccount" "$(kubectl create serviceaccount builder -n team-a 2>&1)" \
	"serviceaccount/builder created"
expect_match "kubectl create poddisruptionbudget" \
	"$(kubectl create poddisruptionbudget web -n team-a --selector=app=web --max-unavailable=50% 2>&1)" \
	"poddisruptionbudget.policy/web created"
expect_eq "the PDB keeps its percentage" \
	"$(kubectl get pdb web -n team-a -o jsonpath='{.spec.maxUnavailable}')" "50%"
expect_match "kubectl create service" "$(kubectl create service nodeport web -n team-a --tcp=80:8080 2>&1)" \
	"service/web created"
expect_eq "the service's ports are as generated" \
	"$(kubectl get service web -n team-a -o jsonpath='{.spec.type} {.spec.ports[0].port}:{.spec.ports[0].targetPort}')" \
	"NodePort 80:8080"
expect_match "a kind kanna-sim does not serve is not found, not a decode error" \
	"$(kubectl create quota q -n team-a --hard=pods=1 2>&1 || true)" \
	"failed to create quota: the server could not find the requested resource"
expect_eq "kubectl create secret (protobuf), defaulted to Opaque" \
	"$(kubectl create secret generic s -n team-a --from-literal=a=b >/dev/null &&
		kubectl get secret s -n team-a -o jsonpath='{.type} {.data.a}')" "Opaque Yg=="
web_pods() { # count
	i=0
	while [ "$(kubectl get pods -n team-a -l app=web -o name | wc -l)" != "$1" ]; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "the generated deployment does not reach $1 pods"
		sleep 0.1
	done
	echo "ok - the generated deployment has $1 pods"
}
web_pods 2
kubectl scale deployment web -n team-a --replicas=3 >/dev/null
web_pods 3
expect_match "the Deployment controller reports each scaling" \
	"$(kubectl get events -n team-a --field-selector reason=ScalingReplicaSet)" \
	"Scaled up replica set web-[0-9a-f]* from 2 to 3"
kubectl delete namespace team-a >/dev/null
expect_match "deleting a namespace deletes what is in it" \
	"$(kubectl get deployment web -n team-a 2>&1 || true)" "NotFound"

# --- apply, get, describe, scale
cat >"$tmp/app.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: inflate
spec:
  replicas: 0
  selector:
    matchLabels: {app: inflate}
  template:
    metadata:
      labels: {app: inflate}
    spec:
      containers:
      - name: inflate
        image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
        resources:
          requests: {cpu: 500m, memory: 512Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  schedulerName: e2e-manual
  containers:
  - name: web
    image: nginx
EOF
expect_match "kubectl apply creates" "$(kubectl apply -f "$tmp/app.yaml")" "deployment.apps/inflate created"
expect_match "kubectl apply again is unchanged" "$(kubectl apply -f "$tmp/app.yaml")" "pod/web unchanged"
expect_eq "kubectl get pod" "$(kubectl get pod web -o jsonpath='{.status.phase}')" Pending
expect_match "kubectl describe deployment" "$(kubectl describe deployment inflate)" "Selector: *app=inflate"
# kube-apiserver's ValidateVolumeMounts: two mounts at one path; and
# ValidatePodTemplateSpecForReplicaSet with a matchExpressions selector.
cat >"$tmp/invalid.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: twice}
spec:
  volumes: [{name: a, emptyDir: {}}, {name: b, emptyDir: {}}]
  containers:
  - {name: c, image: pause, volumeMounts: [{name: a, mountPath: /x}, {name: b, mountPath: /x}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: unselected}
spec:
  selector: {matchExpressions: [{key: tier, operator: In, values: [web]}]}
  template:
    metadata: {labels: {tier: db}}
    spec: {containers: [{name: c, image: pause}]}
EOF
invalid=$(kubectl apply -f "$tmp/invalid.yaml" 2>&1 || true)
expect_match "two volumeMounts at one path are refused" "$invalid" \
	'Pod "twice" is invalid: spec.containers\[0\].volumeMounts\[1\].mountPath: Invalid value: "/x": must be unique'
expect_match "a template a matchExpressions selector does not select is refused" "$invalid" \
	'Deployment.apps "unselected" is invalid: spec.template.metadata.labels: Invalid value: map\[string\]string{"tier":"db"}: `selector` does not match template `labels`'
kubectl scale deployment inflate --replicas=5 >/dev/null
expect_eq "kubectl scale sets spec.replicas" \
	"$(kubectl get deployment inflate -o jsonpath='{.spec.replicas}/{.metadata.generation}')" "5/2"
inflate_pods() { kubectl get pods -l app=inflate -o jsonpath="$1"; }
wait_for() { # what command want
	i=0
	while [ "$(eval "$2")" != "$3" ]; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "$1: got '$(eval "$2")', want '$3'"
		sleep 0.1
	done
	echo "ok - $1"
}
wait_for "the Deployment controller creates 5 pods, all Unschedulable without nodes" \
	"inflate_pods '{range .items[*]}{.status.conditions[?(@.type==\"PodScheduled\")].reason} {end}'" \
	"Unschedulable Unschedulable Unschedulable Unschedulable Unschedulable "
expect_match "Unschedulable carries the scheduler's message" \
	"$(inflate_pods '{.items[0].status.conditions[0].message}')" "0/0 nodes are available"

# --- node, cordon, binding
cat >"$tmp/node.yaml" <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {kubernetes.io/hostname: node-1}
status:
  conditions: [{type: Ready, status: "True"}]
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
EOF
kubectl apply -f "$tmp/node.yaml" >/dev/null
wait_for "the scheduler binds the pending pods to the new Ready node" \
	"inflate_pods '{range .items[*]}{.spec.nodeName} {end}'" "node-1 node-1 node-1 node-1 node-1 "
wait_for "the kubelet-lite runs the bound pods" \
	"inflate_pods '{range .items[*]}{.status.phase} {end}'" "Running Running Running Running Running "
wait_for "the Deployment reports 5 ready replicas" \
	"kubectl get deployment inflate -o jsonpath='{.status.readyReplicas}'" 5

# --- Events, as kube-scheduler, the Deployment controller and the kubelet write them
pod=$(inflate_pods '{.items[0].metadata.name}')
described=$(kubectl describe pod "$pod")
expect_match "describe pod: FailedScheduling from the scheduler" "$described" \
	"Warning *FailedScheduling .*default-scheduler *0/0 nodes are available."
expect_match "describe pod: Scheduled" "$described" \
	"Normal *Scheduled .*default-scheduler *Successfully assigned default/$pod to node-1"
expect_match "describe pod: the kubelet started the container" "$described" \
	"Normal *Started .*kubelet *Started container inflate"
expect_match "describe deployment: ScalingReplicaSet" "$(kubectl describe deployment inflate)" \
	"Normal *ScalingReplicaSet .*Scaled up replica set inflate-[0-9a-f]* from 0 to 5"
expect_match "kubectl get events prints upstream's columns" "$(kubectl get events)" \
	"LAST SEEN *TYPE *REASON *OBJECT *MESSAGE"
expect_match "kubectl get events lists the scheduler's" "$(kubectl get events)" \
	"Normal *Scheduled *pod/$pod *Successfully assigned"
expect_eq "events select by involved object and reason" \
	"$(kubectl get events --field-selector "involvedObject.name=$pod,reason=Pulled" -o jsonpath='{.items[*].source.host}')" \
	node-1
expect_match "an unsupported field selector is upstream's 400" \
	"$(kubectl get pods --field-selector spec.bogus=x 2>&1 || true)" \
	"(BadRequest).*field label not supported: spec.bogus"
expect_match "describe node lists its pods" "$(kubectl describe node node-1)" "Non-terminated Pods: *(5 in total)"
expect_eq "the manually scheduled pod is left alone" "$(kubectl get pod web -o jsonpath='{.spec.nodeName}')" ""
kubectl cordon node-1 >/dev/null
expect_eq "cordon sets spec.unschedulable" "$(kubectl get node node-1 -o jsonpath='{.spec.unschedulable}')" true
kubectl uncordon node-1 >/dev/null
expect_eq "uncordon clears it" "$(kubectl get node node-1 -o jsonpath='{.spec.unschedulable}')" ""
kubectl cordon node-1 >/dev/null
expect_match "kubectl get prints server-side tables for nodes" "$(kubectl get nodes)" "node-1 *Ready,SchedulingDisabled"
expect_match "kubectl get prints server-side tables for pods" "$(kubectl get pods)" "web *0/1 *Pending"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
YAML
expect_match "CRD additionalPrinterColumns are served" "$(kubectl get nodepools)" "default *default"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-e2e
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: default-e2e
  labels: {karpenter.sh/nodepool: default}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
YAML
karpenter=$(kubectl get nodeclaims,nodepools,ec2nodeclasses -o name)
expect_match "get nodeclaims,nodepools,ec2nodeclasses: NodeClaim" "$karpenter" "nodeclaim.karpenter.sh/default-e2e"
expect_match "get nodeclaims,nodepools,ec2nodeclasses: NodePool" "$karpenter" "nodepool.karpenter.sh/default"
expect_match "get nodeclaims,nodepools,ec2nodeclasses: EC2NodeClass" "$karpenter" "ec2nodeclass.karpenter.k8s.aws/default"
expect_match "kubectl describe nodepool" "$(kubectl describe nodepool default)" "Key: *karpenter.sh/capacity-type"
binding='{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"apiVersion":"v1","kind":"Node","name":"node-1"}}'
expect_eq "pods/binding binds" "$(post /api/v1/namespaces/default/pods/web/binding "$binding")" 201
expect_eq "binding sets nodeName and PodScheduled" \
	"$(kubectl get pod web -o jsonpath='{.spec.nodeName}/{.status.conditions[?(@.type=="PodScheduled")].status}')" \
	"node-1/True"
expect_eq "binding a bound pod is a conflict" "$(post /api/v1/namespaces/default/pods/web/binding "$binding")" 409
expect_match "conflict names the node" "$(cat "$tmp/body")" 'already assigned to node'

# --- eviction and PDBs
kubectl patch pod web --subresource=status --type=merge \
	-p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null
cat >"$tmp/pdb.yaml" <<'EOF'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
EOF
kubectl apply -f "$tmp/pdb.yaml" >/dev/null
eviction='{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web","namespace":"default"}}'
expect_eq "eviction blocked by the PDB" "$(post /api/v1/namespaces/default/pods/web/eviction "$eviction")" 429
expect_match "429 carries the upstream message" "$(cat "$tmp/body")" "Cannot evict pod as it would violate the pod's disruption budget."
kubectl delete pdb web-pdb >/dev/null
expect_eq "eviction allowed without a PDB" "$(post /api/v1/namespaces/default/pods/web/eviction "$eviction")" 201
kubectl wait --for=delete pod/web --timeout=10s >/dev/null || fail "evicted pod not deleted"
echo "ok - evicted pod terminates"
kubectl run drained --image=nginx >/dev/null
wait_for "a cordoned node takes no new pods" \
	"kubectl get pod drained -o jsonpath='{.status.conditions[0].message}'" \
	"0/1 nodes are available: 1 node(s) were unschedulable."
post /api/v1/namespaces/default/pods/drained/binding \
	'{"metadata":{"name":"drained"},"target":{"kind":"Node","name":"node-1"}}' >/dev/null
expect_match "kubectl drain evicts" \
	"$(kubectl drain node-1 --ignore-daemonsets --delete-emptydir-data --force --timeout=20s 2>&1)" \
	"node/node-1 drained"
wait_for "drained deployment pods are replaced and wait for capacity" \
	"inflate_pods '{range .items[*]}{.spec.nodeName}{.status.conditions[0].reason} {end}'" \
	"Unschedulable Unschedulable Unschedulable Unschedulable Unschedulable "
expect_match "the replacements say why they wait" \
	"$(kubectl get events --field-selector reason=FailedScheduling)" \
	"0/1 nodes are available: 1 node(s) were unschedulable."
kubectl uncordon node-1 >/dev/null
wait_for "uncordoned, the node takes the replacements" \
	"inflate_pods '{range .items[*]}{.spec.nodeName} {end}'" "node-1 node-1 node-1 node-1 node-1 "

# --- watch resumes from a resourceVersion
rv=$(c "$server/api/v1/namespaces/default/pods" | sed -n 's/^{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"\([0-9]*\)".*/\1/p')
[ -n "$rv" ] || fail "no resourceVersion in the pod list"
kubectl run w1 --image=nginx --overrides='{"spec":{"schedulerName":"e2e-manual"}}' >/dev/null
kubectl label pod w1 step=two >/dev/null
kubectl delete pod w1 --wait=false >/dev/null
events=$(c --max-time 10 "$server/api/v1/namespaces/default/pods?watch=1&resourceVersion=$rv&timeoutSeconds=1")
expect_eq "watch replays the three events after rv" \
	"$(printf '%s\n' "$events" | sed -n 's/^{"type":"\([A-Z]*\)".*"name":"w1".*/\1/p' | tr '\n' ' ')" \
	"ADDED MODIFIED DELETED "
expect_match "bookmarks arrive when asked" \
	"$(c --max-time 10 "$server/api/v1/namespaces/default/pods?watch=1&resourceVersion=$rv&allowWatchBookmarks=true&timeoutSeconds=7")" \
	'"type":"BOOKMARK"'

# --- 410 Gone once the window has moved past rv: the creates, one curl
# (one connection) for them all
set --
n=0
while [ $n -lt $((WATCH_WINDOW + 5)) ]; do
	[ $n -eq 0 ] || set -- "$@" --next
	set -- "$@" -sS -o /dev/null --cacert "$tmp/state/ca.crt" -H "Authorization: Bearer $token" \
		-H 'Content-Type: application/json' -X POST -d "{\"metadata\":{\"name\":\"cm-$n\"}}" \
		"$server/api/v1/namespaces/default/configmaps"
	n=$((n + 1))
done
curl "$@" || fail "creating $n ConfigMaps"
set --
expect_eq "watch from a compacted rv is 410" \
	"$(code --max-time 10 "$server/api/v1/namespaces/default/pods?watch=1&resourceVersion=$rv")" 410
expect_match "410 reason is Expired" "$(cat "$tmp/body")" '"reason":"Expired"'

# --- deletecollection and dryRun
expect_eq "DELETE on a collection with a field selector" \
	"$(code -X DELETE "$server/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dcm-0")" 200
expect_match "only the selected object went" "$(kubectl get configmap cm-0 2>&1 || true)" "NotFound"
expect_match "the others stay" "$(kubectl get configmap cm-1 -o name)" "configmap/cm-1"
expect_eq "DELETE on a whole collection" "$(code -X DELETE "$server/api/v1/namespaces/default/configmaps")" 200
expect_eq "the collection is empty" "$(kubectl get configmaps -o name | wc -l)" 0
expect_eq "a dryRun other than All is refused (sim-dryrun.sh has the rest)" \
	"$(post '/api/v1/namespaces/default/configmaps?dryRun=Server' '{"metadata":{"name":"dry"}}')" 422

# --- finalizers hold deletion
post /api/v1/namespaces/default/configmaps \
	'{"metadata":{"name":"held","finalizers":["example.com/hold"]}}' >/dev/null
kubectl delete configmap held --wait=false >/dev/null
expect_match "finalizer keeps the object with a deletionTimestamp" \
	"$(kubectl get configmap held -o jsonpath='{.metadata.deletionTimestamp}')" "T"
kubectl patch configmap held --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
expect_match "object goes once finalizers are removed" "$(kubectl get configmap held 2>&1 || true)" "NotFound"

# --- stale update
c "$server/apis/apps/v1/namespaces/default/deployments/inflate" >"$tmp/stale.json"
kubectl scale deployment inflate --replicas=6 >/dev/null
expect_eq "PUT with a stale resourceVersion is 409" \
	"$(code -X PUT -H 'Content-Type: application/json' --data-binary "@$tmp/stale.json" \
		"$server/apis/apps/v1/namespaces/default/deployments/inflate")" 409
expect_match "409 reason is Conflict" "$(cat "$tmp/body")" '"reason":"Conflict"'

# --- delete cascades to dependents (ownerReferences)
uid=$(kubectl get deployment inflate -o jsonpath='{.metadata.uid}')
post /api/v1/namespaces/default/pods "{\"metadata\":{\"name\":\"owned\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"inflate\",\"uid\":\"$uid\"}]},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}" >/dev/null
kubectl delete deployment inflate >/dev/null
# owned runs on node-1 by now, so it terminates gracefully.
kubectl wait --for=delete pod/owned --timeout=10s >/dev/null 2>&1 || true
expect_match "garbage collector removes dependents" "$(kubectl get pod owned 2>&1 || true)" "NotFound"

kubectl delete node node-1 >/dev/null
expect_match "kubectl delete node" "$(kubectl get node node-1 2>&1 || true)" "NotFound"

# --- server-side tables of the workload and storage kinds, as upstream prints them
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata:
  name: node-p
  labels: {kubernetes.io/hostname: node-p, topology.kubernetes.io/zone: us-west-2a}
status:
  conditions: [{type: Ready, status: "True"}]
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: standard}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {kubernetes.io/hostname: node-p}
      containers: [{name: agent, image: busybox}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: standard
      resources: {requests: {storage: 1Gi}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: db}}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: e2e-lock}
spec: {holderIdentity: e2e-holder}
YAML
# Tables are checked header and row in one line.
wait_for "the DaemonSet reports its pod ready" \
	"kubectl get daemonset agent -o jsonpath='{.status.desiredNumberScheduled}/{.status.numberReady}/{.status.numberAvailable}'" \
	"1/1/1"
daemonsets=$(kubectl get daemonsets -o wide)
expect_match "get daemonsets: upstream's columns" "$daemonsets" \
	"NAME *DESIRED *CURRENT *READY *UP-TO-DATE *AVAILABLE *NODE SELECTOR *AGE *CONTAINERS *IMAGES *SELECTOR"
expect_match "get daemonsets: the counts" "$daemonsets" \
	"agent *1 *1 *1 *1 *1 *kubernetes.io/hostname=node-p *[0-9]*s *agent *busybox *app=agent"
wait_for "the StatefulSet's pod is ready" "kubectl get statefulset db -o jsonpath='{.status.readyReplicas}'" 1
expect_match "get statefulsets: upstream's columns" "$(kubectl get statefulsets -o wide | tr '\n' ' ')" \
	"NAME *READY *AGE *CONTAINERS *IMAGES.*db *1/1 *[0-9]*s *db *postgres"
expect_match "get pvc: a bound claim" "$(kubectl get pvc | tr '\n' ' ')" \
	"NAME *STATUS *VOLUME *CAPACITY *ACCESS MODES *STORAGECLASS *VOLUMEATTRIBUTESCLASS *AGE.*data-db-0 *Bound *pvc-[0-9a-f-]* *1Gi *RWO *standard *<unset>"
expect_match "get pv: its volume" "$(kubectl get pv | tr '\n' ' ')" \
	"NAME *CAPACITY *ACCESS MODES *RECLAIM POLICY *STATUS *CLAIM *STORAGECLASS.*1Gi *RWO *Delete *Bound *default/data-db-0 *standard"
expect_match "get storageclasses" "$(kubectl get storageclasses | tr '\n' ' ')" \
	"NAME *PROVISIONER *RECLAIMPOLICY *VOLUMEBINDINGMODE *ALLOWVOLUMEEXPANSION *AGE.*standard *ebs.csi.aws.com *Delete *WaitForFirstConsumer *false"
wait_for "the PDB's status counts the healthy pod" \
	"kubectl get pdb db -o jsonpath='{.status.currentHealthy}/{.status.disruptionsAllowed}'" "1/0"
expect_match "get pdb: upstream's columns" "$(kubectl get pdb db | tr '\n' ' ')" \
	"NAME *MIN AVAILABLE *MAX UNAVAILABLE *ALLOWED DISRUPTIONS *AGE.*db *1 *N/A *0"
expect_match "get leases: the holder" "$(kubectl get leases | tr '\n' ' ')" "NAME *HOLDER *AGE.*e2e-lock *e2e-holder"
expect_match "get nodeclaims -o wide: label columns with escaped dots" "$(kubectl get nodeclaims -o wide | tr '\n' ' ')" \
	"NAME *TYPE *CAPACITY *ZONE *NODE *READY *AGE *IMAGEID *ID *NODEPOOL *NODECLASS *DRIFTED.*default-e2e .* default *default"
kubectl delete statefulset db >/dev/null
kubectl delete daemonset agent >/dev/null

# --- the admin status: nodes and pods as they are now, and the timeline
status=$(c "$server/_sim/status")
expect_match "/_sim/status lists nodes" "$status" '"nodes":\['
expect_match "/_sim/status lists pods" "$status" '"pods":\['
# "event detail" lines, in order.
timeline() {
	c "$server/_sim/status" | tr '{' '\n' |
		sed -n 's/^"time":"[^"]*","event":"\([^"]*\)","detail":"\([^"]*\)".*/\1 \2/p'
}
expect_eq "the timeline follows a pod from creation to deletion" \
	"$(timeline | grep " default/$pod\( \|$\)" | cut -d' ' -f1 | tr '\n' ' ')" \
	"pod-created pod-unschedulable pod-scheduled pod-bound pod-running pod-evicted pod-deleted "
expect_eq "the timeline follows node-1" \
	"$(timeline | grep "^node-[a-z-]* node-1\( \|$\)" | cut -d' ' -f1 | tr '\n' ' ')" \
	"node-registered node-ready node-cordoned node-uncordoned node-cordoned node-uncordoned node-deleted "
expect_match "the timeline notes NodeClaims" "$(timeline)" "nodeclaim-created default-e2e default"
expect_match "timeline entries carry times" "$status" '"timeline":\[{"time":"20[0-9-]*T[0-9:.]*Z","event":'

# --- injected faults (GET/POST /_sim/faults)
faults() { post /_sim/faults "$1"; }
expect_eq "faults are set at run time" "$(faults '{"watchCutAfterEvents":2}')" 200
expect_eq "a watch is cut after N events" \
	"$(c --max-time 10 "$server/api/v1/namespaces?watch=1&timeoutSeconds=8" | wc -l)" 2
faults '{"watchGone":1}' >/dev/null
rv=$(c "$server/api/v1/namespaces/default/pods" | sed -n 's/^{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"\([0-9]*\)".*/\1/p')
expect_eq "the next resumed watch gets 410" \
	"$(code --max-time 5 "$server/api/v1/namespaces/default/pods?watch=1&resourceVersion=$rv&timeoutSeconds=1")" 410
expect_eq "only the next one" \
	"$(code --max-time 5 "$server/api/v1/namespaces/default/pods?watch=1&resourceVersion=$rv&timeoutSeconds=1")" 200
faults '{"throttleRate":1}' >/dev/null
expect_match "throttling answers 429 with Retry-After" \
	"$(c -i "$server/api/v1/namespaces/default/pods" | tr -d '\r')" "Retry-After: 1"
expect_eq "faults clear" "$(faults '{}')" 200
expect_eq "requests succeed again" "$(code "$server/api/v1/namespaces/default/pods")" 200

# --- kubelet-lite: an EC2 instance (CreateFleet, SigV4-signed by curl) boots
# into a Ready Node; terminating it makes the Node NotReady.
if curl --help all 2>/dev/null | grep -q -- --aws-sigv4; then
	. "$tmp/state/aws.env"
	ec2() {
		curl -sS --aws-sigv4 "aws:amz:$AWS_REGION:ec2" \
			--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$AWS_ENDPOINT_URL_EC2/" \
			-d "Version=2016-11-15&$1"
	}
	xml_first() { sed -n "s/.*<$1>\([^<]*\)<.*/\1/p" | head -n 1; }
	ami=$(ec2 'Action=DescribeImages' | sed 's/></>\n</g' | xml_first imageId)
	subnet=$(ec2 'Action=DescribeSubnets' | sed 's/></>\n</g' | xml_first subnetId)
	[ -n "$ami" ] && [ -n "$subnet" ] || fail "no image or subnet from the AWS side"
	ec2 "Action=CreateLaunchTemplate&LaunchTemplateName=e2e&LaunchTemplateData.ImageId=$ami" >/dev/null
	ec2 "Action=CreateFleet&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=1&TargetCapacitySpecification.DefaultTargetCapacityType=on-demand&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=e2e&LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version=%24Latest&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large&LaunchTemplateConfigs.1.Overrides.1.SubnetId=$subnet" >/dev/null
	id=$(ec2 'Action=DescribeInstances' | sed 's/></>\n</g' | xml_first instanceId)
	[ -n "$id" ] || fail "CreateFleet launched nothing"
	wait_for "a launched instance registers a Ready Node" \
		"kubectl get nodes -l node.kubernetes.io/instance-type=m5.large -o jsonpath='{range .items[*]}{.status.conditions[?(@.type==\"Ready\")].status}{end}'" True
	node=$(kubectl get nodes -l node.kubernetes.io/instance-type=m5.large -o jsonpath='{.items[0].metadata.name}')
	described=$(kubectl describe node "$node")
	expect_match "describe node: the kubelet started" "$described" "Normal *Starting .*kubelet *Starting kubelet."
	expect_match "describe node: the node controller registered it" "$described" \
		"Normal *RegisteredNode .*node-controller *Node $node event: Registered Node $node in Controller"
	expect_match "describe node: NodeReady" "$described" "Normal *NodeReady .*Node $node status is now: NodeReady"
	ec2 "Action=TerminateInstances&InstanceId.1=$id" >/dev/null
	wait_for "a terminated instance's Node goes NotReady" \
		"kubectl get nodes -l node.kubernetes.io/instance-type=m5.large -o jsonpath='{range .items[*]}{.status.conditions[?(@.type==\"Ready\")].status}{end}'" False
	expect_match "describe node: NodeNotReady" "$(kubectl describe node "$node")" \
		"Normal *NodeNotReady .*node-controller *Node $node status is now: NodeNotReady"
	expect_eq "the timeline follows the instance's node" \
		"$(timeline | grep "^node-[a-z-]* $node\( \|$\)" | cut -d' ' -f1 | tr '\n' ' ')" \
		"node-registered node-ready node-not-ready "
else
	echo "skip - curl without --aws-sigv4: kubelet-lite instance checks"
fi

# --- clean shutdown
kill "$pid"
wait "$pid" || fail "kanna-sim exited with $? on SIGTERM"
pid=
[ ! -e "$tmp/state/ready" ] || fail "ready file left behind"
echo "ok - SIGTERM exits 0"
echo "PASS: sim-kubectl"
