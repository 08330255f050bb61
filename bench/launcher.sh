#!/bin/sh
# ./quickstart bench launcher: kanna-launcher against kanna-sim with no added
# API latency. One plan of COUNT NodeClaims (one pending pod each) is sent
# on the plans socket; figures: our own processing from plan received to
# CreateFleet sent (p50/p99, API time excluded; from the launcher's debug
# log), and send → every NodeClaim launched, its Node created and its pod
# bound. It runs twice: with Karpenter's default Kubernetes client limits
# (KUBE_CLIENT_QPS 200, burst 300: each NodeClaim costs five API requests on
# its way to bound, plus its Launched Event from the events bucket, so 100 of
# them meet the rate limit) and with the limit lifted, which shows the
# launcher's own speed.
set -eu
BUILDDIR=${KANNA_BUILDDIR:?}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
COUNT=${BENCH_NODECLAIMS:-100}
BENCH_LAUNCHER_FLAGS=${BENCH_LAUNCHER_FLAGS:-}
. "$SRCDIR/tests/e2e/lib.sh"
for b in sim/kanna-sim watcher/kanna-watcher launcher/kanna-launcher bench/bench-launcher; do
	[ -x "$BUILDDIR/$b" ] || make -C "$BUILDDIR" -s "$b"
done
pct() { awk -v p="$1" -v n="$n" 'NR == int((n * p + 99) / 100) { print; exit }' "$tmp/proc.txt"; }
get() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/bench.txt"; }
. "$SRCDIR/bench/lib.sh"

run_once() { # LABEL [LAUNCHER FLAGS...]
	label=$1
	shift
	e2e_init
	start_sim
	set -a
	. "$tmp/state/aws.env"
	set +a
	start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
		--health-port 0 --leader-elect=false
	start_launcher --log-level debug --max-concurrent-launches "$COUNT" "$@" $BENCH_LAUNCHER_FLAGS
	wait_for "the launcher" 30 grep -q "taking launch plans" "$tmp/launcher.log"
	{
		sed -n '1,/^---$/p' "$SRCDIR/examples/s5-inflate.yaml"
		cat <<-'YAML'
	apiVersion: karpenter.sh/v1
	kind: NodePool
	metadata: {name: bench}
	spec:
	  template:
	    metadata: {labels: {intent: bench}}
	    spec:
	      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
	      requirements: []
	YAML
		i=0
		while [ $i -lt "$COUNT" ]; do
			printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: bench-%d, namespace: default}\n' $i
			printf 'spec:\n  nodeSelector: {intent: bench}\n  containers:\n  - {name: c, image: pause, resources: {requests: {cpu: "1"}}}\n'
			i=$((i + 1))
		done
	} | kubectl apply -f - >/dev/null
	wait_for "$COUNT unschedulable pods" 60 sh -c "[ \$(kubectl get pods -o jsonpath='{range .items[*]}{.status.conditions[0].reason}{\"\\n\"}{end}' | grep -c Unschedulable) -ge $COUNT ]"
	sleep 2 # the watcher's replica in the launcher sees them too
	"$BUILDDIR/bench/bench-launcher" --runtime-dir "$tmp/run" --count "$COUNT" --nodepool bench \
		--requirement intent=bench --requirement karpenter.sh/capacity-type=on-demand --type m5.large --pod-prefix default/bench- >"$tmp/bench.txt" || fail "not every NodeClaim was bound: $(cat "$tmp/bench.txt")"
	sed -n 's/.* \([0-9.]*\) ms of our processing since the plan.*/\1/p' "$tmp/launcher.log" | sort -n >"$tmp/proc.txt"
	n=$(wc -l <"$tmp/proc.txt")
	[ "$n" -ge "$COUNT" ] || fail "only $n CreateFleet calls logged"
	row "$label: plan received -> CreateFleet sent, p50" "$(pct 50)" ms - "<"
	row "$label: plan received -> CreateFleet sent, p99" "$(pct 99)" ms 2 "<"
	row "$label: plan sent -> all NodeClaims launched, bound" "$(get all_bound_ms)" ms 2000 "<"
	row "$label: plan sent -> one NodeClaim bound, p50" "$(get bound_p50_ms)" ms - "<"
	# e2e_cleanup ends with exit: in a subshell, so the second run comes.
	(e2e_cleanup) || exit 1
	trap - EXIT INT TERM
}

bench_header "figure ($COUNT NodeClaims, no added API latency)"
run_once "default client limits"
run_once "client limits lifted" --kube-client-qps 100000 --kube-client-burst 100000
echo "(processing excludes API time)"
