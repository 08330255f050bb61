# Shared by the end-to-end scripts: a temporary directory, kanna-sim and
# daemons started in it and always stopped, and assertions that fail loudly.
# Source it after setting BUILDDIR; call e2e_init first.

e2e_init() {
	tmp=$(mktemp -d)
	e2e_pids=""
	trap e2e_cleanup EXIT INT TERM
}

e2e_cleanup() {
	for p in $e2e_pids; do
		kill "$p" 2>/dev/null || true
	done
	for p in $e2e_pids; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}

fail() {
	echo "FAIL: $*" >&2
	for log in "$tmp"/*.log; do
		[ -f "$log" ] || continue
		echo "--- $(basename "$log") (last lines):" >&2
		tail -n 15 "$log" >&2
	done
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

# wait_for WHAT SECONDS COMMAND...: retries COMMAND until it succeeds.
wait_for() {
	what=$1
	secs=$2
	shift 2
	i=0
	until "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -le $((secs * 10)) ] || fail "timed out after ${secs}s waiting for $what"
		sleep 0.1
	done
}
