#!/bin/sh
# End-to-end: kanna-sim driven by a second client besides kubectl and kanna's
# own: Kubernetes' official Python client (Debian's python3-kubernetes,
# installed by ./quickstart deps). CRUD, 409 on a stale update, label and
# field selectors, paging, a watch from a resourceVersion (the client sends
# watch=True), finalizers, a Deployment's pods turning Unschedulable, and a
# karpenter.sh/v1 NodePool round trip (tests/e2e/sim-python.py).
set -eu
BUILDDIR=${KANNA_BUILDDIR:-$(pwd)}
SRCDIR=${KANNA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRCDIR/tests/e2e/lib.sh"
# Debian's module is for Debian's interpreter, whatever python3 is first on PATH.
PY=
for p in /usr/bin/python3 python3; do
	if "$p" -c 'import kubernetes' 2>/dev/null; then
		PY=$p
		break
	fi
done
[ -n "$PY" ] || { echo "SKIP: no Python kubernetes client (./quickstart deps installs python3-kubernetes)"; exit 77; }

e2e_init
start_sim
"$PY" "$SRCDIR/tests/e2e/sim-python.py" || fail "the Python client's checks failed"
