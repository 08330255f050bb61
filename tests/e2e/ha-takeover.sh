#!/bin/sh
# End-to-end high availability (issue 20): two replicas of kanna on one
# kanna-sim, A and B, each a runtime directory and an identity with its own
# watcher, scheduler shard, launcher and reaper, elect on the one Lease
# kube-system/kanna-leader-election (lease-duration 6s, renew deadline 4s,
# retry period 1s).
#  - A's watcher, launcher and reaper lead together; B's stand by: healthy
#    on /healthz, Ready as a standby on /readyz ("ok: standby, waiting for leadership");
#  - mid-scale-up (NodeClaims created, EC2 answering 2 s late, their
#    instances not yet launched, pods not all bound) A's watcher,
#    launcher and reaper are SIGKILLed: B takes over within the lease
#    duration plus a retry period of the kill, and the scale-up completes;
#  - A's daemons, restarted, stand by (B holds the Lease);
#  - mid-drain (the reaper disrupting the nodes a scale-down emptied) B's
#    are SIGKILLed: A takes over as fast, and the drain completes;
#  - A's launcher, SIGKILLed and restarted while A leads, leads again at
#    once (the Lease is its replica's, kept by its siblings).
# Then the invariants of tests/e2e/chaos_invariants.py hold on what the sim
# recorded: every live instance has exactly one NodeClaim and no NodeClaim
# two instances, no pod bound twice or to a missing node, every instance
# terminated once, nothing left terminating, nothing leaked; and no more
# NodeClaims were ever made than pods needed nodes (nothing doubled).
# Prints both takeover times.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
CHECK="python3 $SRCDIR/tests/e2e/chaos-check.py"
LEASE_DURATION=6 RENEW_DEADLINE=4 RETRY_PERIOD=1
LEASE_FLAGS="--leader-elect=true --lease-duration ${LEASE_DURATION}s --lease-renew-deadline ${RENEW_DEADLINE}s --lease-retry-period ${RETRY_PERIOD}s"
PODS=6 KEEP=2
ELECTED="watcher launcher reaper"

e2e_init
printf 'kubelet-boot-ms: 1000\n' >"$tmp/sim.yaml"
start_sim --config "$tmp/sim.yaml"
set -a
. "$tmp/state/aws.env"
set +a
echo "lease kube-system/kanna-leader-election: duration ${LEASE_DURATION}s, renew deadline ${RENEW_DEADLINE}s, retry period ${RETRY_PERIOD}s"

set -- $(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
health_a=$1 health_b=$2

# start_daemon REPLICA DAEMON: (re)starts it, its log appended to
# $tmp/DAEMON_REPLICA.log after a line "--- started" (the launcher answers
# /healthz and /readyz on the replica's port).
start_daemon() {
	r=$1 d=$2
	case $d in
	watcher) set -- --announce-interval 500ms $LEASE_FLAGS ;;
	scheduler) set -- --batch-idle-duration 500ms --plan-timeout 30s ;;
	launcher) eval "set -- --reconcile-period 1s --health-port \$health_$r $LEASE_FLAGS" ;;
	reaper) set -- --reconcile-period 500ms --gc-period 5s --gc-grace 15s --registration-ttl 60s $LEASE_FLAGS ;;
	esac
	[ "$d" = launcher ] || set -- --health-port 0 "$@"
	echo "--- started" >>"$tmp/${d}_$r.log"
	"$BUILDDIR/$d/kanna-$d" --runtime-dir "$tmp/run-$r" --metrics-port 0 \
		--leader-election-identity "replica-$r" "$@" >>"$tmp/${d}_$r.log" 2>&1 &
	eval "pid_${d}_$r=$!"
	e2e_pids="$e2e_pids $!"
}
start_replica() { # REPLICA
	mkdir -p "$tmp/run-$1"
	for d in watcher scheduler launcher reaper; do
		start_daemon "$1" "$d"
	done
}
# since_start REPLICA DAEMON: its log since it was last started.
since_start() {
	awk '/^--- started$/ { n = NR } { line[NR] = $0 } END { for (i = n + 1; i <= NR; i++) print line[i] }' \
		"$tmp/${2}_$1.log"
}
leads() { since_start "$1" "$2" | grep -q "successfully acquired lease kube-system/kanna-leader-election"; }
stands_by() { since_start "$1" "$2" | grep -q "lease kube-system/kanna-leader-election is held by replica-$3"; }
any_leads() { # REPLICA
	for d in $ELECTED; do
		! leads "$1" "$d" || return 0
	done
	return 1
}
holder() { kubectl get lease -n kube-system kanna-leader-election -o jsonpath='{.spec.holderIdentity}'; }
expect_standby() { # REPLICA LEADER
	for d in $ELECTED; do
		wait_for "replica $1's $d to stand by" 30 stands_by "$1" "$d" "$2"
		if leads "$1" "$d"; then
			fail "replica $1's $d leads while replica $2 holds the Lease"
		fi
	done
	eval "port=\$health_$1"
	code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)
	expect_eq "replica $1's standby launcher is healthy (/healthz)" "$code" 200
	body=$(curl -s -m 5 -w '%{http_code}' "http://127.0.0.1:$port/readyz" | tr '\n' ' ' || true)
	case $body in
	*"ok: standby, waiting for leadership"*" 200") ok "replica $1's standby launcher is Ready as a standby (/readyz: $body)" ;;
	*) fail "replica $1's standby launcher answered /readyz with '$body'" ;;
	esac
}
now() { python3 -c 'import time; print("%.3f" % time.time())'; }
# takeover REPLICA KILLED_AT: $took, seconds from the kill to the first "acquired"
# line of the replica's daemons (their log times, RFC 3339 UTC), at most
# lease duration + retry period (the time a standby needs to see a silent
# record and its next try); B must take over within 30 s at all.
takeover() {
	wait_for "replica $1 to take the Lease over" 30 any_leads "$1"
	for d in $ELECTED; do
		since_start "$1" "$d" | grep "successfully acquired lease" | head -n 1
	done | python3 -c '
import datetime, re, sys
killed, limit = float(sys.argv[1]), float(sys.argv[2])
times = []
for line in sys.stdin:
    m = re.search(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z", line)
    if m:
        times.append(datetime.datetime.fromisoformat(m.group(1)).replace(
            tzinfo=datetime.timezone.utc).timestamp())
if not times:
    sys.exit("no time on the acquired lines")
print("%.1f" % (min(times) - killed))
sys.exit(0 if min(times) - killed <= limit else 1)' "$2" "$((LEASE_DURATION + RETRY_PERIOD))" >"$tmp/takeover" ||
		fail "replica $1 took over $(cat "$tmp/takeover") s after the kill, over ${LEASE_DURATION}s + ${RETRY_PERIOD}s"
	took=$(cat "$tmp/takeover")
}
kill_leaders() { # REPLICA
	for d in $ELECTED; do
		eval "kill -KILL \$pid_${d}_$1"
		eval "wait \$pid_${d}_$1" 2>/dev/null || true
	done
}

kubectl apply -f - >/dev/null <<'YAML'
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
      expireAfter: Never
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 2s, budgets: [{nodes: "100%"}]}
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
YAML

# --- A leads, B stands by ------------------------------------------------------------------
start_replica a
for d in $ELECTED; do
	wait_for "replica a's $d to lead" 60 leads a "$d"
done
wait_for "replica a's launcher to take plans" 30 grep -q "taking launch plans" "$tmp/launcher_a.log"
wait_for "replica a's reaper" 30 grep -q "reaping for cluster" "$tmp/reaper_a.log"
start_replica b
expect_standby b a
expect_eq "the Lease's holder" "$(holder)" replica-a
if grep -q "acquired lease\|leader-election" "$tmp/scheduler_a.log" "$tmp/scheduler_b.log"; then
	fail "a scheduler shard elects"
fi
ok "replica a leads, replica b stands by, the scheduler shards do not elect"

# --- mid-scale-up: A's leaders killed ------------------------------------------------------
# EC2 answers 2 s late meanwhile, so that the kill lands between the
# NodeClaims' creation and their instances' launch.
aws_faults '{"latencyMs": 2000}'
kubectl scale deployment anti --replicas "$PODS" >/dev/null
claims() { kubectl get nodeclaims -o name | grep -c . || true; }
wait_for "replica a's first NodeClaim" 60 sh -c "kubectl get nodeclaims -o name | grep -q ."
bound=$(bound_pods app=anti)
[ "$bound" -lt "$PODS" ] || fail "the scale-up was done before the kill ($bound pods bound)"
killed=$(now)
kill_leaders a
aws_faults '{}'
ok "killed replica a's watcher, launcher and reaper mid-scale-up ($(claims) NodeClaim(s), $bound of $PODS pods bound)"
takeover b "$killed"
up=$took
echo "takeover after scale-up kill: $up s (lease ${LEASE_DURATION} s)"
expect_eq "the Lease's holder" "$(holder)" replica-b
wait_for "$PODS pods bound" 120 sh -c "[ \$(kubectl get pods -l app=anti -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = $PODS ]"
ok "the scale-up completed under replica b"

# --- A restarted: standbys -----------------------------------------------------------------
for d in $ELECTED; do
	start_daemon a "$d"
done
expect_standby a b

# --- mid-drain: B's leaders killed ---------------------------------------------------------
aws_faults '{"latencyMs": 2000}'
kubectl scale deployment anti --replicas "$KEEP" >/dev/null
wait_for "replica b's reaper to disrupt the emptied nodes" 60 sh -c \
	"grep -q 'disrupting nodeclaim(s)' '$tmp/reaper_b.log'"
draining=$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{"\n"}{end}' | grep -c . || true)
killed=$(now)
kill_leaders b
aws_faults '{}'
ok "killed replica b's watcher, launcher and reaper mid-drain ($(claims) NodeClaim(s), $draining being deleted)"
takeover a "$killed"
down=$took
echo "takeover after drain kill: $down s (lease ${LEASE_DURATION} s)"
expect_eq "the Lease's holder" "$(holder)" replica-a
wait_for "the drain to complete: $KEEP NodeClaims left" 120 sh -c "[ \$(kubectl get nodeclaims -o name | grep -c .) = $KEEP ]"
ok "the drain completed under replica a"

# --- a daemon of the leading replica, restarted, leads again at once ----------------------
kill -KILL "$pid_launcher_a"
wait "$pid_launcher_a" 2>/dev/null || true
killed=$(now)
start_daemon a launcher
wait_for "replica a's restarted launcher to lead" 10 leads a launcher
if since_start a launcher | grep -q "is held by"; then
	fail "replica a's restarted launcher waited for its own replica's Lease"
fi
ok "replica a's launcher, restarted, leads at once ($(python3 -c "import time; print('%.1f' % (time.time() - $killed))") s): its siblings renewed the Lease"

# --- invariants, from what the sim recorded ------------------------------------------------
snapshot() {
	mkdir -p "$tmp/snap"
	kubectl get pods,nodes,nodeclaims,nodepools,deployments,events,poddisruptionbudgets -A -o json \
		>"$tmp/snap/k8s.json"
	k8s_status >"$tmp/snap/k8s-status.json"
	curl -sSf "$AWS_ENDPOINT_URL/_sim/status" >"$tmp/snap/aws-status.json"
}
settled() { snapshot && $CHECK settled "$tmp/snap"; }
wait_for "the cluster to settle" 60 settled
$CHECK check "$tmp/snap" --ledger "$tmp/ledger" --launch-timeout 60 --grace 30 ||
	fail "invariants violated: $(cat "$tmp/ledger")"
$CHECK summary --ledger "$tmp/ledger" >"$tmp/summary.txt" || fail "invariants: $(cat "$tmp/summary.txt")"
ok "invariants hold: one instance per NodeClaim, no pod bound twice or to a missing node, each terminated once"
created=$(python3 -c '
import json, sys
print(sum(1 for e in json.load(open(sys.argv[1]))["timeline"] if e["event"] == "nodeclaim-created"))' \
	"$tmp/snap/k8s-status.json")
expect_eq "NodeClaims ever created (one per pod: nothing doubled)" "$created" "$PODS"
live=$(sim_instances | grep -cE 'state=(pending|running)' || true)
expect_eq "live instances at the end (nothing leaked)" "$live" "$KEEP"
expect_one_instance_per_nodeclaim "at the end"
echo "takeover after scale-up kill: $up s, after drain kill: $down s (lease ${LEASE_DURATION} s, retry ${RETRY_PERIOD} s)"
