#!/bin/sh
# End-to-end: the pod of deploy/kanna.yaml, as its kubelet would lay it out,
# against kanna-sim: the ConfigMap's kanna.yaml as it is (only what must
# point at the sim overridden), each daemon under its container's uid
# (10001-10004) in the pod's fsGroup 10000, the runtime emptyDir mode 2777
# group 10000. The first daemon creates runtime-dir inside it (02770, the
# socket-group), the others trust it, the sockets admit each other by uid,
# and a pending pod gets a node and is bound (issue 20).
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: running the daemons under the pod's uids needs root (setpriv)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is not installed"; exit 77; }
python3 -c 'import yaml' 2>/dev/null || { echo "SKIP: no python3-yaml"; exit 77; }

e2e_init
start_sim
set -a
. "$tmp/state/aws.env"
set +a
# What the containers may read: the ConfigMap and a kubeconfig for the sim
# (in the pod, each container's own ServiceAccount token).
chmod 0711 "$tmp"
mkdir -m 0755 "$tmp/etc"
python3 - "$SRCDIR/deploy/kanna.yaml" "$tmp/etc/kanna.yaml" <<'PY'
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc["kind"] == "ConfigMap":
        open(sys.argv[2], "w").write(doc["data"]["kanna.yaml"])
PY
cp "$KUBECONFIG" "$tmp/etc/kubeconfig"
chmod 0644 "$tmp/etc/kanna.yaml" "$tmp/etc/kubeconfig"
runtime=$(sed -n 's/^runtime-dir: *//p' "$tmp/etc/kanna.yaml")
[ "$runtime" = /run/kanna/sockets ] || fail "the ConfigMap's runtime-dir is '$runtime', expected /run/kanna/sockets"
# The emptyDir at /run/kanna, as the kubelet makes it with an fsGroup.
mkdir "$tmp/emptydir"
chgrp 10000 "$tmp/emptydir"
chmod 2777 "$tmp/emptydir"

# container NAME UID: its daemon under the container's uid, in group 10000.
container() {
	start "$1" setpriv --reuid "$2" --regid "$2" --groups 10000 \
		"$BUILDDIR/$1/kanna-$1" --config="$tmp/etc/kanna.yaml" --kubeconfig="$tmp/etc/kubeconfig" \
		--runtime-dir="$tmp/emptydir/sockets" --metrics-port=0 --health-port=0 "$3"
}
container watcher 10001 --leader-elect=false
container scheduler 10002 --leader-elect=false
container launcher 10003 --cluster-name=kanna
container reaper 10004 --cluster-name=kanna
wait_for "the launcher to take plans" 60 grep -q "taking launch plans" "$tmp/launcher.log"
expect_eq "the runtime directory inside the emptyDir" \
	"$(stat -c '%a %g' "$tmp/emptydir/sockets")" "2770 10000"
owner=$(stat -c '%u' "$tmp/emptydir/sockets")
case $owner in 1000[1-4]) ;; *) fail "the runtime directory is owned by uid $owner, not a daemon" ;; esac
expect_eq "plans.sock (the launcher's)" "$(stat -c '%a %u:%g' "$tmp/emptydir/sockets/plans.sock")" "660 10003:10000"
ok "the first daemon made the runtime directory (uid $owner), the others trust it"

kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl scale deployment inflate --replicas 2 >/dev/null
wait_for "2 inflate pods bound" 90 sh -c "[ \$(kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 2 ]"
expect_one_instance_per_nodeclaim "the pod's daemons"
grep -q "refusing peer\|Refusing to start" "$tmp"/*.log && fail "a peer or the runtime directory was refused: $(grep -h "refusing peer\|Refusing to start" "$tmp"/*.log | head -n 3)"
ok "the pod's four daemons, each under its own uid, launched a node and bound the pods"
