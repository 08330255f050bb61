#!/bin/sh
# End-to-end: a solve runs off the scheduler's event loop. Every solve is
# made 12 s slower (KANNA_FAULT_SOLVE_DELAY_MS, kanna-scheduler(1)); while
# the first batch is being solved the scheduler answers /healthz at once
# and its loop takes newly pending pods into the next batch —
# without taking in again the pods being solved — which is solved as soon
# as the first solve is done. kanna-probe stands in for the launcher.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH (./quickstart deps)"; exit 77; }
PROBE="$BUILDDIR/tests/e2e/kanna-probe"

e2e_init
start_sim
set -- $(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
health=$1 metrics=$2
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --announce-interval 500ms
# 12 s: the checks made during the first solve take 4–8 s on a loaded
# machine; all must land before it ends.
export KANNA_FAULT_SOLVE_DELAY_MS=12000
start scheduler "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" \
	--metrics-port "$metrics" --health-port "$health" \
	--batch-idle-duration 300ms --plan-timeout 60s
unset KANNA_FAULT_SOLVE_DELAY_MS
wait_for "the scheduler" 30 grep -q "scheduling shard 0 of 1" "$tmp/scheduler.log"
start probe "$PROBE" plan --runtime-dir "$tmp/run" --timeout 60 --count 2

solved() { grep -c "computed new nodeclaim(s) to fit pod(s)" "$tmp/scheduler.log" || true; }

kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl scale deployment inflate --replicas 2 >/dev/null
wait_for "the first batch to be solved" 30 grep -q "found 2 provisionable pod(s)" "$tmp/scheduler.log"

# Two more pods while the first solve runs: they make the next batch.
kubectl scale deployment inflate --replicas 4 >/dev/null
for i in 1 2 3 4; do
	code=$(curl -s -m 1 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$health/healthz" || true)
	[ "$code" = 200 ] || fail "/healthz answered '$code' within 1 s during the solve (probe $i)"
	sleep 0.8
done
expect_eq "no solve finished yet" "$(solved)" "0"
ok "/healthz answered 200 within 1 s four times during the solve"
depth=$(curl -s -m 1 "http://127.0.0.1:$metrics/metrics" | sed -n 's/^karpenter_scheduler_queue_depth \([0-9.]*\)$/\1/p')
expect_eq "the next batch holds the two new pods, not the two being solved" "$depth" "2"
expect_eq "still no solve finished" "$(solved)" "0"

wait "$pid_probe" || fail "fewer than two launch plans arrived"
expect_eq "two plans, each for two pods" "$(grep -c '^nodeclaim .* pods=2 ' "$tmp/probe.log")" "2"
expect_eq "four distinct pods planned" "$(sed -n 's/^  pod //p' "$tmp/probe.log" | sort -u | wc -l)" "4"
grep -q "found 2 provisionable pod(s)" "$tmp/scheduler.log"
expect_eq "two batches of two" "$(grep -c 'found 2 provisionable pod(s)' "$tmp/scheduler.log")" "2"
