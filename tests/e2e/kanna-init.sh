#!/bin/sh
# End-to-end: kanna-init as the daemons' PID 1 (issue 20). First with small
# fake daemons (shell scripts, through --daemon-dir): orphaned grandchildren
# are reaped, SIGTERM is forwarded and init exits 0, a daemon ignoring
# SIGTERM is SIGKILLed after the grace period (logged as signal KILL, exit
# 1), a crashing daemon is restarted after growing delays and one that
# keeps failing makes init exit 3; /healthz and /readyz answer; SIGHUP is
# forwarded. Then the real watcher, scheduler, launcher and reaper from one
# kanna.yaml against kanna-sim: a pending pod is bound, SIGTERM stops all
# four, init exits 0.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v curl >/dev/null 2>&1 || { echo "SKIP: no curl on PATH"; exit 77; }
command -v ps >/dev/null 2>&1 || { echo "SKIP: no ps on PATH"; exit 77; }

e2e_init
init="$BUILDDIR/init/kanna-init"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# fake DIR NAME BODY: a fake kanna-NAME in DIR that logs its starts and
# signals to $tmp/NAME.events, then runs BODY.
fake() {
	mkdir -p "$1"
	cat >"$1/kanna-$2" <<EOF
#!/bin/sh
echo "start \$(date +%s.%N) \$*" >>"$tmp/$2.events"
$3
EOF
	chmod +x "$1/kanna-$2"
}
# A daemon that exits 0 on SIGTERM, as every kanna daemon does.
well_behaved="trap 'echo term >>$tmp/\${0##*/kanna-}.events; exit 0' TERM INT
trap 'echo hup >>$tmp/\${0##*/kanna-}.events' HUP
while :; do sleep 0.2 & wait \$! || true; done"

# wait_init PID: waits for kanna-init (in this shell: a $(...) cannot
# wait for it), its exit status in $rc.
wait_init() {
	rc=0
	wait "$1" || rc=$?
}
healthz() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/$1"; }
zombies_under() { ps -o stat= --ppid "$1" | grep -c '^Z' || true; }

# --- 1. reaping, forwarding, probes ------------------------------------------
fake "$tmp/a" watcher "i=0
while [ \$i -lt 5 ]; do sh -c 'sleep 3 &'; i=\$((i + 1)); done
$well_behaved"
fake "$tmp/a" launcher "$well_behaved"
start init1 "$init" --config=/dev/null --daemon-dir="$tmp/a" --health-port="$port" \
	--metrics-port=0 --log-level=debug -- watcher launcher
wait_for "both fake daemons started" 10 sh -c "grep -q start $tmp/watcher.events && grep -q start $tmp/launcher.events"
wait_for "the orphans handed to kanna-init" 10 sh -c "[ \$(ps -o comm= --ppid $pid_init1 | grep -c '^sleep') = 5 ]"
ok "5 orphaned grandchildren were reparented to kanna-init (subreaper)"
wait_for "the orphans reaped" 10 sh -c "[ \$(grep -c 'reaped orphaned process' $tmp/init1.log) = 5 ]"
sleep 0.3
expect_eq "no zombie left under kanna-init" "$(zombies_under "$pid_init1")" 0
expect_eq "/healthz" "$(healthz healthz)" 200
wait_for "/readyz 200" 10 sh -c "[ \$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/readyz) = 200 ]"
ok "/readyz answers 200 with every daemon running"
grep -q "start .* --config=/dev/null" "$tmp/watcher.events" || fail "the daemon was not given --config=FILE"
ok "each daemon is started with kanna-init's --config"
kill -HUP "$pid_init1"
wait_for "SIGHUP forwarded" 10 grep -q '^hup' "$tmp/launcher.events"
grep -q "reloaded configuration" "$tmp/init1.log" || fail "kanna-init did not reload its own configuration on SIGHUP"
kill -0 "$pid_init1" || fail "kanna-init exited on SIGHUP"
ok "SIGHUP reloads kanna-init and reaches the daemons"
kill -TERM "$pid_init1"
wait_init "$pid_init1"
expect_eq "kanna-init exits 0 when every daemon exits 0 on SIGTERM" "$rc" 0
expect_eq "SIGTERM reached the watcher" "$(grep -c '^term' "$tmp/watcher.events")" 1
expect_eq "SIGTERM reached the launcher" "$(grep -c '^term' "$tmp/launcher.events")" 1
grep -q "kanna-launcher exited with status 0" "$tmp/init1.log" || fail "no exit status logged"
ok "each exit is logged with its status"

# --- 2. a daemon ignoring SIGTERM: SIGKILL after the grace period ------------
fake "$tmp/b" watcher "$well_behaved"
fake "$tmp/b" reaper 'trap "" TERM
while :; do sleep 0.2; done'
start init2 "$init" --config=/dev/null --daemon-dir="$tmp/b" --health-port=0 --metrics-port=0 \
	--grace-period=1500ms watcher reaper
wait_for "the stubborn daemon started" 10 grep -q start "$tmp/reaper.events"
sleep 0.3
t0=$(date +%s%N)
kill -TERM "$pid_init2"
wait_init "$pid_init2"
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "kanna-init exits 1 when a daemon had to be killed" "$rc" 1
[ "$elapsed_ms" -ge 1400 ] || fail "kanna-init killed after $elapsed_ms ms, before the 1.5 s grace period"
[ "$elapsed_ms" -lt 6000 ] || fail "kanna-init took $elapsed_ms ms to kill after a 1.5 s grace period"
ok "the stubborn daemon was killed after the grace period ($elapsed_ms ms)"
grep -q "kanna-reaper was killed by signal KILL" "$tmp/init2.log" || fail "the kill is not logged with signal KILL"
ok "the log names signal KILL"
grep -q "kanna-watcher exited with status 0" "$tmp/init2.log" || fail "the watcher did not exit 0"
ok "the well-behaved daemon exited 0 on the forwarded signal"

# --- 3. restart backoff, then give-up ------------------------------------------
rm -f "$tmp/watcher.events" "$tmp/launcher.events"
fake "$tmp/c" watcher "$well_behaved"
fake "$tmp/c" launcher 'exit 1'
start init3 "$init" --config=/dev/null --daemon-dir="$tmp/c" --health-port="$port" \
	--metrics-port=0 --restart-backoff-initial=200ms --restart-backoff-max=10s \
	--give-up-after=4 --give-up-window=1m watcher launcher
wait_for "/readyz naming the restarting daemon" 10 sh -c "curl -s http://127.0.0.1:$port/readyz | grep -q 'kanna-launcher restarting in'"
ok "/readyz is 503 and names the daemon in backoff"
wait_init "$pid_init3"
expect_eq "kanna-init exits 3 when a daemon keeps failing" "$rc" 3
expect_eq "starts: the first and 4 restarts" "$(grep -c '^start' "$tmp/launcher.events")" 5
# The gaps between starts: 200, 400, 800, 1600 ms, each at least 90 % of
# that (a late timer on a loaded machine only lengthens a gap), and the
# first well short of the last: the delay grew.
gaps=$(awk '/^start/ { if (prev) printf "%d ", ($2 - prev) * 1000; prev = $2 }' "$tmp/launcher.events")
echo "  restart gaps (ms): $gaps"
want=200
for g in $gaps; do
	[ "$g" -ge $((want * 9 / 10)) ] || fail "restart after $g ms, want at least $want ms (gaps: $gaps)"
	want=$((want * 2))
done
first=${gaps%% *}
[ "$first" -lt 1200 ] || fail "the first restart came after $first ms, want about 200 ms (gaps: $gaps)"
ok "restarts came after growing delays"
grep -q "kanna-launcher exited with status 1" "$tmp/init3.log" || fail "no exit status logged"
grep -q "kanna-launcher keeps failing" "$tmp/init3.log" || fail "the give-up is not logged"
expect_eq "the other daemon was stopped with SIGTERM" "$(grep -c '^term' "$tmp/watcher.events")" 1

# --- 4. the real daemons against kanna-sim -------------------------------------
if ! command -v kubectl >/dev/null 2>&1; then
	echo "SKIP (part 4): no kubectl on PATH"
	exit 0
fi
start_sim
set -a
. "$tmp/state/aws.env"
set +a
mkdir -p "$tmp/real"
for d in watcher scheduler launcher reaper; do
	ln -s "$BUILDDIR/$d/kanna-$d" "$tmp/real/kanna-$d"
done
cat >"$tmp/kanna.yaml" <<EOF
runtime-dir: $tmp/run
metrics-port: 0
health-port: 0
init:
  daemons: [watcher, scheduler, launcher, reaper]
  health-port: $port
  daemon-dir: $tmp/real
  grace-period: 20s
watcher:
  leader-elect: false
  announce-interval: 500ms
scheduler:
  leader-elect: false
  batch-idle-duration: 500ms
launcher:
  leader-elect: false
  reconcile-period: 1s
reaper:
  leader-elect: false
  reconcile-period: 500ms
EOF
start init4 "$init" --config="$tmp/kanna.yaml"
wait_for "the launcher to take plans" 30 sh -c "kill -0 $pid_init4 && grep -q 'taking launch plans' $tmp/init4.log || { kill -0 $pid_init4 || exit 0; exit 1; }"
kill -0 "$pid_init4" 2>/dev/null || fail "kanna-init exited early"
wait_for "/readyz 200 with the real daemons" 10 sh -c "[ \$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/readyz) = 200 ]"
ok "kanna-init runs watcher, scheduler, launcher and reaper from one kanna.yaml"
kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl scale deployment inflate --replicas 1 >/dev/null
wait_for "the pending pod bound" 60 sh -c "[ \$(kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) = 1 ]"
ok "a pending pod got a node and was bound"
kill -TERM "$pid_init4"
wait_init "$pid_init4"
expect_eq "kanna-init exits 0 after SIGTERM with the real daemons" "$rc" 0
for d in watcher scheduler launcher reaper; do
	grep -q "kanna-$d exited with status 0" "$tmp/init4.log" || fail "kanna-$d did not exit 0"
done
ok "all four daemons exited 0 on the forwarded SIGTERM"
