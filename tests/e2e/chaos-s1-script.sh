# Sourced by tests/e2e/chaos.sh when KANNA_CHAOS_SCRIPT=s1: seed scenario S1
# (SCENARIOS.md; tests/e2e/s1-provisioner.sh plays it without chaos) as a
# timed script, played under kills and faults:
#   0 → 5 → 20 → 10 → 5 → 0 replicas of a 500m CPU / 512Mi Deployment on
#   a karpenter.sh/v1alpha5 Provisioner (ttlSecondsAfterEmpty 5 s,
#   ttlSecondsUntilExpired 5 holds: the peak's nodes expire while 5 pods
#   run, and are replaced first), on a fixed schedule of holds
#   (KANNA_CHAOS_HOLD, 8 s): 0 → 5 and 5 → 20 two holds each, 20 → 10 one,
#   10 → 5 until the peak's NodeClaims are gone, 5 → 0 until every Node
#   and NodeClaim is; a step that has not converged by its planned end
#   (pods bound, chaos-check.py settled) runs on until it has.
# Meanwhile a daemon is SIGKILLed every few seconds (KANNA_CHAOS_KILL_EVERY,
# the first four kills take launcher, reaper, scheduler and watcher in
# turn) and restarted, and kanna-sim injects: 10% 5xx on both sides,
# throttling bursts (3 s in every 10) and, in the same bursts,
# insufficient capacity on the cheapest offerings (those the fault-free run
# launched: kanna's choice; without it, those this run launched so far —
# in bursts, as capacity comes back in EC2: held all run long it would
# put every launch on a pricier offering, and the cost comparison would
# measure the fault, not kanna),
# a few lost EC2 answers, cut watch streams and 410 Gone (seeded per step).
# The invariants are checked after every step; at scale 0, with kills and
# faults stopped, once the garbage-collection interval has passed no Node,
# NodeClaim or live instance may be left; and the run's cost (kanna-sim's
# instance-seconds at their prices) may be at most 10% over a fault-free run
# of the same script, run first (KANNA_CHAOS_COST=skip skips that run and
# says so). An instance that went to a pricier offering because a burst
# refused the cheaper one counts at the refused offering's price (both
# figures are printed): a burst that meets the peak's launch would
# otherwise charge its whole life to the fault (seen: 1.197, 1.076 without).
# Reads chaos.sh's settings and helpers (kc, kill_one, snapshot, ledger, ...).

HOLD=${KANNA_CHAOS_HOLD:-8}
KILL_EVERY=${KANNA_CHAOS_KILL_EVERY:-2-6}
FAULT_FREE=${KANNA_CHAOS_FAULT_FREE:-}
COST=${KANNA_CHAOS_COST:-compare}
S1_EMPTY_TTL=5
# The first node expires as 10 → 5 begins (5 holds in), the peak's second
# about two holds later.
S1_EXPIRE_TTL=$((5 * HOLD))
case $KILL_EVERY in
*-*) every_min=${KILL_EVERY%-*} every_max=${KILL_EVERY#*-} ;;
*) every_min=$KILL_EVERY every_max=$KILL_EVERY ;;
esac

# --- the fault-free run of the same script, first (no kills, no faults) -----
s1_baseline() {
	baseline_cost="" ice_offerings=""
	if [ -n "$FAULT_FREE" ]; then
		return 0
	fi
	if [ "$COST" = skip ]; then
		echo "fault-free run: skipped (KANNA_CHAOS_COST=skip): the cost is NOT compared; insufficient capacity hits the offerings this run launched so far"
		return 0
	fi
	echo "fault-free run of the same script (seed $SEED), for its cost and its offerings:"
	b0=$(date +%s)
	if ! KANNA_CHAOS_FAULT_FREE=1 KANNA_CHAOS_BASELINE_OUT="$tmp/baseline" KANNA_CHAOS_MIN_KILLS=0 \
		KANNA_CHAOS_MIN_FAULTS=0 KANNA_CHAOS_ARTIFACTS="${ARTIFACTS:+$ARTIFACTS/fault-free}" \
		sh "$SRCDIR/tests/e2e/chaos.sh" >"$tmp/fault-free.out" 2>&1; then
		tail -n 60 "$tmp/fault-free.out" | sed 's/^/  | /'
		fail "the fault-free run of the S1 script failed"
	fi
	grep '^step \|^  converged\|^  checked\|^cost\|^ok' "$tmp/fault-free.out" | sed 's/^/  | /'
	baseline_cost=$(sed -n 's/^cost //p' "$tmp/baseline")
	ice_offerings=$(sed -n 's/^offering //p' "$tmp/baseline" | sort -u)
	[ -n "$baseline_cost" ] && [ -n "$ice_offerings" ] || fail "the fault-free run left no cost or offerings"
	echo "  fault-free: \$$baseline_cost in $(($(date +%s) - b0))s; its offerings: $(echo "$ice_offerings" | tr '\n' ';')"
}

s1_workload() {
	kc apply -f - >/dev/null <<YAML
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  requirements:
    - key: karpenter.sh/capacity-type
      operator: In
      values: ["spot", "on-demand"]
  limits:
    resources:
      cpu: 100
  provider:
    instanceProfile: KarpenterNodeInstanceProfile-kanna
    subnetSelector:
      karpenter.sh/discovery: kanna
    securityGroupSelector:
      karpenter.sh/discovery: kanna
  ttlSecondsAfterEmpty: $S1_EMPTY_TTL
  ttlSecondsUntilExpired: $S1_EXPIRE_TTL
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: inflate
spec:
  replicas: 0
  selector:
    matchLabels:
      app: inflate
  template:
    metadata:
      labels:
        app: inflate
    spec:
      terminationGracePeriodSeconds: 0
      containers:
        - name: inflate
          image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
          resources:
            requests:
              cpu: 500m
              memory: 512Mi
YAML
}

# --- faults: steady 5xx, watch cuts and 410 Gone (seeded per step), and a
# throttling burst 3 s in every 10 --------------------------------------------
s1_step_faults() {
	pick 15 40 100; cut=$p
	rand 4; gone=$((r + 1))
}
s1_set_faults() { # BURST(0|1)
	[ -z "$FAULT_FREE" ] || return 0
	ice="" offerings=$ice_offerings
	# Without a fault-free run: the offerings this run launched so far
	# (kanna's choices, the cheapest), from the last snapshot.
	[ -n "$offerings" ] || [ ! -s "$tmp/snap/aws-status.json" ] ||
		offerings=$(python3 -c '
import json, sys
for i in json.load(open(sys.argv[1]))["instances"]:
    print("%s,%s,%s" % (i["instanceType"], i["zone"], i["capacityType"]))' "$tmp/snap/aws-status.json" | sort -u)
	for o in $offerings; do
		set -- "$1" $(echo "$o" | tr ',' ' ')
		ice="$ice${ice:+, }{\"instanceType\": \"$2\", \"zone\": \"$3\", \"capacityType\": \"$4\"}"
		set -- "$1"
	done
	throttle=0
	[ "$1" -eq 0 ] || throttle=0.5
	[ "$1" -eq 1 ] || ice=
	aws_admin /_sim/faults "{\"insufficientCapacity\": [$ice], \"errorRate\": 0.1, \"throttleRate\": $throttle, \"lostAnswerRate\": 0.03}" >/dev/null ||
		fail "kanna-sim refused the AWS faults"
	k8s_admin /_sim/faults "{\"error5xxRate\": 0.1, \"throttleRate\": $throttle, \"watchCutAfterEvents\": $cut, \"watchGone\": $gone}" >/dev/null ||
		fail "kanna-sim refused the Kubernetes faults"
}

# --- the hold loop: kills and bursts until the step is done -----------------
s1_pods_bound() { # N: exactly N inflate pods, each bound
	kc get pods -l app=inflate -o jsonpath='{range .items[*]}{.metadata.name}|{.spec.nodeName}|{.metadata.deletionTimestamp}{"\n"}{end}' |
		awk -F'|' -v n="$1" '$1 != "" && $3 == "" { all++; if ($2 != "") b++ } END { exit !(all == n && b == n) }'
}
s1_claims() {
	kc get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort
}
s1_none_of() { # CLAIMS: none of them is left
	now_claims=$(s1_claims)
	for c in $1; do
		! echo "$now_claims" | grep -qx "$c" || return 1
	done
}
s1_expired() { # the 5 after the peak: bound, and the peak's NodeClaims gone
	s1_pods_bound 5 && s1_none_of "$peak"
}
s1_nothing_left() {
	[ -z "$(kc get nodeclaims,nodes -o name)" ]
}
next_kill=0 burst=0 next_burst=0 kill_n=0
# The step's snapshot: converged (chaos-check.py settled) and checked.
s1_settled() {
	snapshot
	$CHECK settled "$tmp/snap"
}
s1_check() { # STEP: the invariants on the step's snapshot
	check_daemons "step $1"
	$CHECK check "$tmp/snap" --ledger "$tmp/ledger" --launch-timeout "$LAUNCH_TIMEOUT" \
		--grace "$LAUNCH_GRACE" --zones "$(echo $zones | tr ' ' ,)" | sed 's/^/  /' || true
}
# Kills every few seconds and the throttling bursts go on throughout: while
# the step converges, while it is checked, and until its time is up.
s1_chaos_tick() {
	[ -z "$FAULT_FREE" ] || return 0
	now=$(date +%s)
	if [ "$now" -ge "$next_burst" ]; then
		burst=$((1 - burst))
		s1_set_faults "$burst"
		next_burst=$((now + (burst ? 3 : 7)))
	fi
	if [ "$now" -ge "$next_kill" ]; then
		forced=""
		[ "$kill_n" -ge 4 ] || forced=$(echo $FORCED_KILLS | cut -d' ' -f$((kill_n + 1)))
		kill_one $forced
		kill_n=$((kill_n + 1))
		rand $((every_max - every_min + 1))
		next_kill=$(($(date +%s) + every_min + r))
	fi
}
# NAME SECONDS MAX-SECONDS DONE-COMMAND...: the step ends SECONDS after
# the previous step's planned end (a fixed schedule, the same in the
# fault-free run, so that costs compare: a late step does not push the
# next ones), and not before DONE holds and the cluster has converged;
# then it is checked. Not converged within MAX seconds is a violation.
# SECONDS 0: the step ends as soon as DONE holds (checked every second,
# without the slow snapshot, so that the next step is not late: the
# invariants of its whole timeline are checked with a later step's).
s1_hold() {
	if [ "$2" -eq 0 ]; then
		name=$1 max=$3
		shift 3
		h0=$(date +%s) killed=""
		until "$@"; do
			if [ "$(($(date +%s) - h0))" -ge "$max" ]; then
				snapshot
				$CHECK settled -v "$tmp/snap" >"$tmp/unsettled" || true
				ledger not-converged "step $name" "step $name was not done within ${max}s: $(sed 's/^ *unsettled: //' "$tmp/unsettled" | head -n 3 | tr '\n' ';') (waiting for: $*)"
				break
			fi
			s1_chaos_tick
			sleep 1
		done
		echo "  step done after $(($(date +%s) - h0))s (at $(date -u +%H:%M:%S))${killed:+; killed:$killed}"
		[ ! -s "$tmp/kills" ] || { cat "$tmp/kills"; : >"$tmp/kills"; }
		return 0
	fi
	name=$1 plan_end=$((plan_end + $2)) max=$3
	shift 3
	h0=$(date +%s) killed="" checked=false
	while :; do
		el=$(($(date +%s) - h0))
		if ! $checked && "$@" && s1_settled; then
			echo "  converged in ${el}s (at $(date -u +%H:%M:%S))"
			s1_check "$name"
			checked=true
		fi
		$checked && [ "$(date +%s)" -ge "$plan_end" ] && break
		if ! $checked && [ "$el" -ge "$max" ]; then
			$CHECK settled -v "$tmp/snap" >"$tmp/unsettled" || true
			ledger not-converged "step $name" "step $name did not converge within ${max}s: $(sed 's/^ *unsettled: //' "$tmp/unsettled" | head -n 3 | tr '\n' ';') (waiting for: $*)"
			s1_check "$name"
			break
		fi
		s1_chaos_tick
		sleep 1
	done
	echo "  step done after $(($(date +%s) - h0))s${killed:+; killed:$killed}"
	[ ! -s "$tmp/kills" ] || { cat "$tmp/kills"; : >"$tmp/kills"; }
}
s1_step() { # REPLICAS NAME
	s1_step_faults
	s1_set_faults "$burst"
	echo "step $2: scale to $1${FAULT_FREE:+ (fault-free)} at $(date -u +%H:%M:%S)"
	kc scale deployment inflate --replicas "$1" >/dev/null
}

s1_play() {
	[ -n "$FAULT_FREE" ] || snapshot_tick=s1_chaos_tick
	s1_workload
	start_s1=$(date +%s) plan_end=$(date +%s)
	s1_step 5 "0→5"
	s1_hold "0→5" $((2 * HOLD)) "$SETTLE" s1_pods_bound 5
	s1_step 20 "5→20"
	s1_hold "5→20" $((2 * HOLD)) "$SETTLE" s1_pods_bound 20
	peak=$(s1_claims)
	echo "  the peak's NodeClaims: $(echo $peak)"
	s1_step 10 "20→10"
	s1_hold "20→10" "$HOLD" "$SETTLE" s1_pods_bound 10
	s1_step 5 "10→5"
	s1_hold "10→5 (expiry)" 0 $((S1_EXPIRE_TTL + SETTLE)) s1_expired
	s1_step 0 "5→0"
	s1_hold "5→0" 0 "$SETTLE" s1_nothing_left
	snapshot_tick=: # the kills and bursts stop here
	if [ -z "$FAULT_FREE" ]; then
		clear_faults
		echo "  kills and faults stop; every instance must be gone within the garbage-collection interval (${GC_PERIOD}s + ${GC_GRACE}s)"
		sleep $((GC_PERIOD + GC_GRACE))
	fi
	snapshot
	s1_check "5→0"
	$CHECK zero "$tmp/snap" --ledger "$tmp/ledger" | sed 's/^/  /' || true
	echo "S1 script: $(($(date +%s) - start_s1))s"
	if [ -n "$FAULT_FREE" ]; then
		python3 - "$tmp/snap/aws-status.json" >"$KANNA_CHAOS_BASELINE_OUT" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("cost %.6f" % s["totalCost"])
for i in s["instances"]:
    print("offering %s,%s,%s" % (i["instanceType"], i["zone"], i["capacityType"]))
    print("price %s,%s,%s %.6f" % (i["instanceType"], i["zone"], i["capacityType"], i["pricePerHour"]))
PY
		echo "cost $(sed -n 's/^cost //p' "$KANNA_CHAOS_BASELINE_OUT")"
	elif [ -n "$baseline_cost" ]; then
		$CHECK cost "$tmp/snap" --baseline "$baseline_cost" --prices "$tmp/baseline" \
			--ledger "$tmp/ledger" || true
	else
		echo "cost: not compared with a fault-free run (KANNA_CHAOS_COST=skip)"
	fi
}
