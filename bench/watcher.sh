#!/bin/sh
# ./quickstart bench watcher: initial LIST + replication of PODS pods and
# NODES nodes from kanna-sim into a subscriber's replica (time, watcher and
# replica peak RSS), then steady churn (deltas/s, API-patch → replica p50/p99).
set -eu
BUILDDIR=${KANNA_BUILDDIR:?}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
PODS=${BENCH_PODS:-100000}
NODES=${BENCH_NODES:-5000}
CHURN_RATE=${BENCH_CHURN_RATE:-1000}
CHURN_SECONDS=${BENCH_CHURN_SECONDS:-10}
B="$BUILDDIR/bench/bench-watcher"
. "$SRCDIR/tests/e2e/lib.sh"
e2e_init
start_sim --no-controllers
echo "loading $NODES nodes and $PODS pods into kanna-sim..." >&2
"$B" load --pods "$PODS" --nodes "$NODES" >"$tmp/load.txt" || fail "load failed: $(cat "$tmp/load.txt")"
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false
"$B" replica --runtime-dir "$tmp/run" --expect $((PODS + NODES)) >"$tmp/sync.txt" || fail "replica"
wrss=$(awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$pid_watcher/status")
"$B" replica --runtime-dir "$tmp/run" --expect $((PODS + NODES)) \
	--churn-seconds $((CHURN_SECONDS + 2)) >"$tmp/churn.txt" &
probe=$!
sleep 1
"$B" churn --pods "$PODS" --rate "$CHURN_RATE" --seconds "$CHURN_SECONDS" >"$tmp/patch.txt" || true
wait $probe || fail "churn replica"
get() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
sync_ms=$(get sync_ms "$tmp/sync.txt")
deltas=$(get churn_deltas "$tmp/churn.txt")
rate=$(awk -v d="${deltas:-0}" -v s="$CHURN_SECONDS" 'BEGIN { printf "%.0f", d / s }')
. "$SRCDIR/bench/lib.sh"
bench_header "figure ($NODES nodes, $PODS pods)"
row "initial list to consistent replica" "$sync_ms" ms 2000 "<"
row "watcher peak RSS" "$wrss" MB 60 "<"
row "replica peak RSS" "$(get replica_rss_mb "$tmp/sync.txt")" MB 40 "<"
row "  of it, anonymous (heap, stacks) at sync" "$(get replica_rss_anon_mb "$tmp/sync.txt")" MB "-" "<"
row "  of it, mapped files (libraries) at sync" "$(get replica_rss_file_mb "$tmp/sync.txt")" MB "-" "<"
row "churn deltas replicated" "$rate" "/s" "-" ">"
row "patch -> replica latency p50" "$(get latency_p50_ms "$tmp/churn.txt")" ms "-" "<"
row "patch -> replica latency p99" "$(get latency_p99_ms "$tmp/churn.txt")" ms "-" "<"
echo "(load took $(get load_s "$tmp/load.txt") s)"
