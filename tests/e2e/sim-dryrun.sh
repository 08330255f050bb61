#!/bin/sh
# End-to-end: server-side dry runs against kanna-sim, from kubectl
# (--dry-run=server on create, apply, server-side apply, label, delete) and
# from the official Python client (dry_run='All' on create, replace, patch,
# delete, eviction). Each answer is what would be stored and nothing is:
# no object, no change, no resourceVersion, no watch event. dryRun=Server
# and a 129-byte fieldManager get upstream's 422; pretty=true indents.
# One sim, a few seconds.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"

command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
# Debian's module, found without importing it (an import takes seconds).
PY=
for p in /usr/bin/python3 python3; do
	if "$p" -c 'import importlib.util, sys; sys.exit(not importlib.util.find_spec("kubernetes"))' 2>/dev/null; then
		PY=$p
		break
	fi
done
[ -n "$PY" ] || { echo "SKIP: no Python kubernetes client (./quickstart deps installs python3-kubernetes)"; exit 77; }

e2e_init
start_sim
export KUBECACHEDIR="$tmp/kubecache"
server=$(sed -n 's/.*"server": *"\([^"]*\)".*/\1/p' "$KUBECONFIG")
c() { curl -sS --cacert "$tmp/state/ca.crt" -H "Authorization: Bearer $(cat "$tmp/state/token")" "$@"; }
expect_match() { # what text pattern
	printf '%s' "$2" | grep -q -- "$3" || fail "$1: '$3' not in: $(printf '%s' "$2" | head -c 600)"
	ok "$1"
}
# The configmap list's resourceVersion: the store's, which every write moves on.
rv_now() {
	c "$server/api/v1/namespaces/default/configmaps?limit=1" |
		sed -n 's/^{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"\([0-9]*\)".*/\1/p'
}

# --- kubectl: dry runs of objects that do not exist
rv0=$(rv_now)
[ -n "$rv0" ] || fail "no resourceVersion in the configmap list: $(c "$server/api/v1/namespaces/default/configmaps?limit=1")"
out=$(kubectl create configmap dry --from-literal=a=b --dry-run=server -o jsonpath='{.metadata.uid}')
[ ${#out} -eq 36 ] || fail "kubectl create --dry-run=server: no uid in the answer: '$out'"
ok "kubectl create --dry-run=server answers the object with its uid"
cat >"$tmp/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  generateName: web-
spec:
  containers:
  - name: c
    image: pause
EOF
expect_match "a dry run generates a name from generateName" \
	"$(kubectl create -f "$tmp/pod.yaml" --dry-run=server -o name)" "^pod/web-....."
cat >"$tmp/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
data:
  k: one
EOF
expect_match "kubectl apply --dry-run=server of a new object" \
	"$(kubectl apply -f "$tmp/cm.yaml" --dry-run=server)" "configmap/applied created (server dry run)"
expect_match "server-side apply --dry-run=server of a new object" \
	"$(kubectl apply --server-side -f "$tmp/cm.yaml" --dry-run=server)" "serverside-applied (server dry run)"
expect_eq "none of them stored anything (no resourceVersion used)" "$(rv_now)" "$rv0"

# --- kubectl: dry runs of changes
kubectl apply -f "$tmp/cm.yaml" >/dev/null
# (An object client-side applied gets a second PATCH from kubectl, moving its
# last-applied annotation, whose answer kubectl prints: one made by
# server-side apply shows the change itself.)
sed 's/name: applied/name: ssa/' "$tmp/cm.yaml" | kubectl apply --server-side -f - >/dev/null
rv1=$(rv_now)
sed 's/k: one/k: two/' "$tmp/cm.yaml" >"$tmp/cm2.yaml"
expect_match "kubectl apply --dry-run=server of a change" \
	"$(kubectl apply -f "$tmp/cm2.yaml" --dry-run=server -o jsonpath='{.data.k}')" two
expect_match "server-side apply --dry-run=server of a change" \
	"$(sed 's/name: applied/name: ssa/' "$tmp/cm2.yaml" |
		kubectl apply --server-side -f - --dry-run=server -o jsonpath='{.data.k}')" two
kubectl label configmap applied team=x --dry-run=server >/dev/null
expect_match "kubectl delete --dry-run=server" \
	"$(kubectl delete configmap applied --dry-run=server)" 'configmap "applied" deleted (server dry run)'
expect_eq "none of them changed anything" "$(rv_now)" "$rv1"
expect_eq "the object is as it was" \
	"$(kubectl get configmap applied -o jsonpath='{.data.k}/{.metadata.labels.team}')" "one/"

# --- the API server's refusals, through curl
c -o "$tmp/body" -X POST -H 'Content-Type: application/json' \
	"$server/api/v1/namespaces/default/configmaps?dryRun=Server" -d '{"metadata":{"name":"x"}}'
expect_match "dryRun=Server gets upstream's 422" "$(cat "$tmp/body")" \
	'"message":"CreateOptions.meta.k8s.io \\"\\" is invalid: dryRun: Unsupported value: \[\]string{\\"Server\\"}: supported values: \\"All\\""'
manager=$(printf 'm%.0s' $(seq 129))
c -o "$tmp/body" -X POST -H 'Content-Type: application/json' \
	"$server/api/v1/namespaces/default/configmaps?fieldManager=$manager" -d '{"metadata":{"name":"x"}}'
expect_match "a 129-byte fieldManager gets upstream's 422" "$(cat "$tmp/body")" \
	'fieldManager: Too long: may not be more than 128 bytes'
expect_match "pretty=true indents" "$(c "$server/api/v1/namespaces/default/configmaps/applied?pretty=true")" \
	'^  "kind": "ConfigMap"'

# --- the Python client
"$PY" - <<'EOF' || fail "the Python client's dry-run checks failed"
import json
import sys

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

def ok(what):
    print("ok - " + what, flush=True)

def fail(what):
    print("FAIL: " + what, flush=True)
    sys.exit(1)

config.load_kube_config()
v1 = client.CoreV1Api()
NS = "default"

def cm(name, data, finalizers=None):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, finalizers=finalizers), data=data)

# The last real configmap write before the dry runs: a watch from here
# must see nothing until the marker written after them.
v1.create_namespaced_config_map(NS, cm("py-held", {"k": "v"}, ["example.com/hold"]))
live = v1.read_namespaced_config_map("py-held", NS)
rv = live.metadata.resource_version

got = v1.create_namespaced_config_map(NS, cm("py-dry", {"k": "v"}), dry_run="All")
if not got.metadata.uid or got.metadata.name != "py-dry":
    fail("dry-run create answered %s" % got.metadata)
try:
    v1.read_namespaced_config_map("py-dry", NS)
    fail("a dry-run create stored the object")
except ApiException as e:
    if e.status != 404:
        fail("read after a dry-run create: %d" % e.status)
ok("create(dry_run='All') answers the object and stores nothing")

live.data = {"k": "replaced"}
got = v1.replace_namespaced_config_map("py-held", NS, live, dry_run="All")
if got.data != {"k": "replaced"} or got.metadata.resource_version != rv:
    fail("dry-run replace answered %s at %s" % (got.data, got.metadata.resource_version))
got = v1.patch_namespaced_config_map("py-held", NS, {"data": {"k": "patched"}}, dry_run="All")
if got.data != {"k": "patched"}:
    fail("dry-run patch answered %s" % got.data)
if v1.read_namespaced_config_map("py-held", NS).data != {"k": "v"}:
    fail("a dry-run replace or patch changed the object")
ok("replace and patch (dry_run='All') answer the change and make none")

raw = v1.delete_namespaced_config_map("py-held", NS, dry_run="All", _preload_content=False)
answer = json.loads(raw.data)
if not answer["metadata"].get("deletionTimestamp"):
    fail("a dry-run delete of an object with finalizers answered no deletionTimestamp: %s" % answer)
if v1.read_namespaced_config_map("py-held", NS).metadata.deletion_timestamp:
    fail("a dry-run delete marked the object")
ok("delete(dry_run='All') shows the deletion the finalizer holds and marks nothing")

v1.create_namespaced_pod(NS, client.V1Pod(
    metadata=client.V1ObjectMeta(name="py-pod"),
    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="pause")])))
v1.create_namespaced_pod_eviction("py-pod", NS, client.V1Eviction(
    metadata=client.V1ObjectMeta(name="py-pod")), dry_run="All")
v1.read_namespaced_pod("py-pod", NS)
ok("eviction(dry_run='All') evicts nothing")

try:
    v1.create_namespaced_config_map(NS, cm("py-bad", {}), dry_run="Bad")
    fail("dry_run='Bad' was accepted")
except ApiException as e:
    body = json.loads(e.body)
    if e.status != 422 or body["reason"] != "Invalid" or body["details"]["causes"][0]["field"] != "dryRun":
        fail("dry_run='Bad': %d %s" % (e.status, e.body))
ok("dry_run='Bad' gets 422 Invalid on the dryRun field")

# No watch event for any of the dry runs: from rv, the first event is the marker.
v1.create_namespaced_config_map(NS, cm("py-marker", {}))
w = watch.Watch()
for ev in w.stream(v1.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=5):
    name = ev["object"].metadata.name
    if name != "py-marker":
        fail("a watch saw %s %s after dry runs only" % (ev["type"], name))
    w.stop()
    break
else:
    fail("the watch never saw the marker")
ok("a watch from before the dry runs sees none of them")
EOF
