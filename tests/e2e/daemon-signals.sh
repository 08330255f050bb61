#!/bin/sh
# End-to-end: the daemons under their supervisor. With leader election on
# and the Lease held by another replica (another leader-election-identity),
# a standby watcher, launcher and reaper each report READY=1 with
# STATUS=standby… (systemd's Type=notify kills a unit that never does) and
# do no work; a scheduler shard does not elect and works beside another. kanna-scheduler applies a
# changed batch window on SIGHUP, refuses a reload that changes a key
# needing a restart (keeping its configuration), and stops cleanly on
# SIGTERM. Every daemon, leader, standby or working alone with its metrics
# and health listeners up, exits 0 on SIGTERM (in a sanitizer build:
# without a use-after-free, double free or leak on the way out) and starts
# without libmicrohttpd's warning about the order of its options.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
PROBE="$BUILDDIR/tests/e2e/kanna-probe"

e2e_init
start_sim
set -a
. "$tmp/state/aws.env"
set +a

# leader_and_standby WHO BINARY LEADER-LINE WORK-LINE [FLAGS...]: a leader,
# then a standby whose sd_notify messages kanna-probe collects. (start()
# sets $name, so this uses $who.)
leader_and_standby() {
	who=$1 bin=$2 leading=$3 working=$4
	shift 4
	mkdir -p "$tmp/run-$who-leader" "$tmp/run-$who-standby"
	start "${who}_leader" "$bin" --runtime-dir "$tmp/run-$who-leader" --metrics-port 0 \
		--health-port 0 --leader-elect=true --leader-election-identity e2e-leader "$@"
	wait_for "the $who leader to acquire its lease" 60 grep -q "$leading" "$tmp/${who}_leader.log"
	"$PROBE" notify --socket "$tmp/notify-$who" --timeout 60 >"$tmp/notify-$who.txt" &
	probe=$!
	wait_for "the notify socket" 10 test -S "$tmp/notify-$who"
	start "${who}_standby" env NOTIFY_SOCKET="$tmp/notify-$who" "$bin" \
		--runtime-dir "$tmp/run-$who-standby" --metrics-port 0 --health-port 0 --leader-elect=true \
		--leader-election-identity e2e-standby "$@"
	wait "$probe" || fail "no READY=1 from the standby $who: $(cat "$tmp/notify-$who.txt")"
	grep -q "READY=1.*STATUS=standby: waiting to acquire lease" "$tmp/notify-$who.txt" ||
		fail "standby $who notified $(cat "$tmp/notify-$who.txt")"
	wait_for "the standby $who to see the lease held" 30 grep -q "is held by" "$tmp/${who}_standby.log"
	if grep -q "$working" "$tmp/${who}_standby.log"; then
		fail "the standby $who works: $(cat "$tmp/${who}_standby.log")"
	fi
	ok "a standby $who reports READY=1 with STATUS=standby and does no work"
}

leader_and_standby watcher "$BUILDDIR/watcher/kanna-watcher" "cluster state synced" "watching " \
	--announce-interval 1s
leader_and_standby launcher "$BUILDDIR/launcher/kanna-launcher" "acquired lease kanna-leader-election" \
	"acquired lease kanna-leader-election"
leader_and_standby reaper "$BUILDDIR/reaper/kanna-reaper" "acquired lease kanna-leader-election" \
	"reaping for cluster"
# Two scheduler shards 0 with leader election on, each in its own runtime
# directory: both work at once, neither touches a Lease.
for role in leader standby; do
	mkdir -p "$tmp/run-scheduler-$role"
	start "scheduler_$role" "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run-scheduler-$role" \
		--metrics-port 0 --health-port 0 --leader-elect=true
done
for role in leader standby; do
	wait_for "scheduler $role to work" 60 grep -q "scheduling shard 0 of 1" "$tmp/scheduler_$role.log"
	if grep -qiw "lease" "$tmp/scheduler_$role.log"; then
		fail "a scheduler shard elects: $(grep -iw lease "$tmp/scheduler_$role.log")"
	fi
done
ok "scheduler shards do not elect: two shards 0 work side by side"

# SIGHUP: the batch windows are reloadable.
cat >"$tmp/kanna.yaml" <<'YAML'
scheduler:
  batch-idle-duration: 500ms
  batch-max-duration: 10s
YAML
mkdir -p "$tmp/run"
start scheduler "$BUILDDIR/scheduler/kanna-scheduler" --config "$tmp/kanna.yaml" --runtime-dir "$tmp/run" \
	--metrics-port 0 --health-port 0 --leader-elect=false
wait_for "the scheduler" 30 grep -q "batch idle window 500ms, max window 10s" "$tmp/scheduler.log"
cat >"$tmp/kanna.yaml" <<'YAML'
scheduler:
  batch-idle-duration: 2s
  batch-max-duration: 20s
YAML
kill -HUP "$pid_scheduler"
wait_for "the reload" 30 grep -q "reloaded configuration: changed batch-idle-duration, batch-max-duration" \
	"$tmp/scheduler.log"
wait_for "the new windows" 10 grep -q "batch idle window 2s, max window 20s" "$tmp/scheduler.log"
ok "SIGHUP applies new batch windows"

# A reload that changes a key needing a restart changes nothing.
cat >"$tmp/kanna.yaml" <<'YAML'
scheduler:
  batch-idle-duration: 3s
  shard: 1/2
YAML
kill -HUP "$pid_scheduler"
wait_for "the refused reload" 30 grep -q "keeping the running configuration" "$tmp/scheduler.log"
grep "keeping the running configuration" "$tmp/scheduler.log" | grep -q "shard" ||
	fail "the refusal does not name the key"
if grep -q "batch idle window 3s" "$tmp/scheduler.log"; then
	fail "a refused reload applied part of the new configuration"
fi
ok "a reload changing the shard is refused whole"

kill -TERM "$pid_scheduler"
st=0
wait "$pid_scheduler" || st=$?
expect_eq "kanna-scheduler exits 0 on SIGTERM" "$st" "0"
grep -q "stopping: 0 pending pod(s)" "$tmp/scheduler.log" || fail "no stopping line"
ok "kanna-scheduler logs its shutdown"

# stop_with_sigterm NAME: SIGTERM to the daemon started as NAME; it must exit
# 0 (an abort is 134, a sanitizer's report 1 or 23).
stop_with_sigterm() {
	eval "p=\$pid_$1"
	kill -TERM "$p"
	st=0
	wait "$p" || st=$?
	[ "$st" = 0 ] || fail "$1 exited $st on SIGTERM: $(tail -n 40 "$tmp/$1.log")"
	ok "$1 exits 0 on SIGTERM"
}

# An unused loopback port for a daemon's metrics or health listener.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Each daemon working alone, its listeners up, then stopped.
mkdir -p "$tmp/run-alone"
for who in watcher scheduler launcher reaper; do
	start "${who}_alone" "$BUILDDIR/$who/kanna-$who" --runtime-dir "$tmp/run-alone" \
		--metrics-port "$(free_port)" --health-port "$(free_port)" --leader-elect=false
	case $who in
	watcher) working="cluster state synced" ;;
	scheduler) working="scheduling shard 0 of 1" ;;
	launcher) working="taking launch plans" ;;
	reaper) working="reaping for cluster" ;;
	esac
	wait_for "the $who to work" 60 grep -q "$working" "$tmp/${who}_alone.log"
done
for who in reaper launcher scheduler watcher; do
	stop_with_sigterm "${who}_alone"
done
for who in watcher scheduler launcher reaper; do
	stop_with_sigterm "${who}_standby"
	stop_with_sigterm "${who}_leader"
done

if grep -l "MHD_OPTION_EXTERNAL_LOGGER" "$tmp"/*.log; then
	fail "a daemon warned about libmicrohttpd's option order"
fi
ok "no daemon warns about libmicrohttpd's option order"

# A daemon that cannot start says what failed and why, and exits 1: its
# metrics port taken (by kanna-sim's AWS side), its kubeconfig missing.
taken=${AWS_ENDPOINT_URL##*:}
for who in watcher scheduler launcher reaper; do
	rc=0
	"$BUILDDIR/$who/kanna-$who" --runtime-dir "$tmp/run-alone" --metrics-port "$taken" --health-port 0 \
		--leader-elect=false >"$tmp/$who-port.log" 2>&1 || rc=$?
	expect_eq "kanna-$who with its metrics port taken exits" "$rc" 1
	grep -q "Failed to serve metrics on 127.0.0.1 port $taken and health on port 0: Address already in use" \
		"$tmp/$who-port.log" || fail "kanna-$who did not say why it stopped: $(cat "$tmp/$who-port.log")"
	rc=0
	"$BUILDDIR/$who/kanna-$who" --runtime-dir "$tmp/run-alone" --metrics-port 0 --health-port 0 \
		--kubeconfig "$tmp/no-such-kubeconfig" --leader-elect=false >"$tmp/$who-kubeconfig.log" 2>&1 || rc=$?
	expect_eq "kanna-$who without its kubeconfig exits" "$rc" 1
	grep -q "Failed to load Kubernetes configuration: .*no-such-kubeconfig" "$tmp/$who-kubeconfig.log" ||
		fail "kanna-$who did not say why it stopped: $(cat "$tmp/$who-kubeconfig.log")"
done
ok "a daemon that cannot start says what failed and why"
