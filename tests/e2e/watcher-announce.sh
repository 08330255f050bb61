#!/bin/sh
# End-to-end: a pod the kube-scheduler marks Unschedulable is announced to
# the scheduler when its watch event arrives, not at the watcher's next
# periodic announcement (Karpenter's provisioner is triggered by the pod
# event). The period here is a minute (its maximum): the pods of a Deployment scaled up
# after the watcher synced are bound only if the event announced them.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
e2e_init
start_sim
set -a
. "$tmp/state/aws.env"
set +a
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --announce-interval 1m
start scheduler "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --batch-idle-duration 500ms
start_launcher
wait_for "kanna-watcher synced" 30 grep -q "cluster state synced" "$tmp/watcher.log"
wait_for "kanna-launcher" 30 grep -q "taking launch plans" "$tmp/launcher.log"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
# Synced before any pod existed: the announcement at sync carried none.
kubectl scale deployment inflate --replicas 3 >/dev/null
t0=$(date +%s)
wait_for "3 pods of inflate bound (announced on their event)" 40 \
	sh -c "[ \"\$(kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .)\" = 3 ]"
ok "3 pods bound $(($(date +%s) - t0)) s after the scale-up, with a 1m announce interval"
expect_one_instance_per_nodeclaim "after the early announcement"
