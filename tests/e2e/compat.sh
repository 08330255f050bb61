#!/bin/bash
# End-to-end compatibility (issue 16's measure): Karpenter's published
# example manifests (tests/compat/upstream: v1, v1beta1 of v0.37, v1alpha5
# of v0.31, copied with their source and licence) applied to kanna-sim with
# real kubectl, one pod for each pool, and what kanna does with each —
# the API server's verdict, the conditions, what it launched — compared
# with tests/compat/expected.txt (upstream's behaviour, and every exception
# with its reason). Two clusters, as the versions were served: one of
# Karpenter v1 (the v1 examples), one of the v0.32–v0.37 migration era
# (v1beta1 NodePools beside v1alpha5 Provisioners).
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
command -v kubectl >/dev/null 2>&1 || { echo "SKIP: no kubectl on PATH (./quickstart deps)"; exit 77; }
/usr/bin/python3 -c 'import yaml' 2>/dev/null || { echo "SKIP: no python3-yaml (./quickstart deps)"; exit 77; }

cluster() { # NAME VERSIONS...: a sim and the daemons, the examples of VERSIONS, then all stopped
	local c=$1 pids_before=$e2e_pids
	shift
	mkdir -p "$tmp/$c"
	if [ -n "${datadir:-}" ]; then
		KANNA_DATADIR=$datadir start "sim_$c" "$BUILDDIR/sim/kanna-sim" --state-dir "$tmp/$c/state"
	else
		start "sim_$c" "$BUILDDIR/sim/kanna-sim" --state-dir "$tmp/$c/state"
	fi
	wait_for "kanna-sim ($c)" 120 test -e "$tmp/$c/state/ready"
	export KUBECONFIG="$tmp/$c/state/kubeconfig"
	(
		set -a
		. "$tmp/$c/state/aws.env"
		set +a
		mkdir -p "$tmp/$c/run"
		common=(--runtime-dir "$tmp/$c/run" --metrics-port 0 --health-port 0 --leader-elect=false)
		"$BUILDDIR/watcher/kanna-watcher" "${common[@]}" --announce-interval 500ms >"$tmp/watcher-$c.log" 2>&1 &
		"$BUILDDIR/scheduler/kanna-scheduler" "${common[@]}" --batch-idle-duration 500ms >"$tmp/scheduler-$c.log" 2>&1 &
		"$BUILDDIR/launcher/kanna-launcher" "${common[@]}" --reconcile-period 1s \
			--default-instance-profile KarpenterNodeInstanceProfile-kanna >"$tmp/launcher-$c.log" 2>&1 &
		trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT
		/usr/bin/python3 "$SRCDIR/tests/compat/compat.py" "$SRCDIR" "$tmp/compat-$c.json" "$@"
	) || fail "the compatibility driver failed on the $c cluster"
	kill "$(eval echo "\$pid_sim_$c")"
	wait "$(eval echo "\$pid_sim_$c")" 2>/dev/null || true
}

e2e_init
cluster v1 v1
v1beta1_era_crds "$tmp/data"
datadir="$tmp/data" cluster v1beta1 v1beta1 v1alpha5
/usr/bin/python3 "$SRCDIR/tests/compat/compare.py" "$SRCDIR/tests/compat/expected.txt" "$tmp"/compat-*.json ||
	fail "kanna's handling of Karpenter's examples differs from tests/compat/expected.txt (above)"
ok "Karpenter's examples: as tests/compat/expected.txt says"
