#!/bin/sh
# End-to-end chaos: under kills and faults the scale-up path never
# overcommits, never wedges, never leaks, and the removal path never
# terminates an instance twice, never strands a finalizer, never evicts
# what a PodDisruptionBudget protects.
#
# Each round scales three Deployments (plain pods; pods that refuse to share
# a host, required anti-affinity on kubernetes.io/hostname, under a
# PodDisruptionBudget of maxUnavailable 1; pods spread over zones, maxSkew 1
# DoNotSchedule) up or down, every second round deletes one busy Node or
# NodeClaim (as an operator or an interruption would), and the NodePools
# remove every empty node after 3 s (WhenEmpty, budget 100%), so drains
# and terminations run while kanna-sim injects faults
# chosen from the seed on both sides (AWS: insufficient capacity for a few
# instance types up to a whole capacity type, throttling, 5xx, latency,
# answers lost or cut off after the request was carried out;
# Kubernetes: 5xx, 429, latency, cut watches, 410 Gone, and 500s on
# pods/binding and Events)
# and SIGKILLs watcher, scheduler, launcher and reaper at random moments,
# restarting each (round r's first kill takes the r-th of launcher, reaper,
# scheduler, watcher; the rest are picked at random). Then the faults stop, the cluster gets a bounded time to
# converge (not converging is a violation: a wedge), and
# tests/e2e/chaos-check.py checks the invariants against
# what the sim recorded (its state, instances and timelines), not against
# what kanna says. Every daemon must answer /healthz throughout, and exit 0
# on SIGTERM at the end. Prints the kills, the faults that hit by kind
# (kanna-sim's own counts) and each invariant's count; fails on any
# violation.
#
# KANNA_CHAOS_SCRIPT=s1 plays seed scenario S1 instead of the rounds, under
# kills every few seconds and steady faults (its NodePool's budget of 10%
# binds: disruption-budget-exceeded, checked in both modes, bites), and
# adds its checks: nothing left at scale 0 after the garbage-collection
# interval, the cost at most 10% over a fault-free run
# of the same script (tests/e2e/chaos-s1-script.sh says how;
# tests/e2e/chaos-s1.sh is its short run in `make check`, which skips the
# cost comparison and says so).
#
# Environment (the defaults are the short run `make check` does):
#   KANNA_CHAOS_SCRIPT     rounds (the default) or s1
#   KANNA_CHAOS_SEED       seed of every random choice (1)
#   KANNA_CHAOS_ROUNDS     rounds of scale, faults and kills (3)
#   KANNA_CHAOS_KILLS      kills per round: N or MIN-MAX (1-2)
#   KANNA_CHAOS_STEP       seconds of faults and kills per round (12)
#   KANNA_CHAOS_SETTLE     seconds a round may take to converge (120)
#   KANNA_CHAOS_ARTIFACTS  a directory to keep the logs and the ledger in
#   KANNA_CHAOS_MIN_KILLS, KANNA_CHAOS_MIN_FAULTS  fail a run below these (0)
#   KANNA_CHAOS_HOLD, KANNA_CHAOS_KILL_EVERY, KANNA_CHAOS_COST  the S1
#                          script's (chaos-s1-script.sh)
# `./quickstart chaos` runs the long campaign (10 rounds of 2-3 kills each,
# at least 20 kills and 100 faults, three seeds, gcc and ASan builds).
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 on PATH (./quickstart deps)"; exit 77; }

SEED=${KANNA_CHAOS_SEED:-1}
SCRIPT=${KANNA_CHAOS_SCRIPT:-rounds}
ROUNDS=${KANNA_CHAOS_ROUNDS:-3}
KILLS=${KANNA_CHAOS_KILLS:-1-2}
STEP=${KANNA_CHAOS_STEP:-12}
SETTLE=${KANNA_CHAOS_SETTLE:-120}
ARTIFACTS=${KANNA_CHAOS_ARTIFACTS:-}
MIN_KILLS=${KANNA_CHAOS_MIN_KILLS:-0}
MIN_FAULTS=${KANNA_CHAOS_MIN_FAULTS:-0}
CHECK="python3 $SRCDIR/tests/e2e/chaos-check.py"
# Short, so that a NodeClaim stuck without an instance shows within a round;
# the grace covers a kill's downtime and the launcher's 1 s reconcile.
LAUNCH_TIMEOUT=20
LAUNCH_GRACE=15
# An offering that met insufficient capacity is skipped this long (3m by
# default): about a round, so that each round's capacity faults are its own.
ICE_TTL=20
# The reaper's garbage collection looks often, and gives a launch (and a
# killed launcher) a while before it calls an instance orphaned.
GC_PERIOD=5
GC_GRACE=15
DAEMONS="watcher scheduler launcher reaper"
case $SCRIPT in
rounds) ;;
s1) . "$SRCDIR/tests/e2e/chaos-s1-script.sh" ;;
*) echo "KANNA_CHAOS_SCRIPT=$SCRIPT: rounds or s1" >&2; exit 2 ;;
esac
case $KILLS in
*-*) kills_min=${KILLS%-*} kills_max=${KILLS#*-} ;;
*) kills_min=$KILLS kills_max=$KILLS ;;
esac

# --- seeded choices: an LCG in shell arithmetic, so a seed replays the
# same rounds (the daemons' timing still varies from run to run).
rng=$(( (SEED * 2654435761 + 1) % 2147483648 ))
rand() { # N: r = 0..N-1
	rng=$(( (rng * 1103515245 + 12345) % 2147483648 ))
	r=$(( (rng / 65536) % $1 ))
}
pick() { # WORDS...: p = one of them
	rand $#
	shift "$r"
	p=$1
}

e2e_init
$CHECK selftest >/dev/null || { $CHECK selftest; fail "the invariant checker fails its self-test"; }
# Keep the evidence, then clean up as lib.sh does. e2e_cleanup exits with
# the $? it is called with: the run's, not that of the copy (an if's status
# is 0 whatever ran, and a failed run passed). set -e is off first: it
# holds in a trap too, and (exit 1) would end the shell there, leaving
# kanna-sim and the daemons running after every failed run.
chaos_exit() {
	local rc=$?
	set +e
	if [ -n "$ARTIFACTS" ]; then
		mkdir -p "$ARTIFACTS"
		cp "$tmp"/*.log "$tmp"/*.out "$tmp"/ledger "$tmp"/snap/*.json "$tmp"/snap/operator-deleted \
			"$ARTIFACTS"/ 2>/dev/null || true
	fi
	(exit "$rc")
	e2e_cleanup
}
trap chaos_exit EXIT INT TERM
[ "$SCRIPT" != s1 ] || s1_baseline
start_sim
set -a
. "$tmp/state/aws.env"
set +a
export KUBECACHEDIR="$tmp/kubecache"
server=$(sed -n 's/.*"server": *"\([^"]*\)".*/\1/p' "$KUBECONFIG")
token=$(cat "$tmp/state/token")
k8s_admin() { # PATH [JSON]: the Kubernetes port's /_sim/ endpoints
	if [ $# -gt 1 ]; then
		curl -sSf -m 30 --cacert "$tmp/state/ca.crt" -H "Authorization: Bearer $token" \
			-H 'Content-Type: application/json' -X POST "$server$1" -d "$2"
	else
		curl -sSf -m 30 --cacert "$tmp/state/ca.crt" -H "Authorization: Bearer $token" "$server$1"
	fi
}
aws_admin() { # PATH [JSON]
	if [ $# -gt 1 ]; then
		curl -sSf -m 30 -H 'Content-Type: application/json' -X POST "$AWS_ENDPOINT_URL$1" -d "$2"
	else
		curl -sSf -m 30 "$AWS_ENDPOINT_URL$1"
	fi
}
# kubectl against an API that fails on purpose: retried, bounded.
kc() {
	kn=0
	until kubectl --request-timeout 30s "$@" >"$tmp/kc.out" 2>"$tmp/kc.err"; do
		kn=$((kn + 1))
		[ $kn -lt 20 ] || fail "kubectl $*: $(cat "$tmp/kc.err")"
		sleep 0.5
	done
	cat "$tmp/kc.out"
}

# --- daemons: fixed health ports (the daemons take no ephemeral one), so a
# restarted daemon answers where its predecessor did.
ports=$(python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
set -- $ports
port_watcher=$1 port_scheduler=$2 port_launcher=$3 port_reaper=$4
kills_watcher=0 kills_scheduler=0 kills_launcher=0 kills_reaper=0 kills=0

start_daemon() { # NAME: (re)starts it, appending to its log
	case $1 in
	watcher)
		set -- "$BUILDDIR/watcher/kanna-watcher" --announce-interval 500ms ;;
	scheduler)
		set -- "$BUILDDIR/scheduler/kanna-scheduler" --batch-idle-duration 500ms --plan-timeout 30s ;;
	launcher)
		set -- "$BUILDDIR/launcher/kanna-launcher" --reconcile-period 1s \
			--launch-timeout "${LAUNCH_TIMEOUT}s" --unavailable-offering-ttl "${ICE_TTL}s" ;;
	reaper)
		set -- "$BUILDDIR/reaper/kanna-reaper" --reconcile-period 500ms \
			--gc-period "${GC_PERIOD}s" --gc-grace "${GC_GRACE}s" --registration-ttl 60s ;;
	esac
	d=$(basename "$1")
	d=${d#kanna-}
	echo "--- $(date -u +%H:%M:%S) chaos: starting $d" >>"$tmp/$d.log"
	eval "port=\$port_$d"
	"$@" --runtime-dir "$tmp/run" --metrics-port 0 --health-port "$port" --leader-elect=false \
		>>"$tmp/$d.log" 2>&1 &
	eval "pid_$d=$!"
	e2e_pids="$pid_sim $pid_watcher $pid_scheduler $pid_launcher $pid_reaper"
}
pid_watcher="" pid_scheduler="" pid_launcher="" pid_reaper=""
for d in $DAEMONS; do
	start_daemon "$d"
done

# A daemon that is gone without being killed by us crashed; it is
# recorded and restarted (its exit status and last lines are the evidence).
alive() { # PID: running (not a zombie)
	[ -r "/proc/$1/stat" ] && ! sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'
}
ledger() { # INVARIANT KEY EVIDENCE
	printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$tmp/ledger"
	echo "  VIOLATION $1: $3"
}
check_daemons() { # WHEN [DAEMON...]: all of them by default
	when=$1
	shift
	[ $# -gt 0 ] || set -- $DAEMONS
	for d in "$@"; do
		eval "pid=\$pid_$d port=\$port_$d"
		if ! alive "$pid"; then
			st=0
			wait "$pid" 2>/dev/null || st=$?
			ledger daemon-crashed "$d $when" "kanna-$d exited with status $st by itself ($when): $(grep -v '^---' "$tmp/$d.log" | tail -n 3 | tr '\n' ' ')"
			start_daemon "$d"
			continue
		fi
		code=000 hn=0
		while [ $hn -lt 20 ]; do
			code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)
			[ "$code" != 200 ] || break
			hn=$((hn + 1))
			sleep 0.5
		done
		[ "$code" = 200 ] || ledger daemon-unhealthy "$d $when" "kanna-$d answered /healthz with $code for 10 s ($when)"
	done
}
for d in $DAEMONS; do
	wait_for "kanna-$d's health port" 30 curl -sf "http://127.0.0.1:$(eval echo "\$port_$d")/healthz"
done
wait_for "the launcher to take plans" 60 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 60 grep -q "reaping for cluster" "$tmp/reaper.log"

# --- workload: NodePools with limits over spot and on-demand --------------------
[ "$SCRIPT" = s1 ] || kc apply -f - >/dev/null <<'YAML'
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-kanna
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: kanna}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata: {labels: {intent: apps}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
  limits: {cpu: "32"}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 3s, budgets: [{nodes: "100%"}]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spread}
spec:
  template:
    metadata: {labels: {intent: spread}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
  limits: {cpu: "16"}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 3s, budgets: [{nodes: "100%"}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: plain}
spec:
  replicas: 0
  selector: {matchLabels: {app: plain}}
  template:
    metadata: {labels: {app: plain}}
    spec:
      nodeSelector: {intent: apps}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: 500m, memory: 512Mi}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: anti}
spec:
  replicas: 0
  selector: {matchLabels: {app: anti}}
  template:
    metadata: {labels: {app: anti}}
    spec:
      nodeSelector: {intent: apps}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: anti}}}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: anti, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: anti}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: spread}
spec:
  replicas: 0
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      nodeSelector: {intent: spread}
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
         labelSelector: {matchLabels: {app: spread}}}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "1", memory: 1Gi}}}
YAML

# --- faults ---------------------------------------------------------------------------
# Each kind is on in about three rounds of four, at a seeded strength, and
# round r forces the kinds whose index is r modulo the rounds, so even a
# short run injects every kind. Insufficient capacity takes out a few
# instance types or at most a whole capacity type, in every zone alike, so
# that every zone stays a spread domain for kanna as for Karpenter.
zones="${AWS_REGION}a ${AWS_REGION}b ${AWS_REGION}c"
fault_level() { # KIND-INDEX ROUND: lvl = 0 (off) .. 3
	if [ $(($1 % ROUNDS)) -eq $(($2 % ROUNDS)) ]; then
		rand 3
		lvl=$((r + 1))
	else
		rand 4
		lvl=$r
	fi
}
faults_for_round() { # ROUND: sets aws_json and k8s_json
	fault_level 0 "$1"
	case $lvl in
	0) ice="" ;;
	1) ice=""
	   for _ in 1 2 3; do
		pick m6g.large c6g.large c6g.xlarge m6g.xlarge c7g.large c6a.large c5a.large m5.large
		ice="$ice${ice:+, }{\"instanceType\": \"$p\"}"
	   done ;;
	2) ice='{"capacityType": "spot"}' ;;
	3) ice='{"capacityType": "on-demand", "errorCode": "UnfulfillableCapacity"}' ;;
	esac
	fault_level 1 "$1"; set -- "$1" "$(echo 0 0.1 0.2 0.3 | cut -d' ' -f$((lvl + 1)))"
	fault_level 2 "$1"; set -- "$@" "$(echo 0 0.05 0.1 0.2 | cut -d' ' -f$((lvl + 1)))"
	fault_level 3 "$1"; set -- "$@" "$(echo 0 100 300 800 | cut -d' ' -f$((lvl + 1)))"
	fault_level 11 "$1"; set -- "$@" "$(echo 0 0.05 0.1 0.2 | cut -d' ' -f$((lvl + 1)))"
	fault_level 12 "$1"; set -- "$@" "$(echo 0 0.05 0.1 0.2 | cut -d' ' -f$((lvl + 1)))"
	aws_json="{\"insufficientCapacity\": [$ice], \"throttleRate\": $2, \"errorRate\": $3, \"latencyMs\": $4, \"lostAnswerRate\": $5, \"garbledAnswerRate\": $6}"
	fault_level 4 "$1"; set -- "$1" "$(echo 0 0.02 0.05 0.1 | cut -d' ' -f$((lvl + 1)))"
	fault_level 5 "$1"; set -- "$@" "$(echo 0 0.02 0.05 0.1 | cut -d' ' -f$((lvl + 1)))"
	fault_level 6 "$1"; set -- "$@" "$(echo 0 20 50 150 | cut -d' ' -f$((lvl + 1)))"
	fault_level 7 "$1"; set -- "$@" "$(echo 0 100 40 15 | cut -d' ' -f$((lvl + 1)))"
	fault_level 8 "$1"; set -- "$@" "$(echo 0 1 2 4 | cut -d' ' -f$((lvl + 1)))"
	fault_level 9 "$1"; set -- "$@" "$(echo 0 0.2 0.4 0.6 | cut -d' ' -f$((lvl + 1)))"
	fault_level 10 "$1"; set -- "$@" "$(echo 0 0.2 0.4 0.6 | cut -d' ' -f$((lvl + 1)))"
	k8s_json="{\"error5xxRate\": $2, \"throttleRate\": $3, \"latencyMs\": $4, \"watchCutAfterEvents\": $5, \"watchGone\": $6, \"errorRates\": {\"pods/binding\": $7, \"events\": $8}}"
}
clear_faults() {
	aws_admin /_sim/faults '{}' >/dev/null
	k8s_admin /_sim/faults '{}' >/dev/null
}

# --- kills ------------------------------------------------------------------------
# The first kill of round r takes the r-th of this order (so that even a
# short run kills the launcher, and the reaper in the first round that
# removes nodes); the others are picked at random.
FORCED_KILLS="launcher reaper scheduler watcher"
kill_one() { # [DAEMON]
	if [ $# -gt 0 ]; then p=$1; else pick $DAEMONS; fi
	eval "pid=\$pid_$p"
	if ! alive "$pid"; then
		check_daemons "before a kill" "$p"
		eval "pid=\$pid_$p"
	fi
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	# What it was doing: the reaper's last line says how far a drain went.
	[ "$p" != reaper ] || echo "  killed the reaper after: $(grep -v '^---' "$tmp/reaper.log" | tail -n 1 | cut -c1-160)" >>"$tmp/kills"
	echo "--- $(date -u +%H:%M:%S) chaos: SIGKILL" >>"$tmp/$p.log"
	eval "k=\$kills_$p"
	eval "kills_$p=$((k + 1))"
	kills=$((kills + 1))
	rand 15
	sleep "$((r / 10)).$((r % 10))"
	start_daemon "$p"
	killed="$killed $p"
}

# --- removals: a busy Node or its NodeClaim deleted, as by hand ----------------------------
# Preferably one running an anti-affinity pod, whose budget then decides
# when the drain may evict it; kubectl delete node takes the NodeClaim along
# (kanna-reaper's doing), kubectl delete nodeclaim the Node.
remove_busy_node() {
	node=$(kc get pods -l app=anti -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep . | sort -u | head -n 1)
	[ -n "$node" ] || node=$(kc get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep . | sort -u | head -n 1)
	[ -n "$node" ] || return 0
	mkdir -p "$tmp/snap"
	echo "$node" >>"$tmp/snap/operator-deleted" # not kanna's disruption (chaos_budgets.py)
	claim=$(kc get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name} {.status.nodeName}{"\n"}{end}' | awk -v n="$node" '$2 == n {print $1}')
	rand 2
	if [ "$r" -eq 0 ] || [ -z "$claim" ]; then
		kc delete node "$node" --wait=false >/dev/null
		removed="$removed node/$node"
	else
		kc delete nodeclaim "$claim" --wait=false >/dev/null
		removed="$removed nodeclaim/$claim"
	fi
}

# --- one round: scale, faults and kills, then converge and check -------------------
snapshot_tick=:
# Under the S1 script's steady faults one kind a kubectl call (a call of
# eight kinds fails more often than it succeeds); between two looks at EC2: an instance is judged
# against the NodeClaims by both (chaos_invariants.py), so that one that
# went or came while kubectl listed is not taken for a leak.
snapshot() { # into $tmp/snap
	mkdir -p "$tmp/snap"
	aws_admin /_sim/status >"$tmp/snap/aws-status-before.json"
	kinds="pods nodes nodeclaims nodepools provisioners deployments events poddisruptionbudgets"
	if [ "$SCRIPT" = rounds ]; then # faults are off while a round converges: one call
		kc get "$(echo $kinds | tr ' ' ,)" -A -o json >"$tmp/snap/k8s.json"
	else
		for kind in $kinds; do
			$snapshot_tick # the S1 script's kills go on meanwhile
			kc get "$kind" -A -o json >"$tmp/snap/part-$kind.json"
		done
		python3 -c '
import json, sys
items = []
for f in sys.argv[2:]:
    items += json.load(open(f)).get("items", [])
json.dump({"kind": "List", "items": items}, open(sys.argv[1], "w"))' "$tmp/snap/k8s.json" "$tmp/snap"/part-*.json
	fi
	k8s_admin /_sim/status >"$tmp/snap/k8s-status.json"
	aws_admin /_sim/status >"$tmp/snap/aws-status.json"
}
plain=0 anti=0 spread=0
start_s=$(date +%s)
round=1
if [ "$SCRIPT" = s1 ]; then
	s1_play
	ROUNDS=0
fi
while [ "$round" -le "$ROUNDS" ]; do
	# Plain and anti-affinity pods go up and down; the spread Deployment only
	# up or to zero, since a scale-down may leave any skew (kube-scheduler
	# spreads when it places, nothing rebalances after).
	pick 0 4 10 16 24 30; plain=$p
	pick 0 2 4 6 8; anti=$p
	rand 4
	if [ "$r" -eq 0 ] || [ "$spread" -ge 12 ]; then spread=0; else spread=$((spread + 3)); fi
	faults_for_round "$round"
	aws_admin /_sim/faults "$aws_json" >/dev/null || fail "kanna-sim refused the AWS faults $aws_json"
	k8s_admin /_sim/faults "$k8s_json" >/dev/null || fail "kanna-sim refused the Kubernetes faults $k8s_json"
	echo "round $round/$ROUNDS: plain=$plain anti=$anti spread=$spread"
	echo "  aws faults $aws_json"
	echo "  k8s faults $k8s_json"
	t0=$(date +%s)
	kc scale deployment plain --replicas "$plain" >/dev/null
	kc scale deployment anti --replicas "$anti" >/dev/null
	kc scale deployment spread --replicas "$spread" >/dev/null
	rand $((kills_max - kills_min + 1))
	n=$((kills_min + r)) killed="" removed=""
	[ $((round % 2)) -ne 0 ] || remove_busy_node
	set -- $FORCED_KILLS
	shift $(((round - 1) % $#))
	forced=$1
	while [ "$n" -gt 0 ]; do
		rand $((STEP * 10 / (kills_max + 1)))
		sleep "$((r / 10)).$((r % 10))"
		kill_one $forced
		forced=""
		n=$((n - 1))
	done
	left=$((t0 + STEP - $(date +%s)))
	[ "$left" -le 0 ] || sleep "$left"
	clear_faults
	echo "  removed:${removed:- nothing (no busy node)}; killed:${killed:- nothing}"
	[ ! -s "$tmp/kills" ] || { cat "$tmp/kills"; : >"$tmp/kills"; }
	echo "  faults off, converging (at most ${SETTLE}s)"
	deadline=$(($(date +%s) + SETTLE))
	settled=false
	while [ "$(date +%s)" -lt "$deadline" ]; do
		snapshot
		if $CHECK settled "$tmp/snap"; then
			settled=true
			break
		fi
		sleep 2
	done
	# Checked: the snapshot found settled (a fresh one may catch a
	# disruption the reaper began since, still under way, as stuck).
	$settled || snapshot
	if $settled; then
		echo "  converged in $(($(date +%s) - deadline + SETTLE))s"
	else
		$CHECK settled -v "$tmp/snap" >"$tmp/unsettled" || true
		ledger not-converged "round $round" "round $round did not converge within ${SETTLE}s: $(sed 's/^ *unsettled: //' "$tmp/unsettled" | head -n 3 | tr '\n' ';')"
	fi
	check_daemons "round $round"
	$CHECK check "$tmp/snap" --ledger "$tmp/ledger" --launch-timeout "$LAUNCH_TIMEOUT" \
		--grace "$LAUNCH_GRACE" --zones "$(echo $zones | tr ' ' ,)" | sed 's/^/  /' || true
	round=$((round + 1))
done

# --- every daemon stops cleanly on SIGTERM ---------------------------------------------
for d in $DAEMONS; do
	eval "pid=\$pid_$d"
	alive "$pid" || check_daemons "before SIGTERM" "$d"
	eval "pid=\$pid_$d"
	kill -TERM "$pid"
	n=0
	while alive "$pid" && [ $n -lt 300 ]; do
		n=$((n + 1))
		sleep 0.1
	done
	if alive "$pid"; then
		kill -KILL "$pid"
		ledger sigterm-exit-nonzero "$d" "kanna-$d still ran 30 s after SIGTERM: $(tail -n 3 "$tmp/$d.log" | tr '\n' ' ')"
	fi
	st=0
	wait "$pid" || st=$?
	[ "$st" -eq 0 ] || ledger sigterm-exit-nonzero "$d" "kanna-$d exited with status $st on SIGTERM: $(tail -n 3 "$tmp/$d.log" | tr '\n' ' ')"
done
e2e_pids="$pid_sim"
for d in $DAEMONS; do
	if grep -q "ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer" "$tmp/$d.log"; then
		ledger daemon-crashed "$d sanitizer" "kanna-$d's log has a sanitizer report: $(grep -m1 "ERROR: \|runtime error:" "$tmp/$d.log")"
	fi
done

# --- report --------------------------------------------------------------------------------------
snapshot
if [ "$SCRIPT" = s1 ]; then
	echo "chaos: seed $SEED, the S1 script${FAULT_FREE:+ fault-free} in $(($(date +%s) - start_s))s"
else
	echo "chaos: seed $SEED, $ROUNDS rounds in $(($(date +%s) - start_s))s"
fi
echo "kills: $kills (watcher $kills_watcher, scheduler $kills_scheduler, launcher $kills_launcher, reaper $kills_reaper)"
# What the reaper did meanwhile (its log, not an invariant: the evidence
# that removals ran under the kills).
echo "removals: $(grep -c 'terminated instance ' "$tmp/reaper.log") instance(s) terminated, $(grep -c 'evicted pod ' "$tmp/reaper.log") pod(s) evicted, $(grep -c 'FailedDraining\|Failed to drain node' "$tmp/reaper.log") drain(s) held by a budget"
python3 - "$tmp/snap/aws-status.json" "$tmp/snap/k8s-status.json" >"$tmp/faults.txt" <<'PY'
import json, sys
aws = json.load(open(sys.argv[1])).get("faultsInjected", {})
k8s = json.load(open(sys.argv[2])).get("faultsInjected", {})
rows = [("aws " + k, v) for k, v in sorted(aws.items())]
for k, v in sorted(k8s.items()):
    if isinstance(v, dict):
        rows += [("k8s %s %s" % (k, r), n) for r, n in sorted(v.items())]
    else:
        rows.append(("k8s " + k, v))
print("faults injected (kanna-sim's counts): %d" % sum(v for _, v in rows))
for k, v in rows:
    print("  %-28s %d" % (k, v))
PY
cat "$tmp/faults.txt"
faults=$(sed -n 's/^faults injected.*: //p' "$tmp/faults.txt")
touch "$tmp/ledger"
$CHECK summary --ledger "$tmp/ledger" || fail "invariants violated (above)"
[ "$kills" -ge "$MIN_KILLS" ] || fail "only $kills kills, fewer than $MIN_KILLS"
[ "$faults" -ge "$MIN_FAULTS" ] || fail "only $faults faults injected, fewer than $MIN_FAULTS"
ok "seed $SEED: $kills kills, $faults faults, no invariant violated"
