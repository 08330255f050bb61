#!/bin/sh
# ./quickstart demo: kanna on kanna-sim, scenario S5 of the documents
# (deployment "inflate", NodePool labelling nodes intent: apps): the whole
# scale-up path with its progress and the resulting nodes. Uses only what
# ./quickstart build makes (as a test too: it runs on a view of the build
# holding the daemons and kanna-sim alone, never the tests' programs).
# Stops everything it started and exits 0 on success.
set -eu
BUILDDIR=${1:-${KANNA_BUILDDIR:-build/gcc}}
BUILDDIR=$(cd "$BUILDDIR" && pwd)
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "demo: kubectl is needed (./quickstart deps installs it)"; exit 1; }

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
e2e_init
built=$BUILDDIR
BUILDDIR=$tmp/built
for p in watcher/kanna-watcher scheduler/kanna-scheduler launcher/kanna-launcher sim/kanna-sim \
	tools/kanna-tap; do
	[ -x "$built/$p" ] || fail "$built/$p is not built (./quickstart build)"
	mkdir -p "$BUILDDIR/${p%/*}"
	ln -s "$built/$p" "$BUILDDIR/$p"
done
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

say "applying S5: EC2NodeClass, NodePool (intent: apps), deployment inflate (1 CPU, 1.5Gi)"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml"

. "$SRCDIR/tests/e2e/demo-launch.sh"

say "done: stopping every daemon and kanna-sim"
