# Shared by the end-to-end scripts: a temporary directory, kanna-sim and
# daemons started in it and always stopped, and assertions that fail loudly.
# Source it after setting BUILDDIR; call e2e_init first.

# python3 is Debian's (./quickstart deps installs it) whatever comes first on
# PATH: a pyenv shim there takes ~2 s and 0.6 s of CPU to start, and a test
# starts python3 dozens of times (instance states, timelines, checks).
if [ -x /usr/bin/python3 ]; then
	python3() { /usr/bin/python3 "$@"; }
fi

e2e_init() {
	tmp=$(mktemp -d)
	e2e_t0=$(date +%s)
	e2e_pids=""
	trap e2e_cleanup EXIT INT TERM
}

e2e_cleanup() {
	local rc=$? bad
	trap - EXIT INT TERM
	for p in $e2e_pids; do
		kill "$p" 2>/dev/null || true
	done
	for p in $e2e_pids; do
		wait "$p" 2>/dev/null || true
	done
	# A sanitizer's report in any daemon's log (leaks are reported at exit,
	# after SIGTERM) fails the test, whatever it checked.
	bad=$(grep -l "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$tmp"/*.log 2>/dev/null || true)
	if [ -n "$bad" ]; then
		for log in $bad; do
			echo "FAIL: a sanitizer reported in $(basename "$log"):" >&2
			grep -A 30 "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$log" | head -n 40 >&2
		done
		rc=1
	fi
	# What the script cost: wall time, and CPU of the script and all it
	# ran and waited for (the daemons included), which ./quickstart check
	# sums up to show where check time goes.
	# (times in this shell: in a pipe it would time a subshell).
	times >"$tmp/.times"
	echo "e2e-time: $(($(date +%s) - ${e2e_t0:-$(date +%s)})) s wall, $(awk '{ for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); c += t[1] * 60 + t[2] } } END { printf "%.1f", c }' "$tmp/.times") s CPU" >&2
	# KANNA_E2E_KEEP=1 keeps the logs and the sim's state for a look.
	if [ -n "${KANNA_E2E_KEEP:-}" ]; then
		echo "kept $tmp"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}

fail() {
	echo "FAIL: $*" >&2
	for log in "$tmp"/*.log; do
		[ -f "$log" ] || continue
		echo "--- $(basename "$log") (last lines):" >&2
		tail -n 15 "$log" >&2
	done
	echo "FAIL: $*" >&2 # again, below the logs
	exit 1
}

ok() { echo "ok - $*"; }

expect_eq() { # what got want
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
	ok "$1"
}

# start NAME COMMAND...: runs COMMAND in the background, output in $tmp/NAME.log.
start() {
	name=$1
	shift
	"$@" >"$tmp/$name.log" 2>&1 &
	e2e_pids="$e2e_pids $!"
	eval "pid_$name=$!"
}

# Starts kanna-sim with its state in $tmp/state; exports KUBECONFIG.
start_sim() {
	start sim "$BUILDDIR/sim/kanna-sim" --state-dir "$tmp/state" "$@"
	i=0
	while [ ! -e "$tmp/state/ready" ]; do
		i=$((i + 1))
		[ $i -le 300 ] || fail "kanna-sim not ready after 30 s"
		sleep 0.1
	done
	export KUBECONFIG="$tmp/state/kubeconfig"
	mkdir -p "$tmp/run"
}

# v1beta1_era_crds DIR: DIR/crds holds the shipped CRDs as a cluster of
# Karpenter's v1beta1 era serves them: NodePools and EC2NodeClasses at
# v1beta1 only (the v1beta1 CRD files, their v1 version not served),
# NodeClaims at v1, which kanna writes. kanna-sim keeps each version's
# objects apart and converts none, and kanna reads v1 wherever it is
# served: beside a served v1, a v1beta1 NodePool would never be seen.
# Start kanna-sim with KANNA_DATADIR=DIR.
v1beta1_era_crds() {
	local f
	mkdir -p "$1/crds"
	for f in "$SRCDIR"/data/crds/*.yaml; do
		case ${f##*/} in
		karpenter.sh_nodepools.yaml | karpenter.k8s.aws_ec2nodeclasses.yaml) ;;
		*.v1beta1.yaml)
			awk '/^      name: v1$/ { v1 = 1 }
			     v1 && /^      served: true$/ { print "      served: false"; v1 = 0; next }
			     { print }' "$f" >"$1/crds/${f##*/}" ;;
		*) cp "$f" "$1/crds/" ;;
		esac
	done
}

# aws_faults JSON: replaces kanna-sim's AWS fault set (POST /_sim/faults on
# the AWS port; see sim/aws.h for the keys).
aws_faults() {
	curl -sS -X POST "$AWS_ENDPOINT_URL/_sim/faults" -H 'Content-Type: application/json' -d "$1" >/dev/null
}

# sim_faults JSON: replaces kanna-sim's Kubernetes-side fault set (POST
# /_sim/faults on the API port, with the token; see sim/k8s-api.h).
sim_faults() {
	curl -sS --cacert "$tmp/state/ca.crt" -H "Authorization: Bearer $(cat "$tmp/state/token")" \
		-H 'Content-Type: application/json' -X POST \
		"$(sed -n 's/.*"server": *"\([^"]*\)".*/\1/p' "$KUBECONFIG")/_sim/faults" -d "$1" >/dev/null
}

# scaled N: N × KANNA_E2E_SCALE / 100 (at least 1). Under the sanitizers,
# where every process runs a few times slower, ./quickstart check shrinks
# the bulk (thousands of churned objects) that only makes a test long; the
# behaviour checked stays the same.
scaled() {
	local n=$(($1 * ${KANNA_E2E_SCALE:-100} / 100))
	[ "$n" -ge 1 ] || n=1
	echo "$n"
}

# k8s_status: kanna-sim's Kubernetes-side /_sim/status (JSON: counts and
# the timeline of nodes, pods and NodeClaims).
k8s_status() {
	curl -sS --cacert "$tmp/state/ca.crt" -H "Authorization: Bearer $(cat "$tmp/state/token")" \
		"$(sed -n 's/.*"server": *"\([^"]*\)".*/\1/p' "$KUBECONFIG")/_sim/status"
}

# wait_for WHAT SECONDS COMMAND...: retries COMMAND until it succeeds, for
# SECONDS of wall time (a slow COMMAND on a loaded machine does not stretch
# the deadline). Its variables are local: callers loop with their own.
# Waits of 3 s or more are noted in the test's log, to show where its time goes.
wait_for() {
	local what=$1 t0=$(date +%s) secs=$2 deadline pause=0.1
	deadline=$((t0 + secs))
	shift 2
	# The pause doubles up to 0.8 s: a kubectl costs ~0.2 s of CPU, and
	# polling every 0.1 s took most of a core per waiting test from the
	# daemons under test.
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || fail "timed out after ${secs}s waiting for $what"
		sleep "$pause"
		case $pause in 0.1) pause=0.2 ;; 0.2) pause=0.4 ;; *) pause=0.8 ;; esac
	done
	[ $(($(date +%s) - t0)) -lt 3 ] || echo "  (waited $(($(date +%s) - t0)) s for $what)"
}

# --- the whole scale-up path (watcher → scheduler → launcher) ---------------

# start_daemons [LAUNCHER FLAGS...]: watcher, one scheduler shard and the
# launcher against the running kanna-sim (its aws.env exported).
start_daemons() {
	set -a
	. "$tmp/state/aws.env"
	set +a
	start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
		--health-port 0 --leader-elect=false --announce-interval 500ms
	start scheduler "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" \
		--metrics-port 0 --health-port 0 --leader-elect=false --batch-idle-duration 500ms \
		--plan-timeout 30s
	start_launcher "$@"
}

# start_launcher [FLAGS...]: (re)starts kanna-launcher; its log is appended.
start_launcher() {
	"$BUILDDIR/launcher/kanna-launcher" --runtime-dir "$tmp/run" --metrics-port 0 \
		--health-port 0 --leader-elect=false --reconcile-period 1s "$@" >>"$tmp/launcher.log" 2>&1 &
	pid_launcher=$!
	e2e_pids="$e2e_pids $pid_launcher"
}

# placed APP=N...: exactly N pods of each APP (label app), every one bound
# (one kubectl); $tmp/placed holds "APP POD NODE" lines (no NODE: unbound).
placed() {
	local want
	kubectl get pods -o jsonpath='{range .items[*]}{.metadata.labels.app} {.metadata.name} {.spec.nodeName}{"\n"}{end}' >"$tmp/placed"
	for want in "$@"; do
		[ "$(grep -c "^${want%=*} [^ ]* [^ ]" "$tmp/placed")" = "${want#*=}" ] || return 1
		[ "$(grep -c "^${want%=*} " "$tmp/placed")" = "${want#*=}" ] || return 1
	done
}
nodes_of_app() { # APP: its pods' nodes as placed last saw them, sorted, once each
	awk -v a="$1" '$1 == a && NF == 3 { print $3 }' "$tmp/placed" | sort -u
}

# intent_deployment NAME [CPU [MEMORY]]: the YAML of a Deployment of one pod
# (app=NAME, 1 CPU and 256Mi unless given) that selects the nodes labelled
# intent=NAME, as a NodePool's template labels them.
intent_deployment() {
	cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      terminationGracePeriodSeconds: 0
      nodeSelector: {intent: $1}
      containers:
      - {name: c, image: pause, resources: {requests: {cpu: "${2:-1}", memory: ${3:-256Mi}}}}
YAML
}

# Lines "instance ID state=… type=… zone=… capacity=… price=… nodeclaim=…"
# from the sim (python3, not a test program: the demo uses this too).
sim_instances() {
	curl -sS "$AWS_ENDPOINT_URL/_sim/status" | python3 -c '
import json, sys
for i in json.load(sys.stdin).get("instances", []):
    print("instance %s state=%s type=%s zone=%s capacity=%s price=%.4f nodeclaim=%s" % (
        i["instanceId"], i["state"], i["instanceType"], i["zone"], i["capacityType"],
        i.get("pricePerHour", 0), (i.get("tags") or {}).get("karpenter.sh/nodeclaim", "-")))'
}

# Number of pods of a label selector that are bound to a node.
bound_pods() {
	kubectl get pods -l "$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}

# Fails unless every NodeClaim has exactly one live instance and every live
# instance a NodeClaim (nothing leaked, nothing launched twice). An instance
# of a batched CreateFleet gets its karpenter.sh/nodeclaim tag once its
# NodeClaim is bound (CreateTags, launcher/batch.c): up to 30 s for that.
claims_match_instances() {
	claims=$(kubectl get nodeclaims -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
	live=$(sim_instances | grep -E 'state=(pending|running)' | sed 's/.*nodeclaim=//' | sort)
	[ "$claims" = "$live" ]
}
expect_one_instance_per_nodeclaim() {
	local t0
	t0=$(date +%s)
	until claims_match_instances; do
		[ $(($(date +%s) - t0)) -lt 30 ] ||
			fail "NodeClaims and live instances differ: claims=[$claims] instances=[$live]"
		sleep 1
	done
	ok "$1: one instance per NodeClaim ($(echo "$claims" | grep -c .) of each)"
}

# --- the removal side (kanna-reaper) -----------------------------------------

# start_reaper [FLAGS...]: kanna-reaper against the running kanna-sim, its
# log appended to $tmp/reaper.log (a restart keeps the earlier lines).
start_reaper() {
	"$BUILDDIR/reaper/kanna-reaper" --runtime-dir "$tmp/run" --metrics-port 0 --health-port 0 \
		--leader-elect=false --reconcile-period 500ms --log-level debug "$@" >>"$tmp/reaper.log" 2>&1 &
	pid_reaper=$!
	e2e_pids="$e2e_pids $pid_reaper"
}

claims_of() { # NODEPOOL: its NodeClaims, one a line
	kubectl get nodeclaims -l "karpenter.sh/nodepool=$1" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'
}
node_of() { # NODECLAIM
	kubectl get nodeclaim "$1" -o jsonpath='{.status.nodeName}'
}
instance_of() { # NODECLAIM
	kubectl get nodeclaim "$1" -o jsonpath='{.status.providerID}' | sed 's|.*/||'
}
instance_state() { # ID: as the sim has it
	sim_instances | sed -n "s/^instance $1 state=\([^ ]*\) .*/\1/p"
}
on_its_way_out() { # ID
	instance_state "$1" | grep -qE 'shutting-down|terminated'
}
gone() { # KIND NAME
	! kubectl get "$1" "$2" >/dev/null 2>&1
}
node_ready() { # NODE
	kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -qx True
}
terminations() { # ID: how often the sim saw it terminated (its AWS timeline)
	curl -sS "$AWS_ENDPOINT_URL/_sim/status" | python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)["timeline"]
          if e["event"] == "terminate" and e["detail"].split(" ")[0] == sys.argv[1]))' "$1"
}
# Fails unless every instance the sim saw terminated was terminated once.
expect_each_terminated_once() {
	local id n=0
	for id in $(sim_instances | sed -n 's/^instance \([^ ]*\) state=\(shutting-down\|terminated\) .*/\1/p'); do
		[ "$(terminations "$id")" = 1 ] || fail "instance $id terminated $(terminations "$id") times"
		n=$((n + 1))
	done
	ok "every instance terminated by one call ($n)"
}
