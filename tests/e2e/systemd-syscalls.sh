#!/bin/sh
# The hardening drop-in's SystemCallFilter against the daemons for real
# (issue 20): every system call each of the four daemons makes — libzmq's
# I/O threads, libmicrohttpd's listeners and curl's threaded resolver
# included — while a deployment scales up on kanna-sim, its pods are
# bound, a NodeClaim is deleted (drain, eviction, termination) and the
# daemons stop on SIGTERM, recorded with strace, lies inside
# @system-service minus @privileged and @resources (and the calls systemd
# always allows, @default). A call outside would fail with EPERM under the
# unit. Skipped in a sanitizer build (the sanitizers' own calls are not
# the daemons') and where strace or systemd-analyze is absent.
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"

for t in strace systemd-analyze kubectl; do
	command -v $t >/dev/null 2>&1 || { echo "SKIP: no $t (./quickstart deps installs it)"; exit 77; }
done
if grep -q __asan_init "$BUILDDIR/launcher/kanna-launcher"; then
	echo "SKIP: a sanitizer build (the sanitizers' own system calls are not the daemons')"
	exit 77
fi
drop_in=$SRCDIR/systemd/hardening.conf

# The filter, from the drop-in itself: its SystemCallFilter= lines,
# each group expanded by systemd-analyze.
expand() ( # GROUP-OR-CALL...: one system call a line (a subshell: it recurses)
	for g in "$@"; do
		case $g in
		@*) expand $(systemd-analyze syscall-filter "$g" | sed -n 's/^ *\([@a-z0-9_-]*\)$/\1/p' | grep -vx "$g") ;;
		*) echo "$g" ;;
		esac
	done
)
e2e_init
# As systemd reads the lines: the first (an allow list) sets, each later
# one removes (~) or adds; @default is always allowed.
grep '^SystemCallFilter=' "$drop_in" | sed 's/^SystemCallFilter=//' >"$tmp/filter-lines"
[ "$(grep -c . "$tmp/filter-lines")" -ge 2 ] && ! head -n 1 "$tmp/filter-lines" | grep -q '^~' ||
	fail "no SystemCallFilter= allow list in $drop_in"
expand @default | sort -u >"$tmp/permitted"
while read -r line; do
	case $line in
	~*)
		# shellcheck disable=SC2086
		expand ${line#\~} | sort -u >"$tmp/lines"
		comm -23 "$tmp/permitted" "$tmp/lines" >"$tmp/next"
		;;
	*)
		# shellcheck disable=SC2086
		expand $line | sort -u - "$tmp/permitted" >"$tmp/next"
		;;
	esac
	mv "$tmp/next" "$tmp/permitted"
done <"$tmp/filter-lines"
[ "$(grep -c . "$tmp/permitted")" -gt 100 ] || fail "the filter expands to $(grep -c . "$tmp/permitted") calls"

start_sim
set -a
. "$tmp/state/aws.env"
set +a
# traced NAME BINARY FLAGS...: the daemon under strace -f -c (a summary of
# every thread's calls, written when it exits).
traced() {
	n=$1
	shift
	start "$n" strace -f -qq -c -o "$tmp/calls-$n" "$@" --runtime-dir "$tmp/run" --metrics-port 0 \
		--health-port 0 --leader-elect=false
}
traced watcher "$BUILDDIR/watcher/kanna-watcher" --announce-interval 500ms
traced scheduler "$BUILDDIR/scheduler/kanna-scheduler" --batch-idle-duration 500ms
traced launcher "$BUILDDIR/launcher/kanna-launcher" --reconcile-period 1s
traced reaper "$BUILDDIR/reaper/kanna-reaper" --reconcile-period 500ms
wait_for "the launcher to take plans" 60 grep -q "taking launch plans" "$tmp/launcher.log"
wait_for "the reaper" 60 grep -q "reaping for cluster" "$tmp/reaper.log"

kubectl apply -f "$SRCDIR/examples/s5-inflate.yaml" >/dev/null
kubectl scale deployment inflate --replicas 3 >/dev/null
bound() { [ "$(kubectl get pods -l app=inflate -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c .)" -eq 3 ]; }
wait_for "3 pods bound" 90 bound
claim=$(kubectl get nodeclaims -o jsonpath='{.items[0].metadata.name}')
kubectl delete nodeclaim "$claim" --wait=false >/dev/null
wait_for "NodeClaim $claim gone (drained, evicted, terminated)" 120 sh -c "! kubectl get nodeclaim $claim >/dev/null 2>&1"
wait_for "3 pods bound again" 90 bound
ok "scale-up, binding, a NodeClaim deleted and replaced, under strace"

# SIGTERM to each daemon (strace's child), then strace writes its summary.
for n in watcher scheduler launcher reaper; do
	eval "sp=\$pid_$n"
	dp=$(pgrep -P "$sp" | head -n 1)
	[ -n "$dp" ] || fail "no $n under strace (pid $sp)"
	kill -TERM "$dp"
done
for n in watcher scheduler launcher reaper; do
	eval "sp=\$pid_$n"
	wait "$sp" || fail "kanna-$n under strace exited $?"
done

bad=0
for n in watcher scheduler launcher reaper; do
	# Rows of the summary table: the last column, not the "total" row.
	awk '/^-----/ { rows = !rows; next } rows && $NF != "total" { print $NF }' "$tmp/calls-$n" |
		sort -u >"$tmp/used-$n"
	[ "$(grep -c . "$tmp/used-$n")" -gt 20 ] || fail "strace recorded $(grep -c . "$tmp/used-$n") calls for $n"
	outside=$(comm -23 "$tmp/used-$n" "$tmp/permitted" | tr '\n' ' ')
	if [ -n "$outside" ]; then
		echo "FAIL: kanna-$n calls outside the unit's SystemCallFilter: $outside" >&2
		bad=1
	else
		ok "kanna-$n: all $(grep -c . "$tmp/used-$n") system calls it made are inside the filter"
	fi
done
[ $bad -eq 0 ] || fail "system calls outside the filter"
