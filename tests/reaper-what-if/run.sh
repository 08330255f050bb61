#!/bin/sh
# kanna-reaper --what-if over the fixtures here, at a fixed time
# (2026-01-01T00:00:00Z): each NAME.yaml's table (and exit status) must be
# NAME.expected, and NAME.json.expected, when present, its --json output.
# KANNA_WHAT_IF_UPDATE=1 rewrites the expected files (then review the diff).
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
case $BUILDDIR in /*) ;; *) BUILDDIR=$(pwd)/$BUILDDIR ;; esac
reaper="$BUILDDIR/reaper/kanna-reaper"
NOW=1767225600
cd "$SRCDIR/tests/reaper-what-if"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
bad=0
check() { # EXPECTED ARGS...: the output of kanna-reaper ARGS and its exit status
	want=$1
	shift
	rc=0
	"$reaper" "$@" >"$tmp" 2>&1 || rc=$?
	echo "exit $rc" >>"$tmp"
	if [ "${KANNA_WHAT_IF_UPDATE:-}" = 1 ]; then
		cp "$tmp" "$want"
	elif diff -u "$want" "$tmp"; then
		echo "ok - $want"
	else
		echo "FAIL: $want"
		bad=1
	fi
}
for f in *.yaml; do
	name=${f%.yaml}
	check "$name.expected" --what-if "$f" --now "$NOW"
	[ ! -f "$name.json.expected" ] || check "$name.json.expected" --what-if "$f" --now "$NOW" --json
done
"$reaper" --help | grep -q -- "--what-if FILE" || { echo "FAIL: the daemon's --help does not name --what-if"; bad=1; }
"$reaper" --what-if x --help | grep -q -- "--now SECONDS" || { echo "FAIL: --what-if --help"; bad=1; }
exit $bad
