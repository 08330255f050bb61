#!/bin/sh
# End-to-end: daemons trust no peer (issue 19). A daemon whose runtime
# directory anyone may write refuses to start and says why. With the
# launcher and the reaper running as their own user (uid 65534 here) and
# the sockets' group configured, the sockets have the modes configured (0660 with the
# socket or tap group, 0600 without), not the umask's; a stranger who can
# reach the plans socket through its group is refused by the launcher's
# peer check (ZAP on SO_PEERCRED), logged and counted, while the scheduler
# (root) and the launcher's own connections to the watcher work, and a
# peer that is let in but says hello as the wrong role is refused too. The
# launcher and the reaper take their AWS keys out of their environment
# (none left in /proc/<pid>/environ) and are not dumpable (their /proc
# files belong to root, not to their user).
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
CONNECT="$BUILDDIR/tests/e2e/peer-connect"
# The launcher's user and group, and a stranger in the sockets' group.
LAUNCHER_UID=65534 SOCKET_GID=65534 STRANGER_UID=4242

e2e_init
start_sim
set -a
. "$tmp/state/aws.env"
set +a

# An unused loopback port for a daemon's metrics listener.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A runtime directory anyone may write: every daemon refuses it, exit 1.
mkdir -p "$tmp/open"
chmod 0777 "$tmp/open"
for who in watcher scheduler launcher reaper; do
	rc=0
	"$BUILDDIR/$who/kanna-$who" --runtime-dir "$tmp/open" --metrics-port 0 --health-port 0 \
		--leader-elect=false >"$tmp/$who-open.log" 2>&1 || rc=$?
	expect_eq "kanna-$who with a runtime directory of mode 0777 exits" "$rc" 1
	grep -q "Refusing to start: runtime directory $tmp/open has mode 0777, owner uid 0 gid 0" \
		"$tmp/$who-open.log" || fail "kanna-$who did not say why: $(cat "$tmp/$who-open.log")"
done
ok "a daemon refuses a runtime directory anyone may write, naming path, mode and owner"
# Group-writable is refused too, unless the group is the socket-group.
chmod 0770 "$tmp/open"
rc=0
"$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/open" --metrics-port 0 --health-port 0 \
	--leader-elect=false >"$tmp/watcher-group.log" 2>&1 || rc=$?
expect_eq "kanna-watcher with a group-writable runtime directory and no socket-group exits" "$rc" 1
grep -q "has mode 0770" "$tmp/watcher-group.log" || fail "no reason: $(cat "$tmp/watcher-group.log")"

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: the peer checks need root (to run the launcher and a stranger under other uids with setpriv)"
	exit 77
fi
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is not installed"; exit 77; }

# The runtime directory: root's, writable by the sockets' group (the
# launcher's); the launcher's kubeconfig its own.
chmod 0711 "$tmp"
chgrp "$SOCKET_GID" "$tmp/run"
chmod 0770 "$tmp/run"
cp "$KUBECONFIG" "$tmp/launcher-kubeconfig"
chown "$LAUNCHER_UID:$SOCKET_GID" "$tmp/launcher-kubeconfig"
chmod 0600 "$tmp/launcher-kubeconfig"

start watcher "$BUILDDIR/watcher/kanna-watcher" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --announce-interval 500ms --socket-group "$SOCKET_GID" \
	--peer-identities "launcher=$LAUNCHER_UID:$SOCKET_GID,reaper=$LAUNCHER_UID:$SOCKET_GID"
start scheduler "$BUILDDIR/scheduler/kanna-scheduler" --runtime-dir "$tmp/run" --metrics-port 0 \
	--health-port 0 --leader-elect=false --socket-group "$SOCKET_GID"
launcher_metrics=$(free_port)
start launcher setpriv --reuid "$LAUNCHER_UID" --regid "$SOCKET_GID" --clear-groups \
	"$BUILDDIR/launcher/kanna-launcher" --kubeconfig "$tmp/launcher-kubeconfig" \
	--runtime-dir "$tmp/run" --metrics-port "$launcher_metrics" --health-port 0 \
	--leader-elect=false --socket-group "$SOCKET_GID" --tap-group "$SOCKET_GID"
wait_for "the launcher (uid $LAUNCHER_UID) to sync from the watcher and take plans" 60 \
	grep -q "taking launch plans" "$tmp/launcher.log"
ok "the launcher under its own uid is admitted on the watcher's state sockets"
wait_for "the scheduler's connection to plans" 30 \
	grep -q "peer scheduler (pid $pid_scheduler, .*) connected on plans" "$tmp/launcher.log"
ok "the scheduler (root) is admitted on plans"

# The reaper under the same user: admitted on the watcher's state sockets.
start reaper setpriv --reuid "$LAUNCHER_UID" --regid "$SOCKET_GID" --clear-groups \
	"$BUILDDIR/reaper/kanna-reaper" --kubeconfig "$tmp/launcher-kubeconfig" \
	--runtime-dir "$tmp/run" --metrics-port 0 --health-port 0 --leader-elect=false \
	--socket-group "$SOCKET_GID"
wait_for "the reaper (uid $LAUNCHER_UID) to work" 60 grep -q "reaping for cluster" "$tmp/reaper.log"

# Modes and groups as configured, not the umask's.
mode_of() { stat -c '%a %u:%g' "$tmp/run/$1"; }
expect_eq "plans.sock (the launcher's, socket-group)" "$(mode_of plans.sock)" "660 $LAUNCHER_UID:$SOCKET_GID"
expect_eq "state.pub.sock (the watcher's, socket-group)" "$(mode_of state.pub.sock)" "660 0:$SOCKET_GID"
expect_eq "launcher.tap (tap-group)" "$(mode_of launcher.tap)" "660 $LAUNCHER_UID:$SOCKET_GID"
expect_eq "watcher.tap (no tap-group)" "$(mode_of watcher.tap)" "600 0:0"

# A stranger in the sockets' group: the file lets it connect, the launcher
# does not.
out=$(setpriv --reuid "$STRANGER_UID" --regid "$SOCKET_GID" --clear-groups \
	"$CONNECT" --runtime-dir "$tmp/run" --socket plans --timeout 10) || true
expect_eq "a stranger (uid $STRANGER_UID) connecting to plans is" "$out" "refused"
grep -q "refusing a connection on socket plans from uid $STRANGER_UID gid $SOCKET_GID pid [0-9]*: not an identity allowed" \
	"$tmp/launcher.log" || fail "the refusal is not logged"
ok "the refusal names the socket and the peer's uid, gid and pid"
refused=$(curl -sS "http://127.0.0.1:$launcher_metrics/metrics" |
	sed -n 's/^kanna_socket_peers_refused_total{socket="plans",reason="identity"} //p')
[ "${refused:-0}" -ge 1 ] || fail "the refusal is not counted (kanna_socket_peers_refused_total: '$refused')"
ok "the refusal is counted in kanna_socket_peers_refused_total ($refused)"
out=$(setpriv --reuid "$STRANGER_UID" --regid "$SOCKET_GID" --clear-groups \
	"$CONNECT" --runtime-dir "$tmp/run" --socket state.pub --timeout 10) || true
expect_eq "a stranger connecting to the watcher's state.pub is" "$out" "refused"

# Root is let in, but a hello from the wrong role is refused by name.
out=$("$CONNECT" --runtime-dir "$tmp/run" --socket plans --hello watcher --timeout 10) || true
expect_eq "root connecting to plans is" "$out" "admitted"
wait_for "the launcher to refuse a watcher's hello on plans" 10 \
	grep -q "refusing peer watcher pid [0-9]* on plans" "$tmp/launcher.log"
ok "a hello from a role that does not belong on plans is refused"

# The launcher's secrets.
wait_for "the launcher's AWS credentials" 30 grep -q "AWS credentials from environment accepted" \
	"$tmp/launcher.log"
if tr '\0' '\n' <"/proc/$pid_launcher/environ" | grep -q "^AWS_SECRET_ACCESS_KEY=\|^AWS_ACCESS_KEY_ID="; then
	fail "the launcher's /proc/<pid>/environ still shows its AWS keys"
fi
if tr '\0' '\n' <"/proc/$pid_launcher/environ" | grep -qF "$AWS_SECRET_ACCESS_KEY"; then
	fail "the launcher's /proc/<pid>/environ still holds the secret access key's value"
fi
ok "no AWS key is left in the launcher's /proc/<pid>/environ"
# A non-dumpable process's /proc files belong to root, not to its user.
expect_eq "owner of the launcher's /proc/<pid>/environ (not dumpable)" \
	"$(stat -c %u "/proc/$pid_launcher/environ")" 0
expect_eq "the launcher's uid" "$(sed -n 's/^Uid:\t\([0-9]*\).*/\1/p' "/proc/$pid_launcher/status")" \
	"$LAUNCHER_UID"
wait_for "the reaper's AWS credentials" 30 grep -q "AWS credentials from environment accepted" \
	"$tmp/reaper.log"
if tr '\0' '\n' <"/proc/$pid_reaper/environ" | grep -qF "$AWS_SECRET_ACCESS_KEY"; then
	fail "the reaper's /proc/<pid>/environ still holds the secret access key"
fi
expect_eq "owner of the reaper's /proc/<pid>/environ (not dumpable)" \
	"$(stat -c %u "/proc/$pid_reaper/environ")" 0
