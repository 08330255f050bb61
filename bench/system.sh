#!/bin/bash
# ./quickstart bench system (issue 22, whole-system figures): kanna-sim and
# the real daemons, as shipped (announce 2 s, batch idle 1 s / max 10 s),
# in three parts (KANNA_BENCH_PART=latency, memory or shards runs one):
#  latency: per pod, from the watcher's taking its watch event (pending,
#           Unschedulable: the state delta it publishes, from kanna-tap) to
#           the launcher's CreateFleet for the NodeClaim carrying it (its
#           debug log), minus the time the pod sat in the scheduler's batch
#           window (its pending_pods received, from kanna-tap, to "found
#           provisionable pod(s)" of the solve that planned it: ms, and a
#           wait behind a solve still running counts as window too); p50/p99
#           at 100 and 10,000 pods of one Deployment, with where the time
#           goes, and "own": solve + plan and the launcher's processing
#           (its log: API round trips and fleet batching taken out), i.e.
#           without the watcher's announce period, windows or API time.
#  memory:  each daemon's peak RSS (VmHWM) and the four's summed PSS
#           (smaps_rollup: shared library pages counted once), at 1,000 pods
#           of a plain Deployment scaled out, and at 5,000 nodes / 100,000
#           pods loaded into the sim (bench-watcher load) once every
#           daemon's replica holds them.
#  shards:  the scheduler as 1, 2 and 4 shards (watcher --shards N) on one
#           workload of eight Deployments: pods/s from apply to all bound,
#           and whether the NodeClaims (count, instance types) are the same.
# Needs KANNA_BUILDDIR (set by quickstart) holding a built tree, and kubectl.
set -euo pipefail
BUILDDIR="${KANNA_BUILDDIR:?KANNA_BUILDDIR must point at a build directory}"
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
for b in sim/kanna-sim watcher/kanna-watcher scheduler/kanna-scheduler launcher/kanna-launcher \
	reaper/kanna-reaper tools/kanna-tap bench/bench-watcher; do
	[ -x "$BUILDDIR/$b" ] || make -C "$BUILDDIR" -s "$b"
done
. "$SRCDIR/bench/lib.sh"
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "no kubectl on PATH: ./quickstart deps" >&2; exit 1; }

common=(--runtime-dir RUN --metrics-port 0 --health-port 0 --leader-elect=false)
# DAEMON [FLAGS...]: one daemon with the shared flags, as shipped otherwise.
daemon() {
	local d=$1 name=$1
	shift
	case $d in scheduler*) d=scheduler ;; esac
	start "$name" "$BUILDDIR/$d/kanna-$d" "${common[@]/RUN/$tmp/run}" "$@"
}
# Watcher, SHARDS schedulers, launcher and (with REAPER=1) the reaper.
start_all() { # SHARDS REAPER
	local i
	set -a
	. "$tmp/state/aws.env"
	set +a
	daemon watcher --shards "$1"
	for ((i = 0; i < $1; i++)); do
		daemon "scheduler$i" --shard "$i/$1"
	done
	daemon launcher --log-level debug
	[ "$2" = 0 ] || daemon reaper
	wait_for "the launcher" 60 grep -q "taking launch plans" "$tmp/launcher.log"
	for ((i = 0; i < $1; i++)); do
		wait_for "scheduler $i's catalog" 60 grep -q "planning with the launcher's" "$tmp/scheduler$i.log"
	done
}
# One run: a fresh sim and daemons, stopped after (KANNA_E2E_KEEP=1 keeps
# its directory). e2e_cleanup exits, so each run is a subshell.
run() { (e2e_init; "$@"; e2e_cleanup); }

nodepool() { # [REQUIREMENT]: the S5 EC2NodeClass and a NodePool without a CPU limit that matters
	sed -n '1,/^---$/p' "$SRCDIR/examples/s5-inflate.yaml"
	cat <<YAML
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
${1:+      - $1}
  limits: {cpu: "1000000"}
YAML
}
deployment() { # NAME REPLICAS CPU MEMORY
	cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: default}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      containers:
      - {name: app, image: pause, resources: {requests: {cpu: "$3", memory: "$4"}}}
YAML
}
bound_count() {
	kubectl get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}
all_bound() { [ "$(bound_count)" = "$1" ]; }

# --- part 1: pipeline latency ---------------------------------------------------------------
# Every planned NodeClaim has had its CreateFleet (the plans from kanna-tap,
# the CreateFleet lines from the launcher's debug log), and every pod is
# planned or the scheduler's last solve needed no new NodeClaim (the last
# pods fit on NodeClaims in flight: no CreateFleet of their own).
fleets_sent() { # PODS
	grep -F '"type":"launch_plan"' "$tmp/tapplans.json" >"$tmp/plans.json" || true
	python3 - "$tmp/plans.json" "$tmp/launcher.log" "$1" "$tmp/scheduler0.log" <<'PY'
import json, re, sys
claims, pods = set(), set()
for line in open(sys.argv[1]):
    if '"launch_plan"' not in line or '"send"' not in line:
        continue
    try:
        d = json.loads(line)
    except ValueError:
        continue
    for nc in d["fields"]["body"]["nodeclaims"]:
        claims.add(nc["id"])
        pods.update(nc.get("pods", []))
sent = set(re.findall(r"CreateFleet for nodeclaim (\S+):", open(sys.argv[2]).read()))
solves = re.findall(r"computed new nodeclaim\(s\) to fit pod\(s\): (\d+) nodeclaim", open(sys.argv[4]).read())
done = len(pods) >= int(sys.argv[3]) or (claims and solves and solves[-1] == "0")
sys.exit(0 if done and claims <= sent else 1)
PY
}

part_latency_at() { # PODS
	local n=$1
	start_sim
	start_all 1 0
	# kanna-tap: the watcher's state deltas, pending pods and plans on the wire.
	# (.json, not .log: fail() shows the last lines of every log)
	"$BUILDDIR/tools/kanna-tap" --runtime-dir "$tmp/run" -o json --process watcher --type state_delta \
		>"$tmp/tapdelta.json" 2>/dev/null &
	e2e_pids="$e2e_pids $!"
	"$BUILDDIR/tools/kanna-tap" --runtime-dir "$tmp/run" -o json --process scheduler-0 \
		--type pending_pods --type launch_plan \
		>"$tmp/tapplans.json" 2>/dev/null &
	e2e_pids="$e2e_pids $!"
	sleep 2 # both taps attached to all three
	{ nodepool; deployment inflate "$n" 1 1536Mi; } | kubectl apply -f - >/dev/null
	wait_for "CreateFleet for every planned pod" $((60 + n / 50)) fleets_sent "$n"
	echo "  $n pods: $(grep -c "CreateFleet for nodeclaim" "$tmp/launcher.log") CreateFleet calls" >&2
	sleep 1
	python3 - "$tmp" "$n" >"$tmp/latency.txt" <<'PY'
import datetime, json, re, sys
tmp, want = sys.argv[1], int(sys.argv[2])
def ts(s):  # RFC 3339 UTC → seconds
    return datetime.datetime.strptime(s.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()
def lines(path):
    for line in open(path):
        if line.startswith("{"):
            try:
                yield json.loads(line)
            except ValueError:
                pass
t0 = {}  # pod → watcher published it Unschedulable (took the watch event)
for d in lines(f"{tmp}/tapdelta.json"):
    o = d["fields"]["body"].get("object", {})
    p = o.get("object", {})
    if o.get("kind") == "pod" and p.get("scheduled_reason") == "Unschedulable":
        t0.setdefault(p["ns"] + "/" + p["name"], ts(d["time"]))
t1, plan_of, t_plan = {}, {}, {}
for d in lines(f"{tmp}/tapplans.json"):
    b, t = d["fields"]["body"], ts(d["time"])
    if d["type"] == "pending_pods" and d["direction"] == "recv":
        for p in b["pods"]:
            t1.setdefault(p["ns"] + "/" + p["name"], t)
    elif d["type"] == "launch_plan" and d["direction"] == "send":
        for nc in b["nodeclaims"]:
            t_plan.setdefault(nc["id"], t)
            for p in nc.get("pods", []):
                plan_of.setdefault(p, nc["id"])
# The scheduler's solves: "found N provisionable pod(s)" opens one (ms).
found = []
for line in open(f"{tmp}/scheduler0.log"):
    if "provisionable pod(s)" in line:
        found.append(ts(line.split()[0]))
fleet, busy = {}, {}
for line in open(f"{tmp}/launcher.log"):
    m = re.search(r"CreateFleet for nodeclaim (\S+):.* ([0-9.]+) ms of our processing", line)
    if m and m.group(1) not in fleet:
        fleet[m.group(1)] = ts(line.split()[0])
        busy[m.group(1)] = float(m.group(2)) / 1000
cols = {k: [] for k in ("total", "announce", "window", "solve", "launcher", "own")}
for pod, nc in plan_of.items():
    if pod not in t0 or pod not in t1 or nc not in fleet or nc not in t_plan:
        continue
    # The solve that planned it: the last one opened before its plan went out.
    start = max((f for f in found if f <= t_plan[nc] + 0.001), default=None)
    if start is None:
        continue
    window = max(0.0, start - t1[pod])
    cols["total"].append(fleet[nc] - t0[pod] - window)
    cols["announce"].append(t1[pod] - t0[pod])
    cols["window"].append(window)
    cols["solve"].append(t_plan[nc] - start)
    cols["launcher"].append(fleet[nc] - t_plan[nc])
    # Our processing alone: no timer or window, no API round trip.
    cols["own"].append(max(0.0, t_plan[nc] - start) + busy[nc])
def pct(v, p):
    v = sorted(v)
    return v[max(0, -(-len(v) * p // 100) - 1)] * 1000 if v else float("nan")
print("measured", len(cols["total"]))
for k, v in cols.items():
    print(k, "%.2f %.2f" % (pct(v, 50), pct(v, 99)))
PY
	cp "$tmp/latency.txt" "$out/latency-$n.txt"
}

part_latency() {
	local n
	for n in $LATENCY_PODS; do
		run part_latency_at "$n"
	done
	bench_header "figure (pipeline latency: watch event -> CreateFleet sent)"
	for n in $LATENCY_PODS; do
		get() { awk -v k="$1" -v c="$2" '$1 == k { print $c }' "$out/latency-$n.txt"; }
		echo "    $n pods: $(get measured 2) of $n pods measured (kanna-tap may drop copies)"
		row "$n pods: watch event -> CreateFleet, batch window excluded, p50" "$(get total 2)" ms - "<"
		row "$n pods: watch event -> CreateFleet, batch window excluded, p99" "$(get total 3)" ms 5 "<"
		row "$n pods: of it, waiting for the watcher's announce, p50" "$(get announce 2)" ms - "<"
		row "$n pods: of it, solve + plan (from found provisionable), p50" "$(get solve 2)" ms - "<"
		row "$n pods: of it, plan sent -> CreateFleet (launcher, API calls too), p50" "$(get launcher 2)" ms - "<"
		row "$n pods: batch window (excluded), p50" "$(get window 2)" ms - "<"
		row "$n pods: solve + launcher's own processing (no timers, windows, API), p99" "$(get own 3)" ms 5 "<"
	done
}

# --- part 2: memory -------------------------------------------------------------------------
daemons="watcher scheduler0 launcher reaper"
mem_sample() { # LABEL: each daemon's VmHWM, and the four's summed PSS
	local d pss=0
	for d in $daemons; do
		pid=$(eval "echo \$pid_$d")
		echo "$1 $d $(awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status")" >>"$out/mem.txt"
		pss=$((pss + $(awk '$1 == "Pss:" { print $2 }' "/proc/$pid/smaps_rollup")))
	done
	echo "$1 pss $pss" >>"$out/mem.txt"
}
synced() { # every replica (scheduler, launcher, reaper) holds the cluster
	local d
	for d in scheduler0 launcher reaper; do
		grep -q "State replica synced" "$tmp/$d.log" || return 1
	done
}
mem_1000() {
	start_sim
	start_all 1 1
	wait_for "replicas" 60 synced
	{ nodepool; deployment plain 1000 500m 1Gi; } | kubectl apply -f - >/dev/null
	wait_for "1000 pods bound" 300 all_bound 1000
	sleep 5 # a reaper pass and the Nodes' readiness
	mem_sample 1000
}
mem_100k() {
	start_sim --no-controllers
	"$BUILDDIR/bench/bench-watcher" load --pods 100000 --nodes 5000 >"$tmp/load.txt" ||
		fail "load: $(cat "$tmp/load.txt")"
	start_all 1 1
	wait_for "every replica at 105,000 objects" 600 synced
	sleep 10 # reaper passes over the whole picture
	mem_sample 100k
	grep -h "State replica synced" "$tmp"/*.log | sed 's/^/    /' | cut -c1-140
}
part_memory() {
	: >"$out/mem.txt"
	run mem_1000
	run mem_100k
	bench_header "figure (memory of each daemon)"
	local scale label d
	for scale in 1000 100k; do
		label="1,000 pods"
		[ "$scale" = 1000 ] || label="5,000 nodes / 100,000 pods"
		for d in $daemons; do
			row "$label: ${d%0} peak RSS" "$(awk -v s="$scale" -v d="$d" '$1 == s && $2 == d { printf "%.1f", $3 / 1024 }' "$out/mem.txt")" MB - "<"
		done
		local target=-
		[ "$scale" = 1000 ] || target=150
		row "$label: all four daemons, summed PSS" "$(awk -v s="$scale" '$1 == s && $2 == "pss" { printf "%.1f", $3 / 1024 }' "$out/mem.txt")" MB "$target" "<"
	done
}

# --- part 3: scheduler shards ---------------------------------------------------------------
# Eight Deployments of four shapes, 2,000 pods, on instances under 32 vCPU
# (as Karpenter's performance suite caps them) so that packing shows.
shard_workload() {
	nodepool '{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["32"]}'
	deployment web 300 250m 512Mi
	deployment api 300 500m 1Gi
	deployment worker 250 1 2Gi
	deployment cache 200 500m 4Gi
	deployment batch 250 2 4Gi
	deployment ml 150 4 8Gi
	deployment queue 300 250m 256Mi
	deployment db 250 1 8Gi
}
SHARD_PODS=2000
shards_at() { # SHARDS
	local t0 t1
	start_sim
	start_all "$1" 0
	t0=$(date +%s.%N)
	shard_workload | kubectl apply -f - >/dev/null
	wait_for "$SHARD_PODS pods bound" 600 all_bound $SHARD_PODS
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" -v n=$SHARD_PODS 'BEGIN { printf "%.1f\n", n / (b - a) }' >"$out/shards-$1.rate"
	kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.labels.node\.kubernetes\.io/instance-type}{"\n"}{end}' |
		sort | uniq -c | awk '{ print $2 "x" $1 }' | tr '\n' ' ' >"$out/shards-$1.claims"
	kubectl get nodeclaims -o name | grep -c . >"$out/shards-$1.count" || true
	curl -sS "$AWS_ENDPOINT_URL/_sim/status" | python3 -c '
import json, sys
live = [i for i in json.load(sys.stdin).get("instances", []) if i["state"] in ("pending", "running")]
print("%.4f" % sum(i.get("pricePerHour", 0) for i in live))' >"$out/shards-$1.cost"
}
part_shards() {
	local n same=yes
	for n in 1 2 4; do
		run shards_at "$n"
	done
	bench_header "figure (scheduler shards, $SHARD_PODS pods of 8 Deployments)"
	for n in 1 2 4; do
		row "$n shard(s): pods/s, apply -> all bound" "$(cat "$out/shards-$n.rate")" "pods/s" - ">"
		row "$n shard(s): nodeclaims" "$(cat "$out/shards-$n.count")" nodeclaims - -
		row "$n shard(s): \$/h of the instances launched" "$(cat "$out/shards-$n.cost")" "\$/h" - "<"
		# Sharding packs each shard's groups apart: what that costs.
		[ "$n" = 1 ] || row "$n shard(s): \$/h against 1 shard's" "$(awk -v a="$(cat "$out/shards-$n.cost")" \
			-v b="$(cat "$out/shards-1.cost")" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')" x - "<"
		echo "    $n shard(s): $(cat "$out/shards-$n.claims")"
		cmp -s "$out/shards-1.claims" "$out/shards-$n.claims" && cmp -s "$out/shards-1.count" "$out/shards-$n.count" || same=no
	done
	echo "    identical: $same"
	row "1, 2, 4 shards: identical nodeclaims (1 yes, 0 no)" "$([ $same = yes ] && echo 1 || echo 0)" - - -
}

LATENCY_PODS=${BENCH_SYSTEM_LATENCY_PODS:-100 10000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
case "${KANNA_BENCH_PART:-all}" in
	latency) part_latency ;;
	memory) part_memory ;;
	shards) part_shards ;;
	*) part_latency; echo; part_memory; echo; part_shards ;;
esac
