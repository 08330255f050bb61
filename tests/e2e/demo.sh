#!/bin/sh
# ./quickstart demo: kanna on kanna-sim, scenario S5 of the documents
# (deployment "inflate", NodePool labelling nodes intent: apps).
# Runs every daemon that this build has and says plainly which part of the
# path is not built yet. Stops everything it started and exits 0 on success.
set -eu
BUILDDIR=${1:-${KANNA_BUILDDIR:-build/gcc}}
BUILDDIR=$(cd "$BUILDDIR" && pwd)
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "demo: kubectl is needed (./quickstart deps installs it)"; exit 1; }

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
e2e_init
say "starting kanna-sim (Kubernetes API + EC2 on loopback, no cloud account)"
start_sim
echo "KUBECONFIG=$KUBECONFIG"
sed -n 's/^Kubernetes API: /Kubernetes API: /p; s/^AWS API: /AWS API: /p' "$tmp/sim.log"

say "starting kanna-watcher (replicates cluster state, announces pending pods)"
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --announce-interval 1s
wait_for "kanna-watcher" 30 grep -q "cluster state synced" "$tmp/watcher.log"
grep "cluster state synced" "$tmp/watcher.log" | sed 's/^/  /'

say "starting kanna-scheduler (batches pending pods, solves, sends launch plans)"
start scheduler "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false
have_launcher=false
[ -x "$BUILDDIR/launcher/kanna-launcher" ] && have_launcher=true

say "applying S5: EC2NodeClass, NodePool (intent: apps), deployment inflate (1 CPU, 1.5Gi)"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml"

if $have_launcher; then
	. "$SRCDIR/tests/e2e/demo-launch.sh"
else
	say "kubectl scale deployment inflate --replicas 5"
	kubectl scale deployment inflate --replicas 5
	wait_for "5 unschedulable pods" 30 sh -c \
		"kubectl get pods -o jsonpath='{range .items[*]}{.status.conditions[0].reason}{\"\n\"}{end}' | grep -c Unschedulable | grep -qx 5"
	kubectl get pods
	say "the launcher is not built in this version: the plan kanna-scheduler sends it"
	"$BUILDDIR/tests/e2e/kanna-probe" plan --runtime-dir "$tmp/run" --timeout 30 | sed 's/^/  /'
	echo
	sed -n 's/^.*kanna-scheduler: //p' "$tmp/scheduler.log" | grep -E "provisionable|computed" | sed 's/^/  log: /'
	say "the same question answered offline: kanna-scheduler --simulate on a dump"
	echo "  kubectl get nodepools,ec2nodeclasses,nodes,pods -A -o yaml > cluster.yaml"
	kubectl get nodepools,ec2nodeclasses,nodes,pods -A -o yaml >"$tmp/cluster.yaml"
	"$BUILDDIR/scheduler/kanna-scheduler" --simulate "$tmp/cluster.yaml" | sed 's/^/  /'
fi

say "done: stopping every daemon and kanna-sim"
