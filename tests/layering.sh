#!/bin/sh
# The include graph is the layering the tree shows (README, Layout):
#   common/  the runtime: includes common/ only;
#   proto/   the messages: common/ and proto/;
#   state/   state replication: common/, proto/ and state/;
#   decode/  Kubernetes JSON → proto: common/, proto/, state/, decode/;
#   model/   catalog, kubelet, requirements, cluster model, solver: those
#            below it (not decode/) and model/;
#   dump/    the cluster dump loader (--simulate, --what-if): everything
#            above and dump/;
#   a daemon directory: those and its own, never another daemon's — but for
#   the edges listed in KNOWN below. A new edge fails; a listed
#   one that is gone fails too, so the list only shrinks (it is empty:
#   every cross-daemon include fails).
set -eu
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$SRCDIR"
KNOWN=""

bad=0
edges() { # DIR: "DIR/ -> header" for each quoted include of a kanna header
	grep -ho '^#include "[a-z]*/[^"]*"' "$1"/*.c "$1"/*.h 2>/dev/null |
		sed 's/^#include "//; s/"$//' | sort -u | sed "s|^|$1/ -> |"
}
allowed() { # DIR ALLOWED-DIRS...: fails on an include outside them
	dir=$1
	shift
	for e in $(edges "$dir" | sed 's/ -> /:/'); do
		target=${e#*:}
		ok=false
		for a in "$@"; do
			case $target in "$a"/*) ok=true ;; esac
		done
		$ok && continue
		if ! printf '%s\n' "$KNOWN" | grep -qxF "$dir/ -> $target"; then
			echo "FAIL: $dir/ includes $target, across the layering"
			bad=1
		fi
	done
}
allowed common common
allowed proto common proto
allowed state common proto state
allowed decode common proto state decode
allowed model common proto state model
allowed dump common proto state decode model dump
for d in watcher scheduler launcher reaper; do
	allowed "$d" common proto state decode model dump "$d"
done
allowed sim common sim
allowed init common init
allowed tools common proto state tools
# The debt list only shrinks.
printf '%s\n' "$KNOWN" | grep . | while read -r edge; do
	dir=${edge%% *}
	edges "${dir%/}" | grep -qxF "$edge" || { echo "FAIL: '$edge' is gone: take it off KNOWN"; exit 1; }
done || bad=1
[ $bad -eq 0 ] || exit 1
echo "ok - the include graph follows the layering ($(printf '%s\n' "$KNOWN" | grep -c . || true) known cross-daemon edges left)"
