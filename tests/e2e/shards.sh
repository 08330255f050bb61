#!/bin/sh
# End-to-end: two scheduler shards. The watcher routes each group of pods
# (here: each Deployment) to one shard whole, so every pod is planned once,
# by one shard, and no Deployment is split between shards.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }

e2e_init
start_sim
start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --announce-interval 500ms --shards 2
for i in 0 1; do
	start "scheduler$i" "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" \
		--metrics-port 0 --health-port 0 --leader-elect=false --batch-idle-duration 300ms \
		--shard "$i/2" --plan-timeout 5m
	wait_for "scheduler shard $i" 30 grep -q "scheduling shard $i of 2" "$tmp/scheduler$i.log"
done
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
for d in alpha beta gamma; do
	sed "s/name: inflate/name: $d/; s/app: inflate/app: $d/g; s/replicas: 0/replicas: 3/" \
		"$SRCDIR/examples/s5-inflate.yaml" | awk 'BEGIN{RS="---\n"; ORS="---\n"} /kind: Deployment/' |
		sed '$d' | kubectl apply -f - >/dev/null
done
# Plans arrive one per shard that has pods; collect until all 9 pods are seen.
"$BUILDDIR/tests/e2e/kanna-probe" plan --runtime-dir "$tmp/run" --timeout 10 --count 3 \
	>"$tmp/plans.txt" 2>/dev/null || true
planned=$(sed -n 's/^  pod //p' "$tmp/plans.txt" | sort)
want=$(kubectl get pods -o jsonpath='{range .items[*]}default/{.metadata.name}{"\n"}{end}' | sort)
expect_eq "every pod planned exactly once across the shards" "$planned" "$want"
for d in alpha beta gamma; do
	shards=$(awk -v d="default/$d-" '/^plan / { s = $3 } /^  pod / && index($2, d) == 1 { print s }' \
		"$tmp/plans.txt" | sort -u | wc -l)
	expect_eq "deployment $d planned by one shard" "$shards" "1"
done
n0=$(grep -c "found .* provisionable" "$tmp/scheduler0.log" || true)
n1=$(grep -c "found .* provisionable" "$tmp/scheduler1.log" || true)
echo "batches solved: shard 0: $n0, shard 1: $n1"
